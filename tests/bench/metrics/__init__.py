"""Tests of bench.metrics."""
