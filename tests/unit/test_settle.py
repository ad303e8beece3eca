"""The settle stage of a run (issue 59): an analysis decides the region, or what is left of it,
before the traversal; the run with it answers as the full traversal without it."""
from __future__ import annotations

import numpy as np
import pytest

from polytrav import AnalysisResult, Box, ConfigError, PluginError, Verdict, analyze
from polytrav.extend import Analysis, OpenBox, Settled, SettledBy
from polytrav.plugins.linear_property import LinearProperty
from polytrav.testing import check_settle, random_net


def near_the_outputs(net, region, **options):
    """A LinearProperty whose threshold lies near an output's sampled range (above, at or
    below its top), sometimes with a second, two-row conjunction: both answers occur. The
    choices are drawn from the network's own first weight."""
    rng = np.random.default_rng(int(abs(net.weights[0][0, 0]) * 1e6))
    lo, hi = region.bounding_box()
    y = np.array([net.forward(x) for x in rng.uniform(lo, hi, (400, len(lo)))])
    j = int(rng.integers(0, net.n_outputs))
    spread = float(np.ptp(y[:, j])) + 1e-9  # the top sampled, then a little below or above
    level = y[:, j].max() + spread * rng.choice([-0.05, 0.0, 0.1, 0.3, 1.0])
    C = np.zeros((1, net.n_outputs))
    C[0, j] = -1.0
    unsafe = [(C, np.array([-level]))]
    if rng.uniform() < 0.25:
        C2 = np.zeros((2, net.n_outputs))
        C2[0, j], C2[1, (j + 1) % net.n_outputs] = -1.0, 1.0
        unsafe.append((C2, np.array([-level, np.median(y[:, (j + 1) % net.n_outputs])])))
    return LinearProperty(unsafe, **options)


def test_linear_property_settles_as_the_full_traversal_answers():
    """``check_settle`` on random nets: each of the stage's outcomes occurs, and every run
    answers as the traversal without the stage."""
    seen = check_settle(near_the_outputs, seeds=range(16))
    assert {"proven", "violated"} <= set(seen), seen
    # without the input split the stage leaves the whole region open (or meets the set)
    whole = check_settle(lambda net, region: near_the_outputs(net, region, split=False),
                         seeds=range(8))
    assert "open" in whole and "proven" not in whole, whole


def test_open_boxes_are_traversed_and_merged_to_the_same_answers(monkeypatch):
    """With a split of a few boxes and no deep search, boxes are left open: each is a run of
    its own, merged by ``combine`` with the proven rest; the answers do not move."""
    import polytrav.bounds.settle as settle

    monkeypatch.setattr("polytrav.bounds.split.SPLIT_BOXES", 4)
    monkeypatch.setattr("polytrav.bounds.split.SPLIT_MAX_BOXES", 4)
    monkeypatch.setattr(settle, "VERIFY_POLICY", settle.SettlePolicy(deep_seconds=0.0))
    boxes = []

    def factory(net, region):
        return near_the_outputs(net, region)

    seen = check_settle(factory, seeds=range(12))
    for seed in range(12):
        net = random_net(seed, 3, [8, 8, 6], 2)
        region = Box(-np.ones(3), np.ones(3))
        report = analyze(net, region, factory(net, region))
        stage = report.stats["settle"]
        if stage["open_boxes"]:
            boxes.append((stage["open_boxes"], stage["boxes_run"], report.stats["polytopes"]))
    assert boxes, seen  # some run traversed boxes
    assert all(0 < run <= n for n, run, _ in boxes)


class Halves(Analysis):
    """Counts polytopes; its stage leaves the two halves of the box along input 0 open."""

    name = "halves"

    def __init__(self, proven_boxes: int = 0, answer=None):
        self.proven_boxes, self.answer = proven_boxes, answer

    def settle(self, context):
        if self.answer is not None:
            return self.answer(context)
        lo, hi = (np.asarray(a, float) for a in context.region.bounding_box())
        mid = hi.copy()
        mid[0] = (lo[0] + hi[0]) / 2
        low = lo.copy()
        low[0] = mid[0]
        return Settled.open(boxes=[OpenBox(lo, mid), OpenBox(low, hi)],
                            proven_boxes=self.proven_boxes, halves=2)

    def visit(self, polytope, context):
        return None

    def finish(self, context):
        return AnalysisResult(self.label, Verdict.HOLDS if context.complete else Verdict.UNKNOWN,
                              self.n_polytopes, exact=self.exact(context),
                              n_polytopes=self.n_polytopes)

    def combine(self, parts, context):
        return self.merged(parts, context, verdict=Verdict.HOLDS if context.complete
                           else Verdict.UNKNOWN, value=sum(p.value for p in parts))


