"""The :class:`Analysis` base class: what a property plugin implements.

A run of :func:`polytrav.analyze` calls its analyses directly (they are not pluggy plugins;
hooks are for other plugins): ``begin_run``, ``visit_polytope`` and ``end_run`` of this base
class call four small methods that subclasses override:

* ``validate(network, region)``: check parameters against the run; raise
  :class:`~polytrav.ConfigError` or :class:`~polytrav.RegionError` naming the problem.
* ``begin(context)``: build the per-polytope :class:`~polytrav.solve.subproblem.Subproblem` once
  (cvxpy with parameters, see :class:`CellProblem`) and reset the running answer.
* ``visit(polytope, context)``: solve the subproblem on one polytope, fold the answer in,
  and optionally return a :class:`Directive` (:class:`Restrict` or :class:`Stop`).
* ``finish(context)``: the :class:`~polytrav.AnalysisResult`.

Analyses that do not need every polytope (a counterfactual needs only those closer than the
best one so far) set ``prunable = True`` and implement ``piece_bound`` and ``threshold``:
the run may then skip level-1 pieces whose bound cannot beat the threshold, visiting pieces
in order of their bound (see :mod:`polytrav.host.runner`). ``__init__`` only stores parameters.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from polytrav.model.region import Ball, Box, Region
from polytrav.vocabulary.errors import ConfigError, PluginError
from polytrav.vocabulary.results import (DECIDED, AnalysisResult, Scope, SolveResult, Status,
                                         Verdict)
from polytrav.model.cell import cell_rows
from polytrav.vocabulary.tolerances import WITNESS_TOL

#: Most corners :func:`corner_ascent` visits (it usually repeats a corner after 2-4).
ASCENT_STEPS = 8

if TYPE_CHECKING:
    from polytrav.model.geometry import Frame
    from polytrav.model.network import Network
    from polytrav.model.polytope import Polytope
    from polytrav.host.row import Row
    from polytrav.host.runner import RunContext
    from polytrav.solve.subproblem import Subproblem
    from polytrav.vocabulary.settled import Settled

__all__ = ["Analysis", "Directive", "Stop", "Restrict", "CellProblem", "combined_verdict",
           "combine_worst", "cell_values", "linear_cell_subproblem", "cell_linear_program",
           "check_witness",
           "corner_ascent", "pieces_proven"]


# ---------------------------------------------------------------- directives


class Directive:
    """What an analysis may ask of the run after a polytope (see the subclasses)."""


@dataclass(frozen=True)
class Stop(Directive):
    """This analysis is decided; the run stops once every analysis is."""

    reason: str = ""


@dataclass(frozen=True)
class Restrict(Directive):
    """Only polytopes meeting ``box`` (and ``ball``, if given) still matter; both must contain
    the start point. The box shrinks the region; the ball lets the traversal skip, without an
    LP, every neighbour across a hyperplane whose far side misses the ball."""

    box: Box
    ball: Ball | None = None


# ---------------------------------------------------------------- the base class


class Analysis:
    """Base class of analysis plugins; subclasses set ``name`` and override the methods."""

    #: Registry key, the name users write in configs (``output_range``, ``counterfactual``).
    name: ClassVar[str] = ""
    #: Whether the run may skip polytopes this analysis does not need (see the module doc).
    prunable: bool = False
    #: Label of the result in the report; the run sets it (``name``, then ``name#2``, ...).
    label: str = ""
    #: Whether :meth:`visit` reads ``polytope.vertices`` (the run then asks the traversal for
    #: every polytope's vertices where it can compute them: low-dimensional polyhedral regions).
    uses_vertices: ClassVar[bool] = False

    # -------------------------------------------------------- subclass API
    def describe(self, result: AnalysisResult) -> list[str]:
        """Lines saying what ``result`` means beyond its verdict, value and witness (classes,
        margins, distances), shown by ``print(report)`` and the command line; default none."""
        return []

    @property
    def problem_form(self) -> str | None:
        """Form of the per-polytope subproblem (``"lp"``, ``"qp"``, ``"socp"``), if any."""
        return None

    def validate(self, network: "Network", region: Region) -> None:
        """Check the parameters against the run's network and region (default: nothing)."""

    def begin(self, context: "RunContext") -> None:
        """Build subproblems and reset the running answer (default: counters only)."""

    def visit(self, polytope: "Polytope", context: "RunContext") -> Directive | None:
        """Fold one polytope into the running answer."""
        raise NotImplementedError

    def finish(self, context: "RunContext") -> AnalysisResult:
        """The result over the region."""
        raise NotImplementedError

    def piece_bound(self, bits: np.ndarray, context: "RunContext") -> float:
        """Lower bound of the analysis's objective over a level-1 piece (first layer's code)."""
        return -np.inf

    def threshold(self) -> float:
        """Best objective so far; pieces whose bound is not below it are not needed."""
        return np.inf

    def piece_margin(self, piece, context: "RunContext") -> float:
        """A sound lower bound, over a whole piece, of the property's margin.

        ``piece`` is a :class:`polytrav.traversal.PieceView` (a cell of some level, or the
        whole region); a positive margin proves that none of the piece's polytopes can
        change this analysis's answer, so the traversal skips them (verification with
        bounds, :mod:`polytrav.bounds.crown`). Lower margins are explored first in best-first
        order. Only called when :attr:`prunes_by_bound` is True; the default proves nothing.
        """
        return -np.inf

    @property
    def prunes_by_bound(self) -> bool:
        """Whether :meth:`piece_margin` may prove pieces (then the run can skip them)."""
        return type(self).piece_margin is not Analysis.piece_margin

    def settle(self, context: "RunContext") -> "Settled | None":
        """Decide the region, or what of it is left to traverse, before the traversal.

        The run calls it once, after :meth:`validate` and before :meth:`begin`, when this
        is the run's only analysis, no plugin visits polytopes and the run is not a part of
        a run in parts (``analyze(..., settle=False)`` turns it off). ``context`` is the
        run's, before its traversal: ``network``, ``region``, ``frame``, ``backends()``,
        ``time_left()`` (the run's budget covers the stage). Return a
        :class:`~polytrav.vocabulary.settled.Settled`: PROVEN (the run visits no polytope;
        :meth:`finish` then sees a complete run), VIOLATED with a point checked as a witness
        is (record it: :meth:`finish` then reports it), or OPEN: the whole region from a
        start point, or boxes, each traversed as a run of its own and merged with
        :meth:`combine` together with the proven rest (which needs :meth:`combine`); PROBE
        (``Settled.probe``): boxes the run traverses first, after which it calls ``settle``
        again with their results in ``context.probed`` (None in the first round); or
        None: no stage, the run goes as without one. The tools are plain functions in
        :mod:`polytrav.bounds.settle`. The default settles nothing.
        """
        return None

    @property
    def settles(self) -> bool:
        """Whether the analysis implements :meth:`settle`."""
        return type(self).settle is not Analysis.settle

    def combine(self, parts: list[AnalysisResult], context: "RunContext") -> AnalysisResult:
        """The result over the region from the results over disjoint parts of it.

        Parallel and checkpointed runs (:mod:`polytrav.parallel`) split the region into
        level-1 pieces, run this analysis on groups of them in fresh copies, and combine the
        copies' :meth:`finish` results here; ``context.complete`` says whether every part ran
        to the end. Override it to make an analysis parallel; :meth:`merged` fills in the
        counts. The default refuses: such an analysis runs serially only.
        """
        raise NotImplementedError(f"analysis {self.name!r} ({type(self).__name__}) does not "
                                  "implement combine(), so it cannot run in parts")

    @property
    def combinable(self) -> bool:
        """Whether the analysis implements :meth:`combine` (can run in parallel parts)."""
        return type(self).combine is not Analysis.combine

    def merged(self, parts: list[AnalysisResult], context: "RunContext", **fields) -> AnalysisResult:
        """An :class:`AnalysisResult` with the parts' counts and failures summed up.

        ``exact`` defaults to "every part ran and no subproblem failed"; ``fields`` override.
        """
        failures = tuple(f for p in parts for f in p.failures)
        base = dict(analysis=self.label, verdict=None, value=None,
                    exact=context.complete and not failures,
                    n_polytopes=sum(p.n_polytopes for p in parts),
                    n_solves=sum(p.n_solves for p in parts), failures=failures)
        base.update(fields)
        return AnalysisResult(**base)

    def start_point(self) -> np.ndarray | None:
        """A point the traversal should start from (a counterfactual's ``x0``), if any."""
        return None

    # -------------------------------------------------------- per row (polytrav.explain)
    @classmethod
    def for_row(cls, row: "Row", **options) -> "tuple[Analysis, Region]":
        """The analysis of one dataset row and the region to run it on (:func:`polytrav.explain`).

        ``row`` is a :class:`~polytrav.host.row.Row` (values, domain, feature names);
        ``options`` are the user's for this analysis. Override it to take part in
        ``explain``; the default refuses, naming the analysis.
        """
        raise ConfigError(f"analysis {cls.name!r} ({cls.__name__}) cannot run per row: it does "
                          "not implement for_row(row, **options)")

    def figures(self, result: AnalysisResult, row: "Row") -> dict[str, Any]:
        """The result as flat columns ``{figure: number, text or None}`` (one table row).

        :func:`polytrav.explain` prefixes each name with the analysis's label
        (``counterfactual.distance``). Default: the value (``value``, or one column per key
        of a dict of numbers), the verdict if any, and ``exact``.
        """
        out: dict[str, Any] = {}
        if isinstance(result.value, dict):
            out.update({str(k): v for k, v in result.value.items() if np.ndim(v) == 0})
        elif result.value is None or np.ndim(result.value) == 0:
            out["value"] = result.value
        if result.verdict is not None:
            out["verdict"] = result.verdict.value
        out["exact"] = result.exact
        return out

    # -------------------------------------------------------- helpers for subclasses
    def solve(self, context: "RunContext", subproblem: "Subproblem", polytope: "Polytope",
              **values) -> SolveResult:
        """Solve ``subproblem`` with ``values`` on the run's backends (with fallbacks).

        An undecided result (neither optimal nor infeasible on any backend) is recorded in
        ``self.failures`` with the polytope's index and code, and makes the result inexact.
        """
        res = context.solve(subproblem, **values)
        self.n_solves += 1
        if res.status not in DECIDED:
            self.record_failure(context, polytope, res)
        return res

    def record_failure(self, context: "RunContext", polytope: "Polytope",
                       res: SolveResult) -> None:
        """Record an undecided solve on ``polytope`` (the result is then inexact)."""
        self.failures.append(f"polytope #{polytope.index} (code {context.code_str(polytope)}): "
                             f"{res.status} from {res.solver} ({res.message})")

    def maximize_linear(self, context: "RunContext", polytope: "Polytope",
                        g: np.ndarray, beat: float | None = None) -> SolveResult | None:
        """``max g·u`` over polytope ∩ region, ``u`` in frame coordinates (``objective`` is ``g·u``).

        ``beat``: the caller needs the maximum only if it exceeds ``beat``. Then ``None`` is
        returned, with no LP, when a Lagrangian bound proves ``max g·u <= beat``
        (:class:`polytrav.bounds.lagrange.CellBound`: the box bound, then multipliers learnt from
        the run's solved LPs). Otherwise the LP is solved in the traversal's own warm model
        when it can be (:meth:`~polytrav.traversal.Traversal.maximize_in_cell`), else as :meth:`solve`
        does, with :func:`linear_cell_subproblem`; the optimum is the same.
        """
        bound, rows = context.cell_bound, None
        if beat is not None:
            if bound.box_below(g, beat):  # before any rows are built
                return None
            rows = bound.rows(polytope, context.frame)
            t0 = time.perf_counter()
            proven, u = bound.decide(*rows, g, beat)
            if proven:
                return None
            if u is not None and context.frame.contains_u(u):
                # the maximiser over the cell's rows and the box lies in the region: optimal
                self.n_solves += 1
                context.n_solves += 1
                context.n_box_lp += 1
                elapsed = time.perf_counter() - t0
                context.solve_time += elapsed
                return SolveResult(Status.OPTIMAL, objective=float(g @ u), x=u, solver="box_lp",
                                   solve_time=elapsed)
        res = context.maximize_in_cell(polytope, g)
        if res is not None:
            self.n_solves += 1
        else:
            values = cell_values(polytope, context.frame)
            lp = cell_linear_program(context.frame, values, g=g)
            if lp is not None:
                res = self.solve(context, lp, polytope)
            else:
                sub = linear_cell_subproblem(context.frame, context.network.n_neurons)
                res = self.solve(context, sub, polytope, g=g, **values)
        if rows is not None and res.status is Status.OPTIMAL:
            bound.learn(*rows, g, res.x)
        return res

    def exact(self, context: "RunContext") -> bool:
        """Whether the run's answer is proven: a complete traversal and no failed solve.

        An analysis whose value needs polytopes the run may skip (pieces proven by bounds
        for a verdict, a stop at the first violation) reports its value exact only when none
        was skipped (:func:`pieces_proven`)."""
        return context.complete and not self.failures

    # -------------------------------------------------------- called by the run
    def begin_run(self, context: "RunContext") -> None:
        """Reset counters, then :meth:`begin` (the run calls it once, first)."""
        self.n_polytopes = 0
        self.n_solves = 0
        self.failures: list[str] = []
        self.decided = False
        self.begin(context)

    def visit_polytope(self, polytope: "Polytope", context: "RunContext") -> Directive | None:
        """Count the polytope and :meth:`visit` it; the directive goes to the run."""
        self.n_polytopes += 1
        directive = self.visit(polytope, context)
        if isinstance(directive, Stop):
            self.decided = True
        return directive

    def end_run(self, context: "RunContext") -> AnalysisResult:
        """:meth:`finish` (the run calls it once, after the traversal)."""
        return self.finish(context)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        hooks = sorted(n for n in vars(cls) if n.startswith("polytrav_"))
        if hooks:
            raise PluginError(f"analysis class {cls.__name__} defines {hooks}: the run calls "
                              "an Analysis directly, not through hooks; override begin, visit, "
                              "piece_margin and finish instead", plugin=cls.__name__)

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items()
                           if not k.startswith("_") and k not in RUN_STATE)
        return f"{type(self).__name__}({params})"


