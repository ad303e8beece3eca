"""How plugins steer a run: their directives, the pieces they prove, the order of the frontier.

The **voters** of a run are its analyses (called directly:
:meth:`~polytrav.Analysis.visit_polytope`, :meth:`~polytrav.Analysis.piece_margin`) and every
registered plugin that implements ``polytrav_visit_polytope``. :class:`Voters` calls each
voter itself, so that every return value is attributed to its voter and honoured as the
hookspecs say:

* ``Stop(reason)``: the voter needs no more polytopes; the run stops after the polytope at
  which the last voter stopped.
* ``Restrict(box, ball=None)``: the voter needs only polytopes meeting ``box`` (and
  ``ball``), which must contain the start point; on a guided run (:class:`Guide`: every
  analysis is ``prunable``), once every voter has asked, the region shrinks to the bounding
  box of their boxes, and once every voter gave a ball, a neighbour whose new halfspace
  misses every ball is skipped without an LP. A voter's ball only narrows: one that is not
  provably inside its earlier ball leaves the earlier in force.
* a piece margin (``polytrav_piece_margin``): a positive margin proves that the voter needs none of the
  piece's polytopes; a piece is skipped when every voter proves it (:meth:`Voters.margin`).

Pluggy's ``hookwrapper``/``wrapper`` implementations cannot be attributed, so they are
refused on the voting hooks.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from polytrav.host.analysis import Analysis, Restrict, Stop
from polytrav.host.manager import TRACE, tracing
from polytrav.model.region import Ball, Box
from polytrav.vocabulary.errors import ConfigError, PluginError
from polytrav.vocabulary.tolerances import CONTAINS_TOL

if TYPE_CHECKING:
    from polytrav.host.runner import RunContext

__all__ = ["Voters", "Guide", "VOTING_HOOKS"]

#: The hooks whose return values are counted per plugin.
VOTING_HOOKS = ("polytrav_visit_polytope", "polytrav_piece_margin")


def _implementations(pm, hook: str) -> list[tuple[str, Callable]]:
    """``(plugin name, call(**kwargs))`` of every implementation of ``hook`` by the manager's
    plugins, in pluggy's call order (the last registered first)."""
    out = []
    for impl in reversed(getattr(pm.hook, hook).get_hookimpls()):
        if impl.hookwrapper or impl.wrapper:
            raise PluginError(f"plugin {impl.plugin_name!r} wraps {hook}, whose return values "
                              "polytrav counts per plugin: implement it without a wrapper",
                              plugin=impl.plugin_name)
        names, fn = impl.argnames, impl.function

        def call(kwargs, names=names, fn=fn):
            return fn(*[kwargs[n] for n in names])

        out.append((impl.plugin_name, _traced(call, hook, impl.plugin_name) if tracing() else call))
    return out


def _traced(call: Callable, hook: str, plugin: str) -> Callable:
    """``call``, logging each call and its answer (``POLYTRAV_TRACE_PLUGINS=1``): the voting
    hooks are called one implementation at a time, past pluggy's own call monitoring."""
    def traced(kwargs):
        out = call(kwargs)
        TRACE.info("%s(%s) -> %s returned %r", hook, ", ".join(kwargs), plugin, out)
        return out
    return traced


def _analysis_voter(a: Analysis) -> tuple[str, Callable, Callable | None]:
    """``(name, visit, margin or None)`` of an analysis, called directly by the run."""
    margin = None
    if a.prunes_by_bound:
        def margin(kwargs, a=a):
            return a.piece_margin(kwargs["piece"], kwargs["context"])
    return (f"analysis:{a.label}",
            lambda kwargs, a=a: a.visit_polytope(kwargs["polytope"], kwargs["context"]), margin)


