"""Per polytope: the nearest point of each target class, folded into the best (:class:`Search`).

A class's cell is skipped when a bound (:class:`~.bound.DistanceBounds`) cannot beat the
best or the class cannot even beat ``x0``'s on it; otherwise its minimiser comes from the
first path that decides it: the closed-form projection, the direct L∞ LP
(:class:`~.direct.DirectLinf`), the compiled subproblem (:class:`~.subproblem.CellSubproblems`);
with discrete features, that optimum is the relaxation's and the cell's MILP follows
(:class:`~.discrete.DiscreteCells`).

Those paths solve over the *closed* class set (``K u + h >= 0``), whose nearest point is the
infimum over the open one (the class wins strictly: a tie is no class) only where the open
set is not empty. A minimiser that would become the best is therefore taken only if the cell
reaches the class by more than :data:`~polytrav.vocabulary.tolerances.RADIUS_TOL`
(:meth:`Search.reaches`): on a cell where the class only ties (a dead ReLU output that is 0
throughout), it is not a counterfactual (``ties`` counts them).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from polytrav.extend import cell_values
from polytrav.plugins.counterfactual.bound import DistanceBounds, halfspace_distance
from polytrav.plugins.counterfactual.direct import DirectLinf
from polytrav.plugins.counterfactual.discrete import DiscreteCells
from polytrav.plugins.counterfactual.state import NOTHING_NEARER, ClassCell
from polytrav.plugins.counterfactual.subproblem import CellSubproblems
from polytrav.extend import Status, RADIUS_TOL, REACH_TOL, cell_linear_program

if TYPE_CHECKING:
    from polytrav.extend import Analysis
    from polytrav.extend import Polytope
    from polytrav.plugins.counterfactual.problem import Problem
    from polytrav.plugins.counterfactual.state import Best

__all__ = ["Search"]


class Search:
    """The per-polytope part of one run on ``context``'s frame; the solves it makes through
    ``owner`` (the analysis) count there, its parts' in :attr:`part_solves`. ``skipped`` counts the classes a bound or the reach
    check skipped, ``n_projections`` the cells the closed form settled, ``ties`` the cells
    whose nearest point of a class was not taken because the class only ties there."""

    def __init__(self, owner: Analysis, problem: Problem, context, *, search: str,
                 closed_form: bool, direct_linf: bool):
        fr, net = context.frame, context.network
        self.owner, self.problem = owner, problem
        self.prune = search != "shrink"  # skip by the bounds (shrink: only by the region)
        self.bounds = DistanceBounds(problem, net)
        self.subproblems = CellSubproblems(owner.name, problem, fr, net.n_neurons)
        self.skipped = self.n_projections = self.ties = 0
        # coordinates a closed-form minimiser may move (free in the frame, not immutable)
        self.movable = None
        if closed_form and fr.free is not None:
            self.movable = np.zeros(net.n_inputs)
            self.movable[fr.free] = 1.0
            self.movable[problem.immutable] = 0.0
        self.direct = (DirectLinf(problem, fr) if direct_linf and problem.p == np.inf
                       and fr.is_box and fr.free is not None else None)
        self.discrete = None if problem.integrality is None else DiscreteCells(owner, problem)

    @property
    def part_solves(self) -> int:
        """Solver calls of the direct L∞ LP and the discrete step."""
        return sum(part.solves for part in (self.direct, self.discrete) if part is not None)

    def fold(self, polytope: Polytope, context, best: Best) -> bool:
        """Fold the polytope's nearest point of each target class into ``best``; whether
        it improved."""
        fr, prune, problem = context.frame, self.prune, self.problem
        cell_lb = self.bounds.cell(polytope) if prune else 0.0
        if cell_lb >= best.distance:
            self.skipped += len(problem.targets)
            return False
        values = None
        improved = False
        class_lb, in_reach = self.bounds.classes(polytope, fr)
        for q, lb, reach in zip(problem.targets, class_lb, in_reach):
            if (prune and max(cell_lb, lb) >= best.distance) or not reach:
                self.skipped += 1  # too far, or out of reach on the region's bounding box
                continue
            G, g = problem.class_rows(polytope, q)
            K, h = fr.pull(G), G @ fr.origin + g
            norms = np.linalg.norm(K, axis=1)
            norms[norms == 0] = 1.0
            K, h = K / norms[:, None], h / norms
            if self.unreachable(context, polytope, K, h, q):
                self.skipped += 1  # class q cannot even beat x0's class on this cell
                continue
            values = values or cell_values(polytope, fr)
            u = self.projection(fr, values, G, g, K, h)
            if u is None and self.direct is not None:
                u = self.direct.solve(context, values, K, h, best.distance)
            if u is None:
                res = self.owner.solve(context, self.subproblems.distance(), polytope, K=K, h=h,
                                       shift=self.subproblems.shift(),
                                       **values)
                if res.status is not Status.OPTIMAL:
                    continue
                u = res.x
            elif u is NOTHING_NEARER:  # the direct LP proved nothing better than d* here
                continue
            if self.discrete is not None:  # u is the relaxation's optimum
                u = self.discrete.step(context, polytope, values, K, h, norms, u, q, best)
                if u is None:
                    continue
            x = fr.to_x(u)
            dist = problem.distance(x)
            if dist < best.distance:
                if self.discrete is None and not self.reaches(context, polytope, values, K, h):
                    self.ties += 1
                    continue
                best.take(dist, x, q, ClassCell(values, K, h, u))
                improved = True
        return improved

    def reaches(self, context, polytope, values, K, h) -> bool:
        """Whether some point of polytope ∩ region has the class strictly, by more than
        ``RADIUS_TOL`` on every (unit) class row: ``max t`` s.t. ``K u + h >= t`` over the
        cell, unless the polytope's interior point already shows it. False also when the LP
        is undecided (recorded as a failure: the answer is then not exact)."""
        fr = context.frame
        held = [j for j in self.problem.immutable if np.abs(fr.U[j]).max() > 0]
        if not held and (K @ fr.to_u(polytope.interior_point) + h).min() > RADIUS_TOL:
            return True
        lp = None if held else cell_linear_program(fr, values, M=-K, r=h)
        if lp is not None:
            res = self.owner.solve(context, lp, polytope)
        else:  # norm balls or held inputs: the witness's step problem over the whole frame box
            res = self.owner.solve(context, self.subproblems.step(), polytope, K=K, h=h,
                                   center=np.zeros(fr.dim), delta=np.array(2.0), **values)
        return res.status is Status.OPTIMAL and res.objective > RADIUS_TOL

    def projection(self, fr, values, G, g, K, h):
        """The nearest point to ``x0`` of the class row farthest from it, if it lies in the
        cell, the region and the class (exactly: no tolerance): then it is the cell's
        minimiser (no point of the cell's class set, which that row's halfspace contains, is
        nearer), found without an LP. Its frame point ``u``, or None."""
        if self.movable is None:
            return None
        x0, p, unit = self.problem.x0, self.problem.p, self.problem.unit
        Gm = G * self.movable  # the held coordinates keep x0's values: their share goes to g
        dist = halfspace_distance(Gm, g + (G - Gm) @ x0, x0, self.problem.dual, unit)
        i = int(np.argmax(dist))
        if not 0.0 < dist[i] < np.inf:
            return None  # x0 already satisfies the rows (distance 0) or a row cannot move
        # step dist[i] along the unit vector (in the norm p of the scaled coordinates
        # (x - x0) / unit, where the row is Gm unit) that moves the row most
        row = Gm[i] * unit
        if p == np.inf:
            step = np.sign(row) * dist[i]
        elif p == 2:
            step = row * (dist[i] / np.linalg.norm(row))
        else:
            j = int(np.argmax(np.abs(row)))
            step = np.zeros_like(row)
            step[j] = np.sign(row[j]) * dist[i]
        u = fr.to_u(x0 + step * unit)
        # no tolerance: a point slightly outside a row nearly parallel to row i can be far
        # from the cell's true minimiser (row i itself holds by construction, up to rounding)
        slack = K @ u + h
        slack[i] = 0.0
        if slack.min() < 0.0 or (values["A"] @ u - values["b"]).max() > 0.0 \
                or not fr.contains_u(u, 0.0):
            return None
        self.n_projections += 1
        return u

    def unreachable(self, context, polytope, K, h, q: int) -> bool:
        """Whether class ``q``'s margin over ``x0``'s class stays below ``-REACH_TOL`` on the
        cell: its maximum at the vertices, or by an LP in the traversal's warm model."""
        problem = self.problem
        top = 0 if problem.binary else \
            [i for i in range(problem.n_out) if i != q].index(problem.class0)
        if polytope.vertices is not None:
            return float(np.max(polytope.vertices @ K[top])) + h[top] < -REACH_TOL
        res = self.owner.maximize_linear(context, polytope, K[top], beat=-REACH_TOL - h[top])
        return res is None or (res.status is Status.OPTIMAL and res.objective + h[top] < -REACH_TOL)
