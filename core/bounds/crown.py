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
The gradient is written out by hand (:func:`_slope_gradient`): the bound is piecewise
linear in the slopes.

Every bound is sound for every point of the piece: the tests sample points and check.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Concretizer", "LinearBounds", "relax", "backsubstitute", "output_lower_bounds",
           "interval_bounds", "optimized_rows"]

#: Adam's step size on the slopes (which live in [0, 1]) and its moment decays.
SLOPE_STEP, ADAM_BETAS = 0.1, (0.9, 0.999)
#: The lower slopes ``alpha`` for which ``alpha z <= relu(z)`` everywhere.
SOUND_SLOPES = (0.0, 1.0)


class Concretizer:
    """Lower bounds of affine functions ``L u + g`` over a set containing the piece.

    ``V``: the piece's vertices (the exact minimum of an affine function over a polytope is
    at a vertex); without them the frame box ``[-1, 1]^d`` (which contains the region).
    ``rows``, ``lp``: the piece's halfspaces ``A u <= b`` and an LP backend (or session)
    that reports duals, for :meth:`refine`; rows that cannot cut the frame box are dropped.
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
            return (L @ self.V.T).min(axis=1) + g
        return g - np.abs(L).sum(axis=1)

    def lower_and_gradient(self, L: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`lower` and its (sub)gradient in ``L`` (the gradient in ``g`` is 1)."""
        if self.V is not None:
            values = L @ self.V.T
            best = values.argmin(axis=1)
            return values[np.arange(len(best)), best] + g, self.V[best]
        return g - np.abs(L).sum(axis=1), -np.sign(L)

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


@dataclass
class LinearBounds:
    """Per remaining hidden layer: pre-activation bounds and the relaxation derived from them."""

    lo: list[np.ndarray]
    hi: list[np.ndarray]
    lower_slope: list[np.ndarray]
    upper_slope: list[np.ndarray]
    upper_intercept: list[np.ndarray]
    #: ``(W_0 M, W_0 m)``: the first remaining layer's weights on the piece's coordinates
    #: (so that back-substitution never multiplies by the ``d x d`` matrix ``M``).
    first: tuple[np.ndarray, np.ndarray] | None = None


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
                   slopes: list[np.ndarray] | None = None, tape: list | None = None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Affine lower bounds in ``u`` of ``Lam @ a_{upto-1} + const``.

    ``a_k = relu(z_k)`` are the post-activations of the remaining hidden layers
    (``z_0 = W_0 (M u + m) + b_0``, ``z_k = W_k a_{k-1} + b_k``); ``Lam`` has one row per
    function. Returns ``(L, g)`` with ``Lam @ a + const >= L u + g`` on the piece.
    ``slopes``: per layer, lower slopes per row (``(rows, n_k)``, in ``[0, 1]`` where the
    neuron is unstable) instead of ``bounds.lower_slope``; ``tape`` collects what
    :func:`_slope_gradient` needs.
    """
    Lam = np.array(Lam, float)
    const = np.array(const, float)
    for k in range(upto - 1, -1, -1):
        pos, neg = np.maximum(Lam, 0.0), np.minimum(Lam, 0.0)
        lower = bounds.lower_slope[k] if slopes is None else slopes[k]
        Lz = pos * lower + neg * bounds.upper_slope[k]  # on z_k
        const = const + neg @ bounds.upper_intercept[k]
        W, b = layers[k]
        const = const + Lz @ b
        if tape is not None:
            tape.append((Lam, pos))
        if k == 0 and bounds.first is not None:
            WM, Wm = bounds.first
            return Lz @ WM, const + Lz @ Wm
        Lam = Lz @ W  # on a_{k-1}, or on the piece's input a = M u + m when k == 0
    return Lam @ M, const + Lam @ m


def _slope_gradient(dL: np.ndarray, layers, bounds: LinearBounds, M: np.ndarray, m: np.ndarray,
                    slopes: list[np.ndarray], tape: list) -> list[np.ndarray]:
    """Gradient of ``sum(bound)`` in the slopes, given the bound's gradient ``dL`` in ``L``
    (and 1 in ``g``); ``tape`` from :func:`backsubstitute` (last layer first)."""
    WM, Wm = bounds.first if bounds.first is not None else (layers[0][0] @ M, layers[0][0] @ m)
    grads = []
    for k, (Lam, pos) in enumerate(reversed(tape)):
        W, b = layers[k]
        if k == 0:  # z_0 = W_0 (M u + m) + b_0
            dLz = dL @ WM.T + (Wm + b)[None, :]
        else:
            dLz = dLam @ W.T + b[None, :]
        grads.append(dLz * pos)
        dneg = bounds.upper_intercept[k][None, :] + dLz * bounds.upper_slope[k]
        dLam = np.where(Lam > 0, dLz * slopes[k], np.where(Lam < 0, dneg, 0.0))
    return grads


def optimized_rows(Lam: np.ndarray, const: np.ndarray, layers, bounds: LinearBounds, upto: int,
                   M: np.ndarray, m: np.ndarray, conc: Concretizer, steps: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`backsubstitute` with the unstable neurons' lower slopes optimised per row.

    Projected Adam ascent on ``conc.lower`` of each row; every iterate is a sound bound, and
    each row keeps its best. Returns ``(L, g, low)``: the affine bounds and their values.
    """
    rows = Lam.shape[0]
    free = [(bounds.lo[k] < 0) & (bounds.hi[k] > 0) for k in range(upto)]
    slopes = [np.repeat(bounds.lower_slope[k][None, :], rows, axis=0) for k in range(upto)]
    tape: list = []
    L, g = backsubstitute(Lam, const, layers, bounds, upto, M, m, slopes, tape)
    best, dL = conc.lower_and_gradient(L, g)
    best_L, best_g = L.copy(), g.copy()
    b1, b2 = ADAM_BETAS
    first = [np.zeros_like(s) for s in slopes]
    second = [np.zeros_like(s) for s in slopes]
    for it in range(1, steps + 1):
        grads = _slope_gradient(dL, layers, bounds, M, m, slopes, tape)
        for k, grad in enumerate(grads):
            grad = grad * free[k]
            first[k] = b1 * first[k] + (1 - b1) * grad
            second[k] = b2 * second[k] + (1 - b2) * grad * grad
            step = SLOPE_STEP * (first[k] / (1 - b1 ** it)) / (
                np.sqrt(second[k] / (1 - b2 ** it)) + 1e-12)
            slopes[k] = np.where(free[k], np.clip(slopes[k] + step, *SOUND_SLOPES), slopes[k])
        tape = []
        L, g = backsubstitute(Lam, const, layers, bounds, upto, M, m, slopes, tape)
        low, dL = conc.lower_and_gradient(L, g)
        better = low > best
        best = np.where(better, low, best)
        best_L[better], best_g[better] = L[better], g[better]
    return best_L, best_g, best


