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
* :class:`BandSettle`: ``diff``'s verdict on a box (``|r_j . y| <= epsilon``), in two rounds:
  samples (:func:`sampled_violation`), the start attack where they come near
  (:func:`checked_attack`), the input split, which pauses where its deep search begins
  (:class:`~polytrav.bounds.split.BoxSplit`) to have its worst open boxes attacked and
  *probed* (``Settled.probe``: the host traverses them), then goes on with those that held
  taken out;
* :func:`settle_region`: the whole region, where the attacks (and the split) left it open:
  its bound, then :func:`region_bab` (neuron-level branch and bound,
  :mod:`polytrav.bounds.branch_and_bound`, and the region's MILP, :mod:`polytrav.bounds.milp`)
  on a box of many free inputs; :func:`bab_details` describes what it did for a result's
  details. :func:`decision_margin` is a decision analysis's piece margin: a bound only;
* :func:`box_samples`, :func:`corners`: points of a box to probe (its centre, random points,
  corners pulled inside);
* :func:`bisect_box`: a box bisected worst bound first against any piece bound, sampled
  points of each unproven sub-box checked (a count of sub-boxes, not a time share);
* :func:`region_milp_slope`: the region's MILP on the sign of a slope
  (:meth:`~polytrav.bounds.milp.RegionMilp.monotone`), with the policy's share of the time.

One :class:`SettlePolicy` value holds the stage's time shares and counts:
:data:`VERIFY_POLICY` is ``verify``'s, :data:`MONOTONE_POLICY` ``Monotonicity``'s,
:data:`DIFF_POLICY` ``diff``'s verdict on a box (:class:`BandSettle`).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from polytrav.bounds import dnf, split
from polytrav.vocabulary.settled import OpenBox, Settled, SettledBy
from polytrav.vocabulary.tolerances import CORNER_INSET

__all__ = ["SettlePolicy", "VERIFY_POLICY", "MONOTONE_POLICY", "DIFF_POLICY", "quick_attack",
           "deep_attack", "split_region", "split_stats", "settle_dnf", "BandSettle",
           "sampled_violation", "checked_attack", "band_pairs", "decision_margin", "settle_region",
           "region_bab",
           "bab_details", "BoxBisection", "bisect_box", "box_samples", "corners",
           "region_milp_slope"]


@dataclass(frozen=True)
class SettlePolicy:
    """The settle stage's time shares and counts (one value per caller: :data:`VERIFY_POLICY`).

    ``split_max_effective``: input splitting runs on boxes of at most this many effective
    inputs (:func:`~polytrav.bounds.split.effective_inputs`). ``split_share``: the share of
    the time left the split may take; ``deep_share``: the share its deep search may take
    (``deep_seconds`` without a time limit), at most ``open_seconds`` per box of its
    frontier (:func:`~polytrav.bounds.split.split_box`); ``deep_boxes``, where set, replaces
    ``open_seconds`` by a count: at most this many boxes bounded per frontier box (the same
    split under any load; ``deep_share`` of the time left still caps it, and without a time
    limit ``deep_seconds``, which may be infinite). ``restarts``: the deep attack's
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

    A split budgeted by a count of sub-boxes (:func:`bisect_box`, ``Monotonicity``'s) bounds
    at most ``bisect_boxes`` of them, or ``bisect_milp_boxes`` where the region's MILP
    follows (it is the better half of the search), and checks ``bisect_samples`` random
    points and as many corners of each sub-box it does not prove. Before it,
    ``probe_samples`` random points and ``probe_corners`` corners of the region
    (:func:`box_samples`) choose the start point.

    ``diff``'s verdict on a box (:data:`DIFF_POLICY`, read by :class:`BandSettle`)
    takes ``split_share`` and ``deep_share`` of the time limit (not of the time left), and
    samples ``probe_samples`` random points first; where they come within ``attack_near``
    times epsilon of it, the start attack runs before the split. Where the split's deep
    search begins, its probe takes ``open_probe_share`` of the time limit
    (``open_probe_seconds`` without one) to attack and traverse the open boxes, or traverses
    the whole box where they hold at least ``whole_open_share`` of its volume.

    ``pair_bounds``: a network that is two networks side by side on one input (a two-network
    query) is bounded by their difference too, each row keeping the better bound: the input
    split's boxes (:func:`~polytrav.bounds.split.split_box`'s ``difference``), the pieces
    (:func:`~polytrav.bounds.dnf.dnf_bound`'s ``pair``) and branch and bound's nodes; False:
    the stack's own bounds alone (the path before issue 46, for comparison:
    ``benchmarks/diff_verify.py``'s ``today``).
    """

    split_max_effective: int = split.SPLIT_MAX_EFFECTIVE
    split_share: float = 0.5
    deep_share: float = 0.25
    deep_seconds: float = split.SPLIT_DEEP_TIME
    open_seconds: float = split.SPLIT_OPEN_SECONDS
    deep_boxes: int | None = None
    restarts: int = dnf.RESTARTS
    bab_min_inputs: int = 9
    bab_share: float = 0.5
    bab_probe_share: float = 0.3
    milp_share: float | None = None  # None: MILP_TIME_SHARE, every MILP handover's share
    bisect_boxes: int = 2000
    bisect_milp_boxes: int = 200
    bisect_samples: int = 8
    probe_samples: int = 256
    probe_corners: int = 1024
    attack_near: float = 0.5
    open_probe_share: float = 0.15
    open_probe_seconds: float = 15.0
    whole_open_share: float = 0.4
    pair_bounds: bool = True


#: ``verify``'s policy: half the time left for the split, a quarter for its deep search, which
#: bounds at most 64 boxes per frontier box: a count (about the boxes an idle core bounds in
#: the 0.03 s per frontier box of before, ``open_seconds``), so that a loaded machine splits
#: as an idle one (with the seconds, ACAS Xu 3_3 property 2 bounded 8 448 boxes under a load
#: average of 8 and 43 072 under 2). Fewer cost the proofs the split finishes: VNN-COMP's
#: robot_3 is proven at 42 595 boxes, 711 frontier boxes past 800. On 3_3 and 4_2 property 2
#: the whole run's CPU time changes little with the count (3_3: 72.5 s with the deep search
#: stopped at 12 800 boxes, 70.7 s at 25 600, 83.6 s at 51 200; 4_2: 39.9, 44.0, 47.9 s).
#: Without a time limit no clock caps it (``deep_seconds`` infinite: the count alone, and
#: :data:`~polytrav.bounds.split.SPLIT_DEEP_MAX_BOXES`): with 30 s of wall clock, 3_3
#: property 2 bounded 22 528 boxes instead of 47 968 at a load average of 12.
VERIFY_POLICY = SettlePolicy(deep_boxes=64, deep_seconds=math.inf)
#: ``Monotonicity``'s: the region probed at 256 random points and 1024 corners, at most 2000
#: sub-boxes bisected against the slope bound (200 where the MILP follows, with
#: :data:`~polytrav.bounds.milp.MILP_TIME_SHARE` of the time left), 8 random points and 8
#: corners checked in each sub-box it does not prove.
MONOTONE_POLICY = SettlePolicy(bisect_boxes=2000, bisect_milp_boxes=200, bisect_samples=8,
                               probe_samples=256, probe_corners=1024)
#: ``diff``'s verdict on a box (``verdict_only``), with the reasons for each number:
#:
#: * ``split_share=0.8``, ``deep_share=0.6`` of the time limit for the input split and its deep
#:   search. The deep search goes on only while it proves volume
#:   (:func:`~polytrav.bounds.split.split_box`), and an open box's traversal costs the
#:   difference bounds of 30-40 boxes (56 ms against 1.5 ms on ACAS Xu): at 1/2 and 1/4
#:   (``verify``'s), 3_3 against its perturbed copy at eps 0.00377 left 844 boxes open after
#:   42 s, which took 47 s to traverse; the split alone proves it in 37 s.
#: * ``open_seconds=0.05``: at most this many seconds per box open where the deep search
#:   begins (what its traversal costs).
#: * ``open_probe_share=0.15`` (``open_probe_seconds=15`` without a time limit): where the deep
#:   search begins, the probe (its open boxes attacked, then traversed from the attacks' best
#:   points, best first): a violation the samples and the whole box's attack missed lies near
#:   those points (ACAS Xu 1_3 against its perturbed copy at eps 0.0158: its box ranked 84th
#:   to 1 762nd by the bound, first by its attack; found in 5 s instead of over 100 s).
#:   Only the boxes whose attack came within ``attack_near`` of epsilon are traversed (none:
#:   no probe): NeuroDiff's 2_5 at eps 0.05 (its attacks far below it) traversed 78 boxes in
#:   the probe's 18 s, where the split went on to prove the box in 1 360 boxes.
#: * ``whole_open_share=0.4``: where the deep search begins with at least this share of the
#:   box's volume open, it goes on, and where it stalls with this share still open (while it
#:   is, a doubling of its boxes must prove :data:`~polytrav.bounds.split.SPLIT_WHOLE_STALL` of
#:   what is left, a quarter, instead of :data:`~polytrav.bounds.split.SPLIT_DEEP_STALL`'s
#:   tenth: the split's ``whole_open``), the whole box is traversed (from the attacks' best
#:   point at the pause, for the time left): open boxes cut the joint polytopes into many
#:   traversals. A doubling with the slopes only sampled does not count: the next one has them
#:   on every batch (NeuroDiff's 4_6 at eps 0.01 went to one traversal at 3 200 boxes, 50 %
#:   open, 20 of its 38 batches without slopes; with them on, the next doubling proved 57 % of
#:   what was left). ACAS Xu 1_3 against its perturbed copy at eps 0.00756 paused with 94 %
#:   open at 800 boxes and proved 16 %, 10 %, 13 % of what was left per doubling: with a tenth,
#:   the deep search took the time to the end of its share and the whole box's traversal (about
#:   50 s) then ran out of time at 100 s; with a quarter the whole box is traversed after the
#:   first doubling. On ACAS Xu 3_9 against its perturbed copy at eps 0.00434 (86 % open in
#:   1 531 boxes), the whole box took 22 s where the open boxes' traversals would take about
#:   350 s. Traversing it already at the pause gave up NeuroDiff's prop-1 boxes (millions of joint
#:   polytopes): 3_3 against its 16-bit copy at eps 0.01 paused with 45 % open after 800 boxes
#:   and was unknown at 120 s; the deep search proves it in 30 243 boxes, 27.6 s.
#: * ``deep_boxes=64``: the deep search bounds at most 64 boxes per frontier box (a count, as
#:   ``verify``'s), within ``deep_share`` of the time.
#: * ``probe_samples=1000``: random points of the box (and its centre) tried for a violation
#:   before the split.
#: * ``attack_near=0.5``: where the samples' largest ``|g_j - f_j|`` reaches this share of
#:   epsilon, ``verify``'s start attack runs before the split (a violation is likely near);
#:   elsewhere only where the split leaves boxes open (it costs seconds when it finds
#:   nothing). At 0.75, ACAS Xu 1_2 against its pruned copy at eps 0.0189 (samples at 0.71 of
#:   it) was found `sat` by the split after 11-31 s; the attack that the stacked path runs
#:   first takes 1.2 s.
DIFF_POLICY = SettlePolicy(split_share=0.8, deep_share=0.6, open_seconds=0.05,
                           deep_boxes=64, probe_samples=1000, attack_near=0.5, open_probe_share=0.15,
                           open_probe_seconds=15.0, whole_open_share=0.4)


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
        open_seconds=policy.open_seconds, deep_boxes=policy.deep_boxes,
        difference=policy.pair_bounds, recorder=recorder)


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
        if split.effective_inputs(network, lower, upper, pairs, lp_chain,
                                  policy.pair_bounds) <= policy.split_max_effective:
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


