"""The ONNX ops the loader folds, each as an exact affine map in float64.

``HANDLERS`` maps an op name to a handler ``handler(attrs, args, i)``: ``attrs`` are the
node's attributes, ``args`` its inputs (constant arrays, ``None`` for an absent one, ``...``
for the chain tensor) and ``i`` the position of the chain tensor among them. The handler
returns ``f(X, bias)``, the op applied to a stack of tensors ``X`` (first axis: the stack),
with the op's constant term if ``bias`` (the offset) and without it otherwise (the columns of
the Jacobian); a use the loader cannot represent raises :class:`UnsupportedUse`. The graph
walk that applies them is :mod:`polytrav.model.loaders.onnx`.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["HANDLERS", "FLOAT_TYPES", "UnsupportedUse", "as_float64", "resolve_pads",
           "broadcast_pad"]


class UnsupportedUse(Exception):
    """A supported op used in a way the loader cannot represent; carries the reason."""


def as_float64(value) -> np.ndarray:
    """``value`` as a float64 array."""
    return np.asarray(value, dtype=np.float64)


def broadcast_pad(X: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Insert unit axes after the stacking axis so ``X`` has one axis per entry of ``shape``."""
    extra = len(shape) - (X.ndim - 1)
    return X.reshape(X.shape[:1] + (1,) * max(extra, 0) + X.shape[1:])


# ---------------------------------------------------------------------- elementwise and shape ops
def _elementwise(op: str):
    def handler(attrs, args, i):
        if len(args) != 2:
            raise UnsupportedUse(f"{op} needs 2 inputs, got {len(args)}")
        k = as_float64(args[1 - i])
        if op == "Div" and i == 1:
            raise UnsupportedUse("divides a constant by the chain tensor, which is not affine")
        if op == "Sub" and i == 1:
            linear, offset = (lambda X: -X), k
        elif op in ("Add", "Sub"):
            linear, offset = (lambda X: X), (k if op == "Add" else -k)
        elif op == "Mul":
            linear, offset = (lambda X: X * k), None
        else:
            linear, offset = (lambda X: X / k), None

        def f(X, bias):
            shape = np.broadcast_shapes(X.shape[1:], k.shape)
            Y = np.broadcast_to(linear(broadcast_pad(X, shape)), X.shape[:1] + shape)
            return Y + offset if bias and offset is not None else Y

        return f

    return handler


def _neg(attrs, args, i):
    return lambda X, bias: -X


def _identity(attrs, args, i):
    return lambda X, bias: X


def _cast(attrs, args, i):
    if attrs.get("to") not in FLOAT_TYPES:
        raise UnsupportedUse(
            f"casts the chain tensor to {_TYPE_NAMES.get(attrs.get('to'), attrs.get('to'))}, "
            "not a float type; "
            "rounding to an integer or bool is a step function, not piecewise linear"
        )
    return _identity(attrs, args, i)


def _flatten(attrs, args, i):
    def f(X, bias):
        s = X.shape[1:]
        axis = attrs.get("axis", 1)
        axis = axis + len(s) if axis < 0 else axis
        return X.reshape(X.shape[0], math.prod(s[:axis]), math.prod(s[axis:]))

    return f


def _reshape(attrs, args, i):
    if i != 0 or len(args) < 2 or args[1] is None:
        raise UnsupportedUse("needs a constant target shape as its second input")
    target = [int(d) for d in np.asarray(args[1]).reshape(-1)]
    allowzero = attrs.get("allowzero", 0)

    def f(X, bias):
        s = X.shape[1:]
        shape = [s[j] if d == 0 and not allowzero else d for j, d in enumerate(target)]
        return X.reshape(X.shape[0], *shape)

    return f


def _axes(attrs, args) -> list[int] | None:
    if len(args) > 1 and args[1] is not None:
        return [int(a) for a in np.asarray(args[1]).reshape(-1)]
    return list(attrs["axes"]) if "axes" in attrs else None


def _squeeze(attrs, args, i):
    axes = _axes(attrs, args)

    def f(X, bias):
        s = X.shape[1:]
        drop = (
            [a % len(s) for a in axes]
            if axes is not None
            else [j for j, d in enumerate(s) if d == 1]
        )
        return X.reshape(X.shape[0], *(d for j, d in enumerate(s) if j not in drop))

    return f


def _unsqueeze(attrs, args, i):
    axes = _axes(attrs, args)
    if not axes:
        raise UnsupportedUse("needs the axes to insert")

    def f(X, bias):
        shape = list(X.shape[1:])
        rank = len(shape) + len(axes)
        for a in sorted(a % rank for a in axes):
            shape.insert(a, 1)
        return X.reshape(X.shape[0], *shape)

    return f


def _transpose(attrs, args, i):
    def f(X, bias):
        perm = attrs.get("perm", list(range(X.ndim - 2, -1, -1)))
        return X.transpose(0, *(p + 1 for p in perm))

    return f


