"""Certificates that mechanisms calibrate against: sound bounds, never estimates alone."""