def sampled_violation(network, pairs, lower, upper, samples: int
                      ) -> tuple[np.ndarray | None, float]:
    """``(x, score)``: of the box's centre and ``samples`` random points (seed 0), the one
    deepest past the unsafe set ``pairs`` by a forward pass (None if none is inside it), and
    the least :func:`~polytrav.bounds.dnf.unsafe_distance` among them."""
    rng = np.random.default_rng(0)
    X = np.vstack([(lower + upper) / 2, rng.uniform(lower, upper, (samples, lower.shape[0]))])
    score = dnf.unsafe_distance(pairs, network.forward(X))
    k = int(np.argmin(score))
    return (X[k] if score[k] < 0 else None), float(score[k])


def checked_attack(pairs, network, region) -> np.ndarray | None:
    """``verify``'s start attack (:func:`~polytrav.bounds.dnf.attack_start`): its point if a
    forward pass puts it strictly inside the unsafe set ``pairs``, else None."""
    x = dnf.attack_start(pairs, network, region)
    if x is not None and dnf.unsafe_distance(pairs, network.forward(x)[None])[0] < 0:
        return x
    return None


def band_pairs(rows, epsilon: float) -> list:
    """The unsafe set of "``|r_j . y| <= epsilon`` for every row ``r_j``" (each ``r_j`` of
    norm √2, as ``g_j - f_j``'s on a joint network): the conjunctions ``r_j . y >= epsilon``
    and ``-r_j . y >= epsilon``, as unit-norm rows ``-s (r_j . y) / √2 <= -epsilon / √2``."""
    s2 = np.sqrt(2.0)
    return [((-sign * r / s2)[None], np.array([-float(epsilon) / s2]))
            for r in np.atleast_2d(rows) for sign in (1.0, -1.0)]