def _gather(attrs, args, i):
    if i != 0:
        raise UnsupportedUse("the chain tensor must be the data input, not the indices")
    indices = np.asarray(args[1]).astype(np.int64)
    return lambda X, bias: np.take(X, indices, axis=attrs.get("axis", 0) % (X.ndim - 1) + 1)


def _concat(attrs, args, i):
    def f(X, bias):
        axis = attrs["axis"] % (X.ndim - 1) + 1
        parts = [
            X
            if j == i
            else np.broadcast_to(
                as_float64(a) if bias else np.zeros(np.shape(a)), X.shape[:1] + np.shape(a)
            )
            for j, a in enumerate(args)
        ]
        return np.concatenate(parts, axis=axis)

    return f


# ---------------------------------------------------------------------- linear algebra
def _matmul(attrs, args, i):
    K = as_float64(args[1 - i])
    if i == 0:

        def f(X, bias):  # x @ K
            vector = X.ndim == 2
            X = X[:, None, :] if vector else X
            Y = np.matmul(
                X.reshape(X.shape[:1] + (1,) * max(K.ndim - X.ndim + 1, 0) + X.shape[1:]), K
            )
            return (Y[..., 0, :] if K.ndim >= 2 else Y[..., 0]) if vector else Y
    else:

        def f(X, bias):  # K @ x
            vector = X.ndim == 2
            X = X[..., None] if vector else X
            Y = np.matmul(
                K, X.reshape(X.shape[:1] + (1,) * max(K.ndim - X.ndim + 1, 0) + X.shape[1:])
            )
            return Y[..., 0] if vector else Y

    return f


def _gemm(attrs, args, i):
    if i != 0:
        raise UnsupportedUse("the chain tensor must be input A")
    B = as_float64(args[1])
    B = B.T if attrs.get("transB", 0) else B
    C = as_float64(args[2]) if len(args) > 2 and args[2] is not None else None
    alpha, beta = attrs.get("alpha", 1.0), attrs.get("beta", 1.0)

    def f(X, bias):
        if X.ndim != 3:
            raise UnsupportedUse(f"input A must be 2-D, got shape {X.shape[1:]}")
        Y = (X.swapaxes(1, 2) if attrs.get("transA", 0) else X) @ B
        Y = Y * alpha if alpha != 1.0 else Y
        if bias and C is not None:
            Y = Y + (C * beta if beta != 1.0 else C)
        return Y

    return f


