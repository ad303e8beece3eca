"""How far a float32 evaluation of an ONNX model can be from the exact function polytrav analyses.

polytrav folds an ONNX graph into a real-valued :class:`~polytrav.Network` (float64, exact
affine composition). :func:`float32_error` bounds ``|f32(x)_j - f(x)_j|`` for every float32
input ``x`` of a box, where ``f32`` is any IEEE float32 evaluation of the graph op by op.

The error model (Higham, *Accuracy and Stability of Numerical Algorithms*, ch. 2-3):

* every rounding is ``fl(a op b) = (a op b)(1 + d)``, ``|d| <= u = 2**-24``, plus an absolute
  :data:`UNDERFLOW_ERROR` per rounding (subnormals, flush-to-zero);
* a value computed by ``+ - *`` and ``/`` by constants is ``sum_i term_i (1 + theta_i)`` with
  ``|theta_i| <= gamma_K = K u / (1 - K u)`` when no term passes more than ``K`` roundings;
  a sum or dot product of ``n`` terms in any order (blocked, pairwise, with FMA) costs each
  term at most ``n`` roundings (:func:`roundings_per_term` counts them per op);
* ``Relu``, ``MaxPool`` and the data-movement ops are exact, and 1-Lipschitz.

The loader's walk (:func:`~polytrav.model.loaders.onnx.load_onnx` with an observer) tells
:class:`RoundingWalk` every op; no op semantics are repeated here: an op's linear part in
absolute value comes from the loader's own handlers fed the constants' magnitudes
(:func:`~polytrav.model.loaders.onnx_registry.magnitude_maps`). Between two ReLU layers every
tensor keeps ``terms``, the sum of the magnitudes of its expanded terms (``|L| terms + |c|``
per op, at the computed values of the layer's outputs) and ``roundings``, the most roundings
any term has passed: the stretch rounds it by at most ``gamma_roundings * terms``. Keeping the
expanded terms, not each intermediate tensor's magnitude, is what makes the bound hold for
onnxruntime's rewrites: constant folding and fusions (Conv + BatchNormalization, MatMul + Add
to Gemm, a division made a product by the reciprocal) regroup the same terms, with at most
:data:`FUSION_ROUNDINGS` more roundings per op; folded constant subgraphs count theirs.

Each ReLU layer's units thus get a local rounding ``rho``; their total error is ``rho`` plus
the earlier layers' ``rho`` back-substituted through the network with interval matrices (a
ReLU passes an error with a slope in ``[0, 1]``, exactly 1 or 0 where the bounds fix its
phase even for the computed value). Real magnitudes come from CROWN bounds of every hidden
layer over the box (:mod:`polytrav.bounds.crown`) met with interval bounds.

Assumed: a tensor read after another branch's ReLU (a skip connection) is computed before it
and kept, i.e. onnxruntime does not fuse its producer with its consumer across that ReLU.
Not covered: float16 / bfloat16 casts (refused), ops outside the loader's list, and
non-CPU kernels with approximate arithmetic (TF32 matmuls, fast-math reductions).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from os import PathLike

import numpy as np

from polytrav.bounds.crown import Concretizer, output_lower_bounds
from polytrav.model.loaders.onnx import load_onnx
from polytrav.model.loaders.onnx_registry import magnitude_maps, op_maps
from polytrav.model.network import Network
from polytrav.vocabulary.errors import NetworkError, RegionError
from polytrav.vocabulary.tolerances import BOUND_TOL

__all__ = ["float32_error", "roundings_per_term", "gamma", "RoundingWalk", "FLOAT32_UNIT_ROUNDOFF",
           "UNDERFLOW_ERROR", "FUSION_ROUNDINGS", "BATCH_NORM_ROUNDINGS"]

#: The unit roundoff of IEEE float32 (round to nearest): ``fl(a) = a (1 + d)``, ``|d| <= u``.
FLOAT32_UNIT_ROUNDOFF = 2.0**-24
#: The unit roundoff of float64, for the propagation's own arithmetic.
FLOAT64_UNIT_ROUNDOFF = 2.0**-53
#: The absolute error one rounding may add besides the relative one: the smallest normal
#: float32 (results below it are subnormal or flushed to zero, inputs flushed with DAZ).
UNDERFLOW_ERROR = 2.0**-126
#: The largest finite float32; a magnitude beyond it may overflow, and then no bound holds.
FLOAT32_MAX = float(np.finfo(np.float32).max)
#: Extra roundings per term allowed in every op that rounds, for onnxruntime's rewrites:
#: a fused or folded constant is rounded in float32 (Conv + BatchNormalization's weights,
#: a Div by ``k`` made a Mul by ``fl(1 / k)``), one or two roundings the graph does not show.
FUSION_ROUNDINGS = 3
#: BatchNormalization's roundings per term: ``var + epsilon``, ``sqrt``, the division (or
#: reciprocal) and ``* scale`` (4, on the factor ``f``), then ``x f`` or ``x - mean``, the
#: ``- mean f`` and the ``+ B``: 7 in the worst of the usual orders.
BATCH_NORM_ROUNDINGS = 7
#: Ops that compute nothing new (selection, reshaping, sign change, max, Relu): no rounding.
_EXACT_OPS = frozenset({
    "Identity", "Dropout", "Neg", "Flatten", "Reshape", "Squeeze", "Unsqueeze", "Transpose",
    "Gather", "Concat", "Slice", "Split", "Expand", "Relu", "MaxPool",
})
#: ONNX element types: float32, float64; float16 and bfloat16.
_FLOAT, _DOUBLE, _COARSE_FLOATS = 1, 11, (10, 16)


def gamma(k: int) -> float:
    """Higham's ``gamma_k = k u / (1 - k u)``: the bound on ``|theta|`` after ``k`` roundings
    (``inf`` once ``k u >= 1``)."""
    ku = k * FLOAT32_UNIT_ROUNDOFF
    return ku / (1.0 - ku) if ku < 1.0 else math.inf


def roundings_per_term(op: str, attrs: dict, args: list, i: int, in_shape: tuple,
                       from_float64: bool = False) -> int:
    """The most roundings one term of ``op`` passes (before :data:`FUSION_ROUNDINGS`).

    ``args``, ``i`` as for the loader's handlers; ``in_shape`` the shape of input ``i``;
    ``from_float64``: input ``i`` holds float64 values (a ``Cast`` to float32 rounds them). A
    dot product of ``n`` terms (a bias counts as one) costs ``n``; ``alpha`` and ``beta`` of
    ``Gemm`` one more each; a mean one more for the division and one for the reciprocal.
    """
    if op in _EXACT_OPS:
        return 0
    if op in ("Add", "Sub", "Mul", "Div"):
        return 1
    if op == "Cast":  # to float32: exact from float32; to float64 or an integer type: exact
        if attrs.get("to") in _COARSE_FLOATS:
            raise NetworkError(f"Cast to element type {attrs.get('to')} (16-bit float) is "
                               "coarser than float32; float32_error does not cover it")
        return int(attrs.get("to") == _FLOAT and from_float64)
    if op == "MatMul":
        K = np.shape(args[1 - i])
        return int((K[-2] if len(K) >= 2 else K[0]) if i == 0 else K[-1])
    has_bias = len(args) > 2 and args[2] is not None
    if op == "Gemm":
        B = np.shape(args[1])
        n = B[1] if attrs.get("transB", 0) else B[0]
        alpha, beta = attrs.get("alpha", 1.0), attrs.get("beta", 1.0)
        return int(n + has_bias + (alpha != 1.0) + (has_bias and beta != 1.0))
    if op == "Conv":
        return int(math.prod(np.shape(args[1])[1:]) + has_bias)
    if op == "AveragePool":
        return int(math.prod(attrs["kernel_shape"])) + 1
    if op == "GlobalAveragePool":
        return int(math.prod(in_shape[2:])) + 1
    if op in ("ReduceSum", "ReduceMean"):
        count = op_maps("ReduceSum", attrs, args, i, 1)[0](np.ones((1, *in_shape)), False)
        return int(np.max(count)) + (2 if op == "ReduceMean" else 0)
    if op == "BatchNormalization":
        return BATCH_NORM_ROUNDINGS
    raise NetworkError(f"op {op!r} has no rounding count; float32_error cannot bound it")


def _with_fusion(k: int) -> int:
    return k + FUSION_ROUNDINGS if k else 0


@dataclass
class _Bound:
    """A tensor's rounding since its sources (module docstring): ``absolute +
    gamma(roundings) * terms``."""

    terms: np.ndarray
    roundings: int
    absolute: np.ndarray | float = 0.0

    def local(self) -> np.ndarray:
        g = gamma(self.roundings)
        return self.absolute + np.where(self.terms > 0, g * self.terms, 0.0)


def _magnitude(C: np.ndarray, J: np.ndarray, box: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Bound on ``|C + J z|`` over the box of ``z`` (interval arithmetic, widened by
    :data:`BOUND_TOL` for float64 rounding)."""
    lo, hi = box
    mid, rad = (lo + hi) / 2, (hi - lo) / 2
    value = np.abs(C[0] + np.tensordot(mid, J, axes=1)) + np.tensordot(rad, np.abs(J), axes=1)
    return value + BOUND_TOL * (1.0 + value)


