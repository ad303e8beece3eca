"""Per-polytope convex subproblems stated once in cvxpy and re-solved with new parameters.

An analysis writes its subproblem once, with ``cp.Parameter`` for the per-polytope data
(DPP-compliant), wraps it in a :class:`Subproblem`, and calls :meth:`Subproblem.solve` per
polytope. Two paths serve a solve:

* ``cvxpy:<SOLVER>`` backends run ``problem.solve`` (cvxpy re-uses its DPP compilation, about
  1 ms per solve even so) and the status is normalised with the backend's ``STATUS_MAP``.
* Every other backend gets the *compiled standard form* (:class:`StandardForm`): cvxpy
  compiles the problem once (``get_problem_data``; its ``PARAM_PROB`` is an affine map from the
  parameter vector to the data ``q, d, A, b`` and ``P`` of ``min 0.5 x'Px + q'x + d`` s.t.
  ``A x + b`` in cones). :meth:`Subproblem.standard_form` re-applies that map, one sparse
  mat-vec, and lays the rows out for ``solve_lp`` / ``solve_qp``; inequality rows with a single
  nonzero (boxes such as ``-1 <= u <= 1``) become column bounds. LPs go through the backend's
  ``lp_session()``, one per subproblem and backend (class and options; kept across the solves
  of a run, dropped when the next run starts: :func:`forget_warm_starts`): HiGHS
  re-solves the previous model from its last basis (a neuron row on the other side flips its
  bounds; see ``HighsLpSession``).

The stale-bounds trap (``shared/data/solver_traps``): OSQP's ``update()`` checks a new bound
vector against the *old* other one, so a warm re-solve that changes only one of them runs on
stale bounds and can report a feasible problem infeasible. cvxpy 1.9's own OSQP re-solve
passes ``l`` and ``u`` together (and keeps ``l = -inf`` on inequality rows), so it was not seen
to fall into it; the compiled path hands the osqp backend complete data (a fresh model per
solve), so it cannot.
"""
from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from polytrav.vocabulary.errors import ConfigError
from polytrav.vocabulary.results import SOLUTION_PRESENT, SolveResult, Status

if TYPE_CHECKING:
    import cvxpy as cp
    import scipy.sparse as sp

__all__ = ["StandardForm", "Subproblem", "SPARSE_ABOVE", "compiled", "COMPILED_CACHE_SIZE",
           "forget_warm_starts"]

#: Constraint blocks with more entries than this are handed to backends as CSR matrices.
SPARSE_ABOVE = 100_000

#: cvxpy solvers whose compile chain is used, first installed wins (both keep quadratic
#: objectives as ``P``; ECOS turns them into cones, so QPs compiled for it are "socp").
_COMPILE_SOLVERS = ("CLARABEL", "SCS", "ECOS")
_compile_solver: list[str | None] = []  # the first of _COMPILE_SOLVERS installed, found once

#: Compiled subproblems kept per process by :func:`compiled` (least recently used dropped).
COMPILED_CACHE_SIZE = 32
_COMPILED: OrderedDict[tuple, "Subproblem"] = OrderedDict()


def compiled(key: tuple, build: Callable[[], "Subproblem"]) -> "Subproblem":
    """The :class:`Subproblem` ``build()`` returns, compiled once per process for ``key``.

    Compiling costs milliseconds (cvxpy's canonicalisation), which dominates runs of a few
    polytopes, such as many counterfactual queries on one region. ``key`` must determine
    everything in the problem that is not a parameter: the analysis's name and variant, the
    frame's :attr:`~polytrav.model.geometry.Frame.fingerprint`, shapes and constant data. Runs with
    equal keys share the object, so pass every parameter's value on every solve.
    """
    sub = _COMPILED.get(key)
    if sub is None:
        sub = _COMPILED[key] = build()
        while len(_COMPILED) > COMPILED_CACHE_SIZE:
            _COMPILED.popitem(last=False)
    else:
        _COMPILED.move_to_end(key)
    return sub


