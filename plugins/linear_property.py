"""Linear output properties in disjunctive normal form, as VNN-LIB states them.

The property holds iff no point of the region maps into the *unsafe* set, a disjunction of
conjunctions ``C_k y <= d_k`` over the outputs ``y`` (VNN-LIB's ``assert`` describes exactly
this set: ``sat`` means a counterexample exists). Per polytope, where ``y = W x + c``, each
conjunction is the LP ``maximise t  s.t.  x in polytope ∩ region, C_k (W x + c) + t <= d_k``
(rows of ``C_k`` scaled to unit norm, ``t <= 1``): ``t* >= 0`` gives a point of the unsafe set.
The witness is confirmed by a forward pass before the verdict is VIOLATED. A conjunction is
skipped without an LP when one of its rows cannot be met anywhere on the region's bounding
box (or at every vertex of the polytope, when the traversal computed them), or decided
without one when the interior point or a vertex already meets it.
"""
from __future__ import annotations

import numpy as np

from polytrav.host.analysis import (Analysis, CellProblem, Stop, cell_values, check_witness,
                               combine_worst, local_model_u)
from polytrav.bounds.crown import Concretizer, output_lower_bounds
from polytrav.vocabulary.errors import ConfigError
from polytrav.host.hookspecs import hookimpl
from polytrav.vocabulary.results import AnalysisResult, Status, Verdict
from polytrav.vocabulary.tolerances import WITNESS_TOL

__all__ = ["LinearProperty", "BOUND_TOL", "LP_BOUND_TOL", "attack_start", "dnf_bound",
           "dnf_piece_margin", "region_bab", "unsafe_distance"]

#: Margins from bounds evaluated in closed form are lowered by this (relative) before a
#: piece counts as proven: float64 rounding in the back-substitution, never a proof by 1e-12.
BOUND_TOL = 1e-9
#: Margins from an LP are lowered by this (relative): the LP's feasibility tolerance.
LP_BOUND_TOL = 1e-6
#: Gradient steps of slope optimisation (α-CROWN) on the conjunctions that CROWN's own
#: slopes do not prove (0: none).
SLOPE_STEPS = 20
#: Neuron-level branch and bound on the whole region (:func:`region_bab`) runs only with more
#: free inputs than this: below, ``verify``'s input splitting does better.
BAB_MIN_INPUTS = 9
#: Share of the run's time left that the region's branch and bound may use.
BAB_TIME_SHARE = 0.5
#: Random points of the region (plus its bounding box's centre) scored for a start point.
START_SAMPLES = 1000
#: Signed-gradient descents on the distance to the unsafe set, from the best samples.
ATTACK_STARTS, ATTACK_STEPS, ATTACK_STEP = 8, 60, 0.1
#: If those do not reach the unsafe set: batched descents from this many random points, with
#: a first step of this fraction of the box's width.
RESTARTS, RESTART_STEP = 200, 0.25


def unsafe_distance(pairs, Y: np.ndarray) -> np.ndarray:
    """Per output row of ``Y``: how far from the unsafe set of ``pairs`` (<= 0: inside it)."""
    return np.min([np.max(Y @ C.T - d, axis=1) for C, d in pairs], axis=0)


