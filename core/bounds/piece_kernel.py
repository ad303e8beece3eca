"""One piece's slope ascent (α-CROWN), compiled (numba): :func:`polytrav.bounds.crown.
_piece_ascent`'s loop without NumPy's per-call cost.

A traversal's piece has few rows to bound (mostly under 20) through layers about 50 wide,
so each of the ascent's NumPy calls costs more than its arithmetic. :func:`ascent` runs the
same projected Adam ascent with the elementwise work in loops and only the layers' matrix
products left to BLAS (``np.dot``): the same bounds up to rounding (every iterate a sound
bound, each row keeping its best). numba is optional (``pip install "polytrav[fast]"``):
this module is imported only by :func:`polytrav.bounds.crown.compiled_ascent`, once a run
has done enough ascents to pay for it; without numba the NumPy path does the same. Compiled
once, cached on disk (``cache=True``).

The layers come packed (one specialisation for any depth): layer ``k`` (the first remaining
hidden layer is 0, its weights already on the piece's coordinates, ``W_0 M``) has ``n_k``
neurons at ``off[k]:off[k + 1]`` of the per-neuron arrays and its weights, ``(n_k,
ins[k])``, row-major at ``woff[k]:woff[k + 1]`` of ``wflat``.
"""
from __future__ import annotations

import numba
import numpy as np

__all__ = ["ascent"]

jit = numba.njit(cache=True, nogil=True)


@jit
def _evaluate(Lam, const, Ws, bias, off, slopes, upper, tint, lams, Lzs):
    """Every row's bound ``L u + g`` at its slopes ``slopes``; ``lams[k]`` keeps layer
    ``k``'s coefficients on its post-activation (for the gradient). Returns ``(L, g)``."""
    top = off.shape[0] - 2
    g = const.copy()
    lams[top][:, :] = Lam
    L = Lam
    for k in range(top, -1, -1):
        o, n = off[k], off[k + 1] - off[k]
        lam, Lz = lams[k], Lzs[k]
        for r in range(lam.shape[0]):
            c = 0.0
            for i in range(n):
                x = lam[r, i]
                if x > 0.0:
                    z = x * slopes[r, o + i]
                else:
                    z = x * upper[o + i]
                    c += x * tint[o + i]
                c += z * bias[o + i]
                Lz[r, i] = z
            g[r] += c
        L = np.dot(Lz, Ws[k])
        if k > 0:
            lams[k - 1][:, :] = L
    return L, g


@jit
def _lower(L, g, V, use_v, dL):
    """Each row's bound minimised over the piece (its vertices ``V``, else the frame box),
    its gradient in ``L`` written to ``dL``."""
    rows, d = L.shape
    low = np.empty(rows)
    if use_v:
        values = np.dot(L, V.T)
        for r in range(rows):
            at = 0
            for v in range(1, V.shape[0]):
                if values[r, v] < values[r, at]:
                    at = v
            low[r] = values[r, at] + g[r]
            dL[r, :] = V[at]
        return low
    for r in range(rows):
        s = g[r]
        for j in range(d):
            x = L[r, j]
            s -= abs(x)
            dL[r, j] = -1.0 if x > 0.0 else (1.0 if x < 0.0 else 0.0)
        low[r] = s
    return low


@jit
def _gradient(dL, WTs, bias, off, slopes, upper, tint, lams, grad):
    """Each row's gradient of its bound in every layer's lower slopes, to ``grad``."""
    top = off.shape[0] - 2
    dlam = dL
    for k in range(top + 1):
        o, n = off[k], off[k + 1] - off[k]
        dz = np.dot(dlam, WTs[k])
        lam = lams[k]
        if k < top:
            dlam = np.empty((lam.shape[0], n))
        for r in range(lam.shape[0]):
            for i in range(n):
                z = dz[r, i] + bias[o + i]
                x = lam[r, i]
                if x > 0.0:
                    grad[r, o + i] = z * x
                    if k < top:
                        dlam[r, i] = slopes[r, o + i] * z
                else:
                    grad[r, o + i] = 0.0
                    if k < top:
                        dlam[r, i] = upper[o + i] * z + tint[o + i]


@jit
def ascent(Lam, const, wflat, woff, bias, off, ins, lower, upper, tint, cols, V, use_v,
           steps, lr, b1, b2, eps, starts, d, tol, use_stop):
    """The projected Adam ascent of :func:`polytrav.bounds.crown._piece_ascent` on the rows
    ``Lam @ a + const`` (``Lam``: ``(rows, n_top)``): the lower slopes start at ``lower``
    and only the columns ``cols`` move, in ``[0, 1]``, ``steps`` steps of Adam's (``lr``,
    ``b1``, ``b2``, ``eps``); ``V``, ``use_v``: the piece's vertices, else its frame box.
    ``use_stop``: end once every group of rows (group ``i``: ``starts[i]:starts[i + 1]``,
    right-hand sides ``d``) has a row whose best bound minus ``d``, lowered by ``tol (1 +
    |g - d|)``, is positive. Returns ``(L, g, low)``: each row's best bound and its value."""
    rows, dim = Lam.shape[0], ins[0]
    layers = off.shape[0] - 1
    width = off[layers]
    Ws = [np.ascontiguousarray(wflat[woff[k]:woff[k + 1]].reshape((off[k + 1] - off[k], ins[k])))
          for k in range(layers)]
    WTs = [np.ascontiguousarray(W.T) for W in Ws]
    lams = [np.empty((rows, off[k + 1] - off[k])) for k in range(layers)]
    Lzs = [np.empty((rows, off[k + 1] - off[k])) for k in range(layers)]
    slopes = np.empty((rows, width))
    for r in range(rows):
        slopes[r, :] = lower
    dL = np.empty((rows, dim))
    L, g = _evaluate(Lam, const, Ws, bias, off, slopes, upper, tint, lams, Lzs)
    best = _lower(L, g, V, use_v, dL)
    best_L, best_g = L.copy(), g.copy()
    nc = cols.shape[0]
    if nc == 0:
        steps = 0
    first = np.zeros((rows, nc))
    second = np.zeros((rows, nc))
    grad = np.empty((rows, width))
    groups = starts.shape[0] - 1
    for it in range(1, steps + 1):
        c1, c2 = 1.0 - b1 ** it, 1.0 - b2 ** it
        _gradient(dL, WTs, bias, off, slopes, upper, tint, lams, grad)
        for r in range(rows):
            for q in range(nc):
                x = grad[r, cols[q]]
                first[r, q] = b1 * first[r, q] + (1.0 - b1) * x
                second[r, q] = b2 * second[r, q] + (1.0 - b2) * x * x
                step = lr * (first[r, q] / c1) / (np.sqrt(second[r, q] / c2) + eps)
                s = slopes[r, cols[q]] + step
                slopes[r, cols[q]] = min(max(s, 0.0), 1.0)
        L, g = _evaluate(Lam, const, Ws, bias, off, slopes, upper, tint, lams, Lzs)
        low = _lower(L, g, V, use_v, dL)
        for r in range(rows):
            if low[r] > best[r]:
                best[r], best_g[r] = low[r], g[r]
                best_L[r, :] = L[r]
        if use_stop:
            done = True
            for q in range(groups):
                met = False
                for r in range(starts[q], starts[q + 1]):
                    if best[r] - d[r] - tol * (1.0 + abs(best_g[r] - d[r])) > 0.0:
                        met = True
                        break
                if not met:
                    done = False
                    break
            if done:
                break
    return best_L, best_g, best
