"""Pictures: rendered to files and checked (size, not blank, the expected colours present), and
their labels, titles and legends read back through matplotlib's objects (Agg backend)."""
from __future__ import annotations

import json


import numpy as np
import pytest
from click.testing import CliRunner
from reference import TINY_NNET, random_net

from polytrav import Box, ConfigError, Network, Polyhedron, analyze, traverse

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
plt = pytest.importorskip("matplotlib.pyplot")
from matplotlib.colors import to_rgb  # noqa: E402

from polytrav.interface.plot import (  # noqa: E402
    LAYER_COLORS,
    check_figure_path,
    check_plane,
    input_labels,
    partition,
    partition_slice,
    plane_slice,
    save_partition,
)

#: The five-input networks of the slice test: ACAS Xu 1_1 (the shared data), a random one.
SLICE_NETS = {"acas": ("acasxu", "onnx", "ACASXU_run2a_1_1_batch_2000.onnx"), "random": None}


def pixels(path):
    img = plt.imread(path)[..., :3]
    return img.reshape(-1, 3)


def has_colour(px, colour, tol=0.03):
    return bool((np.abs(px - np.array(to_rgb(colour))).max(axis=1) < tol).any())


def legend(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_partition_picture_with_levels_tree_and_results(tmp_path):
    net = random_net(2, 2, [8, 6], n_out=1)
    net = Network.from_arrays(net.weights, [*net.biases[:-1], net.biases[-1] - net([0.2, 0.2])])
    region = Box([-1, -1], [1, 1])
    polys = list(traverse(net, region, strategy="hierarchical"))  # its BFS tree
    report = analyze(net, region, ["output_range",
                                   {"name": "monotonicity", "feature": 0, "direction": "increasing"},
                                   {"name": "counterfactual", "x0": [0.1, 0.3], "norm": 2}])
    ax = partition(net, region, polytopes=polys, report=report, bfs_tree=True)
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("$x_{0}$", "$x_{1}$")
    assert ax.get_title() == f"Partition of a 2-8-6-1 network: {len(polys)} polytopes"
    entries = legend(ax)
    assert [e for e in entries if e.startswith("layer")] == ["layer 1 hyperplanes",
                                                             "layer 2 hyperplanes"]
    for entry in ("polytope (linear region)", "region boundary", "local decision boundary",
                  "BFS tree (discovery)", "traversal start point",
                  "output minimum (output_range)", "output maximum (output_range)",
                  "monotonicity violation", "monotonicity witness",
                  "counterfactual start x0", "counterfactual (witness)",
                  "L2 ball, radius the distance"):
        assert entry in entries, (entry, entries)
    assert len(entries) == len(set(entries))  # one entry per kind, not per mark
    path = tmp_path / "partition.png"
    ax.figure.savefig(path, dpi=60)
    plt.close(ax.figure)
    img = plt.imread(path)
    assert img.shape[0] >= 300 and img.shape[1] >= 300
    px = pixels(path)
    assert px.std() > 0.05  # not blank
    assert has_colour(px, LAYER_COLORS[0]) and has_colour(px, LAYER_COLORS[1])  # both levels
    assert has_colour(px, "crimson", tol=0.1) or has_colour(px, "red", tol=0.2)  # results drawn in


def test_plane_slice_equals_the_network_on_the_plane():
    net = random_net(1, 5, [7, 6], n_out=2)
    point = np.linspace(-0.5, 0.5, 5)
    net2, box = plane_slice(net, point, (1, 3), [-1, -1], [1, 1])
    for s, t in np.random.default_rng(0).uniform(-1, 1, (20, 2)):
        x = point.copy()
        x[1], x[3] = s, t
        assert np.allclose(net2.forward([s, t]), net.forward(x))
    with pytest.raises(ConfigError, match="two different input indices"):
        plane_slice(net, point, (2, 2), [-1, -1], [1, 1])


def test_partition_needs_two_inputs():
    with pytest.raises(ConfigError, match="partition_slice"):
        partition(random_net(0, 3, [4], n_out=1), Box(-np.ones(3), np.ones(3)))


def test_cli_regions_counts_lists_and_plots(tmp_path):
    from polytrav.interface.cli import main

    net = tmp_path / "tiny.nnet"
    net.write_text(TINY_NNET)
    out = tmp_path / "p.png"
    res = CliRunner().invoke(main, ["regions", str(net), "--lower", "-1", "--upper", "1", "--list",
                                    "--plot", str(out)])
    assert res.exit_code == 0, res.output
    assert any(line.startswith("4 polytopes") for line in res.output.splitlines()), res.output
    assert str(out.resolve()) in res.output  # says where it saved
    assert out.exists() and pixels(out).std() > 0.05
    res = CliRunner().invoke(main, ["regions", str(net)])
    assert res.exit_code == 4 and "--lower and --upper" in res.output


def test_cli_regions_by_subdivision_counts_and_plots_the_same(tmp_path):
    from polytrav.interface.cli import main

    from ctrl_c import random_layers, save_mlp_onnx

    path = tmp_path / "net.onnx"
    save_mlp_onnx(*random_layers(np.random.default_rng(3), [2, 12, 12, 1]), path)
    counts = {}
    for strategy in ("hierarchical", "subdivision"):
        out = tmp_path / f"{strategy}.png"
        res = CliRunner().invoke(main, ["regions", str(path), "--lower", "-1", "--upper", "1",
                                        "--strategy", strategy, "--json", "--plot", str(out)])
        assert res.exit_code == 0, res.output
        stats = json.loads(res.output.splitlines()[0])
        counts[strategy] = (stats["polytopes"], stats["per_level"])
        assert out.exists() and pixels(out).std() > 0.05
    assert counts["hierarchical"] == counts["subdivision"]
    res = CliRunner().invoke(main, ["regions", str(path), "--lower", "-1", "--upper", "1",
                                    "--json"])
    stats = json.loads(res.output.splitlines()[0])  # the default, auto: subdivision in 2-D
    assert (stats["polytopes"], stats["per_level"]) == counts["subdivision"]
    assert stats["lps"] == 0 and stats["complete"]
    res = CliRunner().invoke(main, ["regions", str(path), "--lower", "-1", "--upper", "1",
                                    "--strategy", "hierarchical", "--solver", "scipy", "--json"])
    stats = json.loads(res.output.splitlines()[0])  # the LP backend chosen on the command line
    assert (stats["polytopes"], stats["per_level"]) == counts["hierarchical"] and stats["lps"]
    res = CliRunner().invoke(main, ["regions", str(path), "--lower", "-1", "--upper", "1",
                                    "--solver", "nope"])
    assert res.exit_code == 4 and "unknown solver 'nope'" in res.output
    res = CliRunner().invoke(main, ["regions", str(path), "--lower", "-1", "--upper", "1",
                                    "--strategy", "subdivsion"])
    assert res.exit_code == 4 and "'subdivsion' is not one of" in res.output


@pytest.mark.parametrize("strategy", ["subdivision", "hierarchical"])
def test_edges_are_drawn_once_in_the_colour_of_the_layer_that_makes_them(strategy):
    """Each edge's layer, read off the codes of the two polytopes it separates, equals the
    layer of the inequality tight along it (the per-polytope truth); every edge is drawn
    once, and each layer's edges are one artist (a picture of 10^5 polytopes is quick)."""
    from polytrav.interface.plot import _edge_layers, _rings, _tight_layer
    from polytrav.model.geometry import build_frame

    net = random_net(8, 2, [10, 8, 6])
    box = Box([-1, -1], [1, 1])
    polys = list(traverse(net, box, strategy=strategy))
    drawn, rings = _rings(polys, build_frame(box, 2))
    assert len(drawn) == len(polys)
    layer, first = _edge_layers(drawn, rings, box.lower, box.upper)
    ends = rings.segments(first)
    truth = [_tight_layer(drawn[rings.owner[e]], ends[k].mean(axis=0))
             for k, e in enumerate(first)]
    assert layer.tolist() == truth
    assert set(layer.tolist()) == {-1, 0, 1, 2}
    n_edges = rings.points.shape[0]  # each inner edge counted by its two polygons
    assert len(first) == (n_edges + int((layer == -1).sum())) // 2
    ax = partition(net, box, polytopes=polys)
    assert len(ax.lines) <= 3 + 1 + 1 + 1  # the layers, the boundary, decisions, start
    assert len(ax.collections) == 1
    plt.close(ax.figure)


def test_the_paper_figures_example_runs(tmp_path):
    """examples/paper_figures.py trains its networks and writes Figures 1, 3 and 4."""
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("torch")
    script = Path(__file__).resolve().parents[2] / "examples" / "paper_figures.py"
    # the timeout is a guard only, wide: the run took 115 s of wall time on a loaded machine
    # (25 CPU s with one OpenMP thread, as conftest.py sets)
    res = subprocess.run([sys.executable, str(script), "--out", str(tmp_path), "--epochs", "300"],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    for name in ("figure1.png", "figure3.png", "figure4.png"):
        px = pixels(tmp_path / name)
        assert px.std() > 0.05 and has_colour(px, LAYER_COLORS[0]), name


def test_partition_in_a_polyhedron_without_decision_boundaries():
    net = random_net(5, 2, [6], n_out=3)
    tri = Polyhedron([[-1, 0], [0, -1], [1, 1]], [0, 0, 1])
    ax = partition(net, tri, decision=False, title="my title")
    entries = legend(ax)
    assert ax.get_title() == "my title"
    assert "local decision boundary" not in entries and "region boundary" in entries
    assert entries[-1] == "start: first polytope's centre"  # not a box: no default centre
    plt.close(ax.figure)


@pytest.mark.parametrize("which", [
    pytest.param(name, marks=() if parts is None else pytest.mark.integration)
    for name, parts in SLICE_NETS.items()])
def test_slice_of_a_five_input_network_names_its_plane_and_fixed_inputs(tmp_path, request, which):
    """ACAS Xu and a random net: dims 2 and 4."""
    if SLICE_NETS[which] is not None:
        net = Network.from_onnx(request.getfixturevalue("data_dir").joinpath(*SLICE_NETS[which]))
        lo = np.array([0.0, -3.141593, -3.141593, 100.0, 0.0])
        hi = np.array([60760.0, 3.141593, 3.141593, 1200.0, 1200.0])
    else:
        net, lo, hi = random_net(3, 5, [10, 8], n_out=5), -np.ones(5), np.ones(5)
    region = Box(lo, hi)
    ax = partition_slice(net, region, (2, 4), total=1234)
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("$x_{2}$", "$x_{4}$")
    title = " ".join(ax.get_title().split())
    centre = (lo + hi) / 2
    assert "on a plane:" in title and "Slice through $x_{2}$, $x_{4}$ at the box centre" in title
    fixed = ", ".join(f"$x_{{{k}}}$={centre[k]:.5g}" for k in (0, 1, 3))
    assert f"({fixed})" in title
    assert "whole box found 1234 polytopes" in title
    entries = legend(ax)
    assert "layer 1 hyperplanes" in entries and "traversal start point" in entries
    # the start point is the box centre's projection
    start = [ln for ln in ax.get_lines() if ln.get_marker() == "o"][-1]
    assert np.allclose(start.get_xydata()[0], centre[[2, 4]])
    plt.close(ax.figure)
    out = save_partition(net, region, tmp_path / "slice.svg", dims=(2, 4), polytopes=[None] * 7)
    assert out == (tmp_path / "slice.svg").resolve() and "found 7 polytopes" in out.read_text()


def test_labels_from_input_names_and_the_labels_argument(tmp_path):
    base = random_net(4, 3, [6], n_out=1)
    net = Network.from_arrays(base.weights, base.biases, input_names=["speed", "angle", "$cost"])
    assert input_labels(net) == ("speed", "angle", r"\$cost")  # a model's $ is not mathtext
    ax = partition_slice(net, Box(-np.ones(3), np.ones(3)), (2, 0))
    assert (ax.get_xlabel(), ax.get_ylabel()) == (r"\$cost", "speed")
    assert "(angle=0)" in ax.get_title()
    plt.close(ax.figure)
    ax = partition_slice(net, Box(-np.ones(3), np.ones(3)), (0, 1), labels=["v", "a", "c"])
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("v", "a") and "(c=0)" in ax.get_title()
    plt.close(ax.figure)
    ax = partition_slice(net, Box(-np.ones(3), np.ones(3)), (0, 1), labels=["u", "w"])
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("u", "w") and "($cost" not in ax.get_title()
    plt.close(ax.figure)
    two = Network.from_arrays([[[1.0, -1.0], [1.0, 1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [-0.5]],
                              input_names=["left", "right"])
    ax = partition(two, Box([-1, -1], [1, 1]))
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("left", "right")
    assert legend(ax) == ["polytope (linear region)", "layer 1 hyperplanes", "region boundary",
                          "local decision boundary", "traversal start point"]
    plt.close(ax.figure)
    with pytest.raises(ConfigError, match="labels has 1 entries but the network has 2 inputs"):
        save_partition(two, Box([-1, -1], [1, 1]), tmp_path / "p.png", labels=["a"])
    with pytest.raises(ConfigError, match="labels has 4 entries but the network has 3 inputs"):
        check_plane(net, (0, 1), ["a", "b", "c", "d"])


@pytest.mark.parametrize("name,match", [
    ("out.xyz", r"matplotlib cannot write '\.xyz' files; use one of .*\.pdf.*\.png.*\.svg"),
    ("out", "no file suffix"),
    ("missing/out.png", "no folder .*missing' to write 'out.png' in"),
])
def test_bad_figure_paths_fail_before_any_traversal(tmp_path, monkeypatch, name, match):
    def no_traversal(*args, **kwargs):
        raise AssertionError("traversed before checking the figure path")

    import sys

    monkeypatch.setattr(sys.modules["polytrav.host.runner"], "traverse", no_traversal)
    with pytest.raises(ConfigError, match=match):
        check_figure_path(tmp_path / name)
    with pytest.raises(ConfigError, match=match):
        save_partition(random_net(0, 2, [4]), Box([-1, -1], [1, 1]), tmp_path / name)
    assert check_figure_path(tmp_path / "OUT.PDF") == (tmp_path / "OUT.PDF").resolve()


@pytest.mark.parametrize("dims,match", [
    (None, r"5 inputs: choose the plane .* in 0\.\.4"),
    ((2, 2), r"two different inputs in 0\.\.4"),
    ((0, 5), r"out of range: the network has 5 inputs, so the valid indices are 0\.\.4"),
    ((-1, 2), r"valid indices are 0\.\.4"),
    ((1.5, 2), r"two input indices \(I, J\) in 0\.\.4"),
    ((1, 2, 3), r"two input indices"),
])
def test_bad_dims_are_config_errors_with_the_valid_range(tmp_path, dims, match):
    net = random_net(0, 5, [4])
    with pytest.raises(ConfigError, match=match):
        check_plane(net, dims)
    with pytest.raises(ConfigError, match=match):
        save_partition(net, Box(-np.ones(5), np.ones(5)), tmp_path / "p.png", dims=dims)
    assert not (tmp_path / "p.png").exists()


def test_save_partition_two_inputs_reuses_polytopes_and_refuses_a_report_on_a_slice(tmp_path):
    net = random_net(2, 2, [8, 6], n_out=1)
    region = Box([-1, -1], [1, 1])
    polys = list(traverse(net, region))
    open_before = plt.get_fignums()
    out = save_partition(net, region, tmp_path / "p.png", polytopes=polys[:3])
    assert out.is_file() and pixels(out).std() > 0.05
    out = save_partition(net, region, tmp_path / "swapped.png", dims=(1, 0))  # a (trivial) slice
    assert out.is_file()
    report = analyze(net, region, ["output_range"])
    with pytest.raises(ConfigError, match="report can only be drawn on a network of two inputs"):
        save_partition(random_net(0, 3, [4]), Box(-np.ones(3), np.ones(3)), tmp_path / "r.png",
                       dims=(0, 1), report=report)
    assert plt.get_fignums() == open_before  # save_partition closes its figures


def test_tick_labels_do_not_overlap_on_a_thin_strip():
    net = random_net(2, 2, [8, 6], n_out=1)
    for box in (Box([-0.30351, 0.0], [-0.29863, 0.0195]),  # tall and thin, long labels
                Box([-1.0, 0.1], [1.0, 0.104])):  # flat: auto aspect
        ax = partition(net, box)
        fig = ax.figure
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        for labels, along in ((ax.get_xticklabels(), 0), (ax.get_yticklabels(), 1)):
            extents = sorted((t.get_window_extent(renderer) for t in labels
                              if t.get_text() and t.get_visible()),
                             key=lambda e: e.p0[along])
            assert extents
            for a, b in zip(extents, extents[1:]):
                assert a.p1[along] < b.p0[along], [t.get_text() for t in labels]
        plt.close(fig)


def tree_arrows(ax) -> list:
    """The BFS tree's arrows: annotations with an arrow (the figure's numbers are plain text)."""
    return [t for t in ax.texts if getattr(t, "arrow_patch", None) is not None]


def test_paper_figure_3_draws_the_discovery_tree():
    """Issue 63: examples/paper_figures.py's Figure 3 ("discovery tree") draws one arrow from
    each polytope's parent to it: every polytope but the first."""
    import importlib.util
    from pathlib import Path

    pytest.importorskip("torch")
    script = Path(__file__).resolve().parents[2] / "examples" / "paper_figures.py"
    spec = importlib.util.spec_from_file_location("paper_figures", script)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    net, region = random_net(3, 2, [6, 6], n_out=1), Box([-1, -1], [1, 1])
    ax = example.figure3(net, region)
    n = len(list(traverse(net, region, strategy="hierarchical")))
    assert n > 10 and len(tree_arrows(ax)) == n - 1
    assert "BFS tree (discovery)" in legend(ax) and "discovery tree" in ax.get_title()
    plt.close(ax.figure)


def test_bfs_tree_without_parents_warns_and_draws_none():
    """Subdivision's polytopes (strategy "auto" on a box) have no discovery parents: the tree
    cannot be drawn, and partition says so instead of drawing nothing silently."""
    net, region = random_net(3, 2, [6, 6], n_out=1), Box([-1, -1], [1, 1])
    cells = list(traverse(net, region))
    assert all(p.parent is None for p in cells)
    with pytest.warns(UserWarning, match="bfs_tree=True drew no tree.*strategy='hierarchical'"):
        ax = partition(net, region, polytopes=cells, bfs_tree=True)
    assert tree_arrows(ax) == [] and "BFS tree (discovery)" not in legend(ax)
    plt.close(ax.figure)
    ax = partition(net, region, bfs_tree=True)  # no polytopes: partition runs the traversal
    assert len(tree_arrows(ax)) == len(list(traverse(net, region))) - 1
    plt.close(ax.figure)
