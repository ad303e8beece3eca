"""Clarabel through its Python API: the default QP backend, also serving LPs.

Clarabel (Goulart & Chen, "Clarabel: an interior-point solver for conic programs with
quadratic objectives", 2024) solves ``min 0.5 x·P x + q·x`` s.t. ``A x + s = b``, ``s`` in a
product of cones, with a homogeneous-embedding interior-point method: its "solved" meets the
stated tolerances and its infeasibility answers are certificates, so it certifies optimality
(unlike the first-order OSQP and SCS). Forms: ``lp`` and ``qp``. No warm start. The array
entry points stack the equality rows (zero cone), then the inequality rows and the finite
column bounds (non-negative cone).

Quirks: ``AlmostSolved`` (tolerances reduced) maps to :attr:`Status.OPTIMAL_INACCURATE`, the
"almost infeasible" statuses to :attr:`Status.ERROR`, so callers retry them elsewhere.

``DEFAULT_OPTIONS`` (the only native defaults polytrav overrides): ``verbose=False``,
``tol_gap_abs=tol_gap_rel=tol_feas=1e-9``, ``time_limit=60`` seconds.
"""
from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from polytrav.extend import (ConfigError, SolveResult, SolverBackend, SolverError, Status,
                             LP_FEASIBILITY_TOL)

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

        q = np.asarray(q, float)
        n = q.size
        blocks, rhs, cones = [], [], []
        if A_eq is not None and np.size(b_eq):
            blocks.append(_csc(A_eq, n))
            rhs.append(np.asarray(b_eq, float))
            cones.append(clarabel.ZeroConeT(len(rhs[-1])))
        ineq, ineq_rhs = [], []
        if A_ub is not None and np.size(b_ub):
            ineq.append(_csc(A_ub, n))
            ineq_rhs.append(np.asarray(b_ub, float))
        if bounds is not None:
            lo, hi = (np.broadcast_to(np.asarray(v, float), (n,)) for v in bounds)
            if np.any(lo > hi):
                return SolveResult(Status.INFEASIBLE, solver=self.name,
                                   message="a column's lower bound exceeds its upper bound")
            for sign, v in ((1.0, hi), (-1.0, -lo)):
                idx = np.flatnonzero(np.isfinite(v))
                if idx.size:
                    ineq.append(sp.csc_matrix((np.full(idx.size, sign), (np.arange(idx.size), idx)),
                                              shape=(idx.size, n)))
                    ineq_rhs.append(v[idx])
        if ineq:
            blocks += ineq
            rhs.append(np.concatenate(ineq_rhs))
            cones.append(clarabel.NonnegativeConeT(len(rhs[-1])))
        A = sp.vstack(blocks, format="csc") if blocks else sp.csc_matrix((0, n))
        b = np.concatenate(rhs) if rhs else np.zeros(0)
        P = sp.csc_matrix((n, n)) if P is None else sp.triu(sp.csc_matrix(P), format="csc")
        settings = clarabel.DefaultSettings()
        for key, value in {**self.DEFAULT_OPTIONS, **self.options}.items():
            if not hasattr(settings, key):
                raise ConfigError(f"solver {self.name!r} rejected option {key}={value!r}: "
                                  "Clarabel has no such setting")
            setattr(settings, key, value)
        t0 = time.perf_counter()
        try:
            sol = clarabel.DefaultSolver(P, q, A, b, cones, settings).solve()
        except BaseException as exc:  # the Rust core panics as PanicException
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            raise SolverError(f"solver {self.name!r} crashed: {exc}") from exc
        status = self.STATUS_MAP.get(str(sol.status), Status.ERROR)
        x = np.asarray(sol.x) if status in (Status.OPTIMAL, Status.OPTIMAL_INACCURATE) else None
        return SolveResult(status, objective=float(sol.obj_val) if x is not None else None, x=x,
                           duals=None, solver=self.name, solve_time=time.perf_counter() - t0,
                           iterations=int(sol.iterations), message=str(sol.status))


def _csc(M, n: int) -> sp.csc_matrix:
    """A dense or sparse constraint block as CSC with ``n`` columns."""
    if sp.issparse(M):
        return sp.csc_matrix(M, dtype=float)
    return sp.csc_matrix(np.asarray(M, float).reshape(-1, n))
