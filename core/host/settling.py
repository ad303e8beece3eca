"""A run's settle stage: its analysis decides the region, or what is left of it, first.

:meth:`RunSession.run <polytrav.host.runner.RunSession.run>` calls :func:`run_settled` before
the traversal when the stage :func:`applies`: the run's only analysis implements
:meth:`~polytrav.Analysis.settle`, no plugin visits polytopes, and the run covers its
region (not a part of a run in parts, not checkpointed: a resumed run must traverse the
region it saved). Several analyses skip it: a box one of them proves may hold polytopes
another needs, and so may a box a plugin asked to see. The stage runs on the run's clock
(``time_limit`` and ``deadline`` cover it) with a :class:`~polytrav.host.runner.RunContext`
before any traversal (:class:`StageView`); its :class:`~polytrav.vocabulary.settled.Settled`
then says what the run does:

* PROVEN or VIOLATED: no traversal; the analysis's ``begin`` and ``finish`` run on a view of
  a complete (PROVEN) or stopped (VIOLATED: the analysis recorded its point) run;
* OPEN, the whole region: the run's traversal, from the stage's start point (the user's
  ``start`` wins);
* OPEN, boxes: each box is a run of its own (its traversal, from the box's start point,
  with the time and polytopes left), in order, until one is partial or finds a confirmed
  violation; with an executor (``analyze(..., executor=)``) and several boxes, the boxes are
  the parts, run on it as they run in turn (:func:`polytrav.parallel.run_boxes`); the
  analysis's :meth:`~polytrav.Analysis.combine` merges their results with the proven
  rest's (an exact part: ``begin`` and ``finish`` on a complete view);
* PROBE, boxes: a second round. Each box is a run of its own, in order, for the stage's
  ``seconds`` at most, until one does not hold; their results go to ``settle`` again
  (``context.probed``), whose answer is one of the above (or another round). A probe run
  that holds is an exact part of the answer (merged with the proven rest and the open
  boxes' runs; a whole-region traversal or a VIOLATED answer covers it instead); a probe run
  that finds a confirmed violation ends the run (the answer: the probe runs that held and
  it, merged); any other counts only as work (``stats["settle"]["probes"]``).

The stage never runs a traversal itself: the host runs every box it names, so the data flows
host -> bounds only. ``Report.stats["settle"]`` says what the stage found
(``Settled.summary``, its seconds, its solves, its probe runs); its proven boxes count in
:func:`~polytrav.host.analysis.pieces_proven`.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from polytrav.host.analysis import Analysis
from polytrav.host.options import RunOptions
from polytrav.host.stats import merge_traversal_stats, report_stats
from polytrav.model.geometry import build_frame
from polytrav.model.region import Box
from polytrav.solve.backend import SolveTally, counting
from polytrav.traversal import TraversalStats, TraversalStatus
from polytrav.vocabulary.errors import PluginError
from polytrav.vocabulary.results import AnalysisResult, Verdict
from polytrav.vocabulary.settled import Settled, Settlement

__all__ = ["applies", "run_settled", "StageView"]


class StageView:
    """The run's traversal as its context reads it where no traversal ran: during the stage,
    for a run the stage decided, and for the merge of its boxes' runs (a
    :class:`~polytrav.host.views.TraversalView`). ``end``: the run's end
    (:func:`time.perf_counter`), None without a time budget."""

    within = None
    start_u = None

    def __init__(self, frame, stats: TraversalStats, end: float | None = None,
                 status: TraversalStatus = TraversalStatus.RUNNING):
        self.frame, self.stats, self.status, self._end = frame, stats, status, end

    @property
    def complete(self) -> bool:
        return self.status is TraversalStatus.COMPLETE

    def time_left(self) -> float | None:
        return None if self._end is None else self._end - time.perf_counter()


def applies(items: Sequence[Analysis], pm, options: RunOptions) -> bool:
    """Whether a run of ``items`` with ``options`` has a settle stage (see the module doc)."""
    return (options.within is None and options.checkpoint is None and len(items) == 1
            and items[0].settles and not pm.hook.polytrav_visit_polytope.get_hookimpls())


@dataclass
class _Run:
    """What the steps of one run with a settle stage share: the session, the network, the
    region, the analysis, the options, the run's start (``t0``), the start of its work
    (``t1``), its end (``end``: a :func:`time.perf_counter` deadline, None without a time
    budget) and its context before any traversal."""

    session: Any
    net: Any
    region: Any
    analysis: Analysis
    options: RunOptions
    t0: float
    t1: float
    end: float | None
    context: Any

    def box(self, box, stop: float | None, room: int | None):
        """The run of one box (from its start, by ``stop``, at most ``room`` polytopes)."""
        return self.session.run(self.net, Box(box.lower, box.upper), [self.analysis],
                                _inner(self.options, stop, box.start, max_polytopes=room))

    def room(self, reports) -> int | None:
        """The polytopes the run has left after the runs of ``reports`` (None: no budget)."""
        if self.options.max_polytopes is None:
            return None
        return self.options.max_polytopes - sum(r.stats["polytopes"] for r in reports)

    def report(self, result, status, stats, polytopes=None):
        """The run's :class:`~polytrav.Report`, with ``result``, ``status`` and ``stats``."""
        from polytrav.host.runner import Report

        return Report(results=[result], status=status, stats=stats,
                      time=time.perf_counter() - self.t1, solver=_names(self.session),
                      setup_time=self.t1 - self.t0, polytopes=polytopes, network=self.net,
                      analyses=[self.analysis])


