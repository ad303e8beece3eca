"""Verification of VNN-LIB properties: ``verify()`` and its VNN-COMP style answer.

A VNN-LIB file describes counterexamples: an input region (one or more boxes) and an unsafe
output set. :func:`verify` runs :class:`~polytrav.plugins.linear_property.LinearProperty` in
its ``verify`` mode on every input region of the file (one run each, all within one time
budget: the run settles the region first, attacks and input splitting, then traverses what
is left open, :mod:`polytrav.host.settling`) and maps its answer to VNN-COMP's terms:

* ``sat``: a counterexample exists. Reported only for an input whose output, by a plain
  float64 forward pass, meets the unsafe set (and, for an ONNX model, by onnxruntime too:
  :func:`check_with_onnxruntime`).
* ``unsat``: the property holds; every region was traversed completely with every LP decided.
* ``timeout``: the time budget ran out first; ``unknown``: anything else that is not a proof
  (a lost LP, a polytope budget, an unconfirmed counterexample).
"""
from __future__ import annotations

import time
from dataclasses import KW_ONLY, dataclass, field
from numbers import Real
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np

from polytrav.vocabulary.exits import ANSWER_EXIT
from polytrav.vocabulary.errors import ConfigError
from polytrav.model.network import Network
from polytrav.solve.deadline import until
from polytrav.vocabulary.results import Answer, Verdict, jsonable
from polytrav.vocabulary.tolerances import BOUND_TOL, ONNXRUNTIME_TOL

__all__ = ["VerificationResult", "verify", "verify_many", "check_with_onnxruntime",
           "load_network", "work_line", "INTERRUPTED"]