class NoCombine(Halves):
    """Halves without ``combine``: its open boxes cannot be merged."""

    name = "no_combine"
    combine = Analysis.combine


def test_boxes_run_in_turn_and_combine_merges_them():
    net = random_net(4, 2, [8, 6])
    box = Box([-1.0, -1.0], [1.0, 1.0])
    report = analyze(net, box, Halves())
    halves = [analyze(net, Box(lo, hi), Halves(), settle=False)
              for lo, hi in (([-1.0, -1.0], [0.0, 1.0]), ([0.0, -1.0], [1.0, 1.0]))]
    assert report.complete and report[0].verdict is Verdict.HOLDS and report[0].exact
    assert report[0].value == sum(h[0].value for h in halves) == report.stats["polytopes"]
    assert report.stats["settle"]["boxes_run"] == 2 and report.stats["settle"]["halves"] == 2
    # a budget of polytopes covers the whole run: the first box spends it, the run ends there
    short = analyze(net, box, Halves(), max_polytopes=1)
    assert short.status.value == "polytope_limit" and short.stats["settle"]["boxes_run"] == 1
    assert short[0].verdict is Verdict.UNKNOWN and short.stats["polytopes"] == 1


class Probing(Halves):
    """Halves with a probe round first: its halves probed; the second round sees their
    results and leaves open what did not hold (``fail``: the probe runs' verdicts forced)."""

    name = "probing"

    def __init__(self, verdicts=None, then=None):
        super().__init__()
        self.verdicts, self.then, self.rounds = verdicts, then, []

    def settle(self, context):
        lo, hi = (np.asarray(a, float) for a in context.region.bounding_box())
        mid = (lo[0] + hi[0]) / 2
        self.halves = [OpenBox(lo, np.r_[mid, hi[1:]]), OpenBox(np.r_[mid, lo[1:]], hi)]
        self.rounds.append(None if context.probed is None else list(context.probed))
        if context.probed is None:
            return Settled.probe(self.halves, seconds=None, round=1)
        if self.then is not None:
            return self.then(context)
        held = sum(p.verdict is Verdict.HOLDS for p in context.probed)
        left = self.halves[held:]
        return (Settled.open(boxes=left) if left else
                Settled.proven(SettledBy.SPLIT, boxes=0))

    def finish(self, context):
        result = super().finish(context)
        if self.verdicts and context.complete and self.n_polytopes:
            result = AnalysisResult(self.label, self.verdicts.pop(0), result.value,
                                    exact=result.exact, n_polytopes=result.n_polytopes)
        return result


def test_a_probe_round_runs_the_boxes_then_settles_again_with_their_results():
    """``Settled.probe``: the host runs the boxes in turn and calls ``settle`` again with
    their results; those that hold are exact parts of the answer; a run that does not hold
    ends the round and counts only as work; a confirmed violation ends the run."""
    net = random_net(4, 2, [8, 6])
    box = Box([-1.0, -1.0], [1.0, 1.0])
    whole = analyze(net, box, Halves(), settle=False)[0].value
    halves = [analyze(net, Box(lo, hi), Halves(), settle=False)[0].value
              for lo, hi in (([-1.0, -1.0], [0.0, 1.0]), ([0.0, -1.0], [1.0, 1.0]))]
    held = Probing()
    report = analyze(net, box, held)
    assert held.rounds[0] is None and len(held.rounds) == 2 and len(held.rounds[1]) == 2
    assert report.complete and report[0].verdict is Verdict.HOLDS
    assert report[0].value == sum(halves) == report.stats["polytopes"]
    assert report.stats["settle"]["probes"] == {"runs": 2, "held": 2, "polytopes": 0,
                                                "lps": 0, "solves": 0}
    # the first half does not hold: the round ends; the second round leaves both open
    unknown = Probing(verdicts=[Verdict.UNKNOWN])
    report = analyze(net, box, unknown)
    assert len(unknown.rounds[1]) == 1 and report.stats["settle"]["boxes_run"] == 2
    probes = report.stats["settle"]["probes"]
    assert probes["runs"] == 1 and probes["held"] == 0 and probes["polytopes"] == halves[0]
    assert report[0].value == sum(halves)  # the dropped run is no part of the answer
    # a violation ends the run: the probe runs so far answer
    found = Probing(verdicts=[Verdict.HOLDS, Verdict.VIOLATED])
    report = analyze(net, box, found)
    assert len(found.rounds) == 1 and report.stats["settle"]["probes"]["polytopes"] == 0
    assert report[0].value == sum(halves) and report.stats["settle"]["outcome"] == "probe"
    # a whole-region answer after the round covers the probe runs: they count as work only
    again = Probing(then=lambda context: Settled.open())
    report = analyze(net, box, again)
    assert report[0].value == whole
    assert report.stats["settle"]["probes"]["polytopes"] == sum(halves)


