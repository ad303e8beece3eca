"""The engine: :class:`Traversal`, the iterator that runs one traversal of a region.

``Traversal(...)`` checks its input (network, region, start point, budgets, backends),
builds the region's frame and assembles the parts of a run: the cell solver
(:mod:`~polytrav.traversal.cell_solver`), the screen (:mod:`~polytrav.traversal.screen`),
the emitter (:mod:`~polytrav.traversal.emission`), the pruner and the guide's steering
(:mod:`~polytrav.traversal.frontier`). Iterating it creates the backend's Chebyshev model,
decides the region's own cell, and hands the levels to the level search
(:mod:`~polytrav.traversal.level`); afterwards ``status`` and ``stats`` describe the run.
"""
from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np

from polytrav.model.geometry import Frame, build_frame
from polytrav.model.network import Network
from polytrav.model.polytope import Polytope
from polytrav.model.region import Region
from polytrav.solve.chebyshev import ChebyshevModel
from polytrav.traversal.cell_solver import CellSolver
from polytrav.traversal.emission import Emitter
from polytrav.traversal.frontier import GuideRules, Pruner, volume
from polytrav.traversal.level import LevelSearch, LevelTools
from polytrav.traversal.options import TraversalOptions, check_budgets
from polytrav.traversal.piece import Enclosure, Piece, PieceView
from polytrav.traversal.screen import Screen
from polytrav.traversal.status import (
    STRATEGIES,
    Clock,
    RunEnded,
    TraversalStats,
    TraversalStatus,
)
from polytrav.vocabulary.errors import ConfigError, RegionError
from polytrav.vocabulary.results import SolveResult
from polytrav.vocabulary.tolerances import EQUALITY_TOL, RADIUS_TOL

__all__ = ["Traversal", "check_budgets", "check_domain", "check_inputs", "start_point"]


def check_inputs(net, region) -> None:
    """``net`` a polytrav ``Network`` and ``region`` a polytrav ``Region``."""
    if not isinstance(net, Network):
        raise ConfigError(f"traverse: net must be a polytrav.Network, got {type(net).__name__}")
    if not isinstance(region, Region):
        raise ConfigError(f"traverse: region must be a polytrav Region, got {type(region).__name__}")


def check_domain(net: Network, frame: Frame) -> None:
    """Refuse a region (its ``frame``) that leaves the network's input domain."""
    dom = net.input_domain
    if dom is None:
        return
    reach = frame.reach()
    lo, hi = frame.origin - reach, frame.origin + reach
    tol = EQUALITY_TOL * (1 + np.abs(frame.origin))
    bad = np.flatnonzero((lo < dom[0] - tol) | (hi > dom[1] + tol))
    if bad.size:
        j = int(bad[0])
        raise RegionError(
            f"traverse: region spans [{lo[j]:.6g}, {hi[j]:.6g}] in input {j} but network "
            f"{net.name or ''} is only affine on its input domain "
            f"[{dom[0][j]:.6g}, {dom[1][j]:.6g}] (the model file clips inputs there); "
            "intersect the region with Box(*net.input_domain)"
        )


def start_point(net: Network, region: Region, frame: Frame, start) -> np.ndarray | None:
    """A start point's frame coordinates (None for None), refused outside the region."""
    if start is None:
        return None
    x = np.asarray(start, dtype=float).reshape(-1)
    if x.shape[0] != net.n_inputs:
        raise RegionError(
            f"traverse: start point has {x.shape[0]} coordinates but the network takes "
            f"{net.n_inputs}"
        )
    if not np.isfinite(x).all():
        raise RegionError(f"traverse: start point contains {x[~np.isfinite(x)][0]}")
    bad = region.violations(x)
    if bad:
        raise RegionError(f"traverse: start point is outside the region: {'; '.join(bad[:3])}"
                          "; give a point inside it, or leave start out")
    return frame.to_u(x)