def _float64_gamma(n: int) -> float:
    """Higham's gamma for ``n`` float64 roundings (the propagation's own arithmetic)."""
    nu = n * FLOAT64_UNIT_ROUNDOFF
    return nu / (1.0 - nu)


class RoundingWalk:
    """The loader's walk observer (:class:`~polytrav.model.loaders.onnx.WalkObserver`) that
    bounds the float32 error of every layer of ``net`` (the network the same walk builds).

    ``pre_bounds``: per hidden layer, bounds ``(lo, hi)`` of its real pre-activations over
    the box ``(lower, upper)``. Per layer it keeps the rounding its units' values pick up in
    their stretch of ops (``local``) and their total error (``errors``), and after the walk
    :attr:`error` holds one bound per network output (``inf`` everywhere if a magnitude may
    overflow float32).
    """

    def __init__(self, net: Network, pre_bounds: list, lower: np.ndarray, upper: np.ndarray):
        self.layers = list(zip(net.weights, net.biases))
        self.pre_bounds = pre_bounds
        self.z_box = (lower, upper)
        self.z_error = np.zeros(len(lower))
        self.local: list[np.ndarray] = []
        self.errors: list[np.ndarray] = []
        self.bounds: dict[str, _Bound] = {}
        #: roundings of the constants folded from constant subgraphs (initializers: 0)
        self.const_roundings: dict[str, int] = {}
        #: the tensors on the chain that hold float64 values (after a Cast to float64)
        self.float64: set[str] = set()
        self.may_overflow = False
        self.error: np.ndarray | None = None

    # ------------------------------------------------------------------ the layers
    def _propagated(self, k: int) -> np.ndarray:
        """The earlier layers' roundings as they reach layer ``k``'s pre-activations.

        Back-substitution with interval matrices: the error of a ReLU's output is its
        input's times a slope in ``[0, 1]`` (the secant between the real and the computed
        value), exactly 1 or 0 where both are known non-negative or non-positive.
        """
        W = self.layers[k][0]
        centre, radius = W, np.zeros_like(W)
        total = np.zeros(W.shape[0])
        for j in range(k - 1, -1, -1):
            lo, hi = self.pre_bounds[j]
            e = self.errors[j]
            active, dead = lo - e >= 0, hi + e <= 0
            unsure = ~active & ~dead
            low = np.where(unsure, np.minimum(centre - radius, 0.0), centre - radius)
            high = np.where(unsure, np.maximum(centre + radius, 0.0), centre + radius)
            low, high = np.where(dead, 0.0, low), np.where(dead, 0.0, high)
            centre, radius = (low + high) / 2, (high - low) / 2
            total += (np.abs(centre) + radius) @ self.local[j]
            Wj = self.layers[j][0]
            absW = np.abs(Wj)
            radius = radius @ absW + (np.abs(centre) @ absW) * _float64_gamma(Wj.shape[0] + 2)
            centre = centre @ Wj
        return total * (1.0 + _float64_gamma(len(self.layers) + 2))

    def _add_layer(self, local: np.ndarray) -> None:
        k = len(self.errors)
        error = local + self._propagated(k)
        self.local.append(local)
        self.errors.append(error)
        lo, hi = self.pre_bounds[k]
        self.z_box = (np.maximum(lo, 0.0), np.maximum(hi, 0.0))
        self.z_error = np.where(hi + error <= 0, 0.0, error)

    def _source(self, C: np.ndarray, J: np.ndarray) -> _Bound:
        """A tensor read from the current layer's outputs: its computed magnitude."""
        error = np.tensordot(self.z_error, np.abs(J), axes=1)
        return _Bound(_magnitude(C, J, self.z_box) + error, 0)

    def _const_roundings(self, node, args) -> int:
        return max([self.const_roundings.get(name, 0)
                    for name, a in zip(node.input, args) if a is not None and a is not ...],
                   default=0)

    # ------------------------------------------------------------------ the observer
    def start(self, live: dict) -> None:
        for name, (C, J) in live.items():
            self.bounds[name] = self._source(C, J)

    def fold(self, node, attrs: dict, args: list) -> None:
        k = roundings_per_term(node.op_type, attrs, args, 0, np.shape(args[0]),
                               np.asarray(args[0]).dtype == np.float64)
        for out in node.output:
            self.const_roundings[out] = self._const_roundings(node, args) + _with_fusion(k)

    def apply(self, node, attrs: dict, args: list, chain: list[int], results: list,
              live: dict, layers: list[dict]) -> None:
        if layers:
            self._relu_layers(self.bounds[node.input[chain[0]]], layers)
            for name, (C, J) in [*live.items(), *zip(node.output, results)]:
                self.bounds[name] = self._source(C, J)
            return
        op = node.op_type
        inputs = [self.bounds[node.input[j]] for j in chain]
        from_float64 = any(node.input[j] in self.float64 for j in chain)
        if (from_float64 and op != "Cast") or (op == "Cast" and attrs.get("to") == _DOUBLE):
            self.float64.update(node.output)  # counted with float32's u: an overestimate
        k = _with_fusion(1 if len(chain) > 1 and op != "Concat" else
                         roundings_per_term(op, attrs, args, chain[0], inputs[0].terms.shape,
                                            from_float64))
        roundings = max(b.roundings for b in inputs) + k + self._const_roundings(node, args)
        underflow = UNDERFLOW_ERROR if k else 0.0
        absolute, terms = [], []
        for j, bound in zip(chain, inputs):  # the op is linear: a sum over its chain inputs
            alone = [np.zeros(self.bounds[node.input[c]].terms.shape) if c in chain and c != j
                     else a for c, a in enumerate(args)]
            maps = magnitude_maps(op, attrs, alone, j, len(node.output))
            stack = np.stack([np.broadcast_to(bound.absolute + underflow, bound.terms.shape),
                              bound.terms])
            for o, f in enumerate(maps):
                L_a, L_t = np.abs(f(stack, False))
                if j == chain[0]:  # the op's own terms (constants) and roundings, once
                    consts = np.abs(f(np.zeros((1, *bound.terms.shape)), True))[0]
                    absolute.append(L_a + 2 * k * underflow)
                    terms.append(L_t + consts)
                else:
                    absolute[o], terms[o] = absolute[o] + L_a, terms[o] + L_t
        for name, a, t in zip(node.output, absolute, terms):
            if np.max(t, initial=0.0) > FLOAT32_MAX:
                self.may_overflow = True
            self.bounds[name] = _Bound(t, roundings, a)

    def _relu_layers(self, op_input: _Bound, layers: list[dict]) -> None:
        """The layers of a ``Relu`` or ``MaxPool``: the roundings of their units' values (the
        op's input and every tensor crossing them), and their errors. After the first level
        of a ``MaxPool`` every value is a layer output: nothing more is rounded."""
        for level, record in enumerate(layers):
            local = np.zeros(len(self.layers[len(self.errors)][1]))
            if level == 0:
                rows = op_input.local().reshape(-1)
                if "rows" in record:  # a max tree's first level: differences of the inputs
                    R = record["rows"]
                    rows = (np.abs(R.coef) * rows[R.index]).sum(axis=1)
                np.maximum.at(local, record["op"], rows)
                for name, units, negated, negated_units in record["live"]:
                    value = self.bounds[name].local().reshape(-1)
                    np.maximum.at(local, units, value)
                    np.maximum.at(local, negated_units, value[negated])
            self._add_layer(local)

    def finish(self, outputs: list[str], consts: dict) -> None:
        parts = []
        for name in outputs:
            if name in self.bounds:
                parts.append(self.bounds[name].local().reshape(-1))
            else:  # a constant output: its folding's roundings only
                value = np.abs(np.asarray(consts[name], dtype=np.float64)).reshape(-1)
                parts.append(gamma(self.const_roundings.get(name, 0)) * value)
        local = np.concatenate(parts) if parts else np.zeros(0)
        error = local + self._propagated(len(self.errors))
        self.error = np.full_like(error, np.inf) if self.may_overflow else error


