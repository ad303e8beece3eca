"""An analysis built from its registered name and parameters, with one-line errors that
name the parameter: what ``polytrav analyze --analysis NAME KEY=VALUE...``, ``polytrav
explain --analysis`` and the job file's ``[[analysis]]`` tables share. No pydantic here (the
job file's schema is :mod:`polytrav.interface.config_schema`): a command line pays only for
what it uses.
"""
from __future__ import annotations

from polytrav.vocabulary.errors import ConfigError, did_you_mean

__all__ = ["build_analysis", "checked_analysis"]

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

    quoted = re.findall(r"'([^']*)'", str(exc))
    named = [p for p, v in params.items()
             if any(_holds(v, lambda x, q=q: isinstance(x, str) and x == q) for q in quoted)]
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


def checked_analysis(k: int | None, name: str, params: dict, classes: dict, pm, net, region,
                     where: str):
    """Analysis ``k`` of a job (None: the one of a command line), built by name and
    validated; one-line errors naming the key."""
    from polytrav.host.manager import create_analysis
    from polytrav.vocabulary.errors import PolytravError

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
    return checked_analysis(None, name, params, classes, pm, net, region, where)
