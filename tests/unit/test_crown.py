"""Bounds over pieces are sound (sampling), and pruned verification equals full traversal and a MILP."""
from __future__ import annotations

import sys

import numpy as np
import pytest
from polytrav.testing.milp import milp_linear_dnf_feasible
from reference import random_net

from polytrav import Box, Polyhedron, analyze
from polytrav.bounds import crown as bounds_module
from polytrav.bounds.crown import (Concretizer, LinearBounds, backsubstitute, interval_bounds,
                                   optimized_rows, output_lower_bounds)
from polytrav.plugins.linear_property import LinearProperty
from polytrav.solvers.highs import HighsBackend
from polytrav import traverse
from polytrav.traversal import PieceView


def piece_of(net, x0, level):
    """The level-``level`` piece of ``x0`` in the box [-1, 1]^d: its input map and a membership test."""
    d = net.n_inputs
    M, m = np.eye(d), np.zeros(d)
    bits = []
    for k in range(level):
        W, b = net.weights[k], net.biases[k]
        H, h = W @ M, W @ m + b
        on = H @ x0 + h >= 0
        bits.append((H, h, on))
        M, m = H * on[:, None], h * on

    def inside(X):
        ok = np.ones(len(X), bool)
        for H, h, on in bits:
            ok &= ((X @ H.T + h >= 0) == on).all(axis=1)
        return ok
    return M, m, inside


def piece_rows(net, x0, level):
    """The piece's halfspaces ``A x <= b`` (without the box)."""
    d = net.n_inputs
    rows, rhs = [np.zeros((0, d))], [np.zeros(0)]
    M, m = np.eye(d), np.zeros(d)
    for k in range(level):
        W, b = net.weights[k], net.biases[k]
        H, h = W @ M, W @ m + b
        on = H @ x0 + h >= 0
        s = np.where(on, -1.0, 1.0)
        rows.append(s[:, None] * H)
        rhs.append(-s * h)
        M, m = H * on[:, None], h * on
    return np.vstack(rows), np.concatenate(rhs)


def vertices_of(net, x0, level):
    """Vertices of the piece (2-D), from the traversal's own machinery-free qhull call."""
    from scipy.spatial import HalfspaceIntersection

    d = net.n_inputs
    A, b = piece_rows(net, x0, level)
    A, b = np.vstack([np.eye(d), -np.eye(d), A]), np.concatenate([np.ones(2 * d), b])
    return HalfspaceIntersection(np.c_[A, -b], _interior(A, b)).intersections


def _interior(A, b):
    from scipy.optimize import linprog

    norms = np.linalg.norm(A, axis=1)
    res = linprog(np.r_[np.zeros(A.shape[1]), -1.0], A_ub=np.c_[A, norms], b_ub=b,
                  bounds=[(None, None)] * A.shape[1] + [(0, None)])
    return res.x[:-1]


def check_sound(net, level, seed, use_vertices, steps=0, refine=False):
    rng = np.random.default_rng(seed)
    d = net.n_inputs
    x0 = rng.uniform(-0.5, 0.5, d)
    M, m, inside = piece_of(net, x0, level)
    V = vertices_of(net, x0, level) if use_vertices else None
    conc = Concretizer(d, V, *(piece_rows(net, x0, level), HighsBackend()) if refine else ())
    layers = list(zip(net.weights[level:], net.biases[level:]))
    C = rng.standard_normal((4, net.n_outputs))
    L, g, _ = output_lower_bounds(layers, M, m, C, conc, steps=steps)
    lo, hi = interval_bounds(layers, M, m, conc)
    X = rng.uniform(-1, 1, (20000, d))
    X = np.vstack([X[inside(X)], x0[None]])
    Y = np.array([net.forward(x) for x in X])
    tol = 1e-9 * (1 + np.abs(Y).max())
    assert ((Y @ C.T) >= X @ L.T + g - tol).all(), "an affine lower bound is violated"
    assert (Y >= lo - tol).all() and (Y <= hi + tol).all(), "an output leaves its interval"
    return len(X)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("level", [0, 1, 2])
@pytest.mark.parametrize("use_vertices", [False, True])
def test_bounds_hold_at_every_sampled_point_of_the_piece(seed, level, use_vertices):
    net = random_net(seed, 2, [8, 7, 6], n_out=3)
    assert check_sound(net, level, seed, use_vertices) >= 1


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("level", [0, 1])
@pytest.mark.parametrize("use_vertices", [False, True])
def test_optimised_slopes_stay_sound(seed, level, use_vertices):
    net = random_net(seed, 2, [8, 7, 6], n_out=3)
    assert check_sound(net, level, seed, use_vertices, steps=15) >= 1


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("level", [1, 2])
def test_bounds_refined_by_lps_over_the_piece_stay_sound(seed, level):
    net = random_net(seed, 4, [10, 8, 6], n_out=3)
    assert check_sound(net, level, seed, False, steps=10, refine=True) >= 1


def test_lp_refinement_tightens_the_box_bounds_of_a_piece():
    """On level-1 pieces of a 6-input net the LP over the piece's rows gives the first
    remaining layer tighter bounds than the frame box, never looser ones. (Deeper layers
    can come out either way: CROWN's adaptive lower slopes are not monotone in the bounds.)"""
    tighter = 0
    for seed in range(4):
        net = random_net(seed, 6, [12, 10, 8], n_out=2)
        x0 = np.random.default_rng(seed).uniform(-0.5, 0.5, 6)
        M, m, _ = piece_of(net, x0, 1)
        layers = list(zip(net.weights[1:], net.biases[1:]))
        box = Concretizer(6)
        piece = Concretizer(6, None, piece_rows(net, x0, 1), HighsBackend().lp_session())
        plain = bounds_module.layer_bounds(layers, M, m, box)
        refined = bounds_module.layer_bounds(layers, M, m, piece)
        assert (refined.lo[0] >= plain.lo[0] - 1e-9).all()
        assert (refined.hi[0] <= plain.hi[0] + 1e-9).all()
        tighter += int((refined.lo[0] > plain.lo[0] + 1e-6).any())
    assert tighter >= 2


