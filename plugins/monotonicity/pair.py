"""The running answer of a monotonicity run (:class:`Slopes`) and its witness: two points of
a polytope along the feature whose outputs move with its slope (:class:`PairCheck`)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from polytrav.extend import check_witness, SAME_VALUE_TOL

__all__ = ["PairCheck", "Slopes", "unit_step"]


@dataclass
class Slopes:
    """The slopes seen: their extremes, and ``(index, interior point, slope, radius)`` of
    each polytope with a negative or a positive one (those the direction may violate);
    ``confirmed`` is ``(index, interior point, slope, pair)`` of the polytope the run
    stopped at."""

    negative: list = field(default_factory=list)
    positive: list = field(default_factory=list)
    low: float = np.inf
    high: float = -np.inf
    confirmed: tuple | None = None


def unit_step(context, feature: int) -> np.ndarray | None:
    """A unit step in frame coordinates along the feature (None if the region fixes it)."""
    fr = context.frame
    e = np.zeros(context.network.n_inputs)
    e[feature] = 1.0
    if fr.free is not None:  # U selects coordinates: the feature's own, if it varies
        v = (e[fr.free] / fr.scale)
        return v / np.linalg.norm(v) if v.any() else None
    v, *_ = np.linalg.lstsq(fr.U, e, rcond=None)
    movable = np.allclose(fr.U @ v, e, atol=SAME_VALUE_TOL) and np.linalg.norm(v) > 0
    return v / np.linalg.norm(v) if movable else None


@dataclass(frozen=True)
class PairCheck:
    """Confirms a slope by two points along ``feature`` (``step_u``: :func:`unit_step`)."""

    feature: int
    output: int
    step_u: np.ndarray | None

    def confirm(self, context, x, slope, radius) -> tuple | None:
        """Two points of the polytope along the feature whose outputs differ with the slope.

        ``x`` and ``x'`` lie half the cell's Chebyshev radius either side of its centre along
        the feature's unit step in the frame; ``x'`` is ``x`` with only the feature's
        coordinate changed (so every other coordinate is equal exactly). Confirmed by a plain
        forward pass (strict change of the output with the slope's sign) and region
        membership of both points; None otherwise.
        """
        if self.step_u is None:
            return None
        fr, net = context.frame, context.network
        u = fr.to_u(x)
        step = 0.5 * radius * self.step_u
        x1 = fr.to_x(u - step)
        x2 = x1.copy()
        x2[self.feature] = fr.to_x(u + step)[self.feature]
        dy = float(net.forward(x2)[self.output] - net.forward(x1)[self.output])
        dx = float(x2[self.feature] - x1[self.feature])
        if dx <= 0 or dy == 0 or np.sign(dy) != np.sign(slope):
            return None
        if not all(check_witness(net, context.region, p, _anything) for p in (x1, x2)):
            return None
        return x1, x2


def _anything(y) -> bool:
    """Any output will do (the pair's points need only lie in the region)."""
    return True
