"""Optimised intermediate bounds of a pair's networks over boxes
(polytrav.bounds.difference_slopes): they contain every sampled pre-activation, are never
looser than CROWN's, respect the phases known on a parent box, and the input split that uses
them on a two-network stack proves with fewer boxes and decides as the MILP does."""
from __future__ import annotations

import numpy as np
import pytest
from polytrav.testing.milp import milp_max_linear
from reference import perturbed_copy

from polytrav import Network
from polytrav.bounds.crown import BOUND_TOL, box_layer_bounds
from polytrav.bounds.difference import NetworkPair
from polytrav.bounds.difference_slopes import optimised_layer_bounds
from polytrav.bounds.split import split_box
from polytrav.solvers.highs import HighsBackend
from polytrav.testing.reference import random_net

SAMPLES = 4000


def boxes(seed: int, n: int, count: int):
    rng = np.random.default_rng(seed)
    lo = rng.uniform(-1.0, 0.5, (count, n))
    return lo, lo + rng.uniform(0.2, 1.0, (count, n))


def pre_activations(f: Network, X: np.ndarray) -> list[np.ndarray]:
    out, a = [], X
    for W, b in list(zip(f.weights, f.biases))[:-1]:
        z = a @ W.T + b
        out.append(z)
        a = np.maximum(z, 0.0)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_optimised_bounds_contain_the_samples_and_are_within_crown_s(seed):
    f = random_net(seed, 3, [10, 9, 8], n_out=2)
    layers = list(zip(f.weights, f.biases))
    lo, hi = boxes(seed, 3, 5)
    mid, rad = (lo + hi) / 2, (hi - lo) / 2
    crown = box_layer_bounds(layers, mid, rad)
    tight = optimised_layer_bounds(layers, mid, rad, steps=10)
    unstable = lambda b: sum(((a < 0) & (c > 0)).sum() for a, c in zip(b.lo, b.hi))
    assert unstable(tight) <= unstable(crown)
    for k in range(len(crown.lo)):
        assert (tight.lo[k] >= crown.lo[k]).all() and (tight.hi[k] <= crown.hi[k]).all()
    for b in range(lo.shape[0]):
        X = np.random.default_rng(b).uniform(lo[b], hi[b], (SAMPLES, 3))
        for k, z in enumerate(pre_activations(f, X)):
            tol = BOUND_TOL * (1 + np.abs(z).max())
            assert (z >= tight.lo[k][b, 0] - tol).all() and (z <= tight.hi[k][b, 0] + tol).all()


def test_phases_known_on_a_parent_box_stay_and_new_ones_are_true():
    f = random_net(3, 3, [12, 12], n_out=2)
    layers = list(zip(f.weights, f.biases))
    lo, hi = boxes(3, 3, 1)
    phases = np.zeros((1, f.n_neurons), np.int8)
    optimised_layer_bounds(layers, (lo + hi) / 2, (hi - lo) / 2, phases, steps=10)
    parent = phases.copy()
    cut = (lo[0, 0] + hi[0, 0]) / 2
    lows, highs = np.repeat(lo, 2, 0), np.repeat(hi, 2, 0)
    highs[0, 0], lows[1, 0] = cut, cut
    phases = np.repeat(parent, 2, axis=0)
    optimised_layer_bounds(layers, (lows + highs) / 2, (highs - lows) / 2, phases, steps=10)
    for b in range(2):
        assert np.all(phases[b][parent[0] != 0] == parent[0][parent[0] != 0])
        X = np.random.default_rng(b).uniform(lows[b], highs[b], (SAMPLES, 3))
        pre = np.hstack(pre_activations(f, X))
        assert np.all((pre >= 0)[:, phases[b] > 0]) and np.all((pre <= 0)[:, phases[b] < 0])