@dataclass
class VerificationResult:
    """The answer for one (network, property) instance.

    ``answer`` is ``sat``, ``unsat``, ``unknown`` or ``timeout``; with ``sat``,
    ``counterexample`` is the input and ``output`` the network's output there. ``polytopes``
    and ``lps`` add up every region's traversal; ``reason`` says why an answer is not a proof.
    Every field but ``answer`` is given by keyword.
    """

    answer: Answer
    _: KW_ONLY
    counterexample: np.ndarray | None = None
    output: np.ndarray | None = None
    polytopes: int = 0
    lps: int = 0
    seconds: float = 0.0
    reason: str = ""
    reports: list = field(default_factory=list, repr=False)
    proven: int = 0  #: pieces proven by bounds (their polytopes were not visited)
    #: input splitting (boxes of few effective inputs): boxes bounded, proven, left open for the
    #: traversal, and the proven boxes' mean volume share per input region; None if unused
    split: dict | None = None
    #: the certificate written for an ``unsat`` (``verify``'s ``proof``): its path, nodes,
    #: bound leaves (``certified``), leaves without a certificate (``uncertified``) and
    #: bytes; None if none was asked for or the answer is not ``unsat``
    proof: dict | None = None

    def __post_init__(self):
        self.answer = Answer(self.answer)

    @property
    def exit_code(self) -> int:
        """Process exit code of the answer (:data:`polytrav.vocabulary.exits.ANSWER_EXIT`)."""
        return ANSWER_EXIT[self.answer]

    @property
    def solves(self) -> dict[str, dict]:
        """Per backend, over every region's run: the solves it answered along a chain, the
        tries that fell through to the next backend, their seconds (``Report.stats``)."""
        from polytrav.solve.backend import SolveTally

        return SolveTally.merge(r.stats.get("solves", {}) for r in self.reports)

    def work_line(self) -> str:
        """What decided the answer, with the counts (``polytrav verify`` prints it):
        :func:`work_line`."""
        return work_line(self.answer, self.polytopes, self.lps, self.seconds,
                         proven=self.proven, split=self.split)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dictionary."""
        as_list = (lambda a: None if a is None else np.asarray(a, float))
        return jsonable({"answer": self.answer, "counterexample": as_list(self.counterexample),
                          "output": as_list(self.output), "polytopes": self.polytopes,
                          "lps": self.lps, "seconds": self.seconds, "reason": self.reason,
                          "proven": self.proven, "split": self.split, "solves": self.solves,
                          "proof": self.proof})


def work_line(answer, polytopes: int, lps: int, seconds: float, *, proven: int = 0,
              split: dict | None = None) -> str:
    """One line on how an answer was reached: the input split's boxes (``split``, as
    :attr:`VerificationResult.split`) when it ran, then the traversal's polytopes, pieces
    proven by bounds and LPs. An ``unsat`` that no traversal touched says it was proven by
    the input split alone.

    >>> work_line("unsat", 0, 0, 5.2, split={"boxes": 6793, "proven": 3397, "open": 0})
    'proven by an input split: 3397 boxes proven by bounds (6793 bounded), 0 polytopes traversed, 0 LPs, 5.200 s'
    >>> work_line("unsat", 12, 30, 0.5, proven=2)
    '12 polytopes, 2 pieces proven by bounds, 30 LPs, 0.500 s'
    >>> work_line("sat", 0, 0, 0.1)[:48]
    'counterexample found before any traversal (an at'
    """
    traversal = f"{polytopes} polytopes, {proven} pieces proven by bounds, {lps} LPs"
    if str(getattr(answer, "value", answer)) == "sat" and polytopes == 0:
        return (f"counterexample found before any traversal (an attack or a forward pass), "
                f"0 polytopes, {lps} LPs, {seconds:.3f} s")
    if not split or not split.get("boxes"):
        return f"{traversal}, {seconds:.3f} s"
    boxes, done, left = split["boxes"], split["proven"], split.get("open", 0)
    split_text = f"{done} boxes proven by bounds ({boxes} bounded)"
    if str(getattr(answer, "value", answer)) == "unsat":
        if polytopes == 0 and proven == 0:
            return (f"proven by an input split: {split_text}, 0 polytopes traversed, "
                    f"{lps} LPs, {seconds:.3f} s")
        return (f"proven by an input split and a traversal: {split_text}, then "
                f"{traversal}, {seconds:.3f} s")
    return (f"input split: {split_text}, {left} left open; then {traversal}, "
            f"{seconds:.3f} s")


def load_network(path: str | PathLike) -> Network:
    """A :class:`~polytrav.Network` from an ``.onnx`` or ``.nnet`` file (by its suffix)."""
    path = Path(path)
    if path.suffix == ".onnx":
        return Network.from_onnx(path)
    if path.suffix == ".nnet":
        return Network.from_nnet(path)
    raise ConfigError(f"network file {str(path)!r}: unknown format {path.suffix!r}; "
                      "polytrav reads .onnx and .nnet files")


def check_with_onnxruntime(onnx_path: str | PathLike, x: np.ndarray, unsafe,
                           tol: float = ONNXRUNTIME_TOL) -> tuple[bool, np.ndarray]:
    """Whether onnxruntime's output at ``x`` meets one of the ``unsafe`` conjunctions.

    The model runs in its own precision (float32 for the VNN-COMP networks), so the check
    allows ``tol`` (absolute, as VNN-COMP's counterexample checker does). Returns the verdict
    and onnxruntime's output.
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
    inp = session.get_inputs()[0]
    shape = [d if isinstance(d, int) and d > 0 else 1 for d in inp.shape]
    dtype = np.float64 if "double" in inp.type else np.float32
    y = session.run(None, {inp.name: np.asarray(x, dtype).reshape(shape)})[0]
    y = np.asarray(y, float).reshape(-1)
    return any(bool(np.all(C @ y <= d + tol)) for C, d in unsafe), y


def verify(network: Network | str | PathLike, spec, *, timeout: float | None = None,
           solver=None, strategy: str = "auto", max_polytopes: int | None = None,
           progress=None, executor=None, bounds: bool = True,
           order: str = "best-first", split: bool = True, bab: bool = True,
           on_interrupt: str = "raise", confirm=None, proof=None,
           proof_seconds: float | None = None) -> VerificationResult:
    """Decide a VNN-LIB property on a network: ``sat``, ``unsat``, ``unknown`` or ``timeout``.

    Parameters
    ----------
    network : Network or path
        A network, or an ``.onnx`` / ``.nnet`` file; for an ONNX file a counterexample is
        also checked with onnxruntime before ``sat`` is answered.
    spec : VnnlibSpec or path
        The property (see :func:`polytrav.verification.vnnlib.read_vnnlib`).
    timeout : float, optional
        Seconds for the whole instance (every input region of the file).
    solver, strategy, max_polytopes, progress, executor
        As in :func:`polytrav.analyze` (``executor`` splits each region's traversal into
        parts run in parallel).
    bounds : bool
        Skip the pieces on which sound bounds prove the property (default True); False
        visits every polytope (plain traversal, the paper's method).
    order : {"best-first", "bfs"}
        With bounds, descend into the pieces of each level by increasing margin
        (``best-first``, default: counterexamples early) or in the paper's order.
    split : bool
        With bounds, the run's settle stage bisects an input box of few effective inputs
        first (:func:`polytrav.bounds.settle.settle_dnf`; default True): sub-boxes that
        bounds prove are done, a candidate counterexample is confirmed by a traversal that
        starts at it, and the sub-boxes left open are traversed one by one.
    bab : bool
        With bounds, where the attacks leave a box of many inputs open and its bound does not
        prove it, the run's settle stage gives it to neuron-level branch and bound and the
        region's MILP (:func:`polytrav.bounds.settle.settle_region`; default True).
    on_interrupt : {"raise", "report"}
        Ctrl-C (``KeyboardInterrupt``): ``"raise"`` (default) stops the run cleanly and
        re-raises it; ``"report"`` returns ``unknown`` with the reason ``interrupted``.
    confirm : callable, optional
        ``confirm(x)`` returns None when the counterexample ``x`` is real, else the reason it
        is not; replaces the onnxruntime check (a VNN-LIB 2.0 query checks its own way:
        :meth:`polytrav.verification.instance.Instance.witness`).
    proof : path, optional
        Where to write a certificate of an ``unsat`` (docs/proofs.md), which
        ``polytrav-check-proof`` checks on its own; nothing is written for another answer
        (``result.proof`` is then None). Boxes the input split proves carry their evidence;
        a box decided past it (by the traversal) gets a tree of neuron phase splits
        (:mod:`polytrav.proof.phases`) within :data:`~polytrav.proof.record.REST_TIME_FACTOR`
        times the time ``verify`` took; one it cannot prove so stays a claim without one.
    proof_seconds : float, optional
        The phase trees' budget in seconds instead (with ``proof``); what it leaves unproven
        stays a claim without evidence: the checker answers ``incomplete``, never ``valid``.

    Examples
    --------
    >>> from polytrav.verification.vnnlib import parse_vnnlib
    >>> net = Network.from_arrays([[[1.0, -1.0], [1.0, 1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
    >>> text = '''(declare-const X_0 Real) (declare-const X_1 Real) (declare-const Y_0 Real)
    ... (assert (>= X_0 -1)) (assert (<= X_0 1)) (assert (>= X_1 -1)) (assert (<= X_1 1))
    ... (assert (>= Y_0 LIMIT))'''
    >>> print(verify(net, parse_vnnlib(text.replace("LIMIT", "2.5"))).answer)   # max of y is 2
    unsat
    >>> result = verify(net, parse_vnnlib(text.replace("LIMIT", "1.5")))
    >>> result.answer == "sat", bool(net.forward(result.counterexample)[0] >= 1.5)
    (True, True)
    """
    if on_interrupt not in ("raise", "report"):
        raise ConfigError(f"verify: on_interrupt must be 'raise' or 'report', got {on_interrupt!r}")
    if proof_seconds is not None and not (isinstance(proof_seconds, Real) and not isinstance(
            proof_seconds, bool) and proof_seconds > 0):
        raise ConfigError(f"verify: proof_seconds must be a positive number of seconds, got "
                          f"{proof_seconds!r}")
    t0 = time.perf_counter()
    partial: list = []  # the reports so far, for an interrupted run
    try:  # every solver call of the instance ends by its timeout (polytrav.solve.deadline)
        with until(_end(t0, timeout)):
            return _verify(network, spec, timeout, solver, strategy, max_polytopes, progress,
                           executor, bounds, order, split, bab, t0, partial, confirm, proof,
                           proof_seconds)
    except KeyboardInterrupt:
        if on_interrupt == "raise":
            raise
        return VerificationResult(answer="unknown", **_counts(partial),
                                  seconds=time.perf_counter() - t0,
                                  reason="interrupted (Ctrl-C) before an answer",
                                  reports=partial, proven=_proven(partial))


def _end(t0: float, timeout) -> float | None:
    """``t0 + timeout`` for a timeout of positive seconds, else None (``_verify`` names a bad
    one, after the network and the property)."""
    valid = isinstance(timeout, Real) and not isinstance(timeout, bool) and timeout > 0
    return t0 + timeout if valid else None


def _verify(network, spec, timeout, solver, strategy, max_polytopes, progress, executor,
            bounds, order, split, bab, t0, reports, confirm=None, proof=None,
            proof_seconds=None) -> VerificationResult:
    """:func:`verify`'s work; ``reports`` collects each region's report as it ends."""
    from polytrav.host.options import RunOptions
    from polytrav.host.runner import RunSession
    from polytrav.traversal import TraversalStatus
    from polytrav.verification.vnnlib import VnnlibSpec, read_vnnlib

    onnx_path = None
    if not isinstance(network, Network):
        onnx_path = Path(network) if Path(network).suffix == ".onnx" else None
        network = load_network(network)
    if not isinstance(spec, VnnlibSpec):
        spec = read_vnnlib(spec, n_inputs=network.n_inputs, n_outputs=network.n_outputs)
    elif (spec.n_inputs, spec.n_outputs) != (network.n_inputs, network.n_outputs):
        raise ConfigError(
            f"verify: the property has {spec.n_inputs} inputs and {spec.n_outputs} outputs but "
            f"the network has {network.n_inputs} and {network.n_outputs}")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, Real)
                                or not timeout > 0):
        raise ConfigError(f"verify: timeout must be a number greater than 0 (seconds; leave it "
                          f"out for no limit), got {timeout!r}")
    reasons = []
    timed_out = False
    splits = []
    recorder = None
    if proof is not None:
        from polytrav.proof.record import ProofRecorder

        recorder = ProofRecorder(network, spec)
    session = RunSession(solver)  # the plugin manager and backend chains, once per instance
    options = RunOptions(solver=solver, strategy=strategy, max_polytopes=max_polytopes,
                         progress=progress, executor=executor, order=order,
                         deadline=None if timeout is None else t0 + timeout,
                         on_interrupt="report", volume_shares=False)  # not reported by verify
    for k, case in enumerate(spec.cases):
        if np.array_equal(case.lower, case.upper):  # one input: evaluate, nothing to traverse
            point = _point_case(network, case, confirm, onnx_path)
            if isinstance(point, VerificationResult):
                point.seconds = time.perf_counter() - t0
                return point
            if point:
                reasons.append(f"region {k}: {point}")
            elif recorder is not None and case.A is None:  # proven by its forward pass
                recorder.case(k).point(network.forward(case.lower))
            continue
        check = confirm if confirm is not None or onnx_path is None else \
            OnnxConfirm(onnx_path, case.unsafe)
        # the run settles the region first (attacks, input splitting), then traverses what
        # is left open (polytrav.host.settling)
        prop = case.property("verify", bounds=bounds, bab=bab, split=split, confirm=check,
                             pm=session.pm,
                             recorder=None if recorder is None else recorder.case(k))
        prop.validate(network, case.region())  # bad unsafe sets fail here, named
        if timeout is not None and timeout - (time.perf_counter() - t0) <= 0:
            timed_out = True
            reasons.append(f"no time left for input region {k}")
            break
        report = session.run(network, case.region(), prop, options)
        reports.append(report)
        if report.status is TraversalStatus.INTERRUPTED:
            raise KeyboardInterrupt  # verify's caller decides (its counts include this run)
        stage = report.stats["settle"] or {}
        if stage.get("split") is not None:
            splits.append(stage["split"])
        result = report[0]
        if result.verdict is Verdict.VIOLATED:  # confirmed by a forward pass and `check`
            x = np.asarray(result.witness, float)
            how = " (start attack)" if stage.get("by") == "attack" else ""
            return VerificationResult(answer="sat", counterexample=x,
                                      output=network.forward(x), **_counts(reports),
                                      seconds=time.perf_counter() - t0,
                                      reason=f"input region {k}{how}", reports=reports,
                                      proven=_proven(reports), split=_split_stats(splits))
        if result.verdict is not Verdict.HOLDS:
            refused = result.details.get("refused")
            if refused is not None:  # a point `check` refused: the other cases go on
                reasons.append(f"region {k}: {refused}")
            if refused is None or report.partial:
                reasons.append(f"region {k}: {result.verdict.value} ({report.status.value}"
                               + (f"; {result.failures[0]}" if result.failures else "") + ")")
                if report.status is TraversalStatus.TIME_LIMIT:
                    timed_out = True
                    break
    seconds = time.perf_counter() - t0
    if not reasons:
        if recorder is not None:  # the boxes decided past the input split: phase trees
            from polytrav.proof.record import REST_MIN_SECONDS, REST_TIME_FACTOR

            recorder.certify_rest(session.chains["lp"][0], max(
                REST_MIN_SECONDS, REST_TIME_FACTOR * (time.perf_counter() - t0))
                if proof_seconds is None else proof_seconds)
        written = None if recorder is None else {"path": str(proof), **recorder.write(proof)}
        return VerificationResult(answer="unsat", **_counts(reports), seconds=seconds,
                                  reports=reports, proven=_proven(reports),
                                  split=_split_stats(splits), proof=written)
    answer = "timeout" if timed_out else "unknown"
    return VerificationResult(answer=answer, **_counts(reports), seconds=seconds,
                              reason="; ".join(reasons), reports=reports,
                              proven=_proven(reports), split=_split_stats(splits))


