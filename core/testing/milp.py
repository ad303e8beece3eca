"""An independent MILP ground truth for ReLU networks (scipy.optimize.milp / HiGHS): what
an analysis's exact answer is checked against in polytrav's suite and benchmarks.

Each hidden neuron gets a post-activation variable ``z``; an unstable neuron (interval bounds
``l < 0 < u`` on its pre-activation ``h``) also gets a binary ``delta`` with the big-M rows

    z >= h,  z <= h - l (1 - delta),  z <= u delta,  z >= 0,

a stable active one (``l >= 0``) the row ``z = h``, and a stable inactive one (``u <= 0``)
the bounds ``z = 0``. Bounds come from interval arithmetic over the input box, layer by layer
(``bounds="interval"``, the default), or are tightened by the LP relaxation of the layers
before (``bounds="lp"``: two LPs per neuron that interval arithmetic leaves unstable, as
MIPVerify does; far fewer binaries on deep nets). The input region is ``lo <= x <= hi`` with
optional rows ``A x <= b`` and ``E x == e``.

Only :class:`polytrav.Network`'s ``weights``/``biases``/``forward`` are used: no polytrav
solver or traversal code. Every answer is re-evaluated with a plain forward pass at the
returned ``x`` and compared with the MILP's own objective; a disagreement raises
:class:`MilpCheckError`.
"""
from __future__ import annotations

import time as _time
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, milp

__all__ = [
    "MilpCheckError",
    "MilpModel",
    "MilpResult",
    "counterfactual_setup",
    "interval_bounds",
    "lp_bounds",
    "milp_counterfactual",
    "milp_linear_dnf_feasible",
    "milp_max_linear",
    "milp_max_margin",
    "milp_robust",
    "joint_by_hand",
]

INF = np.inf
LP_BOUND_SLACK = 1e-6  # relative widening of an LP bound (the LP is solved to 1e-9 tolerances)
RTOL = 1e-6  # agreement between the MILP objective and the forward-pass value
HIGHS_OPTIONS = {
    "mip_rel_gap": 0.0,
    "mip_abs_gap": 1e-9,
    "primal_feasibility_tolerance": 1e-9,
    "dual_feasibility_tolerance": 1e-9,
    "mip_feasibility_tolerance": 1e-9,
}


class MilpCheckError(AssertionError):
    """The MILP's answer does not survive a forward-pass check."""


@dataclass
class MilpResult:
    """A MILP answer.

    ``value`` is recomputed from a forward pass at ``x`` (``-inf``/``inf`` when the problem is
    infeasible, ``nan`` when a limit stopped the solver without an incumbent). ``objective`` is
    the MILP's own objective and ``bound`` its dual bound, both in the sense of ``value``.
    ``time`` is wall time over all solves and ``n_binaries`` the binaries of one MILP.
    """

    value: float
    x: np.ndarray | None
    status: str  # "optimal", "infeasible", "time_limit", "limit", "unbounded", "error"
    time: float
    n_binaries: int
    objective: float = np.nan
    bound: float = np.nan
    cls: int | None = None  # counterfactual target class / argmax class of the margin
    feasible: bool | None = None  # milp_linear_dnf_feasible only
    disjunct: int | None = None  # milp_linear_dnf_feasible only: index of the best disjunct
    n_solves: int = 1


