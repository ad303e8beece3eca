"""HiGHS through highspy, the default LP backend.

HiGHS (Huangfu & Hall, "Parallelizing the dual revised simplex method", Math. Prog. Comp.
2018) solves LPs with a dual simplex that re-solves a modified model from its last basis.
The traversal's Chebyshev model lives in one ``highspy.Highs`` object: pushing a level adds
rows, flipping a neuron's side changes one coefficient (the ``t`` column) and one row's
bounds, so consecutive solves are warm. Forms: ``lp``, and ``milp`` (HiGHS' branch and
bound, :meth:`HighsBackend.solve_milp`).

Quirks: "unbounded or infeasible" (``kUnboundedOrInfeasible``) is reported as
:attr:`Status.INFEASIBLE_OR_UNBOUNDED`, never as infeasible; the traversal re-solves such LPs
cold and on a fallback backend. HiGHS' QP solver can hang on tiny QPs (see
``shared/data/solver_traps``), so this backend declares no ``qp`` form.

``DEFAULT_OPTIONS`` (the only native defaults polytrav overrides): ``output_flag=False``,
``primal_feasibility_tolerance=1e-9``, ``dual_feasibility_tolerance=1e-9``, ``threads=1``,
``time_limit=60`` (seconds per solve, so no solve can hang a run), and never more than the
run's deadline leaves (:func:`~polytrav.solve.deadline.call_limit`; a solve with nothing left
is not started). HiGHS measures an LP's time limit against the run time its object has
accumulated over all its runs, not the current one (HiGHS issue #1477; HiGHS 2.0 is to
change it); a warm model older than the limit would then fail every solve. So each run is
given the object's run time so far plus the limit (:meth:`HighsBackend.run`). HiGHS 1.16's
MIP solver counts from the start of the current run instead: a pooled object's run time
added to a MILP's limit let it run that much longer, so that a MILP of ``explain`` ran for
twice the time of the one before it (issue 63). Each MILP gets a new object, whose run time
is 0, which both conventions read alike.

Making a ``highspy.Highs`` object costs about 55 µs, as much as a small warm solve; objects
whose owner (a Chebyshev model, an LP session, a one-shot solve) is gone wait in a small
pool and are cleared (model and options) before reuse.

``duals`` of an optimal minimisation are laid out as OSQP's: one per row (``A_ub``, then
``A_eq``), then one per variable bound, with ``c + A^T y + y_box = 0`` (``y >= 0`` on an
active ``<=`` row).
"""
from __future__ import annotations

import functools
import time
import weakref

import numpy as np

from polytrav.extend import (ChebyshevModel, ConfigError, is_sparse, SolveResult, SolverBackend, SolverError,
                             Status, LP_FEASIBILITY_TOL, MILP_GAP, call_limit, ctrl_c_held,
                             refused)

__all__ = ["HighsBackend"]


@functools.cache
def _status_map():
    import highspy

    M = highspy.HighsModelStatus
    return {
        M.kOptimal: Status.OPTIMAL,
        M.kInfeasible: Status.INFEASIBLE,
        M.kUnbounded: Status.UNBOUNDED,
        M.kUnboundedOrInfeasible: Status.INFEASIBLE_OR_UNBOUNDED,
        M.kTimeLimit: Status.LIMIT,
        M.kIterationLimit: Status.LIMIT,
    }