def test_a_second_round_must_settle():
    net = random_net(4, 2, [8, 6])
    with pytest.raises(PluginError, match="second round"):
        analyze(net, Box([-1.0, -1.0], [1.0, 1.0]), Probing(then=lambda context: None))


def test_the_proven_rest_enters_as_an_exact_part():
    net = random_net(4, 2, [8, 6])
    report = analyze(net, Box([-1.0, -1.0], [1.0, 1.0]), Halves(proven_boxes=3))
    assert report.complete and report[0].value == report.stats["polytopes"]
    assert report.stats["settle"]["proven_boxes"] == 3


def test_a_decided_region_visits_no_polytope_and_calls_finish():
    net = random_net(4, 2, [8, 6])
    box = Box([-1.0, -1.0], [1.0, 1.0])
    proven = analyze(net, box, Halves(answer=lambda c: Settled.proven(SettledBy.MILP)))
    assert proven.complete and proven[0].verdict is Verdict.HOLDS and proven[0].value == 0
    assert proven.stats["polytopes"] == 0 and proven.stats["settle"]["by"] == "milp"


def test_the_stage_runs_on_the_runs_clock():
    """The run's ``time_limit`` covers the stage: ``time_left()`` is what is left of it."""
    seen = []

    def record(context):
        seen.append(context.time_left())
        return Settled.proven(SettledBy.ATTACK)

    net = random_net(4, 2, [8, 6])
    box = Box([-1.0, -1.0], [1.0, 1.0])
    analyze(net, box, Halves(answer=record), time_limit=30.0)
    analyze(net, box, Halves(answer=record))
    assert 0 < seen[0] <= 30.0 and seen[1] is None


def test_what_settle_returns_is_checked():
    net = random_net(4, 2, [8, 6])
    box = Box([-1.0, -1.0], [1.0, 1.0])
    with pytest.raises(PluginError, match="not a polytrav Settled"):
        analyze(net, box, Halves(answer=lambda c: "proven"))
    with pytest.raises(PluginError, match="implement combine"):
        analyze(net, box, NoCombine())
    with pytest.raises(ValueError, match="violating point"):
        Settled("violated")
    assert Settled.open(start=[0.5, 0.5]).point.tolist() == [0.5, 0.5]


def test_settle_off_several_analyses_and_parts_skip_the_stage():
    net = random_net(4, 2, [8, 6])
    box = Box([-1.0, -1.0], [1.0, 1.0])
    assert analyze(net, box, Halves(), settle=False).stats["settle"] is None
    both = analyze(net, box, [Halves(), "region_stats"])
    assert both.stats["settle"] is None and both.complete


def test_ctrl_c_in_the_stage_is_a_partial_report_or_raised():
    def interrupt(context):
        raise KeyboardInterrupt

    net = random_net(4, 2, [8, 6])
    box = Box([-1.0, -1.0], [1.0, 1.0])
    with pytest.raises(KeyboardInterrupt):
        analyze(net, box, Halves(answer=interrupt))
    report = analyze(net, box, Halves(answer=interrupt), on_interrupt="report")
    assert report.status.value == "interrupted" and report.partial
    assert report[0].verdict is Verdict.UNKNOWN


def test_a_refused_witness_is_not_a_violation():
    """``confirm`` refuses every point: the stage and the traversal find violating points but
    none is a witness; the verdict says so and why."""
    net = random_net(4, 2, [8, 6])
    box = Box([-1.0, -1.0], [1.0, 1.0])
    unsafe = [(np.array([[-1.0]]), np.array([1e3]))]  # y >= -1000: everywhere
    refused = analyze(net, box, LinearProperty(unsafe, confirm=lambda x: "refused here"))
    assert refused[0].verdict is Verdict.VIOLATED_UNCONFIRMED
    assert refused[0].details["refused"] == "refused here"
    taken = analyze(net, box, LinearProperty(unsafe, confirm=lambda x: None))
    assert taken[0].verdict is Verdict.VIOLATED and taken.stats["polytopes"] == 0
    with pytest.raises(ConfigError, match="confirm must be a callable"):
        analyze(net, box, LinearProperty(unsafe, confirm="onnxruntime"))


def test_check_settle_catches_a_stage_that_proves_too_much():
    """Fault injection: a stage that calls every region proven is caught."""
    class Overconfident(LinearProperty):
        def settle(self, context):
            return Settled.proven(SettledBy.SPLIT)

    def factory(net, region):
        return Overconfident(near_the_outputs(net, region).unsafe)

    with pytest.raises(AssertionError, match="verdict holds vs violated"):
        check_settle(factory, seeds=range(4))



