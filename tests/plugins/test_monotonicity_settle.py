"""Monotonicity's settle stage (issue 59): the input splitting and the MILP run before the
traversal (``Monotonicity.settle``), the piece margin is a bound only; the run with the stage
answers as the full traversal without it (``settle=False``)."""
from __future__ import annotations

import numpy as np
import pytest
from reference import random_net

from polytrav import Box, Network, analyze
from polytrav.plugins.monotonicity import Monotonicity
from polytrav.plugins.monotonicity.bound import local_slopes
from polytrav.testing import check_settle
from polytrav.vocabulary.results import Verdict


def likely_monotone(net, region, **options):
    """Monotonicity in the input whose sampled slopes agree most in sign, in their direction:
    proofs and violations both occur."""
    lo, hi = region.bounding_box()
    X = np.random.default_rng(0).uniform(lo, hi, (400, len(lo)))
    slopes = [local_slopes(net, X, j, 0) for j in range(len(lo))]
    j = int(np.argmax([abs(np.sign(s).mean()) for s in slopes]))
    direction = "increasing" if slopes[j].mean() >= 0 else "decreasing"
    return Monotonicity(j, direction, stop_at_first=True, **options)


@pytest.mark.parametrize("hidden", [(6,), (4, 4), (8, 8, 6)])
def test_monotonicity_settles_as_the_full_traversal_answers(hidden):
    seen = check_settle(likely_monotone, hidden=hidden, seeds=range(12))
    assert "open" in seen or hidden == (6,), seen


def test_each_outcome_of_the_stage_occurs():
    seen = [o for hidden in [(6,), (4, 4)]
            for o in check_settle(likely_monotone, hidden=hidden, seeds=range(12))]
    assert {"proven", "open"} <= set(seen), seen
    without = check_settle(lambda net, region: likely_monotone(net, region, bounds=False),
                           hidden=(4, 4), seeds=range(4))
    assert set(without) == {"none"}  # no bounds: no stage


def passthrough_net() -> Network:
    """A random 3-8-8-1 net plus ``2 x_0`` through an always-on path: increasing in ``x_0``,
    which 200 sub-boxes of the slope bound do not prove, the MILP does."""
    net = random_net(18, 3, [8, 8])
    (W0, W1, W2), (b0, b1, b2) = net.weights, net.biases
    W1p = np.zeros((W1.shape[0] + 1, W0.shape[0] + 1))
    W1p[:-1, :-1], W1p[-1, -1] = W1, 1.0
    return Network.from_arrays([np.vstack([W0, np.eye(1, 3)]), W1p, np.hstack([W2, [[2.0]]])],
                               [np.append(b0, 2.0), np.append(b1, 0.0), b2])


def test_the_stage_proves_and_the_piece_margin_only_bounds():
    """With the stage the MILP proves the region (no polytope); without it the region's piece
    margin is the slope bound alone: no splitting, no MILP, the traversal proves it."""
    net, box = passthrough_net(), Box(-np.ones(3), np.ones(3))
    staged = analyze(net, box, Monotonicity(0, "increasing", stop_at_first=True))
    assert staged[0].verdict is Verdict.HOLDS and staged.stats["polytopes"] == 0
    assert staged.stats["settle"]["outcome"] == "proven"
    assert staged.stats["settle"]["by"] == "milp"
    plain = analyze(net, box, Monotonicity(0, "increasing", stop_at_first=True), settle=False)
    assert plain[0].verdict is Verdict.HOLDS and plain.complete and plain.stats["polytopes"] > 0
    assert plain.stats["settle"] is None
    assert plain[0].details["split"] is None and plain[0].details["milp"] is None


def test_the_split_candidate_is_where_the_traversal_starts():
    """A strip the probes miss: the stage's split finds a wrong-signed sub-box sample, the
    region is left open from it, and the first polytope confirms the pair there."""
    W0 = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, -1.0], [1.0, 0.0]])
    W1 = np.array([[1.0, -10.0, -10.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    net = Network.from_arrays([W0, W1, [[-3.0, 1.0]]],
                              [[-0.9, -0.02, -0.02, 1.0], [0.0, 0.0], [-1.0]])
    rep = analyze(net, Box([-1.0, -1.0], [1.0, 1.0]),
                  Monotonicity(0, "increasing", stop_at_first=True))
    assert rep.stats["settle"]["outcome"] == "open"
    assert rep[0].verdict is Verdict.VIOLATED and rep[0].n_polytopes == 1
    assert rep[0].details["split"]["candidate"] or rep[0].details["milp"]["verdict"] == "candidate"
