"""Cell solving: whether a cell of the traversal is a polytope, decided by a certified LP.

:class:`CellSolver` solves a cell's Chebyshev LP (:class:`~polytrav.solve.chebyshev.ChebyshevModel`)
and certifies the answer: the radius it reports is the smallest slack of every constraint at
the LP's centre, not the LP's own ``t``. L2-ball regions enter as cutting planes, added until
the certified radius decides the cell; high-dimensional boxes are solved with the box as
bounds and certified by pulling the centre inward. An LP that is neither optimal nor
infeasible is re-solved cold and then on each fallback backend in turn
(:func:`~polytrav.solve.backend.solve_along`); a "no polytope here" from a backend that does
not certify optimality is confirmed on the first certifying fallback. What no backend decides
is recorded in ``stats.failures``. Every LP is counted per backend in the run's
:class:`~polytrav.solve.backend.SolveTally` (answered, or fell through to another backend: a
failed try, or an uncertified "no polytope here" that the fallback confirmed). No LP starts once the run's time is spent (its
:class:`~polytrav.traversal.status.Clock`, which includes the run's deadline): the run ends
``time_limit`` instead, and an LP the deadline cut short is no failure but the same end.
"""
from __future__ import annotations

import time

import numpy as np

from polytrav.solve.backend import settles, solve_along, tally_solve
from polytrav.solve.chebyshev import ChebyshevModel
from polytrav.solve.deadline import until
from polytrav.traversal.status import Clock, TraversalStats
from polytrav.vocabulary.results import SolveResult, Status
from polytrav.vocabulary.tolerances import (
    CUT_QUALITY,
    CUT_TOL,
    MAX_CUT_ROUNDS,
    RADIUS_TOL,
    SLIVER_TOL,
)

__all__ = ["CellSolver", "cuts_decide"]


