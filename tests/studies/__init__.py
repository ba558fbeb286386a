"""Tests of the studies (studies/): their mechanisms, probes and records."""
