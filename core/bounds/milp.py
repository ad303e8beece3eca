"""An exact check of an unsafe conjunction over a box by a mixed-integer LP (big-M).

For a box ``lo <= x <= hi`` and a conjunction ``C y <= d`` of the outputs, the network is
encoded with one binary per neuron that the box's bounds leave unstable (Tjeng et al. 2019,
"Evaluating robustness of neural networks with mixed integer programming"): with
pre-activation ``h = W z + b`` in ``[l, u]``, ``l < 0 < u``, the post-activation ``a``
satisfies ``a >= h``, ``a >= 0``, ``a <= h - l (1 - q)``, ``a <= u q``, ``q`` in ``{0, 1}``;
stable neurons are exact equalities (or zero). The bounds ``l``, ``u`` are CROWN's with
optimised slopes over the box (:func:`polytrav.bounds.crown.layer_bounds`,
:data:`SLOPE_STEPS`), widened by :data:`~polytrav.vocabulary.tolerances.BOUND_TOL`, so the
encoding holds every point of the box.

A conjunction is asked as ``C y <= d + LP_BOUND_TOL (1 + |d|)`` (``min t`` over
``t >= C_i y - d_i`` with the cutoff ``t < 0``): "infeasible" from the MILP solver (no point
under the cutoff) proves the conjunction unmet by at least that allowance
(the solver's feasibility tolerance, as for every LP margin); a feasible point is a
candidate counterexample that the caller confirms by a forward pass. The number of binaries
decides the cost, so :meth:`RegionMilp.prove` refuses boxes with more than
:data:`MILP_MAX_BINARIES` of them.

The nearest point of the box to ``x0`` (L1 or L∞) that meets one of the conjunctions
(:meth:`RegionMilp.closest`, a counterfactual's question) is one MILP per conjunction
minimising the distance, within a radius. Its proof is the solver's certificate as above:
"infeasible" (nothing within the radius) or the dual bound of an optimum, with the same
allowance ``LP_BOUND_TOL (1 + |bound|)``.

Whether an output is monotone in a feature over the box (:meth:`RegionMilp.monotone`, the
monotonicity analysis's question) adds the slope along the feature through the *same*
binaries (``d = q g`` on an unstable neuron, exact under big-M rows with interval bounds on
``g`` from :func:`polytrav.bounds.slope.derivative_step`); its proof is "infeasible" for a
signed slope at or below ``+LP_BOUND_TOL (1 + scale)``, ``scale`` the slope's path-sum bound
(:func:`~polytrav.bounds.slope.slope_scale`): every activation pattern some point of the box
realises, the measure-zero ones included, has a slope above that allowance.
"""
from __future__ import annotations

import enum
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from polytrav.solve.backend import solve_along
from polytrav.vocabulary.results import SolveResult, Status
from polytrav.vocabulary.tolerances import BOUND_TOL, LP_BOUND_TOL

__all__ = ["MILP_MAX_BINARIES", "MILP_TIME_SHARE", "ClosestOutcome", "MilpOutcome", "MilpVerdict",
           "RegionMilp",
           "SlopeOutcome"]

#: Unstable neurons (binaries) above which :meth:`RegionMilp.prove` does not try: on MNIST's
#: 784-256-256-10 network at eps 0.03 the box leaves 84-142 unstable and HiGHS settles each
#: conjunction in 1-9 s; at 362 (784-256x4-10) a minute is not enough.
MILP_MAX_BINARIES = 200
#: The MILP's share of a run's time left where an analysis hands a question over to it (the
#: traversal, or branch and bound, keeps the rest).
MILP_TIME_SHARE = 0.8
#: Slope-optimisation steps for the intermediate bounds (α-CROWN): on that network they
#: leave 102 of the second layer's neurons unstable where CROWN's slopes leave 138.
SLOPE_STEPS = 10


