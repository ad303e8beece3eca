"""Exports: the polytopes a run visited to JSON, CSV, Parquet or GraphML; reports to tables.

:func:`export` is the one entry point (the CLI's ``--export FILE`` and a job file's
``[output] export = ...`` call it); the format follows the file's suffix:

``.json``
    one object ``{"report": ..., "stats": ..., "polytopes": [...]}``;
``.csv``, ``.parquet``
    the polytope table, one row per visited polytope: ``index``, ``parent``, ``code``,
    ``radius`` and the interior point as ``x0 .. x{d-1}`` (Parquet needs pandas and pyarrow:
    ``pip install "polytrav[export]"``);
``.graphml``
    the one-flip adjacency graph of the visited polytopes (networkx:
    ``pip install "polytrav[graph]"``).

A code is written the same way everywhere (:func:`code_string`): one ``0``/``1`` per neuron,
layers separated by ``|``, e.g. ``"0110|101"``. Two polytopes are adjacent when their codes
differ in exactly one neuron (:func:`one_flip_pairs`); :meth:`RegionStats.graph
<polytrav.plugins.region_stats.RegionStats.graph>` builds its graph with the same
:func:`adjacency_graph`. Everything is in the network's input units (normalisations in the
model file are folded into the network, see :class:`~polytrav.Network`). JSON never holds
``NaN`` or ``Infinity``: non-finite numbers are written as ``null``. The schemas are on the
documentation page "Exports" (``docs/exports.md``).

:func:`report_records` / :func:`write_report` give the per-analysis table of a
:class:`~polytrav.Report` (one row per analysis), the table of a job file's
``[output] csv = ...``.

Examples
--------
>>> import tempfile, pathlib, json
>>> from polytrav import Network, Box, traverse
>>> from polytrav.interface.export import export, polytope_records
>>> net = Network.from_arrays([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
>>> polytopes = list(traverse(net, Box([-1, -1], [1, 1])))
>>> rows = polytope_records(polytopes)
>>> len(rows), list(rows[0])
(4, ['index', 'parent', 'code', 'radius', 'x0', 'x1'])
>>> rows[0]["parent"] is None, sorted(r["code"] for r in rows)
(True, ['00', '01', '10', '11'])
>>> path = export(pathlib.Path(tempfile.mkdtemp()) / "polytopes.json", polytopes=polytopes)
>>> doc = json.loads(path.read_text())
>>> sorted(doc), len(doc["polytopes"])
(['polytopes', 'report', 'stats'], 4)
>>> export(path.with_suffix(".xlsx"), polytopes=polytopes)
Traceback (most recent call last):
...
polytrav.vocabulary.errors.ConfigError: export: unknown format '.xlsx' of 'polytopes.xlsx'; the suffix must be one of .json, .csv, .parquet, .graphml
"""
from __future__ import annotations

import csv
import importlib.util
import json
import math
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from polytrav.model.adjacency import adjacency_graph, one_flip_pairs
from polytrav.vocabulary.text import code_string, parse_code
from polytrav.vocabulary.errors import ConfigError

__all__ = ["EXPORT_FORMATS", "export", "check_export_path", "check_writable", "code_string", "parse_code",
           "one_flip_pairs", "adjacency_graph", "polytope_graph", "polytope_records",
           "report_records", "write_records", "write_report", "write_graph"]

#: The suffixes :func:`export` writes, and what each holds.
EXPORT_FORMATS = {
    ".json": "report, stats and polytope records as one JSON object",
    ".csv": "the polytope table",
    ".parquet": "the polytope table",
    ".graphml": "the one-flip adjacency graph of the polytopes",
}

_NEEDS = {".parquet": (("pandas", "pyarrow"), "Parquet", "export"),
          ".graphml": (("networkx",), "GraphML", "graph")}

#: Parquet column types of the polytope table (the ``x`` columns are float64 too).
POLYTOPE_DTYPES = {"index": "int64", "parent": "Int64", "code": "string", "radius": "float64",
                   "W": "string", "c": "string"}
