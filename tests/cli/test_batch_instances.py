"""``polytrav verify --instances``: the list is checked whole before any run, a header row is
fine, the results CSV has a counterexample column, and Ctrl-C leaves a row for the instance
it stopped.

Through the command line in a subprocess as a user runs it; the Ctrl-C case waits for the
second instance's start line on stderr (a readiness signal, not a sleep). ``verify_many``'s own
interrupted row is also checked in-process, with the ``KeyboardInterrupt`` raised from the
progress callback, so the moment it comes does not depend on the machine's speed.
"""
from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
from ctrl_c import as_from_a_terminal, random_layers, save_mlp_onnx
from reference import TINY_NNET

CLI = [sys.executable, "-c", "from polytrav.interface.cli import main; main()"]
COLUMNS = ["network", "property", "answer", "polytopes", "lps", "seconds", "reason",
           "counterexample"]


def polytrav(*args, cwd):
    env = {**os.environ, "POLYTRAV_DEBUG": "0"}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=cwd, timeout=300,
                          env=env)


def prop(bound: str) -> str:
    lines = [f"(declare-const X_{i} Real)" for i in range(2)] + ["(declare-const Y_0 Real)"]
    lines += [f"(assert (>= X_{i} -1))\n(assert (<= X_{i} 1))" for i in range(2)]
    return "\n".join(lines + [f"(assert (>= Y_0 {bound}))"]) + "\n"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """The tiny 2-input net, a sat and an unsat property, and a big net whose plain traversal
    (``--no-bounds``) outlasts any test (2-40-40-40-1, 1e6 unreachable)."""
    root = tmp_path_factory.mktemp("batch")
    (root / "tiny.nnet").write_text(TINY_NNET)
    (root / "sat.vnnlib").write_text(prop("-1000"))
    (root / "unsat.vnnlib").write_text(prop("1000"))
    save_mlp_onnx(*random_layers(np.random.default_rng(1), [2, 40, 40, 40, 1]), root / "big.onnx")
    (root / "far.vnnlib").write_text(prop("1000000"))
    return root


def rows(path) -> list[list[str]]:
    with open(path, newline="") as f:
        return list(csv.reader(f))


def test_a_header_row_is_skipped_and_a_sat_row_holds_its_counterexample(folder):
    (folder / "with_header.csv").write_text(
        "onnx,vnnlib,timeout\ntiny.nnet,sat.vnnlib,60\ntiny.nnet,unsat.vnnlib,60\n")
    res = polytrav("verify", "--instances", "with_header.csv", "--results", "r.csv",
                   cwd=folder)
    assert res.returncode == 1, res.stderr  # one sat
    table = rows(folder / "r.csv")
    assert table[0] == COLUMNS
    (sat, unsat) = [dict(zip(COLUMNS, r)) for r in table[1:]]
    assert (sat["answer"], unsat["answer"]) == ("sat", "unsat")
    assert unsat["counterexample"] == ""
    from polytrav.verification.verify import load_network

    x = np.array(json.loads(sat["counterexample"]))
    assert x.shape == (2,) and np.all(np.abs(x) <= 1)
    assert load_network(folder / "tiny.nnet").forward(x)[0] >= -1000
    (folder / "two_columns.csv").write_text("onnx,vnnlib\ntiny.nnet,unsat.vnnlib\n")
    res = polytrav("verify", "--instances", "two_columns.csv", cwd=folder)
    assert res.returncode == 0 and "tiny.nnet unsat.vnnlib: unsat" in res.stdout, res.stderr


def test_every_rows_files_are_checked_before_any_run(folder):
    """A missing file in the last row stops the batch before the first row runs."""
    (folder / "missing.csv").write_text(
        "tiny.nnet,sat.vnnlib,60\nnone.onnx,sat.vnnlib,60\ntiny.nnet,none.vnnlib,60\n")
    res = polytrav("verify", "--instances", "missing.csv", "--results", "m.csv", cwd=folder)
    assert res.returncode == 4, res.stderr
    line, = res.stderr.strip().splitlines()
    assert line.startswith("polytrav: error: missing.csv:2: network file 'none.onnx' not found")
    assert "(and 1 more)" in line and "fix the paths" in line
    assert not (folder / "m.csv").exists() and res.stdout == ""


def test_results_that_would_overwrite_the_list_are_refused(folder):
    (folder / "self.csv").write_text("tiny.nnet,sat.vnnlib,60\n")
    res = polytrav("verify", "--instances", "self.csv", "--results", "self.csv", cwd=folder)
    assert res.returncode == 4 and "is the instance list itself" in res.stderr, res.stderr
    assert (folder / "self.csv").read_text() == "tiny.nnet,sat.vnnlib,60\n"


def test_ctrl_c_writes_a_row_for_the_instance_it_stopped(folder):
    (folder / "long.csv").write_text("tiny.nnet,sat.vnnlib,600\nbig.onnx,far.vnnlib,600\n")
    proc = subprocess.Popen([*CLI, "verify", "--instances", "long.csv", "--results", "l.csv",
                             "--no-bounds"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=folder, preexec_fn=as_from_a_terminal)
    for line in proc.stderr:  # the readiness signal: the second instance has started
        if line.startswith("running 2 of 2: big.onnx far.vnnlib"):
            break
    else:
        raise AssertionError(f"no start line for the second instance; stdout {proc.stdout.read()}")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, (out, err)
    assert "Traceback" not in err and "PARTIAL: interrupted after 1 of 2" in err, err
    table = [dict(zip(COLUMNS, r)) for r in rows(folder / "l.csv")[1:]]
    assert [r["answer"] for r in table] == ["sat", "unknown"]
    assert table[1]["reason"] == "interrupted (Ctrl-C) before it finished"


def test_verify_many_yields_the_interrupted_instance_then_raises(folder):
    from polytrav.verification.verify import INTERRUPTED, verify_many

    def ctrl_c(traversal):
        raise KeyboardInterrupt

    jobs = [(folder / "none.onnx", folder / "sat.vnnlib", None),
            (folder / "tiny.nnet", folder / "unsat.vnnlib", None),
            (folder / "tiny.nnet", folder / "sat.vnnlib", None)]
    got = []
    with pytest.raises(KeyboardInterrupt):
        for i, res in verify_many(jobs, bounds=False, progress=ctrl_c):
            got.append((i, res.answer, res.reason))
    assert got[0][:2] == (0, "error")
    assert got[1] == (1, "unknown", INTERRUPTED) and len(got) == 2
