"""The analyses' optima against a MILP (polytrav.testing.milp) on nets too deep to enumerate.

Output range, softmax margins, L1/L∞ counterfactuals (with targets and immutable features)
and linear properties on random 3-4 input nets with up to three hidden layers and on the real
MNIST network: agreement to 1e-6.
"""
import numpy as np
import pytest
from budgets import DECIDE  # a guard: these searches must decide, however busy the machine
from polytrav.testing.milp import milp_counterfactual, milp_linear_dnf_feasible, milp_max_linear, milp_max_margin
from reference import random_net

from polytrav import Ball, Box, Intersection, Network, Verdict, analyze
from polytrav.plugins.adversarial import SoftmaxAttack
from polytrav.plugins.counterfactual import Counterfactual
from polytrav.plugins.linear_property import LinearProperty
from polytrav.plugins.output_range import OutputRange

TOL = 1e-6
NETS = [(11, 3, [8, 8], 1), (12, 3, [6, 6, 6], 3), (13, 4, [10, 6], 4), (14, 2, [12, 10, 8], 2)]


@pytest.fixture(scope="module", params=NETS, ids=lambda p: f"seed{p[0]}-in{p[1]}-{p[2]}-out{p[3]}")
def case(request):
    seed, n_in, widths, n_out = request.param
    net = random_net(seed, n_in, widths, n_out=n_out)
    lo, hi = -np.ones(n_in), np.ones(n_in)
    lo[0] = -0.5  # not centred at 0
    return net, lo, hi


def test_output_range_equals_the_milp(case):
    net, lo, hi = case
    g = np.random.default_rng(1).standard_normal(net.n_outputs)
    result = analyze(net, Box(lo, hi), OutputRange(weights=g))[0]
    assert result.exact
    assert result.value["max"] == pytest.approx(milp_max_linear(net, g, lo, hi).value, abs=TOL)
    assert result.value["min"] == pytest.approx(-milp_max_linear(net, -g, lo, hi).value, abs=TOL)


def test_softmax_margin_equals_the_milp(case):
    net, lo, hi = case
    if net.n_outputs < 2:
        pytest.skip("needs classes")
    x0 = (lo + hi) / 2 + 0.1
    label = int(np.argmax(net.forward(x0)))
    rlo, rhi = np.maximum(lo, x0 - 0.4), np.minimum(hi, x0 + 0.4)
    result = analyze(net, Box(rlo, rhi), SoftmaxAttack(label))[0]
    truth = milp_max_margin(net, label, rlo, rhi)
    assert result.value == pytest.approx(truth.value, abs=TOL)
    assert result.verdict is (Verdict.VIOLATED if truth.value > 1e-7 else Verdict.HOLDS)


def assert_counterfactuals_equal_the_milp(net, lo, hi, norm, rng, n=2):
    """``n`` random ``x0`` in the box: the counterfactual's distance is the MILP's."""
    for _ in range(n):
        x0 = rng.uniform(lo, hi)
        truth = milp_counterfactual(net, x0, norm, lo, hi)
        result = analyze(net, Box(lo, hi), Counterfactual(x0, norm=norm))[0]
        if not np.isfinite(truth.value):
            assert result.value is None
            continue
        assert result.exact and result.value == pytest.approx(truth.value, abs=TOL)


@pytest.mark.parametrize("norm", [1, np.inf])
def test_counterfactual_distance_equals_the_milp(case, norm):
    net, lo, hi = case
    assert_counterfactuals_equal_the_milp(net, lo, hi, norm, np.random.default_rng(7))


def test_counterfactual_target_and_immutable_equal_the_milp(case):
    net, lo, hi = case
    x0 = (lo + hi) / 2
    y0 = net.forward(x0)
    cls0 = int(y0[0] >= 0) if net.n_outputs == 1 else int(np.argmax(y0))
    target = 1 - cls0 if net.n_outputs == 1 else (cls0 + 1) % net.n_outputs
    truth = milp_counterfactual(net, x0, 1, lo, hi, target=target, immutable=[0])
    result = analyze(net, Box(lo, hi), Counterfactual(x0, norm=1, target=target, immutable=[0]))[0]
    if not np.isfinite(truth.value):
        assert result.value is None
    else:
        assert result.value == pytest.approx(truth.value, abs=TOL)
        assert result.witness[0] == pytest.approx(x0[0], abs=1e-12)


def test_linear_property_verdict_equals_the_milp(case):
    net, lo, hi = case
    rng = np.random.default_rng(5)
    for trial in range(3):
        C = rng.standard_normal((2, net.n_outputs))
        d = rng.standard_normal(2) + 2.0 * (trial - 1)
        truth = milp_linear_dnf_feasible(net, [(C, d)], lo, hi)
        result = analyze(net, Box(lo, hi), LinearProperty([(C, d)]))[0]
        if truth.value > 1e-7:
            assert result.verdict is Verdict.VIOLATED
        elif truth.value < -1e-7:
            assert result.verdict is Verdict.HOLDS


