"""``analyze()``: one traversal, every analysis on every polytope, one :class:`Report`.

A run builds a fresh plugin manager and its :class:`RunContext`, then drives the traversal:
every emitted polytope goes to every voter (each analysis, called directly, and each plugin
that implements ``polytrav_visit_polytope``), whose directives steer the search
(:mod:`polytrav.host.steering`): the run stops once every voter has stopped; pieces every
voter proves by a bound are skipped; when every voter is a ``prunable`` analysis, a guide
orders level-1 pieces by the analyses' bounds, skips pieces none of them needs, and shrinks
the region to the boxes they ask for (paper §5.2's shrinking region).

Subproblems are solved through :meth:`RunContext.solve`: each problem form has a chain of
backends (the chosen one first, then every other installed backend serving the form); a
result that is neither optimal nor infeasible, an exception, or an "infeasible" from a
backend that does not certify optimality moves on to the next backend. When the whole chain
fails, the analysis records the polytope and the result is inexact (never a proof).
"""
from __future__ import annotations

import contextlib
import importlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from polytrav.host.analysis import Analysis
from polytrav.vocabulary.errors import ConfigError, PluginError
from polytrav.bounds.lagrange import CellBound
from polytrav.host.manager import available_solvers, create_analysis, get_plugin_manager, get_solver
from polytrav.host import settling
from polytrav.host.options import RunOptions
from polytrav.host.specs import analysis_specs
from polytrav.host.views import TraversalView
from polytrav.host.stats import report_stats
from polytrav.host.steering import Guide, Voters
from polytrav.model.network import Network
from polytrav.model.region import Region
from polytrav.vocabulary.ctrl_c import ctrl_c_held
from polytrav.vocabulary.text import code_text
from polytrav.vocabulary.results import AnalysisResult, SolveResult, jsonable
from polytrav.solve.backend import SolverBackend, SolveTally, counting, solve_along, tally_solve
from polytrav.solve.deadline import until
from polytrav.solve.subproblem import forget_warm_starts
from polytrav.traversal import STRATEGIES, Traversal, TraversalStatus
from polytrav.traversal.options import TraversalOptions
from polytrav.traversal.subdivision_run import open_traversal

__all__ = ["analyze", "traverse", "pieces", "lp_backends", "backend_chains", "Report", "RunContext",
           "RunSession", "FORMS", "SUBPROBLEM_STATS"]

log = logging.getLogger(__name__)

#: The subproblem counters of ``Report.stats`` (serial runs and runs in parts alike): solves,
#: their seconds, fallbacks taken, solves in the traversal's own LP model, box-LP certificates.
SUBPROBLEM_STATS = ("subproblem_solves", "subproblem_time", "subproblem_fallbacks",
                    "subproblem_in_traversal_model", "subproblem_box_lp")

#: Problem forms, each served by a chain of backends.
FORMS = ("lp", "qp", "socp", "milp")


