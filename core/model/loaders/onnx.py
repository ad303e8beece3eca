"""Reader for ONNX models made of affine ops, ReLUs and max pools.

The graph is walked in node order from its non-constant inputs to its outputs and evaluated
symbolically in float64. Every tensor still needed is kept as an affine function of the
flattened layer input, ``t = J z + c``: an offset tensor ``c`` (shape ``(1, *shape)``) and one
tensor per input coordinate, the columns of ``J`` (shape ``(n_in, *shape)``). Every supported
op except ``Relu`` and ``MaxPool`` is affine, so applying it to ``c`` with its constant term and
to the columns of ``J`` without it gives the exact affine map of a whole run of ops. A ``Relu``
(or a level of a ``MaxPool``) ends the stretch with a layer ``(W, b)``; every other tensor still
needed (a branch, a skip connection, a second output) crosses that layer exactly as
``relu(v) - relu(-v)`` (:mod:`polytrav.model.loaders.onnx_relu`). The output layer stacks the
graph's outputs, flattened, in order (the identity if the model ends in ``Relu``).

Shapes are ONNX shapes with the batch dimension set to 1. Constant subgraphs (``Constant``,
``ConstantOfShape``, ``Shape`` of a tensor, ``Gather``, ``Concat``, ``Cast`` ...) are folded;
an output that is constant gets zero weights.

A model may have several inputs (e.g. one scalar per physical quantity): they become
consecutive blocks of one flat input vector, in the graph's input order, and their names
become the network's ``input_names``.

The ops themselves (each an affine map on the offset and the columns) are in
:mod:`polytrav.model.loaders.onnx_ops` and :mod:`polytrav.model.loaders.onnx_shape_ops`,
listed in :mod:`polytrav.model.loaders.onnx_registry`; this module walks the graph.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from os import PathLike
from pathlib import Path
from typing import NamedTuple, Protocol

import numpy as np

from polytrav.model.loaders.onnx_file import attribute_value, numpy_type, read_model, to_array, type_name
from polytrav.model.loaders.onnx_ops import FLOAT_TYPES, UnsupportedUse, as_float64, broadcast_pad
from polytrav.model.loaders.onnx_registry import NOT_PIECEWISE_LINEAR, SUPPORTED_OPS, op_maps
from polytrav.model.loaders.onnx_relu import max_pool_map, max_pool_windows, relu_map
from polytrav.model.network import Network
from polytrav.vocabulary.errors import NetworkError

__all__ = ["load_onnx", "onnx_signature", "Port", "WalkObserver", "SUPPORTED_OPS",
           "NOT_PIECEWISE_LINEAR"]


class WalkObserver(Protocol):
    """What the graph walk tells an observer (``load_onnx(..., observer=...)``), in order.

    The walk calls nothing when no observer is given. Tensors are named as in the graph;
    a map ``(C, J)`` is the walk's affine form of a tensor in the current layer input ``z``
    (module docstring).
    """

    def start(self, live: dict) -> None:
        """The graph inputs' maps (the identity on the flat input)."""

    def fold(self, node, attrs: dict, args: list) -> None:
        """A node whose inputs are all constant, folded into constants."""

    def apply(self, node, attrs: dict, args: list, chain: list[int], results: list,
              live: dict, layers: list[dict]) -> None:
        """A node on the inputs' chain: ``args[j] is ...`` for ``j`` in ``chain`` (the node's
        inputs ``node.input[j]``); ``results`` the map ``(C, J)`` of each output. ``layers``:
        the ReLU layers the node added (``Relu``: one, ``MaxPool``: one per level), each
        recorded as :func:`~polytrav.model.loaders.onnx_relu.relu_layer` says; ``live`` then
        holds every other tensor still needed, as maps of the last one's outputs."""

    def finish(self, outputs: list[str], consts: dict) -> None:
        """The network's output tensors, in order, and every constant tensor by name."""


# ---------------------------------------------------------------------- the chain walk
def _node_label(node) -> str:
    return f"node {node.name!r}" if node.name else "unnamed node"


