"""OSQP through its Python API: the default QP backend, also serving LPs.

OSQP (Stellato, Banjac, Goulart, Bemporad & Boyd, "OSQP: an operator splitting solver for
quadratic programs", Math. Prog. Comp. 2020) solves ``min 0.5 x·P x + q·x`` s.t.
``l <= A x <= u`` with ADMM and, with polishing on, refines the active set it finds into a
high-accuracy solution. Forms: ``qp`` and ``lp`` (an LP is a QP with ``P = 0``). Warm start:
:meth:`OsqpBackend.qp_session` keeps one OSQP object and re-solves it from its last iterate
after ``q``, ``l`` or ``u`` change. The array entry points stack inequality rows, equality rows
and (when ``bounds`` is given) one identity row per column into one ``A``; the result's
``duals`` are OSQP's ``y`` in that row order (``len(b_ub) + len(b_eq) + n``, the bound part
zero without ``bounds``), so that ``P x + q + A_ub' y_ub + A_eq' y_eq + y_box = 0``.

Quirks: infeasibility comes as certificates: "primal infeasible" is reported as
:attr:`Status.INFEASIBLE`, "dual infeasible" as :attr:`Status.UNBOUNDED`; their "inaccurate"
variants are not proofs and map to :attr:`Status.ERROR` (``extras["inaccurate"] = True``), so
callers retry them elsewhere. Rows with ``l > u``
(e.g. ``lo > hi``) are reported infeasible without calling OSQP, which rejects such data.
OSQP's ``update()`` validates each bound vector against the *other, old* one: updating only
``l`` to values above the old ``u`` prints "ERROR in osqp_update_data_vec", raises nothing and
solves with the stale bounds (``shared/data/solver_traps``); :class:`OsqpSession` therefore
always passes ``l`` and ``u`` together. A non-convex ``P`` fails the KKT factorisation and is
reported as :attr:`Status.ERROR`. The C library prints a few lines (e.g. about polishing)
even with ``verbose=False``.

``DEFAULT_OPTIONS`` (the only native defaults polytrav overrides): ``verbose=False``,
``eps_abs=1e-9``, ``eps_rel=1e-9``, ``polishing=True``, ``polish_refine_iter=10``,
``max_iter=100000``, ``time_limit=60`` (seconds per solve, so no solve can hang a run; never
more than the run's deadline leaves, :func:`~polytrav.solve.deadline.call_limit`, set before
every solve of a session; a solve with nothing left is not started; OSQP reads 0 as no limit).
``solve_lp`` adds ``LP_OPTIONS``: ``adaptive_rho=False``, ``alpha=1.0``; with adaptive rho on,
ADMM oscillates on about 2% of the traversal's Chebyshev LPs and stops at ``max_iter`` (0.1%
with these), while it helps on QPs. User options override both.
"""
from __future__ import annotations

import dataclasses

import time

import numpy as np

from polytrav.extend import (ConfigError, SolveResult, SolverBackend, Status, LP_FEASIBILITY_TOL,
                             SOLUTION_PRESENT, call_limit, refused)

__all__ = ["OsqpBackend", "OsqpSession"]


