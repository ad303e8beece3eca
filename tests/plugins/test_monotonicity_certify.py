"""Certified global monotonicity over a box (issue 28, item 3): the slope bounds are sound
(fuzzed against brute-force cells and sampled slopes), polytrav's verdicts agree with the
MILP of :mod:`polytrav.testing.slope_milp`, and every ``violated`` has a confirmed pair."""
from __future__ import annotations

import numpy as np
import pytest
from budgets import DECIDE  # a guard: these searches must decide, however busy the machine
from reference import brute_force_regions, random_net

from polytrav import Box, Network, analyze
from polytrav.bounds.split import BoxPiece
from polytrav.bounds.slope import derivative_step, slope_bounds
from polytrav.plugins.monotonicity import Monotonicity
from polytrav.plugins.monotonicity.bound import SlopeBound
from polytrav.vocabulary.results import Verdict

#: Brute-force slopes within this of zero count as zero.
SLOPE_EPS = 1e-9


@pytest.fixture(scope="module")
def milp():
    """The slope MILP, :mod:`polytrav.testing.slope_milp`."""
    from polytrav.testing import slope_milp

    return slope_milp


def real_pair(net, lo, hi, pair, feature, output, direction) -> bool:
    """The pair violates by a plain forward pass: in the box, only the feature differs
    (raised), the output moves the wrong way strictly."""
    x, x2 = (np.asarray(p, float) for p in pair)
    others = np.arange(net.n_inputs) != feature
    inside = all((p >= lo).all() and (p <= hi).all() for p in (x, x2))
    y, y2 = net.forward(x)[output], net.forward(x2)[output]
    return bool(inside and x2[feature] > x[feature] and np.array_equal(x[others], x2[others])
                and (y2 < y if direction == "increasing" else y2 > y))


def interval_masks(net, lo, hi):
    """``(on, off)`` per hidden layer from interval pre-activation bounds over the box."""
    masks, zl, zu = [], np.asarray(lo, float), np.asarray(hi, float)
    for W, b in zip(net.weights[:-1], net.biases[:-1]):
        Wp, Wn = np.maximum(W, 0), np.minimum(W, 0)
        hl, hu = Wp @ zl + Wn @ zu + b, Wp @ zu + Wn @ zl + b
        masks.append((hl > 0, hu < 0))
        zl, zu = np.maximum(hl, 0), np.maximum(hu, 0)
    return masks


def sampled_slopes(net, lo, hi, feature, output, n=3000, seed=0):
    """Local slopes at random points of the box (the code's convention, on iff h >= 0)."""
    X = np.random.default_rng(seed).uniform(lo, hi, (n, len(lo)))
    V = np.zeros((n, net.n_inputs))
    V[:, feature] = 1.0
    Z = X
    for W, b in zip(net.weights[:-1], net.biases[:-1]):
        H = Z @ W.T + b
        V, Z = (H >= 0) * (V @ W.T), np.maximum(H, 0)
    return V @ net.weights[-1][output]


def random_box(rng, n):
    c = rng.uniform(-1, 1, n)
    r = rng.uniform(0.05, 1.0, n)
    return c - r, c + r


def mostly_positive(net, shift=0.15):
    """Non-negative weights, the hidden ones lowered a little: monotone in places only."""
    return Network.from_arrays([np.abs(W) - (shift if k else 0.0) * np.abs(W).max()
                                for k, W in enumerate(net.weights)], net.biases)


@pytest.mark.parametrize("seed", range(40))
def test_derivative_step_contains_every_product(seed):
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((5, 4)) * (rng.random((5, 4)) < 0.7)
    lo = rng.standard_normal(4)
    hi = lo + rng.random(4) * (rng.random(4) < 0.7)
    if seed % 3 == 0:  # sign-consistent intervals: the clamped sides
        lo, hi = np.abs(lo), np.abs(lo) + np.abs(hi - lo)
    L, H = derivative_step(W, lo, hi)
    D = rng.uniform(lo, hi, (500, 4))
    D = np.vstack([D, lo, hi])
    Y = D @ W.T
    assert (Y >= L).all() and (Y <= H).all()
    # a side that is a sum of non-negative terms is exactly >= 0
    nonneg = ~(((W > 0) & (lo < 0)) | ((W < 0) & (hi > 0))).any(axis=1)
    assert (L[nonneg] >= 0).all()


