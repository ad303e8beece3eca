"""Hierarchical breadth-first traversal of the local polytopes inside a region (paper §4).

Level ``l`` of a network with ``L`` hidden layers partitions each level-``(l-1)`` polytope
(a *piece*) with the hyperplanes of layer ``l`` (the paper's masking recursion). Inside one
piece, polytopes are connected by flipping one hyperplane's side (one-adjacency, paper §3),
so a breadth-first search over flips visits them all (paper Theorem 2). The traversal:

1. screens the layer's hyperplanes against the piece (``screen``): a hyperplane that does not
   cut the piece's interior never needs a flip;
2. groups identical hyperplanes (duplicate neurons, up to sign) so they flip together, and
   never flips a neuron whose pre-activation is constant on the piece (zero normal);
3. decides each flip with the Chebyshev LP of the flipped cell (``maximise t`` such that the
   ball of radius ``t`` fits) and hashes every code an LP decided;
4. recurses into each polytope of the level before moving on (depth-first over levels,
   breadth-first within a level), emitting level-``L`` polytopes as it goes.

A cell counts as a polytope iff its certified Chebyshev radius (the smallest slack of all its
constraints at the LP's centre, in the region's normalised coordinates) exceeds
:data:`RADIUS_TOL`. Cells thinner than that but thicker than :data:`SLIVER_TOL` are
*slivers*: not emitted, but crossed, so that no polytope is cut off behind one. An LP that is
neither optimal nor infeasible is re-solved cold and then on each fallback backend in turn; if
all fail, the flip is recorded in ``stats.failures`` and the traversal ends ``incomplete``.
"""
from __future__ import annotations

import enum
import heapq
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from polytrav.vocabulary.errors import ConfigError, RegionError
from polytrav.model.geometry import ZERO_ROW_TOL, Frame, build_frame
from polytrav.model.network import Network
from polytrav.model.polytope import Polytope
from polytrav.model.region import Box, Region
from polytrav.vocabulary.results import SolveResult, Status
from polytrav.solve.backend import SolverBackend, settles, solve_along
from polytrav.solve.chebyshev import ChebyshevModel

__all__ = [
    "Piece",
    "PieceView",
    "Traversal",
    "TraversalStatus",
    "TraversalStats",
    "STRATEGIES",
    "RADIUS_TOL",
    "SLIVER_TOL",
    "DUPLICATE_TOL",
]

from polytrav.vocabulary.text import code_string
from polytrav.vocabulary.tolerances import (  # noqa: E402  (re-exported: the traversal's constants)
    CELL_CODE_RTOL,
    CUT_QUALITY,
    CUT_TOL,
    DUPLICATE_TOL,
    MAX_CUT_ROUNDS,
    RADIUS_TOL,
    SLIVER_TOL,
    START_TRIES,
    VERTEX_MARGIN,
    VERTEX_MAX_DIM,
)

#: At the last level, a cell's vertices are computed when at least this many flips remain to
#: be checked (at deeper levels always: they also screen the next level's hyperplanes).
VERTEX_MIN_FLIPS = 1


class TraversalStatus(str, enum.Enum):
    """How a traversal ended."""

    RUNNING = "running"  #: not finished yet
    COMPLETE = "complete"  #: every polytope meeting the region was visited
    POLYTOPE_LIMIT = "polytope_limit"  #: stopped at ``max_polytopes``: incomplete
    TIME_LIMIT = "time_limit"  #: stopped at ``time_limit``: incomplete
    SOLVER_FAILURE = "solver_failure"  #: some LP failed on every backend: incomplete
    STOPPED = "stopped"  #: the consumer stopped iterating (analyze: every analysis decided)
    INTERRUPTED = "interrupted"  #: Ctrl-C (KeyboardInterrupt): incomplete
    WORKER_LOST = "worker_lost"  #: a parallel run lost a part (its worker died): incomplete

    def __str__(self) -> str:
        return self.value


@dataclass
class TraversalStats:
    """Counters of one traversal (``lp_time`` and ``total_time`` in seconds)."""

    polytopes: int = 0
    lps: int = 0
    lp_time: float = 0.0
    total_time: float = 0.0
    flips_hashed: int = 0  #: flips skipped because the code was already checked
    flips_solved: int = 0  #: flips decided by an LP
    screen_lps: int = 0  #: LPs spent screening hyperplanes against a piece
    flips_vertex: int = 0  #: flips ruled out by a cell's vertices (no LP)
    vertex_sets: int = 0  #: cells whose vertices were computed
    candidates: int = 0  #: hyperplanes that survived screening, summed over pieces
    pieces: list[int] = field(default_factory=list)  #: cells per level (last = polytopes)
    slivers: int = 0  #: thin cells crossed but not emitted
    retries: int = 0  #: LPs re-solved cold or on a fallback backend
    pruned: int = 0  #: level-1 pieces the guide showed unneeded (not expanded)
    restrictions: int = 0  #: times the guide shrank the region
    proven: list[int] = field(default_factory=list)  #: pieces proven by a bound, per level 0..L-1
    proven_volume_share: float = 0.0  #: their share of the region's volume (where computable)
    bound_calls: int = 0  #: pieces a bound was computed for
    bound_time: float = 0.0  #: seconds spent in bounds
    failures: list[str] = field(default_factory=list)  #: LPs no backend could decide

    @property
    def lps_per_polytope(self) -> float:
        return self.lps / max(self.polytopes, 1)

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["lps_per_polytope"] = self.lps_per_polytope
        d["non_lp_time"] = self.total_time - self.lp_time
        return d


