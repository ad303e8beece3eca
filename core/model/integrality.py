"""Inputs that take discrete values: whole steps from a reference point, and one-hot groups.

Tabular inputs are often counts, months or levels (a grid) and categories encoded one-hot.
:class:`Integrality` says which: ``x_j = origin_j + k step_j`` with ``k`` integral where
``step_j > 0`` (the grid through the reference point, so a row's own value is always on it),
and per one-hot group ``x_g`` in ``{0, 1}`` with ``sum x_g = 1``. Analyses that honour it
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
    """``step`` per input (``> 0``: on the grid through ``origin``; 0: continuous) and the
    ``one_hot`` groups (index arrays, disjoint, no grid input among them)."""

    origin: np.ndarray
    step: np.ndarray
    one_hot: tuple[np.ndarray, ...] = ()

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
        grid) and each one-hot group set to its largest column."""
        x = np.array(x, dtype=float)
        g = self.grid
        k = (x[g] - self.origin[g]) / self.step[g]
        if outward:
            k = np.sign(k) * np.ceil(np.abs(k) - GRID_TOL)
        x[g] = self.origin[g] + self.step[g] * np.round(k)
        for group in self.one_hot:
            top = group[int(np.argmax(x[group]))]
            x[group] = 0.0
            x[top] = 1.0
        return x
