"""Local model: the affine map the network computes around one input (attributions, reasons).

A ReLU network is affine on each polytope: where the activation code of ``x0`` holds (neuron
on iff its pre-activation is ``>= 0``), the network is exactly ``y = W x + c``. For one
output ``k`` (default: the logit of a binary classifier, else the predicted class's logit),
the attribution of feature ``j`` is ``W[k, j] * (x0_j - baseline_j)``, so that
``y_k(x0) = intercept + sum_j attribution_j`` holds exactly, with ``intercept = W[k] @ baseline
+ c[k]`` (the local model's value at the baseline: the polytope's affine map extended to it,
which is the network's own output there only when the baseline lies in the same polytope).
Nothing is approximated: the attributions are the local model's, valid on the whole polytope
of ``x0``, in the output's units, for features in the network's input units (the raw
features of a ``Network.from_sklearn`` pipeline, whose scalers are folded in).

**Reasons.** The features pushing towards ``x0``'s answer are those whose attribution has the
answer's sign: for a logit (one output, or a sigmoid output) the side of 0 that ``y_k(x0)`` is
on, for one score per class ``+`` when ``k`` is ``x0``'s class (``-`` otherwise: raising
another class's score pushes away from ``x0``'s), for a regressor ``+`` (raising the output).
``reasons`` of them (default 3) in decreasing order of ``|attribution|`` (ties: the earlier
feature first) are the reasons *toward*; the same number with the other sign, the reasons
*away*. A feature at its baseline value (or with zero slope) is neither.

**Baseline.** ``baseline=`` when given; in :func:`polytrav.explain` otherwise the data's
per-feature median (``row.data.median``: a typical row, in the data's own units), and zeros
where the row has no data summary. ``analyze`` without ``baseline``: zeros.

The run needs one polytope: the traversal starts from ``x0`` and the analysis stops after
the first polytope (whose Chebyshev ``radius`` it reports when it is ``x0``'s own; ``x0`` on
a boundary between polytopes keeps its own code's map). No subproblem is solved.
"""
from __future__ import annotations

import numpy as np

from polytrav.extend import (Analysis, AnalysisResult, ConfigError, RegionError, Stop,
                             decisions, hookimpl)

__all__ = ["REASONS", "LocalModel", "ranked_reasons"]

#: Reasons reported each way by default (toward and away from ``x0``'s answer).
REASONS = 3


def ranked_reasons(attribution: np.ndarray, sign: int, k: int) -> tuple[list[int], list[int]]:
    """The ``k`` features pushing toward the answer (``sign * attribution > 0``) and the
    ``k`` pushing away (``< 0``), each by decreasing ``|attribution|``, ties by index.

    >>> ranked_reasons(np.array([0.5, -2.0, 0.0, 1.5, -0.5]), 1, 2)
    ([3, 0], [1, 4])
    >>> ranked_reasons(np.array([0.5, -2.0, 0.0, 1.5, -0.5]), -1, 3)
    ([1, 4], [3, 0])
    """
    signed = sign * np.asarray(attribution, float)
    order = np.argsort(-np.abs(signed), kind="stable")
    toward = [int(j) for j in order if signed[j] > 0][:k]
    away = [int(j) for j in order if signed[j] < 0][:k]
    return toward, away


