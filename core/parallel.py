"""Runs in parts: parallel (processes, Dask), budgeted and checkpointed.

The unit of work is a level-1 piece (:func:`polytrav.host.runner.pieces`): the pieces
partition the region, so the polytopes of a run are exactly the union of the polytopes
inside its pieces, with no polytope in two. A run in parts

1. lists the level-1 pieces once (a traversal of the first layer only; cheap);
2. sends groups of pieces to an executor: each group is one :func:`polytrav.analyze` run
   ``within`` those pieces, on fresh copies of the analyses;
3. folds each group's :class:`~polytrav.AnalysisResult` into the run through the analyses'
   own :meth:`~polytrav.Analysis.combine`, so a third-party analysis that implements it
   runs in parallel too;
4. optionally checkpoints: the pieces, the keys of the pieces done, their results and
   counters, written atomically (write, then rename) so a killed run resumes where it was.

Executors are plain :class:`concurrent.futures.Executor` objects: :func:`get_executor`
builds the serial one, a local process pool, or a Dask cluster's (``Client.get_executor``);
any other executor works too. A part whose worker dies is retried by Dask; a process pool
cannot retry, and the run then ends ``worker_lost`` (incomplete), never silently short.
"""
from __future__ import annotations

import hashlib
import math
import os
import pickle
import time
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from polytrav.vocabulary.errors import CheckpointError, ConfigError, PolytravError
from polytrav.vocabulary.threads import user_chose_threads
from polytrav.host.runner import pieces
from polytrav.host.stats import merge_traversal_stats, report_stats
from polytrav.solve.backend import SolveTally
from polytrav.traversal import Piece, TraversalStats, TraversalStatus

__all__ = ["get_executor", "process_pool", "SerialExecutor", "finished", "run_in_parts",
           "run_boxes", "fingerprint", "CHECKPOINT_FORMAT"]

#: Version of the checkpoint file layout (a different version is refused).
CHECKPOINT_FORMAT = 1


class SerialExecutor(Executor):
    """Runs each submitted call at once, in this process (the embedded default)."""

    def submit(self, fn, /, *args, **kwargs) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001  (delivered through the future)
            future.set_exception(exc)
        return future


def get_executor(workers: int | None = None, scheduler: str | None = None) -> Executor:
    """An executor for :func:`polytrav.analyze` and batches (``--workers``, ``--scheduler``).

    ``scheduler``: the address of a running Dask scheduler (``tcp://host:8786``); needs
    ``pip install "polytrav[dask]"``. Else ``workers``: ``None`` or 1, the serial executor;
    ``N > 1``, a pool of ``N`` local processes (started from a fork server that has
    imported polytrav once). Use it as a context manager to shut it down.
    """
    if scheduler is not None:
        try:
            from distributed import Client
        except ImportError as exc:
            raise ConfigError('a Dask scheduler needs Dask: pip install "polytrav[dask]"') from exc
        return _DaskExecutor(Client(scheduler))
    if workers is None or workers == 1:
        return SerialExecutor()
    return process_pool(workers)


def process_pool(workers: int) -> Executor:
    """A pool of ``workers`` local processes forked from a server that imported polytrav, each
    on one BLAS thread unless the user chose a count (:mod:`polytrav.vocabulary.threads`)."""
    if not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"workers must be a positive integer, got {workers!r}")
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    class Pool(ProcessPoolExecutor):
        """A process pool that says how many workers it has (:func:`n_workers`)."""

        def __init__(self, workers: int, mp_context):
            super().__init__(max_workers=workers, mp_context=mp_context,
                             initializer=_one_blas_thread)
            self.workers = workers

    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["polytrav", "polytrav.parallel"])
    return Pool(workers, ctx)


def _one_blas_thread() -> None:
    """In a pool worker: one BLAS thread, where the user chose no thread count (Dask's
    workers get the same from Dask itself)."""
    if not user_chose_threads():
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)