@pytest.mark.parametrize("use_vertices", [False, True])
def test_the_slope_gradient_equals_finite_differences(use_vertices):
    from polytrav.bounds.crown import layer_bounds, _slope_gradient, backsubstitute

    rng = np.random.default_rng(1)
    net = random_net(3, 3, [9, 9, 9], n_out=4)
    layers = list(zip(net.weights, net.biases))
    M, m = np.eye(3), np.zeros(3)
    conc = Concretizer(3, rng.uniform(-1, 1, (30, 3)) if use_vertices else None)
    bounds = layer_bounds(layers, M, m, conc)
    C = rng.standard_normal((4, 4))
    Lam, const = C @ layers[-1][0], C @ layers[-1][1]
    slopes = [np.where((bounds.lo[k] < 0) & (bounds.hi[k] > 0), rng.uniform(0, 1, (4, 9)),
                       bounds.lower_slope[k]) for k in range(3)]
    tape: list = []
    L, g = backsubstitute(Lam, const, layers, bounds, 3, M, m, slopes, tape)
    low, dL = conc.lower_and_gradient(L, g)
    grads = _slope_gradient(dL, layers, bounds, M, m, slopes, tape)
    h = 1e-6
    for k in range(3):
        for i, j in zip(*np.nonzero(np.ones_like(slopes[k]))):
            moved = [s.copy() for s in slopes]
            moved[k][i, j] += h
            numeric = (conc.lower(*backsubstitute(Lam, const, layers, bounds, 3, M, m, moved)).sum()
                       - low.sum()) / h
            assert numeric == pytest.approx(grads[k][i, j], abs=1e-4)


def test_optimised_slopes_are_never_looser_and_usually_tighter():
    tighter = 0
    for seed in range(6):
        net = random_net(seed, 3, [10, 10, 10], n_out=3)
        layers = list(zip(net.weights, net.biases))
        conc = Concretizer(3)
        C = np.random.default_rng(seed).standard_normal((3, 3))
        crown = conc.lower(*output_lower_bounds(layers, np.eye(3), np.zeros(3), C, conc)[:2])
        alpha = conc.lower(*output_lower_bounds(layers, np.eye(3), np.zeros(3), C, conc,
                                                steps=20)[:2])
        assert (alpha >= crown - 1e-9).all()
        tighter += int((alpha > crown + 1e-6).any())
    assert tighter >= 4


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("use_vertices", [False, True])
def test_an_optimised_pass_from_the_piece_s_crown_pass_holds_and_is_within_it(seed, use_vertices):
    """``output_lower_bounds(..., crown=)`` (``dnf_bound``'s second pass): every hidden
    neuron's bounds within the CROWN pass's and around its pre-activation at every sampled
    point of the piece, the outputs' bounds hold there and are no looser than CROWN's."""
    net = random_net(seed, 2, [8, 8, 7, 6], n_out=3)
    rng = np.random.default_rng(seed)
    x0 = rng.uniform(-0.5, 0.5, 2)
    M, m, inside = piece_of(net, x0, 1)
    conc = Concretizer(2, vertices_of(net, x0, 1) if use_vertices else None)
    layers = list(zip(net.weights[1:], net.biases[1:]))
    C = rng.standard_normal((4, 3))
    L0, g0, crown = output_lower_bounds(layers, M, m, C, conc)
    L, g, reused = output_lower_bounds(layers, M, m, C, conc, steps=10, crown=crown)
    X = rng.uniform(-1, 1, (20000, 2))
    X = np.vstack([X[inside(X)], x0[None]])
    tol = 1e-9
    z = np.maximum(X @ net.weights[0].T + net.biases[0], 0.0)
    for k in range(len(layers) - 1):
        assert (reused.lo[k] >= crown.lo[k]).all() and (reused.hi[k] <= crown.hi[k]).all()
        z = z @ net.weights[k + 1].T + net.biases[k + 1]
        assert (z >= reused.lo[k] - tol).all() and (z <= reused.hi[k] + tol).all()
        z = np.maximum(z, 0.0)
    Y = np.array([net.forward(x) for x in X])
    assert ((Y @ C.T) >= X @ L.T + g - tol * (1 + np.abs(Y).max())).all()
    assert (conc.lower(L, g) >= conc.lower(L0, g0) - tol).all()


def test_the_slope_ascent_ends_once_stop_says_so_with_the_best_bound_so_far():
    """``stop`` sees each step's best values; the ascent ends at the first True, and what it
    returns is that best (never looser than CROWN's), sound at sampled points."""
    net = random_net(2, 3, [10, 10, 10], n_out=3)
    layers = list(zip(net.weights, net.biases))
    conc = Concretizer(3)
    C = np.random.default_rng(2).standard_normal((3, 3))
    crown = conc.lower(*output_lower_bounds(layers, np.eye(3), np.zeros(3), C, conc)[:2])
    full = conc.lower(*output_lower_bounds(layers, np.eye(3), np.zeros(3), C, conc, steps=20)[:2])
    target = (crown + full) / 2  # reached part-way up
    assert (full > crown + 1e-6).any()
    seen = []

    def stop(low, g):
        seen.append(low.copy())
        return bool((low >= target).all())

    L, g, _ = output_lower_bounds(layers, np.eye(3), np.zeros(3), C, conc, steps=20, stop=stop)
    low = conc.lower(L, g)
    assert 1 <= len(seen) < 20
    assert np.allclose(low, seen[-1]) and (low >= target).all() and (low >= crown - 1e-9).all()
    X = np.random.default_rng(0).uniform(-1, 1, (2000, 3))
    assert (net.forward(X) @ C.T >= X @ L.T + g - 1e-9).all()


