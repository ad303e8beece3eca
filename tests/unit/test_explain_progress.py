"""polytrav.explain as a long run (issue 63, items 3 and 6): its progress row by row, Ctrl-C
that keeps the rows done (``on_interrupt="report"``: a partial Explanation, table and report
marked), and option values no row can use refused before any row runs.

Ctrl-C is a real SIGINT raised from the progress callback after row k (Python's own handler
turns it into ``KeyboardInterrupt``): no timing is involved.
"""
from __future__ import annotations

import signal

import numpy as np
import pytest
from reference import random_net

from polytrav import ConfigError, explain
from polytrav.host.explanation import NOT_EXPLAINED

pytestmark = pytest.mark.usefixtures("ctrl_c_raises")  # whatever SIGINT handler was inherited
LO, HI = -1.0, 1.0
SPECS = [("counterfactual", {"norm": 1}), "local_model"]


@pytest.fixture(scope="module")
def net():
    return random_net(21, 3, [8, 6], n_out=1)


@pytest.fixture(scope="module")
def X():
    return np.random.default_rng(5).uniform(LO, HI, size=(6, 3))


def ctrl_c_after(k: int, seen: list):
    """A progress callback that records its calls and sends SIGINT after row ``k``."""
    def progress(row, done, total):
        seen.append((row.position, done, total))
        if done == k:
            signal.raise_signal(signal.SIGINT)
    return progress


def test_a_callable_hears_of_every_row(net, X):
    seen = []
    e = explain(net, X, SPECS, domain=(LO, HI), progress=lambda *a: seen.append(a))
    assert [(row.position, done, total) for row, done, total in seen] == \
        [(k, k + 1, 6) for k in range(6)]
    assert not e.partial and e.missing == []


def test_progress_true_draws_a_bar_on_stderr(net, X, capsys):
    explain(net, X, SPECS, domain=(LO, HI), progress=True)
    err = capsys.readouterr().err
    assert "explain: 100%" in err and "6/6" in err and "6 proven, 0 unknown" in err
    explain(net, X, SPECS, domain=(LO, HI))
    assert capsys.readouterr().err == ""  # no bar unless asked
    with pytest.raises(ConfigError, match="progress must be True, False or a callable"):
        explain(net, X, SPECS, progress="yes")


def test_ctrl_c_returns_the_rows_done_marked_partial(net, X, tmp_path):
    pd = pytest.importorskip("pandas")
    seen = []
    e = explain(net, X, SPECS, domain=(LO, HI), progress=ctrl_c_after(2, seen),
                on_interrupt="report")
    assert len(seen) == 2 and len(e) == 2 and e.partial and e.interrupted
    assert e.missing == [2, 3, 4, 5] and "2 of 6 rows (PARTIAL: interrupted)" in repr(e)
    whole = explain(net, X, SPECS, domain=(LO, HI))
    assert [r.figures for r in e] == [r.figures for r in whole][:2]  # the rows done, as they are
    table = e.to_pandas()
    assert table.index.tolist() == list(range(6))  # every input row ...
    assert table["row.error"].isna().tolist() == [True, True, False, False, False, False]
    assert (table["row.error"][2:] == NOT_EXPLAINED).all()  # ... those not explained marked
    pd.testing.assert_frame_equal(table.iloc[:2].dropna(axis=1, how="all"),
                                  whole.to_pandas().iloc[:2].dropna(axis=1, how="all"))
    assert not (e.records()[3]["counterfactual.exact"] or e.records()[3]["local_model.exact"])


def test_ctrl_c_raises_unless_asked(net, X):
    with pytest.raises(KeyboardInterrupt):
        explain(net, X, SPECS, domain=(LO, HI), progress=ctrl_c_after(1, []))
    with pytest.raises(ConfigError, match="on_interrupt must be 'raise' or 'report'"):
        explain(net, X, SPECS, on_interrupt="keep")


def test_the_partial_report_says_which_rows_were_explained(net, X, tmp_path):
    pytest.importorskip("jinja2")
    pytest.importorskip("matplotlib")
    pytest.importorskip("pandas")
    e = explain(net, X, SPECS, domain=(LO, HI), progress=ctrl_c_after(2, []),
                on_interrupt="report")
    text = e.to_markdown(tmp_path / "r.md", monotonicity=False,
                         left_out={"monotonicity": "the run was interrupted (Ctrl-C) before it "
                                                   "began"}).read_text()
    assert text.startswith("# Model validation report (PARTIAL: 2 of 6 rows explained)")
    assert "* **explained (2)**: 0 … 1 (2 rows)\n* **not explained (4)**: 2 … 5 (4 rows)" in text
    assert "## Monotonicity over the domain\n\nNot computed: the run was interrupted" in text
    assert "### Row 1" in text and "### Row 2" not in text
    assert "Every row's answer is proven" not in text  # about the rows explained only
    with pytest.raises(ConfigError, match=r"left_out names sections \['tables'\]"):
        e.to_markdown(tmp_path / "s.md", left_out={"tables": "no"})


@pytest.mark.parametrize("spec, says", [
    (("counterfactual", {"norm": 3}), "norm must be 1, 2 or inf, got 3"),
    (("counterfactual", {"norm": 1, "search": "deep"}), "search must be one of"),
    (("output_range", {"radius": -1}), "radius must be a non-negative number"),
    (("local_model", {"reasons": -2, "label": "lm"}), "analysis 'lm'"),
])
def test_options_no_row_can_use_are_refused_before_any_row_runs(net, X, spec, says):
    seen = []
    with pytest.raises(ConfigError, match=r"the same on every row, so no row ran") as info:
        explain(net, X, [spec], domain=(LO, HI), progress=lambda *a: seen.append(a))
    assert says in str(info.value) and seen == []


def test_an_error_of_some_rows_stays_theirs(net, X):
    """A bound that excludes some rows' values is those rows' error, not the options'."""
    x0 = float(np.median(X[:, 0]))
    e = explain(net, X, [("counterfactual", {"norm": 1, "bounds": {"x0": (x0, None)},
                                             "direction": {"x0": "decrease"}})], domain=(LO, HI))
    failed = [r.position for r in e if r.errors]
    assert 0 < len(failed) < len(X) and all(X[p, 0] < x0 for p in failed)
