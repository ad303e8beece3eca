"""Job files: ``polytrav run job.toml`` (TOML, validated with pydantic before any work).

A job names a network file, a region, optional start point, strategy, solver and budgets,
and a list of analyses by their registered (entry-point) names with parameters::

    network = "model.onnx"            # .onnx or .nnet, relative to the job file
    strategy = "hierarchical"         # optional
    solver = "highs"                  # optional: a name, or a table {lp = ..., qp = ...}
    time_limit = 60                   # optional seconds; max_polytopes likewise
    start = [0.1, 0.2]                # optional

    [region]                          # one of: box, ball, polyhedron, vnnlib
    kind = "box"
    lower = [-1, -1]                  # scalars broadcast
    upper = [1, 1]

    [[analysis]]
    name = "counterfactual"
    x0 = [0.1, 0.2]
    norm = 2

    [output]                          # optional, paths relative to the job file
    json = "report.json"              # the report
    csv = "report.csv"                # one row per analysis (polytrav.interface.export.report_records)
    export = "polytopes.parquet"      # the visited polytopes: .json .csv .parquet .graphml

Everything is checked before the network is traversed: the file is UTF-8 TOML (a BOM is
fine), unknown keys, wrong types, a missing file (network, VNN-LIB), the region's shape
(``A``'s rows, bounds against the network's inputs, finite box bounds), ``start`` inside
the region, solver names, an unknown analysis name (the error lists the installed ones), a
parameter an analysis does not take or needs (the error lists the ones it takes), parameter
types (from the constructor's annotations; no quoted numbers or ``true`` where numbers
belong, also in unannotated ones), each analysis's own ``validate`` against the
network and region (a value it cannot use is reported under its key, not as the
exception), and the outputs (an ``export`` suffix that is not a known format, its optional
packages, a file that cannot be written, two keys naming one file, an output naming an
input). Errors
are :class:`~polytrav.ConfigError` naming the file and the key (``analysis[2].norm``), one
line each (see docs/config.md).

The schema (pydantic models), the reading of the file and the wording of type errors are in
:mod:`polytrav.interface.config_schema`; this module checks a job against its network and
runs it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

# re-exported: the job file's schema (Job and its parts) and its reading (load_job)
from polytrav.interface.config_schema import (AnalysisSpec, BallRegion, BoxRegion, Job,
                                              PolyhedronRegion, VnnlibRegion, load_job)
from polytrav.interface.config_schema import Output  # noqa: F401
from polytrav.vocabulary.errors import ConfigError, did_you_mean

__all__ = ["Job", "load_job", "run_job", "write_job_outputs", "build_analysis"]


def _input_file(root: Path, name: str, key: str, where: str, what: str) -> Path:
    """``root / name`` if it is a file; else a one-line error naming ``key``."""
    file = root / name
    if file.is_file():
        return file
    if file.is_dir():
        raise ConfigError(f"{where}: {key}: {name!r} is a folder; give {what}")
    rel = ("" if Path(name).is_absolute() else
           f" (paths in a job file are relative to the job file's folder, {root.resolve()})")
    raise ConfigError(f"{where}: {key}: {name!r} not found{rel}")


def _region(spec, root: Path, net, where: str = "job file"):
    import numpy as np

    from polytrav.model.region import Ball, Box, Polyhedron

    def box(b: BoxRegion):
        return Box(b.lower, b.upper)

    if isinstance(spec, BoxRegion):
        return box(spec)
    if isinstance(spec, BallRegion):
        region = Ball(np.asarray(spec.center), spec.radius,
                      norm=np.inf if spec.norm == "inf" else spec.norm)
        return region & box(spec.within) if spec.within else region
    if isinstance(spec, PolyhedronRegion):
        region = Polyhedron(np.asarray(spec.A), np.asarray(spec.b))
        return region & box(spec.within) if spec.within else region
    file = _input_file(root, spec.file, "region.file", where, "a .vnnlib file")
    try:
        return vnnlib_region(file, net)
    except ConfigError as exc:
        if isinstance(exc.__cause__, UnicodeDecodeError):
            raise ConfigError(f"{where}: region.file: {spec.file!r} is not a VNN-LIB text file "
                              "(it is binary or not UTF-8); give a .vnnlib file") from exc
        raise


def vnnlib_region(path, net):
    """The first input region of a one-network VNN-LIB file (``polytrav regions --vnnlib``,
    a job's ``kind = "vnnlib"`` region); a network file or a query of several networks or
    hidden nodes is a :class:`ConfigError` saying what to run instead."""
    from polytrav.verification.query import read_query
    from polytrav.verification.vnnlib import spec_of

    suffix = Path(path).suffix.lower()
    if suffix in (".onnx", ".nnet"):
        raise ConfigError(f"{str(path)!r} is a network file ({suffix}), not a VNN-LIB property; "
                          "give the .vnnlib file there")
    query = read_query(path)
    several, hidden = len(query.networks) != 1, query.networks[0].hidden
    if several or hidden:
        what = (f"declares {len(query.networks)} networks" if several else
                f"declares hidden node {hidden[0].name!r}")
        raise ConfigError(f"{path} {what}; a region is the input box of a one-network file "
                          "without hidden nodes: decide this query with polytrav verify QUERY "
                          "--network NAME=FILE (one --network per network it declares)")
    return spec_of(query, net.n_inputs, net.n_outputs).cases[0].region()


def _checked_region(job: Job, root: Path, net, where: str):
    """The job's region in the network's input dimensions; a box-like one bounded, not empty."""
    import numpy as np

    from polytrav.vocabulary.errors import PolytravError

    try:
        region = _region(job.region, root, net, where).with_dims(net.n_inputs)
    except ConfigError as exc:
        if str(exc).startswith(where):
            raise
        raise ConfigError(f"{where}: region: {exc}") from exc
    except (PolytravError, ValueError) as exc:
        raise ConfigError(f"{where}: region: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"{where}: region.file: {job.region.file!r} cannot be read: "
                          f"{exc.strerror or exc}") from exc
    if region.is_box:  # the bounds alone, no LP: open sides and crossed bounds
        lo, hi = region.bounding_box()
        open_ = np.flatnonzero(~(np.isfinite(lo) & np.isfinite(hi)))
        if open_.size:
            j = int(open_[0])
            raise ConfigError(f"{where}: region: unbounded along input {j} (lower {lo[j]}, "
                              f"upper {hi[j]}); polytrav traverses bounded regions: give finite "
                              "bounds")
        crossed = np.flatnonzero(lo > hi)
        if crossed.size:
            j = int(crossed[0])
            raise ConfigError(f"{where}: region: empty, its bounds cross at input {j} (lower "
                              f"{lo[j]}, upper {hi[j]}); does [region.within] miss the region?")
    return region


def _check_start(job: Job, net, region, where: str) -> None:
    import numpy as np

    if job.start is None:
        return
    x, n = np.asarray(job.start, float), net.n_inputs
    if x.shape != (n,):
        raise ConfigError(f"{where}: start: has {x.size} coordinates but the network takes {n}; "
                          "give one per input, or leave start out")
    if not np.isfinite(x).all():
        raise ConfigError(f"{where}: start: must be finite numbers, got {job.start}")
    bad = region.violations(x)
    if bad:
        raise ConfigError(f"{where}: start: {job.start} is outside the region "
                          f"({'; '.join(bad[:3])}); give a point inside it, or leave start out")


def _check_solver(spec, pm, where: str) -> None:
    """Solver names are installed backends serving their problem form (as ``analyze`` uses
    them: a plain name is the LP solver)."""
    from polytrav.host.manager import get_solver, solver_classes
    from polytrav.vocabulary.errors import PolytravError

    if spec is None:
        return
    items = [("solver", "lp", spec)] if isinstance(spec, str) else \
        [(f"solver.{form}", form, name) for form, name in spec.items()]
    classes = solver_classes(pm)
    for key, form, name in items:
        if name not in classes:
            raise ConfigError(f"{where}: {key}: unknown solver {name!r}"
                              f"{did_you_mean(name, classes)}; known solvers: "
                              + ", ".join(classes))
        cls = classes[name]
        if not cls.is_available():
            try:
                get_solver(name, pm=pm)  # its message says what to install
            except PolytravError as exc:
                raise ConfigError(f"{where}: {key}: {exc}") from None
        if form not in cls.forms:
            raise ConfigError(f"{where}: {key}: solver {name!r} does not solve {form!r} problems "
                              f"(it solves {', '.join(sorted(cls.forms))}); pick another, or "
                              f"name it for its form, e.g. [solver] {sorted(cls.forms)[0]} = "
                              f"{name!r}")


#: Plain words for the simple types of an analysis's constructor annotations.
_TYPE_WORDS = {bool: "true or false", int: "a whole number", float: "a number",
               str: "text in quotes"}


def _fits(value, kinds) -> bool:
    if isinstance(value, bool):  # TOML's true/false: not a number
        return bool in kinds
    return any(isinstance(value, (int, float) if t is float else t) for t in kinds)


def _mistyped(cls, params: dict) -> tuple[str, str] | None:
    """``(key, "must be ...")`` of the first parameter whose value does not fit its
    annotation, where the annotation is a plain bool/int/float/str (or ``X | None``)."""
    import types
    import typing

    try:
        hints = typing.get_type_hints(cls.__init__)
    except Exception:  # noqa: BLE001  a third-party annotation that does not evaluate
        return None
    for key, value in params.items():
        hint = hints.get(key)
        union = typing.get_origin(hint) in (typing.Union, types.UnionType)
        kinds = [t for t in (typing.get_args(hint) if union else (hint,)) if t is not type(None)]
        if kinds and all(t in _TYPE_WORDS for t in kinds) and not _fits(value, kinds):
            return key, "must be " + " or ".join(_TYPE_WORDS[t] for t in kinds)
        if bool not in kinds and _holds(value, lambda v: isinstance(v, bool)):
            return key, "must be numbers, not true or false"
        if str not in kinds and _holds(value, _quoted_number):
            return key, "must be numbers, not text (write numbers without quotes)"
    return None


def _holds(value, test) -> bool:
    """Whether ``value`` or an item of its lists, or a value of its tables, passes ``test``."""
    if isinstance(value, (list, tuple)):
        return any(_holds(v, test) for v in value)
    if isinstance(value, dict):
        return any(_holds(v, test) for v in value.values())
    return test(value)


def _quoted_number(value) -> bool:
    """A number written in quotes (``"2"``, ``"0.5"``); ``"inf"`` is a word some take."""
    import math

    try:
        return isinstance(value, str) and math.isfinite(float(value))
    except ValueError:
        return False


def _plain(exc: BaseException) -> str:
    """What a TypeError/ValueError from turning a parameter value into numbers means."""
    text = str(exc)
    if any(s in text for s in ("could not convert string", "invalid literal for",
                               "not 'str'")):
        return "must be numbers, not text (write numbers without quotes, lists as [0.1, 0.2])"
    if "inhomogeneous" in text or "array element with a sequence" in text:
        return "its lists must all have the same length (rows of equal length)"
    if "'dict'" in text:
        return "must be numbers or lists of numbers, not a table"
    if "unhashable" in text:
        return "must be a single value, not a list or a table"
    return f"cannot be used ({type(exc).__name__}: {text})"


def _culprits(exc: BaseException, cls, params: dict) -> list[str]:
    """The parameters a failure in an analysis's own code is about: those named on the
    failing line of its module (innermost first), else the one holding the text the message
    quotes, else the only one given."""
    import inspect
    import linecache
    import re
    import traceback

    modules = {c.__module__ for c in cls.__mro__} - {"builtins"}
    for frame, lineno in reversed(list(traceback.walk_tb(exc.__traceback__))):
        if frame.f_globals.get("__name__") in modules:
            line = linecache.getline(frame.f_code.co_filename, lineno)
            named = [p for p in params if re.search(rf"\b{re.escape(p)}\b", line)]
            if named:
                return named

    def holds(value, text) -> bool:
        if isinstance(value, (list, tuple)):
            return any(holds(v, text) for v in value)
        if isinstance(value, dict):
            return any(holds(v, text) for v in value.values())
        return isinstance(value, str) and value == text

    quoted = re.findall(r"'([^']*)'", str(exc))
    named = [p for p, v in params.items() if any(holds(v, q) for q in quoted)]
    if named:
        return named
    if len(params) == 1:
        return list(params)

    def shape(value) -> str:
        return "list" if isinstance(value, (list, tuple)) else "table" \
            if isinstance(value, dict) else "scalar"

    sig = inspect.signature(cls.__init__).parameters  # a list where the default is a number
    return [p for p, v in params.items() if p in sig and sig[p].default is not sig[p].empty
            and sig[p].default is not None and shape(v) != shape(sig[p].default)]


def _analysis(k: int | None, spec: AnalysisSpec, classes: dict, pm, net, region, where: str):
    """Analysis ``k`` of the job (None: the one of a command line), built by name and
    validated; one-line errors naming the key."""
    from polytrav.host.manager import create_analysis
    from polytrav.vocabulary.errors import PolytravError

    name, params = spec.name, dict(spec.model_extra or {})
    head = where if k is None else f"{where}: analysis[{k}] ({name})"

    def key(p: str) -> str:  # where a parameter was given
        return f"{where}: {p}" if k is None else f"{where}: analysis[{k}].{p} ({name})"

    cls = classes.get(name)

    def mistyped():
        bad = _mistyped(cls, params) if cls is not None else None
        if bad:
            return ConfigError(f"{key(bad[0])}: {bad[1]}, got {params[bad[0]]!r}")
        return None

    try:
        a = create_analysis(name, pm=pm, **params)
        a.validate(net, region)
    except PolytravError as exc:
        text = str(exc)
        if k is not None:  # the head names the analysis already
            text = text.removeprefix(f"analysis {name!r}: ")
            if text.startswith(f"analysis {name!r} needs "):
                text = text.removeprefix(f"analysis {name!r} ")
        raise ConfigError(f"{head}: {text}") from exc
    except (TypeError, ValueError, IndexError, KeyError, AttributeError, OverflowError) as exc:
        # the analysis's own code failed on a value it was given (text for numbers, ragged
        # lists, a list for a single value): the key and the value, not the exception
        error = mistyped()
        if error is not None:
            raise error from exc
        if not params:  # nothing the job gave: a bug of the analysis
            raise
        keys = _culprits(exc, cls, params)
        if len(keys) == 1:
            raise ConfigError(f"{key(keys[0])}: {_plain(exc)}, got {params[keys[0]]!r}") from exc
        given = ", ".join(f"{p} = {v!r}" for p, v in params.items())
        raise ConfigError(f"{head}: a parameter value cannot be used: {_plain(exc)}; "
                          f"given {given}") from exc
    error = mistyped()
    if error is not None:
        raise error
    return a


def build_analysis(name: str, params: dict, net, region, where: str):
    """One analysis by registered name and parameters, validated on ``net`` and ``region``,
    with the job file's one-line errors (``where`` starts them): the command line's
    ``polytrav analyze --analysis NAME KEY=VALUE...``."""
    from polytrav.host.manager import analysis_classes, get_plugin_manager

    pm = get_plugin_manager()
    classes = analysis_classes(pm)
    if name not in classes:
        raise ConfigError(f"{where}: unknown analysis {name!r}{did_you_mean(name, classes)}; "
                          f"known analyses: {sorted(classes)} (see `polytrav plugins`)")
    return _analysis(None, AnalysisSpec(name=name, **params), classes, pm, net, region, where)


def prepare(path: str | Path):
    """Everything a job needs, checked: ``(job, network, region, analyses, root)``.

    Analyses are built by registered name (unknown names and parameters are errors that
    list the valid ones) and validated against the network and region; the outputs are
    checked first (nothing is loaded for a job whose results could not be written).
    """
    from polytrav.host.manager import analysis_classes, get_plugin_manager
    from polytrav.verification.verify import load_network
    from polytrav.vocabulary.errors import PolytravError

    job, root = load_job(path)
    where = f"job file {str(path)!r}"
    net_path = root / job.network
    inputs = {Path(path): "the job file itself", net_path: "the network file"}
    if job.compare is not None:
        inputs[root / job.compare] = "the compared network's file"
    if isinstance(job.region, VnnlibRegion):
        inputs[root / job.region.file] = "the region's VNN-LIB file"
    _check_outputs(job, root, path, inputs=inputs)
    _input_file(root, job.network, "network", where, "the network's .onnx or .nnet file")
    try:
        net = load_network(net_path)
    except PolytravError as exc:
        raise ConfigError(f"{where}: network: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"{where}: network: {job.network!r} cannot be read: "
                          f"{exc.strerror or exc}") from exc
    if job.compare is not None:
        net = _joint(root, job.compare, net, where)
    region = _checked_region(job, root, net, where)
    _check_start(job, net, region, where)
    pm = get_plugin_manager()
    _check_solver(job.solver, pm, where)
    classes = analysis_classes(pm)
    analyses = [_analysis(k, spec, classes, pm, net, region, where)
                for k, spec in enumerate(job.analysis)]
    return job, net, region, analyses, root


def _joint(root: Path, name: str, net, where: str):
    """``compare = "g.onnx"``: the joint network of the job's network and that one."""
    from polytrav.host.diff import joint_network
    from polytrav.verification.verify import load_network
    from polytrav.vocabulary.errors import PolytravError

    _input_file(root, name, "compare", where, "the compared network's .onnx or .nnet file")
    try:
        return joint_network(net, load_network(root / name))
    except PolytravError as exc:
        raise ConfigError(f"{where}: compare: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"{where}: compare: {name!r} cannot be read: "
                          f"{exc.strerror or exc}") from exc


def _check_outputs(job: Job, root: Path, path, inputs: dict | None = None) -> None:
    """The output files can be written: each key its own file, none of them an input file
    (``inputs``: path -> what it is) or a folder, known export format and its packages,
    folders exist."""
    from polytrav.interface.export import check_export_path, check_writable

    out, where = job.output, f"job file {str(path)!r}"
    if out is None:
        return
    taken = {Path(p).resolve(): what for p, what in (inputs or {}).items()}
    named: dict[Path, str] = {}
    for key, name in (("json", out.json_path), ("csv", out.csv), ("export", out.export)):
        if name is None:
            continue
        file = (root / name).resolve()
        if file in named:
            raise ConfigError(f"{where}: output.{named[file]} and output.{key} both name "
                              f"{name!r}; one would overwrite the other: give each its own file")
        if file in taken:
            raise ConfigError(f"{where}: output.{key}: {name!r} is {taken[file]}, which writing "
                              "the output would overwrite; give another file name")
        if file.is_dir():
            example = Path(name) / ("polytopes.json" if key == "export" else f"report.{key}")
            raise ConfigError(f"{where}: output.{key}: {name!r} is a folder; give a file name "
                              f"in it, e.g. {str(example)!r}")
        named[file] = key
    for key, name in (("json", out.json_path), ("csv", out.csv)):
        if name is not None:
            check_writable(root / name, f"{where}: output.{key}")
    if out.export is not None:
        try:
            check_export_path(root / out.export)
        except ConfigError as exc:
            problem = str(exc).removeprefix("export: ")
            raise ConfigError(f"{where}: output.export: {problem}") from None


def run_job(path: str | Path, progress=None, *, keep_polytopes: bool = False,
            on_interrupt: str = "report") -> tuple[Any, Job, Path]:
    """Run a job file; returns ``(report, job, folder)`` (see :func:`polytrav.analyze`).

    The report keeps the visited polytopes (``report.polytopes``) with ``keep_polytopes``
    or an ``[output] export``; Ctrl-C gives a partial report (``on_interrupt="raise"``
    re-raises instead). The ``[output]`` files are not written here:
    :func:`write_job_outputs` does (``polytrav run`` calls it).
    """
    from polytrav.host.runner import analyze
    from polytrav.vocabulary.errors import RegionError, SolverNotAvailable

    job, net, region, analyses, root = prepare(path)
    keep = keep_polytopes or bool(job.output and job.output.export)
    try:
        report = analyze(net, region, analyses, start=job.start, solver=job.solver,
                         strategy=job.strategy, max_polytopes=job.max_polytopes,
                         time_limit=job.time_limit, progress=progress, keep_polytopes=keep,
                         on_interrupt=on_interrupt)
    except RegionError as exc:  # found setting up the traversal: unbounded, empty, flat
        hint = ("bound it with a [region.within] table (kind = \"box\")"
                if isinstance(job.region, (BallRegion, PolyhedronRegion)) else "give finite bounds")
        msg = str(exc).removeprefix("region ").replace("intersect it with a Box to traverse", hint)
        raise ConfigError(f"job file {str(path)!r}: region: {msg}") from exc
    except (ConfigError, SolverNotAvailable) as exc:
        raise ConfigError(f"job file {str(path)!r}: {exc}") from exc
    return report, job, root


def write_job_outputs(report, job: Job, root: str | Path) -> list[Path]:
    """Write a job's ``[output]`` files for ``report``; returns their paths.

    ``json``: the whole report (:func:`polytrav.interface.export.write_report`); ``csv``: one row per
    analysis, the columns of :func:`polytrav.interface.export.report_records`; ``export``: the visited
    polytopes (:func:`polytrav.interface.export.export`, format by suffix; the report needs
    ``report.polytopes``, which :func:`run_job` keeps when ``export`` is set). Paths are
    relative to ``root``, the job file's folder. Writes nothing without ``[output]``.
    """
    from polytrav.interface.export import export, write_report

    out, root, written = job.output, Path(root), []
    if out is None:
        return written
    if out.json_path:
        written.append(root / out.json_path)
        write_report(report, written[-1], format="json")
    if out.csv:
        written.append(root / out.csv)
        write_report(report, written[-1], format="csv")
    if out.export:
        written.append(export(root / out.export, polytopes=report.polytopes, report=report))
    return written
