"""Tests of bench.certify."""
