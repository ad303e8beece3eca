"""``Report.stats``: one assembly for serial runs and runs in parts, so both have the same keys.

The keys are the traversal's counters (:meth:`polytrav.traversal.TraversalStats.to_dict`),
``proven_pieces``, the subproblem counters (:data:`polytrav.host.runner.SUBPROBLEM_STATS`), and
the counters of a run in parts (:data:`PART_STATS`), which a serial run fills as a run in no
parts: ``parts`` 0, one worker, no part times, no listing (``enumeration_seconds`` 0) and no
list of pieces (``pieces_total`` and ``pieces_done`` None).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from polytrav.traversal import TraversalStats

__all__ = ["PART_STATS", "report_stats", "merge_traversal_stats"]

#: The counters of a run in parts, in ``Report.stats`` of every run.
PART_STATS = ("parts", "workers", "pieces_total", "pieces_done", "lost_parts", "part_seconds",
              "part_pieces", "enumeration_seconds")


def report_stats(traversal: dict[str, Any], *, proven_pieces: Iterable, subproblems: dict[str, Any],
                 solves: dict[str, dict] | None = None, parts: int = 0, workers: int = 1, pieces_total: int | None = None,
                 pieces_done: int | None = None, lost_parts: int = 0,
                 part_seconds: Iterable[float | None] = (), part_pieces: Iterable[int | None] = (),
                 enumeration_seconds: float = 0.0, settle: dict | None = None) -> dict[str, Any]:
    """The ``stats`` of a :class:`~polytrav.Report`.

    Parameters
    ----------
    traversal : dict
        The traversal's counters (``TraversalStats.to_dict()``; summed over the parts of a
        run in parts).
    proven_pieces : iterable
        The pieces proven by a bound (their polytopes were skipped).
    subproblems : dict
        The subproblem counters, keyed by :data:`polytrav.host.runner.SUBPROBLEM_STATS`.
    solves : dict, optional
        Per backend, the solves it answered along a chain, the tries that fell through to
        the next backend and their seconds (:meth:`polytrav.solve.backend.SolveTally.to_dict`);
        the key ``solves``.
    parts, workers, pieces_total, pieces_done, lost_parts, part_seconds, part_pieces, enumeration_seconds
        The counters of a run in parts (:data:`PART_STATS`); the defaults describe a serial
        run.
    settle : dict, optional
        What the analysis's settle stage found (:meth:`polytrav.vocabulary.settled.Settled.summary`
        with the stage's seconds and solves); None where no stage ran. The key ``settle``.

    Returns
    -------
    dict
        A fresh dictionary with the same keys for every run.

    Examples
    --------
    >>> serial = report_stats({"polytopes": 4}, proven_pieces=[], subproblems={"subproblem_solves": 0})
    >>> parted = report_stats({"polytopes": 4}, proven_pieces=[], subproblems={"subproblem_solves": 0},
    ...                       parts=2, pieces_total=3, pieces_done=3, part_seconds=[0.1, 0.2],
    ...                       part_pieces=[2, 1], enumeration_seconds=0.01)
    >>> sorted(serial) == sorted(parted)
    True
    >>> serial["parts"], serial["workers"], serial["pieces_total"]
    (0, 1, None)
    """
    out = dict(traversal)
    out["proven_pieces"] = list(proven_pieces)
    out.update(subproblems)
    out["solves"] = dict(solves or {})
    out.update(zip(PART_STATS, (parts, workers, pieces_total, pieces_done, lost_parts,
                                list(part_seconds), list(part_pieces), enumeration_seconds)))
    out["settle"] = settle
    return out


def merge_traversal_stats(dicts: Iterable[dict], n_levels: int) -> TraversalStats:
    """The traversal counters of runs over disjoint parts of a region, added up (the pieces
    and proven pieces per level, failures listed; other numbers summed)."""
    st = TraversalStats(pieces=[0] * n_levels, proven=[0] * n_levels)
    for d in dicts:
        for name, value in d.items():
            if name in ("pieces", "proven"):
                setattr(st, name, [a + b for a, b in zip(getattr(st, name), value)])
            elif name == "failures":
                st.failures += list(value)
            elif name in st.__dataclass_fields__ and isinstance(getattr(st, name), (int, float)):
                setattr(st, name, getattr(st, name) + value)
    return st
