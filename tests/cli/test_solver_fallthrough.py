"""Issue 63 item 6: with a first-order LP backend (``--solver lp=osqp``) the traversal's LPs
whose answers do not stand alone fall through to a certifying backend; the ``solved by:``
line counts them, and a note says once that the backend is a poor choice for LPs. Counts,
never times."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from ctrl_c import console_script, save_mlp_onnx
from reference import random_net

from polytrav import Box, analyze

pytest.importorskip("osqp")

N_IN = 9  # the LP traversal under strategy "auto" (subdivision takes up to 8 inputs)
NET = random_net(3, N_IN, [8, 6], n_out=2)
BOX = Box(-0.5 * np.ones(N_IN), 0.5 * np.ones(N_IN))
BUDGET = 40  # polytopes: enough for empty cells, whose osqp answers highs confirms
NOTE = re.compile(r"^note: osqp is a first-order solver: its answers are not certified, so "
                  r"(\d+) of them were solved again on another backend; LPs are faster and "
                  r"exact with highs \(--solver lp=highs\)$", re.MULTILINE)


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("osqp")
    save_mlp_onnx(NET.weights, NET.biases, folder / "net.onnx")
    lines = [f"(declare-const X_{i} Real)" for i in range(N_IN)]
    lines += [f"(declare-const Y_{j} Real)" for j in range(2)]
    lines += [f"(assert (>= X_{i} -0.5))\n(assert (<= X_{i} 0.5))" for i in range(N_IN)]
    (folder / "far.vnnlib").write_text("\n".join(lines + ["(assert (>= Y_0 1000000))"]) + "\n")
    return folder


def polytrav(folder, *args):
    return subprocess.run([console_script("polytrav"), *args], cwd=folder, capture_output=True,
                          text=True, timeout=600)


def solved_by(text: str) -> dict[str, tuple[int, int]]:
    """``solved by:`` as ``{backend: (answered, fell through)}``."""
    line = next(ln for ln in text.splitlines() if ln.startswith("solved by: "))
    out = {}
    for part in line[len("solved by: "):].split("; "):
        m = re.fullmatch(r"(\S+) (\d+) \([0-9.]+ s\)(?:, (\d+) fell through to the next "
                         r"backend)?", part)
        assert m is not None, part
        out[m.group(1)] = (int(m.group(2)), int(m.group(3) or 0))
    return out


def test_analyze_says_what_fell_through_and_notes_the_poor_choice_once(model):
    args = ["analyze", "net.onnx", "--lower", "-0.5", "--upper", "0.5", "--analysis",
            "output_range", "--max-polytopes", str(BUDGET)]
    out = polytrav(model, *args, "--solver", "lp=osqp")
    assert out.returncode == 2, out.stderr  # partial: the budget
    rows = solved_by(out.stdout)
    assert rows["osqp"][1] > 0 and rows["highs"][0] >= 1
    notes = NOTE.findall(out.stdout)
    assert notes == [str(rows["osqp"][1])]  # once, with the count of the line
    saved = json.loads(polytrav(model, *args, "--solver", "lp=osqp", "--json").stdout)
    solves = saved["stats"]["solves"]
    assert solves["osqp"]["first_order"] and not solves["highs"]["first_order"]
    assert {k: (r["answered"], r["fell_through"]) for k, r in solves.items()} == rows
    # every try is counted: each LP of the run is an answer or a try that fell through
    assert sum(r["answered"] + r["fell_through"] for r in solves.values()) >= saved["stats"]["lps"]
    plain = polytrav(model, *args)  # highs: nothing falls through, no note
    assert "fell through" not in plain.stdout and "note:" not in plain.stdout


def test_verify_says_so_too(model):
    out = polytrav(model, "verify", "net.onnx", "far.vnnlib", "--no-bounds", "--solver",
                   "lp=osqp", "--max-polytopes", str(BUDGET))
    assert out.stdout.startswith("unknown\n"), out.stdout + out.stderr
    assert solved_by(out.stdout)["osqp"][1] > 0 and len(NOTE.findall(out.stdout)) == 1


def test_the_python_report_says_so():
    report = analyze(NET, BOX, "output_range", solver={"lp": "osqp"}, max_polytopes=BUDGET)
    osqp = report.stats["solves"]["osqp"]
    assert osqp["first_order"] and osqp["fell_through"] > 0
    text = str(report)
    assert f", {osqp['fell_through']} fell through to the next backend" in text
    assert len(NOTE.findall(text)) == 1