@dataclass
class Report:
    """Everything one :func:`analyze` run found.

    ``results`` holds one :class:`~polytrav.AnalysisResult` per analysis, in the order given
    (index them by position or by label); ``status`` is the traversal's end state,
    ``complete`` whether every needed polytope was visited, ``decided`` whether the run
    stopped early because every analysis had its answer (a confirmed violation), ``partial``
    whether it is neither (a budget, a lost LP, Ctrl-C: no result is a proof). ``time`` is the
    run's seconds of work, which ``time_limit`` counts (the traversal's set-up and the
    traversal); ``setup_time`` the one-time set-up's before it (plugin manager, checks,
    backend chains, first imports of the solver libraries). ``polytopes`` lists the visited
    :class:`~polytrav.Polytope` objects when ``analyze(..., keep_polytopes=True)``, else None.
    ``print(report)`` shows a table; ``to_dict()`` is JSON-safe.
    """

    results: list[AnalysisResult]
    status: TraversalStatus
    stats: dict[str, Any]
    time: float
    solver: dict[str, list[str]] = field(default_factory=dict)
    setup_time: float = 0.0
    polytopes: list | None = field(default=None, repr=False)
    #: the run's network and Analysis instances (for the text of ``print(report)``)
    network: Network | None = field(default=None, repr=False, compare=False)
    analyses: list = field(default_factory=list, repr=False, compare=False)

    @property
    def complete(self) -> bool:
        return self.status is TraversalStatus.COMPLETE

    @property
    def decided(self) -> bool:
        """Stopped early with every analysis decided: its answers are final, not partial."""
        return self.status is TraversalStatus.STOPPED

    @property
    def partial(self) -> bool:
        """Neither complete nor decided: no result is a proof."""
        return not (self.complete or self.decided)

    def __getitem__(self, key: int | str) -> AnalysisResult:
        if isinstance(key, str):
            for res in self.results:
                if res.analysis == key:
                    return res
            raise KeyError(f"no result labelled {key!r}; labels: {[r.analysis for r in self.results]}")
        return self.results[key]

    def __iter__(self):
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def __repr__(self) -> str:
        inner = ", ".join(repr(r) for r in self.results)
        return (f"Report({self.status.value}, {self.stats.get('polytopes', 0)} polytopes, "
                f"{self.time:.3g} s: {inner})")

    def __str__(self) -> str:
        from polytrav.host.summary import format_report

        return format_report(self)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dictionary (non-finite numbers become null)."""
        return {
            "status": self.status.value,
            "complete": self.complete,
            "decided": self.decided,
            "time": self.time,
            "setup_time": self.setup_time,
            "solver": self.solver,
            "stats": jsonable(self.stats),
            "results": [r.to_dict() for r in self.results],
        }


class RunContext:
    """What analyses and hooks see of a run: network, region, frame, backends, budgets.

    Built before the traversal (:meth:`attach` hands it the traversal once open), so that
    everything the run builds gets the same context.
    """

    def __init__(self, network: Network, region: Region, chains: dict[str, list], pm):
        self.network = network
        self.region = region
        self._chains = chains
        self.pm = pm
        self.traversal = None  # the engine, once attached (read its state through the context)
        self.frame = None
        self.n_solves = 0
        self.solve_time = 0.0
        self.n_fallbacks = 0
        self.n_in_model = 0  # solves in the traversal's own LP model (maximize_in_cell)
        self.n_box_lp = 0  # cell maxima certified by polytrav.bounds.box_lp (maximize_linear)
        #: level-1 pieces whose bound a guided run asked its analyses for (piece_bound)
        self.n_pieces_bounded = 0
        self.cell_bound = CellBound()  # multipliers of the run's cell LPs (maximize_linear)
        #: what the analysis's settle stage found (a Settled), None where none ran
        self.settled = None
        #: in a later round of the settle stage: the results of the boxes its last
        #: ``Settled.probe`` asked for, in order (fewer where the runs stopped); None in
        #: the first round
        self.probed: list | None = None

    def attach(self, traversal: TraversalView) -> None:
        """The run's traversal (a :class:`~polytrav.host.views.TraversalView`)."""
        self.traversal = traversal
        self.frame = traversal.frame

    @property
    def start(self) -> np.ndarray | None:
        """The traversal's start point (input coordinates), or None for the region's centre."""
        u = self.traversal.start_u
        return None if u is None else self.traversal.frame.to_x(u)

    @property
    def status(self) -> TraversalStatus:
        return self.traversal.status

    @property
    def complete(self) -> bool:
        """Whether the traversal visited every polytope the run needed."""
        return self.traversal.complete

    @property
    def stats(self):
        """The traversal's :class:`~polytrav.TraversalStats` (live during the run)."""
        return self.traversal.stats

    @property
    def within(self) -> list | None:
        """The level-1 pieces the run is confined to (a part of a run in parts), else None."""
        return self.traversal.within

    def time_left(self) -> float | None:
        """Seconds left of the run's time budget (None without one)."""
        return self.traversal.time_left()

    def backends(self, form: str, required: bool = True) -> list:
        """The backend chain of ``form`` (the one way to a form's backends); empty when none
        serves it and not ``required``, else a ConfigError naming what is available."""
        chain = self._chains.get(form) or []
        if not chain and required:
            raise ConfigError(
                f"no backend for {form!r} problems is configured or installed; available: "
                f"{available_solvers(form, pm=self.pm)}"
            )
        return chain

    def solve(self, subproblem, **values) -> SolveResult:
        """Solve ``subproblem`` with parameter ``values`` along its form's backend chain."""
        t0 = time.perf_counter()
        res, n_tried = solve_along(self.backends(subproblem.form),
                                   lambda backend: subproblem.solve(backend, **values))
        self.n_solves += n_tried
        self.n_fallbacks += max(n_tried - 1, 0)
        self.solve_time += time.perf_counter() - t0
        return res

    def subproblem_stats(self) -> dict[str, Any]:
        """The run's subproblem counters, as ``Report.stats`` holds them (:data:`SUBPROBLEM_STATS`)."""
        return dict(zip(SUBPROBLEM_STATS, (self.n_solves, self.solve_time, self.n_fallbacks,
                                           self.n_in_model, self.n_box_lp)))

    def maximize_in_cell(self, polytope, g: np.ndarray) -> SolveResult | None:
        """:meth:`Traversal.maximize_in_cell`, counted as a subproblem solve; None if it cannot."""
        t0 = time.perf_counter()
        res = self.traversal.maximize_in_cell(polytope, g)
        elapsed = time.perf_counter() - t0
        if res is not None:
            self.n_solves += 1
            self.n_in_model += 1
            tally_solve(res.solver, True, elapsed)
        self.solve_time += elapsed
        return res

    @staticmethod
    def code_str(polytope) -> str:
        """The polytope's activation code for messages (:func:`~polytrav.vocabulary.text.code_text`:
        past 128 neurons its packed bits in hex, which stay unique)."""
        return code_text(polytope.code)


