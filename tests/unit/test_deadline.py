"""The run's deadline reaches every solver call (issue 63, "budgets that hold").

The solvers are the real HiGHS and Clarabel, registered as a third-party plugin registers a
backend (``solver_limits``: an entry point); each call records the time limit the solver was
given. Nothing here times anything: a limit is compared with the time left when the call was
made (the deadline less the clock then), an inequality that holds on any machine, and a spent
budget is one that ends before the run's work starts.
"""
from __future__ import annotations

import time

import numpy as np
import pytest
import solver_limits
from reference import random_net

from polytrav import Box, Status, TraversalStatus, analyze, explain
from polytrav.host.manager import get_solver
from polytrav.solve.backend import solve_along
from polytrav.solve.deadline import call_limit, refused, time_left, until

#: Every form on a recording backend, with no fallback: each solve is a recorded one.
CHAINS = {"lp": ["recording-highs"], "milp": ["recording-highs"], "qp": ["recording-clarabel"]}
#: A budget far above what the runs need (a guard, not a speed): the limits must shrink to it.
BUDGET = 30.0
#: Rounding of HiGHS's option (the object's run time plus the limit, less the run time).
ROUNDING = 1e-9


@pytest.fixture
def calls(tmp_path, monkeypatch):
    """The recording backends installed (an entry point on the path); their calls."""
    for key, value in solver_limits.install(tmp_path).items():
        monkeypatch.setenv(key, value)
    monkeypatch.syspath_prepend(str(tmp_path))
    solver_limits.CALLS.clear()
    yield solver_limits.CALLS
    solver_limits.CALLS.clear()


def _counterfactual(norm):
    """A counterfactual whose MILP (L1) or branch and bound (L2) runs at the first polytope."""
    net = random_net(1, 6, [8, 8], n_out=1)
    return net, Box(-np.ones(6), np.ones(6)), {"name": "counterfactual", "x0": np.zeros(6),
                                                "norm": norm, "milp_after": 1}


@pytest.mark.parametrize("norm, form", [(1, "milp"), (2, "qp")])
def test_every_solver_call_gets_at_most_what_the_deadline_leaves(calls, norm, form):
    net, box, spec = _counterfactual(norm)
    deadline = time.perf_counter() + BUDGET
    report = analyze(net, box, spec, solver=CHAINS, deadline=deadline)
    assert report[0].details["milp"]["after"] == 1  # the MILP / branch and bound ran
    assert {"lp", form} <= {c["form"] for c in calls}, calls
    for c in calls:  # each below its own default (60 s) and below what was left
        assert c["limit"] <= deadline - c["t"] + ROUNDING, c


def test_time_limit_is_the_deadline_of_every_call(calls):
    """``time_limit`` counts from the end of the set-up, before the first solver call: no
    call may get more than the budget less the time since the first call."""
    net, box, spec = _counterfactual(1)
    analyze(net, box, spec, solver=CHAINS, time_limit=BUDGET)
    first = min(c["t"] for c in calls)
    assert {"lp", "milp"} <= {c["form"] for c in calls}, calls
    for c in calls:
        assert c["limit"] <= BUDGET - (c["t"] - first) + ROUNDING, c


@pytest.mark.parametrize("norm", [1, 2])
def test_a_spent_budget_starts_no_solver_call_and_is_partial(calls, norm):
    net, box, spec = _counterfactual(norm)
    report = analyze(net, box, spec, solver=CHAINS, deadline=time.perf_counter())
    assert calls == []
    assert report.partial and report.status is TraversalStatus.TIME_LIMIT
    assert not report[0].exact and report[0].details.get("milp") is None


def test_an_explain_row_past_its_budget_is_partial_not_proven(calls):
    """The same row: with no budget the MILP proves it; with a tiny per-row budget no solver
    call starts and the row is unknown, never proven."""
    net, box, spec = _counterfactual(1)
    X = np.vstack([np.zeros(6), 0.5 * np.ones(6)])
    analyses = [("counterfactual", {"norm": 1, "milp_after": 1})]
    proven = explain(net, X, analyses, domain=box, solver=CHAINS, time_limit=None).to_pandas()
    assert proven["counterfactual.proof"].tolist() == ["milp", "milp"]
    calls.clear()
    tiny = explain(net, X, analyses, domain=box, solver=CHAINS, time_limit=1e-9)
    assert calls == []
    table = tiny.to_pandas()
    assert table["counterfactual.exact"].tolist() == [False, False]
    assert table["counterfactual.proof"].isna().all()
    assert all(not r.results["counterfactual"].exact for r in tiny)


def test_deadlines_nest_to_the_earlier_and_refuse_past_it():
    assert time_left() is None and call_limit(5.0) == 5.0 and call_limit() is None
    now = time.perf_counter()
    with until(now + 1000.0):
        with until(now + 2000.0):  # an inner run cannot extend its caller's deadline
            assert call_limit(5.0) == 5.0 and 999.0 < call_limit() <= 1000.0
        with until(now - 1.0) as spent:
            assert call_limit(5.0) == 0.0
            tried = []
            res, n = solve_along([get_solver("highs")], lambda backend: tried.append(backend))
            assert res.status is Status.LIMIT and n == 0 and tried == []
            with until(None):  # a block inside counts for the blocks around it
                assert refused("x").status is Status.LIMIT
            assert spent.refused == 2 and spent.outer.refused == 2
    assert time_left() is None


def test_a_run_with_a_refused_solve_is_partial_though_its_traversal_ended():
    """An affine network is one polytope, visited with no LP: its analysis's one solve is
    refused (the deadline is spent when the visit asks), so the run is not complete."""
    from polytrav import Analysis, AnalysisResult, Network

    class AsksOnce(Analysis):
        name = "asks_once"

        def visit(self, polytope, context):
            with until(time.perf_counter() - 1.0):  # the visit's solve finds no time left
                self.failures.append(refused("highs").message)

        def finish(self, context):
            return AnalysisResult(analysis=self.label, verdict=None, value=None,
                                  exact=self.exact(context))

    net = Network.from_arrays([[[1.0, 2.0]]], [[0.5]])
    report = analyze(net, Box([-1.0, -1.0], [1.0, 1.0]), AsksOnce())
    assert report.stats["polytopes"] == 1
    assert report.status is TraversalStatus.TIME_LIMIT and report.partial
    assert not report[0].exact
