"""Counterfactuals: the closest input whose predicted class differs (paper §5.2, eqs. 16-19).

For ``x0`` of class ``q0``, the problem is ``min ||x - x0||_p`` over the region such that
the class changes. Per polytope, where the logits are ``W x + c``, reaching class ``q`` is a
set of halfspaces (``(w_q - w_i)·x + c_q - c_i >= 0`` for every ``i != q``; for one output,
a binary classifier: class 1 where the logit is ``> 0``, class 0 where ``< 0``), so the
subproblem on polytope ∩ region is an LP (``p = 1, inf``) or a QP (``p = 2``; an L2-ball
region makes it an SOCP). A class is where its score is strictly the largest (a tie is no
class: docs/concepts.md, "Decisions"); the subproblem's constraints are its closure, so the
optimum is the *infimum* distance, attained on the class boundary, on a cell where the class
wins somewhere (:meth:`~.search.Search.reaches`); the returned witness steps just past the
boundary until a forward pass confirms the new class (its distance is ``returned_distance``). Immutable
features are equality constraints ``x_j = x0_j``.

Search (``search=``): ``"shrink"`` is the paper's: it solves on every polytope it visits, and
once a counterfactual at distance ``d*`` is known, the traversal region shrinks to the L∞ box
of radius ``d*`` around ``x0`` (it contains the ``p``-ball), and neighbours beyond hyperplanes
whose far side misses the ``p``-ball are skipped without an LP (``Restrict``'s ``ball``);
``"best-first"`` (default) also orders the level-1 pieces by a lower bound of their distance
to ``x0`` (the farthest of their halfspaces, in the dual norm), skips polytopes and targets
whose bound cannot beat ``d*``, and stops when no unvisited piece can; ``"full"`` visits
every polytope of the region (no shrinking, no order: it runs in parts) with the same
per-polytope skips.

Direct L∞ path: on a box region (in frame coordinates ``[-1, 1]^d``, coordinates scaled by
``sigma``), the L∞ subproblem is also solved without the ``2 d`` rows ``|x - x0| <= r`` that
the cvxpy statement compiles to (in 784 inputs they make each LP cost 4-9 ms). With
``x = x0 + e / s`` (Charnes-Cooper), ``|e| <= 1`` are column bounds, ``r = 1 / s`` is
minimised by maximising ``s``, and every row ``G u <= g`` becomes ``(G / sigma) e <= (g - G u0)
s``. With ``R`` the current best distance (or, before one, the farthest side of the box),
``s >= 1 / R``; a side at distance ``a`` from ``x0`` then needs a row ``|e_j| <= a s`` only
if it is nearer than the farthest side (the others hold already). An undecided direct LP falls back to the compiled
subproblem; the tests check that both give the same optima.

The MILP (``milp_after``): on wide networks the polytopes near ``x0`` are too many to visit
(a 30-32-32 MLP: thousands in the start's level-1 piece alone). A best-first search of an
L1 or L∞ counterfactual on a box region that has handled ``milp_after`` polytopes and
level-1 pieces without finishing (or :data:`~.milp.MILP_EARLY` of them, where the MILP would be
small) hands the rest to a MILP, run at the next polytope visited, where a backend serves the
``milp`` form:
:meth:`polytrav.bounds.milp.RegionMilp.closest` over the box of the best distance so far
(CROWN's bounds there, one binary per neuron they leave unstable), one conjunction per
target class. Its bound is the proof (``exact``) when it reaches the best distance, which
the MILP's point may have lowered; the traversal then stops. Otherwise the traversal goes
on with what is left of the time. ``details["milp"]`` says what the MILP did.

Discrete features (``integer``, ``one_hot``; L1 or L∞ on a box): every cell's subproblem is
a MILP over the frame point, a step count per grid input and a 0/1 column per one-hot input
(:func:`~.discrete.discrete_rows`), the distance capped at the best so far; the
continuous problem's lower bounds (pieces, cells, targets) and the ball restriction stay
sound, the region's MILP gets the same integer columns
(:class:`~polytrav.model.integrality.Integrality`), and the witness keeps its discrete
inputs valid (:meth:`~.witness.WitnessFinder.discrete`). The class must be reached by
:data:`~polytrav.vocabulary.tolerances.DISCRETE_MARGIN` in the outputs: on a grid the
minimum is attained, and every point a MILP returns within its feasibility tolerance must be
one a forward pass confirms. Each cell first gets its continuous optimum (the usual paths): a
lower bound that skips the cell's MILP when it cannot beat the best, and, snapped to the
valid points and confirmed, an early incumbent.

The parts: :mod:`.problem` (what ``validate`` fixes), :mod:`.search` (the per-polytope
folding, with :mod:`.bound`, :mod:`.direct` and :mod:`.subproblem`), :mod:`.discrete`,
:mod:`.milp`, :mod:`.witness`, and the running answer, :mod:`.state`.
"""
from __future__ import annotations

