"""Counterfactuals over discrete features (``integer`` grids and ``one_hot`` groups): every
cell's subproblem is a MILP, and the region's MILP gets the same integer columns. Checked
against brute force over every grid point and against the reference MILP with integer
columns (polytrav.testing.milp), in the traversal alone and handed to the MILP."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from polytrav.testing.milp import milp_counterfactual
from reference import random_net

from polytrav import Ball, Box, ConfigError, analyze, explain
from polytrav.plugins.counterfactual import Counterfactual
from polytrav.plugins.counterfactual.witness import WitnessFinder
from polytrav.vocabulary.tolerances import DISCRETE_MARGIN

TOL = 1e-6


def _on_grid(w, x0, grid, groups) -> bool:
    steps_ok = all(abs((w[j] - x0[j]) / s - round((w[j] - x0[j]) / s)) < 1e-7
                   for j, s in grid.items())
    def valid(group):
        cols = [j for j in group if j is not None]
        values = sorted(w[cols].tolist())
        return values == [0.0] * (len(cols) - 1) + [1.0] or (None in group and not any(values))

    return steps_ok and all(valid(list(g)) for g in groups)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("norm", [1, np.inf])
def test_integer_grid_against_every_grid_point(seed, norm):
    """Three integer inputs, every point of the grid enumerated: the same minimum distance to
    the nearest point of another class (by :data:`DISCRETE_MARGIN`, as the analysis states
    it), and a valid witness of that class."""
    net = random_net(seed, 3, [8, 8], n_out=3)
    lo, hi = np.zeros(3), np.array([5.0, 5.0, 2.0])
    pts = np.array(list(itertools.product(range(6), range(6), range(3))), float)
    x0 = pts[np.random.default_rng(seed).integers(len(pts))]
    Y = np.array([net.forward(p) for p in pts])
    c0 = int(np.argmax(net.forward(x0)))
    other = np.array([any(np.all(np.delete(y, q) <= y[q] - DISCRETE_MARGIN)
                          for q in range(3) if q != c0) for y in Y])
    res = analyze(net, Box(lo, hi), Counterfactual(x0, norm=norm, integer=[0, 1, 2])).results[0]
    assert res.exact
    if not other.any():
        assert res.value is None
        return
    want = np.linalg.norm(pts[other] - x0, ord=norm, axis=1).min()
    assert res.value == pytest.approx(want, abs=TOL)
    w = res.witness
    assert w is not None and np.array_equal(w, np.round(w))
    assert int(np.argmax(net.forward(w))) != c0
    assert np.linalg.norm(w - x0, ord=norm) == pytest.approx(want, abs=TOL)


GRID = {2: 1.0, 3: 0.5}
GROUPS = [[4, 5, 6]]
LO, HI = np.zeros(7), np.array([1.0, 1.0, 4.0, 3.0, 1.0, 1.0, 1.0])


def _mixed_row(rng):
    x0 = np.array([rng.uniform(), rng.uniform(), rng.integers(0, 5), 0.5 * rng.integers(0, 7),
                   0.0, 0.0, 0.0])
    x0[4 + rng.integers(3)] = 1.0
    return x0


@pytest.mark.parametrize("seed", [0, 1, 2, 5, 6, 7])
@pytest.mark.parametrize("norm", [1, np.inf])
def test_mixed_features_against_the_reference_milp(seed, norm):
    """Two continuous inputs, a step-1 and a step-0.5 grid and a one-hot group of three: the
    traversal (per-cell MILPs), the MILP at once (``milp_after=0``) and after two steps all
    equal the reference MILP with integer columns, exactly, with a valid confirmed witness;
    the relaxation is never farther."""
    net = random_net(seed, 7, [10, 10], n_out=3)
    x0 = _mixed_row(np.random.default_rng(100 + seed))
    ref = milp_counterfactual(net, x0, norm, LO, HI, grid=GRID, one_hot=GROUPS,
                              margin=DISCRETE_MARGIN)
    assert ref.status in ("optimal", "infeasible")
    want = None if np.isinf(ref.value) else ref.value
    relaxed = analyze(net, Box(LO, HI), Counterfactual(x0, norm=norm)).results[0]
    c0 = int(np.argmax(net.forward(x0)))
    for after in (500, 0, 2):
        res = analyze(net, Box(LO, HI), Counterfactual(x0, norm=norm, integer=GRID,
                                                       one_hot=GROUPS, milp_after=after)).results[0]
        assert res.exact, res.failures
        if want is None:
            assert res.value is None
            continue
        assert res.value == pytest.approx(want, abs=TOL * (1 + want))
        assert relaxed.value <= res.value + TOL
        w = res.witness
        assert w is not None and _on_grid(w, x0, GRID, GROUPS)
        assert int(np.argmax(net.forward(w))) != c0
        assert np.all(w >= LO - 1e-9) and np.all(w <= HI + 1e-9)


@pytest.mark.parametrize("seed", [0, 1, 3])
@pytest.mark.parametrize("norm", [1, np.inf])
def test_a_group_with_a_dropped_baseline_against_the_reference_milp(seed, norm):
    """A one-hot group whose baseline column was dropped (``None`` in the group: all 0 is
    the baseline category): the same optimum as the reference MILP with ``sum <= 1``, in the
    traversal and with the MILP at once, and a valid witness."""
    net = random_net(seed, 7, [10, 10], n_out=3)
    x0 = _mixed_row(np.random.default_rng(200 + seed))
    groups = [[4, 5, None]]
    ref = milp_counterfactual(net, x0, norm, LO, HI, grid=GRID, one_hot=groups,
                              margin=DISCRETE_MARGIN)
    want = None if np.isinf(ref.value) else ref.value
    for after in (500, 0):
        res = analyze(net, Box(LO, HI), Counterfactual(x0, norm=norm, integer=GRID,
                                                       one_hot=groups, milp_after=after)).results[0]
        assert res.exact, res.failures
        assert (res.value is None) == (want is None)
        if want is not None:
            assert res.value == pytest.approx(want, abs=TOL * (1 + want))
            assert _on_grid(res.witness, x0, GRID, groups)


@pytest.mark.parametrize("seed", [1, 2])
def test_discrete_features_change_the_answer(seed):
    """On these rows the relaxation's optimum is not a valid point: the discrete answer is
    strictly farther, so the per-cell MILP is what the tests above check."""
    net = random_net(seed, 7, [10, 10], n_out=3)
    x0 = _mixed_row(np.random.default_rng(100 + seed))
    a = analyze(net, Box(LO, HI), Counterfactual(x0, norm=1)).results[0]
    b = analyze(net, Box(LO, HI), Counterfactual(x0, norm=1, integer=GRID,
                                                 one_hot=GROUPS)).results[0]
    assert b.value > a.value + 0.1


def test_explain_takes_discrete_features_by_name():
    """``explain`` with ``integer`` as names (step 1) and as ``{name: step}``, a one-hot group
    by names and an immutable feature: the same distance as the analysis with the domain as
    its box, and every witness valid."""
    pd = pytest.importorskip("pandas")
    net = random_net(3, 7, [6, 6], n_out=3)
    rng = np.random.default_rng(7)
    X = np.array([_mixed_row(rng) for _ in range(3)])
    names = ["a", "b", "months", "level", "red", "green", "blue"]
    frame = pd.DataFrame(X, columns=names)
    table = explain(net, frame, [("counterfactual", {
        "norm": 1, "integer": {"months": 1.0, "level": 0.5}, "one_hot": [["red", "green", "blue"]],
        "immutable": ["b"], "scale": None})], domain=(LO, HI))
    for r, x in zip(table, X):
        assert r.ok, r.errors
        res = analyze(net, Box(LO, HI),
                      Counterfactual(x, norm=1, integer=GRID, one_hot=GROUPS, immutable=[1]))
        want = res.results[0].value
        got = r.figures["counterfactual.distance"]
        assert (got is None) == (want is None)
        if got is not None:
            assert got == pytest.approx(want, abs=TOL)
            w = np.array([r.figures[f"counterfactual.x.{n}"] for n in names])
            assert _on_grid(w, x, GRID, GROUPS) and w[1] == x[1]
    steps = explain(net, frame.iloc[:1], [("counterfactual", {
        "norm": np.inf, "integer": ["months"], "one_hot": [["red", "green", None]]})],
                    domain=(LO, HI))
    assert all(r.ok for r in steps)


@pytest.mark.parametrize("kwargs, message", [
    ({"norm": 2, "integer": [2]}, "L2"),
    ({"integer": {2: 0.0}}, "step of input 2"),
    ({"integer": [2], "one_hot": [[2, 4]]}, "named twice"),
    ({"one_hot": [[4]]}, "at least two inputs"),
    ({"one_hot": [[0, 1]]}, "not one-hot"),
    ({"one_hot": [[4, 2, None]]}, "not one-hot"),
    ({"integer": [9]}, "input indices"),
])
def test_discrete_features_refused_by_name(kwargs, message):
    net = random_net(0, 7, [6], n_out=3)
    x0 = np.array([0.5, 0.5, 2.0, 1.0, 1.0, 0.0, 0.0])
    kwargs = {"norm": 1, **kwargs}
    with pytest.raises(ConfigError, match=message):
        analyze(net, Box(LO, HI), Counterfactual(x0, **kwargs))


def test_discrete_features_need_a_box_region():
    net = random_net(0, 7, [6], n_out=3)
    x0 = np.array([0.5, 0.5, 2.0, 1.0, 1.0, 0.0, 0.0])
    with pytest.raises(ConfigError, match="Box region"):
        analyze(net, Ball(x0, 1.0, 1), Counterfactual(x0, norm=1, integer=[2]))


@pytest.mark.parametrize(("seed", "norm"), [(0, 1), (1, 1), (2, 1), (2, np.inf)])
def test_the_witness_by_lp_when_snapping_is_refused(seed, norm, monkeypatch):
    """Where the optimum's point, snapped and stepped outward, is not confirmed (numerical
    trouble at the boundary), the witness comes from the LP in its cell: the discrete inputs
    held, the class margin maximised near the optimum. Here the first way is refused
    outright: the same distance, and a valid witness of another class from the LP (the
    traversal to the end, on rows whose optimum is a cell MILP's point, so it has a cell)."""
    net = random_net(seed, 7, [10, 10], n_out=3)
    x0 = _mixed_row(np.random.default_rng(100 + seed))
    want = analyze(net, Box(LO, HI), Counterfactual(x0, norm=norm, integer=GRID,
                                                    one_hot=GROUPS, milp_after=None)).results[0]
    assert want.value is not None
    found = []
    by_lp = WitnessFinder.by_lp

    def spy(self, *args):
        found.append(by_lp(self, *args))
        return found[-1]

    monkeypatch.setattr(WitnessFinder, "snapped", lambda self, *args: None)
    monkeypatch.setattr(WitnessFinder, "by_lp", spy)
    res = analyze(net, Box(LO, HI), Counterfactual(x0, norm=norm, integer=GRID,
                                                   one_hot=GROUPS, milp_after=None)).results[0]
    assert found and found[-1] is not None
    assert res.exact and res.value == pytest.approx(want.value, abs=TOL)
    w = res.witness
    assert w is not None and np.array_equal(w, found[-1]) and _on_grid(w, x0, GRID, GROUPS)
    assert int(np.argmax(net.forward(w))) != int(np.argmax(net.forward(x0)))
    assert np.all(w >= LO - 1e-9) and np.all(w <= HI + 1e-9)
    assert np.linalg.norm(w - x0, ord=norm) <= want.value + 1e-3