# ---------------------------------------------------------------------- model building
class MilpModel:
    """Variables with bounds/integrality and sparse rows ``rlo <= M v <= rhi``."""

    def __init__(self):
        self.lb, self.ub, self.integ = [], [], []
        self.n = 0
        self.blocks = []  # (row offset, rows, cols, vals)
        self.rlo, self.rhi = [], []
        self.m = 0

    def add_vars(self, lb, ub, integer: bool = False) -> np.ndarray:
        lb = np.atleast_1d(np.asarray(lb, float))
        ub = np.broadcast_to(np.asarray(ub, float), lb.shape)
        idx = np.arange(self.n, self.n + lb.size)
        self.lb.append(lb)
        self.ub.append(np.array(ub))
        self.integ.append(np.full(lb.size, 1 if integer else 0))
        self.n += lb.size
        return idx

    def add_rows(self, terms, lo, hi) -> None:
        """Rows ``lo <= sum_k M_k @ v[cols_k] <= hi``; ``terms`` is a list of ``(cols, M_k)``."""
        lo = np.atleast_1d(np.asarray(lo, float))
        hi = np.broadcast_to(np.asarray(hi, float), lo.shape)
        m = lo.size
        if m == 0:
            return
        for cols, M in terms:
            M = np.asarray(M, float).reshape(m, len(cols))
            r, c = np.nonzero(M)
            self.blocks.append((self.m + r, np.asarray(cols)[c], M[r, c]))
        self.rlo.append(lo)
        self.rhi.append(np.array(hi))
        self.m += m

    def solve(self, c: np.ndarray, time_limit: float, presolve: bool = True):
        lb, ub = np.concatenate(self.lb), np.concatenate(self.ub)
        integ = np.concatenate(self.integ)
        cons = []
        if self.m:
            rows = np.concatenate([blk[0] for blk in self.blocks]) if self.blocks else np.zeros(0, int)
            cols = np.concatenate([blk[1] for blk in self.blocks]) if self.blocks else np.zeros(0, int)
            vals = np.concatenate([blk[2] for blk in self.blocks]) if self.blocks else np.zeros(0)
            M = sp.csr_array((vals, (rows, cols)), shape=(self.m, self.n))
            cons = [LinearConstraint(M, np.concatenate(self.rlo), np.concatenate(self.rhi))]
        opts = dict(HIGHS_OPTIONS, time_limit=float(time_limit), presolve=presolve)
        t0 = _time.perf_counter()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Unrecognized options")
            res = milp(c, integrality=integ, bounds=Bounds(lb, ub), constraints=cons, options=opts)
        return res, _time.perf_counter() - t0

    def highs(self, cost: np.ndarray, options: dict):
        """The model as a ``highspy.Highs`` with ``cost`` and ``options``, ready to run."""
        import highspy

        inf = highspy.kHighsInf
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = self.n, self.m
        lp.col_cost_ = cost
        lp.col_lower_ = np.nan_to_num(np.concatenate(self.lb), neginf=-inf)
        lp.col_upper_ = np.nan_to_num(np.concatenate(self.ub), posinf=inf)
        cat = (lambda parts: np.concatenate(parts) if parts else np.zeros(0))
        lp.row_lower_ = np.nan_to_num(cat(self.rlo), neginf=-inf)
        lp.row_upper_ = np.nan_to_num(cat(self.rhi), posinf=inf)
        rows, cols, vals = ([blk[k] for blk in self.blocks] for k in range(3))
        A = sp.csc_array((cat(vals), (cat(rows).astype(int), cat(cols).astype(int))),
                         shape=(self.m, self.n))
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = A.indptr, A.indices, A.data
        lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = self.n, self.m
        lp.integrality_ = [highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous
                           for i in np.concatenate(self.integ)]
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        for key, value in options.items():
            h.setOptionValue(key, value)
        h.passModel(lp)
        return h

    def solve_below(self, c: np.ndarray, cutoff: float, time_limit: float):
        """Any ``v`` with ``c @ v < cutoff``, or a proof that none exists (highspy directly:
        ``objective_bound`` cuts off every worse solution, and the search stops at the first
        improving one). Returns ``(status, v or None, dual bound, seconds)``; status is
        "found", "infeasible" (no such ``v``), "time_limit" or "error"."""
        import highspy

        h = self.highs(c, {"time_limit": float(time_limit), "objective_bound": float(cutoff),
                           "mip_max_improving_sols": 1, **HIGHS_OPTIONS})
        t0 = _time.perf_counter()
        h.run()
        dt = _time.perf_counter() - t0
        ms, info = h.getModelStatus(), h.getInfo()
        v = np.asarray(h.getSolution().col_value) if info.primal_solution_status == 2 else None
        if v is not None and c @ v < cutoff:  # a feasible solution below the cutoff
            return "found", v, info.mip_dual_bound, dt
        S = highspy.HighsModelStatus
        if ms in (S.kInfeasible, S.kObjectiveBound) or (ms == S.kOptimal and v is not None):
            return "infeasible", None, info.mip_dual_bound, dt  # (an optimum is >= cutoff)
        name = h.modelStatusToString(ms).lower()
        return ("time_limit" if "time" in name else "error: " + name), None, info.mip_dual_bound, dt


def _status(res) -> str:
    if res.status == 0:
        return "optimal"
    if res.status == 1:
        return "time_limit" if "time" in str(res.message).lower() else "limit"
    return {2: "infeasible", 3: "unbounded"}.get(res.status, "error")