@dataclass(frozen=True)
class Strategy:
    """How the traversal finds neighbours (see :data:`STRATEGIES`)."""

    name: str
    default_solver: str
    screen: str  # "interval": closed-form test against the frame box; "lp": two LPs per row
    rows: str  # "candidates": only screened rows in the LP; "all": every non-constant row


#: Registered traversal strategies by name.
STRATEGIES: dict[str, Strategy] = {
    "hierarchical": Strategy("hierarchical", "highs", "interval", "candidates"),
    "seed-faithful": Strategy("seed-faithful", "scipy", "lp", "all"),
}


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


def _volume(V: np.ndarray) -> float | None:
    from scipy.spatial import ConvexHull, QhullError

    try:
        return float(ConvexHull(V).volume) if V.shape[1] > 1 else float(np.ptp(V[:, 0]))
    except (QhullError, ValueError):
        return None


class _Stop(Exception):
    """Internal: a budget was reached."""


class Traversal(Iterator[Polytope]):
    """A running traversal: iterate it for polytopes, then read ``status`` and ``stats``."""

    def __init__(self, net: Network, region: Region, start=None, *, strategy="hierarchical",
                 solver: SolverBackend | None = None, max_polytopes=None, time_limit=None,
                 fallback: Sequence[SolverBackend] = (), guide=None, vertices: bool = False,
                 within=None, prune=None, order="bfs", pieces_only: bool = False):
        if not isinstance(net, Network):
            raise ConfigError(f"traverse: net must be a polytrav.Network, got {type(net).__name__}")
        if not isinstance(region, Region):
            raise ConfigError(f"traverse: region must be a polytrav Region, got {type(region).__name__}")
        if strategy not in STRATEGIES:
            raise ConfigError(f"traverse: unknown strategy {strategy!r}; known: {sorted(STRATEGIES)}")
        if max_polytopes is not None and (int(max_polytopes) != max_polytopes or max_polytopes < 0):
            raise ConfigError(f"traverse: max_polytopes must be a non-negative integer, got {max_polytopes!r}")
        if time_limit is not None and not time_limit > 0:
            raise ConfigError(f"traverse: time_limit must be positive seconds, got {time_limit!r}")
        for b in (solver, *fallback):
            if not isinstance(b, SolverBackend):
                raise ConfigError(
                    f"Traversal takes SolverBackend instances (got {b!r}); name a backend "
                    "through polytrav.traverse(..., solver='highs'), which looks names up")
        self.net = net
        self.region = region.with_dims(net.n_inputs)
        self.strategy = STRATEGIES[strategy]
        self.backend = solver
        self.fallbacks = [b for b in fallback if b.name != solver.name]
        #: The first fallback that certifies optimality (confirms "no polytope here" answers).
        self.confirmer = next((b for b in self.fallbacks if b.certifies_optimality), None)
        self.max_polytopes = max_polytopes
        self.time_limit = time_limit
        self.guide = guide
        self.want_vertices = bool(vertices)
        if within is not None and guide is not None:
            raise ConfigError("traverse: a guide cannot steer a traversal 'within' given pieces")
        self.within = None if within is None else list(within)
        self._emit_pieces = bool(pieces_only)  # level 1 yields its Pieces, no polytopes
        if order not in ("bfs", "best-first"):
            raise ConfigError(f"traverse: order must be 'bfs' or 'best-first', got {order!r}")
        self.prune = prune
        self.best_first = order == "best-first" and prune is not None
        #: ``(level, code, volume_share)`` of every piece proven by ``prune`` (share None
        #: where the volume is not computed).
        self.proven_pieces: list[tuple[int, str, float | None]] = []
        self._queues: list = []  # the frontier of every level being traversed
        self._region_volume = None
        self._restriction = None
        self._region_version = 0
        self._emitted = None  # (index, top block signs) of the polytope the caller holds
        self.frame: Frame = build_frame(self.region, net.n_inputs)
        self._check_domain()
        self._start_later = start if callable(start) else None
        self.start_u = None if callable(start) else self._start_point(start)
        self.status = TraversalStatus.RUNNING
        self.stats = TraversalStats(pieces=[0] * net.n_hidden_layers,
                                    proven=[0] * net.n_hidden_layers)
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
        return sum(len(q) for q in self._queues)

    @property
    def complete(self) -> bool:
        """True iff every polytope meeting the region was visited and emitted."""
        return self.status is TraversalStatus.COMPLETE

    def __repr__(self) -> str:
        return f"<Traversal {self.strategy.name} {self.status.value}: {self.stats.polytopes} polytopes>"

    # ---------------------------------------------------------------- set-up checks
    def _check_domain(self) -> None:
        dom = self.net.input_domain
        if dom is None:
            return
        reach = self.frame.reach()
        lo, hi = self.frame.origin - reach, self.frame.origin + reach
        tol = 1e-9 * (1 + np.abs(self.frame.origin))
        bad = np.flatnonzero((lo < dom[0] - tol) | (hi > dom[1] + tol))
        if bad.size:
            j = int(bad[0])
            raise RegionError(
                f"traverse: region spans [{lo[j]:.6g}, {hi[j]:.6g}] in input {j} but network "
                f"{self.net.name or ''} is only affine on its input domain "
                f"[{dom[0][j]:.6g}, {dom[1][j]:.6g}] (the model file clips inputs there); "
                "intersect the region with Box(*net.input_domain)"
            )

    def _start_point(self, start) -> np.ndarray | None:
        if start is None:
            return None
        x = np.asarray(start, dtype=float).reshape(-1)
        if x.shape[0] != self.net.n_inputs:
            raise RegionError(
                f"traverse: start point has {x.shape[0]} coordinates but the network takes "
                f"{self.net.n_inputs}"
            )
        if not np.isfinite(x).all():
            raise RegionError(f"traverse: start point contains {x[~np.isfinite(x)][0]}")
        bad = self.region.violations(x)
        if bad:
            raise RegionError(f"traverse: start point is outside the region: {'; '.join(bad[:3])}")
        return self.frame.to_u(x)

    # ---------------------------------------------------------------- LP with fallbacks
    def _certified_radius(self, model: ChebyshevModel, u: np.ndarray) -> float:
        """Smallest slack of every constraint of ``model`` at ``u`` (a ball of that radius fits)."""
        fr = self.frame
        t = min(1.0 - np.abs(u).max(),
                (model.region_b - model.region_A @ u).min(initial=np.inf))
        for ball in fr.l1_balls:
            t = min(t, (ball.radius - np.abs(ball.U @ u + ball.w).sum()) / ball.kappa)
        for ball in fr.l2_balls:
            t = min(t, ball.radius - np.linalg.norm(u - ball.center))
        for A, beta, signs in model.blocks:
            if A.shape[0]:
                h = A @ u + beta
                t = min(t, np.where(signs, h, -h).min())
        return float(t)

    def _solve(self, model: ChebyshevModel, what) -> tuple[float, np.ndarray | None] | None:
        """``(radius, centre)`` of the model's cell (radius <= 0 if empty); None if undecided.

        A "no polytope here" answer (radius <= RADIUS_TOL) from a backend that does not
        certify optimality (first-order methods) is confirmed on the first certifying fallback;
        without one it counts as undecided.
        """
        cell = self._solve_cells(model, what)
        if cell is None or cell[0] > RADIUS_TOL or self._certified:
            return cell
        self.stats.retries += 1
        if self.confirmer is None:
            self._fail(what, f"{self.backend.name} does not certify optimality and no fallback confirms")
            return None
        return self._solve_cells(_Rebuilt(model, self.confirmer), what)

    def _solve_cells(self, model: ChebyshevModel, what) -> tuple[float, np.ndarray | None] | None:
        for _ in range(MAX_CUT_ROUNDS):
            res = self._solve_once(model, what)
            if res is None:
                return None
            if res.status is not Status.OPTIMAL:
                return 0.0, None
            t_lp, u = res.objective, res.x
            if model.box_as_bounds:
                return self._certify_in_box(model, t_lp, u, what)
            t_cert = self._certified_radius(model, u)
            if t_lp <= SLIVER_TOL or not self.frame.l2_balls or t_cert >= t_lp - CUT_TOL:
                return min(t_cert, t_lp), u
            if _cuts_decide(t_cert, t_lp):
                return t_cert, u
            self._add_l2_cuts(model, u)
        self._fail(what, "L2 cutting planes did not converge")
        return None

    def _certify_in_box(self, model: ChebyshevModel, t_lp: float, u: np.ndarray, what):
        """Certify a cell from the bounds-only LP (high-dimensional boxes).

        The LP maximised the neuron rows' slack ``t`` over the closed box, an upper bound on
        the Chebyshev radius: ``t <= SLIVER_TOL`` proves the cell is not even a sliver. Else
        the point is pulled toward the box centre, ``u' = (1 - lam) u``, and the best smallest
        slack of all rows (box included) over a grid of ``lam`` certifies a ball. Only when
        that certificate is too small does the exact Chebyshev LP (box rows included) decide.
        """
        if t_lp <= SLIVER_TOL:
            return t_lp, u
        s_at_u = [model.region_b - model.region_A @ u]
        s_at_0 = [model.region_b]
        for A, beta, signs in model.blocks:
            if A.shape[0]:
                sg = np.where(signs, 1.0, -1.0)
                s_at_u.append(sg * (A @ u + beta))
                s_at_0.append(sg * beta)
        su, s0 = np.concatenate(s_at_u), np.concatenate(s_at_0)
        if su.size == 0:
            su, s0 = np.ones(1), np.ones(1)
        lam = np.concatenate([[0.0], 2.0 ** -np.arange(1, 40)])
        box = 1.0 - (1.0 - lam) * np.abs(u).max()
        neuron = ((1.0 - lam)[:, None] * su[None, :] + lam[:, None] * s0[None, :]).min(axis=1)
        cert = np.minimum(box, neuron)
        best = int(np.argmax(cert))
        if cert[best] > RADIUS_TOL:
            return float(cert[best]), (1.0 - lam[best]) * u
        self.stats.lps += 1
        res = model.solve_exact()
        if res.status is Status.INFEASIBLE:
            return 0.0, None
        if res.status is not Status.OPTIMAL:
            self._fail(what, f"exact Chebyshev LP: {res.status} ({res.message})")
            return None
        return min(self._certified_radius(model, res.x), res.objective), res.x

    def _add_l2_cuts(self, model: ChebyshevModel, u: np.ndarray) -> None:
        rows, rhs = [], []
        for ball in self.frame.l2_balls:
            g = u - ball.center
            n = np.linalg.norm(g)
            if n > 0:
                g = g / n
                rows.append(g)
                rhs.append(ball.radius + g @ ball.center)
        if rows:
            model.add_region_rows(np.array(rows), np.array(rhs))

    def _solve_once(self, model: ChebyshevModel, what) -> SolveResult | None:
        """Solve ``model`` (cold re-solve, then the fallbacks on failure); None if undecided.

        ``self._certified`` records whether the backend that answered certifies optimality.
        """
        st = self.stats
        res = model.solve()
        st.lps += 1
        self._certified = model.backend.certifies_optimality
        if res.status in (Status.OPTIMAL, Status.INFEASIBLE):
            return res
        first = res
        st.retries += 1
        if hasattr(model, "solve_cold"):
            res = model.solve_cold()
            st.lps += 1
            if res.status in (Status.OPTIMAL, Status.INFEASIBLE):
                return res
        res, tried = solve_along(self.fallbacks, model.solve_on)
        st.lps += tried
        if tried and settles(res, self.fallbacks[tried - 1]):
            self._certified = self.fallbacks[tried - 1].certifies_optimality
            return res
        self._fail(what, f"{first.solver}: {first.status} ({first.message}); "
                         f"fallbacks: {res.message if tried else 'none'}")
        return None

    def _fail(self, what, why: str) -> None:
        self.stats.failures.append(f"{what}: {why}")

    # ---------------------------------------------------------------- the search
    def _run(self) -> Iterator[Polytope]:
        t0 = time.perf_counter()
        self._t0 = t0
        self._model = self.backend.chebyshev_model(
            self.frame, box_as_bounds=self.strategy.screen == "interval")
        try:
            region_cell = self._region_cell()
            if region_cell is None:  # no backend could decide even the region: nothing is known
                raise _Stop(TraversalStatus.SOLVER_FAILURE)
            if region_cell[0] <= RADIUS_TOL:
                raise RegionError(
                    "traverse: the region has no interior (its Chebyshev radius in normalised "
                    f"units is {region_cell[0]:.3g})"
                )
            if self.prune is not None and self.net.n_hidden_layers and not self._emit_pieces:
                V = (self._vertices(self._model, np.zeros(0, bool), region_cell[1], region_cell[0])
                     if self._use_vertices(1, False) else None)
                if V is not None and not (self.frame.l1_balls or self.frame.l2_balls):
                    self._region_volume = _volume(V)
                if self.within is None and self._proven(PieceView(
                        0, (), self.frame.U, self.frame.origin, region_cell[1], region_cell[0], V,
                        self._model, None, self.frame)) > 0:
                    raise _Stop(TraversalStatus.COMPLETE)  # the whole region is proven
            if self._start_later is not None:
                self.start_u = self._start_point(self._start_later())
            u0 = self.start_u if self.start_u is not None else region_cell[1]
            if self.net.n_hidden_layers == 0:  # an affine network: the region is one polytope
                if self._emit_pieces:
                    yield Piece(np.zeros(0, bool), region_cell[1], region_cell[0])
                elif self.within is None or self.within:
                    yield self._polytope((), region_cell[1], region_cell[0], None, None)
            elif self.within is not None:
                yield from self._subtrees(region_cell[0], region_cell[1])
            else:
                yield from self._level(0, None, self.frame.origin, u0, region_cell[0],
                                       region_cell[1], None, (), None)
            self.status = (TraversalStatus.SOLVER_FAILURE if self.stats.failures
                           else TraversalStatus.COMPLETE)
        except _Stop as stop:
            self.status = stop.args[0]
        finally:
            self.stats.lp_time = self._model.solve_time
            self.stats.total_time = time.perf_counter() - t0
            if self.status is TraversalStatus.RUNNING:
                self.status = TraversalStatus.STOPPED

    def _region_cell(self) -> tuple[float, np.ndarray | None] | None:
        """The region's ``(radius, centre)``: closed-form for the frame box ``[-1, 1]^d`` (the
        origin, radius 1 up to the cap), else by the LP."""
        fr = self.frame
        if fr.is_box and not self._model.region_A.shape[0]:
            return min(1.0, fr.radius_cap), np.zeros(fr.dim)
        return self._solve(self._model, "region")

    def time_left(self) -> float | None:
        """Seconds left of ``time_limit`` (None without one)."""
        if self.time_limit is None:
            return None
        return self.time_limit - (time.perf_counter() - self._t0)

    def _check_time(self) -> None:
        if self.time_limit is not None and time.perf_counter() - self._t0 > self.time_limit:
            raise _Stop(TraversalStatus.TIME_LIMIT)

    def _level_rows(self, k: int, Mt: np.ndarray | None, mt: np.ndarray, piece_u: np.ndarray,
                    piece_t: float, piece_V: np.ndarray | None) -> "_LevelRows":
        """Layer ``k``'s hyperplanes on the current piece: screened, grouped, ready to push."""
        net, model, st = self.net, self._model, self.stats
        W, bias = net.weights[k], net.biases[k]
        H = self.frame.pull(W) if Mt is None else W @ Mt  # None: the frame itself (level 1)
        beta = W @ mt + bias
        rows = _classify(H, beta)
        cand = self._screen(rows, model, piece_u, piece_t, piece_V, k)
        reps, members = _group_duplicates(rows.A[cand], rows.beta[cand])
        cand_idx = np.flatnonzero(cand)[reps]
        # fixed bits: non-candidates from the piece (constant sign there), zero rows from beta
        fixed_bits = (H @ piece_u + beta) >= 0.0
        fixed_bits[rows.zero] = beta[rows.zero] >= 0.0
        extra = np.flatnonzero(~cand & ~rows.zero) if self.strategy.rows == "all" else np.zeros(0, int)
        st.candidates += int(cand.sum())
        # every candidate neuron takes its group representative's bit (negated if opposite)
        ci = np.flatnonzero(cand)
        return _LevelRows(
            H=H, beta=beta, cand_idx=cand_idx, fixed_bits=fixed_bits,
            A_lp=np.vstack([rows.A[cand_idx], rows.A[extra]]),
            b_lp=np.concatenate([rows.beta[cand_idx], rows.beta[extra]]),
            extra_signs=fixed_bits[extra],
            member=np.array([ci[j] for mem in members for j, _ in mem], int),
            member_rep=np.array([g for g, mem in enumerate(members) for _ in mem], int),
            member_neg=np.array([o < 0 for mem in members for _, o in mem], bool),
        )

    def _level(self, k: int, Mt: np.ndarray | None, mt: np.ndarray, u_start: np.ndarray,
               piece_t: float, piece_u: np.ndarray, piece_V: np.ndarray | None, prefix: tuple,
               via: int | None):
        """Traverse level ``k+1`` (0-based layer ``k``) inside the current piece; yields polytopes.

        ``Mt u + mt`` is the input of layer ``k`` on the piece (``Mt`` None: the frame's ``U``,
        which :meth:`Frame.pull` applies without building it); ``piece_V`` its vertices if
        known. With ``self._emit_pieces``, level 1 yields its pieces (:class:`Piece`) instead
        of descending into them.
        """
        net, model, st = self.net, self._model, self.stats
        last = k == net.n_hidden_layers - 1
        lr = self._level_rows(k, Mt, mt, piece_u, piece_t, piece_V)
        H, beta, A_lp, b_lp = lr.H, lr.beta, lr.A_lp, lr.b_lp
        n_rep = lr.cand_idx.size
        full_bits, lp_signs = lr.full_bits, lr.lp_signs
        emit_pieces = self._emit_pieces and k == 0

        start = self._start_cell(model, A_lp, b_lp, lp_signs, n_rep, u_start, piece_t, piece_u, k)
        if start is None:
            return
        signs0, u0, t0 = start
        checked = {np.packbits(signs0).tobytes()}
        guide = self.guide if k == 0 else None
        ranked = self.best_first and not last and not emit_pieces and guide is None
        queue = _Frontier(guide, ranked)
        self._queues.append(queue)

        def push(signs, u, t, from_idx):
            """Queue a cell; best-first: with its margin (and vertices), computed now."""
            margin = V = None
            if ranked and t > RADIUS_TOL:
                if self._use_vertices(1, False):
                    V = self._vertices(model, lp_signs(signs), u, t)
                bits = full_bits(signs)
                margin = self._proven(PieceView(k + 1, prefix + (bits,), H * bits[:, None],
                                                beta * bits, u, t, V, model, lp_signs(signs),
                                                self.frame))
            queue.push((signs, u, t, from_idx, self._region_version, margin, V), full_bits,
                       signs, margin)

        push(signs0, u0, t0, via)
        u_descend = u_start  # the first piece holds the start point: its sub-levels start there
        try:
            while queue:
                self._check_time()
                key, (signs, u, t, from_idx, version, margin, V) = queue.pop()
                if guide is not None:
                    cell = self._guided(key, signs, u, t, version, len(queue), lp_signs)
                    if cell is None:
                        break
                    t, u = cell
                    if t <= SLIVER_TOL:
                        continue
                own = from_idx
                todo = []
                for g in range(n_rep):
                    flipped = signs.copy()
                    flipped[g] = not flipped[g]
                    key = np.packbits(flipped).tobytes()
                    if key in checked:
                        st.flips_hashed += 1
                    else:
                        todo.append((g, flipped, key))
                if V is None and self._use_vertices(len(todo), last):
                    V = self._vertices(model, lp_signs(signs), u, t)
                if V is not None and todo:
                    s_ = np.where(signs, 1.0, -1.0)
                    idx = np.array([g for g, _, _ in todo])
                    slack = s_[idx, None] * (A_lp[idx] @ V.T + b_lp[idx, None])
                    far = slack.min(axis=1) > VERTEX_MARGIN
                    st.flips_vertex += int(far.sum())
                    todo = [item for item, f in zip(todo, far) if not f]
                if t > RADIUS_TOL:
                    st.pieces[k] += 1
                    bits = full_bits(signs)
                    code = prefix + (bits,)
                    if emit_pieces:
                        yield Piece(bits, u, t)
                    elif last:
                        polytope = self._polytope(code, u, t, from_idx, V)
                        own = polytope.index
                        yield from self._emit(polytope, lp_signs(signs))
                    else:
                        Mn, mn = H * bits[:, None], beta * bits
                        if margin is None and self.prune is not None:
                            margin = self._proven(PieceView(k + 1, code, Mn, mn, u, t, V, model,
                                                            lp_signs(signs), self.frame))
                        if margin is None or margin <= 0:  # else proven: no polytope needed
                            model.set_signs(lp_signs(signs))
                            first = st.polytopes
                            yield from self._level(k + 1, Mn, mn, u if u_descend is None else
                                                   u_descend, t, u, V, code, from_idx)
                            own = first if st.polytopes > first else from_idx
                else:
                    st.slivers += 1
                u_descend = None
                for g, flipped, key in todo:
                    self._check_time()
                    # hashed once an LP decides it; flips ruled out by vertices are not kept
                    # (the rule-out is cheaper to repeat than the memory: one key per flip)
                    checked.add(key)
                    if guide is not None:  # the guide ranks the flip by its bits: its LP
                        queue.push((flipped, None, None, own, None, None, None), full_bits,
                                   flipped)  # waits until the guide wants the cell
                        continue
                    model.set_signs(lp_signs(flipped))
                    st.flips_solved += 1
                    cell = self._solve(model, ("flip", k, g))
                    if cell is not None and cell[0] > SLIVER_TOL:
                        push(flipped, cell[1], cell[0], own)
        finally:
            self._queues.pop()
            model.pop()

    def _proven(self, view: "PieceView") -> float:
        """The pruner's margin on a piece; a positive one is recorded as a proven piece."""
        st = self.stats
        t0 = time.perf_counter()
        margin = float(self.prune(view))
        st.bound_calls += 1
        st.bound_time += time.perf_counter() - t0
        if margin > 0:
            share = None
            if self._region_volume and view.vertices is not None:
                vol = _volume(view.vertices)
                share = None if vol is None else vol / self._region_volume
                st.proven_volume_share += share or 0.0
            st.proven[view.level] += 1
            self.proven_pieces.append((view.level, code_string(view.code), share))
        return margin

    def _polytope(self, code: tuple, u: np.ndarray, t: float, parent: int | None,
                  V: np.ndarray | None) -> Polytope:
        """The next emitted polytope (counted; the polytope budget is checked first)."""
        st = self.stats
        if self.max_polytopes is not None and st.polytopes >= self.max_polytopes:
            raise _Stop(TraversalStatus.POLYTOPE_LIMIT)
        st.polytopes += 1
        exact_V = V if not (self.frame.l1_balls or self.frame.l2_balls) else None
        return Polytope(code, self.frame.to_x(u), t, st.polytopes - 1, parent, self.net,
                        self.region, exact_V)

    def _emit(self, polytope: Polytope, top_signs: np.ndarray) -> Iterator[Polytope]:
        """Yield ``polytope``; while the caller holds it, :meth:`maximize_in_cell` may use the
        model (its top block then gets ``top_signs``, the polytope's)."""
        self._emitted = (polytope.index, top_signs)
        try:
            yield polytope
        finally:
            self._emitted = None

    def maximize_in_cell(self, polytope: Polytope, g: np.ndarray) -> SolveResult | None:
        """``max g·u`` over ``polytope`` ∩ region (frame coordinates), in the traversal's warm model.

        Only for the polytope just emitted, and only while the model holds exactly its levels:
        its cell (at ``t = 0``, :meth:`ChebyshevModel.maximize`) is the polytope minus the rows
        the screen proved not to cut a level's piece. The maximiser is accepted only if
        a forward pass gives it the polytope's activation code (within :data:`CELL_CODE_RTOL`),
        so the optimum is the polytope's own LP optimum. ``None`` otherwise (another polytope
        emitted since, an L2-ball region whose rows here are cutting planes, a restricted
        region, a solve that is not optimal, or the check failed): solve the LP elsewhere.
        """
        emitted = self._emitted
        if (emitted is None or emitted[0] != polytope.index or self.frame.l2_balls
                or self._region_version):
            return None
        self._model.set_signs(emitted[1])
        res = self._model.maximize(g)
        if res.status is not Status.OPTIMAL or not _holds_code(
                self.net, polytope.code, self.frame.to_x(res.x)):
            return None
        return res

    def _subtrees(self, region_t: float, region_u: np.ndarray) -> Iterator[Polytope]:
        """Every polytope inside the level-1 pieces ``self.within`` (pieces of this run)."""
        net, model, st = self.net, self._model, self.stats
        last = net.n_hidden_layers == 1
        lr = self._level_rows(0, None, self.frame.origin, region_u, region_t, None)
        model.push(lr.A_lp, lr.b_lp, lr.lp_signs(np.zeros(lr.cand_idx.size, bool)))
        try:
            for piece in self.within:
                self._check_time()
                bits = np.asarray(piece.bits, bool)
                signs = lr.signs_of(bits)
                h = lr.H @ piece.u + lr.beta if bits.shape == lr.fixed_bits.shape else None
                if h is None or not np.array_equal(lr.full_bits(signs), bits) or \
                        (np.where(bits, h, -h) < -1e-7 * (1 + np.abs(h))).any():
                    raise ConfigError("traverse: a piece given in 'within' is not a level-1 piece "
                                      "of this network and region (its code does not hold at "
                                      "its centre)")
                model.set_signs(lr.lp_signs(signs))
                V = self._vertices(model, lr.lp_signs(signs), piece.u, piece.t) \
                    if self._use_vertices(1, last) else None
                st.pieces[0] += 1
                Mn, mn = lr.H * bits[:, None], lr.beta * bits
                if last:
                    yield from self._emit(self._polytope((bits,), piece.u, piece.t, None, V),
                                          lr.lp_signs(signs))
                elif self.prune is None or self._proven(PieceView(
                        1, (bits,), Mn, mn, piece.u, piece.t, V, model, lr.lp_signs(signs),
                        self.frame)) <= 0:
                    yield from self._level(1, Mn, mn, piece.u, piece.t, piece.u, V, (bits,), None)
        finally:
            model.pop()

    def _guided(self, key, signs, u, t, version, n_left, lp_signs):
        """Apply the guide before expanding a level-1 piece.

        Returns ``None`` to end the level (the guide prunes this key, hence every later one),
        ``(0, None)`` to skip a piece that is empty or no longer meets the restricted region,
        else the piece's ``(t, u)`` (solved now for a flip queued unsolved, ``version``
        None; re-solved if the region shrank since it was found).
        """
        st, model = self.stats, self._model
        box = self.guide.restriction()
        if box is not None and box is not self._restriction:
            self._restriction = box
            self._restrict(box)
        if self.guide.prune(key):
            st.pruned += 1 + n_left
            return None
        if version is None:  # a flip queued unsolved
            model.set_signs(lp_signs(signs))
            st.flips_solved += 1
            cell = self._solve(model, ("flip", 0))
            return (0.0, None) if cell is None else cell
        if version != self._region_version:
            model.set_signs(lp_signs(signs))
            cell = self._solve(model, ("restrict", 0))
            if cell is not None:
                if cell[0] <= SLIVER_TOL:
                    st.pruned += 1
                    return 0.0, None
                return cell
        return t, u

    def _restrict(self, box: Box) -> None:
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
            self._model.add_region_rows(np.array(rows), np.array(rhs))
            self._region_version += 1
            self.stats.restrictions += 1

    def _use_vertices(self, n_flips: int, last: bool) -> bool:
        """Whether computing a cell's vertices is expected to save LPs."""
        if self.strategy.screen != "interval" or self.frame.dim > VERTEX_MAX_DIM:
            return False
        if not last or self.want_vertices:
            return True  # they also screen the next level's hyperplanes / the caller wants them
        # one qhull call costs about one warm LP (0.1-0.3 ms in <= 6 dimensions) and rules
        # out most flips; a count, not measured times, so that runs are repeatable
        return n_flips >= VERTEX_MIN_FLIPS

    def _vertices(self, model: ChebyshevModel, signs: np.ndarray, u: np.ndarray,
                  t: float) -> np.ndarray | None:
        """Vertices of the cell's polyhedral outer hull (``None`` if qhull is not sure)."""
        from scipy.spatial import HalfspaceIntersection, QhullError

        if t < 1e-6:
            return None
        A, b = model.halfspaces(signs)
        try:
            V = HalfspaceIntersection(np.c_[A, -b], u).intersections
        except (QhullError, ValueError):
            return None
        self.stats.vertex_sets += 1
        if not np.isfinite(V).all() or (A @ V.T - b[:, None]).max() > 1e-9:
            return None
        return V

    def _start_cell(self, model, A_lp, b_lp, lp_signs, n_rep, u_start, piece_t, piece_u, k):
        """Push the level's rows and find a first cell containing (or near) ``u_start``."""
        rng = np.random.default_rng(k)
        point = u_start
        for attempt in range(START_TRIES + 1):
            signs = (A_lp[:n_rep] @ point + b_lp[:n_rep]) >= 0.0
            if attempt == 0:
                model.push(A_lp, b_lp, lp_signs(signs))
            else:
                model.set_signs(lp_signs(signs))
            cell = self._solve(model, ("start", k))
            if cell is not None and cell[0] > SLIVER_TOL:
                return signs, cell[1], cell[0]
            # the point lies on a hyperplane: try random points near it (so that the start
            # cell touches it, which a guide relies on), then in the piece's inscribed ball
            direction = rng.standard_normal(point.shape[0])
            direction /= np.linalg.norm(direction)
            if attempt < START_TRIES // 2:
                point = u_start + 10.0 ** (-8 + attempt / 2) * piece_t * direction
            else:
                point = piece_u + 0.5 * piece_t * rng.uniform() * direction
        model.pop()
        self._fail(("start", k), "no starting cell found near the start point")
        return None

    def _screen(self, rows: "_Rows", model: ChebyshevModel, piece_u: np.ndarray,
                piece_t: float, piece_V: np.ndarray | None, k: int) -> np.ndarray:
        """Boolean mask of the hyperplanes that cut the current piece's interior.

        ``interval``: the closed-form test against the frame box ``[-1, 1]^d`` (exact for the
        first level of a box region), then, for deeper levels, a hyperplane passing through
        the piece's inscribed ball cuts it, the piece's vertices (when known) decide the rest
        up to a margin, and any other survivor gets one LP: does the piece extend to the side
        of the hyperplane its centre is not on? ``lp``: the paper's
        Algorithm 2, two LPs per hyperplane, no closed-form tests.
        """
        l1 = np.abs(rows.H).sum(axis=1)
        maybe = ~rows.zero & (rows.beta_raw - l1 < 0) & (rows.beta_raw + l1 > 0)
        if self.strategy.screen == "interval":
            if k == 0 and self.frame.is_box:
                return maybe
            value = rows.A @ piece_u + rows.beta
            sure = maybe & (np.abs(value) < piece_t)
            if piece_V is not None:
                vals = rows.A @ piece_V.T + rows.beta[:, None]
                lo, hi = vals.min(axis=1), vals.max(axis=1)
                maybe &= (lo < VERTEX_MARGIN) & (hi > -VERTEX_MARGIN)
                sure |= maybe & (lo < -VERTEX_MARGIN) & (hi > VERTEX_MARGIN)
            sides = [(i, [value[i] < 0]) for i in np.flatnonzero(maybe & ~sure)]
        else:
            sure = np.zeros_like(maybe)
            sides = [(i, [True, False]) for i in np.flatnonzero(~rows.zero)]
        out = sure.copy()
        for i, wanted in sides:
            cuts = True
            for side in wanted:
                model.push(rows.A[i : i + 1], rows.beta[i : i + 1], np.array([side]))
                cell = self._solve(model, ("screen", k, int(i)))
                model.pop()
                self.stats.screen_lps += 1
                if cell is not None and cell[0] <= SLIVER_TOL:
                    cuts = False  # undecided LPs keep the row: a flip LP will decide
                    break
            out[i] = cuts
        return out


