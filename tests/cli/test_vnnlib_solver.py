"""``polytrav-vnnlib``: chapter 5 of VNN-LIB 2.0, byte for byte (stdout), with the error
conditions of §5.3.2 (stderr only, exit 1) and the reference solver's capability formats."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import DATA_DIR

from polytrav.interface.cli.vnnlib_solver import main
from polytrav.model.loaders.onnx import SUPPORTED_OPS

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

ACAS = DATA_DIR / "acasxu" / "onnx" / "ACASXU_run2a_1_1_batch_2000.onnx"


def run(capsysbinary, *argv):
    with pytest.raises(SystemExit) as exit_:
        main(list(argv))
    out, err = capsysbinary.readouterr()
    return exit_.value.code, out.decode(), err.decode()


@pytest.fixture
def model(tmp_path):
    """``y = relu(x) - 0.5`` on two inputs (float32)."""
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Sub", ["r", "c"], ["y"])],
        "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])],
        [numpy_helper.from_array(np.array([0.5, 0.5], np.float32), "c")])
    path = tmp_path / "m.onnx"
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return path


def query(tmp_path, body, name="q.vnnlib", t="float32"):
    path = tmp_path / name
    path.write_text("(vnnlib-version <2.0>)\n(declare-network N (declare-input X " + t
                    + " [1, 2]) (declare-output Y " + t + " [1, 2]))\n"
                    "(assert (>= X[0,0] -1.0)) (assert (<= X[0,0] 1.0))\n"
                    "(assert (== X[0,1] 0.1))\n" + body)
    return path


@pytest.mark.parametrize("flag,lines", [
    ("--onnx-opset-versions", ["8", "21"]),
    ("--onnx-element-types", ["real", "float32"]),
    ("--vnnlib-versions", ["1.0", "2.0"]),
    ("--hidden-node-theories", ["NH", "H"]),
    ("--multiple-input-output-theories", ["SIO", "MIO"]),
    ("--multiple-inputs-output-theories", ["SIO", "MIO"]),  # the standard's example spelling
    ("--multiple-network-theories", ["SNET", "MNET", "MENET", "MINET"]),
    ("--multiple-node-comparison-theories", ["SNC", "MNC"]),
    ("--arithmetic-complexity-theories", ["BND", "OUTC", "LIN"]),
    ("--optimised-disjunctive-reasoning", ["false"]),
    ("--serialise-assignments", ["false"]),
])
def test_supports_prints_one_item_per_line(capsysbinary, flag, lines):
    assert run(capsysbinary, "supports", flag) == (0, "".join(x + "\n" for x in lines), "")
    assert run(capsysbinary, "capabilities", flag)[1] == "".join(x + "\n" for x in lines)


def test_supported_operators_are_the_loaders_cast_with_its_type(capsysbinary):
    code, out, _ = run(capsysbinary, "supports", "--onnx-operators")
    lines = out.splitlines()
    assert code == 0 and out.endswith("\n") and "Cast float32" in lines
    assert sorted(x.split()[0] for x in lines) == sorted(SUPPORTED_OPS)


@pytest.mark.parametrize("argv,message", [
    (["supports"], "supports needs exactly one capability"),
    (["supports", "--onnx-operators", "--vnnlib-versions"], "exactly one capability"),
    (["supports", "--onnx-e"], "No such option"),  # no abbreviations
    ([], "give --name, --version, or a command"),
])
def test_bad_supports_calls_exit_1_with_nothing_on_stdout(capsysbinary, argv, message):
    code, out, err = run(capsysbinary, *argv)
    assert (code, out) == (1, "") and message in err and err.startswith("polytrav-vnnlib: ")


def test_name_and_version(capsysbinary):
    assert run(capsysbinary, "--name") == (0, "polytrav\n", "")
    code, out, _ = run(capsysbinary, "--version")
    assert code == 0 and out.count("\n") == 1 and out[0].isdigit()


@pytest.mark.parametrize("argv", [["-h"], ["--help"], ["verify", "-h"], ["supports", "-h"]])
def test_help_with_h_or_help(capsysbinary, argv):
    code, out, err = run(capsysbinary, *argv)
    assert (code, err) == (0, "") and out.startswith("Usage: polytrav-vnnlib"), (out, err)
    assert ("verify" in out and "supports" in out) if len(argv) == 1 else argv[0] in out


def test_sat_prints_the_assignment_of_5_3_1(capsysbinary, tmp_path, model):
    q = query(tmp_path, "(assert (>= Y[0,0] 0.25))")
    # a float, as the suite sends it; counted from process start (this test process's)
    code, out, err = run(capsysbinary, "verify", str(q), "--network", f"N={model}",
                         "--timeout", "3600.0")
    lines = out.splitlines()
    assert code == 0 and lines[0] == "sat" and out.endswith("\n") and "\r" not in out
    assert lines[1] == "X float32 [1,2]" and lines[4] == "Y float32 [1,2]" and len(lines) == 7
    x0, x1, y0, y1 = (float(v) for v in lines[2:4] + lines[5:7])
    assert lines[3] == "0.1"  # the constant the query fixes, exactly as written
    assert 0.75 <= x0 <= 1.0 and y0 >= 0.25  # relu(x0) - 0.5 >= 0.25
    assert np.float32(y0) == np.float32(max(np.float32(x0), 0) - np.float32(0.5))


def test_unsat_and_the_first_line_only(capsysbinary, tmp_path, model):
    q = query(tmp_path, "(assert (>= Y[0,0] 0.75))")
    assert run(capsysbinary, "verify", str(q), "--network", f"N={model}")[:2] == (0, "unsat\n")


def test_a_timeout_already_spent_answers_timed_out(capsysbinary, tmp_path, model):
    q = query(tmp_path, "(assert (>= Y[0,0] 0.25))")
    assert run(capsysbinary, "verify", str(q), "--network", f"N={model}", "--timeout", "0")[:2] \
        == (0, "timed-out\n")


@pytest.mark.parametrize("args,message", [
    (["--network", "N"], "--network takes <name>=<filepath>; 'N' is not"),
    (["--network", "N={m}", "--network", "N={m}"], "--network maps 'N' more than once"),
    (["--network", "M={m}"], "--network maps 'M', which q.vnnlib does not declare"),
    ([], "no model file was supplied for network 'N'"),
    (["--network", "N={m}", "--timeout", "-1"], "--timeout must be zero or more seconds"),
    (["--network", "N={m}", "--timeout", "soon"], "'soon' is not a valid float"),
    (["--network", "N={m}", "--serialise-assignments", "out"], "not supported"),
    (["--network", "N=missing.onnx"], "the model file does not exist"),
])
def test_errors_go_to_stderr_with_exit_1(capsysbinary, tmp_path, model, args, message):
    q = query(tmp_path, "(assert (>= Y[0,0] 0.25))")
    code, out, err = run(capsysbinary, "verify", str(q), *[a.format(m=model) for a in args])
    assert (code, out) == (1, "") and message in err, err


def test_query_and_model_errors(capsysbinary, tmp_path, model):
    code, out, err = run(capsysbinary, "verify", str(tmp_path / "nope.vnnlib"), "--network",
                         f"N={model}")
    assert (code, out) == (1, "") and "query file does not exist" in err
    bad = tmp_path / "bad.vnnlib"
    bad.write_text("(vnnlib-version <2.0>)\n(declare-network N garbage)\n")
    code, out, err = run(capsysbinary, "verify", str(bad), "--network", f"N={model}")
    assert (code, out) == (1, "") and "bad.vnnlib:2:" in err
    q = query(tmp_path, "(assert (>= Y[0,0] 0.25))", t="float64")  # §5.3.2 (2): types differ
    code, out, err = run(capsysbinary, "verify", str(q), "--network", f"N={model}")
    assert (code, out) == (1, "") and "declared float64 but m.onnx's input 'x' is float32" in err


def test_a_type_polytrav_does_not_claim_is_refused_5_3_2_3(capsysbinary, tmp_path):
    """A float64 model declared float64: types match, but polytrav claims float32 only."""
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "d",
                              [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [1, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [1, 2])])
    path = tmp_path / "d.onnx"
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 8
    onnx.save(m, str(path))
    q = query(tmp_path, "(assert (>= Y[0,0] 0.25))", t="float64")
    code, out, err = run(capsysbinary, "verify", str(q), "--network", f"N={path}")
    assert (code, out) == (1, "") and "as float64, which polytrav does not claim" in err
    assert "Rewrite the query to use real throughout" in err
    real = query(tmp_path, "(assert (>= Y[0,0] 0.25))", name="r.vnnlib", t="real")
    assert run(capsysbinary, "verify", str(real), "--network", f"N={path}")[1].startswith("sat\n")


@pytest.mark.integration
def test_acas_monotonicity_query_through_the_console_script(tmp_path):
    """The issue's query, end to end in a new process: sat, and the assignment is a real
    violation (onnxruntime in float32, re-run here)."""
    if not ACAS.exists():
        pytest.skip(f"ACAS Xu data not found at {ACAS} (../shared/data next to the repo)")
    exe = shutil.which("polytrav-vnnlib")
    if exe is None:
        pytest.skip("the console script is not installed (pip install -e . installs it)")
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "vnnlib_monotonicity", Path(__file__).resolve().parents[2] / "benchmarks"
        / "vnnlib_monotonicity.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)  # the benchmark's query: one text for both
    q = tmp_path / "mono.vnnlib"
    q.write_text(bench.query_text(general=False))
    res = subprocess.run([exe, "verify", str(q), "--network", f"f={ACAS}", "--timeout", "600"],  # guards: the
                         capture_output=True, text=True, timeout=900)  # answer takes ~1 s
    assert res.returncode == 0 and res.stdout.startswith("sat\n"), res.stderr
    # the printed inputs meet the relations; onnxruntime's float32 outputs there are the
    # printed ones and meet Y_f[3] < Y_g[3] strictly
    assert bench.checked(res.stdout, ACAS)


def test_polytrav_verify_reads_two_network_queries_the_same_way(tmp_path, model):
    """``polytrav verify QUERY --network N=FILE`` (and ``NETWORK PROP``) share decide()."""
    from click.testing import CliRunner

    from polytrav.interface.cli import main as polytrav

    q = tmp_path / "two.vnnlib"
    q.write_text("(vnnlib-version <2.0>)\n(declare-network N (declare-input X real [1, 2]) "
                 "(declare-output Y real [1, 2]))\n(declare-network M (equal-to N) "
                 "(declare-input X2 real [1, 2]) (declare-output Y2 real [1, 2]))\n"
                 "(assert (>= X[0,0] -1.0)) (assert (<= X[0,0] 1.0)) (assert (== X[0,1] 0.0))"
                 "(assert (>= X2[0,0] -1.0)) (assert (<= X2[0,0] 1.0)) (assert (== X2[0,1] 0.0))"
                 "(assert (>= (- Y[0,0] Y2[0,0]) 0.75))\n")
    res = CliRunner().invoke(polytrav, ["verify", str(q), "--network", f"N={model}"])
    assert res.exit_code == 1 and res.output.startswith("sat\nX real [1,2]\n"), res.output
    same = CliRunner().invoke(polytrav, ["verify", str(model), str(q)])
    assert same.exit_code == 1 and same.output.startswith("sat\n")
    q.write_text(q.read_text().replace("0.75", "1.25"))  # relu(x) - relu(x') <= 1 on [-1, 1]
    res = CliRunner().invoke(polytrav, ["verify", str(q), "--network", f"N={model}"])
    assert res.exit_code == 0 and res.output.startswith("unsat\n"), res.output


@pytest.mark.parametrize("route", ["diff", "stack"])
def test_a_two_network_epsilon_query_prints_every_variable(capsysbinary, tmp_path, model, route):
    """``g = f + 0.1`` (``relu(x) - 0.4``): ``|Y_g - Y_f| > 0.05`` is sat by either route,
    with the §5.3.1 assignment of X_f, Y_f, X_g, Y_g; ``> 0.15`` is unsat."""
    g = tmp_path / "g.onnx"
    m = onnx.load(str(model))
    m.graph.initializer[0].CopyFrom(numpy_helper.from_array(np.array([0.4, 0.4], np.float32),
                                                            "c"))
    onnx.save(m, str(g))
    text = ("(vnnlib-version <2.0>)\n"
            "(declare-network f (declare-input X_f float32 [1, 2]) "
            "(declare-output Y_f float32 [1, 2]))\n"
            "(declare-network g (isomorphic-to f) (declare-input X_g float32 [1, 2]) "
            "(declare-output Y_g float32 [1, 2]))\n"
            "(assert (>= X_f[0,0] -1.0)) (assert (<= X_f[0,0] 1.0))\n"
            "(assert (>= X_f[0,1] -1.0)) (assert (<= X_f[0,1] 1.0))\n"
            "(assert (== X_g[0,0] X_f[0,0])) (assert (== X_g[0,1] X_f[0,1]))\n"
            "(assert (or (> (- Y_g[0,1] Y_f[0,1]) EPS) (< (- Y_g[0,1] Y_f[0,1]) -EPS)))\n")
    q = tmp_path / "eps.vnnlib"
    q.write_text(text.replace("EPS", "0.05"))
    code, out, _ = run(capsysbinary, "verify", str(q), "--network", f"f={model}",
                       "--network", f"g={g}", "--route", route)
    lines = out.splitlines()
    assert code == 0 and lines[0] == "sat"
    assert [lines[k] for k in (1, 4, 7, 10)] == [
        "X_f float32 [1,2]", "Y_f float32 [1,2]", "X_g float32 [1,2]", "Y_g float32 [1,2]"]
    assert lines[2:4] == lines[8:10]  # the inputs tied equal
    assert abs(float(lines[12]) - float(lines[6])) > 0.05
    q.write_text(text.replace("EPS", "0.15"))
    assert run(capsysbinary, "verify", str(q), "--network", f"f={model}", "--network",
               f"g={g}", "--route", route)[:2] == (0, "unsat\n")