def run_settled(session, net, region, analysis: Analysis, options: RunOptions, t0: float,
                t1: float):
    """The run of ``analysis`` with its settle stage (``t0``, ``t1``: the run's start and the
    start of its work; ``options.time_limit`` counts from ``t1``): its
    :class:`~polytrav.Report`, or None when ``settle`` returned None (no stage: the caller
    runs as usual)."""
    end = None if options.time_limit is None else t1 + options.time_limit
    run = _Run(session, net, region, analysis, options, t0, t1, end,
               _context(session, net, region, end))
    tally = SolveTally()
    t_stage = time.perf_counter()
    probes: list = []  # the probe rounds' runs: (OpenBox, Report), in order
    try:
        with counting(tally):
            settled = _settle(analysis, run.context, first=True)
        while settled is not None and settled.outcome is Settlement.PROBE:
            first = len(probes)
            ended = _probe(run, settled, probes)
            if ended is not None:  # a confirmed violation or Ctrl-C: the probes answer
                stage = dict(settled.summary(), seconds=time.perf_counter() - t_stage,
                             solves=tally.to_dict(), probes=_probe_stats(probes))
                return _in_parts(run, settled, stage, probes, status=ended)
            run.context.probed = [r[0] for _, r in probes[first:]]
            with counting(tally):
                settled = _settle(analysis, run.context, first=False)
    except KeyboardInterrupt:
        if options.on_interrupt == "raise":
            raise
        run.context.traversal.status = TraversalStatus.INTERRUPTED
        return _finished(run, None)
    if settled is None:
        return None
    run.context.settled = settled
    stage = dict(settled.summary(), seconds=time.perf_counter() - t_stage, solves=tally.to_dict())
    if probes:
        stage["probes"] = _probe_stats(probes)
    held = any(_holds(r) for _, r in probes)
    if settled.outcome is Settlement.VIOLATED or (settled.decided and not held):
        run.context.traversal.status = (TraversalStatus.COMPLETE
                                        if settled.outcome is Settlement.PROVEN
                                        else TraversalStatus.STOPPED)
        return _finished(run, stage)
    if not settled.boxes and not settled.decided:  # the whole region, from the start point
        start = settled.point if options.start is None else options.start
        report = session.run(net, region, [analysis], _inner(
            options, end, start, max_polytopes=run.room([r for _, r in probes])))
        return dataclasses.replace(report, stats={**report.stats, "settle": stage},
                                   time=time.perf_counter() - t1, setup_time=t1 - t0)
    return _in_parts(run, settled, stage, probes)


def _settle(analysis, context, first: bool):
    """``analysis.settle(context)``, checked: a Settled (or None in the first round)."""
    settled = analysis.settle(context)
    if settled is None and first:
        return None
    if not isinstance(settled, Settled):
        raise PluginError(f"analysis {analysis.name!r} ({type(analysis).__name__}): settle() "
                          f"returned {type(settled).__name__}, not a polytrav Settled"
                          f"{' or None' if first else ' (in a second round)'}",
                          plugin=analysis.name)
    if (settled.boxes or not first) and not analysis.combinable:
        raise PluginError(f"analysis {analysis.name!r} ({type(analysis).__name__}): settle() "
                          "left boxes open or to probe, whose runs combine() merges; implement "
                          "combine() or leave the whole region open", plugin=analysis.name)
    return settled


