"""An independent mixed-integer ground truth for counterfactuals in weighted norms (SCIP).

The minimal ``||w * (x - x0)||_p`` (p in 1, 2, inf; ``w`` positive per-feature weights) over
the box with a changed class, by SCIP through ``pyscipopt``: for p = 2 a mixed-integer QP,
which HiGHS (:mod:`milp`) cannot solve. The network is the big-M encoding of :mod:`milp`:
each hidden neuron gets a post-activation variable ``z``, an unstable one (``l < 0 < u`` on its
pre-activation ``h``) also a binary ``delta`` with

    z >= h,  z <= h - l (1 - delta),  z <= u delta,  z >= 0,

a stable active one the row ``z = h``, a stable inactive one the bounds ``z = 0``; the bounds
are :func:`milp.interval_bounds` (``bounds="interval"``) or :func:`milp.lp_bounds`
(``bounds="lp"``). With ``d = w * (x - x0)`` the objective is ``sum s`` with ``s >= |d|``
(p = 1), ``t`` with ``t >= |d_j|`` (p = inf), or ``t`` with the convex quadratic constraint
``t >= sum d_j^2`` (p = 2: the squared distance; results report its square root).

Only :class:`polytrav.Network`'s ``weights``/``biases``/``forward`` are used: no polytrav
solver, bound or traversal code. Every answer is re-evaluated at the returned ``x`` (its
weighted distance, and the class change by a plain forward pass); a disagreement with SCIP's
own objective raises :class:`milp.MilpCheckError`.
"""
from __future__ import annotations

import numpy as np
from polytrav.testing.milp import (MilpCheckError, MilpResult, counterfactual_setup,
                                   interval_bounds, lp_bounds)

__all__ = ["SCIP_PARAMS", "miqp_counterfactual"]

INF = np.inf
RTOL = 1e-6  # agreement between SCIP's objective and the recomputed distance
#: SCIP parameters set on every model: stop only at a proven optimum (gaps), and feasibility
#: tolerances far below RTOL (SCIP's defaults are 1e-6 / 1e-7). The dual bound of the L2
#: model comes from cuts on ``t >= sum d_j^2``, which SCIP stops adding once the relaxation
#: violates it by less than ``feastol``: with 1e-9 the bound stalled ~1.5e-9 below an optimal
#: t of 0.0079 (relative gap 2e-7 > limits/gap: a time-out); 1e-10 closed it. The gap is
#: on the *squared* distance of L2: 1e-8 there is ~5e-9 on the distance (on breast cancer
#: 30-16-16 row 3 the bound stalled 4e-10 short of a 1e-9 gap: 600 s; 67 s at 1e-8).
SCIP_PARAMS = {
    "limits/gap": 1e-8,
    "limits/absgap": 1e-12,
    "numerics/feastol": 1e-10,
    "numerics/dualfeastol": 1e-10,
}
#: SCIP status -> milp.py's status names ("gaplimit" is the gap asked for: optimal).
STATUS_MAP = {
    "optimal": "optimal",
    "gaplimit": "optimal",
    "infeasible": "infeasible",
    "timelimit": "time_limit",
    "unbounded": "unbounded",
    "inforunbd": "infeasible",  # the box is bounded: never unbounded
}


def _norm(norm) -> float:
    if norm in (1, "1", "l1", "L1"):
        return 1.0
    if norm in (2, "2", "l2", "L2"):
        return 2.0
    if norm in (np.inf, "inf", "linf", "Linf", "L_inf"):
        return INF
    raise ValueError(f"miqp_counterfactual: norm must be 1, 2 or inf, got {norm!r}")


def _distance(x, x0, w, p: float) -> float:
    """``||w * (x - x0)||_p``."""
    d = np.abs(w * (x - x0))
    if p == 1:
        return float(d.sum())
    if p == 2:
        return float(np.sqrt(d @ d))
    return float(d.max(initial=0.0))


def _coefs(row) -> list[tuple[int, float]]:
    """The non-zero ``(index, coefficient)`` pairs of a row, as Python floats (a numpy scalar
    times a pyscipopt variable is not an expression)."""
    return [(j, float(a)) for j, a in enumerate(np.asarray(row, float)) if a != 0.0]


