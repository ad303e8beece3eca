"""Monotonicity of one output in one feature over the region (paper §5.3).

On each polytope the network is ``W x + c``, so the output's slope in feature ``j`` is the
constant ``W[output, j]``: no subproblem to solve. The network (continuous, piecewise
linear) is non-decreasing in ``j`` on a convex region iff every polytope's slope is ``>= 0``
(non-increasing iff all ``<= 0``). With ``direction=None`` the verdict is whether all slopes
agree in sign. Every violating polytope is reported with its slope, and a violation is
confirmed by a forward pass at two points of the polytope a step apart along ``j``.

With ``stop_at_first=True`` (a required ``direction``) the run stops at the first polytope
whose slope has the wrong sign and whose pair of points is confirmed: a violation needs one
polytope, a proof still needs every polytope. The traversal then starts at the sampled point
of the region with the most violating local slope (:meth:`Monotonicity.start_point`), so a
violation that sampling sees is confirmed in the first polytope.

**Certifying global monotonicity over a box.** ``Monotonicity(j, "increasing",
stop_at_first=True)`` on ``Box(lo, hi)`` answers ``HOLDS`` only with a proof (a complete run in
which every piece was proven by the slope bound or every visited polytope's slope is
``>= 0``), ``VIOLATED`` only with a confirmed pair, and ``UNKNOWN`` on an incomplete run (a
budget, a lost LP). Pieces are proven by :meth:`Monotonicity.piece_margin` (the slope
bounded by intervals, :func:`slope_bounds`, rigorous under float64 rounding, so a slope of
exactly 0 is proven). Before the traversal, the run's settle stage (:meth:`Monotonicity.settle`)
bisects the box against the same bound (:meth:`Monotonicity.split_search`): every sub-box
proven proves the region without a polytope, and a sampled point with a wrong-signed slope
becomes the start point. Where both leave the box open and no sampled point violates, a MILP
(:meth:`polytrav.bounds.milp.RegionMilp.monotone`, ``milp=True``) proves the region, or finds
an activation pattern with a wrong-signed slope, whose cell's centre is where the traversal
starts (the first polytope then confirms the pair). The stage's counts are
:data:`polytrav.bounds.settle.MONOTONE_POLICY`'s.

The parts: :mod:`.bound` (the slope's bound over a piece, its value at points),
:mod:`.region` (the settle stage on the run's region: samples, input splitting, the
MILP) and :mod:`.pair` (the running answer and the confirmed pair).
"""
from __future__ import annotations

import numpy as np

from polytrav.extend import (Analysis, BoxPiece, Settled, SettledBy, Stop, hookimpl,
                             pieces_proven)
from polytrav.plugins.monotonicity.bound import SlopeBound
from polytrav.plugins.monotonicity.pair import PairCheck, Slopes, unit_step
from polytrav.plugins.monotonicity.parameters import check_parameters
from polytrav.plugins.monotonicity.region import RegionSearch
from polytrav.extend import AnalysisResult, Verdict, SLOPE_TOL

__all__ = ["Monotonicity"]