def test_slopes_outside_zero_one_are_caught(monkeypatch):
    """Fault injection: slopes allowed up to 2 instead of 1 break soundness."""
    monkeypatch.setattr(bounds_module, "SOUND_SLOPES", (0.0, 2.0))
    monkeypatch.setattr(bounds_module, "SLOPE_STEP", 1.0)
    caught = 0
    for seed in range(6):
        try:
            check_sound(random_net(seed, 2, [8, 7, 6], n_out=3), 0, seed, False, steps=15)
        except AssertionError:
            caught += 1
    monkeypatch.undo()
    assert caught > 0


def test_a_forced_unsound_bound_is_caught(monkeypatch):
    """Fault injection: a relaxation whose chord is too low must fail the sampling check."""
    real = bounds_module.relax

    def too_tight(lo, hi):
        ls, us, ui = real(lo, hi)
        return ls, us, ui - 0.5 * np.where(ui > 0, ui, 0.0)  # the chord moved below relu

    monkeypatch.setattr(bounds_module, "relax", too_tight)
    caught = 0
    for seed in range(6):
        try:
            check_sound(random_net(seed, 2, [8, 7, 6], n_out=3), 0, seed, False)
        except AssertionError:
            caught += 1
    assert caught > 0


def split_nodes(net, base, rng, n_nodes):
    """A batch of branch-and-bound nodes under the box's bounds ``base``: per node, two
    random unstable neurons of every hidden layer split on (+1) or off (-1) as at a random
    point of the box (so the node is not empty); returns the nodes' :class:`LinearBounds`
    (leading node axis, known phases with their multipliers' signs) and their splits."""
    lo, hi, splits = [], [], []
    hs = net.pre_activations(rng.uniform(-1, 1, (n_nodes, net.n_inputs)))
    for k in range(len(base.lo)):
        unstable = np.flatnonzero(base.free(k))
        s = np.zeros((n_nodes, base.lo[k].shape[0]))
        for i in range(n_nodes):
            picked = rng.choice(unstable, size=min(2, unstable.size), replace=False)
            s[i, picked] = np.where(hs[k][i, picked] >= 0, 1.0, -1.0)
        lo.append(np.where(s > 0, np.maximum(base.lo[k], 0.0), base.lo[k]))
        hi.append(np.where(s < 0, np.minimum(base.hi[k], 0.0), base.hi[k]))
        splits.append(s)
    nodes = LinearBounds([], [], [], [], [], first=base.first, phase_sign=[])
    for l, h in zip(lo, hi):  # (nodes, 1, n_k): the rows' axis
        nodes.push(l[:, None, :], h[:, None, :])
        nodes.phase_sign.append(np.where(l >= 0.0, -1.0, np.where(h <= 0.0, 1.0, 0.0))[:, None, :])
    return nodes, splits


@pytest.mark.parametrize("seed", range(4))
def test_batched_bounds_with_known_phases_hold_on_samples(seed):
    """Branch and bound's use of the back-substitution: a batch of nodes, each with split
    neurons, whose known phases enter with multipliers ``beta >= 0`` optimised with the
    slopes. Every node's bound holds at every sampled point of the box in that node; a node
    bounded in the batch equals the node bounded alone; the multipliers stay >= 0."""
    rng = np.random.default_rng(seed)
    net = random_net(40 + seed, 3, [8, 8, 6], n_out=3)
    d, n_nodes = 3, 4
    layers = list(zip(net.weights, net.biases))
    M, m, conc = np.eye(d), np.zeros(d), Concretizer(d)
    base = bounds_module.layer_bounds(layers, M, m, conc)
    nodes, splits = split_nodes(net, base, rng, n_nodes)
    upto = len(layers) - 1
    C = rng.standard_normal((2, net.n_outputs))
    Lam = np.broadcast_to(C @ layers[-1][0], (n_nodes,) + (2, layers[-1][0].shape[1]))
    const = np.broadcast_to(C @ layers[-1][1], (n_nodes, 2))
    beta = [rng.uniform(0.0, 1.0, (n_nodes, 2, W.shape[0])) for W, _ in layers[:-1]]
    start = [b.copy() for b in beta]
    # batched equals alone (no optimisation): node 1 with its own 1-D arrays
    L, g = backsubstitute(Lam, const, layers, nodes, upto, M, m, beta=beta)
    alone = LinearBounds(*([a[1, 0] for a in getattr(nodes, f)] for f in
                           ("lo", "hi", "lower_slope", "upper_slope", "upper_intercept")),
                         first=nodes.first, phase_sign=[a[1, 0] for a in nodes.phase_sign])
    L1, g1 = backsubstitute(Lam[1], const[1], layers, alone, upto, M, m, beta=[b[1] for b in beta])
    np.testing.assert_allclose(L[1], L1, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g[1], g1, rtol=1e-12, atol=1e-12)
    L, g, low = optimized_rows(Lam, const, layers, nodes, upto, M, m, conc, 15, beta=beta)
    assert all((b >= 0).all() for b in beta) and any((b != s).any() for b, s in zip(beta, start))
    X = rng.uniform(-1, 1, (20000, d))
    hs, Y = net.trace(X)
    checked = 0
    for i in range(n_nodes):
        inside = np.ones(len(X), bool)
        for h, s in zip(hs, splits):
            inside &= np.all(np.where(s[i] > 0, h >= 0, np.where(s[i] < 0, h <= 0, True)), axis=1)
        Xi, Yi = X[inside], Y[inside] @ C.T
        tol = 1e-9 * (1 + np.abs(Yi).max(initial=0.0))
        assert (Yi >= Xi @ L[i].T + g[i] - tol).all(), f"node {i}: an affine bound is violated"
        assert (Yi >= low[i] - tol).all(), f"node {i}: a bound is violated"
        checked += inside.sum()
    assert checked > 1000, checked


