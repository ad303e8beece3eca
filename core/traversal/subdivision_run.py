"""Strategy ``"subdivision"``: a run of the subdivision engine with the traversal's protocol.

:class:`SubdivisionRun` runs the engine (:class:`~polytrav.traversal.subdivision.Subdivision`)
and emits each batch of cells it finishes as :class:`Polytope` objects, each with its
vertices, like :class:`~polytrav.traversal.engine.Traversal` does (``status``, ``stats``,
``close``, ``time_left``, budgets), so every analysis, export and plot runs on it unchanged.
Cells whose certified inscribed radius is at most ``RADIUS_TOL`` are decided by the Chebyshev
LP, as the traversal decides every cell; a cut the engine cannot decide in floating point hands the
rest of the region to the LP traversal (``stats.fallback`` says why).

:func:`open_traversal` is how the layers above start a run of any strategy.
"""
from __future__ import annotations

import logging

import time
from collections.abc import Iterator
from dataclasses import replace

import numpy as np

from polytrav.model.geometry import build_frame
from polytrav.model.network import Network
from polytrav.model.polytope import Polytope
from polytrav.model.region import Region
from polytrav.traversal.cell_solver import CellSolver
from polytrav.traversal.engine import Traversal, check_domain, check_inputs, start_point
from polytrav.traversal.options import TraversalOptions
from polytrav.traversal.status import (STRATEGIES, Clock, RunEnded, TraversalStats,
                                       TraversalStatus)
from polytrav.traversal.piece import Piece
from polytrav.traversal.subdivision import (Cells, Subdivision, Undecided,
                                            kernel_installed)
from polytrav.vocabulary.errors import ConfigError
from polytrav.vocabulary.tolerances import CELL_CODE_RTOL, RADIUS_TOL, ZERO_ROW_TOL

__all__ = ["AUTO_MAX_DIM", "AUTO_MAX_DIM_NUMPY", "CellPolytope", "SubdivisionRun",
           "choose_strategy", "open_traversal"]

log = logging.getLogger(__name__)

#: Under strategy ``"auto"``, regions of at most this many dimensions (free coordinates) are
#: enumerated by subdivision when numba is installed (the ``fast`` extra): on the scaling
#: nets it is about 10x the LP traversal's speed in 7-D and 2x in 8-D, and on wide 3 x 40
#: nets in 7-8 dimensions, which it streams in bounded memory (a batch stops within a
#: layer), many times the traversal's rate (docs/benchmarks.md, issue 61).
AUTO_MAX_DIM = 8
#: ... and without numba (numpy's edge search pairs every vertex with every other: about 3x
#: the traversal's speed in 7-D, 0.4x on the small 8-D nets).
AUTO_MAX_DIM_NUMPY = 7

#: Seconds between two checks of the time budget while polytopes are emitted (never past the
#: budget's end: a run's own limit holds exactly; a deadline set around the consumer in
#: between is seen within this time).
CHECK_EVERY = 0.005


def choose_strategy(net: Network, region: Region,
                    options: TraversalOptions = TraversalOptions()) -> str:
    """What ``strategy="auto"`` runs: ``"subdivision"`` for a polyhedral region of at most
    :data:`AUTO_MAX_DIM` dimensions (:data:`AUTO_MAX_DIM_NUMPY` without numba) when the run
    visits every polytope; else ``"hierarchical"``, whose guides and pruning bounds let a
    run skip work."""
    if options.guide is not None or options.prune is not None:
        return "hierarchical"
    region = region.with_dims(net.n_inputs)
    most = AUTO_MAX_DIM if kernel_installed() else AUTO_MAX_DIM_NUMPY
    if net.n_inputs > most and not region.is_box:
        return "hierarchical"  # its frame could cost LPs to build; slices are boxes
    frame = build_frame(region, net.n_inputs)
    polyhedral = not (frame.l1_balls or frame.l2_balls)
    return "subdivision" if polyhedral and frame.dim <= most else "hierarchical"


def open_traversal(net: Network, region: Region, start=None,
                   options: TraversalOptions = TraversalOptions()):
    """A run of ``options.strategy`` (``"auto"``: :func:`choose_strategy`): a
    :class:`SubdivisionRun` for ``"subdivision"``, else a
    :class:`~polytrav.traversal.engine.Traversal` (same arguments, same protocol)."""
    if options.strategy == "auto" and isinstance(net, Network) and isinstance(region, Region):
        options = replace(options, strategy=choose_strategy(net, region, options))
    if options.strategy == "subdivision":
        return SubdivisionRun(net, region, start, options)
    return Traversal(net, region, start, options)


