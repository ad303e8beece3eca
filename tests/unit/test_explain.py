"""polytrav.explain: per-row analyses over a dataset (issue 28).

Per-row results equal separate analyze() runs; L1/L∞ counterfactual distances equal a MILP's
(polytrav.testing.milp), immutable features, bounds and directions hold in the witnesses; bad
rows are recorded per row (NaN, outside the domain) or refused up front (width, unknown
analysis or option); the table's columns and index; a Parquet round trip; an executor run
equals the serial run.
"""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from polytrav.testing.milp import milp_counterfactual
from records import same_records
from reference import random_net

from polytrav import Box, ConfigError, Network, analyze, explain, explain_rows
from polytrav.parallel import SerialExecutor
from polytrav.plugins import Counterfactual, LocalModel, OutputRange
from polytrav.vocabulary.tolerances import WITNESS_TOL

TOL = 1e-6
N_IN = 3
LO, HI = np.array([-1.0, -0.5, -1.0]), np.array([1.0, 1.0, 0.5])


@pytest.fixture(scope="module")
def net():
    return random_net(21, N_IN, [8, 6], n_out=1)


@pytest.fixture(scope="module")
def net3():
    return random_net(22, N_IN, [8, 6], n_out=3)


@pytest.fixture(scope="module")
def X():
    return np.random.default_rng(5).uniform(LO, HI, size=(6, N_IN))


def test_rows_equal_separate_analyze_runs(net, X):
    table = explain(net, X, [("counterfactual", {"norm": 1, "scale": None}),
                             ("output_range", {"radius": 0.2}), "local_model"], domain=(LO, HI))
    assert len(table) == len(X) and all(r.ok for r in table)
    for row, x in zip(table, X):
        cf = analyze(net, Box(LO, HI), Counterfactual(x, norm=1))[0]
        box = Box(np.clip(x - 0.2, LO, HI), np.clip(x + 0.2, LO, HI))
        rng = analyze(net, box, OutputRange())[0]
        lm = analyze(net, Box(LO, HI), LocalModel(x))[0]
        assert row.figures["counterfactual.distance"] == pytest.approx(cf.value, abs=TOL)
        assert row.figures["output_range.min"] == pytest.approx(rng.value["min"], abs=TOL)
        assert row.figures["output_range.max"] == pytest.approx(rng.value["max"], abs=TOL)
        assert row.figures["local_model.output"] == pytest.approx(lm.value["output"], abs=TOL)
        assert row.figures["local_model.output"] == pytest.approx(net.forward(x)[0], abs=1e-9)


@pytest.mark.parametrize("milp_after", [500, 0])
@pytest.mark.parametrize("norm", [1, np.inf])
@pytest.mark.parametrize("which", ["net", "net3"])
def test_counterfactual_distances_equal_the_milp(which, norm, milp_after, X, request):
    """By the traversal (these rows take milliseconds), or by the MILP from the first
    polytope (``milp_after=0``): the reference MILP's distance, and ``proof`` says which."""
    model = request.getfixturevalue(which)
    table = explain(model, X[:4], [("counterfactual", {"norm": norm, "immutable": [1],
                                                       "milp_after": milp_after,
                                                       "scale": None})],
                    domain=(LO, HI))
    for row, x in zip(table, X[:4]):
        ref = milp_counterfactual(model, x, norm, LO, HI, immutable=[1])
        got = row.figures["counterfactual.distance"]
        assert row.figures["counterfactual.proof"] == ("milp" if milp_after == 0 else "traversal")
        if np.isinf(ref.value):
            assert got is None and row.figures["counterfactual.exact"]
        else:
            assert got == pytest.approx(ref.value, abs=TOL), (which, norm, x)


def test_immutable_bounds_and_directions_hold_in_every_witness(net3, X):
    table = explain(net3, X, [("counterfactual", {
        "norm": np.inf, "immutable": ["x0"], "direction": {"x1": "increase"},
        "bounds": {2: (None, 0.25)}})], domain=(LO, HI))
    found = 0
    for row, x in zip(table, X):
        if "counterfactual" in row.errors:  # x2 above its bound: the row is outside
            assert x[2] > 0.25 and "outside the region" in row.errors["counterfactual"]
            continue
        w = row.results["counterfactual"].witness
        if w is None:
            continue
        found += 1
        assert w[0] == x[0]
        assert w[1] >= x[1] - WITNESS_TOL and w[2] <= 0.25 + WITNESS_TOL
        assert row.figures["counterfactual.x.x0"] == x[0]
    assert found


def test_a_bad_row_is_recorded_and_the_others_go_on(net, X):
    bad = X.copy()
    bad[1, 2] = np.nan
    bad[3] = [5.0, 0.0, 0.0]  # outside the given domain
    table = explain(net, bad, [("counterfactual", {"norm": 1})], domain=(LO, HI))
    assert "not a finite number in feature(s) ['x2']" in table[1].errors["row"]
    assert "outside the region" in table[3].errors["counterfactual"]
    assert all(table[i].ok for i in (0, 2, 4, 5))
    frame = table.to_pandas()
    assert frame["row.error"].notna().tolist() == [False, True, False, False, False, False]
    assert frame["counterfactual.error"].notna().tolist() == [False, False, False, True, False, False]
    assert sorted(table.errors) == [1, 3]


