"""The model-validation report (:mod:`polytrav.interface.report`): one self-contained file
with the model card, the applicants, the dataset's summaries and each number's status."""
from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")
pd = pytest.importorskip("pandas")

from polytrav import ConfigError, Network, explain
from polytrav.interface.report import write_report

SECTIONS = ("legend", "model-card", "inputs", "dataset", "distances", "distance-histogram-1",
            "feature-changes", "immutable", "unknown-rows", "regions", "region-table",
            "profiles", "profile-region-0", "monotonicity", "monotonicity-table", "applicants")


def _net() -> Network:
    """The 3-input network of docs/explain.md, with class labels."""
    return Network.from_arrays(
        [[[1.0, -1.0, 0.5], [0.5, 1.0, -1.0], [-1.0, 0.5, 1.0], [1.0, 1.0, 1.0]],
         [[1.0, -1.0, 0.5, 0.5]]],
        [[0.0, 0.1, -0.2, -0.5], [-0.3]], input_names=["age", "income", "debt"],
        link="sigmoid", classes=["deny", "approve"])


@pytest.fixture(scope="module")
def explanation():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.uniform(0, 1, (12, 3)), columns=["age", "income", "debt"],
                     index=[f"a{i}" for i in range(12)])
    X.iloc[10, 1] = np.nan  # a row error: shown although past max_rows
    return explain(_net(), X, [("counterfactual", {"norm": 1, "immutable": ["age"]}),
                               ("counterfactual", {"norm": "inf", "label": "cf_inf"}),
                               "local_model"], domain=(0.0, 1.0), source="hand-written")


class _Table:
    """A DataFrame-like, as the region and monotonicity tables are."""

    def to_pandas(self):
        return pd.DataFrame({"feature": ["age", "debt"], "slope": [0.5, -1.25]})


def test_the_explanation_carries_what_the_model_card_needs(explanation):
    assert explanation.network.n_inputs == 3
    assert explanation.domain.upper.tolist() == [1.0, 1.0, 1.0]
    assert explanation.features == ("age", "income", "debt")
    assert explanation.source == "hand-written"
    assert explanation.analyses["counterfactual"] == ("counterfactual",
                                                       {"norm": 1, "immutable": ["age"]})
    assert explanation.data.shape == (12, 3) and np.isnan(explanation.data[10, 1])


def test_the_html_report_is_self_contained_with_every_section(explanation, tmp_path):
    path = explanation.to_html(tmp_path / "r.html", max_rows=5, tables={"Slopes": _Table()})
    text = path.read_text(encoding="utf-8")
    for section in SECTIONS:
        assert f'id="{section}"' in text, section
    assert "<svg" in text and "<style>" in text
    # nothing fetched: no script, stylesheet, image or font from elsewhere
    assert not re.search(r"<script|<link|<img|src=|@import|url\(http", text)
    assert "3 → 4 → 1" in text and "deny, approve" in text and "hand-written" in text
    assert "minimal: proven by the traversal" in text
    assert "✓ never changed" in text  # age is immutable
    assert "L1 scaled by MAD" in text
    assert 'id="row-4"' in text and 'id="row-5"' not in text  # the first 5 rows ...
    assert 'id="row-10"' in text  # ... and every row left unknown
    assert "not a finite number" in text
    assert "<h2>Slopes</h2>" in text and "-1.25" in text
    assert text.count('<figure class="profile"') == 3 and text.count("<svg") == 5
    # every counterfactual and local model, in each applicant's section and the dataset's
    assert "L∞ scaled by MAD" in text and "Counterfactual (cf_inf)" in text
    assert text.count('class="distance-histogram"') == 2


def test_the_model_sections_are_exact_and_match_their_tables(explanation, tmp_path):
    from polytrav import monotonicity_table, region_table

    text = explanation.to_html(tmp_path / "r.html", max_rows=0).read_text(encoding="utf-8")
    regions = region_table(explanation.network, pd.DataFrame(explanation.data),
                           domain=explanation.domain)  # labels: the rows' positions
    assert f"the rows fall in {len(regions)} region(s) (1 rows with a non-finite value" in text
    width = explanation.domain.upper - explanation.domain.lower
    for r in regions.regions[:3]:  # the representative: the row nearest the region's mean
        X = explanation.data[list(r.rows)] / width
        nearest = r.rows[int(np.argmin(((X - X.mean(axis=0)) ** 2).sum(axis=1)))]
        assert re.search(rf"Region {r.id} \({r.count} rows\): score at row a{nearest} along ",
                         text)
    for r in monotonicity_table(explanation.network, explanation.domain).rows:
        assert f"<td>{r.name}</td><td>{r.verdict}</td>" in text
    assert "logit of approve" in text


def test_an_unsettled_feature_is_unknown_with_why(explanation, tmp_path):
    text = explanation.to_markdown(tmp_path / "r.md", regions=False, profiles=False,
                                   monotonicity={"time_limit": 1e-9}).read_text()
    for name in ("age", "income"):  # (debt's proof may finish before its first check)
        assert f"| {name} | unknown | `unknown` |  | increasing: run ended time_limit" in text
    assert "## Linear regions" not in text and "## Profiles" not in text


def test_the_model_sections_can_be_left_out(explanation, tmp_path):
    text = explanation.to_html(tmp_path / "r.html", regions=False, profiles=False,
                               monotonicity=False).read_text(encoding="utf-8")
    for section in ("regions", "profiles", "monotonicity"):
        assert f'id="{section}"' not in text
    with pytest.raises(ConfigError, match="monotonicity must be True, False or a dict"):
        explanation.to_html(tmp_path / "r.html", monotonicity="yes")


def test_the_markdown_report_links_its_figures(explanation, tmp_path):
    text = explanation.to_markdown(tmp_path / "r.md", max_rows=2, monotonicity=False,
                                   tables={"Per-feature monotonicity": _Table()}).read_text()
    links = re.findall(r"!\[[^]]*\]\(([^)]+)\)", text)
    assert links == ["r_figures/distances-counterfactual.svg", "r_figures/distances-cf_inf.svg",
                     *(f"r_figures/profile-region-{k}.svg" for k in range(3))]
    for link in links:
        assert (tmp_path / link).read_text().startswith("<?xml")
    explanation.to_markdown(tmp_path / "r.md", profiles=1, monotonicity=False)
    assert sorted(f.name for f in (tmp_path / "r_figures").iterdir()) == [
        "distances-cf_inf.svg", "distances-counterfactual.svg", "profile-region-0.svg"]
    assert "## Model card" in text and "| age | 0 | 1 |" in text
    assert "## Per-feature monotonicity" in text and "| 1 | debt | -1.25 |" in text
    assert "### Row a10" in text and "### Row a2\n" not in text


def test_a_budget_leaves_the_distance_a_bound_and_says_why(tmp_path):
    X = np.array([[0.2, 0.3, 0.7], [0.9, 0.1, 0.2]])
    e = explain(_net(), X, [("counterfactual", {"norm": 1})], domain=(0.0, 1.0), max_polytopes=1)
    text = e.to_html(tmp_path / "r.html", regions=False, profiles=False,
                     monotonicity=False).read_text()
    if all(r.figures["counterfactual.exact"] for r in e):
        pytest.skip("one polytope was enough to prove every row")
    assert "unknown: the search stopped at its budget" in text


def test_an_unknown_suffix_is_refused(explanation, tmp_path):
    with pytest.raises(ConfigError, match="unknown suffix '.txt'; use .html or .md"):
        write_report(explanation, tmp_path / "r.txt")