class MilpVerdict(str, enum.Enum):
    """What a region MILP decided (:class:`MilpOutcome`, :class:`SlopeOutcome`)."""

    HOLDS = "holds"  #: proven: no conjunction is met (no slope of the wrong sign)
    VIOLATED = "violated"  #: a counterexample, confirmed by a forward pass
    #: a pattern's cell whose slope has the wrong sign: its point not yet confirmed
    CANDIDATE = "candidate"
    UNKNOWN = "unknown"  #: undecided (``reason`` says why)

    def __str__(self) -> str:
        return self.value


@dataclass
class MilpOutcome:
    """What :meth:`RegionMilp.prove` found: ``verdict`` (a :class:`MilpVerdict`) HOLDS (every
    conjunction infeasible), VIOLATED (``point`` is a forward-pass confirmed counterexample)
    or UNKNOWN (``reason`` says why); ``binaries``, ``solves`` and ``seconds`` of the
    attempt."""

    verdict: MilpVerdict
    point: np.ndarray | None = None
    binaries: int = 0
    solves: int = 0
    seconds: float = 0.0
    reason: str = ""


@dataclass
class ClosestOutcome:
    """What :meth:`RegionMilp.closest` found: ``point`` (the nearest point the MILP found,
    ``None`` if none within the radius), its ``distance`` and ``conjunction`` (index), and
    ``bound``, a proven lower bound of the distance of every point that meets a conjunction
    (``None`` where some MILP did not settle: ``reason`` says why)."""

    point: np.ndarray | None = None
    distance: float = np.inf
    conjunction: int | None = None
    bound: float | None = None
    binaries: int = 0
    solves: int = 0
    seconds: float = 0.0
    reason: str = ""
    nodes: int = 0


@dataclass
class SlopeOutcome:
    """What :meth:`RegionMilp.monotone` found: ``verdict`` (a :class:`MilpVerdict`) HOLDS
    (proven), CANDIDATE (``point``, the Chebyshev centre of the cell of an activation pattern
    whose signed ``slope`` is below ``-LP_BOUND_TOL (1 + scale)``, or the MILP's own point
    where that cell has no interior: not yet confirmed by a forward pass) or UNKNOWN
    (``reason`` says why)."""

    verdict: MilpVerdict
    point: np.ndarray | None = None
    slope: float | None = None
    binaries: int = 0
    solves: int = 0
    seconds: float = 0.0
    reason: str = ""