# ---------------------------------------------------------------------- convolution and pooling
def resolve_pads(attrs, size, kernel, strides, dilations) -> list[int]:
    """Begin/end padding ``[h0, w0, h1, w1]``, resolving ``auto_pad``."""
    auto = attrs.get("auto_pad", "NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    if auto == "VALID":
        return [0, 0, 0, 0]
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        begin, end = [], []
        for n, k, s, d in zip(size, kernel, strides, dilations, strict=True):
            total = max((-(-n // s) - 1) * s + (k - 1) * d + 1 - n, 0)
            small, large = total // 2, total - total // 2
            begin.append(small if auto == "SAME_UPPER" else large)
            end.append(large if auto == "SAME_UPPER" else small)
        return begin + end
    if auto != "NOTSET":
        raise UnsupportedUse(f"auto_pad {auto!r} is not supported")
    return list(attrs.get("pads", [0, 0, 0, 0]))


def _conv2d(X, W, strides, pads, dilations, group) -> np.ndarray:
    """Cross-correlation of ``X`` ``(m, C, H, W)`` with ``W`` ``(M, C / group, kh, kw)``."""
    m, C, H, Wd = X.shape
    M, cg, kh, kw = W.shape
    if C != cg * group or M % group:
        raise UnsupportedUse(f"weights {W.shape} do not fit {C} input channels in {group} groups")
    if min(pads) < 0:
        raise UnsupportedUse(f"negative pads {pads} are not supported")
    (sh, sw), (dh, dw) = strides, dilations
    Xp = np.pad(X, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (Xp.shape[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (Xp.shape[3] - dw * (kw - 1) - 1) // sw + 1
    if oh < 1 or ow < 1:
        raise UnsupportedUse(f"kernel {(kh, kw)} does not fit the padded input {Xp.shape[2:]}")
    mg = M // group
    out = np.zeros((m, oh, ow, M))
    for a in range(kh):
        for b in range(kw):
            patch = Xp[
                :,
                :,
                a * dh : a * dh + sh * (oh - 1) + 1 : sh,
                b * dw : b * dw + sw * (ow - 1) + 1 : sw,
            ]
            for g in range(group):
                out[..., g * mg : (g + 1) * mg] += np.tensordot(
                    patch[:, g * cg : (g + 1) * cg],
                    W[g * mg : (g + 1) * mg, :, a, b],
                    axes=([1], [1]),
                )
    return out.transpose(0, 3, 1, 2)


def _spatial(X, what):
    if X.ndim != 5:
        raise UnsupportedUse(f"only 2-D {what} is supported (input shape {X.shape[1:]})")
    return X.reshape(-1, *X.shape[2:])


def _conv(attrs, args, i):
    if i != 0:
        raise UnsupportedUse("the chain tensor must be the data input, with constant weights")
    W = as_float64(args[1])
    if W.ndim == 3:  # 1-D: a 2-D convolution over a height of 1
        pads = list(attrs.get("pads", [0, 0]))
        flat = {**attrs, "strides": [1, *attrs.get("strides", [1])],
                "dilations": [1, *attrs.get("dilations", [1])], "pads": [0, pads[0], 0, pads[1]]}
        flat.pop("kernel_shape", None)
        inner = _conv(flat, [args[0], W[:, :, None, :], *args[2:]], i)
        return lambda X, bias: inner(X[..., None, :], bias)[..., 0, :]
    B = as_float64(args[2]) if len(args) > 2 and args[2] is not None else None
    if W.ndim != 4:
        raise UnsupportedUse(f"only 2-D convolution is supported (weights shape {W.shape})")
    strides = attrs.get("strides", [1, 1])
    dilations = attrs.get("dilations", [1, 1])

    def f(X, bias):
        Xb = _spatial(X, "convolution")
        pads = resolve_pads(attrs, Xb.shape[2:], W.shape[2:], strides, dilations)
        Y = _conv2d(Xb, W, strides, pads, dilations, attrs.get("group", 1))
        if bias and B is not None:
            Y = Y + B[:, None, None]
        return Y.reshape(X.shape[:2] + Y.shape[1:])

    return f


def _average_pool(attrs, args, i):
    kernel = list(attrs["kernel_shape"])
    if len(kernel) != 2:
        raise UnsupportedUse(f"only 2-D pooling is supported (kernel_shape {kernel})")
    strides = attrs.get("strides", [1, 1])
    dilations = attrs.get("dilations", [1, 1])
    ones = np.ones((1, 1, *kernel))

    def f(X, bias):
        Xb = _spatial(X, "pooling")
        pads = resolve_pads(attrs, Xb.shape[2:], kernel, strides, dilations)
        if attrs.get("ceil_mode", 0):
            raise UnsupportedUse("ceil_mode=1 is not supported")
        sums = _conv2d(Xb.reshape(-1, 1, *Xb.shape[2:]), ones, strides, pads, dilations, 1)
        if attrs.get("count_include_pad", 0):
            count = float(math.prod(kernel))
        else:
            count = _conv2d(np.ones((1, 1, *Xb.shape[2:])), ones, strides, pads, dilations, 1)
        Y = sums / count
        return Y.reshape(X.shape[:3] + Y.shape[2:])

    return f


def _global_average_pool(attrs, args, i):
    return lambda X, bias: X.mean(axis=tuple(range(3, X.ndim)), keepdims=True)


def _batch_norm(attrs, args, i):
    if i != 0 or len(args) != 5:
        raise UnsupportedUse("needs the chain tensor and 4 constant parameters")
    if attrs.get("training_mode", 0):
        raise UnsupportedUse("training_mode=1 is not supported; export the model in eval mode")
    scale, shift, mean, var = (as_float64(a) for a in args[1:])
    factor = scale / np.sqrt(var + attrs.get("epsilon", 1e-5))
    offset = shift - mean * factor

    def f(X, bias):
        shape = (-1,) + (1,) * (X.ndim - 3)
        Y = X * factor.reshape(shape)
        return Y + offset.reshape(shape) if bias else Y

    return f


#: Op name -> handler ``(attrs, args, i) -> f(X, bias)`` (see the module docstring).
HANDLERS = {
    "Add": _elementwise("Add"),
    "Sub": _elementwise("Sub"),
    "Mul": _elementwise("Mul"),
    "Div": _elementwise("Div"),
    "Neg": _neg,
    "Identity": _identity,
    "Dropout": _identity,
    "Cast": _cast,
    "Flatten": _flatten,
    "Reshape": _reshape,
    "Squeeze": _squeeze,
    "Unsqueeze": _unsqueeze,
    "Transpose": _transpose,
    "Gather": _gather,
    "Concat": _concat,
    "MatMul": _matmul,
    "Gemm": _gemm,
    "Conv": _conv,
    "AveragePool": _average_pool,
    "GlobalAveragePool": _global_average_pool,
    "BatchNormalization": _batch_norm,
}

#: ONNX element types of a float tensor: float, float16, double, bfloat16.
FLOAT_TYPES = (1, 10, 11, 16)
#: ONNX element type names, for messages.
_TYPE_NAMES = {2: "UINT8", 3: "INT8", 4: "UINT16", 5: "INT16", 6: "INT32", 7: "INT64",
               9: "BOOL", 12: "UINT32", 13: "UINT64"}
