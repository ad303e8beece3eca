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

The ops themselves (each an affine map on the offset and the columns) are in
:mod:`polytrav.model.loaders.onnx_ops`; this module walks the graph and builds the layers.
"""
from __future__ import annotations

import math
import os
from os import PathLike
from pathlib import Path

import numpy as np

from polytrav.model.loaders.onnx_maxpool import max_pool_layers, max_pool_windows
from polytrav.model.loaders.onnx_ops import (FLOAT_TYPES, HANDLERS as AFFINE_HANDLERS,
                                             UnsupportedUse, as_float64, broadcast_pad)
from polytrav.model.loaders.onnx_shape_ops import SHAPE_HANDLERS
from polytrav.model.network import Network
from polytrav.vocabulary.errors import NetworkError

__all__ = ["load_onnx", "SUPPORTED_OPS", "NOT_PIECEWISE_LINEAR"]

HANDLERS = {**AFFINE_HANDLERS, **SHAPE_HANDLERS}
#: Every op the loader reads (bare ONNX names, default domain), sorted: the affine handlers
#: (:mod:`~polytrav.model.loaders.onnx_ops`, :mod:`~polytrav.model.loaders.onnx_shape_ops`),
#: plus those the graph walk treats itself (``MaxPool`` becomes ReLU layers,
#: :mod:`~polytrav.model.loaders.onnx_maxpool`). An op on this list can still be refused for a
#: use that is not piecewise linear (``Mul`` of two tensors that depend on the input, ``Div``
#: by one, ``Cast`` of one to an integer type); the error says why.
SUPPORTED_OPS = tuple(sorted([*HANDLERS, "Constant", "ConstantOfShape", "MaxPool", "Relu",
                              "Shape"]))
#: Ops refused because they are not piecewise linear in their inputs (named in the error).
NOT_PIECEWISE_LINEAR = frozenset({
    "Sigmoid", "Softmax", "LogSoftmax", "Tanh", "Exp", "Log", "Pow", "Sqrt", "Reciprocal",
    "Sin", "Cos", "Erf", "Gelu", "Softplus", "Elu", "Selu", "Celu", "HardSigmoid", "Floor",
    "Ceil", "Round", "Sign", "Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual",
    "Not", "And", "Or", "Xor", "Where", "ArgMax", "ArgMin", "TopK", "Mod", "ReduceProd",
    "ReduceL2", "ReduceLogSumExp", "LpNormalization", "LayerNormalization",
    "InstanceNormalization", "Einsum",
})


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
        #: the tensors some node reads, and the graph outputs: a node output outside this set
        #: is dropped (one part of a Split, say) instead of counting as a loose end
        self.used = {t for node in self.graph.node for t in node.input}
        self.used.update(v.name for v in self.graph.output)
        self.weights: list[np.ndarray] = []
        self.biases: list[np.ndarray] = []

    def fail(self, message: str) -> NetworkError:
        return NetworkError(f"{self.label}: {message}")

    def _input_dims(self, value, several: bool) -> tuple[list[int], tuple[int, ...]]:
        """The input's ONNX shape with the batch dimension set to 1, and its sample shape."""
        tensor = value.type.tensor_type
        if tensor.elem_type not in FLOAT_TYPES:
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
                        as_float64(a) if bias else np.zeros(np.shape(a)), ref.shape[:1] + np.shape(a)
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
                X, Y = broadcast_pad(X, shape), broadcast_pad(Y, shape)
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
        raise UnsupportedUse(f"Constant with attributes {sorted(attrs)} is not supported")

    def step(self, position: int, node) -> None:
        op = node.op_type
        name = _node_label(node)
        where = f"{name} ({op}, position {position})"
        if node.domain not in ("", "ai.onnx") or op not in SUPPORTED_OPS:
            domain = f" of domain {node.domain!r}" if node.domain not in ("", "ai.onnx") else ""
            why = " is not piecewise linear" if op in NOT_PIECEWISE_LINEAR and not domain else ""
            raise self.fail(
                f"unsupported op {op!r}{domain} ({name}, position {position}){why}; "
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
        elif op == "ConstantOfShape":
            if chain:
                raise UnsupportedUse("its shape input depends on the inputs; it must be constant")
            value = np.asarray(attrs.get("value", np.zeros(1, dtype=np.float32)))
            dims = [int(d) for d in np.asarray(args[0]).reshape(-1)]
            self.consts[outputs[0]] = np.full(dims, value.reshape(-1)[0], dtype=value.dtype)
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
                for out, f in zip(outputs, self.handler(op, attrs, args, 0, outputs)):
                    self.consts[out] = f(np.asarray(args[0])[None], True)[0]
        else:
            results = None
            if op in ("Relu", "MaxPool"):
                if len(self.live) > 1:
                    raise self.fail(
                        f"{where}: a {op} while {len(self.live)} tensors depend on the inputs "
                        f"({list(self.live)}); combine the inputs (Concat, Add, Sub) before "
                        f"the first {op}"
                    )
                if op == "Relu":
                    self.close_layer()
                    results = [self.live[names[0]]]
                else:
                    results = [self.max_pool(attrs, names[0], outputs)]
            elif len(chain) > 1:
                results = [self.combine(op, attrs, args, names, where)]
            else:
                C, J = self.live[names[0]]
                results = [(f(C, True), f(J, False))
                           for f in self.handler(op, attrs, args, chain[0], outputs)]
            for name in names:
                del self.live[name]
                self.dead.add(name)
            for out, (C, J) in zip(outputs, results):
                if out in self.used:
                    self.live[out] = (C, J)
                else:  # an output nobody reads (one part of a Split, Dropout's mask)
                    self.dead.add(out)
            self.dead.update(outputs[len(results):])

    @staticmethod
    def handler(op: str, attrs: dict, args: list, i: int, outputs: list[str]) -> list:
        """The op's map per output (one for every op but ``Split``)."""
        if op == "Split":
            return SHAPE_HANDLERS["Split"](attrs, args, i, len(outputs))
        return [HANDLERS[op](attrs, args, i)]

    def max_pool(self, attrs: dict, name: str, outputs: list[str]):
        """Close the current map into the ReLU layers of a ``MaxPool``; the pooled (C, J)."""
        if len(outputs) > 1 and outputs[1] in self.used:
            raise UnsupportedUse("its second output (Indices) is not piecewise linear")
        C, J = self.live[name]
        out_dims, windows = max_pool_windows(attrs, C.shape[1:])
        n = J.shape[0]
        layers, Vm, vc = max_pool_layers(
            J.reshape(n, -1).T, C.reshape(-1), bool(self.weights), windows
        )
        for W, b in layers:
            self.weights.append(W)
            self.biases.append(b)
        n = Vm.shape[1]
        return vc.reshape(1, *out_dims), Vm.T.reshape(n, *out_dims)

    def run(self, name: str) -> Network:
        try:
            input_shape = self.read_input()
            for position, node in enumerate(self.graph.node):
                try:
                    self.step(position, node)
                except UnsupportedUse as exc:
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
        if outputs[0] in self.consts and self.live:  # a constant output (e.g. a Shape)
            value = as_float64(self.consts[outputs[0]]).reshape(-1)
            n = next(iter(self.live.values()))[1].shape[0]
            self.live = {outputs[0]: (value.reshape(1, -1), np.zeros((n, value.size)))}
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