class _Chain:
    """Walks one ONNX graph and collects its layers."""

    def __init__(self, model, label: str, extra_outputs=(), observer=None):
        self.label = label
        self.observer: WalkObserver | None = observer
        #: the ReLU layers' records for the observer (:func:`onnx_relu.relu_layer`)
        self.layer_record: list | None = None if observer is None else []
        self.graph = model.graph
        self.consts = {t.name: to_array(t) for t in self.graph.initializer}
        #: the network's outputs: the graph's, then the requested intermediate tensors
        self.outputs = [v.name for v in self.graph.output] + list(extra_outputs)
        #: per tensor, how many reads are still to come (an output counts as one): a tensor
        #: leaves ``live`` after its last read; a node output nobody reads (one part of a
        #: Split, Dropout's mask) is never kept
        self.uses: dict[str, int] = {}
        for t in [t for node in self.graph.node for t in node.input] + self.outputs:
            self.uses[t] = self.uses.get(t, 0) + 1
        self.weights: list[np.ndarray] = []
        self.biases: list[np.ndarray] = []

    def fail(self, message: str) -> NetworkError:
        return NetworkError(f"{self.label}: {message}")

    def _input_dims(self, value, several: bool) -> tuple[list[int], tuple[int, ...]]:
        """The input's ONNX shape with the batch dimension set to 1, and its sample shape."""
        tensor = value.type.tensor_type
        if tensor.elem_type not in FLOAT_TYPES:
            kind = type_name(tensor.elem_type).lower()
            raise self.fail(
                f"input {value.name!r} holds {kind} numbers (ONNX element type "
                f"{tensor.elem_type}); polytrav analyses networks of real-valued inputs: "
                "export the model with a float32 or float64 input"
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
        self.n_inputs = n
        unused = [name for name in self.live if not self.uses.get(name)]
        if unused:
            raise self.fail(
                f"tensors {unused} depend on the inputs but do not reach the outputs "
                f"{self.outputs}; every input must flow into an output"
            )
        if not several:
            self.input_names = tuple(names) if n == 1 else None
            return parts[0][2]
        self.input_names = tuple(names)
        return (n,)

    def combine(self, op: str, attrs: dict, args: list, maps: list, names: list, where: str):
        """``Concat``, ``Add`` or ``Sub`` of several tensors on the chains: the new (C, J)."""
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
        why = " is not piecewise linear;" if op in ("Mul", "Div") else ""
        raise self.fail(
            f"{where} combines {len(names)} tensors that depend on the inputs ({names}){why} "
            "only Concat, Add and Sub may combine them"
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
            else:
                raise self.fail(f"{where} reads tensor {name!r}, which no earlier node produces")
        return args

    def attributes(self, node) -> dict:
        attrs = {}
        for a in node.attribute:
            value = attribute_value(a)
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
                f"{where} uses the chain tensor in {len(chain)} inputs"
                + (" (a product or quotient of a tensor with itself), which is not piecewise "
                   "linear" if op in ("Mul", "Div") else "")
                + "; only ops with one non-constant input are supported"
            )
        outputs = list(node.output)
        maps = [self.live[name] for name in names]
        for name in names:  # the last read of a tensor removes it
            self.uses[name] -= 1
            if not self.uses[name]:
                del self.live[name]
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
                maps[0][0].shape[1:] if chain else np.shape(args[0]), dtype=np.int64
            )
            self.consts[outputs[0]] = shape[attrs.get("start", 0) : attrs.get("end", len(shape))]
        elif not chain:  # fold a constant subgraph
            if self.observer is not None:
                self.observer.fold(node, attrs, args)
            if op == "Relu":
                self.consts[outputs[0]] = np.maximum(args[0], 0)
            elif op == "Cast":
                dtype = numpy_type(attrs["to"])
                self.consts[outputs[0]] = np.asarray(args[0]).astype(dtype)
            elif op == "MaxPool":
                dims, windows = max_pool_windows(attrs, np.shape(args[0]))
                flat = np.asarray(args[0]).reshape(-1)
                self.consts[outputs[0]] = np.array([flat[w].max() for w in windows]).reshape(dims)
            else:
                for out, f in zip(outputs, op_maps(op, attrs, args, 0, len(outputs))):
                    self.consts[out] = f(np.asarray(args[0])[None], True)[0]
        else:
            if op == "Relu":
                results = [relu_map(self.live, self.weights, self.biases, *maps[0],
                                    self.layer_record)]
            elif op == "MaxPool":
                if len(outputs) > 1 and self.uses.get(outputs[1]):
                    raise UnsupportedUse("its second output (Indices) is not piecewise linear")
                results = [max_pool_map(self.live, self.weights, self.biases, *maps[0], attrs,
                                        self.layer_record)]
            elif len(chain) > 1:
                results = [self.combine(op, attrs, args, maps, names, where)]
            else:
                C, J = maps[0]
                results = [(f(C, True), f(J, False))
                           for f in op_maps(op, attrs, args, chain[0], len(outputs))]
            if self.observer is not None:
                layers, self.layer_record[:] = list(self.layer_record), []
                self.observer.apply(node, attrs, args, chain, results, self.live, layers)
            for out, (C, J) in zip(outputs, results):
                if self.uses.get(out):
                    self.live[out] = (C, J)

    def run(self, name: str) -> Network:
        with np.errstate(all="ignore"):  # a non-finite weight: the Network check names it
            return self._run(name)

    def _run(self, name: str) -> Network:
        try:
            input_shape = self.read_input()
            if self.observer is not None:
                self.observer.start(dict(self.live))
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
        n_z = len(self.biases[-1]) if self.biases else self.n_inputs
        rows, offsets = [], []
        for out in self.outputs:
            if out in self.live:
                T, t = self.live[out][1].reshape(n_z, -1).T, self.live[out][0].reshape(-1)
            elif out in self.consts:  # a constant output (a Shape, say)
                t = as_float64(self.consts[out]).reshape(-1)
                T = np.zeros((len(t), n_z))
            else:
                raise self.fail(f"output {out!r} is not produced by any node of the graph")
            rows.append(T)
            offsets.append(t)
        self.weights.append(np.vstack(rows))
        self.biases.append(np.concatenate(offsets))
        if self.observer is not None:
            self.observer.finish(list(self.outputs), self.consts)
        try:
            return Network(self.weights, self.biases, input_shape=input_shape, name=name,
                           input_names=self.input_names)
        except NetworkError as exc:
            raise self.fail(str(exc)) from exc