def test_a_wrong_sign_of_a_known_phase_is_caught():
    """Fault injection: a known phase entered with the wrong sign (its term then raises the
    bound) breaks soundness; the sampling check of the batched bounds sees it."""
    caught = 0
    for seed in range(4):
        rng = np.random.default_rng(seed)
        net = random_net(40 + seed, 3, [8, 8, 6], n_out=3)
        layers = list(zip(net.weights, net.biases))
        M, m = np.eye(3), np.zeros(3)
        nodes, splits = split_nodes(net, bounds_module.layer_bounds(layers, M, m, Concretizer(3)),
                                    rng, 1)
        nodes.phase_sign = [-s for s in nodes.phase_sign]
        C = rng.standard_normal((2, net.n_outputs))
        beta = [np.full((1, 2, W.shape[0]), 5.0) for W, _ in layers[:-1]]
        L, g = backsubstitute((C @ layers[-1][0])[None], (C @ layers[-1][1])[None], layers, nodes,
                              len(layers) - 1, M, m, beta=beta)
        X = rng.uniform(-1, 1, (20000, 3))
        hs, Y = net.trace(X)
        inside = np.ones(len(X), bool)
        for h, s in zip(hs, splits):
            inside &= np.all(np.where(s[0] > 0, h >= 0, np.where(s[0] < 0, h <= 0, True)), axis=1)
        caught += not (Y[inside] @ C.T >= X[inside] @ L[0].T + g[0] - 1e-9).all()
    assert caught > 0


def instances(n: int, seed: int = 7):
    """Random small nets with random output properties (thresholds near the outputs' range)."""
    rng = np.random.default_rng(seed)
    for case in range(n):
        d = int(rng.integers(2, 4))
        net = random_net(100 + case, d, [8, 8, 6], n_out=3)
        lo, hi = -np.ones(d), np.ones(d)
        j = int(rng.integers(0, 3))
        y = np.array([net.forward(x) for x in rng.uniform(lo, hi, (400, d))])
        level = np.quantile(y[:, j], rng.choice([0.5, 0.99, 1.0])) + rng.choice([-0.2, 0.3, 2.0])
        C = np.zeros((1, 3))
        C[0, j] = -1.0
        unsafe = [(C, np.array([-level]))]  # output j reaches level ...
        if case % 3 == 0:  # ... or a conjunction of two rows
            C2 = np.zeros((2, 3))
            C2[0, j], C2[1, (j + 1) % 3] = -1.0, 1.0
            unsafe.append((C2, np.array([-level, np.median(y[:, (j + 1) % 3])])))
        yield case, net, Box(lo, hi), unsafe


@pytest.fixture(scope="module")
def truth():
    """The 24 instances with their exact verdicts: the full traversal's, which a MILP confirms.

    Computed once (before any test patches the bounds or the attack), for the tests below."""
    known, violated = [], 0
    for case, net, region, unsafe in instances(24):
        full = analyze(net, region, LinearProperty(unsafe, bounds=False))
        milp = milp_linear_dnf_feasible(net, unsafe, region.lower, region.upper)
        assert full[0].verdict.value in ("holds", "violated"), case  # final
        assert milp.feasible == (full[0].verdict.value == "violated"), case
        violated += milp.feasible
        known.append((case, net, region, unsafe, full[0].verdict))
    assert 0 < violated < 24  # both answers occur
    return known


def mismatches(truth, first: bool = False) -> tuple[list, int]:
    """Cases where the pruned verdict differs from the exact one (only the first if ``first``),
    and how many pruned runs proved a piece. The runs have no settle stage (its input split
    would prove the boxes before any piece: tests/unit/test_settle.py compares it)."""
    bad, pruned_any = [], 0
    for case, net, region, unsafe, verdict in truth:
        for order in ("bfs", "best-first"):
            pruned = analyze(net, region, LinearProperty(unsafe), order=order, settle=False)
            final = ("holds", "violated")  # verify mode: the verdict is the answer
            assert pruned[0].verdict.value in final
            if pruned[0].verdict != verdict:
                bad.append((case, order))
                if first:
                    return bad, pruned_any
            pruned_any += sum(pruned.stats["proven"]) > 0
    return bad, pruned_any


def _without_the_attack(monkeypatch):
    """No start attack: a violated instance is then found by the traversal, through the
    pieces the bounds did not prune (with it, most are answered at the attack's point, which
    tests the attack, not the bounds)."""
    monkeypatch.setattr("polytrav.plugins.linear_property.attack_start", lambda *args: None)


@pytest.mark.parametrize("attack", [True, False])
@pytest.mark.truth
def test_pruned_verdicts_equal_full_traversal_and_milp(monkeypatch, truth, attack):
    if not attack:
        _without_the_attack(monkeypatch)
    bad, pruned_any = mismatches(truth)
    assert bad == []
    assert pruned_any > 10  # pruning happened