#: Attributes an analysis holds about the run in progress, not its parameters (a run in parts
#: copies an analysis without them).
RUN_STATE = ("label", "n_polytopes", "n_solves", "failures", "decided")


def combined_verdict(parts: list[AnalysisResult], exact: bool) -> Verdict:
    """The verdict over the union of disjoint parts: a confirmed violation anywhere wins,
    then an unconfirmed one; else HOLDS when the whole run was exact, UNKNOWN otherwise."""
    verdicts = {p.verdict for p in parts}
    for v in (Verdict.VIOLATED, Verdict.VIOLATED_UNCONFIRMED):
        if v in verdicts:
            return v
    return Verdict.HOLDS if exact else Verdict.UNKNOWN


def pieces_proven(context: "RunContext") -> int:
    """Pieces the run skipped whole because bounds proved them (their polytopes unvisited),
    the boxes its settle stage proved included (``context.settled``)."""
    settled = getattr(context, "settled", None)
    return int(sum(context.stats.proven or ())) + (0 if settled is None
                                                   else settled.proven_boxes)


def combine_worst(analysis: "Analysis", parts: list[AnalysisResult], context: "RunContext",
                  stop_at_violation: bool, sums: tuple[str, ...] = ("skipped_by_bound",)
                  ) -> AnalysisResult:
    """:meth:`Analysis.combine` of a property whose ``value`` is a worst case to maximise.

    The largest value wins (its witness and details come along); with
    ``stop_at_violation`` (verification modes) the first confirmed violation wins instead.
    ``sums`` name integer details that add up across parts. The value is exact when every
    part's was and the run is complete; the verdict is HOLDS when the run is complete and no
    subproblem failed (each part proved its pieces).
    """
    failures = [f for p in parts for f in p.failures]
    proven = context.complete and not failures
    exact = proven and all(p.exact for p in parts)
    verdict = combined_verdict(parts, proven)
    if stop_at_violation and verdict is Verdict.VIOLATED:
        best = next(p for p in parts if p.verdict is Verdict.VIOLATED)
    else:
        best = max(parts, key=lambda p: -np.inf if p.value is None else p.value, default=None)
    details = dict(best.details) if best is not None else {}
    details.update({k: sum(p.details.get(k, 0) for p in parts) for k in sums})
    scope = (Scope.REGION if exact else
             Scope.WITNESS if stop_at_violation and verdict is Verdict.VIOLATED else Scope.VISITED)
    return analysis.merged(
        parts, context, verdict=verdict, value=None if best is None else best.value,
        witness=None if best is None else best.witness, exact=exact, scope=scope, details=details)


