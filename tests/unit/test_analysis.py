"""Sign ascent over a box region's corners (polytrav.host.analysis.corner_ascent) seeds OutputRange
and SoftmaxAttack: its values are attained at points of the region, never above the MILP's
maximum (the analyses with and without it against the MILP: ``test_lagrange.py``)."""
import numpy as np
import pytest
from polytrav.testing.milp import milp_max_linear
from reference import random_net

from polytrav import Ball, Box, Network, analyze
from polytrav.host.analysis import corner_ascent
from polytrav.model.geometry import build_frame
from polytrav.plugins.adversarial import SoftmaxAttack
from polytrav.plugins.output_range import OutputRange

TOL = 1e-6


def _box(n_in):
    lo, hi = -np.ones(n_in), np.ones(n_in)
    lo[0], hi[1] = -0.5, 0.25  # unequal widths
    lo[2] = hi[2] = 0.3  # a fixed coordinate (outside the frame)
    return lo, hi


@pytest.mark.parametrize("seed", range(6))
def test_ascent_values_are_attained_corners_below_the_milp(seed):
    rng = np.random.default_rng(seed)
    net = random_net(40 + seed, 6, [8, 6], n_out=3)
    lo, hi = _box(6)
    frame = build_frame(Box(lo, hi), 6)
    g = rng.standard_normal(3)
    start = rng.uniform(lo, hi)
    value, x = corner_ascent(net, frame, g, frame.to_u(start))
    assert Box(lo, hi).contains(x)
    assert value == pytest.approx(float(g @ net.forward(x)), abs=1e-12)
    assert value >= float(g @ net.forward(start))  # never worse than where it started
    free = np.flatnonzero(hi > lo)
    at_side = np.isclose(x[free], lo[free]) | np.isclose(x[free], hi[free])
    at_centre = np.isclose(x[free], (lo[free] + hi[free]) / 2)  # a zero partial derivative
    assert np.all(at_side | at_centre) or np.allclose(x, start)
    assert value <= milp_max_linear(net, g, lo, hi).value + TOL


def test_ascent_reaches_the_maximum_of_a_monotone_net():
    """A net increasing in every input: the corner ``hi`` is the maximum, from anywhere."""
    W1 = np.abs(np.random.default_rng(0).standard_normal((5, 4)))
    net = Network.from_arrays([W1, np.ones((1, 5))], [np.zeros(5), np.zeros(1)])
    frame = build_frame(Box(-np.ones(4), np.ones(4)), 4)
    value, x = corner_ascent(net, frame, np.ones(1), np.zeros(4))
    assert np.array_equal(x, np.ones(4))
    assert value == pytest.approx(float(net.forward(np.ones(4))[0]))


def test_ascent_saves_lps_on_mnist_with_the_same_answers(data_dir, monkeypatch):
    """mnist2x10 at eps 0.01 (784 inputs, no vertices): the seeded runs solve fewer LPs."""
    net = Network.from_onnx(data_dir / "mnist" / "mnist2x10.onnx")
    x0 = np.load(data_dir / "mnist" / "mnist_test.npz")["images"][0].reshape(-1) / 255.0
    region = Ball(x0, 0.01, norm="inf") & Box(0.0, 1.0)
    label = int(np.argmax(net.forward(x0)))
    runs = {}
    for ascent in (True, False):
        monkeypatch.setattr(OutputRange, "ascent", ascent)
        monkeypatch.setattr(SoftmaxAttack, "ascent", ascent)
        runs[ascent] = analyze(net, region, [OutputRange(0), SoftmaxAttack(label)])
    seeded, plain = runs[True], runs[False]
    assert seeded.complete and seeded[0].exact and seeded[1].exact
    assert seeded[0].value["max"] == pytest.approx(plain[0].value["max"], abs=1e-12)
    assert seeded[0].value["min"] == pytest.approx(plain[0].value["min"], abs=1e-12)
    assert seeded[1].value == pytest.approx(plain[1].value, abs=1e-12)
    assert seeded[0].n_solves < plain[0].n_solves
    assert seeded[1].n_solves < plain[1].n_solves
