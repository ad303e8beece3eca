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
  attack only where the split left the region open or did not apply;
* :func:`region_bab`: neuron-level branch and bound (:mod:`polytrav.bounds.branch_and_bound`)
  and the region's MILP (:mod:`polytrav.bounds.milp`) on a box of many inputs, with
  :func:`decision_margin` (a decision analysis's piece margin: the region's runs it) and
  :func:`bab_details` (what it did, for a result's details). It still runs as the region's
  piece margin at the traversal's level 0, where the region's bound and the analysis's
  attack are at hand; moving it into the stage is a later step of issue 59.

One :class:`SettlePolicy` value holds the stage's time shares and counts;
:data:`VERIFY_POLICY` is ``verify``'s.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from polytrav.bounds import dnf, split
from polytrav.vocabulary.settled import OpenBox, Settled, SettledBy

__all__ = ["SettlePolicy", "VERIFY_POLICY", "quick_attack", "deep_attack", "split_region",
           "split_stats", "settle_dnf", "decision_margin", "region_bab", "bab_details"]


@dataclass(frozen=True)
class SettlePolicy:
    """The settle stage's time shares and counts (one value per caller: :data:`VERIFY_POLICY`).

    ``split_max_effective``: input splitting runs on boxes of at most this many effective
    inputs (:func:`~polytrav.bounds.split.effective_inputs`). ``split_share``: the share of
    the time left the split may take; ``deep_share``: the share its deep search may take
    (``deep_seconds`` without a time limit), at most ``open_seconds`` per box of its
    frontier (:func:`~polytrav.bounds.split.split_box`). ``restarts``: the deep attack's
    descents from random points (:func:`~polytrav.bounds.dnf.deep_attack`).

    The region's neuron branch and bound (:func:`region_bab`) runs on boxes of at least
    ``bab_min_inputs`` free inputs (below, the input split does better), for ``bab_share``
    of the time left. Where the box leaves at most
    :data:`~polytrav.bounds.milp.MILP_MAX_BINARIES` unstable neurons: branch and bound first
    with ``bab_probe_share`` (it decides shallow cases in a few nodes), then the region's
    MILP (:class:`~polytrav.bounds.milp.RegionMilp`) with ``milp_share`` of what is left
    (None: :data:`~polytrav.bounds.milp.MILP_TIME_SHARE`, as the other MILP handovers),
    then branch and bound again. With more, branch and bound alone, as before the MILP: a
    probe that restarts would cost the instances it decides late (256x6 prop_5_0.03 was
    decided at 134 s, with 150 s for branch and bound). The probe's share is 0.3: MNIST
    256x4 prop_10_0.05 (188 binaries) takes branch and bound 75 s and the MILP 231 s (a
    timeout at 300 s in a run with a 0.1 probe on a loaded machine), while the MILP's
    instances of 256x2 (120 s) still have 66 s for it after the probe (they need 16-50 s).

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
    bab_min_inputs: int = 9
    bab_share: float = 0.5
    bab_probe_share: float = 0.3
    milp_share: float | None = None  # None: MILP_TIME_SHARE, every MILP handover's share


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
                 policy: SettlePolicy | None = None, recorder=None) -> split.SplitResult:
    """The box ``[lower, upper]`` bisected against ``pairs`` (:func:`~polytrav.bounds.split.
    split_box`, extended while it accelerates, then its deep search), within the policy's
    shares of ``time_left`` seconds (None: no limit). ``policy``: default
    :data:`VERIFY_POLICY`. ``recorder``: a proof's record of the split
    (:func:`~polytrav.bounds.split.split_box`), or None."""
    policy = VERIFY_POLICY if policy is None else policy
    return split.split_box(
        network, lower, upper, pairs, lp_chain, extend=True,
        time_limit=None if time_left is None else policy.split_share * time_left,
        deep_time=policy.deep_seconds if time_left is None else policy.deep_share * time_left,
        open_seconds=policy.open_seconds, recorder=recorder)


def split_stats(result: split.SplitResult) -> dict:
    """An input split as plain data: boxes bounded, proven, left open, the proven volume
    share, whether the boxes were bounded as a pair of networks."""
    return {"boxes": result.boxes, "proven": result.proven, "open": len(result.open_boxes),
            "proven_volume_share": result.proven_volume_share, "difference": result.difference}


def settle_dnf(pairs, network, region, lp_chain, *, accept: Callable[[np.ndarray], bool],
               time_left: Callable[[], float | None] = lambda: None, split_boxes: bool = True,
               policy: SettlePolicy | None = None, recorder=None) -> Settled:
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
    :func:`split_stats` where the split ran, else None. ``recorder``: None, or a proof's
    record of the split (:func:`split_region`).
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
            found = split_region(pairs, network, lower, upper, lp_chain, time_left(), policy,
                                 recorder)
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


def decision_margin(pairs, piece, context, attack, bab: bool = True,
                    policy: SettlePolicy | None = None):
    """The margin by which a decision analysis (``verify`` mode) proves a piece, and the
    branch-and-bound outcome if it ran: :func:`~polytrav.bounds.dnf.dnf_piece_margin`, then,
    on the region (level 0) with ``bab``, :func:`region_bab` (``attack``: the analysis's
    start attack)."""
    margin = dnf.dnf_piece_margin(pairs, piece, context)
    if bab and piece.level == 0:
        return region_bab(margin, pairs, piece, context, attack, policy)
    return margin, None


def region_bab(margin, pairs, piece, context, attack, policy: SettlePolicy | None = None):
    """``(margin, outcome)``: a piece's bound ``margin`` after neuron-level branch and bound
    (:func:`polytrav.bounds.branch_and_bound.prove_margins`) over the whole region, run when the
    piece is the region (level 0) and ``margin`` proves nothing. ``outcome`` is None where it
    does not run; HOLDS makes the margin ``inf`` (the region is proven).

    It applies when the region is a box of at least the policy's ``bab_min_inputs`` free
    inputs (default :data:`VERIFY_POLICY`, as it is when called); each
    unsafe conjunction is a group of rows, of which branch and bound proves one positive. ``attack()``
    (the analysis's start attack) runs first: a point in the unsafe set makes the search
    needless. Where a backend serves the ``milp`` form and the box leaves at most
    :data:`~polytrav.bounds.milp.MILP_MAX_BINARIES` unstable neurons (CROWN's optimised
    bounds: 0.1-1.8 s on MNIST's networks), branch and bound runs for ``bab_probe_share`` of
    the time left (it decides shallow cases in a few nodes), then one MILP per conjunction
    (:class:`~polytrav.bounds.milp.RegionMilp`) for ``milp_share``. Otherwise, or if neither
    decides, branch and bound gets ``bab_share`` of the run's time left (no limit without
    one; its stats then say why the MILP did not decide, under ``milp``). The
    outcome's ``start`` (a counterexample, forward-pass checked, else the attack's point) is
    where the traversal should start.
    """
    from polytrav.bounds.branch_and_bound import BaBOutcome, BaBVerdict
    from polytrav.bounds.milp import MILP_MAX_BINARIES, MILP_TIME_SHARE, RegionMilp

    policy = VERIFY_POLICY if policy is None else policy
    fr = piece.frame
    if margin > 0 or piece.level != 0 or not fr.is_box or fr.dim < policy.bab_min_inputs:
        return margin, None
    point = attack()
    if point is not None and dnf.unsafe_distance(pairs, context.network.forward(point)[None, :]
                                                 )[0] <= 0:
        return margin, BaBOutcome(BaBVerdict.VIOLATED, point, 0, 0.0, {"found_by": "attack"},
                                  start=point)
    lo, hi = context.region.with_dims(context.network.n_inputs).bounding_box()
    decided = (BaBVerdict.HOLDS, BaBVerdict.VIOLATED)
    why_not = "no backend serves the 'milp' form"
    if context.backends("milp", required=False):
        milp = RegionMilp(context.network, lo, hi)
        why_not = f"{milp.binaries} unstable neurons (more than {MILP_MAX_BINARIES})"
        if milp.binaries <= MILP_MAX_BINARIES:
            out = _bab(pairs, context, lo, hi, policy.bab_probe_share, point)
            if out.verdict not in decided:
                share = MILP_TIME_SHARE if policy.milp_share is None else policy.milp_share
                out, why_not = _milp(milp, pairs, context, point, share)
            if out is not None:
                return (np.inf if out.verdict is BaBVerdict.HOLDS else margin), out
    out = _bab(pairs, context, lo, hi, policy.bab_share, point)
    out.stats["milp"] = why_not
    return (np.inf if out.verdict is BaBVerdict.HOLDS else margin), out


def _bab(pairs, context, lo, hi, share, point):
    """:func:`~polytrav.bounds.branch_and_bound.prove_margins` on the region with ``share``
    of the time left; its ``start``: the counterexample, else the attack's ``point``."""
    from polytrav.bounds.branch_and_bound import prove_margins

    left = context.time_left()
    ends = np.cumsum([C.shape[0] for C, _ in pairs])
    out = prove_margins(context.network, lo, hi, np.vstack([C for C, _ in pairs]),
                        np.concatenate([d for _, d in pairs]), lp_backends=context.backends("lp"),
                        time_limit=None if left is None else share * max(left, 0.0),
                        groups=[np.arange(e - C.shape[0], e) for e, (C, _) in zip(ends, pairs)])
    out.start = out.counterexample if out.counterexample is not None else point
    return out


def _milp(milp, pairs, context, point, share):
    """``(outcome, reason)``: the region decided by ``milp`` (a
    :class:`~polytrav.bounds.milp.RegionMilp`) in ``share`` of the time left, as a
    :class:`~polytrav.bounds.branch_and_bound.BaBOutcome` (0 nodes; its stats say
    ``method: milp``), or, where it decides nothing, None and why not."""
    from polytrav.bounds.branch_and_bound import BaBOutcome, BaBVerdict

    net = context.network
    left = context.time_left()
    out = milp.prove(pairs, context.backends("milp"),
                     time_limit=None if left is None else share * max(left, 0.0),
                     unsafe=lambda x: dnf.unsafe_distance(pairs, net.forward(x)[None, :])[0] <= 0)
    if out.verdict == "unknown":
        return None, out.reason
    stats = {"method": "milp", "binaries": out.binaries, "solves": out.solves}
    if out.verdict == "holds":
        return BaBOutcome(BaBVerdict.HOLDS, None, 0, out.seconds, stats, start=point), ""
    return BaBOutcome(BaBVerdict.VIOLATED, out.point, 0, out.seconds, stats,
                      start=out.point), ""


def bab_details(outcome) -> dict | None:
    """The ``details["bab"]`` entry of a decision analysis's result: how the region was
    decided (``method``: ``branch_and_bound``, ``milp`` or ``attack``), the verdict, nodes
    and seconds, the MILP's binaries where it decided, and why it did not where branch and
    bound had the last word (``milp``)."""
    if outcome is None:
        return None
    st = outcome.stats
    out = {"method": "attack" if "found_by" in st else st.get("method", "branch_and_bound"),
           "verdict": outcome.verdict, "nodes": outcome.nodes, "seconds": outcome.seconds}
    for key in ("binaries", "milp"):  # the MILP's size, or why it did not decide
        if key in st:
            out[key] = st[key]
    return out
