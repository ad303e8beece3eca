"""The exact L2 counterfactual (neuron branch and bound, polytrav.bounds.nearest) against an
independent mixed-integer QP (SCIP, polytrav.testing.miqp) and the unit tests of its
certificates: every node bound is a Lagrangian bound, sound for *any* multipliers."""
from __future__ import annotations

import numpy as np
import pytest
from polytrav.testing.miqp import miqp_counterfactual
from polytrav import Box, Network, analyze
from polytrav.bounds.nearest import NearestL2
from polytrav.plugins.counterfactual import Counterfactual
from polytrav.solvers.clarabel import ClarabelBackend
from reference import random_net

pytest.importorskip("pyscipopt", reason='SCIP is not installed: pip install -e ".[dev]"')

REL = 1e-6
#: SCIP search settings for speed on small nets (the tolerances are miqp.py's).
FAST = {"heuristics/mpec/freq": -1, "separating/maxroundsroot": 5}
# (seed, n_inputs, widths, n_outputs)
NETS = [(21, 3, [8, 8], 1), (22, 4, [6, 6, 6], 3), (23, 5, [10, 6], 1), (24, 2, [12, 10], 2)]


def centred(seed, n, widths, n_out):
    """A random net whose binary output is centred on the box (both classes occur)."""
    net = random_net(seed, n, widths, n_out)
    if n_out == 1:
        y = net.forward(np.random.default_rng(seed).uniform(-1, 1, (2000, n)))[:, 0]
        net = Network.from_arrays(net.weights, [*net.biases[:-1], net.biases[-1] - np.median(y)])
    return net


def same(a, b):
    return abs(a - b) <= REL * max(1.0, abs(a), abs(b))


@pytest.mark.parametrize("spec", NETS, ids=lambda s: f"{s[1]}-{s[2]}-{s[3]}")
@pytest.mark.parametrize("variant", ["plain", "scaled", "immutable", "target"])
def test_l2_counterfactual_equals_the_miqp(spec, variant):
    """Branch and bound from the first polytope (``milp_after=0``): SCIP's optimum to 1e-6,
    ``exact``, proven by the branch and bound, and a witness whose class a forward pass
    confirms."""
    net = centred(*spec)
    n = net.n_inputs
    rng = np.random.default_rng(spec[0])
    lo, hi = -np.ones(n), np.ones(n)
    scale = rng.uniform(0.3, 3.0, n) if variant == "scaled" else None
    immutable = [0] if variant == "immutable" else []
    for x0 in rng.uniform(-0.6, 0.6, (2, n)):
        y0 = net.forward(x0)
        target = None
        if variant == "target" and net.n_outputs > 1:
            target = (int(np.argmax(y0)) + 1) % net.n_outputs
        truth = miqp_counterfactual(net, x0, lo, hi, norm=2, target=target, immutable=immutable,
                                    weights=None if scale is None else 1.0 / scale, params=FAST)
        result = analyze(net, Box(lo, hi), Counterfactual(
            x0, norm=2, target=target, immutable=immutable, scale=scale, milp_after=0))[0]
        assert result.exact, result.details
        if not np.isfinite(truth.value):
            assert result.value is None
            continue
        assert same(result.value, truth.value), (result.value, truth.value)
        assert result.details["milp"]["method"] == "branch and bound"
        fig = Counterfactual.figures(Counterfactual(x0), result, _Row(n))
        assert fig["proof"] == "branch-and-bound"
        w = result.witness
        c = result.details["class"]
        y = net.forward(w)
        assert (y[0] >= 0) == bool(c) if net.n_outputs == 1 else int(np.argmax(y)) == c
        assert np.allclose(w[immutable], x0[immutable])


class _Row:
    """What :meth:`Counterfactual.figures` reads of a row: the feature names."""

    def __init__(self, n):
        self.features = tuple(f"f{j}" for j in range(n))
        self.x = np.zeros(n)


