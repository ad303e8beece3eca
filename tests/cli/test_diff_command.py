"""``polytrav diff F G``: in-process through click's ``CliRunner``: the answer and exit
codes, --epsilon, --export (JSON, CSV), --plot, and bad input as one line with exit code 4."""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from ctrl_c import save_mlp_onnx

import polytrav
from polytrav import Box, Network, diff
from polytrav.interface.cli import main

F_W = [np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[1.0, -1.0]])]
G_B = [np.zeros(2), np.array([0.25])]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """f = relu(x0) - relu(x1); g = f + 0.25; and a model of 3 inputs."""
    folder = tmp_path_factory.mktemp("diff")
    save_mlp_onnx(F_W, [np.zeros(2), np.zeros(1)], folder / "f.onnx")
    save_mlp_onnx(F_W, G_B, folder / "g.onnx")
    save_mlp_onnx([np.ones((2, 3)), np.ones((1, 2))], [np.zeros(2), np.zeros(1)],
                  folder / "three.onnx")
    return folder


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_answer_epsilon_and_exports(models):
    f, g = models / "f.onnx", models / "g.onnx"
    out = run("diff", f, g, "--lower", "-1", "--upper", "1", "--epsilon", "0.3",
              "--export", models / "d.json")
    assert out.exit_code == 0, out.output
    assert "max |g - f| = 0.25 (exact over the region)" in out.output
    assert "epsilon 0.3: holds" in out.output and "decisions differ: yes" in out.output
    saved = json.loads((models / "d.json").read_text())
    truth = diff(Network.from_onnx(f), Network.from_onnx(g), Box([-1, -1], [1, 1]))
    assert saved["max_abs"] == pytest.approx(0.25) and saved["exact"]
    assert saved["volume_share"] == pytest.approx(list(truth.volume_share))
    out = run("diff", f, g, "--lower", "-1", "--upper", "1", "--epsilon", "0.1",
              "--export", models / "d.csv")
    assert out.exit_code == 1, out.output  # violated
    assert "epsilon 0.1: violated" in out.output
    assert (models / "d.csv").read_text().startswith("output,")


def test_budget_is_partial(models):
    out = run("diff", models / "f.onnx", models / "g.onnx", "--lower", "-1", "--upper", "1",
              "--epsilon", "1", "--max-polytopes", "1")
    assert out.exit_code == 2, out.output
    assert "epsilon 1: unknown" in out.output and "visited polytopes only" in out.output


def test_plot_written(models):
    png = models / "diff.png"
    out = run("diff", models / "f.onnx", models / "g.onnx", "--lower", "-1", "--upper", "1",
              "--plot", png)
    assert out.exit_code == 0, out.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("args, words", [
    (["three.onnx", "--lower", "0", "--upper", "1"], "same input and output sizes"),
    (["g.onnx", "--lower", "0", "--upper", "1", "--outputs", "3"], "indices are 0..0"),
    (["g.onnx", "--lower", "0", "--upper", "1", "--export", "d.txt"], "end the name"),
    (["g.onnx", "--lower", "0", "--upper", "1", "--verdict-only"], "needs --epsilon"),
    (["missing.onnx", "--lower", "0", "--upper", "1"], "missing.onnx"),
])
def test_bad_input_is_one_line(models, args, words, monkeypatch):
    monkeypatch.chdir(models)
    out = run("diff", "f.onnx", *args)
    assert out.exit_code == 4, out.output
    lines = [line for line in out.output.splitlines() if line]
    assert len(lines) == 1 and lines[0].startswith("polytrav: error:") and words in lines[0]


def job_text(compare: str, epsilon: float) -> str:
    return f"""network = "f.onnx"
compare = "{compare}"
[region]
kind = "box"
lower = [-1, -1]
upper = [1, 1]
[[analysis]]
name = "model_diff"
epsilon = {epsilon}
[output]
json = "job_report.json"
"""


def test_job_file_compares_two_models(models):
    (models / "job.toml").write_text(job_text("g.onnx", 0.3))
    out = run("run", models / "job.toml")
    assert out.exit_code == 0, out.output
    saved = json.loads((models / "job_report.json").read_text())["results"][0]
    assert saved["verdict"] == "holds" and saved["value"]["max_abs"] == pytest.approx(0.25)
    (models / "job.toml").write_text(job_text("g.onnx", 0.2))
    assert run("run", models / "job.toml").exit_code == 1  # violated
    (models / "job.toml").write_text(job_text("three.onnx", 0.2))
    out = run("run", models / "job.toml")
    assert out.exit_code == 4 and "compare:" in out.output and "same input and output" in out.output


