"""Bounds on g - f of two networks (polytrav.bounds.difference) hold at sampled points and
contain the exact extremes (an independent MILP of both networks), and beat bounding the
copies separately where g is close to f."""
from __future__ import annotations

import numpy as np
import pytest
from polytrav.testing.milp import milp_max_linear
from reference import perturbed_copy

from polytrav import Network
from polytrav.bounds.crown import BOUND_TOL
from polytrav.bounds.difference import NetworkPair, difference_bounds, relax_difference_paired
from polytrav.testing.reference import random_net

PATHS = ("stacked", "difference", "best")
#: Sampled points per box.
SAMPLES = 4000


def pruned(f: Network, seed: int, share: float = 0.25) -> Network:
    """``f`` with a share of each hidden layer's neurons removed (their rows and columns 0)."""
    rng = np.random.default_rng(seed)
    Ws, bs = [W.copy() for W in f.weights], [b.copy() for b in f.biases]
    for k in range(len(Ws) - 1):
        gone = rng.random(Ws[k].shape[0]) < share
        Ws[k][gone], bs[k][gone], Ws[k + 1][:, gone] = 0.0, 0.0, 0.0
    return Network.from_arrays(Ws, bs)


def random_box(seed: int, n: int):
    rng = np.random.default_rng(seed + 1000)
    lo = rng.uniform(-1.0, 0.5, n)
    return lo, lo + rng.uniform(0.1, 1.0, n)


def assert_contains(f, g, lo, hi, bounds, C=None, seed=0):
    X = np.random.default_rng(seed).uniform(lo, hi, (SAMPLES, lo.shape[0]))
    D = g.forward(X) - f.forward(X)
    if C is not None:
        D = D @ np.asarray(C).T
    assert (D >= bounds.lower).all(), (bounds.path, D.min(axis=0), bounds.lower)
    assert (D <= bounds.upper).all(), (bounds.path, D.max(axis=0), bounds.upper)


@pytest.mark.parametrize("seed", range(4))
def test_the_paired_lines_hold_on_a_grid_of_every_phase_case(seed):
    """``relu(z + D) - relu(z)`` lies between its lines at every point of the box of ``(z,
    D)`` with ``z + D`` in ``g``'s bounds, in each case of phases (active, inactive,
    unstable, for ``f`` and ``g``), with the bounds of ``z`` real or only its sign."""
    rng = np.random.default_rng(seed)
    centres = np.array([-2.0, -0.2, 0.0, 0.3, 2.0])
    lf, uf, ld, ud = [], [], [], []
    for zc in centres:
        for dc in (-1.0, -0.05, 0.0, 0.05, 1.0):
            wz, wd = rng.uniform(0.1, 1.0), rng.uniform(0.01, 0.5)
            lf.append(zc - wz), uf.append(zc + wz), ld.append(dc - wd), ud.append(dc + wd)
    lf, uf, ld, ud = map(np.array, (lf, uf, ld, ud))
    # g's bounds: z + D's, tightened at random (never past the true range's far side)
    lg, ug = lf + ld, uf + ud
    cut = rng.uniform(0.0, 0.3, lg.shape) * (ug - lg)
    lg, ug = lg + cut * (rng.random(lg.shape) < 0.5), ug - cut * (rng.random(lg.shape) < 0.5)
    for real in (np.ones(lf.shape, bool), rng.random(lf.shape) < 0.5):
        lines = relax_difference_paired(lf, uf, lg, ug, ld, ud, real)
        ls, lp, li, us, up, ui = lines
        assert all(np.isfinite(a).all() for a in lines)
        u = np.linspace(0.0, 1.0, 41)
        z = lf[:, None, None] + (uf - lf)[:, None, None] * u[None, :, None]
        D = ld[:, None, None] + (ud - ld)[:, None, None] * u[None, None, :]
        inside = (z + D >= lg[:, None, None]) & (z + D <= ug[:, None, None])
        d = np.maximum(z + D, 0.0) - np.maximum(z, 0.0)
        low = ls[:, None, None] * D + lp[:, None, None] * z + li[:, None, None]
        high = us[:, None, None] * D + up[:, None, None] * z + ui[:, None, None]
        assert (low <= d + 1e-12)[inside].all()
        assert (d <= high + 1e-12)[inside].all()
    # both phases known: the exact line, e.g. f active and g inactive: d = -z
    lines = relax_difference_paired(np.array([0.5]), np.array([1.0]), np.array([-1.0]),
                                    np.array([-0.2]), np.array([-2.0]), np.array([-0.7]),
                                    np.array([False]))
    assert [float(a[0]) for a in lines] == [0.0, -1.0, 0.0, 0.0, -1.0, 0.0]


