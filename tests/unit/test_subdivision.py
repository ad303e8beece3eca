"""Strategy "subdivision" against the LP traversal and brute force, degenerate nets included.

Truth: brute-force enumeration of activation patterns (tests/support/reference.py) where the
region is a box, the hierarchical LP traversal elsewhere; each cell's vertices against its
halfspaces and, summed, against the region's volume.
"""
from __future__ import annotations

import numpy as np
import pytest
from reference import brute_force_cells, random_net
from scipy.spatial import ConvexHull

from polytrav import Ball, Box, Network, Polyhedron, analyze, traverse
from polytrav.model.geometry import build_frame
from polytrav.traversal.subdivision import subdivide
from polytrav.vocabulary.errors import ConfigError
from polytrav.vocabulary.tolerances import RADIUS_TOL


def cells_of(net, region, **options):
    run = traverse(net, region, strategy="subdivision", **options)
    polys = list(run)
    assert run.complete and not run.stats.fallback, (run.status, run.stats.fallback)
    keys = [p.key for p in polys]
    assert len(keys) == len(set(keys)), "a polytope was emitted twice"
    return run, polys


def check_geometry(net, region, polys, volumes=True):
    """Codes at interior points, inscribed balls, vertices in their cells, volumes summing
    to the region's (frame coordinates; ``volumes=False``: not computed, 0)."""
    frame = build_frame(region.with_dims(net.n_inputs), net.n_inputs)
    total = 0.0
    for p in polys:
        x = p.interior_point
        assert all(np.array_equal(a, b) for a, b in zip(net.activation_code(x), p.code))
        assert p.radius > RADIUS_TOL
        A, b = p.halfspaces
        slack = b - A @ x
        scale = np.linalg.norm(A @ frame.U, axis=1)  # unit rows in x, radius in u
        live = scale > 1e-12
        assert np.all(slack[live] / scale[live] >= p.radius * (1 - 1e-9) - 1e-12)
        X = frame.to_x(p.vertices)
        assert np.all(A @ X.T <= b[:, None] + 1e-9), f"a vertex outside polytope {p.index}"
        if volumes:
            total += ConvexHull(p.vertices).volume if frame.dim > 1 else np.ptp(p.vertices)
    return total


def test_random_boxes_equal_the_traversal_with_vertices_filling_the_box():
    """(Brute force on small random nets: tests/property/test_traversal_exact.py.)"""
    for seed, d, widths in [(0, 2, [6, 5]), (1, 3, [5, 4, 3]), (2, 2, [8, 8, 8]), (3, 4, [5, 4]),
                            (4, 5, [4, 3])]:
        net = random_net(seed, d, widths)
        box = Box(-np.ones(d), np.ones(d))
        _, polys = cells_of(net, box)
        assert {p.key for p in polys} == {p.key for p in traverse(net, box)}, (seed, d, widths)
        assert check_geometry(net, box, polys) == pytest.approx(2.0 ** d, rel=1e-9)


def _net(first, biases, rest=None):
    layers = [np.asarray(first, float)]
    bs = [np.asarray(biases, float)]
    for W, b in rest or []:
        layers.append(np.asarray(W, float))
        bs.append(np.asarray(b, float))
    n = layers[-1].shape[0]
    layers.append(np.ones((1, n)))
    bs.append(np.zeros(1))
    return Network.from_arrays(layers, bs)


