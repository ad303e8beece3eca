"""The slope of one output in one feature: a sound bound over a piece (:class:`SlopeBound`)
and its exact value at points (:func:`local_slopes`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from polytrav.extend import slope_bounds, BOUND_TOL

if TYPE_CHECKING:
    from collections.abc import Sequence

    from polytrav import Network

__all__ = ["SlopeBound", "local_slopes"]


@dataclass(frozen=True)
class SlopeBound:
    """The slope of ``output`` in ``feature``, bounded over a piece against ``direction``
    (``meet``: how, see :func:`~polytrav.bounds.slope.slope_bounds`)."""

    feature: int
    output: int
    direction: str | None
    meet: str = "forward"

    def margin(self, network: Network, piece, lp: Sequence = ()) -> float:
        """A sound lower bound of the slope's margin over every polytope of ``piece`` (a
        :class:`~polytrav.traversal.PieceView` or a :class:`~polytrav.bounds.split.BoxPiece`):
        ``min slope`` for ``"increasing"``, ``-max slope`` for ``"decreasing"``; a margin
        ``>= 0`` is returned as the next float above (it proves the piece). ``lp``: the LP
        backends, whose first one's session tightens the pre-activation bounds by the
        piece's rows where it has no vertices (a box has no rows beyond its bounds)."""
        from polytrav.extend import Concretizer, output_lower_bounds

        lvl = piece.level
        masks = []  # per hidden layer: (on, off); unstable is neither
        for k in range(lvl):  # the fixed layers: the piece's code
            code = np.asarray(piece.code[k], bool)
            masks.append((code, ~code))
        layers = list(zip(network.weights[lvl:], network.biases[lvl:]))
        if len(layers) > 1:
            halfspaces = session = None
            if piece.vertices is None:
                halfspaces = piece.halfspaces(box=False)
                session = lp[0].lp_session() if len(lp) else None
            conc = Concretizer(piece.frame.dim, piece.vertices, halfspaces, session)
            e = np.zeros((1, network.n_outputs))
            e[0, self.output] = 1.0
            _, _, bounds = output_lower_bounds(layers, piece.M, piece.m, e, conc)
            for k in range(len(layers) - 1):
                lo, hi = bounds.lo[k], bounds.hi[k]
                allowance = BOUND_TOL * (1.0 + np.abs(lo) + np.abs(hi))
                masks.append((lo > allowance, hi < -allowance))
        lo_s, hi_s = slope_bounds(network.weights, masks, self.feature, self.output,
                                  meet=self.meet)
        margin = float(lo_s if self.direction == "increasing" else -hi_s)
        return margin if margin < 0 else float(np.nextafter(margin, np.inf))


def local_slopes(network: Network, X: np.ndarray, feature: int, output: int) -> np.ndarray:
    """The local slopes of ``output`` in ``feature`` at the points ``X`` (one forward and
    one backward pass through the active neurons, the codes' convention)."""
    hs, _ = network.trace(X)
    rows = np.zeros((len(X), network.n_outputs))
    rows[:, output] = 1.0
    return network.input_gradient(rows, hs)[:, feature]
