"""Input splitting (``verify``'s first stage on boxes of few effective inputs) is sound and complete:
its verdicts equal the full traversal's and a MILP's, and a forced-unsound bound is caught."""
from __future__ import annotations

import numpy as np
import pytest
from budgets import DECIDE
from polytrav.testing.milp import milp_linear_dnf_feasible
from reference import random_net

from polytrav import Box, Network
from polytrav.verification.vnnlib import VnnlibCase, VnnlibSpec
from polytrav.host.manager import get_plugin_manager
from polytrav.bounds import dnf
from polytrav.host.runner import backend_chains
from polytrav.plugins.linear_property import LinearProperty
from polytrav.bounds.split import BoxSplit, effective_inputs, split_box
from polytrav.verification.verify import verify


def instances(n: int, seed: int = 11):
    """Random small nets and output properties with thresholds near the outputs' range; some
    inputs fixed (zero-width, like ACAS Xu property 4)."""
    rng = np.random.default_rng(seed)
    for case in range(n):
        d = int(rng.integers(2, 5))
        net = random_net(200 + case, d, [8, 8, 6], n_out=3)
        lo, hi = -np.ones(d), np.ones(d)
        if case % 4 == 1:
            lo[0] = hi[0] = 0.3
        j = int(rng.integers(0, 3))
        y = np.array([net.forward(x) for x in rng.uniform(lo, hi, (400, d))])
        level = np.quantile(y[:, j], rng.choice([0.5, 0.99, 1.0])) + rng.choice([-0.2, 0.3, 2.0])
        C = np.zeros((1, 3))
        C[0, j] = -1.0
        unsafe = [(C, np.array([-level]))]
        if case % 3 == 0:
            C2 = np.zeros((2, 3))
            C2[0, j], C2[1, (j + 1) % 3] = -1.0, 1.0
            unsafe.append((C2, np.array([-level, np.median(y[:, (j + 1) % 3])])))
        yield case, net, lo, hi, unsafe


def spec_of(net, lo, hi, unsafe) -> VnnlibSpec:
    case = VnnlibCase(lo, hi, None, None, tuple(unsafe))
    return VnnlibSpec(net.n_inputs, net.n_outputs, (case,))


def lp_chain():
    return backend_chains(None, get_plugin_manager())["lp"]


@pytest.fixture(scope="module")
def truth() -> dict:
    """Per case of ``instances(24)`` (the first 12 are ``instances(12)``): the answer of the
    MILP, which the full traversal (no bounds, no splitting) must give too. Computed once per
    module, unpatched: the tests below compare split runs with it."""
    out = {}
    for case, net, lo, hi, unsafe in instances(24):
        milp = milp_linear_dnf_feasible(net, unsafe, lo, hi)
        plain = verify(net, spec_of(net, lo, hi, unsafe), bounds=False)
        assert plain.answer == ("sat" if milp.feasible else "unsat"), case
        out[case] = plain.answer
    return out


def mismatches(n: int, truth: dict, **split_options):
    """Cases where verify with input splitting disagrees with the MILP (and full traversal)."""
    bad, proven_boxes, sat = [], 0, 0
    for case, net, lo, hi, unsafe in instances(n):
        result = verify(net, spec_of(net, lo, hi, unsafe), **split_options)
        if result.answer != truth[case]:
            bad.append((case, result.answer, truth[case]))
        sat += truth[case] == "sat"
        proven_boxes += bool(result.split and result.split["proven"])
    return bad, proven_boxes, sat


@pytest.mark.truth
def test_split_verdicts_equal_full_traversal_and_milp(truth):
    bad, proven_boxes, sat = mismatches(24, truth)
    assert bad == []
    assert 0 < sat < 24 and proven_boxes > 5  # both answers occur, and boxes were proven


def test_open_boxes_are_traversed_to_the_same_verdicts(monkeypatch, truth):
    """With a budget of a few boxes, most of the region is left to the open boxes' traversals."""
    monkeypatch.setattr("polytrav.bounds.split.SPLIT_BOXES", 3)
    bad, _, _ = mismatches(12, truth)
    assert bad == []


