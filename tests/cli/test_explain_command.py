"""``polytrav explain MODEL DATA.csv``: a scikit-learn pipeline saved with skops (or a
pickle with --unsafe-pickle only), the rows of a CSV file, the report and the table;
bad input as one line and exit code 4."""
from __future__ import annotations

import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("sklearn")
sio = pytest.importorskip("skops.io")
pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")

from polytrav import Network, explain


def polytrav(*args, cwd=None):
    env = {**os.environ, "POLYTRAV_DEBUG": "0"}
    return subprocess.run([sys.executable, "-c", "from polytrav.interface.cli import main; main()",
                           *map(str, args)], capture_output=True, text=True, timeout=300,
                          env=env, cwd=cwd, check=False)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A fitted pipeline (scaler + ReLU MLP) as .skops and .pkl, and its data as CSV with an
    id column and a label column."""
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
    return folder, pipe, data.head(8)


def test_the_report_and_table_match_explain(files):
    folder, pipe, data = files
    out = polytrav("explain", "model.skops", "rows.csv", "--index-col", "id", "--drop", "label",
                   "--report", "r.html", "--table", "t.csv", cwd=folder)
    assert out.returncode == 0, out.stderr
    assert "explained 8 rows: 8 proven" in out.stdout
    table = pd.read_csv(folder / "t.csv", index_col="id")
    want = explain(Network.from_sklearn(pipe), data.set_index("id").drop(columns="label"),
                   [("counterfactual", {"norm": 1}), "local_model"]).to_pandas()
    assert table.index.tolist() == want.index.tolist()
    assert np.allclose(table["counterfactual.distance"], want["counterfactual.distance"])
    text = (folder / "r.html").read_text()
    assert "scikit-learn Pipeline, skops file &#39;model.skops&#39;" in text
    assert 'id="distance-histogram"' in text and "Row c0" in text


def test_analyses_as_explain_and_analyze_spell_them(files):
    folder, _, _ = files
    out = polytrav("explain", "model.skops", "rows.csv", "--drop", "id,label", "--report", "r.md",
                   "--analysis", 'counterfactual norm=1 immutable=["age"] label="cf"', cwd=folder)
    assert out.returncode == 0, out.stderr
    assert "* age: ✓ never changed" in (folder / "r.md").read_text()
    out = polytrav("explain", "model.skops", "rows.csv", "--drop", "id", "--drop", "label",
                   "--analyses", '["local_model"]', "--table", "t.parquet", "--domain", "0:100",
                   cwd=folder)
    assert out.returncode == 0, out.stderr
    table = pd.read_parquet(folder / "t.parquet")
    assert "local_model.output" in table and "counterfactual.distance" not in table


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
])
def test_bad_input_is_one_line(files, args, message):
    folder, _, _ = files
    (folder / "model.csv").write_text("a\n1\n")
    out = polytrav("explain", *args, cwd=folder)
    assert out.returncode == 4, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("polytrav: error: ") and message in lines[0], \
        out.stderr


def test_a_pickle_loads_only_when_asked(files):
    folder, _, _ = files
    out = polytrav("explain", "model.pkl", "rows.csv", "--drop", "id,label", "--unsafe-pickle",
                   "--analyses", '["local_model"]', cwd=folder)
    assert out.returncode == 0, out.stderr
    assert "--unsafe-pickle" in polytrav("explain", "--help").stdout


def test_untrusted_skops_types_are_named(files, tmp_path):
    import textwrap

    from sklearn.preprocessing import FunctionTransformer

    sio.dump(FunctionTransformer(textwrap.dedent), tmp_path / "f.skops")  # a function by name
    out = polytrav("explain", tmp_path / "f.skops", files[0] / "rows.csv")
    assert out.returncode == 4
    assert "holds types skops does not trust by default" in out.stderr
    assert "['textwrap.dedent']" in out.stderr and "pass --trust TYPE for each" in out.stderr
