"""Issue 63 item 5: ``polytrav diff``'s share of the region agrees with its decision verdict
(0, exact, when proven never to differ; no positive lower end when nothing is confirmed), in
the text, the JSON and the Python result; the slice picture says where the slice lies and
which worst its star is."""
from __future__ import annotations

import json
import re
import subprocess

import numpy as np
import pytest
from ctrl_c import console_script

from polytrav import Box, Network, diff
from polytrav.testing.reference import random_net

pytest.importorskip("sklearn")
sio = pytest.importorskip("skops.io")

N_IN = 8  # above EXACT_VOLUME_MAX_DIM: the share is the inscribed balls' interval


@pytest.fixture(scope="module")
def skops_model(tmp_path_factory):
    """A scikit-learn pipeline (scaler + ReLU MLP of 6 units) on 8 inputs, saved with skops."""
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, N_IN))
    y = (X[:, 0] + X[:, 1] ** 2 - X[:, 2] > 0.3).astype(int)
    pipe = make_pipeline(StandardScaler(), MLPClassifier((6,), max_iter=2000, random_state=0))
    path = tmp_path_factory.mktemp("share") / "m.skops"
    sio.dump(pipe.fit(X, y), path)
    return path


def consistent(res) -> None:
    """The share interval says what ``decisions_differ`` says."""
    lo, hi = res.volume_share
    assert 0.0 <= lo <= hi <= 1.0, res.volume_share
    if res.decisions_differ is False:
        assert (lo, hi) == (0.0, 0.0), res.volume_share
    elif res.decisions_differ is True:
        assert lo > 0.0, res.volume_share  # a confirmed change is a cell of positive volume
    else:
        assert lo == 0.0, res.volume_share  # nothing confirmed to differ


def test_a_model_against_itself_differs_on_no_share(skops_model):
    """The console script, text and --json: "no (proven)" next to a share of exactly 0."""
    args = [console_script("polytrav"), "diff", str(skops_model), str(skops_model),
            "--lower", "-1", "--upper", "1"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "decisions differ: no (proven)" in out.stdout
    assert "share of the region: 0 (exact: no decision differs)" in out.stdout, out.stdout
    out = subprocess.run(args + ["--json"], capture_output=True, text=True, timeout=600)
    saved = json.loads(out.stdout)
    assert saved["decisions_differ"] is False and saved["volume_share"] == [0.0, 0.0]


def test_share_agrees_with_the_verdict_in_python():
    """Proven the same, two different models (complete and cut short): the share never says
    more or less than the decision verdict, in 8 inputs (balls) and in 2 (qhull)."""
    f, g = random_net(3, N_IN, [5], n_out=2), random_net(4, N_IN, [5], n_out=2)
    box = Box(-np.ones(N_IN), np.ones(N_IN))
    same = diff(f, f, box)
    assert same.decisions_differ is False and same.volume_share == (0.0, 0.0)
    consistent(same)
    for budget in (None, 3, 40):
        consistent(diff(f, g, box, max_polytopes=budget))
    f2, g2 = random_net(5, 2, [6], n_out=3), random_net(6, 2, [6], n_out=3)
    small = Box(-np.ones(2), np.ones(2))
    consistent(diff(f2, f2, small))
    for budget in (None, 2):
        consistent(diff(f2, g2, small, max_polytopes=budget))


def svg_text(path) -> str:
    """The texts of an SVG written with ``svg.fonttype: none`` (text kept as text)."""
    return " ".join(re.sub(r"<[^>]+>", " ", path.read_text()).split())


def test_slice_says_where_it_lies_and_which_worst(tmp_path):
    """--plot: the title names the plane and the values the others are held at; the star is
    the worst on this slice, and the caption gives the region's worst as the text prints it."""
    matplotlib = pytest.importorskip("matplotlib")
    pd = pytest.importorskip("pandas")
    from click.testing import CliRunner
    from sklearn.neural_network import MLPClassifier

    from polytrav.interface.cli import main

    rng = np.random.default_rng(2)
    X = pd.DataFrame(rng.normal(size=(120, 3)), columns=["age", "income", "debt"])
    y = (X.income - X.debt > 0).astype(int)
    for name, seed in (("f", 0), ("g", 1)):
        net = MLPClassifier((4,), max_iter=2000, random_state=seed).fit(X, y)
        sio.dump(net, tmp_path / f"{name}.skops")
    figure = tmp_path / "slice.svg"
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        out = CliRunner().invoke(main, ["diff", str(tmp_path / "f.skops"),
                                        str(tmp_path / "g.skops"), "--lower", "-1,-1,-1",
                                        "--upper", "1,1,0", "--plot", str(figure),
                                        "--dims", "0", "2"])
    assert out.exit_code == 0, out.output
    printed = float(re.search(r"max \|g - f\| = ([0-9.e+-]+) \(exact", out.output).group(1))
    text = svg_text(figure)
    assert "slice of age and debt; income held at 0 (the box centre)" in text, text
    assert "worst on this slice: |g" in text
    region_worst = re.search(r"the region's worst: \|g\d - f\d\| = ([0-9.e+-]+) \(exact\)",
                             text)
    assert region_worst is not None, text
    assert float(region_worst.group(1)) == pytest.approx(printed, rel=1e-3)
    # no bare "worst" left to contradict the text: each is the slice's or the region's
    assert "worst" not in text.replace("region's worst", "").replace("worst on this slice", "")
