"""Layer 4, the traversal engine: ``traverse`` visits every polytope meeting a region."""
