"""``polytrav explain`` through the console script: a progress bar per row on a terminal
(none when stderr is not one), and Ctrl-C that keeps the rows done (issue 63, item 3).

The rows and options (:func:`ctrl_c.explain_long`) make the run certain to be in its second
row when Ctrl-C comes: row ``quick`` searches a box that meets one polytope of ``big.onnx`` (8
inputs, three layers of 40), rows ``long`` and ``centre`` boxes with far more polytopes than
a test waits for, with no time limit. Ctrl-C goes once the terminal shows the bar at 1 of 3
rows with row ``long`` started: nothing waits a fixed time.

A Ctrl-C while the report is written (after every row) leaves out its monotonicity table, the
one part that can take minutes: on a network increasing in ``x0`` whose bounds do not prove
it, the table's first run is certain to last its whole budget; Ctrl-C goes once the terminal
says the report is being written.
"""
from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest
from ctrl_c import (HANG, console_script, explain_long, interrupted_when, random_layers,
                    save_mlp_onnx, write_big)

pd = pytest.importorskip("pandas")
pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")

from polytrav.host.explanation import NOT_EXPLAINED

N = 8
ARGS = explain_long(N)
#: The bar once the first row is done and the second has started.
READY = re.compile(rb" 1/3 \[[^\]]*; row long\]")
NEVER = re.compile(rb"(?!)")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = write_big(tmp_path_factory.mktemp("explain_ctrl_c"), n_inputs=N)
    lines = (root / "rows.csv").read_text().splitlines()
    (root / "quick.csv").write_text("\n".join(lines[:2]) + "\n")
    return root


def test_ctrl_c_writes_the_rows_done_marked_partial(folder):
    code, out, terminal = interrupted_when(
        READY, ["explain", "big.onnx", "rows.csv", *ARGS, "--table", "t.csv", "--report",
                "r.html"], folder)
    assert READY.search(terminal.encode()), terminal[-2000:]  # Ctrl-C came during row 2
    assert "Traceback" not in terminal, terminal[-2000:]
    assert code == 2, (out, terminal[-2000:])
    assert out.startswith("PARTIAL (interrupted): explained 1 of 3 rows: 1 proven, 0 unknown "
                          "or with an error; 2 rows not explained"), out
    assert "wrote t.csv, r.html" in out
    assert "explain: interrupted after 1 of 3 rows; writing them to t.csv, r.html" in terminal
    table = pd.read_csv(folder / "t.csv", index_col="id")
    assert table.index.tolist() == ["quick", "long", "centre"]  # every input row
    assert table.loc["quick", "counterfactual.exact"] and pd.isna(table.loc["quick", "row.error"])
    assert table.loc[["long", "centre"], "row.error"].tolist() == [NOT_EXPLAINED] * 2
    assert table.loc[["long", "centre"], "counterfactual.exact"].isna().all()
    html = (folder / "r.html").read_text()
    assert "<title>Model validation report (PARTIAL: 1 of 3 rows explained)</title>" in html
    assert '<section id="partial" class="partial">' in html
    assert "<th>explained (1)</th><td>quick</td>" in html
    assert "<th>not explained (2)</th><td>long … centre (2 rows)</td>" in html
    assert "Row quick" in html and "Row long" not in html
    # the monotonicity table would be a new long run: left out, and said so
    assert "Not computed: the run was interrupted (Ctrl-C) before it began." in html


def test_the_bar_counts_rows_on_a_terminal_only(folder):
    args = ["explain", "big.onnx", "quick.csv", *ARGS, "--table", "q.csv"]
    code, out, terminal = interrupted_when(NEVER, args, folder)  # runs to its end
    assert code == 0, (out, terminal)
    assert re.search(r"explain: 100%\|.*\| 1/1 \[", terminal), terminal
    assert out == "explained 1 rows: 1 proven, 0 unknown or with an error; wrote q.csv\n"
    res = subprocess.run([console_script("polytrav"), *args], capture_output=True, text=True,
                         cwd=folder, timeout=HANG)
    assert (res.returncode, res.stderr) == (0, ""), res.stderr  # not a terminal: no bar


def save_increasing(path, n: int = N) -> None:
    """A net of 8 inputs, three layers of 40 (+1), increasing in ``x0`` (a path of always
    active neurons adds 100 x0 to a random net that moves far less with x0) but not provably
    so by bounds: its monotonicity run on x0 lasts its whole budget, unknown."""
    W, b = random_layers(np.random.default_rng(1), [n, 40, 40, 40, 1])
    W[0][:, 0] *= 0.05
    through = np.zeros((41, 41))
    through[40, 40] = 1.0
    W2, W3 = through.copy(), through.copy()
    W2[:40, :40], W3[:40, :40] = W[1], W[2]
    save_mlp_onnx([np.vstack([W[0], np.eye(n)[:1]]), W2, W3, np.append(W[3], [[100.0]], axis=1)],
                  [np.append(b[0], 2.0), np.append(b[1], 0.0), np.append(b[2], 0.0), b[3]], path)


def test_ctrl_c_while_the_report_is_written_leaves_the_monotonicity_table_out(tmp_path):
    save_increasing(tmp_path / "up.onnx")
    (tmp_path / "rows.csv").write_text(",".join(f"x{j}" for j in range(N)) + "\n"
                                       + "\n".join(",".join([v] * N) for v in ("0.5", "-0.5")))
    ready = re.compile(rb"writing r\.html with its monotonicity table \(up to 5 s per feature")
    code, out, terminal = interrupted_when(
        ready, ["explain", "up.onnx", "rows.csv", "--domain", "-1:1", "--analyses",
                '["local_model"]', "--table", "t.csv", "--report", "r.html",
                "--monotonicity-time-limit", "5"], tmp_path)
    assert ready.search(terminal.encode()) and "Traceback" not in terminal, terminal[-2000:]
    assert code == 2, (out, terminal[-2000:])
    assert out == ("explained 2 rows: 2 proven, 0 unknown or with an error; wrote t.csv, r.html;"
                   " the report's monotonicity table was interrupted (Ctrl-C) and left out\n")
    assert pd.read_csv(tmp_path / "t.csv")["row.error"].isna().all()  # the rows are whole
    html = (tmp_path / "r.html").read_text()
    assert '<section id="partial"' not in html and 'id="region-table"' in html
    assert "Not computed: interrupted (Ctrl-C) while the report was written" in html
    assert 'id="monotonicity-table"' not in html
