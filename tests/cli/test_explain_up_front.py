"""``polytrav explain`` refuses what no row can use before any row runs, in one line with exit
code 4 (issue 63, item 6): an analysis option no row can use (``counterfactual norm=3``, as
``polytrav counterfactual --norm 3`` is refused) and a CSV file with a header and no rows."""
from __future__ import annotations

import subprocess

import pytest
from ctrl_c import HANG, console_script, save_mlp_onnx


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("up_front")
    save_mlp_onnx([[[1.0, -1.0], [0.5, 1.0]], [[1.0, -1.0]]], [[0.0, 0.1], [-0.2]],
                  root / "small.onnx")
    (root / "rows.csv").write_text("a,b\n0.1,0.2\n0.5,0.9\n0.3,0.3\n")
    (root / "header.csv").write_text("a,b\n")
    return root


def explain(folder, *args) -> subprocess.CompletedProcess:
    return subprocess.run([console_script("polytrav"), "explain", "small.onnx", *args,
                           "--table", "t.csv"], capture_output=True, text=True, cwd=folder,
                          timeout=HANG)


@pytest.mark.parametrize("args, line", [
    (["rows.csv", "--analysis", "counterfactual norm=3"],
     "explain: analysis 'counterfactual': norm must be 1, 2 or inf, got 3 (the same on every "
     "row, so no row ran)"),
    (["rows.csv", "--analysis", "counterfactual norm=1", "--analysis",
      "counterfactual norm=inf search='deep'"],
     "explain: analysis 'counterfactual': search must be one of ('best-first', 'shrink', "
     "'full'), got 'deep' (analysis 'counterfactual#2'; the same on every row, so no row ran)"),
    (["rows.csv", "--analysis", "output_range radius=-1"], "radius must be a non-negative "
                                                           "number"),
    (["header.csv"], "DATA 'header.csv' has no rows, only the header (2 columns); give one row "
                     "per line under it"),
])
def test_refused_in_one_line_before_any_row(folder, args, line):
    res = explain(folder, *args)
    assert (res.returncode, res.stdout) == (4, ""), res.stderr
    assert res.stderr.startswith("polytrav: error: ") and line in res.stderr, res.stderr
    assert res.stderr.count("\n") == 1 and not (folder / "t.csv").exists()


def test_counterfactual_refuses_the_same_norm(folder):
    res = subprocess.run([console_script("polytrav"), "counterfactual", "small.onnx", "--lower",
                          "0", "--upper", "1", "--x0", "0.1,0.2", "--norm", "3"],
                         capture_output=True, text=True, cwd=folder, timeout=HANG)
    assert res.returncode == 4 and "'3' is not one of '1', '2', 'inf'" in res.stderr
