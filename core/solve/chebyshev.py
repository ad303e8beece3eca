"""The traversal's LP: :class:`ChebyshevModel`, the Chebyshev-centre LP of polytope ∩ region.

Built by :meth:`polytrav.solve.backend.SolverBackend.chebyshev_model`; see that module for
the LP. Neuron rows come in blocks, one per level, pushed and popped like a stack; the base
class rebuilds the LP for each solve.

**Backend extension API.** A backend with an incremental LP API returns a subclass from its
``chebyshev_model`` and keeps one warm-started native model in step with the rows by
overriding :meth:`ChebyshevModel.sync_push`, :meth:`~ChebyshevModel.sync_pop`,
:meth:`~ChebyshevModel.sync_signs` and :meth:`~ChebyshevModel.sync_region_rows` (the base
class's do nothing), then solves that model in place (``solvers/highs.py`` is the pattern).
"""
from __future__ import annotations

import time
import warnings
from typing import TYPE_CHECKING

import numpy as np

from polytrav.model.geometry import HIGH_DIM
from polytrav.vocabulary.results import SolveResult

if TYPE_CHECKING:
    from polytrav.model.geometry import Frame
    from polytrav.solve.backend import SolverBackend

__all__ = ["ChebyshevModel"]


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
        #: neuron rows' slack alone (see :class:`polytrav.traversal.Traversal` for how it is certified).
        self.box_as_bounds = box_as_bounds and frame.is_box and frame.dim > HIGH_DIM

    # ---------------------------------------------------------------- row management
    def push(self, A: np.ndarray, beta: np.ndarray, signs: np.ndarray) -> None:
        """Add a block of neuron rows ``s (a·u + beta) >= t`` (rows of unit norm)."""
        block = [np.asarray(A, float), np.asarray(beta, float), np.asarray(signs, bool).copy()]
        self.blocks.append(block)
        self.sync_push(block)

    def pop(self) -> None:
        """Remove the top block."""
        self.sync_pop(self.blocks[-1])
        self.blocks.pop()

    def set_signs(self, signs: np.ndarray) -> None:
        """Set the top block's signs (True: neuron on)."""
        block = self.blocks[-1]
        signs = np.asarray(signs, bool)
        changed = np.flatnonzero(block[2] != signs)
        if changed.size:
            block[2] = signs.copy()
            self.sync_signs(len(self.blocks) - 1, changed)

    def add_region_rows(self, A: np.ndarray, b: np.ndarray) -> None:
        """Add region rows ``a·u + t <= b`` (valid cuts, e.g. tangents of an L2 ball)."""
        self.region_A = np.vstack([self.region_A, A])
        self.region_b = np.concatenate([self.region_b, b])
        self.sync_region_rows(A, b)

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
        return SolveResult(res.status, objective=-res.objective, x=res.x[: self.d].copy(),
                           duals=None, solver=res.solver, solve_time=res.solve_time,
                           iterations=res.iterations, message=res.message,
                           extras={"t_raw": float(res.x[self.d])})

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
        return SolveResult(res.status, objective=-res.objective, x=res.x[: self.d].copy(),
                           duals=None, solver=res.solver, solve_time=res.solve_time,
                           iterations=res.iterations, message=res.message)

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

    def solve_on(self, backend: SolverBackend) -> SolveResult:
        """This model's rows solved once on another backend, from scratch (a fallback solve).

        The LP of :meth:`solve`, built from :meth:`arrays` and handed to ``backend.solve_lp``;
        this model's own solver state and counters (``n_solves``, ``solve_time``) are not
        touched.
        """
        own = self.backend
        self.backend = backend
        try:
            return ChebyshevModel._solve(self)
        finally:
            self.backend = own

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

    # ---------------------------------------------------------------- backend extension API
    # Called after the rows in ``blocks`` / ``region_A`` changed (``sync_pop``: before the
    # block goes). A backend that rebuilds the LP from ``arrays()`` for every solve, as the
    # base class does, overrides none of them.

    def sync_push(self, block: list[np.ndarray]) -> None:
        """Add the rows of a pushed block to the backend's native model.

        Called by :meth:`push` once ``block`` is the last entry of ``blocks``. A backend with
        an incremental API overrides it; the base class does nothing.

        Parameters
        ----------
        block : list of numpy.ndarray
            ``[A, beta, signs]``: ``A`` of shape ``(m, d)`` with unit rows, ``beta`` of shape
            ``(m,)``, ``signs`` of shape ``(m,)`` (bool, True: neuron on). Row ``j`` of the
            LP is ``s_j (A_j·u + beta_j) - t >= 0`` with ``s_j = +1`` if ``signs[j]``, else
            ``-1``. The arrays belong to the model; read them, never write them.
        """

    def sync_pop(self, block: list[np.ndarray]) -> None:
        """Remove the rows of the top block from the backend's native model.

        Called by :meth:`pop` while ``block`` is still the last entry of ``blocks``. A
        backend with an incremental API overrides it; the base class does nothing.

        Parameters
        ----------
        block : list of numpy.ndarray
            ``[A, beta, signs]`` of the block being removed, as in :meth:`sync_push`.
        """

    def sync_signs(self, level: int, rows: np.ndarray) -> None:
        """Flip the sides of some rows of one block in the backend's native model.

        Called by :meth:`set_signs` after ``blocks[level][2]`` (the signs) was replaced; only
        the rows whose sign changed are named. A backend with an incremental API overrides
        it; the base class does nothing.

        Parameters
        ----------
        level : int
            Index of the block in ``blocks`` (the top block, ``len(blocks) - 1``).
        rows : numpy.ndarray
            Indices (int) of the rows of that block whose sign changed; the new signs are
            ``blocks[level][2][rows]``.
        """

    def sync_region_rows(self, A: np.ndarray, b: np.ndarray) -> None:
        """Add region rows (cuts) to the backend's native model.

        Called by :meth:`add_region_rows` after ``region_A`` and ``region_b`` were extended.
        A backend with an incremental API overrides it; the base class does nothing.

        Parameters
        ----------
        A : numpy.ndarray
            Shape ``(k, d)``: the new rows ``a·u + t <= b``.
        b : numpy.ndarray
            Shape ``(k,)``: their right-hand sides.
        """

    #: The extension hooks' names before they were public, and their public names.
    _RENAMED = {"_sync_push": "sync_push", "_sync_pop": "sync_pop",
                "_sync_signs": "sync_signs", "_sync_region_rows": "sync_region_rows"}

    def __init_subclass__(cls, **kwargs):
        """A subclass that still overrides a hook under its old private name keeps working
        (the method serves as the public hook) and is warned."""
        super().__init_subclass__(**kwargs)
        for old, new in ChebyshevModel._RENAMED.items():
            if old in vars(cls):
                warnings.warn(f"{cls.__qualname__}.{old} is deprecated: ChebyshevModel calls "
                              f"{new}, its public backend hook; rename the method",
                              DeprecationWarning, stacklevel=2)
                if new not in vars(cls):
                    setattr(cls, new, vars(cls)[old])
