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

Everything is checked before the network is traversed: unknown keys, wrong types, a missing
file, an unknown analysis name (the error lists the installed ones) or a parameter an
analysis does not take (the error lists the ones it takes), each analysis's own
``validate`` against the network and region, and the outputs (an ``export`` suffix that is
not a known format, its optional packages, a missing folder). Errors are
:class:`~polytrav.ConfigError` naming the key (``analysis[2].norm``) and the file.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from polytrav.vocabulary.errors import ConfigError, did_you_mean

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["Job", "load_job", "run_job", "write_job_outputs"]

Vector = Union[float, list[float]]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False)


class BoxRegion(_Strict):
    kind: Literal["box"]
    lower: Vector
    upper: Vector


class BallRegion(_Strict):
    kind: Literal["ball"]
    center: list[float]
    radius: float = Field(gt=0)
    norm: Literal[1, 2, "inf"] = "inf"
    within: BoxRegion | None = None  #: intersect with this box (e.g. pixel range [0, 1])


class PolyhedronRegion(_Strict):
    kind: Literal["polyhedron"]
    A: list[list[float]]
    b: list[float]
    within: BoxRegion | None = None


class VnnlibRegion(_Strict):
    kind: Literal["vnnlib"]
    file: str  #: a VNN-LIB file; its first input region (boxes and rows)


RegionSpec = Annotated[Union[BoxRegion, BallRegion, PolyhedronRegion, VnnlibRegion],
                       Field(discriminator="kind")]


class AnalysisSpec(BaseModel):
    """``name`` plus the analysis's own parameters (checked against its constructor)."""

    model_config = ConfigDict(extra="allow")
    name: str


class Output(_Strict):
    """Files written after the run, relative to the job file (see :func:`write_job_outputs`)."""

    json_path: str | None = Field(default=None, alias="json")  #: the report as JSON
    csv: str | None = None  #: one row per analysis (:func:`polytrav.interface.export.report_records`)
    export: str | None = None  #: the visited polytopes (:func:`polytrav.interface.export.export`)

    @field_validator("export")
    @classmethod
    def _known_format(cls, value: str | None) -> str | None:
        from polytrav.interface.export import EXPORT_FORMATS

        if value is not None and Path(value).suffix.lower() not in EXPORT_FORMATS:
            suffix = Path(value).suffix.lower() or "(no suffix)"
            raise ValueError(f"unknown export format {suffix!r} of {value!r}; the suffix must "
                             f"be one of {', '.join(EXPORT_FORMATS)}")
        return value


class Job(_Strict):
    network: str
    region: RegionSpec
    analysis: list[AnalysisSpec] = Field(min_length=1)
    start: list[float] | None = None
    strategy: str = "hierarchical"
    solver: str | dict[str, str] | None = None
    time_limit: float | None = Field(default=None, gt=0)
    max_polytopes: int | None = Field(default=None, ge=0)
    output: Output | None = None

    @field_validator("strategy")
    @classmethod
    def _known_strategy(cls, value: str) -> str:
        from polytrav.traversal.traverse import STRATEGIES

        if value not in STRATEGIES:
            raise ValueError(f"unknown strategy {value!r}; valid choices: {sorted(STRATEGIES)}")
        return value


#: Type names pydantic puts in an error's location for a union member (not keys).
_TYPE_PARTS = {"box", "ball", "polyhedron", "vnnlib", "float", "int", "str", "list[float]",
               "list[list[float]]", "dict[str,str]", "literal[1,2,'inf']"}


