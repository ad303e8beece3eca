"""``explain()``: the same analyses on every row of a dataset, fixed costs paid once.

For each row ``x`` of ``X``, each analysis class builds its instance and region for the row
(:meth:`Analysis.for_row <polytrav.Analysis.for_row>`: a counterfactual of ``x`` inside the
domain and the actionability constraints, the output range over ``x ± radius`` inside the
domain, the local model at ``x``) and :class:`~polytrav.host.runner.RunSession` runs it. One
session serves every row of a worker: the plugin manager, the backend chains and the first
imports are built once, not per row as :func:`polytrav.analyze` does; what is left per row
is the row's own work (its frame, traversal and subproblems, which the backends and the
compiled-subproblem cache already reuse across runs).

Rows are independent: an error in one (a NaN, a row outside the domain, a failed solve) is
recorded for that row and analysis, and the others go on. With an ``executor``
(:func:`polytrav.parallel.get_executor`: local processes or Dask), chunks of rows run in the
workers, each worker keeping its session between chunks; :func:`explain_rows` yields the rows
as they finish, :func:`explain` collects them into an :class:`Explanation`, telling its
progress row by row (:mod:`~polytrav.host.row_progress`) and, on Ctrl-C with
``on_interrupt="report"``, returning the rows done, marked partial.

Options are checked before any row runs: their names against ``for_row``, and their values by
building each analysis for the rows (``for_row``, then ``validate``) until one row passes; an
analysis that fails the same way on every row (``norm=3``) is refused up front, while an
error of some rows only (a row outside its bounds) stays those rows' error.
"""
from __future__ import annotations

import contextlib
import functools
import math
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from polytrav.host.analysis import Analysis
from polytrav.host.explanation import Explanation, RowResult
from polytrav.host.manager import analysis_classes, check_options
from polytrav.host.row import Row, Table
from polytrav.host.options import RunOptions
from polytrav.host.row_progress import row_progress
from polytrav.host.specs import analysis_specs
from polytrav.host.runner import RunSession
from polytrav.model.network import Network
from polytrav.model.region import Box
from polytrav.model.scales import DataSummary
from polytrav.vocabulary.errors import ConfigError, PolytravError

__all__ = ["explain", "explain_rows", "Explanation", "RowResult", "AnalysisSpec", "ROW_TIME_LIMIT"]

#: Seconds each analysis may run on each row unless ``time_limit`` says otherwise (None: no
#: limit): a row that needs more ends honestly unknown (``exact=False``), and the call goes on.
ROW_TIME_LIMIT = 30.0


@dataclass(frozen=True)
class AnalysisSpec:
    """One analysis of every row: its class, label (column prefix) and ``for_row`` options."""

    cls: type
    label: str
    options: dict


@dataclass(frozen=True)
class _Job:
    """Everything a worker needs for its rows (picklable)."""

    token: str  # one per explain call: a worker's session serves one call's rows
    net: Network
    specs: tuple[AnalysisSpec, ...]
    domain: Box
    features: tuple[str, ...]
    options: RunOptions  # each row's run: the solver and the budgets
    data: DataSummary  # X's per-feature statistics (scales, baselines)

    @property
    def solver(self):
        return self.options.solver


_SESSION: dict[str, RunSession] = {}  # token -> the worker's session (the latest call only)


def _session(job: _Job) -> RunSession:
    if job.token not in _SESSION:
        _SESSION.clear()
        _SESSION[job.token] = RunSession(job.solver)
    return _SESSION[job.token]