class BandSettle:
    """The settle stage of "``|r_j . y| <= epsilon`` for every row ``r_j``" on a box
    (``diff``'s ε verdict: ``r_j`` picks ``g_j - f_j`` of the joint network), in
    :data:`DIFF_POLICY`'s order (as it is when :meth:`first` runs) and time shares (of
    :meth:`first`'s ``time_limit``). An analysis keeps one per run: :meth:`first` answers
    the first round, :meth:`then` the round after a PROBE (with the probe runs' results).

    1. None (no stage) where the box has more than ``split_max_effective`` effective
       inputs.
    2. :func:`sampled_violation` with ``probe_samples`` points; where none is past epsilon
       but one comes within ``attack_near`` of it, :func:`checked_attack`. A point past
       epsilon that ``accept`` (the analysis's check of a witness) takes: VIOLATED.
    3. The input split (:class:`~polytrav.bounds.split.BoxSplit`, its shares of the time),
       paused where its deep search begins: its worst open boxes are attacked at once
       (:func:`~polytrav.bounds.dnf.box_attack`, half of ``open_probe_share`` of the time).
       A point past epsilon ends the split as its candidate. Where the open boxes hold
       ``whole_open_share`` of the volume, the deep search goes on, and if it stalls with
       that share still open and slopes on every batch of its last doubling
       (``SplitResult.whole``; not where its time or count ran out), the whole box is OPEN
       from the attacks' best point. Else
       PROBE: the boxes whose attack came within ``attack_near`` of epsilon (as the
       samples' rule; none: the split goes on), best attacked first, from their attacks'
       points, for the rest of the ``open_probe_share``; :meth:`then` takes those whose runs held out of
       the split, which goes on.
    4. The split's end: where it leaves boxes open and no attack ran, :func:`checked_attack`
       once. A candidate ``accept`` takes is VIOLATED; one it refuses (on the boundary) is
       the whole box OPEN from it; no box open is PROVEN (``SPLIT``); else the open boxes,
       each from its centre.

    ``stats``: what :func:`polytrav.diff` reports as ``DiffResult.split`` (every Settled
    carries it as ``split``).
    """

    def __init__(self, network, lower, upper, rows, epsilon: float, lp_chain,
                 accept: Callable[[np.ndarray], bool]):
        from polytrav.model.region import Box

        self.network, self.lp_chain, self.accept = network, lp_chain, accept
        self.lower, self.upper = np.asarray(lower, float), np.asarray(upper, float)
        self.box = Box(self.lower, self.upper)
        self.epsilon = float(epsilon)
        self.pairs = band_pairs(rows, self.epsilon)
        self.policy = DIFF_POLICY
        self.stats = {"boxes": 0, "proven": 0, "open": 0, "proven_volume_share": 0.0,
                      "difference": False, "candidate": None}
        self._split = None
        self._attacked = False
        self._order: list[int] = []
        self._time = None
        self._whole_from = None  # the attacks' best point, where the pause found most open

    def first(self, time_limit: float | None) -> Settled | None:
        """The first round (``time_limit``: the run's seconds left, None: no limit)."""
        policy, lo, hi = self.policy, self.lower, self.upper
        self._time = time_limit
        if split.effective_inputs(self.network, lo, hi, self.pairs, self.lp_chain,
                                  policy.pair_bounds) > policy.split_max_effective:
            return None
        x, score = sampled_violation(self.network, self.pairs, lo, hi, policy.probe_samples)
        near = self.epsilon - np.sqrt(2.0) * score >= policy.attack_near * self.epsilon
        if x is None and near:  # the samples come close to epsilon: the attack first
            x, self._attacked = checked_attack(self.pairs, self.network, self.box), True
        if x is not None:
            if not self.accept(x):
                return None  # refused where a forward pass put it past epsilon: no stage
            self.stats["candidate"] = "attack" if self._attacked else "sampled"
            return Settled.violated(x, SettledBy.ATTACK, split=dict(self.stats))
        self._split = split.BoxSplit(
            self.network, lo, hi, self.pairs, self.lp_chain, extend=True,
            time_limit=None if time_limit is None else policy.split_share * time_limit,
            deep_time=policy.deep_seconds if time_limit is None else policy.deep_share * time_limit,
            open_seconds=policy.open_seconds, deep_boxes=policy.deep_boxes,
            difference=policy.pair_bounds, pause=True, whole_open=policy.whole_open_share)
        return self._next(self._split.run())

    def then(self, probed) -> Settled:
        """The round after a PROBE: ``probed``, the probe runs' results in order (those
        whose verdict is HOLDS, up to the first that is not, are proven)."""
        from polytrav.vocabulary.results import Verdict

        held = []
        for k, result in zip(self._order, probed):
            if result.verdict is not Verdict.HOLDS:
                break
            held.append(k)
        self.stats.update(probed=len(probed), held=len(held))
        return self._next(self._split.run(held=held))

    def _next(self, result) -> Settled:
        """What the split's step (its result, or None at its pause) leaves."""
        if result is None:
            return self._paused()
        self.stats.update(split_stats(result), candidate=None if result.candidate is None
                          else self.stats["candidate"] or "split")
        self.stats.setdefault("probed", 0)
        self.stats.setdefault("held", 0)
        self.stats.setdefault("whole", False)
        candidate = result.candidate
        if candidate is None and result.open_boxes and not self._attacked:  # the attack, once
            candidate = checked_attack(self.pairs, self.network, self.box)
            if candidate is not None:
                self.stats["candidate"] = "attack"
        if candidate is not None:
            self.stats["open"] = 0
            if self.accept(candidate):
                return Settled.violated(candidate, SettledBy.ATTACK, split=dict(self.stats))
            return Settled.open(start=candidate, split=dict(self.stats))  # its polytope decides
        if not result.open_boxes:
            return Settled.proven(SettledBy.SPLIT, boxes=result.proven, split=dict(self.stats))
        if self._whole_from is not None and result.whole:  # the deep search stalled so
            self.stats.update(whole=True)
            return Settled.open(start=self._whole_from, split=dict(self.stats))
        return Settled.open(boxes=[OpenBox(a, b, (a + b) / 2) for a, b in result.open_boxes],
                            proven_boxes=result.proven, split=dict(self.stats))

    def _paused(self) -> Settled:
        """At the split's pause: its worst open boxes attacked, then the whole box, the
        attack's candidate, or a PROBE of the boxes."""
        import time

        policy, boxes = self.policy, self._split.paused
        now = time.perf_counter()
        seconds = (policy.open_probe_seconds if self._time is None
                   else policy.open_probe_share * self._time)
        lows, highs = np.array([a for a, _ in boxes]), np.array([b for _, b in boxes])
        score, points = dnf.box_attack(self.pairs, self.network, lows, highs,
                                       deadline=now + seconds / 2)
        order = [int(i) for i in np.argsort(score, kind="stable")]
        if score[order[0]] < 0:  # past epsilon by a forward pass: the split's candidate
            self.stats["candidate"] = "probe"
            return self._next(self._split.run(found=points[order[0]]))
        if _volume_share(lows, highs, self.lower, self.upper) >= policy.whole_open_share:
            # most of the box open: the deep search goes on, and where it stalls with this
            # much still open, the whole box is traversed from here (:meth:`_next`)
            self._whole_from = points[order[0]]
            self.stats.update(probed=0, held=0)
            return self._next(self._split.run(held=[]))
        near = self.epsilon - np.sqrt(2.0) * score >= policy.attack_near * self.epsilon
        order = [i for i in order if near[i]]
        if not order:  # no attack came near epsilon: no probe, the split goes on
            self.stats.update(probed=0, held=0)
            return self._next(self._split.run(held=[]))
        self._order = order
        self.stats.update(split_stats(self._split.result), probed=0, held=0, whole=False)
        return Settled.probe([OpenBox(lows[i], highs[i], points[i]) for i in order],
                             seconds=max(now + seconds - time.perf_counter(), 0.0),
                             split=dict(self.stats))


