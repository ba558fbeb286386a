"""Tests of attacks."""
