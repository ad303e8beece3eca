"""``diff``'s ε verdict on a box in parts, on the caller's executor (issue 62).

:func:`polytrav.diff` with ``verdict_only=True``, a :class:`~polytrav.Box` and ``executor=``
(a :class:`concurrent.futures.Executor`, e.g. a ``ProcessPoolExecutor``): the box is first
bisected worst bound first (:func:`~polytrav.bounds.split.split_box`, the rows
``±(g_j - f_j) >= epsilon`` as the run's own split has them, ``parts - 1`` boxes bounded);
the sub-boxes it proves are done, and each one it leaves open is one part, a serial
``diff(..., verdict_only=True)`` of its own on the executor, all of them with the run's
deadline. The verdict is the parts': VIOLATED as soon as one part is (with its checked
point; the parts not started are cancelled), HOLDS when every part holds, else the first
undecided part's (UNKNOWN, or VIOLATED_UNCONFIRMED). The counts (polytopes, LPs, the
split's boxes) are the sums over the parts; the extremes are the largest over them (those of
the visited polytopes, as in any ``verdict_only`` run).
"""
from __future__ import annotations

import dataclasses
import time
from concurrent.futures import FIRST_COMPLETED, wait

import numpy as np

from polytrav.vocabulary.results import Verdict

__all__ = ["diff_in_parts", "PARTS"]

#: Parts per run by default: a few per worker, so that a hard corner of the box does not
#: leave the other workers idle.
PARTS = 8


def diff_in_parts(f, g, box, *, outputs, epsilon: float, executor, parts: int | None,
                  solver, time_limit: float | None):
    """The :class:`~polytrav.host.diff.DiffResult` of ``diff(f, g, box, outputs=outputs,
    epsilon=epsilon, verdict_only=True, ...)`` decided in parts on ``executor`` (see the
    module). ``parts``: the most parts (default :data:`PARTS`); fewer where the first
    bisection proves some sub-boxes, and one (a serial run) where it decides the box."""
    from polytrav.bounds.settle import band_pairs
    from polytrav.bounds.split import split_box
    from polytrav.host.diff import diff, joint_network
    from polytrav.host.runner import RunSession

    t0 = time.perf_counter()
    deadline = None if time_limit is None else time.time() + time_limit
    joint = joint_network(f, g)
    m = f.n_outputs
    outs = list(range(m)) if outputs is None else [int(j) for j in np.atleast_1d(outputs)]
    rows = np.zeros((len(outs), 2 * m))
    for i, j in enumerate(outs):
        rows[i, j], rows[i, m + j] = -1.0, 1.0
    lo, hi = (np.asarray(a, float) for a in box.bounding_box())
    pre = split_box(joint, lo, hi, band_pairs(rows, epsilon), RunSession(solver).chains["lp"],
                    max_boxes=max(1, (PARTS if parts is None else parts) - 1), pair_steps=0)
    serial = dict(outputs=outputs, epsilon=epsilon, verdict_only=True, solver=solver)
    if pre.candidate is not None or len(pre.open_boxes) < 2:  # decided, or one part: serially
        return diff(f, g, box, time_limit=time_limit, **serial)
    boxes = {executor.submit(_part, f, g, a, b, serial, deadline): (a, b)
             for a, b in pre.open_boxes}
    done, volumes, deciding = [], [], None
    pending = set(boxes)
    while pending:
        finished, pending = wait(pending, return_when=FIRST_COMPLETED)
        for fut in finished:
            result = fut.result()
            a, b = boxes[fut]
            done.append(result)
            volumes.append(float(np.prod((b - a)[hi > lo])))
            if result.verdict is Verdict.VIOLATED and deciding is None:
                deciding = result
        if deciding is not None:
            for fut in pending:
                fut.cancel()
            break
    return _merged(done, volumes, deciding, pre, lo, hi, epsilon, time.perf_counter() - t0)


def _part(f, g, lower, upper, serial: dict, deadline: float | None):
    """One part: a serial ``diff`` on the box ``[lower, upper]`` until ``deadline`` (a
    ``time.time()``, None: no limit); its result without the run's report."""
    from polytrav.host.diff import diff
    from polytrav.model.region import Box

    left = None if deadline is None else max(deadline - time.time(), 1e-3)
    result = diff(f, g, Box(lower, upper), time_limit=left, **serial)
    return dataclasses.replace(result, report=None)


def _merged(done: list, volumes: list, deciding, pre, lo, hi, epsilon, seconds):
    """One :class:`~polytrav.host.diff.DiffResult` from the parts' results and their boxes'
    volumes (see the module)."""
    from polytrav.host.diff import DiffResult

    free = hi > lo
    total = float(np.prod(hi[free] - lo[free]))
    if deciding is not None:
        verdict, head = Verdict.VIOLATED, deciding
    else:
        undecided = [r for r in done if r.verdict is not Verdict.HOLDS]
        verdict = Verdict.HOLDS if not undecided else undecided[0].verdict
        head = undecided[0] if undecided else done[0]
    outputs = []
    for k in range(len(done[0].outputs)):  # per output, the part of the largest |g - f|
        outputs.append(max((r.outputs[k] for r in done), key=lambda o: o.max_abs)
                       if deciding is None else deciding.outputs[k])
    features = {}
    for r in done:
        for feat in r.features:
            key = (feat.output, feat.input)
            if key not in features or feat.max_abs > features[key].max_abs:
                features[key] = feat
    split = {"parts": len(done), "boxes": pre.boxes, "proven": pre.proven, "open": 0,
             "proven_volume_share": pre.proven_volume_share, "difference": pre.difference,
             "candidate": None if deciding is None else (deciding.split or {}).get("candidate"),
             "probed": 0, "held": 0, "whole": False}
    for r in done:
        s = r.split or {}
        for key in ("boxes", "proven", "open", "probed", "held"):
            split[key] += int(s.get(key, 0))
        split["whole"] = split["whole"] or bool(s.get("whole"))
    split["proven_volume_share"] += sum(
        (r.split or {}).get("proven_volume_share", 0.0) * v / total
        for r, v in zip(done, volumes))
    return DiffResult(
        outputs=outputs, exact=False, status=head.status,
        n_polytopes=sum(r.n_polytopes for r in done), n_solves=sum(r.n_solves for r in done),
        decisions_differ=None, changes=[], n_changed_polytopes=0, volume_share=None,
        volume_method=None, epsilon=epsilon, verdict=verdict,
        violation=None if deciding is None else deciding.violation, time=seconds,
        failures=tuple(x for r in done for x in r.failures), features=list(features.values()),
        split=split, n_lps=sum(r.n_lps for r in done))

