"""Lagrangian bounds of cell maxima (polytrav.bounds.lagrange): sound, and the skips they allow exact.

The bound is checked against each cell's LP optimum from SciPy's ``linprog`` over
``cell_rows`` (an independent statement of the cell); the analyses that skip LPs with it
against the MILP, on 8-input nets (no vertices, so every maximum goes through the bound).
"""
import numpy as np
import pytest
from polytrav.testing.milp import milp_max_linear, milp_max_margin
from reference import random_net
from scipy.optimize import linprog

from polytrav import Ball, Box, Network, Polyhedron, analyze, traverse
from polytrav.model.cell import cell_rows, local_model_u
from polytrav.bounds.lagrange import CellBound, dual_bound
from polytrav.plugins.adversarial import SoftmaxAttack
from polytrav.plugins.output_range import OutputRange

TOL = 1e-6


def _lp_max(A, b, g):
    d = g.size
    res = linprog(-g, A_ub=A, b_ub=b, bounds=[(-1.0, 1.0)] * d, method="highs")
    assert res.status == 0
    return -res.fun, res.x


def _dead_neuron_net():
    net = random_net(5, 4, [6, 5], n_out=2)
    W = [w.copy() for w in net.weights]
    W[1][2] = 0.0  # a layer-2 neuron constant everywhere: the always-true row
    return Network.from_arrays(W, net.biases)


@pytest.mark.parametrize("net, region", [
    (random_net(1, 3, [7, 6, 5], n_out=2), Box(-np.ones(3), np.ones(3))),
    (_dead_neuron_net(), Box([-1, -2, 0, 0], [1, 0, 0.5, 3])),
    (random_net(2, 3, [6, 6], n_out=1), Polyhedron(np.array([[1.0, 1.0, 0.0]]), np.array([0.5]))
     & Box(-np.ones(3), np.ones(3))),
    (Network.from_arrays([np.array([[1.0, -2.0]])], [np.array([0.5])]), Box([-1, -1], [1, 1])),
], ids=["deep", "dead-neuron", "polyhedron", "affine"])
def test_rows_equal_cell_rows(net, region):
    run = traverse(net, region)
    bound = CellBound()
    for p in run:
        A, b = bound.rows(p, run.frame)
        A_ref, b_ref = cell_rows(p, run.frame)
        np.testing.assert_allclose(A, A_ref, atol=1e-13)
        np.testing.assert_allclose(b, b_ref, atol=1e-12)
        assert bound.rows(p, run.frame)[0] is A  # kept for the current polytope


@pytest.mark.truth
def test_the_bound_never_falls_below_the_cell_optimum():
    """On every polytope of two 8-input nets, for random objectives: ``phi`` of learnt and
    random multipliers is at least the LP optimum, and ``decide`` never proves a beat the
    optimum exceeds; it does prove skips with learnt multipliers."""
    rng = np.random.default_rng(0)
    checked = 0
    proven = 0
    for seed in (3, 4):
        net = random_net(seed, 8, [6, 5], n_out=3)
        run = traverse(net, Box(-np.ones(8), np.ones(8)), max_polytopes=80)
        bound = CellBound()
        for p in run:
            A, b = bound.rows(p, run.frame)
            Wu, _ = local_model_u(p, run.frame)
            for g in (Wu[0], -Wu[1], Wu[2] - Wu[0]):
                opt, u = _lp_max(A, b, g)
                for lam in [*bound.pool, rng.exponential(size=b.size)]:
                    assert dual_bound(A, b, g, lam) >= opt - 1e-9
                for beat in (opt - 1e-6, opt - 0.1 * (1 + abs(opt))):
                    assert not bound.decide(A, b, g, beat)[0]
                beat = opt + 0.05 * (1 + abs(opt))
                if bound.decide(A, b, g, beat)[0] and np.abs(g).sum() > beat:
                    proven += 1  # proven by multipliers (kept or the box LP's), not the box bound
                bound.learn(A, b, g, u)
                checked += 1
    assert checked >= 300
    assert proven > 0  # multipliers prove bounds the box alone does not


def test_learnt_multipliers_are_the_lp_duals_on_a_simple_cell():
    """max u_0 + u_1 over [-1, 1]^2 with u_0 + u_1 <= 1: the multiplier is 1 (phi = 1)."""
    A, b, g = np.array([[1.0, 1.0]]) / np.sqrt(2), np.array([1.0]) / np.sqrt(2), np.ones(2)
    bound = CellBound()
    bound.learn(A, b, g, np.array([0.5, 0.5]))
    assert bound.pool[-1] == pytest.approx([np.sqrt(2)])
    assert dual_bound(A, b, g, bound.pool[-1]) == pytest.approx(1.0)
    assert bound.decide(A, b, g, 1.0 + 1e-9)[0] and not bound.decide(A, b, g, 1.0 - 1e-9)[0]


