"""Multiclass adversarial attack, solved exactly through the margins (paper §5.1, eq. 15).

The paper maximises a wrong class's softmax probability per polytope; that maximises a
convex function, which is not a convex program. The exact problem here is the margin: for
each class ``i != label``, ``maximise (w_i - w_label) · x + (c_i - c_label)`` over
polytope ∩ region, an LP (SOCP for an L2-ball region). A positive margin is a real
adversarial example (class ``i`` beats ``label`` at that point, checked by a forward pass);
the largest margin over all polytopes and classes is the worst case. The softmax
probabilities reported are evaluated at the worst-margin point; they are not maximised.

Modes: ``mode="worst"`` finds the global worst margin; ``mode="verify"`` stops at the first
confirmed adversarial point. A class is skipped on a polytope without an LP when a bound of its
margin (the region's bounding box, then Lagrangian multipliers learnt from the run's LPs,
:mod:`polytrav.bounds.lagrange`) cannot beat the best margin so far (or 0 in ``verify``),
and read off the polytope's vertices when the traversal computed them. In ``worst`` mode on a
box region, the best margin starts from the corners that sign ascent reaches for the
:data:`ASCENT_CLASSES` classes nearest to winning at the first polytope that needs LPs
(:func:`~polytrav.host.analysis.corner_ascent`; ``mnist2x10`` at eps 0.01: 4 LPs instead of 12).
In ``verify`` mode with
``bounds=True`` (the default) a piece on which sound bounds of the rest of the network prove
every margin negative is skipped whole (as :class:`~polytrav.plugins.linear_property.LinearProperty`
does: the unsafe set is the disjunction of ``logit_label - logit_i <= 0``).
"""
from __future__ import annotations

import numpy as np

from polytrav.extend import (Analysis, AnalysisResult, ConfigError, Scope, Settled, Settlement,
                             Status, Stop, Verdict, attack_start, bab_details, check_witness,
                             combine_worst, corner_ascent, decision_margin, hookimpl,
                             local_model_u, settle_region)

__all__ = ["SoftmaxAttack", "softmax"]

MODES = ("worst", "verify")
#: Classes whose margin :func:`~polytrav.host.analysis.corner_ascent` seeds in ``worst`` mode.
ASCENT_CLASSES = 3


def softmax(y: np.ndarray) -> np.ndarray:
    """Softmax probabilities of logits ``y``."""
    z = np.exp(y - np.max(y))
    return z / z.sum()


