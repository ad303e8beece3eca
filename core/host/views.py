"""What a run reads of the objects it is given, as protocols: the traversal behind a
:class:`~polytrav.host.runner.RunContext` and what a progress callback receives. A serial
run's :class:`~polytrav.traversal.Traversal` (or subdivision run) is both; a run in parts
gives :class:`~polytrav.parallel.MergedTraversal` to ``combine`` and
:class:`~polytrav.parallel.PartsProgress` to ``progress``."""
from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["TraversalView", "ProgressView"]


@runtime_checkable
class TraversalView(Protocol):
    """A run's traversal as its context reads it: the frame, the start, how it ended, the
    counts, the pieces it is confined to (or None) and the time left."""

    frame: Any
    start_u: np.ndarray | None
    status: Any
    stats: Any
    within: list | None

    @property
    def complete(self) -> bool: ...

    def time_left(self) -> float | None: ...


@runtime_checkable
class ProgressView(Protocol):
    """What ``progress(view)`` reads: ``view.stats.polytopes`` and ``view.stats.lps`` so far."""

    stats: Any