def interval_bounds(net, lo, hi) -> list[tuple[np.ndarray, np.ndarray]]:
    """Interval bounds ``(l, u)`` on every hidden layer's pre-activation over the box."""
    out = []
    zl, zu = np.asarray(lo, float), np.asarray(hi, float)
    for W, b in zip(net.weights[:-1], net.biases[:-1]):
        Wp, Wn = np.maximum(W, 0.0), np.minimum(W, 0.0)
        hl, hu = Wp @ zl + Wn @ zu + b, Wp @ zu + Wn @ zl + b
        out.append((hl, hu))
        zl, zu = np.maximum(hl, 0.0), np.maximum(hu, 0.0)
    return out


@dataclass
class _Encoding:
    model: MilpModel
    x: np.ndarray  # input variable indices
    last: np.ndarray  # indices of the last hidden layer's z (x when there is none)
    n_binaries: int
    lo: np.ndarray
    hi: np.ndarray
    A: np.ndarray | None
    b: np.ndarray | None
    E: np.ndarray | None
    e: np.ndarray | None

    def output_rows(self, net, G: np.ndarray) -> tuple[list, np.ndarray]:
        """Terms and constant of ``G @ f(x)`` (``G`` is ``(m, n_outputs)``)."""
        return [(self.last, G @ net.weights[-1])], G @ net.biases[-1]


def _region(net, lo, hi, A, b, E, e):
    n = net.n_inputs
    lo = np.broadcast_to(np.asarray(lo, float), (n,)).copy()
    hi = np.broadcast_to(np.asarray(hi, float), (n,)).copy()
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        raise ValueError("milp: the box [lo, hi] must be finite (big-M needs bounds)")
    if A is not None:
        A = np.asarray(A, float).reshape(-1, n)
        b = np.asarray(b, float).reshape(-1)
    if E is not None:
        E = np.asarray(E, float).reshape(-1, n)
        e = np.asarray(e, float).reshape(-1)
    return lo, hi, A, b, E, e


def _encode(net, lo, hi, A=None, b=None, E=None, e=None, bounds="interval",
            layers: int | None = None) -> _Encoding:
    """The big-M model of ``net``'s first ``layers`` hidden layers (all by default) over the
    region (lo/hi already validated, lo <= hi); ``bounds`` is "interval", "lp" or a list of
    per-layer ``(l, u)``."""
    if isinstance(bounds, str):
        bounds = layer_bounds(net, lo, hi, A, b, E, e, bounds)
    model = MilpModel()
    x = model.add_vars(lo, hi)
    if A is not None and A.shape[0]:
        model.add_rows([(x, A)], np.full(A.shape[0], -INF), b)
    if E is not None and E.shape[0]:
        model.add_rows([(x, E)], e, e)
    prev = x
    n_bin = 0
    for (W, bias), (hl, hu) in zip(zip(net.weights[:-1], net.biases[:-1]), bounds[:layers]):
        z = model.add_vars(np.maximum(hl, 0.0), np.maximum(hu, 0.0))
        active = hl >= 0.0
        unstable = (hl < 0.0) & (hu > 0.0)
        # stable inactive neurons (hu <= 0) are fixed to 0 by their bounds
        if active.any():
            ia = np.flatnonzero(active)
            model.add_rows([(prev, W[ia]), (z[ia], -np.eye(ia.size))], -bias[ia], -bias[ia])
        if unstable.any():
            iu = np.flatnonzero(unstable)
            m = iu.size
            d = model.add_vars(np.zeros(m), np.ones(m), integer=True)
            n_bin += m
            l, u = hl[iu], hu[iu]
            I = np.eye(m)
            # z - W z_prev >= b
            model.add_rows([(z[iu], I), (prev, -W[iu])], bias[iu], np.full(m, INF))
            # z - W z_prev - l delta <= b - l
            model.add_rows([(z[iu], I), (prev, -W[iu]), (d, -np.diag(l))], np.full(m, -INF), bias[iu] - l)
            # z - u delta <= 0
            model.add_rows([(z[iu], I), (d, -np.diag(u))], np.full(m, -INF), np.zeros(m))
        prev = z
    return _Encoding(model, x, prev, n_bin, lo, hi, A, b, E, e)


def layer_bounds(net, lo, hi, A=None, b=None, E=None, e=None, kind: str = "interval"):
    """Per-hidden-layer pre-activation bounds of the kind named (see the module docstring)."""
    if kind == "interval":
        return interval_bounds(net, lo, hi)
    if kind == "lp":
        return lp_bounds(net, lo, hi, A, b, E, e)
    raise ValueError(f"milp: bounds must be 'interval' or 'lp', got {kind!r}")