@pytest.mark.parametrize("seed", range(4))
def test_the_pair_s_bound_with_optimised_intermediate_bounds_holds(seed):
    f = random_net(seed + 10, 3, [10, 10, 10], n_out=2)
    g = perturbed_copy(f, seed, 0.01)
    stack = Network.stack([f, g]).compose_input(np.vstack([np.eye(3), np.eye(3)]), np.zeros(6))
    pair = NetworkPair.in_stack(stack)
    C = np.hstack([-np.eye(2), np.eye(2)])
    C = np.vstack([C, -C])
    lo, hi = boxes(seed, 3, 4)
    mid, rad = (lo + hi) / 2, (hi - lo) / 2
    L0, g0 = pair.box_output_bounds(mid, rad, C)
    L, gl = pair.box_output_bounds(mid, rad, C, steps=10)
    assert (gl - np.abs(L).sum(-1)).sum() >= (g0 - np.abs(L0).sum(-1)).sum()
    for b in range(lo.shape[0]):
        X = np.random.default_rng(b).uniform(lo[b], hi[b], (SAMPLES, 3))
        values = stack.forward(X) @ C.T
        U = (X - mid[b]) / rad[b]
        assert (values >= U @ L[b].T + gl[b] - BOUND_TOL * (1 + np.abs(gl[b]))).all()


def pair_on_unit_box(seed: int, n_in: int, hidden: list[int]):
    """A net ``f``, its copy ``g`` with weights moved by 1 %, the unit box, their input-shared
    stack and the MILP's largest ``|g_0 - f_0|`` over the box (the truth; the slow part)."""
    f = random_net(seed, n_in, hidden, n_out=1)
    g = perturbed_copy(f, seed, 0.01)
    lo, hi = np.zeros(n_in), np.ones(n_in)
    eye = np.eye(n_in)
    stack = Network.stack([f, g]).compose_input(np.vstack([eye, eye]), np.zeros(2 * n_in))
    row = np.array([-1.0, 1.0])
    top = max(milp_max_linear(stack, s * row, lo, hi).value for s in (1, -1))
    return f, g, lo, hi, stack, top


@pytest.fixture(scope="module")
def close_pair():
    """A 3-8-8-8-1 pair (:func:`pair_on_unit_box`)."""
    return pair_on_unit_box(7, 3, [8, 8, 8])


def test_the_split_proves_a_pair_with_fewer_boxes_and_decides_as_the_milp(monkeypatch, close_pair):
    """|g_0 - f_0| <= eps on a two-network stack, eps just above and below the MILP's
    largest difference: the same verdicts with and without the optimised bounds (a real
    counterexample below), and fewer boxes with them where it holds (from the first box
    on: a small net's split is short)."""
    from polytrav.bounds import split

    monkeypatch.setattr(split, "SPLIT_PAIR_FROM", 0)
    f, g, lo, hi, stack, top = close_pair
    row = np.array([-1.0, 1.0])
    counts = {}
    for eps in (top * 1.05, top * 0.8):
        pairs = [(s * row[None] / np.sqrt(2), np.array([-eps / np.sqrt(2)])) for s in (1, -1)]
        for steps in (0, 10):
            result = split_box(stack, lo, hi, pairs, [HighsBackend()], max_boxes=20_000,
                               pair_steps=steps)
            if eps > top:
                assert result.candidate is None and not result.open_boxes
                counts[steps] = result.boxes
            else:
                assert result.candidate is not None
                assert abs(g(result.candidate)[0] - f(result.candidate)[0]) >= eps - 1e-12
    assert counts[10] < counts[0]


def test_diff_s_verdict_with_optimised_bounds_in_its_split(monkeypatch, close_pair):
    """The user's call: ``polytrav.diff(..., verdict_only=True)`` with the optimised bounds
    from the split's first box: ``holds`` just above the MILP's largest ``|g_0 - f_0|``,
    ``violated`` below it with a point a forward pass confirms."""
    import polytrav
    from polytrav.bounds import split
    from polytrav import Box

    monkeypatch.setattr(split, "SPLIT_PAIR_FROM", 0)
    f, g, lo, hi, _, top = close_pair
    holds = polytrav.diff(f, g, Box(lo, hi), outputs=[0], epsilon=top * 1.05, verdict_only=True)
    assert holds.verdict.value == "holds"
    broken = polytrav.diff(f, g, Box(lo, hi), outputs=[0], epsilon=top * 0.8, verdict_only=True)
    assert broken.verdict.value == "violated"
    x = np.asarray(broken.violation["x"], float)
    assert abs(g(x)[0] - f(x)[0]) > top * 0.8