def _layer_bounds(layers, M, m, conc: Concretizer, steps: int = 0) -> LinearBounds:
    hidden = layers[:-1]
    bounds = LinearBounds([], [], [], [], [])
    for k, (W, b) in enumerate(hidden):
        n = W.shape[0]
        rows, const = np.vstack([W, -W]), np.concatenate([b, -b])
        if k == 0:
            bounds.first = (W @ M, W @ m)
            L, g = np.vstack([bounds.first[0], -bounds.first[0]]), np.concatenate(
                [bounds.first[1], -bounds.first[1]]) + const
        else:
            L, g = backsubstitute(rows, const, layers, bounds, k, M, m)
        low = conc.lower(L, g)
        unstable = np.flatnonzero((low[:n] < 0) & (low[n:] < 0))
        pick = np.concatenate([unstable, n + unstable])
        if steps and k and len(unstable):  # tighten only what CROWN leaves unstable
            L[pick], g[pick], low[pick] = optimized_rows(rows[pick], const[pick], layers, bounds,
                                                         k, M, m, conc, steps)
        unstable = np.flatnonzero((low[:n] < 0) & (low[n:] < 0))
        pick = np.concatenate([unstable, n + unstable])
        if k == 0:  # affine on the piece: the LPs give its unstable neurons' exact bounds
            low[pick] = conc.refine(L[pick], g[pick], low[pick])
        lo, hi = low[:n], np.maximum(-low[n:], low[:n])
        ls, us, ui = relax(lo, hi)
        bounds.lo.append(lo)
        bounds.hi.append(hi)
        bounds.lower_slope.append(ls)
        bounds.upper_slope.append(us)
        bounds.upper_intercept.append(ui)
    return bounds


def output_lower_bounds(layers: list[tuple[np.ndarray, np.ndarray]], M: np.ndarray,
                        m: np.ndarray, C: np.ndarray, conc: Concretizer, steps: int = 0
                        ) -> tuple[np.ndarray, np.ndarray, LinearBounds]:
    """Affine lower bounds ``C y >= L u + g`` of linear functions of the outputs on the piece.

    ``layers``: the remaining layers ``(W, b)``, hidden ones then the output layer; the
    piece's input to the first of them is ``M u + m``. ``steps``: gradient steps of the
    slope optimisation (α-CROWN) for every bounded row, intermediate ones included; 0 keeps
    CROWN's slopes. Returns ``(L, g, bounds)`` with the intermediate bounds used.
    """
    bounds = _layer_bounds(layers, M, m, conc, steps)
    W, b = layers[-1]
    C = np.atleast_2d(np.asarray(C, float))
    upto = len(layers) - 1
    if steps and upto:
        L, g, _ = optimized_rows(C @ W, C @ b, layers, bounds, upto, M, m, conc, steps)
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
