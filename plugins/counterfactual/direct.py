"""The L∞ subproblem on a box region by a direct LP (the package docstring, "Direct L∞
path"): :class:`DirectLinf`, set up once per run."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from polytrav.plugins.counterfactual.state import NOTHING_NEARER
from polytrav.extend import Status, solve_along

if TYPE_CHECKING:
    from polytrav.extend import Frame
    from polytrav.plugins.counterfactual.problem import Problem

__all__ = ["DIRECT_S_MAX", "DirectLinf"]

#: Upper bound of the direct L∞ LP's scaled variable ``s' = R / r``: distances below
#: ``R / DIRECT_S_MAX`` count as 0 (``x0`` on the class boundary).
DIRECT_S_MAX = 1e9


class DirectLinf:
    """The Charnes-Cooper LP in ``(e, s')`` on a box frame (``frame.free`` not None);
    ``solves`` counts its solver calls."""

    def __init__(self, problem: Problem, frame: Frame):
        self.solves = 0
        self.sigma = sigma = frame.scale / problem.unit[frame.free]  # a u-step in distance
        self.u0 = u0 = frame.to_u(problem.x0)
        down, up = (1.0 + u0) * sigma, (1.0 - u0) * sigma  # x0's distance to each side
        held = np.isin(frame.free, problem.immutable)  # immutable frame coordinates
        self.far = far = float(max(down.max(), up.max()))  # every point of the region is this close
        # sides that need a row: nearer than the farthest (1e-9: the ball's own faces,
        # rounded, are not nearer); the same set at every polytope, so the LP keeps its
        # shape and the warm session re-solves it
        self.near = [(np.flatnonzero((side > 0) & (side < far * (1 - 1e-9)) & ~held), side, sign)
                     for side, sign in ((down, -1.0), (up, 1.0))]
        self.lo = np.append(np.where((down > 0) & ~held, -1.0, 0.0), 1.0)
        self.hi = np.append(np.where((up > 0) & ~held, 1.0, 0.0), DIRECT_S_MAX)
        self.sessions: dict = {}  # one warm session per backend of the chain

    def solve(self, context, values: dict, K: np.ndarray, h: np.ndarray, best: float):
        """The minimiser ``u``, :data:`NOTHING_NEARER` if no point of the cell within the
        best distance ``best`` reaches the class, or None if the LP is undecided (the caller
        then solves the compiled subproblem)."""
        sigma, u0 = self.sigma, self.u0
        R = min(best, self.far)
        if not R > 0:
            return None
        G = np.vstack([values["A"], -K])
        g = np.concatenate([values["b"], h])
        d = u0.shape[0]
        rows = [np.hstack([G / sigma, -((g - G @ u0) / R)[:, None]])]
        for near, side, sign in self.near:  # sign * e_j <= (side_j / R) s'
            if near.size:
                M = np.zeros((near.size, d + 1))
                M[np.arange(near.size), near] = sign
                M[:, d] = -side[near] / R
                rows.append(M)
        A_ub = np.vstack(rows)
        c = np.zeros(d + 1)
        c[d] = -1.0  # maximise s' (the distance is R / s')
        bounds = (self.lo, self.hi)
        sessions = self.sessions

        def attempt(backend):
            if backend not in sessions:
                sessions[backend] = backend.lp_session()
            return sessions[backend].solve_lp(c, A_ub, np.zeros(A_ub.shape[0]), bounds=bounds)

        res, tried = solve_along(context.backends("lp"), attempt)
        self.solves += tried
        if res.status is Status.OPTIMAL:
            e, s = res.x[:d], res.x[d]
            return u0 + (R / s) * e / sigma
        if res.status is Status.INFEASIBLE:  # certified: solve_along settles on nothing less
            return NOTHING_NEARER
        return None