def _cuts_decide(t_cert: float, t_lp: float) -> bool:
    """Whether an L2 cutting-plane round may stop: the certified radius ``t_cert`` and the
    LP's upper bound ``t_lp`` put the cell on the same side of both thresholds (polytope:
    above RADIUS_TOL; sliver: in (SLIVER_TOL, RADIUS_TOL]) and ``t_cert`` is at least
    ``CUT_QUALITY`` of ``t_lp`` (so of the Chebyshev radius)."""
    if t_cert < CUT_QUALITY * t_lp:
        return False
    return t_cert > RADIUS_TOL or (t_cert > SLIVER_TOL and t_lp <= RADIUS_TOL)


class _Frontier:
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


@dataclass
class _Rows:
    H: np.ndarray  # raw pre-activation normals in u
    beta_raw: np.ndarray
    A: np.ndarray  # unit normals (zero rows left at 0)
    beta: np.ndarray
    zero: np.ndarray  # constant on the piece


@dataclass
class _LevelRows:
    """One level's rows on a piece: the LP rows (candidates, then extras) and bit mapping."""

    H: np.ndarray  # pre-activation normals of the layer in u (all neurons)
    beta: np.ndarray
    cand_idx: np.ndarray  # neuron of each group representative (the LP's first rows)
    fixed_bits: np.ndarray  # bits of the neurons that are not flipped
    A_lp: np.ndarray
    b_lp: np.ndarray
    extra_signs: np.ndarray  # signs of the non-candidate rows kept in the LP ("all" rows)
    member: np.ndarray  # candidate neurons ...
    member_rep: np.ndarray  # ... their representative ...
    member_neg: np.ndarray  # ... and whether they are its opposite

    def full_bits(self, signs: np.ndarray) -> np.ndarray:
        """The layer's code from the representatives' signs."""
        bits = self.fixed_bits.copy()
        bits[self.member] = signs[self.member_rep] ^ self.member_neg
        return bits

    def lp_signs(self, signs: np.ndarray) -> np.ndarray:
        """Signs of every LP row from the representatives' signs."""
        return np.concatenate([signs, self.extra_signs])

    def signs_of(self, bits: np.ndarray) -> np.ndarray:
        """The representatives' signs in the layer's code ``bits``."""
        return np.asarray(bits, bool)[self.cand_idx]


