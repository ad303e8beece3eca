"""``polytrav.diff(..., verdict_only=True, executor=)``: the box decided in parts on a process
pool gives the serial run's verdict, on both sides of the MILP's largest ``|g_0 - f_0|``, with
a violating point that forward passes confirm; bad combinations get one line."""
from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest
from polytrav.testing.milp import milp_max_linear
from reference import perturbed_copy

import polytrav
from polytrav import Box, ConfigError, Network
from polytrav.testing.reference import random_net


@pytest.fixture(scope="module")
def pair():
    """A 4-12-12-12-1 net, its copy with weights moved by 1 %, the unit box and the MILP's
    largest ``|g_0 - f_0|`` over it (the truth)."""
    f = random_net(3, 4, [12, 12, 12], n_out=1)
    g = perturbed_copy(f, 3, 0.01)
    lo, hi = np.zeros(4), np.ones(4)
    stack = Network.stack([f, g]).compose_input(np.vstack([np.eye(4), np.eye(4)]), np.zeros(8))
    top = max(milp_max_linear(stack, s * np.array([-1.0, 1.0]), lo, hi).value for s in (1, -1))
    return f, g, Box(lo, hi), top


@pytest.fixture(scope="module")
def pool():
    with ProcessPoolExecutor(2) as executor:
        yield executor


def test_parts_on_a_process_pool_decide_as_the_serial_run(pair, pool):
    f, g, box, top = pair
    for eps, expected in ((top * 1.02, "holds"), (top * 0.9, "violated")):
        serial = polytrav.diff(f, g, box, outputs=[0], epsilon=eps, verdict_only=True)
        parts = polytrav.diff(f, g, box, outputs=[0], epsilon=eps, verdict_only=True,
                              executor=pool, parts=4)
        assert serial.verdict.value == parts.verdict.value == expected
        if expected == "violated":
            x = np.asarray(parts.violation["x"], float)
            assert box.contains(x) and abs(g(x)[0] - f(x)[0]) > eps
        else:
            assert parts.split["parts"] >= 2  # decided in parts, not serially
            assert parts.split["proven_volume_share"] == pytest.approx(1.0)
            assert parts.max_abs <= top + 1e-9  # the visited extremes lie within the truth


def test_parts_need_a_verdict_only_run_on_a_box(pair, pool):
    f, g, box, top = pair
    with pytest.raises(ConfigError, match="executor= decides a verdict_only run"):
        polytrav.diff(f, g, box, epsilon=top, executor=pool)
