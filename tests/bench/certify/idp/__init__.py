"""Tests of bench.certify.idp."""
