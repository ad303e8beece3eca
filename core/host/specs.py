"""Analyses as users give them, read in one place: an :class:`~polytrav.Analysis` instance, a
registered name, a ``(name, params)`` pair or a dict with ``"name"`` (one, or a list)."""
from __future__ import annotations

from polytrav.host.analysis import Analysis
from polytrav.vocabulary.errors import ConfigError

__all__ = ["analysis_specs"]


def _is_pair(item) -> bool:
    return isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)


def analysis_specs(analyses, who: str, *, instances: bool = True) -> list:
    """Each analysis of ``analyses`` as an :class:`Analysis` instance (when ``instances``
    allows them) or a ``(name, params)`` pair with ``params`` a fresh dict; ``who`` starts
    the one-line error (``analyze``, ``explain``)."""
    kinds = ("an Analysis instance, " if instances else "") + (
        "a registered name (e.g. 'output_range'), a (name, params) pair or a dict with 'name'")
    if isinstance(analyses, (Analysis, str, dict)) or _is_pair(analyses):
        analyses = [analyses]
    if not isinstance(analyses, (list, tuple)):
        raise ConfigError(f"{who}: analyses must be {kinds}, or a list of these; got "
                          f"{type(analyses).__name__} {analyses!r}")
    out = []
    for item in analyses:
        if isinstance(item, Analysis) and instances:
            out.append(item)
        elif isinstance(item, str):
            out.append((item, {}))
        elif _is_pair(item):
            out.append((item[0], dict(item[1])))
        elif isinstance(item, dict):
            params = dict(item)
            if "name" not in params:
                raise ConfigError(f"{who}: an analysis given as a dict needs a 'name' key, got "
                                  f"{sorted(params)}")
            out.append((params.pop("name"), params))
        else:
            raise ConfigError(f"{who}: each analysis must be {kinds}; got "
                              f"{type(item).__name__} {item!r}")
    if not out:
        raise ConfigError(f"{who}: no analyses given")
    return out
