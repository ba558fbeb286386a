"""The result store: SQLite results and leases (results.py), its schema (schema.py), per-job
columns read without torch (rows.py), and the one-line refusal of an unusable path (guard.py)."""