class RegionMilp:
    """The network over the box ``[lo, hi]`` as a MILP (module docstring): ``binaries`` is
    the count of unstable neurons (known after the bounds, before any encoding);
    :meth:`prove` decides conjunctions.

    ``l1_ball=(x0, radius)``: the bounds hold over the box intersected with that L1 ball only
    (:class:`~polytrav.bounds.crown.L1BallConcretizer`: in 14 inputs its linear ranges are a
    fraction of the box's), so every question must stay inside it: :meth:`closest` with
    ``norm=1`` around ``x0`` within ``radius`` (and the same ``unit``: with per-input units
    the ball is ``||(x - x0) / unit||_1 <= radius``).

    ``integrality`` (:class:`~polytrav.model.integrality.Integrality`): its grid inputs get
    an integer column each (``x_j = origin_j + k_j step_j``) and its one-hot groups integral
    columns summing to 1 (at most 1 where the baseline was dropped), so every question
    ranges over the valid points of the box only;
    the bounds, over the whole box, stay sound."""

    def __init__(self, network, lo, hi, *, l1_ball: tuple | None = None, unit=None,
                 integrality=None):
        from polytrav.bounds.crown import Concretizer, L1BallConcretizer, layer_bounds

        self.network = network
        self.lo, self.hi = np.asarray(lo, float), np.asarray(hi, float)
        self.l1_ball = l1_ball
        self.unit = None if unit is None else np.asarray(unit, float)
        self.integrality = integrality
        layers = list(zip(network.weights, network.biases))
        mid, half = (self.lo + self.hi) / 2, (self.hi - self.lo) / 2
        conc = Concretizer(self.lo.shape[0])
        if l1_ball is not None:
            x0, radius = np.asarray(l1_ball[0], float), float(l1_ball[1])
            u0 = np.where(half > 0, (x0 - mid) / np.where(half > 0, half, 1.0), 0.0)
            per_u = half if self.unit is None else half / self.unit  # distance per unit of u
            conc = L1BallConcretizer(per_u, np.clip(u0, -1.0, 1.0), radius)
        bounds = layer_bounds(layers, np.diag(half), mid, conc, steps=SLOPE_STEPS)
        self.bounds = [(l - BOUND_TOL * (1 + np.abs(l)), u + BOUND_TOL * (1 + np.abs(u)))
                       for l, u in zip(bounds.lo, bounds.hi)]
        self.binaries = int(sum(((l < 0) & (u > 0)).sum() for l, u in self.bounds))
        self._enc = None

    def _refusal(self, milp_backends, cap: bool = True) -> str:
        """Why no question can be asked (more than :data:`MILP_MAX_BINARIES` binaries where
        ``cap``, no backend), or "" once the encoding is built."""
        if cap and self.binaries > MILP_MAX_BINARIES:
            return f"{self.binaries} unstable neurons (more than {MILP_MAX_BINARIES})"
        if not milp_backends:
            return "no MILP backend is installed"
        if self._enc is None:
            self._enc = _Encoding(self.network, self.lo, self.hi, self.bounds, self.integrality)
        return ""

    def _whole_box(self, who: str) -> None:
        if self.l1_ball is not None:
            raise ValueError(f"RegionMilp.{who} asks over the whole box, but the bounds hold in "
                             "the L1 ball of l1_ball only")

    def prove(self, pairs, milp_backends, *, time_limit: float | None = None,
              unsafe=None) -> MilpOutcome:
        """Whether some ``x`` of the box meets one of the conjunctions ``pairs`` (``(C, d)``,
        unsafe where ``C y <= d``): one MILP per conjunction, each backend of
        ``milp_backends`` in turn until one decides it
        (:func:`~polytrav.solve.backend.solve_along`: an exception is one failed try).

        ``time_limit``: seconds for all of them, each conjunction getting an equal share of
        what is left (a MILP that cannot settle one in its share gives the time back to the
        caller early: on MNIST 784-256x4-10, 188 binaries, the first conjunction alone ran
        past three minutes); ``unsafe(x) -> bool`` confirms a feasible point (default: a
        forward pass meets every row of its conjunction). Refused (``unknown``) above
        :data:`MILP_MAX_BINARIES` binaries."""
        self._whole_box("prove")
        t0 = time.perf_counter()
        out = MilpOutcome(MilpVerdict.UNKNOWN, binaries=self.binaries)
        out.reason = self._refusal(milp_backends)
        if out.reason:
            return out
        for k, (C, d) in enumerate(pairs):
            loose = d + LP_BOUND_TOL * (1 + np.abs(d))

            def attempt(backend, k=k, C=C, loose=loose):
                left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
                if left is not None and left <= 0:
                    return SolveResult(Status.LIMIT, message="time limit")
                share = None if left is None else left / (len(pairs) - k)
                return self._enc.solve(backend, C, loose, share)

            res, tried = solve_along(milp_backends, attempt)
            out.solves += tried
            if res.status is Status.INFEASIBLE:
                continue
            if res.status is Status.OPTIMAL:
                x = np.clip(res.x[:self.lo.shape[0]], self.lo, self.hi)
                met = unsafe(x) if unsafe is not None else bool(
                    np.all(C @ self.network.forward(x) <= d))
                if met:
                    out.verdict, out.point = MilpVerdict.VIOLATED, x
                    break
                out.reason = "a MILP point within the solver's tolerance, not confirmed"
            else:
                out.reason = f"MILP {res.status.value}: {res.message}"
            break
        else:
            out.verdict = MilpVerdict.HOLDS
        out.seconds = time.perf_counter() - t0
        return out

    def closest(self, x0, norm, pairs, milp_backends, *, radius: float, unit=None,
                time_limit: float | None = None) -> ClosestOutcome:
        """The point of the box nearest to ``x0`` (``norm`` 1 or ``inf`` of ``(x - x0) /
        unit``, ``unit`` None: 1) within ``radius``
        that meets one of the conjunctions ``pairs`` (``(C, d)``: ``C y <= d``, closed): one
        MILP per conjunction minimising the distance, the best so far its radius
        (``time_limit`` shared as in :meth:`prove`). ``bound`` is the smallest lower bound
        the solver proves (an optimum's dual bound, or ``radius`` where nothing lies within
        it), to its tolerances: a caller allows ``LP_BOUND_TOL (1 + |bound|)`` as for every
        margin; ``None`` if a MILP did not settle."""
        unit = None if unit is None else np.asarray(unit, float)
        same_unit = (unit is None and self.unit is None) or (
            unit is not None and self.unit is not None and np.array_equal(unit, self.unit))
        if self.l1_ball is not None and (norm != 1 or radius > self.l1_ball[1] or not same_unit
                                         or not np.array_equal(x0, self.l1_ball[0])):
            raise ValueError("RegionMilp.closest: its bounds hold in the L1 ball of radius "
                             f"{self.l1_ball[1]} only (l1_ball, with its unit); asked norm "
                             f"{norm}, radius {radius}")
        t0 = time.perf_counter()
        out = ClosestOutcome(binaries=self.binaries)
        out.reason = self._refusal(milp_backends, cap=False)
        if out.reason:
            return out
        x0 = np.asarray(x0, float)
        bound = np.inf
        for k, (C, d) in enumerate(pairs):
            r = min(radius, out.distance)

            def attempt(backend, k=k, C=C, d=d, r=r):
                left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
                if left is not None and left <= 0:
                    return SolveResult(Status.LIMIT, message="time limit")
                share = None if left is None else left / (len(pairs) - k)
                return self._enc.nearest(backend, x0, norm, C, d, r, share, unit)

            res, tried = solve_along(milp_backends, attempt)
            out.solves += tried
            if res.status is Status.INFEASIBLE:
                found = r
            elif res.status is Status.OPTIMAL and "bound" in res.extras:
                found = float(res.extras["bound"])
                x = np.clip(res.x[:self.lo.shape[0]], self.lo, self.hi)
                dist = float(np.linalg.norm((x - x0) if unit is None else (x - x0) / unit,
                                            ord=norm))
                if dist < out.distance:
                    out.point, out.distance, out.conjunction = x, dist, k
            else:
                out.reason = (f"MILP {res.status.value}: {res.message}"
                              if res.status is not Status.OPTIMAL else
                              f"{res.solver or 'the backend'} gave an optimum without a proven "
                              "bound (extras['bound'])")
                bound = None
                break
            bound = min(bound, found)
        out.bound = bound
        out.seconds = time.perf_counter() - t0
        return out


    def monotone(self, feature: int, output: int, sign: float, milp_backends, *,
                 time_limit: float | None = None) -> SlopeOutcome:
        """Is ``sign`` times the slope of ``output`` in ``feature`` at least 0 over the box?
        Two MILPs over the encoding with the slope added (module docstring), each backend of
        ``milp_backends`` in turn: the first looks for a pattern whose signed slope is below
        ``-LP_BOUND_TOL (1 + scale)`` (a ``candidate``); without one, the second proves that
        none is at or below ``+LP_BOUND_TOL (1 + scale)`` (``holds``), or finds one within
        that allowance of 0, which decides nothing (a slope of exactly 0 is allowed; the
        slope bound proves those). The allowance on both sides is the solver's: HiGHS takes
        a point of slope 0 as under a cutoff of ``-1e-12``. ``time_limit`` is for both."""
        from polytrav.bounds.slope import slope_scale

        self._whole_box("monotone")
        t0 = time.perf_counter()
        out = SlopeOutcome(MilpVerdict.UNKNOWN, binaries=self.binaries)
        out.reason = self._refusal(milp_backends)
        if out.reason:
            return out
        scale = 1.0 + slope_scale(self.network.weights, feature, output)
        if len(self.network.weights) == 1:  # no hidden layer: one slope
            slope = sign * float(self.network.weights[0][output, feature])
            out.verdict = (MilpVerdict.HOLDS if slope > LP_BOUND_TOL * scale else
                           MilpVerdict.CANDIDATE if slope < -LP_BOUND_TOL * scale
                           else MilpVerdict.UNKNOWN)
            out.point, out.slope = (self.lo + self.hi) / 2, slope
            out.reason = ("" if out.verdict is not MilpVerdict.UNKNOWN
                          else "the slope is 0 within the allowance")
            return out
        for cutoff in (-LP_BOUND_TOL * scale, LP_BOUND_TOL * scale):
            def attempt(backend, cutoff=cutoff):
                left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
                if left is not None and left <= 0:
                    return SolveResult(Status.LIMIT, message="time limit")
                return self._enc.slope_below(backend, feature, output, sign, cutoff, left)

            res, tried = solve_along(milp_backends, attempt)
            out.solves += tried
            if res.status is Status.INFEASIBLE:
                continue
            if res.status is Status.OPTIMAL and cutoff < 0:
                out.verdict = MilpVerdict.CANDIDATE
                out.point = np.clip(res.x[:self.lo.shape[0]], self.lo, self.hi)
                out.slope = float(res.objective)
                centre = _cell_centre(self.network, self.lo, self.hi, self._enc.pattern(res.x),
                                      milp_backends[0])
                if centre is not None:  # the MILP's point may lie on a face of that cell
                    out.point = centre
            elif res.status is Status.OPTIMAL:
                out.reason = (f"a pattern's signed slope, {res.objective:.3g}, is within the "
                              "allowance of 0")
            else:
                out.reason = f"MILP {res.status.value}: {res.message}"
            break
        else:
            out.verdict = MilpVerdict.HOLDS
        out.seconds = time.perf_counter() - t0
        return out