class Monotonicity(Analysis):
    """Is ``output`` monotone in input ``feature`` on the region?

    Parameters
    ----------
    feature : int
        Input index.
    direction : {"increasing", "decreasing", None}
        Required direction (non-strict); ``None`` asks whether either holds.
    output : int
        Output index (default 0).
    stop_at_first : bool
        Stop the run at the first confirmed violation (needs a ``direction``); default
        False (visit every polytope, report every violating one).
    bounds : bool or None
        Skip every piece on which a sound interval bound of the slope proves the right sign
        (:meth:`piece_margin`; needs a ``direction``). The verdict and the violating
        polytopes are the same, with fewer polytopes; ``value`` and ``violations`` then
        cover the visited polytopes only. Default None: on with ``stop_at_first``.
    split : int or None
        With ``bounds`` on a box region: before the traversal, bisect the box into at most
        this many sub-boxes, bounding the slope on each (:meth:`split_search`). Every
        sub-box proven proves the region (the run ends ``complete`` without a polytope); a
        sampled point with a wrong-signed local slope becomes the start point. Default
        None: :data:`~polytrav.bounds.settle.MONOTONE_POLICY`'s ``bisect_boxes`` (2000);
        0 turns it off.
    meet : {"forward", "all"}
        How the slope is bounded on a piece (:func:`slope_bounds`): the forward interval
        (default), or the best of it and of meeting forward and backward intervals at every
        layer (sound, slower, and no tighter on the tabular benchmark's networks).
    milp : bool
        Where the bound and the input splitting leave a box region open (no sub-box with a
        wrong-signed sample), hand the question to a MILP before any polytope
        (:meth:`polytrav.bounds.milp.RegionMilp.monotone`, with
        :data:`~polytrav.bounds.milp.MILP_TIME_SHARE` of the time left): its certificate
        proves the region, or its point (a pattern with a wrong-signed slope) is where the
        traversal starts, to confirm a pair there. Default True; it runs in the run's settle
        stage (:meth:`settle`: the run's only analysis, not a part) on a ``Box`` with a
        backend of the ``milp`` form (``details["milp"]`` says what it did, or why it did not
        run; None where no stage ran).

    ``value`` is ``{"min_slope", "max_slope"}`` over the visited polytopes: ``exact`` (the
    extremes over the region) only when every polytope of the region was visited (a complete
    run that neither stopped at a first violation nor skipped pieces by bounds, the input
    splitting or the MILP); the verdict is final either way (HOLDS proven, VIOLATED with a
    confirmed pair);
    ``details["violations"]`` lists each violating polytope (index, interior point, slope);
    ``details["witness_pair"]`` is the confirmed pair ``(x, x')``: both in the region,
    ``x'[feature] > x[feature]``, every other coordinate equal, and (by a float64 forward
    pass) ``f(x')[output] < f(x)[output]`` when ``"increasing"`` is violated, ``>`` when
    ``"decreasing"`` is (with ``direction=None``: the pair's outputs move with the slope of
    the minority sign). ``witness`` is ``x``; ``details["pair_outputs"]`` is
    ``(f(x)[output], f(x')[output])``; ``feature_name`` and ``output_name`` are how the text
    names them (the network's input name, else ``x_<feature>``; the class whose logit the
    output is, when the network has ``classes``). The text prints the pair as the one input
    that differs, its two values and both outputs.

    Examples
    --------
    >>> from polytrav import Box, Network, analyze
    >>> net = Network.from_arrays([[[1.0, 0.0], [-1.0, 0.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
    >>> res = analyze(net, Box([-1.0, -1.0], [1.0, 1.0]),
    ...               Monotonicity(0, "increasing", stop_at_first=True))[0]
    >>> res.verdict.value, res.n_polytopes                    # |x_0| decreases left of 0
    ('violated', 1)
    >>> x, x2 = res.details["witness_pair"]
    >>> bool(x2[0] > x[0] and x2[1] == x[1] and net(x2)[0] < net(x)[0])
    True
    """

    name = "monotonicity"

    def __init__(self, feature: int, direction: str | None = None, output: int = 0,
                 stop_at_first: bool = False, bounds: bool | None = None,
                 split: int | None = None, meet: str = "forward", milp: bool = True):
        self.feature = feature
        self.direction = direction
        self.output = output
        self.stop_at_first = stop_at_first
        self.bounds = bounds
        self.split = split
        self.meet = meet
        self.milp = milp
        self._region: RegionSearch | None = None  # the run's, from validate

    @property
    def prunes_by_bound(self) -> bool:
        on = self.stop_at_first if self.bounds is None else self.bounds
        return bool(on) and self.direction is not None

    def piece_margin(self, piece, context) -> float:
        """A sound lower bound of the slope's margin over every polytope of the piece:
        ``min slope`` for ``"increasing"``, ``-max slope`` for ``"decreasing"``; positive
        proves that no polytope of the piece violates.

        On a polytope the slope is ``e_out^T W_L D_{L-1} ... D_0 W_0 e_feature`` (``D_k`` the
        code's 0/1 masks). On the piece the first ``level`` masks are fixed (``piece.code``),
        so the derivative of the input of the remaining layers is a known vector; through
        each remaining hidden layer it is carried as an interval: a neuron whose
        pre-activation bounds over the piece (:func:`polytrav.bounds.crown.output_lower_bounds`)
        prove it on passes its derivative, one proven off passes 0, an unstable one the hull
        of both; an affine layer maps the interval by the weights' signs
        (:func:`~polytrav.bounds.slope.derivative_step`: rigorous under float64 rounding,
        and a side that is a sum of non-negative terms stays ``>= 0`` exactly). Neurons count as stable only past
        :data:`~polytrav.vocabulary.tolerances.BOUND_TOL`. A margin ``>= 0`` proves the piece
        (slopes of exactly 0 are allowed), so it is returned as the next float above.
        A bound only: the input splitting and the MILP run in :meth:`settle`.
        """
        return self._bound().margin(context.network, piece, context.backends("lp"))

    def _bound(self) -> SlopeBound:
        return SlopeBound(self.feature, self.output, self.direction, self.meet)

    def settle(self, context) -> Settled | None:
        """With ``bounds``, before the traversal, where the slope bound does not prove the
        region at once: the input splitting of a box region (:meth:`split_search`), then,
        with no violation in sight, the MILP (``milp``; the splitting then stops at
        :data:`~polytrav.bounds.settle.MONOTONE_POLICY`'s ``bisect_milp_boxes`` sub-boxes):
        :meth:`~.region.RegionSearch.settle`. PROVEN by either, or first by the slope bound
        over a box region (``BOUND``), else the whole region OPEN from :meth:`start_point`.
        None (no stage) without ``bounds``."""
        if not self.prunes_by_bound:
            return None
        region = context.region
        if region.is_box:
            lo, hi = (np.asarray(a, float) for a in region.bounding_box())
            if np.isfinite(lo).all() and np.isfinite(hi).all() and self._bound().margin(
                    context.network, BoxPiece(lo, hi), context.backends("lp")) > 0:
                return Settled.proven(SettledBy.BOUND)
        return self._region.settle(context)

    def validate(self, network, region) -> None:
        """Check the parameters; a new :class:`~.region.RegionSearch` for the run, except in
        the traversal that follows this run's settle stage (the same network and region: it
        keeps what the stage found, for :meth:`start_point` and :meth:`finish`)."""
        check_parameters(self, network)
        kept = self._region
        if kept is None or not kept.continued(network, region):
            self._region = RegionSearch(self, network, region)

    def __getstate__(self) -> dict:
        """Pickled without the run's region search (it holds the run's network and region;
        parts of a parallel run get them)."""
        return {k: (None if k == "_region" else v) for k, v in self.__dict__.items()}

    def start_point(self) -> np.ndarray | None:
        """With ``stop_at_first``: of :data:`~polytrav.bounds.settle.MONOTONE_POLICY`'s
        ``probe_samples`` random points of the region, its bounding box's centre and up to
        ``probe_corners`` of its corners (:func:`~polytrav.bounds.settle.box_samples`), the
        one whose local slope is the most violating; where none violates, the settle stage's
        candidate (input splitting's, else the MILP's).

        Only where the traversal starts (the first polytope visited is that point's, so a
        violation sampling sees is confirmed at once); None without ``stop_at_first``, for an
        unbounded region, when no sample lies in the region, and in a part of a run in parts
        (it gets the whole run's).
        """
        if not self.stop_at_first or self._region is None:
            return None
        return self._region.start()

    def split_search(self):
        """The input splitting of the run's box region (:meth:`~.region.RegionSearch.split_search`,
        once per run: a :class:`~polytrav.bounds.settle.BoxBisection`), or None when it does
        not apply (also before ``validate``)."""
        return None if self._region is None else self._region.split_search()

    def begin(self, context) -> None:
        self._pair = PairCheck(self.feature, self.output, unit_step(context, self.feature))
        self._slopes = Slopes()

    def visit(self, polytope, context):
        row = polytope.W[self.output]
        slope = float(row[self.feature])
        seen = self._slopes
        seen.low, seen.high = min(seen.low, slope), max(seen.high, slope)
        tiny = SLOPE_TOL * float(np.linalg.norm(row))
        record = (polytope.index, polytope.interior_point, slope, polytope.radius)
        if slope < -tiny and self.direction != "decreasing":
            seen.negative.append(record)
        elif slope > tiny and self.direction != "increasing":
            seen.positive.append(record)
        else:
            return None
        if self.stop_at_first and self._pair.step_u is not None:
            pair = self._pair.confirm(context, polytope.interior_point, slope, polytope.radius)
            if pair is not None:
                seen.confirmed = (polytope.index, polytope.interior_point, slope, pair)
                return Stop(f"output {self.output} has slope {slope:.3g} in input "
                            f"{self.feature} on polytope #{polytope.index} (pair confirmed)")
        return None

    def finish(self, context) -> AnalysisResult:
        seen = self._slopes
        lo, hi = seen.low, seen.high
        n_seen = self.n_polytopes > 0
        if self._pair.step_u is None:
            bad = []  # the feature is fixed in the region: monotone vacuously
        elif self.direction == "increasing":
            bad = seen.negative
        elif self.direction == "decreasing":
            bad = seen.positive
        else:  # either direction: the minority sign violates
            bad = ([] if not seen.negative or not seen.positive
                   else min(seen.negative, seen.positive, key=len))
        violations = [{"polytope": i, "interior_point": x, "slope": s} for i, x, s, _ in bad]
        pair = None
        if bad and seen.confirmed is not None:
            pair = seen.confirmed[3]
        for i, x, s, r in ([] if pair is not None else bad):
            pair = self._pair.confirm(context, x, s, r)
            if pair is not None:
                break
        witness = None if pair is None else pair[0]
        if bad:
            verdict = Verdict.VIOLATED if pair is not None else Verdict.VIOLATED_UNCONFIRMED
        else:
            verdict = Verdict.HOLDS if self.exact(context) else Verdict.UNKNOWN
        # the slopes' extremes are the region's only if every polytope was visited
        exact = self.exact(context) and n_seen and not pieces_proven(context)
        search = self._region
        net = context.network
        pair_outputs = None if pair is None else tuple(
            float(net.forward(p)[self.output]) for p in pair)
        return AnalysisResult(
            analysis=self.label, verdict=verdict,
            value={"min_slope": lo if n_seen else None, "max_slope": hi if n_seen else None},
            witness=witness, exact=exact,
            n_polytopes=self.n_polytopes, n_solves=0, failures=tuple(self.failures),
            details={"violations": violations, "witness_pair": pair,
                     "direction": self.direction, "feature": self.feature, "output": self.output,
                     "stop_at_first": self.stop_at_first,
                     "feature_name": _input_name(net, self.feature),
                     "output_name": _output_name(net, self.output),
                     "pair_outputs": pair_outputs,
                     "by_sign": {"negative": seen.negative, "positive": seen.positive},
                     "confirmed": seen.confirmed,
                     "split": None if search is None else search.split_summary(),
                     "milp": None if search is None else search.milp_info},
        )

    def describe(self, result) -> list[str]:
        from polytrav.extend import fmt

        d = result.details
        want = d["direction"] or "one direction"
        name = d.get("feature_name") or f"x_{d['feature']}"
        output = d.get("output_name") or f"output {d['output']}"
        lines = [f"slope of {output} in {name} ({want}): "
                 f"{len(d['violations'])} violating polytope(s)"]
        if not result.exact:
            lines[0] += (f" (slopes and counts cover the {result.n_polytopes} polytope(s) "
                         "visited" + (", stopped at the first" if d["stop_at_first"]
                                      and d["witness_pair"] is not None else "") + ")")
        if d["witness_pair"] is not None:
            x1, x2 = d["witness_pair"]
            j = d["feature"]
            a, b = _distinct(x1[j], x2[j])
            lines.append(f"pair: x and x' differ only in {name}: {a} in x, {b} in x' "
                         f"({fmt(x2[j] - x1[j])} more); every other input equal")
            y1, y2 = d.get("pair_outputs") or (None, None)
            if y1 is not None:
                a, b = _distinct(y1, y2)
                moves = "decreases" if y2 < y1 else "increases"
                lines.append(f"{output}: {a} at x, {b} at x' ({fmt(y2 - y1)}): it {moves} "
                             f"as {name} increases")
        split = d.get("split")
        if split is not None and split["proven"]:
            lines.append(f"proven by the slope bound on {split['boxes']} sub-box(es) of the "
                         "region (input splitting), no polytope needed")
        milp = d.get("milp")
        if milp is not None and milp.get("verdict") == "holds":  # a MilpVerdict
            lines.append(f"proven by a MILP over the region ({milp['binaries']} binaries, "
                         f"{fmt(milp['seconds'])} s), no polytope needed")
        elif result.verdict is Verdict.HOLDS and not result.exact and not (
                split is not None and split["proven"]):
            lines.append("proven: the slope bound proved every piece whose polytopes were not "
                         "visited")
        return lines

    def combine(self, parts, context) -> AnalysisResult:
        """Merge the parts' slopes by sign (polytope indices offset part by part), then finish.

        A part that stopped at a confirmed violation keeps its pair (the first such part's,
        in the order the parts are given); the parts need not all have run (``context``
        then says the run is incomplete, and only a confirmed violation is exact).
        """
        self._pair = PairCheck(self.feature, self.output, unit_step(context, self.feature))
        self._slopes = seen = Slopes()
        offset = 0
        for p in parts:
            for mine, theirs in ((seen.negative, "negative"), (seen.positive, "positive")):
                mine += [(i + offset, x, s, r) for i, x, s, r in p.details["by_sign"][theirs]]
            if seen.confirmed is None and p.details.get("confirmed") is not None:
                i, x, s, pair = p.details["confirmed"]
                seen.confirmed = (i + offset, x, s, pair)
            offset += p.n_polytopes
        lows = [p.value["min_slope"] for p in parts if p.value["min_slope"] is not None]
        highs = [p.value["max_slope"] for p in parts if p.value["max_slope"] is not None]
        seen.low, seen.high = min(lows, default=np.inf), max(highs, default=-np.inf)
        self.n_polytopes = sum(p.n_polytopes for p in parts)
        self.failures = [f for p in parts for f in p.failures]
        return self.finish(context)


def _input_name(network, j: int) -> str:
    """Input ``j`` by the network's name for it, else ``x_j``."""
    names = network.input_names
    return names[j] if names else f"x_{j}"


def _output_name(network, k: int) -> str:
    """``output k``, with the class whose logit it is when the network says so."""
    classes, link = network.classes, network.link
    if classes is not None and link in ("sigmoid", "softmax"):
        label = classes[1] if network.n_outputs == 1 else classes[k]
        return f"output {k} (the logit of {label!r})"
    return f"output {k}"


def _distinct(a: float, b: float) -> tuple[str, str]:
    """``a`` and ``b`` in 6 significant digits, or as many more as tell them apart."""
    for digits in range(6, 18):
        ta, tb = f"{float(a):.{digits}g}", f"{float(b):.{digits}g}"
        if ta != tb:
            break
    return ta, tb


@hookimpl
def polytrav_add_analyses():
    """Register :class:`Monotonicity`."""
    return [Monotonicity]
