"""Model difference: how far apart two networks ``f`` and ``g`` are over a region, and where
their decisions differ (:func:`polytrav.diff` runs it; issue 46).

The analysis runs on the *joint* network ``x -> [f(x); g(x)]`` (the two side by side with
the input shared, :meth:`polytrav.Network.stack` then :meth:`~polytrav.Network.compose_input`),
whose polytopes are the joint partition: on each, ``d = g - f`` is affine.

Per polytope ``P`` (in the region ``R``'s frame coordinates ``u``):

* **difference extremes**: per chosen output ``j``, ``max`` and ``min`` of ``d_j`` over
  ``P ∩ R``, two LPs (:meth:`~polytrav.Analysis.maximize_linear`, skipped by its bounds when
  they cannot beat the best so far) or, where the traversal computed ``P``'s vertices, read
  off them with no LP. Their maxima over the polytopes are exact.
* **decision changes**: the class of a network at ``x`` is its argmax output when it is
  unique (one output: class 1 if the score is > 0, class 0 if < 0); a tie is no class. For a
  pair of classes ``a != b`` the cell ``{x in P ∩ R: f picks a, g picks b}`` is open in
  ``P ∩ R``; it is taken as non-empty when the Chebyshev LP over the polytope's rows, the
  region's rows and the strict-decision rows ``f_k - f_a <= 0``, ``g_k - g_b <= 0`` (all rows of
  unit norm in ``u``) has radius ``> RADIUS_TOL``. So a change counts only on a set of positive
  volume, never on the tie surfaces alone; its centre is a witness with positive margins.
  First each network's possible classes in ``P`` (one such LP per class), then the pairs.
* **volume share** of the differing cells: exact from their vertices (qhull, as
  :func:`polytrav.region_table`) when the region has at most :data:`EXACT_VOLUME_MAX_DIM`
  free inputs; otherwise a sound interval from inscribed balls: the differing cells' balls
  from below; one minus the non-differing polytopes' balls (over the frame box's volume,
  which bounds the region's) from above.

* **where the local models differ**: on ``P``, ``d_j`` has the slope ``∂d_j/∂x_i`` (the
  difference of the two networks' local linear models); per output and input the largest
  ``|∂d_j/∂x_i|`` over the polytopes, with its polytope, and, with ``feature_means`` in the
  exact-volume case above, the volume-weighted mean of ``|∂d_j/∂x_i|`` over the region (one
  qhull volume per polytope, from the vertices the traversal computed: it costs about 2-7
  times the run without).

With ``epsilon`` the ε-equivalence verdict: HOLDS iff the exact ``max_j |d_j| <= epsilon``,
shown with the LPs' tolerance to spare (:meth:`ModelDiff.holds_below`: ``epsilon -
LP_BOUND_TOL (1 + epsilon)``; a maximum in that band, with no checked point above
``epsilon``, is UNKNOWN),
VIOLATED at a forward-pass-checked point with ``|d_j| > epsilon``, VIOLATED_UNCONFIRMED when an
LP optimum exceeds ``epsilon`` but no forward pass confirms it, else UNKNOWN.
``verdict_only`` asks only that: the run stops at the first violation and skips pieces whose
bound proves ``|d_j| < epsilon`` (:meth:`ModelDiff.piece_margin`, the hook point where
difference-aware bounds plug in); on a box its settle stage
(:class:`~polytrav.bounds.settle.BandSettle`: samples, attacks, input splitting with a probe
round) decides first what it can (:meth:`ModelDiff.settle`).
"""
from __future__ import annotations

import math

import numpy as np

from polytrav.extend import (LP_BOUND_TOL, RADIUS_TOL, ZERO_ROW_TOL, Analysis, AnalysisResult,
                             BandSettle, ChangeCell, ConfigError, DecisionCells, DiffViolation,
                             OutputExtremes, Settlement, SlopeMax, Status, Stop, Verdict,
                             cell_rows, dnf_piece_margin, halfspace_volume, hookimpl,
                             solve_along)

__all__ = ["ModelDiff", "EXACT_VOLUME_MAX_DIM"]

#: Most free inputs for exact volume shares (qhull); above it, a sound interval.
EXACT_VOLUME_MAX_DIM = 6


