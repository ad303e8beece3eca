"""Sound bounds of the rest of a network over a polyhedral piece (for pruning).

On a level-``l`` piece of the hierarchical traversal the first ``l`` hidden layers are
affine (their activation code is fixed), so the input of layer ``l`` is ``a = M u + m`` in
the region's frame coordinates ``u``. The remaining layers are bounded by back-substitution
with the usual linear relaxation of ReLU (CROWN / DeepPoly):

* a neuron whose pre-activation bounds are ``lo >= 0`` is the identity, ``hi <= 0`` is zero;
* an unstable one (``lo < 0 < hi``) lies between ``alpha z`` (``alpha`` = 1 if ``hi >= -lo``,
  else 0) and the chord ``hi (z - lo) / (hi - lo)``.

Each layer's pre-activation bounds come from substituting its rows back through the
relaxations down to ``u`` and minimising the resulting affine function over the piece
(:class:`Concretizer`): exactly over the piece's vertices when they are known (low
dimension), else over the frame box ``[-1, 1]^d`` that contains the region. The final
linear functions of the outputs are returned as affine lower bounds in ``u``, which the
caller minimises over the piece (with an LP when the piece's rows matter).

With ``steps > 0`` the lower slopes of unstable neurons are optimised per bounded function
(α-CROWN): any slope in ``[0, 1]`` gives a sound lower line of ReLU, so projected gradient
ascent (Adam) on the concretised bound, keeping each row's best iterate, only tightens it.
The gradient is written out by hand (:func:`gradients`): the bound is piecewise linear in
the slopes.

This is the one back-substitution of polytrav. The input split runs it on a batch of boxes
(:func:`box_output_bounds`), neuron-level branch and bound
(:mod:`polytrav.bounds.branch_and_bound`) on a batch of nodes: the arrays of
:class:`LinearBounds` then carry a leading node axis, and a node's known phases (its splits
and the neurons stable by bounds) enter with multipliers ``beta >= 0`` (β-CROWN,
``phase_sign``), optimised with the slopes. A bound computed here proves ``> 0`` only after
:func:`rounded_down` (the one rounding allowance, :data:`BOUND_TOL`).

Every bound is sound for every point of the piece: the tests sample points and check.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from polytrav.vocabulary.ctrl_c import compiled_calls
from polytrav.vocabulary.tolerances import BOUND_TOL

__all__ = ["BOUND_TOL", "Concretizer", "L1BallConcretizer", "L2BallConcretizer", "LinearBounds", "relax", "backsubstitute", "gradients",
           "layer_bounds",
           "output_lower_bounds", "box_output_bounds", "box_layer_bounds", "rows_of", "interval_bounds", "optimized_rows",
           "rounded_down", "RowsProven", "compiled_ascent", "KERNEL_AFTER"]


#: Adam's step size on the slopes (which live in [0, 1]), its moment decays and its epsilon.
SLOPE_STEP, ADAM_BETAS, ADAM_EPS = 0.1, (0.9, 0.999), 1e-12
#: The lower slopes ``alpha`` for which ``alpha z <= relu(z)`` everywhere.
SOUND_SLOPES = (0.0, 1.0)


class Concretizer:
    """Lower bounds of affine functions ``L u + g`` over a set containing the piece.

    ``V``: the piece's vertices (the exact minimum of an affine function over a polytope is
    at a vertex); without them the frame box ``[-1, 1]^d`` (which contains the region).
    ``rows``, ``lp``: the piece's halfspaces ``A u <= b`` and an LP backend (or session)
    that reports duals, for :meth:`refine`; rows that cannot cut the frame box are dropped.
    ``L`` may carry leading batch axes (``(..., rows, d)``, ``g`` then ``(..., rows)``).
    """

    def __init__(self, dim: int, V: np.ndarray | None = None, rows=None, lp=None):
        self.dim = dim
        self.V = None if V is None or len(V) == 0 else np.asarray(V, float)
        self.rows = self.lp = None
        if rows is not None and lp is not None and self.V is None:
            A, b = rows
            cuts = np.abs(A).sum(axis=1) > b
            if cuts.any():
                self.rows, self.lp = (A[cuts], b[cuts]), lp

    def lower(self, L: np.ndarray, g: np.ndarray) -> np.ndarray:
        if self.V is not None:
            return (L @ self.V.T).min(axis=-1) + g
        return g - np.abs(L).sum(axis=-1)

    def lower_and_gradient(self, L: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`lower` and its (sub)gradient in ``L`` (the gradient in ``g`` is 1)."""
        if self.V is not None:
            values = L @ self.V.T
            return values.min(axis=-1) + g, self.V[values.argmin(axis=-1)]
        return g - np.abs(L).sum(axis=-1), -np.sign(L)

    def refine(self, L: np.ndarray, g: np.ndarray, low: np.ndarray) -> np.ndarray:
        """``low`` raised, row by row, to a bound over the piece's rows (not just the box).

        Per row the LP ``min L_i u`` over the piece gives multipliers ``y >= 0`` of its rows;
        the bound is the Lagrangian one, ``g_i - y b - |L_i + A^T y|_1``, sound for any
        ``y >= 0`` whatever the LP's accuracy. Without rows (or duals) ``low`` is returned.
        """
        if self.rows is None or not len(L):
            return low
        from polytrav.vocabulary.results import Status

        A, b = self.rows
        box = (-np.ones(self.dim), np.ones(self.dim))
        Y = np.zeros((len(L), len(b)))
        for i, row in enumerate(L):
            res = self.lp.solve_lp(row, A, b, bounds=box)
            if res.status is Status.OPTIMAL and res.duals is not None:
                Y[i] = np.maximum(res.duals[:len(b)], 0.0)
        lagrangian = g - Y @ b - np.abs(L + Y @ A).sum(axis=1)
        return np.maximum(low, lagrangian)