@pytest.mark.parametrize("seed", range(12))
def test_bounds_of_perturbed_copies_hold_at_sampled_points(seed):
    f = random_net(seed, 3, [8, 7, 6], n_out=3)
    g = perturbed_copy(f, seed, [0.005, 0.05, 0.3][seed % 3])
    lo, hi = random_box(seed, 3)
    C = np.random.default_rng(seed).standard_normal((2, 3)) if seed % 2 else None
    for path in PATHS:
        assert_contains(f, g, lo, hi, difference_bounds(f, g, lo, hi, C, path=path), C, seed)


@pytest.mark.parametrize("seed", range(6))
def test_bounds_of_pruned_copies_hold_at_sampled_points(seed):
    f = random_net(seed, 4, [10, 10], n_out=2)
    g = pruned(f, seed)
    lo, hi = random_box(seed, 4)
    for path in PATHS:
        assert_contains(f, g, lo, hi, difference_bounds(f, g, lo, hi, path=path), seed=seed)


def test_different_depths_are_bounded_through_the_stack():
    f = random_net(1, 3, [8, 6], n_out=2)
    g = random_net(2, 3, [5, 5, 4], n_out=2)
    lo, hi = random_box(1, 3)
    bounds = difference_bounds(f, g, lo, hi)
    assert bounds.path == "stacked"
    assert_contains(f, g, lo, hi, bounds)
    with pytest.raises(Exception, match="same depth"):
        difference_bounds(f, g, lo, hi, path="difference")


def test_copies_with_neurons_removed_or_reordered_are_matched_neuron_by_neuron():
    """A copy whose pruned neurons are gone (narrower layers) and whose neurons are
    shuffled is still bounded by the difference, as tightly as the zeroed copy in order."""
    f = random_net(4, 3, [10, 9], n_out=2)
    g = pruned(f, 4, 0.3)
    Ws, bs = [W.copy() for W in g.weights], [b.copy() for b in g.biases]
    order = np.random.default_rng(4).permutation(10)
    live = [i for i in order if Ws[0][i].any()]  # drop the removed neurons, shuffle the rest
    Ws[0], bs[0], Ws[1] = Ws[0][live], bs[0][live], Ws[1][:, live]
    h = Network.from_arrays(Ws, bs)
    lo, hi = random_box(4, 3)
    zeroed, matched = difference_bounds(f, g, lo, hi), difference_bounds(f, h, lo, hi)
    assert matched.path == "difference" and h.weights[0].shape[0] < 10
    assert_contains(f, h, lo, hi, matched)
    assert np.allclose(matched.lower, zeroed.lower) and np.allclose(matched.upper, zeroed.upper)


@pytest.mark.parametrize("seed", range(4))
def test_exact_extremes_lie_inside_the_bounds(seed):
    """The largest and smallest g_j - f_j over the box by a MILP of both networks (the
    stack with the input shared), independent of polytrav's bounds."""
    f = random_net(seed, 2, [5, 4], n_out=2)
    g = perturbed_copy(f, seed, 0.05) if seed % 2 else pruned(f, seed, 0.3)
    lo, hi = random_box(seed, 2)
    bounds = difference_bounds(f, g, lo, hi)
    shared = Network.stack([f, g]).compose_input(np.vstack([np.eye(2), np.eye(2)]), np.zeros(4))
    for j in range(2):
        row = np.zeros(4)
        row[j], row[2 + j] = -1.0, 1.0
        top = milp_max_linear(shared, row, lo, hi)
        bottom = -milp_max_linear(shared, -row, lo, hi).value
        assert top.status == "optimal"
        assert bounds.lower[j] <= bottom + 1e-9 and top.value <= bounds.upper[j] + 1e-9, \
            (j, bounds.lower[j], bottom, top.value, bounds.upper[j])


