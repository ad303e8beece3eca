"""Backends routed through cvxpy, one per solver: ``cvxpy:CLARABEL``, ``cvxpy:ECOS``, ...

cvxpy (Diamond & Boyd, "CVXPY: a Python-embedded modeling language for convex optimization",
JMLR 2016) compiles a problem and hands it to an installed solver. Each solve here builds a
fresh ``cvxpy.Problem`` from the arrays (variables ``x``; constraints ``A_ub x <= b_ub``,
``A_eq x == b_eq`` and the finite column bounds), so there is no warm start, and no cached
solver state to go stale (cvxpy's own OSQP re-solve after a parameter change can keep stale
bounds: ``shared/data/solver_traps``). The quadratic term is ``0.5 quad_form(x, psd_wrap(P))``
of the symmetrised ``P`` (``psd_wrap`` skips cvxpy's eigenvalue check, which rejects PSD
matrices with round-off negative eigenvalues). One class per solver comes from
:func:`cvxpy_backend_class`; forms by solver (:data:`SOLVERS`): CLARABEL, ECOS and SCS serve
``lp``, ``qp`` and ``socp``; OSQP ``lp`` and ``qp``; HIGHS ``lp`` only (HiGHS' QP solver can
hang on tiny QPs). ``duals`` are laid out as in :mod:`polytrav.solvers.osqp`:
``[y_ub, y_eq, y_box]`` with ``P x + q + A_ub' y_ub + A_eq' y_eq + y_box = 0``.

Quirks: cvxpy's "inaccurate" infeasible and unbounded statuses are not proofs and map to
:attr:`Status.ERROR` (``extras["inaccurate"] = True``), so callers retry them elsewhere;
``user_limit`` maps to :attr:`Status.LIMIT` (no point returned); ``cvxpy.error.SolverError``
becomes :attr:`Status.ERROR` with its message. SCS is a first-order method: its LP solutions
are accurate to about its ``eps`` and it may report ``optimal_inaccurate``.

``DEFAULT_OPTIONS`` (per solver; the only native defaults polytrav overrides): CLARABEL
``tol_gap_abs=tol_gap_rel=tol_feas=1e-9``, ``time_limit=60``; ECOS
``abstol=reltol=feastol=1e-9`` (ECOS has no time limit; its ``max_iters``, 100 by default,
bounds a solve); SCS ``eps_abs=eps_rel=1e-9``, ``max_iters=100000``,
``time_limit_secs=60``; OSQP ``eps_abs=eps_rel=1e-9``, ``max_iter=100000``,
``polishing=True``, ``time_limit=60`` (and for LPs ``LP_OPTIONS`` ``adaptive_rho=False``,
``alpha=1.0``, as in :mod:`polytrav.solvers.osqp`); HIGHS ``primal_feasibility_tolerance=1e-9``,
``dual_feasibility_tolerance=1e-9``, ``time_limit=60``. Each solve's time limit
(:data:`TIME_LIMIT_OPTION`) is never more than the run's deadline leaves
(:func:`~polytrav.solve.deadline.call_limit`); ECOS, which has none, is only not started past
the deadline, as no solver is.
"""
from __future__ import annotations

import time
import warnings
from typing import ClassVar

import numpy as np

from polytrav.extend import (ConfigError, SolveResult, SolverBackend, SolverError, Status,
                             LP_FEASIBILITY_TOL, SOLUTION_PRESENT, call_limit, refused)

__all__ = [
    "SOLVERS",
    "CvxpyBackend",
    "cvxpy_backend_class",
    "CvxpyClarabelBackend",
    "CvxpyEcosBackend",
    "CvxpyScsBackend",
    "CvxpyOsqpBackend",
    "CvxpyHighsBackend",
    "CVXPY_BACKENDS",
]

