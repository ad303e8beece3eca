"""The box LP (polytrav.bounds.box_lp) against SciPy's HiGHS on random and degenerate cells.

Every ``optimal`` answer must equal ``linprog``'s optimum and be feasible; every ``bound``
(early stop) must be a true upper bound; nothing may be claimed for an empty cell.
"""
from fractions import Fraction

import numpy as np
import pytest
from scipy.optimize import linprog

from polytrav.bounds.box_lp import maximize_in_box
from polytrav.bounds.lagrange import CellBound


def _lp(A, b, g):
    res = linprog(-g, A_ub=A, b_ub=b, bounds=(-1.0, 1.0), method="highs")
    return res.status, (-res.fun if res.status == 0 else None)


def _cells(seed: int, n: int):
    """Random cells ``(A, b, g)`` containing a point; some degenerate on purpose: zero costs,
    repeated and opposite rows, every row tight at one point, rows of zeros."""
    rng = np.random.default_rng(seed)
    for t in range(n):
        d = int(rng.choice([1, 2, 3, 5, 20, 100, 784]))
        m = int(rng.integers(1, 25))
        A = rng.standard_normal((m, d))
        if t % 5 == 0:
            A[:, : d // 2] = 0.0
        if t % 7 == 0 and m > 2:
            A[1], A[2] = A[0], -A[0]
        if t % 17 == 0:
            A[-1] = 0.0
        A /= np.maximum(np.linalg.norm(A, axis=1), 1e-300)[:, None]
        u0 = rng.uniform(-1, 1, d) * rng.uniform(0, 1)
        b = A @ u0 + rng.exponential(0.3, m) * (rng.random(m) < 0.8)
        if t % 11 == 0:
            b = A @ u0  # every row through u0
        if t % 17 == 0:
            b[-1] = 1.0  # the zero row 0 <= 1
        g = rng.standard_normal(d)
        if t % 13 == 0:
            g[: d // 2] = 0.0
        yield A, b, g


@pytest.mark.parametrize("seed", [0, 1])
def test_optima_equal_highs_and_early_stops_are_bounds(seed):
    statuses = []
    for A, b, g in _cells(seed, 400):
        status, opt = _lp(A, b, g)
        assert status == 0
        res = maximize_in_box(A, b, g)
        statuses.append(res.status)
        assert res.bound >= opt - 1e-9 * (1 + abs(opt))
        assert np.all(res.lam >= 0) and res.lam.shape == b.shape
        if res.status == "optimal":
            assert res.bound == pytest.approx(opt, abs=1e-8 * (1 + abs(opt)))
            assert g @ res.u == pytest.approx(opt, abs=1e-8 * (1 + abs(opt)))
            assert np.abs(res.u).max() <= 1.0 and np.all(A @ res.u <= b + 1e-9)
        for stop in (opt - 1e-3, opt + 1e-3):
            early = maximize_in_box(A, b, g, stop=stop)
            if early.status == "bound":
                assert stop >= opt and early.bound <= stop
            elif early.status == "optimal":
                assert g @ early.u == pytest.approx(opt, abs=1e-8 * (1 + abs(opt)))
    assert statuses.count("optimal") >= 0.99 * len(statuses)


def test_the_box_corner_when_no_row_cuts_the_box():
    g = np.array([1.0, -2.0, 0.5])
    A = np.array([[1.0, 0.0, 0.0]])
    res = maximize_in_box(A, np.array([2.0]), g)
    assert res.status == "optimal" and res.iterations == 0
    np.testing.assert_array_equal(res.u, [1.0, -1.0, 1.0])
    assert res.bound == pytest.approx(3.5) and res.lam.tolist() == [0.0]


def test_a_simple_cell_and_its_multiplier():
    """max u0 + u1 on [-1, 1]^2 with u0 + u1 <= 1: the multiplier of the unit row is sqrt 2."""
    A, b = np.array([[1.0, 1.0]]) / np.sqrt(2), np.array([1.0]) / np.sqrt(2)
    res = maximize_in_box(A, b, np.ones(2))
    assert res.status == "optimal" and res.bound == pytest.approx(1.0)
    assert res.lam == pytest.approx([np.sqrt(2)]) and res.u.sum() == pytest.approx(1.0)
    early = maximize_in_box(A, b, np.ones(2), stop=1.0 + 1e-9)
    assert early.status in ("bound", "optimal") and early.bound <= 1.0 + 1e-9


def test_an_empty_cell_is_never_decided():
    """Rows that exclude each other (u0 >= 0.5 and u0 <= -0.5), and a row beyond the box."""
    g = np.array([1.0, 1.0])
    A = np.array([[-1.0, 0.0], [1.0, 0.0]])
    res = maximize_in_box(A, np.array([-0.5, -0.5]), g)
    assert res.status == "undecided" and res.u is None
    assert _lp(A, np.array([-0.5, -0.5]), g)[0] == 2
    res = maximize_in_box(np.array([[1.0, 0.0]]), np.array([-1.5]), g)
    assert res.status == "undecided"


def test_no_skip_from_rounding_with_large_multipliers():
    """A wedge of two rows 3e-7 rad apart: its multipliers are about 3e6, and ``phi`` computed
    in floating point falls 1.9e-10 below its exact value. The point where both rows hold
    (exactly feasible, in rational arithmetic) beats ``beat`` by 4.85e-11, so no bound may
    prove ``max <= beat`` (a reviewer's counterexample to a margin that ignored the
    multipliers' size)."""
    A = np.array([[-0.9972818924988638, -0.0736805733818926],
                  [0.997281870394647, 0.07368087256645704]])
    b = np.array([0.2262888725616806, -0.22628885829805848])
    g = np.array([-0.07323186760889054, 0.9975882039189166])
    beat = 0.04745195705970005
    a = [[Fraction(x) for x in row] for row in A.tolist()]
    bb = [Fraction(x) for x in b.tolist()]
    det = a[0][0] * a[1][1] - a[0][1] * a[1][0]
    u = [(bb[0] * a[1][1] - a[0][1] * bb[1]) / det, (a[0][0] * bb[1] - bb[0] * a[1][0]) / det]
    assert all(abs(x) <= 1 for x in u)
    assert all(sum(r[j] * u[j] for j in range(2)) <= rhs for r, rhs in zip(a, bb))
    assert sum(Fraction(gj) * x for gj, x in zip(g.tolist(), u)) > Fraction(beat)
    assert maximize_in_box(A, b, g, stop=beat).status != "bound"
    bound = CellBound()
    assert not bound.decide(A, b, g, beat)[0]
    bound.learn(A, b, g, np.array([float(x) for x in u]))  # its huge multipliers, kept
    assert not bound.decide(A, b, g, beat)[0]


def test_rows_of_any_norm_and_non_finite_input():
    """Tolerances are absolute, so rows are scaled to unit norm first: a row of norm 1e-12
    that excludes half the box is not lost in the tolerance; NaN never gives an answer."""
    A, b, g = np.array([[1e-12, 0.0]]), np.array([-5e-13]), np.array([1.0, 0.0])
    res = maximize_in_box(A, b, g)
    assert res.status == "optimal" and res.bound == pytest.approx(-0.5)
    assert res.lam == pytest.approx([1e12])  # the multiplier of the row as given
    assert maximize_in_box(np.array([[1.0, 0.0]]), np.array([np.nan]), g).status == "undecided"
    assert maximize_in_box(np.array([[np.nan, 0.0]]), np.array([0.5]), g).status == "undecided"