def test_a_piece_margin_is_a_bound_and_the_search_runs_in_the_stage(monkeypatch):
    """A decision analysis's piece margin, at level 0 too, calls no branch and bound and no
    MILP (``settle=False``: no stage, no ``details["bab"]``); with the stage they decide the
    region before the traversal (no polytope), and the answers agree. The net: a 10-input
    box on which the top class cannot lose and the region's bound does not prove it."""
    from polytrav.bounds import branch_and_bound, milp
    from polytrav.plugins.adversarial import SoftmaxAttack

    calls = []
    prove, solve = branch_and_bound.prove_margins, milp.RegionMilp.prove
    monkeypatch.setattr(branch_and_bound, "prove_margins",
                        lambda *a, **k: calls.append("bab") or prove(*a, **k))
    monkeypatch.setattr(milp.RegionMilp, "prove",
                        lambda *a, **k: calls.append("milp") or solve(*a, **k))
    net = random_net(77, 10, [12, 12], n_out=4)
    x0 = np.random.default_rng(1).uniform(-1, 1, 10)
    c = int(np.argmax(net.forward(x0)))
    unsafe = [((np.eye(4)[[c]] - np.eye(4)[[j]]) / np.sqrt(2), np.zeros(1))
              for j in range(4) if j != c]
    for width in (0.3, 0.4):
        box = Box(x0 - width, x0 + width)
        for make in (lambda: SoftmaxAttack(c, mode="verify"),
                     lambda: LinearProperty(unsafe, split=False)):
            del calls[:]
            bare = analyze(net, box, make(), settle=False)
            assert not calls and bare[0].details["bab"] is None
            assert bare[0].verdict is Verdict.HOLDS and bare.complete
            staged = analyze(net, box, make())
            assert calls and staged[0].verdict is Verdict.HOLDS and staged.complete
            assert staged.stats["settle"]["by"] in ("branch_and_bound", "milp")
            assert staged[0].details["bab"]["verdict"] == "holds"
            assert staged.stats["polytopes"] == 0


def test_softmax_attack_settles_as_the_full_traversal_answers():
    """``check_settle`` on 10-input nets (boxes branch and bound takes): the stage answers as
    the traversal without it."""
    from polytrav.plugins.adversarial import SoftmaxAttack

    check_settle(lambda net, region: SoftmaxAttack(
        int(np.argmax(net.forward(np.zeros(net.n_inputs)))), mode="verify"),
        n_inputs=10, hidden=(8, 6), n_outputs=3, seeds=range(4))


class RegionOnly:
    """A run before its traversal as ``settle_region`` reads it: the network, the region, the
    LP chain (no ``milp`` backend: branch and bound alone) and no time limit."""

    def __init__(self, net, region):
        from polytrav.host.runner import lp_backends

        self.network, self.region, self._lp = net, region, lp_backends()

    def backends(self, form, required=True):
        return self._lp if form == "lp" else []

    def time_left(self):
        return None


def test_settle_region_answers_what_branch_and_bound_finds():
    """No attack point: the region's bound, then branch and bound decide. A region where the
    top class loses somewhere: VIOLATED at a point the check takes, else OPEN from it (its
    polytope decides); a region where it cannot lose: PROVEN; fewer than 9 free inputs: no
    search (None)."""
    from polytrav.bounds.settle import settle_region
    from polytrav.extend import Settlement

    net = random_net(77, 10, [12, 12], n_out=4)
    x0 = np.random.default_rng(1).uniform(-1, 1, 10)
    c = int(np.argmax(net.forward(x0)))
    unsafe = [((np.eye(4)[[c]] - np.eye(4)[[j]]) / np.sqrt(2), np.zeros(1))
              for j in range(4) if j != c]
    loses = Box(x0 - 1.0, x0 + 1.0)
    settled, out = settle_region(unsafe, RegionOnly(net, loses), lambda: None,
                                 accept=lambda x: True, note=1)
    assert settled.outcome is Settlement.VIOLATED and settled.by is SettledBy.BRANCH_AND_BOUND
    assert out.verdict == "violated" and settled.stats == {"note": 1}
    y = net.forward(settled.point)
    assert loses.contains(settled.point) and np.delete(y, c).max() >= y[c]
    refused, _ = settle_region(unsafe, RegionOnly(net, loses), lambda: None,
                               accept=lambda x: False)
    assert refused.outcome is Settlement.OPEN and np.array_equal(refused.point, settled.point)
    holds, out = settle_region(unsafe, RegionOnly(net, Box(x0 - 0.3, x0 + 0.3)),
                               lambda: None, accept=lambda x: True)
    assert holds.outcome is Settlement.PROVEN and out.verdict == "holds"
    few = Box(np.r_[x0[:8] - 0.3, x0[8:]], np.r_[x0[:8] + 0.3, x0[8:]])  # 8 free inputs
    assert settle_region(unsafe, RegionOnly(net, few), lambda: x0, accept=bool) is None