def test_a_forced_unsound_margin_is_caught(monkeypatch, truth):
    """Fault injection: margins shifted up by 1 prune violated pieces; the comparison sees it."""
    _without_the_attack(monkeypatch)
    real = LinearProperty.piece_margin
    monkeypatch.setattr(LinearProperty, "piece_margin",
                        lambda self, piece, context: real(self, piece, context) + 1.0)
    bad, _ = mismatches(truth, first=True)
    assert bad, "an unsound bound went unnoticed"


def test_proven_pieces_are_recorded_with_their_volume_shares():
    net = random_net(3, 2, [10, 10, 8], n_out=2)
    region = Box(-np.ones(2), np.ones(2)) & Polyhedron([[1.0, 1.0]], [1.5])
    y0 = np.array([net.forward(x)[0] for x in np.random.default_rng(0).uniform(-1, 1, (4000, 2))])
    C = np.array([[-1.0, 0.0]])
    far = analyze(net, region, LinearProperty([(C, np.array([-(y0.max() + 100.0)]))]))
    assert far.complete and far[0].verdict.value == "holds"
    assert far.stats["polytopes"] == 0 and far.stats["proven"][0] == 1  # the region at once
    assert far.stats["proven_pieces"] == [(0, "", pytest.approx(1.0))]
    from polytrav.plugins.output_range import OutputRange

    top = analyze(net, region, OutputRange(0))[0].value["max"]  # holds, but only just
    near = analyze(net, region, LinearProperty([(C, np.array([-(top + 0.05)]))]))
    full = analyze(net, region, LinearProperty([(C, np.array([-(top + 0.05)]))], bounds=False))
    assert near[0].verdict == full[0].verdict and near[0].verdict.value == "holds"
    shares = [s for _, _, s in near.stats["proven_pieces"]]
    assert near.stats["polytopes"] < full.stats["polytopes"]
    assert all(s is not None and 0 < s < 1 for s in shares)
    assert 0 < sum(shares) <= 1 + 1e-9


def test_only_the_first_proven_pieces_get_a_volume_share(monkeypatch):
    """Volume shares are a statistic: past ``PROVEN_VOLUMES`` pieces, or with
    ``volume_shares=False``, none is computed, and the verdict and counts do not change."""
    from polytrav.plugins.output_range import OutputRange
    from polytrav.traversal import frontier

    net = random_net(3, 2, [10, 10, 8], n_out=2)
    region = Box(-np.ones(2), np.ones(2))
    top = analyze(net, region, OutputRange(0))[0].value["max"]
    prop = [(np.array([[-1.0, 0.0]]), np.array([-(top + 0.05)]))]
    every = analyze(net, region, LinearProperty(prop), settle=False)  # the pieces' shares
    from polytrav.parallel import SerialExecutor

    for flag in (True, False):  # a run in parts passes the flag to every part
        parted = analyze(net, region, LinearProperty(prop), volume_shares=flag, parts=3,
                         executor=SerialExecutor(), settle=False)
        shared = [s is not None for _, _, s in parted.stats["proven_pieces"]]
        assert len(shared) == len(every.stats["proven_pieces"]) and any(shared) == flag
    monkeypatch.setattr(frontier, "PROVEN_VOLUMES", 2)
    capped = analyze(net, region, LinearProperty(prop), settle=False)
    shares = [s for _, _, s in capped.stats["proven_pieces"]]
    assert len(shares) > 2 and capped.stats["proven_volumes"] == 2
    assert all(s is not None for s in shares[:2]) and all(s is None for s in shares[2:])
    assert capped[0].verdict == every[0].verdict and capped.stats["proven"] == every.stats["proven"]
    assert capped.stats["proven_volume_share"] == pytest.approx(sum(shares[:2]))
    skipped = analyze(net, region, LinearProperty(prop), volume_shares=False, settle=False)
    assert [s for _, _, s in skipped.stats["proven_pieces"]] == [None] * len(shares)
    assert skipped.stats["proven"] == every.stats["proven"] and skipped.stats["proven_volumes"] == 0


def test_piece_view_of_the_whole_region_is_level_zero():
    net = random_net(3, 2, [4, 4], n_out=1)
    seen = []

    def prune(piece: PieceView):
        seen.append(piece.level)
        return -1.0

    list(traverse(net, Box([-1, -1], [1, 1]), prune=prune))
    assert seen[0] == 0 and set(seen) <= {0, 1}


@pytest.mark.truth
def test_softmax_attack_with_bounds_equals_the_full_traversal_and_the_milp():
    """Robustness (verify mode) with pruning against the full traversal and a MILP, on random
    nets and boxes where both answers occur."""
    from polytrav.testing.milp import milp_max_margin

    from polytrav.plugins.adversarial import SoftmaxAttack

    rng = np.random.default_rng(11)
    robust = pruned_any = 0
    for case in range(16):
        d = int(rng.integers(2, 4))
        net = random_net(200 + case, d, [8, 8, 6], n_out=3)
        x0 = rng.uniform(-0.5, 0.5, d)
        label = int(np.argmax(net.forward(x0)))
        region = Box(x0 - 0.3 * (1 + case % 3), x0 + 0.3 * (1 + case % 3))
        pruned = analyze(net, region, SoftmaxAttack(label, mode="verify"))
        full = analyze(net, region, SoftmaxAttack(label, mode="verify", bounds=False))
        milp = milp_max_margin(net, label, region.lower, region.upper)
        expected = "violated" if milp.value > 0 else "holds"
        assert pruned[0].verdict.value == full[0].verdict.value == expected, case
        robust += expected == "holds"
        pruned_any += sum(pruned.stats["proven"]) > 0
    assert 0 < robust < 16 and pruned_any > 3


