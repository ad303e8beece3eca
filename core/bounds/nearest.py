"""The exact nearest point of a class in a weighted L2 metric: neuron branch and bound.

:class:`NearestL2` finds ``min ||(x - x0) / unit||_2`` over the box ``lo <= x <= hi`` among
the points whose outputs meet a conjunction ``C y <= d`` (closed): the L2 counterfactual,
which no MILP states (its objective is quadratic). The search branches on one neuron's phase
at a time (best first, by the node's lower bound), like a mixed-integer QP solver:

* **Bounding a node** (phase decisions ``z >= 0`` / ``z <= 0``): the convex QP of the
  triangle relaxation with the squared distance as objective, over ``x`` and the unstable
  neurons' outputs (``a >= 0``, ``a >= z``, ``a <= U (z - L) / (U - L)`` each; a stable
  neuron's output substituted, a decided one's phase a row; :class:`Relaxation`), solved
  along the ``qp`` chain (not past a backend that certifies optimality and gave up). Its bound is the Lagrangian dual function evaluated in closed
  form at the backend's multipliers (clipped to the dual cone): sound for any multipliers,
  so no solver accuracy enters; a node the backend calls infeasible is dropped only with a
  Farkas certificate checked the same way. The pre-activation bounds ``L, U`` hold in the
  ball of the best distance so far: CROWN's with optimised slopes at the root, over the box
  ∩ that ball (:class:`~polytrav.bounds.crown.L2BallConcretizer`), then per node again for
  the layers after its new decision with the decided neurons exact (intersected with the
  parent's).
* **Branching**: the unstable neuron whose chord row's multiplier times the chord's height
  ``-U L / (U - L)`` is largest (the bound's loss from relaxing it), else the most violated.
* **Points**: a walk from ``x0`` along the local linear models to the class boundary, then
  from cell to neighbouring cell across the binding neuron rows while the cell's QP improves
  (:meth:`NearestL2.descend`); the same descent from relaxation points during the search. A
  point counts only where a forward pass meets the conjunction.
* **Stop**: when the smallest open bound reaches the best distance to :data:`L2_GAP`, or
  the time limit (the outcome's ``bound`` is then the smallest open bound: still sound).
"""
from __future__ import annotations

import heapq
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from polytrav.bounds.crown import (Concretizer, L2BallConcretizer, LinearBounds, backsubstitute,
                                   layer_bounds, rounded_down)
from polytrav.bounds.milp import ClosestOutcome
from polytrav.solve.backend import solve_along
from polytrav.vocabulary.results import Status
from polytrav.vocabulary.tolerances import (BOUND_TOL, CROSSING_STEPS, DUAL_SUM_TOL, L2_GAP,
                                            MEETS_TOL)

__all__ = ["NearestL2"]

#: Slope-optimisation steps of the root's intermediate bounds.
ROOT_STEPS = 10
#: The nodes' bounds choose the ball's multiplier on this grid (multiples of the ball-only
#: optimum) with this many golden-section steps (the root's: the concretizer's own).
NODE_GRID = (0.0, 0.01, 0.1, 0.3, 1.0, 3.0, 10.0, 100.0)
NODE_REFINE = 5
#: Every this many nodes, the node's relaxation point seeds a descent (:meth:`descend`).
DESCENT_EVERY = 32
#: Cells a descent visits at most.
DESCENT_FLIPS = 50
#: Steps of the walk along local linear models to the class boundary.
WALK_STEPS = 60
#: Backends of the chain a QP tries; a node's relaxation stops where a backend that
#: certifies optimality gave up (an unanswered node keeps its parent's multipliers, a sound
#: bound: a first-order backend after Clarabel spent up to a second on such a node).
QP_TRIES = 2
#: Multiples of an infeasibility certificate that failed its check at which the dual
#: function is tried (a near-certificate still proves a large bound far along it).
RAY_SCALES = tuple(10.0 ** k for k in range(0, 13, 2))


def _allowance(value: float, A, b, y, v) -> float:
    """What rounding may have moved a dual value ``value`` computed from ``c = A' y``,
    ``c v`` and ``y b``: :data:`BOUND_TOL` relative to it, and :data:`DUAL_SUM_TOL` of the
    magnitudes (a float64 sum of ``m`` terms errs by at most ``m`` units of 1.1e-16 of the
    sum of their magnitudes)."""
    magnitude = float(np.abs(y * b).sum() + np.abs(v) @ (np.abs(A).T @ y))
    return BOUND_TOL * (1.0 + abs(value)) + DUAL_SUM_TOL * magnitude