def test_a_forced_unsound_box_bound_is_caught(monkeypatch, truth):
    """Fault injection: margins shifted up by 1 (for boxes, and pieces inside the traversal)
    prove violated boxes; the comparison sees it."""
    real = dnf.dnf_bound

    def shifted(*args, **kwargs):
        margin, L = real(*args, **kwargs)
        return margin + 1.0, L

    monkeypatch.setattr(dnf, "dnf_bound", shifted)
    monkeypatch.setattr("polytrav.bounds.dnf.attack_start", lambda *a, **k: None)
    monkeypatch.setattr("polytrav.bounds.dnf.deep_attack", lambda *a, **k: None)
    bad, _, _ = mismatches(24, truth)
    assert bad, "an unsound box bound went unnoticed"


@pytest.mark.parametrize("case", range(8))
def test_a_candidate_is_in_the_unsafe_set_and_proven_volume_is_safe(case):
    _, net, lo, hi, unsafe = list(instances(8))[case]
    prop = LinearProperty(unsafe)
    prop.validate(net, Box(lo, hi))
    pairs = prop.pairs
    result = split_box(net, lo, hi, pairs, lp_chain(), max_boxes=200)
    if result.candidate is not None:
        y = net.forward(result.candidate)
        assert np.all(result.candidate >= lo) and np.all(result.candidate <= hi)
        assert any(np.all(C @ y <= d + 1e-9) for C, d in pairs)
    assert 0.0 <= result.proven_volume_share <= 1.0 + 1e-12
    if result.candidate is None and not result.open_boxes:  # all proven: no sample is unsafe
        X = np.random.default_rng(case).uniform(lo, hi, (5000, len(lo)))
        Y = np.array([net.forward(x) for x in X])
        assert not any(np.all(Y @ C.T <= d, axis=1).any() for C, d in pairs)
        assert result.proven_volume_share == pytest.approx(1.0)


def test_split_can_be_switched_off(monkeypatch):
    _, net, lo, hi, unsafe = next(instances(1))
    result = verify(net, spec_of(net, lo, hi, unsafe), split=False)
    assert result.split is None


def test_extend_goes_on_only_while_the_proven_share_accelerates():
    from polytrav.bounds.split import _accelerating

    assert _accelerating({100: 0.0, 200: 0.05, 400: 0.12}, 400)     # +0.05, then +0.07
    assert not _accelerating({100: 0.2, 200: 0.3, 400: 0.35}, 400)  # +0.1, then +0.05
    assert not _accelerating({200: 0.3, 400: 0.35}, 400)            # no earlier mark


@pytest.mark.integration
def test_extended_splitting_proves_acas_1_1_property_3_by_boxes_alone(data_dir):
    """The box's proven share accelerates (0 % at 200 boxes, 100 % at about 7 000): with
    ``extend`` every box is proven and none is left to traverse; without, 400 boxes prove 2 %."""
    from polytrav import Network
    from polytrav.verification.vnnlib import read_vnnlib

    net = Network.from_onnx(data_dir / "acasxu" / "onnx" / "ACASXU_run2a_1_1_batch_2000.onnx")
    case = read_vnnlib(data_dir / "acasxu" / "vnnlib" / "prop_3.vnnlib").cases[0]
    pm = get_plugin_manager()
    prop = case.property("verify", pm=pm)
    prop.validate(net, case.region())
    lp = backend_chains(None, pm)["lp"]
    short = split_box(net, case.lower, case.upper, prop.pairs, lp)
    assert short.boxes == 400 and short.open_boxes and short.proven_volume_share < 0.1
    full = split_box(net, case.lower, case.upper, prop.pairs, lp, extend=True)
    assert full.candidate is None and not full.open_boxes
    assert full.proven_volume_share == pytest.approx(1.0)


def test_the_deep_search_goes_on_while_each_doubling_proves_a_tenth_of_what_is_left():
    from polytrav.bounds.split import _deep_progress

    assert _deep_progress({400: 0.5, 800: 0.6}, 800)        # 0.1 of 0.5 left: 20 %
    assert not _deep_progress({400: 0.5, 800: 0.52}, 800)   # 4 %
    assert not _deep_progress({400: 1.0, 800: 1.0}, 800)    # nothing left


