"""Reader for ONNX models that are a single chain of affine ops and ReLUs.

The graph is walked in node order from its non-constant input to its output and evaluated
symbolically in float64. The tensor on the chain is kept as an affine function of the flattened
layer input, ``t = J z + c``: an offset tensor ``c`` (shape ``(1, *shape)``) and one tensor per
input coordinate, the columns of ``J`` (shape ``(n_in, *shape)``). Every supported op except
``Relu`` is affine, so applying it to ``c`` with its constant term and to the columns of ``J``
without it gives the exact affine map of a whole run of ops. A ``Relu`` turns the current map
into a layer ``(W, b)`` and restarts from the identity; whatever follows the last ``Relu``
becomes the output layer (the identity if the model ends in ``Relu``).

Shapes are ONNX shapes with the batch dimension set to 1. Constant subgraphs (``Constant``,
``Shape`` of the chain tensor, ``Gather``, ``Concat``, ``Cast`` ...) are folded.

A model may also have several inputs (e.g. one scalar per physical quantity), as long as they
are combined by ``Concat``, ``Add`` or ``Sub`` before the first ``Relu``: they become consecutive
blocks of one flat input vector, in the graph's input order, and their names become the
network's ``input_names``.
"""

from __future__ import annotations

import math
import os
from os import PathLike
from pathlib import Path

import numpy as np

from polytrav.vocabulary.errors import NetworkError
from polytrav.model.network import Network

__all__ = ["load_onnx", "SUPPORTED_OPS"]


class _Unsupported(Exception):
    """A supported op used in a way the loader cannot represent; carries the reason."""


def _float(value) -> np.ndarray:
    return np.asarray(value, dtype=np.float64)