class OnnxConfirm:
    """``confirm(x)`` of a case's :class:`~polytrav.plugins.linear_property.LinearProperty`
    (picklable: runs in parts take it along): None when onnxruntime's output at ``x``, in
    the model's own precision, meets the case's ``unsafe`` set as the competition's scorer
    checks it (:func:`check_with_onnxruntime`), else why not."""

    def __init__(self, onnx_path, unsafe):
        self.onnx_path, self.unsafe = onnx_path, unsafe

    def __call__(self, x) -> str | None:
        ok, y_rt = check_with_onnxruntime(self.onnx_path, x, self.unsafe)
        if ok:
            return None
        return (f"the counterexample's onnxruntime output {np.round(y_rt, 6).tolist()} "
                f"misses the unsafe set")


def _point_case(network, case, confirm, onnx_path):
    """A case whose region is one point: ``sat`` (a confirmed counterexample), ``""`` when the
    point is proven safe (every unsafe conjunction misses by more than :data:`BOUND_TOL`
    relative) or outside the rows ``A x <= b``, else the reason it stays undecided."""
    x = np.asarray(case.lower, float)
    if case.A is not None and np.any(case.A @ x > case.b + BOUND_TOL * (1 + np.abs(case.b))):
        return ""
    y = network.forward(x)
    for C, d in case.unsafe:
        gap = np.max(C @ y - d - BOUND_TOL * (1 + np.abs(d)))
        if gap > 0:
            continue
        if np.all(C @ y <= d):
            why = confirm(x) if confirm is not None else None
            if confirm is None and onnx_path is not None:
                ok, _ = check_with_onnxruntime(onnx_path, x, case.unsafe)
                why = None if ok else "the point's onnxruntime output misses the unsafe set"
            if why is None:
                return VerificationResult(answer="sat", counterexample=x, output=y,
                                          reason="the one input of the region")
            return why
        return "the one input of the region is on the boundary of the unsafe set"
    return ""


