"""Pictures: rendered to files and checked (size, not blank, the expected colours present)."""
from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner
from reference import TINY_NNET, random_net

from polytrav import Box, ConfigError, analyze, traverse

plt = pytest.importorskip("matplotlib.pyplot")
from matplotlib.colors import to_rgb  # noqa: E402

from polytrav.plot import LAYER_COLORS, partition, plane_slice  # noqa: E402


def pixels(path):
    img = plt.imread(path)[..., :3]
    return img.reshape(-1, 3)


def has_colour(px, colour, tol=0.03):
    return bool((np.abs(px - np.array(to_rgb(colour))).max(axis=1) < tol).any())


def test_partition_picture_with_levels_tree_and_results(tmp_path):
    net = random_net(2, 2, [8, 6], n_out=1)
    region = Box([-1, -1], [1, 1])
    polys = list(traverse(net, region))
    report = analyze(net, region, ["output_range",
                                   {"name": "monotonicity", "feature": 0, "direction": "increasing"}])
    ax = partition(net, region, polytopes=polys, report=report, bfs_tree=True)
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
    with pytest.raises(ConfigError, match="plane_slice"):
        partition(random_net(0, 3, [4], n_out=1), Box(-np.ones(3), np.ones(3)))


def test_cli_regions_counts_lists_and_plots(tmp_path):
    from polytrav.cli import main

    net = tmp_path / "tiny.nnet"
    net.write_text(TINY_NNET)
    out = tmp_path / "p.png"
    res = CliRunner().invoke(main, ["regions", str(net), "--lower", "-1", "--upper", "1", "--list",
                                    "--plot", str(out)])
    assert res.exit_code == 0, res.output
    assert res.output.strip().splitlines()[-1].startswith("4 polytopes")
    assert out.exists() and pixels(out).std() > 0.05
    res = CliRunner().invoke(main, ["regions", str(net)])
    assert res.exit_code == 4 and "--lower and --upper" in res.output


def test_the_paper_figures_example_runs(tmp_path):
    """examples/paper_figures.py trains its networks and writes Figures 1, 3 and 4."""
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("torch")
    script = Path(__file__).resolve().parents[2] / "examples" / "paper_figures.py"
    res = subprocess.run([sys.executable, str(script), "--out", str(tmp_path), "--epochs", "300"],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    for name in ("figure1.png", "figure3.png", "figure4.png"):
        px = pixels(tmp_path / name)
        assert px.std() > 0.05 and has_colour(px, LAYER_COLORS[0]), name
