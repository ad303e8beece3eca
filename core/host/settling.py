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
  violation; the analysis's :meth:`~polytrav.Analysis.combine` merges their results with
  the proven rest's (an exact part: ``begin`` and ``finish`` on a complete view).

``Report.stats["settle"]`` says what the stage found (``Settled.summary``, its seconds, its
solves); its proven boxes count in :func:`~polytrav.host.analysis.pieces_proven`.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

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


def run_settled(session, net, region, analysis: Analysis, options: RunOptions, t0: float,
                t1: float):
    """The run of ``analysis`` with its settle stage (``t0``, ``t1``: the run's start and the
    start of its work; ``options.time_limit`` counts from ``t1``): its
    :class:`~polytrav.Report`, or None when ``settle`` returned None (no stage: the caller
    runs as usual)."""
    end = None if options.time_limit is None else t1 + options.time_limit
    context = _context(session, net, region, end)
    view = context.traversal
    tally = SolveTally()
    t_stage = time.perf_counter()
    try:
        with counting(tally):
            settled = analysis.settle(context)
    except KeyboardInterrupt:
        if options.on_interrupt == "raise":
            raise
        view.status = TraversalStatus.INTERRUPTED
        return _finished(session, net, analysis, context, options, t0, t1, None)
    if settled is None:
        return None
    if not isinstance(settled, Settled):
        raise PluginError(f"analysis {analysis.name!r} ({type(analysis).__name__}): settle() "
                          f"returned {type(settled).__name__}, not a polytrav Settled or None",
                          plugin=analysis.name)
    if settled.boxes and not analysis.combinable:
        raise PluginError(f"analysis {analysis.name!r} ({type(analysis).__name__}): settle() "
                          "left boxes open, whose runs combine() merges; implement combine() "
                          "or leave the whole region open", plugin=analysis.name)
    context.settled = settled
    stage = dict(settled.summary(), seconds=time.perf_counter() - t_stage, solves=tally.to_dict())
    if settled.decided:
        view.status = (TraversalStatus.COMPLETE if settled.outcome is Settlement.PROVEN
                       else TraversalStatus.STOPPED)
        return _finished(session, net, analysis, context, options, t0, t1, stage)
    if not settled.boxes:  # the whole region, from the stage's start point
        start = settled.point if options.start is None else options.start
        report = session.run(net, region, [analysis], _inner(options, end, start))
        return dataclasses.replace(report, stats={**report.stats, "settle": stage},
                                   time=time.perf_counter() - t1, setup_time=t1 - t0)
    return _boxes(session, net, region, analysis, context, settled, options, t0, t1, end, stage)


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


def _finished(session, net, analysis, context, options, t0, t1, stage):
    """The report of a run with no traversal: ``begin`` and ``finish`` on the stage's view
    (complete, stopped or interrupted), the run hooks around them."""
    from polytrav.host.runner import Report

    result = _part(session, analysis, context)
    stats = report_stats(context.traversal.stats.to_dict(), proven_pieces=[],
                         subproblems=context.subproblem_stats(), settle=stage)
    return Report(results=[result], status=context.traversal.status, stats=stats,
                  time=time.perf_counter() - t1, solver=_names(session), setup_time=t1 - t0,
                  polytopes=[] if options.keep_polytopes else None, network=net,
                  analyses=[analysis])


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


def _boxes(session, net, region, analysis, context, settled, options, t0, t1, end, stage):
    """The open boxes' runs, in order, merged with the proven rest by ``combine``."""
    from polytrav.host.runner import Report

    parts = []
    if settled.proven_boxes:  # the proven rest: an exact part
        context.traversal.status = TraversalStatus.COMPLETE
        parts.append(_part(session, analysis, context, hooks=False))
    reports, status, polytopes = [], TraversalStatus.COMPLETE, 0
    for box in settled.boxes:
        left = None if end is None else end - time.perf_counter()
        room = None if options.max_polytopes is None else options.max_polytopes - polytopes
        if left is not None and left <= 0:
            status = TraversalStatus.TIME_LIMIT
            break
        if room is not None and room <= 0:
            status = TraversalStatus.POLYTOPE_LIMIT
            break
        report = session.run(net, Box(box.lower, box.upper), [analysis],
                             _inner(options, end, box.start, max_polytopes=room))
        reports.append(report)
        parts.append(report[0])
        polytopes += report.stats["polytopes"]
        if report.partial or report[0].verdict is Verdict.VIOLATED:
            status = report.status  # a budget, Ctrl-C, or a confirmed violation: no more
            break
        if report.status is not TraversalStatus.COMPLETE and status is TraversalStatus.COMPLETE:
            status = report.status  # stopped undecided (a refused witness): the rest goes on
    traversal = _merged(reports, settled.boxes, region, net)
    merged = _context(session, net, region, None)
    merged.traversal.status, merged.traversal.stats = status, traversal
    merged.settled = settled
    result = analysis.combine(parts, merged)
    stats = report_stats(
        traversal.to_dict(), proven_pieces=[p for r in reports for p in r.stats["proven_pieces"]],
        subproblems={k: sum(r.stats[k] for r in reports) for k in _subproblem_keys()},
        solves=SolveTally.merge(r.stats["solves"] for r in reports),
        parts=sum(r.stats["parts"] for r in reports),
        workers=max((r.stats["workers"] for r in reports), default=1),
        lost_parts=sum(r.stats["lost_parts"] for r in reports),
        part_seconds=[s for r in reports for s in r.stats["part_seconds"]],
        part_pieces=[s for r in reports for s in r.stats["part_pieces"]],
        enumeration_seconds=sum(r.stats["enumeration_seconds"] for r in reports),
        settle=dict(stage, boxes_run=len(reports)))
    kept = ([p for r in reports for p in (r.polytopes or ())] if options.keep_polytopes
            else None)
    return Report(results=[result], status=status, stats=stats, time=time.perf_counter() - t1,
                  solver=_names(session), setup_time=t1 - t0, polytopes=kept, network=net,
                  analyses=[analysis])


def _merged(reports, boxes, region, net) -> TraversalStats:
    """The boxes' traversal counters added up; the proven volume share as a share of the
    region's (each box's share weighted by its volume; free inputs only)."""
    stats = merge_traversal_stats((r.stats for r in reports), net.n_hidden_layers)
    lo, hi = (np.asarray(a, float) for a in region.bounding_box())
    free = hi > lo
    total = float(np.prod(hi[free] - lo[free]))
    stats.proven_volume_share = sum(
        r.stats["proven_volume_share"] * float(np.prod((b.upper - b.lower)[free])) / total
        for r, b in zip(reports, boxes)) if total > 0 else 0.0
    return stats


def _names(session) -> dict[str, list[str]]:
    return {form: [b.name for b in chain] for form, chain in session.chains.items()}


def _subproblem_keys():
    from polytrav.host.runner import SUBPROBLEM_STATS

    return SUBPROBLEM_STATS