def lp_bounds(net, lo, hi, A=None, b=None, E=None, e=None) -> list[tuple[np.ndarray, np.ndarray]]:
    """Pre-activation bounds tightened layer by layer with the LP relaxation of the big-M model
    (binaries relaxed to [0, 1]) of the layers before, over the whole region; each is the
    interval bound where that is tighter. A neuron whose LP fails keeps its interval bound."""
    lo, hi, A, b, E, e = _region(net, lo, hi, A, b, E, e)
    out = []
    for k, (hl, hu) in enumerate(interval_bounds(net, lo, hi)):
        if k:  # interval arithmetic from the tightened layer before
            W, bias = net.weights[k], net.biases[k]
            zl, zu = np.maximum(out[-1][0], 0.0), np.maximum(out[-1][1], 0.0)
            Wp, Wn = np.maximum(W, 0.0), np.minimum(W, 0.0)
            hl, hu = np.maximum(hl, Wp @ zl + Wn @ zu + bias), np.minimum(hu, Wp @ zu + Wn @ zl + bias)
        hl, hu = hl.copy(), hu.copy()
        unstable = np.flatnonzero((hl < 0.0) & (hu > 0.0))
        if unstable.size:
            enc = _encode(net, lo, hi, A, b, E, e, bounds=out, layers=k)
            enc.model.integ = [np.zeros_like(i) for i in enc.model.integ]  # the LP relaxation
            W, bias = net.weights[k], net.biases[k]
            for j in unstable:
                for sign in (1.0, -1.0):  # minimise sign * h_j
                    c = _objective(enc, [(enc.last, sign * W[j])])
                    res, _ = enc.model.solve(c, 60.0)
                    if res.status != 0 or res.fun is None:
                        continue
                    val = sign * float(res.fun) + bias[j]
                    slack = LP_BOUND_SLACK * (1.0 + abs(val))
                    if sign > 0:
                        hl[j] = max(hl[j], val - slack)
                    else:
                        hu[j] = min(hu[j], val + slack)
        out.append((hl, hu))
    return out


def _objective(enc: _Encoding, terms, extra=None) -> np.ndarray:
    c = np.zeros(enc.model.n)
    for cols, coef in terms:
        np.add.at(c, np.asarray(cols), np.asarray(coef, float).reshape(-1))
    if extra is not None:
        for cols, coef in extra:
            np.add.at(c, np.asarray(cols), np.asarray(coef, float).reshape(-1))
    return c


def _check_region(enc: _Encoding, x: np.ndarray, rtol: float) -> None:
    if enc.A is not None and enc.A.shape[0]:
        viol = enc.A @ x - enc.b
        tol = rtol * np.maximum(1.0, np.abs(enc.A) @ np.abs(x) + np.abs(enc.b))
        if np.any(viol > tol):
            raise MilpCheckError(f"milp: x violates A x <= b by {viol.max():.3g}")
    if enc.E is not None and enc.E.shape[0]:
        viol = np.abs(enc.E @ x - enc.e)
        tol = rtol * np.maximum(1.0, np.abs(enc.E) @ np.abs(x) + np.abs(enc.e))
        if np.any(viol > tol):
            raise MilpCheckError(f"milp: x violates E x == e by {viol.max():.3g}")


def _agree(value: float, objective: float, rtol: float, what: str) -> None:
    if not abs(value - objective) <= rtol * max(1.0, abs(value), abs(objective)):
        raise MilpCheckError(
            f"milp {what}: forward-pass value {value!r} disagrees with the MILP objective "
            f"{objective!r} (diff {value - objective:.3g})"
        )


def _x_of(enc: _Encoding, res) -> np.ndarray:
    return np.clip(np.asarray(res.x)[enc.x], enc.lo, enc.hi)


