"""Discrete features (``integer``, ``one_hot``): every cell's subproblem as a MILP.

:func:`check_integrality` checks the parameters (an :class:`Integrality`); :func:`discrete_rows`
states a cell of a class over the frame point, a step count per grid input and a 0/1 column
per one-hot input; :class:`DiscreteCells` solves a cell's MILP after its continuous optimum.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from polytrav.extend import Box
from polytrav.plugins.counterfactual.state import NOTHING_NEARER
from polytrav.extend import ConfigError, Status, solve_along, DISCRETE_MARGIN

if TYPE_CHECKING:
    from polytrav.extend import Analysis
    from polytrav.extend import Frame
    from polytrav.extend import Integrality
    from polytrav.plugins.counterfactual.problem import Problem
    from polytrav.plugins.counterfactual.state import Best

__all__ = ["DiscreteCells", "MilpRows", "check_integrality", "discrete_rows", "rows_at"]


def check_integrality(integer, one_hot, x0: np.ndarray, p: float, region,
                      who: str) -> Integrality | None:
    """The :class:`Integrality` of ``integer`` and ``one_hot`` (None if both are empty),
    checked: distinct features, positive steps, ``x0`` one-hot in each group, an L1 or
    L∞ distance on a box region."""
    if not (len(integer) or len(one_hot)):
        return None
    from polytrav.extend import Integrality
    from polytrav.extend import GRID_TOL

    n = x0.shape[0]
    items = integer.items() if isinstance(integer, dict) else ((j, 1.0) for j in integer)
    step = np.zeros(n)
    seen: set[int] = set()

    def index(j, what):
        if isinstance(j, bool) or not isinstance(j, (int, np.integer)) or not 0 <= j < n:
            raise ConfigError(f"{who}: {what} must be input indices in [0, {n}), got {j!r}")
        if int(j) in seen:
            raise ConfigError(f"{who}: input {int(j)} is named twice in integer/one_hot")
        seen.add(int(j))
        return int(j)

    for j, h in items:
        j = index(j, "integer")
        if isinstance(h, bool) or not isinstance(h, (int, float, np.number)) \
                or not np.isfinite(h) or h <= 0:
            raise ConfigError(f"{who}: integer step of input {j} must be a number > 0, "
                              f"got {h!r}")
        step[j] = float(h)
    groups, dropped = [], []
    for group in one_hot:
        group = list(group)
        g = np.asarray([index(j, "one_hot groups") for j in group if j is not None], int)
        if g.size + (None in group) < 2:
            raise ConfigError(f"{who}: a one_hot group needs at least two inputs, got "
                              f"{group} (a single 0/1 input is integer)")
        v = x0[g]
        total = 1.0 if None not in group else min(round(v.sum()), 1.0)
        if np.any(np.minimum(np.abs(v), np.abs(v - 1)) > GRID_TOL) \
                or abs(v.sum() - total) > GRID_TOL:
            raise ConfigError(f"{who}: x0 is not one-hot in the group {group} "
                              f"(values {v.tolist()})")
        groups.append(g)
        dropped.append(None in group)
    if p not in (1, np.inf):
        raise ConfigError(f"{who}: integer features and one-hot groups make the search a "
                          "mixed-integer problem; L1 and L∞ give MILPs, L2 a mixed-integer "
                          "QP, which no backend here solves: use norm 1 or inf")
    if not isinstance(region, Box):
        raise ConfigError(f"{who}: integer features and one-hot groups need a Box region, "
                          f"got a {type(region).__name__}")
    return Integrality(x0.copy(), step, tuple(groups), tuple(dropped))


class MilpRows(NamedTuple):
    """``A_ub z <= b_ub``, ``A_eq z = b_eq``, ``lo <= z <= hi``, ``integer`` columns."""

    A: np.ndarray
    b: np.ndarray
    A_eq: np.ndarray
    b_eq: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    integer: np.ndarray


def discrete_rows(problem: Problem, fr: Frame, values: dict, K: np.ndarray,
                  h: np.ndarray) -> MilpRows:
    """The cell of the class as rows over the columns ``[u | k | z]``: the frame point,
    a step count per grid input (``x_j = x0_j + k_j step_j``) and a 0/1 column per
    one-hot input (``x_g = z_g``, ``sum z_g = 1``, ``<= 1`` where the baseline was
    dropped); immutable inputs at ``x0``. ``k``'s range is the region's; the class rows
    ``-K u <= h`` are the last of ``A``."""
    spec, U, o, x0 = problem.integrality, fr.U, fr.origin, problem.x0
    dim = fr.dim
    grid = spec.grid
    hot = np.concatenate(spec.one_hot) if spec.one_hot else np.zeros(0, int)
    n_col = dim + grid.size + hot.size
    reach = np.abs(U).sum(axis=1)  # the region's box is o ± reach
    k_lo, k_hi = spec.step_range(o - reach, o + reach)
    eq, rhs = [], []
    below = np.zeros((0, n_col))
    if grid.size:  # U_j u - step_j k_j = x0_j - o_j
        M = np.zeros((grid.size, n_col))
        M[:, :dim] = U[grid]
        M[np.arange(grid.size), dim + np.arange(grid.size)] = -spec.step[grid]
        eq.append(M)
        rhs.append(x0[grid] - o[grid])
    if hot.size:  # U_g u - z_g = -o_g, and per group sum z = 1
        M = np.zeros((hot.size, n_col))
        M[:, :dim] = U[hot]
        M[np.arange(hot.size), dim + grid.size + np.arange(hot.size)] = -1.0
        S = np.zeros((len(spec.one_hot), n_col))
        start = dim + grid.size
        for i, group in enumerate(spec.one_hot):
            S[i, start:start + group.size] = 1.0
            start += group.size
        drop = np.array([spec.is_dropped(i) for i in range(len(spec.one_hot))])
        eq += [M, S[~drop]]
        rhs += [-o[hot], np.ones(int((~drop).sum()))]
        below = S[drop]  # sum z <= 1 where the baseline was dropped
    held = [j for j in problem.immutable if np.abs(U[j]).max() > 0]
    if held:
        M = np.zeros((len(held), n_col))
        M[:, :dim] = U[held]
        eq.append(M)
        rhs.append(x0[held] - o[held])
    cell = np.zeros((values["A"].shape[0], n_col))
    cell[:, :dim] = values["A"]
    cls = np.zeros((K.shape[0], n_col))
    cls[:, :dim] = -K
    A = np.vstack([cell, below, cls])
    lo = np.concatenate([-np.ones(dim), k_lo, np.zeros(hot.size)])
    hi = np.concatenate([np.ones(dim), k_hi, np.ones(hot.size)])
    integer = np.arange(n_col) >= dim
    A_eq = np.vstack(eq) if eq else np.zeros((0, n_col))
    b_eq = np.concatenate(rhs) if rhs else np.zeros(0)
    b = np.concatenate([values["b"], np.ones(below.shape[0]), h])
    return MilpRows(A, b, A_eq, b_eq, lo, hi, integer)


def rows_at(spec: Integrality, x: np.ndarray) -> np.ndarray:
    """The ``k`` and ``z`` columns of :func:`discrete_rows` at a valid point ``x``."""
    grid = spec.grid
    k = np.round((x[grid] - spec.origin[grid]) / spec.step[grid])
    hot = np.concatenate(spec.one_hot) if spec.one_hot else np.zeros(0, int)
    return np.concatenate([k, x[hot]])


class DiscreteCells:
    """A cell's nearest valid point of a class, after its continuous optimum (its failures
    are ``owner``'s; ``solves`` counts its solver calls)."""

    def __init__(self, owner: Analysis, problem: Problem):
        self.owner = owner
        self.problem = problem
        self.solves = 0

    def step(self, context, polytope, values, K, h, norms, u, q, best: Best):
        """The cell's part with discrete features, given its relaxed optimum ``u``: None if
        that is not nearer than the best (then no valid point of the cell is); else the
        relaxed point snapped to the valid points (nearest, and outward from ``x0``) becomes
        the best if a forward pass gives it class ``q`` by :data:`DISCRETE_MARGIN` and it is
        nearer (an early incumbent),
        and the cell's MILP (:meth:`optimum`, the margin on the rows ``K u + h``
        normalised by ``norms``) returns the cell's nearest valid point ``u``, or None."""
        problem = self.problem
        x = context.frame.to_x(u)
        if problem.distance(x) >= best.distance:
            return None
        for outward in (False, True):  # its nearest valid point, then the one beyond
            snapped = problem.integrality.snap(x, outward)
            dist = problem.distance(snapped)
            if dist < best.distance and context.region.contains(snapped) and np.all(
                    -problem.reach(q) @ problem.scores(context.network.forward(snapped))
                    >= DISCRETE_MARGIN):
                best.take(dist, snapped, q, None)
        u = self.optimum(context, polytope, values, K, h - DISCRETE_MARGIN / norms, best)
        return None if u is None or u is NOTHING_NEARER else u

    def optimum(self, context, polytope, values, K, h, best: Best):
        """The cell's nearest valid point of the class (rows ``K u + h >= 0``) nearer than
        the best distance, as a MILP (:func:`discrete_rows` and the distance's columns):
        its frame point ``u``, :data:`NOTHING_NEARER` if none is nearer (proven), or None if
        the MILP is undecided (recorded as a failure: the result is then inexact)."""
        fr, x0, p, unit = context.frame, self.problem.x0, self.problem.p, self.problem.unit
        A, b, A_eq, b_eq, lo, hi, integer = discrete_rows(self.problem, fr, values, K, h)
        n_col = A.shape[1]
        U, o, x0 = fr.U / unit[:, None], fr.origin / unit, x0 / unit  # the scaled coordinates
        move = np.flatnonzero(np.abs(U).max(axis=1) > 0)
        k = move.size if p == 1 else 1
        # U_j u - e_j <= x0_j - o_j and -U_j u - e_j <= o_j - x0_j, e the distance columns
        # (each coordinate divided by its unit)
        D = np.zeros((2 * move.size, n_col + k))
        D[:, :fr.dim] = np.vstack([U[move], -U[move]])
        D[:, n_col:] = -np.vstack([np.eye(k), np.eye(k)]) if k > 1 else -1.0
        rows = [np.hstack([A, np.zeros((A.shape[0], k))]), D]
        rhs = [b, np.concatenate([x0[move] - o[move], o[move] - x0[move]])]
        cap = best.distance
        if np.isfinite(cap) and k > 1:  # nothing at or beyond the best distance is wanted
            total = np.zeros((1, n_col + k))
            total[0, n_col:] = 1.0
            rows.append(total)
            rhs.append([cap])
        cost = np.concatenate([np.zeros(n_col), np.ones(k)])
        bounds = (np.concatenate([lo, np.zeros(k)]),
                  np.concatenate([hi, np.full(k, cap if k == 1 else np.inf)]))
        left = context.time_left()

        def attempt(backend):
            return backend.solve_milp(cost, np.vstack(rows), np.concatenate(rhs),
                                      np.hstack([A_eq, np.zeros((A_eq.shape[0], k))]), b_eq,
                                      bounds=bounds,
                                      integer=np.concatenate([integer, np.zeros(k, bool)]),
                                      time_limit=left)

        res, tried = solve_along(context.backends("milp"), attempt)
        self.solves += tried
        if res.status is Status.INFEASIBLE:
            return NOTHING_NEARER
        if res.status is not Status.OPTIMAL:
            self.owner.record_failure(context, polytope, res)
            return None
        return res.x[:fr.dim]
