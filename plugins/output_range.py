"""Output range: the local adversarial attack of paper §5.1 (eq. 12).

The property: the minimum and maximum of ``g · f(x)`` over the region, where ``f`` is the
network and ``g`` picks one output (``output=k``) or weighs them (``weights=g``); for a
binary classifier the output is the logit, whose extremes are the probability's (the sigmoid
is monotone). Per polytope the network is ``W x + c``, so the subproblem on polytope ∩ region
is the LP ``maximise (g W) · x`` (and the same with ``-g`` for the minimum); an L2-ball
region makes it an SOCP. The extremes over all polytopes are the exact range.

When the traversal computed the polytope's vertices (low-dimensional polyhedral regions),
the extremes are read off them with no LP. Otherwise a polytope is skipped without an LP when
a bound of ``g·f`` over it (the region's bounding box, then Lagrangian multipliers learnt from
the run's LPs, :mod:`polytrav.bounds.lagrange`) cannot beat the best value so far. The interior
point's value seeds both extremes and, on box regions, so does the best box corner that sign
ascent finds from the first polytope that needs LPs (:func:`~polytrav.host.analysis.corner_ascent`):
a real point's value is a valid incumbent, and a good one lets the bounds skip more LPs
(``mnist2x10`` at eps 0.01: 10 LPs instead of 13).
"""
from __future__ import annotations

import numpy as np

from polytrav.extend import Analysis, AnalysisResult, ConfigError, Status, corner_ascent, hookimpl

__all__ = ["OutputRange", "output_functional"]


def output_functional(network, output, weights, who: str) -> np.ndarray:
    """The vector ``g`` over outputs from ``output=k`` or ``weights=g`` (checked)."""
    m = network.n_outputs
    if weights is not None:
        if output is not None:
            raise ConfigError(f"analysis {who!r}: give output or weights, not both")
        g = np.asarray(weights, float).reshape(-1)
        if g.shape != (m,) or not np.isfinite(g).all():
            raise ConfigError(f"analysis {who!r}: weights must be {m} finite numbers (one per "
                              f"output), got shape {g.shape}")
        return g
    k = 0 if output is None else output
    if not isinstance(k, (int, np.integer)) or not 0 <= k < m:
        raise ConfigError(f"analysis {who!r}: output must be an integer in [0, {m}) for a "
                          f"network with {m} outputs, got {output!r}")
    g = np.zeros(m)
    g[k] = 1.0
    return g


