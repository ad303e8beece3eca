"""Bounds and attacks for an unsafe output set in disjunctive normal form (VNN-LIB's).

The unsafe set is a disjunction of conjunctions ``C_k y <= d_k`` (``pairs``: ``(C_k, d_k)``
with rows scaled to unit norm). :func:`unsafe_distance` scores outputs (``<= 0``: unsafe),
:func:`attack_start` finds a start point near the unsafe set, :func:`dnf_bound` proves a piece
safe by sound bounds (CROWN, then optimised slopes, then LP-refined first layers), and
:func:`dnf_piece_margin` is the margin a run prunes pieces by. The settle stage's tools
(:mod:`polytrav.bounds.settle`: the attacks, input splitting, the region's branch and bound
and MILP), the ``linear_property`` and ``softmax_attack`` analyses build on these.
"""
from __future__ import annotations

import time

import numpy as np

from polytrav.bounds.box_lp import BoxLpStatus, maximize_in_box
from polytrav.bounds.crown import Concretizer, RowsProven, output_lower_bounds, rounded_down
from polytrav.bounds.difference import stacked_pair
from polytrav.solve.backend import solve_along
from polytrav.vocabulary.results import Status
from polytrav.vocabulary.tolerances import BOUND_TOL, LP_BOUND_TOL

__all__ = ["BOUND_TOL", "LP_BOUND_TOL", "attack_start", "box_attack", "deep_attack",
           "dnf_bound", "dnf_box_margin", "dnf_piece_margin", "stacked", "unsafe_distance"]

# Margins from bounds evaluated in closed form are lowered by BOUND_TOL (relative; the one
# rounding allowance, polytrav.bounds.crown.rounded_down) before a piece counts as proven.
#: Gradient steps of slope optimisation (α-CROWN) on the conjunctions that CROWN's own
#: slopes do not prove (0: none).
SLOPE_STEPS = 10
#: Random points of the region (plus its bounding box's centre) scored for a start point.
START_SAMPLES = 1000
#: Signed-gradient descents on the distance to the unsafe set, from the best samples.
ATTACK_STARTS, ATTACK_STEPS, ATTACK_STEP = 8, 60, 0.1
#: If those do not reach the unsafe set: batched descents from this many random points, with
#: a first step of this fraction of the box's width.
RESTARTS, RESTART_STEP = 200, 0.25
#: :func:`box_attack`'s random starts per box (besides its centre) and steps.
BOX_ATTACK_STARTS, BOX_ATTACK_STEPS = 8, 30
#: Then sequential linear programming (:func:`_slp`) from this many of the best samples, each
#: for at most this many LPs, with a first trust region of this fraction of the box's width,
#: halved when a step does not improve, down to the last.
SLP_STARTS, SLP_STEPS, SLP_RADIUS, SLP_MIN_RADIUS = 5, 30, 0.25, 0.01


def unsafe_distance(pairs, Y: np.ndarray) -> np.ndarray:
    """Per output row of ``Y``: how far from the unsafe set of ``pairs`` (<= 0: inside it)."""
    return np.min([np.max(Y @ C.T - d, axis=1) for C, d in pairs], axis=0)


def attack_start(pairs, network, region, *, deep: bool = True) -> np.ndarray | None:
    """The point of the region closest to (or deepest in) the unsafe set of ``pairs`` that a
    cheap attack finds: the best of :data:`START_SAMPLES` random points, then signed-gradient
    descents from the best few, until one is inside the unsafe set; if none is, sequential
    linear programming from the best few (:func:`_slp`; conjunctions of several rows only),
    and if ``deep``, :func:`deep_attack`. It chooses where a traversal starts (``verify``
    answers from it when it is a confirmed counterexample); None for an unbounded region."""
    start = _samples(region)
    if start is None:
        return None
    X, lo, hi, inside, rng = start
    score = unsafe_distance(pairs, network.forward(X))
    best, best_score = X[int(np.argmin(score))], float(score.min())
    for x in X[np.argsort(score)[:ATTACK_STARTS]]:
        step = ATTACK_STEP * (hi - lo)
        for _ in range(ATTACK_STEPS):
            if best_score < 0:  # inside the unsafe set: the first polytope will confirm it
                return best
            y = network.forward(x)
            per = [np.max(C @ y - d) for C, d in pairs]
            k = int(np.argmin(per))
            if per[k] < best_score and inside(x):
                best, best_score = x.copy(), per[k]
            C, d = pairs[k]
            W, _ = network.local_model(network.activation_code(x))
            x = np.clip(x - step * np.sign(C[int(np.argmax(C @ y - d))] @ W), lo, hi)
            step *= 0.95
    if best_score >= 0:
        if any(C.shape[0] > 1 for C, _ in pairs):
            for x in X[np.argsort(score)[:SLP_STARTS]]:
                found = _slp(pairs, network, lo, hi, x)
                if found is not None and inside(found):
                    return found
        if deep:
            found = _restarts(pairs, network, lo, hi, inside, rng)
            if found is not None:
                return found
    return best