def test_while_most_of_the_box_is_open_a_doubling_must_prove_more(monkeypatch):
    """With ``whole_open`` (``diff``'s ``whole_open_share``: its caller traverses the whole
    box where the deep search ends with that share open) a doubling must prove
    ``SPLIT_WHOLE_STALL`` of what is left while that share is still open, else the deep search
    ends there: after its first doubling, where no doubling is enough; without, it goes on."""
    from polytrav.bounds import split
    from polytrav.bounds.split import SPLIT_WHOLE_STALL, _deep_progress

    assert _deep_progress({400: 0.1, 800: 0.25}, 800)                        # 17 % of 0.9
    assert not _deep_progress({400: 0.1, 800: 0.25}, 800, SPLIT_WHOLE_STALL)
    assert _deep_progress({400: 0.1, 800: 0.4}, 800, SPLIT_WHOLE_STALL)      # 33 %
    _, net, lo, hi, unsafe = list(instances(12))[2]
    prop = LinearProperty(unsafe)
    prop.validate(net, Box(lo, hi))
    runs = {}
    for whole_open in (None, 0.0):
        s = BoxSplit(net, lo, hi, prop.pairs, lp_chain(), max_boxes=4, deep_time=60.0,
                     deep_boxes=256, whole_open=whole_open)
        runs[whole_open] = s.run()
    ended, on = runs[0.0], runs[None]
    assert ended.frontier > 0 and ended.open_boxes  # (this case needs the deep search)
    assert ended.boxes == 8  # the pause at 4 boxes, then one doubling
    assert on.boxes > 8 and on.proven_volume_share > ended.proven_volume_share
    # no share is ever "most of the box" above 1: the deep search runs as without
    monkeypatch.setattr(split, "SPLIT_WHOLE_STALL", 2.0)
    above = BoxSplit(net, lo, hi, prop.pairs, lp_chain(), max_boxes=4, deep_time=60.0,
                     deep_boxes=256, whole_open=1.1).run()
    assert above.boxes == on.boxes


@pytest.mark.parametrize("case", range(12))
def test_deep_search_open_boxes_are_frontier_boxes_or_leaves_and_verdicts_hold(case):
    """From a frontier of 4 boxes the deep search runs on; whatever it returns open (its open
    leaves, or the frontier boxes that hold them) contains every sampled unsafe point."""
    _, net, lo, hi, unsafe = list(instances(12))[case]
    prop = LinearProperty(unsafe)
    prop.validate(net, Box(lo, hi))
    result = split_box(net, lo, hi, prop.pairs, lp_chain(), max_boxes=4, deep_time=5.0)
    if result.candidate is not None or not result.open_boxes:
        return
    assert result.frontier > 0
    X = np.random.default_rng(case).uniform(lo, hi, (4000, len(lo)))
    Y = np.array([net.forward(x) for x in X])
    unsafe_points = X[np.any([np.all(Y @ C.T <= d, axis=1) for C, d in prop.pairs], axis=0)]
    for x in unsafe_points:  # proven boxes hold none: each is in a box left open
        assert any(np.all(blo <= x) and np.all(x <= bhi) for blo, bhi in result.open_boxes)


def test_the_deep_search_matches_the_milp(monkeypatch, truth):
    monkeypatch.setattr("polytrav.bounds.split.SPLIT_BOXES", 4)
    monkeypatch.setattr("polytrav.bounds.split.SPLIT_DEEP_STALL", 0.0)  # deep until proven
    bad, _, _ = mismatches(12, truth)
    assert bad == []