#: Parquet column types of the per-analysis report table, in its column order.
REPORT_DTYPES = {"analysis": "string", "verdict": "string", "value": "string", "exact": "bool",
                 "witness": "string", "n_polytopes": "int64", "n_solves": "int64",
                 "status": "string", "failures": "int64", "solves": "string"}


# ------------------------------------------------------------------ codes and adjacency


def polytope_graph(polytopes: Iterable):
    """:func:`adjacency_graph` of visited :class:`~polytrav.Polytope` (attribute ``radius``)."""
    return adjacency_graph((p.index, p.parent, p.code, {"radius": float(p.radius)})
                           for p in polytopes)


# ------------------------------------------------------------------ records


def _json_safe(value: Any) -> Any:
    """JSON-ready: numpy and enums unwrapped (as in results), non-finite floats as None."""
    from polytrav.vocabulary.results import jsonable

    value = jsonable(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def _dumps(value: Any, indent: int | None = None) -> str:
    return json.dumps(_json_safe(value), indent=indent, allow_nan=False)


def polytope_records(polytopes: Iterable, *, local_model: bool = False) -> list[dict]:
    """One flat dict per polytope (consumes an iterator such as a traversal).

    Keys ``index``, ``parent`` (None for the first), ``code`` (:func:`code_string`),
    ``radius`` and ``x0 .. x{d-1}`` (the interior point); with ``local_model=True`` also
    ``W`` and ``c`` as JSON text (``output = W @ x + c`` on the polytope).
    """
    rows = []
    for p in polytopes:
        row = {"index": int(p.index), "parent": None if p.parent is None else int(p.parent),
               "code": code_string(p.code), "radius": float(p.radius)}
        row.update({f"x{i}": float(v) for i, v in enumerate(p.interior_point)})
        if local_model:
            W, c = p.local_model
            row["W"], row["c"] = _dumps(W), _dumps(c)
        rows.append(row)
    return rows


def report_records(report) -> list[dict]:
    """One flat dict per analysis of a :class:`~polytrav.Report`.

    Keys ``analysis``, ``verdict`` (None for measurements), ``value`` and ``witness`` (JSON
    text), ``exact``, ``n_polytopes``, ``n_solves``, ``status`` (the run's), ``failures``
    (how many undecided subproblems) and ``solves`` (the run's solves per backend, JSON text:
    ``Report.stats["solves"]``).
    """
    out = []
    for res in report.results:
        d = res.to_dict()
        out.append({"analysis": d["analysis"], "verdict": d["verdict"],
                    "value": _dumps(d["value"]), "exact": bool(d["exact"]),
                    "witness": _dumps(d["witness"]), "n_polytopes": int(d["n_polytopes"]),
                    "n_solves": int(d["n_solves"]), "status": report.status.value,
                    "failures": len(d["failures"]),
                    "solves": _dumps(report.stats.get("solves", {}))})
    return out


# ------------------------------------------------------------------ writers


def _format(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in EXPORT_FORMATS:
        raise ConfigError(f"export: unknown format {suffix or '(no suffix)'!r} of {path.name!r}; "
                          f"the suffix must be one of {', '.join(EXPORT_FORMATS)}")
    return suffix


def _require(suffix: str) -> None:
    if suffix not in _NEEDS:
        return
    modules, what, extra = _NEEDS[suffix]
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise ConfigError(f"export: {what} needs {' and '.join(modules)} ({', '.join(missing)} "
                          f'not installed): pip install "polytrav[{extra}]"')


def check_export_path(path: str | Path) -> Path:
    """Check, before any work, that :func:`export` can write ``path``; returns it as a Path.

    A :class:`~polytrav.ConfigError` when the suffix is not one of :data:`EXPORT_FORMATS`
    (the message names it and the supported ones), when the format's optional packages are
    not installed (``polytrav[export]`` for Parquet, ``polytrav[graph]`` for GraphML), or
    when the file cannot be written (:func:`check_writable`).
    """
    path = Path(path)
    suffix = _format(path)
    _require(suffix)
    check_writable(path, "export")
    return path


def check_writable(path: str | Path, what: str) -> None:
    """Check, before any work, that a file can be written at ``path`` (``what`` names it in
    the message: ``"export"``, ``"--counterexample"``, ``"job file 'j.toml': output.csv"``).

    An existing file is opened for appending (nothing written); a new one is created and
    removed again. A :class:`~polytrav.ConfigError` names the path, why it cannot be written
    and what to do: a missing folder, a folder given as the file, a folder that takes no
    new files (``/proc``), no permission, a file that refuses writes (``/proc/version``).

    >>> check_writable("/proc/version", "export")
    Traceback (most recent call last):
    ...
    polytrav.vocabulary.errors.ConfigError: export: '/proc/version' cannot be written (it refuses writes: Invalid argument); give a path in a folder you can write to
    """
    import errno
    import os

    path = Path(path)
    name, fix = str(path), "give a path in a folder you can write to"
    if path.is_dir():
        raise ConfigError(f"{what}: {name!r} is a folder; give a file name in it, e.g. "
                          f"{str(path / ('out' + (path.suffix or '.csv')))!r}")
    if not path.parent.is_dir():
        raise ConfigError(f"{what}: no folder {str(path.parent)!r} to write {path.name!r} in; "
                          f"create it first, or {fix}")
    existed = path.exists()
    try:
        with open(path, "ab" if existed else "xb"):
            pass
    except OSError as exc:
        why = {errno.EACCES: "permission denied", errno.EPERM: "permission denied",
               errno.EROFS: "the file system is read-only",
               errno.ENOENT: f"the folder {str(path.parent)!r} takes no new files"}.get(
            exc.errno, f"it refuses writes: {exc.strerror or exc}")
        raise ConfigError(f"{what}: {name!r} cannot be written ({why}); {fix}") from None
    if not existed:
        os.remove(path)


def export(path: str | Path, *, polytopes: Iterable | None, report=None,
           stats: dict | None = None, local_model: bool = False) -> Path:
    """Write the polytopes a run visited, in the format of ``path``'s suffix; returns the path.

    Parameters
    ----------
    path : str or Path
        ``.json``, ``.csv``, ``.parquet`` or ``.graphml`` (see :func:`check_export_path`).
    polytopes : iterable of Polytope
        The visited polytopes, e.g. ``list(traverse(...))`` or ``report.polytopes`` of
        ``analyze(..., keep_polytopes=True)``.
    report : Report, optional
        Written (``report.to_dict()``) into the JSON export; the other formats ignore it.
    stats : dict, optional
        A run summary for the JSON export (the ``regions`` command: ``polytopes``,
        ``status``, ``per_level``, ``lps``, ``seconds``); the other formats ignore it.
    local_model : bool
        Also write each polytope's local model ``W``, ``c`` (table columns as JSON text,
        nested lists in JSON; GraphML ignores it).
    """
    path = check_export_path(path)
    suffix = path.suffix.lower()
    if polytopes is None:
        raise ConfigError("export: no polytopes to write (the run did not keep them: "
                          "analyze(..., keep_polytopes=True))")
    polytopes = list(polytopes)
    if suffix == ".graphml":
        write_graph(polytope_graph(polytopes), path)
        return path
    rows = polytope_records(polytopes, local_model=local_model)
    if suffix == ".json":
        if local_model:
            for row in rows:
                row["W"], row["c"] = json.loads(row["W"]), json.loads(row["c"])
        doc = {"report": None if report is None else report.to_dict(), "stats": stats,
               "polytopes": rows}
        path.write_text(_dumps(doc, indent=1) + "\n", encoding="utf-8")
        return path
    columns = ["index", "parent", "code", "radius"]
    columns += [k for k in (rows[0] if rows else {}) if k not in columns]
    dtypes = dict(POLYTOPE_DTYPES)
    dtypes.update({k: "float64" for k in columns if k.startswith("x")})
    _write_table(rows, path, suffix, columns, dtypes)
    return path


def _write_table(rows: list[dict], path: Path, suffix: str, columns: list[str],
                 dtypes: dict[str, str]) -> None:
    if suffix == ".csv":
        with open(path, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, columns)
            writer.writeheader()
            writer.writerows(rows)
        return
    _require(".parquet")
    import pandas as pd

    frame = pd.DataFrame({c: pd.Series([row.get(c) for row in rows],
                                       dtype=dtypes[c] if c in dtypes else _infer_dtype(rows, c))
                          for c in columns})
    frame.to_parquet(path, index=False)


def _infer_dtype(rows: list[dict], column: str) -> str | None:
    """Nullable integer / boolean columns stay integer / boolean (never float with NaN)."""
    values = [row.get(column) for row in rows if row.get(column) is not None]
    if not values:
        return None
    if all(isinstance(v, str) for v in values):
        return "string"
    if all(isinstance(v, (bool, np.bool_)) for v in values):
        return "boolean"
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
           for v in values):
        return "Int64"
    return None


def write_records(rows: list[dict], path: str | Path) -> None:
    """Write flat records as JSON (a list), CSV or Parquet, by the suffix of ``path``.

    In Parquet, integer and boolean columns are nullable ``Int64`` / ``boolean`` and text
    columns ``string`` (``None`` is null, never NaN).
    """
    path = Path(path)
    suffix = _format(path)
    if suffix == ".graphml":
        raise ConfigError(f"write_records: records go to .json, .csv or .parquet, not "
                          f"{path.name!r} (graphs: write_graph)")
    if suffix == ".json":
        path.write_text(_dumps(rows, indent=1) + "\n", encoding="utf-8")
        return
    columns = list(dict.fromkeys(k for row in rows for k in row))
    _write_table(rows, path, suffix, columns, {})


def write_report(report, path: str | Path, *, format: str | None = None) -> None:
    """A report: the full JSON (``.json``) or one row per analysis (``.csv``, ``.parquet``).

    ``format`` (``"json"``, ``"csv"`` or ``"parquet"``) overrides the suffix. The table is
    :func:`report_records`, always these columns in this order; it is also what a job file's
    ``[output] csv = ...`` writes (:func:`polytrav.interface.config.write_job_outputs`).
    """
    path = Path(path)
    suffix = _format(path) if format is None else "." + format.lower().lstrip(".")
    if suffix == ".json":
        path.write_text(_dumps(report.to_dict(), indent=1) + "\n", encoding="utf-8")
    elif suffix in (".csv", ".parquet"):
        _write_table(report_records(report), path, suffix, list(REPORT_DTYPES), REPORT_DTYPES)
    else:
        raise ConfigError(f"write_report: a report goes to .json, .csv or .parquet, not "
                          f"{path.name!r}" + ("" if format is None else f" (format {format!r})"))


def write_graph(graph, path: str | Path) -> None:
    """A networkx graph (e.g. ``RegionStats.graph()``) to GraphML; attributes made GraphML-safe.

    ``None`` becomes ``""``, numpy scalars Python ones, arrays and lists JSON text.
    """
    import networkx as nx  # the graph is one: networkx is installed

    g = graph.copy()
    for _, data in list(g.nodes(data=True)) + [(None, d) for *_, d in g.edges(data=True)]:
        for key, value in list(data.items()):
            if value is None:
                data[key] = ""
            elif isinstance(value, (np.generic,)):
                data[key] = value.item()
            elif isinstance(value, (list, tuple, np.ndarray)):
                data[key] = _dumps(np.asarray(value).tolist())
    nx.write_graphml(g, str(path))