@dataclass
class Relaxation:
    """A node's relaxation (:meth:`NearestL2._rows`): rows ``A v <= b`` over ``v = [x, a_u]``
    in the box ``vlo <= v <= vhi``; ``A_mag``, ``b_mag`` bound the magnitudes of the terms
    their entries were computed from (for the rounding allowance); ``keys`` name each row
    (``j``: ``a >= z`` of neuron ``j``; ``N + j``: its chord; ``2N + j``: its decided phase;
    ``3N + i``: the conjunction's row ``i``), so that multipliers pass from node to node;
    every neuron's output is ``Av v + ac``."""

    A: np.ndarray
    b: np.ndarray
    vlo: np.ndarray
    vhi: np.ndarray
    A_mag: np.ndarray
    b_mag: np.ndarray
    keys: np.ndarray | None = None
    Av: np.ndarray | None = None
    ac: np.ndarray | None = None

    def scatter(self, y, N: int, k: int) -> np.ndarray:
        """Multipliers of these rows as a vector over every row key (0 where absent)."""
        full = np.zeros(3 * N + k)
        full[self.keys] = y
        return full


class NearestL2:
    """The weighted-L2 nearest point of one network's input box (module docstring).

    ``unit``: each input's unit of distance (None: 1); inputs with ``lo == hi`` are fixed."""

    def __init__(self, network, lo, hi, x0, unit=None):
        self.network = network
        self.W = [np.asarray(W, float) for W in network.weights]
        self.b = [np.asarray(b, float) for b in network.biases]
        self.lo, self.hi = np.asarray(lo, float), np.asarray(hi, float)
        self.x0 = np.asarray(x0, float)
        n = self.x0.shape[0]
        self.unit = np.ones(n) if unit is None else np.broadcast_to(
            np.asarray(unit, float), (n,)).copy()
        self.w2 = 1.0 / self.unit ** 2  # weights of the squared distance
        self.sizes = [W.shape[0] for W in self.W[:-1]]
        self.off = np.concatenate([[0], np.cumsum(self.sizes)]).astype(int)
        self.n, self.N = n, int(self.off[-1])
        self._template()

    # ------------------------------------------------------------------ the relaxation
    def _template(self):
        """Every hidden pre-activation as ``z = Z [x, a] + zb`` (``a``: every neuron's
        output)."""
        n, N = self.n, self.N
        Z = np.zeros((N, n + N))
        for k, W in enumerate(self.W[:-1]):
            cols = slice(0, n) if k == 0 else slice(n + self.off[k - 1], n + self.off[k])
            Z[self.off[k]:self.off[k + 1], cols] = W
        self.Z, self.zb = Z, np.concatenate(self.b[:-1])

    def _rows(self, L, U, phase, C, d) -> Relaxation:
        """A node's relaxation over ``v = [x, a_u]``, ``a_u`` the outputs of its unstable
        neurons: a stable neuron's output is its pre-activation (active) or 0, substituted;
        per unstable neuron ``a >= z`` and the chord ``a <= U (z - L) / (U - L)``; per decided
        neuron its phase's row; the target conjunction. The rows of neurons stable by the
        bounds alone are left out: the bounds hold in the ball of the best distance, where a
        node's relaxed optimum lies unless the node is pruned (CROWN's bounds hold on the
        relaxation too), so the optimum that matters is unchanged."""
        n, N = self.n, self.N
        active = (phase > 0) | ((phase == 0) & (L >= 0.0))
        inactive = ~active & ((phase < 0) | (U <= 0.0))
        cols = np.flatnonzero(~active & ~inactive)
        m = n + cols.size
        col = np.zeros(N, int)
        col[cols] = n + np.arange(cols.size)
        # z = Zv v + zc and a = Av v + ac, with the magnitudes of their products (|W| |M|)
        Zv, zc, Zm, zm = np.empty((N, m)), np.empty(N), np.empty((N, m)), np.empty(N)
        Av, ac, Am, am = np.zeros((N, m)), np.zeros(N), np.zeros((N, m)), np.zeros(N)
        M, mc = np.eye(n, m), np.zeros(n)  # the previous layer's outputs
        Mm, mm = M.copy(), mc.copy()
        for k, (W, b) in enumerate(zip(self.W[:-1], self.b[:-1])):
            sl = slice(self.off[k], self.off[k + 1])
            Zv[sl], zc[sl] = W @ M, W @ mc + b
            Zm[sl], zm[sl] = np.abs(W) @ Mm, np.abs(W) @ mm + np.abs(b)
            on = np.flatnonzero(active[sl]) + self.off[k]
            Av[on], ac[on], Am[on], am[on] = Zv[on], zc[on], Zm[on], zm[on]
            mine = cols[(cols >= self.off[k]) & (cols < self.off[k + 1])]
            Av[mine, col[mine]] = Am[mine, col[mine]] = 1.0
            M, mc, Mm, mm = Av[sl], ac[sl], Am[sl], am[sl]
        s = U[cols] / (U[cols] - L[cols])
        up, down = np.flatnonzero(phase > 0), np.flatnonzero(phase < 0)
        Wo, bo, Cm = self.W[-1], self.b[-1], np.abs(C)
        A = np.vstack([Zv[cols] - Av[cols], Av[cols] - s[:, None] * Zv[cols],
                       -Zv[up], Zv[down], C @ Wo @ M])
        b = np.concatenate([-zc[cols], s * (zc[cols] - L[cols]), zc[up], -zc[down],
                            d - C @ (Wo @ mc + bo)])
        A_mag = np.vstack([Zm[cols] + Am[cols], Am[cols] + s[:, None] * Zm[cols], Zm[up],
                           Zm[down], Cm @ np.abs(Wo) @ Mm])
        b_mag = np.concatenate([zm[cols], s * (zm[cols] + np.abs(L[cols])), zm[up], zm[down],
                                np.abs(d) + Cm @ (np.abs(Wo) @ mm + np.abs(bo))])
        keys = np.concatenate([cols, N + cols, 2 * N + up, 2 * N + down,
                               3 * N + np.arange(C.shape[0])])
        vlo = np.concatenate([self.lo, np.zeros(cols.size)])
        vhi = np.concatenate([self.hi, np.maximum(U[cols], 0.0)])
        return Relaxation(A, b, vlo, vhi, A_mag, b_mag, keys, Av, ac)

    def _lagrangian(self, r: Relaxation, y) -> float:
        """The dual function at ``y >= 0``: a lower bound of the node's squared distance,
        lowered by :func:`_allowance`."""
        c = r.A.T @ y
        cx, ca = c[:self.n], c[self.n:]
        x = np.clip(self.x0 - cx / (2.0 * self.w2), self.lo, self.hi)
        a = np.where(ca > 0, r.vlo[self.n:], r.vhi[self.n:])
        val = float(self.w2 @ (x - self.x0) ** 2 + cx @ x + ca @ a - y @ r.b)
        return val - _allowance(val, r.A_mag, r.b_mag, y, np.concatenate([x, a]))

    def _farkas(self, r: Relaxation, y) -> bool:
        """Whether ``y >= 0`` proves the rows infeasible on the box: ``y (A v - b) > 0``."""
        c = r.A.T @ y
        v = np.where(c > 0, r.vlo, r.vhi)
        val = float(c @ v - y @ r.b)
        return val > _allowance(val, r.A_mag, r.b_mag, y, v)

    def relax(self, L, U, phase, C, d, backends, fallback=None):
        """Solve a node: ``(bound, x, a, multipliers)``, ``bound`` a distance (inf: proven
        empty), ``x, a`` the relaxation's point (``a``: every neuron's output; None if the
        backends gave none), the multipliers by row key (:class:`Relaxation`). Without an
        answer, the bound is the dual function at ``fallback`` (the parent's multipliers,
        of the rows this node shares with it), else 0."""
        r = self._rows(L, U, phase, C, d)
        if fallback is not None:  # the parent's multipliers may prune it already
            inherited = self._distance_bound(r, fallback[r.keys])
            if inherited >= self.best * (1.0 - L2_GAP):
                return inherited, None, None, fallback
        n, m = self.n, len(r.vlo)
        P = self._hessian(m)
        q = np.concatenate([-2.0 * self.w2 * self.x0, np.zeros(m - n)])
        # the solver gets no upper bound on an unstable neuron's a (the chord implies it);
        # the dual function keeps it (it needs a bounded box)
        solver_hi = np.concatenate([self.hi, np.full(m - n, np.inf)])
        for res in self._solve(P, q, r.A, r.b, r.vlo, solver_hi, backends):
            farkas = res.extras.get("farkas")
            if farkas is not None:
                ray = np.maximum(np.asarray(farkas)[:len(r.b)], 0.0)
                if self._farkas(r, ray):
                    return np.inf, None, None, None
                # nearly a certificate: far along it the dual function may still prune
                bound = max(self._distance_bound(r, t * ray) for t in RAY_SCALES)
                if bound >= self.best:
                    return bound, None, None, None
            if res.status in (Status.OPTIMAL, Status.OPTIMAL_INACCURATE) and res.duals is not None:
                y = np.maximum(np.asarray(res.duals)[:len(r.b)], 0.0)
                v = np.clip(res.x, r.vlo, r.vhi)
                return (self._distance_bound(r, y), v[:n], r.Av @ v + r.ac,
                        r.scatter(y, self.N, C.shape[0]))
            if res.status in (Status.LIMIT, Status.ERROR) and self._tried.certifies_optimality:
                break  # a certifying backend gave up: a first-order one would fare no better
        if fallback is None:
            return 0.0, None, None, None
        return self._distance_bound(r, fallback[r.keys]), None, None, fallback

    def _hessian(self, m: int) -> sp.csc_matrix:
        """The squared distance's Hessian over ``m`` columns (the first ``n`` are ``x``)."""
        n = self.n
        return sp.csc_matrix((2.0 * self.w2, np.arange(n), np.concatenate(
            [np.arange(n + 1), np.full(m - n, n)])), shape=(m, m))

    def _solve(self, P, q, A, b, lo, hi, backends):
        """The answers of the first :data:`QP_TRIES` backends, one at a time (the caller
        stops at a usable one: an optimum with multipliers, or a certificate it checks)."""
        for backend in backends[:QP_TRIES]:
            self.solves += 1
            self._tried = backend
            yield solve_along([backend], lambda be: be.solve_qp(P, q, A, b, bounds=(lo, hi)))[0]

    def _distance_bound(self, r: Relaxation, y) -> float:
        return float(np.sqrt(max(self._lagrangian(r, y), 0.0)))

    # ------------------------------------------------------------------ bounds
    def bounds(self, radius: float):
        """Pre-activation bounds ``(L, U)`` over the box ∩ the ball of ``radius`` (CROWN,
        optimised slopes), and the node tightener for that ball."""
        lo, hi = self.lo.copy(), self.hi.copy()
        if np.isfinite(radius):
            lo, hi = np.maximum(lo, self.x0 - radius * self.unit), np.minimum(
                hi, self.x0 + radius * self.unit)
        mid, half = (lo + hi) / 2.0, (hi - lo) / 2.0
        if np.isfinite(radius):
            u0 = np.clip((self.x0 - mid) / np.where(half > 0, half, 1.0), -1.0, 1.0)
            conc = L2BallConcretizer(half / self.unit, u0, radius)
        else:
            conc = Concretizer(self.n)
        layers = list(zip(self.W, self.b))
        M = np.diag(half)
        lb = layer_bounds(layers, M, mid, conc, steps=ROOT_STEPS)
        if isinstance(conc, L2BallConcretizer):  # the nodes': a coarser search of lambda
            conc = L2BallConcretizer(conc.half, conc.u0, conc.radius)
            conc.GRID, conc.REFINE = NODE_GRID, NODE_REFINE
        self._frame = (layers, M, mid, conc)
        return np.concatenate(lb.lo), np.concatenate(lb.hi)

    def tighten(self, L, U, phase, after: int):
        """Bounds of the layers after ``after`` again with the node's decided neurons exact
        (CROWN over the root's set), intersected with ``L, U``; ``(None, None)`` where they
        cross (no point of the ball has the node's phases)."""
        layers, M, mid, conc = self._frame
        L, U = L.copy(), U.copy()
        L = np.where(phase > 0, np.maximum(L, 0.0), L)
        U = np.where(phase < 0, np.minimum(U, 0.0), U)
        lin = LinearBounds([], [], [], [], [], unstable=[])
        for k, (W, b) in enumerate(layers[:-1]):
            sl = slice(self.off[k], self.off[k + 1])
            if k == 0:
                lin.first = (W @ M, W @ mid)
            elif k > after:
                j = np.flatnonzero((phase[sl] == 0) & (L[sl] < 0) & (U[sl] > 0))
                if len(j):
                    rows = np.vstack([W[j], -W[j]])
                    const = np.concatenate([b[j], -b[j]])
                    Lm, g = backsubstitute(rows, const, layers, lin, k, M, mid)
                    low = rounded_down(conc.lower(Lm, g), g)
                    idx = self.off[k] + j
                    L[idx] = np.maximum(L[idx], low[:len(j)])
                    U[idx] = np.minimum(U[idx], -low[len(j):])
            if (L[sl] > U[sl]).any():
                return None, None  # no point of the ball has the node's phases
            lin.push(L[sl], U[sl])
        return L, U

    # ------------------------------------------------------------------ points
    def distance(self, x) -> float:
        return float(np.sqrt(self.w2 @ (x - self.x0) ** 2))

    def meets(self, x, C, d) -> bool:
        y = self.network.forward(x)
        return bool(np.all(C @ y - d <= MEETS_TOL * (1.0 + np.abs(d))))

    def _affine(self, x, phase=None):
        """The linear model of ``x``'s cell (or of the cell of ``phase``, +1 active, else
        inactive): its neuron rows ``G x <= h`` and outputs ``F x + f``, then the magnitudes
        of the terms each entry was computed from (``|W| |M|``: the rounding allowance's)."""
        M, m = np.eye(self.n), np.zeros(self.n)
        Mm, mm = M.copy(), m.copy()
        G, h, Gm, hm = [], [], [], []
        for k, (W, b) in enumerate(zip(self.W[:-1], self.b[:-1])):
            Zm, zm = W @ M, W @ m + b
            on = (Zm @ x + zm) > 0.0 if phase is None else phase[self.off[k]:self.off[k + 1]] > 0
            sign = np.where(on, -1.0, 1.0)
            G.append(sign[:, None] * Zm)
            h.append(-sign * zm)
            Gm.append(np.abs(W) @ Mm)
            hm.append(np.abs(W) @ mm + np.abs(b))
            M, m = Zm * on[:, None], zm * on
            Mm, mm = Gm[-1] * on[:, None], hm[-1] * on
        Wo = self.W[-1]
        return (np.vstack(G), np.concatenate(h), Wo @ M, Wo @ m + self.b[-1],
                (np.vstack(Gm), np.concatenate(hm), np.abs(Wo) @ Mm,
                 np.abs(Wo) @ mm + np.abs(self.b[-1])))

    def _nearest_qp(self, centre, rows, rhs, backends, mags=None):
        """``min ||(x - centre) / unit||^2`` over the box and ``rows x <= rhs``: ``(x, the
        rows' multipliers)``, ``(None, None)`` unanswered, or ``(None, "empty")`` where a
        checked certificate proves no point meets the rows (``mags``: the magnitudes of the
        terms of ``rows, rhs``, for the rounding allowance; None: their own)."""
        P = self._hessian(self.n)
        rows_mag, rhs_mag = (np.abs(rows), np.abs(rhs)) if mags is None else mags
        for res in self._solve(P, -2.0 * self.w2 * centre, rows, rhs, self.lo, self.hi,
                               backends):
            farkas = res.extras.get("farkas")
            if farkas is not None and self._farkas(
                    Relaxation(rows, rhs, self.lo, self.hi, rows_mag, rhs_mag),
                    np.maximum(np.asarray(farkas)[:len(rhs)], 0.0)):
                return None, "empty"
            if res.status in (Status.OPTIMAL, Status.OPTIMAL_INACCURATE):
                duals = None if res.duals is None else np.asarray(res.duals)[:len(rhs)]
                return np.clip(res.x, self.lo, self.hi), duals
        return None, None

    def walk(self, C, d, backends):
        """A point of the conjunction near ``x0``: steps to the current linear model's
        target set (5% past it) until a forward pass meets it, then back along the segment
        from ``x0`` to the boundary (bisection)."""
        x = self.x0.copy()
        for _ in range(WALK_STEPS):
            if self.meets(x, C, d):
                break
            _, _, F, f, _ = self._affine(x)
            gap = np.maximum(C @ (F @ x + f) - d, 0.0)
            x_new, _ = self._nearest_qp(x, C @ F, d - C @ f - 0.05 * gap, backends)
            if x_new is None or np.array_equal(x_new, x):
                return None
            x = x_new
        else:
            return None
        a, t = 0.0, 1.0
        for _ in range(60):
            m = (a + t) / 2.0
            if self.meets(self.x0 + m * (x - self.x0), C, d):
                t = m
            else:
                a = m
        return self.x0 + t * (x - self.x0)

    def cell(self, x, C, d, backends, phase=None):
        """The nearest point of the conjunction in ``x``'s cell (or ``phase``'s; closed) and
        the multipliers of the cell's neuron rows (None if that cell has none)."""
        G, h, F, f, (Gm, hm, Fm, fm) = self._affine(x, phase)
        rows = np.vstack([G, C @ F])
        Cm = np.abs(C)
        mags = (np.vstack([Gm, Cm @ Fm]), np.concatenate([hm, np.abs(d) + Cm @ fm]))
        point, duals = self._nearest_qp(self.x0, rows, np.concatenate([h, d - C @ f]), backends,
                                        mags)
        if point is None or duals is None or isinstance(duals, str):
            return point, duals
        return point, duals[:len(h)]

    def descend(self, x, C, d, backends, flips: int = DESCENT_FLIPS, phase=None):
        """From ``x``'s cell (or ``phase``'s), the cell QP, then across the binding neuron
        row with the largest multiplier while that lowers the distance; every point is
        offered."""
        point, duals = self.cell(x, C, d, backends, phase)
        if point is None or duals is None:
            return
        self.offer(point, C, d)
        best = self.distance(point)
        for _ in range(flips):
            moved = False
            for k in np.argsort(-duals):
                if duals[k] <= BOUND_TOL:
                    break
                # just across row k: the point moved past that neuron's hyperplane
                probe = self._across(point, int(k))
                if probe is None:
                    continue
                p2, y2 = self.cell(probe, C, d, backends)
                if p2 is not None and self.distance(p2) < best * (1.0 - BOUND_TOL):
                    point, duals, best = p2, y2, self.distance(p2)
                    self.offer(point, C, d)
                    moved = True
                    break
            if not moved:
                return

    def _across(self, x, k):
        """A point near ``x`` just across neuron ``k``'s hyperplane (its phase flipped), or
        None."""
        G, h, _, _, _ = self._affine(x)
        g = G[k]
        norm = float(g @ g)
        if norm == 0.0:
            return None
        step = (h[k] - g @ x) / norm  # to the hyperplane g x = h
        was = self._z(x)[k] > 0.0
        for eps in CROSSING_STEPS:
            probe = np.clip(x + (step + eps * (1.0 + abs(step))) * g, self.lo, self.hi)
            if (self._z(probe)[k] > 0.0) != was:
                return probe
        return None

    def _z(self, x):
        """Every hidden pre-activation at ``x`` (one array)."""
        zs, h = [], x
        for W, b in zip(self.W[:-1], self.b[:-1]):
            z = W @ h + b
            zs.append(z)
            h = np.maximum(z, 0.0)
        return np.concatenate(zs)

    def offer(self, x, C, d) -> bool:
        """Take ``x`` as the best point if a forward pass meets the conjunction and it is
        nearer."""
        if x is None or not self.meets(x, C, d):
            return False
        dist = self.distance(x)
        if dist < self.best:
            self.best, self.point, self.conjunction = dist, x.copy(), self._k
            return True
        return False

    # ------------------------------------------------------------------ the search
    def closest(self, pairs, qp_backends, *, radius: float = np.inf,
                time_limit: float | None = None, max_nodes: int | None = None
                ) -> ClosestOutcome:
        """The nearest point within ``radius`` meeting one of the conjunctions ``pairs``
        (``(C, d)``: ``C y <= d``) and a proven lower bound of every such point's distance
        (``radius`` where none lies within it; the smallest open bound where ``time_limit``
        seconds or ``max_nodes`` nodes ran out, with ``reason``)."""
        t0 = time.perf_counter()
        deadline = None if time_limit is None else t0 + time_limit
        out = ClosestOutcome()
        self.solves, self.max_nodes = 0, max_nodes
        self.best, self.point, self.conjunction = float(radius), None, None
        if not self.sizes:
            out.reason = "the network has no hidden layer"
            return out
        for k, (C, d) in enumerate(pairs):
            self._k = k
            C, d = np.atleast_2d(np.asarray(C, float)), np.asarray(d, float)
            start = self.walk(C, d, qp_backends)
            if start is not None:
                self.offer(start, C, d)
                self.descend(start, C, d, qp_backends)
            bound, why, binaries, nodes = self._search(C, d, qp_backends, deadline, out.nodes)
            out.binaries = max(out.binaries, binaries)
            out.nodes += nodes
            out.bound = bound if out.bound is None else min(out.bound, bound)
            out.reason = out.reason or why
        if self.point is not None:
            out.point, out.distance, out.conjunction = self.point, self.best, self.conjunction
        out.solves = self.solves
        out.seconds = time.perf_counter() - t0
        return out

    def _search(self, C, d, backends, deadline, spent):
        """Best-first branch and bound of one conjunction (``spent``: nodes of the ones
        before): ``(bound, reason, unstable at the root, nodes)``."""
        if not np.isfinite(self.best) and not (np.isfinite(self.lo).all()
                                               and np.isfinite(self.hi).all()):
            return 0.0, "an unbounded box and no point to bound the ball", 0, 0
        L, U = self.bounds(self.best)
        phase = np.zeros(self.N, np.int8)
        unstable = int(((L < 0) & (U > 0)).sum())
        low, x, a, y = self.relax(L, U, phase, C, d, backends)
        # stuck: bounds of leaves left open; dropped: bounds of nodes closed by the gap only
        heap, stuck, dropped, count, nodes, why = [], [], [], 0, 0, ""
        if low < self.best:
            heap.append((low, 0, L, U, phase, x, a, y))
        while heap and heap[0][0] < self.best * (1.0 - L2_GAP):
            if deadline is not None and time.perf_counter() > deadline:
                why = "time limit"
                break
            if self.max_nodes is not None and spent + nodes >= self.max_nodes:
                why = "node limit"
                break
            low, _, L, U, phase, x, a, y = heapq.heappop(heap)
            nodes += 1
            unst = (phase == 0) & (L < 0) & (U > 0)
            if x is None:
                viol = np.where(unst, np.minimum(-L, U), -1.0)
            else:
                z = self.Z @ np.concatenate([x, a]) + self.zb
                viol = np.where(unst, a - np.maximum(z, 0.0), -1.0)
                exact = viol.max(initial=0.0) <= BOUND_TOL * (1.0 + np.abs(a).max(initial=0.0))
                if exact:  # the relaxation is the network here: the node's cell QP
                    self.descend(x, C, d, backends, flips=0,
                                 phase=np.where(L >= 0, 1, phase) if not unst.any() else None)
                    if low >= self.best * (1.0 - L2_GAP):
                        dropped.append(low)
                        continue
                elif nodes % DESCENT_EVERY == 1:
                    self.descend(x, C, d, backends, flips=2)
            if not unst.any():
                # a leaf: its points in the ball lie in one cell, whose own QP settles it
                point, duals = self.cell(self.x0, C, d, backends, np.where(L >= 0, 1, phase))
                if isinstance(duals, str) or (point is not None and (
                        self.offer(point, C, d) or self.best <= self.distance(point))):
                    continue  # empty, or its nearest point is no nearer than the best
                stuck.append(low)
                why = "a leaf's cell QP was not settled"
                continue
            chord = None if y is None else y[self.N:2 * self.N]
            if chord is not None and (score := np.where(
                    unst, chord * (-U * L / np.where(unst, U - L, 1.0)), -1.0)).max() > 0:
                j = int(np.argmax(score))
            else:
                j = int(np.argmax(viol))
            layer = int(np.searchsorted(self.off[1:], j, side="right"))
            for side in (1, -1):
                ph = phase.copy()
                ph[j] = side
                L2, U2 = self.tighten(L, U, ph, layer)
                if L2 is None:
                    continue
                c_low, cx, ca, cy = self.relax(L2, U2, ph, C, d, backends, fallback=y)
                c_low = max(c_low, low)
                if c_low < self.best * (1.0 - L2_GAP):
                    count += 1
                    heapq.heappush(heap, (c_low, count, L2, U2, ph, cx, ca, cy))
                elif c_low < self.best:
                    dropped.append(c_low)
        # what is proven: no point nearer than the smallest bound left, or dropped by the gap
        bound = min([self.best] + [h[0] for h in heap] + stuck + dropped)
        return bound, why, unstable, nodes