class LocalModel(Analysis):
    """The local affine model of the network at ``x0``, its per-feature attributions and
    the reasons for ``x0``'s answer.

    Parameters
    ----------
    x0 : array_like, shape (n_inputs,)
        The input; must lie in the region.
    output : int, optional
        Output explained (default: 0 for one output, else ``x0``'s predicted class).
    baseline : array_like, shape (n_inputs,), or a number, optional
        Reference point of the attributions (default: zeros; a number: that value for every
        feature).
    reasons : int
        How many features to report each way, toward and away from ``x0``'s answer
        (default :data:`REASONS`; the module doc says which way is which).

    ``value`` is ``{"output": y_k(x0), "intercept": ...}``; ``details`` hold ``gradient``
    (``W[k]``), ``attribution``, ``baseline``, ``output_index``, ``code``, ``radius`` (the
    Chebyshev radius of ``x0``'s polytope inside the region, None when not visited),
    ``toward`` and ``away`` (the reasons: feature indices, strongest first), ``sign``
    (``+1`` or ``-1``: the attributions' sign that pushes toward the answer), ``answer``
    (what ``x0`` gets: a class label, else its index, None for a regressor) and
    ``features`` (the network's input names, else ``x0, x1, ...``).

    Examples
    --------
    >>> from polytrav import Network, Box, analyze
    >>> from polytrav.plugins import LocalModel
    >>> net = Network.from_arrays([[[1.0, 0.0], [0.0, 1.0]], [[2.0, -1.0]]], [[0.0, 0.0], [0.5]])
    >>> r = analyze(net, Box([-1, -1], [1, 1]), LocalModel([0.5, 0.25]))[0]
    >>> r.value["output"], r.value["intercept"], r.details["attribution"].tolist()
    (1.25, 0.5, [1.0, -0.25])
    >>> r.details["answer"], r.details["toward"], r.details["away"]     # logit >= 0: class 1
    (1, [0], [1])
    """

    name = "local_model"

    def __init__(self, x0, output: int | None = None, baseline=None, reasons: int = REASONS):
        self.x0 = x0
        self.output = output
        self.baseline = baseline
        self.reasons = reasons

    @classmethod
    def for_row(cls, row, *, output=None, baseline=None, reasons=REASONS):
        """The local model at ``row.x`` (the region: the domain); ``baseline`` defaults to
        the data's per-feature median (``row.data.median``), else zeros."""
        if baseline is None:
            data = getattr(row, "data", None)
            baseline = getattr(data, "median", None)
        return cls(row.x, output=output, baseline=baseline, reasons=reasons), row.domain

    def figures(self, result, row) -> dict:
        """``output``, ``intercept``, ``output_index``, ``radius``, ``exact``, the reasons
        ``reason.toward.1`` ... and ``reason.away.1`` ... (feature names, strongest first;
        None where fewer features push that way), and per feature ``gradient.<feature>``
        and ``attribution.<feature>``."""
        d = result.details
        out = {"output": result.value["output"], "intercept": result.value["intercept"],
               "output_index": d["output_index"], "radius": d["radius"], "exact": result.exact}
        for way in ("toward", "away"):
            names = [row.features[j] for j in d[way]]
            for i in range(self.reasons):
                out[f"reason.{way}.{i + 1}"] = names[i] if i < len(names) else None
        for j, name in enumerate(row.features):
            out[f"gradient.{name}"] = float(d["gradient"][j])
        for j, name in enumerate(row.features):
            out[f"attribution.{name}"] = float(d["attribution"][j])
        return out

    def start_point(self):
        return self._x0

    def validate(self, network, region) -> None:
        who = f"analysis {self.name!r}"
        n, m = network.n_inputs, network.n_outputs
        x0 = np.asarray(self.x0, float).reshape(-1)
        if x0.shape != (n,) or not np.isfinite(x0).all():
            raise ConfigError(f"{who}: x0 must be {n} finite numbers, got shape {x0.shape}")
        base = np.zeros(n) if self.baseline is None else np.asarray(self.baseline, float)
        base = np.full(n, float(base)) if base.ndim == 0 else base.reshape(-1)
        if base.shape != (n,) or not np.isfinite(base).all():
            raise ConfigError(f"{who}: baseline must be a number or {n} finite numbers, got "
                              f"shape {base.shape}")
        if isinstance(self.reasons, bool) or not isinstance(self.reasons, (int, np.integer)) \
                or self.reasons < 0:
            raise ConfigError(f"{who}: reasons must be a whole number >= 0, got "
                              f"{self.reasons!r}")
        bad = region.violations(x0)
        if bad:
            raise RegionError(f"{who}: x0 is outside the region ({'; '.join(bad[:3])})")
        y0 = network.forward(x0)
        k = self.output
        if k is None:
            k = 0 if m == 1 else int(np.argmax(y0))
        if not isinstance(k, (int, np.integer)) or not 0 <= k < m:
            raise ConfigError(f"{who}: output must be an integer in [0, {m}), got {self.output!r}")
        self._x0, self._base, self._k = x0, base, int(k)
        self._sign, self._answer = _answer(network, y0, self._k)
        self._features = network.input_names or tuple(f"x{j}" for j in range(n))
        self._code = network.activation_code(x0)
        W, c = network.local_model(self._code, np.eye(m)[[self._k]])
        self._w, self._c = W[0], float(c[0])

    def begin(self, context) -> None:
        self._radius = None

    def visit(self, polytope, context):
        if all(np.array_equal(a, b) for a, b in zip(polytope.code, self._code)):
            self._radius = float(polytope.radius)
        return Stop("the local model is known")

    def finish(self, context) -> AnalysisResult:
        attribution = self._w * (self._x0 - self._base)
        intercept = float(self._w @ self._base + self._c)
        toward, away = ranked_reasons(attribution, self._sign, int(self.reasons))
        return AnalysisResult(
            analysis=self.label, verdict=None,
            value={"output": intercept + float(attribution.sum()), "intercept": intercept},
            witness=None, exact=True, n_polytopes=self.n_polytopes, n_solves=self.n_solves,
            details={"output_index": self._k, "gradient": self._w, "attribution": attribution,
                     "baseline": self._base, "code": self._code, "radius": self._radius,
                     "toward": toward, "away": away, "sign": self._sign,
                     "answer": self._answer, "features": self._features},
        )

    def describe(self, result) -> list[str]:
        from polytrav.extend import fmt, vector

        d = result.details
        k = d["output_index"]
        intercept = fmt(result.value["intercept"])
        lines = [f"output {k} = {intercept} + sum of the attributions {vector(d['attribution'])}",
                 f"relative to the baseline {vector(d['baseline'])} (the local model there: "
                 + f"{intercept})"]
        if d["answer"] is None:  # a regressor or a multilabel output: which way it moves
            goal = f"output {k}"
            words = ("raising", "lowering") if d["sign"] > 0 else ("lowering", "raising")
        else:
            goal = f"class {d['answer']!r}" if isinstance(d["answer"], str) else \
                f"class {d['answer']}"
            words = ("toward", "away from")
        for way, word in zip(("toward", "away"), words):
            named = ", ".join(f"{d['features'][j]} ({fmt(d['attribution'][j])})"
                              for j in d[way])
            lines.append(f"{word} {goal}: {named or 'no feature'}")
        return lines


def _answer(network, y0: np.ndarray, k: int) -> tuple[int, object]:
    """``(sign, answer)``: the attributions' sign that pushes toward ``x0``'s answer and that
    answer (a class label, else its index; None for a regressor), as the module doc says."""
    link, m = network.link, network.n_outputs
    if link == "identity":
        return 1, None
    if m == 1 or link == "sigmoid":  # a logit: the side of 0 that y_k(x0) is on
        sign = 1 if y0[k] >= 0 else -1
        if m == 1:
            return sign, network.class_label(int(decisions(y0[None])[0]))  # None: a tie
        return sign, None  # multilabel: label k present (sign +1) or absent
    q = int(decisions(y0[None])[0])  # one score per class; -1: a tie
    return (1 if k == q else -1), network.class_label(q)


@hookimpl
def polytrav_add_analyses():
    """Register :class:`LocalModel`."""
    return [LocalModel]
