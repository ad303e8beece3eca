"""``max g·u`` over ``{A u <= b} ∩ [-1, 1]^d`` with few rows: a bounded dual simplex.

The cells of an analysis are such LPs in frame coordinates (:mod:`polytrav.bounds.lagrange`): on
``mnist2x10`` at eps 0.01, 784 columns and the 3-6 neuron rows that cut the box. HiGHS spends
0.3-0.5 ms of set-up on every run of such a model (it re-assesses the whole matrix, rebuilds
its row-wise copy and checks the KKT conditions of the result) even when 2 iterations
follow; here an iteration is a few numpy operations on rows of length ``d``.

The method is the dual simplex for bounded variables with the bound-flipping ratio test
(Koberstein, "The dual simplex method, techniques for a fast and stable implementation",
2005, ch. 3), dual steepest-edge pricing (exact: the basis inverse is kept) and the slacks as
the first basis: ``u`` at the box corner ``sign(g)`` is dual feasible, so no phase 1 is needed.
Every iterate has multipliers ``lam >= 0`` whose dual value
``phi(lam) = b·lam + ||g - Aᵀ lam||_1`` bounds the maximum from above and decreases, so a
caller that only needs to know whether the maximum can exceed ``stop`` stops at the first
``phi <= stop``. At the optimum the primal point attains ``phi``; the result is certified, not
trusted: the point is checked against every row and the gap against ``phi``, computed from the
returned multipliers. Anything else (a tiny pivot, the iteration limit, an empty cell) ends
``undecided`` and the caller solves the LP with a backend.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from polytrav.vocabulary.tolerances import BOX_LP_ROUNDING, LP_FEASIBILITY_TOL, SAME_VALUE_TOL

__all__ = ["BoxLp", "BoxLpStatus", "dual_bound", "maximize_in_box", "rounding"]

#: Iterations allowed, as ``ITER_PER_ROW * rows + ITER_BASE``.
ITER_PER_ROW, ITER_BASE = 4, 20
#: Smallest pivot accepted (a smaller one ends the run undecided).
PIVOT_TOL = 1e-11
#: A ratio-test step this short counts as degenerate.
DEGENERATE = 1e-14
#: Iterations between recomputations of the basis inverse from the basis.
REFACTOR = 16
#: Relative size of the cost perturbation that breaks ties in the ratio test once a step was
#: degenerate (HiGHS perturbs from the start; removed before the optimum is certified).
PERTURB = 5e-7


class BoxLpStatus(str, enum.Enum):
    """How :func:`maximize_in_box` ended."""

    OPTIMAL = "optimal"  #: ``u`` attains ``bound`` within tolerance
    BOUND = "bound"  #: ``bound`` fell to ``stop``: the maximum is at most ``stop``
    UNDECIDED = "undecided"  #: neither: leave it to an LP backend

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class BoxLp:
    """The outcome of :func:`maximize_in_box`.

    ``status``: a :class:`BoxLpStatus` (``OPTIMAL``: ``u`` attains ``bound`` within tolerance;
    ``BOUND``: ``bound`` fell to ``stop``, the maximum is at most ``stop``; else
    ``UNDECIDED``). ``bound`` is
    ``phi(lam)``, an upper bound of the maximum in every case; ``lam`` has one multiplier per
    row of ``A`` (0 on rows the box makes redundant).
    """

    status: BoxLpStatus
    bound: float
    lam: np.ndarray
    u: np.ndarray | None
    iterations: int

    def __post_init__(self):
        object.__setattr__(self, "status", BoxLpStatus(self.status))


def dual_bound(A: np.ndarray, b: np.ndarray, g: np.ndarray, lam: np.ndarray) -> float:
    """``phi(lam) = b·lam + ||g - Aᵀ lam||_1``: an upper bound of ``max g·u`` over
    ``{A u <= b} ∩ [-1, 1]^d`` for any ``lam >= 0``."""
    return float(b @ lam + np.abs(g - lam @ A).sum())


def rounding(lam: np.ndarray, weight: np.ndarray):
    """A bound of the rounding error of ``phi(lam)`` computed in floating point, beyond the
    part a caller's margin covers for ``lam = 0``: ``BOX_LP_ROUNDING · lam·(|b| + ||a||_1)``, with
    ``weight = |b| + ||a||_1`` per row (the terms' size grows with the multipliers; large ones
    come with thin cells). One value per row of ``lam`` if it is a matrix of multipliers."""
    return BOX_LP_ROUNDING * (lam @ weight)


def maximize_in_box(A: np.ndarray, b: np.ndarray, g: np.ndarray, stop: float = -np.inf,
                    reach: np.ndarray | None = None, tol: float = LP_FEASIBILITY_TOL) -> BoxLp:
    """``max g·u`` subject to ``A u <= b`` and ``-1 <= u <= 1`` (see the module docstring).

    ``stop``: end as soon as the dual bound, plus its rounding allowance (:func:`rounding`),
    proves the maximum is at most ``stop`` (callers leave their own margin for ``lam = 0``).
    ``reach``: the rows' L1 norms (the largest ``a·u`` on the box), if known. ``tol`` is
    absolute: rows that cut the box are scaled to unit norm first.
    """
    A, b, g = np.asarray(A, float), np.asarray(b, float), np.asarray(g, float)
    m, d = A.shape
    if reach is None:
        reach = np.abs(A).sum(axis=1)
    lam_all = np.zeros(m)
    if not (np.isfinite(reach).all() and np.isfinite(b).all() and np.isfinite(g).all()):
        return BoxLp(BoxLpStatus.UNDECIDED, np.inf, lam_all, None, 0)
    if np.any(b < -reach - tol):  # a row no point of the box satisfies: empty
        return BoxLp(BoxLpStatus.UNDECIDED, dual_bound(A, b, g, lam_all), lam_all, None, 0)
    rows = np.flatnonzero(reach > b)  # the others hold on the whole box
    Ak, bk = A[rows], b[rows]
    k = rows.size
    norms = np.linalg.norm(Ak, axis=1)  # > 0: a zero row cannot cut the box
    unit = bool(np.all(np.abs(norms - 1.0) <= SAME_VALUE_TOL))
    if not unit:  # the tolerances are absolute: state the rows at unit norm
        Ak, bk = Ak / norms[:, None], bk / norms
    scale = 1.0 if unit else norms  # a multiplier of a unit row, over this, is the row's
    weight = (reach[rows] + np.abs(b[rows])) / scale  # of rounding()

    def undecided(lam) -> BoxLp:
        lam_all[rows] = np.maximum(lam, 0.0) / scale
        return BoxLp(BoxLpStatus.UNDECIDED, dual_bound(A, b, g, lam_all), lam_all, None, it)

    basis = np.arange(d, d + k)  # column j < d is u_j, d + i the slack of row i
    slack = np.ones(k, bool)  # basic variable i is a slack
    active = np.zeros(k, bool)  # row i's slack is nonbasic (the row holds with equality)
    n_active = 0
    Binv = np.eye(k)
    cB = np.zeros(k)  # the (perturbed) objective's coefficients of the basic columns
    u = np.where(g > 0.0, 1.0, -1.0)  # nonbasic u_j at a bound, basic ones 0 here
    cost = g  # perturbed after a degenerate step (see below), until an optimum
    perturbed = False
    check = stop > -np.inf
    limit = ITER_PER_ROW * k + ITER_BASE
    it = 0
    while True:
        lam = cB @ Binv  # the multipliers (>= 0 up to rounding)
        la = lam @ Ak
        if check and it:  # (the first iterate, lam = 0, is the box bound the caller has tried)
            if lam.min() < 0.0:
                lam = np.maximum(lam, 0.0)
                la = lam @ Ak
            phi = float(bk @ lam + np.abs(g - la).sum())  # a bound for any lam >= 0
            if phi + rounding(lam, weight) <= stop:
                lam_all[rows] = lam / scale
                return BoxLp(BoxLpStatus.BOUND, phi, lam_all, None, it)
        r = cost - la  # reduced costs (max form) of the u columns; 0 on basic ones
        xB = Binv @ (bk - Ak @ u)
        infeas = np.where(slack, -xB, np.abs(xB) - 1.0)
        rr = int(np.argmax(infeas)) if k else 0
        if k == 0 or infeas[rr] <= tol:  # primal feasible: optimal for the costs in use
            if cost is not g:  # go on with the true costs (same basis, same point)
                cost = g
                cB[~slack] = g[basis[~slack]]
                lam = cB @ Binv
                r = g - lam @ Ak
            wrong = (u * r < 0.0) & (np.abs(r) > tol)  # u on the bound its cost does not pick
            if wrong.any():
                u[wrong] = -u[wrong]
                continue
            x = u.copy()
            x[basis[~slack]] = xB[~slack]
            lam_all[rows] = np.maximum(lam, 0.0) / scale
            return _certified(Ak, bk, g, np.clip(x, -1.0, 1.0), np.maximum(lam, 0.0), lam_all,
                              it, tol)
        if it >= limit:
            return undecided(lam)
        if k > 1:  # dual steepest edge: infeasibility over ||row of B^-1||
            score = np.where(infeas > tol, infeas * infeas / np.einsum("ij,ij->i", Binv, Binv), -1.0)
            rr = int(np.argmax(score))
        delta = float(infeas[rr])
        to_lower = bool(slack[rr] or xB[rr] < 0.0)  # the bound the leaving variable goes to
        rho = Binv[rr] if to_lower else -Binv[rr]
        a_u = rho @ Ak
        # entering candidates: u at -1 with a < 0, u at +1 with a > 0 (basic u are 0 here),
        # ratio r / a >= 0; a nonbasic slack (at 0, reduced cost lam_i >= 0) with a < 0
        ua = u * a_u
        cu = np.flatnonzero(ua > tol)
        ratios = np.maximum(r[cu] / a_u[cu], 0.0)
        spans = 2.0 * ua[cu]  # how much flipping u_j to its other bound repairs
        cs = np.flatnonzero(active & (rho < -tol)) if n_active else cu[:0]
        if cs.size:
            ratios = np.concatenate([ratios, np.maximum(-lam[cs] / rho[cs], 0.0)])
            spans = np.concatenate([spans, np.full(cs.size, np.inf)])
        # bound flipping: pass breakpoints (each u flips to its other bound) while the leaving
        # variable stays infeasible; the one that would overshoot enters
        order = np.argsort(ratios)
        n_pass = int(np.searchsorted(np.cumsum(spans[order]), delta))
        if n_pass == order.size:  # the dual is unbounded: the cell is empty
            return undecided(lam)
        q = int(order[n_pass])
        if not perturbed and ratios[q] <= DEGENERATE:
            # a step of length 0 (ties such as zero costs can cycle): push each nonbasic cost
            # away from 0 towards its bound's side, then start the iteration again
            perturbed = True
            cost = g + u * (PERTURB * (1.0 + np.abs(g)) * _noise(d))
            cB[~slack] = cost[basis[~slack]]
            continue
        passed = order[:n_pass]
        flip = cu[passed[passed < cu.size]] if cs.size else cu[passed]
        u[flip] = -u[flip]
        if q < cu.size:
            q = int(cu[q])
            alpha_q = Binv @ Ak[:, q]
        else:
            q = d + int(cs[q - cu.size])
            alpha_q = Binv[:, q - d].copy()
        pivot = alpha_q[rr]
        if abs(pivot) < PIVOT_TOL:
            return undecided(lam)
        leaving = basis[rr]
        if leaving < d:
            u[leaving] = -1.0 if to_lower else 1.0
        else:
            active[leaving - d] = True
            n_active += 1
        basis[rr] = q
        if q < d:
            u[q] = 0.0
            slack[rr] = False
            cB[rr] = cost[q]
        else:
            active[q - d] = False
            n_active -= 1
            slack[rr] = True
            cB[rr] = 0.0
        it += 1
        if it % REFACTOR == 0:
            B = np.zeros((k, k))
            B[:, ~slack] = Ak[:, basis[~slack]]
            B[basis[slack] - d, np.flatnonzero(slack)] = 1.0
            try:
                Binv = np.linalg.inv(B)
            except np.linalg.LinAlgError:  # a singular basis: leave it to a backend
                return undecided(lam)
        else:
            Binv[rr] /= pivot
            alpha_q[rr] = 0.0
            Binv -= np.outer(alpha_q, Binv[rr])


_NOISE: dict[int, np.ndarray] = {}


def _noise(d: int) -> np.ndarray:
    """A fixed vector of ``d`` numbers in [0.5, 1) (the perturbation's pattern; reproducible)."""
    if d not in _NOISE:
        _NOISE[d] = 0.5 + 0.5 * np.random.default_rng(d).random(d)
    return _NOISE[d]


def _certified(Ak, bk, g, u, lam_k, lam, it, tol) -> BoxLp:
    """``optimal`` if ``u`` (in the box) satisfies the rows that cut the box (``Ak``, unit
    norm; the others hold anywhere in it) within ``tol`` and attains the bound ``phi`` of
    their multipliers ``lam_k`` within rounding, else ``undecided`` (``lam``: all rows')."""
    phi = dual_bound(Ak, bk, g, lam_k)
    value = float(g @ u)
    scale = 1.0 + abs(phi) + float(np.abs(g).sum())
    if np.all(Ak @ u <= bk + tol) and phi - value <= tol * scale:
        return BoxLp(BoxLpStatus.OPTIMAL, phi, lam, u, it)
    return BoxLp(BoxLpStatus.UNDECIDED, phi, lam, None, it)
