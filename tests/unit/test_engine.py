"""Traversal: the paper's 2-D grid nets, degenerate networks, budgets and bad input (the LP
traversal's: ``traverse`` here runs strategy ``hierarchical`` unless a test names another)."""
from __future__ import annotations

import functools

import numpy as np
import pytest
from reference import brute_force_cells, random_net, train_grid_net

from polytrav import Ball, Box, ConfigError, Network, Polyhedron, RegionError
from polytrav import traverse as traverse_any
from polytrav.traversal import TraversalStatus
from polytrav.vocabulary.tolerances import RADIUS_TOL

BOX2 = (np.array([-1.0, -1.0]), np.array([1.0, 1.0]))
traverse = functools.partial(traverse_any, strategy="hierarchical")


def keys_of(net, region, **kw):
    run = traverse(net, region, **kw)
    polys = list(run)
    assert run.complete, (run.status, run.stats.failures)
    return {p.key for p in polys}, polys, run


def truth(net, lo, hi):
    return {k for k, r in brute_force_cells(net, lo, hi).items() if r > RADIUS_TOL}


def line_arrangement_cells(net, lo, hi) -> int:
    """Regions of a line arrangement in a box: 1 + lines crossing + crossings inside (general position)."""
    W, b = net.weights[0], net.biases[0]
    corners = np.array([[lo[0], lo[1]], [lo[0], hi[1]], [hi[0], lo[1]], [hi[0], hi[1]]])
    vals = corners @ W.T + b
    crossing = np.flatnonzero((vals.min(0) < 0) & (vals.max(0) > 0))
    inside = 0
    for i in crossing:
        for j in crossing[crossing > i]:
            p = np.linalg.solve(W[[i, j]], -b[[i, j]])
            inside += bool(np.all(p > lo) and np.all(p < hi))
    return 1 + len(crossing) + inside


@pytest.mark.parametrize("widths", [[20], [10, 5]])
@pytest.mark.truth
def test_grid_nets_equal_brute_force(widths):
    net = train_grid_net(widths)
    keys, polys, run = keys_of(net, Box(*BOX2))
    assert keys == truth(net, *BOX2)
    # vertices rule out the flips that cannot be facets: at most ~one LP per polytope is left
    assert run.stats.flips_vertex > 0
    assert run.stats.lps <= 2 * len(polys), run.stats
    if len(widths) == 1:
        assert len(polys) == line_arrangement_cells(net, *BOX2)


def test_duplicate_and_opposite_neurons_flip_together():
    W1 = np.array([[1.0, 0.5], [1.0, 0.5], [-2.0, -1.0], [0.0, 1.0]])
    b1 = np.array([0.1, 0.1, -0.2, 0.0])
    net = Network.from_arrays([W1, np.ones((1, 4))], [b1, [0.0]])
    keys, polys, _ = keys_of(net, Box(*BOX2))
    assert keys == truth(net, *BOX2)
    assert len(polys) == 4


def test_dead_and_constant_neurons():
    W1 = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, -1.0]])
    b1 = np.array([-1.0, 2.0, 0.0])
    W2 = np.array([[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]])
    net = Network.from_arrays([W1, W2, np.ones((1, 2))], [b1, [0.0, 0.0], [0.0]])
    keys, polys, _ = keys_of(net, Box(*BOX2))
    assert keys == truth(net, *BOX2)
    for p in polys:
        assert not p.code[0][0] and p.code[0][1] and p.code[1][1]  # 0 >= 0 counts as on


def test_hyperplane_through_box_corner_and_concurrent_hyperplanes():
    angles = np.linspace(0, np.pi, 7)[:-1]
    W1 = np.c_[np.cos(angles), np.sin(angles)]
    W1 = np.vstack([W1, [1.0, 1.0]])  # x + y = 2 touches the corner (1, 1)
    b1 = np.r_[np.zeros(6), -2.0]
    net = Network.from_arrays([W1, np.ones((1, 7))], [b1, [0.0]])
    keys, polys, _ = keys_of(net, Box(*BOX2), start=[0.0, 0.0])  # start where 6 lines meet
    assert len(polys) == 12
    assert keys == truth(net, *BOX2)


