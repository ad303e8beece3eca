"""Layer 6, verification: ``verify`` (VNN-COMP answers) and the VNN-LIB reader."""