def _volume_share(lows, highs, lo, hi) -> float:
    """The share of the box ``[lo, hi]``'s volume that the boxes ``[lows, highs]`` cover
    (disjoint; its free inputs only)."""
    free = hi > lo
    return float(np.prod(highs[:, free] - lows[:, free], axis=1).sum()
                 / np.prod(hi[free] - lo[free]))


def decision_margin(pairs, piece, context, policy: SettlePolicy | None = None) -> float:
    """The margin by which a decision analysis (``verify`` mode) proves a piece: a bound
    (:func:`~polytrav.bounds.dnf.dnf_piece_margin`, with the policy's ``pair_bounds``;
    default :data:`VERIFY_POLICY`, as it is when called), never a search: the region's
    branch and bound and MILP run in the settle stage (:func:`settle_region`)."""
    policy = VERIFY_POLICY if policy is None else policy
    return dnf.dnf_piece_margin(pairs, piece, context, pair=policy.pair_bounds)


def settle_region(pairs, context, start: Callable[[], np.ndarray | None], *,
                  accept: Callable[[np.ndarray], bool], policy: SettlePolicy | None = None,
                  **stats):
    """``(settled, outcome)``: the run's whole region, which the attacks (and the input split,
    where it applies) left open, decided by its bound and :func:`region_bab`; None where
    branch and bound does not apply (not a box, or fewer free inputs than the policy's
    ``bab_min_inputs``; default :data:`VERIFY_POLICY`, as it is when called).

    The region's bound (:func:`decision_margin` on the box as a level-0 piece) proves it:
    PROVEN (``BOUND``). Else ``start()`` (the attacks' best point; called only here): a point
    in the unsafe set (a forward pass) needs no search (the outcome says ``attack``; the
    region is OPEN from it). Else :func:`region_bab`: HOLDS is PROVEN (``BRANCH_AND_BOUND`` or
    ``MILP``), a counterexample that ``accept`` takes (the analysis's check of a witness) is
    VIOLATED; anything else leaves the region OPEN from the outcome's ``start`` (a refused
    counterexample: its polytope decides). ``outcome``: the
    :class:`~polytrav.bounds.branch_and_bound.BaBOutcome` (:func:`bab_details` describes
    it), None where no search ran. ``stats``: the stage's counters so far, carried by the
    ``Settled``."""
    from polytrav.bounds.branch_and_bound import BaBOutcome, BaBVerdict

    policy = VERIFY_POLICY if policy is None else policy
    region = context.region.with_dims(context.network.n_inputs)
    if not region.is_box:
        return None
    lo, hi = (np.asarray(a, float) for a in region.bounding_box())
    if int(np.sum(hi > lo)) < policy.bab_min_inputs:
        return None
    if decision_margin(pairs, split.BoxPiece(lo, hi), context, policy) > 0:
        return Settled.proven(SettledBy.BOUND, **stats), None
    point = start()
    if point is not None and dnf.unsafe_distance(
            pairs, context.network.forward(point)[None, :])[0] <= 0:
        return Settled.open(start=point, **stats), BaBOutcome(
            BaBVerdict.VIOLATED, point, 0, 0.0, {"found_by": "attack"}, start=point)
    out = region_bab(pairs, context, lo, hi, point, policy)
    by = SettledBy.MILP if out.stats.get("method") == "milp" else SettledBy.BRANCH_AND_BOUND
    if out.verdict is BaBVerdict.HOLDS:
        return Settled.proven(by, **stats), out
    if out.verdict is BaBVerdict.VIOLATED and out.counterexample is not None \
            and accept(out.counterexample):
        return Settled.violated(out.counterexample, by, **stats), out
    return Settled.open(start=out.start, **stats), out


