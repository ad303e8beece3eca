"""Tests of the model loaders (polytrav.model.loaders): .nnet, ONNX and torch.

Data-driven tests read ``../shared/data`` next to the repository and skip if it is absent.
"""

from __future__ import annotations

import copy
import warnings
from pathlib import Path

import numpy as np
import pytest
from reference import TINY_NNET

from polytrav.vocabulary.errors import ConfigError, NetworkError
from polytrav.model.loaders.nnet import load_nnet

SEED = 20240601
N_SAMPLES = 20
ACAS_NNET_VS_ONNX_TOL = 1e-5  # the data README measured at most 1.3e-6
FOLD_RTOL = 1e-9  # folding the normalisation only changes float64 rounding
ORT_RTOL = 1e-4  # onnxruntime evaluates in float32
TORCH_TOL = 1e-9  # both sides in float64
ACCURACY_TOL = 0.05  # percentage points: float32 vs float64 ties

# test accuracy (%) on mnist_test.npz / 255, from the data README
MNIST_ACCURACY = {
    "mnist/mnist2x10.onnx": 92.26,
    "mnist/mnist10x10.nnet": 93.68,
    "mnist/mnist10x20.nnet": 95.74,
    "mnistfc/onnx/mnist-net_256x2.onnx": 98.08,
    "mnistfc/onnx/mnist-net_256x4.onnx": 97.64,
    "mnistfc/onnx/mnist-net_256x6.onnx": 96.89,
}


def _max_rel_err(actual, expected) -> float:
    actual, expected = np.asarray(actual, float), np.asarray(expected, float)
    return float(np.max(np.abs(actual - expected)) / max(1.0, np.max(np.abs(expected))))


def _ort_forward(path, net, X):
    """onnxruntime output for the flattened float32 inputs ``X``, one sample at a time if needed."""
    ort = pytest.importorskip("onnxruntime")
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    name, declared = session.get_inputs()[0].name, session.get_inputs()[0].shape
    X = np.asarray(X, dtype=np.float32)
    has_batch = len(declared) == len(net.input_shape) + 1
    if has_batch and not isinstance(declared[0], int):  # symbolic batch: run all at once
        return session.run(None, {name: X.reshape(len(X), *net.input_shape)})[0].reshape(len(X), -1)
    lead = (1,) if has_batch else ()
    return np.stack(
        [session.run(None, {name: x.reshape(*lead, *net.input_shape)})[0].ravel() for x in X]
    )


def _nnet_normalisation(path: Path) -> dict[str, np.ndarray]:
    """Header values of an .nnet file, parsed independently of the loader."""
    lines = [line for line in path.read_text().splitlines() if not line.startswith("//")]

    def row(k):
        return np.array([float(t) for t in lines[k].strip().rstrip(",").split(",")])

    n_in = int(row(0)[1])
    return {
        "min": row(3),
        "max": row(4),
        "mean_in": row(5)[:n_in],
        "mean_out": row(5)[n_in:],
        "range_in": row(6)[:n_in],
        "range_out": row(6)[n_in:],
    }


# ====================================================================== data: ACAS Xu and MNIST
@pytest.mark.integration
def test_acasxu_nnet_matches_onnx_and_fold(data_dir):
    pytest.importorskip("onnx")
    from polytrav.model.loaders.onnx import load_onnx

    rng = np.random.default_rng(SEED)
    nnets = sorted((data_dir / "acasxu" / "nnet").glob("*.nnet"))
    assert len(nnets) == 45
    for nnet_path in nnets:
        onnx_path = data_dir / "acasxu" / "onnx" / (nnet_path.stem + ".onnx")
        none = load_nnet(nnet_path, normalization="none")
        fold = load_nnet(nnet_path)
        onx = load_onnx(onnx_path)
        assert onx.input_shape == (1, 1, 5)
        assert none.hidden_sizes == onx.hidden_sizes == (50,) * 6

        lo, hi = none.input_domain
        X = lo + rng.random((N_SAMPLES, 5)) * (hi - lo)
        err = np.max(np.abs(none.forward(X) - onx.forward(X)))
        assert err <= ACAS_NNET_VS_ONNX_TOL, f"{nnet_path.name}: .nnet vs .onnx differ by {err}"

        norm = _nnet_normalisation(nnet_path)
        np.testing.assert_array_equal(fold.input_domain[0], norm["min"])
        np.testing.assert_array_equal(fold.input_domain[1], norm["max"])
        X_raw = norm["min"] + rng.random((N_SAMPLES, 5)) * (norm["max"] - norm["min"])
        expected = (
            none.forward((X_raw - norm["mean_in"]) / norm["range_in"]) * norm["range_out"]
            + norm["mean_out"]
        )
        err = _max_rel_err(fold.forward(X_raw), expected)
        assert err <= FOLD_RTOL, f"{nnet_path.name}: folded normalisation off by {err}"


