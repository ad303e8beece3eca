"""The level search: breadth-first over one-hyperplane flips inside a piece, depth-first over levels.

Level ``k + 1`` of the traversal partitions a level-``k`` piece (an :class:`Enclosure`) with
the hyperplanes of layer ``k``. :class:`LevelSearch` screens them (:class:`Screen`), finds a
first cell near the start point, then expands cells in frontier order: each cell's flips not
yet decided are ruled out by its vertices or decided by an LP and hashed; a cell of the last
level is emitted as a polytope, a cell of a deeper level is descended into before the search
moves on (unless a pruner proves it), and with ``pieces_only`` level 1 hands out its pieces.
The state of one level (its rows, frontier, decided codes) is a :class:`_Level`; the tools a
search works with (solver, screen, emitter, pruner, guidance, budgets) come in :class:`LevelTools`.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from polytrav.model.geometry import Frame
from polytrav.model.network import Network
from polytrav.solve.chebyshev import ChebyshevModel
from polytrav.traversal.cell_solver import CellSolver
from polytrav.traversal.emission import Emitter
from polytrav.traversal.frontier import Frontier, GuideRules, Pruner, Queued
from polytrav.traversal.piece import Enclosure, Piece, PieceView
from polytrav.traversal.screen import LevelRows, Screen
from polytrav.traversal.status import Clock, TraversalStats
from polytrav.vocabulary.errors import ConfigError
from polytrav.vocabulary.tolerances import CELL_CODE_RTOL, RADIUS_TOL, SLIVER_TOL, START_TRIES, VERTEX_MARGIN

__all__ = ["LevelSearch", "LevelTools"]


@dataclass(frozen=True)
class LevelTools:
    """What a level search works with, from its traversal."""

    net: Network
    frame: Frame
    stats: TraversalStats
    clock: Clock
    cells: CellSolver
    screen: Screen
    emitter: Emitter
    pruner: Pruner
    guidance: GuideRules
    frontiers: list  #: the frontier of every level being searched (for progress)
    pieces_only: bool  #: level 1 yields its :class:`Piece` objects, no polytopes
    best_first: bool  #: deeper levels descend by increasing pruner margin


@dataclass
class _Level:
    """One level being searched inside a piece."""

    piece: Enclosure  #: the piece searched in
    rows: LevelRows  #: the layer's screened, grouped rows (the model's top block)
    last: bool  #: the network's last hidden layer: cells are polytopes
    pieces_only: bool  #: cells are handed out as pieces
    guide: object | None  #: the guide (level 1 only)
    ranked: bool  #: best-first: the frontier is ordered by margin
    frontier: Frontier
    checked: set  #: packed signs of every cell an LP decided (or is queued to decide)
    u_descend: np.ndarray | None  #: where the first descent starts (the start point)
    #: The first cell's closure holds the run's start point, and so does every enclosing
    #: level's: a restriction may then shrink the region mid-level (:meth:`LevelSearch.level`).
    at_start: bool
    far: dict  #: the guidance's far sides of the level's rows (:meth:`GuideRules.far_sides`)


class LevelSearch:
    """Searches levels inside pieces; yields polytopes (or level-1 :class:`Piece` objects)."""

    def __init__(self, tools: LevelTools, model: ChebyshevModel):
        self.model = model
        self.net, self.frame, self.stats, self.clock = tools.net, tools.frame, tools.stats, tools.clock
        self.cells, self.screen, self.emitter = tools.cells, tools.screen, tools.emitter
        self.pruner, self.guidance, self.frontiers = tools.pruner, tools.guidance, tools.frontiers
        self.pieces_only, self.best_first = tools.pieces_only, tools.best_first

    # ---------------------------------------------------------------- one level
    def level(self, piece: Enclosure, u_start: np.ndarray, via: int | None,
              at_start: bool = False) -> Iterator:
        """Traverse level ``piece.level + 1`` (0-based layer ``piece.level``) inside ``piece``.

        The first cell contains (or is near) ``u_start``; ``via`` is the index of the polytope
        the piece was found from (the parent of the first polytope emitted in it);
        ``at_start``: ``u_start`` is the run's start point and every enclosing level's first
        cell touches it.

        A guide's restriction shrinks the region at level 1 and, mid-level, only in levels
        whose first cell touches the start point (``_Level.at_start``): the cells meeting the
        restricted region (convex, holding the start point) are then connected through such
        cells to that first cell, expanded first, so re-solving the queued cells in the new
        region loses none. A level begun elsewhere keeps its region until it ends.
        """
        lv = self._open(piece, u_start, via, at_start)
        if lv is None:
            return
        model = self.model
        try:
            while lv.frontier:
                self.clock.check()
                key, item = lv.frontier.pop()
                u, t = item.u, item.t
                if lv.guide is not None:
                    cell = self.guidance.steer(model, lv.rows, key, item, len(lv.frontier))
                    if cell is None:
                        break
                    t, u = cell
                    if t <= SLIVER_TOL:
                        continue
                elif self.guidance.guide is not None and lv.at_start:
                    self.guidance.update(model)
                    t, u = self.guidance.refresh(model, lv.rows, item, lv.piece.level)
                    if t <= SLIVER_TOL:
                        continue
                todo = self._unchecked_flips(lv, item.signs)
                if self._beyond_balls(lv, item.signs):  # nothing in the cell is needed
                    self.stats.cells_far += 1
                    if lv.at_start:  # ... nor is a way through it (see _beyond_balls)
                        for _, _, flip_key in todo:
                            lv.checked.add(flip_key)
                        self.stats.flips_far += len(todo)
                        continue
                    self._decide_flips(lv, todo, item.parent)
                    continue
                V = item.V
                if V is None and self.emitter.use_vertices(len(todo), lv.last):
                    V = self.emitter.vertices(model, lv.rows.lp_signs(item.signs), u, t)
                if V is not None and todo:
                    todo = self._rule_out(lv, item.signs, V, todo)
                own = yield from self._visit(lv, item.signs, u, t, item.parent, item.margin, V)
                lv.u_descend = None
                self._decide_flips(lv, todo, own)
        finally:
            self.frontiers.pop()
            model.pop()

    def _open(self, piece: Enclosure, u_start: np.ndarray, via: int | None,
              at_start: bool) -> _Level | None:
        """Screen the layer, push its rows, find the first cell and queue it (None: none found)."""
        k = piece.level
        last = k == self.net.n_hidden_layers - 1
        rows = self.screen.level_rows(self.model, piece)
        start = self._start_cell(rows, piece, u_start)
        if start is None:
            return None
        signs0, u0, t0, touches = start
        pieces_only = self.pieces_only and k == 0
        guide = self.guidance.guide if k == 0 else None
        ranked = self.best_first and not last and not pieces_only and guide is None
        lv = _Level(piece, rows, last, pieces_only, guide, ranked, Frontier(guide, ranked),
                    {np.packbits(signs0).tobytes()}, u_start, at_start and touches, {})
        self.frontiers.append(lv.frontier)
        self._push(lv, signs0, u0, t0, via)
        return lv

    def _start_cell(self, rows: LevelRows, piece: Enclosure, u_start: np.ndarray):
        """Push the level's rows and find a first cell containing (or near) ``u_start``:
        ``(signs, u, t, touches)``, ``touches`` if its closure holds ``u_start`` (its signs
        are ``u_start``'s)."""
        model, k = self.model, piece.level
        A_lp, b_lp, n_rep = rows.A_lp, rows.b_lp, rows.cand_idx.size
        rng = np.random.default_rng(k)
        point = u_start
        for attempt in range(START_TRIES + 1):
            signs = (A_lp[:n_rep] @ point + b_lp[:n_rep]) >= 0.0
            if attempt == 0:
                model.push(A_lp, b_lp, rows.lp_signs(signs))
            else:
                model.set_signs(rows.lp_signs(signs))
            cell = self.cells.solve(model, ("start", k))
            if cell is not None and cell[0] > SLIVER_TOL:
                return signs, cell[1], cell[0], attempt == 0
            # the point lies on a hyperplane: try random points near it (so that the start
            # cell touches it, which a guide relies on), then in the piece's inscribed ball
            direction = rng.standard_normal(point.shape[0])
            direction /= np.linalg.norm(direction)
            if attempt < START_TRIES // 2:
                point = u_start + 10.0 ** (-8 + attempt / 2) * piece.t * direction
            else:
                point = piece.u + 0.5 * piece.t * rng.uniform() * direction
        model.pop()
        self.cells.fail(("start", k), "no starting cell found near the start point")
        return None

    def _push(self, lv: _Level, signs: np.ndarray, u: np.ndarray, t: float,
              parent: int | None) -> None:
        """Queue a cell; best-first: with its margin (and vertices), computed now."""
        margin = V = None
        if lv.ranked and t > RADIUS_TOL:
            if self.emitter.use_vertices(1, False):
                V = self.emitter.vertices(self.model, lv.rows.lp_signs(signs), u, t)
            bits = lv.rows.full_bits(signs)
            margin = self.pruner.margin(PieceView(
                lv.piece.level + 1, lv.piece.code + (bits,), lv.rows.H * bits[:, None],
                lv.rows.beta * bits, u, t, V, self.model, lv.rows.lp_signs(signs), self.frame))
        lv.frontier.push(Queued(signs, u, t, parent, self.guidance.version, margin, V),
                         lv.rows.full_bits, signs, margin)

    def _unchecked_flips(self, lv: _Level, signs: np.ndarray) -> list:
        """``(group, flipped signs, key)`` of every flip of the cell not decided yet."""
        checked, st = lv.checked, self.stats
        todo = []
        for g in range(lv.rows.cand_idx.size):
            flipped = signs.copy()
            flipped[g] = not flipped[g]
            key = np.packbits(flipped).tobytes()
            if key in checked:
                st.flips_hashed += 1
            else:
                todo.append((g, flipped, key))
        return todo

    def _beyond_balls(self, lv: _Level, signs: np.ndarray) -> bool:
        """Whether one of the cell's sides in this level misses every guide's ball (then so
        does the cell, and nothing in it is needed).

        Its neighbours then need no LP either when the level began at the start point
        (``lv.at_start``: the first cell's closure holds it, and every ball contains it):
        the cells meeting a ball (convex) are connected through cells meeting it, to the
        first cell, so none is reached only through a cell that misses every ball. A level
        begun elsewhere may start in such a cell, and keeps its flips."""
        if self.guidance.guide is None or lv.u_descend is not None:
            return False
        far = self.guidance.far_sides(lv.rows, lv.far)
        return far is not None and bool(np.any(np.where(signs, far[0], far[1])))

    def _rule_out(self, lv: _Level, signs: np.ndarray, V: np.ndarray, todo: list) -> list:
        """``todo`` without the flips whose hyperplane stays clear of the cell's vertices
        ``V`` (not a facet: no neighbour across it)."""
        s_ = np.where(signs, 1.0, -1.0)
        idx = np.array([g for g, _, _ in todo])
        slack = s_[idx, None] * (lv.rows.A_lp[idx] @ V.T + lv.rows.b_lp[idx, None])
        far = slack.min(axis=1) > VERTEX_MARGIN
        self.stats.flips_vertex += int(far.sum())
        return [item for item, f in zip(todo, far) if not f]

    def _visit(self, lv: _Level, signs: np.ndarray, u: np.ndarray, t: float,
               parent: int | None, margin: float | None, V: np.ndarray | None):
        """Emit the cell (last level), hand it out (``pieces_only``) or descend into it (unless
        proven); a sliver is only counted. Returns the index of the polytope its flips are
        found from: its own, the first one emitted inside it, else ``parent``."""
        st, model, rows = self.stats, self.model, lv.rows
        own = parent
        if t > RADIUS_TOL:
            k = lv.piece.level
            st.pieces[k] += 1
            bits = rows.full_bits(signs)
            code = lv.piece.code + (bits,)
            if lv.pieces_only:
                yield Piece(bits, u, t)
            elif lv.last:
                polytope = self.emitter.polytope(code, u, t, parent, V)
                own = polytope.index
                yield from self.emitter.emit(polytope, model, rows.lp_signs(signs))
            else:
                Mn, mn = rows.H * bits[:, None], rows.beta * bits
                if margin is None and self.pruner.prune is not None:
                    margin = self.pruner.margin(PieceView(k + 1, code, Mn, mn, u, t, V, model,
                                                          rows.lp_signs(signs), self.frame))
                if margin is None or margin <= 0:  # else proven: no polytope needed
                    model.set_signs(rows.lp_signs(signs))
                    first = st.polytopes
                    yield from self.level(Enclosure(k + 1, Mn, mn, u, t, V, code),
                                          u if lv.u_descend is None else lv.u_descend, parent,
                                          lv.at_start and lv.u_descend is not None)
                    own = first if st.polytopes > first else parent
        else:
            st.slivers += 1
        return own

    def _decide_flips(self, lv: _Level, todo: list, own: int | None) -> None:
        """Decide each flip by an LP and queue the cells found (guided: queue it unsolved)."""
        model, st, rows = self.model, self.stats, lv.rows
        far = self.guidance.far_sides(rows, lv.far) if self.guidance.guide is not None else None
        for g, flipped, key in todo:
            self.clock.check()
            # hashed once an LP decides it; flips ruled out by vertices are not kept
            # (the rule-out is cheaper to repeat than the memory: one key per flip)
            lv.checked.add(key)
            if far is not None and far[0 if flipped[g] else 1][g]:
                st.flips_far += 1  # beyond every ball: balls only shrink, so hashed too
                continue
            if lv.guide is not None:  # the guide ranks the flip by its bits: its LP
                lv.frontier.push(Queued(flipped, None, None, own, None, None, None),
                                 rows.full_bits, flipped)  # waits until the guide wants the cell
                continue
            model.set_signs(rows.lp_signs(flipped))
            st.flips_solved += 1
            cell = self.cells.solve(model, ("flip", lv.piece.level, g))
            if cell is not None and cell[0] > SLIVER_TOL:
                self._push(lv, flipped, cell[1], cell[0], own)

    # ---------------------------------------------------------------- given level-1 pieces
    def subtrees(self, within: list, region_t: float, region_u: np.ndarray) -> Iterator:
        """Every polytope inside the level-1 pieces ``within`` (pieces of this run)."""
        net, model, st, emitter = self.net, self.model, self.stats, self.emitter
        last = net.n_hidden_layers == 1
        lr = self.screen.level_rows(model, Enclosure(0, None, self.frame.origin, region_u,
                                                     region_t, None, ()))
        model.push(lr.A_lp, lr.b_lp, lr.lp_signs(np.zeros(lr.cand_idx.size, bool)))
        try:
            for piece in within:
                self.clock.check()
                bits = np.asarray(piece.bits, bool)
                signs = lr.signs_of(bits)
                h = lr.H @ piece.u + lr.beta if bits.shape == lr.fixed_bits.shape else None
                if h is None or not np.array_equal(lr.full_bits(signs), bits) or \
                        (np.where(bits, h, -h) < -CELL_CODE_RTOL * (1 + np.abs(h))).any():
                    raise ConfigError("traverse: a piece given in 'within' is not a level-1 piece "
                                      "of this network and region (its code does not hold at "
                                      "its centre)")
                model.set_signs(lr.lp_signs(signs))
                V = emitter.vertices(model, lr.lp_signs(signs), piece.u, piece.t) \
                    if emitter.use_vertices(1, last) else None
                st.pieces[0] += 1
                Mn, mn = lr.H * bits[:, None], lr.beta * bits
                if last:
                    yield from emitter.emit(emitter.polytope((bits,), piece.u, piece.t, None, V),
                                            model, lr.lp_signs(signs))
                elif self.pruner.prune is None or self.pruner.margin(PieceView(
                        1, (bits,), Mn, mn, piece.u, piece.t, V, model, lr.lp_signs(signs),
                        self.frame)) <= 0:
                    yield from self.level(Enclosure(1, Mn, mn, piece.u, piece.t, V, (bits,)),
                                          piece.u, None)
        finally:
            model.pop()