def _explain_row(session: RunSession, job: _Job, position: int, label, x: np.ndarray) -> RowResult:
    """Every analysis on one row; errors recorded per analysis."""
    t0 = time.perf_counter()
    out = RowResult(position=position, label=label)
    finite = np.isfinite(x)
    if not finite.all():
        bad = [job.features[j] for j in np.flatnonzero(~finite)]
        out.errors["row"] = f"row {label!r}: not a finite number in feature(s) {bad[:5]}"
    else:
        out.figures.update(_prediction(job.net, x))
        row = Row(x=x, domain=job.domain, features=job.features, label=label, data=job.data)
        for spec in job.specs:
            try:
                analysis, region = spec.cls.for_row(row, **spec.options)
                report = session.run(job.net, region, [analysis], job.options)
                result = report.results[0]
                out.work_time += report.time
                out.results[spec.label] = result
                figures = analysis.figures(result, row)
                out.figures.update(zip(_columns(spec.label, tuple(figures)), figures.values()))
            except Exception as exc:  # noqa: BLE001  (recorded for this row; the others go on)
                kind = "" if isinstance(exc, PolytravError) else f"{type(exc).__name__}: "
                out.errors[spec.label] = f"{kind}{exc}"
    out.time = time.perf_counter() - t0
    return out


def _prediction(net: Network, x: np.ndarray) -> dict[str, Any]:
    """The row's own figures, in the network's vocabulary: a classifier's ``row.class``
    (its label, else its index) and ``row.probability`` (where the link gives one); a
    regressor's ``row.prediction`` (``row.prediction.<k>`` for several outputs); none for a
    multilabel network."""
    if net.link == "identity":
        y = net.forward(x)
        if y.size == 1:
            return {"row.prediction": float(y[0])}
        return {f"row.prediction.{k}": float(v) for k, v in enumerate(y)}
    if net.link == "sigmoid" and net.n_outputs > 1:
        return {}
    k = net.class_index(x)
    out = {"row.class": net.class_label(k)}  # None at a tie: no class
    p = None if k < 0 else net.class_probability(x, k)
    if p is not None:
        out["row.probability"] = p
    return out


@functools.lru_cache(maxsize=64)
def _columns(label: str, figures: tuple[str, ...]) -> tuple[str, ...]:
    """``<label>.<figure>`` per figure (the names repeat from row to row)."""
    return tuple(f"{label}.{k}" for k in figures)


def _explain_chunk(job: _Job, chunk: list[tuple[int, Any, np.ndarray]]) -> list[RowResult]:
    """A chunk of rows in one worker, on the worker's session (made once per call)."""
    session = _session(job)
    return [_explain_row(session, job, pos, label, x) for pos, label, x in chunk]


# ---------------------------------------------------------------- inputs


def as_table(X, net: Network, who: str = "explain") -> tuple[np.ndarray, tuple[str, ...], list, Any]:
    """``(values, feature names, index labels, index name)`` from an array or a DataFrame
    (errors name ``who``)."""
    n = net.n_inputs
    if isinstance(X, Table):
        values, features = np.asarray(X.values, float), tuple(X.columns)
        index, index_name = list(X.index), X.index_name
    elif hasattr(X, "columns") and hasattr(X, "to_numpy"):  # a pandas DataFrame
        features = tuple(str(c) for c in X.columns)
        index, index_name = list(X.index), X.index.name
        try:
            values = X.to_numpy(dtype=float)
        except (TypeError, ValueError) as exc:
            numeric = set(X.select_dtypes("number").columns)
            raise ConfigError(f"{who}: X has non-numeric columns "
                              f"{[c for c in X.columns if c not in numeric][:5]}") from exc
    else:
        try:
            values = np.asarray(X, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{who}: X must be numbers (an array or a DataFrame): {exc}") from exc
        features = tuple(net.input_names) if net.input_names else tuple(f"x{j}" for j in range(n))
        index, index_name = list(range(values.shape[0] if values.ndim else 0)), None
    if values.ndim == 1 and values.shape[0] == n:
        values = values[None, :]
        index = index[:1] or [0]
    if values.ndim != 2 or values.shape[1] != n:
        raise ConfigError(f"{who}: X must have one column per network input ({n}), got shape "
                          f"{values.shape}")
    if values.shape[0] == 0:
        raise ConfigError(f"{who}: X has no rows")
    return values, features, index, index_name


def as_domain(domain, values: np.ndarray, who: str = "explain") -> Box:
    """The data box: ``domain`` (a Box or ``(lo, hi)``), else X's per-column min and max
    (errors name ``who``)."""
    n = values.shape[1]
    if domain is None:
        finite = np.where(np.isfinite(values), values, np.nan)
        with np.errstate(all="ignore"), _no_warnings():
            lo, hi = np.nanmin(finite, axis=0), np.nanmax(finite, axis=0)
        empty = np.flatnonzero(np.isnan(lo))
        if empty.size:
            raise ConfigError(f"{who}: column(s) {empty[:5].tolist()} of X hold no finite "
                              "value, so the default domain (X's min and max) is undefined; "
                              "give domain=(lo, hi)")
        return Box(lo, hi)
    if isinstance(domain, Box):
        box = domain.with_dims(n)
    elif isinstance(domain, (tuple, list)) and len(domain) == 2:
        box = Box(*domain).with_dims(n)
    else:
        raise ConfigError(f"{who}: domain must be a Box or a (lo, hi) pair, got "
                          f"{type(domain).__name__}")
    if not (np.all(np.isfinite(box.lower)) and np.all(np.isfinite(box.upper))):
        raise ConfigError(f"{who}: the domain must be bounded (finite lo and hi)")
    return box


class _no_warnings:
    def __enter__(self):
        import warnings

        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)