class SubdivisionRun(Iterator[Polytope]):
    """Every polytope of ``net`` in a polyhedral ``region``, by subdivision.

    Takes :class:`~polytrav.traversal.engine.Traversal`'s arguments; of the options, ``guide``, ``prune``,
    ``order`` and ``volume_shares`` only let a traversal skip work, so they are not used
    (every polytope is visited); ``start`` orders the polytopes: the one holding it first,
    then by the distance of their interior points from it (batch by batch, nearest batch
    first). ``pieces_only``: yield the level-1 pieces (:class:`~polytrav.traversal.Piece`,
    the units of parallel runs) instead; ``within``: only the polytopes inside those pieces
    (by their first layer's code). Regions with L1/L2 balls are refused: use
    ``strategy="hierarchical"`` for those. ``batch``: the most cells cut together
    (:data:`~polytrav.traversal.subdivision.BATCH`, and 16 times as many vertex rows, within
    a layer too; memory grows with it; ``stats.held``: the most vertex rows held, those of
    the batches waiting on the depth-first path too: up to a few times the batch's rows per
    hidden layer, :attr:`~polytrav.traversal.subdivision.Tally.held`).
    """

    def __init__(self, net: Network, region: Region, start=None,
                 options: TraversalOptions = TraversalOptions(strategy="subdivision")):
        check_inputs(net, region)
        self.options = options
        self.batch = options.batch
        self.pieces_only = options.pieces_only
        self.net = net
        self.region = region.with_dims(net.n_inputs)
        self.frame = build_frame(self.region, net.n_inputs)
        if self.frame.l1_balls or self.frame.l2_balls:
            raise ConfigError("traverse: strategy 'subdivision' needs a polyhedral region (a box "
                              "or polyhedron); use strategy='hierarchical' for L1/L2 balls")
        check_domain(net, self.frame)
        self._start = start
        self.start_u = None if callable(start) else start_point(net, self.region, self.frame,
                                                                 start)
        self.strategy = STRATEGIES["subdivision"]
        self.backend = options.solver
        self.fallbacks = list(options.fallback)
        self.max_polytopes = options.max_polytopes
        self.time_limit = time_limit = options.time_limit
        self.within = None if options.within is None else list(options.within)
        if self.within:
            self._check_pieces(self.within)
        self.proven_pieces: list = []
        self.status = TraversalStatus.RUNNING
        self.stats = TraversalStats(pieces=[0] * net.n_hidden_layers,
                                    proven=[0] * net.n_hidden_layers)
        self._clock = Clock(time_limit)
        self._lp = None
        self._gen = self._run()

    # ---------------------------------------------------------------- the protocol
    def __next__(self) -> Polytope:
        return next(self._gen)

    def __iter__(self) -> Iterator[Polytope]:
        return self._gen  # the same polytopes as next(), without a Python call each

    def close(self, status: TraversalStatus | None = None) -> None:
        """Stop early; the status becomes ``status`` (default ``stopped``) unless the run
        had finished."""
        self._gen.close()
        if self.status in (TraversalStatus.RUNNING, TraversalStatus.STOPPED):
            self.status = status or TraversalStatus.STOPPED

    @property
    def frontier(self) -> int:
        """Cells found but not yet emitted (for progress)."""
        return self._left

    @property
    def complete(self) -> bool:
        """True iff every polytope meeting the region was emitted."""
        return self.status is TraversalStatus.COMPLETE

    def time_left(self) -> float | None:
        """Seconds left of ``time_limit`` (None without one)."""
        return self._clock.left()

    def maximize_in_cell(self, polytope: Polytope, g: np.ndarray):
        """None: analyses read extremes off ``polytope.vertices``."""
        return None

    def __repr__(self) -> str:
        return f"<SubdivisionRun {self.status.value}: {self.stats.polytopes} polytopes>"

    # ---------------------------------------------------------------- the run
    _left = 0

    def _run(self) -> Iterator[Polytope]:
        t0 = self._clock.start()
        st = self.stats
        try:
            if callable(self._start):
                self.start_u = start_point(self.net, self.region, self.frame, self._start())
            near = None
            if self.start_u is not None:
                code = self.net.activation_code(self.frame.to_x(self.start_u))
                near = (self.start_u, np.concatenate(code) if code else np.zeros(0, bool))
            engine = Subdivision(
                self.net, self.frame, self._clock, near=near, batch=self.batch,
                levels=1 if self.pieces_only else None,
                within=None if self.within is None else {p.key for p in self.within})
            emitted = []  # the codes of the batches emitted, packed (for a fallback)
            batches = iter(engine)
            while True:
                try:
                    cells = next(batches)
                except StopIteration:
                    break
                except Undecided as why:
                    yield from self._fall_back(str(why), emitted)
                    return
                tally = engine.tally
                st.cuts, st.snapped, st.thin_cuts = tally.cuts, tally.snapped, tally.thin
                st.held = tally.held
                st.pieces[:] = tally.levels  # cells per level, as the traversal counts them
                emitted.append(np.packbits(cells.codes, axis=1))
                yield from (self._pieces(cells) if self.pieces_only else self._emit(cells))
            self.status = (TraversalStatus.SOLVER_FAILURE if st.failures
                           else TraversalStatus.COMPLETE)
        except RunEnded as stop:
            self.status = stop.args[0]
        finally:
            st.total_time = time.perf_counter() - t0
            if self.status is TraversalStatus.RUNNING:
                self.status = TraversalStatus.STOPPED

    def _emit(self, cells: Cells) -> Iterator[Polytope]:
        """The polytopes of a batch of cells, in its order (each reads its code, point and
        vertices off the batch on first use: :class:`CellPolytope`)."""
        st, net, region = self.stats, self.net, self.region
        rows = _Rows(cells, self.frame, net, region)
        new = CellPolytope
        clock, now, due = self._clock, time.perf_counter, 0.0
        limit = np.inf if self.max_polytopes is None else self.max_polytopes
        last = len(cells) - 1
        for i, r in enumerate(cells.radii.tolist()):
            self._left = last - i
            if now() >= due:  # the consumer's time counts too, as in the traversal
                clock.check()
                left = clock.left()
                due = now() + (CHECK_EVERY if left is None else min(CHECK_EVERY, left))
            if r > RADIUS_TOL:
                n = st.polytopes
                if n >= limit:
                    raise RunEnded(TraversalStatus.POLYTOPE_LIMIT)
                st.polytopes = n + 1
                p = new()  # four assignments: a Python __init__ would cost as much again
                p._rows, p._row, p.radius, p.index = rows, i, r, n
                yield p
                continue
            code = rows.code(i)  # thin: the Chebyshev LP decides, as for the traversal
            cell = self._chebyshev(code)
            if cell is None:
                continue  # recorded in stats.failures
            if cell[0] <= RADIUS_TOL:
                st.slivers += 1
                continue
            if st.polytopes >= limit:
                raise RunEnded(TraversalStatus.POLYTOPE_LIMIT)
            st.polytopes += 1
            yield Polytope(code, self.frame.to_x(cell[1]), cell[0], st.polytopes - 1, None,
                           net, region, rows.vertices(i))

    def _check_pieces(self, within: list) -> None:
        """Refuse a piece whose first layer's code does not hold at its centre (as the
        traversal does): a piece of another network or region."""
        hidden = self.net.n_hidden_layers > 0  # else the one piece is the region
        W, b = self.net.weights[0], self.net.biases[0] if hidden else np.zeros(0)
        for piece in within:
            bits = np.asarray(piece.bits, bool)
            h = None if bits.shape != b.shape else \
                W @ self.frame.to_x(piece.u) + b if hidden else np.zeros(0)
            if h is None or (np.where(bits, h, -h) < -CELL_CODE_RTOL * (1 + np.abs(h))).any():
                raise ConfigError("traverse: a piece given in 'within' is not a level-1 piece "
                                  "of this network and region (its code does not hold at "
                                  "its centre)")

    def _pieces(self, cells: Cells) -> Iterator[Piece]:
        """The level-1 pieces of a batch of cells cut by the first layer only."""
        n1 = self.net.hidden_sizes[0] if self.net.n_hidden_layers else 0
        for i, r in enumerate(cells.radii.tolist()):
            self._clock.check()
            bits, u = cells.codes[i, :n1].copy(), cells.centres[i]
            if r <= RADIUS_TOL:  # thin: the Chebyshev LP decides
                cell = self._chebyshev((bits,))
                if cell is None or cell[0] <= RADIUS_TOL:
                    continue
                r, u = cell
            yield Piece(bits, u, r)

    def _fall_back(self, why: str, emitted: list[np.ndarray]) -> Iterator[Polytope]:
        """The LP traversal of the whole region, for a cut the engine could not decide: the
        polytopes of the batches ``emitted`` (their packed codes) are not emitted again."""
        if self.backend is None:
            raise ConfigError(f"traverse: subdivision could not decide a cut ({why}) and has "
                              "no LP backend to fall back to")
        seen = {row.tobytes() for part in emitted for row in part}
        n1 = self.net.hidden_sizes[0] if self.net.n_hidden_layers else 0
        if self.pieces_only:
            seen = {np.packbits(np.unpackbits(row)[:n1]).tobytes() for part in emitted
                    for row in part}
        start = None if self.start_u is None else self.frame.to_x(self.start_u)
        left = None if self.time_limit is None else self._clock.left()
        trav = Traversal(self.net, self.region, start, TraversalOptions(
            solver=self.backend, fallback=tuple(self.fallbacks),
            max_polytopes=self.max_polytopes, time_limit=left, within=self.within,
            pieces_only=self.pieces_only))
        trav.stats.fallback = why
        log.info("subdivision hands the rest of the region to the LP traversal: %s", why)
        self.stats = trav.stats  # its count is of every polytope, those emitted before too
        try:
            for polytope in trav:
                if polytope.key not in seen:
                    yield polytope
        finally:
            trav.close()
            self.status = trav.status

    def _chebyshev(self, code) -> tuple[float, np.ndarray] | None:
        """``(radius, centre)`` of the cell of ``code`` (every layer's, or the first layer's:
        a level-1 piece) by the Chebyshev LP (None: undecided)."""
        if self.backend is None:
            raise ConfigError("traverse: subdivision found a thin cell and has no LP backend "
                              "to decide it")
        if self._lp is None:
            self._lp = CellSolver(self.frame, self.backend, self.fallbacks, self.stats,
                                  self._clock)
        fr = self.frame
        model = self.backend.chebyshev_model(fr)
        # a level-1 piece's code has the first layer only: its rows are that layer's
        planes = ([(self.net.weights[0], self.net.biases[0])]
                  if len(code) < self.net.n_hidden_layers else self.net.hyperplanes(code))
        for (Wh, bh), bits in zip(planes, code):
            A, beta = fr.pull(Wh), Wh @ fr.origin + bh
            norm = np.linalg.norm(A, axis=1)
            live = norm > ZERO_ROW_TOL * (1.0 + np.abs(beta))
            model.push(A[live] / norm[live, None], beta[live] / norm[live], bits[live])
        self.stats.lps += 1
        cell = self._lp.solve(model, "a thin cell of the subdivision")
        self.stats.lp_time += model.solve_time
        return cell



