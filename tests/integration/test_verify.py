"""verify() and ``polytrav verify`` on the real ACAS Xu and mnistfc files, against ground truth."""
from __future__ import annotations

import csv
import json
import subprocess
import sys

import numpy as np
import pytest
from budgets import DECIDE
from click.testing import CliRunner

from polytrav import ConfigError, Network
from polytrav.interface.cli import main
from polytrav.verification.vnnlib import read_vnnlib
from polytrav.verification.verify import check_with_onnxruntime, verify

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def acas(data_dir):
    root = data_dir / "acasxu"
    truth = {(r["network"], r["property"]): r["verdict"]
             for r in csv.DictReader((root / "ground_truth.csv").open())}
    onnx = lambda name: root / "onnx" / f"ACASXU_run2a_{name}_batch_2000.onnx"  # noqa: E731
    prop = lambda k: root / "vnnlib" / f"prop_{k}.vnnlib"  # noqa: E731
    return onnx, prop, truth


def _refuse_once():
    """A ``confirm`` for :func:`verify` that refuses its first counterexample only."""
    seen = []

    def confirm(x):
        seen.append(x)
        return "refused by the test" if len(seen) == 1 else None

    return confirm


def test_property_3_on_1_7_is_violated_at_the_start_attack(acas):
    """The start attack's point is a counterexample (forward pass and onnxruntime): ``sat``
    without a traversal; with the attack's answer refused, the traversal confirms the same
    kind of point in its first polytope."""
    onnx, prop, truth = acas
    assert truth[("1_7", "3")] == "sat"
    result = verify(onnx("1_7"), prop(3), timeout=DECIDE)
    assert result.answer == "sat" and result.polytopes == 0
    assert result.reason == "input region 0 (start attack)"
    traversed = verify(onnx("1_7"), prop(3), timeout=DECIDE,
                       confirm=_refuse_once())
    assert traversed.answer == "sat" and traversed.polytopes == 1
    spec = read_vnnlib(prop(3))
    case = spec.cases[0]
    x = result.counterexample
    assert np.all(x >= case.lower - 1e-12) and np.all(x <= case.upper + 1e-12)
    ok, y = check_with_onnxruntime(onnx("1_7"), x, case.unsafe, tol=0.0)
    assert ok and np.allclose(y, result.output, atol=1e-5)


def test_property_4_on_3_3_holds_like_the_ground_truth(acas):
    """Property 4 fixes one input (zero-width box coordinate): traversed in its affine hull."""
    onnx, prop, truth = acas
    assert truth[("3_3", "4")] == "unsat"
    result = verify(onnx("3_3"), prop(4), timeout=DECIDE, bounds=False)
    assert result.answer == "unsat" and result.polytopes > 100 and result.reason == ""
    assert result.proven == 0  # plain traversal: every polytope visited
    bounded = verify(onnx("3_3"), prop(4), timeout=DECIDE, split=False)
    assert bounded.answer == "unsat" and bounded.proven >= 1
    assert bounded.polytopes < result.polytopes
    pieces = [p for r in bounded.reports for p in r.stats["proven_pieces"]]  # no volumes: a
    assert pieces and all(share is None for _, _, share in pieces)  # statistic verify drops
    split = verify(onnx("3_3"), prop(4), timeout=DECIDE)
    assert split.answer == "unsat" and split.split["proven"] >= 1


def test_property_7_on_1_9_is_violated_found_by_input_splitting(acas):
    """The instance traversal alone left undecided for 116 s (best-first proved ~16k pieces):
    worst-first input splitting meets the counterexample within a few hundred boxes."""
    onnx, prop, truth = acas
    assert truth[("1_9", "7")] == "sat"
    result = verify(onnx("1_9"), prop(7), timeout=DECIDE)
    assert result.answer == "sat" and result.split["boxes"] <= 1000
    case = read_vnnlib(prop(7)).cases[0]
    ok, _ = check_with_onnxruntime(onnx("1_9"), result.counterexample, case.unsafe, tol=0.0)
    assert ok


def test_a_small_sub_box_of_property_1_holds_and_the_budget_gives_timeout(acas):
    onnx, prop, truth = acas
    spec = read_vnnlib(prop(1))
    case = spec.cases[0]
    mid = (case.lower + case.upper) / 2
    half = 0.002 * (case.upper - case.lower)
    from polytrav import Box, analyze

    net = Network.from_onnx(onnx("1_1"))
    report = analyze(net, Box(mid - half, mid + half), case.property(bounds=False))
    assert report.complete and report[0].verdict.value == "holds"
    timed = verify(onnx("1_1"), prop(1), timeout=1.0, bounds=False)
    assert timed.answer == "timeout" and timed.counterexample is None