# ---------------------------------------------------------------- the cell in cvxpy


def cell_values(polytope: "Polytope", frame: "Frame") -> dict[str, np.ndarray]:
    """Parameter values ``{"A": ..., "b": ...}`` of :class:`CellProblem` for ``polytope``."""
    A, b = cell_rows(polytope, frame)
    return {"A": A, "b": b}


def linear_cell_subproblem(frame: "Frame", n_rows: int) -> "Subproblem":
    """``maximise g·u`` over polytope ∩ region (parameters ``g``, ``A``, ``b``; variable ``u``).

    Compiled once per process for each set of constraints in ``u`` and row count (boxes of
    one dimension share it; :func:`polytrav.solve.subproblem.compiled`).
    """
    from polytrav.solve.subproblem import Subproblem, compiled

    def build():
        import cvxpy as cp

        cell = CellProblem(frame, n_rows)
        g = cp.Parameter(frame.dim, name="g")
        return Subproblem(cp.Problem(cp.Maximize(g @ cell.u), cell.constraints), {"u": cell.u})

    return compiled(("max_linear", frame.cell_fingerprint, n_rows), build)


def cell_linear_program(frame: "Frame", values: dict[str, np.ndarray], g=None, M=None, r=None):
    """An LP over polytope ∩ region with no cvxpy (:class:`~polytrav.solve.linear_program.LinearProgram`),
    or None where the region has norm balls (then :class:`CellProblem` states it).

    ``values``: the cell's rows (:func:`cell_values`). With ``g``: ``maximise g·u`` (variable
    ``u``). With ``M`` and ``r``: ``maximise t`` s.t. ``M u + t <= r``, ``t <= 1`` (variables
    ``u``, ``t``): how deep the cell reaches into ``{M u <= r}``, capped at 1.
    """
    from polytrav.solve.linear_program import LinearProgram

    if frame.l1_balls or frame.l2_balls:
        return None
    d = frame.dim
    A, b = values["A"], values["b"]
    A_ub, b_ub = [A, np.asarray(frame.A_extra, float)], [b, np.asarray(frame.b_extra, float)]
    if g is not None:
        return LinearProgram(g, np.vstack(A_ub), np.concatenate(b_ub), -np.ones(d), np.ones(d),
                             {"u": d}, maximize=True)
    zero = np.zeros((sum(a.shape[0] for a in A_ub), 1))
    rows = np.vstack([np.hstack([np.vstack(A_ub), zero]),
                      np.hstack([M, np.ones((M.shape[0], 1))])])
    c = np.zeros(d + 1)
    c[d] = 1.0
    return LinearProgram(c, rows, np.concatenate(b_ub + [r]), np.append(-np.ones(d), -np.inf),
                         np.ones(d + 1), {"u": d, "t": 1}, maximize=True)