def test_the_stack_bounded_copy_by_copy_gives_crown_s_numbers_for_the_whole_stack():
    """The pair's stacked bounds come from each network's own CROWN (the stack is
    block-diagonal after its shared first layer): the same numbers as CROWN on the stack,
    phases included."""
    from polytrav.bounds.crown import box_output_bounds

    f = random_net(4, 3, [9, 8, 7], n_out=2)
    g = pruned(f, 4, 0.2)
    pair = NetworkPair.of(f, g)
    rng = np.random.default_rng(4)
    lo = rng.uniform(-1.0, 0.0, (5, 3))
    mid, rad = lo + 0.3, np.full((5, 3), 0.3)
    C = rng.standard_normal((3, 4))
    L, g0 = pair.box_output_bounds(mid, rad, C, path="stacked")
    L2, g2 = box_output_bounds(pair.stacked, mid, rad, C)
    assert np.allclose(L, L2, atol=1e-12) and np.allclose(g0, g2, atol=1e-12)
    # the phases proven: the stack's (in the pair's matched order) against the holder's (the
    # plain stack of f and g, in their own order), mapped by the pair's index
    stack_phases = np.zeros((5, sum(W.shape[0] for W, _ in pair.stacked[:-1])), np.int8)
    box_output_bounds(pair.stacked, mid, rad, C, phases=stack_phases)
    held = np.zeros((5, max(int(i.max()) for i in pair.index) + 1), np.int8)
    pair.box_output_bounds(mid, rad, C, phases=held, path="stacked")
    where = np.concatenate(pair.index)
    assert np.array_equal(held[:, where[where >= 0]], stack_phases[:, where >= 0])


def test_identical_networks_differ_by_zero():
    f = random_net(3, 3, [8, 8], n_out=2)
    lo, hi = random_box(3, 3)
    bounds = difference_bounds(f, f, lo, hi)
    tol = BOUND_TOL * 10
    assert np.all(np.abs(bounds.lower) <= tol) and np.all(np.abs(bounds.upper) <= tol)


def test_the_difference_is_tighter_than_the_copies_bounded_separately():
    ratios = []
    for seed in range(8):
        f = random_net(seed, 3, [10, 10, 8], n_out=3)
        g = perturbed_copy(f, seed, 0.01)
        lo, hi = random_box(seed, 3)
        today = difference_bounds(f, g, lo, hi, path="stacked")
        best = difference_bounds(f, g, lo, hi)
        assert np.all(best.upper - best.lower <= today.upper - today.lower + 1e-12)
        ratios.append(np.median((best.upper - best.lower) / (today.upper - today.lower)))
    assert np.median(ratios) < 0.5, ratios