def deep_attack(pairs, network, region, restarts: int | None = None) -> np.ndarray | None:
    """A point of the unsafe set that the costliest search of :func:`attack_start` finds, or
    None: a batch of ``restarts`` (default :data:`RESTARTS`) descents from random points with
    large steps (:func:`_restarts`), whose points are taken only if inside the unsafe set.
    The settle stage (:mod:`polytrav.bounds.settle`) runs it only where the input split has
    not proven the whole region."""
    start = _samples(region)
    if start is None:
        return None
    _, lo, hi, inside, rng = start  # the generator where attack_start's restarts take it
    return _restarts(pairs, network, lo, hi, inside, rng, restarts)


def _samples(region):
    """``(X, lo, hi, inside, rng)``: the region's centre and :data:`START_SAMPLES` random
    points in it, the bounding box, a membership test and the generator after drawing them;
    None for an unbounded or empty region."""
    lo, hi = region.bounding_box()
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        return None
    if region.is_box:  # every point of the bounding box is inside
        inside = lambda x: True  # noqa: E731
    else:
        cons = region.constraints()
        inside = lambda x: not cons.violations(x)  # noqa: E731
    rng = np.random.default_rng(0)
    X = np.vstack([(lo + hi) / 2, rng.uniform(lo, hi, (START_SAMPLES, lo.shape[0]))])
    if not region.is_box:
        X = X[[inside(x) for x in X]]
    if not len(X):
        return None
    return X, lo, hi, inside, rng


def _slp(pairs, network, lo, hi, x) -> np.ndarray | None:
    """A point of the unsafe set found by sequential linear programming from ``x``, or None.

    Each step takes the local affine model ``y = W x + c`` at ``x`` and, per conjunction
    ``(C, d)``, solves ``min t  s.t.  C (W x' + c) - d <= t`` over the box intersected with
    an L∞ trust region around ``x`` (one LP, every row at once: a conjunction's rows pull
    against each other, which a signed-gradient step on the worst row zig-zags over; a
    one-row conjunction is left to those steps, whose corner is its LP's optimum); the best
    new point by a forward pass is taken, else the trust region halves. Stops inside
    the unsafe set, after :data:`SLP_STEPS` LPs, or below :data:`SLP_MIN_RADIUS`. The LPs
    have a few rows over a box: :func:`~polytrav.bounds.box_lp.maximize_in_box` solves them
    (one that it leaves undecided is a step not taken).
    """
    span, radius = hi - lo, SLP_RADIUS
    best = float(unsafe_distance(pairs, network.forward(x)[None, :])[0])
    steps = 0
    while steps < SLP_STEPS and radius > SLP_MIN_RADIUS:
        if best < 0:
            return x
        W, c = network.local_model(network.activation_code(x))
        near_lo, near_hi = np.maximum(lo, x - radius * span), np.minimum(hi, x + radius * span)
        moved = None
        for C, d in pairs:
            if C.shape[0] == 1:  # one row: its LP's optimum is the signed-gradient corner
                continue
            steps += 1
            cand = _minimax_step(C @ W, C @ c - d, near_lo, near_hi)
            if cand is None:
                continue
            cand = np.clip(cand, lo, hi)
            value = float(unsafe_distance(pairs, network.forward(cand)[None, :])[0])
            if value < best:
                best, moved = value, cand
        if moved is None:
            radius /= 2
        else:
            x = moved
    return x if best < 0 else None


def _minimax_step(A: np.ndarray, e: np.ndarray, lo: np.ndarray, hi: np.ndarray
                  ) -> np.ndarray | None:
    """A minimiser over the box ``[lo, hi]`` of ``max_i (A x + e)_i``, or None (undecided).

    As :func:`~polytrav.bounds.box_lp.maximize_in_box` takes it: ``x = m + h u`` with ``u``
    in ``[-1, 1]^n``, and the bound ``t`` of the rows scaled into ``[-1, 1]`` over the range
    that the largest row takes on the box (``t`` at its top makes every ``u`` feasible)."""
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    rows, offset = A * half, A @ mid + e
    reach = np.abs(rows).sum(axis=1)
    t_lo, t_hi = float(np.max(offset - reach)), float(np.max(offset + reach))
    t_mid, t_half = (t_lo + t_hi) / 2, (t_hi - t_lo) / 2
    if not t_half > 0:  # every row is constant on the box: nothing to move
        return None
    n = A.shape[1]
    g = np.zeros(n + 1)
    g[n] = -1.0  # maximise -t
    res = maximize_in_box(np.hstack([rows, np.full((A.shape[0], 1), -t_half)]),
                          t_mid - offset, g)
    if res.status is not BoxLpStatus.OPTIMAL:
        return None
    return mid + half * res.u[:n]


