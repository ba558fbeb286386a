"""Tests of bench.certify.fisher."""