# ---------------------------------------------------------------------- analyses
def _max_linear_enc(net, enc, g, offset, time_limit, rtol) -> MilpResult:
    g = np.atleast_1d(np.asarray(g, float)).reshape(-1)
    if g.size != net.n_outputs:
        raise ValueError(f"milp_max_linear: g has {g.size} entries, the net {net.n_outputs} outputs")
    terms, const = enc.output_rows(net, g[None, :])
    c = -_objective(enc, terms)
    const = float(const[0]) + offset
    res, dt = enc.model.solve(c, time_limit)
    status = _status(res)
    if res.x is None:
        value = -INF if status == "infeasible" else (INF if status == "unbounded" else np.nan)
        return MilpResult(value, None, status, dt, enc.n_binaries)
    x = _x_of(enc, res)
    _check_region(enc, x, rtol)
    objective = -float(res.fun) + const
    value = float(g @ net.forward(x)) + offset
    _agree(value, objective, rtol, "max_linear")
    bound = res.get("mip_dual_bound")
    bound = -float(bound) + const if bound is not None else np.nan
    return MilpResult(value, x, status, dt, enc.n_binaries, objective, bound)


def milp_max_linear(net, g, lo, hi, A=None, b=None, E=None, e=None, offset: float = 0.0,
                    time_limit: float = 60.0, rtol: float = RTOL,
                    bounds: str = "interval") -> MilpResult:
    """``max g @ f(x) + offset`` over ``lo <= x <= hi, A x <= b, E x == e``.

    The minimum is ``-milp_max_linear(net, -g, ...).value``.
    """
    lo, hi, A, b, E, e = _region(net, lo, hi, A, b, E, e)
    if np.any(lo > hi):
        return MilpResult(-INF, None, "infeasible", 0.0, 0)
    enc = _encode(net, lo, hi, A, b, E, e, bounds)
    return _max_linear_enc(net, enc, g, float(offset), time_limit, rtol)


def _combine(results: list[MilpResult], sense: str) -> MilpResult:
    """The best of several solves (``sense`` "max" or "min"); ``status`` is "optimal" only if
    every solve was optimal or infeasible."""
    total = sum(r.time for r in results)
    nb = max((r.n_binaries for r in results), default=0)
    with_x = [r for r in results if r.x is not None]
    bad = [r.status for r in results if r.status not in ("optimal", "infeasible")]
    if with_x:
        pick = max if sense == "max" else min
        best = pick(with_x, key=lambda r: r.value)
        status = bad[0] if bad else "optimal"
        bounds = [r.bound if r.x is not None else (-INF if sense == "max" else INF) for r in results]
        bound = max(bounds) if sense == "max" else min(bounds)
        return MilpResult(best.value, best.x, status, total, nb, best.objective, bound,
                          best.cls, best.feasible, best.disjunct, len(results))
    status = bad[0] if bad else "infeasible"
    value = (-INF if sense == "max" else INF) if status == "infeasible" else np.nan
    return MilpResult(value, None, status, total, nb, n_solves=len(results))


def milp_max_margin(net, label: int, lo, hi, A=None, b=None, E=None, e=None,
                    time_limit: float = 60.0, rtol: float = RTOL,
                    bounds: str = "interval") -> MilpResult:
    """``max_{x, i != label} f_i(x) - f_label(x)`` over the region; ``cls`` is the maximising i.

    One MILP per class ``i`` (``time_limit`` is per MILP).
    """
    if net.n_outputs < 2:
        raise ValueError("milp_max_margin needs at least two outputs")
    lo, hi, A, b, E, e = _region(net, lo, hi, A, b, E, e)
    if np.any(lo > hi):
        return MilpResult(-INF, None, "infeasible", 0.0, 0)
    enc = _encode(net, lo, hi, A, b, E, e, bounds)
    results = []
    for i in range(net.n_outputs):
        if i == label:
            continue
        g = np.zeros(net.n_outputs)
        g[i], g[label] = 1.0, -1.0
        r = _max_linear_enc(net, enc, g, 0.0, time_limit, rtol)
        r.cls = i
        results.append(r)
    return _combine(results, "max")