def _probe(run: _Run, settled, probes) -> TraversalStatus | None:
    """A probe round: ``settled.boxes`` run in turn (each from its start, by the round's and
    the run's end, with the polytopes left) until one does not hold; each run joins
    ``probes``. The status that ends the whole run (a confirmed violation: its run's; Ctrl-C:
    interrupted), or None (the stage settles again)."""
    stop = run.end
    if settled.seconds is not None:
        stop = time.perf_counter() + settled.seconds if run.end is None else \
            min(run.end, time.perf_counter() + settled.seconds)
    for box in settled.boxes:
        room = run.room([r for _, r in probes])
        if (stop is not None and time.perf_counter() >= stop) or (room is not None
                                                                  and room <= 0):
            break
        report = run.box(box, stop, room)
        probes.append((box, report))
        if report[0].verdict is Verdict.VIOLATED:
            return report.status
        if report.status is TraversalStatus.INTERRUPTED:
            return report.status
        if not _holds(report):
            break
    return None


def _holds(report) -> bool:
    """Whether a probe run proved its box: complete, and its answer HOLDS."""
    return report.status is TraversalStatus.COMPLETE and report[0].verdict is Verdict.HOLDS


def _probe_stats(probes, parts=()) -> dict:
    """The probe rounds as ``stats["settle"]["probes"]``: boxes run, of them held, and the
    polytopes, LPs and analysis solves of those that are no part of the answer (which count
    only as work; ``parts``: the reports that are)."""
    dropped = [r for _, r in probes if not any(r is p for p in parts)]
    return {"runs": len(probes), "held": sum(_holds(r) for _, r in probes),
            "polytopes": sum(r.stats["polytopes"] for r in dropped),
            "lps": sum(r.stats["lps"] for r in dropped),
            "solves": sum(r[0].n_solves for r in dropped)}


def _context(session, net, region, end):
    """A :class:`~polytrav.host.runner.RunContext` of the run before any traversal."""
    from polytrav.host.runner import RunContext

    context = RunContext(net, region, session.chains, session.pm)
    levels = net.n_hidden_layers
    context.attach(StageView(build_frame(region, net.n_inputs),
                             TraversalStats(pieces=[0] * levels, proven=[0] * levels), end))
    return context


def _inner(options: RunOptions, end: float | None, start, **changes) -> RunOptions:
    """The options of a traversal after the stage: no stage, ``start``, the run's end."""
    return options.replace(settle=False, start=start, time_limit=None, deadline=end, **changes)


def _finished(run: _Run, stage):
    """The report of a run with no traversal: ``begin`` and ``finish`` on the stage's view
    (complete, stopped or interrupted), the run hooks around them."""
    context = run.context
    result = _part(run.session, run.analysis, context)
    stats = report_stats(context.traversal.stats.to_dict(), proven_pieces=[],
                         subproblems=context.subproblem_stats(), settle=stage)
    return run.report(result, context.traversal.status, stats,
                      polytopes=[] if run.options.keep_polytopes else None)


def _part(session, analysis, context, hooks: bool = True) -> AnalysisResult:
    """The analysis's result on ``context`` with no polytope visited (with ``hooks``, the run
    hooks around: a run the stage decided; not for the proven rest, a part of a run)."""
    analysis.begin_run(context)
    if hooks:
        session.pm.hook.polytrav_begin_run(context=context)
    result = analysis.end_run(context)
    if hooks:
        session.pm.hook.polytrav_end_run(context=context)
    if not isinstance(result, AnalysisResult):
        raise PluginError(f"analysis {analysis.name!r} ({type(analysis).__name__}): finish() "
                          f"returned {type(result).__name__}, not a polytrav.AnalysisResult",
                          plugin=analysis.name)
    return result


def _in_parts(run: _Run, settled, stage, probes, status: TraversalStatus | None = None):
    """The run's answer in parts, merged by ``combine``: the proven rest (an exact part), the
    probe runs that held, then the open boxes' runs (:func:`_open_boxes`); or, where a probe
    run ended the run (``status``: its status), that run instead of the open boxes."""
    parts = []
    if settled.proven_boxes:  # the proven rest: an exact part
        run.context.traversal.status = TraversalStatus.COMPLETE
        parts.append(_part(run.session, run.analysis, run.context, hooks=False))
    kept = [(b, r) for b, r in probes if _holds(r)] + (probes[-1:] if status else [])
    boxes_run = 0
    if status is None:
        ran, status = _open_boxes(run, settled.boxes, [r for _, r in probes])
        kept += ran
        boxes_run = len(ran)
    parts += [r[0] for _, r in kept]
    if probes:
        stage = dict(stage, probes=_probe_stats(probes, [r for _, r in kept]))
    return _merged_report(run, settled, parts, kept, status,
                          dict(stage, boxes_run=boxes_run))