@pytest.mark.integration
def test_every_onnx_model_matches_onnxruntime(data_dir):
    pytest.importorskip("onnx")
    from polytrav.model.loaders.onnx import load_onnx

    rng = np.random.default_rng(SEED)
    paths = sorted(data_dir.rglob("*.onnx"))
    assert len(paths) >= 49
    for path in paths:
        net = load_onnx(path)
        X = rng.random((5, net.n_inputs)).astype(np.float32) - (
            0.5 if "acasxu" in path.parts else 0.0
        )
        err = _max_rel_err(net.forward(X.astype(np.float64)), _ort_forward(path, net, X))
        assert err <= ORT_RTOL, f"{path.name}: differs from onnxruntime by {err} (relative)"


@pytest.mark.integration
def test_mnist_accuracy_matches_readme(data_dir):
    pytest.importorskip("onnx")
    from polytrav.model.loaders.onnx import load_onnx

    test = np.load(data_dir / "mnist" / "mnist_test.npz")
    X = test["images"].reshape(len(test["images"]), -1).astype(np.float64) / 255.0
    labels = test["labels"]
    assert X.shape == (10000, 784)
    for rel, expected in MNIST_ACCURACY.items():
        path = data_dir / rel
        net = load_onnx(path) if path.suffix == ".onnx" else load_nnet(path)
        accuracy = 100.0 * np.mean(np.argmax(net.forward(X), axis=1) == labels)
        assert abs(accuracy - expected) <= ACCURACY_TOL + 1e-9, (
            f"{rel}: accuracy {accuracy:.2f}% != {expected}%"
        )


# ====================================================================== .nnet: corrupt input


@pytest.fixture
def tiny_nnet(tmp_path) -> Path:
    path = tmp_path / "tiny.nnet"
    path.write_text(TINY_NNET)
    return path


def test_nnet_tiny_by_hand(tiny_nnet):
    none = load_nnet(tiny_nnet, normalization="none")
    assert none.name == "tiny" and none.hidden_sizes == (3,)
    x = np.array([0.3, -0.4])
    h = np.maximum(np.array([[1.0, -1.0], [0.5, 0.5], [-1.0, 2.0]]) @ x + [0.1, -0.2, 0.3], 0)
    np.testing.assert_allclose(none.forward(x), [np.dot([1.0, -2.0, 0.5], h) + 0.25])
    np.testing.assert_allclose(none.input_domain[0], [(-1 - 0.5) / 2, -2 / 4])
    fold = load_nnet(tiny_nnet)
    x_raw = np.array([0.9, 1.5])
    expected = none.forward((x_raw - [0.5, 0.0]) / [2.0, 4.0]) * 10.0 + 3.0
    np.testing.assert_allclose(fold.forward(x_raw), expected, rtol=1e-12)


def test_nnet_input_names_from_a_comment(tmp_path, tiny_nnet):
    assert load_nnet(tiny_nnet).input_names is None
    named = tmp_path / "named.nnet"
    named.write_text("// Input names: speed, angle,\n" + TINY_NNET)
    assert load_nnet(named).input_names == ("speed", "angle")
    assert load_nnet(named, normalization="none").input_names == ("speed", "angle")
    named.write_text("// input names: speed\n" + TINY_NNET)
    with pytest.raises(NetworkError, match=r"named\.nnet': line 1: the 'input names' comment "
                       r"lists 1 names but the network has 2 inputs"):
        load_nnet(named)


def test_acasxu_files_carry_no_input_names(data_dir):
    from polytrav.model.loaders.onnx import load_onnx

    stem = "ACASXU_run2a_1_1_batch_2000"
    assert load_nnet(data_dir / "acasxu" / "nnet" / f"{stem}.nnet").input_names is None
    assert load_onnx(data_dir / "acasxu" / "onnx" / f"{stem}.onnx").input_names is None  # one tensor


def test_nnet_bad_normalization_argument(tiny_nnet):
    with pytest.raises(ConfigError, match="normalization"):
        load_nnet(tiny_nnet, normalization="scale")


