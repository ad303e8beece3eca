"""Which ONNX ops the loader reads, and the handler of each (see ``onnx_ops``).

``SUPPORTED_OPS`` is the public list (re-exported by :mod:`polytrav.model.loaders.onnx`);
``NOT_PIECEWISE_LINEAR`` names ops refused because no exact ReLU network computes them.
"""
from __future__ import annotations

from polytrav.model.loaders.onnx_ops import HANDLERS as AFFINE_HANDLERS
from polytrav.model.loaders.onnx_shape_ops import SHAPE_HANDLERS

__all__ = ["HANDLERS", "SUPPORTED_OPS", "NOT_PIECEWISE_LINEAR", "op_maps"]

#: Op name -> handler ``(attrs, args, i) -> f(X, bias)`` of every affine op.
HANDLERS = {**AFFINE_HANDLERS, **SHAPE_HANDLERS}

#: Every op the loader reads (bare ONNX names, default domain), sorted: the affine handlers,
#: plus those the graph walk treats itself (``Constant``, ``ConstantOfShape`` and ``Shape`` are
#: folded; ``Relu`` and ``MaxPool`` become ReLU layers, :mod:`~polytrav.model.loaders.onnx_relu`).
#: An op on this list is still refused in a use that is not piecewise linear (``Mul`` of two
#: tensors that depend on the inputs, ``Div`` by one, ``Cast`` of one to an integer type); the
#: error says why.
SUPPORTED_OPS = tuple(sorted([*HANDLERS, "Constant", "ConstantOfShape", "MaxPool", "Relu",
                              "Shape"]))

#: Ops refused because they are not piecewise linear in their inputs (the error says so).
NOT_PIECEWISE_LINEAR = frozenset({
    "Sigmoid", "Softmax", "LogSoftmax", "Tanh", "Exp", "Log", "Pow", "Sqrt", "Reciprocal",
    "Sin", "Cos", "Erf", "Gelu", "Softplus", "Elu", "Selu", "Celu", "HardSigmoid", "Floor",
    "Ceil", "Round", "Sign", "Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual",
    "Not", "And", "Or", "Xor", "Where", "ArgMax", "ArgMin", "TopK", "Mod", "ReduceProd",
    "ReduceL2", "ReduceLogSumExp", "LpNormalization", "LayerNormalization",
    "InstanceNormalization", "Einsum",
})


def op_maps(op: str, attrs: dict, args: list, i: int, n_outputs: int) -> list:
    """The op's map ``f(X, bias)`` per output (one for every op but ``Split``)."""
    if op == "Split":
        return SHAPE_HANDLERS["Split"](attrs, args, i, n_outputs)
    return [HANDLERS[op](attrs, args, i)]
