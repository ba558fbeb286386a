"""Maintainer tools over committed boards: compare, profile, status, attack strength."""