def test_a_stack_of_two_copies_is_seen_as_a_pair_and_bounded_with_phases():
    """The input split's use: the stacked network of a two-network query, a batch of
    sub-boxes with the phases proven on their parent; every sampled point of each sub-box
    meets its affine lower bounds."""
    f = random_net(5, 3, [8, 8], n_out=2)
    g = perturbed_copy(f, 5, 0.02)
    stack = Network.stack([f, g]).compose_input(np.vstack([np.eye(3), np.eye(3)]), np.zeros(6))
    pair = NetworkPair.in_stack(stack)
    assert pair is not None and NetworkPair.in_stack(f) is None
    C = np.hstack([-np.eye(2), np.eye(2)])
    C = np.vstack([C, -C])
    lo, hi = random_box(5, 3)
    phases = np.zeros((1, stack.n_neurons), np.int8)
    pair.box_output_bounds(((lo + hi) / 2)[None], ((hi - lo) / 2)[None], C, phases)
    cut = (lo[0] + hi[0]) / 2
    lows, highs = np.array([lo, lo]), np.array([hi, hi])
    highs[0, 0], lows[1, 0] = cut, cut
    phases = np.repeat(phases, 2, axis=0)
    mid, rad = (lows + highs) / 2, (highs - lows) / 2
    L, g0 = pair.box_output_bounds(mid, rad, C, phases)
    for b in range(2):
        X = np.random.default_rng(b).uniform(lows[b], highs[b], (SAMPLES, 3))
        values = stack.forward(X) @ C.T
        U = (X - mid[b]) / rad[b]
        assert (values >= U @ L[b].T + g0[b] - BOUND_TOL * (1 + np.abs(g0[b]))).all()
        pre = np.hstack(stack.trace(X)[0])  # the hidden layers' pre-activations
        sure = phases[b]
        assert np.all((pre >= 0)[:, sure > 0]) and np.all((pre <= 0)[:, sure < 0])


def test_the_input_split_bounds_a_stacked_pair_by_its_difference():
    """``split_box`` on a two-network stack with the unsafe set |g_j - f_j| >= eps: with eps
    just above the exact largest difference (MILP) every box is proven, below it the
    candidate it returns is a real counterexample."""
    from polytrav.bounds.split import split_box
    from polytrav.solvers.highs import HighsBackend

    f = random_net(6, 2, [5, 4], n_out=2)
    g = perturbed_copy(f, 6, 0.02)
    lo, hi = random_box(6, 2)
    stack = Network.stack([f, g]).compose_input(np.vstack([np.eye(2), np.eye(2)]), np.zeros(4))
    rows = []
    for j in range(2):
        row = np.zeros(4)
        row[j], row[2 + j] = -1.0, 1.0
        rows.append(row)
    top = max(milp_max_linear(stack, s * row, lo, hi).value for row in rows for s in (1, -1))
    for eps in (top * 1.05, top * 0.8):
        pairs = [(s * row[None] / np.sqrt(2), np.array([-eps / np.sqrt(2)]))
                 for row in rows for s in (1, -1)]  # s (g_j - f_j) >= eps
        result = split_box(stack, lo, hi, pairs, [HighsBackend()], max_boxes=4000)
        assert result.difference
        if eps > top:
            assert result.candidate is None and not result.open_boxes
            assert result.proven_volume_share == pytest.approx(1.0)
        else:
            assert result.candidate is not None
            gap = np.abs(g.forward(result.candidate) - f.forward(result.candidate)).max()
            assert gap >= eps - 1e-12


def piece_at(stack, x0, level, lo, hi):
    """The traversal piece of ``stack`` at level ``level`` that holds ``x0`` (its first
    ``level`` hidden layers' code fixed), in the frame ``x = mid + rad * u`` of the box:
    ``(M, m)`` with layer ``level``'s input ``M u + m``, and its rows ``A u <= b``."""
    mid, rad = (lo + hi) / 2, (hi - lo) / 2
    M, m = np.diag(rad), mid.copy()
    A, b = [], []
    for W, c in list(zip(stack.weights, stack.biases))[:level]:
        P, q = W @ M, W @ m + c
        on = P @ ((x0 - mid) / rad) + q > 0
        A.append(np.where(on[:, None], -P, P))
        b.append(np.where(on, q, -q))
        M, m = P * on[:, None], q * on
    rows = (np.vstack(A), np.concatenate(b)) if A else (np.zeros((0, lo.shape[0])), np.zeros(0))
    return M, m, rows