@pytest.mark.parametrize("seed", range(24))
@pytest.mark.parametrize("meet", ["forward", "all"])
def test_slope_bounds_contain_every_sampled_slope(seed, meet):
    rng = np.random.default_rng(seed)
    widths = [[6], [5, 4], [4, 4, 3]][seed % 3]
    net = random_net(seed, 3, widths, n_out=2)
    if seed % 2:
        net = mostly_positive(net)
    lo, hi = random_box(rng, 3)
    feature, output = seed % 3, seed % 2
    low, high = slope_bounds(net.weights, interval_masks(net, lo, hi), feature, output, meet=meet)
    s = sampled_slopes(net, lo, hi, feature, output, seed=seed)
    assert low <= s.min() + 1e-12 and high >= s.max() - 1e-12, (low, s.min(), s.max(), high)


@pytest.mark.parametrize("seed", range(16))
def test_box_margin_never_exceeds_the_true_minimum_slope(seed):
    """The bound on a box (CROWN masks, as the input splitting uses it) against every
    brute-force cell's slope: a positive margin only when no cell has the wrong sign."""
    rng = np.random.default_rng(100 + seed)
    net = random_net(seed, 2, [[5, 4], [6], [4, 3, 3]][seed % 3], n_out=1)
    if seed % 2:
        net = mostly_positive(net, 0.05)
    lo, hi = random_box(rng, 2)
    feature = seed % 2
    slopes = np.array([r["W"][0, feature] for r in brute_force_regions(net, lo, hi)])
    for direction, sign in (("increasing", 1.0), ("decreasing", -1.0)):
        for meet in ("forward", "all"):
            margin = SlopeBound(feature, 0, direction, meet).margin(net, BoxPiece(lo, hi))
            assert margin <= (sign * slopes).min() + 1e-12, (direction, meet, margin)
            if margin > 0:
                assert (sign * slopes >= -SLOPE_EPS).all()


def test_a_monotone_network_is_proven_without_a_polytope():
    """Non-negative weights: the slope bound proves the whole box; so does the MILP."""
    net = Network.from_arrays([np.abs(W) for W in random_net(3, 4, [16, 16]).weights],
                              random_net(3, 4, [16, 16]).biases)
    box = Box(-np.ones(4), np.ones(4))
    rep = analyze(net, box, Monotonicity(2, "increasing", stop_at_first=True))
    # proven; no polytope visited, so no slope is known (the value is not exact)
    assert rep[0].verdict is Verdict.HOLDS and not rep[0].exact and rep.complete
    assert rep[0].n_polytopes == 0
    rep = analyze(net, box, Monotonicity(2, "increasing", bounds=True))  # no stop_at_first
    assert rep[0].verdict is Verdict.HOLDS and rep.complete and rep[0].n_polytopes == 0


def test_zero_slopes_are_allowed_by_the_bound():
    """A feature switched off everywhere (slope exactly 0) is proven both ways at once."""
    W0 = np.array([[1.0, 0.0], [0.0, -1.0]])
    net = Network.from_arrays([W0, [[1.0, 1.0]]], [[0.0, -5.0], [0.0]])  # x_1's neuron is off
    for d in ("increasing", "decreasing"):
        rep = analyze(net, Box([-1.0, -1.0], [1.0, 1.0]), Monotonicity(1, d, stop_at_first=True))
        assert rep[0].verdict is Verdict.HOLDS and rep[0].n_polytopes == 0


def test_split_search_proves_what_the_root_bound_cannot():
    """relu(x_0 + 0.3) - 0.5 relu(x_0 - 0.4) has slopes 0, 1, 0.5, but over the whole box
    the interval bound lets the second neuron be on with the first off (-0.5); bisecting
    the box at x_0 = 0 proves both halves."""
    net = Network.from_arrays([[[1.0, 0.0], [1.0, 0.0]], [[1.0, -0.5]]], [[0.3, -0.4], [0.0]])
    box = Box([-1.0, -1.0], [1.0, 1.0])
    a = Monotonicity(0, "increasing", stop_at_first=True)
    a.validate(net, box)
    assert SlopeBound(0, 0, "increasing").margin(net, BoxPiece(box.lower, box.upper)) < 0
    found = a.split_search()
    assert found.proven and found.boxes > 1
    rep = analyze(net, box, Monotonicity(0, "increasing", stop_at_first=True))
    assert rep[0].verdict is Verdict.HOLDS and rep.complete and rep[0].n_polytopes == 0
    assert rep[0].details["split"] == {"proven": True, "boxes": found.boxes, "open": 0,
                                       "candidate": False}
    assert any("input splitting" in line for line in Monotonicity.describe(None, rep[0]))
    off = analyze(net, box, Monotonicity(0, "increasing", stop_at_first=True, split=0))
    assert off[0].verdict is Verdict.HOLDS and off[0].n_polytopes > 0


