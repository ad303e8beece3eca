"""region_table and profile: counts, class mix, local models, radii, volume shares and
breakpoints against independent recomputations (numpy forward passes, SciPy's linprog,
Monte Carlo with a fixed seed)."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest
from polytrav import ConfigError, Network, profile, region_table
from polytrav.testing.reference import chebyshev_radius, random_net

STEP = 1e-7          # finite-difference step inside a cell (cells have radius >> STEP)
FD_TOL = 1e-6
RADIUS_TOL = 1e-7
MC_SAMPLES = 200_000  # Monte Carlo points: a share's standard error is <= 0.0012
MC_TOL = 0.006


def _classifier(seed=0, n_in=2, widths=(6, 5), n_out=1, link="sigmoid"):
    net = random_net(seed, n_in, list(widths), n_out)
    classes = ["no", "yes"] if n_out == 1 else [f"c{k}" for k in range(n_out)]
    return Network.from_arrays(net.weights, net.biases, link=link, classes=classes,
                               input_names=[f"f{j}" for j in range(n_in)])


def _data(seed=1, n=300, d=2):
    return np.random.default_rng(seed).uniform(-2.0, 2.0, size=(n, d))


def _bits(net, x):
    return tuple(np.concatenate(net.activation_code(x)).tolist())


def test_counts_rows_and_class_mix_match_a_direct_recomputation():
    net = _classifier()
    X = _data()
    X[[3, 17]] = np.nan
    frame = pd.DataFrame(X, columns=["f0", "f1"], index=[f"r{i}" for i in range(len(X))])
    table = region_table(net, frame)
    assert table.excluded == ["r3", "r17"]
    groups: dict = {}
    for i, x in enumerate(X):
        if np.isfinite(x).all():
            groups.setdefault(_bits(net, x), []).append(i)
    assert len(table) == len(groups)
    assert [r.count for r in table.regions] == sorted((len(g) for g in groups.values()), reverse=True)
    for r in table.regions:
        idx = [int(label[1:]) for label in r.rows]
        assert idx == groups[_bits(net, X[idx[0]])], r.code
        labels = Counter("yes" if net.forward(X[i])[0] >= 0 else "no" for i in idx)
        assert r.classes == dict(labels), r.code
        Y = net.forward(X[idx])
        np.testing.assert_allclose(r.score_mean, Y.mean(axis=0))
        np.testing.assert_allclose(r.score_std, Y.std(axis=0))
        p = 1.0 / (1.0 + np.exp(-Y[:, 0]))
        np.testing.assert_allclose(r.probability_mean, [p.mean()])
    df = table.to_pandas()
    assert list(df["count"]) == sorted(df["count"], reverse=True)
    assert {"class", "classes", "score_mean", "probability_mean", "radius", "volume_share",
            "grad.f0", "grad.f1", "intercept", "rows"} <= set(df.columns)


def test_local_model_matches_finite_differences_inside_the_region():
    net = _classifier(seed=3, n_in=3, widths=(5, 4), n_out=3, link="softmax")
    X = _data(seed=4, n=60, d=3)
    table = region_table(net, X)
    for r in table.regions:
        if r.radius < 1e-3:
            continue
        c = r.centre
        np.testing.assert_allclose(r.gradient @ c + r.intercept, net.forward(c), atol=FD_TOL)
        for j in range(3):
            e = np.zeros(3)
            e[j] = STEP
            fd = (net.forward(c + e) - net.forward(c - e)) / (2 * STEP)
            np.testing.assert_allclose(r.gradient[:, j], fd, atol=FD_TOL, err_msg=r.code)


def _independent_rows(net, bits, lo, hi):
    """The cell of ``bits`` in u = (x - mid) / half coordinates, by its own recursion."""
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    M, m, k = np.eye(len(lo)), np.zeros(len(lo)), 0
    A, b = [], []
    for W, c in zip(net.weights[:-1], net.biases[:-1]):
        H, h = W @ M, W @ m + c
        on = np.array(bits[k:k + W.shape[0]], bool)
        k += W.shape[0]
        s = np.where(on, -1.0, 1.0)
        A.append(s[:, None] * H * half)
        b.append(-s * (H @ mid + h))
        M, m = H * on[:, None], h * on
    return np.vstack(A), np.concatenate(b)


def test_radius_matches_an_independent_linprog():
    net = _classifier(seed=5, widths=(5, 4))
    X = _data(seed=6, n=200)
    table = region_table(net, X, domain=(-2.0, 2.0))
    lo, hi = np.full(2, -2.0), np.full(2, 2.0)
    for r in table.regions:
        bits = [c == "1" for c in r.code.replace("|", "")]
        A, b = _independent_rows(net, bits, lo, hi)
        norms = np.linalg.norm(A, axis=1)
        zero = norms <= 1e-12
        if (b[zero] < 0).any():  # a neuron constant on the box with the wrong sign: empty
            expected = 0.0
        else:
            A, b, norms = A[~zero], b[~zero], norms[~zero]
            expected, _ = chebyshev_radius(A / norms[:, None], b / norms)
        assert r.radius == pytest.approx(max(expected, 0.0), abs=RADIUS_TOL), r.code


def test_volume_shares_sum_to_at_most_one_and_match_monte_carlo():
    net = _classifier(seed=7, widths=(6, 5))
    X = _data(seed=8, n=400)
    table = region_table(net, X, domain=(-2.0, 2.0))
    shares = [r.volume_share for r in table.regions]
    assert all(s is not None for s in shares)
    assert sum(shares) <= 1.0 + 1e-9
    U = np.random.default_rng(9).uniform(-2.0, 2.0, size=(MC_SAMPLES, 2))
    hidden = np.concatenate(net.pre_activations(U), axis=1) >= 0
    counts = Counter(map(bytes, np.packbits(hidden, axis=1)))
    for r in table.regions:
        bits = np.array([c == "1" for c in r.code.replace("|", "")])
        mc = counts.get(bytes(np.packbits(bits)), 0) / MC_SAMPLES
        assert r.volume_share == pytest.approx(mc, abs=MC_TOL), r.code


def test_volume_share_is_none_above_the_cheap_dimension():
    net = random_net(10, 7, [4], 1)
    table = region_table(net, _data(seed=11, n=20, d=7))
    assert all(r.volume_share is None and r.radius >= 0 for r in table.regions)


def test_locate_returns_the_data_region_or_a_new_one():
    net = _classifier(seed=12)
    X = _data(seed=13, n=50)
    table = region_table(net, X)
    found = table.locate(X[0])
    assert found.in_data and 0 in found.rows and found.id is not None
    far = np.array([40.0, -40.0])  # off the data: a region no row falls in, most likely
    r = table.locate(far)
    W, _ = net.local_model(net.activation_code(far))
    np.testing.assert_allclose(r.gradient, W)
    if r.code not in {g.code for g in table.regions}:
        assert r.id is None and not r.in_data and r.count == 0 and np.isnan(r.score_mean).all()
    with pytest.raises(ConfigError):
        table.locate([np.nan, 0.0])


def test_a_point_on_a_boundary_gets_the_on_side_pattern():
    net = Network.from_arrays([[[1.0, 0.0]], [[2.0]]], [[0.0], [0.0]])
    table = region_table(net, np.array([[1.0, 0.0], [2.0, 1.0]]), domain=(-1.0, 3.0))
    r = table.locate([0.0, 0.5])
    assert r.code == "1" and r.in_data and r.gradient.tolist() == [[2.0, 0.0]]
    assert r.volume_share == pytest.approx(0.75)


def test_profile_breakpoints_are_exact_and_match_forward_passes():
    net = random_net(14, 3, [6, 5], 2)
    x = np.array([0.3, -0.2, 0.5])
    p = profile(net, x, 1, -3.0, 3.0)
    assert p.values[0] == -3.0 and p.values[-1] == 3.0 and np.all(np.diff(p.values) > 0)
    P = np.repeat(x[None], len(p.values), axis=0)
    P[:, 1] = p.values
    np.testing.assert_allclose(p.outputs, net.forward(P))
    # linear between breakpoints: the midpoints agree with interpolation
    mids = (p.values[:-1] + p.values[1:]) / 2
    Q = np.repeat(x[None], len(mids), axis=0)
    Q[:, 1] = mids
    np.testing.assert_allclose(p(mids), net.forward(Q), atol=1e-9)
    # every pattern change along a dense grid lies in a gap holding a breakpoint
    t = np.linspace(-3.0, 3.0, 20001)
    G = np.repeat(x[None], len(t), axis=0)
    G[:, 1] = t
    codes = np.concatenate(net.pre_activations(G), axis=1) >= 0
    changes = np.flatnonzero((codes[1:] != codes[:-1]).any(axis=1))
    for i in changes:
        assert ((p.values >= t[i]) & (p.values <= t[i + 1])).any(), t[i]


def test_region_table_profile_uses_the_domain_range():
    net = _classifier(seed=15)
    X = _data(seed=16, n=30)
    table = region_table(net, X)
    p = table.profile(X[0], "f1")
    assert p.name == "f1" and p.values[0] == X[:, 1].min() and p.values[-1] == X[:, 1].max()
    q = profile(net, X[0], "f1", X[:, 1].min(), X[:, 1].max())
    np.testing.assert_array_equal(p.values, q.values)
    with pytest.raises(ConfigError, match="feature"):
        profile(net, X[0], "age", 0.0, 1.0)
    with pytest.raises(ConfigError, match="lo < hi"):
        profile(net, X[0], 0, 1.0, 1.0)


@pytest.mark.filterwarnings("ignore:Stochastic Optimizer")
def test_a_scikit_learn_pipeline_in_original_units():
    pytest.importorskip("sklearn")
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(20)
    X = pd.DataFrame({"age": rng.uniform(20, 70, 200), "income": rng.uniform(1e4, 9e4, 200)})
    y = np.where(X["income"] / 1e4 - X["age"] / 10 + rng.normal(0, 0.5, 200) > 0, "good", "bad")
    pipe = make_pipeline(StandardScaler(), MLPClassifier((6,), max_iter=300, random_state=0))
    pipe.fit(X, y)
    net = Network.from_sklearn(pipe)
    table = region_table(net, X)
    assert sum(r.count for r in table.regions) == len(X)
    df = table.to_pandas()
    assert set(df["class"]) <= {"good", "bad"}
    for r in table.regions[:3]:  # the local model is the pipeline's, in dollars and years
        x = X.loc[r.rows[0]].to_numpy()
        p = pipe.predict_proba(X.loc[[r.rows[0]]])[0, 1]
        z = r.gradient[0] @ x + r.intercept[0]
        assert 1 / (1 + np.exp(-z)) == pytest.approx(p, abs=1e-9)
        assert r.classes == dict(Counter(pipe.predict(X.loc[list(r.rows)])))