def forget_warm_starts() -> None:
    """Drop the warm LP session of every compiled subproblem: each one's next solve starts
    cold. A run calls it first, so that its answers do not depend on the runs before it in
    the process (a table is the same to the last bit serially and in parts, whatever ran
    before on each worker); within a run, solves stay warm."""
    for sub in _COMPILED.values():
        sub._session = None


def _reusable(session, backend) -> bool:
    """Whether ``session`` (a ``(backend, lp_session)`` pair or None) serves ``backend``: its own,
    or a separate session object of an equal backend (same class, equal options)."""
    if session is None:
        return False
    owner, obj = session
    return owner is backend or (obj is not owner and type(owner) is type(backend)
                                and owner.options == backend.options)


@dataclass
class StandardForm:
    """``min 0.5 x·P x + c·x + constant`` s.t. ``A_ub x <= b_ub``, ``A_eq x == b_eq``, ``lo <= x <= hi``.

    The problem's own objective is ``sense * (0.5 x·P x + c·x + constant)`` (``sense`` is -1
    for a maximisation, which cvxpy compiles as the minimisation of its negative); see
    :meth:`objective`. ``P`` is ``None`` for LPs, else a CSC matrix (full, symmetric); the
    ``A`` blocks are dense ``(rows, n)`` arrays, or CSR matrices above :data:`SPARSE_ABOVE` entries. ``x`` holds
    the named variables and cvxpy's auxiliaries; :meth:`split` recovers the named ones.
    """

    P: sp.csc_matrix | None
    c: np.ndarray
    constant: float
    A_ub: np.ndarray
    b_ub: np.ndarray
    A_eq: np.ndarray
    b_eq: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    sense: int
    columns: dict[str, tuple[int, tuple[int, ...]]] = field(default_factory=dict, repr=False)

    def split(self, x) -> dict[str, np.ndarray]:
        """The named variables' values (in their own shapes) from a standard-form vector."""
        x = np.asarray(x, float)
        return {name: x[col : col + int(np.prod(shape, dtype=int))].reshape(shape, order="F")
                for name, (col, shape) in self.columns.items()}

    def objective(self, x) -> float:
        """The objective at ``x`` in the problem's own sense, constant term included."""
        x = np.asarray(x, float)
        value = float(self.c @ x) + self.constant
        if self.P is not None:
            value += 0.5 * float(x @ (self.P @ x))
        return self.sense * value