def _where(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif str(part).replace(" ", "").lower() not in _TYPE_PARTS:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def _known_keys() -> list[str]:
    models = (Job, BoxRegion, BallRegion, PolyhedronRegion, VnnlibRegion, Output)
    return sorted({f.alias or k for m in models for k, f in m.model_fields.items()})


def _problem(err: dict) -> str:
    """One readable phrase for a pydantic error (no pydantic internals)."""
    kind, got = err["type"], err.get("input")
    if kind == "extra_forbidden":
        key = str(err["loc"][-1])
        return f"unknown key {key!r}{did_you_mean(key, _known_keys())}"
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        tag = err.get("ctx", {}).get("tag", got)
        kinds = ["box", "ball", "polyhedron", "vnnlib"]
        return (f"kind {tag!r} is not a region kind{did_you_mean(tag, kinds)}; use one of "
                + ", ".join(repr(k) for k in kinds))
    if kind == "missing":
        return "missing (required)"
    msg = err["msg"].removeprefix("Value error, ")
    return f"{msg[0].lower()}{msg[1:]}, got {got!r}" if got is not None else msg


def load_job(path: str | Path) -> tuple[Job, Path]:
    """Parse and validate a job file (keys and types); returns the job and its folder."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"job file {str(path)!r} not found") from exc
    except OSError as exc:
        raise ConfigError(f"job file {str(path)!r} cannot be read: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"job file {str(path)!r} is not valid TOML: {exc}") from exc
    try:
        job = Job.model_validate(data)
    except ValidationError as exc:
        found: dict[str, str] = {}
        for err in exc.errors():
            loc = err["loc"]
            cut = next((i for i, p in enumerate(loc) if p in ("float", "list[float]")), None)
            if cut is not None:  # a number or a list of numbers (both union members fail)
                where = _where(loc[:cut])
                if loc[cut] == "float" or where not in found:
                    found[where] = f"must be a number or a list of numbers, got {err['input']!r}"
                continue
            if err["type"] == "extra_forbidden":
                where = _where(loc[:-1])
                found[where] = "; ".join(filter(None, [found.get(where), _problem(err)]))
                continue
            found.setdefault(_where(loc), _problem(err))
        raise ConfigError(f"job file {str(path)!r}: "
                          + "; ".join(f"{k}: {v}" for k, v in found.items())) from None
    return job, path.parent


def _region(spec, root: Path, net):
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
    from polytrav.verification.vnnlib import read_vnnlib

    parsed = read_vnnlib(root / spec.file, n_inputs=net.n_inputs, n_outputs=net.n_outputs)
    return parsed.cases[0].region()


def prepare(path: str | Path):
    """Everything a job needs, checked: ``(job, network, region, analyses, root)``.

    Analyses are built by registered name (unknown names and parameters are errors that
    list the valid ones) and validated against the network and region.
    """
    from polytrav.vocabulary.errors import PolytravError
    from polytrav.host.manager import create_analysis, get_plugin_manager
    from polytrav.verification.verify import load_network

    job, root = load_job(path)
    net_path = root / job.network
    if not net_path.is_file():
        raise ConfigError(f"job file {str(path)!r}: network: no file {str(net_path)!r}")
    net = load_network(net_path)
    try:
        region = _region(job.region, root, net).with_dims(net.n_inputs)
    except (PolytravError, OSError, ValueError) as exc:
        raise ConfigError(f"job file {str(path)!r}: region: {exc}") from exc
    pm = get_plugin_manager()
    analyses = []
    for k, spec in enumerate(job.analysis):
        params = dict(spec.model_extra or {})
        try:
            a = create_analysis(spec.name, pm=pm, **params)
            a.validate(net, region)
        except PolytravError as exc:
            raise ConfigError(f"job file {str(path)!r}: analysis[{k}] ({spec.name}): {exc}") from exc
        analyses.append(a)
    _check_outputs(job, root, path)
    return job, net, region, analyses, root


def _check_outputs(job: Job, root: Path, path) -> None:
    """The output files can be written: known export format and its packages, folders exist."""
    from polytrav.interface.export import check_export_path

    out = job.output
    if out is None:
        return
    for key, name in (("json", out.json_path), ("csv", out.csv)):
        if name is not None and not (root / name).parent.is_dir():
            raise ConfigError(f"job file {str(path)!r}: output.{key}: no folder "
                              f"{str((root / name).parent)!r} to write {Path(name).name!r} in")
    if out.export is not None:
        try:
            check_export_path(root / out.export)
        except ConfigError as exc:
            raise ConfigError(f"job file {str(path)!r}: output.export: {exc}") from None


def run_job(path: str | Path, progress=None, *, keep_polytopes: bool = False,
            on_interrupt: str = "report") -> tuple[Any, Job, Path]:
    """Run a job file; returns ``(report, job, folder)`` (see :func:`polytrav.analyze`).

    The report keeps the visited polytopes (``report.polytopes``) with ``keep_polytopes``
    or an ``[output] export``; Ctrl-C gives a partial report (``on_interrupt="raise"``
    re-raises instead). The ``[output]`` files are not written here:
    :func:`write_job_outputs` does (``polytrav run`` calls it).
    """
    from polytrav.host.runner import analyze

    job, net, region, analyses, root = prepare(path)
    keep = keep_polytopes or bool(job.output and job.output.export)
    report = analyze(net, region, analyses, start=job.start, solver=job.solver,
                     strategy=job.strategy, max_polytopes=job.max_polytopes,
                     time_limit=job.time_limit, progress=progress, keep_polytopes=keep,
                     on_interrupt=on_interrupt)
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
