"""Tests of mechanisms.dfil."""
