"""The result of :func:`polytrav.explain`: one :class:`RowResult` per dataset row.

:class:`Explanation` holds the rows in the dataset's order; :meth:`Explanation.to_pandas`
is the table (one row per input row, the DataFrame's index kept, one column per figure named
``<analysis>.<figure>`` plus ``<analysis>.error``, and the row's own ``row.<figure>``: its
predicted class and probability), :meth:`Explanation.to_parquet` writes it
(pandas and pyarrow: ``pip install "polytrav[export]"``). A run stopped by Ctrl-C
(``explain(..., on_interrupt="report")``) is :attr:`~Explanation.partial`: its table still has
a row per input row, those not explained marked so in ``row.error``.
"""
from __future__ import annotations

import importlib
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from polytrav.vocabulary.extras import require
from polytrav.vocabulary.results import AnalysisResult

__all__ = ["RowResult", "Explanation", "NOT_EXPLAINED"]

#: ``row.error`` of a row that a run stopped by Ctrl-C did not explain (its table row has
#: nothing else).
NOT_EXPLAINED = "not explained: the run was interrupted (Ctrl-C) before this row finished"


@dataclass
class RowResult:
    """What the analyses found on one row.

    ``position`` is the row's position in ``X`` and ``label`` its index label; ``figures``
    maps ``<analysis>.<figure>`` (and the row's own ``row.class``, ``row.probability``,
    ``row.prediction``) to a number, text or None; ``errors`` maps an analysis label
    (or ``"row"`` for the row itself) to the error's message; ``results`` holds each
    analysis's :class:`~polytrav.AnalysisResult`. Times in seconds: ``time`` the row's wall
    time in its worker, ``work_time`` the analyses' runs after their set-up (traversal and
    subproblems: :attr:`Report.time <polytrav.Report.time>`), so ``time - work_time`` is
    the row's fixed cost.
    """

    position: int
    label: Any
    figures: dict[str, Any] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    results: dict[str, AnalysisResult] = field(default_factory=dict, repr=False)
    time: float = 0.0
    work_time: float = 0.0

    @property
    def ok(self) -> bool:
        """Whether every analysis of the row ran without an error."""
        return not self.errors

    @property
    def proven(self) -> bool:
        """Whether every analysis of the row ran and its answer is exact (proven)."""
        return not self.errors and all(r.exact for r in self.results.values())

    @property
    def fixed_time(self) -> float:
        """The row's seconds outside its analyses' work (set-up, bookkeeping)."""
        return max(self.time - self.work_time, 0.0)


