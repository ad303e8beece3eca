"""The run's deadline, seen by every solver call made inside it.

A run opens :func:`until` for everything it does (``analyze``: its work after the one-time
set-up; each analysis's run on an ``explain`` row; a ``verify`` instance; ``diff``). Every
backend asks :func:`call_limit` for the seconds one call may take: its own time limit, or the
caller's, never more than the deadline leaves; ``0.0`` means nothing is left, and the call is
not started (:func:`refused` is its result, a :attr:`~Status.LIMIT` that settles nothing).
:func:`~polytrav.solve.backend.solve_along` refuses before any backend is tried, so a
third-party backend that ignores the deadline is not started past it either. The deadline
lives in a context variable, as the run's solve tally does: nothing is passed down, and a
backend called outside any run has no deadline.

A solver call the deadline refused or cut short decides nothing, so nothing built on it is a
proof: the analyses record it as an undecided solve, and a run with a refused call is partial
(``time_limit``) even if its traversal had ended.
"""
from __future__ import annotations

import contextvars
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from polytrav.vocabulary.results import SolveResult, Status

__all__ = ["Deadline", "until", "time_left", "call_limit", "refused"]


@dataclass
class Deadline:
    """A deadline (a :func:`time.perf_counter` value; None: none) and the solver calls it
    refused (``refused``: how many were not started because nothing was left, in this block
    and the blocks inside it); ``outer``: the deadline of the block around it."""

    at: float | None
    refused: int = 0
    outer: "Deadline | None" = None


_NOW: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar("polytrav_deadline",
                                                                       default=None)


@contextmanager
def until(at: float | None) -> Iterator[Deadline]:
    """Solver calls in the block end by ``at`` (a :func:`time.perf_counter` value; None: no
    deadline of its own). Inside another deadline, the earlier one holds."""
    outer = _NOW.get()
    if outer is not None and outer.at is not None and (at is None or outer.at < at):
        at = outer.at
    scope = Deadline(at, outer=outer)
    token = _NOW.set(scope)
    try:
        yield scope
    finally:
        _NOW.reset(token)


def time_left() -> float | None:
    """Seconds until the deadline (at most 0 once it has passed), None without one."""
    scope = _NOW.get()
    if scope is None or scope.at is None:
        return None
    return scope.at - time.perf_counter()


def call_limit(own: float | None = None) -> float | None:
    """The seconds one solver call may take: ``own`` (the backend's own time limit, or the
    caller's share; None: none) but no more than the deadline leaves. ``0.0`` when nothing is
    left: do not start the call, return :func:`refused`. None: no limit at all."""
    left = time_left()
    if left is None:
        return own
    left = max(left, 0.0)
    return left if own is None else min(own, left)


def refused(solver: str) -> SolveResult:
    """The result of a call not started because the deadline had passed: ``LIMIT`` (which
    settles nothing), counted in the ``refused`` of its deadline and of those around it."""
    scope = _NOW.get()
    while scope is not None:
        scope.refused += 1
        scope = scope.outer
    return SolveResult(Status.LIMIT, solver=solver,
                       message="not started: the run's time budget is spent")