class OsqpBackend(SolverBackend):
    """QPs and LPs with the ``osqp`` package, one OSQP object per solve (or per session)."""

    name = "osqp"
    forms = frozenset({"qp", "lp"})
    required_modules = ("osqp",)
    warm_start = True
    extra = None
    certifies_optimality = False
    #: OSQP's ``info.status`` strings (the same in osqp 0.6 and 1.x); others map to ERROR.
    STATUS_MAP = {
        "solved": Status.OPTIMAL,
        "solved inaccurate": Status.OPTIMAL_INACCURATE,
        "primal infeasible": Status.INFEASIBLE,
        "primal infeasible inaccurate": Status.ERROR,
        "dual infeasible": Status.UNBOUNDED,
        "dual infeasible inaccurate": Status.ERROR,
        "maximum iterations reached": Status.LIMIT,
        "run time limit reached": Status.LIMIT,
    }
    DEFAULT_OPTIONS = {
        "verbose": False,
        "eps_abs": LP_FEASIBILITY_TOL,
        "eps_rel": LP_FEASIBILITY_TOL,
        "polishing": True,
        "polish_refine_iter": 10,
        "max_iter": 100_000,
        "time_limit": 60.0,
    }
    #: Added to ``DEFAULT_OPTIONS`` for LPs (``P = 0``).
    LP_OPTIONS = {"adaptive_rho": False, "alpha": 1.0}

    # ---------------------------------------------------------------- array entry points
    def solve_lp(self, c, A_ub, b_ub, A_eq=None, b_eq=None, bounds=None) -> SolveResult:
        return self._solve_arrays(None, c, A_ub, b_ub, A_eq, b_eq, bounds, "lp")

    def solve_qp(self, P, q, A_ub=None, b_ub=None, A_eq=None, b_eq=None,
                 bounds=None) -> SolveResult:
        return self._solve_arrays(P, q, A_ub, b_ub, A_eq, b_eq, bounds, "qp")

    def _solve_arrays(self, P, q, A_ub, b_ub, A_eq, b_eq, bounds, form: str) -> SolveResult:
        t0 = time.perf_counter()
        q = np.asarray(q, float)
        n = q.shape[0]
        A, l, u, m_ub, m_eq = stack_rows(n, A_ub, b_ub, A_eq, b_eq, bounds)
        session = OsqpSession(self, P, q, A, l, u, form=form)
        res = session.solve()
        duals = None
        if res.duals is not None:
            duals = np.zeros(m_ub + m_eq + n)
            duals[: len(res.duals)] = res.duals
        return SolveResult(res.status, objective=res.objective, x=res.x, duals=duals,
                           solver=self.name, solve_time=time.perf_counter() - t0,
                           iterations=res.iterations, message=res.message, extras=res.extras)

    def qp_session(self, P, q, A, l, u) -> OsqpSession:
        """A warm-started model ``min 0.5 x·P x + q·x`` s.t. ``l <= A x <= u``.

        Change ``q``, ``l`` and ``u`` with :meth:`OsqpSession.update`, then call
        :meth:`OsqpSession.solve`; ``P`` and ``A`` are fixed.
        """
        return OsqpSession(self, P, q, A, l, u)

    # ---------------------------------------------------------------- helpers
    def settings(self, form: str = "qp") -> dict:
        """The options handed to ``OSQP.setup`` (defaults for ``form``, then the user's)."""
        lp = self.LP_OPTIONS if form == "lp" else {}
        return {**self.DEFAULT_OPTIONS, **lp, **self.options}

    def setup(self, P, q, A, l, u, form: str = "qp"):
        """A set-up ``osqp.OSQP`` object; a rejected option raises :class:`ConfigError`."""
        import osqp

        solver = osqp.OSQP()
        try:
            solver.setup(P, q, A, l, u, **self.settings(form))
        except (ValueError, TypeError, AssertionError, osqp.OSQPException) as exc:
            self.raise_rejected_option(exc)
            raise
        return solver

    def raise_rejected_option(self, exc: Exception) -> None:
        """Raise :class:`ConfigError` if one of the user's options alone breaks a tiny setup."""
        import osqp
        import scipy.sparse as sp

        for key, value in self.options.items():
            probe = osqp.OSQP()
            try:
                probe.setup(sp.csc_matrix((1, 1)), np.zeros(1), sp.csc_matrix(np.ones((1, 1))),
                            np.zeros(1), np.ones(1), **{**self.DEFAULT_OPTIONS, key: value})
            except (ValueError, TypeError, AssertionError, osqp.OSQPException) as probe_exc:
                raise ConfigError(
                    f"solver 'osqp' rejected option {key}={value!r} ({probe_exc!r}); "
                    "see the OSQP settings list"
                ) from exc

    def read(self, results, t0: float) -> SolveResult:
        """Normalised result of one ``OSQP.solve()``."""
        info = results.info
        status = self.STATUS_MAP.get(info.status, Status.ERROR)
        x = y = obj = None
        if status in SOLUTION_PRESENT:
            x = np.array(results.x, dtype=float)
            y = np.array(results.y, dtype=float)
            obj = float(info.obj_val)
        extras = {
            "osqp_status": info.status,
            "inaccurate": "inaccurate" in info.status,
            "polished": int(info.status_polish) == 1,
        }
        return SolveResult(status, objective=obj, x=x, duals=y, solver=self.name,
                           solve_time=time.perf_counter() - t0, iterations=int(info.iter),
                           message=info.status, extras=extras)