def test_wrong_width_unknown_names_and_options_are_refused_up_front(net, X):
    with pytest.raises(ConfigError, match=r"one column per network input \(3\), got shape \(6, 2\)"):
        explain(net, X[:, :2], "local_model")
    with pytest.raises(ConfigError, match="X has no rows"):
        explain(net, X[:0], "local_model")
    with pytest.raises(ConfigError, match="the domain must be bounded"):
        explain(net, X, "local_model", domain=(-np.inf, 1.0))
    with pytest.raises(ConfigError, match="unknown analysis 'counterfactuals'"):
        explain(net, X, "counterfactuals")
    with pytest.raises(ConfigError, match=r"per row does not take parameter\(s\) \['nrom'\]"):
        explain(net, X, [("counterfactual", {"nrom": 1})])
    with pytest.raises(ConfigError, match=r"per row needs parameter 'radius'"):
        explain(net, X, "output_range")
    with pytest.raises(ConfigError, match=r"unknown feature 'age'.*the same on every row, so "
                                           "no row ran"):  # an option no row can use
        next(explain_rows(net, X[:1], [("counterfactual", {"immutable": ["age"]})]))
    with pytest.raises(ConfigError, match=r"analysis 'region_stats' \(.*RegionStats\) cannot "
                                           r"run per row: it does not implement for_row"):
        explain(net, X[:1], "region_stats")


def test_an_analysis_without_for_row_is_refused_before_any_row_runs(net, X, monkeypatch):
    """A third-party analysis that does not implement for_row: refused up front, naming it
    and what to implement, with no row run (its validate would count them)."""
    import sys
    import types

    from polytrav import Analysis, hookimpl
    from polytrav.host import manager

    runs = []

    class Wholesale(Analysis):
        name = "wholesale"

        def validate(self, network, region):
            runs.append(region)

        def visit(self, polytope, context):
            return None

    plugin = types.ModuleType("polytrav_test_wholesale")
    plugin.polytrav_add_analyses = hookimpl(lambda: [Wholesale])
    monkeypatch.setitem(sys.modules, plugin.__name__, plugin)
    monkeypatch.setattr(manager, "DEFAULT_PLUGINS", (*manager.DEFAULT_PLUGINS, plugin.__name__))
    with pytest.raises(ConfigError, match=r"explain: analysis 'wholesale' \(.*Wholesale\) cannot "
                                          r"run per row: it does not implement "
                                          r"for_row\(row, \*\*options\); add a classmethod"):
        explain(net, X, ["local_model", "wholesale"], domain=(LO, HI))
    rows = explain_rows(net, X, "wholesale", domain=(LO, HI))
    with pytest.raises(ConfigError, match="'wholesale'"):
        next(rows)
    assert runs == []


def test_to_pandas_keeps_the_index_and_names_columns_by_figure(net, X):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(X, columns=["age", "income", "debt"],
                         index=pd.Index([f"c{i}" for i in range(len(X))], name="customer"))
    table = explain(net, frame, [("counterfactual", {"norm": 1, "label": "cf"}), "local_model"])
    out = table.to_pandas()
    assert list(out.index) == list(frame.index) and out.index.name == "customer"
    for col in ("cf.distance", "cf.class0", "cf.x.age", "cf.error", "local_model.output",
                "local_model.attribution.income", "local_model.gradient.debt", "row.error"):
        assert col in out.columns, col
    assert out["cf.class0"].dtype == "Int64" and out["cf.exact"].dtype == "boolean"
    attributions = out[[f"local_model.attribution.{f}" for f in frame.columns]].sum(axis=1)
    assert np.allclose(attributions + out["local_model.intercept"], net.forward(X)[:, 0])
    # the default domain is X's per-column min and max: every witness stays inside it
    # (within the witness tolerance: it steps just past the class boundary)
    w = out[[f"cf.x.{f}" for f in frame.columns]].to_numpy(dtype=float)
    ok = ~np.isnan(w).any(axis=1)
    assert np.all(w[ok] >= X.min(0) - WITNESS_TOL) and np.all(w[ok] <= X.max(0) + WITNESS_TOL)