def _as_analyses(analyses, pm) -> list[Analysis]:
    out = [spec if isinstance(spec, Analysis) else create_analysis(spec[0], pm=pm, **spec[1])
           for spec in analysis_specs(analyses, "analyze")]
    if len({id(a) for a in out}) != len(out):
        raise ConfigError("analyze: the same Analysis instance is given twice")
    return out


def backend_chains(solver, pm) -> dict[str, list]:
    """Backend chain per form from the ``solver`` argument (see :func:`analyze`)."""
    if solver is None or isinstance(solver, str) or not isinstance(solver, (dict, list, tuple)):
        solver = {} if solver is None else {"lp": solver}
    if isinstance(solver, (list, tuple)):
        solver = {"lp": list(solver)}
    unknown = set(solver) - set(FORMS)
    if unknown:
        raise ConfigError(f"analyze: solver keys must be problem forms {list(FORMS)}, got {sorted(unknown)}")
    chains, made = {}, {}

    def instance(name):  # one instance per installed backend named in several chains
        if name not in made:
            made[name] = get_solver(name, pm=pm)
        return made[name]

    for form in FORMS:
        choice = solver.get(form)
        if isinstance(choice, (list, tuple)):  # an exact chain, no automatic fallbacks
            chain = [get_solver(s, pm=pm) for s in choice]
        else:
            names = available_solvers(form, pm=pm)
            first = [get_solver(choice, pm=pm)] if choice is not None else []
            rest = [instance(n) for n in names if not first or n != first[0].name]
            chain = first + rest
        for backend in chain:
            if form not in backend.forms:
                raise ConfigError(
                    f"solver {backend.name!r} does not serve {form!r} problems (its forms: "
                    f"{sorted(backend.forms)}); pick one of {available_solvers(form, pm=pm)}"
                )
        chains[form] = chain
    return chains


def lp_backends(solver=None, fallback="auto", strategy: str = "hierarchical", pm=None
                ) -> tuple[SolverBackend, list[SolverBackend]]:
    """The traversal's LP backend and fallbacks from names or instances (see :func:`traverse`).

    Names are looked up in ``pm``'s registry, or the default one's (:func:`solver_classes`);
    the engine (:class:`~polytrav.traversal.Traversal`) receives the instances.
    """
    if fallback is None:
        fallback = []
    elif fallback != "auto" and not isinstance(fallback, (list, tuple)):
        fallback = [fallback]
    default = STRATEGIES[strategy].default_solver if strategy in STRATEGIES else "highs"
    backend = get_solver(solver if solver is not None else default, pm=pm)
    if fallback == "auto":
        fallback = available_solvers("lp", pm=pm)
    return backend, [get_solver(f, pm=pm) for f in fallback]