def attack_start(pairs, network, region) -> np.ndarray | None:
    """The point of the region closest to (or deepest in) the unsafe set of ``pairs`` that a
    cheap attack finds: the best of :data:`START_SAMPLES` random points, then signed-gradient
    descents from the best few, until one is inside the unsafe set; if none is, a batch of
    :data:`RESTARTS` descents from random points with large steps (:func:`_restarts`),
    whose point is taken only if it is inside the unsafe set. It only chooses where a
    traversal starts; None for an unbounded region."""
    lo, hi = region.bounding_box()
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        return None
    if region.is_box:  # every point of the bounding box is inside
        inside = lambda x: True  # noqa: E731
    else:
        cons = region.constraints()
        inside = lambda x: not cons.violations(x)  # noqa: E731
    rng = np.random.default_rng(0)
    X = np.vstack([(lo + hi) / 2, rng.uniform(lo, hi, (START_SAMPLES, lo.shape[0]))])
    if not region.is_box:
        X = X[[inside(x) for x in X]]
    if not len(X):
        return None
    score = unsafe_distance(pairs, network.forward(X))
    best, best_score = X[int(np.argmin(score))], float(score.min())
    for x in X[np.argsort(score)[:ATTACK_STARTS]]:
        step = ATTACK_STEP * (hi - lo)
        for _ in range(ATTACK_STEPS):
            if best_score < 0:  # inside the unsafe set: the first polytope will confirm it
                return best
            y = network.forward(x)
            per = [np.max(C @ y - d) for C, d in pairs]
            k = int(np.argmin(per))
            if per[k] < best_score and inside(x):
                best, best_score = x.copy(), per[k]
            C, d = pairs[k]
            W, _ = network.local_model(network.activation_code(x))
            x = np.clip(x - step * np.sign(C[int(np.argmax(C @ y - d))] @ W), lo, hi)
            step *= 0.95
    if best_score >= 0:
        found = _restarts(pairs, network, lo, hi, inside, rng)
        if found is not None:
            return found
    return best


def _restarts(pairs, network, lo, hi, inside, rng) -> np.ndarray | None:
    """A point of the unsafe set found by :data:`RESTARTS` signed-gradient descents at once
    (batched), from random points of the box, with steps of :data:`RESTART_STEP` times its
    width shrinking by 3 % a step; None if none gets there."""
    X = rng.uniform(lo, hi, (RESTARTS, lo.shape[0]))
    C = np.vstack([C for C, _ in pairs])
    d = np.concatenate([d for _, d in pairs])
    ends = np.cumsum([C_k.shape[0] for C_k, _ in pairs])
    step = RESTART_STEP * (hi - lo)
    layers = list(zip(network.weights, network.biases))
    for _ in range(ATTACK_STEPS):
        a, masks = X, []
        for W, b in layers[:-1]:
            z = a @ W.T + b
            masks.append(z > 0)
            a = z * masks[-1]
        excess = (a @ layers[-1][0].T + layers[-1][1]) @ C.T - d  # per row: > 0 is safe
        per = np.stack([ex.max(axis=1) for ex in np.split(excess, ends[:-1], axis=1)], axis=1)
        for i in np.flatnonzero(per.min(axis=1) < 0):
            if inside(X[i]):
                return X[i].copy()
        k = per.argmin(axis=1)  # each point's nearest conjunction, and its worst row
        rows = np.array([np.arange(e - C_k.shape[0], e)[np.argmax(excess[i, e - C_k.shape[0]:e])]
                         for i, (e, C_k) in enumerate((ends[j], pairs[j][0]) for j in k)])
        G = C[rows] @ layers[-1][0]
        for (W, _), mask in zip(reversed(layers[:-1]), reversed(masks)):
            G = (G * mask) @ W
        X = np.clip(X - step * np.sign(G), lo, hi)
        step *= 0.97
    return None


def dnf_piece_margin(pairs, piece, context) -> float:
    """Lower bound of ``max_i (C_i y - d_i)`` over the piece, minimised over the conjunctions
    ``(C, d)`` of ``pairs`` (the unsafe set ``C y <= d``).

    Positive: every conjunction has a row that no point of the piece meets, so the piece
    holds no counterexample. Each row's affine lower bound in ``u`` comes from
    :func:`polytrav.bounds.crown.output_lower_bounds`, with CROWN's slopes first, then, for the
    conjunctions that proves nothing for, with :data:`SLOPE_STEPS` steps of slope
    optimisation; without the piece's vertices (high dimension), unstable neurons' bounds
    are raised by LPs over the piece (:meth:`polytrav.bounds.crown.Concretizer.refine`). A
    conjunction is checked row by row at the piece's vertices (or on the frame box), then,
    if that proves nothing, with the LP ``min s  s.t.  s >= L_i u + g_i - d_i``, ``u`` in
    the piece. (:func:`dnf_bound` with its defaults.)
    """
    return dnf_bound(pairs, piece, context)[0]


