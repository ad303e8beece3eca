"""Ctrl-C and exit codes, through the command line in a subprocess as a user meets them.

Ctrl-C (SIGINT) during any command prints the part done so far, marked partial, and exits 2;
a confirmed answer is never called partial; a confirmed violation exits 1.
"""
from __future__ import annotations

import signal
import subprocess
import sys
import time

import numpy as np
import pytest

#: Seconds the command runs before it gets SIGINT (start-up is well under one second).
RUN_BEFORE_CTRL_C = 3.0


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """A 4-input net with three ReLU layers of 40: far more polytopes in [-1, 1]^4 than a
    test waits for, so every command is still running when Ctrl-C comes."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    sizes = [4, 40, 40, 40, 3]
    nodes, inits, prev = [], [], "input"
    for k, (m, n) in enumerate(zip(sizes[:-1], sizes[1:])):
        b = rng.normal(size=n)
        if n == 3:
            b[2] = -1e4  # class 2 never wins: a counterfactual towards it visits everything
        inits += [numpy_helper.from_array(rng.normal(size=(n, m)).astype(np.float32), f"W{k}"),
                  numpy_helper.from_array(b.astype(np.float32), f"b{k}")]
        last = k == len(sizes) - 2
        nodes.append(helper.make_node("Gemm", [prev, f"W{k}", f"b{k}"],
                                      ["output" if last else f"h{k}"], transB=1))
        if not last:
            nodes.append(helper.make_node("Relu", [f"h{k}"], [f"r{k}"]))
            prev = f"r{k}"
    graph = helper.make_graph(
        nodes, "big", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 3])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    root = tmp_path_factory.mktemp("interrupt")
    onnx.save(model, str(root / "big.onnx"))
    lines = ["(declare-const X_%d Real)" % i for i in range(4)]
    lines += ["(declare-const Y_%d Real)" % j for j in range(3)]
    lines += [f"(assert (>= X_{i} -1))\n(assert (<= X_{i} 1))" for i in range(4)]
    lines += ["(assert (>= Y_0 1000000))"]  # unreachable: only a full traversal says unsat
    (root / "far.vnnlib").write_text("\n".join(lines) + "\n")
    (root / "job.toml").write_text('network = "big.onnx"\n[region]\nkind = "box"\nlower = -1\n'
                                   'upper = 1\n[[analysis]]\nname = "output_range"\n')
    return root


def interrupted(args, cwd):
    proc = subprocess.Popen([sys.executable, "-c", "from polytrav.interface.cli import main; main()", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd)
    time.sleep(RUN_BEFORE_CTRL_C)
    assert proc.poll() is None, "the command ended before Ctrl-C: make the problem bigger"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


BOX = ["--lower", "-1", "--upper", "1"]
COMMANDS = {
    "regions": (["regions", "big.onnx", *BOX], "PARTIAL: interrupted"),
    "attack": (["attack", "big.onnx", *BOX, "--output", "0"], "PARTIAL REPORT (interrupted)"),
    "counterfactual": (["counterfactual", "big.onnx", *BOX, "--x0", "0,0,0,0", "--target", "2"],
                       "PARTIAL REPORT (interrupted)"),
    "monotonicity": (["monotonicity", "big.onnx", *BOX, "--feature", "0", "--direction",
                      "increasing", "--output", "2"], ""),
    "run": (["run", "job.toml"], "PARTIAL REPORT (interrupted)"),
    "verify": (["verify", "big.onnx", "far.vnnlib", "--no-bounds"], "interrupted"),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_ctrl_c_prints_a_partial_answer_and_exits_2(big, command):
    args, marker = COMMANDS[command]
    code, out, err = interrupted(args, big)
    assert "Traceback" not in err, err
    if command == "monotonicity" and code == 1:  # a violation confirmed before Ctrl-C is final
        assert "VIOLATED (witness confirmed" in out
        return
    assert code == 2, (out, err)
    assert marker in out, out


def test_stop_at_first_with_a_confirmed_violation_exits_1_and_is_not_partial(big):
    res = subprocess.run([sys.executable, "-c", "from polytrav.interface.cli import main; main()",
                          "attack", "big.onnx", *BOX, "--label", "0", "--stop-at-first"],
                         capture_output=True, text=True, cwd=big, timeout=120)
    assert res.returncode == 1, (res.stdout, res.stderr)
    assert "PARTIAL" not in res.stdout and "VIOLATED (witness confirmed" in res.stdout
    assert "stopped early: every analysis was decided" in res.stdout
