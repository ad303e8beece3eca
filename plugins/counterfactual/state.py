"""The running answer of a counterfactual run: :class:`Best` and the cell it was found in."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["NOTHING_NEARER", "Best", "ClassCell"]

#: "Nothing nearer than the best here, proven" (the direct L∞ LP, a cell's MILP).
NOTHING_NEARER = np.zeros(0)


@dataclass(frozen=True, eq=False)
class ClassCell:
    """A polytope's cell of one class in frame coordinates: the polytope's rows ``values``
    (:func:`~polytrav.host.analysis.cell_values`), the class rows ``K u + h >= 0``
    (normalised) and the minimiser ``u`` found there."""

    values: dict
    K: np.ndarray
    h: np.ndarray
    u: np.ndarray


@dataclass
class Best:
    """The nearest point of another class found so far (``distance`` inf: none yet)."""

    distance: float = np.inf
    point: np.ndarray | None = None  #: on the class boundary
    target: int | None = None  #: the class it reaches
    #: Where it was found (the witness's LP works in it); None for the MILP's point and for
    #: a snapped valid point.
    cell: ClassCell | None = None

    def take(self, distance: float, point: np.ndarray, target: int,
             cell: ClassCell | None) -> None:
        """Make ``point`` the best."""
        self.distance, self.point, self.target, self.cell = distance, point, target, cell