def test_slice_of_three_inputs(tmp_path):
    """Above two inputs the figure is a plane through the box's centre (dims 0 and 2)."""
    from polytrav.interface.plot.diff import save_diff_slice
    from polytrav.testing.reference import random_net

    f, g = random_net(1, 3, [4], n_out=2), random_net(2, 3, [5], n_out=2)
    out = save_diff_slice(f, g, Box(-np.ones(3), np.ones(3)), tmp_path / "s.png", dims=(0, 2),
                          resolution=60)
    assert out.read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(polytrav.ConfigError, match="dims"):
        save_diff_slice(f, g, Box(-np.ones(3), np.ones(3)), tmp_path / "t.png")


def test_rows_whose_decision_changes(models, tmp_path):
    """--rows: the CSV's rows where f and g decide differently (f = relu(x0) - relu(x1),
    g = f + 0.25: they differ where -0.25 < f <= 0, a tie of f counting as a change)."""
    data = tmp_path / "rows.csv"
    data.write_text("id,a,b,label\nr1,0.1,0.2,1\nr2,0.5,0.0,0\nr3,0.0,0.5,1\nr4,0.0,0.0,0\n")
    f, g = models / "f.onnx", models / "g.onnx"
    out = run("diff", f, g, "--rows", data, "--drop", "label", "--index-col", "id")
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[0] == "rows whose decision changes: 2 of 4"
    assert lines[1].startswith("  row 'r1': f says 0 (-0.1), g says 1 (0.15)")
    assert lines[2].startswith("  row 'r4': f says None (0), g says 1 (0.25)")
    out = run("diff", f, g, "--lower", "-1", "--upper", "1", "--rows", data, "--drop", "label",
              "--index-col", "id", "--json")
    assert out.exit_code == 0, out.output
    saved = json.loads(out.output)
    assert saved["max_abs"] == pytest.approx(0.25)
    assert [r["row"] for r in saved["rows"]["changed"]] == ["r1", "r4"]
    out = run("diff", f, g, "--rows", data)
    assert out.exit_code == 4 and "--drop" in out.output


PAIR_QUERY = """(vnnlib-version <2.0>)
(declare-network f (declare-input X_f real [1, 2]) (declare-output Y_f real [1, 1]))
(declare-network g (isomorphic-to f) (declare-input X_g real [1, 2]) (declare-output Y_g real [1, 1]))
(assert (>= X_f[0,0] -1.0)) (assert (<= X_f[0,0] 1.0))
(assert (>= X_f[0,1] -1.0)) (assert (<= X_f[0,1] 1.0))
(assert (== X_g[0,0] X_f[0,0])) (assert (== X_g[0,1] X_f[0,1]))
(assert (or (> (- Y_g[0,0] Y_f[0,0]) EPS) (< (- Y_g[0,0] Y_f[0,0]) -EPS)))
"""


@pytest.mark.parametrize("eps, extra, code, verdict", [
    ("0.2", [], 1, "violated"), ("0.3", [], 0, "holds"),
    ("0.2", ["--epsilon", "0.3"], 0, "holds")])
def test_two_network_query_gives_box_and_epsilon(models, eps, extra, code, verdict):
    """g - f = 0.25 everywhere: the query's box and eps, or --epsilon over the query's."""
    q = models / f"pair_{eps}.vnnlib"
    q.write_text(PAIR_QUERY.replace("EPS", eps))
    out = run("diff", models / "f.onnx", models / "g.onnx", "--vnnlib", q, "--verdict-only",
              "--json", *extra)
    assert out.exit_code == code, out.output
    res = json.loads(out.output)
    assert res["verdict"] == verdict and res["epsilon"] == float(extra[-1] if extra else eps)


def test_two_network_query_of_another_shape_is_refused(models):
    q = models / "one_sign.vnnlib"
    q.write_text(PAIR_QUERY.replace("(< (- Y_g[0,0] Y_f[0,0]) -EPS)", "").replace("EPS", "0.2"))
    out = run("diff", models / "f.onnx", models / "g.onnx", "--vnnlib", q)
    assert out.exit_code == 4 and "polytrav verify QUERY --network" in out.output


@pytest.mark.parametrize("route", ["diff", "stack"])
def test_verify_routes_a_two_network_query(models, route):
    q = models / "pair_verify.vnnlib"
    q.write_text(PAIR_QUERY.replace("EPS", "0.3"))
    out = run("verify", q, "--network", f"f={models / 'f.onnx'}", "--network",
              f"g={models / 'g.onnx'}", "--route", route, "--json")
    assert out.exit_code == 0, out.output  # unsat
    res = json.loads(out.output)
    assert res["answer"] == "unsat" and res["route"] == route