class HighsBackend(SolverBackend):
    """LPs with highspy, warm-started in place for the traversal."""

    name = "highs"
    forms = frozenset({"lp", "milp"})
    required_modules = ("highspy",)
    warm_start = True
    extra = None
    DEFAULT_OPTIONS = {
        "output_flag": False,
        "primal_feasibility_tolerance": LP_FEASIBILITY_TOL,
        "dual_feasibility_tolerance": LP_FEASIBILITY_TOL,
        "threads": 1,
        "time_limit": 60.0,
    }
    #: Set for every MILP (:meth:`solve_milp`) unless the backend's options name them: the
    #: sub-MIP heuristics that look for better points (RINS, RENS, root reduced cost) took
    #: two thirds of HiGHS's time on polytrav's MILPs, which mostly end in a proof that no
    #: point exists (MNIST 784-256-256-10, nine conjunctions: 110 -> 45 s). An optimum is
    #: settled to a relative and absolute gap of ``1e-7`` (HiGHS: ``1e-4`` and ``1e-6``), so
    #: its dual bound (``extras["bound"]``) is a proof of the optimum, not of a nearby value.
    #: With ``heuristics=True`` (no feasible point known) the heuristics keep HiGHS's
    #: defaults: the nearest valid point of a German-credit applicant over the whole box (95
    #: binaries, 14 integer inputs) took 13 s with them, more than 84 s without.
    MILP_OPTIONS = {
        "mip_rel_gap": MILP_GAP,
        "mip_abs_gap": MILP_GAP,
        "mip_heuristic_effort": 0.0,
        "mip_heuristic_run_rins": False,
        "mip_heuristic_run_rens": False,
        "mip_heuristic_run_root_reduced_cost": False,
    }

    def new_highs(self, fresh: bool = False):
        """A configured ``highspy.Highs`` object (options checked here): from the pool, or
        ``fresh`` (a run time of 0: a MILP's, module docstring)."""
        import highspy

        h = None if fresh or not _IDLE else _IDLE.pop()
        if h is not None:
            h.resetOptions()  # its model was cleared when it was recycled
        else:
            h = _first_highs() or highspy.Highs()
        for key, value in {**self.DEFAULT_OPTIONS, **self.options}.items():
            status = h.setOptionValue(key, value)
            if status != highspy.HighsStatus.kOk:
                raise ConfigError(
                    f"solver 'highs' rejected option {key}={value!r}; see the HiGHS option list"
                )
        return h

    def run(self, h, limit: float | None = None) -> bool:
        """``h.run()`` with ``limit`` seconds (default: this backend's time limit) counted
        from now, no more than the run's deadline leaves (module docstring); False, without
        running, when nothing is left."""
        import highspy

        if limit is None:
            limit = {**self.DEFAULT_OPTIONS, **self.options}.get("time_limit", np.inf)
        limit = call_limit(float(limit))
        if limit == 0.0:
            return False
        h.setOptionValue("time_limit", h.getRunTime() + limit)
        try:
            if h.run() == highspy.HighsStatus.kError and h.getModelStatus() == highspy.HighsModelStatus.kNotset:
                # HiGHS's thread scheduler is global: a Highs of the process that ran a MIP
                # with its default threads (the user's own highspy) made it refuse this one's
                # ``threads=1`` before starting; it says to reset the scheduler
                highspy.Highs.resetGlobalScheduler(True)
                h.run()
        except Exception as exc:  # pragma: no cover - native crash
            raise SolverError(f"solver 'highs' crashed: {exc}") from exc
        return True

    def read(self, h, t0: float, duals: bool = True) -> SolveResult:
        """Normalised result of the last ``run()`` of ``h`` (``duals=False``: without the
        duals, whose conversion from highspy's lists costs as much as the point's)."""
        status = _status_map().get(h.getModelStatus(), Status.ERROR)
        x = obj = y = None
        if status is Status.OPTIMAL:
            solution = h.getSolution()
            x = _array(solution.col_value)
            if duals:
                y = -np.concatenate([_array(solution.row_dual), _array(solution.col_dual)])
            obj = float(h.getObjectiveValue())
        return SolveResult(status, objective=obj, x=x, duals=y, solver=self.name,
                           solve_time=time.perf_counter() - t0,
                           iterations=int(h.getInfoValue("simplex_iteration_count")[1]),
                           message=h.modelStatusToString(h.getModelStatus()))

    def solve_lp(self, c, A_ub, b_ub, A_eq=None, b_eq=None, bounds=None) -> SolveResult:
        t0 = time.perf_counter()
        lp = _LpData(c, A_ub, b_ub, A_eq, b_eq, bounds)
        h = self.new_highs()
        if "presolve" not in self.options:
            h.setOptionValue("presolve", "off")  # as in sessions (_build): unless the user sets it
        h.addVars(lp.n, _inf(lp.lo), _inf(lp.hi))
        h.changeColsCost(lp.n, np.arange(lp.n, dtype=np.int32), lp.c)
        _add_rows(h, lp.A, lp.rlo, lp.rhi)
        res = self.read(h, t0) if self.run(h) else refused(self.name)
        _recycle(h)
        return res

    def solve_milp(self, c, A_ub, b_ub, A_eq=None, b_eq=None, bounds=None, integer=None,
                   time_limit: float | None = None, cutoff: float | None = None,
                   heuristics: bool = False) -> SolveResult:
        import highspy

        t0 = time.perf_counter()
        lp = _LpData(c, A_ub, b_ub, A_eq, b_eq, bounds)
        h = self.new_highs(fresh=True)
        for key, value in self.MILP_OPTIONS.items():
            if key not in self.options and not (heuristics and key.startswith("mip_heuristic")):
                h.setOptionValue(key, value)
        h.addVars(lp.n, _inf(lp.lo), _inf(lp.hi))
        h.changeColsCost(lp.n, np.arange(lp.n, dtype=np.int32), lp.c)
        if integer is not None and np.any(integer):
            cols = np.flatnonzero(integer).astype(np.int32)
            h.changeColsIntegrality(cols.size, cols,
                                    np.full(cols.size, highspy.HighsVarType.kInteger))
        _add_rows(h, lp.A, lp.rlo, lp.rhi)
        if cutoff is not None:  # prune nodes bounded below by it; stop at the first point under
            h.setOptionValue("objective_bound", float(cutoff))
            h.setOptionValue("mip_max_improving_sols", 1)
        if not self.run(h, time_limit):
            _recycle(h)
            return refused(self.name)
        M = highspy.HighsModelStatus
        ms = h.getModelStatus()
        status = _status_map().get(ms, Status.ERROR)
        x = obj = None
        if h.getInfo().primal_solution_status == 2:  # a feasible point
            x, obj = _array(h.getSolution().col_value), float(h.getObjectiveValue())
        if cutoff is not None:
            if x is not None and obj < cutoff:
                status = Status.OPTIMAL
            elif ms in (M.kInfeasible, M.kObjectiveBound, M.kOptimal):
                status, x, obj = Status.INFEASIBLE, None, None  # nothing below the cutoff
        elif status is not Status.OPTIMAL:
            x = obj = None
        res = SolveResult(status, objective=obj, x=x, duals=None, solver=self.name,
                          solve_time=time.perf_counter() - t0, message=h.modelStatusToString(ms))
        if status is Status.OPTIMAL and cutoff is None:
            res.extras["bound"] = min(float(h.getInfo().mip_dual_bound), obj)
        _recycle(h)
        return res

    def chebyshev_model(self, frame, *, box_as_bounds: bool = True) -> ChebyshevModel:
        return HighsChebyshevModel(self, frame, box_as_bounds=box_as_bounds)

    def lp_session(self):
        """A :class:`HighsLpSession` (a subclass that overrides ``solve_lp`` gets itself)."""
        if type(self).solve_lp is not HighsBackend.solve_lp:
            return self
        return HighsLpSession(self)