class Subproblem:
    """A convex problem over cvxpy Variables with Parameters, compiled once, re-solved per polytope.

    Parameters
    ----------
    problem : cvxpy.Problem
        DCP and DPP; parameters need values only when solving.
    variables : dict of str to cvxpy.Variable, optional
        Named variables whose values are returned (default: all, by ``.name()``); the first
        one is the result's ``x``.

    Attributes
    ----------
    form : str
        ``"lp"``, ``"qp"`` (quadratic objective) or ``"socp"`` (second-order, exponential or
        other cones after compilation: served by ``cvxpy:<SOLVER>`` backends only).
    parameters : dict of str to cvxpy.Parameter

    Examples
    --------
    >>> import cvxpy as cp
    >>> from polytrav.host.manager import get_solver
    >>> u, b = cp.Variable(2, name="u"), cp.Parameter(name="b")
    >>> sub = Subproblem(cp.Problem(cp.Maximize(cp.sum(u) + 1), [u <= b, u >= -1]))
    >>> sub.form
    'lp'
    >>> res = sub.solve(get_solver("highs"), b=0.5)
    >>> round(res.objective, 9), res.x.tolist()
    (2.0, [0.5, 0.5])
    >>> sub.standard_form().A_ub.shape  # every row has one nonzero: all became bounds
    (0, 2)
    """

    def __init__(self, problem: cp.Problem, variables: dict[str, cp.Variable] | None = None):
        import cvxpy as cp

        if not problem.is_dcp():
            raise ConfigError("Subproblem: the problem is not convex (not DCP); check the "
                              "curvature of its atoms")
        if not problem.is_dpp():
            raise ConfigError("Subproblem: the problem is not DPP, so cvxpy cannot compile "
                              "its parameters once (products of parameters, or a parameter "
                              "inside a nonlinear atom?); see cvxpy's DPP rules")
        self.problem = problem
        if variables is None:
            variables = {}
            for v in problem.variables():
                if v.name() in variables:
                    raise ConfigError(f"Subproblem: two variables are named {v.name()!r}; "
                                      "give distinct names or pass variables={...}")
                variables[v.name()] = v
        if not variables:
            raise ConfigError("Subproblem: no variables to return; pass variables={...}")
        in_problem = {v.id for v in problem.variables()}
        for name, v in variables.items():
            if not isinstance(v, cp.Variable) or v.id not in in_problem:
                raise ConfigError(f"Subproblem: variables[{name!r}] is not a variable of "
                                  "the problem")
        self.variables, self.parameters = dict(variables), {}
        for p in problem.parameters():
            if p.name() in self.parameters:
                raise ConfigError(f"Subproblem: two parameters are named {p.name()!r}; "
                                  "give them distinct names")
            self.parameters[p.name()] = p
        # parameters without attributes skip cvxpy's value validation (~20 us each)
        self._plain = {name for name, p in self.parameters.items()
                       if all(a is None or a is False for a in p.attributes.values())}
        self.sense = -1 if isinstance(problem.objective, cp.Maximize) else 1
        self._session = None  # (backend, its lp_session()) of the last compiled-path LP;
        # runs get fresh backend instances, so an equal backend (class and options) reuses it
        self._compile()

    def _compile(self) -> None:
        """Compile once: the parameter -> data maps as sparse matrices plus the row layout."""
        import cvxpy as cp
        import scipy.sparse as sp
        from cvxpy.lin_ops.lin_op import CONSTANT_ID
        from cvxpy.reductions.cvx_attr2constr import CvxAttr2Constr

        if not _compile_solver:
            installed = cp.installed_solvers()
            _compile_solver.append(next((s for s in _COMPILE_SOLVERS if s in installed), None))
        solver = _compile_solver[0]
        if solver is None:
            raise ConfigError(f"Subproblem: needs one of the cvxpy solvers {_COMPILE_SOLVERS} "
                              "to compile the problem; pip install clarabel")
        shadow = cp.Problem(self.problem.objective, self.problem.constraints)  # own cache
        try:
            data, chain, inverse = shadow.get_problem_data(solver, enforce_dpp=True)
        except cp.error.DPPError as exc:
            raise ConfigError(
                "Subproblem: cvxpy cannot compile this objective parametrically (in cvxpy "
                ">= 1.7 quad_form(x, M) needs a parameter-free x; write "
                "sum_squares(L @ (u - x0)) with M = L'L instead)") from exc
        pp = data[cp.settings.PARAM_PROB]
        n = self.n = pp.x.size
        # named variable -> first column (CvxAttr2Constr may swap variables for copies)
        new_var = {}
        for red, inv in zip(chain.reductions, inverse):
            if isinstance(red, CvxAttr2Constr) and inv:
                new_var = {vid: v.id for vid, v in inv[0].items()}
        self.columns = {}
        for name, v in self.variables.items():
            vid = new_var.get(v.id, v.id)
            if vid not in pp.var_id_to_col or pp.id_to_var[vid].size != v.size:
                raise ConfigError(f"Subproblem: variable {name!r} has a structural attribute "
                                  "(symmetric, PSD, diag, sparsity); use a plain Variable")
            self.columns[name] = (pp.var_id_to_col[vid], v.shape)
        known = {p.id: p for p in self.parameters.values()}
        self._pslots, self._const_col = [], pp.total_param_size
        for pid, col in pp.param_id_to_col.items():
            if pid in known:
                self._pslots.append((known[pid], col, known[pid].size))
            elif pid != CONSTANT_ID:
                raise ConfigError("Subproblem: a parameter has a structural attribute (PSD, "
                                  "symmetric, diag, sparsity); use a plain Parameter")
        dims = pp.cone_dims
        cones = any(getattr(dims, k, None) for k in ("soc", "exp", "psd", "p3d", "pnd"))
        self.form = "socp" if cones else ("qp" if pp.P is not None and pp.P.nnz else "lp")
        self._Tq = sp.csr_matrix(pp.q)
        # A: tensor row k is entry (k % m, k // m) of [A | b] (Fortran order)
        TA = sp.csr_matrix(pp.A)
        m = TA.shape[0] // (n + 1)
        keep = np.flatnonzero(np.diff(TA.indptr))
        self._TA = TA[keep]
        row, col = keep % m, keep // m
        self._b_ent, self._b_row, self._m = np.flatnonzero(col == n), row[col == n], m
        ent = np.flatnonzero(col < n)
        r, c = row[ent], col[ent]
        m_eq, m_in = dims.zero, dims.nonneg
        is_eq, is_in = r < m_eq, (r >= m_eq) & (r < m_eq + m_in)
        count = np.bincount(r[is_in], minlength=m)
        single = np.zeros(m, bool)
        single[m_eq : m_eq + m_in] = count[m_eq : m_eq + m_in] == 1
        self._m_eq = m_eq
        self._eq = (ent[is_eq], r[is_eq], c[is_eq])
        self._ub_rows = m_eq + np.flatnonzero(~single[m_eq : m_eq + m_in])
        dest = np.full(m, -1)
        dest[self._ub_rows] = np.arange(self._ub_rows.size)
        sel = is_in & ~single[r]
        self._ub = (ent[sel], dest[r[sel]], c[sel])
        sel = is_in & single[r]
        self._single = (ent[sel], r[sel], c[sel])
        self._P = None
        if self.form == "qp":  # tensor row k is entry (k % n, k // n) of P; CSC layout fixed
            TP = sp.csr_matrix(pp.P)
            keep = np.flatnonzero(np.diff(TP.indptr))
            order = np.lexsort((keep % n, keep // n))
            self._P = (TP[keep[order]], (keep % n)[order].astype(np.int32),
                       np.searchsorted((keep // n)[order], np.arange(n + 1)).astype(np.int32))

    def set(self, **values) -> None:
        """Assign parameter values by name (``ConfigError`` on an unknown name or a wrong shape)."""
        for name, value in values.items():
            p = self.parameters.get(name)
            if p is None:
                raise ConfigError(f"Subproblem.set: unknown parameter {name!r}; known: "
                                  f"{sorted(self.parameters)}")
            value = np.asarray(value, dtype=float)
            if value.shape != p.shape:
                raise ConfigError(f"Subproblem.set: parameter {name!r} expects shape {p.shape}, "
                                  f"got {value.shape}")
            if name in self._plain:
                p.save_value(float(value) if value.ndim == 0 else value)
                continue
            try:
                p.value = value
            except ValueError as exc:
                raise ConfigError(f"Subproblem.set: parameter {name!r}: {exc}") from exc

    def _param_vector(self) -> np.ndarray:
        vec = np.zeros(self._const_col + 1)
        vec[self._const_col] = 1.0
        for p, col, size in self._pslots:
            if p.value is None:
                raise ConfigError(f"Subproblem: parameter {p.name()!r} has no value; set it "
                                  "with Subproblem.set or solve(..., name=value)")
            vec[col : col + size] = np.ravel(p.value, order="F")
        return vec

    def standard_form(self) -> StandardForm:
        """The LP/QP data at the current parameter values (the compiled map, re-applied)."""
        import scipy.sparse as sp

        if self.form == "socp":
            raise ConfigError("Subproblem.standard_form: the problem has conic constraints "
                              "(form 'socp'); only cvxpy:<SOLVER> backends solve it")
        n, vec = self.n, self._param_vector()
        q = self._Tq @ vec
        vals = self._TA @ vec
        b = np.zeros(self._m)
        b[self._b_row] = vals[self._b_ent]
        A_eq, (ent, r, c) = np.zeros((self._m_eq, n)), self._eq  # Zero rows: A x + b == 0
        A_eq[r, c] = vals[ent]
        ent, r, c = self._single  # NonNeg rows a x_j + b >= 0 with one entry: bounds
        a, bb = vals[ent], b[r]
        lo, hi = np.full(n, -np.inf), np.full(n, np.inf)
        with np.errstate(divide="ignore", invalid="ignore"):
            bound = -bb / a
        np.maximum.at(lo, c[a > 0], bound[a > 0])
        np.minimum.at(hi, c[a < 0], bound[a < 0])
        zero = r[a == 0]  # the coefficient vanished at these values: keep 0 <= b as a row
        ent, r, c = self._ub  # other NonNeg rows: -A x <= b
        shape = (self._ub_rows.size + zero.size, n)
        if shape[0] * n > SPARSE_ABOVE:
            A_ub = sp.csr_matrix((-vals[ent], (r, c)), shape=shape)
            if self._m_eq:
                A_eq = sp.csr_matrix(A_eq)
        else:
            A_ub = np.zeros(shape)
            A_ub[r, c] = -vals[ent]
        P = None
        if self._P is not None:
            TP, indices, indptr = self._P
            P = sp.csc_matrix((TP @ vec, indices, indptr), shape=(n, n))
        return StandardForm(P, q[:n], float(q[n]), A_ub,
                            np.concatenate([b[self._ub_rows], b[zero]]), A_eq,
                            -b[: self._m_eq], lo, hi, self.sense, self.columns)

    def solve(self, backend, **values) -> SolveResult:
        """Set ``values``, then solve on ``backend`` (cvxpy path or compiled standard form).

        The result's ``objective`` is in the problem's own sense (constant included), ``x`` is
        the first named variable's value flattened, ``extras["values"]`` all named values
        (empty without a solution). Only the cvxpy path sets the Variables' ``.value``.
        """
        t0 = time.perf_counter()
        self.set(**values)
        if self.form not in backend.forms:
            raise ConfigError(f"Subproblem.solve: form {self.form!r} is not served by "
                              f"{backend.name!r} (its forms: {sorted(backend.forms)}); choose a "
                              f"backend that serves it (polytrav solvers lists them)")
        if backend.solves_cvxpy:
            status, obj, vals, iters, msg, extras = self._solve_cvxpy(backend)
        else:
            status, obj, vals, iters, msg, extras = self._solve_compiled(backend)
        x = None if vals is None else np.ravel(next(iter(vals.values())))
        extras = {**extras, "values": vals or {}, "form": self.form}
        return SolveResult(status, objective=obj, x=x, duals=None, solver=backend.name,
                           solve_time=time.perf_counter() - t0, iterations=iters, message=msg,
                           extras=extras)

    def _solve_compiled(self, backend):
        sf = self.standard_form()
        bad = np.flatnonzero(sf.lo > sf.hi)
        if bad.size:  # contradicting bounds: a proof, no solver needed
            j = int(bad[0])
            msg = f"column {j} has lower bound {sf.lo[j]:.6g} > upper bound {sf.hi[j]:.6g}"
            return Status.INFEASIBLE, None, None, 0, msg, {}
        rows = [*((sf.A_ub, sf.b_ub) if sf.A_ub.shape[0] else (None, None)),
                *((sf.A_eq, sf.b_eq) if sf.A_eq.shape[0] else (None, None)), (sf.lo, sf.hi)]
        if self.form == "lp":
            if not _reusable(self._session, backend):
                self._session = (backend, backend.lp_session())
            res = self._session[1].solve_lp(sf.c, *rows)
        else:
            res = backend.solve_qp(sf.P, sf.c, *rows)
        if res.status not in SOLUTION_PRESENT or res.x is None:
            return res.status, None, None, res.iterations, res.message, res.extras
        return (res.status, sf.objective(res.x), sf.split(res.x), res.iterations,
                res.message, res.extras)

    def _solve_cvxpy(self, backend):
        prob = self.problem
        status, message = backend.solve_problem(prob, self.form)
        if message:  # the solver failed (ERROR), or was not started past the deadline (LIMIT)
            return status, None, None, None, message, {"cvxpy_status": None}
        extras = {"cvxpy_status": prob.status, "inaccurate": "inaccurate" in str(prob.status)}
        vals = obj = None
        if status in SOLUTION_PRESENT:
            if any(v.value is None for v in self.variables.values()):
                status = Status.ERROR  # a status without a point: not usable
            else:
                vals = {k: np.array(v.value, dtype=float) for k, v in self.variables.items()}
                obj = float(prob.value)
        iters = getattr(prob.solver_stats, "num_iters", None)
        return status, obj, vals, None if iters is None else int(iters), str(prob.status), extras