def traverse(net: Network, region: Region, start=None, *, strategy: str = "auto",
             solver=None, max_polytopes: int | None = None,
             time_limit: float | None = None, fallback="auto", guide=None,
             vertices: bool = False, within=None, prune=None,
             order: str = "bfs", volume_shares: bool = True,
             batch: int | None = None) -> "Traversal":
    """Visit every full-dimensional polytope of ``net`` that meets ``region``.

    Parameters
    ----------
    net : Network
    region : Region
        Closed, bounded, convex; its dimension must equal ``net.n_inputs`` (scalar boxes
        broadcast).
    start : array_like or callable, optional
        A point of the region to start from; defaults to the region's Chebyshev centre. A
        callable returning one (or None) is called only when the search starts, after a
        ``prune`` that proves the whole region made it unnecessary (an attack, say).
    strategy : {"auto", "hierarchical", "seed-faithful", "subdivision"}
        ``hierarchical`` is the paper's Algorithm 3 made fast; ``seed-faithful`` is the
        paper's algorithm as written (LP screening, SciPy ``linprog``, no warm start), kept
        as the baseline; ``subdivision`` cuts the region's polytope by every neuron in turn,
        many cells at once and without LPs (polyhedral regions of few dimensions:
        :mod:`polytrav.traversal.subdivision`), and emits the cells of each batch it
        finishes (up to 2 048 cells). ``auto``: subdivision for polyhedral regions of at
        most 8 dimensions (7 without numba) when every polytope is visited (no
        ``guide``, ``prune`` or ``within``), else hierarchical
        (:func:`polytrav.traversal.subdivision_run.choose_strategy`): the default.
    solver : str or SolverBackend, optional
        LP backend; defaults to the strategy's (``highs`` / ``scipy``).
    max_polytopes, time_limit : optional
        Budgets; reaching one ends the traversal with an incomplete status.
    fallback : "auto", str, SolverBackend, list of these, or None
        Backends that re-solve, in turn, an LP the main backend could not decide (after a
        cold re-solve). ``"auto"`` (default): every other installed LP backend, in
        preference order; ``None``: none.
    guide : optional
        Lets a caller skip what it does not need (:func:`polytrav.analyze` passes one for
        analyses such as counterfactuals). Three methods: ``key(bits) -> float``, a lower
        bound of the caller's objective over the level-1 piece whose first-layer code is
        ``bits`` (pieces are expanded in increasing key order); ``prune(key) -> bool``,
        True when nothing with that bound is needed (the traversal then ends: every later
        piece has a key at least as large); ``restriction() -> Box | None``, a box (always
        containing ``start``, only ever shrinking) outside which nothing is needed, applied
        between level-1 pieces and, mid-level, in the levels entered at ``start``;
        optionally ``balls() -> tuple[Ball, ...] | None``, balls (each containing ``start``,
        only ever shrinking) such that nothing is needed outside all of them: a neighbour
        across a hyperplane whose far side misses every ball is skipped without an LP.
        Sound for any caller whose needed set is convex and contains ``start``: the pieces
        meeting it are connected through pieces meeting it.
    vertices : bool
        Compute every polytope's vertices (``Polytope.vertices``) where the traversal can
        (polyhedral regions of at most ``VERTEX_MAX_DIM`` dimensions), not only where they
        save LPs; analyses read extremes of linear functions off them.
    within : list of Piece, optional
        Visit only the polytopes inside these level-1 pieces (from :func:`pieces` on the
        same network, region and strategy); the union over all pieces is the full traversal.
    prune : callable, optional
        ``prune(piece) -> float`` for every piece (:class:`PieceView`: the region at level
        0, then every cell of a level above the last) before the traversal descends into it:
        a lower bound of the caller's margin over the piece. A positive margin proves that
        the caller needs none of the piece's polytopes: the piece is skipped and recorded
        (``proven_pieces``, ``stats.proven``). Sound for a caller whose margin bounds hold
        on every point of the piece (:mod:`polytrav.bounds.crown`).
    order : {"bfs", "best-first"}
        The order in which the cells of a level are descended into: as found (the paper's
        breadth-first order), or, with ``prune``, all cells of the level first and then by
        increasing margin, so that likely violations are reached early.
    volume_shares : bool
        Give each piece ``prune`` proves its share of the region's volume (qhull, about a
        millisecond a piece; the first :data:`~polytrav.traversal.frontier.PROVEN_VOLUMES`
        pieces, in regions of at most 6 dimensions). False: a statistic skipped.
    batch : int, optional
        Subdivision only: the most cells it cuts together (default
        :data:`~polytrav.traversal.subdivision.BATCH`), on at most
        :data:`~polytrav.traversal.subdivision.VERTICES_PER_CELL` times as many vertex
        rows: a batch that outgrows them, even within a layer, is split and its parts run
        one after the other, so memory stays bounded (``stats.held``: the most vertex
        rows held at once) and polytopes stream out early.

    Returns
    -------
    Traversal
        An iterator of :class:`Polytope`; after iteration, ``.status``, ``.complete`` and
        ``.stats`` describe the run.

    Examples
    --------
    >>> from polytrav import Network, Box, traverse
    >>> net = Network.from_arrays([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
    >>> run = traverse(net, Box([-1, -1], [1, 1]))
    >>> len(list(run)), run.complete
    (4, True)
    """
    backend, fallbacks = lp_backends(solver, fallback, strategy)
    return open_traversal(net, region, start, TraversalOptions(
        strategy=strategy, solver=backend, fallback=tuple(fallbacks),
        max_polytopes=max_polytopes, time_limit=time_limit, guide=guide, vertices=vertices,
        within=within, prune=prune, order=order, volume_shares=volume_shares,
        **({} if batch is None else {"batch": batch})))