_BANNER = {"silenced": False}
_IDLE: list = []  # Highs objects whose owners are gone (module docstring)
_IDLE_MAX = 8


def _recycle(h) -> None:
    """Put ``h``, which nothing else uses any more, in the pool (its model freed now)."""
    if len(_IDLE) < _IDLE_MAX:
        h.clearModel()
        _IDLE.append(h)


def _owned(owner, h):
    """``h``, to be put in the pool when ``owner`` is collected."""
    weakref.finalize(owner, _recycle, h)
    return h


def _first_highs():
    """The process's first ``highspy.Highs``, made with the C-level standard output sent to
    the null device (then None): highspy prints its banner there once per process, before any
    option can switch it off, which would corrupt ``polytrav verify --json`` output. A Ctrl-C
    waits until the standard output is back (else the partial report went to the null
    device)."""
    import os
    import sys

    import highspy

    if _BANNER["silenced"]:
        return None
    _BANNER["silenced"] = True
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no file descriptor 1 (an embedded interpreter): nothing to protect
        return highspy.Highs()

    def quiet():
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            try:
                return highspy.Highs()
            finally:
                os.dup2(saved, 1)

    try:
        with ctrl_c_held():
            return quiet()
    finally:
        os.close(saved)


class HighsLpSession:
    """LPs of one shape re-solved in one warm ``Highs`` model (a subproblem, polytope after polytope).

    The model keeps every row's coefficients as first added. A new row equal to the stored
    one changes only its bounds, its negation (the neuron on the other side) flips them
    (``a·x <= b`` is ``-a·x >= -b``), and any other row is deleted and added again; costs and
    column bounds are set in full; rows come dense or as CSR matrices (large compiled
    subproblems: the 784-pixel L∞ distance). Another shape builds a new model. A warm
    solve that ends neither optimal nor infeasible is repeated cold, so the answers are those
    of :meth:`HighsBackend.solve_lp`.
    """

    def __init__(self, backend: HighsBackend):
        self.backend = backend
        self.h = None
        self.shape = None
        self.warm_solves = 0

    def solve_lp(self, c, A_ub, b_ub, A_eq=None, b_eq=None, bounds=None) -> SolveResult:
        lp = _LpData(c, A_ub, b_ub, A_eq, b_eq, bounds)
        c, n, A, lo, hi = lp.c, lp.n, lp.A, lp.lo, lp.hi
        rlo, rhi, shape = lp.rlo, lp.rhi, lp.shape
        if self.h is None or shape != self.shape:
            return self._build(c, A, rlo, rhi, lo, hi, shape)
        t0 = time.perf_counter()
        h, cols = self.h, np.arange(n, dtype=np.int32)
        h.changeColsCost(n, cols, c)
        if not (np.array_equal(lo, self.lo) and np.array_equal(hi, self.hi)):
            h.changeColsBounds(n, cols, _inf(lo), _inf(hi))
            self.lo, self.hi = np.array(lo, float), np.array(hi, float)
        same, flip = _row_matches(A, self.S)
        rlo, rhi = np.where(flip, -rhi, rlo), np.where(flip, -rlo, rhi)
        redo = np.flatnonzero(~(same | flip))
        if redo.size:  # delete and re-add; the other rows move down (HiGHS keeps their order)
            gone = np.sort(self.pos[redo])
            h.deleteRows(gone.size, gone.astype(np.int32))
            keep = np.ones(A.shape[0], bool)
            keep[redo] = False
            keep = np.flatnonzero(keep)
            self.pos[keep] -= np.searchsorted(gone, self.pos[keep])
            self.pos[redo] = A.shape[0] - redo.size + np.arange(redo.size)
            _add_rows(h, A[redo], rlo[redo], rhi[redo])
        self.S = _signed_rows(A, flip)  # the coefficients as the model holds them
        rows = np.flatnonzero(same | flip)
        if rows.size:
            h.changeRowsBounds(rows.size, self.pos[rows].astype(np.int32), _inf(rlo[rows]),
                               _inf(rhi[rows]))
        if not self.backend.run(h):
            return refused(self.backend.name)
        res = self.backend.read(h, t0)
        if res.status not in (Status.OPTIMAL, Status.INFEASIBLE):
            return self._build(c, A, lp.rlo, lp.rhi, lo, hi, shape)
        self.warm_solves += 1
        if res.duals is not None:  # the model's rows moved and negated: back to A's order
            m = A.shape[0]
            res.duals[:m] = np.where(flip, -1.0, 1.0) * res.duals[:m][self.pos]
        return res

    def _build(self, c, A, rlo, rhi, lo, hi, shape) -> SolveResult:
        """A new model with rows as given (row ``i`` at HiGHS index ``i``), solved (in the
        session's ``Highs`` object, cleared, after the first)."""
        t0 = time.perf_counter()
        if self.h is None:
            self.h = _owned(self, self.backend.new_highs())
            if "presolve" not in self.backend.options:
                self.h.setOptionValue("presolve", "off")
        else:
            self.h.clearModel()
        h = self.h
        n = shape[0]
        h.addVars(n, _inf(lo), _inf(hi))
        h.changeColsCost(n, np.arange(n, dtype=np.int32), c)
        _add_rows(h, A, rlo, rhi)
        self.shape, self.S = shape, A.copy()
        self.lo, self.hi = np.array(lo, float), np.array(hi, float)
        self.pos = np.arange(A.shape[0])  # HiGHS row index of each row of A
        if not self.backend.run(h):
            return refused(self.backend.name)
        return self.backend.read(h, t0)


