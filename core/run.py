"""``analyze()``: one traversal, every analysis on every polytope, one :class:`Report`.

A run builds a fresh plugin manager, registers each analysis instance on it as a plugin,
and drives the traversal: every emitted polytope goes through the ``polytrav_visit_polytope``
hook. Directives from analyses steer the search: when every analysis of the run is
``prunable``, the traversal gets a guide that orders level-1 pieces by the analyses' bounds,
skips pieces none of them needs, and shrinks the region to the boxes they ask for
(paper §5.2's shrinking region); the run stops early once every analysis is decided.

Subproblems are solved through :meth:`RunContext.solve`: each problem form has a chain of
backends (the chosen one first, then every other installed backend serving the form); a
result that is neither optimal nor infeasible, an exception, or an "infeasible" from a
backend that does not certify optimality moves on to the next backend. When the whole chain
fails, the analysis records the polytope and the result is inexact (never a proof).
"""
from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from polytrav.analysis import Analysis
from polytrav.errors import ConfigError, PolytravError
from polytrav.lagrange import CellBound
from polytrav.manager import available_solvers, create_analysis, get_plugin_manager, get_solver
from polytrav.network import Network
from polytrav.region import Box, Region
from polytrav.results import DECIDED, AnalysisResult, SolveResult, Status
from polytrav.traverse import Traversal, TraversalStatus, traverse

__all__ = ["analyze", "Report", "RunContext", "FORMS"]

#: Problem forms, each served by a chain of backends.
FORMS = ("lp", "qp", "socp")


@dataclass
class Report:
    """Everything one :func:`analyze` run found.

    ``results`` holds one :class:`~polytrav.AnalysisResult` per analysis, in the order given
    (index them by position or by label); ``status`` is the traversal's end state,
    ``complete`` whether every needed polytope was visited, ``stats`` the traversal counters.
    """

    results: list[AnalysisResult]
    status: TraversalStatus
    stats: dict[str, Any]
    time: float
    solver: dict[str, list[str]] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return self.status is TraversalStatus.COMPLETE

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

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dictionary."""
        return {
            "status": self.status.value,
            "complete": self.complete,
            "time": self.time,
            "solver": self.solver,
            "stats": json.loads(json.dumps(self.stats, default=str)),
            "results": [r.to_dict() for r in self.results],
        }


class RunContext:
    """What hooks see of a run: network, region, frame, backends and the traversal."""

    def __init__(self, network: Network, region: Region, traversal: Traversal,
                 chains: dict[str, list], pm):
        self.network = network
        self.region = region
        self.traversal = traversal
        self.frame = traversal.frame
        self.chains = chains
        self.pm = pm
        self.n_solves = 0
        self.solve_time = 0.0
        self.n_fallbacks = 0
        self.n_in_model = 0  # solves in the traversal's own LP model (maximize_in_cell)
        self.n_box_lp = 0  # cell maxima certified by polytrav.box_lp (maximize_linear)
        self.cell_bound = CellBound()  # multipliers of the run's cell LPs (maximize_linear)

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

    def backends(self, form: str) -> list:
        """The backend chain of ``form``; ConfigError if no installed backend serves it."""
        chain = self.chains.get(form) or []
        if not chain:
            raise ConfigError(
                f"no backend for {form!r} problems is configured or installed; available: "
                f"{available_solvers(form, pm=self.pm)}"
            )
        return chain

    def solve(self, subproblem, **values) -> SolveResult:
        """Solve ``subproblem`` with parameter ``values`` along its form's backend chain."""
        t0 = time.perf_counter()
        tried = []
        res = SolveResult(Status.ERROR, message="no backend tried")
        for k, backend in enumerate(self.backends(subproblem.form)):
            if k:
                self.n_fallbacks += 1
            try:
                res = subproblem.solve(backend, **values)
            except PolytravError as exc:
                res = SolveResult(Status.ERROR, solver=backend.name, message=str(exc))
            self.n_solves += 1
            tried.append(f"{backend.name}: {res.status}")
            if res.status is Status.OPTIMAL or (
                    res.status is Status.INFEASIBLE and backend.certifies_optimality):
                break
        else:
            if res.status in DECIDED:  # an unconfirmed "infeasible" stays undecided
                res = SolveResult(Status.ERROR, solver=res.solver,
                                  message="infeasible only by a backend that does not certify")
            res = SolveResult(res.status, res.objective, res.x, res.duals, res.solver,
                              res.solve_time, res.iterations,
                              f"{res.message} [tried {'; '.join(tried)}]", res.extras)
        self.solve_time += time.perf_counter() - t0
        return res

    def maximize_in_cell(self, polytope, g: np.ndarray) -> SolveResult | None:
        """:meth:`Traversal.maximize_in_cell`, counted as a subproblem solve; None if it cannot."""
        t0 = time.perf_counter()
        res = self.traversal.maximize_in_cell(polytope, g)
        if res is not None:
            self.n_solves += 1
            self.n_in_model += 1
        self.solve_time += time.perf_counter() - t0
        return res

    @staticmethod
    def code_str(polytope) -> str:
        """The polytope's activation code, ``0``/``1`` per neuron and ``|`` between layers."""
        if sum(c.size for c in polytope.code) > 128:
            return "0x" + polytope.key.hex()
        return "|".join("".join("1" if b else "0" for b in c) for c in polytope.code)