def test_the_start_attack_runs_only_when_the_search_needs_a_start(monkeypatch):
    from polytrav.plugins.adversarial import SoftmaxAttack

    calls = []
    real = SoftmaxAttack.start_point
    monkeypatch.setattr(SoftmaxAttack, "start_point",
                        lambda self: calls.append(1) or real(self))
    net = random_net(5, 2, [6, 6], n_out=3)
    x0 = np.array([0.1, -0.2])
    label = int(np.argmax(net.forward(x0)))
    tiny = analyze(net, Box(x0 - 1e-6, x0 + 1e-6), SoftmaxAttack(label, mode="verify"))
    assert tiny[0].verdict.value == "holds" and tiny.stats["proven"][0] == 1 and calls == []
    wide = analyze(net, Box(x0 - 3.0, x0 + 3.0), SoftmaxAttack(label, mode="verify"))
    assert calls == [1] and wide.stats["polytopes"] >= 1


def test_batched_restarts_return_only_points_of_the_unsafe_set():
    from polytrav.bounds.dnf import _restarts, unsafe_distance

    rng = np.random.default_rng(3)
    net = random_net(4, 3, [12, 12], n_out=3)
    lo, hi = -np.ones(3), np.ones(3)
    Y = net.forward(rng.uniform(lo, hi, (5000, 3)))
    C = np.array([[0.0, 0.0, -1.0]])
    reachable = [(C, np.array([-np.quantile(Y[:, 2], 0.995)]))]  # y_2 above its 99.5 % point
    x = _restarts(reachable, net, lo, hi, lambda x: True, np.random.default_rng(0))
    assert x is not None and np.all((lo <= x) & (x <= hi))
    assert unsafe_distance(reachable, net.forward(x[None]))[0] < 0
    far = [(C, np.array([-(Y[:, 2].max() + 100.0)]))]
    assert _restarts(far, net, lo, hi, lambda x: True, np.random.default_rng(0)) is None


@pytest.mark.parametrize("seed", range(10))
def test_bounds_with_a_larger_boxs_phases_are_sound_and_keep_those_phases(seed):
    """Input splitting passes a box's proven phases to its sub-boxes (neurons stable on a box
    are stable on every sub-box, and are not bounded again): the sub-box's bounds stay sound
    by sampling, every phase proven holds at every sample, and known phases are kept."""
    rng = np.random.default_rng(seed)
    d = int(rng.integers(2, 6))
    net = random_net(300 + seed, d, [10, 8, 6], n_out=3)
    layers = list(zip(net.weights, net.biases))
    C = rng.normal(size=(2, 3))
    lo, hi = -np.ones(d), np.ones(d)
    phases = np.zeros(net.n_neurons, np.int8)
    output_lower_bounds(layers, np.diag((hi - lo) / 2), (lo + hi) / 2, C, Concretizer(d),
                        phases=phases)
    sub_lo, sub_hi = lo.copy(), hi.copy()
    j = int(rng.integers(0, d))
    sub_hi[j] = rng.uniform(-0.5, 0.5)
    known = phases.copy()
    mid, rad = (sub_lo + sub_hi) / 2, (sub_hi - sub_lo) / 2
    L, g, _ = output_lower_bounds(layers, np.diag(rad), mid, C, Concretizer(d), phases=phases)
    assert np.all(phases[known != 0] == known[known != 0])
    X = rng.uniform(sub_lo, sub_hi, (3000, d))
    hs, Y = net.trace(X)
    Z = np.hstack(hs)
    U = (X - mid) / rad
    assert np.all(Y @ C.T >= U @ L.T + g - 1e-9)
    assert np.all(Z[:, phases > 0] >= -1e-12) and np.all(Z[:, phases < 0] <= 1e-12)


def test_an_attack_that_meets_the_unsafe_set_ends_the_run_at_the_first_polytope(monkeypatch):
    """Once the start attack's point meets the unsafe set (margin >= 0 by a forward pass),
    no piece below the region is bounded and the first polytope confirms that point; the
    verdict equals the full traversal's and the MILP's, and the witness is checked here by
    a forward pass of its own."""
    import polytrav.plugins.linear_property as module

    net = random_net(5, 3, [10, 10, 8], n_out=2)
    region = Box(-np.ones(3), np.ones(3))
    y = np.array([net.forward(x) for x in np.random.default_rng(1).uniform(-1, 1, (2000, 3))])
    C, d = np.array([[-1.0, 0.0]]), np.array([-np.quantile(y[:, 0], 0.9)])  # y0 in its top 10 %
    unsafe = [(C, d)]
    assert milp_linear_dnf_feasible(net, unsafe, region.lower, region.upper).feasible
    full = analyze(net, region, LinearProperty(unsafe, bounds=False))
    bounded = []
    real = module.decision_margin
    monkeypatch.setattr(module, "decision_margin",
                        lambda pairs, piece, *a: bounded.append(piece.level) or real(pairs, piece, *a))
    hit = analyze(net, region, LinearProperty(unsafe), settle=False)  # (the stage would
    assert hit[0].verdict == full[0].verdict and hit[0].verdict.value == "violated"  # answer)
    assert np.all(C @ net.forward(hit[0].witness) <= d) and region.contains(hit[0].witness)
    assert hit.stats["polytopes"] == 1 and bounded == [0]  # the region's bound, before the attack
    # without the shortcut the same run bounds the start's piece at every level
    bounded.clear()
    monkeypatch.setattr(LinearProperty, "_met", lambda self, *args: None)
    slow = analyze(net, region, LinearProperty(unsafe), settle=False)
    assert slow[0].verdict.value == "violated" and bounded == [0, 1, 2]