def _model(net, x0, w, lo, hi, p, layers, G, time_limit, params):
    """SCIP's model of ``min distance`` subject to ``G f(x) >= 0`` over the box; returns
    ``(model, x variables, number of binaries)``."""
    import pyscipopt as ps

    m = ps.Model()
    m.hideOutput()
    for key, value in {**SCIP_PARAMS, **(params or {})}.items():
        m.setParam(key, value)
    m.setParam("limits/time", float(time_limit))
    n = net.n_inputs
    x = [m.addVar(f"x{j}", lb=lo[j], ub=hi[j]) for j in range(n)]
    prev, n_bin = x, 0
    for k, ((W, bias), (hl, hu)) in enumerate(zip(zip(net.weights[:-1], net.biases[:-1]), layers)):
        z = []
        for i in range(W.shape[0]):
            h = ps.quicksum(a * prev[j] for j, a in _coefs(W[i])) + float(bias[i])
            zi = m.addVar(f"z{k}_{i}", lb=max(float(hl[i]), 0.0), ub=max(float(hu[i]), 0.0))
            if hl[i] >= 0.0:
                m.addCons(zi == h)
            elif hu[i] > 0.0:  # unstable (a stable inactive zi is fixed to 0 by its bounds)
                l, u = float(hl[i]), float(hu[i])
                delta = m.addVar(f"d{k}_{i}", vtype="B")
                n_bin += 1
                m.addCons(zi >= h)
                m.addCons(zi <= h - l * (1 - delta))
                m.addCons(zi <= u * delta)
            z.append(zi)
        prev = z
    for g, c in zip(G @ net.weights[-1], G @ net.biases[-1]):  # G f(x) >= 0
        m.addCons(ps.quicksum(a * prev[j] for j, a in _coefs(g)) + float(c) >= 0.0)
    reach = w * np.maximum(np.abs(lo - x0), np.abs(hi - x0))
    d = []  # d = w (x - x0)
    for j in range(n):
        dj = m.addVar(f"dx{j}", lb=-float(reach[j]), ub=float(reach[j]))
        m.addCons(dj == float(w[j]) * x[j] - float(w[j] * x0[j]))
        d.append(dj)
    if p == 1:
        s = [m.addVar(f"s{j}", lb=0.0, ub=float(reach[j])) for j in range(n)]
        for sj, dj in zip(s, d):
            m.addCons(sj >= dj)
            m.addCons(sj >= -dj)
        m.setObjective(ps.quicksum(s), "minimize")
    elif p == 2:
        t = m.addVar("t", lb=0.0, ub=float(reach @ reach))
        m.addCons(ps.quicksum(dj * dj for dj in d) <= t)
        m.setObjective(t, "minimize")
    else:
        t = m.addVar("t", lb=0.0, ub=float(reach.max(initial=0.0)))
        for dj in d:
            m.addCons(t >= dj)
            m.addCons(t >= -dj)
        m.setObjective(t, "minimize")
    return m, x, n_bin


def _agree(value: float, objective: float, rtol: float) -> None:
    if not abs(value - objective) <= rtol * max(1.0, abs(value), abs(objective)):
        raise MilpCheckError(
            f"miqp counterfactual: recomputed distance {value!r} disagrees with SCIP's "
            f"objective {objective!r} (diff {value - objective:.3g})"
        )


def _solve(net, x0, w, lo, hi, p, layers, G, j, time_limit, rtol, params) -> MilpResult:
    m, xv, n_bin = _model(net, x0, w, lo, hi, p, layers, G, time_limit, params)
    m.optimize()
    status = STATUS_MAP.get(m.getStatus(), "limit")
    dt = m.getSolvingTime()
    bound = INF if status == "infeasible" else float(m.getDualbound())
    if p == 2:
        bound = float(np.sqrt(max(bound, 0.0)))
    if m.getNSols() == 0 or status == "infeasible":
        value = INF if status == "infeasible" else np.nan
        return MilpResult(value, None, status, dt, n_bin, bound=bound, cls=j)
    sol = m.getBestSol()
    x = np.clip(np.array([m.getSolVal(sol, v) for v in xv]), lo, hi)
    objective = float(m.getSolObjVal(sol))
    value = _distance(x, x0, w, p)
    if p == 2:  # t is the squared distance: compare what SCIP minimised, report square roots
        _agree(value * value, objective, rtol)
        objective = float(np.sqrt(max(objective, 0.0)))
    else:
        _agree(value, objective, rtol)
    y = net.forward(x)
    gap = -(G @ y)
    if np.any(gap > rtol * max(1.0, float(np.abs(y).max()))):
        raise MilpCheckError(
            f"miqp counterfactual: forward pass misses the class-change constraint by "
            f"{gap.max():.3g} at the returned x"
        )
    return MilpResult(value, x, status, dt, n_bin, objective, bound, cls=j)