def test_a_node_budget_leaves_a_sound_bound_and_says_so():
    """Stopped after one node, the search's bound is below the optimum (sound) and its
    reason says why; the plugin's answer is then not proven by it."""
    net = centred(25, 6, [16, 16], 1)
    x0 = np.full(6, 0.3)
    lo, hi = -np.ones(6), np.ones(6)
    truth = miqp_counterfactual(net, x0, lo, hi, norm=2, params=FAST)
    C = np.array([[1.0]]) if net.forward(x0)[0] >= 0 else np.array([[-1.0]])
    nearest = NearestL2(net, lo, hi, x0)
    out = nearest.closest([(C, np.zeros(1))], [ClarabelBackend()], max_nodes=1)
    assert out.reason == "node limit"
    assert out.bound <= truth.value * (1 + REL)
    full = NearestL2(net, lo, hi, x0).closest([(C, np.zeros(1))], [ClarabelBackend()])
    assert full.reason == "" and same(full.distance, truth.value)
    assert full.distance * (1 - REL) <= full.bound <= truth.value * (1 + 1e-9)


def test_every_multiplier_gives_a_lower_bound():
    """The node bound is the dual function at the solver's multipliers: at *random*
    multipliers it must still be below the relaxation's optimum (weak duality), and at the
    solver's it must be close to it."""
    net = centred(26, 4, [8, 8], 1)
    x0 = np.array([0.2, -0.1, 0.4, 0.0])
    lo, hi = -np.ones(4), np.ones(4)
    nearest = NearestL2(net, lo, hi, x0, unit=np.array([1.0, 2.0, 0.5, 1.0]))
    nearest.solves = 0
    C = np.array([[1.0]]) if net.forward(x0)[0] >= 0 else np.array([[-1.0]])
    d = np.zeros(1)
    found = nearest.closest([(C, d)], [ClarabelBackend()])
    L, U = nearest.bounds(found.distance)  # the root's bounds, in the ball of the optimum
    phase = np.zeros(nearest.N, np.int8)
    low, x, a, _ = nearest.relax(L, U, phase, C, d, [ClarabelBackend()])
    assert x is not None
    optimum = nearest.distance(x) ** 2
    assert 0 < optimum < found.distance ** 2
    assert optimum * (1 - 1e-6) <= low ** 2 <= optimum * (1 + 1e-9)
    r = nearest._rows(L, U, phase, C, d)
    rng = np.random.default_rng(0)
    for _ in range(200):
        y = rng.exponential(rng.uniform(0.01, 10.0), len(r.b)) * (rng.uniform(size=len(r.b)) < 0.5)
        assert nearest._lagrangian(r, y) <= optimum + 1e-12


def test_a_wrong_farkas_vector_proves_nothing():
    """A node is dropped as empty only with a checked certificate: a random vector is not
    one on a feasible node."""
    net = centred(27, 3, [6], 1)
    x0 = np.zeros(3)
    lo, hi = -np.ones(3), np.ones(3)
    nearest = NearestL2(net, lo, hi, x0)
    C = np.array([[1.0]]) if net.forward(x0)[0] >= 0 else np.array([[-1.0]])
    L, U = nearest.bounds(np.inf)
    r = nearest._rows(L, U, np.zeros(nearest.N, np.int8), C, np.zeros(1))
    rng = np.random.default_rng(1)
    assert not any(nearest._farkas(r, rng.exponential(1.0, len(r.b))) for _ in range(100))


def test_a_search_stopped_without_a_point_proves_nothing(monkeypatch):
    """No counterfactual found and the search stopped at its budget with a bound of 0: the
    answer "none exists" is not proven (it was: inf <= 0 + tolerance * inf)."""
    from polytrav.bounds.milp import ClosestOutcome

    def stopped(self, pairs, backends, **kw):
        out = ClosestOutcome()
        out.bound, out.reason = 0.0, "time limit"
        return out

    monkeypatch.setattr(NearestL2, "closest", stopped)
    net = random_net(4, 2, [8, 6], n_out=3)
    res = analyze(net, Box([-1, -1], [1, 1]), Counterfactual(np.array([0.15, -0.1]), norm=2),
                  max_polytopes=2)
    assert not res[0].details["milp"]["proved"] and not res[0].exact