import functools

import numpy as np

from polytrav.extend import Analysis, Ball, Box, Restrict, Stop, hookimpl
from polytrav.plugins.counterfactual.bound import halfspace_distance
from polytrav.plugins.counterfactual.milp import MILP_AFTER, MilpStep
from polytrav.plugins.counterfactual.problem import NORMS, check_problem
from polytrav.plugins.counterfactual.search import Search
from polytrav.plugins.counterfactual.state import Best
from polytrav.plugins.counterfactual.witness import WitnessFinder
from polytrav.extend import AnalysisResult, ConfigError, RegionError

__all__ = ["Counterfactual", "halfspace_distance"]


@functools.lru_cache(maxsize=8)
def _witness_columns(features: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``x.<feature>`` and ``change.<feature>`` per feature (made once per dataset)."""
    return tuple(f"x.{name}" for name in features), tuple(f"change.{name}" for name in features)


class Counterfactual(Analysis):
    """The closest point of the region (in ``norm``) whose predicted class is not ``x0``'s.

    Parameters
    ----------
    x0 : array_like, shape (n_inputs,)
        The original input; must lie in the region.
    norm : {1, 2, inf}
    target : int, optional
        Required class (default: any class other than ``x0``'s).
    threshold : float, optional
        For a network of one output: the scores are ``output - threshold``. A regressor
        (link ``"identity"``) needs it: its classes are the prediction below and above
        ``threshold``, and the answer is the nearest input on the other side; for a binary
        logit it is a decision threshold other than 0.
    immutable : sequence of int
        Features held at ``x0``'s values.
    search : {"best-first", "shrink", "full"}
    milp_after : int or None
        Polytopes and level-1 pieces of best-first search before a MILP settles the rest
        (L1, L∞ on a box region; package docstring), or fewer (:data:`~.milp.MILP_EARLY`)
        where the MILP is small; None: never.
    integer : sequence of int, or dict
        Features that move in whole steps from ``x0`` (``{feature: step}``; a sequence means
        step 1): the answer is the nearest point on that grid.
    scale : array_like or FeatureScale, optional
        Each input's unit of change: the distance is ``||(x - x0) / scale||_p`` (positive,
        one per input or one number; :meth:`for_row` computes ``"mad"``, ``"std"`` or
        ``"range"`` from the data). None: the inputs' raw units.
    one_hot : sequence of sequences of int
        Groups of features that encode one category (``x0``'s values one-hot): the answer
        keeps each a valid encoding. ``None`` in a group stands for a baseline column that
        was dropped (``OneHotEncoder(drop="first")``): the group may then be all 0. With ``integer`` or ``one_hot`` (L1 or L∞, a box
        region) every cell's subproblem is a MILP, and the answer is exact over the valid
        points (package docstring, "Discrete features").

    ``value`` is the infimum distance to the inputs of another class, where that class's
    score is strictly the largest (a tie is no class; ``None`` if no such input exists);
    ``witness`` a point past the boundary whose class a forward pass confirms; ``details``
    hold the boundary point, the class reached and ``returned_distance``.
    """

    name = "counterfactual"
    #: Solve L∞ subproblems on box regions by the direct LP (package docstring); False: always
    #: the compiled cvxpy subproblem (the tests compare the two).
    direct_linf = True
    #: Take a class row's nearest point as the cell's minimiser when it lies in the cell
    #: (:meth:`~.search.Search.projection`); False: always an LP/QP (the tests compare the two).
    closed_form = True

    def __init__(self, x0, norm=2, target: int | None = None, immutable=(),
                 search: str = "best-first", milp_after: int | None = MILP_AFTER,
                 integer=(), one_hot=(), scale=None, threshold: float | None = None):
        self.x0 = x0
        self.decision_threshold = threshold  # (``threshold()`` is the pruning hook)
        self.scale = scale
        self.norm = norm
        self.target = target
        self.immutable = immutable
        self.search = search
        self.milp_after = milp_after
        self.integer = integer
        self.one_hot = one_hot

    @property
    def prunable(self) -> bool:
        return self.search != "full"

    @property
    def problem_form(self) -> str:
        return "qp" if NORMS.get(self.norm) == 2 else "lp"

    def start_point(self):
        return self._problem.x0

    # ---------------------------------------------------------------- per row
    @classmethod
    def for_row(cls, row, *, norm=2, target=None, immutable=(), bounds=None, direction=None,
                search: str = "best-first", milp_after: int | None = MILP_AFTER,
                integer=(), one_hot=(), scale="mad", zero_scale="std", threshold=None):
        """The counterfactual of ``row.x`` inside the domain and the actionability constraints.

        ``scale``: each feature's unit of change, ``"mad"`` (default), ``"std"`` or
        ``"range"`` of the dataset (``row.data``), an array, or None for raw units;
        ``zero_scale``: what replaces a zero scale (``"std"``, ``"range"``, ``"immutable"``,
        ``"error"`` or a number; :class:`~polytrav.extend.DataSummary`).

        ``immutable``: features held at the row's values; ``bounds``: ``{feature: (lo, hi)}``
        (``None`` leaves a side to the domain); ``direction``: ``{feature: "increase" |
        "decrease"}`` (the feature may only move that way). Features are names or indices.
        All of them shrink the search box (``domain ∩ bounds ∩ directions``, immutable
        features fixed), a convex region, so the optimum is still exact. ``integer``
        (features, step 1, or ``{feature: step}``) and ``one_hot`` (lists of features) are
        the discrete features: the answer is exact over their valid values.
        """
        who = f"analysis {cls.name!r}"
        if isinstance(scale, str):
            if row.data is None:
                raise ConfigError(f"{who}: scale {scale!r} is computed from the dataset, which "
                                  "this row does not carry; give an array or scale=None")
            scale = row.data.scale(scale, zero_scale, row.features)
            if scale.held:
                immutable = sorted(set(row.indices(immutable, who + " immutable").tolist()
                                       if len(immutable) else []) | set(scale.held))
        if not (bounds or direction or len(immutable) or len(integer) or len(one_hot)):
            return cls(row.x, norm=norm, target=target, search=search,
                       milp_after=milp_after, scale=scale, threshold=threshold), row.domain
        lo, hi = row.domain.lower.copy(), row.domain.upper.copy()
        for j, (b_lo, b_hi) in row.per_feature(bounds or {}, who + " bounds").items():
            lo[j] = lo[j] if b_lo is None else max(lo[j], float(b_lo))
            hi[j] = hi[j] if b_hi is None else min(hi[j], float(b_hi))
        for j, way in row.per_feature(direction or {}, who + " direction").items():
            if way not in ("increase", "decrease"):
                raise ConfigError(f"{who}: direction must be 'increase' or 'decrease', got "
                                  f"{way!r} for feature {row.features[j]!r}")
            if way == "increase":
                lo[j] = max(lo[j], row.x[j])
            else:
                hi[j] = min(hi[j], row.x[j])
        held = row.indices(immutable, who + " immutable") if len(immutable) else np.zeros(0, int)
        lo[held] = hi[held] = row.x[held]
        bad = np.flatnonzero(lo > hi)
        if bad.size:
            j = int(bad[0])
            raise RegionError(f"{who}: feature {row.features[j]!r} has no allowed value "
                              f"(lower {lo[j]} > upper {hi[j]}); check bounds and direction")
        if isinstance(integer, dict):
            steps = row.per_feature(integer, who + " integer")
        else:
            steps = {int(j): 1.0 for j in (row.indices(integer, who + " integer")
                                           if len(integer) else ())}
        groups = [row.indices([j for j in g if j is not None], who + " one_hot").tolist()
                  + [None] * (None in list(g)) for g in one_hot]
        return cls(row.x, norm=norm, target=target, immutable=held.tolist(),
                   search=search, milp_after=milp_after, integer=steps,
                   one_hot=groups, scale=scale, threshold=threshold), Box(lo, hi)

    def figures(self, result, row) -> dict:
        """``distance`` (the infimum, in ``metric``), ``returned_distance`` (the
        witness's), ``metric`` (e.g. ``"L1 scaled by MAD"``), ``class0`` and ``class`` (the
        row's class and the one reached, by the network's labels where it has them),
        ``probability`` (the model's probability of the reached class at the witness, where
        the network gives probabilities), ``exact``, ``proof`` (``"traversal"``,
        ``"milp"``, ``"branch-and-bound"`` (L2) or None where the answer is not exact),
        ``found``, the witness as ``x.<feature>`` and its change from the row in the
        features' own units, ``change.<feature>``."""
        d = result.details
        milp = d.get("milp")
        proof = None if not result.exact else (
            ("branch-and-bound" if milp.get("method") == "branch and bound" else "milp")
            if isinstance(milp, dict) and milp["proved"] else "traversal")
        out = {"distance": result.value, "returned_distance": d.get("returned_distance"),
               "metric": d.get("metric"),
               "class0": d.get("label0", d.get("class0")), "class": d.get("label", d.get("class")),
               "probability": d.get("probability"), "exact": result.exact,
               "proof": proof, "found": result.witness is not None}
        w = result.witness
        n = len(row.features)
        witness, change = _witness_columns(row.features)
        out.update(zip(witness, [None] * n if w is None else w.tolist()))
        out.update(zip(change, [None] * n if w is None else (w - row.x).tolist()))
        return out

    # ---------------------------------------------------------------- the run
    def validate(self, network, region) -> None:
        self._problem = check_problem(self, network, region)

    def begin(self, context) -> None:
        if self._problem.integrality is not None and not context.backends("milp", required=False):
            raise ConfigError(f"analysis {self.name!r}: integer features and one-hot groups need "
                              "a backend of the 'milp' form (HiGHS: pip install highspy)")
        self._search = Search(self, self._problem, context, search=self.search,
                              closed_form=self.closed_form, direct_linf=self.direct_linf)
        self._best = Best()
        self._milp = MilpStep(self, self._problem)
        self._milp.plan(context, self.milp_after, self.search)

    def piece_bound(self, bits, context) -> float:
        """A lower bound of the distance over a level-1 piece (:class:`~.bound.DistanceBounds`),
        inf once the MILP proved the best; no side effect (the run counts the pieces it asked
        about, ``context.n_pieces_bounded``, toward the MILP's ``milp_after``)."""
        if self._milp.proved:
            return np.inf  # the MILP proved the best distance: no piece can beat it
        return self._search.bounds.piece(bits)

    def threshold(self) -> float:
        return self._best.distance

    def visit(self, polytope, context):
        best = self._best
        before = best.distance
        self._milp.run_if_due(context, self._search, best)
        if self._milp.proved:
            return Stop("the MILP proved the best distance")
        # improved here, or by the MILP's point
        improved = self._search.fold(polytope, context, best) or best.distance < before
        if improved and self.search != "full" and np.isfinite(best.distance):
            problem = self._problem
            r, x0, unit = best.distance, problem.x0, problem.unit
            ball = Ball(x0, r, problem.p, scale=unit if problem.scaled else None)
            return Restrict(Box(x0 - r * unit, x0 + r * unit), ball=ball)
        return None

    def exact(self, context) -> bool:
        """A complete traversal without failed solves, or the MILP's proof."""
        return self._milp.proved or super().exact(context)

    def finish(self, context) -> AnalysisResult:
        problem, search, best = self._problem, self._search, self._best
        dist, x, q = best.distance, best.point, best.target
        witness = None if x is None else WitnessFinder(problem, search.subproblems).realise(
            context, q, x, best.cell)
        net = context.network
        details = {"norm": problem.p, "metric": problem.metric(),
                   "label0": problem.label(net, problem.class0),
                   "label": None if q is None else problem.label(net, q),
                   "threshold": problem.threshold,
                   "probability0": net.class_probability(problem.x0, problem.class0),
                   "scale": None if problem.scale is None else problem.unit,
                   "x0": problem.x0, "class0": problem.class0, "class": q,
                   "boundary_point": x,
                   "search": self.search, "skipped_by_bound": search.skipped,
                   "closed_form": search.n_projections, "ties": search.ties}
        if self._milp.details is not None:
            details["milp"] = self._milp.details
        if witness is not None:
            details["returned_distance"] = problem.distance(witness)
            details["probability"] = net.class_probability(witness, q)
        elif x is not None:
            details["note"] = "no point past the boundary was confirmed by a forward pass"
        elif self.exact(context):
            details["note"] = "no input of another class exists in the region (proven)" + (
                "; on part of it the scores tie, where the model decides no class"
                if search.ties else "")
        else:
            details["note"] = ("no input of another class was found before the run ended "
                               "(partial: one may exist)")
        return AnalysisResult(
            analysis=self.label, verdict=None,
            value=dist if np.isfinite(dist) else None, witness=witness,
            exact=self.exact(context), n_polytopes=self.n_polytopes,
            n_solves=self.n_solves + search.part_solves + self._milp.solves,
            failures=tuple(self.failures), details=details,
        )

    def describe(self, result) -> list[str]:
        from polytrav.extend import fmt

        d = result.details
        norm = d.get("metric") or {1: "L1", 2: "L2"}.get(d["norm"], "Linf")
        if result.value is None:
            return [d.get("note", "no input of another class was found")]
        c0, c = d.get("label0", d["class0"]), d.get("label", d["class"])
        p0 = d.get("probability0")
        lines = [f"{norm} distance {fmt(result.value)} from x0 (class {c0!r}"
                 + ("" if p0 is None else f", probability {p0:.3f}")
                 + f") to the nearest input of class {c!r}"]
        if "returned_distance" in d:
            p = d.get("probability")
            lines.append(f"the witness is a point just past the boundary, at distance "
                         f"{fmt(d['returned_distance'])}, whose class is confirmed"
                         + ("" if p is None else f" (probability of {c!r} there: {p:.3f})"))
        elif "note" in d:
            lines.append(d["note"])
        milp = d.get("milp")
        if isinstance(milp, dict) and milp["proved"] and "nodes" in milp:
            k, nodes = milp["binaries"], milp["nodes"]
            lines.append(f"proven minimal by branch and bound over {k} unstable "
                         f"neuron{'s' * (k != 1)} ({nodes} node{'s' * (nodes != 1)}, lower bound "
                         f"{fmt(milp['bound'])})")
        elif isinstance(milp, dict) and milp["proved"]:
            lines.append(f"proven minimal by a MILP ({milp['binaries']} binaries, lower bound "
                         f"{fmt(milp['bound'])})")
        return lines

    def combine(self, parts, context) -> AnalysisResult:
        best = min(parts, key=lambda p: np.inf if p.value is None else p.value, default=None)
        details = dict(best.details) if best is not None else {}
        for key in ("skipped_by_bound", "closed_form", "ties"):
            details[key] = sum(p.details.get(key, 0) for p in parts)
        return self.merged(parts, context, value=None if best is None else best.value,
                           witness=None if best is None else best.witness, details=details)


@hookimpl
def polytrav_add_analyses():
    """Register :class:`Counterfactual`."""
    return [Counterfactual]
