"""``--timeout`` of the analysis commands and ``time_limit`` count the work, not the one-time
imports: through the console script in a new process (so the imports are its first), a budget
ends a run only after that many seconds of work (``time`` in the report). A lower bound on
elapsed time holds on any machine; nothing here asks for a speed."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from ctrl_c import console_script, write_big

BOX = ["--lower", "-1", "--upper", "1"]
BUDGET = 0.5
#: Seconds to wait for a run that has a budget: a hang guard only.
HANG = 600


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    return write_big(tmp_path_factory.mktemp("budgets"))


@pytest.mark.parametrize("args", [["attack", "big.onnx", *BOX, "--output", "0"],
                                  ["monotonicity", "big.onnx", *BOX, "--feature", "1",
                                   "--output", "0"]])
def test_a_timeout_counts_the_work_not_the_imports(big, args):
    res = subprocess.run([console_script("polytrav"), *args, "--timeout", str(BUDGET), "--json"],
                         cwd=big, capture_output=True, text=True, timeout=HANG)
    report = json.loads(res.stdout)
    # a violation found before the budget ran out is an answer (exit 1); none found, exit 2
    violated = any(r["verdict"] == "violated" for r in report["results"])
    assert report["status"] == "time_limit", (res.stdout, res.stderr)
    assert res.returncode == (1 if violated else 2), (res.stdout, res.stderr)
    # the budget ran out after BUDGET seconds of work, whatever the set-up took before it
    assert report["time"] >= BUDGET and report["setup_time"] > 0, report
    assert report["stats"]["polytopes"] >= 0


def test_regions_timeout_counts_the_traversal(big):
    res = subprocess.run([console_script("polytrav"), "regions", "big.onnx", *BOX,
                          "--timeout", str(BUDGET), "--json"],
                         cwd=big, capture_output=True, text=True, timeout=HANG)
    stats = json.loads(res.stdout)
    assert res.returncode == 2 and stats["status"] == "time_limit", (res.stdout, res.stderr)
    assert stats["seconds"] >= BUDGET, stats


def test_time_limit_in_python_counts_from_the_end_of_the_first_imports(big):
    """analyze() in a new interpreter: its first call imports the solver libraries (its
    ``setup_time``), and still has the whole ``time_limit`` for the work."""
    code = ("import polytrav\n"
            "r = polytrav.analyze(polytrav.Network.from_onnx('big.onnx'), polytrav.Box(-1, 1), "
            f"'output_range', time_limit={BUDGET})\n"
            "print(r.status.value, r.time, r.setup_time)\n")
    res = subprocess.run([sys.executable, "-c", code], cwd=big, capture_output=True, text=True,
                         timeout=HANG)
    status, work, setup = res.stdout.split()
    assert status == "time_limit" and float(work) >= BUDGET and float(setup) > 0, res.stderr