def miqp_counterfactual(net, x0, lo, hi, *, norm=2, weights=None, immutable=(),
                        target: int | None = None, time_limit: float = 60.0,
                        rtol: float = RTOL, bounds: str = "interval",
                        params: dict | None = None) -> MilpResult:
    """Minimal ``||weights * (x - x0)||_norm`` (norm 1, 2 or inf) over ``[lo, hi]`` with a
    changed class, by SCIP.

    Binary nets (one output, class 1 iff ``f >= 0``): the counterfactual needs ``f <= 0`` if
    x0 has class 1, ``f >= 0`` if class 0. Multiclass (class = argmax): for target j,
    ``f_j >= f_k`` for all ``k != j``; ``target=None`` takes the minimum over all ``j`` other
    than x0's class (one solve each; ``time_limit`` is per solve). Constraints are closed, so
    the value is the infimum. ``weights`` (positive, ``(n_inputs,)``; ones by default) scale
    each coordinate's difference; coordinates in ``immutable`` are fixed to x0. ``params``
    are more SCIP parameters (over :data:`SCIP_PARAMS`), such as search settings.

    Returns a :class:`milp.MilpResult`: ``value`` the weighted distance recomputed at ``x``
    (``inf`` when no counterfactual exists), ``objective`` and ``bound`` SCIP's primal and
    dual bound on it (square roots of SCIP's for norm 2), ``cls`` the class reached, ``time``
    SCIP's solving time over all solves, ``n_binaries`` the unstable neurons.
    """
    import pyscipopt  # noqa: F401  (fail here, before any work, when SCIP is missing)

    p = _norm(norm)
    n = net.n_inputs
    x0 = np.asarray(x0, float).reshape(-1)
    lo = np.broadcast_to(np.asarray(lo, float), (n,)).copy()
    hi = np.broadcast_to(np.asarray(hi, float), (n,)).copy()
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        raise ValueError("miqp_counterfactual: the box [lo, hi] must be finite (big-M needs bounds)")
    setup = counterfactual_setup("miqp_counterfactual", net, x0, lo, hi, weights, immutable, target)
    if setup is None:
        return MilpResult(INF, None, "infeasible", 0.0, 0)
    w, c0, targets = setup
    binary = net.n_outputs == 1
    if bounds == "interval":
        layers = interval_bounds(net, lo, hi)
    elif bounds == "lp":
        layers = lp_bounds(net, lo, hi)
    else:
        raise ValueError(f"miqp_counterfactual: bounds must be 'interval' or 'lp', got {bounds!r}")

    results = []
    for j in targets:
        if binary:
            G = np.array([[1.0 if c0 == 0 else -1.0]])  # G f >= 0
        else:
            others = [k for k in range(net.n_outputs) if k != j]
            G = np.zeros((len(others), net.n_outputs))
            G[:, j] = 1.0
            G[np.arange(len(others)), others] = -1.0
        results.append(_solve(net, x0, w, lo, hi, p, layers, G, j, time_limit, rtol, params))
    return _combine(results)


def _combine(results: list[MilpResult]) -> MilpResult:
    """The smallest of the solves; ``status`` is "optimal" only if every solve was optimal or
    infeasible."""
    total = sum(r.time for r in results)
    nb = max((r.n_binaries for r in results), default=0)
    bad = [r.status for r in results if r.status not in ("optimal", "infeasible")]
    with_x = [r for r in results if r.x is not None]
    if with_x:
        best = min(with_x, key=lambda r: r.value)
        bound = min(r.bound for r in results)  # infeasible targets: inf
        return MilpResult(best.value, best.x, bad[0] if bad else "optimal", total, nb,
                          best.objective, bound, best.cls, n_solves=len(results))
    status = bad[0] if bad else "infeasible"
    return MilpResult(INF if status == "infeasible" else np.nan, None, status, total, nb,
                      bound=min(r.bound for r in results),
                      cls=results[0].cls if len(results) == 1 else None, n_solves=len(results))