class SoftmaxAttack(Analysis):
    """Worst margin ``max_x max_{i != label} logit_i(x) - logit_label(x)`` over the region.

    Parameters
    ----------
    label : int
        The class that should win everywhere in the region.
    mode : {"worst", "verify"}
        Find the global worst margin, or stop at the first confirmed adversarial point.
    bounds : bool
        In ``verify`` mode, skip every piece on which sound bounds prove the label wins
        (:meth:`piece_margin`). Default True.
    bab : bool
        With ``bounds`` in ``verify`` mode: the settle stage (:meth:`settle`) decides the
        region first where its bound does not prove it, by neuron-level branch and bound and
        the region's MILP (:func:`~polytrav.bounds.settle.settle_region`; boxes of many free
        inputs). Default True.

    ``verdict`` is HOLDS (robust: no margin is positive, proven: no other class wins
    anywhere; a margin of exactly 0 is a tie, which decides no class), VIOLATED (a point where
    another class wins, confirmed by a forward pass) or UNKNOWN. ``witness`` is the point of
    the largest margin found (``verify``: the first confirmed adversarial point); ``value``
    and ``details["class"]`` are the margin ``max_{i != label} logit_i - logit_label`` and
    the class attaining it there, by a forward pass; ``details`` also hold the logits and
    softmax probabilities there. The value is ``exact`` (the worst margin over the region)
    only in ``worst`` mode after a complete run with every LP decided; otherwise ``scope``
    says what it covers (the polytopes visited, or the witness).
    """

    name = "softmax_attack"
    uses_vertices = True
    #: Seed the worst margin by :func:`~polytrav.host.analysis.corner_ascent` on box regions
    #: (False: only from the polytopes; the tests compare the two).
    ascent = True

    def __init__(self, label: int, mode: str = "worst", bounds: bool = True, bab: bool = True):
        self.label_class = label
        self.mode = mode
        self.bounds = bounds
        self.bab = bab
        self._stage_bab = None  # the settle stage's branch and bound, for the run's result
        self._settled = None  # the stage's adversarial point (margin, x, class), for finish

    @property
    def prunes_by_bound(self) -> bool:
        return bool(self.bounds) and self.mode == "verify"

    def piece_margin(self, piece, context) -> float:
        """Lower bound of ``min_i logit_label - logit_i`` over the piece; positive proves the
        label wins everywhere on it (:func:`~polytrav.bounds.settle.decision_margin`, a
        bound: no search)."""
        return decision_margin(self._unsafe(context.network.n_outputs), piece, context)

    def settle(self, context) -> Settled | None:
        """In ``verify`` mode with ``bounds`` and ``bab``, on a box of many free inputs: the
        region's bound, then, where it proves nothing, the start attack (:meth:`start_point`)
        and, where that finds no adversarial point, branch and bound and the region's MILP
        (:func:`~polytrav.bounds.settle.settle_region`; what they did is the result's
        ``details["bab"]``). A counterexample they find is adversarial as a witness is (a
        forward pass, inside the region); the traversal confirms the attack's own point in
        its first polytope. None otherwise (the run traverses the region as it is)."""
        self._stage_bab = self._settled = None
        if not (self.prunes_by_bound and self.bab):
            return None
        network, region = context.network, context.region

        def accept(x) -> bool:
            return check_witness(network, region, x, self._is_adversarial)

        searched = settle_region(self._unsafe(network.n_outputs), context, self.start_point,
                                 accept=accept)
        if searched is None:  # no search applies: the traversal (and its start attack)
            return None
        settled, self._stage_bab = searched
        if settled.outcome is Settlement.VIOLATED:
            y = network.forward(settled.point)
            others = np.delete(np.arange(y.shape[0]), self.label_class)
            cls = int(others[np.argmax(y[others])])
            self._settled = (float(y[cls] - y[self.label_class]), settled.point, cls)
        return settled

    def _unsafe(self, m: int) -> list:
        """The unsafe set as conjunctions ``C y <= d``: one per class, ``y_label - y_i <= 0``
        (rows of unit norm)."""
        q, eye = self.label_class, np.eye(m)
        return [(((eye[q] - eye[i]) / np.sqrt(2.0))[None, :], np.zeros(1)) for i in range(m) if i != q]

    def start_point(self) -> np.ndarray | None:
        """In ``verify`` mode: where a cheap attack (random samples, then signed-gradient
        steps) gets closest to another class winning; a confirmed adversarial point is then
        found in the first polytope."""
        if self.mode != "verify":
            return None
        network, region = self._run_inputs
        return attack_start(self._unsafe(network.n_outputs), network, region)

    def __getstate__(self) -> dict:
        """Pickled without the run's network and region (parts of a parallel run get them)."""
        return {k: v for k, v in self.__dict__.items() if k != "_run_inputs"}

    @property
    def problem_form(self) -> str:
        return "lp"

    def validate(self, network, region) -> None:
        m = network.n_outputs
        if m < 2:
            raise ConfigError(f"analysis {self.name!r}: needs a network with at least 2 outputs "
                              f"(classes), this one has {m}; use output_range for one output")
        if not isinstance(self.label_class, (int, np.integer)) or not 0 <= self.label_class < m:
            raise ConfigError(f"analysis {self.name!r}: label must be a class in [0, {m}), got "
                              f"{self.label_class!r}")
        if self.mode not in MODES:
            raise ConfigError(f"analysis {self.name!r}: mode must be one of {MODES}, got {self.mode!r}")
        self._run_inputs = (network, region)
        self._settled = None

    def begin(self, context) -> None:
        self._best = (-np.inf, None, None) if self._settled is None else self._settled
        self._confirmed = self._settled  # (margin, point, class): a forward-pass-checked witness
        self.skipped = 0
        self._bab, self._stage_bab = self._stage_bab, None  # the stage's, reported once
        self._seeded = self.mode != "worst"

    def _is_adversarial(self, y: np.ndarray) -> bool:
        q = self.label_class
        return bool(np.max(np.delete(y, q)) > y[q])

    def visit(self, polytope, context):
        q = self.label_class
        Wu, cu = local_model_u(polytope, context.frame)
        floor = 0.0 if self.mode == "verify" else -np.inf
        if not self._seeded and polytope.vertices is None:  # LPs ahead: a good start saves some
            self._seeded = True
            self._seed(context, polytope, Wu, cu)
        for i in range(context.network.n_outputs):
            if i == q:
                continue
            gu, g0 = Wu[i] - Wu[q], float(cu[i] - cu[q])
            best = max(self._best[0], floor)
            if g0 + np.abs(gu).sum() <= best:
                self.skipped += 1
                continue
            if polytope.vertices is not None:  # a linear maximum is at a vertex: no LP
                vals = polytope.vertices @ gu
                k = int(np.argmax(vals))
                margin, x = g0 + float(vals[k]), context.frame.to_x(polytope.vertices[k])
            else:
                res = self.maximize_linear(context, polytope, gu, beat=best - g0)
                if res is None:  # a Lagrangian bound proves the margin cannot beat the best
                    self.skipped += 1
                    continue
                if res.status is not Status.OPTIMAL:
                    continue
                margin = g0 + res.objective
                x = context.frame.to_x(res.x)
            if self._consider(margin, x, i, context) and self.mode == "verify":
                return Stop(f"class {i} beats {q} by {margin:.3g}")
        return None

    def _consider(self, margin: float, x: np.ndarray, i: int, context) -> bool:
        """Fold in class ``i``'s margin at ``x``; True if it is a newly confirmed adversarial point."""
        if margin > self._best[0]:
            self._best = (margin, x, i)
        if margin > 0 and (self._confirmed is None or margin > self._confirmed[0]):
            if check_witness(context.network, context.region, x, self._is_adversarial):
                self._confirmed = (margin, x, i)
                return True
        return False

    def _seed(self, context, polytope, Wu, cu) -> None:
        """Fold in the corners sign ascent reaches from ``polytope``'s interior point for the
        classes nearest to beating the label there (box regions)."""
        fr, q = context.frame, self.label_class
        if not (self.ascent and fr.is_box):
            return
        u = fr.to_u(polytope.interior_point)
        y = Wu @ u + cu
        eye = np.eye(y.shape[0])
        for i in [i for i in np.argsort(-y) if i != q][:ASCENT_CLASSES]:
            margin, x = corner_ascent(context.network, fr, eye[i] - eye[q], u)
            self._consider(margin, x, int(i), context)

    def finish(self, context) -> AnalysisResult:
        margin, x, _ = self._best
        proven = self.exact(context)
        if self._confirmed is not None:
            verdict = Verdict.VIOLATED
            if self.mode == "verify":
                margin, x, _ = self._confirmed
        elif margin > 0:
            verdict = Verdict.VIOLATED_UNCONFIRMED
        else:
            verdict = Verdict.HOLDS if proven else Verdict.UNKNOWN
        # verify mode skips what cannot beat 0 (and stops at a first violation): its value is
        # the witness's, or the largest seen, never the worst over the region
        exact = proven and self.mode == "worst"
        scope = (Scope.REGION if exact else
                 Scope.WITNESS if self.mode == "verify" and verdict is Verdict.VIOLATED
                 else Scope.VISITED)
        details = {
            "label": self.label_class, "mode": self.mode, "class": None,
            "objective": "max over x of logit_i(x) - logit_label(x), exact per polytope (LP); "
                         "value, class and probabilities are recomputed by a forward pass at "
                         "the witness (probabilities are not maximised)",
            "skipped_by_bound": self.skipped, "bab": bab_details(self._bab),
        }
        value = None
        if x is not None:  # the margin and class at the witness, by a forward pass
            y = context.network.forward(x)
            others = np.delete(np.arange(y.shape[0]), self.label_class)
            cls = int(others[np.argmax(y[others])])
            value = float(y[cls] - y[self.label_class])
            details.update(logits=y, probabilities=softmax(y))
            details["class"] = cls
        return AnalysisResult(
            analysis=self.label, verdict=verdict, value=value, witness=x, exact=exact,
            scope=scope, n_polytopes=self.n_polytopes, n_solves=self.n_solves,
            failures=tuple(self.failures), details=details,
        )

    def describe(self, result) -> list[str]:
        from polytrav.extend import fmt, vector

        d = result.details
        if result.value is None:
            return [f"no margin was computed: no polytope was visited (label {d['label']})"]
        c, q = d["class"], d["label"]
        margin = f"logit[{c}] - logit[{q}] = {fmt(result.value)}"
        wins = result.value > 0
        beats = f"class {c} beats the label {q}"
        if result.scope is Scope.REGION:
            head = (f"worst margin over the region: {margin} at the witness; " + (
                beats if wins else
                f"class {c} ties with the label {q} there (a tie decides no class); no other "
                f"class wins anywhere in the region" if result.value == 0 else
                f"the label {q} wins everywhere in the region"))
        elif result.scope is Scope.WITNESS:
            head = (f"at the witness (the first adversarial input found, not the worst): "
                    f"{margin}; {beats}")
        else:
            why = ("verify mode skips what cannot beat the label" if d["mode"] == "verify"
                   else "some LPs were undecided" if result.failures else
                   "the run did not finish")
            head = (f"largest margin found: {margin} at the witness ({why}; the worst over the "
                    "region may be larger); " + (
                        beats if wins else
                        f"the label {q} wins everywhere in the region (proven)"
                        if result.verdict is Verdict.HOLDS else
                        f"the label {q} wins on the polytopes visited"))
        lines = [head]
        if "logits" in d:
            lines.append(f"logits there = {vector(d['logits'])}; probabilities "
                         f"{vector(d['probabilities'])}")
        return lines

    def combine(self, parts, context) -> AnalysisResult:
        self._stage_bab = None  # the parts reported it (a run in parts of the stage's region)
        return combine_worst(self, parts, context, stop_at_violation=self.mode == "verify")


@hookimpl
def polytrav_add_analyses():
    """Register :class:`SoftmaxAttack`."""
    return [SoftmaxAttack]