class _LpData:
    """The arguments of ``solve_lp`` normalised: one row block ``rlo <= A x <= rhi`` (``A``
    dense, or CSR if either block was sparse), column bounds ``lo``, ``hi``, and the shape."""

    def __init__(self, c, A_ub, b_ub, A_eq, b_eq, bounds):
        self.c = np.asarray(c, float)
        n = self.n = self.c.shape[0]
        sparse = is_sparse(A_ub) or is_sparse(A_eq)
        if sparse:
            import scipy.sparse as sp

            A_ub, A_eq = (sp.csr_matrix((0, n)) if M is None else sp.csr_matrix(M, dtype=float)
                          for M in (A_ub, A_eq))
        else:
            A_ub, A_eq = (np.zeros((0, n)) if M is None else np.asarray(M, float)
                          for M in (A_ub, A_eq))
        b_ub = np.zeros(0) if b_ub is None else np.asarray(b_ub, float)
        b_eq = np.zeros(0) if b_eq is None else np.asarray(b_eq, float)
        self.lo, self.hi = (np.full(n, -np.inf), np.full(n, np.inf)) if bounds is None else bounds
        self.A = (sp.vstack([A_ub, A_eq], format="csr") if sparse
                  else np.vstack([A_ub, A_eq]))
        self.rlo = np.concatenate([np.full(A_ub.shape[0], -np.inf), b_eq])
        self.rhi = np.concatenate([b_ub, b_eq])
        self.shape = (n, A_ub.shape[0], A_eq.shape[0], sparse)