class OsqpSession:
    """One OSQP model re-solved (warm) after changes of ``q``, ``l`` and ``u``.

    :meth:`update` records the new vectors; :meth:`solve` hands OSQP ``l`` and ``u``
    *together* whenever either changed, so OSQP never checks a new bound against a stale one
    (a lone ``update(l=...)`` with ``l > u_old`` is dropped by OSQP with only a printed error).
    Rows with ``l > u`` are reported infeasible without calling OSQP.
    """

    def __init__(self, backend: OsqpBackend, P, q, A, l, u, *, form: str = "qp"):
        import scipy.sparse as sp

        self.backend = backend
        self.form = form
        self.q = np.array(q, dtype=float)
        n = self.q.shape[0]
        if P is None:
            P = sp.csc_matrix((n, n))
        P = sp.csc_matrix(P, dtype=float)
        self.P = sp.triu((P + P.T) * 0.5, format="csc")
        self.A = sp.csc_matrix(A if A is not None else (0, n), dtype=float)
        self.l = np.array(l, dtype=float).reshape(-1)
        self.u = np.array(u, dtype=float).reshape(-1)
        if self.P.shape != (n, n) or self.A.shape[1] != n or not (
            self.A.shape[0] == self.l.shape[0] == self.u.shape[0]
        ):
            raise ConfigError(
                f"solver 'osqp': inconsistent shapes (P {self.P.shape}, q ({n},), A "
                f"{self.A.shape}, l {self.l.shape}, u {self.u.shape})"
            )
        self._solver = None
        self._q_dirty = self._lu_dirty = False
        self.n_solves = 0

    def update(self, q=None, l=None, u=None) -> None:
        """Replace ``q``, ``l`` and/or ``u`` (full vectors); takes effect at the next solve."""
        if q is not None:
            q = np.array(q, dtype=float).reshape(-1)
            if q.shape != self.q.shape:
                raise ConfigError(
                    f"OsqpSession.update: q has shape {q.shape}, expected {self.q.shape}"
                )
            self.q = q
            self._q_dirty = True
        for name, value in (("l", l), ("u", u)):
            if value is not None:
                value = np.array(value, dtype=float).reshape(-1)
                old = getattr(self, name)
                if value.shape != old.shape:
                    raise ConfigError(
                        f"OsqpSession.update: {name} has shape {value.shape}, expected {old.shape}"
                    )
                setattr(self, name, value)
                self._lu_dirty = True

    def solve(self) -> SolveResult:
        """Solve the current model (warm from the previous solve when there was one)."""
        t0 = time.perf_counter()
        limit = call_limit(self.backend.settings(self.form).get("time_limit") or None)
        if limit == 0.0:
            return refused(self.backend.name)
        self.n_solves += 1
        bad = np.flatnonzero(self.l > self.u)
        if bad.size:
            i = int(bad[0])
            return SolveResult(Status.INFEASIBLE, objective=None, x=None, duals=None,
                               solver=self.backend.name, solve_time=time.perf_counter() - t0,
                               iterations=0,
                               message=f"row {i} has lower bound {self.l[i]:.6g} > upper "
                                       f"bound {self.u[i]:.6g}",
                               extras={"osqp_status": None, "inaccurate": False, "polished": False})
        warm = self._solver is not None
        try:
            if self._solver is None:
                self._solver = self.backend.setup(self.P, self.q, self.A, self.l, self.u, self.form)
            else:
                kwargs = {}
                if self._q_dirty:
                    kwargs["q"] = self.q
                if self._lu_dirty:  # always both: see the class docstring
                    kwargs["l"] = self.l
                    kwargs["u"] = self.u
                if kwargs:
                    self._solver.update(**kwargs)
            if limit is not None:  # what the run's deadline leaves, or the backend's own
                self._solver.update_settings(time_limit=limit)
            self._q_dirty = self._lu_dirty = False
            results = self._solver.solve(raise_error=False)
        except ConfigError:
            raise
        except Exception as exc:  # noqa: BLE001  (OSQP reports data/KKT failures by exception)
            self._solver = None
            return SolveResult(Status.ERROR, objective=None, x=None, duals=None,
                               solver=self.backend.name, solve_time=time.perf_counter() - t0,
                               iterations=None, message=f"OSQP failed: {exc!r}",
                               extras={"osqp_status": None, "inaccurate": False, "polished": False})
        res = self.backend.read(results, t0)
        return dataclasses.replace(res, extras={**res.extras, "warm": warm})


def stack_rows(n: int, A_ub, b_ub, A_eq, b_eq, bounds):
    """``(A, l, u, m_ub, m_eq)`` with rows ``[A_ub; A_eq; I]`` (``I`` only with ``bounds``)."""
    import scipy.sparse as sp

    def rows(M, b):
        if M is None or (not sp.issparse(M) and np.asarray(M).size == 0):
            return sp.csc_matrix((0, n)), np.zeros(0)
        return sp.csc_matrix(M, dtype=float), np.asarray(b, float).reshape(-1)

    Aub, bub = rows(A_ub, b_ub)
    Aeq, beq = rows(A_eq, b_eq)
    blocks = [Aub, Aeq]
    lo_parts = [np.full(bub.shape[0], -np.inf), beq]
    hi_parts = [bub, beq]
    if bounds is not None:
        lo, hi = bounds
        blocks.append(sp.identity(n, format="csc"))
        lo_parts.append(np.broadcast_to(np.asarray(lo, float), (n,)))
        hi_parts.append(np.broadcast_to(np.asarray(hi, float), (n,)))
    A = sp.vstack(blocks, format="csc")
    return A, np.concatenate(lo_parts), np.concatenate(hi_parts), bub.shape[0], beq.shape[0]
