"""ONNX ``MaxPool`` as exact ReLU layers.

The maximum of two values is ``max(a, b) = b + relu(a - b)``; a window of ``k`` values is
reduced by a tree of such pairs, one ReLU layer per level (``ceil(log2 k)`` layers). A value
that must cross a layer unchanged (the ``b`` of a pair, the odd one out of a window, a value
shared by several windows) crosses it as ``relu(v) - relu(-v)``, or as ``relu(v)`` alone when
it is known to be non-negative (an affine map with non-negative coefficients and offset of the
outputs of an earlier ReLU layer). Everything is float64 and exact: the layers compute the
same values as the pooling, ties included.

Padding cells are ``-inf`` and never win, so a window is the list of its cells inside the
input. ``kernel_shape``, ``strides``, ``pads``, ``auto_pad``, ``dilations`` and ``ceil_mode``
are read for any number of spatial axes; the second output (``Indices``) is refused.
"""
from __future__ import annotations

import itertools

import numpy as np

from polytrav.model.loaders.onnx_ops import UnsupportedUse, resolve_pads

__all__ = ["max_pool_windows", "max_pool_layers"]


def _out_size(n, k, s, d, begin, end, ceil_mode) -> int:
    span = n + begin + end - d * (k - 1) - 1
    if span < 0:
        raise UnsupportedUse(
            f"kernel {k} (dilation {d}) does not fit the padded size {n + begin + end}"
        )
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= n + begin:  # a window may not start in the end padding
        out -= 1
    return out


def max_pool_windows(attrs: dict, dims: tuple) -> tuple[tuple[int, ...], list[list[int]]]:
    """The output dims and, per output cell (row-major), the flat input cells of its window.

    ``dims`` is the ONNX input shape ``(N, C, *spatial)``.
    """
    if "kernel_shape" not in attrs:
        raise UnsupportedUse("needs kernel_shape")
    kernel = [int(k) for k in attrs["kernel_shape"]]
    spatial = tuple(dims[2:])
    if len(dims) < 3 or len(kernel) != len(spatial):
        raise UnsupportedUse(f"kernel_shape {kernel} does not fit input shape {list(dims)}")
    rank = len(kernel)
    strides = [int(s) for s in attrs.get("strides", [1] * rank)]
    dilations = [int(d) for d in attrs.get("dilations", [1] * rank)]
    if min(strides + dilations + kernel) < 1:
        raise UnsupportedUse("kernel_shape, strides and dilations must be positive")
    if rank == 2:
        pads = resolve_pads(attrs, spatial, kernel, strides, dilations)
    elif attrs.get("auto_pad", "NOTSET") in ("NOTSET", b"NOTSET"):
        pads = [int(p) for p in attrs.get("pads", [0] * 2 * rank)]
    else:
        raise UnsupportedUse(f"auto_pad is supported for 2-D pooling only (kernel {kernel})")
    if min(pads) < 0:
        raise UnsupportedUse(f"negative pads {pads} are not supported")
    ceil_mode = int(attrs.get("ceil_mode", 0))
    outs = [
        _out_size(spatial[a], kernel[a], strides[a], dilations[a], pads[a], pads[a + rank],
                  ceil_mode)
        for a in range(rank)
    ]

    def along(a: int, o: int) -> list[int]:
        """The input indices of output index ``o``'s window along spatial axis ``a``."""
        first = o * strides[a] - pads[a]
        cells = (first + t * dilations[a] for t in range(kernel[a]))
        return [i for i in cells if 0 <= i < spatial[a]]

    axis_cells = [[along(a, o) for o in range(outs[a])] for a in range(rank)]
    out_dims = (*dims[:2], *outs)
    windows = []
    for lead in itertools.product(*(range(d) for d in dims[:2])):
        for pos in itertools.product(*(range(o) for o in outs)):
            cells = [
                int(np.ravel_multi_index((*lead, *idx), dims))
                for idx in itertools.product(*(axis_cells[a][pos[a]] for a in range(rank)))
            ]
            if not cells:
                raise UnsupportedUse(f"the window of output cell {pos} lies in the padding")
            windows.append(cells)
    return out_dims, windows


def max_pool_layers(Vm: np.ndarray, vc: np.ndarray, nonneg_z: bool, windows: list[list[int]]):
    """ReLU layers computing the window maxima of ``v = Vm z + vc``.

    Parameters
    ----------
    Vm, vc : ndarray
        The pooled tensor (flattened) as an affine map of the current layer input ``z``:
        ``(m, n)`` and ``(m,)``.
    nonneg_z : bool
        Whether ``z`` is the output of a ReLU layer (so ``z >= 0``).
    windows : list of list of int
        Per output cell, the indices of ``v`` it takes the maximum of.

    Returns
    -------
    layers : list of (W, b)
        The ReLU layers, in order (none if every window has one cell).
    Vm, vc : ndarray
        The output (flattened) as an affine map of the last layer's ReLU outputs (or of ``z``).
    """
    nonneg = nonneg_z & np.all(Vm >= 0, axis=1) & (vc >= 0)
    lists = [list(w) for w in windows]
    layers = []
    while any(len(w) > 1 for w in lists):
        rows: dict[tuple, int] = {}  # ('d', a, b): v_a - v_b; ('p', v): v; ('n', v): -v
        new: dict[tuple, int] = {}  # key -> new v index
        exprs: list[list[tuple[float, tuple]]] = []
        new_nonneg: list[bool] = []

        def row(key):
            return rows.setdefault(key, len(rows))

        def value(key, terms, sign):
            if key not in new:
                new[key] = len(exprs)
                exprs.append([(c, row(r)) for c, r in terms])
                new_nonneg.append(sign)
            return new[key]

        def passed(v):
            terms = [(1.0, ("p", v))] + ([] if nonneg[v] else [(-1.0, ("n", v))])
            return terms

        next_lists = []
        for w in lists:
            out = []
            for j in range(0, len(w) - 1, 2):
                a, b = w[j], w[j + 1]
                if nonneg[a] and not nonneg[b]:
                    a, b = b, a
                out.append(value(("max", a, b), [(1.0, ("d", a, b)), *passed(b)], bool(nonneg[b])))
            if len(w) % 2:
                out.append(value(("pass", w[-1]), passed(w[-1]), bool(nonneg[w[-1]])))
            next_lists.append(out)
        R = np.zeros((len(rows), len(vc)))
        for key, r in rows.items():
            if key[0] == "d":
                R[r, key[1]], R[r, key[2]] = 1.0, -1.0
            else:
                R[r, key[1]] = 1.0 if key[0] == "p" else -1.0
        layers.append((R @ Vm, R @ vc))
        P = np.zeros((len(exprs), len(rows)))
        for v, terms in enumerate(exprs):
            for c, r in terms:
                P[v, r] += c
        Vm, vc = P, np.zeros(len(exprs))
        nonneg = np.array(new_nonneg, dtype=bool)
        lists = next_lists
    final = [w[0] for w in lists]
    return layers, Vm[final], vc[final]