@pytest.mark.parametrize("seed", range(4))
def test_a_batch_of_boxes_gets_each_boxs_own_bounds_and_phases(seed):
    """``box_output_bounds`` on a batch equals ``output_lower_bounds`` on each box alone (a
    zero-width input included), with and without phases known from a first pass, and both
    hold at sampled points."""
    from polytrav.bounds.crown import box_output_bounds

    net = random_net(seed, 4, [9, 8, 7], n_out=3)
    layers = list(zip(net.weights, net.biases))
    rng = np.random.default_rng(seed)
    mid, rad = rng.uniform(-1, 1, (7, 4)), rng.uniform(0, 0.6, (7, 4))
    rad[0, 1] = 0.0
    C = rng.standard_normal((2, 3))
    phases = np.zeros((7, net.n_neurons), np.int8)
    first = box_output_bounds(layers, mid, rad, C, phases=phases)
    known = phases.copy()
    again = box_output_bounds(layers, mid, rad, C, phases=known)
    assert (known == phases).all() and (phases != 0).any()
    for i in range(7):
        for start, (L_b, g_b) in ((np.zeros(net.n_neurons, np.int8), first),
                                  (phases[i].copy(), again)):
            L, g, _ = output_lower_bounds(layers, np.diag(rad[i]), mid[i], C, Concretizer(4),
                                          phases=start)
            assert np.allclose(L, L_b[i]) and np.allclose(g, g_b[i])
            assert (start == phases[i]).all()
        U = rng.uniform(-1, 1, (500, 4))
        Y = net.forward(mid[i] + rad[i] * U)
        assert (Y @ C.T >= U @ first[0][i].T + first[1][i] - 1e-9).all()


@pytest.mark.parametrize("seed", range(6))
def test_l2_ball_bounds_are_sound_and_tight(seed):
    """:class:`L2BallConcretizer` over ``[-1, 1]^d ∩ {||half (u - u0)|| <= r}``: never above
    the exact minimum (Clarabel, to 1e-8), within 1e-4 of it (the dual's ``lam`` is refined),
    never above any sampled point of the set, and its minimiser lies in the box."""
    import cvxpy as cp

    from polytrav.bounds.crown import L2BallConcretizer

    rng = np.random.default_rng(seed)
    d = int(rng.integers(2, 10))
    half = rng.uniform(0.1, 3.0, d)
    half[rng.random(d) < 0.2] = 0.0  # fixed coordinates
    u0, r = rng.uniform(-1.0, 1.0, d), float(rng.uniform(0.05, 4.0))
    L, g = rng.normal(size=(4, d)), rng.normal(size=4)
    low, ustar = L2BallConcretizer(half, u0, r).lower_and_gradient(L, g)
    assert np.all(np.abs(ustar) <= 1.0)
    for i in range(4):
        u = cp.Variable(d)
        cons = [u >= -1, u <= 1, cp.norm(cp.multiply(half, u - u0)) <= r]
        cons += [u[j] == u0[j] for j in range(d) if half[j] == 0]
        problem = cp.Problem(cp.Minimize(L[i] @ u + g[i]), cons)
        problem.solve(solver="CLARABEL")
        assert low[i] <= problem.value + 1e-8 * (1 + abs(problem.value))
        assert low[i] >= problem.value - 1e-4 * (1 + abs(problem.value))
    v = rng.normal(size=(4000, d))
    v *= r * rng.uniform(0, 1, (4000, 1)) ** (1 / d) / np.linalg.norm(v * np.where(half > 0, half, 1.0),
                                                                       axis=1)[:, None]
    pts = u0 + np.where(half > 0, v, 0.0)
    pts = pts[np.all(np.abs(pts) <= 1.0, axis=1)]
    assert np.all(pts @ L.T + g >= low - 1e-12)


def test_a_pieces_slope_ascent_is_the_general_one_and_sound():
    """``optimized_rows`` on one piece's rows (its short path, ``_piece_ascent``) gives the
    bounds of the general ascent (which a ``tape`` selects) up to rounding, over the frame
    box and over vertices, each no worse than CROWN's, and every one holds at sampled
    points of the box (or of the vertices' hull)."""
    rng = np.random.default_rng(7)
    for trial in range(12):
        d, sizes = 3, [3, 12, 10, 9, 4]
        layers = [(rng.normal(size=(sizes[i + 1], sizes[i])), 0.5 * rng.normal(size=sizes[i + 1]))
                  for i in range(len(sizes) - 1)]
        M, m = 0.7 * np.eye(d), 0.2 * rng.normal(size=d)
        V = rng.uniform(-1, 1, (8, d)) if trial % 2 else None
        conc = Concretizer(d, V)
        bounds = bounds_module.layer_bounds(layers, M, m, conc)
        C = rng.normal(size=(3, 4))
        W, b = layers[-1]
        upto = len(layers) - 1
        L, g, low = optimized_rows(C @ W, C @ b, layers, bounds, upto, M, m, conc, 10)
        L2, g2, low2 = optimized_rows(C @ W, C @ b, layers, bounds, upto, M, m, conc, 10,
                                      tape=[])
        assert np.allclose(low, low2, atol=1e-9) and np.allclose(L, L2, atol=1e-9)
        assert np.allclose(conc.lower(L, g), low, atol=1e-12)
        crown = conc.lower(*backsubstitute(C @ W, C @ b, layers, bounds, upto, M, m))
        assert (low >= crown - 1e-12).all()
        # points of the set the bounds hold on: the box, or the vertices' hull
        X = rng.uniform(-1, 1, (2000, d)) if V is None else rng.dirichlet(np.ones(8), 2000) @ V
        a = X @ M.T + m
        for Wk, bk in layers[:-1]:
            a = np.maximum(a @ Wk.T + bk, 0.0)
        Y = a @ W.T + b
        assert (Y @ C.T >= X @ L.T + g - 1e-9).all(), trial


