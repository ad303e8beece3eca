"""The HTML report in a real browser: Debian's headless Chromium, driven over the DevTools
protocol on a pipe (``tests/support/headless_chromium.py``). It loads with no console error
and no request for anything outside the file, and shows every section and its figures (the
distance histograms, the profile plots, the region and monotonicity tables); the report of a
run stopped by Ctrl-C shows, first, that it is partial and which rows were explained.
``POLYTRAV_UPDATE_DOCS_IMAGES=1`` also saves the screenshots that docs/explain.md shows."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
from pathlib import Path

import numpy as np
import pytest
from headless_chromium import Chromium, chromium_path

pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")
pd = pytest.importorskip("pandas")

from polytrav import Network, explain

DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
SECTIONS = ("legend", "model-card", "inputs", "dataset", "distances", "distance-histogram-1",
            "distance-histogram-2", "feature-changes", "immutable", "unknown-rows", "regions",
            "region-table", "profiles", "profile-region-0", "profile-region-1",
            "profile-region-2", "monotonicity", "monotonicity-table", "applicants")

pytestmark = pytest.mark.skipif(
    chromium_path() is None,
    reason="no chromium on PATH (Debian: apt-get install chromium); the report's browser test "
           "needs it")


def _report(tmp_path, stop_after: int | None = None) -> Path:
    """The report of 40 rows; ``stop_after``: Ctrl-C (a real SIGINT) after that many rows,
    and the partial report, its monotonicity table left out as the command line does."""
    net = Network.from_arrays(
        [[[0.08, -0.04, 0.5], [0.02, 0.05, -1.0], [-0.05, 0.03, 1.0], [0.04, 0.02, 0.2]],
         [[1.0, -1.0, 0.5, 0.5]]],
        [[-3.0, 0.1, -0.2, -3.5], [-0.3]], input_names=["age", "income", "debt"],
        link="sigmoid", classes=["deny", "approve"])
    rng = np.random.default_rng(3)
    X = pd.DataFrame({"age": rng.integers(20, 70, 40).astype(float),
                      "income": rng.normal(50, 15, 40).round(1),
                      "debt": rng.normal(4, 1.5, 40).round(2)},
                     index=pd.Index([f"A-{1000 + i}" for i in range(40)], name="applicant"))
    X.iloc[30, 2] = np.nan  # a row the report lists as unknown, with its reason
    def ctrl_c(row, done, total):
        if done == stop_after:
            signal.raise_signal(signal.SIGINT)

    e = explain(net, X, [("counterfactual", {"norm": 1, "immutable": ["age"]}),
                         ("counterfactual", {"norm": "inf", "label": "cf_inf"}), "local_model"],
                source="hand-written 3-4-1 credit network (tests/unit/test_report_browser.py)",
                progress=ctrl_c, on_interrupt="report")
    if stop_after is None:
        return e.to_html(tmp_path / "report.html", max_rows=3)
    return e.to_html(tmp_path / "partial.html", max_rows=3, left_out={
        "monotonicity": "the run was interrupted (Ctrl-C) before it began"})


def test_a_multi_class_report_shows_scores_per_class(tmp_path):
    rng = np.random.default_rng(5)
    net = Network.from_arrays([rng.normal(size=(6, 3)), rng.normal(size=(3, 6))],
                              [rng.normal(size=6) * 0.3, np.zeros(3)],
                              input_names=["acidity", "sugar", "alcohol"], link="softmax",
                              classes=["red", "white", "rose"])
    X = pd.DataFrame(rng.uniform(-1, 1, (20, 3)).round(2), columns=["acidity", "sugar", "alcohol"])
    path = explain(net, X, [("counterfactual", {"norm": 1})], domain=(-1.0, 1.0)).to_html(
        tmp_path / "classes.html")
    with Chromium(timeout=120) as browser:
        page = browser.open(path.as_uri())
        assert page.errors() == []
        head = page.evaluate("[...document.querySelectorAll('#monotonicity-table th')]"
                             ".map(c => c.innerText)")
        assert head[:3] == ["feature", "log-odds", "verdict"]
        pairs = page.evaluate("[...document.querySelectorAll('#monotonicity-table tbody tr')]"
                              ".map(r => r.cells[1].innerText)")
        assert sorted(set(pairs)) == ["rose vs red", "white vs red"]
        scores = page.evaluate("[...document.querySelectorAll('#region-table tbody tr')]"
                               ".map(r => r.cells[4].innerText)")
        assert scores and all(re.match(r"(red|white|rose) − (red|white|rose): ", t)
                              for t in scores)
        captions = page.evaluate("[...document.querySelectorAll('figure.profile figcaption')]"
                                 ".map(c => c.innerText)")
        assert captions and all("logit[" in c for c in captions)


def test_the_report_renders_in_chromium_without_errors(tmp_path):
    path = _report(tmp_path)
    with Chromium(timeout=120) as browser:
        page = browser.open(path.as_uri())
        assert page.errors() == []
        # nothing fetched besides the file itself: CSS and the figure are inline
        assert page.evaluate("performance.getEntriesByType('resource').length") == 0
        shown = page.evaluate(
            f"{json.dumps(SECTIONS)}.filter(id => {{ const e = document.getElementById(id);"
            " return e && e.getBoundingClientRect().height > 0 })")
        assert shown == list(SECTIONS)
        for figure in ("distance-histogram-1", "distance-histogram-2", "profile-region-0"):
            paths = page.evaluate(f"document.querySelectorAll('#{figure} svg path').length")
            assert paths > 10, f"{figure} has nothing drawn"
        assert page.evaluate("document.querySelectorAll('figure.profile svg').length") == 3
        assert page.evaluate("document.querySelectorAll('#region-table tbody tr').length") > 3
        verdicts = page.evaluate("[...document.querySelectorAll('#monotonicity-table tbody tr')]"
                                 ".map(r => r.cells[1].innerText)")
        assert verdicts == ["neither", "neither", "increasing"]
        assert page.evaluate("document.querySelectorAll('section.applicant').length") == 4
        assert page.evaluate("document.body.innerText.includes('not a finite number')")
        assert page.evaluate("document.body.innerText.includes('Counterfactual (cf_inf)')")
        # the scaled metric defined, with each feature's unit and the data's resolution
        assert page.evaluate("[...document.querySelectorAll('.metric-definition')]"
                             ".filter(e => e.getBoundingClientRect().height > 0).length") == 2
        units = page.evaluate("[...document.querySelectorAll('table.feature-units')][0]"
                              ".innerText")
        assert "age" in units and "0.1" in units and "0.01" in units
        page.screenshot(tmp_path / "report.png")
        page.evaluate("document.getElementById('regions').scrollIntoView()")
        page.screenshot(tmp_path / "report-regions.png")
    for name in ("report.png", "report-regions.png"):
        assert (tmp_path / name).stat().st_size > 10_000
        if os.environ.get("POLYTRAV_UPDATE_DOCS_IMAGES") == "1":
            DOCS_IMAGES.mkdir(exist_ok=True)
            shutil.copyfile(tmp_path / name, DOCS_IMAGES / f"explain-{name}")


@pytest.mark.usefixtures("ctrl_c_raises")
def test_a_partial_report_says_so_first_in_chromium(tmp_path):
    path = _report(tmp_path, stop_after=5)
    with Chromium(timeout=120) as browser:
        page = browser.open(path.as_uri())
        assert page.errors() == []
        assert page.evaluate("document.title") == \
            "Model validation report (PARTIAL: 5 of 40 rows explained)"
        # the first section, shown and framed, before the legend
        first = page.evaluate("document.querySelector('section').id")
        box = page.evaluate("(() => { const r = document.getElementById('partial')"
                            ".getBoundingClientRect(); return [r.top, r.height] })()")
        assert first == "partial" and 0 < box[0] < 400 and box[1] > 50
        assert page.evaluate("getComputedStyle(document.getElementById('partial'))"
                             ".borderTopColor") == "rgb(198, 40, 40)"
        rows = page.evaluate("[...document.querySelectorAll('#partial-rows tr')]"
                             ".map(r => r.innerText.replace(/\\s+/g, ' ').trim())")
        assert rows == ["explained (5) A-1000 … A-1004 (5 rows)",
                        "not explained (35) A-1005 … A-1039 (35 rows)"]
        text = page.evaluate("document.getElementById('partial').innerText")
        assert "PARTIAL REPORT: 5 of 40 rows explained" in text
        assert "Left out: the monotonicity table" in text
        assert "Not computed: the run was interrupted" in page.evaluate(
            "document.getElementById('monotonicity').innerText")
        assert page.evaluate("document.querySelectorAll('#monotonicity-table').length") == 0
        assert page.evaluate("document.querySelectorAll('section.applicant').length") == 3
        assert page.evaluate("document.getElementById('row-5')") is None  # not explained
        assert "Every row explained is proven; 35 rows were not explained" in page.evaluate(
            "document.getElementById('unknown-rows').innerText")  # not "every row's answer"
        page.screenshot(tmp_path / "partial.png")
    assert (tmp_path / "partial.png").stat().st_size > 10_000
