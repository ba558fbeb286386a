"""The harness's foundations, torch-free where they can be: errors, hashing, code versions,
what the project is, files, preflight checks, devices, threads, CPU math, quiet output."""