rng = np.random.default_rng(5)
W3 = rng.normal(size=(4, 3))
DEGENERATE = {
    # every hyperplane through the origin, the box's centre: many meet at one vertex
    "through one point": _net(rng.normal(size=(7, 2)), np.zeros(7)),
    "through one point, 3-D": _net(rng.normal(size=(6, 3)), np.zeros(6),
                                   [(rng.normal(size=(4, 6)), np.zeros(4))]),
    # duplicate, scaled and negated copies of a neuron: one hyperplane, several bits
    "copies": _net([[1.0, 2.0], [1.0, 2.0], [3.0, 6.0], [-1.0, -2.0], [0.5, -1.0]],
                   [0.3, 0.3, 0.9, -0.3, 0.1]),
    "copies, 3-D": _net(np.vstack([W3, W3 * 2, -W3]), np.r_[rng.normal(size=4),
                                                             np.zeros(8)] * 0),
    # dead and constant neurons (zero weights), bits by the constant's sign (on iff >= 0)
    "dead": _net([[0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [1.0, -1.0]], [0.0, -1.0, 2.0, 0.2]),
    # hyperplanes through the box's corners and along its facets
    "corners and facets": _net([[1.0, -1.0], [1.0, 1.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.5]],
                               [0.0, 0.0, -1.0, 1.0, -1.5]),
    # second-layer neurons constant on whole cells (relu(x) + relu(y) is 0 on a quadrant),
    # and through the first layer's vertex
    "constant on cells": _net([[1.0, 0.0], [0.0, 1.0]], [0.0, 0.0],
                              [([[1.0, 1.0], [1.0, -1.0], [-1.0, 1.0], [2.0, 2.0]],
                                [0.0, 0.0, 0.0, -0.5])]),
    # a cell thinner than a polytope (1e-8 wide) next to one just thick enough (1e-6)
    "thin": _net([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]], [0.0, -1e-8, 0.2, 0.2 - 1e-6]),
}


@pytest.mark.parametrize("name", DEGENERATE)
def test_degenerate_nets_equal_brute_force_and_the_traversal(name):
    net = DEGENERATE[name]
    d = net.n_inputs
    lo, hi = -np.ones(d), np.ones(d)
    run, polys = cells_of(net, Box(lo, hi))
    keys = {p.key for p in polys}
    assert keys == {p.key for p in traverse(net, Box(lo, hi))}
    truth = brute_force_cells(net, lo, hi)
    assert {k for k, r in truth.items() if r > 10 * RADIUS_TOL} <= keys
    assert keys <= {k for k, r in truth.items() if r > RADIUS_TOL / 10}
    # the cells fill the box, but for slivers thinner than RADIUS_TOL (no polytope; 2e-8 here)
    assert check_geometry(net, Box(lo, hi), polys) == pytest.approx(2.0 ** d, abs=1e-7)


@pytest.mark.parametrize("seed", range(4))
def test_polyhedra_and_fixed_coordinates_equal_the_traversal(seed):
    r = np.random.default_rng(seed)
    d = 2 + seed % 3
    net = random_net(seed, d, [5, 4])
    lo, hi = -np.ones(d), np.ones(d)
    regions = [Box(lo, hi) & Polyhedron(r.normal(size=(3, d)), np.full(3, 0.6))]
    fixed_lo, fixed_hi = lo.copy(), hi.copy()
    fixed_lo[0] = fixed_hi[0] = 0.25
    regions.append(Box(fixed_lo, fixed_hi))
    for region in regions:
        _, polys = cells_of(net, region)
        assert {p.key for p in polys} == {p.key for p in traverse(net, region)}
        check_geometry(net, region, polys)


def test_analyses_on_subdivision_equal_the_traversal():
    net = random_net(11, 2, [6, 6], n_out=2)
    region = Box([-1, -1], [1, 1])
    a = analyze(net, region, "output_range", strategy="subdivision")
    b = analyze(net, region, "output_range")
    assert a.status.value == "complete"
    for ra, rb in zip(a.results, b.results):
        for key in rb.value:
            assert ra.value[key] == pytest.approx(rb.value[key], rel=1e-9, abs=1e-9)
        assert ra.exact and rb.exact


def test_budgets_and_start():
    net = random_net(4, 2, [6, 5])
    region = Box([-1, -1], [1, 1])
    run = traverse(net, region, strategy="subdivision", max_polytopes=3)
    assert len(list(run)) == 3 and run.status.value == "polytope_limit"
    start = np.array([0.9, -0.9])
    first = next(iter(traverse(net, region, start, strategy="subdivision")))
    assert first.contains(start), "the polytope holding the start point comes first"


def test_refusals_name_the_way_out():
    net = random_net(0, 2, [3])
    with pytest.raises(ConfigError, match="polyhedral region.*hierarchical"):
        traverse(net, Ball([0.0, 0.0], 1.0), strategy="subdivision")
    with pytest.raises(ConfigError, match="batch must be a positive number of cells"):
        traverse(net, Box([-1, -1], [1, 1]), strategy="subdivision", batch=0)