def pieces(net: Network, region: Region, start=None, *, strategy: str = "hierarchical",
           solver=None, time_limit: float | None = None, fallback="auto") -> "Traversal":
    """The level-1 pieces of ``net`` inside ``region``, without descending into them.

    The pieces partition the region (up to measure zero), so the polytopes of a traversal
    are exactly the union of ``traverse(..., within=[piece])`` over its pieces: the unit of
    work of parallel runs and checkpoints (:mod:`polytrav.parallel`). ``strategy`` lists them
    as its runs would: ``"subdivision"`` (and ``"auto"`` where it picks it) by cutting the
    region with the first layer, the others in the order the full traversal would descend
    into them; the returned run ends with a status like any other.

    Examples
    --------
    >>> from polytrav import Network, Box, traverse
    >>> from polytrav.host.runner import pieces
    >>> net = Network.from_arrays([[[1.0, 0.0]], [[1.0], [1.0]], [[1.0, 1.0]]],
    ...                           [[0.0], [0.0, -0.5], [0.0]])
    >>> region = Box([-1, -1], [1, 1])
    >>> found = list(pieces(net, region))
    >>> len(found), sum(len(list(traverse(net, region, within=[p]))) for p in found)
    (2, 3)
    """
    backend, fallbacks = lp_backends(solver, fallback, strategy)
    return open_traversal(net, region, start, TraversalOptions(
        strategy=strategy, solver=backend, fallback=tuple(fallbacks), time_limit=time_limit,
        pieces_only=True))