def test_effective_inputs_count_the_inputs_the_bound_depends_on():
    """A net that reads 2 of its 10 inputs has at most 2 effective inputs; with every input
    mattering alike the count is near all of them."""
    rng = np.random.default_rng(3)
    W0 = np.zeros((6, 10))
    W0[:, :2] = rng.normal(size=(6, 2))
    net = Network.from_arrays([W0, rng.normal(size=(1, 6))], [np.zeros(6), np.zeros(1)])
    C, d = np.array([[-1.0]]), np.array([-5.0])
    lo, hi = -np.ones(10), np.ones(10)
    assert effective_inputs(net, lo, hi, [(C, d)], lp_chain()) <= 2
    dense = Network.from_arrays([np.ones((6, 10)), np.ones((1, 6))], [np.zeros(6), np.zeros(1)])
    assert effective_inputs(dense, lo, hi, [(C, d)], lp_chain()) == 9   # 90 % of 10 equal inputs


@pytest.mark.integration
def test_gcas_holds_by_boxes_alone(data_dir):
    """VNN-COMP 2022 gcas (14 inputs, 5-6 effective; its unsafe set a conjunction of two rows):
    every box proven, nothing traversed. That an MNIST image ball (hundreds effective) is not
    split is checked on the mnistfc instance that tests/integration/test_verify.py proves
    anyway (test_mnistfc_proven_by_the_region_milp)."""
    rpd = data_dir / "vnncomp2022" / "reach_prob_density"
    result = verify(rpd / "onnx" / "gcas.onnx", rpd / "vnnlib" / "gcas_3.vnnlib", timeout=DECIDE)
    assert result.answer == "unsat" and result.polytopes == 0
    assert result.split["open"] == 0 and result.split["proven_volume_share"] == pytest.approx(1.0)


def test_a_box_skips_its_conjunctions_lp_only_where_the_lp_could_not_prove_it(monkeypatch):
    """Where a corner minimising one row of a conjunction meets every row's bound, the LP's
    minimum is <= 0: skipping it proves exactly the same boxes (the LP forced every time
    gives the same verdict per box), and some boxes of two-row conjunctions skip it."""
    from polytrav.bounds.split import BoxPiece, LpContext

    rng = np.random.default_rng(5)
    skipped = compared = 0
    for case, net, lo, hi, unsafe in instances(24):
        pairs = [(C, d) for C, d in unsafe if len(C) == 2]
        if not pairs:
            continue
        for _ in range(25):
            a, b = np.sort(rng.uniform(lo, hi, (2, len(lo))), axis=0)
            piece, context = BoxPiece(a, b), LpContext(net, lp_chain())
            with monkeypatch.context() as m:
                calls = []
                original = dnf._joint_margin
                m.setattr(dnf, "_joint_margin", lambda *args: calls.append(1) or original(*args))
                margin, _ = dnf.dnf_bound(pairs, piece, context, steps=0, points=[])
                lps = len(calls)
                m.setattr(dnf, "_corner_meets", lambda *args: False)
                forced, _ = dnf.dnf_bound(pairs, piece, context, steps=0, points=[])
            assert (margin > 0) == (forced > 0), case
            skipped += lps == 0 and forced <= 0
            compared += 1
    assert compared >= 50 and skipped >= 5


def probed(net, lo, hi, pairs, probe, **kwargs):
    """A :class:`BoxSplit` that pauses, its paused boxes handed to ``probe`` (which returns
    ``(found, held)``), then run to the end."""
    split = BoxSplit(net, lo, hi, pairs, lp_chain(), pause=True, **kwargs)
    result = split.run()
    while result is None:
        found, held = probe(split.paused)
        result = split.run(found=found, held=held)
    return result


def test_a_split_pauses_once_with_the_worst_open_boxes_and_a_point_ends_it():
    """Where the deep search begins, a pausing split stops once with at most
    SPLIT_PROBE_BOXES open boxes inside the box, the least proven first; a point the caller
    found there is the split's candidate (and none lets the deep search go on); a split that
    does not pause is :func:`split_box`."""
    from polytrav.bounds.split import SPLIT_PROBE_BOXES

    for case, (_, net, lo, hi, unsafe) in enumerate(instances(12)):
        prop = LinearProperty(unsafe)
        prop.validate(net, Box(lo, hi))
        calls = []

        def probe(boxes):
            calls.append(boxes)
            return None, []

        result = probed(net, lo, hi, prop.pairs, probe, max_boxes=4, deep_time=5.0)
        if result.frontier == 0:
            continue
        assert len(calls) == 1 and 0 < len(calls[0]) <= SPLIT_PROBE_BOXES
        assert all(np.all(lo <= a) and np.all(a <= b) and np.all(b <= hi) for a, b in calls[0])
        point = (calls[0][0][0] + calls[0][0][1]) / 2
        again = probed(net, lo, hi, prop.pairs, lambda boxes: (point, []), max_boxes=4,
                       deep_time=5.0)
        assert np.array_equal(again.candidate, point) and again.frontier == 0
        plain = BoxSplit(net, lo, hi, prop.pairs, lp_chain(), max_boxes=4, deep_time=5.0).run()
        assert plain is not None and plain.frontier > 0
        return
    pytest.fail("no instance reached the deep search")


