"""Input splitting before the traversal, for boxes of few effective inputs (``verify``'s first stage).

A box whose bound depends mostly on a few inputs (:func:`effective_inputs`: ACAS Xu's 5
inputs, 14 of a flight controller; not an image's pixels) is bisected, worst bound first,
into sub-boxes:

* a sub-box on which the bounds of :func:`polytrav.bounds.dnf.dnf_bound` (CROWN's slopes)
  prove that no conjunction of the unsafe set can be met is *proven* (the same sound bounds
  that prune pieces inside the traversal; the box's own rows are its variables' bounds),
  computed for the :data:`SPLIT_BATCH` worst boxes at once
  (:func:`~polytrav.bounds.crown.box_output_bounds`, :func:`~polytrav.bounds.dnf.dnf_box_margin`;
  for two networks of one architecture side by side on one input, each row's better of that
  and the bound on their difference, :mod:`polytrav.bounds.difference`);
* otherwise the LP minimisers of the unproven conjunctions (where the relaxation comes
  closest to the unsafe set; where a box corner that minimises one of a conjunction's rows
  meets all of them, that LP cannot prove it and the corners stand in) and the box's centre
  are tried by a forward pass: a point in the unsafe set is a candidate counterexample (the
  caller confirms it);
* otherwise the box is halved along the input whose bound coefficients (in the box's own
  ``[-1, 1]`` coordinates, so already scaled by its width), summed over the rows, times its
  width are largest (weighting the width once more favours halving wide inputs).

The search ends when every box is proven, a candidate is found, or the budget (boxes,
seconds) runs out; the boxes still open are returned for the traversal (with a deep search,
possibly as the larger boxes of its frontier that contain them). Each proven box is
a proof for its points only, so the region is accounted for as proven boxes plus the open
boxes' traversals.
"""
from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field

import numpy as np

__all__ = ["BoxPiece", "BoxFrame", "LpContext", "SplitResult", "split_box", "BoxSplit", "effective_inputs",
           "SPLIT_MAX_EFFECTIVE", "SPLIT_BOXES",
           "SPLIT_MAX_BOXES", "SPLIT_OPEN_CAP", "SPLIT_DEEP_STALL", "SPLIT_WHOLE_STALL",
           "SPLIT_DEEP_MAX_BOXES",
           "SPLIT_DEEP_SHARE", "SPLIT_DEEP_TIME", "SPLIT_OPEN_SECONDS", "SPLIT_LEAVES_PER_BOX",
           "SPLIT_BATCH", "SPLIT_BATCH_SHARE", "SPLIT_PROBE_BOXES", "SPLIT_PAIR_FROM",
           "SPLIT_PAIR_STEPS", "SPLIT_PAIR_PAYS", "SPLIT_PAIR_WINDOW", "SPLIT_PAIR_SAMPLE"]

