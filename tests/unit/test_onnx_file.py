"""``polytrav.model.loaders.onnx_file``: ONNX files read with protobuf alone give what the
``onnx`` package reads from them (every tensor type polytrav reads, raw and typed storage,
external data, attributes), refuse what they cannot read in one line, and write back a model
byte for byte."""
from __future__ import annotations

import numpy as np
import pytest

from polytrav.model.loaders.onnx_file import (attribute_value, message_class, numpy_type,
                                              read_model, to_array, type_name)
from polytrav.vocabulary.errors import NetworkError

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

#: Element types and a NumPy type of each (what ``numpy_helper.from_array`` stores).
TYPES = {"FLOAT": np.float32, "DOUBLE": np.float64, "FLOAT16": np.float16, "INT8": np.int8,
         "UINT8": np.uint8, "INT16": np.int16, "UINT16": np.uint16, "INT32": np.int32,
         "INT64": np.int64, "UINT32": np.uint32, "UINT64": np.uint64, "BOOL": np.bool_}


def ours(tensor):
    """``tensor`` (an ``onnx`` TensorProto) as this module's message."""
    message = message_class("TensorProto")()
    message.ParseFromString(tensor.SerializeToString())
    return message


@pytest.mark.parametrize("name", sorted(TYPES))
@pytest.mark.parametrize("raw", [True, False], ids=["raw_data", "typed fields"])
def test_every_type_reads_as_the_onnx_package_reads_it(name, raw):
    values = (np.random.default_rng(0).normal(size=(3, 4)) * 50).astype(TYPES[name])
    if raw:
        tensor = numpy_helper.from_array(values, "t")
    else:
        tensor = helper.make_tensor("t", getattr(TensorProto, name), values.shape,
                                    values.reshape(-1).tolist())
    want = numpy_helper.to_array(tensor)
    got = to_array(ours(tensor))
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want)
    assert type_name(tensor.data_type) == name


def test_bfloat16_widens_exactly_and_scalars_keep_their_shape():
    values = np.array([1.0, -2.5, 3.140625, 2.0 ** 100], np.float32)  # exact in bfloat16
    tensor = helper.make_tensor("b", TensorProto.BFLOAT16, [4], values.tolist())
    assert np.array_equal(to_array(ours(tensor)), values)
    assert np.array_equal(to_array(ours(tensor)), numpy_helper.to_array(tensor).astype(np.float32))
    scalar = numpy_helper.from_array(np.array(2.5, np.float64), "s")
    assert to_array(ours(scalar)).shape == ()


def test_a_type_polytrav_does_not_read_is_named():
    tensor = helper.make_tensor("s", TensorProto.STRING, [1], [b"x"])
    with pytest.raises(ValueError, match="STRING"):
        to_array(ours(tensor))
    assert numpy_type(TensorProto.INT64) == np.int64


def test_attributes_read_as_their_types_say():
    node = helper.make_node("Op", [], ["y"], f=1.5, i=3, s="text", ints=[1, 2], floats=[0.5],
                            t=numpy_helper.from_array(np.eye(2), "t"))
    message = message_class("NodeProto")()
    message.ParseFromString(node.SerializeToString())
    got = {a.name: attribute_value(a) for a in message.attribute}
    assert got["f"] == 1.5 and got["i"] == 3 and got["s"] == b"text"
    assert got["ints"] == [1, 2] and got["floats"] == [0.5]
    assert np.array_equal(got["t"], np.eye(2))


def model_file(path, weight):
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])],
        [numpy_helper.from_array(weight, "W")])
    return helper.make_model(graph)


def test_a_model_reads_and_writes_back_byte_for_byte(tmp_path):
    model = model_file(tmp_path, np.arange(4, dtype=np.float32).reshape(2, 2))
    model.doc_string = "kept"
    model.graph.node[0].doc_string = "also kept"
    onnx.save(model, tmp_path / "m.onnx")
    read = read_model(tmp_path / "m.onnx")
    assert read.SerializeToString() == model.SerializeToString()
    assert read.graph.input[0].type.tensor_type.shape.dim[1].dim_value == 2


def test_external_data_is_read_from_the_models_folder(tmp_path):
    weight = np.arange(400, dtype=np.float32).reshape(20, 20)
    model = model_file(tmp_path, weight)
    onnx.save(model, tmp_path / "m.onnx", save_as_external_data=True, location="m.data",
              size_threshold=0)
    assert (tmp_path / "m.data").exists()
    read = read_model(tmp_path / "m.onnx")
    assert np.array_equal(to_array(read.graph.initializer[0]), weight)
    kept = read_model(tmp_path / "m.onnx", external_data=False)  # the graph alone
    with pytest.raises(ValueError, match="external"):
        to_array(kept.graph.initializer[0])
    (tmp_path / "m.data").unlink()
    with pytest.raises(NetworkError, match="external data from 'm.data'.*beside the model"):
        read_model(tmp_path / "m.onnx")


def test_external_data_may_not_leave_the_models_folder(tmp_path):
    model = model_file(tmp_path, np.eye(2, dtype=np.float32))
    tensor = model.graph.initializer[0]
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    tensor.external_data.add(key="location", value="../elsewhere.bin")
    onnx.save(model, tmp_path / "m.onnx")
    with pytest.raises(NetworkError, match="not a file inside the model's folder"):
        read_model(tmp_path / "m.onnx")


@pytest.mark.parametrize("content, says", [
    (b"", "the file is empty"),
    (b"\xff\xfe\x00garbage\x01\x02", "truncated, corrupt, or not an ONNX model"),
    (b"(declare-const X_0 Real)\n", "looks like VNN-LIB"),
])
def test_a_file_that_is_not_onnx_is_one_line(tmp_path, content, says):
    (tmp_path / "bad.onnx").write_bytes(content)
    with pytest.raises(NetworkError, match=says) as info:
        read_model(tmp_path / "bad.onnx")
    assert "\n" not in str(info.value)


def test_reading_a_model_does_not_import_the_onnx_package(tmp_path):
    """The point of the module: polytrav's own reader, not ``onnx`` and its ml_dtypes."""
    import subprocess
    import sys

    onnx.save(model_file(tmp_path, np.eye(2, dtype=np.float32)), tmp_path / "m.onnx")
    code = ("import sys; from polytrav import Network; Network.from_onnx(sys.argv[1]); "
            "print(sorted(m for m in ('onnx', 'ml_dtypes') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "m.onnx")],
                         capture_output=True, text=True, timeout=600)
    assert out.stdout == "[]\n", out.stderr