def region_bab(margin, pairs, piece, context, attack):
    """``(margin, outcome)``: a piece's bound ``margin`` after neuron-level branch and bound
    (:func:`polytrav.bounds.branch_and_bound.prove_margins`) over the whole region, run when the
    piece is the region (level 0) and ``margin`` proves nothing. ``outcome`` is None where it
    does not run; "holds" makes the margin ``inf`` (the region is proven).

    It applies when the region is a box of at least :data:`BAB_MIN_INPUTS` free inputs and
    every unsafe conjunction is one row (``c y <= d``: a robustness property). ``attack()``
    (the analysis's start attack) runs first: a point in the unsafe set makes the search
    needless. Otherwise it gets :data:`BAB_TIME_SHARE` of the run's time left (no limit
    without one). The outcome's ``start`` (a counterexample, forward-pass checked, else the
    attack's point) is where the traversal should start.
    """
    from polytrav.bounds.branch_and_bound import BaBOutcome, prove_margins

    fr = piece.frame
    if margin > 0 or piece.level != 0 or not fr.is_box or fr.dim < BAB_MIN_INPUTS \
            or any(C.shape[0] != 1 for C, _ in pairs):
        return margin, None
    point = attack()
    if point is not None and unsafe_distance(pairs, context.network.forward(point)[None, :])[0] <= 0:
        return margin, BaBOutcome("violated", point, 0, 0.0, {"found_by": "attack"}, start=point)
    left = context.traversal.time_left()
    lo, hi = context.region.with_dims(context.network.n_inputs).bounding_box()
    out = prove_margins(context.network, lo, hi, np.vstack([C for C, _ in pairs]),
                        np.concatenate([d for _, d in pairs]),
                        time_limit=None if left is None else BAB_TIME_SHARE * max(left, 0.0))
    out.start = out.counterexample if out.counterexample is not None else point
    return (np.inf if out.verdict == "holds" else margin), out


def bab_details(outcome) -> dict | None:
    """The ``details["bab"]`` entry of a decision analysis's result."""
    if outcome is None:
        return None
    return {"verdict": outcome.verdict, "nodes": outcome.nodes, "seconds": outcome.seconds}


def dnf_bound(pairs, piece, context, steps: int | None = None, points: list | None = None
              ) -> tuple[float, np.ndarray]:
    """:func:`dnf_piece_margin` and the rows' affine bounds ``L`` (in ``u``, one row per row
    of the stacked ``C``). ``steps``: slope optimisation steps (default :data:`SLOPE_STEPS`).
    ``points``: if given, every unproven conjunction gets its LP and the LP's minimiser (an
    input where the relaxation comes closest to the unsafe set: a candidate counterexample)
    is appended.
    """
    steps = SLOPE_STEPS if steps is None else steps
    net = context.network
    layers = list(zip(net.weights[piece.level:], net.biases[piece.level:]))
    halfspaces = lp = None
    if piece.vertices is None:  # unstable neurons' bounds by LPs over the piece's rows
        halfspaces, lp = piece.halfspaces(box=False), context.backends("lp")[0].lp_session()
    conc = Concretizer(piece.frame.dim, piece.vertices, halfspaces, lp)
    C = np.vstack([C for C, _ in pairs])
    d = np.concatenate([d for _, d in pairs])
    ends = np.cumsum([C_k.shape[0] for C_k, _ in pairs])
    rows = [np.arange(end - C_k.shape[0], end) for end, (C_k, _) in zip(ends, pairs)]
    L, g, _ = output_lower_bounds(layers, piece.M, piece.m, C, conc)
    g = g - d
    margins = _row_margins(L, g, conc, rows)
    open_rows = np.concatenate([r for r, s in zip(rows, margins) if s <= 0] or [[]]).astype(int)
    if steps and len(open_rows) and len(layers) > 1:
        L[open_rows], g[open_rows], _ = output_lower_bounds(
            layers, piece.M, piece.m, C[open_rows], conc, steps=steps)
        g[open_rows] -= d[open_rows]
        margins = _row_margins(L, g, conc, rows)
    margin = np.inf
    for r, s in sorted(zip(rows, margins), key=lambda pair: pair[1]):  # likeliest unproven first
        if s <= 0:
            s, u = _joint_margin(L[r], g[r], piece, context)
            if points is not None and u is not None:
                points.append(piece.frame.to_x(u))
        margin = min(margin, s)
        if margin <= 0 and points is None:  # nothing proven: enough to rank the piece
            break
    return margin, L


