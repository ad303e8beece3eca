"""The MIQP ground truth (polytrav.testing.miqp, SCIP) against the MILP ground truth for
weighted norms 1 and inf, and against brute-force cell enumeration for the weighted L2 norm.

Closures of the full-dimensional cells cover the box and the network is affine on each, so the
L2 counterfactual is the best of one convex QP per cell (cvxpy with Clarabel on the cell's own
constraints and local model from ``brute_force_regions``).
"""
from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from budgets import DECIDE
from polytrav.testing.milp import MilpCheckError, milp_counterfactual
from polytrav.testing.miqp import miqp_counterfactual
from reference import brute_force_regions, random_net

pytest.importorskip("pyscipopt", reason='SCIP is not installed: pip install -e ".[dev]"')

TOL = 1e-6
CLARABEL = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10}
#: SCIP search settings for speed on these tiny nets (Ipopt's MPEC heuristic and long root
#: cut loops cost most of the time); the tolerances, and so the optimum, are SCIP_PARAMS'.
#: The tests named "defaults" run without them.
FAST = {"heuristics/mpec/freq": -1, "separating/maxroundsroot": 5}

# name: (seed, n_inputs, widths, n_outputs)
CASES = {
    "2-6": (0, 2, [6], 1),
    "3-4-4": (1, 3, [4, 4], 1),
    "4-3-3": (2, 4, [3, 3], 1),
    "3-3-5x3": (3, 3, [3, 5], 3),
    "2-6x4": (4, 2, [6], 4),
    "4-5x3": (6, 4, [5], 3),
}


@cache
def case(name):
    """``(net, lo, hi, x0s, weights)``: the box [-1, 1]^n, two points of it and positive
    weights; binary nets get their output bias centred so both classes occur."""
    from polytrav import Network

    seed, n, widths, n_out = CASES[name]
    net = random_net(seed, n, widths, n_out)
    rng = np.random.default_rng(seed)
    lo, hi = -np.ones(n), np.ones(n)
    if n_out == 1:
        y = net.forward(rng.uniform(lo, hi, (2000, n)))[:, 0]
        net = Network.from_arrays(net.weights, [*net.biases[:-1], net.biases[-1] - np.median(y)])
    x0s = rng.uniform(-0.6, 0.6, (2, n))
    return net, lo, hi, x0s, rng.uniform(0.5, 2.0, n)


@cache
def regions(name):
    net, lo, hi, _, _ = case(name)
    return brute_force_regions(net, lo, hi)


def close(a, b):
    return abs(a - b) <= TOL * max(1.0, abs(a), abs(b))


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


def bf_l2(net, cells, x0, w, target=None, immutable=()):
    """min over cells of ``||w * (x - x0)||_2`` subject to ``G (W x + c) >= 0`` on the cell:
    one cvxpy problem whose rows ``A x <= b`` are parameters (zero rows pad the shorter cells)."""
    cp = pytest.importorskip("cvxpy")
    pytest.importorskip("clarabel")
    if target is None and net.n_outputs > 1:
        c0 = int(np.argmax(net.forward(x0)))
        return min(bf_l2(net, cells, x0, w, j, immutable) for j in range(net.n_outputs) if j != c0)
    G = change_rows(net, x0, target)
    m = max(r["A"].shape[0] for r in cells) + G.shape[0]
    A, b, x = cp.Parameter((m, x0.size)), cp.Parameter(m), cp.Variable(x0.size)
    cons = [A @ x <= b] + [x[i] == x0[i] for i in immutable]
    prob = cp.Problem(cp.Minimize(cp.sum_squares(cp.multiply(w, x - x0))), cons)
    best = np.inf
    for r in cells:
        Ar, br = np.vstack([r["A"], -(G @ r["W"])]), np.concatenate([r["b"], G @ r["c"]])
        A.value = np.vstack([Ar, np.zeros((m - Ar.shape[0], x0.size))])
        b.value = np.concatenate([br, np.zeros(m - br.size)])
        prob.solve(solver=cp.CLARABEL, **CLARABEL)
        if prob.status == cp.OPTIMAL:
            best = min(best, float(np.sqrt(max(prob.value, 0.0))))
        else:
            assert prob.status == cp.INFEASIBLE, (r["code"], prob.status)
    return best


def check_point(net, r, x0, w, norm, lo, hi):
    """``x`` lies in the box, reaches class ``cls`` by a forward pass, and ``value`` is its
    weighted distance; SCIP's objective and dual bound agree with it."""
    assert r.status == "optimal"
    assert np.all(r.x >= lo) and np.all(r.x <= hi)
    assert close(r.value, np.linalg.norm(w * (r.x - x0), ord=norm))
    assert close(r.value, r.objective) and close(r.value, r.bound)
    assert np.all(change_rows(net, x0, r.cls) @ net.forward(r.x) >= -TOL)