class _DaskExecutor(Executor):
    """``Client.get_executor()`` that also closes the client it opened on shutdown."""

    def __init__(self, client):
        self.client = client
        self._inner = client.get_executor()

    def submit(self, fn, /, *args, **kwargs) -> Future:
        return self._inner.submit(fn, *args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._inner.shutdown(wait=wait)
        self.client.close()


def n_workers(executor: Executor) -> int:
    """How many parts the executor runs at once: what an executor of :func:`get_executor`
    says; for any other, the CPU count (the default of ``concurrent.futures`` pools)."""
    if isinstance(executor, SerialExecutor):
        return 1
    if isinstance(getattr(executor, "workers", None), int):  # process_pool's
        return executor.workers
    if isinstance(executor, _DaskExecutor):  # one part per worker thread
        return max(1, sum(executor.client.nthreads().values()))
    return os.cpu_count() or 1


def finished(executor: Executor, next_task, window: int):
    """Run tasks with at most ``window`` in flight; yield ``(key, future)`` as each finishes.

    ``next_task()`` returns ``(key, fn, args)`` for the next task, or None when no more
    should start (it is asked again only after a task finished). Closing the generator
    cancels the tasks still waiting. One loop for parts of a run and for batches, so that
    budgets and early stops act between tasks the same way everywhere.
    """
    pending: dict[Future, Any] = {}
    try:
        while True:
            while len(pending) < window:
                task = next_task()
                if task is None:
                    break
                key, fn, args = task
                pending[executor.submit(fn, *args)] = key
            if not pending:
                return
            done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
            for fut in done:
                yield pending.pop(fut), fut
    finally:
        for fut in pending:
            fut.cancel()


# ---------------------------------------------------------------- identity of a run


def fingerprint(net, region, start, strategy: str, analyses) -> str:
    """SHA-256 of what determines a run's answer: weights, region, start, strategy, analyses.

    Stored in checkpoints; resuming with anything else is refused.
    """
    from polytrav.host.analysis import RUN_STATE

    h = hashlib.sha256()
    for W, b in zip(net.weights, net.biases):
        h.update(np.ascontiguousarray(W, float).tobytes())
        h.update(np.ascontiguousarray(b, float).tobytes())
    h.update(pickle.dumps(region))
    h.update(b"" if start is None else np.asarray(start, float).tobytes())
    h.update(strategy.encode())
    for a in analyses:
        params = {k: v for k, v in sorted(vars(a).items())
                  if not k.startswith("_") and k not in RUN_STATE}
        h.update(f"{type(a).__module__}.{type(a).__qualname__}".encode())
        h.update(pickle.dumps(params))
    return h.hexdigest()


# ---------------------------------------------------------------- one part, in a worker


@dataclass
class _Job:
    """What every part needs (pickled once per part)."""

    net: Any
    region: Any
    analyses: bytes  # the analyses before any run, pickled: every part gets fresh copies
    options: Any  # the run's RunOptions, made picklable (no executor, checkpoint, progress)


@dataclass
class _PartResult:
    keys: list[bytes]
    results: list
    status: TraversalStatus
    stats: dict
    decided: list[bool]
    seconds: float


def _run_part(job: _Job, chunk: list[Piece], max_polytopes, time_limit) -> _PartResult:
    """One :func:`polytrav.analyze` run within ``chunk`` (executed in a worker)."""
    from polytrav.host.runner import RunSession

    t0 = time.perf_counter()
    analyses = pickle.loads(job.analyses)
    options = job.options.replace(within=chunk, max_polytopes=max_polytopes,
                                  time_limit=time_limit)
    report = RunSession(options.solver).run(job.net, job.region, analyses, options)
    return _PartResult([p.key for p in chunk], report.results, report.status, report.stats,
                       [a.decided for a in analyses], time.perf_counter() - t0)


# ---------------------------------------------------------------- the run


@dataclass
class _State:
    """A run's progress: what a checkpoint holds."""

    fingerprint: str
    pieces: list[Piece]
    done: set = field(default_factory=set)
    parts: list = field(default_factory=list)  # per part: list of AnalysisResult
    stats: list = field(default_factory=list)  # per part: the part's stats dict
    enumeration: dict = field(default_factory=dict)  # the pieces listing's stats

    def save(self, path: Path) -> None:
        blob = {"format": CHECKPOINT_FORMAT, "fingerprint": self.fingerprint,
                "pieces": [(np.packbits(np.asarray(p.bits, bool)), p.bits.size, p.u, p.t)
                           for p in self.pieces],
                "done": sorted(self.done), "parts": self.parts, "stats": self.stats,
                "enumeration": self.enumeration}
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as fh:
            pickle.dump(blob, fh, protocol=pickle.HIGHEST_PROTOCOL)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: Path, expected: str) -> "_State":
        try:
            with open(path, "rb") as fh:
                blob = pickle.load(fh)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError) as exc:
            raise CheckpointError(f"checkpoint {str(path)!r} cannot be read: {exc}") from exc
        if not isinstance(blob, dict) or blob.get("format") != CHECKPOINT_FORMAT:
            raise CheckpointError(f"checkpoint {str(path)!r} is not a polytrav checkpoint of "
                                  f"format {CHECKPOINT_FORMAT}")
        if blob["fingerprint"] != expected:
            raise CheckpointError(
                f"checkpoint {str(path)!r} belongs to another run: it was written for inputs "
                f"with fingerprint {blob['fingerprint'][:12]}, this run's (network, region, "
                f"start, strategy, analyses) is {expected[:12]}")
        found = [Piece(np.unpackbits(bits)[:n].astype(bool), u, t)
                 for bits, n, u, t in blob["pieces"]]
        return cls(expected, found, set(blob["done"]), blob["parts"], blob["stats"],
                   blob["enumeration"])