def test_the_deep_search_bounds_with_slopes_from_its_start(monkeypatch, close_pair):
    """Once the deep search begins, a box the pair's CROWN bound leaves unproven is bounded
    again with slopes, however few boxes came before (``SPLIT_PAIR_FROM`` counts boxes only
    where no deep search runs): the split here pauses at 4 boxes and then optimises, where
    the same split without a deep search never does; it still holds just above the MILP's
    largest ``|g_0 - f_0|``."""
    from polytrav.bounds import split

    f, g, lo, hi, stack, top = close_pair
    row = np.array([-1.0, 1.0])
    pairs = [(s * row[None] / np.sqrt(2), np.array([-top * 1.05 / np.sqrt(2)])) for s in (1, -1)]
    steps = []
    bound = NetworkPair.box_output_bounds

    def counted(self, *args, **kwargs):
        steps.append(kwargs.get("steps", 0))
        return bound(self, *args, **kwargs)

    monkeypatch.setattr(NetworkPair, "box_output_bounds", counted)
    short = split_box(stack, lo, hi, pairs, [HighsBackend()], max_boxes=4)
    assert short.boxes == 4 and not any(steps)
    steps.clear()
    deep = split_box(stack, lo, hi, pairs, [HighsBackend()], max_boxes=4, deep_time=600.0,
                     deep_boxes=10_000)
    assert deep.frontier > 0 and any(steps)
    assert deep.candidate is None and not deep.open_boxes


@pytest.fixture(scope="module")
def bigger_pair():
    """A pair of 4 inputs and three layers of 12 neurons (:func:`pair_on_unit_box`)."""
    return pair_on_unit_box(3, 4, [12, 12, 12])


def test_the_split_bounds_with_slopes_only_while_they_pay(monkeypatch, bigger_pair):
    """Slopes while they prove their share of the boxes they are tried on
    (``SPLIT_PAIR_PAYS`` of the last ``SPLIT_PAIR_WINDOW``): a share above 1 never pays
    (past the first window, one batch in ``SPLIT_PAIR_SAMPLE`` is bounded again), 0 always
    does (every batch with a box CROWN leaves unproven). Either way the split proves
    ``|g_0 - f_0| <= eps`` just above the MILP's largest difference and finds a point past
    it just below (checked by forward passes)."""
    from polytrav.bounds import split

    monkeypatch.setattr(split, "SPLIT_PAIR_FROM", 0)
    monkeypatch.setattr(split, "SPLIT_PAIR_WINDOW", 8)
    monkeypatch.setattr(split, "SPLIT_PAIR_SAMPLE", 4)
    f, g, lo, hi, stack, top = bigger_pair  # a split of some 60 batches
    row = np.array([-1.0, 1.0])
    calls = []  # per bound of a batch: its steps
    bound = NetworkPair.box_output_bounds

    def counted(self, *args, **kwargs):
        calls.append(kwargs.get("steps", 0))
        return bound(self, *args, **kwargs)

    monkeypatch.setattr(NetworkPair, "box_output_bounds", counted)
    tightened = {}
    for pays in (0.0, 1.01):
        monkeypatch.setattr(split, "SPLIT_PAIR_PAYS", pays)
        for eps in (top * 1.01, top * 0.8):
            calls.clear()
            pairs = [(s * row[None] / np.sqrt(2), np.array([-eps / np.sqrt(2)]))
                     for s in (1, -1)]
            result = split_box(stack, lo, hi, pairs, [HighsBackend()], max_boxes=20_000)
            if eps > top:
                assert result.candidate is None and not result.open_boxes
                batches, tightened[pays] = calls.count(0), sum(1 for s in calls if s)
            else:
                assert result.candidate is not None
                assert abs(g(result.candidate)[0] - f(result.candidate)[0]) >= eps - 1e-12
        if pays > 1:  # the first window (at most 8 boxes: 8 batches), then one batch in 4
            assert tightened[pays] <= 8 + batches // 4 + 1
    assert tightened[1.01] < tightened[0.0]