def test_the_boxes_held_at_the_pause_leave_the_split():
    """The paused boxes at the positions the caller says held are proven: none of the boxes
    left open meets one of them, and their volume counts as proven."""
    for case, (_, net, lo, hi, unsafe) in enumerate(instances(12)):
        prop = LinearProperty(unsafe)
        prop.validate(net, Box(lo, hi))
        handed = []

        def probe(boxes):
            handed.extend(boxes)
            return None, [0, 2]

        kwargs = dict(max_boxes=4, deep_time=5.0, open_seconds=1.0)
        result = probed(net, lo, hi, prop.pairs, probe, **kwargs)
        if result.frontier == 0 or len(handed) < 3:
            continue
        plain = split_box(net, lo, hi, prop.pairs, lp_chain(), **kwargs)
        assert result.held == 2 and plain.held == 0
        held = [handed[0], handed[2]]
        for a, b in held:
            assert not any(np.all(np.maximum(a, c) < np.minimum(b, d))
                           for c, d in result.open_boxes), case
        volume = sum(np.prod(b - a) for a, b in held) / np.prod(hi - lo)
        assert result.proven_volume_share >= volume - 1e-12
        return
    pytest.fail("no instance handed the pause three boxes")


def test_holding_nothing_at_the_pause_ends_the_split_with_its_boxes_open():
    """``held`` None ends the split where it paused: no box is bounded after it, the boxes
    open then stay open (with those the split proved, they cover the box), none is counted
    as held."""
    for case, (_, net, lo, hi, unsafe) in enumerate(instances(12)):
        prop = LinearProperty(unsafe)
        prop.validate(net, Box(lo, hi))
        seen = []

        def probe(boxes):
            seen.append(len(boxes))
            return None, None

        kwargs = dict(max_boxes=4, deep_time=5.0, open_seconds=1.0)
        result = probed(net, lo, hi, prop.pairs, probe, **kwargs)
        if result.frontier == 0:
            continue
        plain = split_box(net, lo, hi, prop.pairs, lp_chain(), **kwargs)
        assert result.held == 0 and result.candidate is None and result.open_boxes
        assert result.boxes <= plain.boxes and len(result.open_boxes) == seen[0]
        open_volume = sum(np.prod(b - a) for a, b in result.open_boxes) / np.prod(hi - lo)
        assert abs(result.proven_volume_share + open_volume - 1.0) < 1e-9, case
        return
    pytest.fail("no instance reached the deep search")


def test_the_box_attack_stays_in_each_box_and_scores_its_point():
    """``box_attack``: each box's point lies in that box and its score is the point's
    ``unsafe_distance``, no worse than its centre's (a start), nor than where a deadline
    stops the descents; on a linear network, each box's point is the corner that
    minimises the output."""
    from polytrav.bounds.dnf import box_attack, unsafe_distance

    rng = np.random.default_rng(3)
    net = Network([rng.normal(size=(6, 3)), rng.normal(size=(2, 6))],
                  [rng.normal(size=6), rng.normal(size=2)])
    lows = rng.uniform(-1, 0, (20, 3))
    highs = lows + rng.uniform(0.1, 1, (20, 3))
    pairs = [(np.array([[1.0, 0.0]]), np.array([-100.0]))]  # far: no early stop
    score, points = box_attack(pairs, net, lows, highs)
    assert np.all(points >= lows) and np.all(points <= highs)
    assert np.allclose(score, unsafe_distance(pairs, net.forward(points)))
    assert np.all(score <= unsafe_distance(pairs, net.forward((lows + highs) / 2)))
    first, where = box_attack(pairs, net, lows, highs, deadline=0.0)  # past: one step
    assert np.all(where >= lows) and np.all(where <= highs) and np.all(score <= first)
    assert np.all(first <= unsafe_distance(pairs, net.forward((lows + highs) / 2)))
    linear = Network([np.array([[1.0, -2.0, 0.5]])], [np.zeros(1)])
    score, points = box_attack([(np.ones((1, 1)), np.array([-100.0]))], linear, lows, highs)
    corner = np.where(np.array([1.0, -2.0, 0.5]) > 0, lows, highs)
    assert np.allclose(points, corner)