def _split_stats(splits) -> dict | None:
    """The input splits of the cases (each :func:`polytrav.bounds.settle.split_stats`) added
    up, the proven volume share averaged; None where no case was split."""
    if not splits:
        return None
    return {"boxes": sum(s["boxes"] for s in splits), "proven": sum(s["proven"] for s in splits),
            "open": sum(s["open"] for s in splits),
            "proven_volume_share": sum(s["proven_volume_share"] for s in splits) / len(splits),
            "difference": any(s["difference"] for s in splits)}


def _counts(reports) -> dict[str, int]:
    """``polytopes`` visited and ``lps`` solved (traversal and subproblems) over the reports."""
    return {"polytopes": sum(r.stats["polytopes"] for r in reports),
            "lps": sum(r.stats["lps"] + r.stats["subproblem_solves"] for r in reports)}


def _proven(reports) -> int:
    """Pieces proven by bounds: the traversals', and a region the settle stage proved whole
    by its bound, branch and bound or MILP (one piece, as the traversal's level 0 was)."""
    whole = ("bound", "branch_and_bound", "milp")
    return sum(sum(r.stats.get("proven", ())) + ((r.stats.get("settle") or {}).get("by") in whole)
               for r in reports)



def _verify_one(network, spec, timeout, options) -> VerificationResult:
    """:func:`verify` with bad input as an ``error`` answer (one batch item in a worker)."""
    from polytrav.vocabulary.errors import PolytravError

    t0 = time.perf_counter()
    try:
        return verify(network, spec, timeout=timeout, **options)
    except (PolytravError, OSError) as exc:
        return VerificationResult(answer="error", seconds=time.perf_counter() - t0,
                                  reason=f"{type(exc).__name__}: {exc}")


