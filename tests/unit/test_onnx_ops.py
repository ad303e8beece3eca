"""The ONNX loader op by op against onnxruntime (polytrav.model.loaders.onnx and its op modules).

Every op of ``SUPPORTED_OPS`` is loaded in at least one small hand-built model whose
``Network.forward`` must equal onnxruntime's output; the ops that are not piecewise linear
(and the non-affine uses of supported ops) must be refused with the op and node named.
"""

from __future__ import annotations

import numpy as np
import pytest

from polytrav.vocabulary.errors import NetworkError

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from polytrav.model.loaders.onnx import SUPPORTED_OPS, load_onnx  # noqa: E402

SEED = 20261124
N_SAMPLES = 12
ORT_RTOL = 1e-5  # onnxruntime evaluates in float32, polytrav in float64
HALF_RTOL = 2e-3  # a Cast to float16 rounds in onnxruntime; polytrav keeps float64

node = helper.make_node
rng = np.random.default_rng(SEED)


def _r(*shape):
    return rng.normal(size=shape)


def _const(name, value):
    value = np.asarray(value)
    if value.dtype.kind == "f":
        value = value.astype(np.float32)
    return node("Constant", [], [name], value=numpy_helper.from_array(value, name + "_v"))


def _ints(name, values):
    return _const(name, np.asarray(values, dtype=np.int64))


def _save(path, nodes, inputs, outputs=("y",), opset=18, out_type=TensorProto.FLOAT):
    graph = helper.make_graph(
        nodes, path.stem,
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, out_type, None) for n in outputs],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def _ort(path, inputs, x):
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feed, offset = {}, 0
    for name, shape in inputs:
        size = int(np.prod(shape))
        feed[name] = x[offset:offset + size].reshape(shape).astype(np.float32)
        offset += size
    return np.concatenate([np.asarray(o, np.float64).ravel() for o in session.run(None, feed)])


# ---------------------------------------------------------------------- the models
# name -> (nodes, inputs, opset); the output is tensor "y"
def _pool(shape, **attrs):
    return [node("MaxPool", ["x"], ["y"], name="pool", **attrs)], [("x", shape)], 18


