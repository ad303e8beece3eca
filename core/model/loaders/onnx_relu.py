"""The ReLU layers of the ONNX loader: ``Relu``, ``MaxPool``, and values that cross them.

Between two ReLU layers every tensor the graph still needs is an affine map ``(C, J)`` of the
current layer input ``z`` (see :mod:`polytrav.model.loaders.onnx`). A ReLU layer ends that
stretch: its units are the op's own (``relu(t)``, or a level of a max tree) followed by one or
two units per value of every other tensor still needed (a branch, a skip connection, a
requested hidden tensor), which crosses the layer as ``relu(v) - relu(-v)``, or as ``relu(v)``
alone when it is known to be non-negative (non-negative coefficients and offset over the
outputs of an earlier ReLU layer).

``MaxPool`` uses ``max(a, b) = b + relu(a - b)``: a window of ``k`` values is reduced by a
tree of such pairs, one ReLU layer per level (``ceil(log2 k)`` layers), ``b`` and the odd one
out crossing each layer as above. Everything is float64 and exact, ties included. Padding
cells are ``-inf`` and never win, so a window is the list of its cells inside the input.
``kernel_shape``, ``strides``, ``pads``, ``auto_pad`` (2-D), ``dilations`` and ``ceil_mode``
are read for any number of spatial axes; a used second output (``Indices``) is refused.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from polytrav.model.loaders.onnx_ops import UnsupportedUse, resolve_pads

__all__ = ["max_pool_windows", "max_pool_levels", "relu_layer", "relu_map", "max_pool_map"]


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


class _Sparse:
    """A matrix with at most ``k`` entries per row: column indices and coefficients."""

    def __init__(self, n_rows: int, k: int):
        self.index = np.zeros((n_rows, k), dtype=np.int64)
        self.coef = np.zeros((n_rows, k))

    def __len__(self) -> int:
        return len(self.coef)

    def set(self, row: int, columns: list[int], coefs: list[float]) -> None:
        self.index[row, : len(columns)] = columns
        self.coef[row, : len(coefs)] = coefs

    def __matmul__(self, X: np.ndarray) -> np.ndarray:
        """``self @ X`` for a matrix or vector ``X``."""
        out = np.zeros((len(self),) + X.shape[1:])
        for j in range(self.coef.shape[1]):  # one term per row at a time
            out += self.coef[:, j].reshape((-1,) + (1,) * (X.ndim - 1)) * X[self.index[:, j]]
        return out


def max_pool_levels(nonneg: np.ndarray, windows: list[list[int]]):
    """The levels of the max trees of ``windows`` over a vector ``v``.

    Parameters
    ----------
    nonneg : ndarray of bool, shape (m,)
        Which entries of ``v`` are known to be non-negative.
    windows : list of list of int
        Per output cell, the indices of ``v`` it takes the maximum of.

    Returns
    -------
    levels : list of (R, P)
        Per ReLU layer, the rows ``R`` (units by ``len(v)``, sparse) of its pre-activation
        over the current ``v``, and the map ``P`` (``len(v')`` by units, sparse) from its
        outputs to the next ``v``. None if every window has one cell.
    final : list of int
        Per output cell, its index in the last ``v``.
    """
    lists = [list(w) for w in windows]
    levels = []
    while any(len(w) > 1 for w in lists):
        rows: dict[tuple, int] = {}  # ('d', a, b): v_a - v_b; ('p', v): v; ('n', v): -v
        new: dict[tuple, int] = {}  # key -> index in the next v
        exprs: list[list[tuple[float, int]]] = []
        new_nonneg: list[bool] = []

        def value(key, terms, sign):
            if key not in new:
                new[key] = len(exprs)
                exprs.append([(c, rows.setdefault(r, len(rows))) for c, r in terms])
                new_nonneg.append(sign)
            return new[key]

        def passed(v):
            return [(1.0, ("p", v))] + ([] if nonneg[v] else [(-1.0, ("n", v))])

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
        R = _Sparse(len(rows), 2)
        for key, r in rows.items():
            if key[0] == "d":
                R.set(r, [key[1], key[2]], [1.0, -1.0])
            else:
                R.set(r, [key[1]], [1.0 if key[0] == "p" else -1.0])
        P = _Sparse(len(exprs), 3)
        for v, terms in enumerate(exprs):
            P.set(v, [r for _, r in terms], [c for c, _ in terms])
        levels.append((R, P))
        nonneg = np.array(new_nonneg, dtype=bool)
        lists = next_lists
    return levels, [w[0] for w in lists]


# ---------------------------------------------------------------------- layers on the live maps
def _flat(C: np.ndarray, J: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A map ``(C, J)`` as a matrix ``(m, n_z)`` and an offset ``(m,)``."""
    return J.reshape(J.shape[0], -1).T, C.reshape(-1)


def _unique_rows(W: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the first occurrence of each row of ``[W | b]``, and each row's kept index."""
    first: dict[bytes, int] = {}
    keep, where = [], np.empty(len(b), dtype=np.int64)
    rows = np.hstack([W, b[:, None]]) + 0.0  # -0.0 and 0.0 alike
    for i, row in enumerate(rows):
        key = row.tobytes()
        if key not in first:
            first[key] = len(keep)
            keep.append(i)
        where[i] = first[key]
    return np.array(keep, dtype=np.int64), where


def relu_layer(live: dict, weights: list, biases: list, W_op, b_op,
               record: list | None = None) -> tuple[int, np.ndarray]:
    """Append the layer ``relu([W_op z + b_op; every live tensor])``: its width, and the unit
    of each of the op's rows.

    Each live tensor is rewritten as a map of the new layer's outputs (its values crossing
    the layer). Equal rows share one unit (a value crossing the layer that is also the op's
    input, say). With a ``record`` list, where each unit comes from is appended to it:
    ``{"op": unit of each op row, "live": [(name, unit of each element, elements also
    negated, their units)]}`` (for the rounding analysis).
    """
    nonneg_z = bool(weights)  # z is the output of a ReLU layer
    blocks_W, blocks_b, plans = [W_op], [b_op], []
    offset = len(b_op)
    for name, (C, J) in live.items():
        T, t = _flat(C, J)
        neg = np.flatnonzero(~(nonneg_z & np.all(T >= 0, axis=1) & (t >= 0)))
        blocks_W += [T, -T[neg]]
        blocks_b += [t, -t[neg]]
        plans.append((name, C.shape, offset, neg, offset + len(t)))
        offset += len(t) + len(neg)
    W, b = np.vstack(blocks_W), np.concatenate(blocks_b)
    keep, unit = _unique_rows(W, b)
    weights.append(W[keep])
    biases.append(b[keep])
    width = len(keep)
    if record is not None:
        record.append({"op": unit[: len(b_op)], "live": [
            (name, unit[pos:pos + math.prod(shape[1:])], neg, unit[neg_pos:neg_pos + len(neg)])
            for name, shape, pos, neg, neg_pos in plans]})
    for name, shape, pos, neg, neg_pos in plans:
        m = math.prod(shape[1:])
        P = np.zeros((m, width))
        P[np.arange(m), unit[pos + np.arange(m)]] += 1.0
        P[neg, unit[neg_pos + np.arange(len(neg))]] -= 1.0
        live[name] = (np.zeros(shape), P.T.reshape(width, *shape[1:]))
    return width, unit[: len(b_op)]


def relu_map(live: dict, weights: list, biases: list, C, J, record: list | None = None):
    """``Relu`` of the tensor ``(C, J)`` (no longer in ``live``): a layer; the new map.
    ``record``: as for :func:`relu_layer`."""
    T, t = _flat(C, J)
    width, unit = relu_layer(live, weights, biases, T, t, record)
    return np.zeros(C.shape), np.eye(width)[:, unit].reshape(width, *C.shape[1:])


def max_pool_map(live: dict, weights: list, biases: list, C, J, attrs: dict,
                 record: list | None = None):
    """``MaxPool`` of the tensor ``(C, J)`` (no longer in ``live``): layers; the new map.
    ``record``: as for :func:`relu_layer`, one entry per level, each with its op rows ``R``
    (``"rows"``: sparse, ``index`` and ``coef`` per row, over the previous level's values)."""
    out_dims, windows = max_pool_windows(attrs, C.shape[1:])
    V, v = _flat(C, J)
    levels, final = max_pool_levels(
        bool(weights) & np.all(V >= 0, axis=1) & (v >= 0), windows
    )
    for R, P in levels:
        width, unit = relu_layer(live, weights, biases, R @ V, R @ v, record)
        if record is not None:
            record[-1]["rows"] = R
        V = np.zeros((len(P), width))  # P's columns onto the op's (possibly shared) units
        np.add.at(V, (np.arange(len(P))[:, None], unit[P.index]), P.coef)
        v = np.zeros(len(P))
    V, v = V[final], v[final]
    return v.reshape(1, *out_dims), V.T.reshape(V.shape[1], *out_dims)