#: The reason of a batch instance that Ctrl-C stopped while it ran (:func:`verify_many`).
INTERRUPTED = "interrupted (Ctrl-C) before it finished"


def verify_many(instances, *, executor=None, time_limit: float | None = None, on_start=None,
                **options):
    """Verify a batch of ``(network, spec, timeout)`` instances, yielding as they finish.

    Yields ``(i, result)`` pairs (``i`` indexes ``instances``) in completion order, so a
    caller can write each result the moment it exists. ``executor``: any
    :class:`concurrent.futures.Executor` (:func:`polytrav.parallel.get_executor`: local
    processes or Dask); by default the instances run one by one in this process, and at most
    two per worker are in flight otherwise. ``time_limit``: seconds for the whole batch; an
    instance gets at most what is left when it starts, and instances not started when it is
    spent answer ``timeout`` with that reason. An instance whose input is bad (a malformed
    or missing file) answers ``error`` with the error as its reason; one whose worker died
    answers ``unknown``, saying so. On Ctrl-C each instance that was running answers
    ``unknown`` (reason ``interrupted (Ctrl-C) before it finished``), then the
    ``KeyboardInterrupt`` goes on to the caller; ``on_start(i)``, if given, is called as
    instance ``i`` starts (is handed to a worker), after which Ctrl-C gives it that row.
    ``options`` go to :func:`verify`.
    """
    from polytrav.parallel import SerialExecutor, finished, n_workers

    t0 = time.perf_counter()
    items = list(enumerate(instances))
    running: dict[int, float] = {}  # started, not yet yielded: when it started

    def interrupted(i):
        return VerificationResult(answer="unknown", seconds=time.perf_counter() - running.pop(i),
                                  reason=INTERRUPTED)

    def budget(timeout):
        if time_limit is None:
            return timeout, True
        left = time_limit - (time.perf_counter() - t0)
        return (left if timeout is None else min(timeout, left)), left > 0

    def skipped():
        return VerificationResult(answer="timeout",
                                  reason="the batch's time limit was spent before it started")

    if executor is None or isinstance(executor, SerialExecutor):  # lazily, one at a time
        for i, (net, spec, timeout) in items:
            try:
                running[i] = time.perf_counter()
                if on_start is not None:
                    on_start(i)
                limit, ok = budget(timeout)
                result = _verify_one(net, spec, limit, options) if ok else skipped()
            except KeyboardInterrupt:
                if i in running:
                    yield i, interrupted(i)
                raise
            del running[i]
            yield i, result
        return
    unstarted: list[int] = []

    def next_instance():
        while items:
            i, (net, spec, timeout) = items.pop(0)
            limit, ok = budget(timeout)
            if ok:
                running[i] = time.perf_counter()
                if on_start is not None:
                    on_start(i)
                return i, _verify_one, (net, spec, limit, options)
            unstarted.append(i)
        return None

    try:
        for i, fut in finished(executor, next_instance, 2 * n_workers(executor)):
            try:
                result = fut.result()
            except Exception as exc:  # noqa: BLE001  a dead worker: reported, never dropped
                result = VerificationResult(
                    answer="unknown",
                    reason=f"the worker running it was lost: {type(exc).__name__}: {exc}")
            running.pop(i, None)
            yield i, result
    except KeyboardInterrupt:
        for i in sorted(running):
            yield i, interrupted(i)
        raise
    for i in unstarted:
        yield i, skipped()
