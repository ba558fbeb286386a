"""Tests of bench.tasks."""