class Traversal(Iterator[Polytope]):
    """A running traversal: iterate it for polytopes, then read ``status`` and ``stats``."""

    def __init__(self, net: Network, region: Region, start=None,
                 options: TraversalOptions = TraversalOptions()):
        check_inputs(net, region)
        if options.strategy not in STRATEGIES:
            raise ConfigError(f"traverse: unknown strategy {options.strategy!r}; known: "
                              f"{sorted(['auto', *STRATEGIES])}")
        if options.strategy == "subdivision":
            raise ConfigError("Traversal is the LP traversal; start a subdivision run with "
                              "polytrav.traverse(..., strategy='subdivision')")
        if options.solver is None:
            raise ConfigError("Traversal needs an LP backend (TraversalOptions.solver); name "
                              "one through polytrav.traverse(..., solver='highs')")
        self.options = options
        self.net = net
        self.region = region.with_dims(net.n_inputs)
        self.strategy = STRATEGIES[options.strategy]
        self.backend = solver = options.solver
        self.fallbacks = list(options.fallback)
        self.max_polytopes = max_polytopes = options.max_polytopes
        self.time_limit = time_limit = options.time_limit
        self.guide = guide = options.guide
        self.within = None if options.within is None else list(options.within)
        self.volume_shares = options.volume_shares
        self.prune = prune = options.prune
        #: ``(level, code, volume_share)`` of every piece proven by ``prune`` (share None
        #: where the volume is not computed).
        self.proven_pieces: list[tuple[int, str, float | None]] = []
        self.frame: Frame = build_frame(self.region, net.n_inputs)
        check_domain(net, self.frame)
        self._start_later = start if callable(start) else None
        self.start_u = None if callable(start) else start_point(net, self.region, self.frame, start)
        self.status = TraversalStatus.RUNNING
        self.stats = TraversalStats(pieces=[0] * net.n_hidden_layers,
                                    proven=[0] * net.n_hidden_layers)
        clock = Clock(time_limit)
        cells = CellSolver(self.frame, solver, self.fallbacks, self.stats, clock)
        guidance = GuideRules(guide, net, self.frame, cells, self.stats)
        screen = Screen(net, self.frame, self.strategy, cells, self.stats)
        screen.misses = guidance.misses  # None until a guide gives balls
        self._tools = LevelTools(
            net=net, frame=self.frame, stats=self.stats, clock=clock, cells=cells,
            screen=screen,
            emitter=Emitter(net, self.region, self.frame, self.strategy, self.stats, guidance,
                            max_polytopes=max_polytopes, vertices=options.vertices),
            pruner=Pruner(prune, self.stats, self.proven_pieces), guidance=guidance,
            frontiers=[], pieces_only=options.pieces_only,
            best_first=options.order == "best-first" and prune is not None)
        self._gen = self._run()

    # ---------------------------------------------------------------- public protocol
    def __next__(self) -> Polytope:
        return next(self._gen)

    def close(self, status: "TraversalStatus | None" = None) -> None:
        """Stop early; the status becomes ``status`` (default ``stopped``; ``interrupted``
        after Ctrl-C) unless the run had finished."""
        self._gen.close()
        if self.status in (TraversalStatus.RUNNING, TraversalStatus.STOPPED):
            self.status = status or TraversalStatus.STOPPED

    @property
    def frontier(self) -> int:
        """Cells found but not yet expanded, over the levels being traversed (for progress)."""
        return sum(len(q) for q in self._tools.frontiers)

    @property
    def complete(self) -> bool:
        """True iff every polytope meeting the region was visited and emitted."""
        return self.status is TraversalStatus.COMPLETE

    def time_left(self) -> float | None:
        """Seconds left of ``time_limit`` (None without one)."""
        return self._tools.clock.left()

    def maximize_in_cell(self, polytope: Polytope, g: np.ndarray) -> SolveResult | None:
        """``max g·u`` over ``polytope`` ∩ region (frame coordinates), in the traversal's warm
        model; None unless ``polytope`` is the one just emitted and the maximiser provably
        has its code (see :meth:`polytrav.traversal.emission.Emitter.maximize_in_cell`)."""
        return self._tools.emitter.maximize_in_cell(polytope, g)

    def __repr__(self) -> str:
        return f"<Traversal {self.strategy.name} {self.status.value}: {self.stats.polytopes} polytopes>"

    # ---------------------------------------------------------------- the run
    def _run(self) -> Iterator[Polytope]:
        tools = self._tools
        t0 = tools.clock.start()
        model = self.backend.chebyshev_model(
            self.frame, box_as_bounds=self.strategy.screen == "interval")
        search = LevelSearch(tools, model)
        try:
            region_cell = self._region_cell(model)
            if region_cell is None:  # no backend could decide even the region: nothing is known
                raise RunEnded(TraversalStatus.SOLVER_FAILURE)
            if region_cell[0] <= RADIUS_TOL:
                raise RegionError(
                    "traverse: the region has no interior (its Chebyshev radius in normalised "
                    f"units is {region_cell[0]:.3g})"
                )
            if self.prune is not None and self.net.n_hidden_layers and not tools.pieces_only:
                self._prune_region(model, region_cell)
            if self._start_later is not None:
                self.start_u = start_point(self.net, self.region, self.frame,
                                           self._start_later())
            u0 = self.start_u if self.start_u is not None else region_cell[1]
            if self.net.n_hidden_layers == 0:  # an affine network: the region is one polytope
                if tools.pieces_only:
                    yield Piece(np.zeros(0, bool), region_cell[1], region_cell[0])
                elif self.within is None or self.within:
                    yield tools.emitter.polytope((), region_cell[1], region_cell[0], None, None)
            elif self.within is not None:
                yield from search.subtrees(self.within, region_cell[0], region_cell[1])
            else:
                yield from search.level(Enclosure(0, None, self.frame.origin, region_cell[1],
                                                  region_cell[0], None, ()), u0, None,
                                        at_start=self.start_u is not None)
            self.status = (TraversalStatus.SOLVER_FAILURE if self.stats.failures
                           else TraversalStatus.COMPLETE)
        except RunEnded as stop:
            self.status = stop.args[0]
        finally:
            self.stats.lp_time = model.solve_time
            self.stats.total_time = time.perf_counter() - t0
            if self.status is TraversalStatus.RUNNING:
                self.status = TraversalStatus.STOPPED

    def _region_cell(self, model: ChebyshevModel) -> tuple[float, np.ndarray | None] | None:
        """The region's ``(radius, centre)``: closed-form for the frame box ``[-1, 1]^d`` (the
        origin, radius 1 up to the cap), else by the LP."""
        fr = self.frame
        if fr.is_box and not model.region_A.shape[0]:
            return min(1.0, fr.radius_cap), np.zeros(fr.dim)
        return self._tools.cells.solve(model, "region")

    def _prune_region(self, model: ChebyshevModel, region_cell) -> None:
        """Measure the region (for proven volume shares) and end the run ``complete`` if the
        pruner proves the whole region."""
        emitter, pruner, (t, u) = self._tools.emitter, self._tools.pruner, region_cell
        V = emitter.vertices(model, np.zeros(0, bool), u, t) if emitter.use_vertices(1, False) else None
        if V is not None and self.volume_shares and not (self.frame.l1_balls or self.frame.l2_balls):
            pruner.region_volume = volume(V)
        if self.within is None and pruner.margin(PieceView(
                0, (), self.frame.U, self.frame.origin, u, t, V, model, None, self.frame)) > 0:
            raise RunEnded(TraversalStatus.COMPLETE)  # the whole region is proven