def region_bab(pairs, context, lo, hi, point, policy: SettlePolicy | None = None):
    """Neuron-level branch and bound (:func:`polytrav.bounds.branch_and_bound.prove_margins`)
    and the region's MILP on the box ``[lo, hi]`` (the run's region), whose bound proved
    nothing: a :class:`~polytrav.bounds.branch_and_bound.BaBOutcome`. Each unsafe conjunction
    is a group of rows, of which branch and bound proves one positive.

    Where a backend serves the ``milp`` form and the box leaves at most
    :data:`~polytrav.bounds.milp.MILP_MAX_BINARIES` unstable neurons (CROWN's optimised
    bounds: 0.1-1.8 s on MNIST's networks), branch and bound runs for the policy's
    ``bab_probe_share`` of the time left (it decides shallow cases in a few nodes), then one
    MILP per conjunction (:class:`~polytrav.bounds.milp.RegionMilp`) for ``milp_share``.
    Otherwise, or if neither decides, branch and bound gets ``bab_share`` of the run's time
    left (no limit without one; its stats then say why the MILP did not decide, under
    ``milp``). The outcome's ``start`` (a counterexample, forward-pass checked, else
    ``point``, the attacks' best) is where a traversal should start. ``policy``: default
    :data:`VERIFY_POLICY` (as it is when called).
    """
    from polytrav.bounds.branch_and_bound import BaBVerdict
    from polytrav.bounds.milp import MILP_MAX_BINARIES, MILP_TIME_SHARE, RegionMilp

    policy = VERIFY_POLICY if policy is None else policy
    decided = (BaBVerdict.HOLDS, BaBVerdict.VIOLATED)
    why_not = "no backend serves the 'milp' form"
    if context.backends("milp", required=False):
        milp = RegionMilp(context.network, lo, hi)
        why_not = f"{milp.binaries} unstable neurons (more than {MILP_MAX_BINARIES})"
        if milp.binaries <= MILP_MAX_BINARIES:
            out = _bab(pairs, context, lo, hi, policy.bab_probe_share, point, policy)
            if out.verdict not in decided:
                share = MILP_TIME_SHARE if policy.milp_share is None else policy.milp_share
                out, why_not = _milp(milp, pairs, context, point, share)
            if out is not None:
                return out
    out = _bab(pairs, context, lo, hi, policy.bab_share, point, policy)
    out.stats["milp"] = why_not
    return out