class _Encoding:
    """The big-M rows of the network over the box, built once: columns ``x``, then per
    hidden layer its post-activations ``a`` and its unstable neurons' binaries ``q``, then
    the objective's ``t``; ``A_ub v <= b_ub`` and ``A_eq v == b_eq`` (the active neurons,
    and the grid and one-hot rows of ``integrality``, whose step columns come last)."""

    def __init__(self, network, lo, hi, bounds, integrality=None):
        n0 = lo.shape[0]
        col_lo, col_hi, integer = [lo], [hi], [np.zeros(n0, bool)]
        ub, eq = ([], []), ([], [])  # per kind: blocks (rows, cols, values), right-hand sides
        prev = np.arange(n0)
        n = n0
        self.network = network
        self.layers = []  # per hidden layer: active and unstable masks, the binaries' columns

        def rows(kind, entries, rhs):  # entries: (cols, dense block) pairs
            blocks, right = kind
            start = sum(r.shape[0] for r in right)
            for cols, M in entries:
                r, c = np.nonzero(M)
                blocks.append((start + r, cols[c], M[r, c]))
            right.append(rhs)

        for (W, b), (l, u) in zip(zip(network.weights[:-1], network.biases[:-1]), bounds):
            k = W.shape[0]
            a = np.arange(n, n + k)
            n += k
            col_lo.append(np.zeros(k))
            col_hi.append(np.maximum(u, 0.0))
            integer.append(np.zeros(k, bool))
            act, unst = l >= 0, (l < 0) & (u > 0)
            q = np.zeros(0, int)
            if act.any():  # a = h
                i = np.flatnonzero(act)
                rows(eq, [(prev, W[i]), (a[i], -np.eye(i.size))], -b[i])
            if unst.any():
                i = np.flatnonzero(unst)
                m = i.size
                q = np.arange(n, n + m)
                n += m
                col_lo.append(np.zeros(m))
                col_hi.append(np.ones(m))
                integer.append(np.ones(m, bool))
                I = np.eye(m)
                # a >= h;  a <= h - l (1 - q);  a <= u q
                rows(ub, [(a[i], -I), (prev, W[i])], -b[i])
                rows(ub, [(a[i], I), (prev, -W[i]), (q, -np.diag(l[i]))], b[i] - l[i])
                rows(ub, [(a[i], I), (q, -np.diag(u[i]))], np.zeros(m))
            self.layers.append((act, unst, q))
            prev = a
        if integrality is not None:
            g = integrality.grid
            if g.size:  # x_j - step_j k_j = origin_j, k_j integral
                k_lo, k_hi = integrality.step_range(lo, hi)
                if np.any(k_lo > k_hi):
                    j = int(g[np.argmax(k_lo > k_hi)])
                    raise ValueError(f"RegionMilp: no grid value of input {j} in the box")
                k = np.arange(n, n + g.size)
                n += g.size
                col_lo.append(k_lo)
                col_hi.append(k_hi)
                integer.append(np.ones(g.size, bool))
                rows(eq, [(g, np.eye(g.size)), (k, -np.diag(integrality.step[g]))],
                     integrality.origin[g])
            col_lo[0], col_hi[0] = col_lo[0].copy(), col_hi[0].copy()
            for i, group in enumerate(integrality.one_hot):  # integral, in [0, 1], sum 1
                integer[0][group] = True
                col_lo[0][group] = np.maximum(col_lo[0][group], 0.0)
                col_hi[0][group] = np.minimum(col_hi[0][group], 1.0)
                rows(ub if integrality.is_dropped(i) else eq,
                     [(group, np.ones((1, group.size)))], np.ones(1))  # <= 1 if dropped
        self.last, self.n = prev, n  # the columns a query adds come after the first n
        self.W, self.b = network.weights[-1], network.biases[-1]
        self.bounds = (np.concatenate(col_lo), np.concatenate(col_hi))
        self.integer = np.concatenate(integer)
        self.A_ub, self.b_ub = _matrix(ub, n)
        self.A_eq, self.b_eq = _matrix(eq, n)

    def _solve(self, backend, extra_lo, extra_hi, rows, rhs, cost, time_limit, cutoff=None,
               heuristics=False):
        """The encoding with columns ``[extra_lo, extra_hi]`` appended (continuous), the rows
        ``rows v <= rhs`` added and ``cost`` (on the added columns) minimised."""
        k = len(extra_lo)
        A_ub = sp.vstack([sp.hstack([self.A_ub, sp.csr_matrix((self.A_ub.shape[0], k))]),
                          sp.csr_matrix(rows)], format="csr")
        A_eq = sp.hstack([self.A_eq, sp.csr_matrix((self.A_eq.shape[0], k))], format="csr")
        c = np.concatenate([np.zeros(self.n), cost])
        bounds = (np.concatenate([self.bounds[0], extra_lo]),
                  np.concatenate([self.bounds[1], extra_hi]))
        integer = np.concatenate([self.integer, np.zeros(k, bool)])
        return backend.solve_milp(c, A_ub, np.concatenate([self.b_ub, rhs]), A_eq, self.b_eq,
                                  bounds=bounds, integer=integer, time_limit=time_limit,
                                  cutoff=cutoff, heuristics=heuristics)

    def _output_rows(self, C, n_cols):
        """``C y`` as rows over ``n_cols`` columns (the last hidden layer's ``a``), less ``C b``."""
        Cy = np.zeros((C.shape[0], n_cols))
        Cy[:, self.last] = C @ self.W
        return Cy, C @ self.b

    def solve(self, backend, C, d, time_limit):
        """Is ``C y <= d`` met? ``min t`` with ``t >= C_i y - d_i`` and the cutoff ``t < 0``:
        the first point under it ends the search, and no node whose bound is above it is
        explored. (One MILP per conjunction: a single MILP for a disjunction of nine, with a
        binary choosing the conjunction, took more than 200 s where nine took 110 s.)"""
        Cy, Cb = self._output_rows(C, self.n + 1)
        Cy[:, self.n] = -1.0  # the added column t
        return self._solve(backend, [-np.inf], [np.inf], Cy, d - Cb, [1.0], time_limit,
                           cutoff=0.0)

    def nearest(self, backend, x0, norm, C, d, radius, time_limit, unit=None):
        """``min ||(x - x0) / unit||`` (1 or inf; ``unit`` None: 1) with ``C y <= d`` and the
        distance at most ``radius``: L∞ adds a column ``t`` (``|x_j - x0_j| / unit_j <= t``),
        L1 a column ``s_j`` per input (``|x_j - x0_j| / unit_j <= s_j``) and the row
        ``sum s <= radius``. Without a finite radius no point is known yet: the solver is
        asked to spend effort on heuristics."""
        n0 = x0.shape[0]
        k = 1 if norm == np.inf else n0
        Cy, Cb = self._output_rows(C, self.n + k)
        eye = np.eye(n0) if unit is None else np.diag(1.0 / unit)
        if unit is not None:
            x0 = x0 / unit  # the rows below, in the scaled coordinates
        dev = np.zeros((2 * n0, self.n + k))  # x - x0 <= dev and x0 - x <= dev
        dev[:, :n0] = np.vstack([eye, -eye])
        dev[:, self.n:] = -1.0 if k == 1 else -np.vstack([np.eye(n0), np.eye(n0)])
        rows, rhs = [Cy, dev], [d - Cb, np.concatenate([x0, -x0])]
        hi = np.full(k, float(radius))
        if k > 1:
            total = np.zeros((1, self.n + k))
            total[0, self.n:] = 1.0
            rows.append(total)
            rhs.append([float(radius)])
        return self._solve(backend, np.zeros(k), hi, np.vstack(rows), np.concatenate(rhs),
                           np.ones(k), time_limit, heuristics=not np.isfinite(radius))


    def pattern(self, v) -> tuple:
        """The activation code of a solution ``v``: per hidden layer, on where the bounds
        prove it active or its binary is 1."""
        code = []
        for act, unst, q in self.layers:
            on = act.copy()
            on[np.flatnonzero(unst)] = v[q] > 0.5
            code.append(on)
        return tuple(code)

    def slope_below(self, backend, feature, output, sign, cutoff, time_limit):
        """Is there a point of the box with a consistent pattern whose ``sign`` times the
        slope of ``output`` in ``feature`` is below ``cutoff``? Added: per hidden layer a
        column ``d`` per neuron, the derivative of its post-activation along the feature:
        ``g = W d_prev`` (``W[:, feature]`` for the first layer), ``d = g`` on an active
        neuron, 0 on an inactive one, ``d = q g`` on an unstable one, by the rows
        ``g - gu (1 - q) <= d <= g - gl (1 - q)`` and ``gl q <= d <= gu q`` with ``[gl, gu]``
        bounding ``g`` (:func:`~polytrav.bounds.slope.derivative_step`; the first layer's
        ``g`` is a constant, so ``d = g q`` there). The cutoff ends the search at the first
        point under it."""
        from polytrav.bounds.slope import derivative_step, masked

        weights = self.network.weights
        cols_lo, cols_hi, rows, rhs, prev = [], [], [], [], None
        start = self.n  # the first added column
        g = weights[0][:, feature].astype(float)
        gl = gu = g
        for k, (act, unst, q) in enumerate(self.layers):
            off = ~(act | unst)
            dl, du = masked(gl, gu, act, off)
            cols = np.arange(start, start + act.size)
            start += act.size
            cols_lo.append(dl)
            cols_hi.append(du)
            iu, ia = np.flatnonzero(unst), np.flatnonzero(act)
            W = weights[k]

            def row(entries, right):  # entries: (columns, dense block) pairs
                R = {}
                for c, M in entries:
                    for j in range(M.shape[1]):
                        R[c[j]] = R.get(c[j], 0.0) + M[:, j]
                rows.append(R)
                rhs.append(right)

            if k == 0:  # d = g q on the unstable neurons (the active ones: fixed by the bounds)
                if iu.size:
                    row([(cols[iu], np.eye(iu.size)), (q, -np.diag(g[iu]))], np.zeros(iu.size))
                    row([(cols[iu], -np.eye(iu.size)), (q, np.diag(g[iu]))], np.zeros(iu.size))
            else:
                if ia.size:  # d = W d_prev
                    row([(cols[ia], np.eye(ia.size)), (prev, -W[ia])], np.zeros(ia.size))
                    row([(cols[ia], -np.eye(ia.size)), (prev, W[ia])], np.zeros(ia.size))
                if iu.size:
                    I, Gl, Gu = np.eye(iu.size), np.diag(gl[iu]), np.diag(gu[iu])
                    row([(cols[iu], I), (prev, -W[iu]), (q, -Gl)], -gl[iu])
                    row([(cols[iu], -I), (prev, W[iu]), (q, Gu)], gu[iu])
                    row([(cols[iu], -I), (q, Gl)], np.zeros(iu.size))
                    row([(cols[iu], I), (q, -Gu)], np.zeros(iu.size))
            prev = cols
            if k + 1 < len(self.layers):
                gl, gu = derivative_step(weights[k + 1], dl, du)
        n_cols = start
        A = np.zeros((sum(r.shape[0] for r in rhs), n_cols))
        at = 0
        for R, right in zip(rows, rhs):
            for c, v in R.items():
                A[at:at + right.shape[0], c] = v
            at += right.shape[0]
        cost = np.zeros(n_cols - self.n)
        cost[prev - self.n] = sign * weights[-1][output]
        return self._solve(backend, np.concatenate(cols_lo), np.concatenate(cols_hi), A,
                           np.concatenate(rhs), cost, time_limit, cutoff=cutoff)


