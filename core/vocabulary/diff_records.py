"""What the ``model_diff`` analysis hands :func:`polytrav.diff`: declared records, not string keys.

The analysis (:mod:`polytrav.plugins.model_diff`) runs on the joint network ``[f; g]``; its
``AnalysisResult.details`` holds, under ``"outputs"``, ``"decisions"``, ``"features"`` and
``"violation"``, the records below (each JSON-safe through ``to_dict``), which
:mod:`polytrav.host.diff` turns into a :class:`~polytrav.host.diff.DiffResult` (forward
passes of ``f`` and ``g`` themselves, each network's own codes). ``d_j = g_j - f_j``;
points are inputs of the region, codes the joint polytope's (as a run spells them).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["OutputExtremes", "ChangeCell", "DecisionCells", "SlopeMax", "DiffViolation"]


def _list(x):
    return None if x is None else [float(v) for v in np.asarray(x).reshape(-1)]


@dataclass(frozen=True, eq=False)
class OutputExtremes:
    """Output ``output``: the largest ``d_j`` (``max``, at ``argmax`` in polytope ``max_code``)
    and the smallest (``min``, ``argmin``, ``min_code``) over the visited polytopes
    (``-inf`` / ``inf`` where none was)."""

    output: int
    max: float
    argmax: np.ndarray | None
    max_code: str | None
    min: float
    argmin: np.ndarray | None
    min_code: str | None

    @property
    def max_abs(self) -> float:
        """The largest ``|d_j|``."""
        return max(self.max, -self.min)

    @property
    def worst(self) -> tuple[float, np.ndarray | None, str | None]:
        """``(d_j, x, code)`` where ``|d_j|`` is largest (the maximum on a tie)."""
        if self.max >= -self.min:
            return self.max, self.argmax, self.max_code
        return self.min, self.argmin, self.min_code

    def to_dict(self) -> dict[str, Any]:
        return {"output": self.output, "max": self.max, "argmax": _list(self.argmax),
                "max_code": self.max_code, "min": self.min, "argmin": _list(self.argmin),
                "min_code": self.min_code, "max_abs": self.max_abs}


@dataclass(frozen=True, eq=False)
class ChangeCell:
    """A cell of joint polytope ``polytope`` (``code``) where ``f`` picks class index
    ``f_class`` and ``g`` picks ``g_class``, strictly: ``x`` its Chebyshev centre, ``radius``
    in the frame's coordinates, ``confirmed`` by a forward pass of the joint network;
    ``volume_share`` its exact share of the region (low dimension) or None."""

    polytope: int
    code: str
    f_class: int
    g_class: int
    x: np.ndarray
    radius: float
    confirmed: bool
    volume_share: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"polytope": self.polytope, "code": self.code, "f_class": self.f_class,
                "g_class": self.g_class, "x": _list(self.x), "radius": self.radius,
                "confirmed": self.confirmed, "volume_share": self.volume_share}


@dataclass(frozen=True, eq=False)
class DecisionCells:
    """Where the decisions differ. ``changed``: True (a cell found), False (proven none) or
    None (unknown: a partial run or an undecided LP); ``exact``: the search covered the
    region; ``n_polytopes``: polytopes with a cell; ``changes``: the cells; ``ambiguous``:
    LPs (or ball regions' polytopes) that decided nothing; ``volume_share`` ``(low, high)``
    of the region, with ``volume_method`` saying how (None where volumes were not asked)."""

    changed: bool | None
    exact: bool
    n_polytopes: int
    changes: tuple[ChangeCell, ...]
    ambiguous: int
    volume_share: tuple[float, float] | None = None
    volume_method: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"changed": self.changed, "exact": self.exact, "n_polytopes": self.n_polytopes,
                "changes": [c.to_dict() for c in self.changes], "ambiguous": self.ambiguous,
                "volume_share": None if self.volume_share is None else list(self.volume_share),
                "volume_method": self.volume_method}


@dataclass(frozen=True, eq=False)
class SlopeMax:
    """Output ``output``, input ``input``: the largest ``|∂d_j/∂x_i|`` (``max_abs``, signed
    ``slope``) over the polytopes, on ``polytope`` (``code``, ``x`` a point inside it);
    ``exact``: over every polytope of the region; ``mean_abs``: the volume-weighted mean, or
    None."""

    output: int
    input: int
    max_abs: float
    slope: float
    polytope: int
    code: str
    x: np.ndarray
    exact: bool
    mean_abs: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"output": self.output, "input": self.input, "max_abs": self.max_abs,
                "slope": self.slope, "polytope": self.polytope, "code": self.code,
                "x": _list(self.x), "exact": self.exact, "mean_abs": self.mean_abs}


@dataclass(frozen=True, eq=False)
class DiffViolation:
    """A point ``x`` (in polytope ``code``) where ``|d_output| = |value| > epsilon``, checked by
    a forward pass of the joint network."""

    output: int
    value: float
    x: np.ndarray
    code: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"output": self.output, "value": self.value, "x": _list(self.x),
                "code": self.code}
