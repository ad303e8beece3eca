"""Linear output properties in disjunctive normal form, as VNN-LIB states them.

The property holds iff no point of the region maps into the *unsafe* set, a disjunction of
conjunctions ``C_k y <= d_k`` over the outputs ``y`` (VNN-LIB's ``assert`` describes exactly
this set: ``sat`` means a counterexample exists). Per polytope, where ``y = W x + c``, each
conjunction is the LP ``maximise t  s.t.  x in polytope ∩ region, C_k (W x + c) + t <= d_k``
(rows of ``C_k`` scaled to unit norm, ``t <= 1``): ``t* >= 0`` gives a point of the unsafe set.
The witness is confirmed by a forward pass before the verdict is VIOLATED. In ``verify``
mode a conjunction is skipped without an LP when one of its rows cannot be met anywhere on the
region's bounding box (or at every vertex of the polytope, when the traversal computed them),
or decided without one when the interior point or a vertex already meets it; ``all`` mode
solves every LP, so its largest ``t`` is exact.
"""
from __future__ import annotations

import numpy as np

from polytrav.extend import (Analysis, AnalysisResult, CellProblem, ConfigError, Scope, Settled,
                             Settlement, Status, Stop, Verdict, attack_start, bab_details,
                             cell_linear_program, cell_values, check_witness, combine_worst,
                             decision_margin, hookimpl, local_model_u, settle_dnf,
                             settle_region, WITNESS_TOL)

__all__ = ["LinearProperty"]