class _Guide:
    """The traversal guide of a run whose analyses are all prunable (see ``traverse``)."""

    def __init__(self, analyses: Sequence[Analysis], context_ref: list):
        self.analyses = analyses
        self.context_ref = context_ref
        self._box = None
        self._boxes: tuple = ()

    def key(self, bits: np.ndarray) -> float:
        context = self.context_ref[0]
        return min(a.piece_bound(bits, context) for a in self.analyses)

    def prune(self, key: float) -> bool:
        return all(key >= a.threshold() for a in self.analyses)

    def restriction(self) -> Box | None:
        boxes = tuple(a.restriction for a in self.analyses)
        if any(b is None for b in boxes):
            return None
        if boxes != self._boxes:
            self._boxes = boxes
            lo = np.min([b.lower for b in boxes], axis=0)
            hi = np.max([b.upper for b in boxes], axis=0)
            self._box = Box(lo, hi)
        return self._box


def _as_analyses(analyses, pm) -> list[Analysis]:
    if isinstance(analyses, (Analysis, str, dict)) or (
            isinstance(analyses, tuple) and len(analyses) == 2 and isinstance(analyses[0], str)):
        analyses = [analyses]
    out = []
    for spec in analyses:
        if isinstance(spec, Analysis):
            out.append(spec)
        elif isinstance(spec, str):
            out.append(create_analysis(spec, pm=pm))
        elif isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str):
            out.append(create_analysis(spec[0], pm=pm, **dict(spec[1])))
        elif isinstance(spec, dict):
            params = dict(spec)
            if "name" not in params:
                raise ConfigError(f"analysis given as a dict needs a 'name' key, got {sorted(params)}")
            out.append(create_analysis(params.pop("name"), pm=pm, **params))
        else:
            raise ConfigError(
                f"analyze: an analysis must be an Analysis instance, a registered name, a "
                f"(name, params) pair or a dict with 'name'; got {type(spec).__name__}"
            )
    if not out:
        raise ConfigError("analyze: no analyses given")
    if len({id(a) for a in out}) != len(out):
        raise ConfigError("analyze: the same Analysis instance is given twice")
    return out


def _chains(solver, pm) -> dict[str, list]:
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


