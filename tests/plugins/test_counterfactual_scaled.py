"""Counterfactuals in a scaled metric, ``||(x - x0) / scale||_p`` (issue 45, item 1).

The scaled problem is the unscaled one of the network on ``y = x / scale`` (its first layer's
columns multiplied by the scales, the region divided): every search (best-first with its
bounds and scaled balls, shrink, full), the closed form, the direct L∞ LP, the MILP and the
discrete features must give that problem's optimum. The MILP path is also checked against
the independent reference MILP (polytrav.testing.milp) on the rescaled network; ``explain``
defaults to the data's MAD and names the metric.
"""
from __future__ import annotations

import numpy as np
import pytest
from polytrav.testing.milp import milp_counterfactual
from reference import random_net

from polytrav import Box, ConfigError, Network, analyze, explain
from polytrav.extend import DataSummary
from polytrav.plugins.counterfactual import Counterfactual

TOL = 1e-6
LO, HI = np.array([-1.0, -2.0, -0.5]), np.array([1.0, 3.0, 0.5])
UNIT = np.array([0.05, 2.0, 1.0])  # very different units, as raw features have


def rescaled(net: Network, unit: np.ndarray) -> Network:
    """The network on ``y = x / unit``."""
    return Network.from_arrays([net.weights[0] * unit, *net.weights[1:]], list(net.biases))


def _close(a, b) -> bool:
    return (a is None and b is None) or (a is not None and b is not None
                                         and abs(a - b) <= TOL * (1 + abs(b)))


@pytest.mark.parametrize("search", ["best-first", "full"])  # shrink: best-first's paths
@pytest.mark.parametrize("norm", [1, 2, np.inf])
@pytest.mark.parametrize("n_out", [1, 3])
def test_scaled_equals_unscaled_on_the_rescaled_network(n_out, norm, search):
    net = random_net(40 + n_out, 3, [6, 5], n_out=n_out)
    rng = np.random.default_rng(n_out)
    for x0, immutable in zip(rng.uniform(LO, HI, (3, 3)), ((), (2,), (0,))):
        got = analyze(net, Box(LO, HI), Counterfactual(
            x0, norm=norm, scale=UNIT, search=search, immutable=immutable))[0]
        want = analyze(rescaled(net, UNIT), Box(LO / UNIT, HI / UNIT), Counterfactual(
            x0 / UNIT, norm=norm, search=search, immutable=immutable))[0]
        assert got.exact and want.exact
        assert _close(got.value, want.value), (norm, search, x0, immutable)
        if got.witness is not None:
            d = np.linalg.norm((got.witness - x0) / UNIT, ord=norm)
            assert d == pytest.approx(got.details["returned_distance"], rel=1e-9)
            assert np.all(got.witness[list(immutable)] == x0[list(immutable)])
            cls = net.forward(got.witness)
            assert (cls[0] >= 0) != (net.forward(x0)[0] >= 0) if n_out == 1 else \
                np.argmax(cls) != np.argmax(net.forward(x0))
        assert got.details["metric"] == {1: "L1", 2: "L2"}.get(norm, "L∞") + \
            " scaled by given scales"


@pytest.mark.parametrize("norm", [1, np.inf])
def test_the_milp_path_agrees_with_the_reference_milp(norm):
    """``milp_after=0``: the MILP settles each row from the first polytope, in the scaled
    metric (its distance columns and the L1 ball of its bounds divided by the units); the
    reference MILP solves the rescaled network."""
    net = random_net(45, 3, [8, 8], n_out=1)
    rng = np.random.default_rng(3)
    for x0 in rng.uniform(LO, HI, (4, 3)):
        got = analyze(net, Box(LO, HI), Counterfactual(x0, norm=norm, scale=UNIT,
                                                       milp_after=0))[0]
        ref = milp_counterfactual(rescaled(net, UNIT), x0 / UNIT, norm, LO / UNIT, HI / UNIT)
        if np.isinf(ref.value):
            assert got.value is None and got.exact
            continue
        assert got.exact and got.details["milp"]["proved"]
        assert got.value == pytest.approx(ref.value, abs=TOL)