#: Input splitting is used for boxes of at most this many *effective* inputs
#: (:func:`effective_inputs`): halving each of ``k`` inputs once takes ``2^k`` boxes.
SPLIT_MAX_EFFECTIVE = 16
#: The share of the bound's input sensitivity that the effective inputs carry.
EFFECTIVE_SHARE = 0.9
#: Bounded boxes before the open ones are handed to the traversal, unless the splitting is
#: accelerating (:func:`split_box`'s ``extend``).
SPLIT_BOXES = 400
#: With ``extend``: at most this many boxes bounded, and at most this many left open (each
#: open box costs a traversal: tens of milliseconds where a box's bound costs one).
SPLIT_MAX_BOXES = 50_000
SPLIT_OPEN_CAP = 2_000
#: The deep search (``split_box``'s ``deep_time``) doubles while each doubling proves at least
#: this share of the volume still unproven, up to this many boxes.
SPLIT_DEEP_STALL = 0.1
SPLIT_DEEP_MAX_BOXES = 400_000
#: ... and at least this share while the caller's ``whole_open`` share of the volume is still
#: open (:class:`BoxSplit`: the caller traverses the whole box where the deep search ends so).
#: Neither ends it after a doubling in which the slopes were only sampled
#: (:data:`SPLIT_PAIR_PAYS`): the next doubling bounds every batch with slopes, and only its
#: stall ends the search (NeuroDiff's 4_6 at ε 0.01 stalled so at 3 200 boxes, 50 % open, and
#: its whole box, with millions of joint polytopes, went to one traversal; the split went on
#: to prove 86 % at 12 800 boxes).
SPLIT_WHOLE_STALL = 0.25
#: After the deep search, a frontier box with at most this many open boxes inside leaves
#: those to the traversal, else it is traversed whole (a small open box's traversal costs
#: about a quarter of a frontier box's: 25 against 100 ms on ACAS Xu 3_3 property 2).
SPLIT_LEAVES_PER_BOX = 4
#: At most this many open boxes, the worst first, are handed over where a :class:`BoxSplit`
#: pauses (its deep search begins).
SPLIT_PROBE_BOXES = 4096
#: A settle policy's deep search time: this share of the time left, or these seconds without
#: a time limit (``verify``'s, budgeted by a count, has no seconds without a time limit:
#: :data:`~polytrav.bounds.settle.VERIFY_POLICY`).
SPLIT_DEEP_SHARE, SPLIT_DEEP_TIME = 0.25, 30.0
#: ... and at most this many seconds per box of its frontier (about what traversing a small
#: open box costs): the search never costs more than the traversals it may save.
SPLIT_OPEN_SECONDS = 0.03
#: Boxes bounded at once (:func:`~polytrav.bounds.crown.box_output_bounds`): a box's CROWN
#: bound alone is mostly NumPy's per-call cost (about 0.9 ms on ACAS Xu); at most one in
#: this many of the boxes waiting, so that the search stays close to worst first (a batch of
#: the whole queue early on proves the easy boxes first, and the proven share then stops
#: accelerating: ACAS Xu 3_3 property 2 ended its split at 800 boxes, 544 open).
SPLIT_BATCH, SPLIT_BATCH_SHARE = 64, 8
#: Once this many boxes are bounded, or the deep search has begun, a pair's box that its
#: CROWN bound leaves unproven is bounded again with each network's intermediate bounds
#: tightened by ``SPLIT_PAIR_STEPS`` slope steps (:mod:`polytrav.bounds.difference_slopes`)
#: before it is halved (0 steps: never). (From the deep search's start: NeuroDiff's 2_8 at
#: ε 0.01 pauses at 400 boxes with 90 % open; its next doubling proved 10 % of that without
#: slopes, 46 % with.) A box costs about four times as much so; a query that CROWN proves
#: in a few hundred boxes never pays it (NeuroDiff's ACAS Xu 1_1 at ε 0.05: 117 boxes in 0.6 s,
#: with slopes from the first box 57 in 1.9 s), the hard ones prove boxes that would have
#: taken a subtree each (3_9 at ε 0.01: proven in 19 971 boxes, 119 CPU s, where 60 000
#: boxes, 86 s, left 9 % of the volume open).
SPLIT_PAIR_FROM, SPLIT_PAIR_STEPS = 1024, 10
#: ... while they pay: once ``SPLIT_PAIR_WINDOW`` boxes have been bounded again so, a batch
#: is bounded again only while the slopes proved at least ``SPLIT_PAIR_PAYS`` of the last
#: ``SPLIT_PAIR_WINDOW`` boxes they were tried on, else one batch in ``SPLIT_PAIR_SAMPLE``
#: (which keeps counting: the slopes come back where they pay again). A box bounded again
#: costs about three CROWN bounds, and one it proves saves a subtree of a few boxes: ACAS Xu
#: 1_2 against its pruned copy at eps 0.0212 proved 6 % of the 18 056 boxes it bounded again
#: (35 853 boxes, 62-74 CPU s, against 39 109 boxes, 32 CPU s, without slopes).
SPLIT_PAIR_PAYS, SPLIT_PAIR_WINDOW, SPLIT_PAIR_SAMPLE = 0.15, 512, 8


@dataclass
class SplitResult:
    """What input splitting found: a candidate counterexample, or the boxes left open."""

    candidate: np.ndarray | None
    open_boxes: list = field(default_factory=list)  #: ``(lower, upper)`` pairs, worst first
    proven: int = 0  #: boxes proven by bounds
    held: int = 0  #: boxes proven by the caller at a :class:`BoxSplit`'s pause
    #: the share of the box's volume proven, by bounds or at the pause (free inputs only)
    proven_volume_share: float = 0.0
    boxes: int = 0  #: boxes bounded
    #: whether the boxes were bounded as a pair of networks (``difference``)
    difference: bool = False
    #: boxes open where the deep search began (0: it did not run)
    frontier: int = 0
    #: whether the deep search ended at a doubling that proved less than
    #: :data:`SPLIT_WHOLE_STALL` of what was left, no batch of it without slopes, while the
    #: caller's ``whole_open`` share was still open (the caller traverses the whole box:
    #: :class:`BoxSplit`)
    whole: bool = False


