"""End-to-end tests: whole suites in fresh bench processes; all in the slow lane (conftest.py)."""
