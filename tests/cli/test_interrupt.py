"""Ctrl-C and exit codes, through the command line in a subprocess as a user meets them.

Ctrl-C (SIGINT) during any command prints the part done so far, marked partial, and exits 2;
a confirmed answer is never called partial; a confirmed violation exits 1.

Ctrl-C comes once the traversal is running, as the user sees it: the progress bar on a
terminal (stderr is a pseudo-terminal here) shows at least one polytope. Nothing waits a fixed
time, so a slow start-up on a busy machine only makes the test wait longer. The net has 8
inputs: the commands run subdivision with numba installed (it streams the net's millions of
cells from its first cuts), the LP traversal without it; one command
(``regions-subdivision``) runs on the 4-input net, where subdivision cuts a first batch of
cells through all three layers before it reports a polytope.
"""
from __future__ import annotations

import re
import subprocess

import pytest
from ctrl_c import HANG, console_script, interrupted_when, write_big

#: The progress bar once it counts a polytope: the traversal is running.
READY = re.compile(rb"\b[1-9]\d* polytopes")


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """``big.onnx`` on 8 inputs (far more polytopes than a test waits for, so every command
    is still running when Ctrl-C comes), its properties and a job file
    (:func:`ctrl_c.write_big`)."""
    return write_big(tmp_path_factory.mktemp("interrupt"), n_inputs=8)


@pytest.fixture(scope="module")
def big4(tmp_path_factory):
    """The same on 4 inputs: the default strategy is subdivision."""
    return write_big(tmp_path_factory.mktemp("interrupt4"))


def interrupted(args, cwd):
    """Run ``polytrav args``, Ctrl-C once its progress bar counts a polytope (never, if it
    ends before); the exit code, stdout and what the terminal (stderr) showed."""
    return interrupted_when(READY, args, cwd)


BOX = ["--lower", "-1", "--upper", "1"]
COMMANDS = {
    "regions": (["regions", "big.onnx", *BOX], "PARTIAL: interrupted"),
    "regions-subdivision": (["regions", "big.onnx", *BOX], "PARTIAL: interrupted"),
    "attack": (["attack", "big.onnx", *BOX, "--output", "0"], "PARTIAL REPORT (interrupted)"),
    # L1: the traversal's own search (an L2 one hands over to its branch and bound at once)
    "counterfactual": (["counterfactual", "big.onnx", *BOX, "--x0", ",".join("0" * 8), "--target",
                        "2", "--norm", "1"],
                       "PARTIAL REPORT (interrupted)"),
    "monotonicity": (["monotonicity", "big.onnx", *BOX, "--feature", "0", "--direction",
                      "increasing", "--output", "2"], ""),
    "run": (["run", "job.toml"], "PARTIAL REPORT (interrupted)"),
    "verify": (["verify", "big.onnx", "far.vnnlib", "--no-bounds"], "interrupted"),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_ctrl_c_prints_a_partial_answer_and_exits_2(big, big4, command):
    args, marker = COMMANDS[command]
    code, out, err = interrupted(args, big4 if command.endswith("-subdivision") else big)
    assert "Traceback" not in err, err
    if command == "monotonicity" and code == 1:  # a violation confirmed before Ctrl-C is final
        assert "VIOLATED (witness confirmed" in out
        return
    assert code == 2, (out, err)
    assert marker in out, out


def test_stop_at_first_with_a_confirmed_violation_exits_1_and_is_not_partial(big):
    res = subprocess.run([console_script("polytrav"), "attack", "big.onnx", *BOX, "--label", "0",
                          "--stop-at-first"], capture_output=True, text=True, cwd=big,
                         timeout=HANG)
    assert res.returncode == 1, (res.stdout, res.stderr)
    assert "PARTIAL" not in res.stdout and "VIOLATED (witness confirmed" in res.stdout
    assert "stopped early: every analysis was decided" in res.stdout
