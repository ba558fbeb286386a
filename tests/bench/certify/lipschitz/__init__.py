"""Tests of bench.certify.lipschitz."""
