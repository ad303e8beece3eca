"""Issue 60 through the console scripts: ``polytrav verify NET PROP --proof FILE`` writes a
certificate of an ``unsat`` (and says so), none for a ``sat`` (one line saying why);
``polytrav check-proof`` and ``polytrav-check-proof`` answer ``valid`` / ``invalid: step N``
with exit codes 0 / 1, and bad input gets one line and exit 4."""
from __future__ import annotations

import io
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest
from ctrl_c import console_script, save_mlp_onnx

from polytrav import Network
from polytrav.proof.check import DIFF
from polytrav.testing.reference import random_net


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """A 3-8-8-2 net, ``hold.vnnlib`` (``Y_0`` above its sampled maximum: unsat) and
    ``fail.vnnlib`` (below it: sat)."""
    folder = tmp_path_factory.mktemp("proof_cli")
    net = random_net(17, 3, [8, 8], n_out=2)
    save_mlp_onnx(net.weights, net.biases, folder / "net.onnx")
    y = Network.from_onnx(folder / "net.onnx").forward(
        np.random.default_rng(0).uniform(-1, 1, (20000, 3)))[:, 0]
    head = [f"(declare-const X_{i} Real)" for i in range(3)]
    head += [f"(declare-const Y_{j} Real)" for j in range(2)]
    head += [f"(assert (>= X_{i} -1))\n(assert (<= X_{i} 1))" for i in range(3)]
    for name, level in (("hold", y.max() + 0.05 * np.ptp(y)), ("fail", y.max() - 0.2 * np.ptp(y))):
        (folder / f"{name}.vnnlib").write_text(
            "\n".join(head + [f"(assert (>= Y_0 {float(level)!r}))"]) + "\n")
    return folder


def run(folder, script, *args):
    return subprocess.run([console_script(script), *args], cwd=folder, capture_output=True,
                          text=True, timeout=600)


def test_verify_writes_a_certificate_that_checks_valid(folder):
    out = run(folder, "polytrav", "verify", "net.onnx", "hold.vnnlib", "--proof", "p.proof")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "unsat"
    assert any(line.startswith("proof: wrote p.proof (") and "leaves with a certificate" in line
               for line in lines), out.stdout
    for script, args in (("polytrav", ["check-proof"]), ("polytrav-check-proof", [])):
        check = run(folder, script, *args, "net.onnx", "hold.vnnlib", "p.proof")
        assert (check.returncode, check.stdout) == (0, "valid\n"), check.stderr


def test_a_certificate_out_of_proof_seconds_is_incomplete_never_valid(folder):
    """``--proof-seconds``: phase trees (the split off) given a budget too small to prove
    anything leave the case a claim without evidence: the checker answers incomplete (exit
    2); without ``--proof`` the option is refused in one line."""
    out = run(folder, "polytrav", "verify", "net.onnx", "hold.vnnlib", "--no-split", "--proof",
              "budget.proof", "--proof-seconds", "1e-9")
    assert out.returncode == 0 and out.stdout.splitlines()[0] == "unsat", out.stderr
    check = run(folder, "polytrav", "check-proof", "net.onnx", "hold.vnnlib", "budget.proof")
    assert check.returncode == 2 and check.stdout.startswith("incomplete: step 4 "), check
    out = run(folder, "polytrav", "verify", "net.onnx", "hold.vnnlib", "--proof-seconds", "5")
    assert out.returncode == 4 and out.stderr.strip().splitlines() == [
        "polytrav: error: --proof-seconds S is the budget of --proof FILE's certificate: give "
        "--proof FILE"]


def test_a_tampered_certificate_is_invalid(folder):
    run(folder, "polytrav", "verify", "net.onnx", "hold.vnnlib", "--proof", "q.proof")
    with zipfile.ZipFile(folder / "q.proof") as z:
        header, arrays = z.read("proof.json"), z.read("arrays.npz")
    with zipfile.ZipFile(folder / "bad.proof", "w") as z:  # the certificate of another claim
        z.writestr("proof.json", header.replace(b'"claim": "unsat"', b'"claim": "sat"'))
        z.writestr("arrays.npz", arrays)
    check = run(folder, "polytrav-check-proof", "net.onnx", "hold.vnnlib", "bad.proof")
    assert check.returncode == 1
    assert check.stdout.startswith("invalid: step 3 (the property)"), check.stdout


def test_a_sat_gets_no_certificate_and_one_line_saying_so(folder):
    out = run(folder, "polytrav", "verify", "net.onnx", "fail.vnnlib", "--proof", "s.proof")
    assert out.returncode == 1 and out.stdout.startswith("sat\n")
    assert ("proof: none written to s.proof: the answer is sat (a certificate is written for "
            "unsat only)") in out.stdout.splitlines()
    assert not (folder / "s.proof").exists()