def test_a_batch_bounds_each_boxs_own_neurons_or_the_union_all_need():
    """``rows_of``: per box its own neurons (padded to the widest box) where boxes need
    different ones, the shared union where some box needs all of it."""
    from polytrav.bounds.crown import rows_of

    needed = np.array([[1, 0, 0, 1, 0], [0, 0, 1, 0, 0], [0, 1, 0, 0, 0]], bool)
    j, at = rows_of(needed)
    assert j.shape == (3, 2)
    for box in range(3):
        assert set(np.flatnonzero(needed[box])) <= set(j[box])
    x = np.zeros(needed.shape)
    x[at, j] = 1.0
    assert (x[needed] == 1.0).all()
    j, at = rows_of(np.array([[1, 1, 0], [0, 1, 0]], bool))
    assert list(j) == [0, 1] and at == slice(None)
    j, _ = rows_of(np.zeros((2, 4), bool))
    assert j.size == 0


def _ascent_case(rng, trial):
    """A random piece's ascent arguments: layers, CROWN's bounds, rows ``C`` on the outputs,
    and a stop over two groups of rows (every third trial)."""
    from polytrav.bounds.crown import RowsProven

    d = 2 + trial % 3
    sizes = [d] + [int(n) for n in rng.integers(3, 14, 1 + trial % 4)] + [4]
    layers = [(rng.normal(size=(sizes[i + 1], sizes[i])), 0.5 * rng.normal(size=sizes[i + 1]))
              for i in range(len(sizes) - 1)]
    M, m = 0.7 * np.eye(d), 0.2 * rng.normal(size=d)
    V = rng.uniform(-1, 1, (3 * d, d)) if trial % 2 else None
    conc = Concretizer(d, V)
    bounds = bounds_module.layer_bounds(layers, M, m, conc)
    C = rng.normal(size=(4, 4))
    stop = RowsProven(np.array([0, 2, 4]), rng.normal(size=4) - 2.0) if trial % 3 == 0 else None
    return layers, bounds, M, m, conc, C, stop


def test_the_compiled_piece_ascent_gives_numpys_bounds():
    """The compiled ascent (numba, optional) gives the NumPy ascent's bounds up to rounding,
    over the frame box and over vertices, with and without a stop, each sound at sampled
    points of the box (or of the vertices' hull)."""
    kernel = pytest.importorskip("polytrav.bounds.piece_kernel")  # needs numba
    rng = np.random.default_rng(11)
    for trial in range(24):
        layers, bounds, M, m, conc, C, stop = _ascent_case(rng, trial)
        W, b = layers[-1]
        upto = len(layers) - 1
        args = (C @ W, C @ b, layers, bounds, upto, M, m, conc, 10, 0.1, stop)
        L, g, low = bounds_module._piece_ascent(*args)
        L2, g2, low2 = bounds_module._compiled_piece_ascent(kernel, *args)
        assert np.allclose(low, low2, atol=1e-10) and np.allclose(L, L2, atol=1e-10), trial
        assert np.allclose(g, g2, atol=1e-10) and np.allclose(conc.lower(L2, g2), low2)
        d = M.shape[0]
        X = (rng.uniform(-1, 1, (2000, d)) if conc.V is None
             else rng.dirichlet(np.ones(len(conc.V)), 2000) @ conc.V)
        a = X @ M.T + m
        for Wk, bk in layers[:-1]:
            a = np.maximum(a @ Wk.T + bk, 0.0)
        assert ((a @ W.T + b) @ C.T >= X @ L2.T + g2 - 1e-9).all(), trial


def test_the_compiled_ascent_takes_over_after_a_count_of_ascents(monkeypatch):
    """``compiled_ascent``: None for the first ``KERNEL_AFTER`` ascents of a process (NumPy's
    path), then the compiled module where numba is installed; None for good without it."""
    monkeypatch.setattr(bounds_module, "KERNEL_AFTER", 3)
    monkeypatch.setattr(bounds_module, "_ascents", 0)
    monkeypatch.setattr(bounds_module, "_kernel", None)
    assert [bounds_module.compiled_ascent() for _ in range(3)] == [None] * 3
    try:
        import polytrav.bounds.piece_kernel as expected
    except ImportError:
        expected = None
    assert bounds_module.compiled_ascent() is expected
    monkeypatch.setattr(bounds_module, "_ascents", 0)
    monkeypatch.setattr(bounds_module, "_kernel", None)
    monkeypatch.setitem(sys.modules, "polytrav.bounds.piece_kernel", None)  # no numba
    monkeypatch.delattr(sys.modules["polytrav.bounds"], "piece_kernel", raising=False)
    assert [bounds_module.compiled_ascent() for _ in range(5)] == [None] * 5
    assert bounds_module._kernel is False


@pytest.mark.truth
def test_pruned_verdicts_with_the_compiled_ascent_equal_the_truth(monkeypatch, truth):
    """``analyze`` with the compiled slope ascent from the first piece on: the verdicts of
    the full traversal and the MILP (as :func:`test_pruned_verdicts_equal_full_traversal_and_milp`)."""
    pytest.importorskip("polytrav.bounds.piece_kernel")  # needs numba
    monkeypatch.setattr(bounds_module, "KERNEL_AFTER", 0)
    monkeypatch.setattr(bounds_module, "_ascents", 0)
    monkeypatch.setattr(bounds_module, "_kernel", None)
    _without_the_attack(monkeypatch)
    bad, pruned_any = mismatches(truth)
    assert bad == [] and pruned_any > 10
    assert bounds_module._kernel  # the compiled ascent ran