@pytest.mark.parametrize("norm", [1, np.inf])
def test_integer_features_in_the_scaled_metric(norm):
    """A grid of step 0.5 on input 1 (unit 2): the rescaled problem's grid has step 0.25."""
    net = random_net(46, 3, [8, 6], n_out=3)
    rng = np.random.default_rng(4)
    for x0 in rng.uniform(LO, HI, (3, 3)):
        got = analyze(net, Box(LO, HI), Counterfactual(x0, norm=norm, scale=UNIT,
                                                       integer={1: 0.5}))[0]
        want = analyze(rescaled(net, UNIT), Box(LO / UNIT, HI / UNIT), Counterfactual(
            x0 / UNIT, norm=norm, integer={1: 0.25}))[0]
        assert got.exact and _close(got.value, want.value)


def test_explain_defaults_to_the_mad_of_the_data_and_names_the_metric():
    pd = pytest.importorskip("pandas")
    net = random_net(47, 3, [8, 6], n_out=1)
    rng = np.random.default_rng(5)
    X = rng.uniform(LO, HI, (8, 3)) * [1.0, 1.0, 0.0]  # the last column: MAD 0, std 0: constant
    X[:3, 2] = 0.25  # now std > 0 but MAD 0 (more than half the rows share 0)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    table = explain(net, frame, [("counterfactual", {"norm": 1})], domain=(LO, HI))
    mad = DataSummary.of(X).scale("mad", "std", ("a", "b", "c"))
    assert mad.replaced == {2: "std"}
    for r, x in zip(table, X):
        assert r.ok, r.errors
        want = analyze(net, Box(LO, HI), Counterfactual(x, norm=1, scale=mad))[0]
        assert _close(r.figures["counterfactual.distance"], want.value)
        assert r.figures["counterfactual.metric"] == "L1 scaled by MAD (zero MAD: std for 'c')"
        if r.figures["counterfactual.found"]:
            for j, name in enumerate("abc"):
                assert r.figures[f"counterfactual.change.{name}"] == pytest.approx(
                    r.figures[f"counterfactual.x.{name}"] - x[j], abs=1e-12)
    held = explain(net, frame, [("counterfactual", {"norm": 1, "zero_scale": "immutable"})],
                   domain=(LO, HI))
    for r, x in zip(held, X):
        assert r.figures["counterfactual.x.c"] in (None, x[2])
        assert "held fixed: 'c'" in r.figures["counterfactual.metric"]
    raw = explain(net, frame, [("counterfactual", {"norm": 1, "scale": None})], domain=(LO, HI))
    assert raw[0].figures["counterfactual.metric"] == "L1"
    with pytest.raises(ConfigError, match=r"feature 'c' has a mad of 0.*the same on every row"):
        explain(net, frame, [("counterfactual", {"zero_scale": "error"})], domain=(LO, HI))


def test_classes_and_probabilities_in_the_estimators_vocabulary():
    """A network with class labels and a sigmoid link: ``class0``/``class`` are the labels,
    ``probability`` is the model's probability of the reached class at the witness."""
    base = random_net(48, 3, [6], n_out=1)
    net = Network.from_arrays(base.weights, base.biases, classes=["no", "yes"], link="sigmoid")
    x0 = np.array([0.1, 0.2, 0.0])
    res = analyze(net, Box(LO, HI), Counterfactual(x0, norm=2))[0]
    if res.witness is None:
        pytest.skip("no counterfactual in the box for this seed")
    figures = Counterfactual.figures(Counterfactual(x0), res, _row(x0))
    k0 = net.class_index(x0)
    assert figures["class0"] == ["no", "yes"][k0] and figures["class"] == ["no", "yes"][1 - k0]
    p = 1 / (1 + np.exp(-net.forward(res.witness)[0]))
    assert figures["probability"] == pytest.approx(p if k0 == 0 else 1 - p, abs=1e-12)
    assert "probability of" in "\n".join(Counterfactual(x0).describe(res))


def _row(x):
    from polytrav.extend import Row

    return Row(x, Box(LO, HI), ("a", "b", "c"))
