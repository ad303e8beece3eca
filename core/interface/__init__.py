"""Layer 7, the interfaces: the command line, job files, pictures and exports."""
