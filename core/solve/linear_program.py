"""An LP stated in arrays: a subproblem that an LP backend solves as it is, with no cvxpy.

A :class:`~polytrav.solve.subproblem.Subproblem` is a cvxpy problem compiled once to the
backends' standard form: general, but cvxpy takes about a second to import, which is most
of a one-second verification. An analysis whose per-polytope problem is an LP over a
polyhedral region states it as a :class:`LinearProgram` instead: ``min`` (or ``max``)
``c·z`` subject to ``A_ub z <= b_ub`` and ``lo <= z <= hi``, ``z`` the named variables one
after another. Solved along a run's backend chain as a subproblem is (``context.solve``), it
gives the same :class:`~polytrav.vocabulary.results.SolveResult`; a backend that solves cvxpy
problems itself (``cvxpy:<NAME>``) gets the same LP as a cvxpy problem.
"""
from __future__ import annotations

import time

import numpy as np

from polytrav.vocabulary.results import SOLUTION_PRESENT, SolveResult

__all__ = ["LinearProgram"]


class LinearProgram:
    """``min`` (``maximize=True``: ``max``) ``c·z`` s.t. ``A_ub z <= b_ub``, ``lo <= z <= hi``.

    ``variables`` names the blocks of ``z`` in order with their sizes (``{"u": d, "t": 1}``):
    a solve's ``x`` is the first block, ``extras["values"]`` every block by name, and
    ``objective`` is ``c·z`` at the solution, in the problem's own sense.
    """

    form = "lp"

    def __init__(self, c, A_ub, b_ub, lo, hi, variables: dict[str, int], *,
                 maximize: bool = False):
        self.c = np.asarray(c, float)
        self.A_ub, self.b_ub = np.asarray(A_ub, float), np.asarray(b_ub, float)
        self.lo, self.hi = np.asarray(lo, float), np.asarray(hi, float)
        self.variables = dict(variables)
        self.sense = -1 if maximize else 1
        if sum(self.variables.values()) != self.c.shape[0]:
            raise ValueError(f"LinearProgram: the variables {self.variables} do not add up "
                             f"to the {self.c.shape[0]} columns")

    def solve(self, backend, **values) -> SolveResult:
        """Solve on ``backend`` (no parameters: ``values`` must be empty)."""
        if values:
            raise TypeError(f"LinearProgram.solve: an LP in arrays has no parameters, got "
                            f"{sorted(values)}")
        if backend.solves_cvxpy:
            return self._as_cvxpy().solve(backend)
        t0 = time.perf_counter()
        res = backend.solve_lp(self.sense * self.c, self.A_ub, self.b_ub,
                               bounds=(self.lo, self.hi))
        z = res.x if res.status in SOLUTION_PRESENT else None
        blocks = {} if z is None else self._split(np.asarray(z, float))
        return SolveResult(res.status, objective=None if z is None else float(self.c @ z),
                           x=None if z is None else next(iter(blocks.values())), duals=None,
                           solver=backend.name, solve_time=time.perf_counter() - t0,
                           iterations=res.iterations, message=res.message,
                           extras={**res.extras, "values": blocks, "form": self.form})

    def _split(self, z: np.ndarray) -> dict[str, np.ndarray]:
        out, at = {}, 0
        for name, size in self.variables.items():
            out[name] = z[at:at + size]
            at += size
        return out

    def _as_cvxpy(self):
        """The same LP as a :class:`~polytrav.solve.subproblem.Subproblem` (for backends
        that solve cvxpy problems)."""
        import cvxpy as cp

        from polytrav.solve.subproblem import Subproblem

        blocks = {name: cp.Variable(size, name=name) for name, size in self.variables.items()}
        z = cp.hstack(list(blocks.values()))
        cons = [self.A_ub @ z <= self.b_ub] if self.A_ub.shape[0] else []
        for bound, op in ((self.lo, "ge"), (self.hi, "le")):
            finite = np.flatnonzero(np.isfinite(bound))
            if finite.size:
                cons.append(z[finite] >= bound[finite] if op == "ge" else z[finite] <= bound[finite])
        goal = cp.Maximize if self.sense < 0 else cp.Minimize
        return Subproblem(cp.Problem(goal(self.c @ z), cons), blocks)
