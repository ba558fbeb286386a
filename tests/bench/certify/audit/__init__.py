"""Tests of bench.certify.audit."""
