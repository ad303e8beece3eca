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

    [output]                          # optional
    json = "report.json"              # the report; csv = per-analysis rows

Everything is checked before the network is traversed: unknown keys, wrong types, a missing
file, an unknown analysis name (the error lists the installed ones) or a parameter an
analysis does not take (the error lists the ones it takes), and each analysis's own
``validate`` against the network and region. Errors are :class:`~polytrav.ConfigError`
naming the key (``analysis[2].norm``) and the file.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from polytrav.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["Job", "load_job", "run_job"]

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
    json_path: str | None = Field(default=None, alias="json")
    csv: str | None = None


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
        from polytrav.traverse import STRATEGIES

        if value not in STRATEGIES:
            raise ValueError(f"unknown strategy {value!r}; valid choices: {sorted(STRATEGIES)}")
        return value


def _where(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part not in ("box", "ball", "polyhedron", "vnnlib"):  # union branch names
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def load_job(path: str | Path) -> tuple[Job, Path]:
    """Parse and validate a job file (keys and types); returns the job and its folder."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"job file {str(path)!r} cannot be read: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"job file {str(path)!r} is not valid TOML: {exc}") from exc
    try:
        job = Job.model_validate(data)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            msg = err["msg"]
            if err["type"] == "extra_forbidden":
                msg = "unknown key"
            elif err["type"] == "union_tag_invalid":
                msg = "kind must be one of 'box', 'ball', 'polyhedron', 'vnnlib'"
            lines.append(f"{_where(err['loc'])}: {msg}")
        raise ConfigError(f"job file {str(path)!r}: " + "; ".join(lines)) from None
    return job, path.parent


def _region(spec, root: Path, net):
    import numpy as np

    from polytrav.region import Ball, Box, Polyhedron

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
    from polytrav.loaders.vnnlib import read_vnnlib

    parsed = read_vnnlib(root / spec.file, n_inputs=net.n_inputs, n_outputs=net.n_outputs)
    return parsed.cases[0].region()


def prepare(path: str | Path):
    """Everything a job needs, checked: ``(job, network, region, analyses, root)``.

    Analyses are built by registered name (unknown names and parameters are errors that
    list the valid ones) and validated against the network and region.
    """
    from polytrav.errors import PolytravError
    from polytrav.manager import create_analysis, get_plugin_manager
    from polytrav.verify import load_network

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
    return job, net, region, analyses, root


def run_job(path: str | Path, progress=None) -> tuple[Any, Job, Path]:
    """Run a job file; returns ``(report, job, folder)`` (see :func:`polytrav.analyze`)."""
    from polytrav.run import analyze

    job, net, region, analyses, root = prepare(path)
    report = analyze(net, region, analyses, start=job.start, solver=job.solver,
                     strategy=job.strategy, max_polytopes=job.max_polytopes,
                     time_limit=job.time_limit, progress=progress)
    return report, job, root