def analyze(net: Network, region: Region, analyses, *, start=None, solver=None,
            strategy: str = "auto", max_polytopes: int | None = None,
            time_limit: float | None = None, progress=None, within=None, executor=None,
            checkpoint=None, resume: bool = False, checkpoint_every: float = 60.0,
            parts: int | None = None, order: str = "bfs", keep_polytopes: bool = False,
            on_interrupt: str = "raise", volume_shares: bool = True,
            deadline: float | None = None, settle: bool = True) -> Report:
    """Run analyses over every polytope of ``net`` inside ``region``.

    Parameters
    ----------
    net : Network
    region : Region
    analyses : Analysis, str, (str, dict), dict, or a list of these
        Instances, or registered names with parameters (``("counterfactual", {"x0": x0})``
        or ``{"name": "counterfactual", "x0": x0}``).
    start : array_like, optional
        Start point; defaults to the first point an analysis asks for (a counterfactual's
        ``x0``), else the region's Chebyshev centre.
    solver : str, SolverBackend, list or dict, optional
        The LP backend (also the traversal's), or ``{"lp": ..., "qp": ..., "socp": ...,
        "milp": ...}``.
        A name is tried first and every other installed backend of the form follows as a
        fallback; a list is the exact chain (no automatic fallbacks).
    strategy, max_polytopes
        As in :func:`polytrav.traverse`.
    time_limit : float, optional
        Seconds of work (``Report.time``): counted once the one-time set-up is done (the
        plugin manager, the solver libraries' first imports: ``Report.setup_time``), so that
        a budget is the same on the first call of a process and the next. It is the run's
        deadline for every solver call in it (LPs, QPs, MILPs, a counterfactual's MILP or
        branch and bound): each gets at most what is left, none starts once nothing is, and
        a run that hits it is partial (``time_limit``).
    deadline : float, optional
        A :func:`time.perf_counter` value the run ends by, its set-up included: the
        wall-clock convention of :func:`polytrav.verify` and ``polytrav-vnnlib``. With
        ``time_limit`` too, the earlier end wins.
    progress : callable, optional
        Called as ``progress(traversal)`` after every polytope (``traversal.stats`` holds the
        counts so far); progress bars hang here. A run in parts calls it after every part.
    within : list of Piece, optional
        Only the polytopes inside these level-1 pieces (see :func:`polytrav.traverse`).
    executor : concurrent.futures.Executor, optional
        Run in parts on this executor (:func:`polytrav.parallel.get_executor`: processes or
        Dask); every analysis must implement :meth:`~polytrav.Analysis.combine`. The
        results equal a serial run's (each analysis combines its parts exactly).
    checkpoint : path, optional
        Run in parts and save progress there every ``checkpoint_every`` seconds and at the
        end (atomically); ``resume=True`` continues from it (refused, with
        :class:`~polytrav.CheckpointError`, if it belongs to other inputs).
    parts : int, optional
        How many parts to cut the pieces into (default: 8 per worker).
    order : {"bfs", "best-first"}
        When every analysis proves pieces by bounds (``LinearProperty`` in ``verify``
        mode), pieces with a positive margin are skipped, and ``best-first`` descends into
        the pieces of each level by increasing margin (likely violations first); ``bfs`` is
        the paper's order. See :func:`polytrav.traverse`.
    keep_polytopes : bool
        Keep the visited polytopes in ``Report.polytopes`` (for exports; memory grows with
        the count). Serial runs only.
    on_interrupt : {"raise", "report"}
        What Ctrl-C (``KeyboardInterrupt``) does: ``"raise"`` (default) closes the run and
        re-raises it; ``"report"`` returns the partial report, with status ``interrupted``
        (in parts: the parts finished so far; a checkpoint is saved either way).
    volume_shares : bool
        Record the volume share of each piece the bounds prove (``stats["proven_pieces"]``,
        ``stats["proven_volume_share"]``; see :func:`polytrav.traverse`), in parts too.
    settle : bool
        Let the run's analysis decide the region, or what is left to traverse, before the
        traversal (:meth:`~polytrav.Analysis.settle`: ``LinearProperty``'s attacks and input
        splitting), when it is the run's only analysis and no plugin visits polytopes
        (default True; ``stats["settle"]`` says what it found). False: the traversal alone,
        with the same answer.

    Returns
    -------
    Report

    Examples
    --------
    >>> from polytrav import Network, Box, analyze
    >>> net = Network.from_arrays([[[1.0, 0.0], [0.0, 1.0]], [[1.0, -1.0]]], [[0.0, 0.0], [0.0]])
    >>> report = analyze(net, Box([-1, -1], [1, 1]), "output_range")
    >>> report[0].value["min"], report[0].value["max"]
    (-1.0, 1.0)
    """
    t0 = time.perf_counter()
    options = RunOptions(
        start=start, solver=solver, strategy=strategy, order=order, max_polytopes=max_polytopes,
        time_limit=time_limit, deadline=deadline, within=within, progress=progress,
        executor=executor, checkpoint=checkpoint, resume=resume,
        checkpoint_every=checkpoint_every, parts=parts, keep_polytopes=keep_polytopes,
        on_interrupt=on_interrupt, volume_shares=volume_shares, settle=settle)
    return RunSession(solver).run(net, region, analyses, options, t0=t0)