def _as_specs(analyses, pm) -> tuple[AnalysisSpec, ...]:
    """Specs from names, ``(name, options)`` pairs or ``{"name": ..., **options}`` dicts;
    ``label`` in the options names the columns (default: the name, then ``name#2``...)."""
    classes = analysis_classes(pm)
    specs, seen = [], {}
    for name, options in analysis_specs(analyses, "explain", instances=False):
        if name not in classes:
            raise ConfigError(f"explain: unknown analysis {name!r}; known: {sorted(classes)}")
        cls = classes[name]
        if getattr(cls.for_row, "__func__", None) is Analysis.for_row.__func__:
            raise ConfigError(
                f"explain: analysis {name!r} ({cls.__module__}.{cls.__qualname__}) cannot run "
                "per row: it does not implement for_row(row, **options); add a classmethod "
                "returning (analysis, region) for the row (and figures(result, row) for its "
                "columns), see docs/writing-plugins.md")
        seen[name] = seen.get(name, 0) + 1
        label = str(options.pop("label", name if seen[name] == 1 else f"{name}#{seen[name]}"))
        check_options(cls.for_row, options, f"explain: analysis {name!r} per row")
        specs.append(AnalysisSpec(cls, label, options))
    labels = [s.label for s in specs]
    if len(set(labels)) != len(labels) or "row" in labels:
        raise ConfigError(f"explain: analysis labels must be distinct and not 'row', got {labels}")
    return tuple(specs)


#: What a value the analysis's own code could not use raises (as in analysis_params).
_VALUE_ERRORS = (TypeError, ValueError, IndexError, KeyError, AttributeError, OverflowError)


def _check_values(job: _Job, rows) -> None:
    """Build each analysis for the rows (``for_row``, ``validate``) until one row passes;
    refuse the analysis (``ConfigError``) if every finite row fails with the same message:
    its options cannot work on this data, and no row should run to say so."""
    finite = [(label, x) for _, label, x in rows if np.isfinite(x).all()]
    for spec in job.specs:
        first = None
        for label, x in finite:
            row = Row(x=x, domain=job.domain, features=job.features, label=label, data=job.data)
            try:
                analysis, region = spec.cls.for_row(row, **spec.options)
                analysis.validate(job.net, region.with_dims(job.net.n_inputs))
            except Exception as exc:  # noqa: BLE001  (a row's error, unless every row has it)
                if not isinstance(exc, (PolytravError, *_VALUE_ERRORS)):
                    break  # not about a value: the row's run records it
                kind = "" if isinstance(exc, PolytravError) else f"{type(exc).__name__}: "
                message = f"{kind}{exc}"
                first = message if first is None else first
                if message != first:
                    break  # the rows differ: an error of rows, not of the options
                continue
            break  # a row passes: the options work
        else:
            if first is not None:
                which = "" if spec.label == spec.cls.name else f"analysis {spec.label!r}; "
                raise ConfigError(f"explain: {first} ({which}the same on every row, so no row "
                                  "ran)")