def test_the_engine_on_its_own_counts_cells_and_radii():
    net = random_net(2, 3, [6, 6])
    frame = build_frame(Box(-np.ones(3), np.ones(3)), 3)
    cells = subdivide(net, frame)
    assert len(cells) == cells.tally.cuts + 1  # every cut makes one more cell
    assert cells.tally.levels[-1] == len(cells)
    assert cells.starts[-1] == cells.vertices.shape[0]
    assert np.all(cells.radii > 0)


@pytest.mark.parametrize("batch", [1, 5, 40])
def test_batches_split_the_work_not_the_answer(batch):
    """Batches of at most ``batch`` cells at a layer's start (memory bound): the same cells,
    vertices, radii and counts as one batch."""
    net = random_net(3, 3, [7, 6, 5])
    frame = build_frame(Box(-np.ones(3), np.ones(3)), 3)
    whole, split = subdivide(net, frame), subdivide(net, frame, batch=batch)

    def by_code(cells):
        keys = [np.packbits(c).tobytes() for c in cells.codes]
        return {k: (cells.radii[i], np.sort(cells.vertices[cells.starts[i]:cells.starts[i + 1]],
                                            axis=0)) for i, k in enumerate(keys)}

    a, b = by_code(whole), by_code(split)
    assert len(split) == len(whole) == len(b) and a.keys() == b.keys()
    for k in a:
        assert a[k][0] == pytest.approx(b[k][0]) and np.allclose(a[k][1], b[k][1])
    assert split.tally == whole.tally
    truth = brute_force_cells(net, -np.ones(3), np.ones(3))  # independent: an LP per pattern
    assert {k for k, r in truth.items() if r > 10 * RADIUS_TOL} <= b.keys()
    assert b.keys() <= {k for k, r in truth.items() if r > RADIUS_TOL / 10}


@pytest.mark.parametrize("name", DEGENERATE)
def test_batches_of_two_cells_on_degenerate_nets_equal_brute_force(name):
    """Splitting after cuts that snapped, dropped thin sides or dropped cells."""
    net = DEGENERATE[name]
    d = net.n_inputs
    cells = subdivide(net, build_frame(Box(-np.ones(d), np.ones(d)), d), batch=2)
    keys = {np.packbits(c).tobytes() for c, r in zip(cells.codes, cells.radii) if r > RADIUS_TOL}
    truth = brute_force_cells(net, -np.ones(d), np.ones(d))
    assert {k for k, r in truth.items() if r > 10 * RADIUS_TOL} <= keys
    assert keys <= {k for k, r in truth.items() if r > RADIUS_TOL / 10}


def test_auto_picks_subdivision_where_it_enumerates_everything():
    from polytrav.traversal import TraversalOptions
    from polytrav.traversal.subdivision_run import AUTO_MAX_DIM, SubdivisionRun, choose_strategy

    net = random_net(0, 3, [4])
    box = Box(-np.ones(3), np.ones(3))
    assert choose_strategy(net, box) == "subdivision"
    assert isinstance(traverse(net, box, strategy="auto"), SubdivisionRun)
    assert choose_strategy(net, Ball(np.zeros(3), 1.0)) == "hierarchical"
    assert choose_strategy(net, box, TraversalOptions(prune=lambda piece: 0.0)) == "hierarchical"
    assert choose_strategy(net, box, TraversalOptions(guide=object())) == "hierarchical"
    wide = random_net(0, AUTO_MAX_DIM + 1, [3])
    assert choose_strategy(wide, Box(-np.ones(AUTO_MAX_DIM + 1), np.ones(AUTO_MAX_DIM + 1))) \
        == "hierarchical"
    lo, hi = np.zeros(AUTO_MAX_DIM + 1), np.zeros(AUTO_MAX_DIM + 1)
    hi[:2] = 1.0  # a 2-D slice of a wider net
    assert choose_strategy(wide, Box(lo, hi)) == "subdivision"