def _array(values: list) -> np.ndarray:
    """highspy's list of floats as an array (``np.fromiter``: 3x ``np.array`` on 785 values)."""
    return np.fromiter(values, float, len(values))


def _inf(v: np.ndarray) -> np.ndarray:
    """``±inf`` as HiGHS's infinity (nothing to do where that is ``inf``, as in highspy 1.x)."""
    import highspy

    v = np.asarray(v, float)
    if highspy.kHighsInf == np.inf:
        return v
    return np.where(np.isposinf(v), highspy.kHighsInf, np.where(np.isneginf(v), -highspy.kHighsInf, v))


def _add_rows(h, A, lo: np.ndarray, hi: np.ndarray) -> None:
    """Add rows ``lo <= A x <= hi`` (``A`` dense or CSR) to ``h``."""
    if A.shape[0] == 0:
        return
    if is_sparse(A):
        import scipy.sparse as sp

        A = sp.csr_matrix(A)
        starts, idx, vals = A.indptr[:-1], A.indices, A.data
    else:
        mask = A != 0
        starts = np.concatenate([[0], np.cumsum(mask.sum(axis=1))[:-1]])
        idx, vals = np.nonzero(mask)[1], A[mask]
    h.addRows(A.shape[0], _inf(lo), _inf(hi), vals.size, starts.astype(np.int32),
              idx.astype(np.int32), vals)


def _row_matches(A, S) -> tuple[np.ndarray, np.ndarray]:
    """Masks of the rows of ``A`` equal to ``S``'s and of those equal to their negation."""
    if is_sparse(A):
        import scipy.sparse as sp

        def empty(M):
            M = sp.csr_matrix(M)
            M.eliminate_zeros()
            return np.diff(M.indptr) == 0
        same = empty(A - S)
        return same, ~same & empty(A + S)
    same = np.all(A == S, axis=1)
    return same, ~same & np.all(A == -S, axis=1)


def _signed_rows(A, flip: np.ndarray):
    """``A`` with the rows in ``flip`` negated (dense or CSR)."""
    sign = np.where(flip, -1.0, 1.0)
    if is_sparse(A):
        import scipy.sparse as sp

        return sp.csr_matrix(sp.diags(sign) @ A)
    return sign[:, None] * A