class OutputRange(Analysis):
    """Minimum and maximum of one output (or ``weights @ outputs``) over the region.

    Parameters
    ----------
    output : int, optional
        Output index (default 0).
    weights : array_like, shape (n_outputs,), optional
        A linear function of the outputs instead of one output.

    The result's ``value`` is ``{"min": ..., "max": ...}``; ``details`` hold ``argmin`` and
    ``argmax`` (input points), and ``witness`` is the arg-max. The range is ``exact`` after a
    complete run with every LP decided; otherwise (a budget, Ctrl-C, a lost LP) it is the
    smallest and largest value found (``scope`` ``visited``), inside the true range.
    """

    name = "output_range"
    uses_vertices = True
    #: Seed the extremes by :func:`~polytrav.host.analysis.corner_ascent` on box regions (False:
    #: only from the polytopes; the tests compare the two).
    ascent = True

    def __init__(self, output: int | None = None, weights=None):
        self.output = output
        self.weights = weights

    @property
    def problem_form(self) -> str:
        return "lp"

    @classmethod
    def for_row(cls, row, *, radius, output=None, weights=None):
        """The range over ``Box(x - radius, x + radius) ∩ domain`` (``radius``: a number or
        one per input)."""
        return cls(output=output, weights=weights), row.box_around(radius, f"analysis {cls.name!r}")

    def figures(self, result, row) -> dict:
        """``min``, ``max`` and ``exact``."""
        return {"min": result.value["min"], "max": result.value["max"], "exact": result.exact}

    def validate(self, network, region) -> None:
        self._g = output_functional(network, self.output, self.weights, self.name)

    def begin(self, context) -> None:
        self._best = {"max": (-np.inf, None), "min": (np.inf, None)}
        self.skipped = 0
        self.from_vertices = 0
        self._seeded = False

    def visit(self, polytope, context):
        frame, x_in = context.frame, polytope.interior_point
        W, c = polytope.network.local_model(polytope.code, self._g[None])  # g·f = w·x + c0
        w, c0 = W[0], float(c[0])
        gu, g0 = frame.pull(w), float(w @ frame.origin) + c0
        y_in = float(w @ x_in) + c0
        if y_in > self._best["max"][0]:
            self._best["max"] = (y_in, x_in)
        if y_in < self._best["min"][0]:
            self._best["min"] = (y_in, x_in)
        V = polytope.vertices
        if V is not None:  # the extremes of a linear function are at vertices: no LP
            vals = V @ gu + g0
            for sense, k in (("max", int(np.argmax(vals))), ("min", int(np.argmin(vals)))):
                better = vals[k] > self._best[sense][0] if sense == "max" else vals[k] < self._best[sense][0]
                if better:
                    self._best[sense] = (float(vals[k]), context.frame.to_x(V[k]))
            self.from_vertices += 1
            return None
        if not self._seeded:
            self._seeded = True
            self._seed(context, polytope)
        for sense, sign in (("max", 1.0), ("min", -1.0)):
            best = self._best[sense][0]
            res = self.maximize_linear(context, polytope, sign * gu, beat=sign * (best - g0))
            if res is None:  # a bound proves this polytope cannot beat the best
                self.skipped += 1
            elif res.status is Status.OPTIMAL:
                y = g0 + sign * res.objective
                if sign * y > sign * best:
                    self._best[sense] = (y, context.frame.to_x(res.x))
            elif res.status is Status.INFEASIBLE:
                self.failures.append(f"polytope #{polytope.index}: cell LP infeasible "
                                     f"({res.solver}) although the traversal found it")
        return None

    def _seed(self, context, polytope) -> None:
        """Fold in the corners sign ascent reaches from ``polytope``'s interior point (box regions)."""
        fr = context.frame
        if not (self.ascent and fr.is_box):
            return
        u = fr.to_u(polytope.interior_point)
        for sense, sign in (("max", 1.0), ("min", -1.0)):
            value, x = corner_ascent(context.network, fr, sign * self._g, u)
            if value > sign * self._best[sense][0]:
                self._best[sense] = (sign * value, x)

    def finish(self, context) -> AnalysisResult:
        (ymax, xmax), (ymin, xmin) = self._best["max"], self._best["min"]
        return AnalysisResult(
            analysis=self.label, verdict=None,
            value={"min": ymin, "max": ymax},
            witness=xmax, exact=self.exact(context), n_polytopes=self.n_polytopes,
            n_solves=self.n_solves, failures=tuple(self.failures),
            details={"argmin": xmin, "argmax": xmax, "g": self._g,
                     "skipped_by_bound": self.skipped, "from_vertices": self.from_vertices},
        )

    def describe(self, result) -> list[str]:
        from polytrav.extend import vector

        lo, hi = result.details.get("argmin"), result.details.get("argmax")
        if lo is None or hi is None:
            return ["no polytope was visited: no value"]
        what = ("the minimum", "the maximum") if result.exact else ("the smallest found",
                                                                    "the largest found")
        return [f"at x = {vector(lo)} ({what[0]}) and {vector(hi)} ({what[1]})"]

    def combine(self, parts, context) -> AnalysisResult:
        inf = float("inf")
        hi = max(parts, key=lambda p: p.value["max"], default=None)
        lo = min(parts, key=lambda p: p.value["min"], default=None)
        return self.merged(
            parts, context, value={"min": inf if lo is None else lo.value["min"],
                                   "max": -inf if hi is None else hi.value["max"]},
            witness=None if hi is None else hi.witness,
            details={"argmin": None if lo is None else lo.details["argmin"],
                     "argmax": None if hi is None else hi.details["argmax"], "g": self._g,
                     **{k: sum(p.details[k] for p in parts)
                        for k in ("skipped_by_bound", "from_vertices")}})


@hookimpl
def polytrav_add_analyses():
    """Register :class:`OutputRange`."""
    return [OutputRange]