class CellSolver:
    """Decides cells: ``(radius, centre)`` of a model's current cell, certified."""

    def __init__(self, frame, backend, fallbacks, stats: TraversalStats,
                 clock: Clock | None = None):
        self.frame = frame
        self.clock = clock
        self.backend = backend
        self.fallbacks = fallbacks
        #: The first fallback that certifies optimality (confirms "no polytope here" answers).
        self.confirmer = next((b for b in fallbacks if b.certifies_optimality), None)
        self.stats = stats
        #: Whether the backend that answered the last LP certifies optimality.
        self.certified = True
        #: The decided tries of the cell being solved, ``(backend, seconds)``: counted as
        #: answered, or as fallen through when the confirmer has to re-solve the cell.
        self._tries: list = []

    def certified_radius(self, model: ChebyshevModel, u: np.ndarray) -> float:
        """Smallest slack of every constraint of ``model`` at ``u`` (a ball of that radius fits)."""
        fr = self.frame
        t = min(1.0 - np.abs(u).max(),
                (model.region_b - model.region_A @ u).min(initial=np.inf))
        for ball in fr.l1_balls:
            t = min(t, (ball.radius - np.abs(ball.U @ u + ball.w).sum()) / ball.kappa)
        for ball in fr.l2_balls:
            t = min(t, ball.radius - np.linalg.norm(u - ball.center))
        for A, beta, signs in model.blocks:
            if A.shape[0]:
                h = A @ u + beta
                t = min(t, np.where(signs, h, -h).min())
        return float(t)

    def solve(self, model: ChebyshevModel, what) -> tuple[float, np.ndarray | None] | None:
        """``(radius, centre)`` of the model's cell (radius <= 0 if empty); None if undecided.

        A "no polytope here" answer (radius <= RADIUS_TOL) from a backend that does not
        certify optimality (first-order methods) is confirmed on the first certifying fallback;
        without one it counts as undecided. Every LP ends by the clock's end (a traversal's own
        ``time_limit`` too, outside any run).
        """
        with until(None if self.clock is None else self.clock.end()):
            return self._solve_checked(model, what)

    def _solve_checked(self, model: ChebyshevModel, what):
        self._tries = []
        cell = self._solve_cells(model, what)
        if cell is None or cell[0] > RADIUS_TOL or self.certified:
            self._count_tries(answered=True)
            return cell
        self._count_tries(answered=False)  # its answer does not stand alone
        self.stats.retries += 1
        if self.confirmer is None:
            self.fail(what, f"{self.backend.name} does not certify optimality and no fallback confirms")
            return None
        cell = self._solve_cells(_Rebuilt(model, self.confirmer), what)
        self._count_tries(answered=True)
        return cell

    def _count_tries(self, answered: bool) -> None:
        for backend, seconds in self._tries:
            tally_solve(backend.name, answered, seconds, not backend.certifies_optimality)
        self._tries = []

    def _timed(self, model: ChebyshevModel, solve) -> SolveResult:
        """``solve()`` on ``model``'s backend: a decided answer waits in ``_tries`` (see
        :meth:`solve`), an undecided one is counted as fallen through at once."""
        t0 = time.perf_counter()
        res = solve()
        seconds = time.perf_counter() - t0
        if res.status in (Status.OPTIMAL, Status.INFEASIBLE):
            self._tries.append((model.backend, seconds))
        else:
            tally_solve(model.backend.name, False, seconds,
                        not model.backend.certifies_optimality)
        return res

    def fail(self, what, why: str) -> None:
        """Record an LP no backend could decide (the run ends ``solver_failure``)."""
        self.stats.failures.append(f"{what}: {why}")

    def _solve_cells(self, model: ChebyshevModel, what) -> tuple[float, np.ndarray | None] | None:
        for _ in range(MAX_CUT_ROUNDS):
            res = self._solve_once(model, what)
            if res is None:
                return None
            if res.status is not Status.OPTIMAL:
                return 0.0, None
            t_lp, u = res.objective, res.x
            if model.box_as_bounds:
                return self._certify_in_box(model, t_lp, u, what)
            t_cert = self.certified_radius(model, u)
            if t_lp <= SLIVER_TOL or not self.frame.l2_balls or t_cert >= t_lp - CUT_TOL:
                return min(t_cert, t_lp), u
            if cuts_decide(t_cert, t_lp):
                return t_cert, u
            self._add_l2_cuts(model, u)
        self.fail(what, "L2 cutting planes did not converge")
        return None

    def _certify_in_box(self, model: ChebyshevModel, t_lp: float, u: np.ndarray, what):
        """Certify a cell from the bounds-only LP (high-dimensional boxes).

        The LP maximised the neuron rows' slack ``t`` over the closed box, an upper bound on
        the Chebyshev radius: ``t <= SLIVER_TOL`` proves the cell is not even a sliver. Else
        the point is pulled toward the box centre, ``u' = (1 - lam) u``, and the best smallest
        slack of all rows (box included) over a grid of ``lam`` certifies a ball. Only when
        that certificate is too small does the exact Chebyshev LP (box rows included) decide.
        """
        if t_lp <= SLIVER_TOL:
            return t_lp, u
        s_at_u = [model.region_b - model.region_A @ u]
        s_at_0 = [model.region_b]
        for A, beta, signs in model.blocks:
            if A.shape[0]:
                sg = np.where(signs, 1.0, -1.0)
                s_at_u.append(sg * (A @ u + beta))
                s_at_0.append(sg * beta)
        su, s0 = np.concatenate(s_at_u), np.concatenate(s_at_0)
        if su.size == 0:
            su, s0 = np.ones(1), np.ones(1)
        lam = np.concatenate([[0.0], 2.0 ** -np.arange(1, 40)])
        box = 1.0 - (1.0 - lam) * np.abs(u).max()
        neuron = ((1.0 - lam)[:, None] * su[None, :] + lam[:, None] * s0[None, :]).min(axis=1)
        cert = np.minimum(box, neuron)
        best = int(np.argmax(cert))
        if cert[best] > RADIUS_TOL:
            return float(cert[best]), (1.0 - lam[best]) * u
        self.stats.lps += 1
        res = self._timed(model, model.solve_exact)
        if res.status is Status.INFEASIBLE:
            return 0.0, None
        if res.status is not Status.OPTIMAL:
            self.fail(what, f"exact Chebyshev LP: {res.status} ({res.message})")
            return None
        return min(self.certified_radius(model, res.x), res.objective), res.x

    def _add_l2_cuts(self, model: ChebyshevModel, u: np.ndarray) -> None:
        rows, rhs = [], []
        for ball in self.frame.l2_balls:
            g = u - ball.center
            n = np.linalg.norm(g)
            if n > 0:
                g = g / n
                rows.append(g)
                rhs.append(ball.radius + g @ ball.center)
        if rows:
            model.add_region_rows(np.array(rows), np.array(rhs))

    def _solve_once(self, model: ChebyshevModel, what) -> SolveResult | None:
        """Solve ``model`` (cold re-solve, then the fallbacks on failure); None if undecided.

        ``self.certified`` records whether the backend that answered certifies optimality.
        Every LP counts, one per backend tried.
        """
        st = self.stats
        self._check_time()
        res = self._timed(model, model.solve)
        st.lps += 1
        self.certified = model.backend.certifies_optimality
        if res.status in (Status.OPTIMAL, Status.INFEASIBLE):
            return res
        first = res
        self._check_time()  # an LP the deadline cut short, or refused: the run's end
        st.retries += 1
        if hasattr(model, "solve_cold"):
            res = self._timed(model, model.solve_cold)
            st.lps += 1
            if res.status in (Status.OPTIMAL, Status.INFEASIBLE):
                return res
        res, tried = solve_along(self.fallbacks, model.solve_on)
        st.lps += tried
        if tried and settles(res, self.fallbacks[tried - 1]):
            self.certified = self.fallbacks[tried - 1].certifies_optimality
            return res
        self._check_time()
        self.fail(what, f"{first.solver}: {first.status} ({first.message}); "
                        f"fallbacks: {res.message if tried else 'none'}")
        return None

    def _check_time(self) -> None:
        """End the run (``RunEnded``: ``time_limit``) once its time is spent."""
        if self.clock is not None:
            self.clock.check()


def cuts_decide(t_cert: float, t_lp: float) -> bool:
    """Whether an L2 cutting-plane round may stop: the certified radius ``t_cert`` and the
    LP's upper bound ``t_lp`` put the cell on the same side of both thresholds (polytope:
    above RADIUS_TOL; sliver: in (SLIVER_TOL, RADIUS_TOL]) and ``t_cert`` is at least
    ``CUT_QUALITY`` of ``t_lp`` (so of the Chebyshev radius)."""
    if t_cert < CUT_QUALITY * t_lp:
        return False
    return t_cert > RADIUS_TOL or (t_cert > SLIVER_TOL and t_lp <= RADIUS_TOL)


class _Rebuilt(ChebyshevModel):
    """A copy of a model's rows on another backend (the confirming backend's solves)."""

    def __init__(self, model: ChebyshevModel, backend):
        self.backend = backend
        self.frame = model.frame
        self.d = model.d
        self.region_A, self.region_b = model.region_A, model.region_b
        self.blocks = model.blocks
        self.n_lift, self.n_vars = model.n_lift, model.n_vars
        self.box_as_bounds = model.box_as_bounds
        self.n_solves, self.solve_time = 0, 0.0