class MergedTraversal:
    """The traversal of a run in parts as :meth:`Analysis.combine` sees it through its
    context (a :class:`~polytrav.host.views.TraversalView`): the merged status and counts."""

    within = None  # the parts together cover the region

    def __init__(self, frame, start_u, status: TraversalStatus, stats: TraversalStats):
        self.frame, self.start_u, self.status, self.stats = frame, start_u, status, stats

    @property
    def complete(self) -> bool:
        return self.status is TraversalStatus.COMPLETE

    def time_left(self) -> float | None:
        return None  # the parts are done: nothing is left to spend


def _chunks(todo: list[Piece], n_parts: int) -> list[list[Piece]]:
    size = max(1, math.ceil(len(todo) / max(n_parts, 1)))
    return [todo[i:i + size] for i in range(0, len(todo), size)]


def run_in_parts(net, region, analyses, options, session):
    """:func:`polytrav.analyze` in parts (see the module doc): ``options`` its
    :class:`~polytrav.host.options.RunOptions`, ``session`` its
    :class:`~polytrav.host.runner.RunSession`; returns its Report."""
    from polytrav.host.runner import SUBPROBLEM_STATS, Report, RunContext

    t0 = time.perf_counter()
    start, strategy, chains = options.start, options.strategy, session.chains
    max_polytopes, time_limit = options.max_polytopes, options.time_limit
    checkpoint, parts, progress = options.checkpoint, options.parts, options.progress
    missing = [a.label for a in analyses if not a.combinable]
    if missing:
        raise ConfigError(f"analyses {missing} do not implement combine(), so they cannot run "
                          "in parallel or with checkpoints; run them without an executor or "
                          "checkpoint")
    executor = options.executor or SerialExecutor()
    workers = n_workers(executor)
    path = None if checkpoint is None else Path(checkpoint)
    fp = fingerprint(net, region, start, strategy, analyses)
    lp_chain = chains["lp"]
    listing = None
    if path is not None and options.resume and path.exists():
        state = _State.load(path, fp)
    else:
        if path is not None and path.exists() and not options.resume:
            raise CheckpointError(f"checkpoint {str(path)!r} exists; pass resume=True to "
                                  "continue it or remove it to start over")
        listing = pieces(net, region, start, strategy=strategy, solver=lp_chain[0],
                         time_limit=time_limit, fallback=lp_chain[1:])
        found = list(listing)
        state = _State(fp, found, enumeration=listing.stats.to_dict())
    enum_status = TraversalStatus.COMPLETE if listing is None else listing.status
    job = _Job(net, region, pickle.dumps(analyses),
               options.replace(solver=_picklable_solver(options.solver), executor=None,
                               checkpoint=None, resume=False, progress=None))
    todo = [p for p in state.pieces if p.key not in state.done]
    queue = _chunks(todo, parts or 8 * workers)
    status = enum_status if enum_status is not TraversalStatus.COMPLETE else None
    polytopes = sum(s.get("polytopes", 0) for s in state.stats)
    lost: list[str] = []
    last_save = time.perf_counter()

    def next_part():
        """The next part to start, or None when none should (a budget spent, a stop)."""
        nonlocal status
        if not queue or status is not None:
            return None
        left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
        room = None if max_polytopes is None else max_polytopes - polytopes
        if left is not None and left <= 0:
            status = TraversalStatus.TIME_LIMIT
            return None
        if room is not None and room <= 0:
            status = TraversalStatus.POLYTOPE_LIMIT
            return None
        chunk = queue.pop(0)
        return chunk, _run_part, (job, chunk, room, left)

    try:
        for chunk, fut in finished(executor, next_part, 2 * workers):
            try:
                part = fut.result()
            except PolytravError:
                raise
            except Exception as exc:  # noqa: BLE001  a dead worker, a broken pool
                lost.append(f"part of {len(chunk)} pieces: {type(exc).__name__}: {exc}")
                status = status or TraversalStatus.WORKER_LOST
                continue
            state.parts.append(part.results)
            state.stats.append(dict(part.stats, part_seconds=part.seconds,
                                    part_pieces=len(chunk)))
            polytopes += part.stats.get("polytopes", 0)
            if part.status is TraversalStatus.COMPLETE:
                state.done.update(part.keys)
            elif part.status is TraversalStatus.STOPPED and all(part.decided):
                status = status or TraversalStatus.STOPPED  # decided: no more parts needed
            else:
                status = status or part.status
            if progress is not None:
                lps = sum(st.get("lps", 0) for st in state.stats)
                progress(PartsProgress(polytopes, lps, len(state.done), len(state.pieces)))
            if path is not None and time.perf_counter() - last_save >= options.checkpoint_every:
                state.save(path)
                last_save = time.perf_counter()
    except KeyboardInterrupt:  # the parts done so far stay (and are saved below)
        if options.on_interrupt == "raise":
            raise
        status = TraversalStatus.INTERRUPTED
    finally:
        if path is not None:
            state.save(path)

    if status is None:
        status = TraversalStatus.COMPLETE
    stats = merge_traversal_stats([state.enumeration] + state.stats, net.n_hidden_layers)
    stats.pieces[0] = sum(s["pieces"][0] for s in state.stats) if state.stats else 0
    stats.failures += lost
    frame = _frame_of(net, region)
    merged = MergedTraversal(frame, None if start is None else frame.to_u(np.asarray(start, float)),
                     status, stats)
    context = RunContext(net, region, chains, session.pm)
    context.attach(merged)
    results = [a.combine([p[i] for p in state.parts], context) for i, a in enumerate(analyses)]
    out = report_stats(
        stats.to_dict(),
        proven_pieces=[p for s in state.stats for p in s.get("proven_pieces", [])],
        subproblems={key: sum(s.get(key, 0) for s in state.stats) for key in SUBPROBLEM_STATS},
        solves=SolveTally.merge(s.get("solves", {}) for s in state.stats),
        parts=len(state.parts), workers=workers, pieces_total=len(state.pieces),
        pieces_done=len(state.done), lost_parts=len(lost),
        part_seconds=[s.get("part_seconds") for s in state.stats],
        part_pieces=[s.get("part_pieces") for s in state.stats],
        enumeration_seconds=state.enumeration.get("total_time", 0.0))
    return Report(results=results, status=status, stats=out, time=time.perf_counter() - t0,
                  solver={form: [b.name for b in chain] for form, chain in chains.items()},
                  network=net, analyses=list(analyses))


