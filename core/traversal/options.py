"""How one traversal runs, as one value: :class:`TraversalOptions`, what
:func:`polytrav.traverse`, a run of analyses and the engines hand each other instead of a
dozen keywords, checked once when it is made."""
from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from polytrav.solve.backend import SolverBackend
from polytrav.traversal.subdivision import BATCH
from polytrav.vocabulary.errors import ConfigError

__all__ = ["TraversalOptions", "check_budgets"]

#: The orders a level's cells can be descended in.
ORDERS = ("bfs", "best-first")


def check_budgets(max_polytopes, time_limit, who: str = "traverse") -> None:
    """``max_polytopes`` a whole number >= 1 and ``time_limit`` a number > 0 (or None), in
    the words of a job file's errors (docs/config.md); ``who`` starts the message."""
    if max_polytopes is not None and (
            isinstance(max_polytopes, bool) or not isinstance(max_polytopes, numbers.Integral)
            or max_polytopes < 1):
        raise ConfigError(f"{who}: max_polytopes must be a whole number, at least 1 (leave "
                          f"it out for no limit), got {max_polytopes!r}")
    if time_limit is not None and (
            isinstance(time_limit, bool) or not isinstance(time_limit, numbers.Real)
            or not time_limit > 0):
        raise ConfigError(f"{who}: time_limit must be a number greater than 0 (seconds; "
                          f"leave it out for no limit), got {time_limit!r}")


@dataclass(frozen=True)
class TraversalOptions:
    """Everything about a traversal but the network, the region and the start point (each
    field as :func:`polytrav.traverse` documents it). ``strategy`` is an engine's name
    (``"auto"`` is resolved before an engine starts); ``fallback`` never repeats
    ``solver``; ``within`` is a tuple of pieces."""

    strategy: str = "hierarchical"
    solver: SolverBackend | None = None
    fallback: tuple[SolverBackend, ...] = ()
    max_polytopes: int | None = None
    time_limit: float | None = None
    guide: Any = None
    vertices: bool = False
    within: tuple | None = None
    prune: Callable | None = None
    order: str = "bfs"
    pieces_only: bool = False
    volume_shares: bool = True
    batch: int = BATCH

    def __post_init__(self):
        check_budgets(self.max_polytopes, self.time_limit)
        if self.order not in ORDERS:
            raise ConfigError(f"traverse: order must be 'bfs' or 'best-first', got "
                              f"{self.order!r}")
        if isinstance(self.batch, bool) or not isinstance(self.batch, int) or self.batch < 1:
            raise ConfigError(f"traverse: batch must be a positive number of cells, not "
                              f"{self.batch!r}")
        if self.within is not None and self.guide is not None:
            raise ConfigError("traverse: a guide cannot steer a traversal 'within' given pieces")
        for b in (b for b in (self.solver, *self.fallback) if b is not None):
            if not isinstance(b, SolverBackend):
                raise ConfigError(
                    f"traverse takes SolverBackend instances (got {b!r}); name a backend "
                    "through polytrav.traverse(..., solver='highs'), which looks names up")
        name = None if self.solver is None else self.solver.name
        object.__setattr__(self, "fallback", tuple(b for b in self.fallback if b.name != name))
        if self.within is not None:
            object.__setattr__(self, "within", tuple(self.within))
        object.__setattr__(self, "pieces_only", bool(self.pieces_only))