@pytest.mark.parametrize("fraction", [0.02, 0.1, 0.25, 0.5, 0.61, 0.77, 0.9, "last line"])
def test_nnet_truncated_gives_network_error(tiny_nnet, fraction):
    # (a cut inside the very last number leaves a shorter valid number: undetectable)
    text = TINY_NNET
    cut = (
        text.rindex("\n", 0, len(text) - 1) + 1
        if fraction == "last line"
        else int(len(text) * fraction)
    )
    tiny_nnet.write_text(text[:cut])
    with pytest.raises(NetworkError, match=r"tiny\.nnet.*line \d+"):
        load_nnet(tiny_nnet)


@pytest.mark.integration
def test_nnet_truncated_acasxu(data_dir, tmp_path):
    text = (data_dir / "acasxu" / "nnet" / "ACASXU_run2a_1_1_batch_2000.nnet").read_text()
    last_line = text.rindex("\n", 0, len(text) - 1) + 1
    for cut in (
        len(text) // 2,
        len(text) // 2 + 1,
        text.index("\n", len(text) // 3) + 1,
        last_line,
    ):
        path = tmp_path / "cut.nnet"
        path.write_text(text[:cut])
        with pytest.raises(NetworkError, match=r"cut\.nnet.*line \d+"):
            load_nnet(path)


@pytest.mark.parametrize(
    ("old", "new", "match"),
    [
        ("0.5,0.5,", "0.5,abc,", r"line 10: expected weights of neuron 2 of layer 1.*'abc'"),
        ("0.5,0.5,", "0.5,", r"line 10: expected 2 values \(weights of neuron 2 of layer 1"),
        ("2,2,1,3,", "2,2,2,3,", r"line 3: layer sizes .* 2 outputs"),
        ("2,3,1,", "2,3,3,1,", r"line 3: expected 3 values \(the 3 layer sizes\)"),
        ("0.25,\n", "0.25,\n7,\n", r"line 17: unexpected data after the last layer"),
        ("2.0,4.0,10.0,", "2.0,0.0,10.0,", r"line 8: ranges must be nonzero"),
        ("-1.0,2.0,", "-1.0,nan,", r"tiny\.nnet.*nan"),
    ],
    ids=[
        "non-numeric",
        "short-row",
        "header-vs-sizes",
        "sizes-count",
        "trailing",
        "zero-range",
        "nan",
    ],
)
def test_nnet_corrupt_gives_network_error(tiny_nnet, old, new, match):
    assert TINY_NNET.count(old) == 1
    tiny_nnet.write_text(TINY_NNET.replace(old, new))
    with pytest.raises(NetworkError, match=match):
        load_nnet(tiny_nnet)


def test_nnet_binary_file(tmp_path):
    path = tmp_path / "noise.nnet"
    path.write_bytes(np.random.default_rng(SEED).bytes(300))
    with pytest.raises(NetworkError, match="noise.nnet"):
        load_nnet(path)


# ====================================================================== ONNX: hand-built graphs
def _save_model(path, nodes, inputs, outputs, initializers, opset=13):
    onnx = pytest.importorskip("onnx")
    from onnx import helper

    graph = helper.make_graph(nodes, path.stem, inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def _tensor(name, array):
    from onnx import numpy_helper

    array = np.asarray(array)
    return numpy_helper.from_array(
        array.astype(np.float32) if array.dtype.kind == "f" else array, name
    )


@pytest.fixture
def conv_model(tmp_path) -> Path:
    """Many supported ops in one chain: elementwise, Conv, BatchNorm, pools, shape folding."""
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    rng = np.random.default_rng(SEED)
    r = lambda *shape: rng.normal(size=shape)  # noqa: E731
    node = helper.make_node
    nodes = [
        node("Constant", [], ["c0"], value=_tensor("c0v", r(1, 2, 1, 1))),
        node("Sub", ["x", "c0"], ["t0"], name="sub"),
        node("Mul", ["t0", "k_mul"], ["t1"]),
        node("Div", ["t1", "k_div"], ["t2"]),
        node(
            "Conv",
            ["t2", "Wc", "bc"],
            ["t3"],
            group=2,
            strides=[2, 1],
            pads=[1, 0, 0, 1],
            dilations=[1, 2],
        ),
        node("BatchNormalization", ["t3", "bn_s", "bn_b", "bn_m", "bn_v"], ["t4"], epsilon=1e-3),
        node("Relu", ["t4"], ["t5"]),
        node(
            "AveragePool",
            ["t5"],
            ["t6"],
            kernel_shape=[2, 2],
            pads=[1, 1, 0, 0],
            count_include_pad=1,
        ),
        node("AveragePool", ["t6"], ["t7"], kernel_shape=[2, 2], pads=[0, 0, 1, 1]),
        node("Transpose", ["t7"], ["t8"], perm=[0, 2, 3, 1]),
        node("Shape", ["t8"], ["s0"]),
        node("Gather", ["s0", "i0"], ["s1"], axis=0),
        node("Concat", ["s1", "minus1"], ["s2"], axis=0),
        node("Reshape", ["t8", "s2"], ["t9"]),
        node("Unsqueeze", ["t9", "ax1"], ["t10"]),
        node("Squeeze", ["t10", "ax1"], ["t11"]),
        node("Gemm", ["t11", "Wg", "bg"], ["t12"], alpha=0.5, beta=2.0),
        node("Identity", ["t12"], ["t13"]),
        node("Dropout", ["t13"], ["t14"]),
        node("Relu", ["t14"], ["t15"]),
        node("Reshape", ["t15", "shape_n24"], ["t16"]),
        node("MatMul", ["A_left", "t16"], ["t17"]),
        node("MatMul", ["t17", "B_right"], ["t18"]),
        node("Add", ["t18", "b_add"], ["t19"]),
        node("Flatten", ["t19"], ["t20"], axis=1),
        node("Relu", ["t20"], ["y"], name="last_relu"),
    ]
    inits = [
        _tensor("k_mul", r(2, 1, 1)),
        _tensor("k_div", np.array(1.7)),
        _tensor("Wc", r(4, 1, 3, 3)),
        _tensor("bc", r(4)),
        _tensor("bn_s", r(4)),
        _tensor("bn_b", r(4)),
        _tensor("bn_m", r(4)),
        _tensor("bn_v", rng.uniform(0.5, 2.0, 4)),
        _tensor("i0", np.array([0], dtype=np.int64)),
        _tensor("minus1", np.array([-1], dtype=np.int64)),
        _tensor("ax1", np.array([1], dtype=np.int64)),
        _tensor("Wg", r(36, 8)),
        _tensor("bg", r(8)),
        _tensor("shape_n24", np.array([0, 2, 4], dtype=np.int64)),
        _tensor("A_left", r(3, 2)),
        _tensor("B_right", r(4, 2)),
        _tensor("b_add", r(2)),
    ]
    return _save_model(
        tmp_path / "convchain.onnx",
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 6])],
        inits,
    )


