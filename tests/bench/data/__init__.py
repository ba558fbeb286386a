"""Tests of bench.data."""
