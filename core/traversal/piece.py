"""Pieces: the cells of one level of the traversal, as the engine and its callers see them.

A piece of level ``k`` is a cell on which the first ``k`` hidden layers are affine; level
``k + 1`` is searched inside it. :class:`Piece` is a level-1 piece as it travels to worker
processes and checkpoints (its code and a Chebyshev ball); :class:`PieceView` is what a
pruner sees of a piece of any level; :class:`Enclosure` is what the level search knows of
the piece it searches in.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Enclosure", "Piece", "PieceView"]


@dataclass(frozen=True, eq=False)
class Piece:
    """A level-1 piece: the first hidden layer's code and a Chebyshev ball inside it.

    ``u`` (the centre) and ``t`` (the radius) are in the region's frame coordinates. Pieces
    are small and picklable: they travel to worker processes and into checkpoints.
    """

    bits: np.ndarray
    u: np.ndarray
    t: float

    @property
    def key(self) -> bytes:
        """The code packed into bytes (a piece's identity within one run)."""
        return np.packbits(np.asarray(self.bits, bool)).tobytes()


class PieceView:
    """What a pruner sees of a piece: a cell of level ``level`` (0: the whole region).

    On the piece the first ``level`` hidden layers are affine: the input of layer ``level``
    is ``M @ u + m`` in frame coordinates ``u`` (``frame.to_x``). ``u``, ``t``: a Chebyshev
    ball inside the piece; ``vertices``: its vertices (frame coordinates; low dimension
    only, else None; for ball regions an outer hull's); :meth:`halfspaces`: ``A u <= b``,
    the region's rows and the fixed layers' rows (an outer hull for ball regions).
    """

    __slots__ = ("level", "code", "M", "m", "u", "t", "vertices", "frame", "_model", "_signs")

    def __init__(self, level, code, M, m, u, t, vertices, model, signs, frame):
        self.level, self.code, self.M, self.m = level, code, M, m
        self.u, self.t, self.vertices, self.frame = u, t, vertices, frame
        self._model, self._signs = model, signs

    def halfspaces(self, box: bool = True) -> tuple[np.ndarray, np.ndarray]:
        return self._model.halfspaces(self._signs, box)


@dataclass(frozen=True)
class Enclosure:
    """The piece a level is searched in: level ``level`` (0: the whole region).

    ``M u + m`` is the input of layer ``level`` on the piece (``M`` None: the frame's ``U``,
    which :meth:`Frame.pull` applies without building it); ``u``, ``t``: a Chebyshev ball
    inside it; ``V``: its vertices if known; ``code``: the codes of the layers fixed on it.
    """

    level: int
    M: np.ndarray | None
    m: np.ndarray
    u: np.ndarray
    t: float
    V: np.ndarray | None
    code: tuple
