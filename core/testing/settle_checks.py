"""The settle stage's contract, as one check a third party runs on its analysis:
:func:`polytrav.testing.check_settle`.

On small random networks the run with the stage (``analyze``'s default) must answer as the
full traversal without it (``settle=False``): the same verdict and exactness, the same value
where it is exact; a VIOLATED witness lies in the region; a stage that proved or refuted the
region visited no polytope.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from polytrav.host.analysis import Analysis
from polytrav.host.runner import analyze
from polytrav.model.region import Box
from polytrav.testing.analysis_checks import same_answer
from polytrav.testing.reference import random_net
from polytrav.vocabulary.results import Verdict
from polytrav.vocabulary.tolerances import WITNESS_TOL

__all__ = ["check_settle"]


def check_settle(analysis_factory: Callable, *, n_inputs: int = 3, n_outputs: int = 2,
                 hidden: Iterable[int] = (8, 8, 6), seeds: Iterable[int] = range(8),
                 **options) -> list[str]:
    """Check an analysis's :meth:`~polytrav.Analysis.settle` against the full traversal.

    ``analysis_factory(net, region)`` returns a fresh, unrun analysis for a network and its
    region (so that a property can be made to fit the network's outputs: a threshold near
    their range). Per seed, a :func:`~polytrav.testing.random_net` of ``n_inputs`` inputs,
    ``hidden`` layers and ``n_outputs`` outputs over the box ``[-1, 1]^n_inputs``:
    ``analyze`` with the stage and with ``settle=False`` (both with ``options``) must give the
    same verdict and ``exact``, and the same value where it is exact (a run whose stage proved
    boxes may be inexact where the full traversal is exact: an analysis whose value covers
    the visited polytopes, as ``Monotonicity``'s slopes, does not see the proven ones; its
    verdict must still agree); a VIOLATED witness must
    lie in the region, and a run the stage decided must visit no polytope (but in the probe
    runs that held, parts of its answer).

    Returns what the stage did per seed (``"proven"``, ``"violated"``, ``"open"``,
    ``"probe"`` where a probe run found the violation, or ``"none"`` where ``settle``
    returned None), so a test can ask that each outcome occurs. Raises one
    ``AssertionError`` listing every seed that failed.
    """
    region = Box(-np.ones(n_inputs), np.ones(n_inputs))
    failed, seen = [], []
    for seed in seeds:
        net = random_net(seed, n_inputs, list(hidden), n_outputs)
        first = analysis_factory(net, region)
        if not isinstance(first, Analysis) or not first.settles:
            raise AssertionError(f"analysis_factory returned {type(first).__name__}, not an "
                                 "Analysis that implements settle(context)")
        what = f"seed {seed}"
        try:
            settled = analyze(net, region, first, **options)
            full = analyze(net, region, analysis_factory(net, region), settle=False, **options)
            stage = settled.stats["settle"]
            seen.append("none" if stage is None else stage["outcome"])
            proved = stage is not None and (stage["outcome"] == "proven"
                                            or stage["proven_boxes"] > 0)
            if proved and not settled[0].exact:  # polytopes the stage proved were not visited:
                assert settled[0].verdict == full[0].verdict, (  # a value over the visited
                    f"{what}: with the settle stage against without it: verdict "  # ones only
                    f"{settled[0].verdict} vs {full[0].verdict}")
            else:
                same_answer(settled[0], full[0],
                            f"{what}: with the settle stage against without it")
            if settled[0].verdict is Verdict.VIOLATED:
                assert region.contains(np.asarray(settled[0].witness, float), tol=WITNESS_TOL), \
                    f"{what}: the VIOLATED witness lies outside the region"
            if stage is not None and stage["outcome"] in ("proven", "violated") \
                    and not stage.get("probes", {}).get("held"):  # (held probe runs: parts)
                assert settled.stats["polytopes"] == 0, \
                    f"{what}: the stage decided the region, yet the run visited polytopes"
        except AssertionError as exc:
            failed.append(str(exc))
    if failed:
        raise AssertionError(f"settle disagrees with the full traversal on {len(failed)} "
                             "network(s):\n- " + "\n- ".join(failed))
    return seen