#: cvxpy solver name -> (native module, forms, extra, DEFAULT_OPTIONS), in preference order.
SOLVERS: dict[str, tuple[str, frozenset[str], str | None, dict]] = {
    "CLARABEL": ("clarabel", frozenset({"lp", "qp", "socp"}), None, {
        "tol_gap_abs": LP_FEASIBILITY_TOL, "tol_gap_rel": LP_FEASIBILITY_TOL,
        "tol_feas": LP_FEASIBILITY_TOL, "time_limit": 60.0,
    }),
    "ECOS": ("ecos", frozenset({"lp", "qp", "socp"}), "polytrav[ecos]", {
        "abstol": LP_FEASIBILITY_TOL, "reltol": LP_FEASIBILITY_TOL, "feastol": LP_FEASIBILITY_TOL,
    }),
    "SCS": ("scs", frozenset({"lp", "qp", "socp"}), None, {
        "eps_abs": LP_FEASIBILITY_TOL, "eps_rel": LP_FEASIBILITY_TOL, "max_iters": 100_000,
        "time_limit_secs": 60.0,
    }),
    "OSQP": ("osqp", frozenset({"lp", "qp"}), None, {
        "eps_abs": LP_FEASIBILITY_TOL, "eps_rel": LP_FEASIBILITY_TOL, "max_iter": 100_000,
        "polishing": True,
        "time_limit": 60.0,
    }),
    "HIGHS": ("highspy", frozenset({"lp"}), None, {
        "primal_feasibility_tolerance": LP_FEASIBILITY_TOL,
        "dual_feasibility_tolerance": LP_FEASIBILITY_TOL,
        "time_limit": 60.0,
    }),
}

#: The option that bounds a solve's seconds, per solver (cvxpy passes it to the solver as
#: is; ECOS has none).
TIME_LIMIT_OPTION: dict[str, str | None] = {"CLARABEL": "time_limit", "ECOS": None,
                                            "SCS": "time_limit_secs", "OSQP": "time_limit",
                                            "HIGHS": "time_limit"}

#: Options added for LPs, per solver (see :mod:`polytrav.solvers.osqp` for OSQP's).
SOLVER_LP_OPTIONS: dict[str, dict] = {"OSQP": {"adaptive_rho": False, "alpha": 1.0}}