def _row_margins(L, g, conc, rows) -> list[float]:
    """Per conjunction (its ``rows``): the best row's closed-form lower bound, lowered by
    :data:`BOUND_TOL`."""
    low = conc.lower(L, g) - BOUND_TOL * (1.0 + np.abs(g))
    return [float(low[r].max()) for r in rows]


def _joint_margin(L, g, piece, context) -> tuple[float, np.ndarray | None]:
    """``min s  s.t.  s >= L u + g`` over the piece (an LP) and its minimiser ``u``;
    ``(-inf, None)`` if it is not solved."""
    A, b = piece.halfspaces(box=False)  # the box is the variables' bounds
    d = L.shape[1]
    n = A.shape[0]
    c = np.zeros(d + 1)
    c[-1] = 1.0
    A_ub = np.block([[A, np.zeros((n, 1))], [L, -np.ones((L.shape[0], 1))]])
    b_ub = np.concatenate([b, -g])
    lo = np.concatenate([-np.ones(d), [-np.inf]])
    hi = np.concatenate([np.ones(d), [np.inf]])
    for backend in context.backends("lp"):
        res = backend.solve_lp(c, A_ub, b_ub, bounds=(lo, hi))
        if res.status is Status.OPTIMAL:
            return float(res.objective) - LP_BOUND_TOL * (1.0 + np.abs(g).max()), res.x[:d]
        if res.status is Status.INFEASIBLE and backend.certifies_optimality:
            return -np.inf, None  # an empty piece should not happen: prove nothing
    return -np.inf, None


