"""Local model: the affine map the network computes around one input (attributions).

A ReLU network is affine on each polytope: where the activation code of ``x0`` holds (neuron
on iff its pre-activation is ``>= 0``), the network is exactly ``y = W x + c``. For one
output ``k`` (default: the logit of a binary classifier, else the predicted class's logit),
the attribution of feature ``j`` is ``W[k, j] * (x0_j - baseline_j)``, so that
``y_k(x0) = intercept + sum_j attribution_j`` holds exactly, with ``intercept = W[k] @ baseline
+ c[k]`` (the local model's value at the baseline, default 0). Nothing is approximated: the
attributions are the local model's, valid on the whole polytope of ``x0``.

The run needs one polytope: the traversal starts from ``x0`` and the analysis stops after
the first polytope (whose Chebyshev ``radius`` it reports when it is ``x0``'s own; ``x0`` on
a boundary between polytopes keeps its own code's map). No subproblem is solved.
"""
from __future__ import annotations

import numpy as np

from polytrav.extend import Analysis, AnalysisResult, ConfigError, RegionError, Stop, hookimpl

__all__ = ["LocalModel"]


class LocalModel(Analysis):
    """The local affine model of the network at ``x0`` and its per-feature attributions.

    Parameters
    ----------
    x0 : array_like, shape (n_inputs,)
        The input; must lie in the region.
    output : int, optional
        Output explained (default: 0 for one output, else ``x0``'s predicted class).
    baseline : array_like, shape (n_inputs,), optional
        Reference point of the attributions (default: zeros).

    ``value`` is ``{"output": y_k(x0), "intercept": ...}``; ``details`` hold ``gradient``
    (``W[k]``), ``attribution``, ``output_index``, ``code`` and ``radius`` (the Chebyshev
    radius of ``x0``'s polytope inside the region, None when not visited).

    Examples
    --------
    >>> from polytrav import Network, Box, analyze
    >>> from polytrav.plugins import LocalModel
    >>> net = Network.from_arrays([[[1.0, 0.0], [0.0, 1.0]], [[2.0, -1.0]]], [[0.0, 0.0], [0.5]])
    >>> r = analyze(net, Box([-1, -1], [1, 1]), LocalModel([0.5, 0.25]))[0]
    >>> r.value["output"], r.value["intercept"], r.details["attribution"].tolist()
    (1.25, 0.5, [1.0, -0.25])
    """

    name = "local_model"

    def __init__(self, x0, output: int | None = None, baseline=None):
        self.x0 = x0
        self.output = output
        self.baseline = baseline

    @classmethod
    def for_row(cls, row, *, output=None, baseline=None):
        """The local model at ``row.x`` (the region: the domain)."""
        return cls(row.x, output=output, baseline=baseline), row.domain

    def figures(self, result, row) -> dict:
        """``output``, ``intercept``, ``output_index``, ``radius``, ``exact``, and per feature
        ``gradient.<feature>`` and ``attribution.<feature>``."""
        d = result.details
        out = {"output": result.value["output"], "intercept": result.value["intercept"],
               "output_index": d["output_index"], "radius": d["radius"], "exact": result.exact}
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
        base = np.zeros(n) if self.baseline is None else np.asarray(self.baseline, float).reshape(-1)
        if base.shape != (n,) or not np.isfinite(base).all():
            raise ConfigError(f"{who}: baseline must be {n} finite numbers, got shape {base.shape}")
        bad = region.violations(x0)
        if bad:
            raise RegionError(f"{who}: x0 is outside the region ({'; '.join(bad[:3])})")
        k = self.output
        if k is None:
            k = 0 if m == 1 else int(np.argmax(network.forward(x0)))
        if not isinstance(k, (int, np.integer)) or not 0 <= k < m:
            raise ConfigError(f"{who}: output must be an integer in [0, {m}), got {self.output!r}")
        self._x0, self._base, self._k = x0, base, int(k)
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
        return AnalysisResult(
            analysis=self.label, verdict=None,
            value={"output": intercept + float(attribution.sum()), "intercept": intercept},
            witness=None, exact=True, n_polytopes=self.n_polytopes, n_solves=self.n_solves,
            details={"output_index": self._k, "gradient": self._w, "attribution": attribution,
                     "code": self._code, "radius": self._radius},
        )

    def describe(self, result) -> list[str]:
        from polytrav.extend import fmt, vector

        d = result.details
        return [f"output {d['output_index']} = {fmt(result.value['intercept'])} + sum of the "
                f"attributions {vector(d['attribution'])}"]


@hookimpl
def polytrav_add_analyses():
    """Register :class:`LocalModel`."""
    return [LocalModel]
