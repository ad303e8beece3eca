"""The solver interface: :class:`SolverBackend` and the traversal's :class:`ChebyshevModel`.

A backend solves LPs given as arrays (``solve_lp``) and hands the traversal a
:class:`ChebyshevModel`: the Chebyshev-centre LP of "polytope ∩ region" in the region's
normalised coordinates ``u`` (see :mod:`polytrav.geometry`)::

    maximise t  subject to  a_i·u + t <= b_i                 (region rows, unit normals)
                            s_j (a_j·u + beta_j) - t >= 0    (neuron rows, unit normals, sign s_j)
                            ||U u + w||_1 + kappa t <= r      (L1 balls, lifted)
                            -1 <= u <= 1,  0 <= t <= frame.radius_cap

Neuron rows come in blocks, one per level of the hierarchical traversal, pushed and popped
like a stack; the top block's signs flip as the search moves between polytopes. The base
class keeps every row in numpy arrays and rebuilds the LP for each solve (any backend can
serve it); backends with an incremental API (HiGHS) override the ``_sync_*`` hooks to update
one warm-started model in place.
"""
from __future__ import annotations

import importlib.util
import sys
import time
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from polytrav.geometry import HIGH_DIM
from polytrav.results import SolveResult

if TYPE_CHECKING:
    from polytrav.geometry import Frame

__all__ = ["SolverBackend", "ChebyshevModel"]


_FOUND: set[str] = set()


def _importable(module: str) -> bool:
    """``importlib.util.find_spec(module) is not None``; a found module is remembered (the
    look-up costs tens of microseconds, and backends are looked up many times per run)."""
    if module not in _FOUND and (module in sys.modules or importlib.util.find_spec(module)):
        _FOUND.add(module)
    return module in _FOUND


class SolverBackend:
    """Base class of solver backends; subclasses set the class data and ``solve_lp``."""

    #: Registry key.
    name: ClassVar[str] = ""
    #: Problem forms served: subset of {"lp", "qp", "socp"}.
    forms: ClassVar[frozenset[str]] = frozenset()
    #: Modules that must be importable for the backend to work.
    required_modules: ClassVar[tuple[str, ...]] = ()
    #: Whether the backend re-solves a modified model from the previous basis.
    warm_start: ClassVar[bool] = False
    #: Extra that installs the backend's dependencies, e.g. ``"polytrav[ecos]"``.
    extra: ClassVar[str | None] = None
    #: Whether an "optimal" answer is optimal to the stated tolerances (simplex, interior
    #: point). First-order methods (OSQP, SCS) set False: the traversal then confirms every
    #: "no polytope here" answer of theirs on the fallback backend.
    certifies_optimality: ClassVar[bool] = True

    def __init__(self, options: dict | None = None):
        self.options = dict(options or {})

    @classmethod
    def is_available(cls) -> bool:
        """Whether every required module can be imported (imports nothing)."""
        return all(_importable(m) for m in cls.required_modules)

    def solve_lp(self, c, A_ub, b_ub, A_eq=None, b_eq=None, bounds=None) -> SolveResult:
        """Minimise ``c @ x`` s.t. ``A_ub x <= b_ub``, ``A_eq x == b_eq``, ``lo <= x <= hi``.

        ``A_ub`` and ``A_eq`` are dense arrays or ``scipy.sparse`` matrices; ``bounds`` is a
        pair of arrays ``(lo, hi)`` (``±inf`` for none); ``None`` means free.
        """
        raise NotImplementedError

    def solve_qp(self, P, q, A_ub=None, b_ub=None, A_eq=None, b_eq=None,
                 bounds=None) -> SolveResult:
        """Minimise ``0.5 x·P x + q·x`` subject to the constraints of :meth:`solve_lp`.

        ``P`` is symmetric positive semidefinite, a dense array or a ``scipy.sparse`` matrix;
        ``A_ub``, ``b_ub``, ``A_eq``, ``b_eq`` and ``bounds`` are as in :meth:`solve_lp`.
        Backends without the ``qp`` form raise ``NotImplementedError``.
        """
        raise NotImplementedError(
            f"solver {self.name!r} does not solve QPs (its forms: {sorted(self.forms)}); "
            "pick one from polytrav.available_solvers('qp')"
        )

    def lp_session(self):
        """An object whose ``solve_lp`` (same arguments) may keep state between calls.

        A subproblem solved polytope after polytope uses one session per backend, so a backend
        with an incremental API can re-solve the previous model from its last basis. The
        default is the backend itself (every solve from scratch).
        """
        return self

    def chebyshev_model(self, frame: "Frame", *, box_as_bounds: bool = True) -> "ChebyshevModel":
        """A fresh Chebyshev model over ``frame``'s region (rebuilt per solve by default)."""
        return ChebyshevModel(self, frame, box_as_bounds=box_as_bounds)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