class LinearProperty(Analysis):
    """Verify that no output of the region satisfies any of the ``unsafe`` conjunctions.

    Parameters
    ----------
    unsafe : list of (C, d)
        Each pair is a conjunction ``C @ y <= d`` (``C`` of shape ``(k, n_outputs)``); the
        list is their disjunction.
    mode : {"verify", "all"}
        Stop at the first confirmed counterexample (default), or visit every polytope and
        keep the most violating one (largest ``t``).
    bounds : bool
        In ``verify`` mode, skip every piece on which sound bounds of the rest of the
        network prove that no unsafe conjunction can be met (:meth:`piece_margin`); the
        answer is the same, with far fewer polytopes. Default True.
    bab : bool
        With ``bounds``: where the settle stage's attacks leave the whole region open and its
        bound does not prove it, neuron-level branch and bound and the region's MILP decide
        it first (:func:`~polytrav.bounds.settle.settle_region`; boxes of many free inputs).
        Default True.
    split : bool
        With ``bounds``: the settle stage (:meth:`settle`) bisects a box of few effective
        inputs before the traversal (:func:`~polytrav.bounds.settle.split_region`). Default
        True.
    confirm : callable, optional
        ``confirm(x)``: None when ``x``, a point a forward pass puts in the unsafe set, is a
        counterexample, else the reason it is not (the model in its own precision:
        ``polytrav.verify`` checks with onnxruntime). Without it the forward pass decides.
        A point it refuses is not a witness: the run leaves it (in ``verify`` mode it stops,
        as at a witness), the verdict is VIOLATED_UNCONFIRMED unless a later point stands,
        and ``details["refused"]`` says why. Runs in parts pickle it.
    recorder : optional
        A proof's record of the case (:class:`polytrav.proof.record.CaseRecord`), given to
        the settle stage's input split; None (default): nothing is recorded.

    ``verdict``: VIOLATED (confirmed witness), HOLDS (complete, every LP decided) or
    UNKNOWN. In ``verify`` mode with ``bounds`` the run first settles the region
    (:meth:`settle`: attacks, input splitting), then traverses what is left open.
    ``witness`` is the point of the largest margin found (``verify``: the first
    confirmed counterexample); ``value`` is the margin there by a forward pass,
    ``min(1, max_k min(d_k - C_k y))`` (>= 0: ``y`` is unsafe), and ``details["disjunct"]``
    the ``k`` attaining it. The value is ``exact`` (the largest over the region) only in
    ``all`` mode after a complete run with every LP decided; otherwise ``scope`` says what it
    covers (the polytopes visited, or the witness).
    """

    name = "linear_property"
    uses_vertices = True

    def __init__(self, unsafe, mode: str = "verify", bounds: bool = True, bab: bool = True,
                 split: bool = True, confirm=None, recorder=None):
        self.unsafe = unsafe
        self.mode = mode
        self.bounds = bounds
        self.bab = bab
        self.split = split
        self.confirm = confirm
        self.recorder = recorder
        self._stage_bab = None  # the settle stage's branch and bound, for the run's result

    @property
    def prunes_by_bound(self) -> bool:
        return bool(self.bounds) and self.mode == "verify"

    def piece_margin(self, piece, context) -> float:
        """Lower bound of the distance into the unsafe set over the piece
        (:func:`~polytrav.bounds.settle.decision_margin`, a bound: no search); positive
        proves the piece holds no counterexample. Once the start attack has met the unsafe
        set (a forward pass says so), no bound is computed: the run stops at the first
        polytope (:meth:`visit` confirms the attack's point there)."""
        if self._attack is not None and self._attack[1] is not None:
            return -np.inf
        return decision_margin(self._pairs, piece, context)

    @property
    def problem_form(self) -> str:
        return "lp"

    def validate(self, network, region) -> None:
        m = network.n_outputs
        if self.mode not in ("verify", "all"):
            raise ConfigError(f"analysis {self.name!r}: mode must be 'verify' or 'all', got {self.mode!r}")
        if isinstance(self.unsafe, tuple) and len(self.unsafe) == 2 and np.ndim(self.unsafe[1]) <= 1 \
                and np.ndim(self.unsafe[0]) == 2:
            self.unsafe = [self.unsafe]
        pairs, raw = [], []
        for k, pair in enumerate(self.unsafe):
            try:
                C, d = pair
            except (TypeError, ValueError):
                raise ConfigError(f"analysis {self.name!r}: unsafe[{k}] must be a pair (C, d)") from None
            C = np.atleast_2d(np.asarray(C, float))
            d = np.atleast_1d(np.asarray(d, float))
            if C.shape[1] != m or d.shape != (C.shape[0],):
                raise ConfigError(
                    f"analysis {self.name!r}: unsafe[{k}] has C of shape {C.shape} and d of shape "
                    f"{d.shape}; expected C (k, {m}) for a network with {m} outputs and d (k,)")
            if not (np.isfinite(C).all() and np.isfinite(d).all()):
                raise ConfigError(f"analysis {self.name!r}: unsafe[{k}] contains NaN or inf")
            norms = np.linalg.norm(C, axis=1)
            if (norms == 0).any():
                raise ConfigError(f"analysis {self.name!r}: unsafe[{k}] has an all-zero row of C")
            pairs.append((C / norms[:, None], d / norms))
            raw.append((C, d))
        if not pairs:
            raise ConfigError(f"analysis {self.name!r}: unsafe is empty (nothing to check)")
        if self.confirm is not None and not callable(self.confirm):
            raise ConfigError(f"analysis {self.name!r}: confirm must be a callable confirm(x) "
                              f"-> None or the reason, got {type(self.confirm).__name__}")
        self._pairs = pairs
        self._raw = raw  # as given: the settle stage's attacks are checked on these
        self._run_inputs = (network, region)
        self._attack = None
        self._settled = None  # the settle stage's violation (t, x, k), for finish

    def __getstate__(self) -> dict:
        """Pickled without the run's network and region (parts of a parallel run get them)
        and without the proof's record (the settle stage runs before the parts)."""
        return {k: (None if k == "recorder" else v) for k, v in self.__dict__.items()
                if k != "_run_inputs"}

    @property
    def pairs(self) -> list:
        """The unsafe conjunctions ``(C, d)`` as checked by :meth:`validate`: a list, rows of
        ``C`` of unit norm."""
        return self._pairs

    def start_point(self) -> np.ndarray | None:
        """In ``verify`` mode: the most violating of :data:`START_SAMPLES` points of the region.

        The traversal starts there, so a counterexample that sampling finds is confirmed in
        the first polytope, and best-first search begins where violations are likeliest.
        Computed when a run asks for it (not in the parts of a parallel run, which get the
        start point of the whole run).
        """
        if self.mode != "verify":
            return None
        if self._attack is None:  # (point, the disjunct it meets, or None)
            network, region = self._run_inputs
            point = attack_start(self._pairs, network, region)
            self._attack = (point, None if point is None else self._met(network, region, point))
        return self._attack[0]

    def _met(self, network, region, x) -> int | None:
        """The first disjunct ``x`` meets as :meth:`visit` confirms a witness (margin ``t >=
        0`` by a forward pass, then :func:`check_witness` and ``confirm``), or None."""
        y = network.forward(x)
        k = next((k for k, (C, d) in enumerate(self._pairs)
                  if np.min(d - C @ y) >= 0
                  and check_witness(network, region, x, self._violates(k))), None)
        return None if k is None or self._refused(x) is not None else k

    def _refused(self, x) -> str | None:
        """Why ``confirm`` refuses the point ``x``, or None (also without ``confirm``)."""
        return None if self.confirm is None else self.confirm(np.asarray(x, float))

    def settle(self, context) -> Settled | None:
        """In ``verify`` mode with ``bounds``: the region settled before the traversal by
        :func:`~polytrav.bounds.settle.settle_dnf` (the start attack's samples and
        descents, input splitting of a box of few effective inputs, the attack's restarts
        where the split left the region open or does not apply), then, with ``bab``, where
        the whole region is left open: its bound, branch and bound and the region's MILP
        (:func:`~polytrav.bounds.settle.settle_region`, boxes of many free inputs; what they
        did is the result's ``details["bab"]``). A point is a counterexample as at the start
        of a run: a forward pass (no tolerance) puts it in the region and in a conjunction of
        the unsafe set as given, and ``confirm`` takes it. None otherwise (the run traverses
        the region as it is)."""
        self._stage_bab = None
        if not self.prunes_by_bound:
            return None
        network, region = context.network, context.region

        def accept(x) -> bool:
            return (check_witness(network, region, x, self._in_unsafe, tol=0.0)
                    and self._refused(x) is None)

        settled = settle_dnf(self._pairs, network, region, context.backends("lp"),
                             accept=accept, time_left=context.time_left,
                             split_boxes=self.split, recorder=self.recorder)
        if self.bab and settled.outcome is Settlement.OPEN and not settled.boxes:
            point = settled.point
            searched = settle_region(self._pairs, context, lambda: point, accept=accept,
                                     **settled.stats)
            if searched is not None:
                settled, self._stage_bab = searched
        if settled.outcome is Settlement.VIOLATED:
            y = network.forward(settled.point)
            depth = [float(np.min(d - C @ y)) for C, d in self._pairs]
            k = int(np.argmax(depth))
            self._settled = (depth[k], settled.point, k)
        return settled

    def _in_unsafe(self, y) -> bool:
        """Whether the output ``y`` meets a conjunction of the unsafe set as given."""
        return any(bool(np.all(C @ y <= d)) for C, d in self._raw)

    def begin(self, context) -> None:
        self._subs = {}  # per disjunct, its cvxpy subproblem (regions with norm balls only)
        self._best = (-np.inf, None, None) if self._settled is None else self._settled
        self._confirmed = self._settled  # the settle stage's counterexample, if it found one
        self._refusals = []  # why confirm refused witnesses
        self.skipped = 0
        self._bab, self._stage_bab = self._stage_bab, None  # the stage's, reported once

    def _problem(self, context, k: int, M, r, values):
        """Disjunct ``k``'s LP on a cell (``values``: its rows): in arrays (no cvxpy) over a
        polyhedral region, else the compiled subproblem, with its parameter values."""
        lp = cell_linear_program(context.frame, values, M=M, r=r)
        if lp is not None:
            return lp, {}
        if k not in self._subs:
            from polytrav.extend import compiled

            fr, n_rows, rows = context.frame, context.network.n_neurons, M.shape[0]
            self._subs[k] = compiled((self.name, fr.cell_fingerprint, n_rows, rows),
                                     lambda: self._build(fr, n_rows, rows))
        return self._subs[k], {"M": M, "r": r, **values}

    @staticmethod
    def _build(frame, n_rows: int, k: int):
        """``maximise t`` s.t. ``M u + t <= r``, ``t <= 1`` on the cell (parameters M, r, A, b)."""
        import cvxpy as cp

        from polytrav.extend import Subproblem

        cell = CellProblem(frame, n_rows)
        M = cp.Parameter((k, frame.dim), name="M")
        r = cp.Parameter(k, name="r")
        t = cp.Variable(name="t")
        cons = cell.constraints + [M @ cell.u + t <= r, t <= 1.0]
        return Subproblem(cp.Problem(cp.Maximize(t), cons), {"u": cell.u})

    def _violates(self, k: int):
        C, d = self._pairs[k]
        return lambda y: bool(np.all(C @ y <= d + WITNESS_TOL * (1 + np.abs(d))))

    def visit(self, polytope, context):
        if self._attack is not None and self._attack[1] is not None and self._confirmed is None:
            x, k = self._attack  # the start attack's point meets disjunct k: no LP needed
            C, d = self._pairs[k]
            t = float(np.min(d - C @ context.network.forward(x)))
            self._best = self._confirmed = (t, x, k)  # (the attack runs in verify mode only)
            return Stop(f"disjunct {k} met at the start attack's point (margin {t:.3g})")
        Wu, cu = local_model_u(polytope, context.frame)
        values = None
        shortcuts = self.mode == "verify"  # "all" solves every LP: its largest t is exact
        for k, (C, d) in enumerate(self._pairs):
            M, r = C @ Wu, d - C @ cu
            if shortcuts and np.any(-np.abs(M).sum(axis=1) > r):  # a row unmeetable on [-1, 1]^d
                self.skipped += 1
                continue
            V = polytope.vertices if shortcuts else None
            if V is not None:  # slacks at the vertices bound t from both sides
                S = r[:, None] - M @ V.T
                if float(S.max(axis=1).min()) < 0:  # some row is violated on the whole cell
                    self.skipped += 1
                    continue
                k_v = int(np.argmax(S.min(axis=0)))
                t_in, x_in = float(S[:, k_v].min()), context.frame.to_x(V[k_v])
            else:
                t_in = float(np.min(r - M @ context.frame.to_u(polytope.interior_point)))
                x_in = polytope.interior_point
            if t_in >= 0 and shortcuts:
                found = (t_in, x_in)
            else:
                values = values or cell_values(polytope, context.frame)
                problem, params = self._problem(context, k, M, r, values)
                res = self.solve(context, problem, polytope, **params)
                if res.status is not Status.OPTIMAL:
                    continue
                found = (res.objective, context.frame.to_x(res.x))
            t, x = found
            if t > self._best[0]:
                self._best = (t, x, k)
            if t >= 0 and (self._confirmed is None or t > self._confirmed[0]):
                if check_witness(context.network, context.region, x, self._violates(k)):
                    why = self._refused(x)
                    if why is not None:  # not a witness: in verify mode, left as verify did
                        self._refusals.append(why)
                        if self.mode == "verify":
                            return Stop(f"disjunct {k} met at an input that confirm refuses: "
                                        f"{why}")
                        continue
                    self._confirmed = (t, x, k)
                    if self.mode == "verify":
                        return Stop(f"disjunct {k} met at an input (margin {t:.3g})")
        return None

    def finish(self, context) -> AnalysisResult:
        t, x, k = self._best
        proven = self.exact(context)
        if self._confirmed is not None:
            verdict = Verdict.VIOLATED
            t, x, k = self._confirmed if self.mode == "verify" else (t, x, k)
        elif t >= 0:
            verdict = Verdict.VIOLATED_UNCONFIRMED
        else:
            verdict = Verdict.HOLDS if proven else Verdict.UNKNOWN
        exact = proven and self.mode == "all"
        scope = (Scope.REGION if exact else
                 Scope.WITNESS if self.mode == "verify" and verdict is Verdict.VIOLATED
                 else Scope.VISITED)
        details = {"disjunct": k, "mode": self.mode, "skipped_by_bound": self.skipped,
                   "bab": bab_details(self._bab),
                   "refused": None if verdict is Verdict.VIOLATED or not self._refusals
                   else self._refusals[0]}
        value = None
        if x is not None:  # the margin and disjunct at the witness, by a forward pass
            y = context.network.forward(x)
            depth = [min(1.0, float(np.min(d - C @ y))) for C, d in self._pairs]
            k = int(np.argmax(depth))
            value = depth[k]
            details.update(disjunct=k, output=y)
        return AnalysisResult(
            analysis=self.label, verdict=verdict, value=value, witness=x, exact=exact,
            scope=scope, n_polytopes=self.n_polytopes, n_solves=self.n_solves,
            failures=tuple(self.failures), details=details,
        )

    def describe(self, result) -> list[str]:
        from polytrav.extend import fmt

        d = result.details
        if result.value is None:
            return []
        what = {Scope.REGION: "largest margin into the unsafe set over the region",
                Scope.WITNESS: "margin into the unsafe set at the witness (the first "
                               "counterexample found, not the largest)",
                Scope.VISITED: "largest margin into the unsafe set found (the polytopes "
                               "visited; the region's may be larger)"}[result.scope]
        return [f"{what}: {fmt(result.value)} (disjunct {d['disjunct']}; at least 0: the output "
                "there meets it)"]

    def combine(self, parts, context) -> AnalysisResult:
        self._stage_bab = None  # the parts reported it (a run in parts of the stage's region)
        return combine_worst(self, parts, context, stop_at_violation=self.mode == "verify")


@hookimpl
def polytrav_add_analyses():
    """Register :class:`LinearProperty`."""
    return [LinearProperty]
