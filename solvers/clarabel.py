"""Clarabel through its Python API: the default QP backend, also serving LPs.

Clarabel (Goulart & Chen, "Clarabel: an interior-point solver for conic programs with
quadratic objectives", 2024) solves ``min 0.5 x·P x + q·x`` s.t. ``A x + s = b``, ``s`` in a
product of cones, with a homogeneous-embedding interior-point method: its "solved" meets the
stated tolerances and its infeasibility answers are certificates, so it certifies optimality
(unlike the first-order OSQP and SCS). Forms: ``lp`` and ``qp``. No warm start.
``duals`` (of an optimum) are laid out as OSQP's (:mod:`polytrav.solvers.osqp`); a column
with equal bounds is an equality row (two opposite inequalities leave no interior); for
"(almost) primal infeasible", ``extras["farkas"]`` holds Clarabel's certificate in the same
layout, for the caller to check (it is a proof only once checked). The array
entry points stack the equality rows (zero cone), then the inequality rows and the finite
column bounds (non-negative cone).

Quirks: ``AlmostSolved`` (tolerances reduced) maps to :attr:`Status.OPTIMAL_INACCURATE`, the
"almost infeasible" statuses to :attr:`Status.ERROR`, so callers retry them elsewhere.

``DEFAULT_OPTIONS`` (the only native defaults polytrav overrides): ``verbose=False``,
``tol_gap_abs=tol_gap_rel=tol_feas=1e-9``, ``time_limit=60`` seconds, never more than the
run's deadline leaves (:func:`~polytrav.solve.deadline.call_limit`; a solve with nothing left
is not started).
"""
from __future__ import annotations

import time

import numpy as np

from polytrav.extend import (ConfigError, is_sparse, SolveResult, SolverBackend, SolverError, Status,
                             LP_FEASIBILITY_TOL, call_limit, refused)

__all__ = ["ClarabelBackend"]


class ClarabelBackend(SolverBackend):
    """LPs and QPs with the ``clarabel`` package, one solver object per solve."""

    name = "clarabel"
    forms = frozenset({"qp", "lp"})
    required_modules = ("clarabel",)
    warm_start = False
    extra = None
    certifies_optimality = True
    #: Clarabel's ``SolverStatus`` names; others map to ERROR.
    STATUS_MAP = {
        "Solved": Status.OPTIMAL,
        "AlmostSolved": Status.OPTIMAL_INACCURATE,
        "PrimalInfeasible": Status.INFEASIBLE,
        "DualInfeasible": Status.UNBOUNDED,
        "MaxIterations": Status.LIMIT,
        "MaxTime": Status.LIMIT,
    }
    DEFAULT_OPTIONS = {"verbose": False, "tol_gap_abs": LP_FEASIBILITY_TOL,
                       "tol_gap_rel": LP_FEASIBILITY_TOL, "tol_feas": LP_FEASIBILITY_TOL,
                       "time_limit": 60.0}

    def solve_lp(self, c, A_ub, b_ub, A_eq=None, b_eq=None, bounds=None) -> SolveResult:
        return self.solve_qp(None, c, A_ub, b_ub, A_eq, b_eq, bounds)

    def solve_qp(self, P, q, A_ub=None, b_ub=None, A_eq=None, b_eq=None,
                 bounds=None) -> SolveResult:
        import clarabel
        import scipy.sparse as sp  # Clarabel takes CSC matrices (loaded by its first solve)

        options = {**self.DEFAULT_OPTIONS, **self.options}
        limit = call_limit(options.get("time_limit"))
        if limit == 0.0:
            return refused(self.name)
        if limit is not None:
            options["time_limit"] = limit
        q = np.asarray(q, float)
        n = q.size
        blocks, rhs, cones = [], [], []
        layout = {"eq": 0, "ub": 0, "box": [], "fixed": np.zeros(0, int)}  # for the duals
        fixed = np.zeros(0, int)
        dense = not (is_sparse(A_ub) or is_sparse(A_eq))  # then one conversion at the end
        if bounds is not None:
            lo, hi = (np.broadcast_to(np.asarray(v, float), (n,)) for v in bounds)
            if np.any(lo > hi):
                return SolveResult(Status.INFEASIBLE, solver=self.name,
                                   message="a column's lower bound exceeds its upper bound")
            fixed = np.flatnonzero(lo == hi)  # equality rows: no interior to two inequalities
            layout["fixed"] = fixed
        if A_eq is not None and np.size(b_eq):
            blocks.append(_block(A_eq, n))
            rhs.append(np.asarray(b_eq, float))
            layout["eq"] = len(rhs[-1])
        if layout["eq"] or fixed.size:
            if fixed.size:
                blocks.append(_unit_rows(fixed, 1.0, n, dense))
                rhs.append(lo[fixed])
            cones.append(clarabel.ZeroConeT(layout["eq"] + fixed.size))
        n_ineq = 0
        if A_ub is not None and np.size(b_ub):
            blocks.append(_block(A_ub, n))
            rhs.append(np.asarray(b_ub, float))
            layout["ub"] = n_ineq = len(rhs[-1])
        if bounds is not None:
            for sign, v in ((1.0, hi), (-1.0, -lo)):
                idx = np.flatnonzero(np.isfinite(v) & (lo != hi))
                if idx.size:
                    blocks.append(_unit_rows(idx, sign, n, dense))
                    rhs.append(v[idx])
                    layout["box"].append((sign, idx))
                    n_ineq += idx.size
        if n_ineq:
            cones.append(clarabel.NonnegativeConeT(n_ineq))
        if dense:
            A = sp.csc_matrix(np.vstack(blocks) if blocks else np.zeros((0, n)))
        else:
            A = sp.vstack(blocks, format="csc")
        b = np.concatenate(rhs) if rhs else np.zeros(0)
        P = sp.csc_matrix((n, n)) if P is None else _upper(P)
        settings = clarabel.DefaultSettings()
        for key, value in options.items():
            if not hasattr(settings, key):
                raise ConfigError(f"solver {self.name!r} rejected option {key}={value!r}: "
                                  "Clarabel has no such setting")
            setattr(settings, key, value)
        t0 = time.perf_counter()
        try:
            sol = self.new_solver(P, q, A, b, cones, settings).solve()
        except BaseException as exc:  # the Rust core panics as PanicException
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            raise SolverError(f"solver {self.name!r} crashed: {exc}") from exc
        status = self.STATUS_MAP.get(str(sol.status), Status.ERROR)
        x = np.asarray(sol.x) if status in (Status.OPTIMAL, Status.OPTIMAL_INACCURATE) else None
        y = _duals(np.asarray(sol.z), layout, n)
        return SolveResult(status, objective=float(sol.obj_val) if x is not None else None, x=x,
                           duals=y if x is not None else None, solver=self.name,
                           solve_time=time.perf_counter() - t0, iterations=int(sol.iterations),
                           message=str(sol.status),
                           extras={"farkas": y} if str(sol.status).endswith("PrimalInfeasible")
                           else {})

    def new_solver(self, P, q, A, b, cones, settings):
        """Clarabel's solver of one problem, its ``settings`` final (time limit included)."""
        import clarabel

        return clarabel.DefaultSolver(P, q, A, b, cones, settings)


