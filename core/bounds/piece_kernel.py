"""One piece's slope ascent (α-CROWN), compiled (numba): :func:`polytrav.bounds.crown.
_piece_ascent`'s loop without NumPy's per-call cost.

A traversal's piece has few rows to bound (mostly under 20) through layers about 50 wide,
so each of the ascent's NumPy calls costs more than its arithmetic. :func:`ascent` runs the
same projected Adam ascent, row by row, layer by layer, with no temporary arrays: the same
bounds up to rounding (every iterate a sound bound, each row keeping its best). numba is
optional (``pip install "polytrav[fast]"``): this module is imported only by
:func:`polytrav.bounds.crown.compiled_ascent`, once a run has done enough ascents to pay
for it, and runs only ascents of few rows (NumPy's products win on many); without numba the
NumPy path does the same. Compiled once, cached on disk (``cache=True``).

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
def _evaluate(r, Lam, const, wflat, woff, bias, off, ins, slopes, upper, tint, lam, L):
    """Row ``r``'s bound ``L[r] u + g`` at the slopes ``slopes[r]``; ``lam[r]`` keeps each
    layer's coefficients on its post-activation (for the gradient). Returns ``g``."""
    top = off.shape[0] - 2
    c = const[r]
    o = off[top]
    for i in range(off[top + 1] - o):
        lam[r, o + i] = Lam[r, i]
    for k in range(top, -1, -1):
        o, n, w = off[k], off[k + 1] - off[k], ins[k]
        if k > 0:
            nxt = lam[r, off[k - 1]:off[k]]
        else:
            nxt = L[r]
        nxt[:] = 0.0
        for i in range(n):
            x = lam[r, o + i]
            if x > 0.0:
                z = x * slopes[r, o + i]
            else:
                z = x * upper[o + i]
                c += x * tint[o + i]
            if z != 0.0:
                c += z * bias[o + i]
                base = woff[k] + i * w
                for j in range(w):
                    nxt[j] += z * wflat[base + j]
    return c


@jit
def _lower(r, L, g, V, use_v, dL):
    """Row ``r``'s bound minimised over the piece (its vertices ``V``, else the frame box),
    its gradient in ``L[r]`` written to ``dL[r]``."""
    d = L.shape[1]
    if use_v:
        best, at = np.inf, 0
        for v in range(V.shape[0]):
            s = 0.0
            for j in range(d):
                s += L[r, j] * V[v, j]
            if s < best:
                best, at = s, v
        for j in range(d):
            dL[r, j] = V[at, j]
        return best + g
    s = g
    for j in range(d):
        x = L[r, j]
        s -= abs(x)
        dL[r, j] = -1.0 if x > 0.0 else (1.0 if x < 0.0 else 0.0)
    return s


@jit
def _gradient(r, dL, wtflat, woff, bias, off, ins, slopes, upper, tint, lam, grad, dz, dlam):
    """Row ``r``'s gradient of its bound in every layer's lower slopes, to ``grad[r]``."""
    top = off.shape[0] - 2
    for k in range(top + 1):
        o, n, w = off[k], off[k + 1] - off[k], ins[k]
        for i in range(n):
            dz[i] = bias[o + i]
        for j in range(w):  # dz += W^T's rows: contiguous in i
            x = dL[r, j] if k == 0 else dlam[j]
            if x != 0.0:
                base = woff[k] + j * n
                for i in range(n):
                    dz[i] += wtflat[base + i] * x
        for i in range(n):
            x = lam[r, o + i]
            grad[r, o + i] = dz[i] * x if x > 0.0 else 0.0
        if k < top:
            for i in range(n):
                x = lam[r, o + i]
                if x > 0.0:
                    dlam[i] = slopes[r, o + i] * dz[i]
                else:
                    dlam[i] = upper[o + i] * dz[i] + tint[o + i]


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
    width = off[off.shape[0] - 1]
    wtflat = np.empty(woff[off.shape[0] - 1])  # each layer's weights transposed
    for k in range(off.shape[0] - 1):
        n, w = off[k + 1] - off[k], ins[k]
        for i in range(n):
            for j in range(w):
                wtflat[woff[k] + j * n + i] = wflat[woff[k] + i * w + j]
    slopes = np.empty((rows, width))
    for r in range(rows):
        slopes[r, :] = lower
    lam = np.empty((rows, width))
    L = np.empty((rows, dim))
    dL = np.empty((rows, dim))
    g = np.empty(rows)
    best = np.empty(rows)
    for r in range(rows):
        g[r] = _evaluate(r, Lam, const, wflat, woff, bias, off, ins, slopes, upper, tint, lam, L)
        best[r] = _lower(r, L, g[r], V, use_v, dL)
    best_L, best_g = L.copy(), g.copy()
    nc = cols.shape[0]
    if nc == 0:
        steps = 0
    first = np.zeros((rows, nc))
    second = np.zeros((rows, nc))
    grad = np.empty((rows, width))
    most = 0
    for k in range(off.shape[0] - 1):
        most = max(most, off[k + 1] - off[k])
    dz, dlam = np.empty(most), np.empty(most)
    groups = starts.shape[0] - 1
    for it in range(1, steps + 1):
        c1, c2 = 1.0 - b1 ** it, 1.0 - b2 ** it
        for r in range(rows):
            _gradient(r, dL, wtflat, woff, bias, off, ins, slopes, upper, tint, lam, grad, dz,
                      dlam)
            for q in range(nc):
                x = grad[r, cols[q]]
                first[r, q] = b1 * first[r, q] + (1.0 - b1) * x
                second[r, q] = b2 * second[r, q] + (1.0 - b2) * x * x
                step = lr * (first[r, q] / c1) / (np.sqrt(second[r, q] / c2) + eps)
                s = slopes[r, cols[q]] + step
                slopes[r, cols[q]] = min(max(s, 0.0), 1.0)
            g[r] = _evaluate(r, Lam, const, wflat, woff, bias, off, ins, slopes, upper, tint,
                             lam, L)
            low = _lower(r, L, g[r], V, use_v, dL)
            if low > best[r]:
                best[r], best_g[r] = low, g[r]
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