# ---------------------------------------------------------------- (a) L1 and Linf: the MILP
@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("norm", [1, np.inf])
def test_weighted_l1_linf_equal_the_milp(name, norm):
    net, lo, hi, x0s, w = case(name)
    for x0 in x0s:
        truth = milp_counterfactual(net, x0, norm, lo, hi, weights=w, time_limit=DECIDE)
        r = miqp_counterfactual(net, x0, lo, hi, norm=norm, weights=w, params=FAST,
                                time_limit=DECIDE)
        assert truth.status == "optimal" and np.isfinite(truth.value)
        assert close(r.value, truth.value), (name, x0, r.value, truth.value)
        check_point(net, r, x0, w, norm, lo, hi)


@pytest.mark.parametrize("norm", [1, np.inf])
def test_target_immutable_and_lp_bounds_equal_the_milp(norm):
    net, lo, hi, x0s, w = case("3-3-5x3")
    x0 = x0s[0]
    c0 = int(np.argmax(net.forward(x0)))
    for j in (k for k in range(3) if k != c0):
        for bounds in ("interval", "lp"):
            truth = milp_counterfactual(net, x0, norm, lo, hi, target=j, weights=w,
                                        immutable=(1,), time_limit=DECIDE)
            r = miqp_counterfactual(net, x0, lo, hi, norm=norm, weights=w, target=j,
                                    immutable=(1,), bounds=bounds, params=FAST,
                                    time_limit=DECIDE)
            assert r.status == truth.status and r.cls == j
            assert close(r.value, truth.value) if np.isfinite(truth.value) else r.value == np.inf
            if r.x is not None:
                assert r.x[1] == x0[1]


# ---------------------------------------------------------------- (b) L2: brute force
@pytest.mark.parametrize("name", CASES)
def test_weighted_l2_equals_brute_force(name):
    net, lo, hi, x0s, w = case(name)
    for x0 in x0s:
        expect = bf_l2(net, regions(name), x0, w)
        assert np.isfinite(expect)
        r = miqp_counterfactual(net, x0, lo, hi, norm=2, weights=w, params=FAST,
                                time_limit=DECIDE)
        assert close(r.value, expect), (name, x0, r.value, expect)
        check_point(net, r, x0, w, 2, lo, hi)


def test_l2_target_immutable_and_bounds_equal_brute_force_defaults():
    """Per target, with a fixed coordinate, under both kinds of bounds, with SCIP's own
    search settings."""
    name = "3-3-5x3"
    net, lo, hi, x0s, w = case(name)
    x0 = x0s[1]
    c0 = int(np.argmax(net.forward(x0)))
    for j, bounds in zip((k for k in range(3) if k != c0), ("interval", "lp")):
        expect = bf_l2(net, regions(name), x0, w, target=j, immutable=(0,))
        r = miqp_counterfactual(net, x0, lo, hi, weights=w, target=j, immutable=(0,),
                                bounds=bounds, time_limit=DECIDE)
        assert r.cls == j and r.status == ("optimal" if np.isfinite(expect) else "infeasible")
        assert close(r.value, expect) if np.isfinite(expect) else r.value == np.inf
        if r.x is not None:
            assert r.x[0] == x0[0]
    r = miqp_counterfactual(net, x0, lo, hi, params=FAST, time_limit=DECIDE)  # unit weights
    check_point(net, r, x0, np.ones(3), 2, lo, hi)
    assert close(r.value, bf_l2(net, regions(name), x0, np.ones(3)))


# ---------------------------------------------------------------- (c) edge cases
def test_no_counterfactual_in_the_box_is_infinite():
    net, _, _, x0s, _ = case("2-6")
    x0 = x0s[0]
    r = miqp_counterfactual(net, x0, x0 - 1e-3, x0 + 1e-3)  # the class is constant there
    assert r.status == "infeasible" and r.value == np.inf and r.x is None


def test_bad_arguments_raise():
    net, lo, hi, x0s, w = case("3-3-5x3")
    x0 = x0s[0]
    c0 = int(np.argmax(net.forward(x0)))
    for kwargs in ({"norm": 3}, {"weights": -w}, {"weights": np.r_[w[:2], 0.0]},
                   {"target": c0}, {"target": 5}, {"bounds": "crown"}):
        with pytest.raises(ValueError):
            miqp_counterfactual(net, x0, lo, hi, **kwargs)
    with pytest.raises(ValueError):
        miqp_counterfactual(net, x0, lo, np.full(3, np.inf))


def test_a_point_the_forward_pass_refuses_raises(monkeypatch):
    """The check is live: a network whose forward pass disagrees with its weights fails it."""
    net, lo, hi, x0s, w = case("2-6")
    x0 = x0s[0]
    y0 = net.forward(x0)
    monkeypatch.setattr(type(net), "forward", lambda self, x: y0)
    with pytest.raises(MilpCheckError, match="class-change"):
        miqp_counterfactual(net, x0, lo, hi, weights=w)