def _open_boxes(run: _Run, boxes, before) -> tuple[list, TraversalStatus]:
    """The open boxes' runs, ``(box, report)`` in order, and the status they leave: as parts
    on the run's executor (:func:`polytrav.parallel.run_boxes`) where it has one and there
    are several boxes, else one after the other (``before``: the probe runs, whose
    polytopes count against the budget), until one is partial or finds a confirmed
    violation; one stopped undecided (a refused witness) lets the rest go on."""
    if run.options.executor is not None and len(boxes) > 1:
        from polytrav.parallel import run_boxes

        return run_boxes(run.net, boxes, run.analysis, run.options, run.end,
                         used=sum(r.stats["polytopes"] for r in before))
    ran, reports = [], list(before)
    status = TraversalStatus.COMPLETE
    for box in boxes:
        left = None if run.end is None else run.end - time.perf_counter()
        room = run.room(reports)
        if left is not None and left <= 0:
            return ran, TraversalStatus.TIME_LIMIT
        if room is not None and room <= 0:
            return ran, TraversalStatus.POLYTOPE_LIMIT
        report = run.box(box, run.end, room)
        reports.append(report)
        ran.append((box, report))
        if report.partial or report[0].verdict is Verdict.VIOLATED:
            return ran, report.status  # a budget, Ctrl-C, or a confirmed violation: no more
        if report.status is not TraversalStatus.COMPLETE \
                and status is TraversalStatus.COMPLETE:
            status = report.status  # stopped undecided (a refused witness): the rest goes on
    return ran, status


def _merged_report(run: _Run, settled, parts, kept, status, stage):
    """The report of a run in parts: ``combine`` of the ``parts``' results on a merged view
    (``kept``: the ``(box, report)`` runs of the answer), their stats added up."""
    done = [r for _, r in kept]
    traversal = _merged(done, kept, run.region, run.net)
    merged = _context(run.session, run.net, run.region, None)
    merged.traversal.status, merged.traversal.stats = status, traversal
    merged.settled = settled
    result = run.analysis.combine(parts, merged)
    stats = report_stats(
        traversal.to_dict(), proven_pieces=[p for r in done for p in r.stats["proven_pieces"]],
        subproblems={k: sum(r.stats[k] for r in done) for k in _subproblem_keys()},
        solves=SolveTally.merge(r.stats["solves"] for r in done),
        parts=sum(r.stats["parts"] for r in done),
        workers=max((r.stats["workers"] for r in done), default=1),
        lost_parts=sum(r.stats["lost_parts"] for r in done),
        part_seconds=[s for r in done for s in r.stats["part_seconds"]],
        part_pieces=[s for r in done for s in r.stats["part_pieces"]],
        enumeration_seconds=sum(r.stats["enumeration_seconds"] for r in done), settle=stage)
    polytopes = ([p for r in done for p in (r.polytopes or ())]
                 if run.options.keep_polytopes else None)
    return run.report(result, status, stats, polytopes=polytopes)


def _merged(reports, parts, region, net) -> TraversalStats:
    """The runs' traversal counters added up; the proven volume share as a share of the
    region's (each part's share weighted by its box's volume; free inputs only; ``parts``:
    the runs' ``(OpenBox, Report)`` pairs)."""
    stats = merge_traversal_stats((r.stats for r in reports), net.n_hidden_layers)
    lo, hi = (np.asarray(a, float) for a in region.bounding_box())
    free = hi > lo
    total = float(np.prod(hi[free] - lo[free]))
    stats.proven_volume_share = sum(
        r.stats["proven_volume_share"] * float(np.prod((b.upper - b.lower)[free])) / total
        for b, r in parts) if total > 0 else 0.0
    return stats


def _names(session) -> dict[str, list[str]]:
    return {form: [b.name for b in chain] for form, chain in session.chains.items()}


def _subproblem_keys():
    from polytrav.host.runner import SUBPROBLEM_STATS

    return SUBPROBLEM_STATS