class CvxpyBackend(SolverBackend):
    """Base of the ``cvxpy:<SOLVER>`` backends; :func:`cvxpy_backend_class` makes one per solver."""

    #: cvxpy's name of the solver, e.g. ``"CLARABEL"``.
    solver: ClassVar[str] = ""
    warm_start = False
    solves_cvxpy = True
    #: cvxpy status -> :class:`Status`; unmapped statuses become ERROR.
    STATUS_MAP = {
        "optimal": Status.OPTIMAL,
        "optimal_inaccurate": Status.OPTIMAL_INACCURATE,
        "infeasible": Status.INFEASIBLE,
        "infeasible_inaccurate": Status.ERROR,
        "unbounded": Status.UNBOUNDED,
        "unbounded_inaccurate": Status.ERROR,
        "infeasible_or_unbounded": Status.INFEASIBLE_OR_UNBOUNDED,
        "user_limit": Status.LIMIT,
        "solver_error": Status.ERROR,
    }
    DEFAULT_OPTIONS: ClassVar[dict] = {}
    #: Added to ``DEFAULT_OPTIONS`` for LPs.
    LP_OPTIONS: ClassVar[dict] = {}

    def solve_lp(self, c, A_ub, b_ub, A_eq=None, b_eq=None, bounds=None) -> SolveResult:
        return self._solve_arrays(None, c, A_ub, b_ub, A_eq, b_eq, bounds, "lp")

    def solve_qp(self, P, q, A_ub=None, b_ub=None, A_eq=None, b_eq=None,
                 bounds=None) -> SolveResult:
        return self._solve_arrays(P, q, A_ub, b_ub, A_eq, b_eq, bounds, "qp")

    def _solve_arrays(self, P, q, A_ub, b_ub, A_eq, b_eq, bounds, form: str) -> SolveResult:
        import cvxpy as cp

        t0 = time.perf_counter()
        q = np.asarray(q, float).reshape(-1)
        n = q.shape[0]
        x = cp.Variable(n)
        objective = q @ x
        P = _symmetric(P)
        if P is not None:
            objective = 0.5 * cp.quad_form(x, cp.psd_wrap(P)) + objective
        groups = []  # (kind, constraint, rows/columns)
        if _has_rows(A_ub):
            groups.append(("ub", _matmul(A_ub, x) <= np.asarray(b_ub, float).reshape(-1), None))
        if _has_rows(A_eq):
            groups.append(("eq", _matmul(A_eq, x) == np.asarray(b_eq, float).reshape(-1), None))
        if bounds is not None:
            lo = np.broadcast_to(np.asarray(bounds[0], float), (n,))
            hi = np.broadcast_to(np.asarray(bounds[1], float), (n,))
            if (lo > hi).any():
                j = int(np.flatnonzero(lo > hi)[0])
                return SolveResult(Status.INFEASIBLE, objective=None, x=None, duals=None,
                                   solver=self.name, solve_time=time.perf_counter() - t0,
                                   iterations=0,
                                   message=f"column {j} has lower bound {lo[j]:.6g} > upper "
                                           f"bound {hi[j]:.6g}",
                                   extras={"cvxpy_status": None, "inaccurate": False})
            for kind, side, vals in (("lo", 1, lo), ("hi", -1, hi)):
                idx = np.flatnonzero(np.isfinite(vals))
                if idx.size:
                    con = x[idx] >= vals[idx] if side == 1 else x[idx] <= vals[idx]
                    groups.append((kind, con, idx))
        prob = cp.Problem(cp.Minimize(objective), [g[1] for g in groups])
        status, message = self.solve_problem(prob, form)
        if message:
            return SolveResult(status, objective=None, x=None, duals=None, solver=self.name,
                               solve_time=time.perf_counter() - t0, iterations=None,
                               message=message, extras={"cvxpy_status": None, "inaccurate": False})
        x_val = obj = duals = None
        if status in SOLUTION_PRESENT and x.value is not None:
            x_val = np.array(x.value, dtype=float).reshape(-1)
            obj = float(prob.value)
            duals = self._duals(groups, n)
        elif status in SOLUTION_PRESENT:  # a status without a point: not usable
            status = Status.ERROR
        stats = prob.solver_stats
        iters = getattr(stats, "num_iters", None)
        extras = {"cvxpy_status": prob.status, "inaccurate": "inaccurate" in str(prob.status)}
        return SolveResult(status, objective=obj, x=x_val, duals=duals, solver=self.name,
                           solve_time=time.perf_counter() - t0,
                           iterations=None if iters is None else int(iters),
                           message=str(prob.status), extras=extras)

    def solve_problem(self, prob, form: str) -> tuple[Status, str]:
        """Solve the cvxpy problem ``prob`` (of ``form``) in place with this backend's options.

        Returns its status and, when cvxpy's solver failed, a message (else ``""``); the
        values are in ``prob``. An option the solver rejects raises :class:`ConfigError`; a
        crash of the solver raises :class:`SolverError`. Subproblems of analyses
        (:class:`polytrav.solve.subproblem.Subproblem`) are solved through this too.
        """
        import cvxpy as cp

        lp = self.LP_OPTIONS if form == "lp" else {}
        options = {**self.DEFAULT_OPTIONS, **lp, **self.options}
        key = TIME_LIMIT_OPTION.get(self.solver)
        limit = call_limit(options.get(key) if key else None)
        if limit == 0.0:
            return Status.LIMIT, refused(self.name).message
        if key and limit is not None:
            options[key] = limit
        try:
            with warnings.catch_warnings():  # the status says it
                warnings.filterwarnings("ignore", message="Solution may be inaccurate")
                prob.solve(solver=self.solver, **options)
        except cp.error.SolverError as exc:
            self.raise_rejected_option(exc)
            return Status.ERROR, f"cvxpy: {exc}"
        except (TypeError, ValueError, KeyError) as exc:
            self.raise_rejected_option(exc)
            raise SolverError(f"solver {self.name!r} crashed: {exc!r}") from exc
        return self.STATUS_MAP.get(prob.status, Status.ERROR), ""

    @staticmethod
    def _duals(groups, n: int) -> np.ndarray | None:
        """``[y_ub, y_eq, y_box]`` from the constraints' dual values (None if any is missing)."""
        parts = {"ub": np.zeros(0), "eq": np.zeros(0)}
        box = np.zeros(n)
        for kind, con, idx in groups:
            y = con.dual_value
            if y is None:
                return None
            y = np.asarray(y, float).reshape(-1)
            if kind in parts:
                parts[kind] = y
            elif kind == "lo":
                box[idx] -= y
            else:
                box[idx] += y
        return np.concatenate([parts["ub"], parts["eq"], box])

    def raise_rejected_option(self, exc: Exception) -> None:
        """Raise :class:`ConfigError` if one of the user's options alone breaks a tiny solve."""
        import cvxpy as cp

        for key, value in self.options.items():
            y = cp.Variable(1)
            probe = cp.Problem(cp.Minimize(cp.sum(y)), [y >= 0, y <= 1])
            try:
                probe.solve(solver=self.solver, **{**self.DEFAULT_OPTIONS, key: value})
            except (cp.error.SolverError, TypeError, ValueError, KeyError) as probe_exc:
                raise ConfigError(
                    f"solver {self.name!r} rejected option {key}={value!r} ({probe_exc}); "
                    f"see cvxpy's solver options for {self.solver}"
                ) from exc