def _broadcast_pad(X: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Insert unit axes after the stacking axis so ``X`` has one axis per entry of ``shape``."""
    extra = len(shape) - (X.ndim - 1)
    return X.reshape(X.shape[:1] + (1,) * max(extra, 0) + X.shape[1:])


# ---------------------------------------------------------------------- elementwise and shape ops
def _elementwise(op: str):
    def handler(attrs, args, i):
        if len(args) != 2:
            raise _Unsupported(f"{op} needs 2 inputs, got {len(args)}")
        k = _float(args[1 - i])
        if op == "Div" and i == 1:
            raise _Unsupported("divides a constant by the chain tensor, which is not affine")
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
            Y = np.broadcast_to(linear(_broadcast_pad(X, shape)), X.shape[:1] + shape)
            return Y + offset if bias and offset is not None else Y

        return f

    return handler


def _neg(attrs, args, i):
    return lambda X, bias: -X


def _identity(attrs, args, i):
    return lambda X, bias: X


def _cast(attrs, args, i):
    if attrs.get("to") not in (1, 10, 11, 16):  # float, float16, double, bfloat16
        raise _Unsupported(f"casts the chain tensor to non-float type {attrs.get('to')}")
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
        raise _Unsupported("needs a constant target shape as its second input")
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
        raise _Unsupported("needs the axes to insert")

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
        raise _Unsupported("the chain tensor must be the data input, not the indices")
    indices = np.asarray(args[1]).astype(np.int64)
    return lambda X, bias: np.take(X, indices, axis=attrs.get("axis", 0) % (X.ndim - 1) + 1)


def _concat(attrs, args, i):
    def f(X, bias):
        axis = attrs["axis"] % (X.ndim - 1) + 1
        parts = [
            X
            if j == i
            else np.broadcast_to(
                _float(a) if bias else np.zeros(np.shape(a)), X.shape[:1] + np.shape(a)
            )
            for j, a in enumerate(args)
        ]
        return np.concatenate(parts, axis=axis)

    return f


# ---------------------------------------------------------------------- linear algebra
def _matmul(attrs, args, i):
    K = _float(args[1 - i])
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
        raise _Unsupported("the chain tensor must be input A")
    B = _float(args[1])
    B = B.T if attrs.get("transB", 0) else B
    C = _float(args[2]) if len(args) > 2 and args[2] is not None else None
    alpha, beta = attrs.get("alpha", 1.0), attrs.get("beta", 1.0)

    def f(X, bias):
        if X.ndim != 3:
            raise _Unsupported(f"input A must be 2-D, got shape {X.shape[1:]}")
        Y = (X.swapaxes(1, 2) if attrs.get("transA", 0) else X) @ B
        Y = Y * alpha if alpha != 1.0 else Y
        if bias and C is not None:
            Y = Y + (C * beta if beta != 1.0 else C)
        return Y

    return f


# ---------------------------------------------------------------------- convolution and pooling
def _pads(attrs, size, kernel, strides, dilations) -> list[int]:
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
        raise _Unsupported(f"auto_pad {auto!r} is not supported")
    return list(attrs.get("pads", [0, 0, 0, 0]))


def _conv2d(X, W, strides, pads, dilations, group) -> np.ndarray:
    """Cross-correlation of ``X`` ``(m, C, H, W)`` with ``W`` ``(M, C / group, kh, kw)``."""
    m, C, H, Wd = X.shape
    M, cg, kh, kw = W.shape
    if C != cg * group or M % group:
        raise _Unsupported(f"weights {W.shape} do not fit {C} input channels in {group} groups")
    if min(pads) < 0:
        raise _Unsupported(f"negative pads {pads} are not supported")
    (sh, sw), (dh, dw) = strides, dilations
    Xp = np.pad(X, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (Xp.shape[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (Xp.shape[3] - dw * (kw - 1) - 1) // sw + 1
    if oh < 1 or ow < 1:
        raise _Unsupported(f"kernel {(kh, kw)} does not fit the padded input {Xp.shape[2:]}")
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
        raise _Unsupported(f"only 2-D {what} is supported (input shape {X.shape[1:]})")
    return X.reshape(-1, *X.shape[2:])


def _conv(attrs, args, i):
    if i != 0:
        raise _Unsupported("the chain tensor must be the data input, with constant weights")
    W = _float(args[1])
    B = _float(args[2]) if len(args) > 2 and args[2] is not None else None
    if W.ndim != 4:
        raise _Unsupported(f"only 2-D convolution is supported (weights shape {W.shape})")
    strides = attrs.get("strides", [1, 1])
    dilations = attrs.get("dilations", [1, 1])

    def f(X, bias):
        Xb = _spatial(X, "convolution")
        pads = _pads(attrs, Xb.shape[2:], W.shape[2:], strides, dilations)
        Y = _conv2d(Xb, W, strides, pads, dilations, attrs.get("group", 1))
        if bias and B is not None:
            Y = Y + B[:, None, None]
        return Y.reshape(X.shape[:2] + Y.shape[1:])

    return f


def _average_pool(attrs, args, i):
    kernel = list(attrs["kernel_shape"])
    if len(kernel) != 2:
        raise _Unsupported(f"only 2-D pooling is supported (kernel_shape {kernel})")
    strides = attrs.get("strides", [1, 1])
    dilations = attrs.get("dilations", [1, 1])
    ones = np.ones((1, 1, *kernel))

    def f(X, bias):
        Xb = _spatial(X, "pooling")
        pads = _pads(attrs, Xb.shape[2:], kernel, strides, dilations)
        if attrs.get("ceil_mode", 0):
            raise _Unsupported("ceil_mode=1 is not supported")
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
        raise _Unsupported("needs the chain tensor and 4 constant parameters")
    if attrs.get("training_mode", 0):
        raise _Unsupported("training_mode=1 is not supported; export the model in eval mode")
    scale, shift, mean, var = (_float(a) for a in args[1:])
    factor = scale / np.sqrt(var + attrs.get("epsilon", 1e-5))
    offset = shift - mean * factor

    def f(X, bias):
        shape = (-1,) + (1,) * (X.ndim - 3)
        Y = X * factor.reshape(shape)
        return Y + offset.reshape(shape) if bias else Y

    return f


_HANDLERS = {
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
SUPPORTED_OPS = tuple(sorted([*_HANDLERS, "Constant", "Relu", "Shape"]))

_FLOAT_TYPES = (1, 10, 11, 16)  # float, float16, double, bfloat16


# ---------------------------------------------------------------------- the chain walk
def _node_label(node) -> str:
    return f"node {node.name!r}" if node.name else "unnamed node"


class _Chain:
    """Walks one ONNX graph and collects its layers."""

    def __init__(self, onnx, model, label: str):
        from onnx import numpy_helper

        self.onnx, self.to_array, self.label = onnx, numpy_helper.to_array, label
        self.graph = model.graph
        self.consts = {t.name: self.to_array(t) for t in self.graph.initializer}
        self.dead: set[str] = set()
        self.weights: list[np.ndarray] = []
        self.biases: list[np.ndarray] = []

    def fail(self, message: str) -> NetworkError:
        return NetworkError(f"{self.label}: {message}")

    def _input_dims(self, value, several: bool) -> tuple[list[int], tuple[int, ...]]:
        """The input's ONNX shape with the batch dimension set to 1, and its sample shape."""
        tensor = value.type.tensor_type
        if tensor.elem_type not in _FLOAT_TYPES:
            raise self.fail(
                f"input {value.name!r} has element type {tensor.elem_type}; need a float tensor"
            )
        if not tensor.HasField("shape"):
            raise self.fail(f"input {value.name!r} has no declared shape")
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]
        if len(dims) >= 2 and dims[0] in (None, 1):
            dims[0] = 1
            input_shape = tuple(dims[1:])
        elif several and dims in ([], [None]):  # a scalar input (or a batch of scalars)
            dims = [1] if dims else []
            input_shape = ()
        else:
            input_shape = tuple(dims)
        if (not input_shape and not several) or any(d is None or d < 1 for d in input_shape):
            raise self.fail(
                f"input {value.name!r} has shape {dims} (None = symbolic); only the batch "
                "dimension may be symbolic"
            )
        return dims, input_shape

    def read_input(self) -> tuple[int, ...]:
        """Set up the identity map on the inputs; return ``input_shape`` without the batch dim.

        One input keeps its shape. Several inputs are the consecutive blocks of one flat input
        vector, in the graph's input order; ``input_names`` then names every coordinate (the
        input's name for a one-element input, ``name[k]`` for the k-th element of a larger
        one). A single input of several elements gets no names: its tensor name (``input``,
        ``input_AvgImg``...) says nothing about the coordinates.
        """
        inputs = [v for v in self.graph.input if v.name not in self.consts]
        if not inputs:
            raise self.fail("expected a non-constant input, found none")
        several = len(inputs) > 1
        parts = [(v.name, *self._input_dims(v, several)) for v in inputs]
        sizes = [math.prod(shape) for _, _, shape in parts]
        n = sum(sizes)
        eye = np.eye(n)
        self.live = {}
        names: list[str] = []
        offset = 0
        for (name, dims, _), size in zip(parts, sizes):
            self.live[name] = (np.zeros((1, *dims)), eye[:, offset:offset + size].reshape(n, *dims))
            names += [name] if size == 1 else [f"{name}[{k}]" for k in range(size)]
            offset += size
        if not several:
            self.input_names = tuple(names) if n == 1 else None
            return parts[0][2]
        self.input_names = tuple(names)
        return (n,)

    def close_layer(self) -> None:
        ((C, J),) = self.live.values()
        n_in = J.shape[0]
        self.weights.append(J.reshape(n_in, -1).T.copy())
        self.biases.append(C.reshape(-1).copy())
        shape = C.shape[1:]
        n = math.prod(shape)
        self.live = {name: (np.zeros((1, *shape)), np.eye(n).reshape(n, *shape))
                     for name in self.live}

    def combine(self, op: str, attrs: dict, args: list, names: list[str], where: str):
        """``Concat``, ``Add`` or ``Sub`` of several tensors on the chains: the new (C, J)."""
        maps = [self.live[name] for name in names]
        if op == "Concat":
            out = []
            for k, bias in ((0, True), (1, False)):
                it = iter(maps)
                ref = maps[0][k]
                parts = [
                    next(it)[k]
                    if a is ...
                    else np.broadcast_to(
                        _float(a) if bias else np.zeros(np.shape(a)), ref.shape[:1] + np.shape(a)
                    )
                    for a in args
                ]
                out.append(np.concatenate(parts, axis=attrs["axis"] % (ref.ndim - 1) + 1))
            return tuple(out)
        if op in ("Add", "Sub") and len(args) == 2:
            out = []
            for k in (0, 1):
                X, Y = maps[0][k], maps[1][k]
                shape = np.broadcast_shapes(X.shape[1:], Y.shape[1:])
                X, Y = _broadcast_pad(X, shape), _broadcast_pad(Y, shape)
                out.append(X + Y if op == "Add" else X - Y)
            return tuple(out)
        raise self.fail(
            f"{where} combines {len(names)} tensors that depend on the inputs ({names}); only "
            "Concat, Add and Sub may combine them"
        )

    def resolve(self, node, where: str) -> list:
        """The node's inputs: constant arrays, ``None`` (absent) or ``...`` for the chain tensor."""
        args = []
        for name in node.input:
            if name == "":
                args.append(None)
            elif name in self.consts:
                args.append(self.consts[name])
            elif name in self.live:
                args.append(...)
            elif name in self.dead:
                raise self.fail(
                    f"{where} reads tensor {name!r}, which is not on the single chain from input "
                    "to output; branches and skip connections are not supported"
                )
            else:
                raise self.fail(f"{where} reads tensor {name!r}, which no earlier node produces")
        return args

    def attributes(self, node) -> dict:
        attrs = {}
        for a in node.attribute:
            value = self.onnx.helper.get_attribute_value(a)
            if isinstance(value, self.onnx.TensorProto):
                value = self.to_array(value)
            attrs[a.name] = value.decode() if isinstance(value, bytes) else value
        return attrs

    def constant(self, attrs: dict) -> np.ndarray:
        for key in ("value", "value_float", "value_floats", "value_int", "value_ints"):
            if key in attrs:
                return np.asarray(attrs[key])
        raise _Unsupported(f"Constant with attributes {sorted(attrs)} is not supported")

    def step(self, position: int, node) -> None:
        op = node.op_type
        name = _node_label(node)
        where = f"{name} ({op}, position {position})"
        if node.domain not in ("", "ai.onnx") or op not in SUPPORTED_OPS:
            domain = f" of domain {node.domain!r}" if node.domain not in ("", "ai.onnx") else ""
            raise self.fail(
                f"unsupported op {op!r}{domain} ({name}, position {position}); "
                f"supported ops: {', '.join(SUPPORTED_OPS)}"
            )
        args = self.resolve(node, where)
        attrs = self.attributes(node)
        chain = [j for j, a in enumerate(args) if a is ...]
        names = [node.input[j] for j in chain]
        if len(chain) > len(set(names)):
            raise self.fail(
                f"{where} uses the chain tensor in {len(chain)} inputs; only ops with one "
                "non-constant input are supported"
            )
        outputs = list(node.output)
        if op == "Constant":
            self.consts[outputs[0]] = self.constant(attrs)
        elif op == "Shape":
            shape = np.array(
                self.live[names[0]][0].shape[1:] if chain else np.shape(args[0]), dtype=np.int64
            )
            self.consts[outputs[0]] = shape[attrs.get("start", 0) : attrs.get("end", len(shape))]
        elif not chain:  # fold a constant subgraph
            if op == "Relu":
                self.consts[outputs[0]] = np.maximum(args[0], 0)
            elif op == "Cast":
                dtype = self.onnx.helper.tensor_dtype_to_np_dtype(attrs["to"])
                self.consts[outputs[0]] = np.asarray(args[0]).astype(dtype)
            else:
                f = _HANDLERS[op](attrs, args, 0)
                self.consts[outputs[0]] = f(np.asarray(args[0])[None], True)[0]
        else:
            if op == "Relu":
                if len(self.live) > 1:
                    raise self.fail(
                        f"{where}: a Relu while {len(self.live)} tensors depend on the inputs "
                        f"({list(self.live)}); combine the inputs (Concat, Add, Sub) before "
                        "the first Relu"
                    )
                self.close_layer()
                C, J = self.live[names[0]]
            elif len(chain) > 1:
                C, J = self.combine(op, attrs, args, names, where)
            else:
                f = _HANDLERS[op](attrs, args, chain[0])
                C, J = self.live[names[0]]
                C, J = f(C, True), f(J, False)
            for name in names:
                del self.live[name]
                self.dead.add(name)
            self.live[outputs[0]] = (C, J)
            self.dead.update(outputs[1:])

    def run(self, name: str) -> Network:
        try:
            input_shape = self.read_input()
            for position, node in enumerate(self.graph.node):
                try:
                    self.step(position, node)
                except _Unsupported as exc:
                    raise self.fail(
                        f"{_node_label(node)} ({node.op_type}, position {position}): {exc}"
                    ) from exc
                except (ValueError, TypeError, IndexError, KeyError) as exc:
                    if isinstance(exc, NetworkError):
                        raise
                    raise self.fail(
                        f"{_node_label(node)} ({node.op_type}, position {position}) cannot be "
                        f"evaluated: {type(exc).__name__}: {exc}"
                    ) from exc
        except MemoryError as exc:
            raise self.fail("the model is too large to convert to dense affine maps") from exc
        outputs = [v.name for v in self.graph.output]
        if len(outputs) != 1:
            raise self.fail(f"expected exactly one output, found {outputs}")
        if outputs[0] not in self.live:
            ends = ", ".join(repr(v) for v in self.live)
            raise self.fail(
                f"output {outputs[0]!r} is not the end of the chain from the input (which ends at "
                f"{ends}); the graph branches or the output does not depend on the input"
            )
        if len(self.live) > 1:
            unused = [v for v in self.live if v != outputs[0]]
            raise self.fail(
                f"tensors {unused} depend on the inputs but do not reach output {outputs[0]!r}; "
                "every input must flow into the output"
            )
        C, J = self.live[outputs[0]]
        self.weights.append(J.reshape(J.shape[0], -1).T.copy())
        self.biases.append(C.reshape(-1).copy())
        try:
            return Network(self.weights, self.biases, input_shape=input_shape, name=name,
                           input_names=self.input_names)
        except NetworkError as exc:
            raise self.fail(str(exc)) from exc


