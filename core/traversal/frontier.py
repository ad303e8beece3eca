"""The frontier: which cells of a level are expanded, in which order, and which are skipped.

A level keeps the cells it found but has not expanded in a :class:`Frontier`: first in,
first out (the paper's breadth-first order), by a guide's key (level 1 of a guided run), or
by a pruner's margin (best-first). :class:`GuideRules` applies a guide before a level-1 piece
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
from polytrav.vocabulary.tolerances import BALL_MISS_TOL, SLIVER_TOL

__all__ = ["Frontier", "GuideRules", "Pruner", "Queued", "volume"]


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


class GuideRules:
    """A guide's steering of level 1: prune by key, solve queued flips, restrict the region.

    ``version`` counts the restrictions applied (0: the region as given).
    """

    def __init__(self, guide, net, frame, cells: CellSolver, stats: TraversalStats):
        self.guide = guide
        self.net, self.frame, self.cells, self.stats = net, frame, cells, stats
        self.box = None  # the guide's restriction last applied
        self.version = 0
        self.balls = None  # the guide's balls last applied
        self.ball_version = 0
        self._pinv = None  # pseudo-inverse of the frame's U (x-space rows of the LP rows)

    def steer(self, model: ChebyshevModel, rows: LevelRows, key, item: Queued, n_left: int):
        """Apply the guide before expanding a level-1 piece.

        Returns ``None`` to end the level (the guide prunes this key, hence every later one),
        ``(0, None)`` to skip a piece that is empty or no longer meets the restricted region,
        else the piece's ``(t, u)`` (solved now for a flip queued unsolved, ``version``
        None; re-solved if the region shrank since it was found).
        """
        st = self.stats
        self.update(model)
        if self.guide.prune(key):
            st.pruned += 1 + n_left
            return None
        if item.version is None:  # a flip queued unsolved
            model.set_signs(rows.lp_signs(item.signs))
            st.flips_solved += 1
            cell = self.cells.solve(model, ("flip", 0))
            return (0.0, None) if cell is None else cell
        return self.refresh(model, rows, item, 0)

    def update(self, model: ChebyshevModel) -> None:
        """Apply the guide's restriction (box and balls) if it is a new one."""
        box = self.guide.restriction()
        if box is not None and box is not self.box:
            self.box = box
            self.restrict(model, box)
        balls = self.guide.balls() if hasattr(self.guide, "balls") else None
        if balls is not self.balls:
            self.balls = balls
            self.ball_version += 1

    def far_sides(self, rows: LevelRows, cache: dict) -> tuple[np.ndarray, np.ndarray] | None:
        """Which flips of the level's rows lead where no ball reaches: ``(to_on, to_off)``,
        True where the new halfspace (``a·u + b >= 0``, resp. ``<= 0``) misses every ball
        (None without balls). Per ball ``||x - c||_p <= r``: with ``x = origin + U u``, the
        row's range over the ball is ``a·u0 + b ± r' ||scale pinv(U)^T a||_q`` (``q`` the
        dual norm; ``u0`` the frame point nearest ``c``, ``r'`` the radius plus their distance),
        so a miss is certain up to :data:`BALL_MISS_TOL`. ``cache`` keeps the answer for
        the ball version it was computed for."""
        if self.balls is None:
            return None
        if cache.get("version") != self.ball_version:
            n = rows.cand_idx.size
            cache.update(version=self.ball_version, sides=self.misses(rows.A_lp[:n], rows.b_lp[:n]))
        return cache["sides"]

    def misses(self, A: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """``(to_on, to_off)`` of rows ``a·u + b`` (see :meth:`far_sides`), for the balls
        applied last (None without balls; balls only shrink, so older ones are sound)."""
        if self.balls is None:
            return None
        fr, n = self.frame, A.shape[0]
        if self._pinv is None:
            self._pinv = np.linalg.pinv(fr.U)
        Ax = A @ self._pinv
        to_on, to_off = np.ones(n, bool), np.ones(n, bool)
        for ball in self.balls:
            u0 = fr.to_u(ball.center)
            r = ball.radius + ball.distance(fr.to_x(u0))
            dual = {1: np.inf, 2: 2, np.inf: 1}[ball.norm]
            Axs = Ax if ball.scale is None else Ax * ball.scale  # the rows in scaled units
            mid, half = A @ u0 + b, r * np.linalg.norm(Axs, ord=dual, axis=1)
            to_on &= mid + half < -BALL_MISS_TOL
            to_off &= mid - half > BALL_MISS_TOL
        return to_on, to_off

    def refresh(self, model: ChebyshevModel, rows: LevelRows, item: Queued, level: int):
        """A queued cell's ``(t, u)`` in the region as restricted now: re-solved if the region
        shrank since it was found (``(0, None)``: it no longer meets the region)."""
        if item.version == self.version:
            return item.t, item.u
        model.set_signs(rows.lp_signs(item.signs))
        cell = self.cells.solve(model, ("restrict", level))
        if cell is None:
            return item.t, item.u
        if cell[0] <= SLIVER_TOL:
            self.stats.pruned += 1
            return 0.0, None
        return cell

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


#: Proven pieces whose volume share is computed (qhull, about a millisecond each in five
#: dimensions); later ones are recorded without a share (``None``).
PROVEN_VOLUMES = 1_000


class Pruner:
    """The caller's bound on pieces (``prune``: a :class:`PieceView` to a margin; None: no
    pruning); a positive margin proves the piece, recorded in ``proven_pieces`` with its
    volume share for the first :data:`PROVEN_VOLUMES` of a run (a statistic at about a
    millisecond a piece; ``volume_shares=False`` skips it, as ``verify`` does)."""

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
            if self.region_volume and view.vertices is not None \
                    and st.proven_volumes < PROVEN_VOLUMES:
                st.proven_volumes += 1
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
