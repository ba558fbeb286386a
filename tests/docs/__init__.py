"""Tests of the docs: quoted numbers come from committed files, pages match their Markdown."""