def test_auto_stops_lower_without_numba(monkeypatch):
    """Without the compiled kernel (numba absent) numpy's edge search is quadratic in a
    cell's vertices: ``auto`` never stops higher than with it."""
    from polytrav.traversal import subdivision
    from polytrav.traversal.subdivision_run import (AUTO_MAX_DIM, AUTO_MAX_DIM_NUMPY,
                                                     choose_strategy)

    d = AUTO_MAX_DIM_NUMPY + 1
    net, box = random_net(0, d, [3]), Box(-np.ones(d), np.ones(d))
    if subdivision.kernel_installed() and d <= AUTO_MAX_DIM:
        assert choose_strategy(net, box) == "subdivision"
    monkeypatch.setattr(subdivision, "_KERNEL", False)  # as load_kernel leaves it without numba
    assert not subdivision.kernel_installed()
    assert choose_strategy(net, box) == "hierarchical"
    small = random_net(0, AUTO_MAX_DIM_NUMPY, [3])
    assert choose_strategy(small, Box(-np.ones(AUTO_MAX_DIM_NUMPY),
                                      np.ones(AUTO_MAX_DIM_NUMPY))) == "subdivision"


def test_an_undecided_cut_hands_the_rest_to_the_traversal(monkeypatch):
    """Fault injection: the engine cannot decide a cut after its first batches were emitted;
    the LP traversal emits the rest, each polytope once, and the stats say so."""
    from polytrav.traversal import subdivision_run
    from polytrav.traversal.subdivision import Subdivision, Undecided

    class FailsLate(Subdivision):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **{**kwargs, "batch": 4})

        def __iter__(self):
            for i, cells in enumerate(super().__iter__()):
                if i == 2:
                    raise Undecided("a cut by hyperplane 7 has fewer than 2 vertices on its "
                                    "section")
                yield cells

    net = random_net(6, 2, [5, 5])
    box = Box([-1, -1], [1, 1])
    monkeypatch.setattr(subdivision_run, "Subdivision", FailsLate)
    run = traverse(net, box, strategy="subdivision")
    keys = [p.key for p in run]
    truth = {p.key for p in traverse(net, box)}
    assert run.complete and "hyperplane 7" in run.stats.fallback and run.stats.lps > 0
    assert len(keys) == len(set(keys)) == len(truth) and set(keys) == truth
    assert run.stats.polytopes == len(truth)


def test_an_affine_network_is_one_polytope():
    net = Network.from_arrays([[[1.0, -2.0]]], [[0.5]])
    run, polys = cells_of(net, Box([-1, -1], [1, 1]))
    assert len(polys) == 1 and polys[0].code == ()
    x = np.array([0.3, -0.2])
    assert polys[0].W @ x + polys[0].c == pytest.approx(net.forward(x))


def test_the_time_limit_ends_the_stream_too():
    """Once the run's own clock says the budget is spent, no further polytope comes (the
    wait is on that clock, not a fixed sleep; a machine slow enough to spend the budget in
    the engine ends the run there, with the same status)."""
    net = random_net(4, 2, [6, 5])
    run = traverse(net, Box([-1, -1], [1, 1]), strategy="subdivision", time_limit=0.5)
    first = next(run, None)
    if first is not None:
        while run.time_left() > 0:
            pass
        assert next(run, None) is None
    assert run.status.value == "time_limit"


def _same_cells(a, b):
    """Same codes, vertex sets, radii and tally (the cells' order may differ)."""
    def by_code(cells):
        return {np.packbits(c).tobytes(): (cells.radii[i], np.unique(np.round(
            cells.vertices[cells.starts[i]:cells.starts[i + 1]], 9), axis=0))
            for i, c in enumerate(cells.codes)}

    A, B = by_code(a), by_code(b)
    assert len(a) == len(b) == len(A) == len(B) and A.keys() == B.keys()
    for k in A:
        assert A[k][0] == pytest.approx(B[k][0], rel=1e-9, abs=1e-12)
        assert A[k][1].shape == B[k][1].shape and np.allclose(A[k][1], B[k][1], atol=1e-9)
    assert a.tally == b.tally