class HighsChebyshevModel(ChebyshevModel):
    """The Chebyshev model kept in one warm-started ``Highs`` object."""

    def __init__(self, backend: HighsBackend, frame, *, box_as_bounds: bool = True):
        super().__init__(backend, frame, box_as_bounds=box_as_bounds)
        self.h = _owned(self, self._build())
        self.block_rows: list[np.ndarray] = []  # HiGHS row index of each block's rows
        self.n_rows = self.h.getNumRow()

    def _build(self, cold: bool = False):
        """A Highs object holding the whole current model (``cold``: for a cold re-solve).

        The warm model is unscaled (``simplex_scale_strategy=0``, unless the backend's options
        say otherwise): it is scaled by construction (unit-norm rows, ``u`` in ``[-1, 1]``),
        and HiGHS' scaling of each warm solve cost 17 % of the traversal's LP time on
        mnist2x10. A cold re-solve, which follows a failed warm one, keeps HiGHS' scaling.
        """
        import highspy

        h = self.backend.new_highs()
        if not cold and "simplex_scale_strategy" not in self.backend.options:
            h.setOptionValue("simplex_scale_strategy", 0)
        A_ub, b_ub, A_eq, b_eq, lo, hi = self.arrays()
        inf = highspy.kHighsInf
        n = self.n_vars
        h.addVars(n, lo, np.where(np.isfinite(hi), hi, inf))
        h.changeObjectiveSense(highspy.ObjSense.kMaximize)
        h.changeColCost(self.d, 1.0)
        A = np.vstack([A_ub, A_eq])
        rlo = np.concatenate([np.full(len(b_ub), -inf), b_eq])
        rhi = np.concatenate([b_ub, b_eq])
        _add_rows(h, A, rlo, rhi)
        return h

    def sync_push(self, block) -> None:
        import highspy

        A, beta, signs = block
        inf = highspy.kHighsInf
        m = A.shape[0]
        # row: a·u - s t  in [-beta, inf) if on, (-inf, -beta] if off
        M = np.zeros((m, self.n_vars))
        M[:, : self.d] = A
        M[:, self.d] = np.where(signs, -1.0, 1.0)
        lo = np.where(signs, -beta, -inf)
        hi = np.where(signs, inf, -beta)
        _add_rows(self.h, M, lo, hi)
        self.block_rows.append(np.arange(self.n_rows, self.n_rows + m, dtype=np.int32))
        self.n_rows += m

    def sync_pop(self, block) -> None:
        rows = self.block_rows.pop()
        if rows.size:
            self.h.deleteRows(rows.size, rows)
            for k, other in enumerate(self.block_rows):
                self.block_rows[k] = other - np.searchsorted(rows, other)
            self.n_rows -= rows.size

    def sync_signs(self, level: int, changed: np.ndarray) -> None:
        import highspy

        inf = highspy.kHighsInf
        A, beta, signs = self.blocks[level]
        rows = self.block_rows[level]
        for i in changed:
            r = int(rows[i])
            if signs[i]:
                self.h.changeCoeff(r, self.d, -1.0)
                self.h.changeRowBounds(r, -beta[i], inf)
            else:
                self.h.changeCoeff(r, self.d, 1.0)
                self.h.changeRowBounds(r, -inf, -beta[i])

    def sync_region_rows(self, A, b) -> None:
        M = np.zeros((A.shape[0], self.n_vars))
        M[:, : self.d] = A
        M[:, self.d] = 1.0
        _add_rows(self.h, M, np.full(A.shape[0], -np.inf), b)
        self.n_rows += A.shape[0]

    def _solve(self) -> SolveResult:
        t0 = time.perf_counter()
        if not self.backend.run(self.h):
            return refused(self.backend.name)
        res = self.backend.read(self.h, t0, duals=False)
        if res.x is None:
            return res
        return SolveResult(res.status, objective=res.objective, x=res.x[: self.d].copy(),
                           duals=None, solver=res.solver, solve_time=res.solve_time,
                           iterations=res.iterations, message=res.message)

    def maximize(self, g: np.ndarray) -> SolveResult:
        """:meth:`ChebyshevModel.maximize` in place: for one warm solve the ``u`` columns cost
        ``g`` and ``t`` costs nothing, then the Chebyshev objective comes back. ``t`` keeps its
        bounds ``[0, cap]``: a positive ``t`` only shrinks the cell, so the maximum is the
        cell's, and leaving the bound alone spares the re-solve that changing it back costs
        (0.2 ms on 784 inputs, more than the solve). A warm solve that ends neither optimal
        nor infeasible is repeated from scratch."""
        h, d = self.h, self.d
        cols = np.arange(d, dtype=np.int32)
        t0 = time.perf_counter()
        h.changeColsCost(d, cols, np.asarray(g, float))
        h.changeColCost(d, 0.0)
        try:
            ran = self.backend.run(h)
            res = self.backend.read(h, t0, duals=False) if ran else refused(self.backend.name)
        finally:
            h.changeColsCost(d, cols, np.zeros(d))
            h.changeColCost(d, 1.0)
        if not ran:
            return res
        if res.status not in (Status.OPTIMAL, Status.INFEASIBLE):
            return super().maximize(g)
        if res.x is None:
            return res
        return SolveResult(res.status, objective=res.objective, x=res.x[:d].copy(), duals=None,
                           solver=res.solver, solve_time=res.solve_time, iterations=res.iterations,
                           message=res.message)

    def solve_cold(self) -> SolveResult:
        """Solve the current model in a fresh ``Highs`` object (no warm start)."""
        t0 = time.perf_counter()
        h = self._build(cold=True)
        res = (self.backend.read(h, t0, duals=False) if self.backend.run(h)
               else refused(self.backend.name))
        _recycle(h)
        self.n_solves += 1
        self.solve_time += res.solve_time
        if res.x is None:
            return res
        return SolveResult(res.status, objective=res.objective, x=res.x[: self.d].copy(),
                           duals=None, solver=res.solver, solve_time=res.solve_time,
                           iterations=res.iterations, message=res.message)