def test_fixed_coordinate_traverses_the_affine_hull():
    net = random_net(3, 3, [6, 4])
    region = Box([-1.0, 0.3, -1.0], [1.0, 0.3, 1.0])
    keys, polys, _ = keys_of(net, region)
    reduced = net.compose_input(np.array([[1.0, 0], [0, 0], [0, 1.0]]), [0.0, 0.3, 0.0])
    assert keys == truth(reduced, *BOX2)
    assert all(p.interior_point[1] == pytest.approx(0.3) for p in polys)


def test_balls_and_polyhedra_match_sampling():
    net = random_net(5, 2, [6, 5])
    rng = np.random.default_rng(2)
    for region in [Ball([0.1, 0.2], 0.7, norm=2), Ball([0.1, 0.2], 0.7, norm=1),
                   Ball([0.1, 0.2], 0.5, norm="inf") & Box(0, 1),
                   Polyhedron([[1.0, 1.0], [-1.0, 0.0], [0.0, -1.0]], [1.0, 0.5, 0.5])]:
        keys, polys, _ = keys_of(net, region)
        lo, hi = region.bounding_box()
        pts = rng.uniform(lo, hi, size=(20000, 2))
        pts = pts[[region.contains(x) for x in pts]]
        sample = {np.packbits(np.concatenate(net.activation_code(x))).tobytes() for x in pts}
        assert sample <= keys, f"{region}: a sampled code was not visited"
        assert all(region.contains(p.interior_point) for p in polys)
        for p in polys:  # no phantom polytopes: each interior point really has the code
            assert all(np.array_equal(a, b) for a, b in zip(net.activation_code(p.interior_point), p.code))


def test_l2_ball_cuts_stop_once_the_cell_is_decided(monkeypatch):
    """An L2 ball enters the Chebyshev LP as cutting planes; they stop once the certified
    radius decides the cell and is at least half the LP's bound: the same polytopes as the
    cuts run to convergence, in fewer LPs, with radii between half the Chebyshev radius and it."""
    import importlib

    import cvxpy as cp

    traverse_module = importlib.import_module("polytrav.traversal.cell_solver")
    net = random_net(21, 4, [7, 6], n_out=3)
    region = Ball(np.full(4, 0.05), 0.35) & Box(-0.25 * np.ones(4), 0.25 * np.ones(4))
    keys, polys, run = keys_of(net, region)
    monkeypatch.setattr(traverse_module, "CUT_QUALITY", 2.0)  # never early: cuts converge
    exact_keys, _, exact_run = keys_of(net, region)
    assert keys == exact_keys
    assert run.stats.lps < exact_run.stats.lps
    fr = run.frame
    ball = fr.l2_balls[0]
    for p in polys[::10]:
        A, b = p.halfspaces
        Au, bu = A @ fr.U, b - A @ fr.origin
        keep = np.linalg.norm(Au, axis=1) > 1e-12
        Au, bu = Au[keep], bu[keep]
        u, t = cp.Variable(fr.dim), cp.Variable()
        cp.Problem(cp.Maximize(t), [Au @ u + np.linalg.norm(Au, axis=1) * t <= bu,
                                    cp.abs(u) + t <= 1,
                                    cp.norm(u - ball.center) + t <= ball.radius]).solve(
            solver=cp.CLARABEL)
        assert 0.5 * t.value - 1e-7 <= p.radius <= t.value + 1e-7


@pytest.mark.parametrize("gap", [1.2e-9, 1.9e-9])
def test_a_slab_thinner_than_a_sliver_does_not_wall_off_the_rest(gap):
    """Two parallel neurons ``gap`` apart (not duplicates: more than DUPLICATE_TOL): the slab
    between them has radius ``gap / 2`` <= SLIVER_TOL, is never crossed on its own, and
    must not hide the polytopes beyond it (they are crossed as one hyperplane)."""
    net = Network.from_arrays([[[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]], [[1.0, -1.0, 1.0]]],
                              [[-0.2, -0.2 - gap, 0.0], [0.0]])
    keys, polys, _ = keys_of(net, Box(*BOX2), start=[-0.5, 0.3])
    assert len(keys) == 4
    assert {bool(p.interior_point[0] > 0.2) for p in polys} == {False, True}
    for p in polys:  # each interior point really has the code (both slab neurons agree)
        assert all(np.array_equal(a, b) for a, b in zip(net.activation_code(p.interior_point), p.code))


