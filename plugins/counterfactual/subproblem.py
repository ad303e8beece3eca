"""The compiled cvxpy subproblems of a counterfactual run on one frame
(:class:`CellSubproblems`): the distance to a class on a cell, and the step past its boundary."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from polytrav.extend import CellProblem

if TYPE_CHECKING:
    from polytrav.extend import Frame
    from polytrav.plugins.counterfactual.problem import Problem
    from polytrav.extend import Subproblem

__all__ = ["CellSubproblems"]


class CellSubproblems:
    """Compiled on first use (:func:`~polytrav.solve.subproblem.compiled`, keyed by the
    analysis, the frame and the held inputs; the direct L∞ path may never need them)."""

    def __init__(self, name: str, problem: Problem, frame: Frame, n_rows: int):
        self.name, self.problem, self.frame, self.n_rows = name, problem, frame, n_rows
        self.k = 1 if problem.binary else problem.n_out - 1  # class rows
        imm = problem.immutable
        self.fixed = (tuple(imm.tolist()), problem.x0[imm].tobytes())
        # the distance's coordinates (x - x0) / unit = (U u + origin - x0) / unit, in units
        # of the region's size (``scale``)
        self.U = frame.U / problem.unit[:, None]
        scales = self.U if frame.free is None else frame.scale / problem.unit[frame.free]
        self.scale = float(np.abs(scales).max())
        self.units = None if problem.scale is None else problem.unit.tobytes()

    def shift(self) -> np.ndarray:
        """The ``shift`` parameter of :meth:`distance`: ``(origin - x0) / unit / scale``."""
        return (self.frame.origin - self.problem.x0) / self.problem.unit / self.scale

    def distance(self) -> Subproblem:
        """``min ||(x - x0) / unit||_p / scale`` over the cell with ``K u + h >= 0``
        (``shift`` carries x0, :meth:`shift`)."""
        from polytrav.extend import compiled

        key = (self.name, self.problem.p, self.frame.fingerprint, self.n_rows, self.k, self.fixed,
               self.units)
        return compiled(key, self.build_distance)

    def step(self) -> Subproblem:
        """``maximise t`` over the cell with ``K u + h >= t``, ``t <= 1``,
        ``|u - center| <= delta``."""
        from polytrav.extend import compiled

        key = (self.name + ":step", self.frame.fingerprint, self.n_rows, self.k, self.fixed)
        return compiled(key, self.build_step)

    def held(self, cell: CellProblem) -> list:
        """The immutable inputs' constraints ``x_j = x0_j`` (those the frame moves)."""
        fr, x0 = cell.frame, self.problem.x0
        return [fr.U[j] @ cell.u == x0[j] - fr.origin[j]
                for j in self.problem.immutable if np.abs(fr.U[j]).max() > 0]

    def build_distance(self) -> Subproblem:
        import cvxpy as cp
        import scipy.sparse as sp

        from polytrav.extend import Subproblem

        fr = self.frame
        cell = CellProblem(fr, self.n_rows)
        K, h = cp.Parameter((self.k, fr.dim), name="K"), cp.Parameter(self.k, name="h")
        shift = cp.Parameter(fr.origin.shape[0], name="shift")  # (origin - x0) / unit / scale
        U = fr.U_sparse() if self.units is None else sp.csr_matrix(self.U)
        diff = (U / self.scale) @ cell.u + shift
        objective = {1: cp.norm1, 2: cp.sum_squares, np.inf: cp.norm_inf}[self.problem.p](diff)
        cons = cell.constraints + [K @ cell.u + h >= 0] + self.held(cell)
        return Subproblem(cp.Problem(cp.Minimize(objective), cons), {"u": cell.u})

    def build_step(self) -> Subproblem:
        import cvxpy as cp

        from polytrav.extend import Subproblem

        fr = self.frame
        cell = CellProblem(fr, self.n_rows)
        K, h = cp.Parameter((self.k, fr.dim), name="K"), cp.Parameter(self.k, name="h")
        t = cp.Variable(name="t")
        center = cp.Parameter(fr.dim, name="center")
        delta = cp.Parameter(nonneg=True, name="delta")
        cons = cell.constraints + [K @ cell.u + h >= t, t <= 1.0, cell.u - center <= delta,
                                   center - cell.u <= delta] + self.held(cell)
        return Subproblem(cp.Problem(cp.Maximize(t), cons), {"u": cell.u})
