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

Every bound is sound for every point of the piece: the tests sample points and check.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Concretizer", "LinearBounds", "relax", "backsubstitute", "output_lower_bounds",
           "interval_bounds"]


class Concretizer:
    """Lower bounds of affine functions ``L u + g`` over a set containing the piece.

    ``V``: the piece's vertices (the exact minimum of an affine function over a polytope is
    at a vertex); without them the frame box ``[-1, 1]^d`` (which contains the region).
    """

    def __init__(self, dim: int, V: np.ndarray | None = None):
        self.dim = dim
        self.V = None if V is None or len(V) == 0 else np.asarray(V, float)

    def lower(self, L: np.ndarray, g: np.ndarray) -> np.ndarray:
        if self.V is not None:
            return (L @ self.V.T).min(axis=1) + g
        return g - np.abs(L).sum(axis=1)


@dataclass
class LinearBounds:
    """Per remaining hidden layer: pre-activation bounds and the relaxation derived from them."""

    lo: list[np.ndarray]
    hi: list[np.ndarray]
    lower_slope: list[np.ndarray]
    upper_slope: list[np.ndarray]
    upper_intercept: list[np.ndarray]


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
                   bounds: LinearBounds, upto: int, M: np.ndarray, m: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Affine lower bounds in ``u`` of ``Lam @ a_{upto-1} + const``.

    ``a_k = relu(z_k)`` are the post-activations of the remaining hidden layers
    (``z_0 = W_0 (M u + m) + b_0``, ``z_k = W_k a_{k-1} + b_k``); ``Lam`` has one row per
    function. Returns ``(L, g)`` with ``Lam @ a + const >= L u + g`` on the piece.
    """
    Lam = np.array(Lam, float)
    const = np.array(const, float)
    for k in range(upto - 1, -1, -1):
        pos, neg = np.maximum(Lam, 0.0), np.minimum(Lam, 0.0)
        Lz = pos * bounds.lower_slope[k] + neg * bounds.upper_slope[k]  # on z_k
        const = const + neg @ bounds.upper_intercept[k]
        W, b = layers[k]
        const = const + Lz @ b
        Lam = Lz @ W  # on a_{k-1}, or on the piece's input a = M u + m when k == 0
    return Lam @ M, const + Lam @ m


def _layer_bounds(layers, M, m, conc: Concretizer) -> LinearBounds:
    hidden = layers[:-1]
    bounds = LinearBounds([], [], [], [], [])
    for k, (W, b) in enumerate(hidden):
        n = W.shape[0]
        if k == 0:
            L, g = W @ M, W @ m + b
            lo, hi = conc.lower(L, g), -conc.lower(-L, -g)
        else:
            rows = np.vstack([W, -W])
            L, g = backsubstitute(rows, np.concatenate([b, -b]), layers, bounds, k, M, m)
            low = conc.lower(L, g)
            lo, hi = low[:n], -low[n:]
        hi = np.maximum(hi, lo)
        ls, us, ui = relax(lo, hi)
        bounds.lo.append(lo)
        bounds.hi.append(hi)
        bounds.lower_slope.append(ls)
        bounds.upper_slope.append(us)
        bounds.upper_intercept.append(ui)
    return bounds


def output_lower_bounds(layers: list[tuple[np.ndarray, np.ndarray]], M: np.ndarray,
                        m: np.ndarray, C: np.ndarray, conc: Concretizer
                        ) -> tuple[np.ndarray, np.ndarray, LinearBounds]:
    """Affine lower bounds ``C y >= L u + g`` of linear functions of the outputs on the piece.

    ``layers``: the remaining layers ``(W, b)``, hidden ones then the output layer; the
    piece's input to the first of them is ``M u + m``. Returns ``(L, g, bounds)`` with the
    intermediate bounds used.
    """
    bounds = _layer_bounds(layers, M, m, conc)
    W, b = layers[-1]
    C = np.atleast_2d(np.asarray(C, float))
    L, g = backsubstitute(C @ W, C @ b, layers, bounds, len(layers) - 1, M, m)
    return L, g, bounds


def interval_bounds(layers, M, m, conc: Concretizer) -> tuple[np.ndarray, np.ndarray]:
    """Elementwise bounds ``(lo, hi)`` of the outputs over the piece (from :func:`output_lower_bounds`)."""
    n_out = layers[-1][0].shape[0]
    E = np.vstack([np.eye(n_out), -np.eye(n_out)])
    L, g, _ = output_lower_bounds(layers, M, m, E, conc)
    low = conc.lower(L, g)
    return low[:n_out], -low[n_out:]
