"""``DiffResult.features`` (the inputs along which ``g - f`` changes most: the difference of
the two networks' local linear models per joint polytope) against brute force over the joint
activation patterns (``polytrav.testing.reference``) and a dense grid."""
from __future__ import annotations

import numpy as np
import pytest
from polytrav.testing.milp import joint_by_hand
from reference import perturbed_copy

import polytrav
from polytrav import Box, Network
from polytrav.testing.reference import brute_force_regions, random_net

LO, HI = np.array([-1.0, -0.5]), np.array([1.0, 1.5])



@pytest.fixture(scope="module")
def pair():
    """f: 2-3-3-2 and g: f with perturbed weights; g's inputs named."""
    f = random_net(3, 2, [3, 3], n_out=2)
    return f, perturbed_copy(f, 11, 0.2, 0.1)


@pytest.fixture(scope="module")
def slopes(pair):
    """Per brute-force joint cell: ``(A, b, S)`` with ``S[j] = ∂(g_j - f_j)/∂x``."""
    f, g = pair
    m = f.n_outputs
    return [(c["A"], c["b"], c["W"][m:] - c["W"][:m])
            for c in brute_force_regions(joint_by_hand(f, g), LO, HI)]


@pytest.fixture(scope="module")
def result(pair):
    return polytrav.diff(*pair, Box(LO, HI), feature_means=True)


def test_max_slope_per_input_equals_brute_force(pair, slopes, result):
    m, n = pair[0].n_outputs, pair[0].n_inputs
    assert result.exact and len(result.features) == m * n
    for r in result.features:
        want = max(abs(S[r.output, r.input]) for _, _, S in slopes)
        assert r.max_abs == pytest.approx(want, abs=1e-9)
        assert abs(r.slope) == pytest.approx(r.max_abs, abs=1e-12)
        assert r.exact and r.name == f"x{r.input}"
        # the slope holds at the polytope's point: finite differences of f and g themselves
        x, h = np.asarray(r.x), 1e-6
        step = np.eye(n)[r.input] * h
        fd = [(net.forward(x + step)[r.output] - net.forward(x - step)[r.output]) / (2 * h)
              for net in pair]
        assert fd[1] - fd[0] == pytest.approx(r.slope, abs=1e-5)


def test_volume_weighted_mean_against_a_grid(pair, slopes, result):
    """The mean of ``|∂(g_j - f_j)/∂x_i|`` over the box, from a 300 x 300 midpoint grid (each
    point's cell by its rows)."""
    k = 300
    t = [(np.arange(k) + 0.5) / k * (b - a) + a for a, b in zip(LO, HI)]
    X = np.stack(np.meshgrid(*t), -1).reshape(-1, 2)
    S = np.full((len(X), *slopes[0][2].shape), np.nan)
    for A, b, Sc in slopes:
        inside = np.all(X @ A.T <= b + 1e-12, axis=1) & np.isnan(S[:, 0, 0])
        S[inside] = Sc
    assert not np.isnan(S).any()
    mean = np.abs(S).mean(axis=0)
    for r in result.features:
        assert r.mean_abs == pytest.approx(mean[r.output, r.input],
                                           abs=0.01 * (1 + r.max_abs))


def test_top_features_dict_text_and_parts(pair, result):
    from polytrav.host.diff import joint_network
    from polytrav.plugins.model_diff import ModelDiff

    top = result.top_features(2, output=1)
    assert [r.output for r in top] == [1, 1] and top[0].max_abs >= top[1].max_abs
    assert result.top_features(by="mean_abs")[0].mean_abs == max(
        r.mean_abs for r in result.features)
    d = result.to_dict()["features"]
    assert len(d) == len(result.features) and set(d[0]) >= {"name", "max_abs", "mean_abs", "x"}
    assert any(line.startswith("largest |slope of g - f| per input: ") for line in result.lines())
    named = polytrav.diff(Network.from_arrays(pair[0].weights, pair[0].biases,
                                              input_names=["age", "amount"]), pair[1],
                          Box(LO, HI), outputs=[0], decisions=False)
    assert {r.name for r in named.features} == {"age", "amount"}
    assert all(r.mean_abs is None for r in named.features)  # not asked
    part = polytrav.analyze(joint_network(*pair), Box(LO, HI),
                            ModelDiff(split=2, feature_means=True), parts=3)[0]
    for got, want in zip(part.details["features"], result.features):
        assert got.max_abs == pytest.approx(want.max_abs, abs=1e-12)
        assert got.mean_abs == pytest.approx(want.mean_abs, abs=1e-9)


def test_high_dimension_has_maxima_but_no_mean():
    """g = 1.05 f (the last layer scaled): g - f = 0.05 f on f's own polytopes, so the largest
    slope is 0.05 times f's largest, by brute force over f's patterns in 7-D."""
    f = random_net(5, 7, [5], n_out=1)
    g = Network.from_arrays([f.weights[0], 1.05 * f.weights[1]],
                            [f.biases[0], 1.05 * f.biases[1]])
    lo, hi = np.zeros(7), np.ones(7)
    r = polytrav.diff(f, g, Box(lo, hi), decisions=False, feature_means=True)
    assert r.exact and len(r.features) == 7
    assert all(x.mean_abs is None for x in r.features)
    cells = brute_force_regions(f, lo, hi)
    for x in r.features:
        want = 0.05 * max(abs(c["W"][0, x.input]) for c in cells)
        assert x.max_abs == pytest.approx(want, abs=1e-9)
    with pytest.raises(polytrav.ConfigError):
        r.top_features(by="mean_abs")