class RunSession:
    """What runs of analyses share: the plugin manager and the backend chains, built once.

    :func:`analyze` builds a fresh session per call (a fresh plugin manager per run);
    :func:`polytrav.explain` keeps one per worker for all its rows, so that each row pays
    only for its own analyses, frame and traversal. A run calls its analyses directly (they
    are not registered on the manager), so runs in one session see the same plugins.
    ``solver`` is :func:`analyze`'s.
    """

    def __init__(self, solver=None):
        self.solver = solver
        self.pm = get_plugin_manager()
        self.chains = backend_chains(solver, self.pm)
        self._names = {form: tuple(b.name for b in chain) for form, chain in self.chains.items()}
        self._warm: set[tuple] = set()

    def analyses(self, analyses) -> list[Analysis]:
        """:class:`Analysis` instances from :func:`analyze`'s ``analyses`` argument."""
        return _as_analyses(analyses, self.pm)

    def run(self, net: Network, region: Region, analyses, options: RunOptions | None = None,
            *, t0: float | None = None) -> Report:
        """One run of :func:`analyze` on this session's manager and chains (``options``:
        :func:`analyze`'s keyword arguments; their ``solver`` is the session's)."""
        t0 = time.perf_counter() if t0 is None else t0
        options = RunOptions(solver=self.solver) if options is None else options
        if not isinstance(net, Network):
            raise ConfigError(f"analyze: net must be a polytrav.Network, got {type(net).__name__}")
        if not isinstance(region, Region):
            raise ConfigError(f"analyze: region must be a polytrav Region, got {type(region).__name__}")
        region = region.with_dims(net.n_inputs)
        items = _as_analyses(analyses, self.pm)
        seen: dict[str, int] = {}
        for a in items:
            a.validate(net, region)
            seen[a.name] = seen.get(a.name, 0) + 1
            a.label = a.name if seen[a.name] == 1 else f"{a.name}#{seen[a.name]}"
        forget_warm_starts()  # answers that do not depend on the runs before this one
        forms = frozenset(a.problem_form for a in items)
        if forms not in self._warm:  # the libraries' first imports, once per session
            _warm_up(items, self.chains)
            self._warm.add(forms)
        t1 = time.perf_counter()  # the work starts: time_limit counts from here (Report.time)
        if options.deadline is not None:  # what is left until the deadline, counted from here
            left = max(options.deadline - t1, 1e-6)
            limit = options.time_limit
            options = options.replace(time_limit=left if limit is None else min(limit, left))
        # every solver call of the work ends by its deadline (polytrav.solve.deadline)
        with until(None if options.time_limit is None else t1 + options.time_limit) as deadline:
            if options.settle and settling.applies(items, self.pm, options):  # a stage first
                report = settling.run_settled(self, net, region, items[0], options, t0, t1)
                if report is not None:
                    return report
            if options.start is None:  # an analysis's start point: now for a run in parts
                def start():           # (every part starts from it), else when needed
                    return next((p for p in (a.start_point() for a in items) if p is not None),
                                None)
                options = options.replace(start=start() if options.in_parts else start)
            if options.in_parts:
                from polytrav.parallel import run_in_parts

                return run_in_parts(net, region, items, options, self)
            return self._serial(net, region, items, options, t0, t1, deadline)

    def _serial(self, net, region, items, options: RunOptions, t0: float, t1: float,
                deadline) -> Report:
        """The serial run of :meth:`run` (``deadline``: its
        :class:`~polytrav.solve.deadline.Deadline`)."""
        pm, chains = self.pm, self.chains
        context = RunContext(net, region, chains, pm)
        voters = Voters(items, pm)
        guide = (Guide(items, voters, context)
                 if options.within is None and Guide.possible(items) else None)
        prune = None
        if voters.prove_pieces:
            def prune(piece):
                return voters.margin(piece, context)
        lp_chain = chains["lp"]
        if not lp_chain:
            raise ConfigError("analyze: no LP backend is installed (pip install highspy)")
        time_limit = options.time_limit
        if time_limit is not None:  # what the traversal's set-up left of the budget
            time_limit = max(time_limit - (time.perf_counter() - t1), 1e-6)
        trav = open_traversal(net, region, options.start, TraversalOptions(
            strategy=options.strategy, solver=lp_chain[0], fallback=tuple(lp_chain[1:]),
            max_polytopes=options.max_polytopes, time_limit=time_limit, guide=guide,
            vertices=any(a.uses_vertices for a in items), within=options.within, prune=prune,
            order=options.order, volume_shares=options.volume_shares))
        context.attach(trav)
        log.debug("run: %s on %d inputs, strategy %s, backends %s", [a.label for a in items],
                  net.n_inputs, type(trav).__name__, {f: n[:1] for f, n in self._names.items()})
        kept: list | None = [] if options.keep_polytopes else None
        tally = SolveTally()
        report = options.on_interrupt == "report"
        with contextlib.ExitStack() as held:
            with counting(tally):
                interrupted = self._visit(trav, context, voters, items, options.progress, kept)
                if deadline.refused and trav.status is TraversalStatus.COMPLETE:
                    trav.status = TraversalStatus.TIME_LIMIT  # a solve was not started: partial
                if report:  # the report is made whole: a Ctrl-C while it is made asks for it
                    held.enter_context(ctrl_c_held(deliver=False))
                trav.close(TraversalStatus.INTERRUPTED if interrupted is not None else None)
                if interrupted is not None and not report:
                    raise interrupted
                results = [_result(a, a.end_run(context)) for a in items]
                self.pm.hook.polytrav_end_run(context=context)  # other plugins' (not results)
            stats = report_stats(trav.stats.to_dict(), proven_pieces=trav.proven_pieces,
                                 subproblems=context.subproblem_stats(), solves=tally.to_dict())
            log.debug("run %s: %d polytopes, %d LPs, %d subproblems", trav.status.value,
                      stats["polytopes"], stats["lps"], stats["subproblem_solves"])
            return Report(
                results=results,
                status=trav.status,
                stats=stats,
                time=time.perf_counter() - t1,
                solver={form: list(names) for form, names in self._names.items()},
                setup_time=t1 - t0,
                polytopes=kept,
                network=net,
                analyses=list(items),
            )

    def _visit(self, trav, context, voters, items, progress, kept) -> KeyboardInterrupt | None:
        """Begin, then every polytope to every voter: the Ctrl-C that stopped it, if one did
        (the traversal is closed on any other exception)."""
        for a in items:
            a.begin_run(context)
        self.pm.hook.polytrav_begin_run(context=context)
        try:
            for polytope in trav:
                if kept is not None:
                    kept.append(polytope)
                voters.visit(polytope, context)
                if progress is not None:
                    progress(trav)
                if voters.all_stopped:
                    break
        except KeyboardInterrupt as exc:  # not an interruption once every voter had stopped
            return None if voters.all_stopped else exc
        except BaseException:
            trav.close(None)
            raise
        return None


def _result(analysis: Analysis, result) -> AnalysisResult:
    """``analysis``'s result, refused with a PluginError when it is not an AnalysisResult."""
    if not isinstance(result, AnalysisResult):
        raise PluginError(f"analysis {analysis.name!r} ({type(analysis).__name__}): finish() "
                          f"returned {type(result).__name__}, not a polytrav.AnalysisResult",
                          plugin=analysis.name)
    return result


def _warm_up(analyses: Sequence[Analysis], chains: dict[str, list]) -> None:
    """Import, before the run's clock starts, the solver libraries its first solves import:
    those of the first backend of the LP chain (the traversal's) and of each form an
    analysis solves. Nothing the run may not use: qhull (vertices) and cvxpy (subproblems)
    load on their first use, inside the run (a verification answered by bounds uses neither,
    and cvxpy alone takes about a second to import)."""
    forms = {"lp"} | {a.problem_form for a in analyses if a.problem_form is not None}
    modules = []
    for form in sorted(forms):
        chain = chains.get(form) or []
        if chain:
            modules += list(getattr(chain[0], "required_modules", ()))
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:
            pass  # the solve that needs it reports the missing library