W6 = rng.normal(size=(3, 6))
#: 6-8 inputs: pieces with hundreds of vertices, whose edges the kernel finds by hashing
HIGH = {"random 7-D": random_net(10, 7, [6, 5]), "random 8-D": random_net(11, 8, [4, 3]),
        # hyperplanes through the box's centre: a vertex on 6 + 5 of them (not simple)
        "through one point, 6-D": _net(rng.normal(size=(5, 6)), np.zeros(5),
                                       [(rng.normal(size=(3, 5)), np.zeros(3))]),
        # copies and negated copies: one hyperplane, several bits
        "copies, 6-D": _net(np.vstack([W6, 2 * W6, -W6]), np.r_[0.1, -0.2, 0.3, 0.2, -0.4,
                                                                 0.6, -0.1, 0.2, -0.3])}
KERNEL_NETS = {**DEGENERATE, **HIGH, "random 2-D": random_net(7, 2, [20, 20, 10]),
               "random 3-D": random_net(8, 3, [12, 12]), "random 5-D": random_net(9, 5, [8, 6])}


@pytest.mark.parametrize("name", KERNEL_NETS)
def test_the_compiled_kernel_gives_the_numpy_cells(name):
    """kernel="numba" (optional) against kernel="numpy": the same cells, vertices, radii and
    tally, degenerate nets included; batches of 3 cells too."""
    pytest.importorskip("numba")
    net = KERNEL_NETS[name]
    d = net.n_inputs
    frame = build_frame(Box(-np.ones(d), np.ones(d)), d)
    truth = subdivide(net, frame, kernel="numpy")
    _same_cells(truth, subdivide(net, frame, kernel="numba"))
    _same_cells(truth, subdivide(net, frame, kernel="numba", batch=3))


def test_auto_runs_the_kernel_on_a_bigger_net_with_the_traversal_s_cells():
    """Through traverse (strategy "auto", numpy or the compiled kernel by how much this
    process has cut): the polytopes are the LP traversal's and fill the box."""
    net = random_net(12, 2, [30, 30])
    box = Box([-1, -1], [1, 1])
    run, polys = cells_of(net, box)
    assert {p.key for p in polys} == {p.key for p in traverse(net, box, strategy="hierarchical")}
    assert check_geometry(net, box, polys) == pytest.approx(4.0, rel=1e-9)


def test_auto_loads_the_kernel_only_after_enough_numpy_work(monkeypatch):
    """Kernel "auto" cuts in numpy until the process has cut KERNEL_AFTER_WORK vertex-neuron
    pairs (a short run never pays the kernel's load), then loads it; the same cells."""
    pytest.importorskip("numba")
    from polytrav.traversal import subdivision

    monkeypatch.setattr(subdivision, "_KERNEL", None)
    monkeypatch.setattr(subdivision, "_NUMPY_WORK", 0)
    net = random_net(12, 2, [30, 30])
    frame = build_frame(Box([-1, -1], [1, 1]), 2)
    truth = subdivide(net, frame, kernel="numpy")
    first = subdivide(net, frame)
    assert subdivision._KERNEL is None and subdivision._NUMPY_WORK > 0
    monkeypatch.setattr(subdivision, "KERNEL_AFTER_WORK", subdivision._NUMPY_WORK + 1)
    second = subdivide(net, frame)
    assert subdivision._KERNEL  # loaded once the work passed the threshold
    _same_cells(truth, first)
    _same_cells(truth, second)


@pytest.mark.parametrize("name", HIGH)
def test_the_kernel_in_6_to_8_dimensions_gives_the_traversal_s_cells(name):
    """Pieces with hundreds of vertices (edges found by hashing, degenerate vertices by the
    third-vertex test): the LP traversal's cells, their vertices in them (Qhull's volumes
    are not reliable on thin cells in 7-8 dimensions; the kernel's vertices are the numpy
    path's, whose volumes are checked in 2-5)."""
    pytest.importorskip("numba")
    net = HIGH[name]
    d = net.n_inputs
    box = Box(-np.ones(d), np.ones(d))
    cells = subdivide(net, build_frame(box, d), kernel="numba")
    run, polys = cells_of(net, box)
    truth = {p.key for p in traverse(net, box, strategy="hierarchical")}
    assert {np.packbits(c).tobytes() for c in cells.codes} == {
        np.packbits(np.concatenate(k)).tobytes() for k in (p.code for p in polys)}
    assert {p.key for p in polys} == truth
    check_geometry(net, box, polys, volumes=False)
    # batches bounded by vertex rows too (hundreds a cell here): one cell each, same cells
    _same_cells(cells, subdivide(net, build_frame(box, d), kernel="numba", batch=8))


