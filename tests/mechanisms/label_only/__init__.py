"""Tests of mechanisms.label_only."""