class _Rows:
    """A batch of cells as the polytopes of :meth:`SubdivisionRun._emit` read it."""

    __slots__ = ("layers", "points", "starts", "V", "network", "region")

    def __init__(self, cells: Cells, frame, network: Network, region: Region):
        self.network, self.region = network, region
        offsets = np.cumsum([0, *network.hidden_sizes])
        self.layers = np.split(cells.codes, offsets[1:-1], axis=1) if len(offsets) > 1 else []
        self.points = frame.to_x(cells.centres)
        self.starts, self.V = cells.starts, cells.vertices

    def code(self, i: int) -> tuple:
        return tuple(layer[i] for layer in self.layers)

    def vertices(self, i: int) -> np.ndarray:
        return self.V[self.starts[i]: self.starts[i + 1]]


def _lazy(name: str, make) -> property:
    """Attribute ``name`` of :class:`Polytope` (its slot), filled by ``make(polytope)`` on
    first use."""
    slot = Polytope.__dict__[name]

    def get(self):
        try:
            return slot.__get__(self, Polytope)
        except AttributeError:
            value = make(self._rows, self._row)
            slot.__set__(self, value)
            return value

    return property(get, slot.__set__, doc=slot.__doc__)


class CellPolytope(Polytope):
    """A :class:`Polytope` of a subdivision's batch of cells: its ``code``,
    ``interior_point`` and ``vertices`` are read off the batch on first use (a run emits
    polytopes by the million, and a consumer that counts, filters or keeps a few reads
    little of each). Equal in every attribute to the eager one; pickles as one."""

    __slots__ = ("_rows", "_row")  # and, set by the run, radius and index
    __init__ = object.__init__

    code = _lazy("code", _Rows.code)
    interior_point = _lazy("interior_point", lambda rows, i: rows.points[i])
    vertices = _lazy("vertices", _Rows.vertices)
    network = _lazy("network", lambda rows, i: rows.network)
    region = _lazy("region", lambda rows, i: rows.region)
    parent = _lazy("parent", lambda rows, i: None)

    def __reduce__(self):
        return Polytope, (self.code, self.interior_point, self.radius, self.index, self.parent,
                          self.network, self.region, self.vertices)
