"""In-tree privacy mechanisms; each module registers its classes with bench's registry."""
