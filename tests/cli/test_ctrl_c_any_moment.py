"""Ctrl-C at any moment from process start, through the installed console scripts.

SIGINT goes to every command of ``polytrav`` and ``polytrav-vnnlib`` at delays from 0 s up.
The delays are only sample points: whatever the moment turns out to be on this machine, the
run ends in one of the documented ways (docs/cli.md, "Ctrl-C"): its own answer (a partial one
says ``interrupted``) with nothing on stderr, or one line on stderr and exit 2 (130 for
``polytrav-vnnlib``); or, before any code of polytrav's runs, the interpreter's own start-up
(:func:`ctrl_c.in_interpreter_start_up`, told apart by what Python itself prints). Never a
traceback of ours, never a death by SIGSEGV or SIGABRT.
"""
from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import time

import pytest
from ctrl_c import (BEFORE_ANY_RESULT, BEFORE_THE_END, as_from_a_terminal, console_script,
                    explain_long, in_interpreter_start_up, write_big)

BOX = ["--lower", "-1", "--upper", "1"]
#: Every command: (console script, arguments, exit codes of a run that ends on its own).
COMMANDS = {
    "version": ("polytrav", ["--version"], {0}),
    "help": ("polytrav", ["--help"], {0}),
    "plugins": ("polytrav", ["plugins"], {0}),
    "solvers": ("polytrav", ["solvers"], {0}),
    "verify": ("polytrav", ["verify", "big.onnx", "far.vnnlib", "--no-bounds"], {0}),
    "run": ("polytrav", ["run", "job.toml"], set()),
    "regions": ("polytrav", ["regions", "big.onnx", *BOX], set()),
    "attack": ("polytrav", ["attack", "big.onnx", *BOX, "--output", "0"], set()),
    # class 2 never wins: bounds prove it in a fraction of a second once the command runs
    "counterfactual": ("polytrav", ["counterfactual", "big.onnx", *BOX, "--x0", "0,0,0,0",
                                    "--target", "2"], {0}),
    "monotonicity": ("polytrav", ["monotonicity", "big.onnx", *BOX, "--feature", "0",
                                  "--direction", "increasing", "--output", "2"], {1}),
    # the rows done (none, or the first) in the table and report, marked partial
    "explain": ("polytrav", ["explain", "big.onnx", "rows.csv", *explain_long(4), "--table",
                             "t.csv", "--report", "r.md"], set()),
    "vnnlib-help": ("polytrav-vnnlib", ["-h"], {0}),
    "vnnlib-name": ("polytrav-vnnlib", ["--name"], {0}),
    "vnnlib-supports": ("polytrav-vnnlib", ["supports", "--vnnlib-versions"], {0}),
    "vnnlib-verify": ("polytrav-vnnlib", ["verify", "far2.vnnlib", "--network", "N=big.onnx"],
                      {0}),
}
#: Seconds after launch; the default run samples a few, the slow one many.
FEW = (0.0, 0.05, 0.4)
MANY = tuple(k * 0.05 for k in range(50))
#: Seconds to wait for a run to end after its Ctrl-C: a hang guard only.
HANG = 300
#: As a user runs them: with the installed plugins (the test session switches them off).
ENV = {k: v for k, v in os.environ.items() if k != "POLYTRAV_DISABLE_PLUGIN_AUTOLOAD"}


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    return write_big(tmp_path_factory.mktemp("any_moment"))


def outcome(command: str, delay: float, cwd) -> str:
    """Run ``command``, send SIGINT after ``delay`` s, check how it ended; say which way."""
    program, args, finished = COMMANDS[command]
    proc = subprocess.Popen([console_script(program), *args], cwd=cwd, env=ENV, text=True,
                            preexec_fn=as_from_a_terminal,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(delay)  # a sample point, not a wait for anything: every moment must do
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=HANG)
    except subprocess.TimeoutExpired:  # the Ctrl-C was lost: fail, and leave nothing running
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"{command} at {delay:.3f} s: still running {HANG} s after its Ctrl-C\n"
                    f"stderr: {err[-2000:]!r}")
    code, seen = proc.returncode, f"{command} at {delay:.3f} s: exit {proc.returncode}\n" \
                                  f"stdout: {out[-600:]!r}\nstderr: {err[-2000:]!r}"
    if in_interpreter_start_up(code, err):
        return "interpreter start-up"
    assert code >= 0, f"died by signal {-code}: {seen}"
    assert "Traceback" not in err, seen
    for line, exit_code in (BEFORE_ANY_RESULT[program], BEFORE_THE_END):
        if err == line + "\n":
            assert code == exit_code, seen
            return "one line"
    assert err == "", seen
    if code in finished:
        return "finished"
    assert code == 2 and "interrupted" in out, seen
    return "partial answer"


def sweep(big, commands, delays) -> collections.Counter:
    ways = collections.Counter()
    for command in commands:
        for delay in delays:
            ways[outcome(command, delay, big)] += 1
    return ways


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_ctrl_c_at_a_few_moments_ends_as_documented(big, command):
    sweep(big, [command], FEW)


@pytest.mark.slow
def test_ctrl_c_at_many_moments_ends_as_documented(big):
    """Every command at 50 moments from 0 to 2.45 s (750 runs)."""
    ways = sweep(big, sorted(COMMANDS), MANY)
    assert sum(ways.values()) == len(COMMANDS) * len(MANY)


def test_the_take_over_comes_before_anything_heavy():
    """The console module, and the package above it, load none of numpy, SciPy or click."""
    code = ("import sys, polytrav.interface.console\n"
            "print([m for m in ('numpy', 'scipy', 'click') if m in sys.modules])")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=HANG)
    assert res.stdout == "[]\n", (res.stdout, res.stderr)


def test_the_lines_and_exit_codes_are_the_commands_own():
    from polytrav.interface.cli.common import EXIT_PARTIAL
    from polytrav.interface.cli.vnnlib_solver import EXIT_INTERRUPTED
    from polytrav.interface.console import STARTING, since_start

    assert STARTING == {"polytrav": BEFORE_ANY_RESULT["polytrav"],
                        "polytrav-vnnlib": BEFORE_ANY_RESULT["polytrav-vnnlib"]}
    assert (STARTING["polytrav"][1], STARTING["polytrav-vnnlib"][1]) == (EXIT_PARTIAL,
                                                                        EXIT_INTERRUPTED)
    assert since_start() == 0.0  # inside another program (this test): the call's clock
