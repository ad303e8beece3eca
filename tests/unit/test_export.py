"""Exports round-trip: JSON, CSV, Parquet (pandas) and GraphML (networkx), as docs/exports.md says."""
from __future__ import annotations

import csv
import importlib.util
import itertools
import json
import re
from pathlib import Path

import numpy as np
import pytest
from reference import random_net

from polytrav import Box, ConfigError, analyze, traverse
from polytrav.interface.export import (EXPORT_FORMATS, check_export_path, code_string, export,
                             one_flip_pairs, parse_code, polytope_records, report_records,
                             write_graph, write_records, write_report)
from polytrav.plugins.region_stats import RegionStats

NET = random_net(1, 2, [6, 5], n_out=2)
REGION = Box([-1, -1], [1, 1])
COLUMNS = ["index", "parent", "code", "radius", "x0", "x1"]
DOCS = Path(__file__).resolve().parents[2] / "docs" / "exports.md"


@pytest.fixture(scope="module")
def run():
    traversal = traverse(NET, REGION, strategy="hierarchical")  # its discovery tree
    polytopes = list(traversal)
    assert traversal.complete and len(polytopes) > 20
    return traversal, polytopes


def _brute_force_one_flip(polytopes) -> set[tuple[int, int]]:
    flat = {p.index: np.concatenate(p.code) for p in polytopes}
    return {(a, b) for a, b in itertools.combinations(sorted(flat), 2)
            if int(np.sum(flat[a] != flat[b])) == 1}


def _codes_ok(codes, polytopes):
    assert list(codes) == [code_string(p.code) for p in polytopes]
    for text, p in zip(codes, polytopes):
        assert [len(layer) for layer in text.split("|")] == [6, 5]
        assert all(np.array_equal(a, b) for a, b in zip(parse_code(text), p.code))


def test_codes_keep_the_layer_separator():
    code = (np.array([False, True, True]), np.array([True, False]))
    assert code_string(code) == "011|10"
    assert [c.tolist() for c in parse_code("011|10")] == [c.tolist() for c in code]
    assert one_flip_pairs([(5, "011|10"), (2, "011|11"), (7, "111|11"), (1, "000|00")]) == [
        (2, 5), (2, 7)]


def test_csv_schema_and_round_trip(run, tmp_path):
    pd = pytest.importorskip("pandas")
    traversal, polytopes = run
    path = export(tmp_path / "p.csv", polytopes=polytopes)
    assert path == tmp_path / "p.csv"
    header = path.read_text().splitlines()[0]
    assert header == ",".join(COLUMNS)
    table = pd.read_csv(path, dtype={"code": str, "parent": "Int64"})
    assert list(table.columns) == COLUMNS and len(table) == traversal.stats.polytopes
    assert str(table["index"].dtype) == "int64" and str(table["parent"].dtype) == "Int64"
    assert table["radius"].dtype == float and table["x0"].dtype == float
    assert table["parent"].isna().tolist() == [p.parent is None for p in polytopes]
    assert table["parent"].dropna().tolist() == [p.parent for p in polytopes if p.parent is not None]
    _codes_ok(table["code"], polytopes)
    assert np.array_equal(table[["x0", "x1"]].to_numpy(),
                          np.array([p.interior_point for p in polytopes]))  # bit for bit
    assert table["radius"].tolist() == [p.radius for p in polytopes]
    root = next(csv.DictReader(open(path)))
    assert root["parent"] == ""  # empty for the root, not "None" or "nan"