def cvxpy_backend_class(solver: str) -> type[CvxpyBackend]:
    """The backend class ``cvxpy:<solver>`` for one entry of :data:`SOLVERS`."""
    if solver not in SOLVERS:
        raise ConfigError(f"cvxpy_backend_class: unknown solver {solver!r}; known: {list(SOLVERS)}")
    module, forms, extra, defaults = SOLVERS[solver]
    cls_name = f"Cvxpy{solver.title()}Backend"
    return type(cls_name, (CvxpyBackend,), {
        "__module__": __name__,
        "__qualname__": cls_name,
        "__doc__": f"LPs{'/QPs' if 'qp' in forms else ''} through cvxpy with {solver}.",
        "name": f"cvxpy:{solver}",
        "certifies_optimality": solver not in ("OSQP", "SCS"),
        "solver": solver,
        "forms": forms,
        "required_modules": ("cvxpy", module),
        "extra": extra,
        "DEFAULT_OPTIONS": dict(defaults),
        "LP_OPTIONS": dict(SOLVER_LP_OPTIONS.get(solver, {})),
    })


CvxpyClarabelBackend = cvxpy_backend_class("CLARABEL")
CvxpyEcosBackend = cvxpy_backend_class("ECOS")
CvxpyScsBackend = cvxpy_backend_class("SCS")
CvxpyOsqpBackend = cvxpy_backend_class("OSQP")
CvxpyHighsBackend = cvxpy_backend_class("HIGHS")

#: Every ``cvxpy:<SOLVER>`` class, in the order of :data:`SOLVERS`.
CVXPY_BACKENDS: tuple[type[CvxpyBackend], ...] = (
    CvxpyClarabelBackend, CvxpyEcosBackend, CvxpyScsBackend, CvxpyOsqpBackend, CvxpyHighsBackend,
)


def _has_rows(A) -> bool:
    if A is None:
        return False
    shape = A.shape if hasattr(A, "shape") else np.shape(A)
    return len(shape) == 2 and shape[0] > 0


def _matmul(A, x):
    import scipy.sparse as sp

    return (sp.csr_matrix(A, dtype=float) if sp.issparse(A) else np.asarray(A, float)) @ x


def _symmetric(P):
    """``(P + P') / 2`` (dense or CSC), or None for a missing or all-zero ``P``."""
    import scipy.sparse as sp

    if P is None:
        return None
    if sp.issparse(P):
        P = sp.csc_matrix(P, dtype=float)
        P = ((P + P.T) * 0.5).tocsc()
        P.eliminate_zeros()
        return P if P.nnz else None
    P = np.asarray(P, float)
    return (P + P.T) / 2 if np.any(P) else None
