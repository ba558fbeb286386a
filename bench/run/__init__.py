"""Running a suite: its jobs (plan.py), the kinds of job (kinds/), the runner and its
executors, and the warm rerun that answers without importing torch (warm.py)."""
