"""``--timeout`` of the analysis commands and ``time_limit`` count the work, not the one-time
imports: through the console script in a new process (so the imports are its first), a budget
ends a run only after that many seconds of work (``time`` in the report). A lower bound on
elapsed time holds on any machine; nothing here asks for a speed. The budget is also every
solver call's deadline: each gets at most what is left, none starts once nothing is."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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


# ---------------------------------------------------------------- every solver call (issue 63)
# The real HiGHS and Clarabel, registered as a third-party backend is (an entry point), record
# the time limit each call was given (tests/support/solver_limits.py); a command in a new
# process writes them to a file. A limit is compared with what the budget left when the call
# was made (the budget less the time since the first call, which comes after the set-up the
# budget does not count): an inequality that holds on any machine. No wall-clock bound.

#: Backends of every form: the recording ones first.
RECORDING = "lp=recording-highs,milp=recording-highs,qp=recording-clarabel"
#: A budget far above what the runs need: every limit must shrink below it.
GUARD = 30.0


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A 6-input net, two rows of it, and how to run a command with the recording backends:
    ``run(args) -> (CompletedProcess, records)``."""
    import solver_limits
    from ctrl_c import save_mlp_onnx
    from reference import random_net

    root = tmp_path_factory.mktemp("recorded")
    net = random_net(1, 6, [8, 8], n_out=1)
    save_mlp_onnx(net.weights, net.biases, root / "net.onnx")
    (root / "rows.csv").write_text("x0,x1,x2,x3,x4,x5\n0,0,0,0,0,0\n0.5,0.5,0.5,0.5,0.5,0.5\n")
    paths = [str(root), str(Path(solver_limits.__file__).parent), os.environ.get("PYTHONPATH", "")]
    log = root / "calls.jsonl"
    env = {**os.environ, **solver_limits.install(root), solver_limits.LOG: str(log),
           "PYTHONPATH": os.pathsep.join(p for p in paths if p)}

    def run(args):
        log.unlink(missing_ok=True)
        res = subprocess.run([console_script("polytrav"), *args], cwd=root, env=env,
                             capture_output=True, text=True, timeout=HANG)
        return res, solver_limits.read_log(log)
    return run


X0 = "0,0,0,0,0,0"
COMMANDS = {  # the L2 counterfactual's branch and bound runs at once, as the L1 MILP here
    "counterfactual L2": (["counterfactual", "net.onnx", *BOX, "--x0", X0, "--norm", "2"], "qp"),
    "counterfactual L1 MILP": (["analyze", "net.onnx", *BOX, "--analysis", "counterfactual",
                                f"x0={X0}", "norm=1", "milp_after=1"], "milp"),
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_timeout_bounds_every_solver_call(recorded, name):
    args, form = COMMANDS[name]
    res, calls = recorded([*args, "--timeout", str(GUARD), "--solver", RECORDING, "--json"])
    assert res.returncode in (0, 2), (res.stdout, res.stderr)
    assert {"lp", form} <= {c["form"] for c in calls}, (calls, res.stderr)
    first = min(c["t"] for c in calls)
    for c in calls:
        assert c["limit"] <= GUARD - (c["t"] - first) + 1e-9, c


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_spent_timeout_starts_no_solver_call(recorded, name):
    args, _ = COMMANDS[name]
    res, calls = recorded([*args, "--timeout", "1e-9", "--solver", RECORDING, "--json"])
    report = json.loads(res.stdout)
    assert calls == [], calls
    assert res.returncode == 2 and report["status"] == "time_limit", (res.stdout, res.stderr)
    assert report["results"][0]["exact"] is False


def test_explain_rows_past_their_time_limit_are_unknown(recorded):
    pytest.importorskip("pandas")
    res, calls = recorded(["explain", "net.onnx", "rows.csv", "--domain=-1:1", "--analysis",
                           "counterfactual norm=1 milp_after=1", "--time-limit", "1e-9",
                           "--solver", RECORDING])
    assert calls == [], calls
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "explained 2 rows: 0 proven, 2 unknown" in res.stdout, res.stdout
