"""Built-in solver backends, registered through the ``polytrav_add_solvers`` hook."""
from __future__ import annotations

from polytrav.hookspecs import hookimpl
from polytrav.solvers.highs import HighsBackend
from polytrav.solvers.scipy import ScipyBackend

__all__ = ["HighsBackend", "ScipyBackend"]


@hookimpl
def polytrav_add_solvers():
    """The built-in backends, in order of preference per form."""
    return [HighsBackend, ScipyBackend]