class CellProblem:
    """cvxpy variable and constraints of "polytope ∩ region" in frame coordinates.

    ``u`` is the frame variable (region ⊂ ``[-1, 1]^d``), ``x`` the input point as an affine
    expression of ``u``, ``A`` and ``b`` the parameters of the polytope's neuron rows
    (fill them with :func:`cell_rows`), ``constraints`` the cell's constraints: neuron rows,
    the box, the region's other rows and its L1/L2 balls (an L2 ball makes it ``socp``).
    """

    def __init__(self, frame: "Frame", n_rows: int):
        import cvxpy as cp

        d = frame.dim
        self.frame = frame
        self.u = cp.Variable(d, name="u")
        n_rows = max(n_rows, 1)  # see cell_rows
        self.A = cp.Parameter((n_rows, d), name="A")
        self.b = cp.Parameter(n_rows, name="b")
        self.x = frame.origin + frame.U_sparse() @ self.u
        self.constraints = [self.A @ self.u <= self.b, self.u >= -1.0, self.u <= 1.0]
        if frame.A_extra.shape[0]:
            self.constraints.append(frame.A_extra @ self.u <= frame.b_extra)
        for ball in frame.l1_balls:
            self.constraints.append(cp.norm1(ball.U @ self.u + ball.w) <= ball.radius)
        for ball in frame.l2_balls:
            self.constraints.append(cp.norm2(self.u - ball.center) <= ball.radius)

    @property
    def conic(self) -> bool:
        """Whether the region has an L2 ball (the cell is then a second-order cone set)."""
        return bool(self.frame.l2_balls)

    def values(self, polytope: "Polytope") -> dict[str, np.ndarray]:
        """Parameter values ``{"A": ..., "b": ...}`` for ``polytope`` (see :func:`cell_values`)."""
        return cell_values(polytope, self.frame)