class BoxFrame:
    """The box's own coordinates: ``x = m + h * u``, ``u`` in ``[-1, 1]^n`` (a
    :class:`~polytrav.bounds.views.PieceFrame`)."""

    def __init__(self, lower: np.ndarray, upper: np.ndarray):
        self.m, self.h = (lower + upper) / 2, (upper - lower) / 2
        self.dim = lower.shape[0]

    def to_x(self, u: np.ndarray) -> np.ndarray:
        return self.m + self.h * u


class BoxPiece:
    """A box ``[lower, upper]`` seen as a level-0 piece (a
    :class:`~polytrav.bounds.views.BoundPiece`, as the traversal's pieces are): the frame
    ``x = m + M u``, ``u`` in ``[-1, 1]^n``, no rows beyond the box, no vertices, no fixed
    layers."""

    level, code, vertices = 0, (), None

    def __init__(self, lower: np.ndarray, upper: np.ndarray):
        self.frame = BoxFrame(lower, upper)
        self.M, self.m = np.diag(self.frame.h), self.frame.m

    def halfspaces(self, box: bool = True) -> tuple[np.ndarray, np.ndarray]:
        n = self.frame.dim
        if not box:  # the box is the LP variables' bounds
            return np.zeros((0, n)), np.zeros(0)
        return np.vstack([np.eye(n), -np.eye(n)]), np.ones(2 * n)


class LpContext:
    """A run outside any traversal, as bounds see it (a
    :class:`~polytrav.bounds.views.BoundContext`): the network and one LP chain."""

    def __init__(self, network, lp_chain):
        self.network, self._lp = network, lp_chain

    def backends(self, form: str, required: bool = True) -> list:
        return self._lp if form == "lp" else []


def effective_inputs(network, lower, upper, pairs, lp_chain, pair: bool = True) -> int:
    """The fewest inputs that carry :data:`EFFECTIVE_SHARE` of the box's bound sensitivity:
    CROWN's coefficients of the unsafe rows on each input (in the box's own coordinates, so
    scaled by its width once), summed over the rows, times the width (the bisection's
    score). A bisection shrinks the bound's looseness by halving these inputs: 5 or 6 of
    the 14 inputs of VNN-COMP's ``gcas``, 2 of ACAS Xu's 5, 422 of the 784 pixels of an
    MNIST image's L-infinity ball. ``pair``: as :func:`~polytrav.bounds.dnf.dnf_bound`'s."""
    from polytrav.bounds.dnf import dnf_bound

    lower, upper = np.asarray(lower, float), np.asarray(upper, float)
    _, L = dnf_bound(pairs, BoxPiece(lower, upper), LpContext(network, lp_chain), steps=0,
                     pair=pair)
    score = np.sort(np.abs(L).sum(axis=0) * (upper - lower))[::-1]
    if not score.any():
        return int(np.sum(upper > lower))
    return int(np.searchsorted(np.cumsum(score) / score.sum(), EFFECTIVE_SHARE) + 1)