def milp_robust(net, label: int, lo, hi, A=None, b=None, E=None, e=None,
                time_limit: float = 60.0, rtol: float = RTOL, bounds: str = "interval") -> MilpResult:
    """Decide robustness: is there an x in the region where some class beats ``label``?

    The decision version of :func:`milp_max_margin`, as MIPVerify states it: per class ``i``
    (most promising first, by the logits at the box centre), a MILP that accepts only
    ``f_i - f_label > 0`` and stops at the first such point. ``status`` "optimal" means
    decided: ``value`` is that point's margin (> 0, recomputed by a forward pass, ``x`` the
    point, ``cls`` the class) or ``-inf`` (no class can win: robust). ``time_limit`` is for
    the whole call.
    """
    lo, hi, A, b, E, e = _region(net, lo, hi, A, b, E, e)
    t0 = _time.perf_counter()
    enc = _encode(net, lo, hi, A, b, E, e, bounds)
    y0 = net.forward((lo + hi) / 2)
    others = sorted((i for i in range(net.n_outputs) if i != label), key=lambda i: -y0[i])
    undecided = None
    for i in others:
        g = np.zeros(net.n_outputs)
        g[i], g[label] = 1.0, -1.0
        terms, const = enc.output_rows(net, g[None, :])
        c = -_objective(enc, terms)  # minimise -(margin - const)
        left = time_limit - (_time.perf_counter() - t0)
        if left <= 0:
            undecided = "time_limit"
            break
        status, v, _, _ = enc.model.solve_below(c, float(const[0]), left)
        if status == "found":
            x = np.clip(v[enc.x], enc.lo, enc.hi)
            _check_region(enc, x, rtol)
            value = float(g @ net.forward(x))
            _agree(value, float(const[0]) - float(c @ v), rtol, "robust")
            if value > 0:
                return MilpResult(value, x, "optimal", _time.perf_counter() - t0,
                                  enc.n_binaries, cls=i)
            undecided = "tie"  # within tolerances of 0: neither answer is proven
            continue
        if status != "infeasible":
            undecided = status
    dt = _time.perf_counter() - t0
    if undecided is not None:
        return MilpResult(np.nan, None, undecided, dt, enc.n_binaries)
    return MilpResult(-INF, None, "optimal", dt, enc.n_binaries)


def _norm_kind(norm) -> str:
    if norm in (1, "1", "l1", "L1"):
        return "l1"
    if norm in (np.inf, "inf", "linf", "Linf", "L_inf"):
        return "linf"
    raise ValueError(f"milp_counterfactual: norm must be 1 or inf, got {norm!r}")


def counterfactual_setup(name: str, net, x0, lo, hi, weights, immutable, target):
    """The checks every counterfactual reference shares: ``(w, c0, targets)`` (the weights,
    x0's class, the classes to reach), or None where ``immutable`` leaves an empty box. Fixes
    ``lo``/``hi`` (arrays, changed in place) to x0 on ``immutable``; raises ``ValueError``
    (prefixed by ``name``) on bad weights or target."""
    n = net.n_inputs
    w = np.ones(n) if weights is None else np.broadcast_to(np.asarray(weights, float), (n,)).copy()
    if not np.all(np.isfinite(w) & (w > 0)):
        raise ValueError(f"{name}: weights must be positive and finite, got {w}")
    imm = np.asarray(sorted({int(i) for i in immutable}), dtype=int)
    if imm.size:
        if np.any(x0[imm] < lo[imm]) or np.any(x0[imm] > hi[imm]):
            return None
        lo[imm] = hi[imm] = x0[imm]
    if np.any(lo > hi):
        return None
    y0 = net.forward(x0)
    binary = net.n_outputs == 1
    c0 = int(y0[0] >= 0.0) if binary else int(np.argmax(y0))
    if target is not None and (int(target) == c0 or not 0 <= int(target) < max(2, net.n_outputs)):
        raise ValueError(f"{name}: target {target} is x0's class or out of range")
    if binary:
        return w, c0, [1 - c0]
    if target is None:
        return w, c0, [j for j in range(net.n_outputs) if j != c0]
    return w, c0, [int(target)]