def test_bad_input_is_one_line(folder):
    out = run(folder, "polytrav", "check-proof", "net.onnx", "hold.vnnlib", "missing.proof")
    assert out.returncode == 4 and out.stdout == ""
    assert out.stderr.strip().splitlines() == [
        "polytrav: error: check-proof: CERTIFICATE file 'missing.proof' not found"]
    out = run(folder, "polytrav-check-proof", "missing.onnx", "hold.vnnlib", "p.proof")
    assert out.returncode == 4 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    out = run(folder, "polytrav-check-proof", "net.onnx", "hold.vnnlib", "missing.proof")
    assert (out.returncode, out.stderr) == (
        4, "polytrav-check-proof: CERTIFICATE file 'missing.proof' not found\n")
    out = run(folder, "polytrav", "verify", "net.onnx", "hold.vnnlib", "--proof", "no/dir/p.proof")
    assert out.returncode == 4 and len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_polytrav_vnnlib_writes_the_same_certificate(folder):
    out = run(folder, "polytrav-vnnlib", "verify", "hold.vnnlib", "--network", "N=net.onnx",
              "--proof", "v.proof")
    assert (out.returncode, out.stdout) == (0, "unsat\n"), out.stderr
    assert "polytrav-vnnlib: proof: wrote v.proof (" in out.stderr
    check = run(folder, "polytrav", "check-proof", "net.onnx", "hold.vnnlib", "v.proof")
    assert (check.returncode, check.stdout) == (0, "valid\n"), check.stderr
    out = run(folder, "polytrav-vnnlib", "verify", "fail.vnnlib", "--network", "N=net.onnx",
              "--proof", "w.proof")
    assert out.stdout.startswith("sat\n") and not (folder / "w.proof").exists()
    assert "polytrav-vnnlib: proof: none written to w.proof: the answer is sat" in out.stderr


@pytest.fixture(scope="module")
def pair_folder(tmp_path_factory) -> Path:
    """``f.onnx`` (2-8-8-2) and ``g.onnx`` (its weights moved by 2 %); their largest
    ``|g_j - f_j|`` on ``[-1, 1]^2`` is below 0.2 and above 0.01 (polytrav.diff)."""
    folder = tmp_path_factory.mktemp("proof_diff_cli")
    f = random_net(7, 2, [8, 8], n_out=2)
    rng = np.random.default_rng(7)
    save_mlp_onnx(f.weights, f.biases, folder / "f.onnx")
    save_mlp_onnx([W * (1 + rng.normal(size=W.shape) * 0.02) for W in f.weights], f.biases,
                  folder / "g.onnx")
    return folder


def test_diff_writes_a_certificate_of_its_epsilon_verdict(pair_folder):
    box = ["--lower", "-1", "--upper", "1"]
    out = run(pair_folder, "polytrav", "diff", "f.onnx", "g.onnx", *box, "--epsilon", "0.2",
              "--verdict-only", "--proof", "d.proof")
    assert out.returncode == 0, out.stderr
    assert "epsilon 0.2: holds" in out.stdout
    line = out.stdout.splitlines()[-1]
    assert line.startswith("proof: wrote d.proof (") and line.endswith(
        "leaves with a certificate; check: polytrav check-proof F G d.proof --epsilon 0.2 "
        "--lower -1.0,-1.0 --upper 1.0,1.0"), out.stdout
    check = run(pair_folder, "polytrav", "check-proof", "f.onnx", "g.onnx",
                *line.split("check-proof F G ")[1].split())
    assert (check.returncode, check.stdout) == (0, "valid\n"), check.stderr
    with zipfile.ZipFile(pair_folder / "d.proof") as z:  # diff's split: difference leaves
        kinds = np.load(io.BytesIO(z.read("arrays.npz")))["case0_kind"]
    assert (kinds == DIFF).any(), kinds
    lowered = run(pair_folder, "polytrav", "check-proof", "f.onnx", "g.onnx", "d.proof",
                  "--epsilon", "0.19", *box)
    assert lowered.returncode == 1 and lowered.stdout.startswith("invalid: step 3"), lowered
    swapped = run(pair_folder, "polytrav", "check-proof", "f.onnx", "f.onnx", "d.proof",
                  "--epsilon", "0.2", *box)
    assert swapped.returncode == 1 and swapped.stdout.startswith("invalid: step 2"), swapped


