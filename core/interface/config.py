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
from polytrav.interface.config_schema import (BallRegion, BoxRegion, Job, PolyhedronRegion,
                                              VnnlibRegion, load_job)
from polytrav.interface.config_schema import Output  # noqa: F401
from polytrav.interface.analysis_params import build_analysis, checked_analysis  # noqa: F401
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
    analyses = [checked_analysis(k, spec.name, dict(spec.model_extra or {}), classes, pm, net,
                                 region, where)
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