def test_parquet_schema_and_round_trip(run, tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    traversal, polytopes = run
    table = pd.read_parquet(export(tmp_path / "p.parquet", polytopes=polytopes))
    assert list(table.columns) == COLUMNS and len(table) == traversal.stats.polytopes
    assert {c: str(t) for c, t in table.dtypes.items()} == {
        "index": "int64", "parent": "Int64", "code": "string", "radius": "float64",
        "x0": "float64", "x1": "float64"}
    assert table["parent"].isna().sum() == 1 and table["parent"].isna().iloc[0]
    assert table["parent"].iloc[1:].tolist() == [p.parent for p in polytopes[1:]]
    _codes_ok(table["code"], polytopes)


def test_json_schema_report_and_no_nan(run, tmp_path):
    traversal, polytopes = run
    stats = {"polytopes": len(polytopes), "status": traversal.status.value,
             "per_level": traversal.stats.pieces, "odd": [np.nan, np.inf, -np.inf, np.float64(2)]}
    report = analyze(NET, REGION, ["output_range", "region_stats"])
    path = export(tmp_path / "p.json", polytopes=polytopes, report=report, stats=stats)
    text = path.read_text()
    assert "NaN" not in text and "Infinity" not in text
    doc = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    assert list(doc) == ["report", "stats", "polytopes"]
    assert doc["stats"]["odd"] == [None, None, None, 2.0]
    assert doc["report"]["results"][0]["analysis"] == "output_range"
    assert doc["report"]["status"] == "complete"
    assert doc["polytopes"] == polytope_records(polytopes)
    assert [list(r) for r in doc["polytopes"]] == [COLUMNS] * len(polytopes)
    assert doc["polytopes"][0]["parent"] is None
    _codes_ok([r["code"] for r in doc["polytopes"]], polytopes)
    bare = json.loads(export(tmp_path / "bare.json", polytopes=polytopes).read_text())
    assert bare["report"] is None and bare["stats"] is None


def test_local_model_columns(run, tmp_path):
    _, polytopes = run
    W, c = polytopes[3].local_model
    rows = polytope_records(polytopes, local_model=True)
    assert np.allclose(json.loads(rows[3]["W"]), W) and np.allclose(json.loads(rows[3]["c"]), c)
    doc = json.loads(export(tmp_path / "m.json", polytopes=polytopes, local_model=True).read_text())
    assert np.allclose(doc["polytopes"][3]["W"], W)  # nested lists in JSON
    back = list(csv.DictReader(open(export(tmp_path / "m.csv", polytopes=polytopes,
                                           local_model=True))))
    assert list(back[0])[-2:] == ["W", "c"] and np.allclose(json.loads(back[3]["c"]), c)


def test_graphml_is_the_one_flip_graph(run, tmp_path):
    nx = pytest.importorskip("networkx")
    traversal, polytopes = run
    g = nx.read_graphml(export(tmp_path / "p.graphml", polytopes=polytopes), node_type=int)
    assert g.number_of_nodes() == traversal.stats.polytopes and not g.is_directed()
    edges = {tuple(sorted(e)) for e in g.edges()}
    assert edges == _brute_force_one_flip(polytopes)
    by_index = {p.index: p for p in polytopes}
    for node, data in g.nodes(data=True):
        p = by_index[node]
        assert set(data) == {"index", "parent", "code", "radius"}
        assert data["index"] == node and isinstance(data["parent"], int)
        assert data["parent"] == (-1 if p.parent is None else p.parent)
        assert data["code"] == code_string(p.code) and "|" in data["code"]
        assert data["radius"] == p.radius
    for a, b, data in g.edges(data=True):
        assert set(data) == {"discovery"} and isinstance(data["discovery"], bool)
        assert data["discovery"] == (by_index[b].parent == a or by_index[a].parent == b)
    assert any(d for *_, d in g.edges(data="discovery"))


def test_region_stats_graph_is_the_same_graph(run, tmp_path):
    nx = pytest.importorskip("networkx")
    _, polytopes = run
    stats = RegionStats()
    result = analyze(NET, REGION, stats)[0]
    g = stats.graph()
    exported = nx.read_graphml(export(tmp_path / "p.graphml", polytopes=polytopes), node_type=int)
    code = nx.get_node_attributes
    assert sorted(code(g, "code").values()) == sorted(code(exported, "code").values())
    as_codes = lambda graph: {frozenset((graph.nodes[a]["code"], graph.nodes[b]["code"]))  # noqa: E731
                              for a, b in graph.edges()}
    assert as_codes(g) == as_codes(exported)
    assert sorted(tuple(sorted(e)) for e in g.edges()) == result.details["edges"]
    write_graph(g, tmp_path / "stats.graphml")  # still GraphML-safe
    back = nx.read_graphml(tmp_path / "stats.graphml", node_type=int)
    assert code(back, "code") == code(g, "code")


def test_bad_paths_fail_before_any_work(tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match=r"unknown format '\.xlsx' of 'p\.xlsx'; the suffix "
                                          r"must be one of \.json, \.csv, \.parquet, \.graphml"):
        check_export_path(tmp_path / "p.xlsx")
    with pytest.raises(ConfigError, match=r"unknown format '\(no suffix\)'"):
        check_export_path(tmp_path / "polytopes")
    with pytest.raises(ConfigError, match="no folder"):
        check_export_path(tmp_path / "missing" / "p.csv")
    assert check_export_path(str(tmp_path / "P.CSV")) == tmp_path / "P.CSV"
    with pytest.raises(ConfigError, match="keep_polytopes=True"):
        export(tmp_path / "p.csv", polytopes=None)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("pyarrow", "networkx") else real(name, *a))
    with pytest.raises(ConfigError, match=r'Parquet needs pandas and pyarrow .*pip install "polytrav\[export\]"'):
        check_export_path(tmp_path / "p.parquet")
    with pytest.raises(ConfigError, match=r'GraphML needs networkx .*pip install "polytrav\[graph\]"'):
        export(tmp_path / "p.graphml", polytopes=[])
    assert set(EXPORT_FORMATS) == {".json", ".csv", ".parquet", ".graphml"}


