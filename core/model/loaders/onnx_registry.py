"""Which ONNX ops the loader reads, and the handler of each (see ``onnx_ops``).

``SUPPORTED_OPS`` is the public list (re-exported by :mod:`polytrav.model.loaders.onnx`);
``NOT_PIECEWISE_LINEAR`` names ops refused because no exact ReLU network computes them.
"""
from __future__ import annotations

import numpy as np

from polytrav.model.loaders.onnx_ops import HANDLERS as AFFINE_HANDLERS
from polytrav.model.loaders.onnx_shape_ops import SHAPE_HANDLERS

__all__ = ["HANDLERS", "SUPPORTED_OPS", "NOT_PIECEWISE_LINEAR", "op_maps", "magnitude_maps"]

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


#: Per op, the sign given to each constant float input's magnitude in :func:`magnitude_maps`
#: (default ``+1``; ``0`` keeps the input as it is). ``BatchNormalization(X, scale, B, mean,
#: var)`` computes ``X f + B - mean f`` with ``f = scale / sqrt(var + epsilon)``: a negated
#: ``|mean|`` makes its constant term ``|B| + |mean| |f|``, and ``var`` is kept (it is not a
#: coefficient).
_MAGNITUDE_SIGNS = {"BatchNormalization": (1, 1, 1, -1, 0)}


def magnitude_maps(op: str, attrs: dict, args: list, i: int, n_outputs: int) -> list:
    """:func:`op_maps` with every constant coefficient replaced by its magnitude.

    For a stack ``X >= 0``, ``abs(f(X, False))`` is ``|L| X``, the op's linear part in absolute
    value, and ``abs(f(0, True))`` is the sum of the magnitudes of the op's constant terms
    (``|beta C|``, a bias, an added constant, ...). Integer inputs (shapes, indices, axes)
    are left alone; ``alpha`` and ``beta`` become their magnitudes. For the rounding analysis
    (:mod:`polytrav.bounds.rounding`); the op semantics stay the handlers'.
    """
    signs = _MAGNITUDE_SIGNS.get(op, ())
    magnitudes = []
    for k, a in enumerate(args):
        sign = signs[k] if k < len(signs) else 1
        if a is None or a is ... or sign == 0 or not np.issubdtype(np.asarray(a).dtype, np.floating):
            magnitudes.append(a)
        else:
            magnitudes.append(sign * np.abs(np.asarray(a, dtype=np.float64)))
    attrs = {**attrs, **{key: abs(attrs[key]) for key in ("alpha", "beta") if key in attrs}}
    return op_maps(op, attrs, magnitudes, i, n_outputs)