def _cell_centre(network, lo, hi, code, backend) -> np.ndarray | None:
    """The Chebyshev centre of the cell of ``code`` (:meth:`Network.hyperplanes
    <polytrav.model.network.Network.hyperplanes>`) in the box, by an LP through ``backend``'s
    ``solve_milp`` (no integer column), or None when the cell has no interior or the LP
    fails."""
    rows, rhs = [], []
    for (Wh, bh), on in zip(network.hyperplanes(code), code):
        s = np.where(on, 1.0, -1.0)  # s (Wh x + bh) >= t |Wh|
        rows.append(np.hstack([-s[:, None] * Wh, np.linalg.norm(Wh, axis=1)[:, None]]))
        rhs.append(s * bh)
    n = lo.shape[0]
    eye = np.eye(n)
    rows += [np.hstack([eye, np.ones((n, 1))]), np.hstack([-eye, np.ones((n, 1))])]
    rhs += [hi, -lo]
    c = np.zeros(n + 1)
    c[n] = -1.0
    res = backend.solve_milp(c, sp.csr_matrix(np.vstack(rows)), np.concatenate(rhs),
                             bounds=(np.append(lo, -np.inf), np.append(hi, 1.0)))
    if res.status is not Status.OPTIMAL or not -res.objective > 0:
        return None
    return np.clip(res.x[:n], lo, hi)


def _matrix(kind, n_cols: int):
    """The sparse rows and right-hand side of one kind of :class:`_Encoding`'s rows."""
    blocks, right = kind
    rhs = np.concatenate(right) if right else np.zeros(0)
    if not blocks:
        return sp.csr_matrix((0, n_cols)), rhs
    r, c, v = (np.concatenate([blk[j] for blk in blocks]) for j in range(3))
    return sp.csr_matrix((v, (r, c)), shape=(rhs.shape[0], n_cols)), rhs