def load_onnx(path: str | PathLike) -> Network:
    """Load an ONNX model that is a chain of affine ops and ReLUs (needs ``polytrav[onnx]``).

    Every maximal run of affine ops is composed into one affine map in float64; each ``Relu``
    ends a layer. A model that ends in ``Relu`` gets an identity output layer, so the network
    computes exactly what the file computes.

    Parameters
    ----------
    path : str or path-like
        The ``.onnx`` file.

    Returns
    -------
    Network
        Named after the file stem, with ``input_shape`` the model input shape without its
        batch dimension (a leading symbolic or size-1 dimension). A model with several inputs
        (combined by ``Concat``, ``Add`` or ``Sub`` before the first ``Relu``) takes them as one
        flat vector in the graph's input order, ``input_shape`` ``(n,)``, and gets
        ``input_names``: each one-element input's name, or ``name[k]`` for the elements of a
        larger one. A single input gets ``input_names`` only if it has one element: a tensor
        name such as ``input`` names no coordinate, and ``input[2]`` would say no more than
        the default label ``x_2``.

    Raises
    ------
    NetworkError
        If the file is corrupt or truncated, uses an op outside :data:`SUPPORTED_OPS` (the
        message names the op, the node and its position), or is not a single chain.
    ImportError
        If the ``onnx`` package is missing.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import onnx
    >>> from onnx import TensorProto, helper, numpy_helper
    >>> W = numpy_helper.from_array(np.array([[1.0, -1.0]], dtype=np.float32), "W")
    >>> nodes = [helper.make_node("Gemm", ["x", "W"], ["h"], transB=1),
    ...          helper.make_node("Relu", ["h"], ["y"])]
    >>> graph = helper.make_graph(
    ...     nodes,
    ...     "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2])],
    ...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 1])], [W])
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "tiny.onnx"
    >>> onnx.save(helper.make_model(graph), path)
    >>> net = load_onnx(path)
    >>> net, net.forward([3.0, 1.0])
    (<Network 'tiny' 2-1-1>, array([2.]))
    """
    try:
        import onnx
    except ImportError as exc:
        raise ImportError(
            'load_onnx needs the onnx package; install it with pip install "polytrav[onnx]"'
        ) from exc
    path = Path(path)
    label = f"ONNX model '{path.name}'"
    try:
        model = onnx.load(os.fspath(path))
    except OSError:
        raise
    except Exception as exc:  # protobuf and onnx raise many types on corrupt input
        raise NetworkError(
            f"{label}: cannot parse the file ({type(exc).__name__}: {exc}); it is truncated, "
            "corrupt, or not an ONNX model"
        ) from exc
    try:
        chain = _Chain(onnx, model, label)
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        raise NetworkError(f"{label}: malformed initializer ({type(exc).__name__}: {exc})") from exc
    return chain.run(path.stem)