def test_no_polytopes_still_gives_the_columns(tmp_path):
    export(tmp_path / "e.csv", polytopes=[])
    assert (tmp_path / "e.csv").read_text().strip() == "index,parent,code,radius"
    assert json.loads(export(tmp_path / "e.json", polytopes=iter([])).read_text())["polytopes"] == []


def test_report_table_is_one_function_and_one_set_of_columns(tmp_path):
    report = analyze(NET, REGION, ["output_range", "region_stats"])
    write_report(report, tmp_path / "r.json")
    write_report(report, tmp_path / "r.csv")
    write_report(report, tmp_path / "r.txt", format="csv")
    assert json.loads((tmp_path / "r.json").read_text())["results"][0]["analysis"] == "output_range"
    rows = list(csv.DictReader(open(tmp_path / "r.csv")))
    assert list(rows[0]) == ["analysis", "verdict", "value", "exact", "witness", "n_polytopes",
                             "n_solves", "status", "failures", "solves"]
    assert [r["analysis"] for r in rows] == ["output_range", "region_stats"]
    assert rows[0]["verdict"] == "" and rows[0]["status"] == "complete"
    assert json.loads(rows[0]["value"]) == pytest.approx(report[0].value)
    assert (tmp_path / "r.txt").read_text() == (tmp_path / "r.csv").read_text()
    assert [r["analysis"] for r in report_records(report)] == [r["analysis"] for r in rows]
    with pytest.raises(ConfigError, match="not 'r.graphml'"):
        write_report(report, tmp_path / "r.graphml")
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    write_report(report, tmp_path / "r.parquet")
    table = pd.read_parquet(tmp_path / "r.parquet")
    assert list(table.columns) == list(rows[0])
    assert str(table["n_polytopes"].dtype) == "int64" and table["exact"].dtype == bool
    assert table["verdict"].isna().all()


def test_write_records_keeps_integers_nullable(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    rows = [{"k": None, "flag": True, "name": "a"}, {"k": 3, "flag": None, "name": None}]
    write_records(rows, tmp_path / "r.parquet")
    table = pd.read_parquet(tmp_path / "r.parquet")
    assert str(table["k"].dtype) == "Int64" and str(table["flag"].dtype) == "boolean"
    assert table["k"].isna().tolist() == [True, False] and table["k"].iloc[1] == 3
    with pytest.raises(ConfigError, match="unknown format '.xlsx'"):
        write_records(rows, tmp_path / "r.xlsx")


def test_the_exports_page_examples_run(monkeypatch, tmp_path):
    """The python blocks of docs/exports.md run in order, in one namespace and folder."""
    pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    pytest.importorskip("networkx")
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"^```python\n(.*?)^```", DOCS.read_text(encoding="utf-8"), re.M | re.S)
    assert len(blocks) >= 5
    namespace: dict = {"__name__": "docs_exports"}
    for k, block in enumerate(blocks):
        exec(compile(block, f"docs/exports.md (python block {k + 1})", "exec"), namespace)
    assert {p.name for p in tmp_path.iterdir()} >= {
        "polytopes.json", "polytopes.csv", "polytopes.parquet", "polytopes.graphml", "report.csv"}
    table, g = namespace["table"], namespace["g"]
    assert len(table) == g.number_of_nodes() == len(namespace["polytopes"])


def test_every_documented_column_is_written(run, tmp_path):
    """The page's tables name the columns, keys and attributes the code writes."""
    nx = pytest.importorskip("networkx")
    _, polytopes = run
    first_cells = [line.split("|")[1] for line in DOCS.read_text(encoding="utf-8").splitlines()
                   if line.startswith("| `")]
    documented = {name for cell in first_cells for name in re.findall(r"`([^`]+)`", cell)}
    written = set(polytope_records(polytopes[:1], local_model=True)[0]) - {"x1"}
    written |= set(report_records(analyze(NET, REGION, "output_range"))[0])
    written |= {"report", "stats", "polytopes", "x{d-1}"}
    g = nx.read_graphml(export(tmp_path / "p.graphml", polytopes=polytopes))
    written |= {k for _, d in g.nodes(data=True) for k in d}
    documented -= {".json", ".csv", ".parquet", ".graphml"}  # the formats table
    assert documented == written