def test_onnx_handbuilt_conv_chain_matches_onnxruntime(conv_model):
    from polytrav.model.loaders.onnx import load_onnx

    net = load_onnx(conv_model)
    assert net.input_shape == (2, 6, 6)
    assert net.hidden_sizes == (36, 8, 6)  # conv+BN | pools+Gemm | MatMuls; then the final Relu
    np.testing.assert_array_equal(net.weights[-1], np.eye(6))  # identity output layer
    np.testing.assert_array_equal(net.biases[-1], np.zeros(6))
    X = np.random.default_rng(SEED).normal(size=(8, 72)).astype(np.float32)
    err = _max_rel_err(net.forward(X.astype(np.float64)), _ort_forward(conv_model, net, X))
    assert err <= ORT_RTOL, f"differs from onnxruntime by {err}"


def _more_ops_graphs():
    """Two graphs for the ops the conv chain does not use (opset 11 attributes, 1-D input)."""
    from onnx import helper

    rng = np.random.default_rng(SEED)
    r = lambda *shape: rng.normal(size=shape)  # noqa: E731
    node = helper.make_node
    opset11 = (
        [
            node(
                "Conv",
                ["x", "W"],
                ["a"],
                auto_pad="SAME_UPPER",
                strides=[2, 2],
                kernel_shape=[3, 3],
            ),
            node("Neg", ["a"], ["b"]),
            node("Relu", ["b"], ["c"]),
            node("Conv", ["c", "W2", "b2"], ["c2"], auto_pad="SAME_LOWER", kernel_shape=[2, 2]),
            node("GlobalAveragePool", ["c2"], ["d"]),
            node("Squeeze", ["d"], ["e"], axes=[2, 3]),
            node("Unsqueeze", ["e"], ["f"], axes=[0]),
            node("Gather", ["f", "idx"], ["g"], axis=2),
            node("Concat", ["g", "cc"], ["h"], axis=2),
            node("Squeeze", ["h"], ["y"], axes=[0]),
        ],
        [
            _tensor("W", r(3, 2, 3, 3)),
            _tensor("W2", r(3, 3, 2, 2)),
            _tensor("b2", r(3)),
            _tensor("idx", np.array([2, 0, 0], dtype=np.int64)),
            _tensor("cc", r(1, 1, 2)),
        ],
        [1, 2, 5, 5],
        [1, 5],
        11,
        (2, 5, 5),
    )
    vector = (
        [
            node("Reshape", ["x", "s"], ["a"]),
            node("Gemm", ["a", "B", "C"], ["b"], transA=1, alpha=2.0),
            node("Transpose", ["b"], ["c"]),
            node("Relu", ["c"], ["d"]),
            node("MatMul", ["d", "v"], ["e"]),
            node("Add", ["e", "k"], ["y"]),
        ],
        [
            _tensor("s", np.array([3, 2], dtype=np.int64)),
            _tensor("B", r(3, 4)),
            _tensor("C", r(4)),
            _tensor("v", r(2)),
            _tensor("k", r(2, 4)),
        ],
        [6],
        [2, 4],
        13,
        (6,),
    )
    return {"opset11": opset11, "vector": vector}