def test_the_property_must_fit_the_network(acas, data_dir):
    onnx, _, _ = acas
    mnist_prop = data_dir / "mnistfc" / "vnnlib_2021" / "prop_0_0.03.vnnlib"
    with pytest.raises(ConfigError, match="784 inputs"):
        verify(onnx("1_1"), mnist_prop)


def test_mnistfc_counterexample_found_only_by_the_random_restarts(data_dir):
    """2021 256x2 prop_9_0.05 is violated; the descents from the best samples stop at a
    distance of 0.94, the batched restarts from random points reach the unsafe set (their
    point is within float32 rounding of its boundary: onnxruntime may refuse it, and the
    first polytope then gives one strictly inside)."""
    from polytrav.bounds import dnf as lp

    net_path = data_dir / "mnistfc" / "onnx" / "mnist-net_256x2.onnx"
    prop = data_dir / "mnistfc" / "vnnlib_2021" / "prop_9_0.05.vnnlib"
    result = verify(net_path, prop, timeout=DECIDE)
    assert result.answer == "sat" and result.polytopes <= 1
    case = read_vnnlib(prop).cases[0]
    ok, _ = check_with_onnxruntime(net_path, result.counterexample, case.unsafe, tol=0.0)
    assert ok
    net = Network.from_onnx(net_path)
    pairs = [(C / np.linalg.norm(C, axis=1)[:, None], d) for C, d in case.unsafe]
    lo, hi = case.lower, case.upper
    assert lp._restarts(pairs, net, lo, hi, lambda x: True, np.random.default_rng(0)) is not None
    # the start attack runs them for conjunctions of one row too (only its linear programs
    # are for several rows): its point is in the unsafe set
    x = lp.attack_start(pairs, net, case.region())
    assert lp.unsafe_distance(pairs, net.forward(x)[None, :])[0] <= 0


# ---------------------------------------------------------------- the command line


def test_cli_prints_sat_with_the_counterexample_and_exits_1(acas, tmp_path):
    onnx, prop, _ = acas
    cex = tmp_path / "cex.txt"
    res = CliRunner().invoke(main, ["verify", str(onnx("1_7")), str(prop(3)), "--timeout",
                                    str(DECIDE), "--counterexample", str(cex)])
    assert res.exit_code == 1, res.output
    assert res.output.splitlines()[0] == "sat" and "counterexample input" in res.output
    text = cex.read_text().split()
    assert text[0] == "sat" and "(X_4" in text and "(Y_0" in text