def analyze(net: Network, region: Region, analyses, *, start=None, solver=None,
            strategy: str = "hierarchical", max_polytopes: int | None = None,
            time_limit: float | None = None, progress=None, within=None, executor=None,
            checkpoint=None, resume: bool = False, checkpoint_every: float = 60.0,
            parts: int | None = None, order: str = "bfs") -> Report:
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
        The LP backend (also the traversal's), or ``{"lp": ..., "qp": ..., "socp": ...}``.
        A name is tried first and every other installed backend of the form follows as a
        fallback; a list is the exact chain (no automatic fallbacks).
    strategy, max_polytopes, time_limit
        As in :func:`polytrav.traverse`.
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
    if not isinstance(net, Network):
        raise ConfigError(f"analyze: net must be a polytrav.Network, got {type(net).__name__}")
    if not isinstance(region, Region):
        raise ConfigError(f"analyze: region must be a polytrav Region, got {type(region).__name__}")
    region = region.with_dims(net.n_inputs)
    pm = get_plugin_manager()
    items = _as_analyses(analyses, pm)
    seen: dict[str, int] = {}
    for a in items:
        a.validate(net, region)
        seen[a.name] = seen.get(a.name, 0) + 1
        a.label = a.name if seen[a.name] == 1 else f"{a.name}#{seen[a.name]}"
    chains = _chains(solver, pm)
    in_parts = executor is not None or checkpoint is not None
    if in_parts and within is not None:
        raise ConfigError("analyze: 'within' and a run in parts (executor/checkpoint) do not mix")
    if start is None:  # an analysis's start point: now for a run in parts (every part starts
        def start():   # from it), else when the search needs one
            return next((p for p in (a.start_point() for a in items) if p is not None), None)
        if in_parts:
            start = start()
    if time_limit is not None:  # the budget counts from the call: set-up included
        time_limit = max(time_limit - (time.perf_counter() - t0), 1e-6)
    if in_parts:
        from polytrav.parallel import run_in_parts

        return run_in_parts(net, region, items, start=start, solver=solver, chains=chains, pm=pm,
                            strategy=strategy, max_polytopes=max_polytopes,
                            time_limit=time_limit, executor=executor, checkpoint=checkpoint,
                            resume=resume, checkpoint_every=checkpoint_every, parts=parts,
                            progress=progress, order=order)
    context_ref: list = []
    prunable = within is None and all(a.prunable for a in items)
    guide = _Guide(items, context_ref) if prunable else None
    prune = None
    if all(a.prunes_by_bound for a in items):
        def prune(piece):
            return min(a.piece_margin(piece, context_ref[0]) for a in items)
    lp_chain = chains["lp"]
    if not lp_chain:
        raise ConfigError("analyze: no LP backend is installed (pip install highspy)")
    trav = traverse(net, region, start, strategy=strategy, solver=lp_chain[0],
                    max_polytopes=max_polytopes, time_limit=time_limit,
                    fallback=lp_chain[1:], guide=guide,
                    vertices=any(a.uses_vertices for a in items), within=within,
                    prune=prune, order=order)
    context = RunContext(net, region, trav, chains, pm)
    context_ref.append(context)
    for a in items:
        pm.register(a, name=f"analysis:{a.label}")
    pm.hook.polytrav_begin_run(context=context)
    try:
        for polytope in trav:
            pm.hook.polytrav_visit_polytope(polytope=polytope, context=context)
            if progress is not None:
                progress(trav)
            if all(a.decided for a in items):
                break
    except KeyboardInterrupt:
        pass  # a clean partial report: the traversal is marked stopped
    finally:
        trav.close()
    results = {r.analysis: r for r in pm.hook.polytrav_end_run(context=context)
               if isinstance(r, AnalysisResult)}
    stats = trav.stats.to_dict()
    stats["proven_pieces"] = list(trav.proven_pieces)
    stats.update(subproblem_solves=context.n_solves, subproblem_time=context.solve_time,
                 subproblem_fallbacks=context.n_fallbacks,
                 subproblem_in_traversal_model=context.n_in_model,
                 subproblem_box_lp=context.n_box_lp)
    return Report(
        results=[results[a.label] for a in items],
        status=trav.status,
        stats=stats,
        time=time.perf_counter() - t0,
        solver={form: [b.name for b in chain] for form, chain in chains.items()},
    )

