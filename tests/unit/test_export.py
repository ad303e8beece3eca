"""Exports round-trip: JSON, CSV, Parquet (pandas) and GraphML (networkx)."""
from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from reference import random_net

from polytrav import Box, ConfigError, analyze, traverse
from polytrav.export import polytope_records, write_graph, write_records, write_report
from polytrav.plugins.region_stats import RegionStats

NET = random_net(1, 2, [6, 5], n_out=2)
REGION = Box([-1, -1], [1, 1])


def test_polytope_records_in_every_format(tmp_path):
    polys = list(traverse(NET, REGION))
    rows = polytope_records(polys, local_model=True)
    assert [r["index"] for r in rows] == [p.index for p in polys]
    W, c = polys[3].local_model
    assert np.allclose(json.loads(rows[3]["W"]), W) and np.allclose(json.loads(rows[3]["c"]), c)
    write_records(rows, tmp_path / "p.json")
    write_records(rows, tmp_path / "p.csv")
    assert json.loads((tmp_path / "p.json").read_text()) == rows
    back = list(csv.DictReader(open(tmp_path / "p.csv")))
    assert [float(r["x0"]) for r in back] == pytest.approx([r["x0"] for r in rows])
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    write_records(rows, tmp_path / "p.parquet")
    frame = pd.read_parquet(tmp_path / "p.parquet")
    assert list(frame["code"]) == [r["code"] for r in rows]
    with pytest.raises(ConfigError, match="unknown export format '.xlsx'"):
        write_records(rows, tmp_path / "p.xlsx")


def test_report_and_graph(tmp_path):
    stats = RegionStats()
    report = analyze(NET, REGION, ["output_range", stats])
    write_report(report, tmp_path / "r.json")
    write_report(report, tmp_path / "r.csv")
    assert json.loads((tmp_path / "r.json").read_text())["results"][0]["analysis"] == "output_range"
    rows = list(csv.DictReader(open(tmp_path / "r.csv")))
    assert [r["analysis"] for r in rows] == ["output_range", "region_stats"]
    nx = pytest.importorskip("networkx")
    write_graph(stats.graph(), tmp_path / "g.graphml")
    g = nx.read_graphml(tmp_path / "g.graphml")
    assert g.number_of_nodes() == report.stats["polytopes"]
    assert g.number_of_edges() >= g.number_of_nodes() - 1  # connected (one-flip and discovery)
