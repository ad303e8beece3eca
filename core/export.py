"""Exports: reports and per-polytope records to JSON, CSV and Parquet; graphs to GraphML.

The format follows the file's suffix: ``.json``, ``.csv``, ``.parquet`` (needs pandas and
pyarrow: ``pip install "polytrav[export]"``) and, for graphs, ``.graphml`` (networkx).
Records are flat: one row per polytope (``index``, ``parent``, ``code``, ``radius``, the
interior point as ``x0 .. x{d-1}``; with ``local_model=True`` also ``W`` and ``c`` as JSON),
one row per analysis for a report. Everything is in the network's input units, which are the
model file's own (normalisations in the file are folded into the network, see
:class:`~polytrav.Network`).

Examples
--------
>>> import tempfile, pathlib, json
>>> from polytrav import Network, Box, traverse
>>> from polytrav.export import polytope_records, write_records
>>> net = Network.from_arrays([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
>>> rows = polytope_records(traverse(net, Box([-1, -1], [1, 1])))
>>> len(rows), sorted(rows[0])
(4, ['code', 'index', 'parent', 'radius', 'x0', 'x1'])
>>> path = pathlib.Path(tempfile.mkdtemp()) / "polytopes.json"
>>> write_records(rows, path)
>>> len(json.loads(path.read_text()))
4
"""
from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Iterable

import numpy as np

from polytrav.errors import ConfigError

__all__ = ["polytope_records", "report_records", "write_records", "write_report", "write_graph"]


def _code(code) -> str:
    return "|".join("".join("1" if b else "0" for b in c) for c in code)


def polytope_records(polytopes: Iterable, *, local_model: bool = False) -> list[dict]:
    """One flat dict per polytope (consumes an iterator such as a traversal)."""
    rows = []
    for p in polytopes:
        row = {"index": p.index, "parent": p.parent, "code": _code(p.code),
               "radius": float(p.radius)}
        row.update({f"x{i}": float(v) for i, v in enumerate(p.interior_point)})
        if local_model:
            W, c = p.local_model
            row["W"], row["c"] = json.dumps(W.tolist()), json.dumps(c.tolist())
        rows.append(row)
    return rows


def report_records(report) -> list[dict]:
    """One flat dict per analysis of a :class:`~polytrav.Report` (values as JSON text)."""
    out = []
    for res in report.results:
        d = res.to_dict()
        out.append({"analysis": d["analysis"], "verdict": d["verdict"],
                    "value": json.dumps(d["value"]), "exact": d["exact"],
                    "witness": json.dumps(d["witness"]), "n_polytopes": d["n_polytopes"],
                    "n_solves": d["n_solves"], "status": report.status.value,
                    "failures": len(d["failures"])})
    return out


def write_records(rows: list[dict], path: str | Path) -> None:
    """Write flat records as JSON (a list), CSV or Parquet, by the suffix of ``path``."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".json":
        path.write_text(json.dumps(rows, indent=1))
    elif suffix == ".csv":
        fields = list(dict.fromkeys(k for row in rows for k in row))
        with open(path, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fields)
            writer.writeheader()
            writer.writerows(rows)
    elif suffix == ".parquet":
        try:
            import pandas as pd
        except ImportError as exc:
            raise ConfigError('Parquet needs pandas and pyarrow: pip install "polytrav[export]"') from exc
        try:
            pd.DataFrame(rows).to_parquet(path, index=False)
        except ImportError as exc:
            raise ConfigError('Parquet needs pyarrow: pip install "polytrav[export]"') from exc
    else:
        raise ConfigError(f"unknown export format {suffix!r} for {str(path)!r}; use .json, .csv "
                          "or .parquet")


def write_report(report, path: str | Path) -> None:
    """A report: the full JSON (``.json``) or one row per analysis (``.csv``, ``.parquet``)."""
    path = Path(path)
    if path.suffix.lower() == ".json":
        path.write_text(json.dumps(report.to_dict(), indent=1))
    else:
        write_records(report_records(report), path)


def write_graph(graph, path: str | Path) -> None:
    """A networkx graph (e.g. ``RegionStats.graph()``) to GraphML; attributes made GraphML-safe."""
    try:
        import networkx as nx
    except ImportError as exc:
        raise ConfigError('graphs need networkx: pip install "polytrav[graph]"') from exc
    g = graph.copy()
    for _, data in list(g.nodes(data=True)) + [(None, d) for *_, d in g.edges(data=True)]:
        for key, value in list(data.items()):
            if value is None:
                data[key] = ""
            elif isinstance(value, (np.generic,)):
                data[key] = value.item()
            elif isinstance(value, (list, tuple, np.ndarray)):
                data[key] = json.dumps(np.asarray(value).tolist())
    nx.write_graphml(g, str(path))