class LinearProperty(Analysis):
    """Verify that no output of the region satisfies any of the ``unsafe`` conjunctions.

    Parameters
    ----------
    unsafe : list of (C, d)
        Each pair is a conjunction ``C @ y <= d`` (``C`` of shape ``(k, n_outputs)``); the
        list is their disjunction.
    mode : {"verify", "all"}
        Stop at the first confirmed counterexample (default), or visit every polytope and
        keep the most violating one (largest ``t``).
    bounds : bool
        In ``verify`` mode, skip every piece on which sound bounds of the rest of the
        network prove that no unsafe conjunction can be met (:meth:`piece_margin`); the
        answer is the same, with far fewer polytopes. Default True.
    bab : bool
        With ``bounds``: when the bounds do not prove the whole region, run neuron-level
        branch and bound on it first (:func:`region_bab`; boxes of many inputs, one-row
        conjunctions). Default True.

    ``verdict``: VIOLATED (confirmed witness), HOLDS (complete, every LP decided) or
    UNKNOWN; ``value`` is the largest margin ``t`` found (>= 0 means violated).
    """

    name = "linear_property"
    uses_vertices = True

    def __init__(self, unsafe, mode: str = "verify", bounds: bool = True, bab: bool = True):
        self.unsafe = unsafe
        self.mode = mode
        self.bounds = bounds
        self.bab = bab

    @property
    def prunes_by_bound(self) -> bool:
        return bool(self.bounds) and self.mode == "verify"

    def piece_margin(self, piece, context) -> float:
        """Lower bound of the distance into the unsafe set over the piece (see
        :func:`dnf_piece_margin`, then :func:`region_bab` on the region); positive proves
        the piece holds no counterexample."""
        margin = dnf_piece_margin(self._pairs, piece, context)
        if self.bab and piece.level == 0:
            margin, self._bab = region_bab(margin, self._pairs, piece, context, self.start_point)
        return margin

    @property
    def problem_form(self) -> str:
        return "lp"

    def validate(self, network, region) -> None:
        m = network.n_outputs
        if self.mode not in ("verify", "all"):
            raise ConfigError(f"analysis {self.name!r}: mode must be 'verify' or 'all', got {self.mode!r}")
        if isinstance(self.unsafe, tuple) and len(self.unsafe) == 2 and np.ndim(self.unsafe[1]) <= 1 \
                and np.ndim(self.unsafe[0]) == 2:
            self.unsafe = [self.unsafe]
        pairs = []
        for k, pair in enumerate(self.unsafe):
            try:
                C, d = pair
            except (TypeError, ValueError):
                raise ConfigError(f"analysis {self.name!r}: unsafe[{k}] must be a pair (C, d)") from None
            C = np.atleast_2d(np.asarray(C, float))
            d = np.atleast_1d(np.asarray(d, float))
            if C.shape[1] != m or d.shape != (C.shape[0],):
                raise ConfigError(
                    f"analysis {self.name!r}: unsafe[{k}] has C of shape {C.shape} and d of shape "
                    f"{d.shape}; expected C (k, {m}) for a network with {m} outputs and d (k,)")
            if not (np.isfinite(C).all() and np.isfinite(d).all()):
                raise ConfigError(f"analysis {self.name!r}: unsafe[{k}] contains NaN or inf")
            norms = np.linalg.norm(C, axis=1)
            if (norms == 0).any():
                raise ConfigError(f"analysis {self.name!r}: unsafe[{k}] has an all-zero row of C")
            pairs.append((C / norms[:, None], d / norms))
        if not pairs:
            raise ConfigError(f"analysis {self.name!r}: unsafe is empty (nothing to check)")
        self._pairs = pairs
        self._run_inputs = (network, region)

    def __getstate__(self) -> dict:
        """Pickled without the run's network and region (parts of a parallel run get them)."""
        return {k: v for k, v in self.__dict__.items() if k != "_run_inputs"}

    @property
    def pairs(self) -> list:
        """The unsafe conjunctions ``(C, d)`` as checked by :meth:`validate`: a list, rows of
        ``C`` of unit norm."""
        return self._pairs

    def start_point(self) -> np.ndarray | None:
        """In ``verify`` mode: the most violating of :data:`START_SAMPLES` points of the region.

        The traversal starts there, so a counterexample that sampling finds is confirmed in
        the first polytope, and best-first search begins where violations are likeliest.
        Computed when a run asks for it (not in the parts of a parallel run, which get the
        start point of the whole run).
        """
        if self.mode != "verify":
            return None
        if getattr(self, "_bab", None) is not None:  # this run's attack already ran
            return self._bab.start
        return attack_start(self._pairs, *self._run_inputs)

    def begin(self, context) -> None:
        from polytrav.solve.subproblem import compiled

        fr, n_rows = context.frame, context.network.n_neurons
        self._subs = [compiled((self.name, fr.cell_fingerprint, n_rows, C.shape[0]),
                               lambda k=C.shape[0]: self._build(fr, n_rows, k))
                      for C, _ in self._pairs]
        self._best = (-np.inf, None, None)
        self._confirmed = None
        self.skipped = 0
        self._bab = None

    @staticmethod
    def _build(frame, n_rows: int, k: int):
        """``maximise t`` s.t. ``M u + t <= r``, ``t <= 1`` on the cell (parameters M, r, A, b)."""
        import cvxpy as cp

        from polytrav.solve.subproblem import Subproblem

        cell = CellProblem(frame, n_rows)
        M = cp.Parameter((k, frame.dim), name="M")
        r = cp.Parameter(k, name="r")
        t = cp.Variable(name="t")
        cons = cell.constraints + [M @ cell.u + t <= r, t <= 1.0]
        return Subproblem(cp.Problem(cp.Maximize(t), cons), {"u": cell.u})

    def _violates(self, k: int):
        C, d = self._pairs[k]
        return lambda y: bool(np.all(C @ y <= d + WITNESS_TOL * (1 + np.abs(d))))

    def visit(self, polytope, context):
        Wu, cu = local_model_u(polytope, context.frame)
        values = None
        for k, (C, d) in enumerate(self._pairs):
            M, r = C @ Wu, d - C @ cu
            if np.any(-np.abs(M).sum(axis=1) > r):  # some row unmeetable on [-1, 1]^d
                self.skipped += 1
                continue
            V = polytope.vertices
            if V is not None:  # slacks at the vertices bound t from both sides
                S = r[:, None] - M @ V.T
                if float(S.max(axis=1).min()) < 0:  # some row is violated on the whole cell
                    self.skipped += 1
                    continue
                k_v = int(np.argmax(S.min(axis=0)))
                t_in, x_in = float(S[:, k_v].min()), context.frame.to_x(V[k_v])
            else:
                t_in = float(np.min(r - M @ context.frame.to_u(polytope.interior_point)))
                x_in = polytope.interior_point
            if t_in >= 0:
                found = (t_in, x_in)
            else:
                values = values or cell_values(polytope, context.frame)
                res = self.solve(context, self._subs[k], polytope, M=M, r=r, **values)
                if res.status is not Status.OPTIMAL:
                    continue
                found = (res.objective, context.frame.to_x(res.x))
            t, x = found
            if t > self._best[0]:
                self._best = (t, x, k)
            if t >= 0 and (self._confirmed is None or t > self._confirmed[0]):
                if check_witness(context.network, context.region, x, self._violates(k)):
                    self._confirmed = (t, x, k)
                    if self.mode == "verify":
                        return Stop(f"disjunct {k} met at an input (margin {t:.3g})")
        return None

    def finish(self, context) -> AnalysisResult:
        t, x, k = self._best
        exact = self.exact(context)
        if self._confirmed is not None:
            verdict = Verdict.VIOLATED
            t, x, k = self._confirmed if self.mode == "verify" else (t, x, k)
        elif t >= 0:
            verdict = Verdict.VIOLATED_UNCONFIRMED
        else:
            verdict = Verdict.HOLDS if exact else Verdict.UNKNOWN
        details = {"disjunct": k, "mode": self.mode, "skipped_by_bound": self.skipped,
                   "bab": bab_details(self._bab)}
        if x is not None:
            details["output"] = context.network.forward(x)
        return AnalysisResult(
            analysis=self.label, verdict=verdict,
            value=float(t) if np.isfinite(t) else None,
            witness=x if verdict is not Verdict.HOLDS else None,
            exact=exact or verdict is Verdict.VIOLATED, n_polytopes=self.n_polytopes,
            n_solves=self.n_solves, failures=tuple(self.failures), details=details,
        )

    def describe(self, result) -> list[str]:
        from polytrav.host.summary import fmt

        d = result.details
        if result.value is None:
            return []
        return [f"largest margin into the unsafe set {fmt(result.value)} (disjunct {d['disjunct']}; "
                "positive: an output meets it)"]

    def combine(self, parts, context) -> AnalysisResult:
        return combine_worst(self, parts, context, stop_at_violation=self.mode == "verify")


@hookimpl
def polytrav_add_analyses():
    """Register :class:`LinearProperty`."""
    return [LinearProperty]