class ChebyshevModel:
    """Chebyshev-centre LP of polytope ∩ region with a stack of flippable neuron-row blocks."""

    def __init__(self, backend: SolverBackend, frame: "Frame", *, box_as_bounds: bool = True):
        self.backend = backend
        self.frame = frame
        self.d = frame.dim
        #: Region rows beyond the frame box ``±u_j <= 1``, then cuts (:meth:`add_region_rows`);
        #: the frame's are shared, never written in place.
        self.region_A = frame.A_extra
        self.region_b = frame.b_extra
        self.blocks: list[list[np.ndarray]] = []  # [A, beta, signs] per level
        self.n_solves = 0
        self.solve_time = 0.0
        # variables: u (d), t, then (p, q) per L1 ball
        self.n_lift = sum(2 * ball.U.shape[0] for ball in frame.l1_balls)
        self.n_vars = self.d + 1 + self.n_lift
        #: High-dimensional boxes keep the box as column bounds only, and ``t`` measures the
        #: neuron rows' slack alone (see :meth:`polytrav.Traversal` for how it is certified).
        self.box_as_bounds = box_as_bounds and frame.is_box and frame.dim > HIGH_DIM

    # ---------------------------------------------------------------- row management
    def push(self, A: np.ndarray, beta: np.ndarray, signs: np.ndarray) -> None:
        """Add a block of neuron rows ``s (a·u + beta) >= t`` (rows of unit norm)."""
        block = [np.asarray(A, float), np.asarray(beta, float), np.asarray(signs, bool).copy()]
        self.blocks.append(block)
        self._sync_push(block)

    def pop(self) -> None:
        """Remove the top block."""
        self._sync_pop(self.blocks[-1])
        self.blocks.pop()

    def set_signs(self, signs: np.ndarray) -> None:
        """Set the top block's signs (True: neuron on)."""
        block = self.blocks[-1]
        signs = np.asarray(signs, bool)
        changed = np.flatnonzero(block[2] != signs)
        if changed.size:
            block[2] = signs.copy()
            self._sync_signs(len(self.blocks) - 1, changed)

    def add_region_rows(self, A: np.ndarray, b: np.ndarray) -> None:
        """Add region rows ``a·u + t <= b`` (valid cuts, e.g. tangents of an L2 ball)."""
        self.region_A = np.vstack([self.region_A, A])
        self.region_b = np.concatenate([self.region_b, b])
        self._sync_region_rows(A, b)

    def halfspaces(self, top_signs: np.ndarray | None = None,
                   box: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Polyhedral rows ``A u <= b`` of the cell (region rows, the frame box ``[-1, 1]^d``
        first unless ``box=False``, then neuron rows).

        ``top_signs`` overrides the top block's signs; L1 balls are left out, so the result
        is an outer hull of the cell.
        """
        rows, rhs = [self.region_A], [self.region_b]
        if box:  # the frame's rows start with [I; -I]
            rows.insert(0, self.frame.A[: 2 * self.d])
            rhs.insert(0, self.frame.b[: 2 * self.d])
        for k, (A, beta, signs) in enumerate(self.blocks):
            if top_signs is not None and k == len(self.blocks) - 1:
                signs = top_signs
            s = np.where(signs, 1.0, -1.0)
            rows.append(-s[:, None] * A)
            rhs.append(s * beta)
        return np.vstack(rows), np.concatenate(rhs)

    # ---------------------------------------------------------------- solving
    def solve(self) -> SolveResult:
        """Maximise ``t``; ``x`` of the result holds ``u`` (length ``d``), ``objective`` is ``t``."""
        t0 = time.perf_counter()
        res = self._solve()
        self.n_solves += 1
        self.solve_time += time.perf_counter() - t0
        return res

    def _solve(self) -> SolveResult:
        A_ub, b_ub, A_eq, b_eq, lo, hi = self.arrays()
        c = np.zeros(self.n_vars)
        c[self.d] = -1.0
        res = self.backend.solve_lp(c, A_ub, b_ub, A_eq, b_eq, (lo, hi))
        if res.x is None:
            return res
        return SolveResult(
            res.status, -res.objective, res.x[: self.d].copy(), None, res.solver,
            res.solve_time, res.iterations, res.message,
            {"t_raw": float(res.x[self.d])},
        )

    def maximize(self, g: np.ndarray) -> SolveResult:
        """Maximise ``g·u`` over the current cell: ``t`` costs nothing (fixed at 0 here; a
        backend may leave it in ``[0, cap]``, where a positive ``t`` only shrinks the cell, so
        the maximum is the same).

        ``x`` of the result holds ``u``, ``objective`` is ``g·u``. The traversal's counters
        (``n_solves``, ``solve_time``) are not touched. The base class solves from scratch.
        """
        A_ub, b_ub, A_eq, b_eq, lo, hi = self.arrays()
        hi[self.d] = 0.0
        c = np.zeros(self.n_vars)
        c[: self.d] = -np.asarray(g, float)
        res = self.backend.solve_lp(c, A_ub, b_ub, A_eq, b_eq, (lo, hi))
        if res.x is None:
            return res
        return SolveResult(res.status, -res.objective, res.x[: self.d].copy(), None, res.solver,
                           res.solve_time, res.iterations, res.message)

    def solve_exact(self) -> SolveResult:
        """The full Chebyshev LP (box rows included) of the current cell, built from scratch."""
        saved = self.box_as_bounds
        self.box_as_bounds = False
        try:
            t0 = time.perf_counter()
            res = ChebyshevModel._solve(self)
            self.n_solves += 1
            self.solve_time += time.perf_counter() - t0
            return res
        finally:
            self.box_as_bounds = saved

    def arrays(self):
        """The whole LP as arrays ``(A_ub, b_ub, A_eq, b_eq, lo, hi)`` over ``(u, t, lifts)``."""
        d, nv = self.d, self.n_vars
        rows, rhs = [], []
        if not self.box_as_bounds:  # else the column bounds are the box
            R = np.zeros((2 * d, nv))
            R[:, :d] = self.frame.A[: 2 * d]
            R[:, d] = 1.0
            rows.append(R)
            rhs.append(self.frame.b[: 2 * d])
        if self.region_A.shape[0]:
            R = np.zeros((self.region_A.shape[0], nv))
            R[:, :d] = self.region_A
            R[:, d] = 1.0
            rows.append(R)
            rhs.append(self.region_b)
        for A, beta, signs in self.blocks:
            s = np.where(signs, 1.0, -1.0)
            N = np.zeros((A.shape[0], nv))
            N[:, :d] = -s[:, None] * A
            N[:, d] = 1.0
            rows.append(N)
            rhs.append(s * beta)
        eq_rows, eq_rhs = [], []
        lo = np.concatenate([-np.ones(d), [0.0], np.zeros(self.n_lift)])
        hi = np.concatenate([np.ones(d), [self.frame.radius_cap], np.full(self.n_lift, np.inf)])
        off = d + 1
        for ball in self.frame.l1_balls:
            n = ball.U.shape[0]
            E = np.zeros((n, nv))
            E[:, :d] = ball.U
            E[:, off : off + n] = -np.eye(n)
            E[:, off + n : off + 2 * n] = np.eye(n)
            eq_rows.append(E)
            eq_rhs.append(-ball.w)
            L = np.zeros((1, nv))
            L[0, off : off + 2 * n] = 1.0
            L[0, d] = ball.kappa
            rows.append(L)
            rhs.append([ball.radius])
            hi[off : off + 2 * n] = ball.radius
            off += 2 * n
        A_eq = np.vstack(eq_rows) if eq_rows else np.zeros((0, nv))
        b_eq = np.concatenate(eq_rhs) if eq_rhs else np.zeros(0)
        A_ub = np.vstack(rows) if rows else np.zeros((0, nv))
        b_ub = np.concatenate([np.asarray(r, float) for r in rhs]) if rhs else np.zeros(0)
        return A_ub, b_ub, A_eq, b_eq, lo, hi

    # ---------------------------------------------------------------- incremental hooks
    def _sync_push(self, block) -> None:
        """Backend hook: a block was pushed."""

    def _sync_pop(self, block) -> None:
        """Backend hook: the top block is about to be removed."""

    def _sync_signs(self, level: int, rows: np.ndarray) -> None:
        """Backend hook: signs of ``rows`` of block ``level`` changed."""

    def _sync_region_rows(self, A, b) -> None:
        """Backend hook: region rows were appended."""