def test_diff_proof_seconds_bounds_the_certificate_cut_short_it_checks_incomplete(pair_folder):
    """``--proof-seconds``: a budget no computation fits in leaves every box without evidence
    (the checker answers incomplete, exit 2, never valid); a generous one gives a certificate
    that checks valid; without ``--proof`` the option is refused in one line."""
    box = ["--lower", "-1", "--upper", "1"]
    check = ["--epsilon", "0.2", *box]
    for seconds, name, answer, code in (("1e-9", "cut.proof", "incomplete: step ", 2),
                                        ("600", "whole.proof", "valid\n", 0)):
        out = run(pair_folder, "polytrav", "diff", "f.onnx", "g.onnx", *check, "--verdict-only",
                  "--proof", name, "--proof-seconds", seconds)
        assert out.returncode == 0 and "epsilon 0.2: holds" in out.stdout, out.stderr
        line = out.stdout.splitlines()[-1]
        assert line.startswith(f"proof: wrote {name} (") and (
            "without one (its budget ran out; the checker answers incomplete)" in line) == (
            code == 2), line
        got = run(pair_folder, "polytrav", "check-proof", "f.onnx", "g.onnx", name, *check)
        assert got.returncode == code and got.stdout.startswith(answer), got
    out = run(pair_folder, "polytrav", "diff", "f.onnx", "g.onnx", *check, "--proof-seconds",
              "5")
    assert out.returncode == 4 and out.stderr.strip().splitlines() == [
        "polytrav: error: --proof-seconds S is the budget of --proof FILE's certificate: give "
        "--proof FILE"]


def test_diff_writes_no_certificate_of_a_violation_and_says_so(pair_folder):
    out = run(pair_folder, "polytrav", "diff", "f.onnx", "g.onnx", "--lower", "-1", "--upper",
              "1", "--epsilon", "0.01", "--verdict-only", "--proof", "v.proof")
    assert out.returncode == 1
    assert out.stdout.splitlines()[-1] == ("proof: none written to v.proof: the verdict is "
                                           "violated (a certificate is written where it holds)")
    assert not (pair_folder / "v.proof").exists()


def test_diff_proof_needs_epsilon_and_check_proof_needs_the_box(pair_folder):
    out = run(pair_folder, "polytrav", "diff", "f.onnx", "g.onnx", "--lower", "-1", "--upper",
              "1", "--proof", "x.proof")
    assert out.returncode == 4 and out.stderr.strip().splitlines() == [
        "polytrav: error: --proof FILE certifies the epsilon verdict: give --epsilon E"]
    out = run(pair_folder, "polytrav", "check-proof", "f.onnx", "g.onnx", "f.onnx",
              "--epsilon", "0.2")
    assert out.returncode == 4 and out.stderr.strip().splitlines() == [
        "polytrav: error: check-proof: --epsilon needs the box: --lower L --upper U"]


def test_attack_writes_a_certificate_of_an_exact_range(folder):
    out = run(folder, "polytrav", "attack", "net.onnx", "--lower", "-1", "--upper", "1",
              "--output", "1", "--proof", "r.proof")
    assert out.returncode == 0, out.stderr
    line = out.stdout.splitlines()[-1]
    assert line.startswith("proof: wrote r.proof (") and "; check: polytrav check-proof NET " \
        "r.proof --output 1 --lower " in line, line
    check = run(folder, "polytrav", "check-proof", "net.onnx",
                *line.split("check-proof NET ")[1].split())
    assert check.returncode == 0 and check.stdout.startswith("valid (y_1 = "), check
    args = line.split("check-proof NET ")[1].split()
    args[args.index("--max") + 1] = repr(float(args[args.index("--max") + 1]) - 1e-3)
    lowered = run(folder, "polytrav-check-proof", "net.onnx", *args)
    assert lowered.returncode == 1 and lowered.stdout.startswith("invalid: step 3"), lowered
    partial = run(folder, "polytrav", "attack", "net.onnx", "--lower", "-1", "--upper", "1",
                  "--output", "1", "--max-polytopes", "1", "--proof", "p1.proof")
    assert partial.stdout.splitlines()[-1] == (
        "proof: none written to p1.proof: the range is not exact (a certificate is written for "
        "an exact range over a box)"), partial.stdout


def test_counterfactual_writes_a_certificate_of_its_linf_minimum(folder):
    out = run(folder, "polytrav", "counterfactual", "net.onnx", "--lower", "-1", "--upper", "1",
              "--x0", "0.1,-0.2,0.3", "--norm", "inf", "--proof", "c.proof")
    assert out.returncode == 0, out.stderr
    line = out.stdout.splitlines()[-1]
    assert line.startswith("proof: wrote c.proof (") and "check-proof NET c.proof --x0 " in line
    check = run(folder, "polytrav", "check-proof", "net.onnx",
                *line.split("check-proof NET ")[1].split())
    assert (check.returncode, check.stdout) == (0, "valid\n"), check
    l2 = run(folder, "polytrav", "counterfactual", "net.onnx", "--lower", "-1", "--upper", "1",
             "--x0", "0.1,-0.2,0.3", "--norm", "2", "--proof", "c2.proof")
    assert l2.returncode == 4 and l2.stderr.strip().splitlines() == [
        "polytrav: error: --proof FILE certifies an L-infinity minimum (--norm inf); an L2 "
        "minimum has no certificate of this kind (docs/proofs.md)"]
