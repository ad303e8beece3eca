"""One decision rule (issue 63): a class is where its score is strictly the largest, a tie is
no class. Counterfactuals reach only inputs another class wins; checked against dense
sampling of the decision on nets whose scores tie on whole polytopes."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from polytrav import Ball, Box, Network, analyze
from polytrav.extend import ConfigError, decisions

#: score relu(x): class 1 for x > 0, a tie (no class) for x <= 0
RELU = Network.from_arrays([[[1.0]], [[1.0]]], [[0.0], [0.0]])
#: score relu(x) - relu(-x - 0.5): class 1 for x > 0, a tie on [-0.5, 0], class 0 below -0.5
GAP = Network.from_arrays([[[1.0], [-1.0]], [[1.0, -1.0]]], [[0.0, -0.5], [0.0]])
#: the same score with a second input z that it ignores
GAP_2D = Network.from_arrays([[[1.0, 0.0], [-1.0, 0.0]], [[1.0, -1.0]]], [[0.0, -0.5], [0.0]])

NORMS = [1, 2, "inf"]


def nearest_by_sampling(net, x0, lo, hi, n=200_001):
    """The nearest sampled input (1-D grid) whose decision is another class than x0's."""
    X = np.linspace(lo, hi, n)[:, None]
    k = decisions(net.forward(X))
    k0 = decisions(net.forward(np.atleast_2d(x0)))[0]
    other = (k != k0) & (k >= 0)
    return np.abs(X[other, 0] - x0[0]).min() if other.any() else None


def test_the_rule_is_one_function_for_every_reader():
    Y = np.array([[0.0], [1e-300], [-2.0]])
    assert decisions(Y).tolist() == [-1, 1, 0]
    assert decisions(np.array([[1.0, 1.0, 0.0], [0.0, 2.0, 1.0]])).tolist() == [-1, 1]
    net = Network.from_arrays([[[1.0]]], [[0.0]], classes=["no", "yes"], link="sigmoid")
    assert net.class_index([0.0]) == -1 and net.class_label(-1) is None
    assert net.predict([[-1.0], [0.0], [1.0]]).tolist() == ["no", None, "yes"]


@pytest.mark.parametrize("search", ["best-first", "shrink", "full"])
@pytest.mark.parametrize("norm", NORMS)
def test_a_score_that_only_ties_has_no_counterfactual(norm, search):
    res = analyze(RELU, Box([-1], [1]), {"name": "counterfactual", "x0": [0.5], "norm": norm,
                                         "search": search})[0]
    assert res.value is None and res.witness is None and res.exact
    assert res.details["note"].startswith("no input of another class exists in the region")
    assert res.details["ties"] >= 1
    assert nearest_by_sampling(RELU, np.array([0.5]), -1.0, 1.0) is None


@pytest.mark.parametrize("milp_after", [None, 0])
@pytest.mark.parametrize("norm", NORMS)
def test_a_tie_nearer_than_the_other_class_is_passed_over(norm, milp_after):
    x0 = np.array([0.8])
    res = analyze(GAP, Box([-1], [1]), {"name": "counterfactual", "x0": x0, "norm": norm,
                                        "milp_after": milp_after})[0]
    want = nearest_by_sampling(GAP, x0, -1.0, 1.0)
    assert res.exact and res.value == pytest.approx(1.3, abs=1e-7)
    assert want == pytest.approx(1.3, abs=2e-5)  # the grid's step is 1e-5
    assert decisions(GAP.forward(res.witness[None]))[0] == 0


@pytest.mark.parametrize("region", [Box([-1, -1], [1, 1]), Ball([0.0, 0.0], 1.0, norm=np.inf)],
                         ids=["box", "ball"])
def test_held_inputs_and_balls_check_the_class_the_same_way(region):
    # z immutable (held by an equality the cell LP in arrays cannot state) or a ball region:
    # the check falls back to the step subproblem
    res = analyze(GAP_2D, region, {"name": "counterfactual", "x0": [0.8, 0.3], "norm": 2,
                                   "immutable": [1]})[0]
    assert res.exact and res.value == pytest.approx(1.3, abs=1e-6)


def test_several_scores_that_only_tie_have_no_counterfactual():
    # y0 = relu(x), y1 = 0: class 0 for x > 0, a tie for x <= 0, class 1 nowhere
    net = Network.from_arrays([[[1.0]], [[1.0], [0.0]]], [[0.0], [0.0, 0.0]])
    res = analyze(net, Box([-1], [1]), {"name": "counterfactual", "x0": [0.5], "norm": 1})[0]
    assert res.value is None and res.exact
    assert "no input of another class exists" in res.details["note"]


def test_x0_on_a_tie_is_refused_in_one_line():
    with pytest.raises(ConfigError, match=r"x0 lies on the decision boundary .* no class"):
        analyze(RELU, Box([-1], [1]), {"name": "counterfactual", "x0": [-0.5], "norm": 2})


def test_the_cli_says_no_input_of_another_class_exists(tmp_path):
    nnet = tmp_path / "relu.nnet"
    nnet.write_text("// relu(x)\n2,1,1,1,\n1,1,1,\n0,\n-1.0,\n1.0,\n0.0,0.0,\n1.0,1.0,\n"
                    "1.0,\n0.0,\n1.0,\n0.0,\n")
    out = subprocess.run([sys.executable, "-c", "from polytrav.interface.cli import main; main()",
                          "analyze", str(nnet), "--lower", "-1", "--upper", "1", "--analysis",
                          "counterfactual", "x0=0.5", "norm=2"],
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "POLYTRAV_DEBUG": "0"})
    assert out.returncode == 0, out.stderr
    assert "no input of another class exists in the region (proven)" in out.stdout
    assert "0.5" not in out.stdout.split("counterfactual:")[1].splitlines()[0]