class Explanation:
    """The rows of :func:`polytrav.explain`, in the dataset's order.

    ``labels`` are the analyses' labels (column prefixes), ``index`` the dataset's index
    labels, ``wall_time`` the seconds of the whole call. What the rows were computed on, for
    a report: ``network`` (the :class:`~polytrav.Network`), ``domain`` (the data
    :class:`~polytrav.Box`), ``features`` (the column names), ``data`` (the rows' values,
    ``(n_rows, n_inputs)``, in :attr:`rows`' order), ``analyses`` (label -> ``(name,
    options)``) and ``source`` (how the model was loaded, free text). Iterate it for
    the :class:`RowResult` objects; ``len()`` is the number of rows explained.

    ``interrupted``: the run was stopped (Ctrl-C) before every row was explained; then
    :attr:`partial` is True and :attr:`missing` lists the rows not explained (``rows`` holds
    only those explained; ``index`` and ``data`` keep every input row).
    """

    def __init__(self, rows: list[RowResult], labels: list[str], index: list, *,
                 index_name=None, wall_time: float = 0.0, network=None, domain=None,
                 features: tuple[str, ...] = (), data=None, analyses: dict | None = None,
                 source: str | None = None, interrupted: bool = False):
        self.rows = sorted(rows, key=lambda r: r.position)
        self.labels = list(labels)
        self.index = list(index)
        self.index_name = index_name
        self.wall_time = wall_time
        self.network = network
        self.domain = domain
        self.features = tuple(features)
        self.data = None if data is None else np.asarray(data, dtype=float)
        self.analyses = dict(analyses or {})
        self.source = source
        self.interrupted = interrupted

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self):
        return iter(self.rows)

    def __getitem__(self, position: int) -> RowResult:
        return self.rows[position]

    def __repr__(self) -> str:
        bad = sum(not r.ok for r in self.rows)
        rows = f"{len(self.rows)} of {len(self.index)} rows (PARTIAL: interrupted)" \
            if self.partial else f"{len(self.rows)} rows"
        return (f"Explanation({rows}, analyses {self.labels}, {bad} with errors, "
                f"{self.wall_time:.3g} s)")

    @property
    def partial(self) -> bool:
        """Whether some input row was not explained (the run was interrupted)."""
        return self.interrupted or len(self.rows) < len(self.index)

    @property
    def missing_positions(self) -> list[int]:
        """The positions in ``X`` of the rows not explained, in X's order."""
        done = {r.position for r in self.rows}
        return [p for p in range(len(self.index)) if p not in done]

    @property
    def missing(self) -> list:
        """The index labels of the rows not explained (empty unless :attr:`partial`)."""
        return [self.index[p] for p in self.missing_positions]

    def _positions(self) -> list[int]:
        """The table's rows: every input row when partial, else the rows explained."""
        return list(range(len(self.index))) if self.partial else [r.position for r in self.rows]

    @property
    def errors(self) -> dict[Any, dict[str, str]]:
        """``{row label: {analysis label: message}}`` of the rows with errors."""
        return {r.label: dict(r.errors) for r in self.rows if r.errors}

    def columns(self) -> list[str]:
        """The table's columns: every figure seen, grouped by analysis in the given order,
        each group ending with ``<analysis>.error``; then the row's own group (``row.class``,
        ``row.probability`` or ``row.prediction``), ending with ``row.error``."""
        seen: dict[str, None] = {}
        for r in self.rows:
            seen.update(dict.fromkeys(r.figures))
        cols = []
        for label in (*self.labels, "row"):
            cols += [c for c in seen if c.startswith(label + ".")]
            cols.append(f"{label}.error")
        return cols

    def records(self) -> list[dict[str, Any]]:
        """One dict per row over :meth:`columns` (None where a row has no value); when
        :attr:`partial`, one per input row, those not explained with only ``row.error``
        (:data:`NOT_EXPLAINED`)."""
        cols = self.columns()
        by_position = {r.position: r for r in self.rows}
        out = []
        for position in self._positions():
            rec = dict.fromkeys(cols)
            r = by_position.get(position)
            if r is None:
                rec["row.error"] = NOT_EXPLAINED
            else:
                rec.update(r.figures)
                for label, message in r.errors.items():
                    rec[f"{label}.error"] = message
            out.append(rec)
        return out

    def to_pandas(self):
        """The table as a ``pandas.DataFrame``: one row per input row (the dataset's index),
        one column per figure (:meth:`columns`). Each column has one type: ``float64``,
        nullable ``Int64`` / ``boolean``, or ``string`` (missing values are ``NA``). When
        :attr:`partial`, the rows not explained have only ``row.error``
        (:data:`NOT_EXPLAINED`)."""
        _require("to_pandas", ("pandas",))
        import pandas as pd

        index = pd.Index([self.index[p] for p in self._positions()], name=self.index_name)
        records = self.records()
        data = {c: pd.array([rec[c] for rec in records], dtype=_dtype(c, records))
                for c in self.columns()}
        return pd.DataFrame(data, index=index)

    def to_parquet(self, path) -> Path:
        """Write :meth:`to_pandas` to a Parquet file (index kept); returns the path."""
        _require("to_parquet", ("pandas", "pyarrow"))
        path = Path(path)
        self.to_pandas().to_parquet(path, index=True)
        return path

    def to_html(self, path, **options) -> Path:
        """Write the model-validation report as one self-contained HTML file (CSS inline,
        figures as inline SVG; opens offline); returns the path. ``options``: see
        :func:`polytrav.interface.report.write_report` (``max_rows``, ``title``, ``regions``,
        ``monotonicity`` (its budget), ``profiles``: the region table, monotonicity table
        and profile plots, on by default; ``tables``). Needs jinja2, matplotlib and pandas:
        ``pip install "polytrav[report]"``."""
        return _report().write_report(self, path, format="html", **options)

    def to_markdown(self, path, **options) -> Path:
        """Write the same report as Markdown, its figures as ``.svg`` files in
        ``<stem>_figures/`` next to it; see :meth:`to_html`."""
        return _report().write_report(self, path, format="markdown", **options)

    def stats(self) -> dict[str, float]:
        """Timing over the rows: ``rows``, ``errors``, ``wall_time``, the median row time,
        the mean work time and the mean fixed cost per row (seconds)."""
        n = len(self.rows)
        return {
            "rows": n, "errors": sum(not r.ok for r in self.rows), "wall_time": self.wall_time,
            "median_row_time": statistics.median([r.time for r in self.rows]) if n else 0.0,
            "mean_work_time": sum(r.work_time for r in self.rows) / n if n else 0.0,
            "mean_fixed_time": sum(r.fixed_time for r in self.rows) / n if n else 0.0,
        }


def _dtype(column: str, records: list[dict]) -> str:
    """The column's pandas type from its values (None is missing)."""
    values = [rec[column] for rec in records if rec[column] is not None]
    if column.endswith(".error") or any(isinstance(v, str) for v in values):
        return "string"
    if values and all(isinstance(v, (bool, np.bool_)) for v in values):
        return "boolean"
    if values and all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
                      for v in values):
        return "Int64"
    return "float64"


def _report():
    """The report module (the interface layer). Named as a string, as the host names its
    built-in plugins (``DEFAULT_PLUGINS``): the host does not depend on the layer above it,
    which holds all of the report's code."""
    require("Explanation.to_html", "report")
    return importlib.import_module("polytrav.interface.report")


def _require(who: str, modules: tuple[str, ...], extra: str = "export") -> None:
    require(f"Explanation.{who}", extra, modules)
