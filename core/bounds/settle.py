"""The settle stage's tools: deciding an unsafe set on the region before traversing it.

A run calls its analysis's :meth:`~polytrav.Analysis.settle` once, before the traversal
(:mod:`polytrav.host.settling`); the analysis decides what it can with the plain functions
here and answers with a :class:`~polytrav.vocabulary.settled.Settled`. They take the network,
the region and the unsafe set in disjunctive normal form (``pairs``: conjunctions
``C y <= d`` with unit-norm rows), and return points, a
:class:`~polytrav.bounds.split.SplitResult` or a ``Settled``; they never run a traversal:
what they leave open is traversed by the host, so the data flows host -> bounds only.

* :func:`quick_attack`, :func:`deep_attack`: the start attack of
  :func:`polytrav.bounds.dnf.attack_start` without its restarts, and the restarts alone;
* :func:`split_region`: input splitting (:func:`polytrav.bounds.split.split_box`) of a box of
  few effective inputs, with the policy's time shares;
* :func:`settle_dnf`: ``verify``'s order: the quick attack, the input split, the deep
  attack only where the split left the region open or did not apply.

One :class:`SettlePolicy` value holds the stage's time shares and counts; :data:`VERIFY_POLICY` is
``verify``'s. (The region's neuron branch and bound and MILP still run as the region's
piece margin inside the traversal, :func:`polytrav.bounds.dnf.region_bab`.)
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from polytrav.bounds import dnf, split
from polytrav.vocabulary.settled import OpenBox, Settled, SettledBy

__all__ = ["SettlePolicy", "VERIFY_POLICY", "quick_attack", "deep_attack", "split_region",
           "split_stats", "settle_dnf"]


@dataclass(frozen=True)
class SettlePolicy:
    """The settle stage's time shares and counts (one value per caller: :data:`VERIFY_POLICY`).

    ``split_max_effective``: input splitting runs on boxes of at most this many effective
    inputs (:func:`~polytrav.bounds.split.effective_inputs`). ``split_share``: the share of
    the time left the split may take; ``deep_share``: the share its deep search may take
    (``deep_seconds`` without a time limit), at most ``open_seconds`` per box of its
    frontier (:func:`~polytrav.bounds.split.split_box`). ``restarts``: the deep attack's
    descents from random points (:func:`~polytrav.bounds.dnf.deep_attack`).

    ``diff``'s verdict on a box (:mod:`polytrav.host.diff`: ``SPLIT_SHARE``, ``DEEP_SHARE``,
    ``OPEN_SECONDS``) is the same stage with other shares; its value joins this one when
    ``ModelDiff`` settles (issue 59).
    """

    split_max_effective: int = split.SPLIT_MAX_EFFECTIVE
    split_share: float = 0.5
    deep_share: float = 0.25
    deep_seconds: float = split.SPLIT_DEEP_TIME
    open_seconds: float = split.SPLIT_OPEN_SECONDS
    restarts: int = dnf.RESTARTS


#: ``verify``'s policy: half the time left for the split, a quarter for its deep search.
VERIFY_POLICY = SettlePolicy()


def quick_attack(pairs, network, region) -> np.ndarray | None:
    """The start attack's point without its restarts (:func:`~polytrav.bounds.dnf.attack_start`
    with ``deep=False``: samples, descents, sequential LPs): the point of the region closest
    to (or deepest in) the unsafe set found; None for an unbounded region."""
    return dnf.attack_start(pairs, network, region, deep=False)


def deep_attack(pairs, network, region, policy: SettlePolicy | None = None
                ) -> np.ndarray | None:
    """A point of the unsafe set found by the policy's ``restarts`` batched descents
    (:func:`~polytrav.bounds.dnf.deep_attack`), or None. ``policy``: default
    :data:`VERIFY_POLICY` (as it is when called)."""
    policy = VERIFY_POLICY if policy is None else policy
    return dnf.deep_attack(pairs, network, region, restarts=policy.restarts)


def split_region(pairs, network, lower, upper, lp_chain, time_left: float | None,
                 policy: SettlePolicy | None = None) -> split.SplitResult:
    """The box ``[lower, upper]`` bisected against ``pairs`` (:func:`~polytrav.bounds.split.
    split_box`, extended while it accelerates, then its deep search), within the policy's
    shares of ``time_left`` seconds (None: no limit). ``policy``: default
    :data:`VERIFY_POLICY`."""
    policy = VERIFY_POLICY if policy is None else policy
    return split.split_box(
        network, lower, upper, pairs, lp_chain, extend=True,
        time_limit=None if time_left is None else policy.split_share * time_left,
        deep_time=policy.deep_seconds if time_left is None else policy.deep_share * time_left,
        open_seconds=policy.open_seconds)


def split_stats(result: split.SplitResult) -> dict:
    """An input split as plain data: boxes bounded, proven, left open, the proven volume
    share, whether the boxes were bounded as a pair of networks."""
    return {"boxes": result.boxes, "proven": result.proven, "open": len(result.open_boxes),
            "proven_volume_share": result.proven_volume_share, "difference": result.difference}


def settle_dnf(pairs, network, region, lp_chain, *, accept: Callable[[np.ndarray], bool],
               time_left: Callable[[], float | None] = lambda: None, split_boxes: bool = True,
               policy: SettlePolicy | None = None) -> Settled:
    """Decide the unsafe set ``pairs`` on ``region`` as far as the stage can, in ``verify``'s
    order.

    1. :func:`quick_attack`; a point that ``accept`` takes (the analysis's check of a
       witness: a forward pass, its own confirmation) is VIOLATED.
    2. Where ``split_boxes`` and the region is a box of at most the policy's effective
       inputs: a point the attack put in the unsafe set that ``accept`` refused is left to
       the traversal (its first polytope decides it: the region is OPEN from it); else
       :func:`split_region` within ``time_left()``. A candidate it finds is OPEN from it;
       every sub-box proven is PROVEN (``SPLIT``).
    3. Otherwise :func:`deep_attack` (``accept`` as above). Still undecided: the split's open
       boxes, each from its centre, or the whole region from the attack's point.

    ``policy``: default :data:`VERIFY_POLICY` (as it is when called). ``stats["split"]``:
    :func:`split_stats` where the split ran, else None.
    """
    policy = VERIFY_POLICY if policy is None else policy
    x = quick_attack(pairs, network, region)
    if x is not None and accept(x):
        return Settled.violated(x, SettledBy.ATTACK, split=None)
    found = None
    if split_boxes and region.is_box:
        lower, upper = (np.asarray(a, float) for a in region.bounding_box())
        if split.effective_inputs(network, lower, upper, pairs, lp_chain) \
                <= policy.split_max_effective:
            if x is not None and dnf.unsafe_distance(pairs, network.forward(x)[None, :])[0] <= 0:
                return Settled.open(start=x, split=None)
            found = split_region(pairs, network, lower, upper, lp_chain, time_left(), policy)
            if found.candidate is not None:
                return Settled.open(start=found.candidate, split=split_stats(found))
            if not found.open_boxes:
                return Settled.proven(SettledBy.SPLIT, boxes=found.proven,
                                      split=split_stats(found))
    stats = None if found is None else split_stats(found)
    y = deep_attack(pairs, network, region, policy)
    if y is not None:
        if accept(y):
            return Settled.violated(y, SettledBy.ATTACK, split=stats)
        x = y
    if found is not None:
        return Settled.open(boxes=[OpenBox(lo, hi, (lo + hi) / 2) for lo, hi in found.open_boxes],
                            proven_boxes=found.proven, split=stats)
    return Settled.open(start=x, split=None)
