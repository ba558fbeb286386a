"""Tests of mechanisms.posthoc."""
