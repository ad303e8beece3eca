"""The hooks polytrav calls; plugins implement them with ``@polytrav.hookimpl``.

One empty function per hook. Registration hooks return lists of classes (not instances),
each with a unique ``name``.
"""
from __future__ import annotations

import pluggy

__all__ = ["hookspec", "hookimpl"]

hookspec = pluggy.HookspecMarker("polytrav")
hookimpl = pluggy.HookimplMarker("polytrav")


# ---------------------------------------------------------------- registration


@hookspec
def polytrav_add_solvers() -> list[type]:
    """Called once when a plugin manager is built, to collect solver backends.

    :returns: a list of :class:`polytrav.SolverBackend` subclasses; the registry keeps them
        in registration order, which is the order of preference per problem form.
    """


@hookspec
def polytrav_add_analyses() -> list[type]:
    """Called once when a plugin manager is built, to collect analyses.

    :returns: a list of :class:`polytrav.Analysis` subclasses, each with a unique ``name``.
    """
