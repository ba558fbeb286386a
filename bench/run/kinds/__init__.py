"""The kinds of job: reconstruction and utility jobs (reconstruction.py), membership
inference against label-only mechanisms (membership.py)."""
