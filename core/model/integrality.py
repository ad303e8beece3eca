"""Inputs that take discrete values: whole steps from a reference point, and one-hot groups.

Tabular inputs are often counts, months or levels (a grid) and categories encoded one-hot.
:class:`Integrality` says which: ``x_j = origin_j + k step_j`` with ``k`` integral where
``step_j > 0`` (the grid through the reference point, so a row's own value is always on it),
and per one-hot group ``x_g`` in ``{0, 1}`` with ``sum x_g = 1`` (``<= 1`` where the
baseline category's column was dropped, as ``OneHotEncoder(drop="first")`` does). Analyses that honour it
(the counterfactual's per-cell and region MILPs) search the valid points only; every
relaxation bound over the continuous box stays a sound lower bound.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from polytrav.vocabulary.tolerances import GRID_TOL

__all__ = ["Integrality"]


@dataclass(frozen=True)
class Integrality:
    """``step`` per input (``> 0``: on the grid through ``origin``; 0: continuous), the
    ``one_hot`` groups (index arrays, disjoint, no grid input among them) and, per group,
    whether its baseline column was ``dropped`` (then all columns may be 0; default: none)."""

    origin: np.ndarray
    step: np.ndarray
    one_hot: tuple[np.ndarray, ...] = ()
    dropped: tuple[bool, ...] = ()

    def is_dropped(self, i: int) -> bool:
        """Whether group ``i`` may be all 0 (its baseline column was dropped)."""
        return bool(self.dropped[i]) if i < len(self.dropped) else False

    @property
    def grid(self) -> np.ndarray:
        """Indices of the grid inputs."""
        return np.flatnonzero(self.step > 0)

    @property
    def discrete(self) -> np.ndarray:
        """Indices of every discrete input (grid and one-hot)."""
        return np.sort(np.concatenate([self.grid, *self.one_hot]).astype(int))

    def step_range(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per grid input, the least and greatest ``k`` with ``origin + k step`` in
        ``[lo, hi]`` (within :data:`GRID_TOL` of a step)."""
        g = self.grid
        s, o = self.step[g], self.origin[g]
        return np.ceil((lo[g] - o) / s - GRID_TOL), np.floor((hi[g] - o) / s + GRID_TOL)

    def snap(self, x: np.ndarray, outward: bool = False) -> np.ndarray:
        """``x`` with each grid input on its nearest grid value (``outward``: the next one
        away from ``origin``, where ``x`` is more than :data:`GRID_TOL` of a step off the
        grid) and each one-hot group set to its largest column (all 0, where the baseline
        was dropped, if that column is below 1/2)."""
        x = np.array(x, dtype=float)
        g = self.grid
        k = (x[g] - self.origin[g]) / self.step[g]
        if outward:
            k = np.sign(k) * np.ceil(np.abs(k) - GRID_TOL)
        x[g] = self.origin[g] + self.step[g] * np.round(k)
        for i, group in enumerate(self.one_hot):
            top = group[int(np.argmax(x[group]))]
            keep = not self.is_dropped(i) or x[top] >= 0.5
            x[group] = 0.0
            x[top] = 1.0 if keep else 0.0
        return x