def _bab(pairs, context, lo, hi, share, point, policy):
    """:func:`~polytrav.bounds.branch_and_bound.prove_margins` on the region with ``share``
    of the time left; its ``start``: the counterexample, else the attack's ``point``."""
    from polytrav.bounds.branch_and_bound import prove_margins

    left = context.time_left()
    ends = np.cumsum([C.shape[0] for C, _ in pairs])
    out = prove_margins(context.network, lo, hi, np.vstack([C for C, _ in pairs]),
                        np.concatenate([d for _, d in pairs]), lp_backends=context.backends("lp"),
                        time_limit=None if left is None else share * max(left, 0.0),
                        groups=[np.arange(e - C.shape[0], e) for e, (C, _) in zip(ends, pairs)],
                        pair=policy.pair_bounds)
    out.start = out.counterexample if out.counterexample is not None else point
    return out


def _milp(milp, pairs, context, point, share):
    """``(outcome, reason)``: the region decided by ``milp`` (a
    :class:`~polytrav.bounds.milp.RegionMilp`) in ``share`` of the time left, as a
    :class:`~polytrav.bounds.branch_and_bound.BaBOutcome` (0 nodes; its stats say
    ``method: milp``), or, where it decides nothing, None and why not."""
    from polytrav.bounds.branch_and_bound import BaBOutcome, BaBVerdict
    from polytrav.bounds.milp import MilpVerdict

    net = context.network
    left = context.time_left()
    out = milp.prove(pairs, context.backends("milp"),
                     time_limit=None if left is None else share * max(left, 0.0),
                     unsafe=lambda x: dnf.unsafe_distance(pairs, net.forward(x)[None, :])[0] <= 0)
    if out.verdict is MilpVerdict.UNKNOWN:
        return None, out.reason
    stats = {"method": "milp", "binaries": out.binaries, "solves": out.solves}
    if out.verdict is MilpVerdict.HOLDS:
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


