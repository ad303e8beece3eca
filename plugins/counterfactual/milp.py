"""The region's MILP of a best-first search (the package docstring, "The MILP"):
:class:`MilpStep` plans it and runs it once, at a visit, when the work it waits for is done.
For an L2 distance the same step runs the neuron branch and bound of
:class:`~polytrav.bounds.nearest.NearestL2` (QP relaxations) instead: no MILP states it."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from polytrav.extend import Box, Polytope, LP_BOUND_TOL

if TYPE_CHECKING:
    from polytrav.extend import Analysis
    from polytrav.plugins.counterfactual.problem import Problem
    from polytrav.plugins.counterfactual.search import Search
    from polytrav.plugins.counterfactual.state import Best

__all__ = ["L2_AFTER", "MILP_AFTER", "MILP_EARLY", "MILP_EARLY_BINARIES", "MilpStep"]

#: Polytopes and level-1 pieces a best-first search handles before the MILP (package
#: docstring) is tried: a count, not seconds, so that the path to an answer does not depend on
#: the machine's load. The L1 rows of a 30-8-8 MLP need at most 220 (median 20), L∞ 97.
MILP_AFTER = 500
#: Earlier, at these counts, the MILP runs if the box of the best distance so far leaves at
#: most :data:`MILP_EARLY_BINARIES` unstable neurons (CROWN's bounds there, about 15 ms on a
#: 14-64-64 MLP): a MILP of 10-60 binaries settles in well under a second, one of 95 takes
#: 5-30 s, which the traversal's next polytopes often save by shrinking the box.
MILP_EARLY = (100, 200, 400)
MILP_EARLY_BINARIES = 60
#: An L2 distance's branch and bound runs at this count (or ``milp_after``, if smaller):
#: after ``x0``'s own polytope (its nearest point of another class there, if any, is a first
#: radius); in 30 dimensions the search proves the optimum long before the traversal would.
L2_AFTER = 1


class MilpStep:
    """The MILP of one run: ``due`` is the count at which it runs (None: it will not, or it
    ran); ``steps`` is the count of polytopes and level-1 pieces handled at the last visit,
    ``checked`` the counts :meth:`run_if_due` has looked at. ``info`` says what it did, ``why_not`` why it will not
    run (where the user asked for it), ``proved`` whether its bound proved the best."""

    def __init__(self, owner: Analysis, problem: Problem):
        self.owner, self.problem = owner, problem
        self.solves = 0  # its solver calls
        self.due: int | None = None
        self.steps = self.checked = 0
        self.info: dict | None = None
        self.why_not: str | None = None
        self.proved = False

    @property
    def form(self) -> str:
        """The problem form of the step's solves: ``"milp"``, or ``"qp"`` for L2's branch
        and bound."""
        return "qp" if self.problem.p == 2 else "milp"

    @property
    def details(self) -> dict | str | None:
        """``details["milp"]``: what it did, or why it did not run (None: not asked for)."""
        return self.info or self.why_not

    def plan(self, context, milp_after: int | None, search: str) -> None:
        """When the MILP is due (polytopes and pieces handled), or never (``due`` None, the
        reason in ``why_not`` where the user asked for it)."""
        if milp_after is None or search != "best-first":
            return
        why = None
        if not isinstance(context.region, Box):
            why = f"the region is a {type(context.region).__name__}, not a Box"
        elif context.within is not None:
            why = "a run in parts"
        elif not context.backends(self.form, required=False):
            why = f"no backend serves the {self.form!r} form"
        if why is not None:
            self.why_not = why
            return
        self.due = min(milp_after, L2_AFTER) if self.problem.p == 2 else milp_after

    def run_if_due(self, context, search: Search, best: Best) -> None:
        """Run the MILP once: at the first count at or after ``due``, or at an earlier count
        of :data:`MILP_EARLY` where its box is small (:meth:`run`). The count is the
        polytopes visited (this one included) and the level-1 pieces the run asked the bound
        of (``context.n_pieces_bounded``); each count since the last call is checked in turn,
        as if it were checked when it was reached: between the counts of a visit, the pieces
        change neither the best nor the box."""
        if self.due is not None:
            self.steps = self.owner.n_polytopes + context.n_pieces_bounded
        while self.due is not None and self.checked < self.steps:
            step, self.checked = self.checked, self.checked + 1
            if step >= self.due:
                self.run(context, step, search, best)
            elif step in MILP_EARLY and np.isfinite(best.distance) and self.problem.p != 2:
                self.run(context, step, search, best, max_binaries=MILP_EARLY_BINARIES)

    def run(self, context, step: int, search: Search, best: Best,
            max_binaries: int | None = None) -> None:
        """:meth:`~polytrav.bounds.milp.RegionMilp.closest` over the region's box within the
        best distance so far; a nearer point becomes the best, and a bound that reaches the
        best distance proves it. With ``max_binaries``, only if the box leaves at most that
        many unstable neurons (else it is not run, and stays due)."""
        from polytrav.extend import MILP_TIME_SHARE, RegionMilp

        problem, x0 = self.problem, self.problem.x0
        r = best.distance
        unit = None if problem.scale is None else problem.unit
        lo, hi = context.region.lower.copy(), context.region.upper.copy()
        if np.isfinite(r):
            lo, hi = np.maximum(lo, x0 - r * problem.unit), np.minimum(hi, x0 + r * problem.unit)
        lo[problem.immutable] = hi[problem.immutable] = x0[problem.immutable]
        left = context.time_left()
        if problem.p == 2:
            from polytrav.extend import NearestL2

            nearest = NearestL2(context.network, lo, hi, x0, unit=unit)
            self.due = None  # once
            out = nearest.closest(problem.pairs(), context.backends("qp"), radius=r,
                                  time_limit=None if left is None else MILP_TIME_SHARE * left)
        else:
            ball = (x0, r) if problem.p == 1 and np.isfinite(r) else None  # L1-ball bounds
            milp = RegionMilp(context.network, lo, hi, l1_ball=ball, unit=unit,
                              integrality=problem.integrality)
            if max_binaries is not None and milp.binaries > max_binaries:
                return
            self.due = None  # once
            out = milp.closest(x0, problem.p, problem.pairs(), context.backends("milp"),
                               radius=r, unit=unit,
                               time_limit=None if left is None else MILP_TIME_SHARE * left)
        self.solves += out.solves
        if out.point is not None and out.distance < best.distance:
            # the exact optimum on the point's polytope, with the cell its witness needs
            search.fold(Polytope.of_point(out.point, context.network, context.region),
                        context, best)
            q = problem.targets[out.conjunction]
            if out.distance < best.distance - LP_BOUND_TOL * (1 + out.distance) and \
                    problem.has_class(q)(context.network.forward(out.point)):
                # the point met its cell's rows to the MILP's tolerance only, and a forward
                # pass gives it the class strictly (not a tie): it is the best
                best.take(out.distance, out.point, q, None)
        d = best.distance
        # no point anywhere (d infinite) is proven only by an infinite bound: inf <= inf + tol
        self.proved = out.bound is not None and (
            out.bound == np.inf if np.isinf(d) else d <= out.bound + LP_BOUND_TOL * (1 + d))
        self.info = {"binaries": out.binaries, "seconds": out.seconds,
                     "bound": out.bound, "proved": self.proved, "after": step}
        if problem.p == 2:
            self.info.update(method="branch and bound", nodes=out.nodes)
        if out.reason:
            self.info["reason"] = out.reason