# ---------------------------------------------------------------- the API


def _prepare(net, X, analyses, domain, solver, time_limit, max_polytopes):
    """Checks before any row runs; ``(session, job, rows, index, index name)``."""
    if not isinstance(net, Network):
        raise ConfigError(f"explain: net must be a polytrav.Network, got {type(net).__name__}")
    values, features, index, index_name = as_table(X, net)
    box = as_domain(domain, values)
    session = RunSession(solver)
    job = _Job(uuid.uuid4().hex, net, _as_specs(analyses, session.pm), box, features,
               RunOptions(solver=solver, time_limit=time_limit, max_polytopes=max_polytopes),
               DataSummary.of(values))
    rows = [(i, index[i], values[i]) for i in range(values.shape[0])]
    _check_values(job, rows)
    return session, job, rows, index, index_name


def _run(session, job, rows, executor, chunk_size, progress=None) -> Iterator[RowResult]:
    if executor is None:
        for pos, label, x in rows:
            if progress is not None:
                progress.start(label)
            yield _explain_row(session, job, pos, label, x)
        return
    from polytrav.parallel import finished, n_workers

    workers = n_workers(executor)
    size = chunk_size or max(1, min(64, math.ceil(len(rows) / (4 * workers))))
    chunks = iter([rows[k:k + size] for k in range(0, len(rows), size)])

    def next_task():
        chunk = next(chunks, None)
        return None if chunk is None else (chunk[0][0], _explain_chunk, (job, chunk))

    for _, future in finished(executor, next_task, window=2 * workers):
        yield from future.result()


def explain_rows(net: Network, X, analyses, *, domain=None, solver=None, executor=None,
                 chunk_size: int | None = None, time_limit: float | None = ROW_TIME_LIMIT,
                 max_polytopes: int | None = None) -> Iterator[RowResult]:
    """:func:`explain`'s rows, yielded as they finish (serially: in order; with an
    executor: chunk by chunk, in the order the chunks finish). Same arguments; the checks
    run on the first ``next()``."""
    session, job, rows, _, _ = _prepare(net, X, analyses, domain, solver, time_limit,
                                        max_polytopes)
    yield from _run(session, job, rows, executor, chunk_size)


