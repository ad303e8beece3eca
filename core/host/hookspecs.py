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
    from polytrav.host.runner import RunContext
    from polytrav.traversal import PieceView

__all__ = ["hookspec", "hookimpl"]

hookspec = pluggy.HookspecMarker("polytrav")
hookimpl = pluggy.HookimplMarker("polytrav")


# ---------------------------------------------------------------- registration


@hookspec
def polytrav_add_solvers() -> list[type]:
    """Collects solver backends when polytrav first reads a plugin manager's solver registry.

    A manager keeps the answer until a plugin is registered on it or unregistered; every
    :func:`polytrav.analyze` call, and ``available_solvers``/``get_solver`` without a manager,
    build a fresh manager, so the hook runs again (see docs/hooks.md): do no work in it.

    :returns: a list of :class:`polytrav.SolverBackend` subclasses; the registry keeps them
        in registration order, which is the order of preference per problem form.
    """


@hookspec
def polytrav_add_analyses() -> list[type]:
    """Collects analyses each time polytrav reads the analysis registry (not cached).

    Read by :func:`polytrav.analyze` with analyses given by name, ``create_analysis``, job
    files and :func:`polytrav.explain`: return the same list every time and do no work.

    :returns: a list of :class:`polytrav.Analysis` subclasses, each with a unique ``name``.
    """


# ---------------------------------------------------------------- a run of analyses


@hookspec
def polytrav_begin_run(context: "RunContext") -> None:
    """Called once per :func:`polytrav.analyze` run, before the first polytope is visited,
    after the run's analyses began.

    :param context: the run: network, region, frame, solvers and traversal statistics.
    :returns: nothing; the return value is ignored.
    """


@hookspec
def polytrav_visit_polytope(polytope: "Polytope", context: "RunContext") -> "Directive | None":
    """Called for every polytope the traversal emits, in visit order.

    A plugin implementing this hook is a *voter* of every run, beside the run's analyses: the
    run calls each voter itself and honours each return value (wrappers are refused).

    :param polytope: the polytope (code, interior point, local model, halfspaces).
    :param context: the run.
    :returns: ``None`` to go on, or a :class:`polytrav.extend.Directive`: ``Stop(reason)`` when this
        plugin needs no more polytopes (the run stops once every voter has stopped; it keeps
        calling a stopped voter until then), or ``Restrict(box)`` when it needs only
        polytopes meeting ``box``, which must contain ``context.start`` (a guided run
        shrinks its region once every voter has asked; see docs/hooks.md).
    """


@hookspec
def polytrav_piece_margin(piece: "PieceView", context: "RunContext") -> "float | None":
    """Called for a piece of the region before the traversal descends into it.

    Asked only when every voter proves pieces (an :class:`polytrav.Analysis` whose
    ``prunes_by_bound`` is True, or a plugin implementing this hook).

    :param piece: a :class:`polytrav.extend.PieceView`: the region (level 0) or a cell of a level.
    :param context: the run.
    :returns: a lower bound, sound for every point of the piece, of this plugin's margin: a
        positive margin proves that the plugin needs none of the piece's polytopes. The
        piece is skipped when every voter returns a positive margin; ``None`` proves nothing.
    """


@hookspec
def polytrav_end_run(context: "RunContext") -> None:
    """Called once after the traversal ended (complete or not), after the run's analyses
    finished.

    :param context: the run; ``context.status`` says whether the traversal was complete.
    :returns: nothing; the return value is ignored (the report holds the analyses' results).
    """