def test_an_unknown_kernel_is_refused():
    net = random_net(0, 2, [3])
    with pytest.raises(ValueError, match="kernel must be one of"):
        subdivide(net, build_frame(Box([-1, -1], [1, 1]), 2), kernel="fortran")


@pytest.mark.parametrize("name", ["random", "through one point", "copies", "dead",
                                  "corners and facets", "thin"])
def test_level_1_pieces_and_runs_within_them_partition_the_cells(name):
    """pieces() by subdivision: the traversal's level-1 pieces; runs within each piece
    (subdivision's and the traversal's pieces alike) give every cell of the whole run once."""
    from polytrav.host.runner import pieces

    net = random_net(3, 3, [7, 6, 5]) if name == "random" else DEGENERATE[name]
    d = net.n_inputs
    box = Box(-np.ones(d), np.ones(d))
    mine = list(pieces(net, box, strategy="subdivision"))
    theirs = list(pieces(net, box, strategy="hierarchical"))
    assert {p.key for p in mine} == {p.key for p in theirs} and len(mine) == len(theirs)
    for p in mine:  # a ball inside the piece, its code the first layer's
        assert p.t > RADIUS_TOL
        assert np.array_equal(net.activation_code(build_frame(box, d).to_x(p.u))[0], p.bits)
    _, whole = cells_of(net, box)
    for found in (mine, theirs):
        parts = [p.key for piece in found for p in cells_of(net, box, within=[piece])[1]]
        assert len(parts) == len(set(parts)) and set(parts) == {p.key for p in whole}
    assert list(traverse(net, box, strategy="subdivision", within=[])) == []


def test_a_small_batch_bounds_the_run_not_its_cells():
    net = random_net(3, 3, [7, 6, 5])
    box = Box(-np.ones(3), np.ones(3))
    _, whole = cells_of(net, box)
    _, small = cells_of(net, box, batch=4)
    assert sorted(p.key for p in small) == sorted(p.key for p in whole)


@pytest.mark.parametrize("kernel", ["numba", "numpy"])
def test_a_wide_8_input_net_streams_from_its_first_cuts_in_bounded_memory(kernel, monkeypatch):
    """The Ctrl-C tests' 8-input 3 x 40 net (tests/support/ctrl_c.py) in [-1, 1]^8: its
    first layer alone makes millions of cells with hundreds of vertices each, and the engine
    used to cut a whole layer before emitting any (13.7 GB in 60 s, no polytope). A batch
    now stops within a layer once it holds more than ``batch * VERTICES_PER_CELL`` vertex
    rows: the first polytope comes after a few thousand cuts, and the rows held at once
    (``stats.held``, counted by the engine) stay within a small multiple of that."""
    from ctrl_c import random_layers

    from polytrav.traversal import subdivision

    if kernel == "numba":
        pytest.importorskip("numba")
        subdivision.load_kernel()
    else:
        monkeypatch.setattr(subdivision, "_KERNEL", False)  # as without numba
    weights, biases = random_layers(np.random.default_rng(1), [8, 40, 40, 40, 3])
    net, box = Network(weights, biases), Box(-np.ones(8), np.ones(8))
    run = traverse(net, box, strategy="subdivision")
    first = next(run)
    assert run.stats.cuts < 5000
    polys = [first] + [p for _, p in zip(range(2000), run)]
    rows = subdivision.BATCH * subdivision.VERTICES_PER_CELL
    assert 0 < run.stats.held <= 16 * rows
    run.close()
    for p in polys[:: 50]:  # each a cell of the net: its code holds at its interior point
        assert p.key == traverse(net, box, start=p.interior_point,
                                 strategy="hierarchical").__next__().key


@pytest.mark.parametrize("kernel", ["numba", "numpy"])
@pytest.mark.parametrize("seed,d,widths", [(0, 4, [8, 8]), (1, 3, [8, 8, 8]), (0, 5, [6, 6]),
                                           (2, 5, [8, 6, 4])])