@pytest.mark.parametrize("name", ["opset11", "vector"])
def test_onnx_more_ops_match_onnxruntime(tmp_path, name):
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    from polytrav.model.loaders.onnx import load_onnx

    nodes, inits, in_shape, out_shape, opset, input_shape = _more_ops_graphs()[name]
    path = _save_model(
        tmp_path / f"{name}.onnx",
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
        inits,
        opset,
    )
    net = load_onnx(path)
    assert net.input_shape == input_shape
    X = np.random.default_rng(SEED).normal(size=(4, net.n_inputs)).astype(np.float32)
    err = _max_rel_err(net.forward(X.astype(np.float64)), _ort_forward(path, net, X))
    assert err <= ORT_RTOL, f"{name}: differs from onnxruntime by {err}"


def test_onnx_torch_export_conv_matches(tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnx")
    from polytrav.model.loaders.onnx import load_onnx

    model = _conv_net(torch)
    path = tmp_path / "exported.onnx"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                model,
                (torch.zeros(1, 2, 8, 8),),
                str(path),
                dynamo=False,
                input_names=["x"],
                dynamic_axes={"x": {0: "N"}},
            )
    except Exception as exc:  # noqa: BLE001 - exporter needs optional packages in some versions
        pytest.skip(f"torch.onnx.export unavailable here: {type(exc).__name__}: {exc}")
    net = load_onnx(path)
    assert net.input_shape == (2, 8, 8)
    x = torch.rand(6, 2, 8, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(SEED))
    with torch.no_grad():
        expected = copy.deepcopy(model).double()(x).numpy()
    err = _max_rel_err(net.forward(x.reshape(6, -1).numpy()), expected)
    assert err <= ORT_RTOL, f"exported conv net differs from torch by {err}"
    X = x.reshape(6, -1).numpy().astype(np.float32)
    assert _max_rel_err(net.forward(X.astype(np.float64)), _ort_forward(path, net, X)) <= ORT_RTOL