def test_each_row_has_its_class_and_probability_in_the_networks_vocabulary(net, net3, X):
    """Without a link: the class index as the analyses read it, no probability; with
    classes and a link: the label and its probability; a regressor: its prediction."""
    y = net.forward(X)[:, 0]
    table = explain(net, X, "local_model", domain=(LO, HI))
    assert [r.figures["row.class"] for r in table] == (y >= 0).astype(int).tolist()
    assert all("row.probability" not in r.figures for r in table)
    assert table.columns()[-2:] == ["row.class", "row.error"]
    named = Network(net3.weights, net3.biases, classes=["low", "mid", "high"], link="softmax")
    table = explain(named, X, [("output_range", {"radius": 0.1})], domain=(LO, HI))
    P = named.predict_proba(X)
    assert [r.figures["row.class"] for r in table] == named.predict(X).tolist()
    np.testing.assert_allclose([r.figures["row.probability"] for r in table], P.max(axis=1),
                               rtol=0, atol=1e-15)  # one row's pass against the batch's
    assert table.columns()[-3:] == ["row.class", "row.probability", "row.error"]
    regressor = Network(net.weights, net.biases, link="identity")
    rows = explain(regressor, X, "local_model", domain=(LO, HI))
    np.testing.assert_allclose([r.figures["row.prediction"] for r in rows], y, rtol=0,
                               atol=1e-14)
    assert all("row.class" not in r.figures for r in rows)
    bad = X.copy()
    bad[0, 1] = np.nan  # a row that is not finite has no answer
    assert "row.class" not in explain(named, bad[:1], "local_model", domain=(LO, HI))[0].figures


def test_a_sklearn_pipelines_rows_answer_as_the_estimator():
    pd = pytest.importorskip("pandas")
    pytest.importorskip("sklearn")
    frame, model = _breast_cancer(rows=8)
    net = Network.from_sklearn(model)
    out = explain(net, frame, "local_model").to_pandas()
    assert out["row.class"].tolist() == model.predict(frame).tolist()
    np.testing.assert_allclose(out["row.probability"], model.predict_proba(frame).max(axis=1),
                               rtol=0, atol=1e-9)
    assert out["row.class"].dtype == pd.StringDtype() and list(out.index) == list(frame.index)


def _breast_cancer(rows: int):
    """``rows`` rows of the breast-cancer data (a DataFrame) and a scaled MLP fitted on all
    of it, with string labels (a few iterations: it need not be good, only fitted)."""
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
    return X.iloc[::len(X) // rows][:rows], model

def test_parquet_round_trip(net, X, tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    bad = X.copy()
    bad[0, 0] = np.nan
    table = explain(net, bad, [("counterfactual", {"norm": np.inf}),
                               ("output_range", {"radius": 0.1})], domain=(LO, HI))
    path = table.to_parquet(tmp_path / "explain.parquet")
    back = pd.read_parquet(path)
    pd.testing.assert_frame_equal(back, table.to_pandas())


def test_parquet_without_pyarrow_names_the_extra(net, X, monkeypatch, tmp_path):
    table = explain(net, X[:1], "local_model")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "pyarrow" else real(name, *a))
    with pytest.raises(ConfigError, match=r"needs pyarrow \(the 'export' extra\), which is not "
                                          r'installed: pip install "polytrav\[export\]"'):
        table.to_parquet(tmp_path / "x.parquet")


def test_a_table_does_not_depend_on_the_runs_before_it(net3, X):
    """The same rows explained again in the same process give the same numbers to the last
    bit: each run starts its compiled subproblems' LP sessions cold (a warm session left by
    an earlier run once moved a distance in its 15th digit)."""
    specs = [("counterfactual", {"norm": 1}), ("output_range", {"radius": 0.3, "output": 2})]
    first = explain(net3, X, specs, domain=(LO, HI)).records()
    explain(net3, X[::-1], specs, domain=(LO, HI))  # other runs in between
    assert explain(net3, X, specs, domain=(LO, HI)).records() == first


def test_an_executor_run_equals_the_serial_run(net3, X):
    specs = [("counterfactual", {"norm": 1}), ("output_range", {"radius": 0.3, "output": 2})]
    serial = explain(net3, X, specs, domain=(LO, HI)).records()
    for executor in (SerialExecutor(),):
        parted = explain(net3, X, specs, domain=(LO, HI), executor=executor, chunk_size=2)
        same_records(parted.records(), serial)


def test_a_process_pool_run_equals_the_serial_run(net3, X):
    from polytrav.parallel import get_executor

    specs = [("counterfactual", {"norm": np.inf})]
    serial = explain(net3, X, specs, domain=(LO, HI)).records()
    with get_executor(2) as pool:
        same_records(explain(net3, X, specs, domain=(LO, HI), executor=pool).records(), serial)


def test_a_worker_builds_its_session_once_per_call_and_runs_leave_no_analysis_registered(net, X):
    from polytrav.host import explain as module

    rows = [(i, i, x) for i, x in enumerate(X)]
    session, job, _, _, _ = module._prepare(net, X, [("counterfactual", {"norm": 1})],
                                           (LO, HI), None, None, None)
    first = module._explain_chunk(job, rows[:2])
    held = module._SESSION[job.token]
    module._explain_chunk(job, rows[2:])
    assert module._SESSION[job.token] is held and len(module._SESSION) == 1
    assert all(r.ok for r in first)
    bad = X.copy()
    bad[0] = [5.0, 0.0, 0.0]  # outside the domain: validate fails for this row
    module._explain_chunk(job, [(0, 0, bad[0]), (1, 1, X[1])])
    assert not [name for name, _ in held.pm.list_name_plugin() if name.startswith("analysis:")]
