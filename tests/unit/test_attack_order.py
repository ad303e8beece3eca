"""The start attack in ``verify``: its sequential LPs solve each step's minimax LP as
``linprog`` does, and the costly restarts run only where the input split leaves the region
open (a box the split proves costs none; without the split they run as before)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

import polytrav.bounds.dnf as dnf
from polytrav import Network, verify
from polytrav.verification.vnnlib import read_vnnlib


@pytest.mark.parametrize("seed", range(40))
def test_a_minimax_step_is_linprogs_optimum(seed):
    rng = np.random.default_rng(seed)
    k, n = int(rng.integers(2, 6)), int(rng.integers(2, 8))
    A, e = rng.normal(size=(k, n)), rng.normal(size=k)
    lo = rng.uniform(-1, 0, n)
    hi = lo + rng.uniform(0, 1, n)
    x = dnf._minimax_step(A, e, lo, hi)
    cost = np.append(np.zeros(n), 1.0)
    truth = linprog(cost, A_ub=np.hstack([A, -np.ones((k, 1))]), b_ub=-e,
                    bounds=list(zip(lo, hi)) + [(None, None)], method="highs")
    assert x is not None and np.all(x >= lo - 1e-9) and np.all(x <= hi + 1e-9)
    assert np.max(A @ x + e) == pytest.approx(truth.fun, abs=1e-7 * (1 + abs(truth.fun)))


def small_case(tmp_path):
    """A 2-2-1 network and a property bounds prove (its output never reaches 100)."""
    net = Network.from_arrays([[[1.0, -1.0], [0.5, 1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
    path = tmp_path / "p.vnnlib"
    path.write_text("(declare-const X_0 Real)\n(declare-const X_1 Real)\n(declare-const Y_0 Real)\n"
                    "(assert (>= X_0 -1))\n(assert (<= X_0 1))\n(assert (>= X_1 -1))\n"
                    "(assert (<= X_1 1))\n(assert (>= Y_0 100))\n")
    return net, read_vnnlib(path, n_inputs=2, n_outputs=1)


@pytest.mark.parametrize("split, restarts", [(True, 0), (False, 1)])
def test_the_restarts_wait_for_the_split(tmp_path, monkeypatch, split, restarts):
    net, spec = small_case(tmp_path)
    calls = []
    real = dnf.deep_attack
    monkeypatch.setattr(dnf, "deep_attack", lambda *a, **k: calls.append(1) or real(*a, **k))
    result = verify(net, spec, split=split)
    assert result.answer == "unsat"  # |y| <= 3 on the box: 100 is out of reach
    assert len(calls) == restarts
