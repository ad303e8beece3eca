"""The direct L∞ counterfactual LP (Charnes-Cooper, box regions) gives the compiled cvxpy
subproblem's optima, and skipping classes that cannot beat x0's class loses nothing."""
from __future__ import annotations

import numpy as np
import pytest
from reference import random_net

from polytrav import Box, analyze
from polytrav.plugins.counterfactual import Counterfactual


def run(net, region, x0, monkeypatch, direct: bool, **options):
    monkeypatch.setattr(Counterfactual, "direct_linf", direct)
    analysis = Counterfactual(x0, norm=np.inf, **options)
    result = analyze(net, region, analysis)[0]
    return result, analysis


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("search", ["full", "best-first"])
def test_direct_linf_equals_the_compiled_subproblem(seed, search, monkeypatch):
    rng = np.random.default_rng(seed)
    d = 3 + seed % 2
    net = random_net(300 + seed, d, [10, 8], n_out=1 + 2 * (seed % 2))
    lo, hi = -np.ones(d), np.ones(d)
    lo[0], hi[0] = -0.3, 0.7  # unequal widths: sigma differs per coordinate
    if seed % 3 == 1:
        lo[1] = hi[1] = 0.2  # a fixed coordinate (outside the frame)
    x0 = rng.uniform(lo, hi)
    if seed % 3 == 0:
        x0[0] = hi[0] - 1e-3  # a box side nearer than the others: one of its rows is kept
    options = {"search": search}
    if seed % 4 == 0:
        options["immutable"] = [d - 1]
    direct, a = run(net, Box(lo, hi), x0, monkeypatch, True, **options)
    compiled, b = run(net, Box(lo, hi), x0, monkeypatch, False, **options)
    assert a._search.direct is not None and b._search.direct is None
    assert direct.exact and compiled.exact
    if compiled.value is None:
        assert direct.value is None
    else:
        assert direct.value == pytest.approx(compiled.value, abs=1e-9)
        y = net.forward(direct.witness)
        assert (y[0] >= 0) != (net.forward(x0)[0] >= 0) if net.n_outputs == 1 else \
            np.argmax(y) != np.argmax(net.forward(x0))
        if "immutable" in options:
            assert direct.witness[d - 1] == pytest.approx(x0[d - 1], abs=1e-12)


def test_direct_linf_on_mnist_equals_the_compiled_subproblem(data_dir, monkeypatch):
    """784 inputs, many pixels at 0 (sides at distance 0 are column bounds), eps 0.02: the
    nearest counterfactual is at 0.0181 (inside, as at eps 0.05, with 49 polytopes instead
    of 93 to solve twice)."""
    from polytrav import Ball, Network

    net = Network.from_onnx(data_dir / "mnist" / "mnist2x10.onnx")
    x0 = np.load(data_dir / "mnist" / "mnist_test.npz")["images"][0].reshape(-1) / 255.0
    region = Ball(x0, 0.02, norm="inf") & Box(0.0, 1.0)
    direct, a = run(net, region, x0, monkeypatch, True)
    compiled, _ = run(net, region, x0, monkeypatch, False)
    assert a._search.direct is not None and direct.exact and compiled.exact
    assert direct.value == pytest.approx(compiled.value, abs=1e-9)
    assert direct.value < 0.02  # a counterfactual inside the ball: an optimum compared