class ModelDiff(Analysis):
    """The difference ``g - f`` of two networks run as one joint network ``[f; g]``.

    Parameters
    ----------
    split : int
        How many of the joint network's outputs are ``f``'s (the rest, as many, are ``g``'s).
    outputs : sequence of int, optional
        The outputs compared (default all).
    epsilon : float, optional
        The ε of the ε-equivalence verdict.
    decisions : bool
        Look for decision changes (default True).
    volumes : bool
        Measure the volume share where decisions differ (default True).
    verdict_only : bool
        Only the ε verdict: stop at the first violation, prune pieces by bounds.
    feature_means : bool
        Also the volume-weighted mean of ``|∂(g_j - f_j)/∂x_i|`` per input (at most
        :data:`EXACT_VOLUME_MAX_DIM` free inputs; one volume per polytope). Default False.

    ``value`` is ``{"max_abs": ..., "max": ..., "min": ...}`` over the chosen outputs;
    ``details`` holds declared records (:mod:`polytrav.vocabulary.diff_records`):
    ``"outputs"`` (an :class:`OutputExtremes` per compared output), ``"decisions"`` (a
    :class:`DecisionCells`, or None where not asked), ``"features"`` (a :class:`SlopeMax` per
    output and input), ``"violation"`` (a :class:`DiffViolation` or None); ``"split"`` (``f``'s
    outputs) and ``"raw"`` (the running answer that :meth:`combine` merges).
    """

    name = "model_diff"
    uses_vertices = True

    def __init__(self, split: int | None = None, outputs=None, epsilon: float | None = None,
                 decisions: bool = True, volumes: bool = True, verdict_only: bool = False,
                 feature_means: bool = False):
        self.split = split
        self.outputs = outputs
        self.epsilon = epsilon
        self.decisions = decisions
        self.volumes = volumes
        self.verdict_only = verdict_only
        self.feature_means = feature_means

    @property
    def problem_form(self) -> str:
        return "lp"

    # ------------------------------------------------------------ checks
    def validate(self, network, region) -> None:
        n = network.n_outputs
        m = n // 2 if self.split is None else self.split
        if not isinstance(m, (int, np.integer)) or m < 1 or 2 * m != n:
            raise ConfigError(f"analysis {self.name!r}: split must be half the joint network's "
                              f"{n} outputs (f's outputs, then as many of g's), got {self.split!r}")
        self._m = int(m)
        outs = range(m) if self.outputs is None else self.outputs
        outs = [outs] if isinstance(outs, (int, np.integer)) else list(outs)
        if not outs or any(not isinstance(j, (int, np.integer)) or not 0 <= j < m for j in outs):
            raise ConfigError(f"analysis {self.name!r}: outputs must be indices in [0, {m}), "
                              f"got {self.outputs!r}")
        self._outs = [int(j) for j in dict.fromkeys(outs)]
        if self.epsilon is not None and not (np.isfinite(self.epsilon) and self.epsilon >= 0):
            raise ConfigError(f"analysis {self.name!r}: epsilon must be a finite number >= 0, "
                              f"got {self.epsilon!r}")
        if self.verdict_only and self.epsilon is None:
            raise ConfigError(f"analysis {self.name!r}: verdict_only needs epsilon")
        D = np.zeros((len(self._outs), n))  # d_j = g_j - f_j
        for i, j in enumerate(self._outs):
            D[i, j], D[i, m + j] = -1.0, 1.0
        self._D = D

    @property
    def prunes_by_bound(self) -> bool:
        """Pieces are skipped by bounds only for the ε verdict alone (every other answer needs
        every polytope)."""
        return bool(self.verdict_only)

    def piece_margin(self, piece, context) -> float:
        """A sound lower bound of ``epsilon - max_j |g_j - f_j|`` over the piece (positive:
        no violation in it): :func:`polytrav.extend.dnf_piece_margin` on the unsafe rows
        ``±d_j >= epsilon``, which bounds the joint network, a stack of two networks, by the
        difference of the two where that is tighter (``NetworkPair.piece_output_bounds``)."""
        if not self.verdict_only:
            return -np.inf
        return dnf_piece_margin(self._unsafe_pairs(), piece, context)

    def settle(self, context):
        """With ``verdict_only`` on a box: :class:`~polytrav.bounds.settle.BandSettle` on the
        rows ``g_j - f_j``, one per run (its first round, then, after a probe round, the
        next with ``context.probed``); a point it finds is checked as a witness is. None (no
        stage) otherwise."""
        if not self.verdict_only or not context.region.is_box:
            return None
        if context.probed is None:  # the first round
            lo, hi = context.region.bounding_box()
            self._stage = BandSettle(context.network, lo, hi, self._D, self.epsilon,
                                     context.backends("lp"),
                                     accept=lambda x: self._violation_at(context, x) is not None)
            return self._stage.first(context.time_left())
        return self._stage.then(context.probed)

    def __getstate__(self) -> dict:
        """Pickled without the run's settle stage (its paused split)."""
        return {k: (None if k == "_stage" else v) for k, v in self.__dict__.items()}

    def _violation_at(self, context, x):
        """``(i, d_i, x, None)`` for the compared output ``i`` of the largest ``|d_i|`` past
        epsilon at ``x`` that a forward pass confirms (:meth:`_confirms`), else None."""
        d = self._D @ context.network.forward(np.asarray(x, float))
        for i in np.argsort(-np.abs(d), kind="stable"):
            if abs(d[i]) > self.epsilon and self._confirms(context, x, int(i)):
                return int(i), float(d[i]), np.asarray(x, float), None
        return None

    def holds_below(self) -> float:
        """HOLDS needs every exact ``max_j |g_j - f_j|`` at most this: ``epsilon`` lowered
        by the LPs' tolerance (:data:`~polytrav.vocabulary.tolerances.LP_BOUND_TOL`,
        relative to ``1 + epsilon``). An LP optimum is exact only to that tolerance, so one
        just below ``epsilon`` may stand for a true maximum just above it, where a point
        with ``|g_j - f_j| > epsilon`` exists: it leaves the verdict UNKNOWN (a run that
        finds no checked point above ``epsilon``), never HOLDS."""
        return float(self.epsilon) - LP_BOUND_TOL * (1.0 + abs(float(self.epsilon)))

    def _unsafe_pairs(self):
        eps = float(self.epsilon)
        return [(sign * -row[None], np.array([-eps])) for row in self._D for sign in (1.0, -1.0)]

    # ------------------------------------------------------------ the run
    def begin(self, context) -> None:
        k = len(self._outs)
        #: the running answer, mergeable across parts (:meth:`combine`): per output
        #: ``(value, x, code)`` of the largest and smallest ``d_j``; decision changes; volumes
        self.raw = {"max": [(-np.inf, None, None)] * k, "min": [(np.inf, None, None)] * k,
                    "violation": None, "changes": [], "n_changed": 0, "ambiguous": 0,
                    "changed_volume": 0.0, "volume_failed": 0, "ball_changed": 0.0,
                    "ball_same": 0.0,
                    #: per output, per input: ``(|slope|, slope, polytope, code, x)`` of the
                    #: largest ``|∂d_j/∂x_i|``; the volume-weighted sums of ``|∂d_j/∂x_i|``
                    "slopes": [[(-1.0, 0.0, None, None, None)] * context.network.n_inputs
                               for _ in range(k)],
                    "slope_sums": np.zeros((k, context.network.n_inputs)),
                    "slope_volume": 0.0, "slope_volume_failed": 0}
        fr = context.frame
        self._polyhedral = not (fr.l1_balls or fr.l2_balls)
        self._exact_volumes = self.volumes and self._polyhedral and fr.dim <= EXACT_VOLUME_MAX_DIM
        self._region_volume = self._frame_volume(context) if self._exact_volumes else None
        self._slope_means = bool(self.feature_means) and self._polyhedral \
            and fr.dim <= EXACT_VOLUME_MAX_DIM
        settled = context.settled
        if settled is not None and settled.outcome is Settlement.VIOLATED:
            found = self._violation_at(context, settled.point)  # the stage's point
            d = self._D @ context.network.forward(settled.point)
            for i in range(k):
                self.raw["max"][i] = self.raw["min"][i] = (float(d[i]), settled.point, None)
            self.raw["violation"] = found

    def visit(self, polytope, context):
        fr = context.frame
        W, c = polytope.network.local_model(polytope.code, self._D)
        Wu, c0 = fr.pull(W), W @ fr.origin + c
        x_in = polytope.interior_point
        d_in = W @ x_in + c
        self._fold_slopes(W, polytope, context)
        for i in range(len(self._outs)):
            self._fold(i, float(d_in[i]), x_in, polytope, context)
        V = polytope.vertices
        for i in range(len(self._outs)):
            if V is not None:  # extremes of an affine function are at vertices: no LP
                vals = V @ Wu[i] + c0[i]
                for k in (int(np.argmax(vals)), int(np.argmin(vals))):
                    self._fold(i, float(vals[k]), fr.to_x(V[k]), polytope, context)
                continue
            for sign in (1.0, -1.0):
                best = self.raw["max" if sign > 0 else "min"][i][0]
                res = self.maximize_linear(context, polytope, sign * Wu[i],
                                           beat=sign * (best - c0[i]))
                if res is not None and res.status is Status.OPTIMAL:
                    self._fold(i, float(c0[i] + sign * res.objective), fr.to_x(res.x),
                               polytope, context)
                elif res is not None and res.status is Status.INFEASIBLE:
                    self.failures.append(f"polytope #{polytope.index}: cell LP infeasible "
                                         f"({res.solver}) although the traversal found it")
        if self.verdict_only:
            return Stop("|g - f| > epsilon") if self.raw["violation"] is not None else None
        if self.decisions:
            self._decisions(polytope, context)
        return None

    def _fold(self, i, value, x, polytope, context) -> None:
        raw = self.raw
        if value > raw["max"][i][0]:
            raw["max"][i] = (value, x, context.code_str(polytope))
        if value < raw["min"][i][0]:
            raw["min"][i] = (value, x, context.code_str(polytope))
        if (self.epsilon is not None and raw["violation"] is None and abs(value) > self.epsilon
                and self._confirms(context, x, i)):
            raw["violation"] = (i, value, x, context.code_str(polytope))

    def _fold_slopes(self, W, polytope, context) -> None:
        """Fold the polytope's slopes ``W = ∂d/∂x`` (one row per compared output) into the
        per-input maxima, and, with exact volumes, into the volume-weighted sums."""
        raw = self.raw
        mag = np.abs(W)
        for i, row in enumerate(raw["slopes"]):
            for k in np.flatnonzero(mag[i] > np.array([t[0] for t in row])):
                row[k] = (float(mag[i, k]), float(W[i, k]), polytope.index,
                          context.code_str(polytope), polytope.interior_point)
        if not self._slope_means:
            return
        fr = context.frame
        V = polytope.vertices
        if V is not None:  # the cell's vertices (in u), from the traversal: their hull
            vol = _hull_volume(V)
        else:
            A, b = cell_rows(polytope, fr)
            vol = halfspace_volume(np.vstack([A, fr.A]), np.concatenate([b, fr.b]),
                                   fr.to_u(polytope.interior_point))
        if vol is None:
            raw["slope_volume_failed"] += 1
            return
        raw["slope_sums"] += vol * mag
        raw["slope_volume"] += vol

    def _confirms(self, context, x, i) -> bool:
        """A forward pass at ``x`` gives ``|d_i| > epsilon`` too (and ``x`` is in the region)."""
        from polytrav.extend import check_witness

        return check_witness(context.network, context.region, x,
                             lambda y: abs(float(self._D[i] @ y)) > self.epsilon)

    # ------------------------------------------------------------ decisions
    def _decisions(self, polytope, context) -> None:
        fr, m = context.frame, self._m
        raw = self.raw
        if not self._polyhedral:
            raw["ambiguous"] += 1  # a ball region: no array LP for the decision cells
            return
        A, b = cell_rows(polytope, fr)
        A, b = np.vstack([A, fr.A]), np.concatenate([b, fr.b])
        W, c = polytope.network.local_model(polytope.code)
        Wu, c0 = fr.pull(W), W @ fr.origin + c
        u_in = fr.to_u(polytope.interior_point)
        f_cls, g_cls = (self._possible(context, A, b, Wu, c0, off, u_in, polytope.vertices)
                        for off in (0, m))
        found, share, balls = [], 0.0, 0.0
        for a in f_cls:
            for bb in g_cls:
                if a == bb:
                    continue
                Ea, ea = self._rows(Wu, c0, 0, a)
                Eb, eb = self._rows(Wu, c0, m, bb)
                rows = (np.vstack([Ea, Eb]), np.concatenate([ea, eb]))
                radius, u, ok = self._cheb(context, A, b, rows)
                if not ok:
                    raw["ambiguous"] += 1
                    continue
                if radius <= RADIUS_TOL:
                    continue
                x = fr.to_x(u)
                cell_share = None
                if self._exact_volumes:
                    vol = halfspace_volume(np.vstack([A, rows[0]]), np.concatenate([b, rows[1]]),
                                           u)
                    if vol is None:
                        raw["volume_failed"] += 1
                    else:
                        cell_share = vol / self._region_volume
                        share += cell_share
                balls += _ball_share(radius, fr.dim)
                found.append(ChangeCell(polytope.index, context.code_str(polytope), a, bb, x,
                                        radius, self._decides(context, x, a, bb), cell_share))
        if found:
            raw["n_changed"] += 1
            raw["changes"].extend(found)
            raw["changed_volume"] += share
            raw["ball_changed"] += balls
        elif self.volumes:
            raw["ball_same"] += _ball_share(polytope.radius, fr.dim)

    def _possible(self, context, A, b, Wu, c0, off, u_in, V) -> list[int]:
        """The classes a network may pick on a positive volume of the cell (a superset: the
        pairs' LPs decide). Without an LP: a class winning strictly at the interior point is
        kept; one that some row rules out at every vertex of the cell (when the traversal
        computed them) is dropped; else its Chebyshev LP decides."""
        out = []
        for a in range(self._n_classes()):
            E, e = self._rows(Wu, c0, off, a)
            if np.all(E @ u_in < e):
                out.append(a)
            elif V is not None and np.any(np.min(V @ E.T - e, axis=0) >= 0):
                continue
            elif self._cheb(context, A, b, (E, e))[0] > RADIUS_TOL:
                out.append(a)
        return out

    def _n_classes(self) -> int:
        return 2 if self._m == 1 else self._m

    def _rows(self, Wu, c0, off, a):
        """Rows ``E u <= e`` of "this network picks class ``a``" (weak form; the Chebyshev
        radius makes them strict)."""
        m = self._m
        if m == 1:  # binary: class 1 iff score > 0
            s = -1.0 if a == 1 else 1.0
            return s * Wu[off][None], np.array([-s * c0[off]])
        k = [j for j in range(m) if j != a]
        return Wu[off + np.array(k)] - Wu[off + a], c0[off + a] - c0[off + np.array(k)]

    def _cheb(self, context, A, b, rows):
        """``(radius, centre, decided)`` of the Chebyshev LP of ``A u <= b`` and ``rows``
        (rows normalised here; a flat row holds strictly or empties the set)."""
        E, e = rows
        norms = np.linalg.norm(E, axis=1)
        flat = norms <= ZERO_ROW_TOL * max(1.0, float(np.abs(E).max(initial=0.0)))
        if (e[flat] <= 0).any():  # a constant tie or a constant wrong order
            return 0.0, None, True
        E, e = E[~flat] / norms[~flat, None], e[~flat] / norms[~flat]
        M, r = np.vstack([A, E]), np.concatenate([b, e])
        d = M.shape[1]
        nr = np.linalg.norm(M, axis=1)
        cost = np.r_[np.zeros(d), -1.0]
        res, _ = solve_along(context.backends("lp"), lambda be: be.solve_lp(
            cost, np.c_[M, nr], r, bounds=(np.r_[np.full(d, -1.0), 0.0], np.r_[np.ones(d), 2.0])))
        self.n_solves += 1
        if res.status is Status.INFEASIBLE:
            return 0.0, None, True
        if res.status is not Status.OPTIMAL:
            self.failures.append(f"decision LP: {res.status} from {res.solver} ({res.message})")
            return 0.0, None, False
        return float(res.x[d]), np.asarray(res.x[:d]), True

    def _decides(self, context, x, a, b) -> bool:
        """Forward passes at ``x``: ``f`` picks ``a`` and ``g`` picks ``b``, strictly."""
        from polytrav.extend import check_witness

        m = self._m

        def picks(y, cls):
            if m == 1:
                return y[0] > 0 if cls == 1 else y[0] < 0
            return bool(np.all(np.delete(y, cls) < y[cls]))

        return check_witness(context.network, context.region, x,
                             lambda y: picks(y[:m], a) and picks(y[m:], b))

    def _frame_volume(self, context) -> float:
        fr = context.frame
        if fr.is_box:
            return 2.0 ** fr.dim
        A, b = np.asarray(fr.A), np.asarray(fr.b)
        radius, u, ok = self._cheb(context, A[:0], b[:0], (A, b))
        if not ok or u is None or radius <= RADIUS_TOL:
            raise ConfigError(f"analysis {self.name!r}: the region has no interior in its "
                              "affine hull; no volume shares")
        vol = halfspace_volume(A, b, u)
        if vol is None:
            raise ConfigError(f"analysis {self.name!r}: qhull could not measure the region")
        return vol

    # ------------------------------------------------------------ the result
    def finish(self, context) -> AnalysisResult:
        return self._result(self.raw, context, n_polytopes=self.n_polytopes,
                            n_solves=self.n_solves, failures=tuple(self.failures))

    def combine(self, parts, context) -> AnalysisResult:
        """The parts' extremes, changes and volumes merged (each part a disjoint set of
        polytopes)."""
        raws = [p.details["raw"] for p in parts]
        k = len(self._outs)
        raw = {"max": [max((r["max"][i] for r in raws), key=lambda t: t[0],
                           default=(-np.inf, None, None)) for i in range(k)],
               "min": [min((r["min"][i] for r in raws), key=lambda t: t[0],
                           default=(np.inf, None, None)) for i in range(k)],
               "violation": next((r["violation"] for r in raws if r["violation"]), None),
               "changes": [c for r in raws for c in r["changes"]]}
        for key in ("n_changed", "ambiguous", "changed_volume", "volume_failed",
                    "ball_changed", "ball_same", "slope_volume", "slope_volume_failed"):
            raw[key] = sum(r[key] for r in raws)
        n = context.network.n_inputs
        raw["slopes"] = [[max((r["slopes"][i][q] for r in raws), key=lambda t: t[0],
                              default=(-1.0, 0.0, None, None, None)) for q in range(n)]
                         for i in range(k)]
        raw["slope_sums"] = sum((np.asarray(r["slope_sums"]) for r in raws),
                                np.zeros((k, n)))
        fr = context.frame
        self._polyhedral = not (fr.l1_balls or fr.l2_balls)
        self._exact_volumes = self.volumes and self._polyhedral and fr.dim <= EXACT_VOLUME_MAX_DIM
        self._slope_means = bool(self.feature_means) and self._polyhedral \
            and fr.dim <= EXACT_VOLUME_MAX_DIM
        return self._result(raw, context, n_polytopes=sum(p.n_polytopes for p in parts),
                            n_solves=sum(p.n_solves for p in parts),
                            failures=tuple(f for p in parts for f in p.failures))

    def _result(self, raw, context, *, n_polytopes, n_solves, failures) -> AnalysisResult:
        proven = context.complete and not failures
        exact = proven and not self.verdict_only
        per = [OutputExtremes(j, hi, x_hi, c_hi, lo, x_lo, c_lo)
               for j, (hi, x_hi, c_hi), (lo, x_lo, c_lo) in zip(self._outs, raw["max"],
                                                                raw["min"])]
        top = max(per, key=lambda r: r.max_abs) if per else None
        value = {"max_abs": top.max_abs if top else None,
                 "max": max((r.max for r in per), default=None),
                 "min": min((r.min for r in per), default=None)}
        violation = raw["violation"]
        if violation is not None and not self.verdict_only and top is not None:
            i = self._outs.index(top.output)  # report the worst point, when it confirms
            signed, x, code = top.worst
            if x is not None and self._confirms(context, x, i):
                violation = (i, signed, x, code)
        verdict = None
        if self.epsilon is not None:
            if violation is not None:
                verdict = Verdict.VIOLATED
            elif any(r.max_abs > self.epsilon for r in per):  # no forward pass agrees
                verdict = Verdict.VIOLATED_UNCONFIRMED
            elif proven and not raw["ambiguous"] and \
                    all(r.max_abs <= self.holds_below() for r in per):
                verdict = Verdict.HOLDS
            else:
                verdict = Verdict.UNKNOWN
        details = {"outputs": per, "split": self._m, "raw": raw,
                   "features": self._feature_details(raw, exact),
                   "decisions": self._decision_details(raw, context, proven),
                   "violation": None if violation is None else DiffViolation(
                       self._outs[violation[0]], violation[1], violation[2], violation[3])}
        witness = violation[2] if violation is not None else top.worst[1] if top else None
        return AnalysisResult(analysis=self.label, verdict=verdict, value=value,
                              witness=witness, exact=exact, n_polytopes=n_polytopes,
                              n_solves=n_solves, failures=failures, details=details)

    def _feature_details(self, raw, exact) -> list[SlopeMax]:
        """Per compared output and input: the largest ``|∂(g_j - f_j)/∂x_i|`` over the
        polytopes (``max_abs``, its signed ``slope``, ``polytope``, ``code`` and a point ``x``
        inside it) and ``mean_abs``, the volume-weighted mean of ``|∂(g_j - f_j)/∂x_i|``
        (over the region when the run is complete, else over the visited polytopes; None
        without ``feature_means``). ``exact``: the maxima are over every polytope of the
        region."""
        vol = raw["slope_volume"]
        weighted = self._slope_means and vol > 0 and not raw["slope_volume_failed"]
        out = []
        for i, j in enumerate(self._outs):
            for q, (mag, slope, poly, code, x) in enumerate(raw["slopes"][i]):
                if poly is None:
                    continue
                out.append(SlopeMax(j, q, mag, slope, poly, code, x, exact,
                                    float(raw["slope_sums"][i][q] / vol) if weighted else None))
        return out

    def _decision_details(self, raw, context, proven) -> DecisionCells | None:
        if not self.decisions or self.verdict_only:
            return None
        proven = proven and not raw["ambiguous"]
        changed = True if raw["changes"] else (False if proven else None)
        share = method = None
        if not self.volumes:
            pass
        elif changed is False:  # proven: no cell of positive volume where they differ
            share, method = (0.0, 0.0), "exact: no decision differs"
        elif self._exact_volumes and not raw["volume_failed"]:
            if proven:
                share, method = (raw["changed_volume"], raw["changed_volume"]), "exact (qhull)"
            else:  # a partial run: the visited changes from below
                share = (raw["changed_volume"], 1.0)
                method = "visited polytopes only (lower bound)"
        else:
            lower = min(raw["ball_changed"], 1.0)
            upper = 1.0 - raw["ball_same"] if proven else 1.0
            share = (lower, max(min(upper, 1.0), lower))
            method = f"inscribed balls in {context.frame.dim} dimensions (sound interval)"
        return DecisionCells(changed, proven, raw["n_changed"], tuple(raw["changes"]),
                             raw["ambiguous"], share, method)

    def describe(self, result) -> list[str]:
        v = result.value
        return [f"max |g - f| = {v['max_abs']:.6g}, g - f in [{v['min']:.6g}, {v['max']:.6g}]"]


def _hull_volume(V: np.ndarray) -> float | None:
    """The volume of the convex hull of the points ``V`` (qhull; an interval's length in one
    dimension); None where qhull cannot tell (a sliver)."""
    from scipy.spatial import ConvexHull, QhullError

    if V.shape[1] == 1:
        return float(V.max() - V.min())
    try:
        return float(ConvexHull(V).volume)
    except (QhullError, ValueError):
        return None


def _ball_share(radius: float, d: int) -> float:
    """(volume of a ``d``-ball of ``radius``) / 2^d: its share of the frame box ``[-1, 1]^d``,
    which contains the region (so at most its share of the region); 0 for radius 0. Computed
    in logarithms (tiny in high dimension, never overflowing)."""
    if radius <= 0:
        return 0.0
    return math.exp(d * math.log(radius) + (d / 2) * math.log(math.pi)
                    - math.lgamma(d / 2 + 1) - d * math.log(2.0))


@hookimpl
def polytrav_add_analyses():
    """Register :class:`ModelDiff`."""
    return [ModelDiff]
