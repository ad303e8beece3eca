"""``--strategy`` on every command that enumerates polytopes (``regions``, ``analyze``,
``attack``, ``counterfactual``, ``monotonicity``, ``verify``): the LP traversal and
subdivision give the same answers, and each run says (in its counts) which one worked."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from ctrl_c import console_script, save_mlp_onnx
from reference import random_net

from polytrav import Network

STRATEGIES = ("hierarchical", "subdivision")


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """A 3-8-8-2 net, "Y_0 >= level" above its sampled maximum on [-1, 1]^3 (unsat), as
    VNN-LIB 1.0 and as a 2.0 query over a named network."""
    folder = tmp_path_factory.mktemp("strategy")
    net = random_net(61, 3, [8, 8], n_out=2)
    save_mlp_onnx(net.weights, net.biases, folder / "net.onnx")
    y = Network.from_onnx(folder / "net.onnx").forward(
        np.random.default_rng(0).uniform(-1, 1, (20000, 3)))[:, 0]
    level = y.max() + 0.05 * (y.max() - y.min())
    lines = [f"(declare-const X_{i} Real)" for i in range(3)]
    lines += [f"(declare-const Y_{j} Real)" for j in range(2)]
    lines += [f"(assert (>= X_{i} -1))\n(assert (<= X_{i} 1))" for i in range(3)]
    (folder / "prop.vnnlib").write_text("\n".join(lines + [f"(assert (>= Y_0 {level:.6f}))"])
                                        + "\n")
    (folder / "query.vnnlib").write_text(
        "(vnnlib-version <2.0>)\n(declare-network N (declare-input X float32 [1, 3]) "
        "(declare-output Y float32 [1, 2]))\n"
        + "".join(f"(assert (>= X[0,{i}] -1.0)) (assert (<= X[0,{i}] 1.0))\n" for i in range(3))
        + f"(assert (>= Y[0,0] {level:.6f}))\n")
    return folder


def polytrav(folder, *args):
    return subprocess.run([console_script("polytrav"), *args], cwd=folder, capture_output=True,
                          text=True, timeout=600)


BOX = ["--lower", "-1", "--upper", "1"]


@pytest.mark.parametrize("command", [
    ["attack", "net.onnx", *BOX, "--output", "1"],
    ["analyze", "net.onnx", *BOX, "--analysis", "output_range"],
    ["counterfactual", "net.onnx", *BOX, "--x0", "0.1,-0.2,0.3", "--norm", "inf"],
    ["monotonicity", "net.onnx", *BOX, "--feature", "2"],
])
def test_an_analysis_gives_the_same_answer_by_either_strategy(folder, command):
    runs = {s: polytrav(folder, *command, "--strategy", s, "--json") for s in STRATEGIES}
    for s, out in runs.items():
        assert out.returncode in (0, 1), (s, out.stderr)
    reports = {s: json.loads(out.stdout) for s, out in runs.items()}
    assert reports["hierarchical"]["stats"]["lps"] > 0  # the LP traversal ran
    assert reports["subdivision"]["stats"]["cuts"] > 0  # subdivision ran
    assert reports["hierarchical"]["stats"]["cuts"] == 0
    values = [r["results"][0]["value"] for r in reports.values()]
    if isinstance(values[0], dict) and "min" in values[0]:
        assert values[0]["min"] == pytest.approx(values[1]["min"], abs=1e-9)
        assert values[0]["max"] == pytest.approx(values[1]["max"], abs=1e-9)
    elif isinstance(values[0], float):  # the counterfactual's distance
        assert values[0] == pytest.approx(values[1], abs=1e-7)
    assert [r["results"][0]["verdict"] for r in reports.values()] == [
        reports["hierarchical"]["results"][0]["verdict"]] * 2


def test_verify_traverses_by_the_strategy_given(folder):
    runs = {s: polytrav(folder, "verify", "net.onnx", "prop.vnnlib", "--no-split", "--no-bounds",
                        "--no-bab", "--strategy", s, "--json") for s in STRATEGIES}
    answers = {s: json.loads(out.stdout) for s, out in runs.items()}
    for s, out in runs.items():
        assert out.returncode == 0 and answers[s]["answer"] == "unsat", (s, out.stderr)
    assert answers["hierarchical"]["lps"] > 0
    assert answers["subdivision"]["polytopes"] == answers["hierarchical"]["polytopes"] > 0


def test_a_query_over_named_networks_refuses_a_strategy_in_one_line(folder):
    out = polytrav(folder, "verify", "query.vnnlib", "--network", "N=net.onnx",
                   "--strategy", "subdivision")
    assert out.returncode == 4
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "--strategy" in lines[0] and "drop --strategy" in lines[0]
