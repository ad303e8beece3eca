"""What the bounds read of the objects they are given, as protocols: a piece of the region
and a run. The traversal's :class:`~polytrav.traversal.PieceView` and the run's
:class:`~polytrav.host.runner.RunContext` are such objects; so are the input split's
:class:`~polytrav.bounds.split.BoxPiece` and :class:`~polytrav.bounds.split.LpContext`,
which bound a box outside any traversal."""
from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["PieceFrame", "BoundPiece", "BoundContext"]


@runtime_checkable
class PieceFrame(Protocol):
    """A piece's coordinates: ``dim`` of them, ``to_x(u)`` the input point of ``u``."""

    dim: int

    def to_x(self, u: np.ndarray) -> np.ndarray: ...


@runtime_checkable
class BoundPiece(Protocol):
    """A piece of the region: the input of layer ``level`` is ``M @ u + m`` on it (``u`` in
    its ``frame``), its fixed layers' ``code``, its ``vertices`` (or None) and its rows."""

    level: int
    code: tuple
    vertices: np.ndarray | None
    M: np.ndarray
    m: np.ndarray
    frame: PieceFrame

    def halfspaces(self, box: bool = True) -> tuple[np.ndarray, np.ndarray]: ...


@runtime_checkable
class BoundContext(Protocol):
    """A run, as bounds see it: the network and a backend chain per problem form (empty
    for a form none serves, unless ``required``)."""

    network: Any

    def backends(self, form: str, required: bool = True) -> list: ...