def _holds_code(net: Network, code: tuple, x: np.ndarray) -> bool:
    """Whether ``x``'s pre-activations have the signs of ``code``, each up to
    :data:`CELL_CODE_RTOL` times its floating-point scale ``|W| |z| + |b|``."""
    z = x
    for (W, b), on in zip(zip(net.weights[:-1], net.biases[:-1]), code):
        h = W @ z + b
        tol = CELL_CODE_RTOL * (np.abs(W) @ np.abs(z) + np.abs(b))
        if np.any(np.where(on, h < -tol, h > tol)):
            return False
        z = np.maximum(h, 0.0)
    return True


def _classify(H: np.ndarray, beta: np.ndarray) -> _Rows:
    norms = np.linalg.norm(H, axis=1)
    scale = max(float(norms.max(initial=0.0)), 1e-300)
    zero = norms <= ZERO_ROW_TOL * scale
    safe = np.where(zero, 1.0, norms)
    return _Rows(H, beta, H / safe[:, None], beta / safe, zero)


def _group_duplicates(A: np.ndarray, beta: np.ndarray) -> tuple[np.ndarray, list]:
    """Representatives of identical hyperplanes and, per representative, ``(row, ±1)`` members
    (unit rows in frame coordinates: equal within DUPLICATE_TOL, or within a sliver)."""
    n = A.shape[0]
    if n == 0:
        return np.zeros(0, int), []
    G = A @ A.T
    near = np.abs(G) > 1.0 - DUPLICATE_TOL
    if np.count_nonzero(near) == n and near.diagonal().all():  # no two rows near-parallel
        return np.arange(n), [[(i, 1)] for i in range(n)]
    owner = -np.ones(n, int)
    reps, members = [], []
    for i in range(n):
        if owner[i] >= 0:
            continue
        owner[i] = len(reps)
        group = [(i, 1)]
        for j in np.flatnonzero(near[i] & (owner < 0)):
            orient = 1 if G[i, j] > 0 else -1
            dA, db = np.abs(A[j] - orient * A[i]), abs(beta[j] - orient * beta[i])
            # equal rows, or rows whose values differ by at most 2 SLIVER_TOL on the frame box:
            # no cell between them is ever crossed, so apart they would wall off what lies
            # beyond (a slab thinner than a sliver); together they are crossed as one
            if (dA.max() <= DUPLICATE_TOL and db <= DUPLICATE_TOL) or dA.sum() + db <= 2 * SLIVER_TOL:
                owner[j] = len(reps)
                group.append((int(j), orient))
        reps.append(i)
        members.append(group)
    return np.array(reps, int), members


class _Rebuilt(ChebyshevModel):
    """A copy of a model's rows on another backend (the confirming backend's solves)."""

    def __init__(self, model: ChebyshevModel, backend):
        self.backend = backend
        self.frame = model.frame
        self.d = model.d
        self.region_A, self.region_b = model.region_A, model.region_b
        self.blocks = model.blocks
        self.n_lift, self.n_vars = model.n_lift, model.n_vars
        self.box_as_bounds = model.box_as_bounds
        self.n_solves, self.solve_time = 0, 0.0