NETS = [(21, 8, [8, 6], 3), (22, 8, [7, 6], 4)]


@pytest.mark.parametrize("seed, n_in, widths, n_out", NETS)
@pytest.mark.parametrize("ascent", [True, False])
@pytest.mark.truth
def test_analyses_skipping_by_the_bound_equal_the_milp(seed, n_in, widths, n_out, ascent,
                                                       monkeypatch):
    """With and without the incumbents of ``corner_ascent``; the witnesses attain the values."""
    monkeypatch.setattr(OutputRange, "ascent", ascent)
    monkeypatch.setattr(SoftmaxAttack, "ascent", ascent)
    net = random_net(seed, n_in, widths, n_out=n_out)
    lo, hi = -np.ones(n_in), np.ones(n_in)
    lo[0] = -0.5
    g = np.random.default_rng(seed).standard_normal(n_out)
    rep = analyze(net, Box(lo, hi), [OutputRange(weights=g), SoftmaxAttack(0)],
                  strategy="hierarchical")
    rng_, attack = rep[0], rep[1]
    assert rng_.exact and attack.exact
    assert rng_.details["skipped_by_bound"] > 0 and attack.details["skipped_by_bound"] > 0
    assert rng_.value["max"] == pytest.approx(milp_max_linear(net, g, lo, hi).value, abs=TOL)
    assert rng_.value["min"] == pytest.approx(-milp_max_linear(net, -g, lo, hi).value, abs=TOL)
    assert attack.value == pytest.approx(milp_max_margin(net, 0, lo, hi).value, abs=TOL)
    assert g @ net.forward(rng_.witness) == pytest.approx(rng_.value["max"], abs=1e-9)
    y = net.forward(attack.witness)
    assert np.max(y[1:]) - y[0] == pytest.approx(attack.value, abs=1e-9)


@pytest.mark.truth
def test_a_wrong_bound_is_caught_by_the_milp(monkeypatch):
    """Fault injection: a bound that claims every skip once one LP is solved drops polytopes
    it should not, and the range no longer equals the MILP's (the comparison above notices)."""
    seed, n_in, widths, n_out = NETS[0]
    net = random_net(seed, n_in, widths, n_out=n_out)
    lo, hi = -np.ones(n_in), np.ones(n_in)
    g = np.random.default_rng(seed).standard_normal(n_out)
    monkeypatch.setattr(CellBound, "decide", lambda self, A, b, g, beat: (bool(self.pool), None))
    res = analyze(net, Box(lo, hi), OutputRange(weights=g), strategy="hierarchical")[0]
    truth_max = milp_max_linear(net, g, lo, hi).value
    truth_min = -milp_max_linear(net, -g, lo, hi).value
    assert (abs(res.value["max"] - truth_max) > TOL) or (abs(res.value["min"] - truth_min) > TOL)


@pytest.mark.truth
def test_the_box_lp_path_equals_the_backend_path_on_boxes_and_cut_boxes(monkeypatch):
    """OutputRange and SoftmaxAttack with the box LP (certified maxima, early-stopped bounds)
    and without it (every undecided cell on HiGHS) give the same values, on a box, a box cut
    by a half-space and a box cut by an L1 ball, where the box LP's maximiser may leave the
    region and then must not be used; the box LP does serve cells of the first two."""
    seed, n_in, widths, n_out = NETS[0]
    net = random_net(seed, n_in, widths, n_out=n_out)
    g = np.random.default_rng(seed).standard_normal(n_out)
    box = Box(-0.25 * np.ones(n_in), 0.25 * np.ones(n_in))
    cut = Polyhedron(np.ones((1, n_in)) / np.sqrt(n_in), np.array([0.05])) & box
    l1 = Ball(np.full(n_in, 0.05), 1.0, norm=1) & box
    for region in (box, cut, l1):
        values = {}
        for use in (True, False):
            monkeypatch.setattr(CellBound, "use_box_lp", use)
            rep = analyze(net, region, [OutputRange(weights=g), SoftmaxAttack(0)],
                          strategy="hierarchical")
            assert rep.complete and rep[0].exact and rep[1].exact
            values[use] = (rep[0].value["min"], rep[0].value["max"], rep[1].value,
                           rep.stats["subproblem_box_lp"])
        assert values[True][:3] == pytest.approx(values[False][:3], abs=TOL)
        assert values[False][3] == 0 and (region is l1 or values[True][3] > 0)
