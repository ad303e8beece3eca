"""How a traversal runs and ends: its status, its counters, its strategies and its budgets.

:class:`TraversalStatus` says how a run ended and :class:`TraversalStats` counts what it did
(both are read by every layer above); :data:`STRATEGIES` names the ways the engine finds
neighbours. Inside the engine, :class:`RunEnded` carries a final status out of the search
(a budget reached, the whole region proven, nothing decided) and :class:`Clock` keeps the
time budget.
"""
from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field

from polytrav.solve.deadline import time_left

__all__ = ["Clock", "RunEnded", "STRATEGIES", "Strategy", "TraversalStats", "TraversalStatus"]


class TraversalStatus(str, enum.Enum):
    """How a traversal ended."""

    RUNNING = "running"  #: not finished yet
    COMPLETE = "complete"  #: every polytope meeting the region was visited
    POLYTOPE_LIMIT = "polytope_limit"  #: stopped at ``max_polytopes``: incomplete
    TIME_LIMIT = "time_limit"  #: stopped at ``time_limit``: incomplete
    SOLVER_FAILURE = "solver_failure"  #: some LP failed on every backend: incomplete
    STOPPED = "stopped"  #: the consumer stopped iterating (analyze: every analysis decided)
    INTERRUPTED = "interrupted"  #: Ctrl-C (KeyboardInterrupt): incomplete
    WORKER_LOST = "worker_lost"  #: a parallel run lost a part (its worker died): incomplete

    def __str__(self) -> str:
        return self.value


@dataclass
class TraversalStats:
    """Counters of one traversal (``lp_time`` and ``total_time`` in seconds)."""

    polytopes: int = 0
    lps: int = 0
    lp_time: float = 0.0
    total_time: float = 0.0
    flips_hashed: int = 0  #: flips skipped because the code was already checked
    flips_solved: int = 0  #: flips decided by an LP
    screen_lps: int = 0  #: LPs spent screening hyperplanes against a piece
    screen_far: int = 0  #: hyperplanes kept unscreened: the side to test misses every ball
    flips_vertex: int = 0  #: flips ruled out by a cell's vertices (no LP)
    flips_far: int = 0  #: flips whose new halfspace misses every Restrict ball (no LP)
    cells_far: int = 0  #: cells with a side missing every ball (not emitted or descended into)
    vertex_sets: int = 0  #: cells whose vertices were computed
    candidates: int = 0  #: hyperplanes that survived screening, summed over pieces
    pieces: list[int] = field(default_factory=list)  #: cells per level (last = polytopes)
    slivers: int = 0  #: thin cells crossed but not emitted
    retries: int = 0  #: LPs re-solved cold or on a fallback backend
    pruned: int = 0  #: level-1 pieces the guide showed unneeded (not expanded)
    restrictions: int = 0  #: times the guide shrank the region
    proven: list[int] = field(default_factory=list)  #: pieces proven by a bound, per level 0..L-1
    proven_volume_share: float = 0.0  #: their share of the region's volume (where computed)
    proven_volumes: int = 0  #: proven pieces whose volume was computed (see ``PROVEN_VOLUMES``)
    bound_calls: int = 0  #: pieces a bound was computed for
    bound_time: float = 0.0  #: seconds spent in bounds
    failures: list[str] = field(default_factory=list)  #: LPs no backend could decide
    cuts: int = 0  #: cells cut by a neuron (strategy "subdivision")
    snapped: int = 0  #: vertices found on a hyperplane (subdivision: degenerate contacts)
    thin_cuts: int = 0  #: cuts not made: a side too thin for a polytope (subdivision)
    held: int = 0  #: the most vertex rows held at once (subdivision; bounded by ``batch``)
    #: Why a subdivision run handed the region to the LP traversal ("" if it did not).
    fallback: str = ""

    @property
    def lps_per_polytope(self) -> float:
        return self.lps / max(self.polytopes, 1)

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["lps_per_polytope"] = self.lps_per_polytope
        d["non_lp_time"] = self.total_time - self.lp_time
        return d


@dataclass(frozen=True)
class Strategy:
    """How the traversal finds neighbours (see :data:`STRATEGIES`)."""

    name: str
    default_solver: str
    screen: str  # "interval": closed-form test against the frame box; "lp": two LPs per row
    rows: str  # "candidates": only screened rows in the LP; "all": every non-constant row


#: Registered traversal strategies by name.
STRATEGIES: dict[str, Strategy] = {
    "hierarchical": Strategy("hierarchical", "highs", "interval", "candidates"),
    "seed-faithful": Strategy("seed-faithful", "scipy", "lp", "all"),
    # every cell at once, no neighbour search (screen and rows unused): the LP only decides
    # thin cells (polytrav.traversal.subdivision_run)
    "subdivision": Strategy("subdivision", "highs", "interval", "candidates"),
}


class RunEnded(Exception):
    """Raised inside the engine to end the run with the status in ``args[0]``."""


class Clock:
    """The time budget of one run: ``time_limit`` seconds (None: no limit) from :meth:`start`,
    and never past the deadline of the run around it (:mod:`polytrav.solve.deadline`)."""

    def __init__(self, time_limit: float | None):
        self.time_limit = time_limit
        self.t0: float | None = None

    def start(self) -> float:
        """Start counting; returns the start time (``time.perf_counter()``)."""
        self.t0 = time.perf_counter()
        return self.t0

    def end(self) -> float | None:
        """The budget's end (a :func:`time.perf_counter` value), None without one or before
        :meth:`start`."""
        return None if self.time_limit is None or self.t0 is None else self.t0 + self.time_limit

    def left(self) -> float | None:
        """Seconds left of the budget or until the deadline, the fewer (None without either)."""
        own = None if self.time_limit is None else self.time_limit - (
            0.0 if self.t0 is None else time.perf_counter() - self.t0)
        until = time_left()
        return own if until is None else until if own is None else min(own, until)

    def check(self) -> None:
        """Raise :class:`RunEnded` (``time_limit``) once the budget is spent."""
        left = self.left()
        if left is not None and left <= 0:
            raise RunEnded(TraversalStatus.TIME_LIMIT)
