"""Monotonicity of one output in one feature over the region (paper §5.3).

On each polytope the network is ``W x + c``, so the output's slope in feature ``j`` is the
constant ``W[output, j]``: no subproblem to solve. The network (continuous, piecewise
linear) is non-decreasing in ``j`` on a convex region iff every polytope's slope is ``>= 0``
(non-increasing iff all ``<= 0``). With ``direction=None`` the verdict is whether all slopes
agree in sign. Every violating polytope is reported with its slope, and a violation is
confirmed by a forward pass at two points of the polytope a step apart along ``j``.
"""
from __future__ import annotations

import numpy as np

from polytrav.host.analysis import Analysis, check_witness
from polytrav.vocabulary.errors import ConfigError
from polytrav.host.hookspecs import hookimpl
from polytrav.vocabulary.results import AnalysisResult, Verdict
from polytrav.vocabulary.tolerances import SAME_VALUE_TOL, SLOPE_TOL

__all__ = ["Monotonicity"]

DIRECTIONS = ("increasing", "decreasing", None)
#: Slopes within this (relative to the norm of the output's local gradient) count as zero.


class Monotonicity(Analysis):
    """Is ``output`` monotone in input ``feature`` on the region?

    Parameters
    ----------
    feature : int
        Input index.
    direction : {"increasing", "decreasing", None}
        Required direction (non-strict); ``None`` asks whether either holds.
    output : int
        Output index (default 0).

    ``value`` is ``{"min_slope", "max_slope"}``; ``details["violations"]`` lists each
    violating polytope (index, interior point, slope).
    """

    name = "monotonicity"

    def __init__(self, feature: int, direction: str | None = None, output: int = 0):
        self.feature = feature
        self.direction = direction
        self.output = output

    def validate(self, network, region) -> None:
        n, m = network.n_inputs, network.n_outputs
        if not isinstance(self.feature, (int, np.integer)) or not 0 <= self.feature < n:
            raise ConfigError(f"analysis {self.name!r}: feature must be an input index in [0, {n}), "
                              f"got {self.feature!r}")
        if not isinstance(self.output, (int, np.integer)) or not 0 <= self.output < m:
            raise ConfigError(f"analysis {self.name!r}: output must be in [0, {m}), got {self.output!r}")
        if self.direction not in DIRECTIONS:
            raise ConfigError(f"analysis {self.name!r}: direction must be one of {DIRECTIONS}, "
                              f"got {self.direction!r}")

    def begin(self, context) -> None:
        self._step_u = self._unit_step(context)
        self._neg, self._pos = [], []  # (index, interior point, slope, radius) by sign
        self._slopes = [np.inf, -np.inf]

    def _unit_step(self, context) -> np.ndarray | None:
        """A unit step in frame coordinates along the feature (None if the region fixes it)."""
        fr = context.frame
        e = np.zeros(context.network.n_inputs)
        e[self.feature] = 1.0
        if fr.free is not None:  # U selects coordinates: the feature's own, if it varies
            v = (e[fr.free] / fr.scale)
            return v / np.linalg.norm(v) if v.any() else None
        v, *_ = np.linalg.lstsq(fr.U, e, rcond=None)
        movable = np.allclose(fr.U @ v, e, atol=SAME_VALUE_TOL) and np.linalg.norm(v) > 0
        return v / np.linalg.norm(v) if movable else None

    def visit(self, polytope, context):
        row = polytope.W[self.output]
        slope = float(row[self.feature])
        self._slopes = [min(self._slopes[0], slope), max(self._slopes[1], slope)]
        tiny = SLOPE_TOL * float(np.linalg.norm(row))
        record = (polytope.index, polytope.interior_point, slope, polytope.radius)
        if slope < -tiny and self.direction != "decreasing":
            self._neg.append(record)
        elif slope > tiny and self.direction != "increasing":
            self._pos.append(record)
        return None

    def _confirm(self, context, x, slope, radius) -> tuple | None:
        """Two points of the polytope along the feature whose outputs differ with the slope."""
        if self._step_u is None:
            return None
        fr = context.frame
        u = fr.to_u(x)
        step = 0.5 * radius * self._step_u
        x1, x2 = fr.to_x(u - step), fr.to_x(u + step)
        dy = float(context.network.forward(x2)[self.output] - context.network.forward(x1)[self.output])
        dx = float(x2[self.feature] - x1[self.feature])
        if dx <= 0 or np.sign(dy) != np.sign(slope):
            return None
        if not all(check_witness(context.network, context.region, p, lambda y: True) for p in (x1, x2)):
            return None
        return x1, x2

    def finish(self, context) -> AnalysisResult:
        lo, hi = self._slopes
        seen = self.n_polytopes > 0
        if self._step_u is None:
            bad = []  # the feature is fixed in the region: monotone vacuously
        elif self.direction == "increasing":
            bad = self._neg
        elif self.direction == "decreasing":
            bad = self._pos
        else:  # either direction: the minority sign violates
            bad = [] if not self._neg or not self._pos else min(self._neg, self._pos, key=len)
        violations = [{"polytope": i, "interior_point": x, "slope": s} for i, x, s, _ in bad]
        witness, pair = None, None
        for i, x, s, r in bad:
            pair = self._confirm(context, x, s, r)
            if pair is not None:
                witness = x
                break
        if bad:
            verdict = Verdict.VIOLATED if pair is not None else Verdict.VIOLATED_UNCONFIRMED
        else:
            verdict = Verdict.HOLDS if self.exact(context) else Verdict.UNKNOWN
        return AnalysisResult(
            analysis=self.label, verdict=verdict,
            value={"min_slope": lo if seen else None, "max_slope": hi if seen else None},
            witness=witness, exact=self.exact(context) or verdict is Verdict.VIOLATED,
            n_polytopes=self.n_polytopes, n_solves=0, failures=tuple(self.failures),
            details={"violations": violations, "witness_pair": pair,
                     "direction": self.direction, "feature": self.feature, "output": self.output,
                     "by_sign": {"negative": self._neg, "positive": self._pos}},
        )

    def describe(self, result) -> list[str]:
        from polytrav.vocabulary.text import fmt, vector

        d = result.details
        want = d["direction"] or "one direction"
        lines = [f"slope of output {d['output']} in x_{d['feature']} ({want}): "
                 f"{len(d['violations'])} violating polytope(s)"]
        if d["witness_pair"] is not None:
            x1, x2 = d["witness_pair"]
            lines.append(f"pair: x = {vector(x1)} and x' = {vector(x2)} "
                         f"(x'[{d['feature']}] > x[{d['feature']}])")
        return lines

    def combine(self, parts, context) -> AnalysisResult:
        """Merge the parts' slopes by sign (polytope indices offset part by part), then finish."""
        self._step_u = self._unit_step(context)
        self._neg, self._pos, offset = [], [], 0
        for p in parts:
            for mine, theirs in ((self._neg, "negative"), (self._pos, "positive")):
                mine += [(i + offset, x, s, r) for i, x, s, r in p.details["by_sign"][theirs]]
            offset += p.n_polytopes
        lows = [p.value["min_slope"] for p in parts if p.value["min_slope"] is not None]
        highs = [p.value["max_slope"] for p in parts if p.value["max_slope"] is not None]
        self._slopes = [min(lows, default=np.inf), max(highs, default=-np.inf)]
        self.n_polytopes = sum(p.n_polytopes for p in parts)
        self.failures = [f for p in parts for f in p.failures]
        return self.finish(context)


@hookimpl
def polytrav_add_analyses():
    """Register :class:`Monotonicity`."""
    return [Monotonicity]