def test_mnist_softmax_attack_equals_the_milp(data_dir):
    """On the real MNIST net at eps 0.01: the worst margin of the first test images."""
    net = Network.from_onnx(data_dir / "mnist" / "mnist2x10.onnx")
    data = np.load(data_dir / "mnist" / "mnist_test.npz")
    for i in range(2):
        x0, label = data["images"][i].reshape(-1) / 255.0, int(data["labels"][i])
        lo, hi = np.clip(x0 - 0.01, 0, 1), np.clip(x0 + 0.01, 0, 1)
        result = analyze(net, Box(lo, hi), SoftmaxAttack(label))[0]
        truth = milp_max_margin(net, label, lo, hi)
        assert result.exact and result.value == pytest.approx(truth.value, abs=TOL)


@pytest.mark.slow  # about 40 s; benchmarks/analyses.py runs the MNIST counterfactuals
def test_mnist_counterfactual_near_an_image_equals_the_milp(data_dir):
    """On the real MNIST net: the L∞ distance from a test image to another class, in a box."""
    net = Network.from_onnx(data_dir / "mnist" / "mnist2x10.onnx")
    x0 = np.load(data_dir / "mnist" / "mnist_test.npz")["images"][0].reshape(-1) / 255.0
    lo, hi = np.clip(x0 - 0.03, 0, 1), np.clip(x0 + 0.03, 0, 1)
    truth = milp_counterfactual(net, x0, np.inf, lo, hi)
    result = analyze(net, Box(lo, hi), Counterfactual(x0, norm=np.inf), time_limit=DECIDE)[0]
    if not np.isfinite(truth.value):
        assert result.value is None and result.exact
    else:
        assert result.exact and result.value == pytest.approx(truth.value, abs=TOL)


@pytest.mark.parametrize("seed", range(3))
def test_counterfactual_restricted_mid_level_equals_the_milp(seed):
    """Deep nets, start points anywhere: the region shrinks inside the levels entered at the
    start point and balls skip flips without losing the optimum."""
    n_in = 3 + seed % 2
    net = random_net(40 + seed, n_in, [7, 6, 6, 5] if seed % 2 else [9, 8, 7])
    lo, hi = -np.ones(n_in), np.ones(n_in)
    rng = np.random.default_rng(seed)
    for norm in (1, np.inf):
        assert_counterfactuals_equal_the_milp(net, lo, hi, norm, rng)


def test_counterfactual_with_unscreened_rows_equals_the_milp():
    """In 8 dimensions (no vertices), deeper levels keep the rows whose side to test misses
    the ball unscreened (``screen_far``, no LP); the optimum is the MILP's."""
    net = random_net(5, 8, [10, 8])
    lo, hi = -np.ones(8), np.ones(8)
    rng = np.random.default_rng(3)
    kept = 0
    for norm in (1, np.inf):
        x0 = rng.uniform(lo, hi)
        truth = milp_counterfactual(net, x0, norm, lo, hi)
        report = analyze(net, Box(lo, hi), Counterfactual(x0, norm=norm))
        kept += report.stats["screen_far"]
        assert report[0].exact and report[0].value == pytest.approx(truth.value, abs=TOL)
    assert kept > 0


@pytest.mark.parametrize("seed", [1, 2])
def test_counterfactual_without_cells_beyond_the_ball_equals_the_milp(seed):
    """Cells with a side beyond the ball are neither emitted nor descended into, and in the
    levels entered at the start point their flips are not decided (``cells_far``); the
    optimum is the MILP's and the full traversal's."""
    net = random_net(seed, 4, [12, 12])
    lo, hi = -np.ones(4), np.ones(4)
    x0 = np.full(4, 0.1)
    truth = milp_counterfactual(net, x0, 1, lo, hi)
    report = analyze(net, Box(lo, hi), Counterfactual(x0, norm=1))
    full = analyze(net, Box(lo, hi), Counterfactual(x0, norm=1, search="full"))
    assert report.stats["cells_far"] > 0
    assert report[0].exact and report[0].value == pytest.approx(truth.value, abs=TOL)
    assert full[0].value == pytest.approx(truth.value, abs=TOL)


def counterfactual_case(net, lo, hi, seed):
    """``x0`` in the box, and x0's class and a target (every other class on odd seeds)."""
    x0 = np.random.default_rng(seed).uniform(lo, hi)
    y0 = net.forward(x0)
    cls0 = int(y0[0] >= 0) if net.n_outputs == 1 else int(np.argmax(y0))
    target = None if seed % 2 else (1 - cls0 if net.n_outputs == 1 else (cls0 + 1) % net.n_outputs)
    return x0, cls0, target