def explain(net: Network, X, analyses, *, domain=None, solver=None, executor=None,
            chunk_size: int | None = None, time_limit: float | None = ROW_TIME_LIMIT,
            max_polytopes: int | None = None, source: str | None = None, progress=None,
            on_interrupt: str = "raise") -> Explanation:
    """Run per-row analyses on every row of ``X``, the fixed costs paid once per worker.

    Parameters
    ----------
    net : Network
    X : array_like, shape (n_rows, n_inputs), pandas.DataFrame or :class:`~polytrav.host.row.Table`
        The rows. A DataFrame's (or Table's) column names become the feature names and its
        index the table's index; otherwise the network's ``input_names``, else ``x0, x1, ...``.
    analyses : str, (str, dict), dict, or a list of these
        Registered analysis names with their per-row options
        (:meth:`Analysis.for_row <polytrav.Analysis.for_row>`), e.g.
        ``[("counterfactual", {"norm": 1, "immutable": ["age"]}), ("output_range",
        {"radius": 0.05}), "local_model"]``. ``label`` in the options names the columns
        (default: the name, then ``name#2`` for a second one). A counterfactual's distance
        is measured in units of each column's MAD over ``X`` unless its ``scale`` says
        otherwise (docs/explain.md, "Scaled distances").
    domain : Box or (lo, hi), optional
        The data box every analysis stays inside. Default: X's per-column minimum and
        maximum (finite values only).
    solver : optional
        As in :func:`polytrav.analyze`.
    executor : concurrent.futures.Executor, optional
        Run chunks of rows on it (:func:`polytrav.parallel.get_executor`); each worker
        builds its session once. Default: serially in this process.
    chunk_size : int, optional
        Rows per chunk with an executor (default: about four chunks per worker, at most 64).
    time_limit : float or None
        Seconds of each analysis's run on each row (default :data:`ROW_TIME_LIMIT`, 30 s;
        None: no limit). A row that hits it has ``exact=False``: unknown, not wrong.
    max_polytopes : int, optional
        Polytopes of each analysis's run on each row (a count: the same on any machine).
    source : str, optional
        How the model was loaded, for the report (:meth:`Explanation.to_html`); default: the
        network's description.
    progress : bool or callable, optional
        True: a progress bar on stderr (tqdm: rows done, time left, rows proven and unknown
        so far, the row being worked on). A callable is called as ``progress(row, done,
        total)`` after each row (its :class:`RowResult`, the rows done, the rows in all).
    on_interrupt : {"raise", "report"}
        What Ctrl-C (``KeyboardInterrupt``) does: ``"raise"`` (default) re-raises it;
        ``"report"`` returns the rows done so far as a partial :class:`Explanation`
        (``partial`` True, ``missing`` the rows not explained; the row being worked on is
        one of them).

    Returns
    -------
    Explanation
        One :class:`RowResult` per row, in X's order; ``to_pandas()`` and ``to_parquet()``.
        Besides the analyses' ``<label>.<figure>`` columns, each row has the model's answer
        in the network's vocabulary (:attr:`Network.classes <polytrav.Network.classes>`,
        :attr:`~polytrav.Network.link`): ``row.class`` (the predicted class's label, else
        its index) and ``row.probability`` (its probability, where the link gives one), or
        a regressor's ``row.prediction``.

    Raises
    ------
    ConfigError
        Before any row runs: X's width is not the network's, an unknown analysis or option,
        an analysis that does not implement ``for_row``, an unbounded domain. A problem with one row (NaN, outside the domain) is that row's
        error, not an exception.

    Examples
    --------
    >>> import numpy as np
    >>> from polytrav import Network, explain
    >>> net = Network.from_arrays([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [-1.0]])
    >>> X = np.array([[0.2, 0.3], [0.9, 0.8], [np.nan, 0.5]])
    >>> table = explain(net, X, [("counterfactual", {"norm": 1})], domain=(0, 1)).to_pandas()
    >>> table["counterfactual.distance"].round(6).tolist()[:2]  # in units of each column's MAD
    [1.428571, 2.0]
    >>> table["counterfactual.metric"][0]
    'L1 scaled by MAD'
    >>> table["row.error"].tolist()[2]
    "row 2: not a finite number in feature(s) ['x0']"
    """
    t0 = time.perf_counter()
    if on_interrupt not in ("raise", "report"):
        raise ConfigError(f"explain: on_interrupt must be 'raise' or 'report', got "
                          f"{on_interrupt!r}")
    session, job, rows, index, index_name = _prepare(net, X, analyses, domain, solver,
                                                     time_limit, max_polytopes)
    bar = row_progress(progress, len(rows))
    done, interrupted = [], False
    try:
        with contextlib.closing(_run(session, job, rows, executor, chunk_size, bar)) as run:
            for row in run:
                done.append(row)
                if bar is not None:
                    bar.done(row)
    except KeyboardInterrupt:
        if on_interrupt == "raise":
            raise
        interrupted = len(done) < len(rows)
    finally:
        if bar is not None:
            bar.close()
    return Explanation(done, [s.label for s in job.specs], index, index_name=index_name,
                       wall_time=time.perf_counter() - t0, network=net, domain=job.domain,
                       features=job.features,
                       data=np.reshape([x for _, _, x in rows], (len(rows), net.n_inputs)),
                       source=source or repr(net), interrupted=interrupted,
                       analyses={s.label: (s.cls.name, dict(s.options)) for s in job.specs})
