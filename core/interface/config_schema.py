"""The job file's schema (pydantic models of ``polytrav run job.toml``), reading it (UTF-8
TOML, a BOM allowed) and the wording of its errors.

:func:`load_job` checks keys and types and names each problem by its key
(``analysis[2].norm``) in one line; what needs the network (files, the region's shape,
solvers, each analysis's parameters) is checked by :mod:`polytrav.interface.config`, which
also runs the job. The format is described there and in docs/config.md.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from polytrav.vocabulary.errors import ConfigError, did_you_mean

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["Job", "BoxRegion", "BallRegion", "PolyhedronRegion", "VnnlibRegion", "RegionSpec",
           "AnalysisSpec", "Output", "load_job"]

Vector = Union[float, list[float]]


class _Strict(BaseModel):
    """Unknown keys refused; numbers only where numbers belong (no "60", no true, no 3.5 for
    a count): TOML already gives typed values, so nothing is coerced."""

    model_config = ConfigDict(extra="forbid", strict=True)


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

    @field_validator("norm", mode="before")
    @classmethod
    def _not_a_flag(cls, value):
        if isinstance(value, bool):  # true == 1 to Python: not a norm
            raise ValueError(f"must be 1, 2 or 'inf', not true or false, got {value!r}")
        return value


class PolyhedronRegion(_Strict):
    kind: Literal["polyhedron"]
    A: list[list[float]]
    b: list[float]
    within: BoxRegion | None = None

    @field_validator("A")
    @classmethod
    def _rectangular(cls, value: list[list[float]]) -> list[list[float]]:
        if not value:
            raise ValueError("no rows; give one row [a_1, ..., a_n] per inequality a x <= b")
        lengths = [len(row) for row in value]
        if len(set(lengths)) > 1:
            raise ValueError(f"rows must have equal length (the network's input count), not "
                             f"{', '.join(map(str, lengths))}")
        return value

    @field_validator("b")
    @classmethod
    def _one_per_row(cls, value: list[float], info) -> list[float]:
        A = info.data.get("A")
        if A is not None and len(value) != len(A):
            raise ValueError(f"has {len(value)} entries but A has {len(A)} rows; give one "
                             "right-hand side per row of A")
        return value


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
    #: a second model: the job then runs on the joint network ``x -> [f(x); g(x)]`` (the
    #: ``model_diff`` analysis compares them; :func:`polytrav.diff`)
    compare: str | None = None
    region: RegionSpec
    analysis: list[AnalysisSpec] = Field(min_length=1)
    start: list[float] | None = None
    strategy: str = "auto"
    solver: str | dict[str, str] | None = None
    time_limit: float | None = Field(default=None, gt=0)
    max_polytopes: int | None = Field(default=None, ge=1)
    output: Output | None = None

    @field_validator("strategy")
    @classmethod
    def _known_strategy(cls, value: str) -> str:
        from polytrav.traversal import STRATEGIES

        names = ["auto", *STRATEGIES]
        if value not in names:
            raise ValueError(f"unknown strategy {value!r}{did_you_mean(value, names)}; use "
                             + " or ".join(repr(s) for s in names))
        return value

    @field_validator("solver")
    @classmethod
    def _problem_forms(cls, value):
        from polytrav.host.runner import FORMS

        for form in value if isinstance(value, dict) else ():
            if form not in FORMS:
                raise ValueError(f"unknown problem form {form!r}{did_you_mean(form, FORMS)}; the "
                                 f"table's keys are problem forms ({', '.join(FORMS)}) and its "
                                 "values solver names, e.g. {lp = \"highs\", qp = \"clarabel\"}")
        return value


#: Type names pydantic puts in an error's location for a union member (not keys).
_TYPE_PARTS = {"box", "ball", "polyhedron", "vnnlib", "float", "int", "str", "list[float]",
               "list[list[float]]", "dict[str,str]", "literal[1,2,'inf']"}

#: pydantic error types in plain words (``must be ...``); the rest keep pydantic's sentence.
_MUST_BE = {
    "float_parsing": "a number", "float_type": "a number", "finite_number": "a finite number",
    "int_parsing": "a whole number", "int_type": "a whole number",
    "int_from_float": "a whole number", "string_type": "text in quotes",
    "bool_type": "true or false", "bool_parsing": "true or false", "list_type": "a list [...]",
    "dict_type": "a table", "model_type": "a table", "model_attributes_type": "a table",
}


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


_KINDS = ["box", "ball", "polyhedron", "vnnlib"]
_UNITS = {("time_limit",): " (seconds; leave it out for no limit)",
          ("max_polytopes",): " (leave it out for no limit)"}


def _problem(err: dict) -> str:
    """One readable phrase for a pydantic error (no pydantic internals)."""
    kind, got, loc = err["type"], err.get("input"), err["loc"]
    ctx = err.get("ctx", {})
    if kind == "extra_forbidden":
        key = str(loc[-1])
        return f"unknown key {key!r}{did_you_mean(key, _known_keys())}"
    if kind == "union_tag_not_found":
        return ("missing; add kind = \"box\" (or " + ", ".join(repr(k) for k in _KINDS[1:])
                + ") to say which region it is")
    if kind == "union_tag_invalid":
        tag = ctx.get("tag", got)
        return (f"kind {tag!r} is not a region kind{did_you_mean(tag, _KINDS)}; use one of "
                + ", ".join(repr(k) for k in _KINDS))
    if loc == ("analysis",) and kind in ("missing", "too_short"):
        return 'no analysis; add an [[analysis]] table, e.g. [[analysis]] name = "output_range"'
    if loc == ("analysis",) and kind == "list_type":
        return ("must be a list of tables: write each one as [[analysis]] (double brackets), "
                f"got {got!r}")
    if len(loc) == 3 and loc[0] == "analysis" and loc[2] == "name" and kind == "missing":
        return 'missing; every [[analysis]] table needs name = "..." (e.g. "output_range")'
    if loc[:1] == ("solver",) and kind != "value_error":
        return ('must be a solver name such as "highs", or a table such as '
                f'{{lp = "highs", qp = "clarabel"}}, got {got!r}')
    if kind == "missing":
        return "missing (required)"
    if kind == "value_error":  # a validator of this module: its message names the value
        return err["msg"].removeprefix("Value error, ")
    if kind == "greater_than":
        msg = f"must be greater than {ctx.get('gt'):g}"
    elif kind == "greater_than_equal":
        msg = f"must be at least {ctx.get('ge'):g}"
    elif kind in _MUST_BE:
        msg = f"must be {_MUST_BE[kind]}"
    else:
        msg = err["msg"].replace("Input should be", "must be")
        msg = msg[0].lower() + msg[1:]
    return f"{msg}{_UNITS.get(loc, '')}, got {got!r}"


def _read_text(path: Path) -> str:
    """The job file's text (UTF-8, a byte order mark allowed); one-line errors."""
    name = str(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        where = "" if path.is_absolute() else f" (relative paths start at {os.getcwd()})"
        raise ConfigError(f"job file {name!r} not found{where}") from exc
    except IsADirectoryError as exc:
        raise ConfigError(f"job file {name!r} is a folder; give the job's .toml file") from exc
    except OSError as exc:
        raise ConfigError(f"job file {name!r} cannot be read: {exc.strerror or exc}") from exc
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = "\x00"
    if "\x00" in text:  # binary, or UTF-16 (Windows' "Unicode"), which decodes with NULs
        raise ConfigError(
            f"job file {name!r} is not a text TOML file (it is binary, or text not saved as "
            "UTF-8); polytrav run takes a job file (.toml, UTF-8 text); to analyse a network "
            "file directly use e.g. polytrav regions NETWORK")
    return text


def load_job(path: str | Path) -> tuple[Job, Path]:
    """Parse and validate a job file (keys and types); returns the job and its folder."""
    path = Path(path)
    try:
        data = tomllib.loads(_read_text(path))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"job file {str(path)!r} is not valid TOML: {exc}") from None
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
            where = _where(loc)
            if err["type"] == "union_tag_not_found":
                where += ".kind"
            found.setdefault(where, _problem(err))
        top = found.pop("(top level)", None)  # unknown keys first: they explain the rest
        raise ConfigError(f"job file {str(path)!r}: " + "; ".join(
            ([top] if top else []) + [f"{k}: {v}" for k, v in found.items()])) from None
    return job, path.parent