def _dense_graph(tmp_path, name, tail_nodes, tail_inits=(), opset=13):
    """x (N,3) -> Gemm -> h, followed by ``tail_nodes`` ending in tensor 'y' (N,2)."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(SEED)
    nodes = [helper.make_node("Gemm", ["x", "W", "b"], ["h"], name="dense", transB=1), *tail_nodes]
    inits = [_tensor("W", rng.normal(size=(2, 3))), _tensor("b", rng.normal(size=2)), *tail_inits]
    return _save_model(
        tmp_path / name,
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])],
        inits,
        opset,
    )


def test_onnx_unsupported_op_names_op_and_position(tmp_path):
    pytest.importorskip("onnx")
    from onnx import helper

    from polytrav.model.loaders.onnx import load_onnx

    tail = [
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("Softmax", ["r"], ["y"], name="sm"),
    ]
    path = _dense_graph(tmp_path, "soft.onnx", tail)
    with pytest.raises(
        NetworkError,
        match=r"'soft\.onnx': unsupported op 'Softmax' \(node 'sm', position 2\) is not piecewise "
        r"linear; supported ops: "
        r".*Conv",
    ):
        load_onnx(path)


def test_onnx_skip_connection_crosses_the_relu_layer(tmp_path):
    """A tensor read after a Relu it does not go through crosses it as relu(v) - relu(-v)."""
    pytest.importorskip("onnx")
    from onnx import helper

    from polytrav.model.loaders.onnx import load_onnx

    tail = [
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("Add", ["r", "h"], ["y"], name="skip"),
    ]
    path = _dense_graph(tmp_path, "skip.onnx", tail)
    net = load_onnx(path)
    assert [W.shape[0] for W in net.weights] == [2 + 2, 2]  # relu(h) (shared), relu(-h)
    X = np.random.default_rng(SEED).normal(size=(16, 3)).astype(np.float32)
    assert _max_rel_err(net.forward(X.astype(np.float64)), _ort_forward(path, net, X)) <= ORT_RTOL
    tail = [helper.make_node("Mul", ["h", "h"], ["y"], name="square")]
    with pytest.raises(
        NetworkError, match=r"node 'square' \(Mul, position 1\) uses the chain tensor in 2 inputs"
    ):
        load_onnx(_dense_graph(tmp_path, "square.onnx", tail))


def test_onnx_non_affine_use_of_supported_op(tmp_path):
    pytest.importorskip("onnx")
    from onnx import helper

    from polytrav.model.loaders.onnx import load_onnx

    tail = [helper.make_node("Div", ["k", "h"], ["y"], name="inv")]
    path = _dense_graph(tmp_path, "inv.onnx", tail, [_tensor("k", np.ones(2))])
    with pytest.raises(NetworkError, match=r"node 'inv' \(Div, position 1\): divides a constant"):
        load_onnx(path)


def test_onnx_nan_weight(tmp_path):
    pytest.importorskip("onnx")
    from onnx import helper

    from polytrav.model.loaders.onnx import load_onnx

    tail = [helper.make_node("Add", ["h", "nanb"], ["y"])]
    path = _dense_graph(tmp_path, "nan.onnx", tail, [_tensor("nanb", np.array([0.0, np.nan]))])
    with pytest.raises(NetworkError, match=r"nan\.onnx.*nan"):
        load_onnx(path)


#: The files cut by the truncation test: a built model, and two of the shared data.
CUT_SOURCES = {"conv": None, "mnist": ("mnist", "mnist2x10.onnx"),
               "acas": ("acasxu", "onnx", "ACASXU_run2a_1_1_batch_2000.onnx")}


def test_onnx_noise_files_give_network_error(tmp_path):
    from polytrav.model.loaders.onnx import load_onnx

    rng = np.random.default_rng(SEED)
    for k in range(5):
        path = tmp_path / f"noise{k}.onnx"
        path.write_bytes(rng.bytes(int(rng.integers(1, 4000))))
        with pytest.raises(NetworkError, match=f"noise{k}.onnx"):
            load_onnx(path)


@pytest.mark.parametrize("source", [
    pytest.param(name, marks=() if parts is None else pytest.mark.integration)
    for name, parts in CUT_SOURCES.items()])
def test_onnx_truncated_files_give_network_error(tmp_path, request, source):
    from polytrav.model.loaders.onnx import load_onnx

    parts = CUT_SOURCES[source]
    path = (request.getfixturevalue("conv_model") if parts is None
            else request.getfixturevalue("data_dir").joinpath(*parts))
    data = path.read_bytes()
    for cut in (len(data) // 2, len(data) // 3, len(data) - 7, 40):
        path = tmp_path / "cut.onnx"
        path.write_bytes(data[:cut])
        with pytest.raises(NetworkError, match="cut.onnx"):
            load_onnx(path)


# ====================================================================== torch
def _conv_net(torch):
    nn = torch.nn
    torch.manual_seed(SEED)
    model = nn.Sequential(
        nn.Conv2d(2, 3, 3, stride=2, padding=1),
        nn.BatchNorm2d(3),
        nn.ReLU(),
        nn.AvgPool2d(2, stride=1, padding=1, count_include_pad=False),
        nn.Sequential(nn.Conv2d(3, 4, 3, padding=2, dilation=2), nn.AvgPool2d(2)),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(16, 5),
    )
    with torch.no_grad():
        model[1].running_mean.uniform_(-1.0, 1.0)
        model[1].running_var.uniform_(0.5, 2.0)
        model[1].weight.uniform_(0.5, 1.5)
        model[1].bias.uniform_(-0.5, 0.5)
    return model.eval()


def _check_torch(torch, model, net, input_shape, n=16):
    x = torch.randn(
        n, *input_shape, dtype=torch.float64, generator=torch.Generator().manual_seed(SEED)
    )
    with torch.no_grad():
        expected = copy.deepcopy(model).double().eval()(x).reshape(n, -1).numpy()
    err = _max_rel_err(net.forward(x.reshape(n, -1).numpy()), expected)
    assert err <= TORCH_TOL, f"{net!r} differs from torch by {err}"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_torch_random_sequentials(seed):
    torch = pytest.importorskip("torch")
    from polytrav.model.loaders.torch import load_torch

    nn = torch.nn
    torch.manual_seed(seed)
    plain = nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 4), nn.ReLU(), nn.Linear(4, 2))
    net = load_torch(plain)
    assert net.hidden_sizes == (5, 4) and net.input_shape == (3,)
    _check_torch(torch, plain, net, (3,))

    nested = nn.Sequential(
        nn.Flatten(),
        nn.Linear(6, 4),
        nn.Dropout(0.3),
        nn.ReLU(),
        nn.Sequential(nn.Linear(4, 4), nn.Identity(), nn.Linear(4, 3)),
        nn.ReLU(),
    )
    net = load_torch(nested, input_shape=(2, 3))
    assert net.hidden_sizes == (4, 3) and net.input_shape == (2, 3)  # Linears composed
    np.testing.assert_array_equal(net.weights[-1], np.eye(3))  # ends in ReLU: identity output
    _check_torch(torch, nested, net, (2, 3))

    batchnorm = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 2))
    with torch.no_grad():
        batchnorm[1].running_mean.normal_()
        batchnorm[1].running_var.uniform_(0.5, 2.0)
    batchnorm.eval()
    _check_torch(torch, batchnorm, load_torch(batchnorm), (4,))


def test_torch_conv_net():
    torch = pytest.importorskip("torch")
    from polytrav.model.loaders.torch import load_torch

    model = _conv_net(torch)
    net = load_torch(model, input_shape=(2, 8, 8))
    assert net.hidden_sizes == (48, 16) and net.n_outputs == 5
    _check_torch(torch, model, net, (2, 8, 8))
    with pytest.raises(NetworkError, match=r"Conv2d at position 0 \('0'\); pass input_shape"):
        load_torch(model)


def test_torch_unsupported_layer():
    torch = pytest.importorskip("torch")
    from polytrav.model.loaders.torch import load_torch

    nn = torch.nn
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 3), nn.Tanh())
    with pytest.raises(
        NetworkError, match=r"torch module: unsupported layer Tanh at position 3 \('3'\)"
    ):
        load_torch(model)
    model = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.ReLU(), nn.Sigmoid()))
    with pytest.raises(NetworkError, match=r"unsupported layer Sigmoid at position 2 \('1\.1'\)"):
        load_torch(model)


def test_torch_files_state_dict_and_untrusted_pickles(tmp_path):
    torch = pytest.importorskip("torch")
    from polytrav.model.loaders.torch import load_torch

    nn = torch.nn
    torch.manual_seed(SEED)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    full, state = tmp_path / "full.pt", tmp_path / "weights.pt"
    torch.save(model, full)
    torch.save(model.state_dict(), state)

    with pytest.raises(NetworkError, match="never unpickles arbitrary objects"):
        load_torch(full)
    with pytest.raises(NetworkError, match="state dict .* pass module="):
        load_torch(state)

    fresh = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    before = [p.clone() for p in fresh.parameters()]
    net = load_torch(state, module=fresh)
    assert net.name == "weights"
    _check_torch(torch, model, net, (3,))
    assert all(
        torch.equal(a, b) for a, b in zip(before, fresh.parameters(), strict=True)
    )  # left unchanged

    with pytest.raises(NetworkError, match="does not fit"):
        load_torch(state, module=nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 2)))
    cut = tmp_path / "cut.pt"
    cut.write_bytes(state.read_bytes()[: state.stat().st_size // 2])
    with pytest.raises(NetworkError, match="cut.pt"):
        load_torch(cut, module=fresh)
    noise = tmp_path / "noise.pt"
    noise.write_bytes(np.random.default_rng(SEED).bytes(500))
    with pytest.raises(NetworkError, match="noise.pt"):
        load_torch(noise, module=fresh)
    with pytest.raises(ConfigError):
        load_torch(model, module=fresh)


def test_torch_nan_weight():
    torch = pytest.importorskip("torch")
    from polytrav.model.loaders.torch import load_torch

    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU(), torch.nn.Linear(2, 1))
    with torch.no_grad():
        model[2].weight[0, 1] = float("nan")
    with pytest.raises(NetworkError, match="nan"):
        load_torch(model)


# ====================================================================== ONNX: several inputs
def _several_inputs(tmp_path, name, nodes, inputs, inits):
    from onnx import TensorProto, helper

    return _save_model(
        tmp_path / name, nodes,
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n, shape in inputs],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])], inits)


def test_onnx_several_inputs_become_one_vector_with_their_names(tmp_path):
    """Scalar inputs named after quantities (Concat), and an Add of two input branches."""
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import helper

    from polytrav.model.loaders.onnx import load_onnx

    rng = np.random.default_rng(SEED)
    node = helper.make_node
    concat = _several_inputs(
        tmp_path, "concat.onnx",
        [node("Concat", ["rho", "theta", "v"], ["x"], axis=1),
         node("Gemm", ["x", "W", "b"], ["h"], transB=1), node("Relu", ["h"], ["r"]),
         node("Gemm", ["r", "W2", "b2"], ["y"], transB=1)],
        [("rho", ["N", 1]), ("theta", ["N", 1]), ("v", ["N", 2])],
        [_tensor("W", rng.normal(size=(6, 4))), _tensor("b", rng.normal(size=6)),
         _tensor("W2", rng.normal(size=(2, 6))), _tensor("b2", rng.normal(size=2))])
    net = load_onnx(concat)
    assert net.input_names == ("rho", "theta", "v[0]", "v[1]") and net.input_shape == (4,)
    X = rng.normal(size=(9, 4)).astype(np.float32)
    y = ort.InferenceSession(str(concat)).run(
        None, {"rho": X[:, :1], "theta": X[:, 1:2], "v": X[:, 2:]})[0]
    np.testing.assert_allclose(net.forward(X), y, rtol=1e-5, atol=1e-5)

    added = _several_inputs(
        tmp_path, "added.onnx",
        [node("MatMul", ["a", "Wa"], ["ha"]), node("MatMul", ["c", "Wc"], ["hc"]),
         node("Sub", ["ha", "hc"], ["h"]), node("Relu", ["h"], ["y"])],
        [("a", ["N", 1]), ("c", ["N", 3])],
        [_tensor("Wa", rng.normal(size=(1, 2))), _tensor("Wc", rng.normal(size=(3, 2)))])
    net = load_onnx(added)
    assert net.input_names == ("a", "c[0]", "c[1]", "c[2]")
    X = rng.normal(size=(9, 4)).astype(np.float32)
    y = ort.InferenceSession(str(added)).run(None, {"a": X[:, :1], "c": X[:, 1:]})[0]
    np.testing.assert_allclose(net.forward(X), y, rtol=1e-5, atol=1e-5)


def test_onnx_several_inputs_combined_after_relu_or_refused(tmp_path):
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import helper

    from polytrav.model.loaders.onnx import load_onnx

    node = helper.make_node
    inputs = [("a", ["N", 2]), ("c", ["N", 2])]
    late = _several_inputs(tmp_path, "late.onnx",
                           [node("Relu", ["a"], ["r"]), node("Add", ["r", "c"], ["y"])],
                           inputs, [])
    net = load_onnx(late)  # c crosses the Relu layer unchanged
    X = np.random.default_rng(SEED).normal(size=(9, 4)).astype(np.float32)
    y = ort.InferenceSession(str(late)).run(None, {"a": X[:, :2], "c": X[:, 2:]})[0]
    np.testing.assert_allclose(net.forward(X), y, rtol=1e-5, atol=1e-5)
    product = _several_inputs(tmp_path, "product.onnx", [node("Mul", ["a", "c"], ["y"])],
                              inputs, [])
    with pytest.raises(NetworkError, match=r"combines 2 tensors .* only Concat, Add and Sub"):
        load_onnx(product)
    unused = _several_inputs(tmp_path, "unused.onnx", [node("Neg", ["a"], ["y"])], inputs, [])
    with pytest.raises(NetworkError, match=r"\['c'\] depend on the inputs but do not reach"):
        load_onnx(unused)