@pytest.fixture
def stalled_pair(monkeypatch, bigger_pair):
    """A pair whose split's deep search stalls at every doubling (``SPLIT_WHOLE_STALL``,
    ``diff``'s whole-box rule, and ``SPLIT_DEEP_STALL`` above 1), with slopes that never pay
    (``SPLIT_PAIR_PAYS`` above 1: past the first window of 8 boxes, one batch in 4), and the
    MILP's largest ``|g_0 - f_0|``."""
    from polytrav.bounds import split

    monkeypatch.setattr(split, "SPLIT_PAIR_FROM", 0)
    monkeypatch.setattr(split, "SPLIT_PAIR_WINDOW", 8)
    monkeypatch.setattr(split, "SPLIT_PAIR_SAMPLE", 4)
    monkeypatch.setattr(split, "SPLIT_WHOLE_STALL", 2.0)
    monkeypatch.setattr(split, "SPLIT_DEEP_STALL", 2.0)
    return bigger_pair


@pytest.mark.parametrize("whole_open", [0.0, None])
def test_a_split_stalled_with_slopes_only_sampled_turns_them_on_before_it_ends(
        monkeypatch, stalled_pair, whole_open):
    """A deep search never ends at a doubling in which the slopes were only sampled, by the
    whole-box rule (``whole_open``) or the plain one: the next doubling bounds every batch
    with slopes, and the split ends (``whole`` with the whole-box rule) only when that one
    stalls too: the deep search from 16 boxes, then two doublings, 64 boxes, where slopes
    that pay (never sampled) end it after one, 32."""
    from polytrav.bounds import split

    _, _, lo, hi, stack, top = stalled_pair
    row = np.array([-1.0, 1.0])
    pairs = [(s * row[None] / np.sqrt(2), np.array([-top * 1.01 / np.sqrt(2)])) for s in (1, -1)]
    asked = []  # per batch: (insisting, slopes on)
    ledger = split._SlopeLedger

    class Counted(ledger):
        def next_batch(self):
            on = super().next_batch()
            asked.append((self.insist, on))
            return on

    monkeypatch.setattr(split, "_SlopeLedger", Counted)
    ends = {}
    for pays in (1.01, 0.0):
        monkeypatch.setattr(split, "SPLIT_PAIR_PAYS", pays)
        asked.clear()
        result = split.BoxSplit(stack, lo, hi, pairs, [HighsBackend()], max_boxes=16,
                                deep_time=600.0, deep_boxes=10_000,
                                whole_open=whole_open).run()
        assert result.candidate is None and result.frontier > 0
        assert result.whole == (whole_open is not None)
        ends[pays] = result.boxes
        insisted = [on for insist, on in asked if insist]
        if pays > 1:  # sampled before the insisting doubling, every batch on during it
            assert not all(on for insist, on in asked if not insist)
            assert insisted and all(insisted)
        else:
            assert not insisted and all(on for _, on in asked)
    assert ends == {1.01: 64, 0.0: 32}


def test_diff_traverses_the_whole_box_only_after_a_stall_with_slopes_on(monkeypatch,
                                                                        stalled_pair):
    """The user's call, ``polytrav.diff(..., verdict_only=True)``, on the stalled pair with
    slopes only sampled: the whole box is traversed after two doublings (64 boxes), and
    the verdict is the traversal's: HOLDS just above the MILP's largest ``|g_0 - f_0|``,
    VIOLATED below it at a point forward passes confirm."""
    from dataclasses import replace

    import polytrav
    from polytrav import Box
    from polytrav.bounds import settle, split

    f, g, lo, hi, _, top = stalled_pair
    monkeypatch.setattr(split, "SPLIT_PAIR_PAYS", 1.01)
    monkeypatch.setattr(split, "SPLIT_BOXES", 16)
    monkeypatch.setattr(split, "_accelerating", lambda *args: False)
    monkeypatch.setattr(settle, "DIFF_POLICY", replace(settle.DIFF_POLICY, whole_open_share=0.0))
    held = polytrav.diff(f, g, Box(lo, hi), outputs=[0], epsilon=top * 1.01, verdict_only=True)
    assert held.verdict.value == "holds" and held.status == "complete"
    assert held.split["whole"] and held.split["boxes"] == 64
    broken = polytrav.diff(f, g, Box(lo, hi), outputs=[0], epsilon=top * 0.8,
                           verdict_only=True)
    assert broken.verdict.value == "violated"
    x = np.asarray(broken.violation["x"], float)
    assert abs(g(x)[0] - f(x)[0]) > top * 0.8
