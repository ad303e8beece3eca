"""ONNX ops that select, split, broadcast or sum entries: exact affine maps in float64.

Same handler protocol as :mod:`polytrav.model.loaders.onnx_ops` (``handler(attrs, args, i)``
returns ``f(X, bias)``, ``X`` stacked on its first axis); ``Split`` returns one such function
per output. Indices, axes, sizes and target shapes must be constant inputs (or attributes in
older opsets); a chain tensor in one of those places raises :class:`UnsupportedUse`.
"""
from __future__ import annotations

import numpy as np

from polytrav.model.loaders.onnx_ops import UnsupportedUse

__all__ = ["SHAPE_HANDLERS"]


def _ints(value) -> list[int]:
    return [int(v) for v in np.asarray(value).reshape(-1)]


def _constant_inputs(op: str, args, i) -> None:
    if i != 0:
        raise UnsupportedUse(f"the chain tensor must be the data input of {op}, not a parameter")


def _input_or_attr(args, k: int, attrs: dict, name: str):
    if len(args) > k and args[k] is not None:
        return _ints(args[k])
    return [int(v) for v in attrs[name]] if name in attrs else None


def _slice(attrs, args, i):
    _constant_inputs("Slice", args, i)
    starts = _input_or_attr(args, 1, attrs, "starts")
    ends = _input_or_attr(args, 2, attrs, "ends")
    if starts is None or ends is None or len(starts) != len(ends):
        raise UnsupportedUse("needs constant starts and ends of one length")
    axes = _input_or_attr(args, 3, attrs, "axes") or list(range(len(starts)))
    steps = _input_or_attr(args, 4, attrs, "steps") or [1] * len(starts)
    if 0 in steps:
        raise UnsupportedUse("a step of 0 is not allowed")

    def f(X, bias):
        for start, end, axis, step in zip(starts, ends, axes, steps, strict=True):
            d = X.shape[axis % (X.ndim - 1) + 1]
            start, end = start + d if start < 0 else start, end + d if end < 0 else end
            if step > 0:
                start, end = min(max(start, 0), d), min(max(end, 0), d)
            else:
                start, end = min(max(start, 0), d - 1), min(max(end, -1), d - 1)
            X = np.take(X, np.arange(start, end, step), axis=axis % (X.ndim - 1) + 1)
        return X

    return f


def _split(attrs, args, i, n_outputs: int):
    _constant_inputs("Split", args, i)
    sizes = _input_or_attr(args, 1, attrs, "split")

    def part(k):
        def f(X, bias):
            axis = attrs.get("axis", 0) % (X.ndim - 1) + 1
            d = X.shape[axis]
            if sizes is not None:
                cuts = sizes
            elif "num_outputs" in attrs:
                chunk = -(-d // int(attrs["num_outputs"]))
                cuts = [min(chunk, d - j * chunk) for j in range(int(attrs["num_outputs"]))]
            else:
                if d % n_outputs:
                    raise UnsupportedUse(f"cannot split size {d} into {n_outputs} equal parts")
                cuts = [d // n_outputs] * n_outputs
            if len(cuts) != n_outputs or sum(cuts) != d or min(cuts) < 0:
                raise UnsupportedUse(
                    f"split sizes {cuts} do not cut size {d} into {n_outputs} parts"
                )
            begin = sum(cuts[:k])
            return np.take(X, np.arange(begin, begin + cuts[k]), axis=axis)

        return f

    return [part(k) for k in range(n_outputs)]


def _expand(attrs, args, i):
    _constant_inputs("Expand", args, i)
    target = _ints(args[1])

    def f(X, bias):
        shape = np.broadcast_shapes(X.shape[1:], tuple(target))
        pad = (1,) * (len(shape) - (X.ndim - 1))
        X = X.reshape(X.shape[:1] + pad + X.shape[1:])
        return np.broadcast_to(X, X.shape[:1] + shape).copy()

    return f


def _reduce(op: str):
    def handler(attrs, args, i):
        _constant_inputs(op, args, i)
        axes = _input_or_attr(args, 1, attrs, "axes")
        keepdims = bool(attrs.get("keepdims", 1))
        noop = bool(attrs.get("noop_with_empty_axes", 0))

        def f(X, bias):
            if not axes and noop:
                return X
            rank = X.ndim - 1
            which = tuple(a % rank + 1 for a in axes) if axes else tuple(range(1, X.ndim))
            Y = X.sum(axis=which, keepdims=keepdims)
            if op == "ReduceMean":
                Y = Y / float(np.prod([X.shape[a] for a in which]))
            return Y

        return f

    return handler


#: Op name -> handler; ``Split`` takes the number of outputs as a fourth argument.
SHAPE_HANDLERS = {
    "Slice": _slice,
    "Split": _split,
    "Expand": _expand,
    "ReduceSum": _reduce("ReduceSum"),
    "ReduceMean": _reduce("ReduceMean"),
}
