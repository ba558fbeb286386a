"""In-tree reconstruction attacks; each module registers its classes with bench's registry."""