def _run_box(job: _Job, box, max_polytopes, time_limit):
    """One open box's run (executed in a worker): its Report, without the network, the
    analyses and polytopes (the caller has them)."""
    import dataclasses

    from polytrav.host.runner import RunSession
    from polytrav.model.region import Box

    options = job.options.replace(start=box.start, max_polytopes=max_polytopes,
                                  time_limit=time_limit)
    report = RunSession(options.solver).run(job.net, Box(box.lower, box.upper),
                                            pickle.loads(job.analyses), options)
    return dataclasses.replace(report, network=None, analyses=[], polytopes=None)


def run_boxes(net, boxes, analysis, options, end: float | None, used: int = 0):
    """The open boxes of a settle stage (:class:`~polytrav.vocabulary.settled.OpenBox`) as
    parts on ``options.executor``, each a run of its own (serial within its worker, from its
    start point, with fresh copies of ``analysis``), at most two per worker in flight.

    As the boxes run one by one (:mod:`polytrav.host.settling`): no box starts once the
    time (``end``, a :func:`time.perf_counter` deadline, None: none) or the polytopes
    (``options.max_polytopes``, ``used`` spent already) are spent, nor once a box's run is
    partial or finds a confirmed violation; a box stopped undecided (a refused witness) lets
    the rest go on. Returns the ``(box, report)`` pairs that ran, in the boxes' order, and
    the status: COMPLETE, the first budget or stop met, WORKER_LOST where a worker died
    (its box is missing), INTERRUPTED on Ctrl-C with ``on_interrupt="report"``."""
    from polytrav.vocabulary.results import Verdict

    executor = options.executor
    job = _Job(net, None, pickle.dumps([analysis]),
               options.replace(solver=_picklable_solver(options.solver), executor=None,
                               checkpoint=None, resume=False, progress=None, deadline=None,
                               settle=False))
    queue = list(enumerate(boxes))
    ran: list = []
    status, stopped, violated = TraversalStatus.COMPLETE, False, False

    def next_box():
        nonlocal status, stopped
        if not queue or stopped:
            return None
        left = None if end is None else end - time.perf_counter()
        room = None if options.max_polytopes is None else options.max_polytopes - used
        if (left is not None and left <= 0) or (room is not None and room <= 0):
            status = TraversalStatus.TIME_LIMIT if left is not None and left <= 0 \
                else TraversalStatus.POLYTOPE_LIMIT
            stopped = True
            return None
        k, box = queue.pop(0)
        return k, _run_box, (job, box, room, left)

    try:
        for k, fut in finished(executor, next_box, 2 * n_workers(executor)):
            try:
                report = fut.result()
            except PolytravError:
                raise
            except Exception:  # noqa: BLE001  a dead worker: the run is incomplete
                status, stopped = TraversalStatus.WORKER_LOST, True
                continue
            ran.append((k, report))
            used += report.stats["polytopes"]
            if report[0].verdict is Verdict.VIOLATED:  # the answer: no box starts after it
                status = status if violated else report.status
                violated = stopped = True
            elif report.partial:  # a budget or Ctrl-C: no box starts after it
                if not violated and status in (TraversalStatus.COMPLETE,
                                               TraversalStatus.STOPPED):
                    status = report.status
                stopped = True
            elif report.status is not TraversalStatus.COMPLETE \
                    and status is TraversalStatus.COMPLETE:
                status = report.status  # stopped undecided: the rest goes on
    except KeyboardInterrupt:
        if options.on_interrupt == "raise":
            raise
        status = TraversalStatus.INTERRUPTED
    return [(boxes[k], report) for k, report in sorted(ran, key=lambda kr: kr[0])], status


@dataclass
class PartsProgress:
    """What a progress callback of a run in parts receives after each part (a
    :class:`~polytrav.host.views.ProgressView`, as a serial run's traversal is)."""

    polytopes: int
    lps: int
    pieces_done: int
    pieces_total: int

    @property
    def stats(self):  # the counts a serial run's progress reads from traversal.stats
        return self


def _frame_of(net, region):
    from polytrav.model.geometry import build_frame

    return build_frame(region, net.n_inputs)


def _picklable_solver(solver):
    """The solver argument as names where possible (backend objects become their names)."""
    from polytrav.solve.backend import SolverBackend

    if isinstance(solver, SolverBackend):
        return solver.name
    if isinstance(solver, dict):
        return {k: _picklable_solver(v) for k, v in solver.items()}
    if isinstance(solver, (list, tuple)):
        return [_picklable_solver(v) for v in solver]
    return solver