CASES = {
    "maxpool_2x2": _pool([1, 1, 4, 4], kernel_shape=[2, 2]),
    "maxpool_strides_ceil": _pool([1, 2, 5, 5], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
    "maxpool_pads_dilations": _pool([1, 1, 5, 5], kernel_shape=[2, 2], pads=[1, 0, 1, 1],
                                    dilations=[2, 2]),
    "maxpool_3x3_same_upper": _pool([1, 1, 5, 6], kernel_shape=[3, 3], strides=[2, 2],
                                    auto_pad="SAME_UPPER"),
    "maxpool_1d": _pool([1, 2, 7], kernel_shape=[3], strides=[2], pads=[1, 1]),
    "maxpool_1x1": _pool([1, 1, 3, 3], kernel_shape=[1, 1], strides=[2, 2]),
    "conv_relu_maxpool_gemm": (
        [_const("W", _r(3, 2, 3, 3)), _const("b", _r(3)),
         node("Conv", ["x", "W", "b"], ["c"], pads=[1, 1, 1, 1]),
         node("Relu", ["c"], ["r"]),
         node("MaxPool", ["r"], ["p"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
         node("Flatten", ["p"], ["f"], axis=1),
         _const("G", _r(2, 12)), _const("g", _r(2)),
         node("Gemm", ["f", "G", "g"], ["m"], transB=1, alpha=0.5, beta=2.0),
         node("Relu", ["m"], ["m2"]),
         node("Neg", ["m2"], ["y"])],
        [("x", [1, 2, 4, 4])], 11),
    "slice_negative_steps": (
        [_ints("s", [4, -1]), _ints("e", [-1000, 0]), _ints("a", [1, 0]), _ints("k", [-2, -1]),
         node("Slice", ["x", "s", "e", "a", "k"], ["y"])],
        [("x", [3, 5])], 18),
    "slice_defaults_large_end": (
        [_ints("s", [-2]), _ints("e", [2**62]),
         node("Slice", ["x", "s", "e"], ["y"])], [("x", [4, 3])], 13),
    "slice_opset9_attrs": (
        [node("Slice", ["x"], ["y"], starts=[1, 0], ends=[3, -1], axes=[0, 1])],
        [("x", [4, 3])], 9),
    "split_sizes_second": (
        [_ints("sizes", [2, 3]), node("Split", ["x", "sizes"], ["a", "b"], axis=1),
         node("Neg", ["b"], ["y"])], [("x", [2, 5])], 13),
    "split_num_outputs_last": (
        [node("Split", ["x"], ["a", "b", "y"], axis=-1, num_outputs=3)], [("x", [2, 7])], 18),
    "split_equal_opset11": (
        [node("Split", ["x"], ["y", "b"], axis=0)], [("x", [4, 2])], 11),
    "gather_negative_and_scalar": (
        [_ints("i", [-1, 0, 2]), node("Gather", ["x", "i"], ["g"], axis=1),
         _ints("j", 1), node("Gather", ["g", "j"], ["y"], axis=0)], [("x", [3, 4])], 13),
    "expand": (
        [_ints("shape", [2, 1, 3]), node("Expand", ["x", "shape"], ["y"])], [("x", [2, 1])], 13),
    "reducesum_axes_input": (
        [_ints("a", [1]), node("ReduceSum", ["x", "a"], ["y"], keepdims=0)], [("x", [2, 3])], 13),
    "reducesum_all": ([node("ReduceSum", ["x"], ["y"])], [("x", [2, 3])], 13),
    "reducesum_noop_empty": (
        [_ints("a", np.zeros(0, np.int64)),
         node("ReduceSum", ["x", "a"], ["y"], noop_with_empty_axes=1)], [("x", [2, 3])], 13),
    "reducemean_opset18": (
        [_ints("a", [-1, 0]), node("ReduceMean", ["x", "a"], ["y"], keepdims=1)],
        [("x", [2, 3])], 18),
    "reducemean_opset13_attr": (
        [node("ReduceMean", ["x"], ["y"], axes=[1], keepdims=0)], [("x", [2, 3])], 13),
    "shape_constantofshape": (
        [node("Shape", ["x"], ["s"]),
         node("ConstantOfShape", ["s"], ["k"],
              value=numpy_helper.from_array(np.array([2.5], np.float32), "v")),
         node("Mul", ["x", "k"], ["m"]),
         _ints("n", [3]), node("ConstantOfShape", ["n"], ["ones"],
                               value=numpy_helper.from_array(np.array([3], np.int32), "w")),
         node("Cast", ["ones"], ["onesf"], to=TensorProto.FLOAT),
         node("Sub", ["onesf", "m"], ["y"])], [("x", [3])], 18),
    "cast_float_types_identity_dropout": (
        [node("Cast", ["x"], ["d"], to=TensorProto.DOUBLE),
         node("Cast", ["d"], ["f"], to=TensorProto.FLOAT),
         node("Identity", ["f"], ["i"]), node("Dropout", ["i"], ["y"])], [("x", [2, 2])], 13),
    "cast_half": ([node("Cast", ["x"], ["h"], to=TensorProto.FLOAT16),
                   node("Cast", ["h"], ["y"], to=TensorProto.FLOAT)], [("x", [3])], 13),
    "transpose_squeeze_unsqueeze_reshape": (
        [_ints("ax", [0, 3]), node("Unsqueeze", ["x", "ax"], ["u"]),
         node("Transpose", ["u"], ["t"], perm=[3, 1, 2, 0]),
         _ints("sq", [0]), node("Squeeze", ["t", "sq"], ["s"]),
         _ints("shape", [0, -1]), node("Reshape", ["s", "shape"], ["r"]),
         node("Flatten", ["r"], ["y"], axis=-1)], [("x", [2, 3])], 13),
    "conv1d_pads": (
        [_const("W", _r(2, 3, 3)), _const("b", _r(2)),
         node("Conv", ["x", "W", "b"], ["y"], pads=[2, 1], strides=[2])], [("x", [1, 3, 6])], 13),
    "affine_family": (
        [_const("M", _r(3, 4)), node("MatMul", ["x", "M"], ["a"]),
         _const("k", _r(4)), node("Add", ["a", "k"], ["b"]), node("Sub", ["k", "b"], ["c"]),
         _const("s", _r(1, 4)), node("Mul", ["c", "s"], ["d"]), node("Div", ["d", "s"], ["e"]),
         node("Neg", ["e"], ["f"]),
         _const("k3", _r(1, 4)), node("Concat", ["f", "k3"], ["y"], axis=0)],
        [("x", [2, 3])], 13),
    "batchnorm_pools": (
        [_const("sc", _r(2)), _const("sh", _r(2)), _const("mu", _r(2)),
         _const("var", np.abs(_r(2)) + 0.1),
         node("BatchNormalization", ["x", "sc", "sh", "mu", "var"], ["bn"], epsilon=0.0),
         node("AveragePool", ["bn"], ["ap"], kernel_shape=[2, 2]),
         node("GlobalAveragePool", ["ap"], ["y"])], [("x", [1, 2, 3, 3])], 13),
    "relu": ([node("Relu", ["x"], ["y"])], [("x", [4])], 13),
    "residual_maxpool": (  # the Conv output crosses the Relu and both max-tree layers
        [_const("W", _r(2, 1, 2, 2)), node("Conv", ["x", "W"], ["c"], pads=[0, 0, 1, 1]),
         node("Relu", ["c"], ["r"]),
         node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], pads=[0, 0, 1, 1]),
         node("Sub", ["p", "c"], ["y"])], [("x", [1, 1, 3, 3])], 13),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_matches_onnxruntime(tmp_path, name):
    nodes, inputs, opset = CASES[name]
    path = _save(tmp_path / f"{name}.onnx", nodes, inputs, opset=opset)
    net = load_onnx(path)
    X = rng.normal(size=(N_SAMPLES, net.n_inputs))
    X[: N_SAMPLES // 2] = np.round(X[: N_SAMPLES // 2])  # ties, in MaxPool windows among others
    X = X.astype(np.float32).astype(np.float64)
    tol = HALF_RTOL if name == "cast_half" else ORT_RTOL
    for x in X:
        expected = _ort(path, inputs, x)
        got = net.forward(x)
        assert got.shape == expected.shape, f"{name}: shape {got.shape} vs {expected.shape}"
        np.testing.assert_allclose(got, expected, rtol=tol, atol=tol, err_msg=f"{name} at x={x}")


def test_every_supported_op_is_exercised():
    """``SUPPORTED_OPS`` lists exactly the ops the models above load (nothing untested)."""
    used = {n.op_type for nodes, _, _ in CASES.values() for n in nodes}
    assert set(SUPPORTED_OPS) <= used, f"listed but never loaded: {set(SUPPORTED_OPS) - used}"
    assert list(SUPPORTED_OPS) == sorted(set(SUPPORTED_OPS))
    assert all(op.isidentifier() and " " not in op for op in SUPPORTED_OPS)


def test_several_outputs_and_hidden_tensors(tmp_path):
    """Graph outputs, then requested intermediate tensors, flattened and concatenated."""
    nodes = [_const("two", 2.0), node("Mul", ["x", "two"], ["h"]), node("Relu", ["h"], ["r"]),
             _const("ten", 10.0), node("Add", ["x", "ten"], ["y2"]),
             node("Add", ["r", "two"], ["y1"])]
    inputs = [("x", [2])]
    net = load_onnx(_save(tmp_path / "two.onnx", nodes, inputs, outputs=("y1", "y2")),
                    extra_outputs=["h", "r"])
    full = _save(tmp_path / "full.onnx", nodes, inputs, outputs=("y1", "y2", "h", "r"))
    for x in rng.normal(size=(N_SAMPLES, 2)):
        np.testing.assert_allclose(net.forward(x), _ort(full, inputs, x), rtol=ORT_RTOL)
    with pytest.raises(NetworkError, match=r"output 'nowhere' is not produced by any node"):
        load_onnx(tmp_path / "two.onnx", extra_outputs=["nowhere"])


def test_maxpool_of_a_constant_is_folded(tmp_path):
    k = np.arange(8.0).reshape(1, 1, 2, 4)[..., ::-1].copy()
    nodes = [_const("k", k), node("MaxPool", ["k"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             node("Add", ["x", "p"], ["y"])]
    net = load_onnx(_save(tmp_path / "kp.onnx", nodes, [("x", [1, 1, 1, 2])]))
    np.testing.assert_array_equal(net.forward(np.zeros(2)), [7.0, 5.0])


def test_shape_as_output_is_a_constant_network(tmp_path):
    path = _save(tmp_path / "shape.onnx", [node("Shape", ["x"], ["y"])], [("x", [2, 3])],
                 out_type=TensorProto.INT64)
    net = load_onnx(path)
    assert net.n_inputs == 6
    np.testing.assert_array_equal(net.forward(rng.normal(size=6)), [2.0, 3.0])
    np.testing.assert_array_equal(_ort(path, [("x", [2, 3])], np.zeros(6)), [2, 3])


def test_maxpool_is_relu_layers_and_ties_are_exact(tmp_path):
    """A 2x2 window becomes two ReLU layers; equal entries give exactly their value."""
    nodes, inputs, _ = CASES["maxpool_2x2"]
    net = load_onnx(_save(tmp_path / "mp.onnx", nodes, inputs))
    assert len(net.weights) == 3  # two levels of the max tree, then the output map
    x = np.full(16, 0.1)
    assert np.all(net.forward(x) == 0.1)
    x = np.arange(16.0)[::-1].copy()
    np.testing.assert_array_equal(net.forward(x), [15, 14, 13, 11, 10, 9, 7, 6, 5])


def test_maxpool_after_relu_passes_values_with_one_unit(tmp_path):
    """Known non-negative values cross a layer as relu(v) alone, not relu(v) - relu(-v)."""
    nodes = [node("Relu", ["x"], ["r"]), node("MaxPool", ["r"], ["y"], kernel_shape=[2])]
    net = load_onnx(_save(tmp_path / "mp1.onnx", nodes, [("x", [1, 1, 3])]))
    # after the Relu layer (3 units): the pairs (0,1) and (1,2): 2 differences + 2 passed values
    assert [W.shape[0] for W in net.weights] == [3, 4, 2]


def test_maxpool_traversal_local_models(tmp_path):
    """Every polytope's local model equals the forward pass of the pooled network."""
    from polytrav import Box, traverse

    nodes = [node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2])]
    net = load_onnx(_save(tmp_path / "mp4.onnx", nodes, [("x", [1, 1, 2, 2])]))
    polytopes = list(traverse(net, Box(-np.ones(4), np.ones(4))))
    assert len(polytopes) >= 4  # one per argmax at least
    for p in polytopes:
        x = p.interior_point
        np.testing.assert_allclose(p.W @ x + p.c, net.forward(x), atol=1e-12)
        np.testing.assert_allclose(net.forward(x), [x.max()], atol=1e-12)


# ---------------------------------------------------------------------- refusals
REFUSED = {
    "sigmoid": ([node("Sigmoid", ["x"], ["y"], name="sig")],
                r"unsupported op 'Sigmoid' \(node 'sig', position 0\) is not piecewise linear"),
    "softmax": ([node("Relu", ["x"], ["r"]), node("Softmax", ["r"], ["y"])],
                r"unsupported op 'Softmax' \(unnamed node, position 1\) is not piecewise linear"),
    "pow": ([_const("two", 2.0), node("Pow", ["x", "two"], ["y"], name="sq")],
            r"unsupported op 'Pow' \(node 'sq', position 1\) is not piecewise linear"),
    "where": ([_const("t", 0.5), node("Greater", ["x", "t"], ["c"], name="gt"),
               node("Where", ["c", "x", "t"], ["y"], name="w")],
              r"unsupported op 'Greater' \(node 'gt', position 1\) is not piecewise linear"),
    "equal": ([_const("t", 0.0), node("Equal", ["x", "t"], ["c"], name="eq"),
               node("Cast", ["c"], ["y"], to=TensorProto.FLOAT)],
              r"unsupported op 'Equal' \(node 'eq', position 1\)"),
    "mul_of_two_inputs": ([node("Mul", ["x", "x"], ["y"], name="xx")],
                          r"node 'xx' \(Mul, position 0\) uses the chain tensor in 2 inputs"),
    "div_of_two_inputs": ([_ints("s", [0]), _ints("e", [1]), node("Slice", ["x", "s", "e"], ["a"]),
                           node("Neg", ["x"], ["b"]), node("Div", ["a", "b"], ["y"], name="q")],
                          r"node 'q' \(Div, position 4\) combines 2 tensors that depend on the "
                          r"inputs \(\['a', 'b'\]\) is not piecewise linear"),
    "div_by_input": ([_const("k", 1.0), node("Div", ["k", "x"], ["y"], name="inv")],
                     r"node 'inv' \(Div, position 1\): divides a constant by the chain tensor"),
    "cast_to_int64": ([node("Cast", ["x"], ["i"], to=TensorProto.INT64, name="c"),
                       node("Cast", ["i"], ["y"], to=TensorProto.FLOAT)],
                      r"node 'c' \(Cast, position 0\): casts the chain tensor to INT64.*not "
                      r"piecewise linear"),
    "cast_to_bool": ([node("Cast", ["x"], ["b"], to=TensorProto.BOOL, name="c"),
                      node("Cast", ["b"], ["y"], to=TensorProto.FLOAT)],
                     r"node 'c' \(Cast, position 0\): casts the chain tensor to BOOL"),
    "maxpool_indices": ([node("MaxPool", ["x"], ["p", "i"], kernel_shape=[2], name="mp"),
                         node("Cast", ["i"], ["y"], to=TensorProto.FLOAT)],
                        r"node 'mp' \(MaxPool, position 0\): its second output \(Indices\)"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_op_names_op_and_node(tmp_path, name):
    nodes, pattern = REFUSED[name]
    shape = [1, 1, 4] if name == "maxpool_indices" else [4]
    path = _save(tmp_path / f"{name}.onnx", nodes, [("x", shape)])
    with pytest.raises(NetworkError, match=rf"'{name}\.onnx': .*{pattern}"):
        load_onnx(path)


def test_refused_ops_are_not_listed():
    refused = {n.op_type for nodes, _ in REFUSED.values() for n in nodes[-2:]
               if n.name in ("sig", "sq", "gt", "eq", "w") or n.op_type == "Softmax"}
    assert refused and not refused & set(SUPPORTED_OPS)


def test_docs_list_the_supported_ops():
    """docs/concepts.md names exactly ``SUPPORTED_OPS`` in its ONNX paragraph."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "concepts.md").read_text()
    paragraph = text.split("**ONNX models**", 1)[1].split("Runs of affine", 1)[0]
    assert tuple(re.findall(r"`([A-Z]\w*)`", paragraph)) == SUPPORTED_OPS
