"""The MILP ground truth (polytrav.testing.milp) against brute-force cell enumeration.

Closures of the full-dimensional cells cover the box and the network is affine on each, so an
optimum over the region is the best of one LP per cell (scipy linprog on the cell's own
constraints and local model from ``brute_force_regions``).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest
from scipy.optimize import linprog

from polytrav.testing.milp import (
    interval_bounds,
    lp_bounds,
    milp_counterfactual,
    milp_linear_dnf_feasible,
    milp_max_linear,
    milp_max_margin,
    milp_robust,
)
from reference import brute_force_regions, random_net

TOL = 1e-6

# name: (seed, widths, n_out, lo, hi)
CASES = {
    "w8": (0, [8], 1, [-1.0, -1.0], [1.0, 1.0]),
    "w6-6": (1, [6, 6], 1, [-1.5, -1.0], [0.5, 2.0]),
    "w4-4-4": (2, [4, 4, 4], 1, [-1.0, -1.0], [1.0, 1.0]),
    "w5-3-4x3": (8, [5, 3, 4], 3, [-1.0, -1.0], [1.0, 1.0]),
}
BINARY = [k for k, v in CASES.items() if v[2] == 1]


@lru_cache(maxsize=None)
def case(name):
    """``(net, lo, hi, regions)``; binary nets get their output bias centred so both classes occur."""
    from polytrav import Network

    seed, widths, n_out, lo, hi = CASES[name]
    lo, hi = np.array(lo), np.array(hi)
    net = random_net(seed, 2, widths, n_out)
    if n_out == 1:
        y = net.forward(grid(lo, hi, 41))[:, 0]
        bs = list(net.biases)
        bs[-1] = bs[-1] - np.median(y)
        net = Network.from_arrays(net.weights, bs)
    return net, lo, hi, brute_force_regions(net, lo, hi)


def grid(lo, hi, n):
    g0, g1 = np.linspace(lo[0], hi[0], n), np.linspace(lo[1], hi[1], n)
    return np.stack(np.meshgrid(g0, g1, indexing="ij"), -1).reshape(-1, 2)


def close(a, b):
    return abs(a - b) <= TOL * max(1.0, abs(a), abs(b))


def _rows(r, A=None, b=None):
    if A is None:
        return r["A"], r["b"]
    return np.vstack([r["A"], A]), np.concatenate([r["b"], b])


def bf_max(regions, g, A=None, b=None, E=None, e=None):
    """max over cells of ``g @ (W x + c)`` on cell ∩ region, one LP each."""
    best = -np.inf
    for r in regions:
        Au, bu = _rows(r, A, b)
        res = linprog(-(g @ r["W"]), A_ub=Au, b_ub=bu, A_eq=E, b_eq=e,
                      bounds=[(None, None)] * Au.shape[1], method="highs")
        if res.status == 0:
            best = max(best, float(g @ (r["W"] @ res.x + r["c"])))
    return best


def change_rows(net, x0, target):
    """``G`` with the counterfactual constraint ``G f(x) >= 0`` (closed)."""
    y0 = net.forward(x0)
    if net.n_outputs == 1:
        return np.array([[-1.0 if y0[0] >= 0 else 1.0]])
    others = [k for k in range(net.n_outputs) if k != target]
    G = np.zeros((len(others), net.n_outputs))
    G[:, target] = 1.0
    G[np.arange(len(others)), others] = -1.0
    return G


def bf_counterfactual(net, regions, x0, kind, target=None, margin=0.0, immutable=(), weights=None):
    """min over cells of ``||weights * (x - x0)||`` subject to ``G (W x + c) >= margin`` on the
    cell."""
    n = x0.size
    if target is None and net.n_outputs > 1:
        c0 = int(np.argmax(net.forward(x0)))
        return min(bf_counterfactual(net, regions, x0, kind, j, margin, immutable, weights)
                   for j in range(net.n_outputs) if j != c0)
    G = change_rows(net, x0, target)
    w = np.ones(n) if weights is None else np.asarray(weights, float)
    k = n if kind == 1 else 1
    I = np.diag(w)  # rows w_j (x_j - x0_j) <= s_j (or t)
    one = np.ones((n, 1)) if kind == np.inf else np.eye(n)
    cost = np.r_[np.zeros(n), np.ones(k)]
    xb = [(x0[i], x0[i]) if i in immutable else (None, None) for i in range(n)]
    best = np.inf
    for r in regions:
        A_ub = np.vstack([
            np.c_[r["A"], np.zeros((r["A"].shape[0], k))],
            np.c_[-(G @ r["W"]), np.zeros((G.shape[0], k))],
            np.c_[I, -one],
            np.c_[-I, -one],
        ])
        b_ub = np.concatenate([r["b"], G @ r["c"] - margin, w * x0, -w * x0])
        res = linprog(cost, A_ub=A_ub, b_ub=b_ub, bounds=xb + [(0, None)] * k, method="highs")
        if res.status == 0:
            best = min(best, res.fun)
    return best


def bf_dnf(regions, disjuncts):
    """max over disjuncts and cells of t subject to ``C (W x + c) + t <= d``."""
    best = -np.inf
    for C, d in disjuncts:
        for r in regions:
            A_ub = np.vstack([np.c_[r["A"], np.zeros(r["A"].shape[0])], np.c_[C @ r["W"], np.ones(len(d))]])
            b_ub = np.concatenate([r["b"], d - C @ r["c"]])
            res = linprog(np.r_[0.0, 0.0, -1.0], A_ub=A_ub, b_ub=b_ub,
                          bounds=[(None, None)] * 3, method="highs")
            if res.status == 0:
                best = max(best, -res.fun)
    return best


def directions(net):
    rng = np.random.default_rng(7)
    if net.n_outputs == 1:
        return [np.array([1.0]), np.array([-1.0])]
    return [rng.standard_normal(net.n_outputs) for _ in range(2)]


# ---------------------------------------------------------------- (a) linear objectives
@pytest.mark.parametrize("name", CASES)
def test_max_linear_matches_brute_force(name):
    net, lo, hi, regions = case(name)
    for g in directions(net):
        r = milp_max_linear(net, g, lo, hi, offset=0.25)
        assert r.status == "optimal"
        assert close(r.value, bf_max(regions, g) + 0.25)
        assert close(r.value, float(g @ net.forward(r.x)) + 0.25)
        assert np.all(r.x >= lo) and np.all(r.x <= hi)
        assert 0 <= r.n_binaries <= net.n_neurons


@pytest.mark.parametrize("name", ["w6-6", "w5-3-4x3"])
def test_max_linear_polyhedral_and_equality(name):
    net, lo, hi, regions = case(name)
    A, b = np.array([[1.0, 1.0], [-1.0, 2.0]]), np.array([0.3, 0.8])
    E, e = np.array([[1.0, -0.5]]), np.array([0.1])
    for g in directions(net):
        r = milp_max_linear(net, g, lo, hi, A=A, b=b)
        assert close(r.value, bf_max(regions, g, A, b))
        assert np.all(A @ r.x <= b + 1e-7)
        r = milp_max_linear(net, g, lo, hi, A=A, b=b, E=E, e=e)
        assert close(r.value, bf_max(regions, g, A, b, E, e))
        assert abs(E @ r.x - e)[0] <= 1e-7


def test_max_linear_infeasible_region():
    net, lo, hi, _ = case("w8")
    r = milp_max_linear(net, [1.0], lo, hi, A=[[1.0, 0.0]], b=[lo[0] - 1.0])
    assert r.status == "infeasible" and r.value == -np.inf and r.x is None


def test_max_margin_matches_brute_force():
    net, lo, hi, regions = case("w5-3-4x3")
    for label in range(3):
        r = milp_max_margin(net, label, lo, hi)
        expect = {i: bf_max(regions, np.eye(3)[i] - np.eye(3)[label]) for i in range(3) if i != label}
        assert r.status == "optimal"
        assert close(r.value, max(expect.values()))
        assert close(expect[r.cls], r.value)
        y = net.forward(r.x)
        assert close(y[r.cls] - y[label], r.value)


@pytest.mark.parametrize("name", ["w6-6", "w4-4-4", "w5-3-4x3"])
def test_lp_bounds_are_sound_tighter_and_give_the_same_optima(name):
    net, lo, hi, regions = case(name)
    A, b = np.array([[1.0, 1.0]]), np.array([0.5])
    tight, loose = lp_bounds(net, lo, hi, A, b), interval_bounds(net, lo, hi)
    X = np.random.default_rng(0).uniform(lo, hi, (5000, 2))
    X = X[X @ A[0] <= b[0]]
    h = X.T
    for (tl, tu), (il, iu), W, bias in zip(tight, loose, net.weights, net.biases):
        h = W @ h + bias[:, None]
        assert np.all(h.min(axis=1) >= tl - 1e-9) and np.all(h.max(axis=1) <= tu + 1e-9)
        assert np.all(tl >= il - 1e-12) and np.all(tu <= iu + 1e-12)
        h = np.maximum(h, 0.0)
    assert sum(int(((tl < 0) & (tu > 0)).sum()) for tl, tu in tight) <= \
        sum(int(((il < 0) & (iu > 0)).sum()) for il, iu in loose)
    for g in np.eye(net.n_outputs):
        a = milp_max_linear(net, g, lo, hi, A=A, b=b)
        c = milp_max_linear(net, g, lo, hi, A=A, b=b, bounds="lp")
        assert a.status == c.status == "optimal" and close(a.value, c.value)


@pytest.mark.parametrize("bounds", ["interval", "lp"])
def test_robust_decides_as_the_max_margin(bounds):
    rng = np.random.default_rng(3)
    answers = set()
    for seed in range(12):
        net = random_net(seed, 3, [6, 6], n_out=3)
        x0 = rng.uniform(-0.5, 0.5, 3)
        label, r = int(np.argmax(net.forward(x0))), 0.2 * (1 + seed % 4)
        full = milp_max_margin(net, label, x0 - r, x0 + r)
        dec = milp_robust(net, label, x0 - r, x0 + r, bounds=bounds)
        assert full.status == dec.status == "optimal"
        assert (full.value > 0) == (dec.value > 0), seed
        if dec.value > 0:
            y = net.forward(dec.x)
            assert np.all(np.abs(dec.x - x0) <= r + 1e-9) and y[dec.cls] > y[label]
        else:
            assert dec.value == -np.inf
        answers.add(dec.value > 0)
    assert answers == {True, False}


def test_dnf_matches_brute_force():
    net, lo, hi, regions = case("w5-3-4x3")
    hard = (np.array([[1.0, -1.0, 0.0], [0.0, 1.0, -1.0]]), np.array([-2.0, -2.0]))
    for disjuncts in ([hard], [hard, (np.eye(3)[[2]], np.array([-0.1]))]):
        r = milp_linear_dnf_feasible(net, disjuncts, lo, hi)
        t = bf_dnf(regions, disjuncts)
        assert close(r.value, t)
        assert r.feasible == (t >= -1e-9)
        C, d = disjuncts[r.disjunct]
        assert close(float(np.min(d - C @ net.forward(r.x))), r.value)


# ---------------------------------------------------------------- (b) counterfactuals
@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("norm", [1, np.inf])
def test_counterfactual_matches_brute_force(name, norm):
    net, lo, hi, regions = case(name)
    for x0 in (np.array([0.1, -0.2]), np.array([-0.4, 0.7])):
        r = milp_counterfactual(net, x0, norm, lo, hi)
        expect = bf_counterfactual(net, regions, x0, norm)
        assert np.isfinite(expect)
        assert r.status == "optimal"
        assert close(r.value, expect)
        assert close(r.value, np.linalg.norm(r.x - x0, ord=norm))
        G = change_rows(net, x0, r.cls)
        assert np.all(G @ net.forward(r.x) >= -1e-6)


@pytest.mark.parametrize("name", ["w6-6", "w5-3-4x3"])
@pytest.mark.parametrize("norm", [1, np.inf])
def test_weighted_counterfactual_matches_brute_force(name, norm):
    net, lo, hi, regions = case(name)
    w = np.array([0.3, 2.5])
    for x0 in (np.array([0.1, -0.2]), np.array([-0.4, 0.7])):
        r = milp_counterfactual(net, x0, norm, lo, hi, weights=w)
        expect = bf_counterfactual(net, regions, x0, norm, weights=w)
        assert r.status == "optimal" and np.isfinite(expect)
        assert close(r.value, expect)
        assert close(r.value, np.linalg.norm(w * (r.x - x0), ord=norm))
        assert not close(r.value, bf_counterfactual(net, regions, x0, norm))  # w matters
    with pytest.raises(ValueError, match="weights"):
        milp_counterfactual(net, x0, norm, lo, hi, weights=[1.0, 0.0])


@pytest.mark.parametrize("norm", [1, np.inf])
def test_counterfactual_target_margin_immutable(norm):
    net, lo, hi, regions = case("w5-3-4x3")
    x0 = np.array([0.2, 0.3])
    c0 = int(np.argmax(net.forward(x0)))
    for j in (k for k in range(3) if k != c0):
        r = milp_counterfactual(net, x0, norm, lo, hi, target=j, margin=0.05)
        assert r.cls == j
        assert close(r.value, bf_counterfactual(net, regions, x0, norm, j, margin=0.05))
    net, lo, hi, regions = case("w6-6")
    x0 = np.array([-0.3, 0.4])
    r = milp_counterfactual(net, x0, norm, lo, hi, immutable=(0,))
    expect = bf_counterfactual(net, regions, x0, norm, immutable=(0,))
    assert close(r.value, expect) if np.isfinite(expect) else r.value == np.inf
    if r.x is not None:
        assert r.x[0] == x0[0]


# ---------------------------------------------------------------- (c) dense grid
@pytest.mark.parametrize("name", CASES)
def test_no_grid_point_beats_milp(name):
    net, lo, hi, _ = case(name)
    X = grid(lo, hi, 201)
    Y = net.forward(X)
    for g in directions(net):
        r = milp_max_linear(net, g, lo, hi)
        assert (Y @ g).max() <= r.value + 1e-9
    for x0 in (np.array([0.1, -0.2]), np.array([-0.4, 0.7])):
        for norm in (1, np.inf):
            r = milp_counterfactual(net, x0, norm, lo, hi)
            if net.n_outputs == 1:
                ok = (Y @ change_rows(net, x0, None).T >= 0).all(axis=1)
            else:
                c0 = int(np.argmax(net.forward(x0)))
                ok = np.zeros(len(X), bool)
                for j in (k for k in range(net.n_outputs) if k != c0):
                    ok |= (Y @ change_rows(net, x0, j).T >= 0).all(axis=1)
            assert ok.any()
            dist = np.linalg.norm(X[ok] - x0, ord=norm, axis=1)
            assert dist.min() >= r.value - 1e-9
