"""Tests of mechanisms.noise."""