def test_cli_json_unsat_exits_0(acas):
    onnx, prop, _ = acas
    res = CliRunner().invoke(main, ["verify", str(onnx("3_3")), str(prop(4)), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["answer"] == "unsat" and out["split"]["proven"] >= 1 and out["counterexample"] is None
    plain = CliRunner().invoke(main, ["verify", str(onnx("3_3")), str(prop(4)), "--json",
                                      "--no-bounds", "--order", "bfs"])
    out = json.loads(plain.output)
    assert plain.exit_code == 0 and out["polytopes"] > 100 and out["proven"] == 0
    unsplit = CliRunner().invoke(main, ["verify", str(onnx("3_3")), str(prop(4)), "--json",
                                        "--no-split"])
    out = json.loads(unsplit.output)
    assert unsplit.exit_code == 0 and out["split"] is None and out["proven"] >= 1


def test_cli_timeout_exits_3(acas):
    onnx, prop, _ = acas
    res = CliRunner().invoke(main, ["verify", str(onnx("1_1")), str(prop(1)), "--timeout", "1",
                                    "--no-bounds"])
    assert res.exit_code == 3 and res.output.startswith("timeout"), res.output


@pytest.mark.parametrize("problem, message", [
    ("malformed", "bad.vnnlib:3:1: expected ')' but got end of file"),
    ("solver", "unknown solver 'nope'"),
    ("missing", "not found"),
])
def test_cli_bad_input_is_named_and_exits_4(acas, tmp_path, problem, message):
    onnx, prop, _ = acas
    net, spec, extra = str(onnx("1_1")), str(prop(3)), []
    if problem == "malformed":
        bad = tmp_path / "bad.vnnlib"
        bad.write_text("(declare-const X_0 Real)\n(assert (<= X_0 1)\n")
        spec = str(bad)
    elif problem == "solver":
        extra = ["--solver", "nope"]
    else:
        net = str(tmp_path / "missing.onnx")
    res = CliRunner().invoke(main, ["verify", net, spec, *extra])
    assert res.exit_code == 4, res.output
    assert message in res.output


def test_cli_batch_writes_a_results_csv(acas, tmp_path):
    onnx, prop, truth = acas
    inst = tmp_path / "instances.csv"
    inst.write_text(f"{onnx('1_7')},{prop(3)},{DECIDE}\n{onnx('3_3')},{prop(4)},{DECIDE}\n")
    out = tmp_path / "results.csv"
    res = CliRunner().invoke(main, ["verify", "--instances", str(inst), "--results", str(out)])
    assert res.exit_code == 1, res.output  # a batch with a sat instance exits as sat
    rows = list(csv.DictReader(out.open()))
    assert [r["answer"] for r in rows] == [truth[("1_7", "3")], truth[("3_3", "4")]]


def test_the_installed_command_runs():
    res = subprocess.run([sys.executable, "-c", "from polytrav.interface.cli import main; main()", "--help"],
                         capture_output=True, text=True)
    assert res.returncode == 0 and "verify" in res.stdout


def test_json_on_stdout_is_only_json(acas):
    """highspy prints a banner on the C-level stdout once per process; it must not reach it."""
    onnx, prop, _ = acas
    res = subprocess.run([sys.executable, "-c", "from polytrav.interface.cli import main; main()", "verify",
                          str(onnx("1_7")), str(prop(3)), "--json"], capture_output=True, text=True)
    assert res.returncode == 1, res.stderr
    assert json.loads(res.stdout)["answer"] == "sat"


def test_mnistfc_counterexample_found_by_neuron_branch_and_bound(data_dir):
    """2021 256x2 prop_0_0.05 is violated; the attacks miss it, the region's neuron-level
    branch and bound finds it, and onnxruntime confirms it."""
    net_path = data_dir / "mnistfc" / "onnx" / "mnist-net_256x2.onnx"
    prop = data_dir / "mnistfc" / "vnnlib_2021" / "prop_0_0.05.vnnlib"
    result = verify(net_path, prop, timeout=DECIDE)
    assert result.answer == "sat"
    ok, _ = check_with_onnxruntime(net_path, result.counterexample,
                                   read_vnnlib(prop).cases[0].unsafe, tol=0.0)
    assert ok
    # a budget that must run out: a slower machine only makes it surer
    without = CliRunner().invoke(main, ["verify", str(net_path), str(prop), "--timeout", "3",
                                        "--no-bab"])
    assert without.exit_code == 3 and without.output.startswith("timeout"), without.output


def test_mnistfc_proven_by_the_region_milp(data_dir, monkeypatch):
    """2021 256x2 prop_3_0.03 holds (five tools proved it in 2021); the bounds leave 84
    neurons unstable over its box, branch and bound alone did not decide it in 120 s, and
    one MILP per conjunction (``polytrav.bounds.milp``) proves it. The branch-and-bound probe
    that runs first (30 % of the time left) is skipped: the benchmark runs it. An image ball
    (hundreds of effective inputs) is not split into boxes first."""
    import dataclasses

    from polytrav.bounds import settle

    monkeypatch.setattr(settle, "VERIFY_POLICY",
                        dataclasses.replace(settle.VERIFY_POLICY, bab_probe_share=0.0))
    net_path = data_dir / "mnistfc" / "onnx" / "mnist-net_256x2.onnx"
    prop = data_dir / "mnistfc" / "vnnlib_2021" / "prop_3_0.03.vnnlib"
    result = verify(net_path, prop, timeout=DECIDE)
    assert result.answer == "unsat", result.reason
    assert result.split is None  # (was test_split's second verify, of prop_2_0.03)
    bab = result.reports[0][0].details["bab"]
    assert bab["method"] == "milp" and bab["verdict"] == "holds" and bab["binaries"] == 84


def test_deep_mnist_image_proven_robust_by_neuron_branch_and_bound(data_dir):
    """mnist10x10, test image 7 at eps 0.01: robust (a MILP proves it in about 40 s,
    docs/case_studies.md); layer-by-layer pieces never finish, neuron branching does.
    Without it (``bab=False``) the run stays undecided."""
    from polytrav import Ball, Box, Verdict, analyze
    from polytrav.plugins.adversarial import SoftmaxAttack

    net = Network.from_nnet(data_dir / "mnist" / "mnist10x10.nnet")
    images = np.load(data_dir / "mnist" / "mnist_test.npz")
    x0, label = images["images"][7].reshape(-1) / 255.0, int(images["labels"][7])
    region = Ball(x0, 0.01, norm="inf") & Box(0.0, 1.0)
    report = analyze(net, region, SoftmaxAttack(label, mode="verify"), time_limit=DECIDE)
    assert report[0].verdict is Verdict.HOLDS and report.complete
    assert report[0].details["bab"]["verdict"] == "holds"
    # a budget that must run out (a slower machine only makes it surer); not max_polytopes=20,
    # which had not ended after 10 minutes (on a loaded machine)
    without = analyze(net, region, SoftmaxAttack(label, mode="verify", bab=False), time_limit=3)
    assert without[0].verdict is Verdict.UNKNOWN
    # image 8 is misclassified already: the start attack meets the unsafe set, so the branch
    # and bound does not search (0 nodes) and the traversal confirms the point
    x8, label8 = images["images"][8].reshape(-1) / 255.0, int(images["labels"][8])
    assert np.argmax(net.forward(x8)) != label8
    report = analyze(net, Ball(x8, 0.01, norm="inf") & Box(0.0, 1.0),
                     SoftmaxAttack(label8, mode="verify"), time_limit=DECIDE)
    result = report[0]
    assert result.verdict is Verdict.VIOLATED and result.details["bab"]["nodes"] == 0
    assert np.argmax(net.forward(result.witness)) != label8


def test_ctrl_c_in_verify_re_raises_unless_a_report_is_asked_for(acas):
    """Ctrl-C mid-run closes the run; ``on_interrupt="report"`` answers unknown, saying why."""
    onnx, prop, _ = acas

    def interrupt(traversal):
        if traversal.stats.polytopes >= 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        verify(onnx("1_1"), prop(3), bounds=False, progress=interrupt)
    result = verify(onnx("1_1"), prop(3), bounds=False, progress=interrupt, on_interrupt="report")
    assert result.answer == "unknown" and "interrupted" in result.reason
    assert result.exit_code == 2
    assert result.polytopes >= 3  # the interrupted run's polytopes, which the callback saw


@pytest.mark.parametrize("k", [0, 10, 11])
def test_the_start_attack_reaches_the_robot_counterexamples(data_dir, k):
    """reach_prob_density's robot_0/10/11 (sat): the unsafe set is a conjunction of five rows
    (two outputs in a band, a third above a level) met only near faces of the box; the
    signed-gradient descents and restarts miss it, sequential linear programming on the local
    models reaches it, and ``verify`` answers ``sat`` with a counterexample onnxruntime
    confirms."""
    import polytrav.bounds.dnf as dnf
    from polytrav import Box

    root = data_dir / "vnncomp2022" / "reach_prob_density"
    onnx, query = root / "onnx" / "robot.onnx", root / "vnnlib" / f"robot_{k}.vnnlib"
    net, case = Network.from_onnx(onnx), read_vnnlib(query).cases[0]
    pairs = [(C / np.linalg.norm(C, axis=1)[:, None], d / np.linalg.norm(C, axis=1))
             for C, d in case.unsafe]
    region = Box(case.lower, case.upper)
    x = dnf.attack_start(pairs, net, region)
    assert dnf.unsafe_distance(pairs, net.forward(x)[None, :])[0] < 0
    result = verify(onnx, query, timeout=DECIDE)
    assert result.answer == "sat"
    ok, _ = check_with_onnxruntime(onnx, result.counterexample, case.unsafe, tol=0.0)
    assert ok


def test_the_start_attack_without_its_linear_programs_misses_robot_0(data_dir, monkeypatch):
    """The same attack with :data:`SLP_STARTS` = 0 (as before) ends outside the unsafe set:
    the test above checks the linear programs, not luck."""
    import polytrav.bounds.dnf as dnf
    from polytrav import Box

    root = data_dir / "vnncomp2022" / "reach_prob_density"
    net = Network.from_onnx(root / "onnx" / "robot.onnx")
    case = read_vnnlib(root / "vnnlib" / "robot_0.vnnlib").cases[0]
    pairs = [(C / np.linalg.norm(C, axis=1)[:, None], d / np.linalg.norm(C, axis=1))
             for C, d in case.unsafe]
    monkeypatch.setattr(dnf, "SLP_STARTS", 0)
    x = dnf.attack_start(pairs, net, Box(case.lower, case.upper))
    assert dnf.unsafe_distance(pairs, net.forward(x)[None, :])[0] > 0
