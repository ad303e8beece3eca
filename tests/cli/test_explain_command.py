"""``polytrav explain MODEL DATA.csv``: a scikit-learn pipeline saved with skops (or a
pickle with --unsafe-pickle only), an ONNX model named with --names / --labels, the rows of
a CSV file, the report and the table; bad input as one line and exit code 4. One run starts
the console script; the rest run in-process through click's ``CliRunner``."""
from __future__ import annotations

import json
import os
import pickle
import subprocess

import numpy as np
import pytest
from ctrl_c import console_script, save_mlp_onnx

pd = pytest.importorskip("pandas")
pytest.importorskip("sklearn")
sio = pytest.importorskip("skops.io")
pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")

from click.testing import CliRunner
from polytrav import Network, explain
from polytrav.interface.cli import main


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A fitted pipeline (scaler + ReLU MLP) as .skops and .pkl, and its data as CSV with an
    id column and a label column; the same network as ONNX (no names), and its rows."""
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    folder = tmp_path_factory.mktemp("explain")
    rng = np.random.default_rng(1)
    X = pd.DataFrame({"age": rng.integers(20, 70, 40).astype(float),
                      "income": rng.normal(50, 15, 40), "debt": rng.normal(10, 4, 40)})
    y = np.where(X.income - 2 * X.debt > 25, "approve", "deny")
    pipe = make_pipeline(StandardScaler(), MLPClassifier((6,), max_iter=3000, random_state=0))
    pipe.fit(X, y)
    sio.dump(pipe, folder / "model.skops")
    with open(folder / "model.pkl", "wb") as f:
        pickle.dump(pipe, f)
    data = X.assign(id=[f"c{i}" for i in range(40)], label=y)[["id", "age", "income", "debt",
                                                                "label"]]
    data.head(8).to_csv(folder / "rows.csv", index=False)
    net = Network.from_sklearn(pipe)
    save_mlp_onnx(net.weights, net.biases, folder / "model.onnx")
    data.head(8)[["age", "income", "debt"]].to_csv(folder / "plain.csv", index=False)
    (folder / "names.txt").write_text("age\nincome\ndebt\n")
    return folder, pipe, data.head(8)


def run(folder, *args):
    """``polytrav explain ARGS`` in-process, in ``folder``."""
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        return CliRunner().invoke(main, ["explain", *map(str, args)])
    finally:
        os.chdir(cwd)


def test_the_console_script_writes_the_report_and_table(files):
    folder, pipe, data = files
    out = subprocess.run([console_script("polytrav"), "explain", "model.skops", "rows.csv",
                          "--index-col", "id", "--drop", "label", "--report", "r.html",
                          "--table", "t.csv"], capture_output=True, text=True, timeout=300,
                         cwd=folder, env={**os.environ, "POLYTRAV_DEBUG": "0"}, check=False)
    assert out.returncode == 0, out.stderr
    assert "explained 8 rows: 8 proven" in out.stdout
    table = pd.read_csv(folder / "t.csv", index_col="id")
    want = explain(Network.from_sklearn(pipe), data.set_index("id").drop(columns="label"),
                   [("counterfactual", {"norm": 1}), "local_model"]).to_pandas()
    assert table.index.tolist() == want.index.tolist()
    assert np.allclose(table["counterfactual.distance"], want["counterfactual.distance"])
    text = (folder / "r.html").read_text()
    assert "scikit-learn Pipeline, skops file &#39;model.skops&#39;" in text
    assert 'class="distance-histogram"' in text and "Row c0" in text
    for section in ("regions", "profiles", "monotonicity"):
        assert f'<section id="{section}">' in text, section


def test_analyses_as_explain_and_analyze_spell_them(files):
    folder, _, _ = files
    out = run(folder, "model.skops", "rows.csv", "--drop", "id,label", "--report", "r.md",
              "--no-monotonicity", "--no-regions", "--no-profiles",
              "--analysis", 'counterfactual norm=1 immutable=["age"] label="cf"')
    assert out.exit_code == 0, out.output
    text = (folder / "r.md").read_text()
    assert "* age: ✓ never changed" in text
    assert "## Monotonicity" not in text and "## Linear regions" not in text
    assert "## Profiles" not in text
    out = run(folder, "model.skops", "rows.csv", "--drop", "id", "--drop", "label",
              "--analyses", '["local_model"]', "--table", "t.parquet", "--domain", "0:100")
    assert out.exit_code == 0, out.output
    table = pd.read_parquet(folder / "t.parquet")
    assert "local_model.output" in table and "counterfactual.distance" not in table


def test_an_onnx_model_takes_names_and_labels(files):
    folder, pipe, _ = files
    out = run(folder, "model.onnx", "plain.csv", "--names", "names.txt", "--labels",
              ",".join(pipe.classes_), "--analyses", '["local_model"]', "--table", "o.csv",
              "--report", "o.html", "--no-monotonicity", "--no-profiles")
    assert out.exit_code == 0, out.output
    table = pd.read_csv(folder / "o.csv")
    assert set(table["row.class"]) <= set(pipe.classes_)
    assert np.allclose(table["row.probability"],
                       pipe.predict_proba(pd.read_csv(folder / "plain.csv")).max(axis=1))
    text = (folder / "o.html").read_text()
    assert ", ".join(pipe.classes_) in text and "<td>income</td>" in text
    assert "ONNX file &#39;model.onnx&#39;; names from --names &#39;names.txt&#39; and --labels" \
        in text
    (folder / "names.json").write_text(json.dumps({"features": ["age", "income", "debt"],
                                                   "classes": list(pipe.classes_)}))
    out = run(folder, "model.onnx", "plain.csv", "--names", "names.json",
              "--analyses", '["local_model"]', "--table", "j.csv")
    assert out.exit_code == 0, out.output
    assert pd.read_csv(folder / "j.csv")["row.class"].tolist() == table["row.class"].tolist()


@pytest.mark.parametrize("args, message", [
    (["model.pkl", "rows.csv"], "loading it runs code from the file; save the model with skops"),
    (["model.skops", "rows.csv"], ("has column(s) ['id', 'label'] the model does not take; "
                                   "drop them with --drop")),
    (["model.skops", "rows.csv", "--drop", "nope"], "--drop ['nope']: no such column"),
    (["model.skops", "rows.csv", "--report", "r.pdf"], "give a file ending in .html or .htm or .md"),
    (["model.skops", "rows.csv", "--analysis", "x=1"], "is not 'NAME KEY=VALUE ...'"),
    (["model.skops", "rows.csv", "--analyses", "[1"], "--analyses is not JSON"),
    (["model.skops", "rows.csv", "--domain", "0"], "is not LOWER:UPPER"),
    (["model.csv", "rows.csv"], "unknown format '.csv'"),
    (["model.onnx", "plain.csv", "--names", "two.txt"],
     "2 feature names given but the model takes 3 inputs; give one name per input"),
    (["model.onnx", "plain.csv", "--labels", "a,b,c"],
     "3 class labels given but the model has one output (a binary logit): give 2 labels"),
    (["model.onnx", "plain.csv", "--names", "bad.json"], "must be a JSON object with the lists"),
    (["model.onnx", "plain.csv", "--names", "classes.json", "--labels", "a,b"],
     "class labels in both --names"),
    (["model.onnx", "plain.csv", "--labels", "a,a"], "distinct labels"),
])
def test_bad_input_is_one_line(files, args, message):
    folder, _, _ = files
    (folder / "model.csv").write_text("a\n1\n")
    (folder / "two.txt").write_text("age\nincome\n")
    (folder / "bad.json").write_text('{"inputs": ["age"]}')
    (folder / "classes.json").write_text('{"classes": ["deny", "approve"]}')
    out = run(folder, *args)
    assert out.exit_code == 4, out.output
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("polytrav: error: ") and message in lines[0], \
        out.stderr


def test_a_pickle_loads_only_when_asked(files):
    folder, _, _ = files
    out = run(folder, "model.pkl", "rows.csv", "--drop", "id,label", "--unsafe-pickle",
              "--analyses", '["local_model"]')
    assert out.exit_code == 0, out.output
    assert "--unsafe-pickle" in run(folder, "--help").stdout


def test_untrusted_skops_types_are_named(files, tmp_path):
    import textwrap

    from sklearn.preprocessing import FunctionTransformer

    sio.dump(FunctionTransformer(textwrap.dedent), tmp_path / "f.skops")  # a function by name
    out = run(files[0], tmp_path / "f.skops", "rows.csv")
    assert out.exit_code == 4
    assert "holds types skops does not trust by default" in out.stderr
    assert "['textwrap.dedent']" in out.stderr and "pass --trust TYPE for each" in out.stderr


def test_the_csv_is_read_without_pandas_as_pandas_reads_it(files, tmp_path):
    """Missing cells are NaN (that row's error), a label column keeps its numbers; a ragged
    line or an unknown --index-col is one line naming it."""
    from polytrav.host.row import Table
    from polytrav.interface.cli.explain import read_rows

    folder, pipe, data = files
    net = Network.from_sklearn(pipe)
    (tmp_path / "rows.csv").write_text("n,age,income,debt\n7,30,50,\n8,40,NA,10\n")
    rows = read_rows(tmp_path / "rows.csv", net, "n", [])
    assert isinstance(rows, Table) and rows.index == [7, 8] and rows.index_name == "n"
    assert rows.columns == ("age", "income", "debt") and np.isnan(rows.values[[0, 1], [2, 1]]).all()
    (tmp_path / "ragged.csv").write_text("age,income,debt\n1,2,3\n1,2\n")
    for args, says in (([tmp_path / "ragged.csv"], "line 3 has 2 fields, the header 3"),
                       (["rows.csv", "--index-col", "nope"], "no column 'nope'")):
        out = run(folder, "model.skops", *args)
        assert out.exit_code == 4 and says in out.stderr, out.stderr


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_regressor_gets_the_analyses_that_mean_something(files, tmp_path):
    from sklearn.neural_network import MLPRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    folder, _, data = files
    X = data[["age", "income", "debt"]]
    reg = make_pipeline(StandardScaler(), MLPRegressor(hidden_layer_sizes=(4,), max_iter=200,
                                                       random_state=0)).fit(X, X.income)
    sio.dump(reg, tmp_path / "reg.skops")
    X.to_csv(tmp_path / "rows.csv", index=False)
    out = run(tmp_path, "reg.skops", "rows.csv", "--report", "r.html")
    assert out.exit_code == 0, out.output
    assert "the model is a regressor, so no counterfactual by default" in out.output
    text = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "Prediction: <strong>" in text and "Counterfactual" not in text
    out = run(tmp_path, "reg.skops", "rows.csv", "--analysis", "counterfactual norm=1")
    assert out.exit_code == 4 and "give threshold=T" in out.output
    assert len(out.output.strip().splitlines()) == 1
    t = float(np.median(reg.predict(X)))
    out = run(tmp_path, "reg.skops", "rows.csv", "--analysis", f"counterfactual norm=1 threshold={t}",
              "--table", "t.csv")
    assert out.exit_code == 0, out.output
    table = pd.read_csv(tmp_path / "t.csv")
    assert table["counterfactual.found"].all()
    assert set(table["counterfactual.class"]) <= {f"prediction < {t:g}", f"prediction > {t:g}"}
