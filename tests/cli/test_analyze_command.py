"""``polytrav analyze --analysis NAME KEY=VALUE...`` reaches every registered analysis, and
``--solver FORM=NAME`` reaches every backend chain; each report says which backend answered."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from reference import TINY_NNET

from polytrav import Box, Network, analyze
from polytrav.extend import SolverBackend, Status, solve_along
from polytrav.solve.backend import SolveTally, counting

BOX = ["--lower", "-1", "--upper", "1"]


def polytrav(*args, env=None):
    env = {**os.environ, "POLYTRAV_DEBUG": "0", **(env or {})}
    return subprocess.run([sys.executable, "-c", "from polytrav.interface.cli import main; main()",
                           *args], capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture(scope="module")
def nnet(tmp_path_factory):
    path = tmp_path_factory.mktemp("analyze") / "tiny.nnet"
    path.write_text(TINY_NNET)
    return str(path)


def test_a_built_in_analysis_by_name_answers_as_analyze(nnet):
    out = polytrav("analyze", nnet, *BOX, "--analysis", "output_range", "--json")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)["results"][0]["value"]
    want = analyze(Network.from_nnet(nnet), Box([-1, -1], [1, 1]), "output_range")[0].value
    assert got["min"] == pytest.approx(want["min"]) and got["max"] == pytest.approx(want["max"])


def test_parameters_are_toml_values_or_bare_lists(nnet):
    a = polytrav("analyze", nnet, *BOX, "--analysis", "counterfactual", "x0=0.1,0.2", "norm=1",
                 "--json")
    b = polytrav("analyze", nnet, *BOX, "--analysis", "counterfactual", "x0=[0.1, 0.2]",
                 "norm=1", "--json")
    assert a.returncode == b.returncode == 0, a.stderr + b.stderr
    assert json.loads(a.stdout)["results"][0]["value"] == json.loads(b.stdout)["results"][0]["value"]


def test_a_third_party_analysis_is_reached_by_name(nnet, example_plugin):
    out = polytrav("analyze", nnet, *BOX, "--analysis", "output_bounds", "lower=-100",
                   "upper=100", env={"POLYTRAV_DISABLE_PLUGIN_AUTOLOAD": "0"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("output_bounds: HOLDS")


def test_solver_forms_reach_their_chains_and_the_report_names_them(nnet):
    out = polytrav("analyze", nnet, *BOX, "--analysis", "counterfactual", "x0=0.1,0.2",
                   "norm=1", "--solver", "lp=scipy,qp=osqp", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["solver"]["lp"][0] == "scipy" and report["solver"]["qp"][0] == "osqp"
    assert set(report["stats"]["solves"]) <= set(report["solver"]["lp"]) | {"highs"}


class Failing(SolverBackend):
    name = "failing"
    forms = frozenset({"lp"})

    def solve_lp(self, *args, **kwargs):
        raise RuntimeError("fails on purpose")


def test_the_tally_counts_answers_and_tries_that_fell_through():
    from polytrav.host.manager import get_solver

    highs = get_solver("highs")
    tally = SolveTally()
    with counting(tally):
        for _ in range(3):
            res, tried = solve_along([Failing(), highs],
                                     lambda b: b.solve_lp([1.0], [[-1.0]], [0.0]))
            assert res.status is Status.OPTIMAL and tried == 2
    rows = tally.to_dict()
    assert rows["failing"]["answered"] == 0 and rows["failing"]["fell_through"] == 3
    assert rows["highs"]["answered"] == 3 and rows["highs"]["fell_through"] == 0
    solve_along([highs], lambda b: b.solve_lp([1.0], [[-1.0]], [0.0]))  # not counting: no row
    assert tally.to_dict()["highs"]["answered"] == 3


def test_a_run_reports_its_solves_per_backend_in_parts_too():
    from polytrav.parallel import SerialExecutor

    net = Network.from_arrays([np.array([[1.0, -1.0], [0.5, 1.0]]), np.array([[1.0, -1.0]])],
                              [np.array([0.0, 0.1]), np.array([0.0])])
    spec = {"name": "counterfactual", "x0": [0.2, 0.7], "norm": 1}
    serial = analyze(net, Box([-1, -1], [1, 1]), spec, strategy="hierarchical")
    parted = analyze(net, Box([-1, -1], [1, 1]), spec, strategy="hierarchical",
                     executor=SerialExecutor(), parts=2)
    for report in (serial, parted):
        solves = report.stats["solves"]
        assert sum(r["answered"] for r in solves.values()) >= 1
        assert "solved by:" in str(report)


def test_verify_of_a_query_takes_the_solver_too(tmp_path):
    """``polytrav verify QUERY --network NAME=FILE --solver ...`` reaches the backends: an
    unknown backend there is bad input (exit 4), a known one answers."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(a.astype(np.float32), n) for n, a in
             (("W1", rng.normal(size=(4, 2))), ("b1", np.zeros(4)),
              ("W2", rng.normal(size=(1, 4))), ("b2", np.zeros(1)))]
    nodes = [helper.make_node("Gemm", ["input", "W1", "b1"], ["h"], transB=1),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "W2", "b2"], ["output"], transB=1)]
    graph = helper.make_graph(nodes, "net", [helper.make_tensor_value_info(
        "input", TensorProto.FLOAT, [1, 2])], [helper.make_tensor_value_info(
            "output", TensorProto.FLOAT, [1, 1])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    nnet = str(tmp_path / "net.onnx")
    onnx.save(model, nnet)
    query = tmp_path / "q.vnnlib"
    query.write_text("(vnnlib-version <2.0>)\n(declare-network N (declare-input X real [2]) "
                     "(declare-output Y real [1]))\n"
                     "(assert (and (>= X[0] -1.0) (<= X[0] 1.0) (>= X[1] -1.0) (<= X[1] 1.0)))\n"
                     "(assert (>= Y[0] 1000.0))\n")
    ok = polytrav("verify", str(query), "--network", f"N={nnet}", "--solver", "lp=scipy")
    assert ok.returncode == 0 and ok.stdout.startswith("unsat"), ok.stdout + ok.stderr
    bad = polytrav("verify", str(query), "--network", f"N={nnet}", "--solver", "lp=nosuch")
    assert bad.returncode == 4 and "unknown solver 'nosuch'" in bad.stderr, bad.stderr