def test_the_rows_held_stay_within_a_few_batches_per_layer(kernel, seed, d, widths, monkeypatch):
    """``stats.held`` counts the vertex rows of every batch waiting on the depth-first path,
    so it is not bounded by ``batch * VERTICES_PER_CELL`` alone: each hidden layer on the path
    adds its unfinished rest and the pieces of the cut in progress (one neuron can double a
    batch's rows before it stops). The documented bound, by counts: at most 5 times the
    batch's rows per hidden layer (measured 0.6-4.1, batches of 16 and 64 cells); the cells
    are those of the default batch."""
    from polytrav.traversal import subdivision
    from polytrav.traversal.subdivision import Subdivision

    if kernel == "numba":
        pytest.importorskip("numba")
    else:
        monkeypatch.setattr(subdivision, "_KERNEL", False)  # as without numba
    net, frame = random_net(seed, d, widths), build_frame(Box(-np.ones(d), np.ones(d)), d)
    whole = subdivide(net, frame, kernel=kernel)
    for batch in (16, 64):
        run = Subdivision(net, frame, batch=batch, kernel=kernel)
        assert sum(len(part) for part in run) == len(whole)
        rows = batch * subdivision.VERTICES_PER_CELL
        assert 0 < run.tally.held <= 5 * rows * len(widths)


def test_batches_stopped_within_a_layer_keep_the_cells_and_the_start_s_order():
    """Batches of one or two cells stop within a layer (a cell has more vertex rows than
    the batch allows): the same polytopes as the LP traversal, the start's first."""
    net = random_net(13, 5, [9, 7])
    box = Box(-np.ones(5), np.ones(5))
    truth = {p.key for p in traverse(net, box, strategy="hierarchical")}
    for batch in (1, 2):
        start = np.full(5, 0.3)
        run, polys = cells_of(net, box, batch=batch, start=start)
        assert {p.key for p in polys} == truth
        assert polys[0].key == next(traverse(net, box, start=start,
                                             strategy="hierarchical")).key


def test_the_kernel_once_loaded_runs_every_layer_even_an_empty_one():
    """Under "auto" a loaded kernel cuts every layer: a run within no piece has none left."""
    pytest.importorskip("numba")
    from polytrav.traversal.subdivision import load_kernel

    load_kernel()
    net = random_net(3, 3, [7, 6, 5])
    box = Box(-np.ones(3), np.ones(3))
    assert list(traverse(net, box, strategy="subdivision", within=[])) == []
    _, polys = cells_of(net, box)
    assert {p.key for p in polys} == {p.key for p in traverse(net, box, strategy="hierarchical")}


def test_the_stream_s_polytopes_read_their_batch_lazily_and_equal_eager_ones():
    """Each polytope of ``traverse(..., strategy="subdivision")`` holds what the engine found
    for its cell (code, centroid, vertices), read on first use; pickled, it is a plain
    ``Polytope`` with the same attributes."""
    import pickle

    from polytrav.model.polytope import Polytope

    net = random_net(3, 3, [6, 5])
    box = Box(-np.ones(3), np.ones(3))
    frame = build_frame(box, 3)
    cells = subdivide(net, frame)
    by_key = {np.packbits(c).tobytes(): i for i, c in enumerate(cells.codes)}
    run = traverse(net, box, strategy="subdivision", batch=7)
    polytopes = list(run)
    assert run.complete and len(polytopes) == len(cells)
    for n, p in enumerate(polytopes):
        i = by_key[p.key]
        assert p.index == n and p.parent is None and p.network is net and p.region is box
        assert tuple(len(c) for c in p.code) == tuple(net.hidden_sizes)
        assert np.allclose(p.interior_point, frame.to_x(cells.centres[i]))
        assert np.array_equal(p.vertices, cells.vertices[cells.starts[i]: cells.starts[i + 1]])
        assert p.radius == cells.radii[i] and p.contains(p.interior_point)
    p = polytopes[len(polytopes) // 2]
    q = pickle.loads(pickle.dumps(p))
    assert type(q) is Polytope and q.key == p.key and q.index == p.index
    assert np.array_equal(q.interior_point, p.interior_point)
    assert np.array_equal(q.vertices, p.vertices) and q.radius == p.radius