def corners(lo: np.ndarray, hi: np.ndarray, count: int, rng) -> np.ndarray:
    """Corners of the box ``[lo, hi]``, pulled :data:`~polytrav.vocabulary.tolerances.
    CORNER_INSET` of the way to its centre (inside the box): all of them when there are at
    most ``count``, else ``count`` random ones. Shape ``(k, n)``. The extremes of a piecewise
    linear quantity sit at a box's corners as often as not (a linear program's optima do)."""
    n = lo.shape[0]
    if n <= 30 and 2 ** n <= count:
        signs = ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1).astype(bool)
    else:
        signs = rng.random((count, n)) < 0.5
    mid, half = (lo + hi) / 2, (hi - lo) / 2 * (1.0 - CORNER_INSET)
    return mid + np.where(signs, half, -half)


def box_samples(lo: np.ndarray, hi: np.ndarray, samples: int, n_corners: int, rng
                ) -> np.ndarray:
    """The box's centre, ``samples`` random points and up to ``n_corners`` corners
    (:func:`corners`), in that order. Shape ``(1 + samples + k, n)``."""
    return np.vstack([(lo + hi) / 2, rng.uniform(lo, hi, (samples, lo.shape[0])),
                      corners(lo, hi, n_corners, rng)])


@dataclass
class BoxBisection:
    """What :func:`bisect_box` found: ``proven`` (every sub-box proven: the box is),
    ``candidate`` (a sampled point the check called wrong, or None), ``boxes`` (sub-boxes
    bounded), ``proven_boxes`` (of them, proven), ``open`` (left open: unbounded, or too
    narrow to halve)."""

    proven: bool = False
    candidate: np.ndarray | None = field(default=None, repr=False)
    boxes: int = 0
    proven_boxes: int = 0
    open: int = 0

    def summary(self) -> dict:
        """As plain data: ``{"proven", "boxes", "open", "candidate"}`` (whether one was
        found)."""
        return {"proven": bool(self.proven), "boxes": int(self.boxes), "open": int(self.open),
                "candidate": self.candidate is not None}


