"""A class row's nearest point, taken as a cell's minimiser when it lies in the cell
(``Search.projection``), gives the LP/QP path's optima in every norm, and the
MILP's in the norms 1 and inf."""
from __future__ import annotations

import numpy as np
import pytest
from polytrav.testing.milp import milp_counterfactual
from reference import random_net

from polytrav import Ball, Box, analyze
from polytrav.plugins.counterfactual import Counterfactual


def run(net, region, x0, norm, monkeypatch, closed_form: bool, **options):
    monkeypatch.setattr(Counterfactual, "closed_form", closed_form)
    result = analyze(net, region, Counterfactual(x0, norm=norm, **options))[0]
    return result


def assert_milp_agrees(result, net, x0, norm, lo, hi, immutable=()):
    """The independent truth for the norms 1 and inf on boxes."""
    truth = milp_counterfactual(net, x0, norm, lo, hi, immutable=immutable).value
    if not np.isfinite(truth):
        assert result.value is None
    else:
        assert result.value == pytest.approx(truth, abs=1e-7)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("norm", [1, 2, np.inf])
def test_closed_form_equals_the_subproblem(seed, norm, monkeypatch):
    rng = np.random.default_rng(seed)
    d = 2 + seed % 3
    net = random_net(500 + seed, d, [12, 6], n_out=1 if seed % 2 else 3)
    lo, hi = -np.ones(d), np.ones(d)
    lo[0], hi[0] = -0.4, 0.8  # unequal widths
    if seed % 3 == 2:
        lo[1] = hi[1] = 0.1  # a fixed coordinate: the nearest point must not move it
    region = Box(lo, hi)
    if seed == 3:
        region = region & Ball(np.zeros(d), 1.2, norm=1)  # a region that is not a box
    x0 = rng.uniform(lo, hi) * (0.3 if seed == 3 else 1.0)
    options = {"immutable": [d - 1]} if seed % 4 == 1 else {}
    fast = run(net, region, x0, norm, monkeypatch, True, **options)
    slow = run(net, region, x0, norm, monkeypatch, False, **options)
    assert slow.details["closed_form"] == 0
    assert fast.exact and slow.exact
    if slow.value is None:
        assert fast.value is None
        return
    assert fast.value == pytest.approx(slow.value, abs=1e-7)
    if seed != 3 and norm != 2:
        assert_milp_agrees(fast, net, x0, norm, lo, hi, options.get("immutable", ()))
    assert fast.witness is not None
    if "immutable" in options:
        assert fast.witness[d - 1] == pytest.approx(x0[d - 1], abs=1e-12)
    if seed % 3 == 2:
        assert fast.witness[1] == 0.1


def test_closed_form_is_used_on_the_grid_net(monkeypatch):
    """On a 2-input binary net most optima are the boundary's nearest point: no LP there."""
    net = random_net(7, 2, [20])
    region = Box(-np.ones(2), np.ones(2))
    used = 0
    for x0 in np.random.default_rng(1).uniform(-1, 1, size=(6, 2)):
        for norm in (1, 2, np.inf):
            fast = run(net, region, x0, norm, monkeypatch, True)
            slow = run(net, region, x0, norm, monkeypatch, False)
            used += fast.details["closed_form"]
            assert (fast.value is None) == (slow.value is None)
            if slow.value is not None:
                assert fast.value == pytest.approx(slow.value, abs=1e-7)
            if norm != 2:
                assert_milp_agrees(fast, net, x0, norm, -np.ones(2), np.ones(2))
    assert used > 0


@pytest.mark.parametrize("norm", [1, 2, np.inf])
@pytest.mark.parametrize("held", ["immutable", "fixed"])
def test_closed_form_keeps_held_coordinates_in_the_gap(norm, held, monkeypatch):
    """logit = x_0 + x_1 - 1 with x_1 held at 0.5: the boundary is x_0 = 0.5, at distance 0.5
    (a gap computed without the held coordinate's share would put it at 1)."""
    from polytrav import Network

    net = Network.from_arrays([np.eye(2), [[1.0, 1.0]]], [[3.0, 3.0], [-7.0]])
    x0 = np.array([0.0, 0.5])
    lo, hi = -np.ones(2), np.ones(2)
    options = {}
    if held == "immutable":
        options["immutable"] = [1]
    else:
        lo[1] = hi[1] = 0.5
    fast = run(net, Box(lo, hi), x0, norm, monkeypatch, True, **options)
    assert fast.details["closed_form"] == 1
    assert fast.value == pytest.approx(0.5, abs=1e-12)
    assert fast.witness[1] == 0.5


def test_closed_form_needs_the_point_exactly_in_the_cell(monkeypatch):
    """A nearest point 1.5e-9 outside a cell row nearly parallel (1e-6) to the class row is
    1.5e-3 (in L1) from the cell's true minimiser: it must go to the LP, not be accepted.
    logit = y - 1 while n1 = relu(eps x - y + 1 - delta) is on, eps x - delta elsewhere."""
    from polytrav import Network

    eps, delta = 1e-6, 1.5e-9
    net = Network.from_arrays([[[eps, -1.0], [1.0, 0.0]], [[-1.0, eps]]],
                              [[1.0 - delta, 3.0], [-3 * eps - delta]])
    region = Box(-2 * np.ones(2), 2 * np.ones(2))
    fast = run(net, region, np.zeros(2), 1, monkeypatch, True)
    assert fast.value == pytest.approx(1.0 + delta / eps, abs=1e-9)
