"""The cell LPs stated in arrays (``cell_linear_program``, no cvxpy) give what the cvxpy
subproblems give: ``linear_property`` in ``all`` mode (the largest depth into the unsafe set,
exact) and ``output_range`` over a polyhedral region, against the same region with an L1
ball around it too large to cut it (which the cvxpy subproblems state)."""
from __future__ import annotations

import numpy as np
import pytest
from ctrl_c import random_layers

from polytrav import Ball, LinearProperty, Network, OutputRange, Polyhedron, analyze


def random_net(sizes, seed):
    return Network.from_arrays(*random_layers(np.random.default_rng(seed), sizes))


def region(n: int, seed: int):
    rng = np.random.default_rng(seed)
    A = np.vstack([np.eye(n), -np.eye(n), rng.normal(size=(3, n))])
    return Polyhedron(A, np.concatenate([np.ones(2 * n), rng.uniform(0.3, 1.0, 3)]))


@pytest.mark.parametrize("seed", range(3))
def test_lps_in_arrays_agree_with_the_cvxpy_subproblems(seed):
    net = random_net([2, 8, 8, 3], seed)
    poly = region(2, seed)
    ball = poly & Ball(np.zeros(2), 100.0, norm=1)  # cuts nothing: the cvxpy path
    unsafe = [(np.array([[1.0, -1.0, 0.0]]), np.array([0.0]))]
    for analysis in (lambda: LinearProperty(unsafe, mode="all"), lambda: OutputRange(output=1)):
        a, b = analyze(net, poly, [analysis()]), analyze(net, ball, [analysis()])
        assert a.stats["polytopes"] == b.stats["polytopes"]
        va, vb = a[0].value, b[0].value
        if isinstance(va, dict):
            assert va["min"] == pytest.approx(vb["min"], abs=1e-6)
            assert va["max"] == pytest.approx(vb["max"], abs=1e-6)
        else:
            assert va == pytest.approx(vb, abs=1e-6)
        assert a[0].exact and b[0].exact
