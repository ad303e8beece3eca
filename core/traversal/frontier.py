"""The frontier: which cells of a level are expanded, in which order, and which are skipped.

A level keeps the cells it found but has not expanded in a :class:`Frontier`: first in,
first out (the paper's breadth-first order), by a guide's key (level 1 of a guided run), or
by a pruner's margin (best-first). :class:`Guidance` applies a guide before a level-1 piece
is expanded: it ends the level once the guide prunes a key, solves the flips queued unsolved,
and shrinks the region when the guide restricts it. :class:`Pruner` asks the caller's bound
for a piece's margin and records the pieces it proves (no polytope in them is needed).
"""
from __future__ import annotations

import heapq
import time
from collections import deque
from typing import NamedTuple

import numpy as np

from polytrav.model.geometry import ZERO_ROW_TOL
from polytrav.model.region import Box
from polytrav.solve.chebyshev import ChebyshevModel
from polytrav.traversal.cell_solver import CellSolver
from polytrav.traversal.piece import PieceView
from polytrav.traversal.screen import LevelRows
from polytrav.traversal.status import TraversalStats
from polytrav.vocabulary.text import code_string
from polytrav.vocabulary.tolerances import SLIVER_TOL

__all__ = ["Frontier", "Guidance", "Pruner", "Queued", "volume"]


class Queued(NamedTuple):
    """A cell waiting in a frontier (``u``, ``t``, ``version`` None: a flip queued unsolved)."""

    signs: np.ndarray  #: the level's representatives' signs
    u: np.ndarray | None  #: Chebyshev centre
    t: float | None  #: Chebyshev radius
    parent: int | None  #: index of the polytope it was found from
    version: int | None  #: the region's version when it was solved
    margin: float | None  #: the pruner's margin (best-first)
    V: np.ndarray | None  #: its vertices, if computed


class Frontier:
    """Cells waiting to be expanded: first in, first out, by the guide's key, or (``ranked``)
    by increasing margin (cells without one first: slivers, which only connect)."""

    def __init__(self, guide=None, ranked: bool = False):
        self.guide = guide
        self.heap = guide is not None or ranked
        self.items = [] if self.heap else deque()
        self.n = 0

    def __len__(self) -> int:
        return len(self.items)

    def push(self, item, full_bits, signs, margin=None) -> None:
        if not self.heap:
            self.items.append(item)
            return
        if self.guide is not None:
            key = self.guide.key(full_bits(signs))
        else:
            key = -np.inf if margin is None else margin
        heapq.heappush(self.items, (key, self.n, item))
        self.n += 1

    def pop(self):
        if not self.heap:
            return -np.inf, self.items.popleft()
        key, _, item = heapq.heappop(self.items)
        return key, item


class Guidance:
    """A guide's steering of level 1: prune by key, solve queued flips, restrict the region.

    ``version`` counts the restrictions applied (0: the region as given).
    """

    def __init__(self, guide, net, frame, cells: CellSolver, stats: TraversalStats):
        self.guide = guide
        self.net, self.frame, self.cells, self.stats = net, frame, cells, stats
        self.box = None  # the guide's restriction last applied
        self.version = 0

    def steer(self, model: ChebyshevModel, rows: LevelRows, key, item: Queued, n_left: int):
        """Apply the guide before expanding a level-1 piece.

        Returns ``None`` to end the level (the guide prunes this key, hence every later one),
        ``(0, None)`` to skip a piece that is empty or no longer meets the restricted region,
        else the piece's ``(t, u)`` (solved now for a flip queued unsolved, ``version``
        None; re-solved if the region shrank since it was found).
        """
        st = self.stats
        signs, u, t, version = item.signs, item.u, item.t, item.version
        box = self.guide.restriction()
        if box is not None and box is not self.box:
            self.box = box
            self.restrict(model, box)
        if self.guide.prune(key):
            st.pruned += 1 + n_left
            return None
        if version is None:  # a flip queued unsolved
            model.set_signs(rows.lp_signs(signs))
            st.flips_solved += 1
            cell = self.cells.solve(model, ("flip", 0))
            return (0.0, None) if cell is None else cell
        if version != self.version:
            model.set_signs(rows.lp_signs(signs))
            cell = self.cells.solve(model, ("restrict", 0))
            if cell is not None:
                if cell[0] <= SLIVER_TOL:
                    st.pruned += 1
                    return 0.0, None
                return cell
        return t, u

    def restrict(self, model: ChebyshevModel, box: Box) -> None:
        """Add ``box``'s rows (those that cut the frame box) to the model as region rows."""
        fr = self.frame
        lo, hi = box.with_dims(self.net.n_inputs).bounding_box()
        rows, rhs = [], []
        for j in range(fr.origin.shape[0]):
            a = fr.U[j]
            n = np.linalg.norm(a)
            if n <= ZERO_ROW_TOL:
                continue
            for sign, bound in ((1.0, hi[j]), (-1.0, -lo[j])):
                if np.isfinite(bound):
                    r = (bound - sign * fr.origin[j]) / n
                    if r < np.abs(a).sum() / n:  # the row cuts [-1, 1]^d
                        rows.append(sign * a / n)
                        rhs.append(r)
        if rows:
            model.add_region_rows(np.array(rows), np.array(rhs))
            self.version += 1
            self.stats.restrictions += 1


class Pruner:
    """The caller's bound on pieces (``prune``: a :class:`PieceView` to a margin; None: no
    pruning); a positive margin proves the piece, recorded in ``proven_pieces``."""

    def __init__(self, prune, stats: TraversalStats, proven_pieces: list):
        self.prune = prune
        self.stats = stats
        self.proven_pieces = proven_pieces
        #: The region's volume, where computable (set by the engine).
        self.region_volume: float | None = None

    def margin(self, view: PieceView) -> float:
        """The pruner's margin on a piece; a positive one is recorded as a proven piece."""
        st = self.stats
        t0 = time.perf_counter()
        margin = float(self.prune(view))
        st.bound_calls += 1
        st.bound_time += time.perf_counter() - t0
        if margin > 0:
            share = None
            if self.region_volume and view.vertices is not None:
                vol = volume(view.vertices)
                share = None if vol is None else vol / self.region_volume
                st.proven_volume_share += share or 0.0
            st.proven[view.level] += 1
            self.proven_pieces.append((view.level, code_string(view.code), share))
        return margin


def volume(V: np.ndarray) -> float | None:
    """The volume of the convex hull of the points ``V`` (None if qhull cannot tell)."""
    from scipy.spatial import ConvexHull, QhullError

    try:
        return float(ConvexHull(V).volume) if V.shape[1] > 1 else float(np.ptp(V[:, 0]))
    except (QhullError, ValueError):
        return None
