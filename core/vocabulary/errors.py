"""Exceptions raised by polytrav.

Every message says who complains, which rule was broken, what value was received and how to
fix it, e.g. ``Box: lower bound exceeds upper bound at coordinate 2 (lo=1.0, hi=0.5); swap
them``.
"""
from __future__ import annotations

__all__ = [
    "did_you_mean",
    "PolytravError",
    "ConfigError",
    "NetworkError",
    "RegionError",
    "PluginError",
    "SolverNotAvailable",
    "SolverError",
    "CheckpointError",
    "InputNote",
]


def did_you_mean(name: str, known) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``known`` names, or ``""``.

    >>> did_you_mean("higs", ["highs", "scipy"])
    " (did you mean 'highs'?)"
    """
    import difflib

    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


class PolytravError(Exception):
    """Base class of every error polytrav raises on purpose."""


class ConfigError(PolytravError, ValueError):
    """An argument, option or configuration value is invalid."""


class NetworkError(PolytravError, ValueError):
    """A model file or array stack cannot be turned into a ReLU :class:`~polytrav.Network`."""


class RegionError(PolytravError, ValueError):
    """A region is malformed, empty, unbounded, or does not fit the network or start point."""


class PluginError(PolytravError):
    """A plugin failed to load or broke the plugin contract.

    :ivar plugin: name of the offending plugin.
    """

    def __init__(self, message: str, plugin: str | None = None):
        super().__init__(message)
        self.plugin = plugin


class SolverNotAvailable(PolytravError, ImportError):
    """A solver backend was requested whose native library is not installed."""


class SolverError(PolytravError, RuntimeError):
    """A solver backend crashed (as opposed to reporting a status)."""


class CheckpointError(PolytravError, ValueError):
    """A checkpoint is unreadable or belongs to another run (network, region, analyses)."""


class InputNote(UserWarning):
    """A file was read with part of it ignored or read in a variant of its format; the
    message says which part and how (the command line prints it as ``polytrav: note: ...``)."""
