"""Monotonicity with ``stop_at_first``: confirmed pairs, brute-force truth, runs in parts."""
from __future__ import annotations

import numpy as np
import pytest
from reference import brute_force_regions, random_net

from polytrav import Box, ConfigError, analyze
from polytrav.parallel import SerialExecutor
from polytrav.plugins.monotonicity import Monotonicity
from polytrav.traversal import TraversalStatus
from polytrav.vocabulary.results import Verdict

#: Slopes of brute-force cells within this of zero are not counted as either sign.
SLOPE_EPS = 1e-9


def assert_real_pair(net, box, res, feature, output, direction):
    """The witness pair is a violation by a plain forward pass: in the box, only the
    feature differs (x' above x), the output moves the wrong way strictly."""
    x, x2 = res.details["witness_pair"]
    assert box.contains(x) and box.contains(x2)
    assert x2[feature] > x[feature]
    others = np.arange(net.n_inputs) != feature
    assert np.array_equal(x[others], x2[others])
    y, y2 = net.forward(x)[output], net.forward(x2)[output]
    assert (y2 < y) if direction == "increasing" else (y2 > y)
    assert np.array_equal(res.witness, x)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("direction", ["increasing", "decreasing"])
def test_stop_at_first_agrees_with_brute_force(seed, direction):
    net = random_net(seed, 2, [6, 4], n_out=2)
    if seed >= 4:  # non-negative weights: non-decreasing in every input, the HOLDS cases
        from polytrav import Network

        net = Network.from_arrays([np.abs(W) for W in net.weights], net.biases)
    box = Box(-np.ones(2), np.ones(2))
    feature, output = seed % 2, (seed // 2) % 2
    slopes = [r["W"][output, feature] for r in brute_force_regions(net, box.lower, box.upper)]
    wrong = [s for s in slopes if (s < -SLOPE_EPS if direction == "increasing" else s > SLOPE_EPS)]
    res = analyze(net, box, Monotonicity(feature, direction, output, stop_at_first=True))[0]
    if seed >= 4:
        assert bool(wrong) is bool(direction == "decreasing" and max(slopes) > SLOPE_EPS)
    if wrong:  # stopped at the first: the slopes cover the polytopes visited, not the region
        assert res.verdict is Verdict.VIOLATED and not res.exact and res.scope == "visited"
        assert_real_pair(net, box, res, feature, output, direction)
    else:  # proven; the slopes are the region's only if no piece was skipped by the bound
        assert res.verdict is Verdict.HOLDS and res.exact == (res.n_polytopes == len(slopes))
        # sampled finite differences agree: no pair along the feature goes the wrong way
        rng = np.random.default_rng(seed)
        X = rng.uniform(-1, 1 - 1e-3, (2000, 2))
        X2 = X.copy()
        X2[:, feature] += 1e-3
        dy = net.forward(X2)[:, output] - net.forward(X)[:, output]
        assert (dy >= -1e-12).all() if direction == "increasing" else (dy <= 1e-12).all()
    full = analyze(net, box, Monotonicity(feature, direction, output))[0]
    assert full.verdict is res.verdict
    assert res.n_polytopes <= full.n_polytopes == len(slopes)


def test_stop_at_first_visits_fewer_polytopes():
    net = random_net(5, 3, [16, 16], n_out=1)
    box = Box(-np.ones(3), np.ones(3))
    full = analyze(net, box, Monotonicity(0, "increasing"))
    assert full[0].verdict is Verdict.VIOLATED and full.complete
    first = analyze(net, box, Monotonicity(0, "increasing", stop_at_first=True))
    res = first[0]
    assert res.verdict is Verdict.VIOLATED and not res.exact  # slopes of the polytopes visited
    assert "(NOT exact: found over the" in str(first) and "(exact)" not in str(first)
    assert first.status is TraversalStatus.STOPPED and first.decided
    assert res.n_polytopes < full[0].n_polytopes / 10, (res.n_polytopes, full[0].n_polytopes)
    assert len(res.details["violations"]) >= 1
    assert_real_pair(net, box, res, 0, 0, "increasing")


def test_holds_needs_every_polytope():
    net = random_net(5, 3, [16, 16], n_out=1)
    # a network monotone by construction: non-negative weights into and out of every layer
    from polytrav import Network

    mono = Network.from_arrays([np.abs(W) for W in net.weights], net.biases)
    box = Box(-np.ones(3), np.ones(3))
    full = analyze(mono, box, Monotonicity(0, "increasing"))
    first = analyze(mono, box, Monotonicity(0, "increasing", stop_at_first=True, bounds=False))
    assert first[0].verdict is Verdict.HOLDS and first[0].exact and first.complete
    assert first[0].n_polytopes == full[0].n_polytopes
    cut = analyze(mono, box, Monotonicity(0, "increasing", stop_at_first=True, bounds=False),
                  max_polytopes=3)
    assert cut[0].verdict is Verdict.UNKNOWN and not cut[0].exact
    # the slope bound proves pieces (here the whole region: non-negative weights)
    bounded = analyze(mono, box, Monotonicity(0, "increasing", stop_at_first=True))
    # proven, but the slopes cover only the polytopes the bound left to visit
    assert bounded[0].verdict is Verdict.HOLDS and not bounded[0].exact and bounded.complete
    assert bounded[0].n_polytopes < full[0].n_polytopes


@pytest.mark.parametrize("seed", range(10))
def test_the_slope_bound_never_skips_a_violating_polytope(seed):
    """With bounds and without stop_at_first, the violating polytopes reported are exactly
    the brute-force cells of the wrong sign: a pruned piece never held one."""
    from polytrav import Network

    widths = [[5, 4], [4, 3, 3], [6]][seed % 3]
    net = random_net(seed, 2, widths, n_out=2)
    if seed % 2:  # mostly positive weights: large monotone parts for the bound to prove
        net = Network.from_arrays([np.abs(W) - (0.15 if k else 0.0) * np.abs(W).max()
                                   for k, W in enumerate(net.weights)], net.biases)
    box = Box(-np.ones(2), np.ones(2))
    feature, output = seed % 2, (seed // 2) % 2
    slopes = [r["W"][output, feature] for r in brute_force_regions(net, box.lower, box.upper)]
    for direction in ("increasing", "decreasing"):
        wrong = [v for v in slopes if (v < -SLOPE_EPS if direction == "increasing" else v > SLOPE_EPS)]
        rep = analyze(net, box, Monotonicity(feature, direction, output, bounds=True))
        res = rep[0]
        assert len(res.details["violations"]) == len(wrong), (direction, rep.stats["pruned"])
        assert res.verdict is (Verdict.VIOLATED if wrong else Verdict.HOLDS)
        # the slopes' extremes are the region's only when the bound skipped no piece (in the
        # traversal or in the settle stage's input splitting)
        stage = rep.stats["settle"]
        skipped = sum(rep.stats["proven"]) + (0 if stage is None else stage["proven_boxes"])
        assert res.exact == (skipped == 0) == (res.n_polytopes == len(slopes))
        assert res.n_polytopes + 0 <= len(slopes)


@pytest.mark.parametrize("parts", [3, 20])
def test_runs_in_parts_keep_the_confirmed_pair(parts):
    net = random_net(5, 3, [16, 16], n_out=1)
    box = Box(-np.ones(3), np.ones(3))
    rep = analyze(net, box, Monotonicity(0, "increasing", stop_at_first=True),
                  executor=SerialExecutor(), parts=parts)
    res = rep[0]
    assert res.verdict is Verdict.VIOLATED and not res.exact  # stopped: the parts visited
    assert_real_pair(net, box, res, 0, 0, "increasing")
    assert res.details["confirmed"] is not None
    i, _, slope, pair = res.details["confirmed"]
    assert slope < 0 and pair is res.details["witness_pair"]
    # a property that holds: every part runs, the answer is the serial one
    from polytrav import Network

    mono = Network.from_arrays([np.abs(W) for W in net.weights], net.biases)
    serial = analyze(mono, box, Monotonicity(1, "increasing", stop_at_first=True))[0]
    parted = analyze(mono, box, Monotonicity(1, "increasing", stop_at_first=True),
                     executor=SerialExecutor(), parts=parts)
    assert parted.complete and parted[0].verdict is serial.verdict is Verdict.HOLDS
    assert parted[0].n_polytopes == serial.n_polytopes
    assert parted[0].value == pytest.approx(serial.value)


def test_stop_at_first_needs_a_direction():
    net = random_net(0, 2, [3])
    with pytest.raises(ConfigError, match="stop_at_first=True needs a direction"):
        analyze(net, Box(-np.ones(2), np.ones(2)), Monotonicity(0, stop_at_first=True))
    with pytest.raises(ConfigError, match="bounds=True needs a direction"):
        analyze(net, Box(-np.ones(2), np.ones(2)), Monotonicity(0, bounds=True))
    with pytest.raises(ConfigError, match="stop_at_first must be True or False"):
        analyze(net, Box(-np.ones(2), np.ones(2)), Monotonicity(0, "increasing", stop_at_first=1))


def test_a_pair_is_printed_as_the_one_input_that_differs_by_name_and_both_outputs():
    """30 named inputs, output |x_27| + 0.1 x_0: the text names input 27, gives its two
    values and both outputs, and no 30-value vector."""
    from polytrav import Network
    from polytrav.plugins.monotonicity import _distinct

    n = 30
    names = [f"feature {j}" for j in range(n)]
    names[27] = "worst concave points"
    W1 = np.zeros((3, n))
    W1[0, 27], W1[1, 27], W1[2, 0] = 1.0, -1.0, 1.0
    weights, biases = [W1, [[1.0, 1.0, 0.1]]], [[0.0, 0.0, 5.0], [-0.5]]
    net = Network.from_arrays(weights, biases, input_names=names,
                              classes=["benign", "malignant"], link="sigmoid")
    box = Box(-np.ones(n), np.ones(n))
    res = analyze(net, box, Monotonicity(27, "increasing", stop_at_first=True))[0]
    assert res.verdict is Verdict.VIOLATED
    assert_real_pair(net, box, res, 27, 0, "increasing")
    x, x2 = res.details["witness_pair"]
    y, y2 = res.details["pair_outputs"]
    assert (y, y2) == (net.forward(x)[0], net.forward(x2)[0]) and y2 < y
    lines = Monotonicity(27, "increasing").describe(res)
    text = "\n".join(lines)
    assert lines[0].startswith("slope of output 0 (the logit of 'malignant') in worst concave "
                               "points (increasing): 1 violating polytope(s)")
    a, b = _distinct(x[27], x2[27])
    assert lines[1] == (f"pair: x and x' differ only in worst concave points: {a} in x, {b} in "
                        f"x' ({x2[27] - x[27]:.6g} more); every other input equal")
    a, b = _distinct(y, y2)
    assert lines[2] == (f"output 0 (the logit of 'malignant'): {a} at x, {b} at x' "
                        f"({y2 - y:.6g}): it decreases as worst concave points increases")
    assert "x_27" not in text and "[" not in text and "values" not in text
    plain = Network.from_arrays(weights, biases)  # no names: x_27, output 0
    res = analyze(plain, box, Monotonicity(27, "increasing", stop_at_first=True))[0]
    lines = Monotonicity(27, "increasing").describe(res)
    assert lines[0].startswith("slope of output 0 in x_27 (increasing)")
    assert lines[1].startswith("pair: x and x' differ only in x_27: ")
    assert lines[2].startswith("output 0: ") and lines[2].endswith("as x_27 increases")


def test_distinct_numbers_are_printed_apart():
    from polytrav.plugins.monotonicity import _distinct

    assert _distinct(10.2068, 14.2244) == ("10.2068", "14.2244")
    assert _distinct(1.0, 1.0000001) == ("1", "1.0000001")
    assert _distinct(0.5, 0.5) == ("0.5", "0.5")
