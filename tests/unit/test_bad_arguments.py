"""Bad arguments in Python: the library's own error (``ConfigError``, ``NetworkError``) with
the words the command line prints, never a silent empty answer or a ``TypeError``."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from polytrav import Box, Network, analyze, traverse
from polytrav.interface.export import check_writable
from polytrav.vocabulary.errors import ConfigError, NetworkError

NET = Network.from_arrays([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
BOX = Box([-1, -1], [1, 1])

BUDGETS = [
    ({"max_polytopes": 0}, "max_polytopes must be a whole number, at least 1"),
    ({"max_polytopes": True}, "max_polytopes must be a whole number, at least 1"),
    ({"max_polytopes": 2.5}, "max_polytopes must be a whole number, at least 1"),
    ({"max_polytopes": "3"}, "max_polytopes must be a whole number, at least 1"),
    ({"time_limit": "60"}, "time_limit must be a number greater than 0"),
    ({"time_limit": True}, "time_limit must be a number greater than 0"),
    ({"time_limit": float("nan")}, "time_limit must be a number greater than 0"),
    ({"time_limit": 0}, "time_limit must be a number greater than 0"),
]


@pytest.mark.parametrize("kwargs, words", BUDGETS, ids=[str(k) for k, _ in BUDGETS])
def test_budgets_are_refused_in_traverse_and_analyze(kwargs, words):
    with pytest.raises(ConfigError, match=f"traverse: {words}.*leave it out for no limit"):
        list(traverse(NET, BOX, **kwargs))
    with pytest.raises(ConfigError, match=f"analyze: {words}"):
        analyze(NET, BOX, "output_range", **kwargs)


def test_good_budgets_still_run():
    assert len(list(traverse(NET, BOX, max_polytopes=np.int64(2)))) == 2
    assert len(list(traverse(NET, BOX, max_polytopes=10, time_limit=np.float64(60)))) == 4


@pytest.mark.parametrize("analyses, words", [
    (42, "analyze: analyses must be an Analysis instance, a registered name .* or a list of "
         "these; got int 42"),
    ([42], "analyze: each analysis must be an Analysis instance, .*; got int 42"),
    ({"output_range"}, "analyses must be .*; got set"),
])
def test_analyses_of_the_wrong_kind_say_what_they_may_be(analyses, words):
    with pytest.raises(ConfigError, match=words):
        analyze(NET, BOX, analyses)


@pytest.fixture
def onnx_file(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    def save(name, kind=TensorProto.FLOAT, weight=1.0):
        W = np.array([[weight, -1.0]], dtype=np.float32)
        graph = helper.make_graph(
            [helper.make_node("Gemm", ["x", "W"], ["h"], transB=1),
             helper.make_node("Relu", ["h"], ["y"])], "tiny",
            [helper.make_tensor_value_info("x", kind, [1, 2])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1])],
            [numpy_helper.from_array(W, "W")])
        onnx.save(helper.make_model(graph), tmp_path / name)
        return tmp_path / name

    return save


def test_onnx_files_that_are_no_network(onnx_file, tmp_path):
    from onnx import TensorProto

    (tmp_path / "empty.onnx").write_bytes(b"")
    with pytest.raises(NetworkError, match=r"'empty.onnx': the file is empty \(0 bytes\)"):
        Network.from_onnx(tmp_path / "empty.onnx")
    with pytest.raises(NetworkError, match="input 'x' holds int64 numbers .*float32 or float64"):
        Network.from_onnx(onnx_file("int.onnx", kind=TensorProto.INT64))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's RuntimeWarning would fail here
        with pytest.raises(NetworkError, match=r"contains inf at index \(0, 0\)"):
            Network.from_onnx(onnx_file("inf.onnx", weight=np.inf))


def test_check_writable_names_the_path_and_why(tmp_path):
    check_writable(tmp_path / "new.csv", "export")
    assert not (tmp_path / "new.csv").exists()  # the probe leaves nothing behind
    (tmp_path / "old.csv").write_text("keep")
    check_writable(tmp_path / "old.csv", "export")
    assert (tmp_path / "old.csv").read_text() == "keep"
    with pytest.raises(ConfigError, match=r"export: no folder .*nowhere' to write 'a.csv' in"):
        check_writable(tmp_path / "nowhere" / "a.csv", "export")
    with pytest.raises(ConfigError, match="is a folder; give a file name in it"):
        check_writable(tmp_path, "export")
    if __import__("os").path.isdir("/proc/self"):  # Linux: a folder that takes no new files
        with pytest.raises(ConfigError, match="'/proc/x.csv' cannot be written .*takes no new"):
            check_writable("/proc/x.csv", "export")


def test_a_picture_of_a_flat_axis_is_refused_before_drawing(tmp_path):
    pytest.importorskip("matplotlib")
    from polytrav.interface.plot import save_partition

    with pytest.raises(ConfigError, match=r"input 0 has zero width in the region \(lower = "
                                          r"upper = 0.5\), so the picture would be empty"):
        save_partition(NET, Box([0.5, -1], [0.5, 1]), tmp_path / "flat.png")
    assert not (tmp_path / "flat.png").exists()


@pytest.mark.parametrize("timeout", ["5", True, 0, [5]])
def test_verify_refuses_a_timeout_that_is_not_positive_seconds(timeout, tmp_path):
    from reference import TINY_NNET

    from polytrav.verification.verify import verify

    (tmp_path / "tiny.nnet").write_text(TINY_NNET)
    (tmp_path / "p.vnnlib").write_text(
        "(declare-const X_0 Real)\n(declare-const X_1 Real)\n(declare-const Y_0 Real)\n"
        "(assert (>= X_0 -1))\n(assert (<= X_0 1))\n(assert (>= X_1 -1))\n"
        "(assert (<= X_1 1))\n(assert (>= Y_0 1000))\n")
    with pytest.raises(ConfigError, match="verify: timeout must be a number greater than 0"):
        verify(tmp_path / "tiny.nnet", tmp_path / "p.vnnlib", timeout=timeout)


def test_a_start_outside_the_region_says_what_to_do():
    from polytrav.vocabulary.errors import RegionError

    with pytest.raises(RegionError, match="outside the region: .*; give a point inside it, or "
                                          "leave start out"):
        list(traverse(NET, BOX, start=[5, 5]))
