"""Lagrangian bounds of linear maxima over a cell: LPs that cannot beat the best are skipped.

An analysis that takes a maximum over all polytopes (``OutputRange``, ``SoftmaxAttack``, a
counterfactual's reachability test) needs a polytope's LP only if its optimum can beat the
best value so far. In frame coordinates the region lies in ``[-1, 1]^d`` and the polytope is
``A u <= b`` (:func:`polytrav.model.cell.cell_rows`, one row per neuron), so for any
multipliers ``lam >= 0`` weak duality gives

    max g·u over polytope ∩ region  <=  phi(lam) = b·lam + ||g - Aᵀ lam||_1,

with ``lam = 0`` the plain box bound. :class:`CellBound` keeps the multipliers of the last
solved cells (neighbouring polytopes share most rows and their optimal multipliers fit each
other) and tries the best of them; if that does not prove the skip, it runs the dual simplex
of :mod:`polytrav.bounds.box_lp` from the box corner, whose iterates are multipliers with a
decreasing ``phi``: it stops at the first that proves the skip, or at the cell's optimum,
which is then certified and needs no LP. The bound is sound for any ``lam``; only how often it
proves a skip depends on the choice. Measured on ``mnist2x10``, eps 0.01: ``OutputRange``
needs the maximum of 6 of its 40 cells and no LP backend at all (before ``box_lp``: 10
HiGHS LPs of 0.6-1 ms each, against a 33 ms traversal).
"""
from __future__ import annotations

from collections import deque

import numpy as np

from polytrav.model.cell import LayerPlanes, cell_rows, layer_planes, signed_cell_rows, stack_planes
from polytrav.bounds.box_lp import BoxLpStatus, dual_bound, maximize_in_box, rounding
from polytrav.vocabulary.tolerances import ACTIVE_TOL, CELL_BOUND_SAFETY

__all__ = ["CellBound", "dual_bound"]

#: Multipliers kept from recently solved LPs.
KEEP = 8


class CellBound:
    """Upper bounds of ``max g·u`` over cells of one run, from recently learnt multipliers."""

    #: Whether :meth:`decide` runs :func:`~polytrav.bounds.box_lp.maximize_in_box` (False: only the
    #: kept multipliers, and every undecided maximum goes to an LP backend).
    use_box_lp: bool = True

    def __init__(self, keep: int = KEEP):
        self.pool: deque[np.ndarray] = deque(maxlen=keep)
        self._current = (None, None)  # (the polytope last asked for, its rows)
        self._planes: LayerPlanes | None = None  # layer_planes per layer, once a frame is known
        self._reach: tuple = (None, None)  # (rows, their L1 norms)
        self._stacked: tuple = ((), None, None)  # (layer planes, stack_planes of them, L1 norms)

    def rows(self, polytope, frame) -> tuple[np.ndarray, np.ndarray]:
        """:func:`~polytrav.model.cell.cell_rows` of ``polytope``, from each layer's planes kept
        while the code before it is unchanged (:class:`~polytrav.model.cell.LayerPlanes`): a
        polytope only applies its signs."""
        if self._current[0] is polytope:
            return self._current[1]
        if not polytope.code:
            rows = cell_rows(polytope, frame)
        else:
            if self._planes is None:
                self._planes = LayerPlanes(lambda W, b: layer_planes(frame, W, b))
            planes = self._planes(polytope)
            if len(planes) != len(self._stacked[0]) or any(
                    p is not q for p, q in zip(planes, self._stacked[0])):
                stacked = stack_planes(planes)
                self._stacked = (planes, stacked, np.abs(stacked[0]).sum(axis=1))
            rows = signed_cell_rows(polytope.code, self._stacked[1])
            self._reach = (rows[0], self._stacked[2])  # the L1 norms do not depend on signs
        self._current = (polytope, rows)
        return rows

    @staticmethod
    def _limit(g: np.ndarray, beat: float) -> tuple[float, float]:
        """``(||g||_1, the value a bound must not exceed to prove max g·u <= beat)``."""
        norm = float(np.abs(g).sum())
        return norm, beat - CELL_BOUND_SAFETY * (1.0 + abs(beat) + norm)

    def box_below(self, g: np.ndarray, beat: float) -> bool:
        """Whether ``lam = 0`` (the box ``[-1, 1]^d`` alone) proves ``max g·u <= beat``; needs
        no rows."""
        norm, limit = self._limit(g, beat)
        return norm <= limit

    def decide(self, A: np.ndarray, b: np.ndarray, g: np.ndarray,
               beat: float) -> tuple[bool, np.ndarray | None]:
        """Whether ``max g·u`` over ``{A u <= b} ∩ [-1, 1]^d`` can exceed ``beat``.

        Returns ``(True, None)`` when multipliers prove ``max g·u <= beat``: the box, the kept
        ones, then the iterates of :func:`~polytrav.bounds.box_lp.maximize_in_box` from the box corner.
        Otherwise ``(False, u)`` with ``u`` a certified maximiser, or ``(False, None)`` when
        the dual simplex left it undecided (then solve the LP and :meth:`learn`).
        """
        norm, limit = self._limit(g, beat)
        if norm <= limit:
            return True, None
        if self._reach[0] is not A:  # the rows' L1 norms, once per cell (both senses use them)
            self._reach = (A, np.abs(A).sum(axis=1))
        reach = self._reach[1]
        pool = [lam for lam in self.pool if lam.shape == b.shape]
        if pool:
            L = np.stack(pool)  # one multiplier per row
            phis = L @ b + np.abs(g - L @ A).sum(axis=1)
            if np.min(phis + rounding(L, reach + np.abs(b))) <= limit:
                return True, None
        if not self.use_box_lp:
            return False, None
        res = maximize_in_box(A, b, g, stop=limit, reach=reach)
        if res.lam.any() and np.isfinite(res.lam).all():
            self.pool.append(res.lam)
        return res.status is BoxLpStatus.BOUND, res.u

    def learn(self, A: np.ndarray, b: np.ndarray, g: np.ndarray, u: np.ndarray) -> None:
        """Keep the multipliers of a solved ``max g·u`` with maximiser ``u``: least squares
        on the KKT conditions (rows active at ``u``, coordinates strictly inside the box),
        clipped at 0. Only the bounds' strength depends on them."""
        active = np.flatnonzero(b - A @ u <= ACTIVE_TOL)
        lam = np.zeros(b.shape[0])
        if active.size:
            inside = np.abs(u) < 1.0 - ACTIVE_TOL
            if inside.any():
                sol = np.linalg.lstsq(A[np.ix_(active, inside)].T, g[inside], rcond=None)[0]
                lam[active] = np.maximum(sol, 0.0)
        self.pool.append(lam)