def bisect_box(network, lower, upper, margin: Callable[[np.ndarray, np.ndarray], float],
               wrong: Callable[[np.ndarray], int | None], max_boxes: int, samples: int,
               rng) -> BoxBisection:
    """The box ``[lower, upper]`` bisected worst bound first, at most ``max_boxes`` sub-boxes.

    A sub-box whose ``margin(lo, hi)`` (a sound bound over it) is positive is proven;
    otherwise its centre, ``samples`` random points and as many corners (:func:`box_samples`)
    go to ``wrong(X)`` (the index of the worst point it calls wrong, or None): a wrong one
    ends the search as ``candidate``; else the sub-box is halved along the input whose
    first-layer weights, over the neurons the interval bounds leave unstable, times its
    width are largest. Sub-boxes too narrow to halve, and those left when the count runs
    out, are open.
    """
    import heapq

    W, b = network.weights[0], network.biases[0]
    W0 = np.abs(W)
    found = BoxBisection()
    heap, count = [(-np.inf, 0, lower, upper)], 1
    while heap and found.boxes < max_boxes:
        _, _, lo, hi = heapq.heappop(heap)
        m = margin(lo, hi)
        found.boxes += 1
        if m > 0:
            found.proven_boxes += 1
            continue
        X = box_samples(lo, hi, samples, samples, rng)
        k = wrong(X)
        if k is not None:
            found.candidate = X[k]
            break
        h_lo = np.minimum(W, 0) @ (hi - lo) + W @ lo
        h_hi = np.maximum(W, 0) @ (hi - lo) + W @ lo
        unstable = (h_lo + b < 0) & (h_hi + b > 0)
        score = (W0[unstable].sum(axis=0) if unstable.any() else W0.sum(axis=0)) * (hi - lo)
        j = int(np.argmax(score))
        mid = (lo[j] + hi[j]) / 2
        if not lo[j] < mid < hi[j]:
            found.open += 1  # too narrow to halve: the traversal decides it
            continue
        for a, c in ((lo[j], mid), (mid, hi[j])):
            lo2, hi2 = lo.copy(), hi.copy()
            lo2[j], hi2[j] = a, c
            heapq.heappush(heap, (m, count, lo2, hi2))
            count += 1
    found.open += len(heap)
    found.proven = found.candidate is None and found.open == 0
    return found


def region_milp_slope(network, lower, upper, feature: int, output: int, sign: float, context,
                      policy: SettlePolicy | None = None):
    """Is ``sign`` times the slope of ``output`` in ``feature`` at least 0 over the box? The
    region's MILP (:meth:`~polytrav.bounds.milp.RegionMilp.monotone`: ``holds``, a
    ``candidate`` pattern's point, or ``unknown``) on ``context``'s ``milp`` backends, with
    the policy's ``milp_share`` (None: :data:`~polytrav.bounds.milp.MILP_TIME_SHARE`) of
    ``context.time_left()``. ``policy``: default :data:`MONOTONE_POLICY`."""
    from polytrav.bounds.milp import MILP_TIME_SHARE, RegionMilp

    policy = MONOTONE_POLICY if policy is None else policy
    share = MILP_TIME_SHARE if policy.milp_share is None else policy.milp_share
    left = context.time_left()
    return RegionMilp(network, lower, upper).monotone(
        feature, output, sign, context.backends("milp"),
        time_limit=None if left is None else share * left)
