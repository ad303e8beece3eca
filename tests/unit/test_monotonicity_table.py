"""monotonicity_table against the truth: every activation pattern with a full-dimensional
cell in the box (brute force, SciPy's linprog) and its exact slope."""
from __future__ import annotations

import numpy as np
import pytest
from polytrav import ConfigError, Network, monotonicity_table
from polytrav.testing.reference import brute_force_cells, random_net

SLOPE_ZERO = 1e-12  # a pattern's slope at most this in size counts as 0 (dead paths)


def _truth(net, lo, hi, j, output=0) -> str:
    slopes = []
    for key in brute_force_cells(net, lo, hi):
        bits = np.unpackbits(np.frombuffer(key, np.uint8))[:net.n_neurons].astype(bool)
        code = tuple(np.split(bits, np.cumsum(net.hidden_sizes)[:-1]))
        W, _ = net.local_model(code)
        slopes.append(W[output, j])
    slopes = np.array(slopes)
    up, down = (slopes > SLOPE_ZERO).any(), (slopes < -SLOPE_ZERO).any()
    return {(False, False): "constant", (True, False): "increasing",
            (False, True): "decreasing", (True, True): "neither"}[(up, down)]


# seeds whose features, between them, take every verdict (on [-0.5, 0.5]^3, one output)
@pytest.mark.parametrize("seed,output,widths", [(1, 0, [3, 2]), (7, 0, [3, 2]), (9, 0, [3, 2]),
                                                (11, 0, [3, 2]), (0, 1, [4, 3])])
def test_verdicts_match_the_slopes_of_every_pattern(seed, output, widths):
    net = random_net(seed, 3, widths, output + 1)
    lo, hi = np.full(3, -0.5), np.full(3, 0.5)
    table = monotonicity_table(net, (-0.5, 0.5), output=output)
    assert [r.feature for r in table.rows] == [0, 1, 2]
    for r in table.rows:
        assert r.verdict == _truth(net, lo, hi, r.feature, output), (seed, r)
        if r.down is not None:  # the output falls as the feature rises
            a, b, y, y2 = r.down
            assert a < b and y2 < y
        if r.up is not None:
            a, b, y, y2 = r.up
            assert a < b and y2 > y
        if r.verdict == "neither":
            assert r.down is not None and r.up is not None


def test_constant_and_one_sided_features_and_the_table():
    # y = relu(x0) + relu(x0 - 0.5) - relu(x2); x1 unused
    net = Network.from_arrays([[[1.0, 0, 0], [1.0, 0, 0], [0, 0, 1.0]], [[1.0, 1.0, -1.0]]],
                              [[0.0, -0.5, 0.0], [0.0]], input_names=["a", "b", "c"])
    table = monotonicity_table(net, (-1.0, 1.0), features=["c", 0, "b"])
    assert [(r.name, r.verdict) for r in table.rows] == [
        ("c", "decreasing"), ("a", "increasing"), ("b", "constant")]
    df = table.to_pandas()
    assert list(df.index) == ["c", "a", "b"]
    assert df.loc["a", "up.value"] < df.loc["a", "up.value_2"]  # against decreasing
    assert np.isnan(df.loc["a", "down.value"])


def test_budgets_pass_through_and_unknown_says_why():
    net = Network.from_arrays([[[1.0, 0], [1.0, 0], [1.0, -1.0], [0, 1.0]], [[1.0, 1.0, 1.0, 1.0]]],
                              [[0.0, -0.5, 0.2, 0.1], [0.0]])
    table = monotonicity_table(net, (-1.0, 1.0), features=[0], max_polytopes=1, split=0,
                               milp=False, bounds=False)
    r = table[0]
    assert r.increasing == "unknown" and "polytope_limit" in r.why and r.verdict == "unknown"


def test_bad_arguments():
    net = random_net(0, 2, [3], 1)
    with pytest.raises(ConfigError, match="unknown feature"):
        monotonicity_table(net, (-1, 1), features=["age"])
    with pytest.raises(ConfigError, match="unknown option"):
        monotonicity_table(net, (-1, 1), max_seconds=3)
    two = Network.from_arrays(random_net(1, 2, [3], 2).weights, random_net(1, 2, [3], 2).biases,
                              classes=["a", "b"], link="softmax")
    with pytest.raises(ConfigError, match="output="):
        monotonicity_table(two, (-1, 1))
    assert monotonicity_table(two, (-1, 1), output="b").output == 1
