"""Proof certificates of ``unsat`` (beside verification, layer 6): ``record`` writes them
from the settle stage's input split, ``check`` is the independent checker (docs/proofs.md)."""
