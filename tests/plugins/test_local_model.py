"""LocalModel's attributions and reasons (issue 45): exact, in the right order, the same in
the result, the table and the text.

The truth: the masked forward pass (``x0``'s activation code held fixed) evaluated at the
baseline, written here with numpy only, so ``sum(attributions) = y_k(x0) - that value``
checks the local model's affine identity on the polytope without its ``W`` and ``c``.
"""
from __future__ import annotations

import types

import numpy as np
import pytest
from reference import random_net

from polytrav import Box, ConfigError, Network, analyze, explain
from polytrav.plugins import LocalModel
from polytrav.plugins.local_model import REASONS, ranked_reasons

TOL = 1e-12
LO, HI = np.array([-1.0, -1.0, -1.0, -1.0]), np.array([1.0, 1.0, 1.0, 1.0])


def _masked_forward(net: Network, x0: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The network at ``x`` with every neuron held to its state at ``x0`` (the polytope's
    affine map extended to ``x``)."""
    z0, z = x0, x
    for W, b in zip(net.weights[:-1], net.biases[:-1]):
        h0 = W @ z0 + b
        on = h0 >= 0
        z0, z = np.where(on, h0, 0.0), np.where(on, W @ z + b, 0.0)
    return net.weights[-1] @ z + net.biases[-1]


def _reference_reasons(attribution, sign, k):
    """Toward / away by sorting (signed attribution, index) pairs, independently."""
    pairs = [(-abs(a), j) for j, a in enumerate(attribution)]
    toward = [j for _, j in sorted(pairs) if sign * attribution[j] > 0][:k]
    away = [j for _, j in sorted(pairs) if sign * attribution[j] < 0][:k]
    return toward, away


@pytest.mark.parametrize("seed,n_out", [(1, 1), (2, 1), (3, 3), (4, 4)])
def test_attributions_sum_to_the_output_minus_the_baseline_on_the_polytope(seed, n_out):
    net = random_net(seed, 4, [8, 6], n_out=n_out)
    rng = np.random.default_rng(seed)
    data = rng.uniform(LO, HI, (40, 4))
    baseline = np.median(data, axis=0)
    for x0 in data[:6]:
        res = analyze(net, Box(LO, HI), LocalModel(x0, baseline=baseline))[0]
        d = res.details
        k = d["output_index"]
        y0 = net.forward(x0)
        at_base = _masked_forward(net, x0, baseline)[k]
        assert res.exact and d["baseline"].tolist() == baseline.tolist()
        assert abs(d["attribution"].sum() - (y0[k] - at_base)) < TOL, (seed, x0)
        assert abs(res.value["intercept"] - at_base) < TOL
        assert abs(res.value["output"] - y0[k]) < TOL
        # the attributions are the slopes times the move from the baseline
        eps = 1e-7  # a small step inside the polytope (x0 is interior with probability 1)
        for j in range(4):
            e = np.eye(4)[j] * eps
            slope = (_masked_forward(net, x0, x0 + e)[k] - _masked_forward(net, x0, x0 - e)[k])
            assert abs(slope / (2 * eps) * (x0[j] - baseline[j]) - d["attribution"][j]) < 1e-6
        # toward: the sign of x0's answer (a logit's side of 0; the predicted class's score)
        sign = (1 if y0[0] >= 0 else -1) if n_out == 1 else 1
        assert d["sign"] == sign
        assert d["answer"] == (int(y0[0] >= 0) if n_out == 1 else int(np.argmax(y0)))
        assert (d["toward"], d["away"]) == _reference_reasons(d["attribution"], sign, REASONS)


def test_ranked_reasons_orders_by_magnitude_each_way_ties_by_index():
    a = np.array([0.5, -2.0, 0.0, 2.0, -0.5, 0.5, 1e-300])
    assert ranked_reasons(a, 1, 3) == ([3, 0, 5], [1, 4])
    assert ranked_reasons(a, -1, 2) == ([1, 4], [3, 0])
    assert ranked_reasons(a, 1, 10) == ([3, 0, 5, 6], [1, 4])
    assert ranked_reasons(a, 1, 0) == ([], [])


def test_reasons_of_another_class_and_a_regressor():
    net = random_net(7, 4, [8, 6], n_out=3)
    x0 = np.array([0.3, -0.2, 0.5, 0.1])
    q = int(np.argmax(net.forward(x0)))
    other = (q + 1) % 3
    res = analyze(net, Box(LO, HI), LocalModel(x0, output=other))[0]
    assert res.details["sign"] == -1 and res.details["answer"] == q  # raising it pushes away
    regressor = Network(net.weights[:2] + (net.weights[2][:1],),
                        net.biases[:2] + (net.biases[2][:1],), link="identity")
    res = analyze(regressor, Box(LO, HI), LocalModel(x0))[0]
    assert res.details["sign"] == 1 and res.details["answer"] is None
    text = LocalModel(x0).describe(res)
    assert text[2].startswith("raising output 0: ") and text[3].startswith("lowering output 0: ")


def test_table_and_text_give_the_same_reasons_with_the_networks_names():
    net = random_net(5, 4, [8, 6], n_out=1)
    named = Network(net.weights, net.biases, input_names=["age", "income", "debt", "tenure"],
                    classes=["refused", "approved"], link="sigmoid")
    rng = np.random.default_rng(5)
    X = rng.uniform(LO, HI, (5, 4))
    table = explain(named, X, [("local_model", {"baseline": 0.25, "reasons": 2})],
                    domain=(LO, HI))
    for row, x in zip(table, X):
        res = row.results["local_model"]
        d = res.details
        names = ["age", "income", "debt", "tenure"]
        for way in ("toward", "away"):
            got = [row.figures[f"local_model.reason.{way}.{i}"] for i in (1, 2)]
            want = [names[j] for j in d[way]]
            assert got == want + [None] * (2 - len(want))
            attributions = [row.figures[f"local_model.attribution.{n}"] for n in want]
            assert attributions == [float(d["attribution"][j]) for j in d[way]]
        answer = "approved" if named.forward(x)[0] >= 0 else "refused"
        assert d["answer"] == answer == row.figures["row.class"]
        text = LocalModel(x).describe(res)
        toward = ", ".join(f"{names[j]} ({d['attribution'][j]:.6g})" for j in d["toward"])
        assert text[2] == f"toward class {answer!r}: {toward or 'no feature'}"
        assert text[3].startswith(f"away from class {answer!r}: ")
        assert "relative to the baseline [0.25, 0.25, 0.25, 0.25]" in text[1]
        assert abs(row.figures["local_model.intercept"] + sum(
            row.figures[f"local_model.attribution.{n}"] for n in names)
            - named.forward(x)[0]) < TOL


def test_for_row_takes_the_datas_median_as_the_baseline():
    box = Box(LO, HI)
    x = np.array([0.5, -0.5, 0.25, 0.0])
    median = np.array([0.1, 0.2, 0.3, 0.4])
    row = types.SimpleNamespace(x=x, domain=box, features=("a", "b", "c", "d"),
                                data=types.SimpleNamespace(median=median))
    analysis, region = LocalModel.for_row(row)
    assert analysis.baseline is median and region is box
    assert LocalModel.for_row(row, baseline=[0, 0, 0, 1])[0].baseline == [0, 0, 0, 1]
    no_summary = types.SimpleNamespace(x=x, domain=box, features=("a", "b", "c", "d"),
                                       data=types.SimpleNamespace(median=None))
    assert LocalModel.for_row(no_summary)[0].baseline is None  # zeros, as before
    bare = types.SimpleNamespace(x=x, domain=box, features=("a", "b", "c", "d"))
    assert LocalModel.for_row(bare)[0].baseline is None


def test_explains_default_baseline_is_the_median_of_x():
    net = random_net(6, 4, [8, 6], n_out=1)
    X = np.random.default_rng(6).uniform(LO, HI, (7, 4))
    for row, x in zip(explain(net, X, "local_model", domain=(LO, HI)), X):
        d = row.results["local_model"].details
        assert d["baseline"].tolist() == np.median(X, axis=0).tolist()
        assert abs(d["attribution"].sum() - (net.forward(x)[0]
                                             - _masked_forward(net, x, d["baseline"])[0])) < TOL

@pytest.mark.parametrize("kwargs,match", [
    ({"reasons": -1}, r"reasons must be a whole number >= 0, got -1"),
    ({"reasons": 1.5}, r"reasons must be a whole number >= 0, got 1.5"),
    ({"baseline": [0.0, 1.0]}, r"baseline must be a number or 4 finite numbers, got shape \(2,\)"),
])
def test_bad_parameters_are_named(kwargs, match):
    net = random_net(1, 4, [5], n_out=1)
    with pytest.raises(ConfigError, match=match):
        analyze(net, Box(LO, HI), LocalModel(np.zeros(4), **kwargs))


def test_a_breast_cancer_row_is_explained_in_the_estimators_words():
    pytest.importorskip("pandas")
    pytest.importorskip("sklearn")
    import warnings

    from sklearn.datasets import load_breast_cancer
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    model = make_pipeline(StandardScaler(), MLPClassifier((8,), max_iter=60, random_state=0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, np.where(y == 1, "benign", "malignant"))
    net = Network.from_sklearn(model)
    median = X.median().to_numpy()
    rows = X.iloc[[0, 300]]
    out = explain(net, rows, [("local_model", {"baseline": median})]).to_pandas()
    for label, x in zip(rows.index, rows.to_numpy()):
        res = analyze(net, Box(X.min().to_numpy(), X.max().to_numpy()),
                      LocalModel(x, baseline=median))[0]
        d = res.details
        assert d["answer"] == model.predict(rows.loc[[label]])[0] == out.loc[label, "row.class"]
        assert [out.loc[label, f"local_model.reason.toward.{i}"] for i in (1, 2, 3)] == [
            X.columns[j] for j in d["toward"]]
        at_base = _masked_forward(net, x, median)[0]
        assert abs(d["attribution"].sum() - (net.forward(x)[0] - at_base)) < 1e-9