def test_a_deep_search_budgeted_by_count_bounds_the_same_boxes_under_any_clock():
    """``deep_boxes``: the deep search bounds at most that many boxes per frontier box,
    whatever the time (``open_seconds`` tiny, ``deep_time`` ample): two runs agree box for
    box, and the region is still covered by the proven and the open boxes."""
    for case, (_, net, lo, hi, unsafe) in enumerate(instances(12)):
        prop = LinearProperty(unsafe)
        prop.validate(net, Box(lo, hi))
        kwargs = dict(max_boxes=4, deep_time=1e6, open_seconds=1e-9, deep_boxes=3)
        result = split_box(net, lo, hi, prop.pairs, lp_chain(), **kwargs)
        if result.frontier == 0 or result.candidate is not None:
            continue
        again = split_box(net, lo, hi, prop.pairs, lp_chain(), **kwargs)
        assert (again.boxes, again.proven) == (result.boxes, result.proven)
        assert [(a.tolist(), b.tolist()) for a, b in again.open_boxes] == \
            [(a.tolist(), b.tolist()) for a, b in result.open_boxes]
        before = split_box(net, lo, hi, prop.pairs, lp_chain(), max_boxes=4, deep_time=0.0)
        assert before.boxes < result.boxes <= before.boxes + 3 * result.frontier + 64
        open_volume = sum(np.prod(b - a) for a, b in result.open_boxes) / np.prod(hi - lo)
        assert result.proven_volume_share + open_volume >= 1.0 - 1e-9, case
        return
    pytest.fail("no instance reached the deep search")


class _LoadedClock:
    """``time`` as the split reads it on a machine so loaded that each reading is 10 s on."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self) -> float:
        self.now += 10.0
        return self.now


def test_verify_s_split_without_a_time_limit_does_the_same_work_under_any_load(monkeypatch):
    """``verify``'s split with no time limit (``settle.split_region``, ``VERIFY_POLICY``):
    its deep search ends by its count of boxes per frontier box, never by a clock, so a
    clock that races (a loaded machine) bounds the same boxes and leaves the same ones
    open."""
    import polytrav.bounds.split as split
    from polytrav.bounds.settle import VERIFY_POLICY, split_region

    monkeypatch.setattr(split, "SPLIT_BOXES", 4)  # a frontier at once: the deep search runs
    deep = 0
    for case, net, lo, hi, unsafe in instances(12):
        prop = LinearProperty(unsafe)
        prop.validate(net, Box(lo, hi))
        idle = split_region(prop.pairs, net, lo, hi, lp_chain(), None)
        with monkeypatch.context() as m:
            m.setattr(split, "time", _LoadedClock())
            loaded = split_region(prop.pairs, net, lo, hi, lp_chain(), None)
        assert (loaded.boxes, loaded.proven, loaded.frontier) == \
            (idle.boxes, idle.proven, idle.frontier), case
        assert [(a.tolist(), b.tolist()) for a, b in loaded.open_boxes] == \
            [(a.tolist(), b.tolist()) for a, b in idle.open_boxes], case
        deep += idle.frontier > 0 and idle.boxes > 4
    assert deep >= 2  # the deep search ran on some of them
    assert VERIFY_POLICY.deep_boxes is not None