class L1BallConcretizer(Concretizer):
    """Exact lower bounds of ``L u + g`` over the frame box ``[-1, 1]^d`` intersected with
    the L1 ball ``sum_j half_j |u_j - u0_j| <= radius`` (in input coordinates ``x = half u +
    mid``: the ball of ``radius`` around ``x0``, ``u0 = (x0 - mid) / half``). The minimum of a
    linear function there is a fractional knapsack: from ``u0``, each coordinate moves
    against the sign of its ``L`` towards the box's side, the largest ``|L_j| / half_j``
    first, until the radius is spent. A coordinate with ``half_j = 0`` is fixed."""

    def __init__(self, half: np.ndarray, u0: np.ndarray, radius: float):
        super().__init__(half.shape[0])
        self.half, self.u0, self.radius = np.asarray(half, float), np.asarray(u0, float), float(radius)

    def lower(self, L: np.ndarray, g: np.ndarray) -> np.ndarray:
        return self.lower_and_gradient(L, g)[0]

    def lower_and_gradient(self, L: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The minimum and its minimiser ``u*`` (the gradient in ``L``)."""
        shape, d = L.shape, self.dim
        L2 = L.reshape(-1, d)
        free = self.half > 0
        unit = np.broadcast_to(np.where(free, self.half, 1.0), L2.shape)
        room = np.where(L2 > 0, self.u0 + 1.0, 1.0 - self.u0) * free  # how far each may move
        order = np.argsort(-np.abs(L2) / unit * free, axis=1)  # gain per unit of radius
        cost = np.take_along_axis(room * unit, order, axis=1)  # radius to move it all
        spent = np.clip(self.radius - (np.cumsum(cost, axis=1) - cost), 0.0, cost)
        moved = np.zeros_like(L2)
        np.put_along_axis(moved, order, spent / np.take_along_axis(unit, order, axis=1), axis=1)
        u = self.u0 - np.sign(L2) * moved
        return (np.einsum("ij,ij->i", L2, u).reshape(shape[:-1]) + g,
                u.reshape(shape))


class L2BallConcretizer(Concretizer):
    """Lower bounds of ``L u + g`` over the frame box ``[-1, 1]^d`` intersected with the L2
    ball ``||half (u - u0)||_2 <= radius`` (in input coordinates: the ball of ``radius``
    around ``x0``; fold per-input units into ``half`` for a weighted ball). By Lagrangian
    duality, for every ``lam >= 0``, ``min L u`` is at least ``sum_j min_{|u_j| <= 1} (L_j
    u_j + lam half_j^2 (u_j - u0_j)^2) - lam r^2``, each term in closed form (the parabola's vertex ``u0_j - L_j / (2 lam half_j^2)``
    clipped to ``[-1, 1]``): a sound bound for *any* ``lam``, so no solver accuracy enters.
    ``lam`` is chosen per row on a log grid around the ball-only optimum ``||L / half|| / (2
    r)`` (and ``lam = 0``, the box bound), then refined by golden-section steps (the dual is
    concave in ``lam``). A coordinate with ``half_j = 0`` is fixed at ``u0_j``."""

    #: Multiples of the ball-only optimum tried for ``lam`` (0: the box bound), and the
    #: golden-section steps after.
    GRID = (0.0, *(10.0 ** k for k in np.linspace(-3, 3, 13)))
    REFINE = 12

    def __init__(self, half: np.ndarray, u0: np.ndarray, radius: float):
        super().__init__(half.shape[0])
        self.half, self.u0, self.radius = np.asarray(half, float), np.asarray(u0, float), float(radius)

    def lower(self, L: np.ndarray, g: np.ndarray) -> np.ndarray:
        return self.lower_and_gradient(L, g)[0]

    def _dual(self, L2: np.ndarray, lam: np.ndarray):
        """The dual function at ``lam`` (one per row) and its minimiser ``u``."""
        free = self.half > 0
        h2 = np.where(free, self.half ** 2, 1.0)
        curv = 2.0 * lam[:, None] * h2
        with np.errstate(divide="ignore", invalid="ignore"):
            vertex = np.where(curv > 0, self.u0 - L2 / curv, -np.sign(L2) * np.inf)
        u = np.where(free, np.clip(vertex, -1.0, 1.0), self.u0)
        value = np.einsum("ij,ij->i", L2, u) + lam * (
            (np.where(free, h2, 0.0) * (u - self.u0) ** 2).sum(axis=1) - self.radius ** 2)
        return value, u

    def lower_and_gradient(self, L: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The bound and its minimiser ``u*`` at the chosen ``lam`` (the gradient in ``L``)."""
        shape, d = L.shape, self.dim
        L2 = L.reshape(-1, d)
        free = self.half > 0
        scale = np.linalg.norm(np.where(free, L2 / np.where(free, self.half, 1.0), 0.0), axis=1) \
            / (2.0 * max(self.radius, np.finfo(float).tiny))
        grid = np.asarray(self.GRID)[:, None] * scale[None, :]  # (grid, rows)
        values = np.stack([self._dual(L2, lam)[0] for lam in grid])
        k = values.argmax(axis=0)
        rows = np.arange(L2.shape[0])
        lo = grid[np.maximum(k - 1, 0), rows]
        hi = grid[np.minimum(k + 1, len(self.GRID) - 1), rows]
        best_lam, best = grid[k, rows], values[k, rows]
        phi = (np.sqrt(5.0) - 1.0) / 2.0
        for _ in range(self.REFINE):  # golden section on the concave dual, within the bracket
            a, b = hi - phi * (hi - lo), lo + phi * (hi - lo)
            fa, fb = self._dual(L2, a)[0], self._dual(L2, b)[0]
            left = fa >= fb
            hi, lo = np.where(left, b, hi), np.where(left, lo, a)
            for lam, f in ((a, fa), (b, fb)):
                better = f > best
                best_lam, best = np.where(better, lam, best_lam), np.where(better, f, best)
        best, u = self._dual(L2, best_lam)
        return best.reshape(shape[:-1]) + g, u.reshape(shape)


def rounded_down(low: np.ndarray, g: np.ndarray) -> np.ndarray:
    """``low``, a bound evaluated in closed form with constant term ``g``, lowered by
    :data:`BOUND_TOL` relative to ``1 + |g|``: what may count as a proof that it is ``> 0``
    (float64 rounding, no directed rounding; never a proof by 1e-12). The bounds of the
    back-substitution (pieces, branch-and-bound nodes) and the Lagrangian bounds of the
    branch-and-bound leaves pass here."""
    return low - BOUND_TOL * (1.0 + np.abs(g))


@dataclass
class LinearBounds:
    """Per remaining hidden layer: pre-activation bounds and the relaxation derived from them.

    Each entry is an ``(n_k,)`` array for one piece, or ``(..., 1, n_k)`` for a batch whose
    members have bounds of their own (the nodes of branch and bound; the axis of length 1
    stands for the rows): the functions below take rows ``(rows, n)``, or ``(..., rows, n)``
    with the batch's leading axes.
    """

    lo: list[np.ndarray]
    hi: list[np.ndarray]
    lower_slope: list[np.ndarray]
    upper_slope: list[np.ndarray]
    upper_intercept: list[np.ndarray]
    #: ``(W_0 M, W_0 m)``: the first remaining layer's weights on the piece's coordinates
    #: (so that back-substitution never multiplies by the ``d x d`` matrix ``M``); for a
    #: batch of boxes, one per box (:func:`box_output_bounds`).
    first: tuple[np.ndarray, np.ndarray] | None = None
    #: Known phases as constraints with multipliers ``beta >= 0`` (β-CROWN): per layer, -1
    #: where ``z >= 0`` is known (the term ``-beta z`` is <= 0 there), +1 where ``z <= 0``,
    #: 0 where nothing is; None: no multipliers.
    phase_sign: list[np.ndarray] | None = None
    #: Per layer, the unstable neurons (``lo < 0 < hi``); None: computed from ``lo``, ``hi``
    #: when asked for (:meth:`push` keeps a list up to date).
    unstable: list[np.ndarray] | None = None
    #: Per layer, a constant term of the lower relaxation (``lower_slope z + lower_intercept
    #: <= a``), for relaxations of other functions than ReLU (the difference of two ReLUs,
    #: :mod:`polytrav.bounds.difference`); None: ReLU's, which has none. Not with optimised
    #: slopes.
    lower_intercept: list[np.ndarray] | None = None
    #: Per layer, slopes ``(lower, upper)`` of the second half's lines in the first half's
    #: pre-activations: neuron ``n_k/2 + i``'s lines also read ``z_i`` (the difference of two
    #: ReLUs reads the first network's pre-activation, :mod:`polytrav.bounds.difference`);
    #: None: none. Not with optimised slopes.
    paired: list[tuple[np.ndarray, np.ndarray]] | None = None

    def free(self, k: int) -> np.ndarray:
        """Layer ``k``'s unstable neurons: those whose lower slope may be chosen."""
        if self.unstable is not None:
            return self.unstable[k]
        return (self.lo[k] < 0.0) & (self.hi[k] > 0.0)

    def push(self, lo: np.ndarray, hi: np.ndarray) -> None:
        """Append a layer with bounds ``lo``, ``hi`` and CROWN's relaxation (:func:`relax`)."""
        ls, us, ui = relax(lo, hi)
        if self.unstable is not None:
            self.unstable.append((lo < 0.0) & (hi > 0.0))
        self.lo.append(lo)
        self.hi.append(hi)
        self.lower_slope.append(ls)
        self.upper_slope.append(us)
        self.upper_intercept.append(ui)


def relax(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ReLU relaxation ``lower_slope z <= relu(z) <= upper_slope z + upper_intercept``."""
    active = lo >= 0.0
    inactive = hi <= 0.0
    unstable = ~active & ~inactive
    width = np.where(unstable, hi - lo, 1.0)
    upper_slope = np.where(active, 1.0, np.where(unstable, hi / width, 0.0))
    upper_intercept = np.where(unstable, -hi * lo / width, 0.0)
    lower_slope = np.where(active, 1.0, np.where(unstable & (hi >= -lo), 1.0, 0.0))
    return lower_slope, upper_slope, upper_intercept


def backsubstitute(Lam: np.ndarray, const: np.ndarray, layers: list[tuple[np.ndarray, np.ndarray]],
                   bounds: LinearBounds, upto: int, M: np.ndarray, m: np.ndarray,
                   slopes: list[np.ndarray] | None = None, tape: list | None = None,
                   beta: list[np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Affine lower bounds in ``u`` of ``Lam @ a_{upto-1} + const``.

    ``a_k = relu(z_k)`` are the post-activations of the remaining hidden layers
    (``z_0 = W_0 (M u + m) + b_0``, ``z_k = W_k a_{k-1} + b_k``); ``Lam`` has one row per
    function (``(..., rows, n)``, leading axes as ``bounds``'). Returns ``(L, g)`` with
    ``Lam @ a + const >= L u + g`` on the piece.
    ``slopes``: per layer, lower slopes per row (``(..., rows, n_k)``, in ``[0, 1]``) for
    the unstable neurons instead of ``bounds.lower_slope``; ``beta``: per layer, multipliers
    ``>= 0`` per row of the known phases (``bounds.phase_sign``), whose terms are ``<= 0``
    wherever the phases hold; ``tape`` collects what :func:`gradients` needs.
    """
    Lam = np.asarray(Lam, float)
    const = np.asarray(const, float)
    for k in range(upto - 1, -1, -1):
        lower = bounds.lower_slope[k]
        if slopes is not None:
            lower = np.where(bounds.free(k), slopes[k], lower)
        upper, t = bounds.upper_slope[k], bounds.upper_intercept[k]
        pos, neg = np.maximum(Lam, 0.0), np.minimum(Lam, 0.0)
        Lz = pos * lower + neg * upper  # on z_k
        const = const + (neg @ t if t.ndim == 1 else (neg * t).sum(-1))
        if bounds.lower_intercept is not None:
            s = bounds.lower_intercept[k]
            const = const + (pos @ s if s.ndim == 1 else (pos * s).sum(-1))
        if bounds.paired is not None:
            pl, pu = bounds.paired[k]
            h = Lz.shape[-1] // 2
            Lz[..., :h] += pos[..., h:] * pl + neg[..., h:] * pu
        if beta is not None:
            Lz = Lz + bounds.phase_sign[k] * beta[k]
        W, b = layers[k]
        const = const + Lz @ b
        if tape is not None:
            tape.append((k, Lam, lower, upper, t))
        if k == 0 and bounds.first is not None:
            WM, Wm = bounds.first  # Wm per box of a batch of boxes: (boxes, n_0)
            return Lz @ WM, const + np.einsum("...rn,...n->...r", Lz, Wm)
        Lam = Lz @ W  # on a_{k-1}, or on the piece's input a = M u + m when k == 0
    return Lam @ M, const + Lam @ m


def gradients(dL: np.ndarray, layers, bounds: LinearBounds, M: np.ndarray, m: np.ndarray,
              tape: list, beta: bool = False) -> tuple[list[np.ndarray], list[np.ndarray] | None]:
    """Gradients of ``sum(bound)`` in the slopes of the unstable neurons and (``beta``) in
    the multipliers, given the bound's gradient ``dL`` in ``L`` (and 1 in ``g``); ``tape``
    from :func:`backsubstitute` (last layer first). Per layer, like the slopes."""
    WM, Wm = bounds.first if bounds.first is not None else (layers[0][0] @ M, layers[0][0] @ m)
    upto = len(tape)
    d_slopes, d_beta = [], []
    for k, Lam, lower, upper, t in reversed(tape):
        W, b = layers[k]
        if k == 0:  # z_0 = W_0 (M u + m) + b_0
            dLz = dL @ WM.T + (Wm + b)
        else:
            dLz = dLam @ W.T + b
        pos = Lam > 0.0
        d_slopes.append(np.where(pos & bounds.free(k), dLz * Lam, 0.0))
        if beta:
            d_beta.append(dLz * bounds.phase_sign[k])
        if k + 1 < upto:
            dLam = np.where(pos, lower * dLz, upper * dLz + t)
    return d_slopes, (d_beta if beta else None)


def _slope_gradient(dL, layers, bounds: LinearBounds, M, m, slopes, tape) -> list[np.ndarray]:
    """The slopes' part of :func:`gradients` (``slopes``: those on the ``tape``)."""
    return gradients(dL, layers, bounds, M, m, tape)[0]


def optimized_rows(Lam: np.ndarray, const: np.ndarray, layers, bounds: LinearBounds, upto: int,
                   M: np.ndarray, m: np.ndarray, conc: Concretizer, steps: int,
                   slopes: list[np.ndarray] | None = None, beta: list[np.ndarray] | None = None,
                   lr: float | None = None, tape: list | None = None, stop=None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`backsubstitute` with the unstable neurons' lower slopes optimised per row.

    Projected Adam ascent (step ``lr``, default :data:`SLOPE_STEP`) on ``conc.lower`` of
    each row; every iterate is a sound bound, and each row keeps its best. ``slopes``: per
    layer, the slopes to start from (default CROWN's), updated in place to each row's best;
    ``beta``: per layer, multipliers of the known phases, optimised (``>= 0``) and updated
    in place the same way (None: none). ``stop(low, g)``: for one piece (``Lam`` of two
    axes), called after each step with the rows' best values and constant terms; the ascent
    ends early when it returns True (e.g. once they prove what the caller needs). Returns
    ``(L, g, low)``: the affine bounds and their values; ``tape``, if given, receives the
    back-substitution of that iterate.
    """
    lr = SLOPE_STEP if lr is None else lr
    if (np.ndim(Lam) == 2 and slopes is None and beta is None and tape is None and upto
            and bounds.lower_intercept is None and bounds.paired is None
            and all(np.ndim(bounds.free(k)) == 1 for k in range(upto))):
        if type(conc) is Concretizer and (stop is None or isinstance(stop, RowsProven)):
            kernel = compiled_ascent()
            if kernel is not None:
                return _compiled_piece_ascent(kernel, np.asarray(Lam, float),
                                              np.asarray(const, float), layers, bounds, upto,
                                              M, m, conc, steps, lr, stop)
        return _piece_ascent(np.asarray(Lam, float), np.asarray(const, float), layers, bounds,
                             upto, M, m, conc, steps, lr, stop)
    shape = np.shape(Lam)[:-1]
    widths = [bounds.lower_slope[k].shape[-1] for k in range(upto)]
    groups = [(slopes, SOUND_SLOPES, bounds.free)]
    if beta is not None:
        groups.append((beta, (0.0, np.inf), lambda k: bounds.phase_sign[k] != 0))
    # every parameter in one array (one Adam step for all layers), the layers' views into it
    parts, masks, floors, ceilings = [], [], [], []
    for start, (floor, ceiling), movable in groups:
        for k, n in enumerate(widths):
            parts.append(np.broadcast_to(bounds.lower_slope[k], shape + (n,))
                         if start is None else start[k])
            masks.append(movable(k))
            floors.append(np.full(n, floor))
            ceilings.append(np.full(n, ceiling))
    # one mask for every row (a piece's): Adam moves only its columns, the others never move
    cols = (np.flatnonzero(np.concatenate(masks)) if all(np.ndim(x) == 1 for x in masks)
            else None)
    mask = None if cols is not None else np.concatenate(
        [np.broadcast_to(x, shape + (n,)) for x, n in zip(masks, widths * len(groups))], axis=-1)
    flat, floors, ceilings = (np.concatenate(x, axis=-1) for x in (parts, floors, ceilings))
    if cols is not None:
        floors, ceilings = floors[cols], ceilings[cols]
        if not len(cols):  # nothing to optimise: CROWN's slopes (and no multipliers) it is
            steps = 0
    ends = np.cumsum(widths * len(groups))
    views = [flat[..., end - n:end] for end, n in zip(ends, widths * len(groups))]
    given = (slopes, beta)
    slopes, beta = views[:upto], (views[upto:] if beta is not None else None)
    run: list = []
    L, g = backsubstitute(Lam, const, layers, bounds, upto, M, m, slopes, run, beta)
    best, dL = conc.lower_and_gradient(L, g)
    kept = flat.copy()
    # one piece (few rows): each row's best (L, g) is kept as it comes; a batch of nodes
    # (L is nodes x rows x inputs) is evaluated once more at the best parameters instead
    track = np.ndim(Lam) == 2
    best_L, best_g = (L.copy(), g.copy()) if track else (L, g)
    current = steps == 0  # whether the last iterate is every row's best
    b1, b2 = ADAM_BETAS
    first = np.zeros(shape + (len(cols),)) if cols is not None else np.zeros_like(flat)
    second = np.zeros_like(first)
    for it in range(1, steps + 1):
        d_slopes, d_beta = gradients(dL, layers, bounds, M, m, run, beta is not None)
        grad = np.concatenate(d_slopes + (d_beta or []), axis=-1)
        if cols is not None:
            grad = grad[..., cols]
        first = b1 * first + (1 - b1) * grad
        second = b2 * second + (1 - b2) * grad * grad
        step = lr * (first / (1 - b1 ** it)) / (np.sqrt(second / (1 - b2 ** it)) + ADAM_EPS)
        if cols is not None:
            flat[..., cols] = np.clip(flat[..., cols] + step, floors, ceilings)
        else:
            flat[...] = np.where(mask, np.clip(flat + step, floors, ceilings), flat)
        run = []
        L, g = backsubstitute(Lam, const, layers, bounds, upto, M, m, slopes, run, beta)
        low, dL = conc.lower_and_gradient(L, g)
        better = low > best
        best = np.where(better, low, best)
        kept[better] = flat[better]
        if track:
            best_L[better], best_g[better] = L[better], g[better]
        current = bool(better.all())
        if stop is not None and track and stop(best, best_g):
            break
    if not current:  # some row's best is an earlier iterate: back to it
        flat[...] = kept
        if tape is not None or not track:
            run = []
            L, g = backsubstitute(Lam, const, layers, bounds, upto, M, m, slopes, run, beta)
            best = conc.lower(L, g)
        else:
            L, g = best_L, best_g
    for group, found in zip(given, (slopes, beta)):  # the caller's: each row's best
        for p, v in zip(group or [], found or []):
            p[...] = v
    if tape is not None:
        tape.extend(run)
    return L, g, best


def _piece_ascent(Lam, const, layers, bounds: LinearBounds, upto: int, M, m,
                  conc: Concretizer, steps: int, lr: float, stop
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`optimized_rows` for one piece's rows from CROWN's slopes, with fewer NumPy calls.

    The same projected Adam ascent, each row keeping its best iterate; the arrays of the
    back-substitution and of the gradient are allocated once and written in place, the
    constant term of a layer is one product ``[Lz, min(Lam, 0)] @ [b; t]``, the gradient's
    bias enters as a column of ones, and the rows' coefficients on the last layer (which do
    not move) have their signs taken once. Every iterate is a sound bound as in
    :func:`backsubstitute`; the values agree with it up to rounding.
    """
    rows = Lam.shape[0]
    widths = [bounds.lower_slope[k].shape[-1] for k in range(upto)]
    offs = np.concatenate([[0], np.cumsum(widths)]).astype(int)
    free = np.concatenate([np.asarray(bounds.free(k), bool) for k in range(upto)])
    cols = np.flatnonzero(free)
    if not len(cols):
        steps = 0
    WM, Wm = bounds.first if bounds.first is not None else (layers[0][0] @ M, layers[0][0] @ m)
    flat = np.empty((rows, offs[-1]))  # every layer's lower slopes, per row
    grad = np.empty((rows, offs[-1]))
    lower, gview, Z, Lz, neg, pos, pm, bt, W, WbT, dx, dxv = ([] for _ in range(12))
    sel, nt = [None] * upto, [None] * upto  # per layer: the slopes taken, the intercepts
    for k in range(upto):
        n = widths[k]
        lower.append(flat[:, offs[k]:offs[k + 1]])
        lower[k][...] = bounds.lower_slope[k]
        gview.append(grad[:, offs[k]:offs[k + 1]])
        Z.append(np.empty((rows, 2 * n)))
        Lz.append(Z[k][:, :n])
        neg.append(Z[k][:, n:])
        pos.append(np.empty((rows, n)))
        pm.append(np.empty((rows, n), bool))
        Wk, bk = layers[k]
        bias = bk + Wm if k == 0 else bk
        bt.append(np.concatenate([bias, bounds.upper_intercept[k]]))
        W.append(WM if k == 0 else Wk)
        WbT.append(np.ascontiguousarray(np.vstack([WM.T, bias]) if k == 0 else
                                        np.vstack([Wk.T, bk])))
        dx.append(np.ones((rows, n + 1)))  # the gradient in Lam on a_k, a column of ones
        dxv.append(dx[k][:, :n])
    upper = [bounds.upper_slope[k] for k in range(upto)]
    tint = [bounds.upper_intercept[k] for k in range(upto)]
    top = upto - 1
    np.greater(Lam, 0.0, out=pm[top])
    np.minimum(Lam, 0.0, out=neg[top])
    np.maximum(Lam, 0.0, out=pos[top])

    def evaluate():
        c, lam = const, Lam
        for k in range(top, -1, -1):
            if k != top:  # the top layer's signs are those of the fixed rows
                np.greater(lam, 0.0, out=pm[k])
                np.minimum(lam, 0.0, out=neg[k])
                np.maximum(lam, 0.0, out=pos[k])
                nt[k] = np.where(pm[k], 0.0, tint[k])  # the gradient's: t where Lam <= 0
            sel[k] = np.where(pm[k], lower[k], upper[k])
            np.multiply(lam, sel[k], out=Lz[k])
            c = c + Z[k] @ bt[k]
            lam = Lz[k] @ W[k]
        return lam, c

    WMT, bias0 = WbT[0][:-1], WbT[0][-1]

    def slope_gradient(dL):
        dLz = dL @ WMT + bias0
        for k in range(upto):
            if k:
                dLz = dx[k - 1] @ WbT[k]
            np.multiply(dLz, pos[k], out=gview[k])
            if k + 1 < upto:
                np.multiply(sel[k], dLz, out=dxv[k])
                dxv[k] += nt[k]
        return grad[:, cols]

    L, g = evaluate()
    best, dL = conc.lower_and_gradient(L, g)
    best_L, best_g = L.copy(), g.copy()  # each row's best iterate
    b1, b2 = ADAM_BETAS
    floor, ceiling = SOUND_SLOPES
    first = np.zeros((rows, len(cols)))
    second = np.zeros_like(first)
    moving = flat[:, cols]
    for it in range(1, steps + 1):
        gr = slope_gradient(dL)
        first *= b1
        first += (1 - b1) * gr
        second *= b2
        gr *= gr
        gr *= 1 - b2
        second += gr
        step = np.sqrt(second / (1 - b2 ** it))
        step += ADAM_EPS
        np.divide(first * (lr / (1 - b1 ** it)), step, out=step)
        moving += step
        np.maximum(moving, floor, out=moving)
        np.minimum(moving, ceiling, out=moving)
        flat[:, cols] = moving
        L, g = evaluate()
        low, dL = conc.lower_and_gradient(L, g)
        better = low > best
        np.copyto(best, low, where=better)
        np.copyto(best_g, g, where=better)
        np.copyto(best_L, L, where=better[:, None])
        if stop is not None and stop(best, best_g):
            break
    return best_L, best_g, best


@dataclass(frozen=True)
class RowsProven:
    """``stop(low, g)`` for :func:`optimized_rows` on one piece's rows in groups (group ``i``:
    rows ``starts[i]:starts[i + 1]``, right-hand sides ``d``): True once each group has a
    row whose bound minus ``d`` is ``> 0`` after :func:`rounded_down` (every conjunction of
    an unsafe set proven). The compiled ascent reads the groups (:func:`compiled_ascent`)."""

    starts: np.ndarray
    d: np.ndarray

    def __call__(self, low: np.ndarray, g: np.ndarray) -> bool:
        proven = rounded_down(low - self.d, g - self.d) > 0
        return bool(np.logical_or.reduceat(proven, self.starts[:-1]).all())


#: A process's piece ascents (:func:`_piece_ascent`) in NumPy before the compiled one
#: takes over (:mod:`polytrav.bounds.piece_kernel`, where numba is installed): numba's import
#: and the kernel's load from its disk cache cost about 0.7 s of CPU (its first compilation,
#: once per installation, about 6 s), which only a long run repays (ACAS Xu's 50-wide
#: layers: 4 rows through 3 of them 0.82 ms in NumPy, 0.22 ms compiled; 80 rows through 5
#: 4.1 ms and 2.6 ms). A count, never a clock.
KERNEL_AFTER = 1000
_ascents = 0
_kernel = None  # the compiled module once loaded; False: numba is not installed


def compiled_ascent():
    """The compiled ascent (the module :mod:`polytrav.bounds.piece_kernel`) once this process
    has asked :data:`KERNEL_AFTER` times, else None (and None without numba)."""
    global _ascents, _kernel
    if _kernel is None:
        _ascents += 1
        if _ascents <= KERNEL_AFTER:
            return None
        try:
            from polytrav.bounds import piece_kernel
        except ImportError:
            piece_kernel = False
        _kernel = piece_kernel
    return _kernel or None


def _packed(layers, upto: int, WM: np.ndarray, Wm: np.ndarray) -> tuple:
    """The hidden layers ``< upto`` as the compiled ascent takes them
    (:mod:`polytrav.bounds.piece_kernel`): weights (layer 0's on the piece's coordinates,
    ``W_0 M``), their offsets, biases (layer 0's with ``W_0 m``), neuron offsets, inputs."""
    weights = [WM] + [layers[k][0] for k in range(1, upto)]
    biases = [layers[0][1] + Wm] + [layers[k][1] for k in range(1, upto)]
    return (np.concatenate([np.ravel(w) for w in weights]).astype(float),
            np.concatenate([[0], np.cumsum([w.size for w in weights])]).astype(np.int64),
            np.concatenate(biases).astype(float),
            np.concatenate([[0], np.cumsum([w.shape[0] for w in weights])]).astype(np.int64),
            np.array([w.shape[1] for w in weights], np.int64))


def _vertices(conc: Concretizer) -> tuple[np.ndarray, bool]:
    """The piece's vertices for the compiled ascent, and whether it has any (else its frame
    box)."""
    if conc.V is None:
        return np.zeros((0, conc.dim)), False
    return np.ascontiguousarray(conc.V, float), True


def _compiled_piece_ascent(kernel, Lam, const, layers, bounds: LinearBounds, upto: int, M, m,
                           conc: Concretizer, steps: int, lr: float, stop
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_piece_ascent` by the compiled ``kernel``
    (:func:`polytrav.bounds.piece_kernel.ascent`): the layers packed, the same ascent."""
    WM, Wm = bounds.first if bounds.first is not None else (layers[0][0] @ M, layers[0][0] @ m)
    lower = np.concatenate([bounds.lower_slope[k] for k in range(upto)]).astype(float)
    cols = np.flatnonzero(np.concatenate([np.asarray(bounds.free(k), bool)
                                          for k in range(upto)])).astype(np.int64)
    starts, d = ((stop.starts, stop.d) if stop is not None else (np.zeros(1), np.zeros(0)))
    b1, b2 = ADAM_BETAS
    with compiled_calls():
        return kernel.ascent(
            np.ascontiguousarray(Lam), np.ascontiguousarray(const),
            *_packed(layers, upto, WM, Wm), lower,
            np.concatenate(bounds.upper_slope[:upto]).astype(float),
            np.concatenate(bounds.upper_intercept[:upto]).astype(float), cols,
            *_vertices(conc), int(steps), float(lr), float(b1), float(b2), ADAM_EPS,
            np.asarray(starts, np.int64), np.asarray(d, float), float(BOUND_TOL),
            stop is not None)


def layer_bounds(layers, M, m, conc: Concretizer, steps: int = 0,
                 phases: np.ndarray | None = None, crown: LinearBounds | None = None
                 ) -> LinearBounds:
    """Every remaining hidden layer's pre-activation bounds on the piece (input ``M u + m``),
    by back-substitution (CROWN), ``steps`` slope-optimisation steps on the neurons it leaves
    unstable, and LPs over the piece's rows for the first layer (``conc``); ``phases`` as
    in :func:`output_lower_bounds`. ``crown``: this piece's bounds with CROWN's slopes
    already computed (``steps=0``, no ``phases``), reused (:func:`_tightened_bounds`)."""
    if crown is not None and steps and phases is None and len(layers) > 1:
        return _tightened_bounds(layers, M, m, conc, steps, crown)
    hidden = layers[:-1]
    bounds = LinearBounds([], [], [], [], [], unstable=[])
    start = 0
    for k, (W, b) in enumerate(hidden):
        n = W.shape[0]
        known = None if phases is None or k == 0 else phases[start:start + n]
        if known is not None and known.any():  # bound only the neurons not known stable
            j = np.flatnonzero(known == 0)
            W, b = W[j], b[j]
        rows, const = np.vstack([W, -W]), np.concatenate([b, -b])
        n_rows = W.shape[0]
        if k == 0:
            bounds.first = (W @ M, W @ m)
            L, g = np.vstack([bounds.first[0], -bounds.first[0]]), np.concatenate(
                [bounds.first[1], -bounds.first[1]]) + const
        else:
            L, g = backsubstitute(rows, const, layers, bounds, k, M, m)
        low = conc.lower(L, g)
        unstable = np.flatnonzero((low[:n_rows] < 0) & (low[n_rows:] < 0))
        pick = np.concatenate([unstable, n_rows + unstable])
        if steps and k and len(unstable):  # tighten only what CROWN leaves unstable
            L[pick], g[pick], low[pick] = optimized_rows(rows[pick], const[pick], layers, bounds,
                                                         k, M, m, conc, steps)
        unstable = np.flatnonzero((low[:n_rows] < 0) & (low[n_rows:] < 0))
        pick = np.concatenate([unstable, n_rows + unstable])
        if k == 0:  # affine on the piece: the LPs give its unstable neurons' exact bounds
            low[pick] = conc.refine(L[pick], g[pick], low[pick])
        lo, hi = low[:n_rows], np.maximum(-low[n_rows:], low[:n_rows])
        if n_rows < n:  # the known phases: any bounds of the right sign relax them exactly
            lo_all, hi_all = np.where(known > 0, 0.0, -1.0), np.where(known > 0, 1.0, 0.0)
            lo_all[j], hi_all[j] = lo, hi
            lo, hi = lo_all, hi_all
        if phases is not None:
            phases[start:start + n] = np.where(lo >= 0.0, 1, np.where(hi <= 0.0, -1, 0))
        bounds.push(lo, hi)
        start += n
    return bounds


def _tightened_bounds(layers, M, m, conc: Concretizer, steps: int,
                      crown: LinearBounds) -> LinearBounds:
    """:func:`layer_bounds` with ``steps`` from the same piece's CROWN bounds ``crown``: the
    first layer's bounds are the same (taken as they are), a neuron stable there is stable
    here (its relaxation reads only its sign), and an unstable one's rows start the slope
    ascent from CROWN's slopes, which evaluates them with CROWN first: the CROWN pass over
    every neuron is not repeated. Each bound is the better of the two (both hold on the
    piece): never looser than ``crown``; against ``layer_bounds`` without ``crown`` a deeper
    neuron may come out a little tighter or looser (its ascent starts where the layers below
    differ: there, neurons ``crown`` proves stable stay so)."""
    bounds = LinearBounds([crown.lo[0]], [crown.hi[0]], [crown.lower_slope[0]],
                          [crown.upper_slope[0]], [crown.upper_intercept[0]],
                          first=crown.first, unstable=[crown.free(0)])
    for k in range(1, len(layers) - 1):
        lo, hi = crown.lo[k], crown.hi[k]
        j = np.flatnonzero(crown.free(k))
        if len(j):
            W, b = layers[k]
            _, _, low = optimized_rows(np.vstack([W[j], -W[j]]), np.concatenate([b[j], -b[j]]),
                                       layers, bounds, k, M, m, conc, steps)
            lo, hi = lo.copy(), hi.copy()
            lo[j] = np.maximum(lo[j], low[:len(j)])
            hi[j] = np.maximum(np.minimum(hi[j], -low[len(j):]), lo[j])
        bounds.push(lo, hi)
    return bounds


def output_lower_bounds(layers: list[tuple[np.ndarray, np.ndarray]], M: np.ndarray,
                        m: np.ndarray, C: np.ndarray, conc: Concretizer, steps: int = 0,
                        phases: np.ndarray | None = None, stop=None,
                        crown: LinearBounds | None = None
                        ) -> tuple[np.ndarray, np.ndarray, LinearBounds]:
    """Affine lower bounds ``C y >= L u + g`` of linear functions of the outputs on the piece.

    ``layers``: the remaining layers ``(W, b)``, hidden ones then the output layer; the
    piece's input to the first of them is ``M u + m``. ``steps``: gradient steps of the
    slope optimisation (α-CROWN) for every bounded row, intermediate ones included; 0 keeps
    CROWN's slopes. ``phases``: the hidden neurons' phases known on the piece (int8, the
    remaining hidden layers' neurons in order; +1 active, -1 inactive, 0 unknown), e.g. a
    larger box's: neurons known stable are not bounded again; updated in place with the
    phases these bounds prove. ``stop``: ends the output rows' slope ascent early
    (:func:`optimized_rows`). ``crown``: this piece's intermediate bounds with CROWN's
    slopes, from a call without ``steps`` (:func:`layer_bounds`). Returns ``(L, g, bounds)``
    with the intermediate bounds used.
    """
    bounds = layer_bounds(layers, M, m, conc, steps, phases, crown)
    W, b = layers[-1]
    C = np.atleast_2d(np.asarray(C, float))
    upto = len(layers) - 1
    if steps and upto:
        L, g, _ = optimized_rows(C @ W, C @ b, layers, bounds, upto, M, m, conc, steps,
                                 stop=stop)
    else:
        L, g = backsubstitute(C @ W, C @ b, layers, bounds, upto, M, m)
    return L, g, bounds


def interval_bounds(layers, M, m, conc: Concretizer) -> tuple[np.ndarray, np.ndarray]:
    """Elementwise bounds ``(lo, hi)`` of the outputs over the piece (from :func:`output_lower_bounds`)."""
    n_out = layers[-1][0].shape[0]
    E = np.vstack([np.eye(n_out), -np.eye(n_out)])
    L, g, _ = output_lower_bounds(layers, M, m, E, conc)
    low = conc.lower(L, g)
    return low[:n_out], -low[n_out:]


def rows_of(needed: np.ndarray) -> tuple[np.ndarray, np.ndarray | slice]:
    """The neurons to bound in a batch, ``needed`` per box (``(boxes, n)``): ``(j, at)``, with
    ``j`` per box its own (``(boxes, width)``, padded with others, bounded for nothing) or,
    where some box needs them all, the union (1-D, shared by the boxes); ``at`` indexes the
    boxes alongside ``j`` (``x[at, j]``). On the deep boxes of an ACAS Xu input split a
    batch's union is about seven times a box's own: the split's bounds cost a quarter less."""
    union = np.flatnonzero(needed.any(axis=0))
    width = int(needed.sum(axis=1).max(initial=0))
    if width == union.shape[0]:
        return union, slice(None)
    j = np.argsort(~needed, axis=1, kind="stable")[:, :width]
    return j, np.arange(needed.shape[0])[:, None]


def box_layer_bounds(layers: list[tuple[np.ndarray, np.ndarray]], mid: np.ndarray,
                     rad: np.ndarray, phases: np.ndarray | None = None) -> LinearBounds:
    """The hidden layers' bounds and relaxations of :func:`box_output_bounds` (a batch of
    boxes ``x = mid[b] + rad[b] * u``; ``phases`` as there), before the output rows."""
    W0 = layers[0][0]
    B = mid.shape[0]
    bounds = LinearBounds([], [], [], [], [], first=(W0[None] * rad[:, None, :], mid @ W0.T))
    start = 0
    for k, (W, b) in enumerate(layers[:-1]):
        n = W.shape[0]
        known = None if phases is None else phases[:, start:start + n]
        if k == 0:  # exact over each box
            c = bounds.first[1] + b
            r = np.abs(bounds.first[0]).sum(-1)
            lo, hi = c - r, c + r
        else:
            lo, hi = np.full((B, n), -1.0), np.full((B, n), 1.0)  # clamped below if known
            unknown = np.ones((B, n), bool) if known is None else known == 0
            j, at = rows_of(unknown)
            if j.size:
                L, g = backsubstitute(np.concatenate([W[j], -W[j]], -2),
                                      np.concatenate([b[j], -b[j]], -1), layers, bounds, k,
                                      None, None)
                low = g - np.abs(L).sum(-1)
                w = j.shape[-1]
                lo[at, j], hi[at, j] = low[:, :w], np.maximum(-low[:, w:], low[:, :w])
        if known is not None and k:
            lo = np.where(known > 0, np.maximum(lo, 0.0), lo)
            hi = np.where(known < 0, np.minimum(hi, 0.0), hi)
        if known is not None:
            known[...] = np.where(lo >= 0.0, 1, np.where(hi <= 0.0, -1, 0))
        bounds.push(lo[:, None, :], hi[:, None, :])  # the rows' axis, as a batch's bounds have
        start += n
    return bounds


def box_output_bounds(layers: list[tuple[np.ndarray, np.ndarray]], mid: np.ndarray,
                      rad: np.ndarray, C: np.ndarray, phases: np.ndarray | None = None
                      ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`output_lower_bounds` with CROWN's slopes on a batch of boxes at once.

    Box ``b`` is ``x = mid[b] + rad[b] * u``, ``u`` in ``[-1, 1]^d`` (a piece with no rows
    and no vertices: its own frame). Returns ``(L, g)``, ``(boxes, rows, d)`` and ``(boxes,
    rows)``, with ``C y >= L[b] u + g[b]`` on box ``b``: the same bounds as
    :func:`output_lower_bounds` on each box alone, which bounds only the neurons whose
    phase is unknown. Here a layer's rows are those of the neurons unknown on some box of
    the batch; a phase known on a box (``phases``, ``(boxes, neurons)``, int8, updated in
    place with the phases these bounds prove) clamps that box's bounds to its sign, which
    gives the relaxation the lone box gets (identity or zero). The back-substitution is
    :func:`backsubstitute`'s, with the batch as the leading axis of the bounds.
    """
    bounds = box_layer_bounds(layers, mid, rad, phases)
    W, b = layers[-1]
    C = np.atleast_2d(np.asarray(C, float))
    if len(layers) == 1:  # affine: C y = C (W_0 M u + W_0 m + b_0)
        return np.einsum("rn,bnd->brd", C, bounds.first[0]), (bounds.first[1] + b) @ C.T
    return backsubstitute(C @ W, C @ b, layers, bounds, len(layers) - 1, None, None)
