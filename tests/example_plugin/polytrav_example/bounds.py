"""``output_bounds``: does output ``k`` stay inside ``[lower, upper]`` everywhere in the region?

Per polytope, where the output is ``w·x + c``, the subproblem is two LPs on polytope ∩
region: ``maximise w·x`` and ``minimise w·x``. A value outside the bounds is a violation,
confirmed by a forward pass before the verdict says so; the run stops there.

Before the traversal descends into a piece of the region (the whole region, then the cells of
each level), :meth:`OutputBounds.piece_margin` bounds the output over the whole piece with
polytrav's CROWN bounds; a positive margin proves that none of the piece's polytopes can leave
the bounds, so the run skips them (the ``polytrav_piece_margin`` hook, which the ``Analysis``
base class implements by calling ``piece_margin``).
"""
from __future__ import annotations

import numpy as np

from polytrav import Analysis, AnalysisResult, ConfigError, Status, Verdict
from polytrav.extend import CellProblem, Stop, Subproblem, check_witness, dnf_piece_margin


class OutputBounds(Analysis):
    """Verify ``lower <= f(x)[output] <= upper`` on the region.

    Parameters
    ----------
    lower, upper : float
    output : int
    prune : bool
        Skip the pieces that bounds prove (default True).
    """

    name = "output_bounds"

    def __init__(self, lower: float, upper: float, output: int = 0, prune: bool = True):
        self.lower = lower
        self.upper = upper
        self.output = output
        self.prune = prune

    @property
    def prunes_by_bound(self) -> bool:
        return self.prune

    def piece_margin(self, piece, context) -> float:
        """Lower bound, over the whole piece, of the distance from the output to the unsafe
        set ``{y[output] >= upper} or {y[output] <= lower}`` (written ``C y <= d``): positive
        proves that the output stays strictly inside the bounds on every point of the piece."""
        e = np.eye(context.network.n_outputs)[[self.output]]
        unsafe = [(-e, np.array([-self.upper])), (e, np.array([self.lower]))]
        return dnf_piece_margin(unsafe, piece, context)

    def validate(self, network, region):
        if not 0 <= self.output < network.n_outputs:
            raise ConfigError(f"analysis 'output_bounds': output must be in "
                              f"[0, {network.n_outputs}), got {self.output}")
        if not self.lower <= self.upper:
            raise ConfigError(f"analysis 'output_bounds': lower {self.lower} > upper {self.upper}")

    def begin(self, context):
        self._cell = CellProblem(context.frame, context.network.n_neurons)
        import cvxpy as cp  # imported when a run needs it: loading the plugin stays cheap

        self._g = cp.Parameter(context.frame.dim, name="g")
        problem = cp.Problem(cp.Maximize(self._g @ self._cell.u), self._cell.constraints)
        self._sub = Subproblem(problem, {"u": self._cell.u})
        self._witness = None

    def visit(self, polytope, context):
        fr = context.frame
        w, c = polytope.W[self.output], polytope.c[self.output]
        g, g0 = w @ fr.U, w @ fr.origin + c
        values = self._cell.values(polytope)
        for sign, bound in ((1.0, self.upper), (-1.0, -self.lower)):
            res = self.solve(context, self._sub, polytope, g=sign * g, **values)
            if res.status is Status.OPTIMAL and sign * g0 + res.objective > bound:
                x = fr.to_x(res.x)
                outside = lambda y: not self.lower <= y[self.output] <= self.upper  # noqa: E731
                if check_witness(context.network, context.region, x, outside):
                    self._witness = x
                    return Stop("output leaves the bounds")
        return None

    def finish(self, context):
        if self._witness is not None:  # the verdict is settled; the value is the witness's
            return AnalysisResult(self.label, Verdict.VIOLATED,
                                  float(context.network.forward(self._witness)[self.output]),
                                  self._witness, exact=False, scope="witness",
                                  n_polytopes=self.n_polytopes, n_solves=self.n_solves,
                                  failures=tuple(self.failures))
        verdict = Verdict.HOLDS if self.exact(context) else Verdict.UNKNOWN
        return AnalysisResult(self.label, verdict, None, exact=self.exact(context),
                              n_polytopes=self.n_polytopes, n_solves=self.n_solves,
                              failures=tuple(self.failures))

    def combine(self, parts, context):
        """Merge the results of disjoint parts of the region (parallel runs, checkpoints)."""
        failures = [f for p in parts for f in p.failures]
        exact = context.complete and not failures
        violated = next((p for p in parts if p.verdict is Verdict.VIOLATED), None)
        if violated is not None:
            return self.merged(parts, context, verdict=Verdict.VIOLATED, value=violated.value,
                               witness=violated.witness, exact=False, scope="witness")
        return self.merged(parts, context, verdict=Verdict.HOLDS if exact else Verdict.UNKNOWN)