def _duals(z: np.ndarray, layout: dict, n: int) -> np.ndarray:
    """Clarabel's ``z`` (equality rows and fixed columns, then inequality rows and column
    bounds) in OSQP's layout: ``[y_ub, y_eq, y_box]`` with ``P x + q + A_ub' y_ub + A_eq'
    y_eq + y_box = 0``."""
    n_eq, n_ub, fixed = layout["eq"], layout["ub"], layout["fixed"]
    box = np.zeros(n)
    box[fixed] = z[n_eq:n_eq + fixed.size]
    at = n_eq + fixed.size
    y_ub = z[at:at + n_ub]
    at += n_ub
    for sign, idx in layout["box"]:
        box[idx] += sign * z[at:at + idx.size]
        at += idx.size
    return np.concatenate([y_ub, z[:n_eq], box])


def _unit_rows(idx: np.ndarray, sign: float, n: int, dense: bool):
    """Rows ``sign * e_j`` for ``j`` in ``idx``: dense or CSC."""
    if dense:
        rows = np.zeros((idx.size, n))
        rows[np.arange(idx.size), idx] = sign
        return rows
    import scipy.sparse as sp

    return sp.csc_matrix((np.full(idx.size, sign), (np.arange(idx.size), idx)),
                         shape=(idx.size, n))


def _upper(P):
    """The upper triangle of ``P`` as CSC (a diagonal CSC matrix as it is: ``triu`` costs
    more than a small solve)."""
    import scipy.sparse as sp

    if sp.issparse(P) and P.format == "csc" and P.nnz == np.count_nonzero(P.diagonal()):
        return P
    return sp.triu(sp.csc_matrix(P), format="csc")


def _block(M, n: int):
    """A constraint block with ``n`` columns: CSC if sparse, else a dense float array."""
    if is_sparse(M):
        return M.tocsc().astype(float)
    return np.asarray(M, float).reshape(-1, n)