@pytest.mark.parametrize("seed", range(8))
def test_piece_bounds_of_a_stacked_pair_hold_on_the_piece(seed):
    """:meth:`NetworkPair.piece_output_bounds` on traversal pieces of every level of a
    two-network stack (perturbed and pruned copies): every sampled point of the piece meets
    the affine lower bounds of the rows ``±(g_j - f_j)`` and of a random row; they are never
    worse than the stack's own CROWN bound, and better on the whole box for perturbed copies."""
    from polytrav.bounds.crown import Concretizer, output_lower_bounds, rounded_down
    from polytrav.bounds.difference import stacked_pair
    from polytrav.solvers.highs import HighsBackend

    f = random_net(seed, 3, [8, 7, 6], n_out=2)
    g = perturbed_copy(f, seed, 0.01) if seed % 2 else pruned(f, seed)
    stack = Network.stack([f, g]).compose_input(np.vstack([np.eye(3), np.eye(3)]), np.zeros(6))
    pair = stacked_pair(stack)
    assert pair is not None and stacked_pair(stack) is pair
    lo, hi = random_box(seed, 3)
    rng = np.random.default_rng(seed)
    D = np.hstack([-np.eye(2), np.eye(2)])
    C = np.vstack([D, -D, rng.standard_normal((1, 4))])
    X = rng.uniform(lo, hi, (SAMPLES, 3))
    codes = [(np.vstack(stack.trace(X)[0][k].T).T > 0) for k in range(3)]
    for level in range(3):
        x0 = X[0]
        M, m, rows = piece_at(stack, x0, level, lo, hi)
        conc = Concretizer(3, None, rows, HighsBackend())
        L, g0 = pair.piece_output_bounds(level, M, m, C, conc)
        inside = np.all([(codes[k] == codes[k][0]).all(axis=1) for k in range(level)], axis=0) \
            if level else np.ones(SAMPLES, bool)
        U = (X[inside] - (lo + hi) / 2) / ((hi - lo) / 2)
        values = stack.forward(X[inside]) @ C.T
        assert (values >= U @ L.T + rounded_down(g0, g0)).all(), level
        assert (rounded_down(conc.lower(L, g0), g0) <= values.min(axis=0)).all()
        layers = list(zip(stack.weights[level:], stack.biases[level:]))
        Ls, gs, _ = output_lower_bounds(layers, M, m, C, conc)
        assert (conc.lower(L, g0) >= conc.lower(Ls, gs) - 1e-12).all()  # the better per row
        if seed % 2 and level == 0:  # the difference's bound beats the copies' own
            assert (conc.lower(L[:4], g0[:4]) > conc.lower(Ls[:4], gs[:4])).all()


def test_neuron_branch_and_bound_on_a_stacked_pair_uses_the_difference():
    """``prove_margins`` on the stack of a pair with the unsafe set |g_j - f_j| >= eps: where
    the difference bounds it (eps = 1, about 15 times the largest difference) the root is
    proven, without them it takes branching; below a sampled difference its counterexample is
    real, both ways."""
    from polytrav.bounds.branch_and_bound import BaBVerdict, prove_margins
    from polytrav.solvers.highs import HighsBackend

    f = random_net(7, 4, [8, 8], n_out=2)
    g = perturbed_copy(f, 7, 0.01)
    lo, hi = random_box(7, 4)
    stack = Network.stack([f, g]).compose_input(np.vstack([np.eye(4), np.eye(4)]), np.zeros(8))
    X = np.random.default_rng(7).uniform(lo, hi, (SAMPLES, 4))
    seen = np.abs(g.forward(X) - f.forward(X)).max()
    rows = np.hstack([-np.eye(2), np.eye(2)])
    C = np.vstack([rows, -rows])  # every row eps - s (g_j - f_j) > 0: |g - f| < eps
    groups = [[i] for i in range(4)]
    nodes = {}
    for flag in (True, False):
        out = prove_margins(stack, lo, hi, -C, -np.ones(4), groups=groups,
                            lp_backends=[HighsBackend()], pair=flag)
        below = prove_margins(stack, lo, hi, -C, -np.full(4, 0.9 * seen), groups=groups,
                              lp_backends=[HighsBackend()], pair=flag)
        assert out.verdict is BaBVerdict.HOLDS
        assert below.verdict is BaBVerdict.VIOLATED
        x = below.counterexample
        assert np.abs(g.forward(x) - f.forward(x)).max() >= 0.9 * seen
        nodes[flag] = out.nodes
    assert nodes[True] == 1 < nodes[False]
