"""The returned counterfactual point: found on the ray from x0 without an LP, or by the
step LP when the ray finds nothing; either way its class is confirmed by a forward pass."""
from __future__ import annotations

import numpy as np
import pytest
from reference import random_net

from polytrav import Box, analyze
from polytrav.plugins.counterfactual import Counterfactual
from polytrav.plugins.counterfactual.witness import WitnessFinder


def changes_class(net, x, x0) -> bool:
    y, y0 = net.forward(x), net.forward(x0)
    return (y[0] > 0) != (y0[0] > 0) if net.n_outputs == 1 else np.argmax(y) != np.argmax(y0)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("norm", [1, 2, np.inf])
def test_ray_and_step_lp_both_return_a_confirmed_point(seed, norm, monkeypatch):
    rng = np.random.default_rng(seed)
    d = 2 + seed % 3
    net = random_net(500 + seed, d, [8, 6], n_out=1 + 2 * (seed % 2))
    region = Box(-np.ones(d), np.ones(d))
    x0 = rng.uniform(-0.5, 0.5, d)
    immutable = [d - 1] if seed % 3 == 2 else []
    ray = analyze(net, region, Counterfactual(x0, norm=norm, immutable=immutable))[0]
    # fault injection: the ray never finds a point, so the step LP must
    monkeypatch.setattr(WitnessFinder, "beyond_on_ray", lambda self, context, q, u_star: None)
    lp = analyze(net, region, Counterfactual(x0, norm=norm, immutable=immutable))[0]
    assert ray.value == pytest.approx(lp.value, abs=1e-9)
    if ray.value is None:
        return
    for res in (ray, lp):
        assert res.witness is not None and changes_class(net, res.witness, x0)
        assert ray.value - 1e-9 <= res.details["returned_distance"] <= ray.value + 1e-3
        assert region.contains(res.witness, tol=1e-9)
        for j in immutable:
            assert res.witness[j] == pytest.approx(x0[j], abs=1e-12)
