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
exactly 0 is proven); before the traversal the box is bisected against the same bound
(:meth:`Monotonicity.split_search`): every sub-box proven proves the region without a
polytope, and a sampled point with a wrong-signed slope becomes the start point. Where both
leave the box open and no sampled point violates, a MILP
(:meth:`polytrav.bounds.milp.RegionMilp.monotone`, ``milp=True``) proves the region, or finds
an activation pattern with a wrong-signed slope, whose cell's centre is where the traversal
starts (the first polytope then confirms the pair).
"""
from __future__ import annotations

import numpy as np

from polytrav.bounds.slope import slope_bounds
from polytrav.bounds.split import BoxPiece
from polytrav.host.analysis import Analysis, Stop, check_witness, pieces_proven
from polytrav.vocabulary.errors import ConfigError
from polytrav.host.hookspecs import hookimpl
from polytrav.vocabulary.results import AnalysisResult, Verdict
from polytrav.vocabulary.tolerances import BOUND_TOL, CORNER_INSET, SAME_VALUE_TOL, SLOPE_TOL

__all__ = ["Monotonicity"]

DIRECTIONS = ("increasing", "decreasing", None)
#: Random points of the region whose local slopes choose the start point with ``stop_at_first``.
SLOPE_SAMPLES = 256
#: And this many corners of the region's bounding box (every corner when there are fewer),
#: pulled :data:`~polytrav.vocabulary.tolerances.CORNER_INSET` of the way to the centre: the
#: extremes of a piecewise linear slope sit at the box's corners as often as not (a linear
#: program's optima do).
SLOPE_CORNERS = 1024
#: The input splitting of a run that does not need it (a sampled point already violates).
NO_SPLIT: dict = {}
#: Rows per batched pass over the samples: small products stay on one BLAS thread (waking
#: the threads for a product of a few hundred rows costs milliseconds on a busy machine).
SAMPLE_CHUNK = 64
#: Input splitting of a box region before the traversal (``split=None``): at most this many
#: sub-boxes are bounded (:meth:`Monotonicity.split_search`).
SPLIT_BOXES = 2000
#: Random points per unproven sub-box whose local slopes are checked for the wrong sign.
SPLIT_SAMPLES = 8
#: The input splitting's sub-boxes where the MILP (``milp=True``) takes over what they leave
#: open (``split=None``).
MILP_SPLIT_BOXES = 200


def corners(lo: np.ndarray, hi: np.ndarray, count: int, rng) -> np.ndarray:
    """Corners of the box ``[lo, hi]``, pulled :data:`CORNER_INSET` of the way to its
    centre (inside the box): all of them when there are at most ``count``, else ``count``
    random ones. Shape ``(k, n)``."""
    n = lo.shape[0]
    if n <= 30 and 2 ** n <= count:
        signs = ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1).astype(bool)
    else:
        signs = rng.random((count, n)) < 0.5
    mid, half = (lo + hi) / 2, (hi - lo) / 2 * (1.0 - CORNER_INSET)
    return mid + np.where(signs, half, -half)


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
        None: :data:`SPLIT_BOXES`; 0 turns it off.
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
        traversal starts, to confirm a pair there. Default True; it runs in a serial run on a
        ``Box`` with a backend of the ``milp`` form (``details["milp"]`` says what it did, or
        why it did not run).

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
    the minority sign). ``witness`` is ``x``.

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

        The run's region (level 0), if the bound leaves it open, goes on to the input
        splitting (:meth:`split_search`) and then, with no violation in sight, to the MILP
        (``milp``; the splitting then stops at :data:`MILP_SPLIT_BOXES` sub-boxes).
        """
        margin = self._box_or_piece_margin(piece, context)
        inputs = getattr(self, "_run_inputs", None)
        if (margin <= 0 and piece.level == 0 and inputs is not None
                and getattr(context, "region", None) is inputs[1]):
            why_not = self._milp_why_not(context)
            if why_not is None and self.split is None and getattr(self, "_split_found", None) is None:
                self._split_cap = MILP_SPLIT_BOXES  # the MILP is the better half of the search
            found = self.split_search()  # the run's region: proven by its sub-boxes?
            if found is not None and found["proven"]:
                return float(np.nextafter(0.0, 1.0))
            in_sight = (found is not None and found["candidate"] is not None
                        or bool(getattr(self, "_probed", None)) and self._probed[1])
            if not in_sight and self._run_milp(context, why_not):  # no violation in sight
                return float(np.nextafter(0.0, 1.0))
        return margin

    def _milp_why_not(self, context) -> str | None:
        """Why the MILP of :meth:`_run_milp` cannot run in this run, or None if it can."""
        from polytrav.model.region import Box

        if not self.milp:
            return "milp=False"
        if not isinstance(context.region, Box):
            return f"the region is a {type(context.region).__name__}, not a Box"
        if context.traversal.within is not None:
            return "a run in parts"
        if not context.chains.get("milp"):
            return "no backend serves the 'milp' form"
        return None

    def _run_milp(self, context, why_not: str | None) -> bool:
        """The region (left open by the bound and the splitting) to
        :meth:`~polytrav.bounds.milp.RegionMilp.monotone`, once: True if it proves it; a
        candidate point (the centre of its pattern's cell) becomes the start point. ``details["milp"]``
        says what it did, or ``why_not`` it did not run."""
        from polytrav.bounds.milp import MILP_TIME_SHARE, RegionMilp

        if self._milp_info is not None:
            return False
        if why_not is not None:
            self._milp_info = {"ran": False, "reason": why_not}
            return False
        network, region = self._run_inputs
        lo, hi = (np.asarray(a, float) for a in region.bounding_box())
        left = context.traversal.time_left()
        out = RegionMilp(network, lo, hi).monotone(
            self.feature, self.output, 1.0 if self.direction == "increasing" else -1.0,
            context.chains["milp"], time_limit=None if left is None else MILP_TIME_SHARE * left)
        self._milp_info = {"ran": True, "verdict": out.verdict, "binaries": out.binaries,
                           "seconds": out.seconds, "reason": out.reason}
        if out.verdict == "candidate":
            self._milp_point = out.point
            self._milp_info["slope"] = out.slope
        return out.verdict == "holds"

    def _box_or_piece_margin(self, piece, context) -> float:
        """:meth:`piece_margin` by the bound alone (no input splitting)."""
        from polytrav.bounds.crown import Concretizer, output_lower_bounds

        net = context.network
        lvl = piece.level
        masks = []  # per hidden layer: (on, off); unstable is neither
        for k in range(lvl):  # the fixed layers: the piece's code
            code = np.asarray(piece.code[k], bool)
            masks.append((code, ~code))
        layers = list(zip(net.weights[lvl:], net.biases[lvl:]))
        if len(layers) > 1:
            halfspaces = lp = None
            if piece.vertices is None:
                halfspaces, lp = piece.halfspaces(box=False), context.backends("lp")[0].lp_session()
            conc = Concretizer(piece.frame.dim, piece.vertices, halfspaces, lp)
            e = np.zeros((1, net.n_outputs))
            e[0, self.output] = 1.0
            _, _, bounds = output_lower_bounds(layers, piece.M, piece.m, e, conc)
            for k in range(len(layers) - 1):
                lo, hi = bounds.lo[k], bounds.hi[k]
                allowance = BOUND_TOL * (1.0 + np.abs(lo) + np.abs(hi))
                masks.append((lo > allowance, hi < -allowance))
        lo_s, hi_s = slope_bounds(net.weights, masks, self.feature, self.output,
                                  meet=self.meet)
        margin = float(lo_s if self.direction == "increasing" else -hi_s)
        return margin if margin < 0 else float(np.nextafter(margin, np.inf))

    def validate(self, network, region) -> None:
        n, m = network.n_inputs, network.n_outputs
        if not isinstance(self.feature, (int, np.integer)) or not 0 <= self.feature < n:
            raise ConfigError(f"analysis {self.name!r}: feature must be an input index in [0, {n}), "
                              f"got {self.feature!r}")
        if not isinstance(self.output, (int, np.integer)) or not 0 <= self.output < m:
            raise ConfigError(f"analysis {self.name!r}: output must be in [0, {m}), got {self.output!r}")
        if self.direction not in DIRECTIONS:
            raise ConfigError(f"analysis {self.name!r}: direction must be one of {DIRECTIONS}, "
                              f"got {self.direction!r}")
        if not isinstance(self.stop_at_first, (bool, np.bool_)):
            raise ConfigError(f"analysis {self.name!r}: stop_at_first must be True or False, "
                              f"got {self.stop_at_first!r}")
        if self.bounds not in (None, True, False):
            raise ConfigError(f"analysis {self.name!r}: bounds must be True, False or None, "
                              f"got {self.bounds!r}")
        if self.bounds and self.direction is None:
            raise ConfigError(f"analysis {self.name!r}: bounds=True needs a direction "
                              "('increasing' or 'decreasing'): a piece's slope sign proves "
                              "nothing when either direction may hold")
        if self.stop_at_first and self.direction is None:
            raise ConfigError(f"analysis {self.name!r}: stop_at_first=True needs a direction "
                              "('increasing' or 'decreasing'): with direction=None a violation "
                              "is the minority sign, known only after every polytope")
        if self.split is not None and (not isinstance(self.split, (int, np.integer))
                                       or isinstance(self.split, bool) or self.split < 0):
            raise ConfigError(f"analysis {self.name!r}: split must be a number of boxes >= 0 "
                              f"or None, got {self.split!r}")
        if self.meet not in ("all", "forward"):
            raise ConfigError(f"analysis {self.name!r}: meet must be 'all' or 'forward', "
                              f"got {self.meet!r}")
        if not isinstance(self.milp, (bool, np.bool_)):
            raise ConfigError(f"analysis {self.name!r}: milp must be True or False, "
                              f"got {self.milp!r}")
        self._run_inputs = (network, region)
        self._split_found = self._probed = self._milp_info = self._milp_point = None
        self._split_cap = None

    def __getstate__(self) -> dict:
        """Pickled without the run's network and region (parts of a parallel run get them)."""
        run_only = ("_run_inputs", "_split_found", "_probed", "_milp_info", "_milp_point",
                    "_split_cap")
        return {k: v for k, v in self.__dict__.items() if k not in run_only}

    def start_point(self) -> np.ndarray | None:
        """With ``stop_at_first``: of :data:`SLOPE_SAMPLES` random points of the region, its
        bounding box's centre and up to :data:`SLOPE_CORNERS` of its corners (:func:`corners`),
        the one whose local slope is the most violating.

        Only where the traversal starts (the first polytope visited is that point's, so a
        violation sampling sees is confirmed at once); None without ``stop_at_first``, for an
        unbounded region, or when no sample lies in the region.
        """
        if not self.stop_at_first or getattr(self, "_run_inputs", None) is None:
            return None
        probe = self._probe()
        if probe is None:
            return None
        x, violates = probe
        if not violates:
            found = self.split_search()  # no sample violates: split the box (proof or a point)
            if found is not None and found["candidate"] is not None:
                return found["candidate"]
            if getattr(self, "_milp_point", None) is not None:
                return self._milp_point  # the MILP's (it ran in the region's bound, before)
        return x

    def _probe(self) -> tuple[np.ndarray, bool] | None:
        """The most violating probe point of :meth:`start_point` and whether its slope has
        the wrong sign (once per run; None when no probe lies in a bounded region)."""
        if getattr(self, "_probed", None) is not None:
            return self._probed or None
        self._probed = ()
        network, region = self._run_inputs
        lo, hi = region.bounding_box()
        if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
            return None
        rng = np.random.default_rng(0)
        X = np.vstack([(lo + hi) / 2, rng.uniform(lo, hi, (SLOPE_SAMPLES, lo.shape[0])),
                       corners(lo, hi, SLOPE_CORNERS, rng)])
        if not region.is_box:
            cons = region.constraints()
            X = X[[not cons.violations(x) for x in X]]
        if not len(X):
            return None
        slope = np.concatenate([self._slopes_at(network, X[k:k + SAMPLE_CHUNK])
                                for k in range(0, len(X), SAMPLE_CHUNK)])
        best = int(np.argmin(slope) if self.direction == "increasing" else np.argmax(slope))
        violates = bool(slope[best] < 0 if self.direction == "increasing" else slope[best] > 0)
        self._probed = (X[best], violates)
        return self._probed

    def split_search(self) -> dict | None:
        """Input splitting of the run's box region against the slope bound (once per run).

        Sub-boxes are bisected worst bound first: one whose slope bound has the right sign
        (:meth:`piece_margin` on the sub-box as a level-0 piece: CROWN pre-activation bounds
        over the sub-box, the derivative carried as an interval) is proven; otherwise the
        local slopes at its centre, :data:`SPLIT_SAMPLES` random points and as many corners
        are checked, and a wrong-signed one ends the search with that point as ``candidate``
        (the traversal starts there, so the first polytope visited confirms it or not);
        with ``stop_at_first`` the search is skipped when a probe of :meth:`start_point`
        already has a wrong-signed slope. Otherwise the
        sub-box is halved along the input whose first-layer weights, over the neurons the
        interval bounds leave unstable, times its width are largest.

        Returns ``{"proven", "candidate", "boxes", "open"}`` (``proven``: every sub-box
        proven, which proves the region), or None when the search does not apply (no
        ``bounds``, ``split=0``, not a bounded box region, no run).
        """
        if getattr(self, "_split_found", None) is not None:
            return None if self._split_found is NO_SPLIT else self._split_found
        if self.stop_at_first and getattr(self, "_run_inputs", None) is not None:
            probe = self._probe()
            if probe is not None and probe[1]:  # a violation is in sight: no proof to look for
                self._split_found = NO_SPLIT
                return None
        inputs = getattr(self, "_run_inputs", None)
        boxes = (getattr(self, "_split_cap", None) or SPLIT_BOXES) if self.split is None else int(self.split)
        if inputs is None or not self.prunes_by_bound or boxes <= 0 or not inputs[1].is_box:
            return None
        import heapq

        network, region = inputs
        lower, upper = (np.asarray(a, float) for a in region.bounding_box())
        if not (np.isfinite(lower).all() and np.isfinite(upper).all()):
            return None
        context = _BoxContext(network)
        rng = np.random.default_rng(0)
        W0 = np.abs(network.weights[0])
        found = {"proven": False, "candidate": None, "boxes": 0, "open": 0}
        heap, count = [(-np.inf, 0, lower, upper)], 1
        while heap and found["boxes"] < boxes:
            _, _, lo, hi = heapq.heappop(heap)
            margin = self._box_or_piece_margin(BoxPiece(lo, hi), context)
            found["boxes"] += 1
            if margin > 0:
                continue
            X = np.vstack([(lo + hi) / 2, rng.uniform(lo, hi, (SPLIT_SAMPLES, lo.shape[0])),
                           corners(lo, hi, SPLIT_SAMPLES, rng)])
            slope = self._slopes_at(network, X)
            wrong = slope < 0 if self.direction == "increasing" else slope > 0
            if wrong.any():
                found["candidate"] = X[int(np.argmin(slope) if self.direction == "increasing"
                                           else np.argmax(slope))]
                break
            h_lo = np.minimum(network.weights[0], 0) @ (hi - lo) + network.weights[0] @ lo
            h_hi = np.maximum(network.weights[0], 0) @ (hi - lo) + network.weights[0] @ lo
            unstable = (h_lo + network.biases[0] < 0) & (h_hi + network.biases[0] > 0)
            score = (W0[unstable].sum(axis=0) if unstable.any() else W0.sum(axis=0)) * (hi - lo)
            j = int(np.argmax(score))
            mid = (lo[j] + hi[j]) / 2
            if not lo[j] < mid < hi[j]:
                found["open"] += 1  # too narrow to halve: the traversal decides it
                continue
            for a, b in ((lo[j], mid), (mid, hi[j])):
                lo2, hi2 = lo.copy(), hi.copy()
                lo2[j], hi2[j] = a, b
                heapq.heappush(heap, (margin, count, lo2, hi2))
                count += 1
        found["open"] += len(heap)
        found["proven"] = found["candidate"] is None and found["open"] == 0
        self._split_found = found
        return found

    def _slopes_at(self, network, X: np.ndarray) -> np.ndarray:
        """The local slopes of the output in the feature at the points ``X`` (one forward and
        one backward pass through the active neurons, the codes' convention)."""
        hs, _ = network.trace(X)
        row = network.weights[-1][self.output]
        V = np.broadcast_to(row, (len(X), row.shape[0]))
        for W, h in zip(reversed(network.weights[:-1]), reversed(hs)):
            V = (V * (h >= 0.0)) @ W
        return V[:, self.feature]

    def begin(self, context) -> None:
        self._step_u = self._unit_step(context)
        self._neg, self._pos = [], []  # (index, interior point, slope, radius) by sign
        self._slopes = [np.inf, -np.inf]
        self._confirmed = None  # (index, interior point, slope, pair) of the stopping polytope

    def _unit_step(self, context) -> np.ndarray | None:
        """A unit step in frame coordinates along the feature (None if the region fixes it)."""
        fr = context.frame
        e = np.zeros(context.network.n_inputs)
        e[self.feature] = 1.0
        if fr.free is not None:  # U selects coordinates: the feature's own, if it varies
            v = (e[fr.free] / fr.scale)
            return v / np.linalg.norm(v) if v.any() else None
        v, *_ = np.linalg.lstsq(fr.U, e, rcond=None)
        movable = np.allclose(fr.U @ v, e, atol=SAME_VALUE_TOL) and np.linalg.norm(v) > 0
        return v / np.linalg.norm(v) if movable else None

    def visit(self, polytope, context):
        row = polytope.W[self.output]
        slope = float(row[self.feature])
        self._slopes = [min(self._slopes[0], slope), max(self._slopes[1], slope)]
        tiny = SLOPE_TOL * float(np.linalg.norm(row))
        record = (polytope.index, polytope.interior_point, slope, polytope.radius)
        if slope < -tiny and self.direction != "decreasing":
            self._neg.append(record)
        elif slope > tiny and self.direction != "increasing":
            self._pos.append(record)
        else:
            return None
        if self.stop_at_first and self._step_u is not None:
            pair = self._confirm(context, polytope.interior_point, slope, polytope.radius)
            if pair is not None:
                self._confirmed = (polytope.index, polytope.interior_point, slope, pair)
                return Stop(f"output {self.output} has slope {slope:.3g} in input "
                            f"{self.feature} on polytope #{polytope.index} (pair confirmed)")
        return None

    def _confirm(self, context, x, slope, radius) -> tuple | None:
        """Two points of the polytope along the feature whose outputs differ with the slope.

        ``x`` and ``x'`` lie half the cell's Chebyshev radius either side of its centre along
        the feature's unit step in the frame; ``x'`` is ``x`` with only the feature's
        coordinate changed (so every other coordinate is equal exactly). Confirmed by a plain
        forward pass (strict change of the output with the slope's sign) and region
        membership of both points; None otherwise.
        """
        if self._step_u is None:
            return None
        fr = context.frame
        u = fr.to_u(x)
        step = 0.5 * radius * self._step_u
        x1 = fr.to_x(u - step)
        x2 = x1.copy()
        x2[self.feature] = fr.to_x(u + step)[self.feature]
        dy = float(context.network.forward(x2)[self.output] - context.network.forward(x1)[self.output])
        dx = float(x2[self.feature] - x1[self.feature])
        if dx <= 0 or dy == 0 or np.sign(dy) != np.sign(slope):
            return None
        if not all(check_witness(context.network, context.region, p, lambda y: True) for p in (x1, x2)):
            return None
        return x1, x2

    def finish(self, context) -> AnalysisResult:
        lo, hi = self._slopes
        seen = self.n_polytopes > 0
        if self._step_u is None:
            bad = []  # the feature is fixed in the region: monotone vacuously
        elif self.direction == "increasing":
            bad = self._neg
        elif self.direction == "decreasing":
            bad = self._pos
        else:  # either direction: the minority sign violates
            bad = [] if not self._neg or not self._pos else min(self._neg, self._pos, key=len)
        violations = [{"polytope": i, "interior_point": x, "slope": s} for i, x, s, _ in bad]
        pair = None
        if bad and self._confirmed is not None:
            pair = self._confirmed[3]
        for i, x, s, r in ([] if pair is not None else bad):
            pair = self._confirm(context, x, s, r)
            if pair is not None:
                break
        witness = None if pair is None else pair[0]
        if bad:
            verdict = Verdict.VIOLATED if pair is not None else Verdict.VIOLATED_UNCONFIRMED
        else:
            verdict = Verdict.HOLDS if self.exact(context) else Verdict.UNKNOWN
        # the slopes' extremes are the region's only if every polytope was visited
        exact = self.exact(context) and seen and not pieces_proven(context)
        return AnalysisResult(
            analysis=self.label, verdict=verdict,
            value={"min_slope": lo if seen else None, "max_slope": hi if seen else None},
            witness=witness, exact=exact,
            n_polytopes=self.n_polytopes, n_solves=0, failures=tuple(self.failures),
            details={"violations": violations, "witness_pair": pair,
                     "direction": self.direction, "feature": self.feature, "output": self.output,
                     "stop_at_first": self.stop_at_first,
                     "by_sign": {"negative": self._neg, "positive": self._pos},
                     "confirmed": self._confirmed,
                     "split": self._split_summary(),
                     "milp": getattr(self, "_milp_info", None)},
        )

    def describe(self, result) -> list[str]:
        from polytrav.vocabulary.text import fmt, vector

        d = result.details
        want = d["direction"] or "one direction"
        lines = [f"slope of output {d['output']} in x_{d['feature']} ({want}): "
                 f"{len(d['violations'])} violating polytope(s)"]
        if not result.exact:
            lines[0] += (f" (slopes and counts cover the {result.n_polytopes} polytope(s) "
                         "visited" + (", stopped at the first" if d["stop_at_first"]
                                      and d["witness_pair"] is not None else "") + ")")
        if d["witness_pair"] is not None:
            x1, x2 = d["witness_pair"]
            lines.append(f"pair: x = {vector(x1)} and x' = {vector(x2)} "
                         f"(x'[{d['feature']}] > x[{d['feature']}])")
        split = d.get("split")
        if split is not None and split["proven"]:
            lines.append(f"proven by the slope bound on {split['boxes']} sub-box(es) of the "
                         "region (input splitting), no polytope needed")
        milp = d.get("milp")
        if milp is not None and milp.get("verdict") == "holds":
            lines.append(f"proven by a MILP over the region ({milp['binaries']} binaries, "
                         f"{fmt(milp['seconds'])} s), no polytope needed")
        elif result.verdict is Verdict.HOLDS and not result.exact and not (
                split is not None and split["proven"]):
            lines.append("proven: the slope bound proved every piece whose polytopes were not "
                         "visited")
        return lines

    def _split_summary(self) -> dict | None:
        """The run's input splitting (:meth:`split_search`) as plain data, or None."""
        found = getattr(self, "_split_found", None)
        if found is None or found is NO_SPLIT:
            return None
        return {"proven": bool(found["proven"]), "boxes": int(found["boxes"]),
                "open": int(found["open"]), "candidate": found["candidate"] is not None}

    def combine(self, parts, context) -> AnalysisResult:
        """Merge the parts' slopes by sign (polytope indices offset part by part), then finish.

        A part that stopped at a confirmed violation keeps its pair (the first such part's,
        in the order the parts are given); the parts need not all have run (``context``
        then says the run is incomplete, and only a confirmed violation is exact).
        """
        self._step_u = self._unit_step(context)
        self._neg, self._pos, offset = [], [], 0
        self._confirmed = None
        for p in parts:
            for mine, theirs in ((self._neg, "negative"), (self._pos, "positive")):
                mine += [(i + offset, x, s, r) for i, x, s, r in p.details["by_sign"][theirs]]
            if self._confirmed is None and p.details.get("confirmed") is not None:
                i, x, s, pair = p.details["confirmed"]
                self._confirmed = (i + offset, x, s, pair)
            offset += p.n_polytopes
        lows = [p.value["min_slope"] for p in parts if p.value["min_slope"] is not None]
        highs = [p.value["max_slope"] for p in parts if p.value["max_slope"] is not None]
        self._slopes = [min(lows, default=np.inf), max(highs, default=-np.inf)]
        self.n_polytopes = sum(p.n_polytopes for p in parts)
        self.failures = [f for p in parts for f in p.failures]
        return self.finish(context)


class _BoxContext:
    """What the bound of a :class:`~polytrav.bounds.split.BoxPiece` reads of a run: the
    network (no LP is needed: the box's rows are the frame's bounds)."""

    def __init__(self, network):
        self.network = network

    def backends(self, form: str) -> list:
        return [_NoLP()]


class _NoLP:
    def lp_session(self):
        return None


@hookimpl
def polytrav_add_analyses():
    """Register :class:`Monotonicity`."""
    return [Monotonicity]