def test_budgets_end_incomplete():
    net = train_grid_net([20])
    run = traverse(net, Box(*BOX2), max_polytopes=10)
    assert len(list(run)) == 10
    assert run.status is TraversalStatus.POLYTOPE_LIMIT and not run.complete
    run = traverse(net, Box(*BOX2), time_limit=1e-6)
    list(run)
    assert run.status is TraversalStatus.TIME_LIMIT and not run.complete
    run = traverse(net, Box(*BOX2))
    next(run)
    run.close()
    assert run.status is TraversalStatus.STOPPED


def test_solver_failure_makes_the_run_incomplete():
    from polytrav.vocabulary.results import SolveResult, Status
    from polytrav.solvers.scipy import ScipyBackend

    class Flaky(ScipyBackend):
        name = "flaky"
        calls = 0

        def solve_lp(self, *args, **kwargs):
            Flaky.calls += 1
            if Flaky.calls % 5 == 0:
                return SolveResult(Status.ERROR, solver=self.name, message="injected")
            return super().solve_lp(*args, **kwargs)

    net = random_net(1, 2, [5, 4])
    run = traverse(net, Box(*BOX2), solver=Flaky(), fallback=None)
    list(run)
    assert run.status is TraversalStatus.SOLVER_FAILURE and not run.complete
    assert run.stats.failures
    Flaky.calls = 0
    run = traverse(net, Box(*BOX2), solver=Flaky())  # the fallback chain rescues every LP
    assert {p.key for p in run} == truth(net, *BOX2) and run.complete
    assert run.stats.retries > 0


def test_every_fallback_is_tried_in_turn():
    from polytrav.vocabulary.results import SolveResult, Status
    from polytrav.solvers.scipy import ScipyBackend

    class Broken(ScipyBackend):
        name = "broken"

        def solve_lp(self, *args, **kwargs):
            return SolveResult(Status.ERROR, solver=self.name, message="always")

    class Crashing(ScipyBackend):
        name = "crashing"

        def solve_lp(self, *args, **kwargs):
            raise RuntimeError("native crash")

    net = random_net(1, 2, [5, 4])
    run = traverse(net, Box(*BOX2), solver=Broken(), fallback=[Crashing(), "osqp", "highs"])
    assert {p.key for p in run} == truth(net, *BOX2) and run.complete
    run = traverse(net, Box(*BOX2), solver=Broken(), fallback=[Crashing()])
    list(run)
    assert run.status is TraversalStatus.SOLVER_FAILURE
    assert any("crashing: error" in f for f in run.stats.failures)


def test_bad_input_is_named():
    net = random_net(1, 2, [3])
    with pytest.raises(RegionError, match="outside the region"):
        traverse(net, Box(*BOX2), start=[2.0, 0.0])
    with pytest.raises(RegionError, match="3 dimensions but 2"):
        traverse(net, Box([0, 0, 0], [1, 1, 1]))
    with pytest.raises(RegionError, match="unbounded"):
        traverse(net, Polyhedron([[1.0, 0.0]], [1.0]))
    with pytest.raises(RegionError, match="NaN"):
        traverse(net, Box([0, np.nan], [1, 1]))
    with pytest.raises(RegionError, match="start point contains nan"):
        traverse(net, Box(*BOX2), start=[np.nan, 0.0])
    with pytest.raises(ConfigError, match="unknown strategy"):
        traverse(net, Box(*BOX2), strategy="dfs")
    with pytest.raises(ConfigError, match="unknown solver"):
        traverse(net, Box(*BOX2), solver="nope")
    with pytest.raises(RegionError, match="zero width"):
        traverse(net, Polyhedron([[1, 0], [-1, 0], [0, 1], [0, -1]], [0.5, -0.5, 1, 1]))
    with pytest.raises(RegionError, match="input domain"):
        dom_net = Network.from_arrays(net.weights, net.biases, input_domain=([0, 0], [1, 1]))
        traverse(dom_net, Box(*BOX2))


def test_affine_network_is_one_polytope():
    net = Network.from_arrays([[[1.0, 2.0]]], [[0.5]])
    polys = list(traverse(net, Box(*BOX2)))
    assert len(polys) == 1 and polys[0].code == ()
    np.testing.assert_allclose(polys[0].W, [[1.0, 2.0]])


def test_first_order_backend_needs_confirmation_of_empty_cells():
    """OSQP's "optimal" is not a proof: its 'no polytope here' answers are re-checked."""
    net = train_grid_net([20])
    keys = {p.key for p in traverse(net, Box(*BOX2))}
    run = traverse(net, Box(*BOX2), solver="osqp")
    assert {p.key for p in run} == keys and run.complete
    run = traverse(net, Box(*BOX2), solver="osqp", fallback=None)
    list(run)
    assert run.status is TraversalStatus.SOLVER_FAILURE


