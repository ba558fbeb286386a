"""Tests of bench.report."""
