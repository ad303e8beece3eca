"""Layer 0, the vocabulary every layer speaks: errors, result and status types, tolerances."""