def test_an_incomplete_run_never_holds():
    net = Network.from_arrays([np.abs(W) for W in random_net(5, 3, [16, 16]).weights],
                              random_net(5, 3, [16, 16]).biases)
    box = Box(-np.ones(3), np.ones(3))
    cut = analyze(net, box, Monotonicity(0, "increasing", stop_at_first=True, bounds=False),
                  max_polytopes=2)
    assert cut[0].verdict is Verdict.UNKNOWN and not cut[0].exact and not cut.complete


@pytest.mark.parametrize("seed", range(12))
def test_polytrav_agrees_with_the_milp(seed, milp):
    rng = np.random.default_rng(200 + seed)
    n_in = 2 + seed % 3
    net = random_net(seed, n_in, [[8, 6], [10], [6, 6, 4]][seed % 3])
    if seed % 3 == 1:
        net = mostly_positive(net, 0.1)
    elif seed % 3 == 2:
        net = Network.from_arrays([np.abs(W) for W in net.weights], net.biases)  # monotone
    lo, hi = random_box(rng, n_in)
    feature = seed % n_in
    for direction in ("increasing", "decreasing"):
        res = analyze(net, Box(lo, hi), Monotonicity(feature, direction, stop_at_first=True))[0]
        m = milp.slope_milp(net, lo, hi, feature, 0, direction, time_limit=DECIDE)
        assert res.verdict.value == m.verdict, (direction, res.verdict, m.verdict, m.slope)
        if m.verdict == "violated":
            assert real_pair(net, lo, hi, res.details["witness_pair"], feature, 0, direction)
            assert real_pair(net, lo, hi, m.pair, feature, 0, direction)
        if seed % 3 == 2 and direction == "increasing":
            assert m.verdict == "holds"


@pytest.mark.parametrize("seed", range(8))
def test_milp_minimum_against_brute_force(seed, milp):
    """The MILP's minimum slope is at most every full-dimensional cell's slope and, on these
    generic nets, equal to the smallest (patterns realised only on faces do not go lower)."""
    rng = np.random.default_rng(300 + seed)
    net = random_net(seed, 2, [[5, 4], [6]][seed % 2], n_out=1)
    lo, hi = random_box(rng, 2)
    feature = seed % 2
    slopes = np.array([r["W"][0, feature] for r in brute_force_regions(net, lo, hi)])
    for direction, sign in (("increasing", 1.0), ("decreasing", -1.0)):
        m = milp.slope_milp(net, lo, hi, feature, 0, direction, mode="minimise")
        assert m.status in ("optimal", "found")
        assert sign * m.slope == pytest.approx((sign * slopes).min(), abs=1e-7)
        wrong = (sign * slopes < -SLOPE_EPS).any()
        assert m.verdict == ("violated" if wrong else "holds")


def test_milp_face_pattern_is_not_a_confirmed_violation(milp):
    """relu(x) - relu(x) is constant: the MILP may pick "on, off" at x = 0 (slope -1), which
    no full-dimensional cell has; the verdict is then unconfirmed, never violated."""
    net = Network.from_arrays([[[1.0], [1.0]], [[1.0, -1.0]]], [[0.0, 0.0], [0.0]])
    m = milp.slope_milp(net, [-1.0], [1.0], 0, mode="minimise")
    assert m.verdict in ("holds", "violated_unconfirmed")
    assert m.pair is None
    res = analyze(net, Box([-1.0], [1.0]), Monotonicity(0, "increasing", stop_at_first=True))[0]
    assert res.verdict is Verdict.HOLDS


@pytest.mark.slow
def test_the_benchmark_quick_run_agrees(tmp_path):
    """``benchmarks/tabular_monotonicity.py --quick`` (about 12 s: torch, training, six
    questions): verdicts agree, pairs re-checked."""
    pytest.importorskip("torch")
    pytest.importorskip("sklearn", reason="the diabetes data: pip install scikit-learn")
    import json
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "tabular_monotonicity.py"
    out = tmp_path / "quick.csv"
    subprocess.run([sys.executable, str(script), "--quick", "--out", str(out)], check=True)
    rows = json.loads(out.with_suffix(".json").read_text())["rows"]
    assert len(rows) == 6 and all(r["agree"] and r["pairs_checked"] for r in rows)
    assert {r["milp"] for r in rows} <= {"holds", "violated"}
