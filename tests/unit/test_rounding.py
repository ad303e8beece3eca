"""The float32 error bound (polytrav.bounds.rounding.float32_error) against onnxruntime.

Soundness: for ACAS Xu networks and small generated models covering the ops with roundings
(Gemm with transB / alpha / beta, MatMul + Add, Conv with pads + BatchNormalization, pools,
Sub / Div by constants, the shape ops, ReduceSum, a skip connection across a ReLU, weights
from constant subgraphs), every
float32 input drawn in a box (its corners included) gives ``|onnxruntime - exact| <= E``, with
onnxruntime's graph optimisations on (fusions, constant folding) and off. Tightness: the
bound is within a stated factor of the largest difference seen. Bad boxes are refused by name.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from polytrav.vocabulary.errors import RegionError

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from polytrav.bounds.rounding import float32_error, gamma, roundings_per_term  # noqa: E402
from polytrav.model.loaders.onnx import SUPPORTED_OPS, load_onnx  # noqa: E402

SEED = 20261125
N_SAMPLES = 400
#: ACAS Xu networks fuzzed, and the half-width of their boxes (normalised inputs).
ACAS_NETS = ("1_1", "2_7", "5_9")
ACAS_HALF_WIDTH = 0.005
#: Parts each ACAS Xu box is bounded in (``max_boxes``).
ACAS_BOXES = 16
#: Random points per ACAS Xu box (onnxruntime one at a time: the models have batch 1).
ACAS_SAMPLES = 1000
#: Largest bound / largest observed difference accepted on the generated models (measured:
#: 25-120 on boxes of half-width 0.05): the worst case gamma_n sum |a_i b_i| against typical
#: roundings, and the slack of bounds over a box.
MAX_RATIO = 1e4
#: The same on ACAS Xu (measured: 1.2e2-1.1e4): six layers of 50 with a few ReLUs per layer
#: whose phase the bounds leave open, where the error's back-substitution takes both slopes.
ACAS_MAX_RATIO = 3e4
#: Largest bound relative to the outputs' magnitude accepted on the generated models.
MAX_RELATIVE = 1e-4

node = helper.make_node
OPTIMISATIONS = {"fused": "ORT_ENABLE_ALL", "plain": "ORT_DISABLE_ALL"}


def _session(path, level: str):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _float32_box(lower, upper):
    """The box with float32 corners (so that the corners are float32 inputs)."""
    return (np.asarray(lower, np.float32).astype(np.float64),
            np.asarray(upper, np.float32).astype(np.float64))


def _inputs(lower, upper, rng, n=N_SAMPLES) -> np.ndarray:
    """Float32 points of the box: random ones, then corners (all up to 6 inputs)."""
    d = len(lower)
    X = (lower + (upper - lower) * rng.random((n, d))).astype(np.float32)
    if d <= 6:
        corners = np.array(list(itertools.product((0, 1), repeat=d)), dtype=bool)
    else:
        corners = rng.random((64, d)) < 0.5
    X = np.vstack([X, np.where(corners, upper, lower).astype(np.float32)])
    return np.clip(X, lower.astype(np.float32), upper.astype(np.float32))


def _differences(path, X, input_shape, level, one_by_one=False) -> tuple[np.ndarray, np.ndarray]:
    """``|onnxruntime(x) - Network.forward(x)|`` per point and output, and the exact outputs."""
    session = _session(path, level)
    name = session.get_inputs()[0].name
    if one_by_one:
        Y = np.vstack([np.concatenate([np.ravel(o) for o in
                                       session.run(None, {name: x.reshape(input_shape)})])
                       for x in X])
    else:
        Y = session.run(None, {name: X.reshape((len(X), *input_shape[1:]))})[0].reshape(len(X), -1)
    exact = load_onnx(path).forward(X.astype(np.float64))
    return np.abs(Y.astype(np.float64) - exact), exact


# ---------------------------------------------------------------------- ACAS Xu
@pytest.mark.parametrize("net", ACAS_NETS)
def test_acas_xu_bound_holds_and_is_tight(data_dir, net):
    path = data_dir / "acasxu" / "onnx" / f"ACASXU_run2a_{net}_batch_2000.onnx"
    rng = np.random.default_rng(SEED)
    ratios = []
    for centre in rng.uniform(-0.3, 0.3, (4, 5)):
        lower, upper = _float32_box(centre - ACAS_HALF_WIDTH, centre + ACAS_HALF_WIDTH)
        E = float32_error(path, lower, upper, max_boxes=ACAS_BOXES)
        X = _inputs(lower, upper, rng, n=ACAS_SAMPLES)
        for level in OPTIMISATIONS.values():
            diff, exact = _differences(path, X, (1, 1, 1, 5), level, one_by_one=True)
            assert np.all(diff <= E), (net, level, (diff / E).max())
        if diff.max() > 0:  # a box where every unit is off computes its biases exactly
            ratios.append(E.max() / diff.max())
    print(f"ACAS Xu {net}: bound / largest difference seen, per box: {np.round(ratios, 1)}")
    assert ratios and max(ratios) < ACAS_MAX_RATIO


def test_acas_xu_property_box_bound_holds(data_dir):
    """A whole property box (prop 3, net 1_1): looser, but it holds."""
    from polytrav.verification.vnnlib import read_vnnlib

    path = data_dir / "acasxu" / "onnx" / "ACASXU_run2a_1_1_batch_2000.onnx"
    case = read_vnnlib(data_dir / "acasxu" / "vnnlib" / "prop_3.vnnlib").cases[0]
    lower, upper = _float32_box(case.lower, case.upper)
    E = float32_error(path, lower, upper)
    X = _inputs(lower, upper, np.random.default_rng(SEED), n=200)
    diff, _ = _differences(path, X, (1, 1, 1, 5), OPTIMISATIONS["fused"], one_by_one=True)
    assert np.all(diff <= E) and np.all(np.isfinite(E))


# ---------------------------------------------------------------------- generated models
def _f32(rng, *shape, scale=1.0):
    return (rng.normal(size=shape) * scale).astype(np.float32)


def _model(tmp_path, name, nodes, input_shape, inits, outputs=("y",)):
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", *input_shape[1:]])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, str(path))
    return path


def _gemm(tmp_path, rng):
    inits = {"W1": _f32(rng, 16, 6), "c1": _f32(rng, 16), "W2": _f32(rng, 16, 4),
             "c2": _f32(rng, 4)}
    nodes = [node("Gemm", ["x", "W1", "c1"], ["h"], transB=1, alpha=0.7, beta=-1.3),
             node("Relu", ["h"], ["r"]),
             node("Gemm", ["r", "W2", "c2"], ["y"], alpha=2.5)]
    return _model(tmp_path, "gemm", nodes, (1, 6), inits), (1, 6)


def _matmul_add(tmp_path, rng):
    inits = {"W1": _f32(rng, 8, 20), "b1": _f32(rng, 20), "W2": _f32(rng, 20, 20),
             "b2": _f32(rng, 20), "W3": _f32(rng, 20, 3), "b3": _f32(rng, 3),
             "mean": _f32(rng, 3), "range": np.abs(_f32(rng, 3)) + 0.5}
    nodes = [node("MatMul", ["x", "W1"], ["a1"]), node("Add", ["a1", "b1"], ["h1"]),
             node("Relu", ["h1"], ["r1"]),
             node("MatMul", ["r1", "W2"], ["a2"]), node("Add", ["b2", "a2"], ["h2"]),
             node("Relu", ["h2"], ["r2"]),
             node("MatMul", ["r2", "W3"], ["a3"]), node("Add", ["a3", "b3"], ["h3"]),
             node("Sub", ["h3", "mean"], ["s"]), node("Div", ["s", "range"], ["y"])]
    return _model(tmp_path, "matmul_add", nodes, (1, 8), inits), (1, 8)


def _conv(tmp_path, rng):
    inits = {"W": _f32(rng, 4, 2, 3, 3), "B": _f32(rng, 4),
             "scale": _f32(rng, 4), "shift": _f32(rng, 4), "mean": _f32(rng, 4),
             "var": np.abs(_f32(rng, 4)) + 0.1,
             "W2": _f32(rng, 3, 4, 2, 2), "Wf": _f32(rng, 3, 5), "bf": _f32(rng, 5)}
    nodes = [node("Conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1]),
             node("BatchNormalization", ["c", "scale", "shift", "mean", "var"], ["n"],
                  epsilon=1e-3),
             node("Relu", ["n"], ["r"]),
             node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             node("Conv", ["p", "W2"], ["c2"]),
             node("AveragePool", ["c2"], ["a"], kernel_shape=[2, 2]),
             node("Flatten", ["a"], ["f"]),
             node("Gemm", ["f", "Wf", "bf"], ["y"])]
    return _model(tmp_path, "conv_bn", nodes, (1, 2, 6, 6), inits), (1, 2, 6, 6)


def _shapes(tmp_path, rng):
    inits = {"W1": _f32(rng, 12, 12), "b1": _f32(rng, 12), "W2": _f32(rng, 12, 12),
             "shape": np.array([-1, 3, 4], np.int64), "starts": np.array([1], np.int64),
             "ends": np.array([4], np.int64), "axes": np.array([2], np.int64),
             "raxes": np.array([1], np.int64), "k": _f32(rng, 1)}
    nodes = [node("Gemm", ["x", "W1", "b1"], ["a"], transB=1),
             node("Relu", ["a"], ["r"]),
             node("MatMul", ["r", "W2"], ["m"]),
             node("Add", ["m", "a"], ["s"]),  # the skip connection across the ReLU
             node("Reshape", ["s", "shape"], ["t"]),
             node("Transpose", ["t"], ["u"], perm=[0, 2, 1]),
             node("Slice", ["u", "starts", "ends", "raxes"], ["v"]),
             node("ReduceSum", ["t", "axes"], ["w"], keepdims=1),
             node("Mul", ["w", "k"], ["wk"]),
             node("Flatten", ["v"], ["vf"]), node("Flatten", ["wk"], ["wf"]),
             node("Concat", ["vf", "wf"], ["y"], axis=1)]
    return _model(tmp_path, "shapes", nodes, (1, 12), inits), (1, 12)


def _folded(tmp_path, rng):
    """Weights computed by constant subgraphs (rounded in float32 by onnxruntime)."""
    inits = {"W": _f32(rng, 10, 5), "k": np.float32([1.7]), "b": _f32(rng, 10),
             "d": np.float32([3.0]), "W2": _f32(rng, 2, 10)}
    nodes = [node("Mul", ["W", "k"], ["Wk"]), node("Div", ["b", "d"], ["bd"]),
             node("Gemm", ["x", "Wk", "bd"], ["h"], transB=1), node("Relu", ["h"], ["r"]),
             node("Transpose", ["W2"], ["W2t"]), node("MatMul", ["r", "W2t"], ["y"])]
    return _model(tmp_path, "folded", nodes, (1, 5), inits), (1, 5)


MODELS = {"gemm": _gemm, "matmul_add": _matmul_add, "conv_bn": _conv, "shapes": _shapes,
          "folded": _folded}


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("half_width", [0.05, 1.0])
def test_generated_models_bound_holds(tmp_path, name, half_width):
    rng = np.random.default_rng(SEED)
    path, input_shape = MODELS[name](tmp_path, rng)
    n = int(np.prod(input_shape))
    centre = rng.uniform(-1, 1, n)
    lower, upper = _float32_box(centre - half_width, centre + half_width)
    E = float32_error(path, lower, upper)
    assert E.shape == (load_onnx(path).n_outputs,)
    X = _inputs(lower, upper, rng)
    for level in OPTIMISATIONS.values():
        diff, exact = _differences(path, X, input_shape, level)
        assert np.all(diff <= E), (name, level, (diff / E).max())
    print(f"{name}, half-width {half_width}: bound {E.max():.3g}, largest difference "
          f"{diff.max():.3g}, largest output {np.abs(exact).max():.3g}")
    if half_width < 1:
        assert E.max() / np.abs(exact).max() < MAX_RELATIVE, (name, E, np.abs(exact).max())
        assert E.max() / diff.max() < MAX_RATIO, (name, E.max(), diff.max())


def test_the_fuzz_catches_a_bound_too_small(tmp_path, monkeypatch):
    """Fault injection: a bound ten thousand times too small is caught (the worst case is
    that far above typical roundings: about 500 times here)."""
    from polytrav.bounds import rounding

    rng = np.random.default_rng(SEED)
    path, input_shape = _matmul_add(tmp_path, rng)
    monkeypatch.setattr(rounding, "gamma", lambda k: k * rounding.FLOAT32_UNIT_ROUNDOFF / 1e4)
    lower, upper = _float32_box(-np.ones(8), np.ones(8))
    E = float32_error(path, lower, upper)
    diff, _ = _differences(path, _inputs(lower, upper, rng), input_shape, OPTIMISATIONS["fused"])
    assert np.any(diff > E)


def test_extra_outputs_are_bounded_in_order(tmp_path):
    rng = np.random.default_rng(SEED)
    path, input_shape = _matmul_add(tmp_path, rng)
    lower, upper = -np.ones(8), np.ones(8)
    E = float32_error(path, lower, upper)
    both = float32_error(path, lower, upper, extra_outputs=["h1"])
    assert both.shape == (3 + 20,)
    np.testing.assert_allclose(both[:3], E)
    assert np.all(both[3:] > 0)


# ---------------------------------------------------------------------- the walk observer
class _Counter:
    """A walk observer that only counts what it is told."""

    def __init__(self):
        self.calls = {"start": 0, "fold": 0, "apply": 0, "finish": 0}
        self.layers = 0

    def start(self, live):
        self.calls["start"] += 1

    def fold(self, node, attrs, args):
        self.calls["fold"] += 1

    def apply(self, node, attrs, args, chain, results, live, layers):
        self.calls["apply"] += 1
        self.layers += len(layers)

    def finish(self, outputs, consts):
        self.calls["finish"] += 1


def test_the_observer_sees_every_chain_node_and_layer_and_changes_nothing(tmp_path):
    path, _ = _conv(tmp_path, np.random.default_rng(SEED))
    plain = load_onnx(path)
    counter = _Counter()
    observed = load_onnx(path, observer=counter)
    assert counter.calls == {"start": 1, "fold": 0, "apply": 8, "finish": 1}
    assert counter.layers == plain.n_hidden_layers
    for a, b in zip(plain.weights + plain.biases, observed.weights + observed.biases):
        np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------------- the error model
def test_every_supported_op_has_a_rounding_count():
    counted = {"Constant", "ConstantOfShape", "Shape"}  # folded by the walk itself
    for op in sorted(set(SUPPORTED_OPS) - counted):
        args = {"MatMul": [..., np.zeros((3, 2))], "Gemm": [..., np.zeros((2, 3)), None],
                "Conv": [..., np.zeros((1, 2, 3, 3))], "ReduceSum": [..., np.array([1])],
                "ReduceMean": [..., np.array([1])]}.get(op, [..., np.zeros(1)])
        attrs = {"AveragePool": {"kernel_shape": [2, 2]}, "Cast": {"to": 1}}.get(op, {})
        assert roundings_per_term(op, attrs, args, 0, (1, 2, 4, 4)) >= 0, op


def test_gamma_is_highams():
    assert gamma(0) == 0.0
    assert gamma(10) == pytest.approx(10 * 2.0**-24 / (1 - 10 * 2.0**-24))
    assert gamma(2**24) == np.inf


# ---------------------------------------------------------------------- bad inputs
@pytest.mark.parametrize("lower, upper, message", [
    (np.zeros(7), np.ones(7), "lower has shape (7,) but 'matmul_add' takes 8 inputs"),
    (np.zeros((1, 8)), np.ones((1, 8)), "lower has shape (1, 8)"),
    (np.zeros(8), np.ones(5), "upper has shape (5,)"),
    (np.r_[np.zeros(7), np.nan], np.ones(8), "lower[7] is nan; every bound must be finite"),
    (np.zeros(8), np.r_[np.inf, np.ones(7)], "upper[0] is inf"),
    (np.r_[0.0, 2.0, np.zeros(6)], np.ones(8),
     "lower bound exceeds upper bound at coordinate 1 (lower=2.0, upper=1.0)"),
])
def test_bad_boxes_are_refused_by_name(tmp_path, lower, upper, message):
    path, _ = _matmul_add(tmp_path, np.random.default_rng(SEED))
    with pytest.raises(RegionError, match="float32_error") as info:
        float32_error(path, lower, upper)
    assert message in str(info.value)


def test_float16_cast_is_refused(tmp_path):
    nodes = [node("Cast", ["x"], ["h"], to=TensorProto.FLOAT16),
             node("Cast", ["h"], ["y"], to=TensorProto.FLOAT)]
    path = _model(tmp_path, "half", nodes, (1, 3), {})
    from polytrav.vocabulary.errors import NetworkError

    with pytest.raises(NetworkError, match="16-bit float"):
        float32_error(path, np.zeros(3), np.ones(3))
