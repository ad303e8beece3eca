"""Monotonicity handed to a MILP (``RegionMilp.monotone``) where the slope bound and the input
splitting leave the box open: its verdicts against brute-force cells, its proofs and its
start points in the analysis, and why it did not run."""
from __future__ import annotations

import numpy as np
import pytest
from budgets import DECIDE  # a guard: these searches must decide, however busy the machine
from reference import brute_force_regions, random_net

from polytrav import Ball, Box, Network, analyze
from polytrav.bounds.milp import RegionMilp
from polytrav.bounds.slope import slope_scale
from polytrav.host.manager import get_solver
from polytrav.plugins.monotonicity import Monotonicity
from polytrav.vocabulary.results import Verdict
from polytrav.vocabulary.tolerances import LP_BOUND_TOL


def with_passthrough(net: Network, w: float) -> Network:
    """``net`` plus ``w * x_0`` through an always-on path (``relu(x_0 + 2)``, then its relu):
    every activation pattern then has a slope in ``x_0`` away from 0 by ``w`` less the rest."""
    (W0, W1, W2), (b0, b1, b2) = net.weights, net.biases
    n0, n1 = W0.shape[0], W1.shape[0]
    W1p = np.zeros((n1 + 1, n0 + 1))
    W1p[:n1, :n0], W1p[n1, n0] = W1, 1.0
    return Network.from_arrays([np.vstack([W0, np.eye(1, W0.shape[1])]), W1p, np.hstack([W2, [[w]]])],
                               [np.append(b0, 2.0), np.append(b1, 0.0), b2])


def strip_net() -> Network:
    """``y = x_0 - 3 relu(relu(x_0 - 0.9) - 10 relu(x_1 - 0.02) - 10 relu(-x_1 - 0.02))`` on
    ``[-1, 1]^2`` (the pass-through ``relu(x_0 + 1) - 1``): it decreases in ``x_0`` only in a
    thin strip, ``x_0 > 0.9`` and ``|x_1|`` about ``0.02``, which no corner meets."""
    W0 = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, -1.0], [1.0, 0.0]])
    W1 = np.array([[1.0, -10.0, -10.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    return Network.from_arrays([W0, W1, [[-3.0, 1.0]]],
                               [[-0.9, -0.02, -0.02, 1.0], [0.0, 0.0], [-1.0]])


@pytest.mark.parametrize("seed", range(12))
def test_monotone_against_brute_force_cells(seed):
    """``holds`` only where every cell's signed slope is above the allowance, ``candidate``
    only where some cell's is below minus it (its point: the centre of a cell with that
    slope), ``unknown`` in between (a slope of 0 decides nothing)."""
    rng = np.random.default_rng(400 + seed)
    net = random_net(seed, 2, [[5, 4], [6], [4, 4]][seed % 3], n_out=1)
    if seed % 2:
        net = with_passthrough(net, 2.0) if len(net.weights) == 3 else net
    lo, hi = rng.uniform(-1, -0.2, 2), rng.uniform(0.2, 1, 2)
    feature = seed % 2
    cells = brute_force_regions(net, lo, hi)
    slopes = np.array([r["W"][0, feature] for r in cells])
    allow = LP_BOUND_TOL * (1 + slope_scale(net.weights, feature, 0))
    for sign in (1.0, -1.0):
        out = RegionMilp(net, lo, hi).monotone(feature, 0, sign, [get_solver("highs")],
                                               time_limit=DECIDE)
        low = (sign * slopes).min()
        want = "holds" if low > allow else "candidate" if low < -allow else "unknown"
        assert out.verdict == want, (sign, low, out)
        if want == "candidate":
            W, _ = net.local_model(net.activation_code(out.point))
            assert sign * W[0, feature] == pytest.approx(out.slope, rel=1e-6)  # the MILP: to 1e-9
            assert out.slope < -allow and np.all(out.point >= lo) and np.all(out.point <= hi)


def test_a_network_without_hidden_layers_has_one_slope():
    net = Network.from_arrays([[[2.0, -1.0]]], [[0.0]])
    backends = [get_solver("highs")]
    assert RegionMilp(net, [-1, -1], [1, 1]).monotone(0, 0, 1.0, backends).verdict == "holds"
    assert RegionMilp(net, [-1, -1], [1, 1]).monotone(1, 0, 1.0, backends).verdict == "candidate"


def test_the_milp_proves_what_the_bound_and_the_splitting_leave_open():
    """A random 3-8-8-1 net plus ``2 x_0``: 2000 sub-boxes do not prove it increasing in
    ``x_0`` and the traversal needs 61 polytopes; the MILP proves it with none."""
    net = with_passthrough(random_net(18, 3, [8, 8]), 2.0)
    box = Box(-np.ones(3), np.ones(3))
    rep = analyze(net, box, Monotonicity(0, "increasing", stop_at_first=True))
    res = rep[0]
    # proven by the MILP; no polytope visited, so no slope is known (the value is not exact)
    assert res.verdict is Verdict.HOLDS and not res.exact and rep.complete and res.n_polytopes == 0
    assert res.details["milp"]["verdict"] == "holds" and res.details["milp"]["binaries"] > 0
    assert not res.details["split"]["proven"]
    assert any("proven by a MILP" in line for line in Monotonicity.describe(None, res))
    off = analyze(net, box, Monotonicity(0, "increasing", stop_at_first=True, milp=False))[0]
    assert off.verdict is Verdict.HOLDS and off.n_polytopes > 0
    assert off.details["milp"] == {"ran": False, "reason": "milp=False"}


def test_the_milp_point_is_where_the_traversal_starts():
    """Without splitting, the probes miss the strip where ``strip_net`` decreases; the MILP's
    cell centre is the start point, and the first polytope confirms the pair there."""
    net = strip_net()
    rep = analyze(net, Box([-1.0, -1.0], [1.0, 1.0]),
                  Monotonicity(0, "increasing", stop_at_first=True, split=0))
    res = rep[0]
    assert res.details["milp"]["verdict"] == "candidate"
    assert res.verdict is Verdict.VIOLATED and res.n_polytopes == 1
    x, x2 = res.details["witness_pair"]
    assert x2[0] > x[0] and x2[1] == x[1] and net(x2)[0] < net(x)[0]
    assert x[0] > 0.9 and abs(x[1]) < 0.2


@pytest.mark.parametrize("case, reason", [
    ("ball", "the region is a Intersection, not a Box"),
    ("no backend", "no backend serves the 'milp' form"),
])
def test_why_the_milp_did_not_run(case, reason):
    net = with_passthrough(random_net(18, 3, [8, 8]), 2.0)
    box, kw = Box(-np.ones(3), np.ones(3)), {}
    if case == "ball":
        box = box & Ball(np.zeros(3), 1.5, norm=2)
    else:
        kw["solver"] = {"milp": []}
    res = analyze(net, box, Monotonicity(0, "increasing", stop_at_first=True, split=0),
                  time_limit=DECIDE, **kw)[0]
    assert res.verdict is Verdict.HOLDS and res.details["milp"] == {"ran": False, "reason": reason}


def test_milp_must_be_a_bool():
    from polytrav.vocabulary.errors import ConfigError

    with pytest.raises(ConfigError, match="milp must be True or False"):
        analyze(strip_net(), Box([-1.0, -1.0], [1.0, 1.0]), Monotonicity(0, "increasing", milp=1))