def split_box(network, lower, upper, pairs, lp_chain, *, max_boxes: int | None = None,
              time_limit: float | None = None, extend: bool = False,
              deep_time: float | None = None, open_seconds: float = SPLIT_OPEN_SECONDS,
              deep_boxes: int | None = None, difference: bool = True, recorder=None,
              pair_steps: int | None = None) -> SplitResult:
    """Bisect the box ``[lower, upper]`` against the unsafe set ``pairs`` (conjunctions
    ``C y <= d`` with unit-norm rows, as :attr:`LinearProperty.pairs
    <polytrav.plugins.linear_property.LinearProperty.pairs>` holds them); see the module
    docstring. ``lp_chain``: LP backends;
    ``max_boxes``: default :data:`SPLIT_BOXES`.

    ``extend``: at ``max_boxes`` and at every doubling after it, go on while the splitting
    accelerates: the share of the volume proven over the last doubling of the boxes is at
    least that of the doubling before (a box's bound costs about a millisecond, a traversal
    of an open box tens), with at most :data:`SPLIT_OPEN_CAP` boxes open and
    :data:`SPLIT_MAX_BOXES` bounded.

    ``deep_time``: where that stops (the *frontier*), go on for at most this many seconds
    more (and at most ``open_seconds`` per frontier box: about what a traversal of an open
    box costs), doubling while each doubling proves at least :data:`SPLIT_DEEP_STALL` of the volume
    still unproven, up to :data:`SPLIT_DEEP_MAX_BOXES`. ``deep_boxes``: where given, the
    deep search's budget is a count instead of ``open_seconds``: at most this many boxes
    bounded per frontier box (the same boxes under any load; ``deep_time`` still caps its
    seconds, ``math.inf``: the count alone). If boxes are still open then, each
    frontier box that holds open ones returns them if they are at most
    :data:`SPLIT_LEAVES_PER_BOX`, else itself (to be traversed whole).

    ``difference``: the boxes of a network that is two networks of the same architecture
    side by side on one input (a two-network query: :meth:`NetworkPair.in_stack
    <polytrav.bounds.difference.NetworkPair.in_stack>`) are bounded with the bounds on their
    difference as well (each row's better bound); False: the stack's CROWN alone (a
    :class:`~polytrav.bounds.settle.SettlePolicy`'s ``pair_bounds``). ``pair_steps``: with
    ``difference``, once :data:`SPLIT_PAIR_FROM` boxes are bounded or the deep search has
    begun, a box left unproven is bounded again with that many slope steps on each
    network's intermediate bounds (default :data:`SPLIT_PAIR_STEPS`; 0: never).

    ``recorder``: None, or a proof's :class:`~polytrav.proof.record.CaseRecord`, told of each
    batch bounded and each halving (the boxes' ids are their order numbers, the box 0).

    :class:`BoxSplit` is the same split, able to pause where its deep search begins, and
    with ``whole_open`` (a share of the volume) to end its deep search at a doubling that
    proves less than :data:`SPLIT_WHOLE_STALL` of what was left, with slopes on every batch of
    it, while that share is still open (``SplitResult.whole``: its caller then traverses the
    whole box)."""
    return BoxSplit(network, lower, upper, pairs, lp_chain, max_boxes=max_boxes,
                    time_limit=time_limit, extend=extend, deep_time=deep_time,
                    open_seconds=open_seconds, deep_boxes=deep_boxes, difference=difference,
                    recorder=recorder, pair_steps=pair_steps).run()


class BoxSplit:
    """:func:`split_box` in steps: with ``pause``, it stops once where its deep search
    begins and hands over its :data:`SPLIT_PROBE_BOXES` worst open boxes (``paused``:
    ``(lower, upper)`` pairs, worst first), for the caller to look at them otherwise (a
    deep search can take most of the time on a query that holds nowhere near its worst
    boxes, and those are the boxes it bounds worst; ``diff`` traverses them).

    ``run()`` goes on: to the end (the :class:`SplitResult`), or to the pause (None). After
    the pause, ``run(found=x)`` ends the split with ``x`` as its candidate (a counterexample
    found there); ``run(held=[i, ...])`` takes the paused boxes at those positions as
    proven (their traversals held, say) and goes on; ``run(held=None)`` ends the split
    there, every open box left open. ``result``: what it found so far. The split never
    calls anything back: the caller decides what happens at the pause.
    """

    def __init__(self, network, lower, upper, pairs, lp_chain, *, max_boxes: int | None = None,
                 time_limit: float | None = None, extend: bool = False,
                 deep_time: float | None = None, open_seconds: float = SPLIT_OPEN_SECONDS,
                 deep_boxes: int | None = None, difference: bool = True, pause: bool = False,
                 recorder=None, pair_steps: int | None = None, whole_open: float | None = None):
        self.result = SplitResult(None)
        self.paused: list | None = None
        self._steps = _bisect(self, network, np.asarray(lower, float),
                              np.asarray(upper, float), pairs, lp_chain,
                              SPLIT_BOXES if max_boxes is None else max_boxes, time_limit,
                              extend, deep_time, open_seconds, deep_boxes, difference, pause,
                              recorder, SPLIT_PAIR_STEPS if pair_steps is None else pair_steps,
                              whole_open)
        self._started = False

    def run(self, found=None, held=()) -> SplitResult | None:
        """Go on to the end (its :class:`SplitResult`) or to the pause (None); ``found``,
        ``held``: what the caller made of the paused boxes (see the class)."""
        try:
            if not self._started:
                self._started = True
                self.paused = next(self._steps)
            else:
                self.paused = self._steps.send((found, held))
        except StopIteration as done:
            self.paused = None
            return done.value
        return None