# ---------------------------------------------------------------------- the box and layer bounds
def _checked_box(lower, upper, net: Network) -> tuple[np.ndarray, np.ndarray]:
    n = net.n_inputs
    arrays = []
    for what, value in (("lower", lower), ("upper", upper)):
        try:
            a = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise RegionError(f"float32_error: {what} is not numeric ({exc})") from exc
        if a.shape != (n,):
            raise RegionError(
                f"float32_error: {what} has shape {a.shape} but {net.name!r} takes {n} inputs; "
                f"give a flat array of {n} values"
            )
        bad = np.flatnonzero(~np.isfinite(a))
        if len(bad):
            raise RegionError(
                f"float32_error: {what}[{bad[0]}] is {a[bad[0]]}; every bound must be finite"
            )
        arrays.append(a)
    lo, hi = arrays
    bad = np.flatnonzero(lo > hi)
    if len(bad):
        i = bad[0]
        raise RegionError(
            f"float32_error: lower bound exceeds upper bound at coordinate {i} "
            f"(lower={lo[i]}, upper={hi[i]}); swap them"
        )
    return lo, hi


def pre_activation_bounds(net: Network, lower: np.ndarray, upper: np.ndarray
                          ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Bounds of every hidden layer's real pre-activations over the box: CROWN's met with
    interval arithmetic, widened by :data:`BOUND_TOL` relative to ``1 + |bound|``."""
    hidden = list(zip(net.weights, net.biases))[:-1]
    if not hidden:
        return []
    mid, rad = (lower + upper) / 2, (upper - lower) / 2
    layers = list(zip(net.weights, net.biases))
    _, _, crown = output_lower_bounds(layers, np.diag(rad), mid, np.eye(net.n_outputs)[:1],
                                      Concretizer(len(mid)))
    bounds, (lo, hi) = [], (lower, upper)
    for k, (W, b) in enumerate(hidden):
        centre = W @ ((lo + hi) / 2) + b
        spread = np.abs(W) @ ((hi - lo) / 2)
        low = np.maximum(centre - spread, crown.lo[k])
        high = np.minimum(centre + spread, crown.hi[k])
        slack = BOUND_TOL * (1.0 + np.maximum(np.abs(low), np.abs(high)))
        low, high = low - slack, high + slack
        bounds.append((low, high))
        lo, hi = np.maximum(low, 0.0), np.maximum(high, 0.0)
    return bounds


def _check_float32_inputs(path) -> None:
    from polytrav.model.loaders.onnx_file import read_model

    model = read_model(path, external_data=False)
    initialised = {t.name for t in model.graph.initializer}
    for value in model.graph.input:
        elem = value.type.tensor_type.elem_type
        if value.name not in initialised and elem != _FLOAT:
            raise NetworkError(
                f"float32_error: input {value.name!r} of {str(path)!r} has element type {elem}, "
                "not float32 (1); the bound is for float32 models"
            )


def _box_error(path, net: Network, lower, upper, extra_outputs) -> np.ndarray:
    walk = RoundingWalk(net, pre_activation_bounds(net, lower, upper), lower, upper)
    load_onnx(path, extra_outputs=extra_outputs, observer=walk)
    assert walk.error is not None
    return walk.error * (1.0 + BOUND_TOL)


def float32_error(path: str | PathLike, lower, upper, *, extra_outputs: Sequence[str] = (),
                  max_boxes: int = 1) -> np.ndarray:
    """Bound on how far a float32 evaluation of an ONNX model is from its exact function.

    Parameters
    ----------
    path : str or path-like
        The ``.onnx`` file (float32 inputs), as for :func:`~polytrav.model.loaders.onnx.load_onnx`.
    lower, upper : array_like, shape (n_inputs,)
        The input box over the network's flattened inputs.
    extra_outputs : sequence of str, optional
        Intermediate tensors output too, as ``load_onnx`` takes them.
    max_boxes : int, optional
        Bound the box in up to this many parts: the part with the largest bound is halved
        along its widest side (relative to the box) while the budget lasts, and the bound is
        the largest over the parts. Smaller parts have fewer ReLUs whose phase is unknown,
        so a tighter bound (worth it in low dimension); 1 (the default) bounds the box whole.

    Returns
    -------
    ndarray of float64, shape (n_outputs,)
        ``E`` with ``|f32(x)_j - f(x)_j| <= E_j`` for every float32 ``x`` in the box, per output
        of ``load_onnx(path, extra_outputs=...)`` in its order; ``f`` is the exact function,
        ``f32`` any IEEE float32 evaluation of the graph op by op (any summation order, FMA,
        onnxruntime's fusions: see the module docstring). ``inf`` everywhere if an
        intermediate magnitude may overflow float32.

    Raises
    ------
    RegionError
        If the box does not have one finite value per input, or ``lower > upper`` somewhere,
        or ``max_boxes`` is not a positive integer.
    NetworkError
        If the model cannot be loaded, has a non-float32 input, or casts to a coarser type.
    """
    net = load_onnx(path, extra_outputs=extra_outputs)
    lower, upper = _checked_box(lower, upper, net)
    if isinstance(max_boxes, bool) or not isinstance(max_boxes, (int, np.integer)) or max_boxes < 1:
        raise RegionError(f"float32_error: max_boxes is {max_boxes!r}; give a positive integer")
    _check_float32_inputs(path)
    width = np.where(upper > lower, upper - lower, np.inf)
    parts = [(lower, upper, _box_error(path, net, lower, upper, extra_outputs))]
    while len(parts) < max_boxes:
        worst = max(range(len(parts)), key=lambda p: float(np.max(parts[p][2], initial=0.0)))
        lo, hi, _ = parts[worst]
        side = int(np.argmax((hi - lo) / width))
        if hi[side] <= lo[side]:
            break  # a point: nothing to halve
        middle = (lo[side] + hi[side]) / 2
        left_hi, right_lo = hi.copy(), lo.copy()
        left_hi[side] = right_lo[side] = middle
        parts[worst:worst + 1] = [(l, h, _box_error(path, net, l, h, extra_outputs))
                                  for l, h in ((lo, left_hi), (right_lo, hi))]
    return np.max([error for _, _, error in parts], axis=0)
