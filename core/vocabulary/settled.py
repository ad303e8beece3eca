"""What an analysis's settle stage found on a run's region: :class:`Settled`.

A run calls :meth:`polytrav.Analysis.settle` once, before its traversal (see
:mod:`polytrav.host.settling`); the analysis answers with one :class:`Settled`: the region is
*proven* (no traversal), *violated* at a point it checked, or *open*: what is left to
traverse, the whole region from a start point or a list of boxes (:class:`OpenBox`), each
from its own start; the rest of the region is then proven by the stage. A stage may also ask
for a second round: *probe* these boxes (the host traverses them, in turn, for a while) and
call ``settle`` again with their results (``context.probed``).
"""
from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Settled", "Settlement", "SettledBy", "OpenBox"]


class Settlement(str, enum.Enum):
    """How a settle stage left the region."""

    PROVEN = "proven"  #: the whole region holds: no polytope needs a visit
    VIOLATED = "violated"  #: a point of the region violates (checked by the analysis)
    OPEN = "open"  #: what is left (``Settled.boxes``, else the whole region) is traversed
    #: traverse ``Settled.boxes`` in turn (for ``Settled.seconds``), then settle again
    PROBE = "probe"

    def __str__(self) -> str:
        return self.value


class SettledBy(str, enum.Enum):
    """What decided a settled region (``Settled.by``)."""

    ATTACK = "attack"  #: sampling and descents met the violating set
    BOUND = "bound"  #: the analysis's bound over the whole region (its piece margin there)
    SPLIT = "split"  #: input splitting: every sub-box proven by bounds
    BRANCH_AND_BOUND = "branch_and_bound"  #: neuron-level branch and bound
    MILP = "milp"  #: a mixed-integer program over the region

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, eq=False)
class OpenBox:
    """A box ``[lower, upper]`` of the region that the stage left open, and where its
    traversal starts (None: the box's own start point)."""

    lower: np.ndarray
    upper: np.ndarray
    start: np.ndarray | None = None

    def __post_init__(self):
        object.__setattr__(self, "lower", np.asarray(self.lower, float))
        object.__setattr__(self, "upper", np.asarray(self.upper, float))
        if self.start is not None:
            object.__setattr__(self, "start", np.asarray(self.start, float))


@dataclass(frozen=True, eq=False)
class Settled:
    """What a settle stage found; build it with :meth:`proven`, :meth:`violated`,
    :meth:`open` or :meth:`probe`.

    ``outcome``: a :class:`Settlement`. ``point``: with VIOLATED the violating point (a
    forward pass put it in the violating set and the analysis confirmed it as it confirms a
    witness); with OPEN and no boxes, where the traversal of the whole region starts (None:
    the analysis's :meth:`~polytrav.Analysis.start_point`). ``boxes``: with OPEN, the
    :class:`OpenBox` es left to traverse, in order (empty: the whole region); the rest of the
    region is proven by the stage (the boxes are disjoint up to their faces). ``by``: what
    decided a PROVEN or VIOLATED region (:class:`SettledBy`). ``proven_boxes``: how many
    boxes the stage proved (their polytopes are not visited). ``seconds``: with PROBE, how
    long the boxes' runs may take (None: the run's time left). ``stats``: the stage's own
    counters, JSON-safe; the run reports them as ``Report.stats["settle"]``.
    """

    outcome: Settlement
    point: np.ndarray | None = None
    boxes: tuple[OpenBox, ...] = ()
    by: SettledBy | None = None
    proven_boxes: int = 0
    stats: Mapping[str, Any] = field(default_factory=dict)
    seconds: float | None = None

    def __post_init__(self):
        object.__setattr__(self, "outcome", Settlement(self.outcome))
        if self.by is not None:
            object.__setattr__(self, "by", SettledBy(self.by))
        object.__setattr__(self, "boxes", tuple(self.boxes))
        if self.outcome is Settlement.VIOLATED and self.point is None:
            raise ValueError("Settled.violated needs the violating point")
        if self.boxes and self.outcome not in (Settlement.OPEN, Settlement.PROBE):
            raise ValueError(f"a {self.outcome} region has no open boxes")
        if self.outcome is Settlement.PROBE and not self.boxes:
            raise ValueError("Settled.probe needs the boxes to probe")
        if self.boxes and self.point is not None:
            raise ValueError("open boxes carry their own start points (OpenBox.start), not "
                             "the region's")

    @classmethod
    def proven(cls, by: SettledBy | str, boxes: int = 1, **stats) -> "Settled":
        """The whole region holds, decided ``by`` (``boxes``: how many boxes it proved)."""
        return cls(Settlement.PROVEN, by=by, proven_boxes=boxes, stats=stats)

    @classmethod
    def violated(cls, point, by: SettledBy | str, **stats) -> "Settled":
        """``point`` violates (checked as the analysis checks a witness), found ``by``."""
        return cls(Settlement.VIOLATED, point=np.asarray(point, float), by=by, stats=stats)

    @classmethod
    def open(cls, start=None, boxes=(), proven_boxes: int = 0, **stats) -> "Settled":
        """Left open: the whole region from ``start``, or the ``boxes`` (the rest of the
        region proven by the stage, in ``proven_boxes`` boxes)."""
        return cls(Settlement.OPEN, point=None if start is None else np.asarray(start, float),
                   boxes=tuple(boxes), proven_boxes=proven_boxes, stats=stats)

    @classmethod
    def probe(cls, boxes, seconds: float | None = None, **stats) -> "Settled":
        """Not yet settled: traverse the ``boxes`` (:class:`OpenBox` es, in turn, until one
        does not hold, for at most ``seconds``), then call ``settle`` again, which finds their
        results in ``context.probed``. A box whose run holds is proven: the run's answer
        merges it as an exact part (the next answer must leave it out); a run that finds a
        confirmed violation ends the run; any other probe run counts only its work."""
        return cls(Settlement.PROBE, boxes=tuple(boxes), seconds=seconds, stats=stats)

    @property
    def decided(self) -> bool:
        """Whether the stage answered for the whole region (no traversal follows)."""
        return self.outcome in (Settlement.PROVEN, Settlement.VIOLATED)

    def summary(self) -> dict[str, Any]:
        """The stage as ``Report.stats["settle"]`` holds it: outcome, by, boxes left open,
        boxes proven, and the stage's counters."""
        return {"outcome": self.outcome.value, "by": None if self.by is None else self.by.value,
                "open_boxes": len(self.boxes), "proven_boxes": self.proven_boxes, **self.stats}