def milp_counterfactual(net, x0, norm, lo, hi, target: int | None = None, margin: float = 0.0,
                        A=None, b=None, immutable=(), E=None, e=None,
                        time_limit: float = 60.0, rtol: float = RTOL,
                        bounds: str = "interval", grid=None, one_hot=(),
                        presolve: bool = True, weights=None) -> MilpResult:
    """Minimal ``||weights * (x - x0)||_norm`` (norm 1 or inf) over the region with a changed
    class (``weights``: positive, ``(n_inputs,)``; ones by default).

    Binary nets (one output, class 1 iff ``f >= 0``): the counterfactual needs ``f <= -margin``
    if x0 has class 1, ``f >= margin`` if class 0. Multiclass (class = argmax): for target j,
    ``f_j >= f_k + margin`` for all ``k != j``; ``target=None`` takes the minimum over all
    ``j`` other than x0's class (one MILP each; ``time_limit`` is per MILP). Constraints are
    closed, so the value is the infimum. Coordinates in ``immutable`` are fixed to x0.
    ``cls`` is the target class reached; ``value`` is ``inf`` when no counterfactual exists.
    ``grid`` (``{j: step}``): ``x_j - x0_j`` is an integer multiple of ``step``; ``one_hot``
    (index lists): those inputs are 0 or 1 and sum to 1 (at most 1 if the list holds None).

    ``presolve=False``: HiGHS without presolve. With presolve and these 1e-9 tolerances, the
    HiGHS in SciPy 1.17.1 returned a worse point as "optimal" on 5 of 100 L1 rows of the
    credit 64-64 net (it prints ``HighsMipSolverData::transformNewIntegerFeasibleSolution
    tmpSolver.run();``); without presolve it found the optimum that polytrav's confirmed
    witness shows. ``benchmarks/explain.py`` re-solves so wherever the two disagree.
    """
    kind = _norm_kind(norm)
    x0 = np.asarray(x0, float).reshape(-1)
    lo, hi, A, b, E, e = _region(net, lo, hi, A, b, E, e)
    n = net.n_inputs
    setup = counterfactual_setup("milp_counterfactual", net, x0, lo, hi, weights, immutable, target)
    if setup is None:
        return MilpResult(INF, None, "infeasible", 0.0, 0)
    w, c0, targets = setup
    binary = net.n_outputs == 1
    enc = _encode(net, lo, hi, A, b, E, e, bounds)
    for j, step in (grid or {}).items():  # x_j = x0_j + step k
        k = enc.model.add_vars([np.ceil((lo[j] - x0[j]) / step - 1e-9)],
                               [np.floor((hi[j] - x0[j]) / step + 1e-9)], integer=True)
        enc.model.add_rows([(enc.x[[j]], [[1.0]]), (k, [[-step]])], [x0[j]], [x0[j]])
    for group in one_hot:  # x_g = z_g in {0, 1}, sum z = 1 (None in the group: <= 1)
        dropped = None in list(group)
        group = [j for j in group if j is not None]
        z = enc.model.add_vars(np.zeros(len(group)), np.ones(len(group)), integer=True)
        enc.model.add_rows([(enc.x[group], np.eye(len(group))), (z, -np.eye(len(group)))],
                           np.zeros(len(group)), np.zeros(len(group)))
        enc.model.add_rows([(z, np.ones((1, len(group))))], [0.0 if dropped else 1.0], [1.0])
    reach = np.maximum(np.abs(lo - x0), np.abs(hi - x0))
    I = np.eye(n)
    if kind == "l1":  # s >= |x - x0|, cost w @ s
        s = enc.model.add_vars(np.zeros(n), reach)
        enc.model.add_rows([(s, I), (enc.x, -I)], -x0, np.full(n, INF))
        enc.model.add_rows([(s, I), (enc.x, I)], x0, np.full(n, INF))
        cost = [(s, w)]
    else:  # t >= w_j |x_j - x0_j|
        t = enc.model.add_vars([0.0], [(w * reach).max(initial=0.0)])
        ones, Iw = np.ones((n, 1)), np.diag(w)
        enc.model.add_rows([(t, ones), (enc.x, -Iw)], -w * x0, np.full(n, INF))
        enc.model.add_rows([(t, ones), (enc.x, Iw)], w * x0, np.full(n, INF))
        cost = [(t, [1.0])]
    c = _objective(enc, cost)
    base_m = enc.model.m, len(enc.model.blocks), len(enc.model.rlo)

    results = []
    for j in targets:
        # drop the previous target's rows
        enc.model.m = base_m[0]
        del enc.model.blocks[base_m[1]:]
        del enc.model.rlo[base_m[2]:], enc.model.rhi[base_m[2]:]
        if binary:
            G = np.array([[1.0 if c0 == 0 else -1.0]])  # G f >= margin
        else:
            others = [k for k in range(net.n_outputs) if k != j]
            G = np.zeros((len(others), net.n_outputs))
            G[np.arange(len(others)), j] = 1.0
            G[np.arange(len(others)), others] = -1.0
        terms, const = enc.output_rows(net, G)
        enc.model.add_rows(terms, margin - const, np.full(G.shape[0], INF))
        res, dt = enc.model.solve(c, time_limit, presolve)
        status = _status(res)
        if res.x is None:
            results.append(MilpResult(INF if status == "infeasible" else np.nan, None, status,
                                      dt, enc.n_binaries, cls=j))
            continue
        x = _x_of(enc, res)
        _check_region(enc, x, rtol)
        dev = w * np.abs(x - x0)
        dist = float(dev.sum() if kind == "l1" else dev.max(initial=0.0))
        objective = float(res.fun)
        _agree(dist, objective, rtol, "counterfactual")
        y = net.forward(x)
        gap = margin - G @ y
        if np.any(gap > rtol * max(1.0, float(np.abs(y).max()), abs(margin))):
            raise MilpCheckError(
                f"milp counterfactual: forward pass misses the class-change constraint by "
                f"{gap.max():.3g} at the returned x"
            )
        bound = res.get("mip_dual_bound")
        results.append(MilpResult(dist, x, status, dt, enc.n_binaries, objective,
                                  float(bound) if bound is not None else np.nan, cls=j))
    return _combine(results, "min")


