"""Suite files: reading and checking them (read.py), the catalog `bench list suites` shows
(catalog.py), and the shipped suite files themselves (files/)."""