# ---------------------------------------------------------------- witnesses


def corner_ascent(network: "Network", frame: "Frame", g: np.ndarray, u: np.ndarray,
                  steps: int = ASCENT_STEPS) -> tuple[float, np.ndarray]:
    """The largest ``g · f(x)`` seen by sign ascent from frame point ``u``, and its ``x``.

    Evaluate the network at ``u``, take the gradient of ``g · f`` there (the local model's, by
    backpropagation through the active neurons), jump to the corner ``sign(gradient)`` of
    ``[-1, 1]^d``, and repeat until a corner repeats; the best of the start point and the
    corners is returned. Every point is in the region when the frame is a box
    (``frame.is_box``), so the values are attained: a maximising analysis may start from the
    best one, and the bounds then skip more LPs.
    """
    best, x_best = -np.inf, None
    for _ in range(steps):
        x = frame.to_x(u)
        hs, y = network.trace(x)
        value = float(g @ y)
        if value > best:
            best, x_best = value, x
        corner = np.sign(frame.pull(network.input_gradient(g, hs)))
        if np.array_equal(corner, u):
            break
        u = corner
    return best, x_best


def check_witness(network: "Network", region: Region, x, predicate: Callable[[np.ndarray], Any],
                  tol: float = WITNESS_TOL) -> bool:
    """Whether ``x`` is a real witness: inside ``region`` (within ``tol``) and ``predicate``.

    ``predicate`` receives the output of a plain forward pass (float64 numpy) and returns a
    truth value; it should state the property with ``tol`` itself where it compares numbers.
    """
    x = np.asarray(x, float).reshape(-1)
    if x.shape[0] != network.n_inputs or not np.isfinite(x).all():
        return False
    if not region.with_dims(network.n_inputs).contains(x, tol=tol):
        return False
    return bool(predicate(network.forward(x)))