class Voters:
    """The run's voters and what they asked for so far (see the module doc): its analyses,
    then the manager's plugins that implement ``polytrav_visit_polytope``."""

    def __init__(self, analyses: Sequence[Analysis], pm):
        voters = [_analysis_voter(a) for a in analyses]
        margins = dict(_implementations(pm, "polytrav_piece_margin"))
        voters += [(name, visit, margins.get(name))
                   for name, visit in _implementations(pm, "polytrav_visit_polytope")]
        self._visit = [(name, visit) for name, visit, _ in voters]
        self.names = [name for name, _, _ in voters]
        #: Whether every voter proves pieces (only then does the run prune by bounds).
        self.prove_pieces = bool(voters) and all(m is not None for _, _, m in voters)
        self._margins = [m for _, _, m in voters] if self.prove_pieces else []
        self.stopped: dict[str, str] = {}  # voter -> the reason it gave
        self.boxes: dict[str, Box] = {}  # voter -> its last Restrict box
        self.balls: dict[str, Ball | None] = {}  # voter -> its last Restrict ball

    @property
    def all_stopped(self) -> bool:
        """Whether every voter has returned ``Stop``."""
        return bool(self.names) and len(self.stopped) == len(self.names)

    def visit(self, polytope, context: "RunContext") -> None:
        """Call every voter on ``polytope`` and record its directive."""
        kwargs = {"polytope": polytope, "context": context}
        for name, call in self._visit:
            directive = call(kwargs)
            if directive is None:
                continue
            if isinstance(directive, Stop):
                self.stopped.setdefault(name, directive.reason)
            elif isinstance(directive, Restrict):
                self._restrict(name, directive, context.start)
            else:
                raise PluginError(
                    f"plugin {name!r}: polytrav_visit_polytope returned {directive!r}; "
                    f"expected None or a Directive (Stop, Restrict)", plugin=name)

    def _restrict(self, name: str, directive: Restrict, start: np.ndarray | None) -> None:
        """Record a voter's ``Restrict``: its box, and its ball if that fits inside its earlier
        one (a flip skipped for missing a ball is never decided again, so a voter's ball only
        narrows: a larger one, or none, leaves the earlier in force)."""
        ball = directive.ball
        if ball is not None and not isinstance(ball, Ball):
            raise PluginError(f"plugin {name!r}: Restrict(box, ball=...) takes a polytrav.Ball, "
                              f"got {type(ball).__name__}", plugin=name)
        if ball is not None and start is not None and ball.n_dims != start.shape[0]:
            raise PluginError(f"plugin {name!r}: Restrict's ball has {ball.n_dims} coordinates, "
                              f"the network {start.shape[0]} inputs", plugin=name)
        for what, where in (("box", directive.box), ("ball", ball)):
            if where is not None and start is not None \
                    and not where.contains(start, tol=CONTAINS_TOL):
                raise ConfigError(f"plugin {name!r}: Restrict's {what} must contain the start "
                                  f"point {np.round(start, 6).tolist()}")
        self.boxes[name] = directive.box
        old = self.balls.get(name)
        if old is None or (ball is not None and _inside(ball, old)):
            self.balls[name] = ball

    def margin(self, piece, context: "RunContext") -> float:
        """The smallest voter margin over ``piece`` (a voter returning None proves nothing)."""
        kwargs = {"piece": piece, "context": context}
        low = np.inf
        for call in self._margins:
            m = call(kwargs)
            if m is None:
                return -np.inf
            low = min(low, float(m))
            if low <= 0:
                return low
        return low

    def restriction(self) -> Box | None:
        """The bounding box of every voter's restriction, once each voter has asked."""
        if len(self.boxes) < len(self.names):
            return None
        boxes = [self.boxes[n] for n in self.names]
        return Box(np.min([b.lower for b in boxes], axis=0), np.max([b.upper for b in boxes], axis=0))

    def restriction_balls(self) -> tuple[Ball, ...] | None:
        """Every voter's ball, once each voter has given one (a polytope matters if it meets
        one of them); None while some voter gave none."""
        balls = tuple(self.balls.get(n) for n in self.names)
        return None if not balls or any(b is None for b in balls) else balls


def _inside(inner: Ball, outer: Ball) -> bool:
    """Whether ``inner`` provably lies in ``outer`` (same norm and scale: centre distance +
    radius)."""
    same = (inner.scale is None and outer.scale is None) or (
        inner.scale is not None and outer.scale is not None
        and np.array_equal(inner.scale, outer.scale))
    return (inner.norm == outer.norm and same
            and outer.distance(inner.center) + inner.radius <= outer.radius)


class Guide:
    """The traversal guide of a run whose analyses are all ``prunable``.

    ``key(bits)``: the smallest of the analyses' ``piece_bound`` over a level-1 piece (pieces
    are expanded in increasing key order); ``prune(key)``: whether no voter needs a piece
    with that bound (``key >= threshold()`` for each analysis, and every other voter has
    stopped); ``restriction()``: the bounding box of the voters' boxes, once each has asked.
    """

    def __init__(self, analyses: Sequence[Analysis], voters: Voters, context: "RunContext"):
        self.analyses = analyses
        self.voters = voters
        self.context = context
        labels = {f"analysis:{a.label}" for a in analyses}
        self._others = [n for n in voters.names if n not in labels]  # voters that are plugins
        self._box = None
        self._boxes: tuple = ()
        self._balls = None

    @staticmethod
    def possible(analyses: Sequence[Analysis]) -> bool:
        """Whether a run can be guided: every analysis is prunable."""
        return all(a.prunable for a in analyses)

    def key(self, bits: np.ndarray) -> float:
        self.context.n_pieces_bounded += 1  # the analyses' bounds are queries, counted here
        return min(a.piece_bound(bits, self.context) for a in self.analyses)

    def prune(self, key: float) -> bool:
        return (all(key >= a.threshold() for a in self.analyses)
                and all(n in self.voters.stopped for n in self._others))

    def restriction(self) -> Box | None:
        boxes = tuple(self.voters.boxes.get(n) for n in self.voters.names)
        if any(b is None for b in boxes):
            return None
        if boxes != self._boxes:  # the same object while nothing changed (the traversal
            self._boxes = boxes   # re-applies a box only when it is a new one)
            self._box = self.voters.restriction()
        return self._box

    def balls(self) -> tuple[Ball, ...] | None:
        """The voters' balls (see :meth:`Voters.restriction_balls`), the same tuple object
        while none changed."""
        balls = self.voters.restriction_balls()
        if balls != self._balls:
            self._balls = balls
        return self._balls