def test_vertices_on_request_are_every_cells_exact_vertices():
    """``vertices=True``: every polytope carries its vertices, the corners of its cell."""
    from scipy.spatial import HalfspaceIntersection

    net = train_grid_net([10, 5])
    box = Box(*BOX2)
    run = traverse(net, box, vertices=True)
    polys = list(run)
    assert run.complete and all(p.vertices is not None for p in polys)
    frame = run.frame
    for p in polys[::7]:
        A, b = p.halfspaces
        keep = np.linalg.norm(A, axis=1) > 0
        truth_V = HalfspaceIntersection(np.c_[A[keep], -b[keep]], p.interior_point).intersections
        got = frame.to_x(p.vertices)
        # the same point sets (qhull may repeat a degenerate vertex)
        dist = np.linalg.norm(got[:, None, :] - truth_V[None, :, :], axis=2)
        assert dist.min(axis=1).max() < 1e-9 and dist.min(axis=0).max() < 1e-9, p.index


@pytest.mark.parametrize("seed", range(5))
def test_the_first_polytope_contains_the_start_point(seed):
    """Every level starts in the piece that holds the start point, so the first polytope
    emitted is the start point's (a verifier that starts at an attack's point checks it first)."""
    rng = np.random.default_rng(seed)
    net = random_net(seed, 3, [10, 10, 10], n_out=2)
    start = rng.uniform(-0.9, 0.9, 3)
    first = next(iter(traverse(net, Box(-np.ones(3), np.ones(3)), start)))
    assert first.contains(start)


@pytest.mark.parametrize("solver", ["highs", "scipy"])
@pytest.mark.truth
def test_maximize_in_cell_equals_the_polytopes_lp(solver):
    """The traversal's own model, ``t`` fixed at 0, gives each polytope's LP optimum (or None)."""
    import cvxpy as cp

    net = random_net(4, 3, [6, 5])
    rng = np.random.default_rng(3)
    center = np.array([0.1, 0.2, 0.0])
    for region in [Box(-np.ones(3), np.ones(3)), Ball(center, 0.8, norm=1),
                   Polyhedron([[1.0, 1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0],
                               [0.0, 0.0, 1.0], [0.0, 0.0, -1.0]], [1.0, 0.5, 0.5, 0.5, 0.5])]:
        trav = traverse(net, region, solver=solver)
        held, solved = None, 0
        for p in trav:
            g = rng.standard_normal(trav.frame.dim)
            res = trav.maximize_in_cell(p, g)
            if held is not None:
                assert trav.maximize_in_cell(held, g) is None  # not the polytope just emitted
            held = p
            if res is None:
                continue
            solved += 1
            u = cp.Variable(trav.frame.dim)
            x = trav.frame.origin + trav.frame.U @ u
            A, b = p.halfspaces  # the polytope's rows and the region's (not its L1 ball)
            cons = [A @ x <= b, cp.abs(u) <= 1]
            if isinstance(region, Ball):
                cons.append(cp.norm1(x - center) <= 0.8)
            ref = cp.Problem(cp.Maximize(g @ u), cons)
            ref.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
            assert res.objective == pytest.approx(ref.value, abs=1e-7), p.code
            assert res.objective == pytest.approx(g @ res.x, abs=1e-9)
        assert solved > 10


class _KeepAll:
    """A guide that ranks level-1 pieces by a code-dependent key and never prunes."""

    def key(self, bits):
        return float(np.dot(np.arange(bits.size) % 3, bits))

    def prune(self, key):
        return False

    def restriction(self):
        return None


@pytest.mark.parametrize("seed", range(6))
def test_a_guided_traversal_that_prunes_nothing_finds_every_polytope(seed):
    """Guided levels queue flips unsolved and solve them when popped; nothing is lost."""
    d = 2 + seed % 3
    net = random_net(700 + seed, d, [9] if seed % 2 else [7, 5])
    lo, hi = -np.ones(d), np.ones(d)
    keys, polys, run = keys_of(net, Box(lo, hi), guide=_KeepAll())
    assert keys == truth(net, lo, hi)
    assert len(keys) == len(polys)