@pytest.mark.parametrize("norm", [1, np.inf])
@pytest.mark.parametrize("seed", range(3))
def test_counterfactual_settled_by_the_milp_equals_the_reference(case, norm, seed):
    """With ``milp_after=0`` the MILP runs at the first polytope and proves the optimum: the
    reference MILP's distance, ``exact``, a confirmed witness of the class, the immutable
    feature held, and the traversal stopped there."""
    net, lo, hi = case
    x0, cls0, target = counterfactual_case(net, lo, hi, seed)
    immutable = [1] if seed == 2 else []
    truth = milp_counterfactual(net, x0, norm, lo, hi, target=target, immutable=immutable)
    result = analyze(net, Box(lo, hi), Counterfactual(x0, norm=norm, target=target,
                                                      immutable=immutable, milp_after=0))[0]
    milp = result.details["milp"]
    assert milp["proved"] and result.exact, milp
    if not np.isfinite(truth.value):
        assert result.value is None and result.witness is None
        return
    assert result.value == pytest.approx(truth.value, abs=TOL)
    assert milp["bound"] <= result.value + TOL
    y = net.forward(result.witness)
    cls = int(y[0] >= 0) if net.n_outputs == 1 else int(np.argmax(y))
    assert cls != cls0 and (target is None or cls == target)
    assert result.witness[immutable] == pytest.approx(x0[immutable], abs=1e-12)
    assert result.n_polytopes <= 1
    assert "proven minimal by a MILP" in "\n".join(Counterfactual(x0).describe(result))


def test_counterfactual_milp_that_does_not_settle_leaves_the_traversal(case, monkeypatch):
    """A MILP that ends at its limit proves nothing: the traversal finishes the search and
    its answer is the reference's, ``details["milp"]`` saying why."""
    from polytrav.solvers.highs import HighsBackend
    from polytrav.vocabulary.results import SolveResult, Status

    monkeypatch.setattr(HighsBackend, "solve_milp",
                        lambda self, *a, **k: SolveResult(Status.LIMIT, message="time limit"))
    net, lo, hi = case
    x0, _, _ = counterfactual_case(net, lo, hi, 1)
    truth = milp_counterfactual(net, x0, 1, lo, hi)
    result = analyze(net, Box(lo, hi), Counterfactual(x0, norm=1, milp_after=0))[0]
    milp = result.details["milp"]
    assert not milp["proved"] and milp["bound"] is None and "time limit" in milp["reason"]
    assert result.exact
    if np.isfinite(truth.value):
        assert result.value == pytest.approx(truth.value, abs=TOL)


def test_counterfactual_milp_runs_early_only_where_it_is_small(monkeypatch):
    """At a count of ``MILP_EARLY``, once a counterfactual is known (here from the third
    step; the search alone takes 100), the MILP runs if its box leaves at most
    ``MILP_EARLY_BINARIES`` unstable neurons, else it waits for ``milp_after``; either way
    the answer is the reference's and ``exact``."""
    from polytrav.plugins.counterfactual import milp

    net = random_net(0, 5, [20, 20], n_out=1)
    lo, hi = -np.ones(5), np.ones(5)
    x0 = np.random.default_rng(0).uniform(-0.5, 0.5, 5)
    truth = milp_counterfactual(net, x0, 1, lo, hi)
    monkeypatch.setattr(milp, "MILP_EARLY", (10,))
    for cap, after in ((10 ** 6, 10), (-1, 50)):
        monkeypatch.setattr(milp, "MILP_EARLY_BINARIES", cap)
        result = analyze(net, Box(lo, hi), Counterfactual(x0, norm=1, milp_after=50))[0]
        assert result.exact and result.details["milp"]["proved"]
        assert result.details["milp"]["after"] == after
        assert result.value == pytest.approx(truth.value, abs=TOL)


def test_counterfactual_says_why_the_milp_does_not_run(case):
    net, lo, hi = case
    x0, _, _ = counterfactual_case(net, lo, hi, 1)
    region = Intersection(Box(lo, hi), Ball(x0, 10.0, np.inf))
    result = analyze(net, region, Counterfactual(x0, norm=1, milp_after=0))[0]
    assert result.details["milp"] == "the region is a Intersection, not a Box"
    l2 = analyze(net, Box(lo, hi), Counterfactual(x0, norm=2, milp_after=0))[0]
    assert l2.details["milp"]["method"] == "branch and bound"  # L2: no MILP, the QP search
    never = analyze(net, Box(lo, hi), Counterfactual(x0, norm=1, milp_after=None))[0]
    assert "milp" not in never.details


@pytest.mark.parametrize("bad", [-1, 0.5, True, "500"])
def test_counterfactual_refuses_a_bad_milp_after(case, bad):
    from polytrav import ConfigError

    net, lo, hi = case
    with pytest.raises(ConfigError, match="milp_after must be a count"):
        analyze(net, Box(lo, hi), Counterfactual((lo + hi) / 2, norm=1, milp_after=bad))