def _bisect(state: BoxSplit, network, lower, upper, pairs, lp_chain, max_boxes, time_limit,
            extend, deep_time, open_seconds, deep_boxes, difference, pause, recorder,
            pair_steps, whole_open):
    """The split's steps (a generator: it yields the worst open boxes once, with ``pause``,
    and returns the :class:`SplitResult`)."""
    from polytrav.bounds.crown import box_output_bounds
    from polytrav.bounds.difference import stacked_pair
    from polytrav.bounds.dnf import stacked

    t0 = time.perf_counter()
    context = LpContext(network, lp_chain)
    free = upper > lower
    total = float(np.prod(upper[free] - lower[free]))
    result = state.result
    # (margin, order, lo, hi, frontier box or -1, the hidden neurons' phases known on the box)
    heap = [(-np.inf, 0, lower, upper, -1, np.zeros(network.n_neurons, np.int8))]
    narrow = []  # boxes too narrow to halve, with their frontier box
    count = 1
    share = {}  # proven volume share at max_boxes / 4, / 2, and each doubling from max_boxes
    marks = sorted({max_boxes // 4, max_boxes // 2, max_boxes} - {0})
    mark = marks.pop(0)
    frontier = None  # the boxes open where the deep search began
    deep_start = None
    deep_end = None  # with deep_boxes: the count of boxes at which the deep search ends
    layers = list(zip(network.weights, network.biases))
    pair = stacked_pair(network) if difference else None
    paid = _SlopeLedger()
    result.difference = pair is not None
    if recorder is not None:
        recorder.start(lower, upper, pair is not None)
    stack = stacked(pairs)
    C = stack[0]
    batch: list = []  # boxes popped and bounded together, then taken one by one
    while heap or batch:
        if not batch:
            if result.boxes >= mark:
                share[mark] = result.proven_volume_share
                if mark < max_boxes:
                    mark = marks.pop(0)
                elif frontier is None and extend and _accelerating(share, mark) \
                        and len(heap) <= SPLIT_OPEN_CAP and mark < SPLIT_MAX_BOXES:
                    mark *= 2
                elif frontier is None and deep_time is not None and deep_time > 0:
                    frontier = [e[2:4] for e in heap] + [(lo, hi) for lo, hi, _ in narrow]
                    heap = [e[:4] + (i, e[5]) for i, e in enumerate(heap)]  # same order: a heap
                    narrow = [(lo, hi, len(heap) + i) for i, (lo, hi, _) in enumerate(narrow)]
                    if pause:
                        worst = sorted(heap, key=lambda e: e[:2])[:SPLIT_PROBE_BOXES]
                        found, held = yield [e[2:4] for e in worst]
                        if found is not None:
                            result.candidate = np.asarray(found, float)
                            return result
                        if held is None:  # the caller answered otherwise: the split ends
                            break
                        held = [worst[i] for i in set(held)]  # proven: out of the search
                        gone = {e[1] for e in held}
                        heap = [e for e in heap if e[1] not in gone]
                        heapq.heapify(heap)
                        result.held = len(held)
                        result.proven_volume_share += sum(
                            float(np.prod(e[3][free] - e[2][free])) for e in held) / total
                    deep_start, mark = time.perf_counter(), 2 * mark
                    paid.doubling(insist=False)
                    if deep_boxes is None:
                        deep_time = min(deep_time, open_seconds * len(frontier))
                    else:
                        deep_end = result.boxes + deep_boxes * len(frontier)
                elif frontier is not None and mark < SPLIT_DEEP_MAX_BOXES and _deep_goes_on(
                        share, mark, whole_open, paid, result):
                    mark *= 2
                else:
                    break
            now = time.perf_counter()
            if not heap:  # the paused boxes held every box left
                break
            if time_limit is not None and now - t0 > time_limit:
                break
            if deep_start is not None and now - deep_start > deep_time:
                break
            if deep_end is not None and result.boxes >= deep_end:
                break
            # the worst boxes, never past the next mark (the checks above run per batch)
            take = min(SPLIT_BATCH, 1 + len(heap) // SPLIT_BATCH_SHARE, mark - result.boxes,
                       len(heap) if deep_end is None else deep_end - result.boxes)
            batch = [heapq.heappop(heap) for _ in range(take)]
            lows, highs = np.array([e[2] for e in batch]), np.array([e[3] for e in batch])
            phases = np.array([e[5] for e in batch])
            if pair is None:
                Ls, gs = box_output_bounds(layers, (lows + highs) / 2, (highs - lows) / 2, C,
                                           phases=phases)
            else:
                Ls, gs = pair.box_output_bounds((lows + highs) / 2, (highs - lows) / 2, C,
                                                phases=phases)
            batch = _checked(batch, phases, Ls, gs, pairs, stack, network, context)
            if pair is not None and pair_steps and recorder is None \
                    and (result.boxes >= SPLIT_PAIR_FROM or frontier is not None) \
                    and paid.next_batch():
                batch, tried, won = _tightened(batch, pair, pair_steps, C, pairs, stack,
                                               network, context)
                paid.add(tried, won)
            if recorder is not None:
                recorder.bounded([e[1] for e in batch], [e[7] for e in batch], Ls, gs)
            batch = batch[::-1]
        _, box_id, lo, hi, anc, phases, L, margin, unsafe = batch.pop()
        result.boxes += 1
        if margin > 0:
            result.proven += 1
            result.proven_volume_share += float(np.prod(hi[free] - lo[free])) / total
            continue
        if unsafe is not None:
            result.candidate = unsafe
            return result
        score = np.abs(L).sum(axis=0) * (hi - lo)  # L is in u: the width counts twice
        if not score.any():
            score = (hi - lo) * free
        j = int(np.argmax(score))
        mid = (lo[j] + hi[j]) / 2
        if not lo[j] < mid < hi[j]:  # too narrow to halve in floating point: traverse it
            narrow.append((lo, hi, anc))
            continue
        if recorder is not None:
            recorder.split(box_id, j, mid, count, count + 1)
        for a, b in ((lo[j], mid), (mid, hi[j])):
            lo2, hi2 = lo.copy(), hi.copy()
            lo2[j], hi2[j] = a, b
            heapq.heappush(heap, (margin, count, lo2, hi2, anc, phases.copy()))
            count += 1
    leaves = [e[2:5] for e in sorted(heap, key=lambda e: e[:2])] + narrow
    result.open_boxes = [(lo, hi) for lo, hi, _ in leaves]
    if frontier is not None:  # per frontier box: its open leaves, or itself if they are many
        result.frontier = len(frontier)
        per_box: dict = {}
        for lo, hi, anc in leaves:
            per_box.setdefault(anc, []).append((lo, hi))
        result.open_boxes = [box for anc, boxes in per_box.items()
                             for box in (boxes if len(boxes) <= SPLIT_LEAVES_PER_BOX
                                         else [frontier[anc]])]
    return result


def _checked(batch, phases, Ls, gs, pairs, stack, network, context) -> list:
    """The batch's boxes with their phases, bounds ``L``, margins
    (:func:`~polytrav.bounds.dnf.dnf_box_margin`) and, where unproven, the first of their
    candidate points (the conjunctions' minimisers, the centre) that a forward pass puts in
    the unsafe set, or None: one forward pass for the batch."""
    from polytrav.bounds.dnf import dnf_box_margin, unsafe_distance

    out, points, owner = [], [], []
    for e, p, L, g in zip(batch, phases, Ls, gs):
        piece = BoxPiece(e[2], e[3])
        found = [piece.m]
        margin = dnf_box_margin(pairs, L, g, piece, context, found, stack)
        if margin <= 0:
            points += found
            owner += [len(out)] * len(found)
        out.append(e[:5] + (p, L, margin, None))
    if points:
        X = np.array(points)
        unsafe = unsafe_distance(pairs, network.forward(X)) <= 0
        for k in np.flatnonzero(unsafe)[::-1]:  # each box's first unsafe point
            out[owner[k]] = out[owner[k]][:-1] + (X[k],)
    return out


class _SlopeLedger:
    """Whether the next batch's unproven boxes are bounded again with slopes
    (:data:`SPLIT_PAIR_PAYS`, :data:`SPLIT_PAIR_WINDOW`, :data:`SPLIT_PAIR_SAMPLE`): counts
    of boxes bounded again and proven so, over the last batches that tried. ``sampled``:
    whether a batch went without since the deep search's last :meth:`doubling`, which may
    ``insist`` (every batch with slopes until the next)."""

    def __init__(self):
        self.batches = 0  # batches asked about
        self.recent: list[tuple[int, int]] = []  # (bounded again, proven so) per batch tried
        self.tried = self.won = 0  # their sums
        self.sampled = self.insist = False

    def next_batch(self) -> bool:
        self.batches += 1
        if self.insist or self.tried < SPLIT_PAIR_WINDOW \
                or self.won >= SPLIT_PAIR_PAYS * self.tried:
            return True
        if self.batches % SPLIT_PAIR_SAMPLE == 0:
            return True
        self.sampled = True  # this batch goes without
        return False

    def doubling(self, insist: bool) -> None:
        """A doubling of the deep search begins (``insist``: slopes on every batch of it)."""
        self.sampled, self.insist = False, insist

    def add(self, tried: int, won: int) -> None:
        self.recent.append((tried, won))
        self.tried, self.won = self.tried + tried, self.won + won
        while self.tried - self.recent[0][0] >= SPLIT_PAIR_WINDOW:  # the last window only
            t, w = self.recent.pop(0)
            self.tried, self.won = self.tried - t, self.won - w


def _tightened(batch, pair, steps, C, pairs, stack, network, context) -> tuple[list, int, int]:
    """``(batch, tried, won)``: the batch (:func:`_checked`'s) with its boxes that the
    pair's bound left unproven, and no candidate in, bounded again with each network's
    intermediate bounds tightened by ``steps`` slope steps
    (:mod:`polytrav.bounds.difference_slopes`); how many were, and how many of them that
    proved."""
    again = [i for i, e in enumerate(batch) if e[7] <= 0 and e[8] is None]
    if not again:
        return batch, 0, 0
    lows, highs = np.array([batch[i][2] for i in again]), np.array([batch[i][3] for i in again])
    phases = np.array([batch[i][5] for i in again])
    L2, g2 = pair.box_output_bounds((lows + highs) / 2, (highs - lows) / 2, C, phases=phases,
                                    steps=steps)
    redone = _checked([batch[i] for i in again], phases, L2, g2, pairs, stack, network, context)
    for i, e in zip(again, redone):
        batch[i] = e
    return batch, len(again), sum(1 for e in redone if e[7] > 0)


def _deep_goes_on(share: dict, at: int, whole_open: float | None, paid: _SlopeLedger,
                  result: SplitResult) -> bool:
    """Whether the deep search doubles again at ``at`` boxes: the doubling that ended there
    proved :data:`SPLIT_DEEP_STALL` of what was left, or :data:`SPLIT_WHOLE_STALL` while the
    ``whole_open`` share is still open. A doubling that stalls while the slopes were only
    sampled (``paid``: some of its batches went without) is no reason to end the search (and
    hand its open boxes, or the whole box, to traversals): the next doubling bounds every
    batch with slopes, and only if that one stalls too does the split end, with
    ``result.whole`` where the ``whole_open`` share is still open."""
    whole = whole_open is not None and 1.0 - share[at] >= whole_open
    if _deep_progress(share, at, SPLIT_WHOLE_STALL if whole else SPLIT_DEEP_STALL):
        paid.doubling(insist=False)
        return True
    if paid.sampled:
        paid.doubling(insist=True)
        return True
    result.whole = whole
    return False


def _deep_progress(share: dict, at: int, stall: float | None = None) -> bool:
    """Whether the doubling that ended at ``at`` boxes proved at least ``stall`` (default
    :data:`SPLIT_DEEP_STALL`) of the volume that was unproven before it."""
    stall = SPLIT_DEEP_STALL if stall is None else stall
    half = at // 2
    if half not in share:
        return True
    left = 1.0 - share[half]
    return left > 0 and (share[at] - share[half]) >= stall * left


def _accelerating(share: dict, at: int) -> bool:
    """Whether the proven share grew at least as much over ``at / 2 .. at`` as over
    ``at / 4 .. at / 2``."""
    half, quarter = at // 2, at // 4
    if half not in share or quarter not in share:
        return False
    return share[at] - share[half] >= share[half] - share[quarter]
