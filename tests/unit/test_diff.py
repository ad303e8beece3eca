"""``polytrav.diff(f, g, region)`` against independent truths: brute force over the joint
activation patterns (``polytrav.testing.reference``: one LP per full-dimensional pattern of
a hand-built joint network), the MILP of :mod:`polytrav.testing.milp`, dense sampling, and Monte
Carlo for the volume share where decisions differ."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from polytrav.testing.milp import joint_by_hand
from reference import perturbed_copy
from scipy.optimize import linprog

import polytrav
from polytrav import Box, NetworkError, Verdict
from polytrav.testing.reference import brute_force_regions, random_net

LO, HI = np.array([-1.0, -1.0]), np.array([1.0, 1.0])


def brute_extremes(f, g, cells):
    """Per output: (max, min) of g_j - f_j, one LP per full-dimensional joint pattern."""
    m = f.n_outputs
    out = []
    for j in range(m):
        hi_, lo_ = -np.inf, np.inf
        for c in cells:
            w = c["W"][m + j] - c["W"][j]
            k = c["c"][m + j] - c["c"][j]
            for sign in (1.0, -1.0):
                res = linprog(-sign * w, A_ub=c["A"], b_ub=c["b"], bounds=(None, None),
                              method="highs")
                assert res.status == 0
                v = float(w @ res.x + k)
                hi_, lo_ = max(hi_, v), min(lo_, v)
        out.append((hi_, lo_))
    return out


def grid(n=201, lo=LO, hi=HI):
    t = [np.linspace(a, b, n) for a, b in zip(lo, hi)]
    return np.stack(np.meshgrid(*t), -1).reshape(-1, len(lo))


@pytest.fixture(scope="module")
def pair():
    """f: 2-3-3-3 and g: f with perturbed weights (same depth, 3 classes)."""
    f = random_net(9, 2, [3, 3], n_out=3)
    return f, perturbed_copy(f, 7, 0.15, 0.1)


@pytest.fixture(scope="module")
def cells(pair):
    """Every full-dimensional joint cell in the box, by brute force."""
    return brute_force_regions(joint_by_hand(*pair), LO, HI)


@pytest.fixture(scope="module")
def result(pair):
    f, g = pair
    return polytrav.diff(f, g, Box(LO, HI), epsilon=0.1)


def test_extremes_equal_brute_force_and_witness_attains(pair, cells, result):
    f, g = pair
    truth = brute_extremes(f, g, cells)
    assert result.exact and result.scope == "region"
    for o, (t_max, t_min) in zip(result.outputs, truth):
        assert o.max == pytest.approx(t_max, abs=1e-7), o
        assert o.min == pytest.approx(t_min, abs=1e-7), o
        assert o.max_abs == pytest.approx(max(t_max, -t_min), abs=1e-7)
        assert o.confirmed and abs(o.g_value - o.f_value) == pytest.approx(o.max_abs, abs=1e-7)
        assert Box(LO, HI).contains(o.witness, tol=1e-9)
        assert o.code
    X = grid()
    D = np.abs(g.forward(X) - f.forward(X))
    assert (D.max(axis=0) <= [o.max_abs + 1e-9 for o in result.outputs]).all()


def test_max_abs_equals_milp(pair, result):
    from polytrav.testing.milp import milp_max_linear

    f, g = pair
    J = joint_by_hand(f, g)
    j = result.worst.output
    row = np.zeros(2 * f.n_outputs)
    row[j], row[f.n_outputs + j] = -1.0, 1.0
    best = max(milp_max_linear(J, row, LO, HI).value, milp_max_linear(J, -row, LO, HI).value)
    assert result.max_abs == pytest.approx(best, abs=1e-6)


def test_epsilon_verdicts(pair, result):
    f, g = pair
    assert result.max_abs > 0.1 and result.verdict is Verdict.VIOLATED
    x, j = result.violation["x"], result.violation["output"]
    assert abs(g.forward(x)[j] - f.forward(x)[j]) > 0.1
    holds = polytrav.diff(f, g, Box(LO, HI), epsilon=result.max_abs + 1e-5, decisions=False)
    assert holds.verdict is Verdict.HOLDS
    # an LP optimum within the LPs' tolerance of epsilon is no proof of max |d| <= epsilon
    for eps in (result.max_abs, result.max_abs + 1e-7):
        at = polytrav.diff(f, g, Box(LO, HI), epsilon=eps, decisions=False)
        assert at.verdict is Verdict.UNKNOWN and at.max_abs == result.max_abs
    first = polytrav.diff(f, g, Box(LO, HI), epsilon=0.1, verdict_only=True)
    assert first.verdict is Verdict.VIOLATED and first.n_polytopes <= result.n_polytopes
    pruned = polytrav.diff(f, g, Box(LO, HI), epsilon=2 * result.max_abs, verdict_only=True)
    assert pruned.verdict is Verdict.HOLDS and not pruned.exact  # pieces proven by bounds
    assert pruned.n_polytopes < result.n_polytopes
    tight = polytrav.diff(f, g, Box(LO, HI), epsilon=result.max_abs * (1 - 1e-6),
                          verdict_only=True)
    assert tight.verdict is Verdict.VIOLATED


def test_budget_gives_unknown_not_holds(pair, result):
    f, g = pair
    partial = polytrav.diff(f, g, Box(LO, HI), epsilon=10.0, max_polytopes=2)
    assert not partial.exact and partial.scope == "visited"
    assert partial.verdict is Verdict.UNKNOWN
    assert partial.decisions_differ in (True, None)
    assert partial.max_abs <= result.max_abs + 1e-12


def test_decision_share_against_monte_carlo(pair, result):
    f, g = pair
    assert result.decisions_differ is True
    for c in result.changes:
        assert c.confirmed
        assert np.argmax(f.forward(c.x)) == c.f_class and np.argmax(g.forward(c.x)) == c.g_class
    lo, hi = result.volume_share
    assert lo == hi and result.volume_method.startswith("exact")
    rng = np.random.default_rng(0)
    X = rng.uniform(LO, HI, (100_000, 2))
    share = np.mean(np.argmax(f.forward(X), 1) != np.argmax(g.forward(X), 1))
    se = np.sqrt(share * (1 - share) / len(X))
    assert abs(lo - share) <= 5 * se + 1e-4
    assert sum(c.volume_share for c in result.changes) == pytest.approx(lo)


def test_different_architectures_binary():
    """f: 2-4-1, g: 2-3-3-1 (other width and depth); one score, decision = its sign."""
    f = random_net(11, 2, [4])
    g = random_net(12, 2, [3, 3])
    r = polytrav.diff(f, g, Box(LO, HI))
    X = grid(151)
    d = g.forward(X)[:, 0] - f.forward(X)[:, 0]
    assert d.max() <= r.outputs[0].max + 1e-9 and d.min() >= r.outputs[0].min - 1e-9
    assert r.outputs[0].max - d.max() < 0.05 and d.min() - r.outputs[0].min < 0.05
    assert r.outputs[0].confirmed
    rng = np.random.default_rng(1)
    Y = rng.uniform(LO, HI, (100_000, 2))
    share = np.mean((f.forward(Y)[:, 0] > 0) != (g.forward(Y)[:, 0] > 0))
    assert r.decisions_differ is bool(share > 0)
    se = np.sqrt(share * (1 - share) / len(Y))
    assert abs(r.volume_share[0] - share) <= 5 * se + 1e-4


def test_same_model_no_change_and_holds():
    f = random_net(5, 2, [4], n_out=2)
    r = polytrav.diff(f, f, Box(LO, HI), epsilon=1e-5)
    assert r.max_abs < 1e-12 and r.verdict is Verdict.HOLDS
    # an epsilon below the LPs' tolerance (LP_BOUND_TOL) is never proven
    tiny = polytrav.diff(f, f, Box(LO, HI), epsilon=1e-12, decisions=False)
    assert tiny.verdict is Verdict.UNKNOWN
    assert r.decisions_differ is False and r.volume_share == (0.0, 0.0) and not r.changes


def test_high_dimension_share_is_a_sound_interval():
    """7 inputs: no qhull; the interval from inscribed balls contains the Monte Carlo share."""
    f = random_net(21, 7, [3], n_out=1)
    g = random_net(22, 7, [3], n_out=1)
    box = Box(-np.ones(7), np.ones(7))
    r = polytrav.diff(f, g, box)
    lo, hi = r.volume_share
    assert 0.0 <= lo <= hi <= 1.0 and "interval" in r.volume_method
    X = np.random.default_rng(2).uniform(-1, 1, (50_000, 7))
    share = np.mean((f.forward(X)[:, 0] > 0) != (g.forward(X)[:, 0] > 0))
    assert lo - 1e-3 <= share <= hi + 1e-3


def test_outputs_and_bad_input(pair):
    f, g = pair
    r = polytrav.diff(f, g, Box(LO, HI), outputs=[2], decisions=False)
    assert [o.output for o in r.outputs] == [2] and r.decisions_differ is None
    with pytest.raises(NetworkError, match="same input and output sizes"):
        polytrav.diff(f, random_net(1, 2, [3], n_out=2), Box(LO, HI))
    with pytest.raises(polytrav.ConfigError, match="outputs"):
        polytrav.diff(f, g, Box(LO, HI), outputs=[3])
    with pytest.raises(polytrav.ConfigError, match="epsilon"):
        polytrav.diff(f, g, Box(LO, HI), verdict_only=True)
    assert r.to_dict()["outputs"][0]["output"] == 2


def test_decision_pairs_equal_brute_force(pair, cells, result):
    """Which (f class, g class) pairs occur on a set of positive volume: per full-dimensional
    joint pattern and pair of classes, a Chebyshev LP over the cell and the strict-decision
    rows (written here, in input space)."""
    f, g = pair
    m = f.n_outputs
    truth = set()
    for c in cells:
        for a in range(m):
            for b in range(m):
                if a == b:
                    continue
                rows = [c["W"][k] - c["W"][a] for k in range(m) if k != a] + \
                       [c["W"][m + k] - c["W"][m + b] for k in range(m) if k != b]
                rhs = [c["c"][a] - c["c"][k] for k in range(m) if k != a] + \
                      [c["c"][m + b] - c["c"][m + k] for k in range(m) if k != b]
                A, rhs_all = np.vstack([c["A"], rows]), np.concatenate([c["b"], rhs])
                norms = np.linalg.norm(A, axis=1)
                res = linprog(np.r_[0.0, 0.0, -1.0], A_ub=np.c_[A, norms], b_ub=rhs_all,
                              bounds=[(None, None)] * 2 + [(0, None)], method="highs")
                if res.status == 0 and -res.fun > 1e-6:
                    truth.add((a, b))
    assert {(ch.f_class, ch.g_class) for ch in result.changes} == truth


def test_polyhedron_region_share_against_monte_carlo(pair):
    """A triangle-cut box (the region's volume by qhull, not 2^d)."""
    f, g = pair
    region = polytrav.Polyhedron([[1.0, 1.0]], [0.5]) & Box(LO, HI)
    r = polytrav.diff(f, g, region)
    X = np.random.default_rng(3).uniform(LO, HI, (200_000, 2))
    X = X[X.sum(axis=1) <= 0.5]
    share = np.mean(np.argmax(f.forward(X), 1) != np.argmax(g.forward(X), 1))
    se = np.sqrt(share * (1 - share) / len(X))
    lo, hi = r.volume_share
    assert lo == hi and abs(lo - share) <= 5 * se + 1e-4
    for o in r.outputs:
        assert o.witness.sum() <= 0.5 + 1e-9 and o.confirmed


def test_l2_ball_region_extremes_exact_decisions_unknown(pair):
    f, g = pair
    ball = polytrav.Ball([0.1, -0.2], 0.6, norm=2)
    r = polytrav.diff(f, g, ball)
    X = grid(301)
    X = X[np.linalg.norm(X - [0.1, -0.2], axis=1) <= 0.6]
    D = g.forward(X) - f.forward(X)
    for j, o in enumerate(r.outputs):
        assert D[:, j].max() <= o.max + 1e-9 and D[:, j].min() >= o.min - 1e-9
        assert o.max - D[:, j].max() < 0.02 and o.confirmed
        assert np.linalg.norm(o.witness - [0.1, -0.2]) <= 0.6 + 1e-7
    assert r.exact and r.decisions_differ is None and r.volume_share == (0.0, 1.0)


def test_in_parts_equals_serial(pair, result):
    """The model_diff analysis run in parts (combine) gives the serial run's answer."""
    from polytrav.host.diff import joint_network
    from polytrav.plugins.model_diff import ModelDiff

    f, g = pair
    report = polytrav.analyze(joint_network(f, g), Box(LO, HI),
                              ModelDiff(split=3, epsilon=0.1), parts=4)
    res = report[0]
    assert res.exact and res.verdict is Verdict.VIOLATED
    assert res.value["max_abs"] == pytest.approx(result.max_abs, abs=1e-9)
    dec = res.details["decisions"]
    assert dec.changed is True
    assert dec.volume_share[0] == pytest.approx(result.volume_share[0], abs=1e-9)
    assert {(c.f_class, c.g_class) for c in dec.changes} == \
        {(c.f_class, c.g_class) for c in result.changes}


def test_verdict_by_input_split_agrees_and_a_budget_never_holds(pair, result):
    """``verdict_only`` on a box bisects it first (``split``): the same verdicts as the
    traversal alone; HOLDS only with every open sub-box proven, never after a budget."""
    f, g = pair
    for eps in (0.5 * result.max_abs, 1.5 * result.max_abs):
        split = polytrav.diff(f, g, Box(LO, HI), epsilon=eps, verdict_only=True)
        alone = polytrav.diff(f, g, Box(LO, HI), epsilon=eps, verdict_only=True, split=False)
        assert split.verdict is alone.verdict
        assert split.split is not None and alone.split is None
        if split.verdict is Verdict.VIOLATED:
            x, j = split.violation["x"], split.violation["output"]
            assert abs(g.forward(x)[j] - f.forward(x)[j]) > eps
    assert split.verdict is Verdict.HOLDS and split.split["proven"] > 0
    tight = result.max_abs * (1 + 1e-4)  # holds, by a thin margin
    short = polytrav.diff(f, g, Box(LO, HI), epsilon=tight, verdict_only=True, split=False,
                          max_polytopes=1)
    assert short.verdict is Verdict.UNKNOWN
    short = polytrav.diff(f, g, Box(LO, HI), epsilon=tight, verdict_only=True, max_polytopes=1)
    assert short.verdict is not Verdict.HOLDS or (short.split["open"] == 0
                                                 and short.n_polytopes == 0)


def test_the_split_s_probe_finds_what_the_samples_and_the_split_s_points_miss(
        monkeypatch, pair, result):
    """With the samples, the attack and the split's own points blind, the probe finds a
    violation (replayed by forward passes) by its attack on the open boxes; with that blind
    too (no attack near epsilon) there is no probe, and the open boxes' traversals find it;
    on a query that holds, the probed boxes that hold are proven and the verdict stays
    HOLDS."""
    import polytrav.bounds.dnf as dnf
    import polytrav.bounds.settle as settle

    f, g = pair
    monkeypatch.setattr(settle, "sampled_violation", lambda *args: (None, np.inf))
    monkeypatch.setattr(settle, "checked_attack", lambda *args: None)
    monkeypatch.setattr(dnf, "unsafe_distance", lambda pairs, Y: np.full(len(Y), np.inf))
    monkeypatch.setattr("polytrav.bounds.split.SPLIT_BOXES", 4)  # the deep search: early
    monkeypatch.setattr("polytrav.bounds.split._accelerating", lambda *args: False)
    monkeypatch.setattr(settle, "DIFF_POLICY",
                        replace(settle.DIFF_POLICY, whole_open_share=2.0))  # the open boxes' traversals
    attack = dnf.box_attack
    for blind in (False, True):
        if blind:  # every box's attack reaches nothing: its centre, far from epsilon
            monkeypatch.setattr(dnf, "box_attack", lambda pairs, net, lows, highs, **_: (
                np.ones(len(lows)), (np.asarray(lows) + highs) / 2))
        for q in (0.9, 0.999):
            eps = q * result.max_abs
            r = polytrav.diff(f, g, Box(LO, HI), epsilon=eps, verdict_only=True)
            assert r.verdict is Verdict.VIOLATED
            assert r.split["candidate"] == ("probe" if not blind else None)
            assert r.split["probed"] == 0
            x, j = r.violation["x"], r.violation["output"]
            assert abs(g.forward(x)[j] - f.forward(x)[j]) > eps
            assert (r.n_polytopes >= 1) == blind
    monkeypatch.setattr(dnf, "box_attack", attack)
    held = polytrav.diff(f, g, Box(LO, HI), epsilon=1.2 * result.max_abs, verdict_only=True)
    assert held.verdict is Verdict.HOLDS and held.split["probed"] > 0
    assert held.split["held"] == held.split["probed"]


def test_where_the_deep_search_stalls_with_most_of_the_box_open_all_of_it_is_traversed(
        monkeypatch, pair, result):
    """Where the deep search begins with most of the box open and then stalls, the whole box
    is traversed: with the samples, the attacks and the split's points blind, it finds the
    violation (replayed by forward passes), and a query that holds is HOLDS from that one
    traversal, whose polytopes are those of the whole box's."""
    import polytrav.bounds.dnf as dnf
    import polytrav.bounds.settle as settle

    f, g = pair
    monkeypatch.setattr(settle, "sampled_violation", lambda *args: (None, np.inf))
    monkeypatch.setattr(settle, "checked_attack", lambda *args: None)
    monkeypatch.setattr(dnf, "unsafe_distance", lambda pairs, Y: np.full(len(Y), np.inf))
    monkeypatch.setattr("polytrav.bounds.split.SPLIT_BOXES", 4)
    monkeypatch.setattr("polytrav.bounds.split._accelerating", lambda *args: False)
    monkeypatch.setattr("polytrav.bounds.split._deep_progress", lambda *args: False)
    monkeypatch.setattr(settle, "DIFF_POLICY",
                        replace(settle.DIFF_POLICY, whole_open_share=0.0))
    monkeypatch.setattr(dnf, "box_attack", lambda pairs, net, lows, highs, **_: (
        np.ones(len(lows)), (np.asarray(lows) + highs) / 2))
    eps = 0.95 * result.max_abs
    r = polytrav.diff(f, g, Box(LO, HI), epsilon=eps, verdict_only=True)
    assert r.verdict is Verdict.VIOLATED and r.split["whole"] and r.n_polytopes >= 1
    x, j = r.violation["x"], r.violation["output"]
    assert abs(g.forward(x)[j] - f.forward(x)[j]) > eps
    held = polytrav.diff(f, g, Box(LO, HI), epsilon=1.2 * result.max_abs, verdict_only=True)
    plain = polytrav.diff(f, g, Box(LO, HI), epsilon=1.2 * result.max_abs, verdict_only=True,
                          split=False)
    assert held.verdict is Verdict.HOLDS and held.status == "complete" and held.split["whole"]
    assert held.split["probed"] == held.split["held"] == 0
    assert held.n_polytopes == plain.n_polytopes
    # the split's own share: what its bounds proved before the whole box's traversal
    assert 0.0 <= held.split["proven_volume_share"] < 1.0
    assert "then the whole box traversed" in str(held)


def test_a_deep_search_that_proves_the_box_is_not_cut_short_by_the_whole_traversal(
        monkeypatch, pair, result):
    """Most of the box open where the deep search begins is no reason to stop splitting: a
    deep search that goes on to prove every box answers HOLDS by the split alone, with no
    traversal (NeuroDiff's prop-1 boxes hold millions of joint polytopes, and the split
    proves them)."""
    import polytrav.bounds.settle as settle

    f, g = pair
    monkeypatch.setattr("polytrav.bounds.split.SPLIT_BOXES", 4)
    monkeypatch.setattr("polytrav.bounds.split._accelerating", lambda *args: False)
    monkeypatch.setattr(settle, "DIFF_POLICY",
                        replace(settle.DIFF_POLICY, whole_open_share=0.0))
    # every doubling proves enough (the small net's would not prove a quarter of what is left)
    monkeypatch.setattr("polytrav.bounds.split.SPLIT_WHOLE_STALL", 0.0)
    r = polytrav.diff(f, g, Box(LO, HI), epsilon=1.2 * result.max_abs, verdict_only=True)
    assert r.verdict is Verdict.HOLDS and r.status == "complete"
    assert not r.split["whole"] and r.split["open"] == 0 and r.n_polytopes == 0
    assert r.split["proven_volume_share"] == pytest.approx(1.0)


def test_while_most_of_the_box_is_open_a_slow_doubling_hands_over_the_whole_box(
        monkeypatch, pair, result):
    """``diff``'s split ends its deep search at the first doubling that proves less than
    ``SPLIT_WHOLE_STALL`` of what is left while ``whole_open_share`` is open (here no
    doubling is enough: after one, 8 boxes), and the whole box's traversal answers as the
    traversal alone: HOLDS above the exact largest ``|g - f|``, VIOLATED (replayed) below."""
    import polytrav.bounds.settle as settle

    f, g = pair
    monkeypatch.setattr("polytrav.bounds.split.SPLIT_BOXES", 4)
    monkeypatch.setattr("polytrav.bounds.split._accelerating", lambda *args: False)
    monkeypatch.setattr("polytrav.bounds.split.SPLIT_WHOLE_STALL", 2.0)
    monkeypatch.setattr(settle, "DIFF_POLICY", replace(settle.DIFF_POLICY, whole_open_share=0.0))
    monkeypatch.setattr(settle, "sampled_violation", lambda *args: (None, np.inf))
    monkeypatch.setattr(settle, "checked_attack", lambda *args: None)
    for eps in (1.2 * result.max_abs, 0.9 * result.max_abs):
        r = polytrav.diff(f, g, Box(LO, HI), epsilon=eps, verdict_only=True)
        alone = polytrav.diff(f, g, Box(LO, HI), epsilon=eps, verdict_only=True, split=False)
        assert r.verdict is alone.verdict
        if r.split["candidate"] is None:  # (the split's own points may meet the violation)
            assert r.split["whole"] and r.split["boxes"] == 8
        if r.verdict is Verdict.VIOLATED:
            x, j = r.violation["x"], r.violation["output"]
            assert abs(g.forward(x)[j] - f.forward(x)[j]) > eps
    assert r.verdict is Verdict.VIOLATED


def test_every_lp_of_the_traversals_is_counted(pair, result):
    """``n_lps`` counts the traversal's LPs and the analysis's, for a run and for the
    verdict's runs of the open sub-boxes merged (with its probe runs')."""
    f, g = pair
    assert result.n_lps == result.report.stats["lps"] + result.n_solves > 0
    assert f"{result.n_lps} LPs" in str(result) and result.to_dict()["n_lps"] == result.n_lps
    eps = 1.2 * result.max_abs
    plain = polytrav.diff(f, g, Box(LO, HI), epsilon=eps, verdict_only=True, split=False)
    assert plain.n_lps == plain.report.stats["lps"] + plain.n_solves
    split = polytrav.diff(f, g, Box(LO, HI), epsilon=eps, verdict_only=True)
    probes = split.report.stats["settle"].get("probes", {})
    assert split.n_lps == (split.report.stats["lps"] + split.n_solves + probes.get("lps", 0)
                           + probes.get("solves", 0))


@pytest.mark.parametrize("widths", [([4], [3, 3]), ([70, 70], [60])])
def test_each_network_s_own_code_of_every_record(widths):
    """``codes`` splits a record's joint code into f's and g's own codes (other widths and
    depths; past 128 neurons the joint code is hex): at a record's interior point each is that
    network's activation code there, and at the largest difference, on the boundary of its
    polytope, each network's local model on its own code gives its value."""
    from polytrav.vocabulary.text import code_text, parse_code

    f = random_net(21, 2, widths[0], n_out=2)
    g = random_net(22, 2, widths[1], n_out=2)
    r = polytrav.diff(f, g, Box(LO, HI), max_polytopes=60)
    assert r.changes and r.features
    assert all((o.code.startswith("0x") for o in r.outputs)) == (sum(widths[0]) + sum(
        widths[1]) > 128)
    for rec in [*r.changes, *r.features]:
        for name, net in (("f", f), ("g", g)):
            assert rec.codes[name] == code_text(net.activation_code(rec.x))
    for o in r.outputs:
        for name, net in (("f", f), ("g", g)):
            code = parse_code(o.codes[name], [W.shape[0] for W in net.weights[:-1]])
            W, c = net.local_model(code)
            assert np.allclose(W @ o.witness + c, net.forward(o.witness), atol=1e-9)
    assert r.to_dict()["outputs"][0]["codes"] == r.outputs[0].codes
    row = r.output_rows()[0]
    assert (row["f_code"], row["g_code"]) == (r.outputs[0].codes["f"], r.outputs[0].codes["g"])


def test_model_diff_settles_as_the_full_traversal_answers(monkeypatch):
    """``check_settle`` on random nets read as two networks side by side (two outputs: f's,
    then g's), epsilon near the sampled largest difference: with the stage (samples,
    attacks, the input split with its probe round) the verdicts are the traversal's alone;
    with the deep search early, the probe round runs."""
    from polytrav.plugins.model_diff import ModelDiff
    from polytrav.testing import check_settle

    def factory(net, region):
        lo, hi = region.bounding_box()
        X = np.random.default_rng(0).uniform(lo, hi, (400, len(lo)))
        d = np.abs(np.diff(net.forward(X), axis=1)).max()
        return ModelDiff(epsilon=float(d) * float(np.random.default_rng(
            int(abs(net.weights[0][0, 0]) * 1e6)).choice([0.9, 1.05, 1.5])), verdict_only=True)

    seen = check_settle(factory, seeds=range(10))
    assert {"proven", "violated"} <= set(seen), seen
    # blind samples and attack, the deep search early, never the whole box: the probe round
    import polytrav.bounds.settle as settle

    monkeypatch.setattr(settle, "sampled_violation", lambda *args: (None, np.inf))
    monkeypatch.setattr(settle, "checked_attack", lambda *args: None)
    monkeypatch.setattr("polytrav.bounds.split.SPLIT_BOXES", 4)
    monkeypatch.setattr("polytrav.bounds.split._accelerating", lambda *args: False)
    monkeypatch.setattr(settle, "DIFF_POLICY", replace(settle.DIFF_POLICY, whole_open_share=2.0))
    seen = check_settle(factory, seeds=range(10))
    assert {"proven", "violated"} <= set(seen), seen
    net = random_net(0, 3, [8, 8, 6], 2)
    box = Box(-np.ones(3), np.ones(3))
    report = polytrav.analyze(net, box, factory(net, box))
    assert report.stats["settle"]["probes"]["held"] > 0  # (seed 0 holds, by its probe runs)
