"""The returned point: near the best boundary point, of the class a forward pass confirms
(:class:`WitnessFinder`; run once, for the best)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from polytrav.extend import check_witness
from polytrav.plugins.counterfactual.discrete import discrete_rows, rows_at
from polytrav.extend import Status, solve_along, COUNTERFACTUAL_STEP

if TYPE_CHECKING:
    from polytrav.plugins.counterfactual.problem import Problem
    from polytrav.plugins.counterfactual.state import ClassCell
    from polytrav.plugins.counterfactual.subproblem import CellSubproblems

__all__ = ["WitnessFinder"]

#: The relative steps beyond the boundary point tried in turn.
STEPS = COUNTERFACTUAL_STEP * 10.0 ** np.arange(0, 5)


class WitnessFinder:
    """A point near the boundary point ``x_star`` whose class ``q`` a forward pass confirms."""

    def __init__(self, problem: Problem, subproblems: CellSubproblems):
        self.problem, self.subproblems = problem, subproblems

    def realise(self, context, q: int, x_star: np.ndarray, cell: ClassCell | None):
        """:meth:`beyond_on_ray`, else :meth:`beyond_by_lp` in ``cell`` (None for the MILP's
        point); with discrete features, :meth:`discrete`. None if nothing is confirmed."""
        if self.problem.integrality is not None:
            return self.discrete(context, q, x_star, cell)
        x = self.beyond_on_ray(context, q, context.frame.to_u(x_star))
        if x is not None or cell is None:
            return x
        return self.beyond_by_lp(context, q, cell.values, cell.K, cell.h, cell.u)

    def beyond_on_ray(self, context, q: int, u_star: np.ndarray):
        """The first point a relative ``delta`` beyond the boundary point on the ray from
        ``x0`` that has class ``q``, for growing ``delta`` (no LP; immutable coordinates
        keep their values)."""
        x0 = self.problem.x0
        wanted = self.problem.has_class(q)
        ray = context.frame.to_x(u_star) - x0
        for delta in STEPS:
            cand = x0 + (1.0 + delta) * ray
            if check_witness(context.network, context.region, cand, wanted):
                return cand
        return None

    def beyond_by_lp(self, context, q: int, values, K, h, u_star):
        """``maximise t`` over polytope ∩ region ∩ ``{K u + h >= t}`` within an L∞ box of
        half-width ``delta`` (normalised units) around ``u_star``, for growing ``delta``,
        until the maximiser's class ``q`` is confirmed by a forward pass."""
        step = self.subproblems.step()
        wanted = self.problem.has_class(q)
        for delta in STEPS:
            res = context.solve(step, K=K, h=h, center=u_star, **values,
                                delta=np.array(delta))
            if res.status is not Status.OPTIMAL or res.objective <= 0:
                continue
            cand = context.frame.to_x(res.x)
            if check_witness(context.network, context.region, cand, wanted):
                return cand
        return None

    def discrete(self, context, q: int, x_star: np.ndarray, cell: ClassCell | None):
        """A valid point near ``x_star`` whose class a forward pass confirms
        (:meth:`snapped`, else :meth:`by_lp` in the cell; None for the MILP's point)."""
        x = self.snapped(context, q, x_star)
        if x is not None or cell is None:
            return x
        return self.by_lp(context, q, x_star, cell)

    def snapped(self, context, q: int, x_star: np.ndarray):
        """``x_star`` with its discrete inputs snapped to their values, then its continuous
        inputs a relative ``delta`` further from ``x0``, if a forward pass confirms it."""
        spec, x0 = self.problem.integrality, self.problem.x0
        wanted = self.problem.has_class(q)
        x = spec.snap(x_star)
        free = np.ones(x0.shape[0], bool)
        free[spec.discrete] = False
        free[self.problem.immutable] = False
        for delta in np.concatenate([[0.0], STEPS]):
            cand = x.copy()
            cand[free] = x0[free] + (1.0 + delta) * (x[free] - x0[free])
            if check_witness(context.network, context.region, cand, wanted):
                return cand
        return None

    def by_lp(self, context, q: int, x_star: np.ndarray, cell: ClassCell):
        """``maximise t`` over the cell (``K u + h >= t``, ``t <= 1``) with the discrete
        inputs held at ``x_star``'s snapped values and the others within ``delta`` (L∞, frame
        units) of ``x_star``, for growing ``delta``; the first point a forward pass confirms."""
        spec, net, region = self.problem.integrality, context.network, context.region
        wanted = self.problem.has_class(q)
        x = spec.snap(x_star)
        fr = context.frame
        K = cell.K
        A, b, A_eq, b_eq, lo, hi, _ = discrete_rows(self.problem, fr, cell.values, K, cell.h)
        dim, n_col = fr.dim, A.shape[1]
        held = rows_at(spec, x)  # the snapped point's k and z columns
        u_star = fr.to_u(x_star)
        lo, hi = lo.copy(), hi.copy()
        lo[dim:], hi[dim:] = held, held
        rows = np.hstack([A, np.zeros((A.shape[0], 1))])
        rows[A.shape[0] - K.shape[0]:, n_col] = 1.0  # -K u + t <= h
        cost = np.zeros(n_col + 1)
        cost[n_col] = -1.0
        for delta in STEPS:
            box_lo, box_hi = lo.copy(), hi.copy()
            box_lo[:dim] = np.maximum(lo[:dim], u_star - delta)
            box_hi[:dim] = np.minimum(hi[:dim], u_star + delta)

            def attempt(backend, box_lo=box_lo, box_hi=box_hi):
                return backend.solve_lp(cost, rows, b, np.hstack([A_eq, np.zeros((A_eq.shape[0], 1))]),
                                        b_eq, bounds=(np.append(box_lo, -np.inf),
                                                      np.append(box_hi, 1.0)))

            res, _ = solve_along(context.backends("lp"), attempt)
            if res.status is not Status.OPTIMAL or -res.objective <= 0:
                continue
            cand = spec.snap(fr.to_x(res.x[:dim]))
            if check_witness(net, region, cand, wanted):
                return cand
        return None