def _restarts(pairs, network, lo, hi, inside, rng, restarts: int | None = None
              ) -> np.ndarray | None:
    """A point of the unsafe set found by ``restarts`` (default :data:`RESTARTS`)
    signed-gradient descents at once (batched), from random points of the box, with steps of
    :data:`RESTART_STEP` times its width shrinking by 3 % a step; None if none gets there."""
    X = rng.uniform(lo, hi, (RESTARTS if restarts is None else restarts, lo.shape[0]))
    score, X = _descend(pairs, network, X, lo, hi, RESTART_STEP * (hi - lo), inside)
    return next((X[i] for i in np.argsort(score) if score[i] < 0 and inside(X[i])), None)


def box_attack(pairs, network, lows, highs, starts: int = BOX_ATTACK_STARTS, seed: int = 0,
               deadline: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per box ``[lows[b], highs[b]]``: the point closest to (or deepest in) the unsafe set
    of ``pairs`` that signed-gradient descents from its centre and ``starts`` random points
    of it reach (all boxes at once, each descent kept in its box; as :func:`_restarts`,
    :data:`BOX_ATTACK_STEPS` steps), and its :func:`unsafe_distance`. Returns ``(score,
    points)``; the descents stop once a point is inside the unsafe set, or at ``deadline``
    (``time.perf_counter()``'s clock) after their first step."""
    lows, highs = np.atleast_2d(lows).astype(float), np.atleast_2d(highs).astype(float)
    rng = np.random.default_rng(seed)
    n = lows.shape[0]
    lo, hi = np.repeat(lows, starts + 1, axis=0), np.repeat(highs, starts + 1, axis=0)
    X = lo + rng.uniform(size=lo.shape) * (hi - lo)
    X[::starts + 1] = (lows + highs) / 2
    score, X = _descend(pairs, network, X, lo, hi, RESTART_STEP * (hi - lo), lambda x: True,
                        BOX_ATTACK_STEPS, deadline)
    best = score.reshape(n, starts + 1).argmin(axis=1) + (starts + 1) * np.arange(n)
    return score[best], X[best]


def _descend(pairs, network, X, lo, hi, step, inside, steps: int = ATTACK_STEPS,
             deadline: float | None = None):
    """Signed-gradient descents on :func:`unsafe_distance` from the points ``X`` (a batch),
    kept in ``[lo, hi]`` (per point, or one box), the steps ``step`` shrinking by 3 % each;
    each point's best score and where it was. They stop early at a point inside the unsafe
    set that ``inside`` accepts, or at ``deadline``."""
    C = np.vstack([C for C, _ in pairs])
    d = np.concatenate([d for _, d in pairs])
    ends = np.cumsum([C_k.shape[0] for C_k, _ in pairs])
    best, where = np.full(X.shape[0], np.inf), X.copy()
    for _ in range(steps):
        hs, Y = network.trace(X)
        excess = Y @ C.T - d  # per row: > 0 is safe
        per = np.stack([ex.max(axis=1) for ex in np.split(excess, ends[:-1], axis=1)], axis=1)
        score = per.min(axis=1)
        better = score < best
        best[better], where[better] = score[better], X[better]
        if any(inside(X[i]) for i in np.flatnonzero(score < 0)) or (
                deadline is not None and time.perf_counter() >= deadline):
            break
        k = per.argmin(axis=1)  # each point's nearest conjunction, and its worst row
        rows = k if len(C) == len(pairs) else np.array(  # one row each: the conjunction's
            [np.arange(e - C_k.shape[0], e)[np.argmax(excess[i, e - C_k.shape[0]:e])]
             for i, (e, C_k) in enumerate((ends[j], pairs[j][0]) for j in k)])
        X = np.clip(X - step * np.sign(network.input_gradient(C[rows], hs)), lo, hi)
        step = step * 0.97
    return best, where


def dnf_piece_margin(pairs, piece, context, pair: bool = True) -> float:
    """Lower bound of ``max_i (C_i y - d_i)`` over the piece, minimised over the conjunctions
    ``(C, d)`` of ``pairs`` (the unsafe set ``C y <= d``).

    Positive: every conjunction has a row that no point of the piece meets, so the piece
    holds no counterexample. Each row's affine lower bound in ``u`` comes from
    :func:`polytrav.bounds.crown.output_lower_bounds`, with CROWN's slopes first, then, for the
    conjunctions that proves nothing for, with :data:`SLOPE_STEPS` steps of slope
    optimisation; without the piece's vertices (high dimension), unstable neurons' bounds
    are raised by LPs over the piece (:meth:`polytrav.bounds.crown.Concretizer.refine`). A
    conjunction is checked row by row at the piece's vertices (or on the frame box), then,
    if that proves nothing, with the LP ``min s  s.t.  s >= L_i u + g_i - d_i``, ``u`` in
    the piece. (:func:`dnf_bound` with its defaults; ``pair``: its.)
    """
    return dnf_bound(pairs, piece, context, pair=pair)[0]


def dnf_bound(pairs, piece, context, steps: int | None = None, points: list | None = None,
              pair: bool = True) -> tuple[float, np.ndarray]:
    """:func:`dnf_piece_margin` and the rows' affine bounds ``L`` (in ``u``, one row per row
    of the stacked ``C``). ``steps``: slope optimisation steps (default :data:`SLOPE_STEPS`).
    ``points``: if given, the candidate counterexamples of every unproven conjunction are
    appended: its LP's minimiser (an input where the relaxation comes closest to the unsafe
    set), or, where the LP cannot prove it, its rows' minimisers over the frame box.

    ``pair``: a piece of two networks' stack (a two-network query, :func:`~polytrav.bounds.
    difference.stacked_pair`) is bounded by the pair
    (:meth:`~polytrav.bounds.difference.NetworkPair.piece_output_bounds`: per row the better
    of CROWN on the copies, which is CROWN on the stack, and the bound on their difference)
    instead of CROWN on the stack alone (a
    :class:`~polytrav.bounds.settle.SettlePolicy`'s ``pair_bounds``). Its slopes are then not
    optimised: optimising the copies' own slopes on what the difference leaves unproven
    doubled the time of ``diff``'s verdict on ACAS Xu 3_3 against its perturbed copy
    (property 3's box, eps 0.02: 28 s against 14 s, 577 and 610 pieces bounded; 38 s and 930
    pieces with no difference bound at all).
    """
    steps = SLOPE_STEPS if steps is None else steps
    net = context.network
    layers = list(zip(net.weights[piece.level:], net.biases[piece.level:]))
    halfspaces = lp = None
    if piece.vertices is None:  # unstable neurons' bounds by LPs over the piece's rows
        halfspaces, lp = piece.halfspaces(box=False), context.backends("lp")[0].lp_session()
    conc = Concretizer(piece.frame.dim, piece.vertices, halfspaces, lp)
    C, d, rows = stacked(pairs)
    pair = stacked_pair(net) if pair and len(layers) > 1 else None
    if pair is not None:  # a two-network query: per row, the better of CROWN's and the
        # difference's bound (CROWN on the copies side by side is CROWN on the stack)
        L, g = pair.piece_output_bounds(piece.level, piece.M, piece.m, C, conc)
        steps, crown = 0, None  # the copies' own optimised slopes: twice slower runs (see above)
    else:
        L, g, crown = output_lower_bounds(layers, piece.M, piece.m, C, conc)
    g = g - d
    margins = _row_margins(L, g, conc, rows)
    groups = [r for r, s in zip(rows, margins) if s <= 0]
    if steps and groups and len(layers) > 1:  # the ascent ends once these are proven
        open_rows = np.concatenate(groups)
        Lo, go, _ = output_lower_bounds(
            layers, piece.M, piece.m, C[open_rows], conc, steps=steps,
            stop=_proven(np.cumsum([0] + [len(r) for r in groups]), d[open_rows]),
            crown=crown)
        go = go - d[open_rows]
        better = conc.lower(Lo, go) > conc.lower(L[open_rows], g[open_rows])
        L[open_rows[better]], g[open_rows[better]] = Lo[better], go[better]
        margins = _row_margins(L, g, conc, rows)
    return _conjunctions_margin(L, g, rows, margins, piece, context, points), L


def stacked(pairs) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """The conjunctions ``(C_k, d_k)`` stacked: ``C``, ``d`` and each one's rows."""
    ends = np.cumsum([C_k.shape[0] for C_k, _ in pairs])
    return (np.vstack([C for C, _ in pairs]), np.concatenate([d for _, d in pairs]),
            [np.arange(end - C_k.shape[0], end) for end, (C_k, _) in zip(ends, pairs)])


def dnf_box_margin(pairs, L, g, piece, context, points: list | None = None,
                   stack: tuple | None = None) -> float:
    """:func:`dnf_bound`'s margin (CROWN's slopes) on a box of the input split, from the
    bounds ``C y >= L u + g`` of the stacked rows (:func:`stacked`, or ``stack`` if given)
    that :func:`~polytrav.bounds.crown.box_output_bounds` computed for a batch of boxes."""
    _, d, rows = stacked(pairs) if stack is None else stack
    g = g - d
    margins = _row_margins(L, g, Concretizer(piece.frame.dim), rows)
    return _conjunctions_margin(L, g, rows, margins, piece, context, points)


def _conjunctions_margin(L, g, rows, margins, piece, context, points) -> float:
    """The piece's margin from its rows' bounds ``L u + g`` (``d`` subtracted) and their
    closed-form ``margins`` per conjunction (:func:`dnf_bound`)."""
    margin = np.inf
    box_only = None  # whether the piece is its frame box (no rows, no vertices)
    for r, s in sorted(zip(rows, margins), key=lambda pair: pair[1]):  # likeliest unproven first
        if s <= 0:
            if box_only is None:
                box_only = piece.vertices is None and not len(piece.halfspaces(box=False)[1])
            found = -np.sign(L[r])  # each row's minimiser over the frame box
            # one row over the box: s is its minimum already. Else the conjunction's LP,
            # unless the piece is its box and one of those corners meets every row's bound
            # (the LP's minimum is then <= 0: it cannot prove the conjunction; on ACAS Xu
            # property 2's split boxes it never did, and was a third of the split's time)
            if not (box_only and (len(r) == 1 or _corner_meets(L[r], g[r], found))):
                s, u = _joint_margin(L[r], g[r], piece, context)
                found = [] if u is None else [u]
            if points is not None:
                points.extend(piece.frame.to_x(u) for u in found)
        margin = min(margin, s)
        if margin <= 0 and points is None:  # nothing proven: enough to rank the piece
            break
    return margin


def _corner_meets(L: np.ndarray, g: np.ndarray, corners: np.ndarray) -> bool:
    """Whether at one of ``corners`` (points ``u``) every bound ``L_i u + g_i`` is ``<= 0``."""
    return bool(((corners @ L.T + g).max(axis=1) <= 0).any())


def _proven(ends: np.ndarray, d: np.ndarray) -> RowsProven:
    """``stop(low, g)`` for :func:`~polytrav.bounds.crown.optimized_rows` on the rows of
    some conjunctions (conjunction ``i``: rows ``ends[i]:ends[i + 1]``, right-hand sides
    ``d``): True once each has a row proven ``> 0`` as :func:`_row_margins` proves it."""
    return RowsProven(np.asarray(ends, np.int64), np.asarray(d, float))


def _row_margins(L, g, conc, rows) -> list[float]:
    """Per conjunction (its ``rows``): the best row's closed-form lower bound, lowered by
    :data:`BOUND_TOL` (:func:`~polytrav.bounds.crown.rounded_down`)."""
    low = rounded_down(conc.lower(L, g), g)
    return [float(low[r].max()) for r in rows]


def _joint_margin(L, g, piece, context) -> tuple[float, np.ndarray | None]:
    """``min s  s.t.  s >= L u + g`` over the piece (an LP), lowered by its rounding
    allowance, and its minimiser ``u``; ``(-inf, None)`` if it is not solved."""
    A, b = piece.halfspaces(box=False)  # the box is the variables' bounds
    d = L.shape[1]
    n = A.shape[0]
    c = np.zeros(d + 1)
    c[-1] = 1.0
    A_ub = np.block([[A, np.zeros((n, 1))], [L, -np.ones((L.shape[0], 1))]])
    b_ub = np.concatenate([b, -g])
    lo = np.concatenate([-np.ones(d), [-np.inf]])
    hi = np.concatenate([np.ones(d), [np.inf]])
    res, _ = solve_along(context.backends("lp"),
                         lambda backend: backend.solve_lp(c, A_ub, b_ub, bounds=(lo, hi)))
    if res.status is Status.OPTIMAL:
        return float(res.objective) - LP_BOUND_TOL * (1.0 + np.abs(g).max()), res.x[:d]
    return -np.inf, None  # not solved, or an empty piece (which should not happen): no proof
