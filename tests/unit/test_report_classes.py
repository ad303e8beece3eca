"""The report for a model of several classes and for a regressor (issue 63, items 4-5): scores
that decide between classes (logit differences), a regressor's prediction and threshold, and
changes counted at the data's resolution with the scaled metric defined."""
from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")
pd = pytest.importorskip("pandas")

from polytrav import Box, ConfigError, Network, analyze, explain, monotonicity_table
from polytrav.interface.report.content import Resolution
from polytrav.interface.report.model_sections import Score

FEATURES = ["acidity", "sugar", "alcohol"]


def _three_classes() -> Network:
    rng = np.random.default_rng(5)
    return Network.from_arrays([rng.normal(size=(6, 3)), rng.normal(size=(3, 6))],
                               [rng.normal(size=6) * 0.3, np.zeros(3)],
                               input_names=FEATURES, link="softmax",
                               classes=["red", "white", "rose"])


def _rows(n=24, seed=1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(rng.uniform(-1, 1, (n, 3)).round(2), columns=FEATURES,
                        index=[f"w{i}" for i in range(n)])


@pytest.fixture(scope="module")
def three_class_report(tmp_path_factory):
    net, X = _three_classes(), _rows()
    e = explain(net, X, [("counterfactual", {"norm": 1})], domain=(-1.0, 1.0))
    path = e.to_html(tmp_path_factory.mktemp("classes") / "r.html", max_rows=24)
    return net, X, e, path.read_text(encoding="utf-8")


def _cells(text: str, table_id: str) -> list[list[str]]:
    body = re.search(rf'<table id="{table_id}">.*?<tbody>(.*?)</tbody>', text, re.S).group(1)
    return [re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
            for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)]


def test_regions_show_the_majority_class_against_the_runner_up(three_class_report):
    net, X, e, text = three_class_report
    from polytrav import region_table

    assert "logit[a] − logit[b]" in text
    regions = region_table(net, pd.DataFrame(e.data), domain=e.domain)
    for r, cells in zip(regions.regions, _cells(text, "region-table")):
        Y = net.forward(e.data[list(r.rows)])  # forward passes: the independent truth
        a = np.bincount(Y.argmax(axis=1), minlength=3).argmax()
        rest = Y.mean(axis=0)
        rest[a] = -np.inf
        b = int(rest.argmax())
        gap = Y[:, a] - Y[:, b]
        score = cells[4]
        assert score.startswith(f"{net.classes[a]} − {net.classes[b]}: ")
        assert float(score.split(": ")[1].split(" ± ")[0]) == pytest.approx(gap.mean(), rel=1e-3)
        p = net.predict_proba(e.data[list(r.rows)])[:, a].mean()
        assert cells[5] == f"{net.classes[a]}: {p:.4g}"


def test_profiles_show_the_row_class_against_its_runner_up(three_class_report):
    net, X, e, text = three_class_report
    captions = re.findall(r"<figcaption>Region \d+ \(\d+ rows\): (.*?) at row (w\d+) along",
                          text)
    assert captions
    for score, row in captions:
        y = net.forward(X.loc[row].to_numpy(float))
        a, b = np.argsort(-y)[:2]
        assert score == f"logit[{net.classes[a]}] − logit[{net.classes[b]}]"


def test_monotonicity_is_per_class_log_odds(three_class_report):
    net, X, e, text = three_class_report
    rows = _cells(text, "monotonicity-table")
    assert [(r[0], r[1]) for r in rows] == [(f, f"{k} vs red") for k in ("white", "rose")
                                            for f in FEATURES]
    for k, label in ((1, "white"), (2, "rose")):
        want = monotonicity_table(Score.of(net).contrast(k, 0), e.domain)
        got = [r[2] for r in rows if r[1] == f"{label} vs red"]
        assert got == [r.verdict for r in want.rows]


def test_a_regressor_needs_a_threshold_for_counterfactuals():
    net = Network.from_arrays([[[1.0, 2.0]], [[3.0]]], [[0.0], [1.0]], link="identity")
    with pytest.raises(ConfigError, match=r"regressor .* give threshold=T"):
        analyze(net, Box([0, 0], [1, 1]), {"name": "counterfactual", "x0": [0.5, 0.5]})
    # y = 3 relu(x1 + 2 x2) + 1 = 2.5 where x1 + 2 x2 = 0.5: L2 distance 1 / sqrt(5)
    res = analyze(net, Box([0, 0], [1, 1]), {"name": "counterfactual", "x0": [0.5, 0.5],
                                             "norm": 2, "threshold": 2.5})[0]
    assert res.exact and res.value == pytest.approx(1 / np.sqrt(5), rel=1e-6)
    assert net.forward(res.witness)[0] < 2.5
    assert res.details["label"] == "prediction < 2.5"


def test_a_regressor_report_says_prediction(tmp_path):
    net = Network.from_arrays([[[1.0, 2.0, 0.0]], [[3.0]]], [[0.0], [1.0]], link="identity",
                              input_names=FEATURES)
    X = _rows(8)
    e = explain(net, X, [("counterfactual", {"norm": 1, "threshold": 2.0})], domain=(-1, 1))
    text = e.to_html(tmp_path / "r.html").read_text(encoding="utf-8")
    assert "Prediction: <strong>" in text and "Decision:" not in text
    assert "prediction &lt; 2" in text or "prediction &gt; 2" in text


def test_resolution_counts_only_real_changes():
    two = Resolution(2, 10.0)
    assert two.counts(0.005) and two.counts(-0.01) and not two.counts(0.0049)
    assert not two.counts(5e-6) and two.show(13.16, 1) == "13.160"
    loose = Resolution(None, 1.0)
    assert loose.counts(1e-6) and not loose.counts(1e-10)


def test_changes_below_the_resolution_are_not_counted_and_units_are_listed(three_class_report):
    net, X, e, text = three_class_report
    # the data has two decimals: every listed change is at least 0.005 and none are noise
    changes = re.findall(r'<td class="num">([+-]\d+\.\d+)</td></tr>', text)
    assert changes and all(abs(float(c)) >= 0.005 for c in changes)
    assert "L1 scaled by MAD: the distance from the row x0 to a point x is Σ_j |x_j − x0_j| / s_j" \
        in text
    units = _cells(text, "feature-units") if 'id="feature-units"' in text else \
        [re.findall(r"<td[^>]*>(.*?)</td>", r) for r in re.findall(
            r"<tr>(.*?)</tr>", re.search(r'<table class="feature-units">.*?<tbody>(.*?)</tbody>',
                                         text, re.S).group(1), re.S)]
    data = e.data
    mad = np.median(np.abs(data - np.median(data, axis=0)), axis=0)
    assert [u[0] for u in units] == FEATURES
    assert [float(u[1]) for u in units] == pytest.approx(mad.tolist(), rel=1e-3)
    assert [u[2] for u in units] == ["0.01"] * 3