def load_onnx(path: str | PathLike, *, extra_outputs: Sequence[str] = (),
              observer: WalkObserver | None = None) -> Network:
    """Load an ONNX model of affine ops, ReLUs and max pools (needs ``polytrav[onnx]``).

    Every maximal run of affine ops is composed into one affine map in float64; each ``Relu``
    ends a layer, each ``MaxPool`` adds exact ReLU layers. A model that ends in ``Relu`` gets
    an identity output layer, so the network computes exactly what the file computes.

    Parameters
    ----------
    path : str or path-like
        The ``.onnx`` file.
    extra_outputs : sequence of str, optional
        Names of intermediate tensors to output too (VNN-LIB hidden nodes), after the graph's
        outputs.
    observer : WalkObserver, optional
        Told every step of the walk (:class:`WalkObserver`); the float32 rounding analysis
        (:func:`polytrav.bounds.rounding.float32_error`) uses it. None (the default) costs
        nothing.

    Returns
    -------
    Network
        Its output is every graph output, then every extra output, each flattened in
        row-major order and concatenated. Named after the file stem, with ``input_shape``
        the model input shape without its batch dimension (a leading symbolic or size-1
        dimension). A model with several inputs takes them as one flat vector in the
        graph's input order, ``input_shape`` ``(n,)``, and gets ``input_names``: each
        one-element input's name, or ``name[k]`` for the elements of a larger one. A single
        input gets ``input_names`` only if it has one element: a tensor name such as
        ``input`` names no coordinate, and ``input[2]`` would say no more than the default
        label ``x_2``.

    Raises
    ------
    NetworkError
        If the file is corrupt or truncated, uses an op outside :data:`SUPPORTED_OPS` (the
        message names the op, the node and its position), uses one in a way that is not
        piecewise linear (the message says which), or names an output no node produces.
    ImportError
        If the ``protobuf`` package is missing (``polytrav[onnx]`` installs it).

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
    path = Path(path)
    label = f"ONNX model '{path.name}'"
    model = read_model(path)
    if not model.graph.node and not model.graph.input:
        raise NetworkError(f"{label}: holds no graph (no inputs, no nodes); it is not an ONNX "
                           "model, or an empty one: give the model file itself")
    try:
        chain = _Chain(model, label, extra_outputs, observer)
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        raise NetworkError(f"{label}: malformed initializer ({type(exc).__name__}: {exc})") from exc
    return chain.run(path.stem)


class Port(NamedTuple):
    """A graph input or output: its tensor name, element type as VNN-LIB 2.0 spells it
    (``float32``, ``int64``, ...) and shape (``None`` for a symbolic dimension)."""

    name: str
    element_type: str
    shape: tuple[int | None, ...]


#: ONNX's names of element types that VNN-LIB 2.0 spells otherwise.
_SPELLING = {"FLOAT": "float32", "DOUBLE": "float64", "FLOAT16": "float16"}


def onnx_signature(path: str | PathLike) -> tuple[tuple[Port, ...], tuple[Port, ...]]:
    """The non-constant inputs and the outputs of an ONNX model, in graph order.

    Raises
    ------
    NetworkError
        If the file cannot be parsed as an ONNX model.
    """
    graph = read_model(path, external_data=False).graph
    constant = {t.name for t in graph.initializer}

    def port(value) -> Port:
        tensor = value.type.tensor_type
        kind = type_name(tensor.elem_type)
        dims = tuple(d.dim_value if d.HasField("dim_value") else None
                     for d in tensor.shape.dim)
        return Port(value.name, _SPELLING.get(kind, kind.lower()), dims)

    return (tuple(port(v) for v in graph.input if v.name not in constant),
            tuple(port(v) for v in graph.output))