def milp_linear_dnf_feasible(net, disjuncts, lo, hi, A=None, b=None, E=None, e=None,
                             time_limit: float = 60.0, rtol: float = RTOL,
                             tol: float = 1e-9, bounds: str = "interval") -> MilpResult:
    """Is there an x in the region with ``C @ f(x) <= d`` for some ``(C, d)`` in ``disjuncts``?

    Per disjunct, maximise t subject to ``C f(x) + t <= d``; ``value`` is the best t* (the
    largest smallest slack, recomputed at ``x``), ``feasible`` is ``value >= -tol``, ``x`` the
    witness and ``disjunct`` its index. A disjunct with no rows has slack ``inf``.
    """
    lo, hi, A, b, E, e = _region(net, lo, hi, A, b, E, e)
    if np.any(lo > hi):
        return MilpResult(-INF, None, "infeasible", 0.0, 0, feasible=False)
    enc = _encode(net, lo, hi, A, b, E, e, bounds)
    tblock = len(enc.model.ub)
    tvar = enc.model.add_vars([-INF], [INF])
    base_m = enc.model.m, len(enc.model.blocks), len(enc.model.rlo)
    results = []
    for k, (C, d) in enumerate(disjuncts):
        C = np.asarray(C, float).reshape(-1, net.n_outputs)
        d = np.asarray(d, float).reshape(-1)
        enc.model.m = base_m[0]
        del enc.model.blocks[base_m[1]:]
        del enc.model.rlo[base_m[2]:], enc.model.rhi[base_m[2]:]
        empty = C.shape[0] == 0
        enc.model.ub[tblock] = np.array([0.0 if empty else INF])
        terms, const = enc.output_rows(net, C)
        enc.model.add_rows(terms + [(tvar, np.ones((C.shape[0], 1)))],
                           np.full(C.shape[0], -INF), d - const)
        c = _objective(enc, [(tvar, [-1.0])])
        res, dt = enc.model.solve(c, time_limit)
        status = _status(res)
        if res.x is None:
            value = -INF if status == "infeasible" else np.nan
            results.append(MilpResult(value, None, status, dt, enc.n_binaries, disjunct=k))
            continue
        x = _x_of(enc, res)
        _check_region(enc, x, rtol)
        objective = -float(res.fun)
        if empty:
            value = INF
        else:
            value = float(np.min(d - C @ net.forward(x)))
            _agree(value, objective, rtol, "dnf slack")
        bound = res.get("mip_dual_bound")
        bound = -float(bound) if bound is not None and not empty else (INF if empty else np.nan)
        results.append(MilpResult(value, x, status, dt, enc.n_binaries, objective, bound,
                                  disjunct=k))
    out = _combine(results, "max")
    out.feasible = bool(out.x is not None and out.value >= -tol)
    return out


def joint_by_hand(f, g):
    """``x -> [f(x); g(x)]`` of two networks of equal depth, written out here (block-diagonal
    layers, the first reading the shared input): independent of polytrav's ``Network.stack``,
    for the MILPs and brute-force checks of two-model comparisons."""
    from polytrav.model.network import Network

    Ws, bs = [], []
    for k, (Wf, Wg) in enumerate(zip(f.weights, g.weights)):
        W = np.vstack([Wf, Wg]) if k == 0 else np.block(
            [[Wf, np.zeros((Wf.shape[0], Wg.shape[1]))],
             [np.zeros((Wg.shape[0], Wf.shape[1])), Wg]])
        Ws.append(W)
        bs.append(np.concatenate([f.biases[k], g.biases[k]]))
    return Network.from_arrays(Ws, bs)
