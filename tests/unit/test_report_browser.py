"""The HTML report in a real browser: Debian's headless Chromium, driven over the DevTools
protocol on a pipe (``tests/support/headless_chromium.py``). It loads with no console error
and no request for anything outside the file, and shows every section and its figure.
``POLYTRAV_UPDATE_DOCS_IMAGES=1`` also saves the screenshot that docs/explain.md shows."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from headless_chromium import Chromium, chromium_path

pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")
pd = pytest.importorskip("pandas")

from polytrav import Network, explain, monotonicity_table, region_table

DOCS_IMAGE = Path(__file__).resolve().parents[2] / "docs" / "images" / "explain-report.png"
SECTIONS = ("legend", "model-card", "inputs", "dataset", "distances", "distance-histogram",
            "feature-changes", "immutable", "unknown-rows", "applicants")

pytestmark = pytest.mark.skipif(
    chromium_path() is None,
    reason="no chromium on PATH (Debian: apt-get install chromium); the report's browser test "
           "needs it")


def _report(tmp_path) -> Path:
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
    e = explain(net, X, [("counterfactual", {"norm": 1, "immutable": ["age"]}), "local_model"],
                source="hand-written 3-4-1 credit network (tests/unit/test_report_browser.py)")
    return e.to_html(tmp_path / "report.html", max_rows=3,
                     regions=region_table(net, X.dropna(), domain=e.domain),
                     monotonicity=monotonicity_table(net, e.domain))


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
        bars = page.evaluate("document.querySelectorAll('#distance-histogram svg path').length")
        assert bars > 10, "the histogram has no bars"
        assert page.evaluate("document.querySelectorAll('.extra-table').length") == 2
        assert page.evaluate("document.querySelectorAll('section.applicant').length") == 4
        assert page.evaluate("document.body.innerText.includes('not a finite number')")
        page.screenshot(tmp_path / "report.png")
    assert (tmp_path / "report.png").stat().st_size > 10_000
    if os.environ.get("POLYTRAV_UPDATE_DOCS_IMAGES") == "1":
        DOCS_IMAGE.parent.mkdir(exist_ok=True)
        shutil.copyfile(tmp_path / "report.png", DOCS_IMAGE)
