"""``polytrav explain MODEL DATA.csv``: :func:`polytrav.explain` on every row of a CSV file,
the table (``--table``) and the model-validation report (``--report``) written.

Exit codes as in :mod:`polytrav.interface.cli`: 0 every row's answer proven, 2 some row
left unknown or with an error (or Ctrl-C), 4 bad input (also a missing extra: pandas for the
table, the ``report`` extra for the report, checked before any row runs).

A progress bar on a terminal (stderr) counts the rows. Ctrl-C while the rows run keeps the
rows done: the table (every input row, those not explained marked in ``row.error``) and the
report (marked partial, without the monotonicity table, which would start a new long run)
are written, and the line on stdout starts with ``PARTIAL (interrupted)``; a Ctrl-C while the
report's monotonicity table is computed writes the report without it.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import click

from polytrav.interface.cli.common import (EXIT_HOLDS, EXIT_PARTIAL, fail, parse_parameters,
                                           solver_option)
from polytrav.interface.console import answered
from polytrav.interface.report.model_sections import MONOTONICITY_TIME_LIMIT

__all__ = ["DEFAULT_ANALYSES", "explain", "read_rows"]

#: The analyses of every row unless --analysis / --analyses say otherwise.
DEFAULT_COUNTERFACTUAL = ("counterfactual", {"norm": 1})
#: (a regressor's default has no counterfactual: its prediction has no classes)
DEFAULT_ANALYSES = [DEFAULT_COUNTERFACTUAL, "local_model"]

#: Where --analysis text starts a parameter: blanks before ``KEY=`` (values may hold blanks).
_KEY_START = re.compile(r"\s+(?=[A-Za-z_]\w*=)")

#: Suffixes of the outputs.
REPORT_SUFFIXES = (".html", ".htm", ".md")
TABLE_SUFFIXES = (".csv", ".parquet")


@click.command()
@click.argument("model", type=click.Path(dir_okay=False))
@click.argument("data", type=click.Path(dir_okay=False))
@click.option("--analysis", "analysis", multiple=True, metavar="'NAME [KEY=VALUE]...'",
              help="An analysis of every row with its options, as `polytrav analyze` takes "
                   "them (values are TOML); repeat for several. Default: counterfactual "
                   "norm=1 (MAD-scaled L1) and local_model.")
@click.option("--analyses", "analyses_json", default=None, metavar="JSON",
              help='The analyses as a JSON list in explain\'s spellings, e.g. '
                   '\'["local_model", ["counterfactual", {"norm": 1}]]\'.')
@click.option("--domain", default=None, metavar="LOWER:UPPER",
              help="The data box, each side comma-separated in the columns' order or one "
                   "number for all (e.g. 0:1). Default: the data's per-column min and max.")
@click.option("--index-col", default=None, help="The CSV column holding the rows' labels.")
@click.option("--drop", multiple=True, metavar="COLUMN",
              help="A CSV column that is not an input (a label); repeat or comma-separate.")
@click.option("--report", "report_path", type=click.Path(dir_okay=False), default=None,
              help="Write the model-validation report: .html (self-contained) or .md.")
@click.option("--max-rows", type=click.IntRange(min=0), default=20, show_default=True,
              help="Applicant sections in the report: the first rows (every row left unknown "
                   "is shown too).")
@click.option("--no-regions", is_flag=True, help="Leave the region table out of the report.")
@click.option("--no-monotonicity", is_flag=True,
              help="Leave the monotonicity table out of the report.")
@click.option("--no-profiles", is_flag=True, help="Leave the profile plots out of the report.")
@click.option("--monotonicity-time-limit", type=click.FloatRange(min=0, min_open=True),
              default=MONOTONICITY_TIME_LIMIT, show_default=True,
              help="Seconds of the monotonicity check of each feature in each direction; a "
                   "feature not settled in it is reported unknown.")
@click.option("--names", "names_path", type=click.Path(dir_okay=False), default=None,
              help="The model's feature names (one a line), or JSON {\"features\": [...], "
                   "\"classes\": [...]}: for models without them (ONNX).")
@click.option("--labels", default=None, metavar="A,B,...",
              help="The class labels, one per output (one output: negative,positive).")
@click.option("--table", "table_path", type=click.Path(dir_okay=False), default=None,
              help="Write the per-row table: .csv or .parquet.")
@click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Seconds of each analysis on each row (default 30; a row past it is unknown).")
@click.option("--trust", multiple=True, metavar="TYPE",
              help="A type a .skops file may hold beyond skops' defaults, after you reviewed it.")
@click.option("--unsafe-pickle", is_flag=True,
              help="Allow a .pkl / .joblib model. Loading it EXECUTES CODE FROM THE FILE: only "
                   "for files you trust.")
@solver_option
def explain(model, data, analysis, analyses_json, domain, index_col, drop, report_path,
            max_rows, no_regions, no_monotonicity, no_profiles, monotonicity_time_limit,
            names_path, labels, table_path, time_limit, trust, unsafe_pickle,
            solver) -> None:
    """Explain every row of DATA.csv under MODEL (.onnx, .nnet, or a scikit-learn pipeline
    saved with skops) and write the report.

    \b
    Examples:
      polytrav explain credit.skops applicants.csv --drop default --report report.html
      polytrav explain net.onnx rows.csv --domain 0:1 --table rows.parquet \\
          --analysis "counterfactual norm=1 immutable=['age']" --analysis local_model

    DATA.csv has a header row of feature names (a model's own input names pick and order
    the columns; --names gives them to a model without). The report holds the applicants,
    the dataset's summaries, the region table, profile plots and the monotonicity table
    (--no-regions, --no-profiles, --no-monotonicity leave them out). On a terminal a
    progress bar counts the rows; Ctrl-C writes the rows done (table and report, marked
    PARTIAL). Exit code 0 every row proven, 2 some row unknown or with an error (or
    Ctrl-C), 4 bad input.
    """
    from polytrav.host.explain import ROW_TIME_LIMIT
    from polytrav.host.explain import explain as run_explain
    from polytrav.interface.export import check_writable
    from polytrav.interface.model_file import load_model, read_names, with_names

    specs = _analyses(analysis, analyses_json)
    bounds = _domain(domain)
    for path, suffixes, what in ((report_path, REPORT_SUFFIXES, "--report"),
                                 (table_path, TABLE_SUFFIXES, "--table")):
        if path is not None:
            if Path(path).suffix.lower() not in suffixes:
                fail(f"{what} {path!r}: give a file ending in {' or '.join(suffixes)}")
            check_writable(path, what)
    _check_extras(report_path, table_path)
    net, source = load_model(model, trust=trust, unsafe_pickle=unsafe_pickle)
    features, classes = read_names(names_path) if names_path else (None, None)
    if labels is not None:
        if classes is not None:
            fail(f"class labels in both --names {names_path!r} and --labels; give them once")
        classes = [c.strip() for c in labels.split(",")]
    if features is not None or classes is not None:
        net = with_names(net, features, classes)
        given = [f"--names {Path(names_path).name!r}" if names_path else None,
                 "--labels" if labels is not None else None]
        source += f"; names from {' and '.join(g for g in given if g)}"
    if specs is DEFAULT_ANALYSES and net.link == "identity":  # a regressor: no classes
        specs = [s for s in specs if s != DEFAULT_COUNTERFACTUAL]
        click.echo("note: the model is a regressor, so no counterfactual by default; add "
                   "--analysis 'counterfactual threshold=T' for the nearest input whose "
                   "prediction is on the other side of T", err=True)
    X = read_rows(data, net, index_col, [c for item in drop for c in item.split(",") if c])
    report = None if report_path is None else {
        "max_rows": max_rows, "regions": not no_regions, "profiles": not no_profiles,
        "monotonicity": not no_monotonicity and {"time_limit": monotonicity_time_limit,
                                                 "solver": solver}}
    result, left_out = None, {}
    try:
        result = run_explain(net, X, specs, domain=bounds, solver=solver,
                             time_limit=ROW_TIME_LIMIT if time_limit is None else time_limit,
                             source=source, progress=sys.stderr.isatty(), on_interrupt="report")
        if result.partial:  # Ctrl-C while the rows ran: write what is done, ignore another
            answered()
            if report and report["monotonicity"]:  # a new long run: not after a Ctrl-C
                left_out["monotonicity"] = "the run was interrupted (Ctrl-C) before it began"
            written = [p for p in (table_path, report_path) if p]
            if written and sys.stderr.isatty():
                click.echo(f"explain: interrupted after {len(result)} of {len(result.index)} "
                           f"rows; writing them to {', '.join(written)}", err=True)
        _write(result, table_path, report_path, report, left_out)
    except KeyboardInterrupt:  # Ctrl-C after the rows: the report without what it interrupted
        if result is None:
            raise  # while setting up: nothing done yet
        answered()
        if report and report["monotonicity"]:
            left_out["monotonicity"] = ("interrupted (Ctrl-C) while the report was written; "
                                        "run again, or give --no-monotonicity")
        _write(result, table_path, report_path, report, left_out)
    click.echo(_summary(result, [p for p in (table_path, report_path) if p], left_out))
    raise SystemExit(EXIT_PARTIAL if result.partial or left_out
                     or not all(r.proven for r in result) else EXIT_HOLDS)


def _check_extras(report_path, table_path) -> None:
    """Refuse, before any row runs, an output whose extra is not installed."""
    from polytrav.vocabulary.extras import require

    if table_path is not None:
        parquet = Path(table_path).suffix.lower() == ".parquet"
        require(f"--table {table_path!r}", "export",
                ("pandas", "pyarrow") if parquet else ("pandas",))
    if report_path is not None:
        require(f"--report {report_path!r}", "report")


def _write(result, table_path, report_path, report, left_out) -> None:
    """Write the table and the report of ``result`` (each partial if the result is)."""
    if table_path is not None:
        if table_path.lower().endswith(".csv"):
            result.to_pandas().to_csv(table_path)
        else:
            result.to_parquet(table_path)
    if report_path is not None:
        from polytrav.interface.report import write_report

        if report["monotonicity"] and "monotonicity" not in left_out and sys.stderr.isatty():
            click.echo(f"explain: writing {report_path} with its monotonicity table (up to "
                       f"{report['monotonicity']['time_limit']:g} s per feature and direction;"
                       " Ctrl-C leaves it out)", err=True)
        write_report(result, report_path, left_out=left_out, **report)


def _summary(result, written: list[str], left_out: dict) -> str:
    """The line on stdout: the rows proven, unknown and (after Ctrl-C) not explained."""
    unproven = sum(not r.proven for r in result)
    counts = f"{len(result) - unproven} proven, {unproven} unknown or with an error"
    wrote = f"; wrote {', '.join(written)}" if written else ""
    if result.partial:
        line = (f"PARTIAL (interrupted): explained {len(result)} of {len(result.index)} rows: "
                f"{counts}; {len(result.missing)} rows not explained (marked in the table and "
                f"the report){wrote}")
    else:
        line = f"explained {len(result)} rows: {counts}{wrote}"
    if "monotonicity" in left_out and not result.partial:
        line += "; the report's monotonicity table was interrupted (Ctrl-C) and left out"
    return line


def _analyses(analysis: tuple[str, ...], analyses_json: str | None) -> list:
    """The analyses from --analysis (NAME KEY=VALUE...) or --analyses (JSON), else the
    defaults."""
    if analysis and analyses_json:
        fail("give the analyses with --analysis (repeated) or --analyses JSON, not both")
    if analyses_json is not None:
        try:
            specs = json.loads(analyses_json)
        except json.JSONDecodeError as exc:
            fail(f"--analyses is not JSON ({exc.msg} at character {exc.pos}); give a list "
                 'such as \'["local_model", ["counterfactual", {"norm": 1}]]\'')
        return [tuple(s) if isinstance(s, list) else s for s in
                (specs if isinstance(specs, list) else [specs])]
    out = []
    for text in analysis:
        name, *params = _KEY_START.split(text.strip())
        if not name or "=" in name or " " in name:
            fail(f"--analysis {text!r} is not 'NAME KEY=VALUE ...' (e.g. --analysis "
                 "'counterfactual norm=1 immutable=[\"age\"]')")
        out.append((name, parse_parameters(params)))
    return out or DEFAULT_ANALYSES


def _domain(text: str | None):
    """``(lower, upper)`` from ``LOWER:UPPER`` (each side numbers, comma-separated)."""
    if text is None:
        return None
    lo, colon, hi = text.partition(":")
    if not colon:
        fail(f"--domain {text!r} is not LOWER:UPPER (e.g. 0:1, or 18,0:90,1e6 per column)")
    sides = []
    for what, side in (("lower", lo), ("upper", hi)):
        try:
            values = [float(v) for v in side.split(",")]
        except ValueError:
            fail(f"--domain's {what} side {side!r} must be comma-separated numbers")
        sides.append(values[0] if len(values) == 1 else values)
    return tuple(sides)


#: Cells read as missing values (NaN), as pandas reads them.
_MISSING = {"", "NA", "N/A", "NaN", "nan", "NULL", "null", "None", "#N/A"}


def read_rows(path, net, index_col, drop):
    """The CSV's rows as a :class:`~polytrav.host.row.Table` of the network's inputs, in its
    order (read with the standard library: pandas loads only for a table or report)."""
    import csv

    import numpy as np

    from polytrav.host.row import Table

    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            lines = [row for row in csv.reader(fh) if row]
    except (UnicodeDecodeError, csv.Error) as exc:
        fail(f"DATA {str(path)!r} is not a readable CSV file: {exc}")
    if not lines:
        fail(f"DATA {str(path)!r} is not a readable CSV file: it is empty (a header row of "
             "column names, then the rows)")
    header, body = [c.strip() for c in lines[0]], lines[1:]
    if not body:
        fail(f"DATA {str(path)!r} has no rows, only the header ({len(header)} columns); "
             "give one row per line under it")
    bad = next((k for k, row in enumerate(body, 2) if len(row) != len(header)), None)
    if bad is not None:
        fail(f"DATA {str(path)!r} is not a readable CSV file: line {bad} has "
             f"{len(body[bad - 2])} fields, the header {len(header)}")
    columns = {name: [row[j] for row in body] for j, name in enumerate(header)}
    labels, label_name = list(range(len(body))), None
    if index_col is not None:
        if index_col not in columns:
            fail(f"DATA {str(path)!r}: no column {index_col!r} (columns: {header[:10]}); check "
                 "--index-col")
        labels, label_name = _labels(columns.pop(index_col)), index_col
    missing = [c for c in drop if c not in columns]
    if missing:
        fail(f"--drop {missing}: no such column in {str(path)!r} (columns: {list(columns)[:10]})")
    for c in drop:
        del columns[c]
    names = net.input_names
    if names:
        absent = [n for n in names if n not in columns]
        if absent:
            fail(f"DATA {str(path)!r} lacks the model's input column(s) {absent[:5]} "
                 f"(columns: {list(columns)[:10]}); name the header's columns as the model's inputs")
        extra = [c for c in columns if c not in names]
        if extra:
            fail(f"DATA {str(path)!r} has column(s) {extra[:5]} the model does not take; "
                 "drop them with --drop (or --index-col for the rows' labels)")
        columns = {n: columns[n] for n in names}
    elif len(columns) != net.n_inputs:
        fail(f"DATA {str(path)!r} has {len(columns)} columns but the model takes {net.n_inputs} "
             "inputs; --drop the others (e.g. the label)")
    values, text = [], []
    for name, cells in columns.items():
        try:
            values.append([np.nan if v.strip() in _MISSING else float(v) for v in cells])
        except ValueError:
            text.append(name)
    if text:
        fail(f"DATA {str(path)!r}: column(s) {text[:5]} are not numbers; encode them as the "
             "model's inputs are")
    return Table(np.array(values, float).T.reshape(len(body), len(columns)), tuple(columns),
                 labels, label_name)


def _labels(cells: list[str]) -> list:
    """A label column's values: integers, else numbers, else the text (as pandas reads them)."""
    for kind in (int, float):
        try:
            return [kind(c) for c in cells]
        except ValueError:
            pass
    return list(cells)
