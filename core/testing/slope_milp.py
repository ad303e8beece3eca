"""A MILP for global monotonicity of a ReLU network over a box: the independent truth of
the ``monotonicity`` analysis in polytrav's suite and benchmarks.

Is output ``o`` non-decreasing in input ``j`` over ``lo <= x <= hi``? The network is
continuous and piecewise linear, so the answer is yes iff the slope ``df_o/dx_j`` is
``>= 0`` on every full-dimensional linear piece meeting the box. This module minimises the
slope (``"increasing"``; the negated slope for ``"decreasing"``) over the box with a mixed
integer linear program solved by HiGHS (``highspy``), independently of polytrav's
traversal and bounds (only ``Network.weights``/``biases``/``forward`` are read):

* the forward pass: per hidden neuron a post-activation ``z >= 0`` and, when interval
  arithmetic over the box leaves its pre-activation ``h`` in ``[l, u]`` with ``l < 0 < u``,
  a binary ``delta`` with the big-M rows ``z >= h``, ``z <= h - l (1 - delta)``,
  ``z <= u delta``; stable neurons are ``z = h`` or ``z = 0``;
* the derivative along ``e_j`` through the *same* binaries: ``g_1 = W_1[:, j]`` (a
  constant), ``d_k = delta_k * g_k`` and ``g_{k+1} = W_{k+1} d_k``. With interval bounds
  ``[gl, gu]`` on ``g_k`` (propagated with ``delta`` in ``[0, 1]``) the product is exact
  under the rows ``d <= g - gl (1 - delta)``, ``d >= g - gu (1 - delta)``,
  ``gl delta <= d <= gu delta``; for the first layer ``d = g_1 delta`` is linear already;
* the objective ``s * W_L[o] @ d_{L-1}`` (``s = +1`` for ``"increasing"``, ``-1`` for
  ``"decreasing"``).

**What the verdict means.** A solution of the MILP is a point ``x`` of the box and an
activation pattern consistent with it, where a neuron with ``h = 0`` exactly may be taken on
or off (and, within HiGHS's feasibility tolerance ``1e-9``, one with ``|h|`` of about
``1e-9 * M``). So the optimum is the minimum slope over every pattern consistent with some
point of the box: the full-dimensional pieces' slopes, and also the slopes of patterns
realised only on a measure-zero set (a face where neurons are exactly zero), which the
function never "has". Hence

* optimum ``>= 0`` (no solution below ``-tol``): **holds** (every full-dimensional piece's
  slope is at least the optimum; up to ``tol`` and the solver's tolerances);
* a solution below ``-tol``: a candidate only. It is **violated** when a pair ``(x, x')``
  near the solution's point is confirmed by a float64 forward pass (both in the box, only
  feature ``j`` differs, ``x'_j > x_j``, ``f(x')_o < f(x)_o``; ``>`` for ``"decreasing"``);
  otherwise **violated_unconfirmed** (e.g. ``relu(x) - relu(x)`` is constant, yet the
  pattern "first on, second off" at ``x = 0`` has slope ``-1``).

``mode="decide"`` asks HiGHS for any solution below ``-tol`` (``objective_bound`` prunes every
other, the search stops at the first improving one) or a proof that none exists;
``mode="minimise"`` solves to optimality and reports the minimum slope.

    >>> import numpy as np
    >>> from polytrav import Network
    >>> net = Network.from_arrays([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])  # |x|
    >>> slope_milp(net, [-1.0], [1.0], 0, mode="minimise").verdict
    'violated'
    >>> slope_milp(net, [0.0], [1.0], 0).verdict
    'holds'
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from polytrav.testing.milp import MilpModel as _MilpModel  # one model builder
from polytrav.testing.milp import interval_bounds as pre_activation_bounds

__all__ = ["SlopeMilpResult", "confirm_pair", "derivative_bounds", "pre_activation_bounds",
           "slope_milp"]

#: A solution counts as a violation candidate only below ``-SLOPE_TOL * scale`` (``scale``:
#: the largest absolute path sum of the slope, so the tolerance is relative).
SLOPE_TOL = 1e-9
#: HiGHS options: exact gaps and tight feasibility tolerances.
HIGHS_OPTIONS = {
    "mip_rel_gap": 0.0,
    "mip_abs_gap": 1e-12,
    "primal_feasibility_tolerance": 1e-9,
    "dual_feasibility_tolerance": 1e-9,
    "mip_feasibility_tolerance": 1e-9,
}
#: Steps (shares of the room left in the box along the feature) tried to confirm a pair.
PAIR_STEPS = tuple(2.0 ** -k for k in range(1, 40, 2))


@dataclass
class SlopeMilpResult:
    """The MILP's answer for one (network, box, feature, output, direction).

    ``verdict``: "holds", "violated" (``pair`` confirmed), "violated_unconfirmed" (a
    solution below ``-tol`` with no confirmed pair) or "unknown" (a time limit or a solver
    error: ``status`` says which). ``slope``: the solution's slope (the minimum with
    ``mode="minimise"``; ``None`` without a solution); ``bound``: HiGHS's dual bound on the
    (signed) minimum; ``x``: the solution's input; ``seconds``: build and solve.
    """

    verdict: str
    status: str
    slope: float | None
    bound: float | None
    x: np.ndarray | None
    pair: tuple[np.ndarray, np.ndarray] | None
    seconds: float
    n_binaries: int


def derivative_bounds(net, feature: int, pre) -> list[tuple[np.ndarray, np.ndarray]]:
    """Interval bounds ``(gl, gu)`` on every hidden layer's pre-activation derivative along
    ``e_feature``, given the pre-activation bounds ``pre`` (a neuron with ``l >= 0`` passes
    its derivative, one with ``u <= 0`` passes 0, an unstable one the hull of both)."""
    g = net.weights[0][:, feature].astype(float)
    out = [(g.copy(), g.copy())]
    gl, gu = g, g
    for (hl, hu), W in zip(pre[:-1], net.weights[1:-1]):
        on, off = hl >= 0.0, hu <= 0.0
        dl = np.where(on, gl, np.where(off, 0.0, np.minimum(gl, 0.0)))
        du = np.where(on, gu, np.where(off, 0.0, np.maximum(gu, 0.0)))
        Wp, Wn = np.maximum(W, 0.0), np.minimum(W, 0.0)
        gl, gu = Wp @ dl + Wn @ du, Wp @ du + Wn @ dl
        out.append((gl, gu))
    return out


def _encode(net, lo, hi, feature: int, output: int, sign: float):
    """The model, its input columns, the objective and the number of binaries."""
    pre = pre_activation_bounds(net, lo, hi)
    der = derivative_bounds(net, feature, pre)
    model = _MilpModel()
    x = model.add_vars(lo, hi)
    prev_z, prev_d, binaries = x, None, []
    for k, ((W, b), (hl, hu), (gl, gu)) in enumerate(zip(
            zip(net.weights[:-1], net.biases[:-1]), pre, der)):
        on, off = hl >= 0.0, hu <= 0.0
        uns = ~(on | off)
        iu, ia = np.flatnonzero(uns), np.flatnonzero(on)
        z = model.add_vars(np.maximum(hl, 0.0), np.maximum(hu, 0.0))
        dl = np.where(on, gl, np.where(off, 0.0, np.minimum(gl, 0.0)))
        du = np.where(on, gu, np.where(off, 0.0, np.maximum(gu, 0.0)))
        d = model.add_vars(dl, du)
        delta = model.add_vars(np.zeros(iu.size), np.ones(iu.size), integer=True)
        binaries.append((on, iu, delta))
        m, I = iu.size, np.eye(iu.size)
        # forward pass: z = W z_prev + b on active neurons, big-M on unstable ones
        model.add_rows([(z[ia], np.eye(ia.size)), (prev_z, -W[ia])], b[ia], b[ia])
        model.add_rows([(z[iu], I), (prev_z, -W[iu])], b[iu], np.full(m, np.inf))
        model.add_rows([(z[iu], I), (prev_z, -W[iu]), (delta, -np.diag(hl[iu]))],
                       np.full(m, -np.inf), b[iu] - hl[iu])
        model.add_rows([(z[iu], I), (delta, -np.diag(hu[iu]))], np.full(m, -np.inf), np.zeros(m))
        # derivative: d = g on active neurons (0 on inactive ones, by bounds), d = delta * g
        if k == 0:  # g is the constant W_1[:, feature]
            model.add_rows([(d[iu], I), (delta, -np.diag(gl[iu]))], np.zeros(m), np.zeros(m))
        else:
            model.add_rows([(d[ia], np.eye(ia.size)), (prev_d, -W[ia])],
                           np.zeros(ia.size), np.zeros(ia.size))
            # d - g + gl (1 - delta) <= 0  ->  d - W d_prev - gl delta <= -gl
            model.add_rows([(d[iu], I), (prev_d, -W[iu]), (delta, -np.diag(gl[iu]))],
                           np.full(m, -np.inf), -gl[iu])
            # d - g + gu (1 - delta) >= 0  ->  d - W d_prev - gu delta >= -gu
            model.add_rows([(d[iu], I), (prev_d, -W[iu]), (delta, -np.diag(gu[iu]))],
                           -gu[iu], np.full(m, np.inf))
            model.add_rows([(d[iu], I), (delta, -np.diag(gl[iu]))], np.zeros(m), np.full(m, np.inf))
            model.add_rows([(d[iu], I), (delta, -np.diag(gu[iu]))], np.full(m, -np.inf), np.zeros(m))
        prev_z, prev_d = z, d
    cost = np.zeros(model.n)
    row = net.weights[-1][output]
    if prev_d is None:  # no hidden layer: the slope is a constant
        return model, x, cost, float(sign * row[feature]), binaries
    cost[prev_d] = sign * row
    return model, x, cost, 0.0, binaries


def _slope_scale(net, feature: int, output: int) -> float:
    """The largest absolute path sum ``|W_L| ... |W_1| e_j`` (the slope's magnitude scale)."""
    v = np.abs(net.weights[0][:, feature])
    for W in net.weights[1:]:
        v = np.abs(W) @ v
    return float(v[output])


def local_slope(net, x: np.ndarray, feature: int, output: int) -> float:
    """The slope of output ``output`` in ``feature`` at ``x`` (neurons on iff ``h >= 0``)."""
    v = np.zeros(net.n_inputs)
    v[feature] = 1.0
    z = np.asarray(x, float)
    for W, b in zip(net.weights[:-1], net.biases[:-1]):
        h = W @ z + b
        v, z = (h >= 0) * (W @ v), np.maximum(h, 0.0)
    return float(net.weights[-1][output] @ v)


def confirm_pair(net, lo, hi, x, feature: int, output: int, direction: str):
    """A pair ``(x1, x2)`` near ``x`` confirming a violation by float64 forward passes: both
    in the box, equal but in ``feature``, ``x2[feature] > x1[feature]`` and the output
    strictly lower (``"increasing"`` violated) or higher (``"decreasing"``); or None.

    Tried: ``x`` and points above and below it along the feature, at steps of
    :data:`PAIR_STEPS` shares of the room left in the box.
    """
    lo, hi, x = (np.asarray(a, float) for a in (lo, hi, x))
    x = np.clip(x, lo, hi)
    worse = (lambda a, b: b < a) if direction == "increasing" else (lambda a, b: b > a)
    up, down = hi[feature] - x[feature], x[feature] - lo[feature]
    for s in PAIR_STEPS:
        for a, b in ((0.0, s * up), (-s * down, 0.0), (-s * down, s * up)):
            x1, x2 = x.copy(), x.copy()
            x1[feature] = min(max(x[feature] + a, lo[feature]), hi[feature])
            x2[feature] = min(max(x[feature] + b, lo[feature]), hi[feature])
            if not x2[feature] > x1[feature]:
                continue
            if worse(net.forward(x1)[output], net.forward(x2)[output]):
                return x1, x2
    return None


def pattern_centre(net, lo, hi, codes, free) -> np.ndarray | None:
    """The Chebyshev centre of the cell of the activation pattern ``codes`` (one bool array
    per hidden layer) in the box, or None when the cell has no interior.

    The pattern fixes every layer's map, so each neuron's pre-activation is affine in ``x``;
    the neurons listed in ``free`` (per layer: the indices whose sign the box does not fix)
    must have the pattern's sign with a margin ``t ||a_i||``, and ``x`` must be ``t`` inside
    every face of the box; ``t`` is maximised (an LP, HiGHS through scipy).
    """
    from scipy.optimize import linprog

    n = net.n_inputs
    A_cur, c_cur = np.eye(n), np.zeros(n)
    rows, rhs = [], []
    for W, b, code, idx in zip(net.weights[:-1], net.biases[:-1], codes, free):
        A_h, c_h = W @ A_cur, W @ c_cur + b
        for i in idx:  # s (a x + c) >= t |a|  ->  -s a x + |a| t <= s c
            s = 1.0 if code[i] else -1.0
            norm = float(np.linalg.norm(A_h[i]))
            if norm == 0.0:
                if s * c_h[i] <= 0:
                    return None
                continue
            rows.append(np.append(-s * A_h[i], norm))
            rhs.append(s * c_h[i])
        A_cur, c_cur = code[:, None] * A_h, code * c_h
    for k in range(n):  # t inside each face of the box
        e = np.zeros(n + 1)
        e[k], e[n] = 1.0, 1.0
        rows.append(e.copy())
        rhs.append(hi[k])
        e[k] = -1.0
        rows.append(e)
        rhs.append(-lo[k])
    c = np.zeros(n + 1)
    c[n] = -1.0
    res = linprog(c, A_ub=np.array(rows), b_ub=np.array(rhs),
                  bounds=[(None, None)] * n + [(None, 1.0)], method="highs")
    if res.status != 0 or res.x[n] <= 0:
        return None
    return res.x[:n]


def slope_milp(net, lo, hi, feature: int, output: int = 0, direction: str = "increasing", *,
               mode: str = "decide", time_limit: float = 60.0, tol: float = SLOPE_TOL
               ) -> SlopeMilpResult:
    """Is ``output`` monotone (``direction``) in ``feature`` over the box? By a MILP.

    Parameters
    ----------
    net : polytrav.Network
    lo, hi : array_like, shape (n_inputs,)
        The box (finite).
    feature, output : int
    direction : {"increasing", "decreasing"}
    mode : {"decide", "minimise"}
        Stop at the first solution below ``-tol * scale`` (or a proof that none exists), or
        solve to optimality.
    time_limit : float
        Seconds for HiGHS.
    tol : float
        Relative slope tolerance (``scale``: the largest absolute path sum of the slope).

    Returns
    -------
    SlopeMilpResult
    """
    if direction not in ("increasing", "decreasing"):
        raise ValueError(f"slope_milp: direction must be 'increasing' or 'decreasing', got {direction!r}")
    if mode not in ("decide", "minimise"):
        raise ValueError(f"slope_milp: mode must be 'decide' or 'minimise', got {mode!r}")
    lo = np.asarray(lo, float).reshape(-1)
    hi = np.asarray(hi, float).reshape(-1)
    if not (np.isfinite(lo).all() and np.isfinite(hi).all() and (lo <= hi).all()):
        raise ValueError("slope_milp: the box must be finite with lo <= hi")
    sign = 1.0 if direction == "increasing" else -1.0
    t0 = time.perf_counter()
    cutoff = -tol * (1.0 + _slope_scale(net, feature, output))
    model, xcols, cost, const, binaries = _encode(net, lo, hi, feature, output, sign)
    n_bin = sum(iu.size for _, iu, _ in binaries)
    if not cost.any():  # the slope is the constant ``const`` (no hidden layer, or no path)
        verdict = "holds" if const >= cutoff else "violated"
        pair = None if verdict == "holds" else confirm_pair(net, lo, hi, (lo + hi) / 2, feature,
                                                            output, direction)
        if verdict == "violated" and pair is None:
            verdict = "violated_unconfirmed"
        return SlopeMilpResult(verdict, "optimal", sign * const, sign * const, (lo + hi) / 2,
                               pair, time.perf_counter() - t0, n_bin)
    options = dict(HIGHS_OPTIONS, time_limit=float(time_limit))
    if mode == "decide":
        options.update(objective_bound=float(cutoff), mip_max_improving_sols=1)
    h = model.highs(cost, options)
    h.run()
    seconds = time.perf_counter() - t0
    import highspy

    S = highspy.HighsModelStatus
    status, info = h.getModelStatus(), h.getInfo()
    v = np.asarray(h.getSolution().col_value) if info.primal_solution_status == 2 else None
    bound = float(info.mip_dual_bound) if np.isfinite(info.mip_dual_bound) else None
    obj = None if v is None else float(cost @ v)
    if v is not None and obj < cutoff:
        x = np.clip(v[xcols], lo, hi)
        pair = confirm_pair(net, lo, hi, x, feature, output, direction)
        if pair is None:  # x is on a face: try the centre of the solution's pattern's cell
            codes = [on.copy() for on, _, _ in binaries]
            for c, (_, iu, delta) in zip(codes, binaries):
                c[iu] = v[delta] > 0.5
            centre = pattern_centre(net, lo, hi, codes, [iu for _, iu, _ in binaries])
            if centre is not None:
                x = centre
                pair = confirm_pair(net, lo, hi, x, feature, output, direction)
        verdict = "violated" if pair is not None else "violated_unconfirmed"
        return SlopeMilpResult(verdict, "found", sign * obj, bound, x, pair, seconds, n_bin)
    if status in (S.kInfeasible, S.kObjectiveBound) or status == S.kOptimal:
        return SlopeMilpResult("holds", "optimal" if status == S.kOptimal else "proven",
                               None if obj is None else sign * obj, bound,
                               None if v is None else v[xcols], None, seconds, n_bin)
    name = h.modelStatusToString(status).lower()
    return SlopeMilpResult("unknown", "time_limit" if "time" in name else "error: " + name,
                           None if obj is None else sign * obj, bound, None, None, seconds, n_bin)
