"""The hooks polytrav calls; plugins implement them with ``@polytrav.hookimpl``.

One empty function per hook. Registration hooks return lists of classes (not instances),
each with a unique ``name``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from polytrav.host.analysis import Directive
    from polytrav.model.polytope import Polytope
    from polytrav.vocabulary.results import AnalysisResult
    from polytrav.host.runner import RunContext

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


# ---------------------------------------------------------------- a run of analyses


@hookspec
def polytrav_begin_run(context: "RunContext") -> None:
    """Called once per :func:`polytrav.analyze` run, before the first polytope is visited.

    :param context: the run: network, region, frame, solvers and traversal statistics.
    :returns: nothing; the return value is ignored.
    """


@hookspec
def polytrav_visit_polytope(polytope: "Polytope", context: "RunContext") -> "Directive | None":
    """Called for every polytope the traversal emits, in visit order.

    :param polytope: the polytope (code, interior point, local model, halfspaces).
    :param context: the run.
    :returns: ``None`` to go on, or a :class:`polytrav.Directive`: ``Restrict(region)`` to
        shrink the rest of the search to ``region`` (the run honours it only when every
        analysis in the run allows pruning), or ``Stop(reason)`` when this plugin's answer is
        decided (the run stops once every analysis is decided).
    """


@hookspec
def polytrav_end_run(context: "RunContext") -> "AnalysisResult | None":
    """Called once after the traversal ended (complete or not).

    :param context: the run; ``context.status`` says whether the traversal was complete.
    :returns: this plugin's :class:`polytrav.AnalysisResult`, or ``None`` if it has none.
    """
