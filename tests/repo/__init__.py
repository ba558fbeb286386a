"""Rules of the repository as a whole: the import graph, the package layout, the test lanes."""
