"""The warm HiGHS LP session gives the answers of cold solves, whatever changes between LPs."""
import time

import numpy as np
import pytest
import scipy.sparse as sp

from polytrav.host.manager import get_solver
from polytrav.vocabulary.results import Status
from polytrav.solvers.highs import HighsLpSession


def _sequence(seed: int, n: int = 6, m: int = 12, steps: int = 60):
    """LPs of one shape whose rows flip sign, change, or stay; some shapes change, some infeasible."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, n))
    b = rng.uniform(0.2, 1.0, m)
    for k in range(steps):
        A, b = A.copy(), b.copy()
        flip = rng.random(m) < 0.3
        A[flip], b[flip] = -A[flip], -b[flip] + 0.5  # the other side of a hyperplane
        change = rng.random(m) < 0.1
        A[change] = rng.standard_normal((change.sum(), n))
        c = rng.standard_normal(n)
        lo, hi = -np.ones(n), np.ones(n)
        if k % 17 == 16:  # another shape now and then
            yield c, np.vstack([A, rng.standard_normal((2, n))]), np.concatenate([b, [1, 1]]), lo, hi
        elif k % 11 == 10:  # contradicting rows: infeasible
            yield c, np.vstack([A, A[:1], -A[:1]]), np.concatenate([b, [-1.0], [-1.0]]), lo, hi
        else:
            yield c, A, b, lo, hi


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("seed", range(4))
def test_warm_session_equals_cold_solves(seed, sparse):
    backend = get_solver("highs")
    session = backend.lp_session()
    assert isinstance(session, HighsLpSession)
    statuses = set()
    for c, A, b, lo, hi in _sequence(seed):
        warm = session.solve_lp(c, sp.csr_matrix(A) if sparse else A, b, None, None, (lo, hi))
        cold = backend.solve_lp(c, A, b, None, None, (lo, hi))
        assert warm.status is cold.status
        statuses.add(warm.status)
        if cold.status is Status.OPTIMAL:
            assert warm.objective == pytest.approx(cold.objective, abs=1e-9)
            assert np.all(A @ warm.x <= b + 1e-8)
            # the duals in A's row order and sign (rows moved and negated in the model):
            # c + A^T y + y_box = 0, y >= 0 on the rows, y . (A x - b) = 0
            y = warm.duals
            assert np.abs(c + A.T @ y[:len(b)] + y[len(b):]).max() < 1e-7
            assert y[:len(b)].min() >= -1e-9 and abs(y[:len(b)] @ (A @ warm.x - b)) < 1e-7
    assert {Status.OPTIMAL, Status.INFEASIBLE} <= statuses
    assert session.warm_solves > 30


def test_equality_rows_and_their_negation():
    backend = get_solver("highs")
    session = backend.lp_session()
    c, A_eq = np.array([1.0, 1.0]), np.array([[1.0, -1.0]])
    bounds = (-np.ones(2), np.ones(2))
    first = session.solve_lp(c, None, None, A_eq, np.array([0.5]), bounds)
    second = session.solve_lp(c, None, None, -A_eq, np.array([0.5]), bounds)  # x0 - x1 = -0.5
    assert first.objective == pytest.approx(-1.5) and second.objective == pytest.approx(-1.5)
    assert second.x[0] - second.x[1] == pytest.approx(-0.5)


def test_a_subclass_that_overrides_solve_lp_is_its_own_session():
    from polytrav.solvers.highs import HighsBackend

    class Custom(HighsBackend):
        name = "custom"

        def solve_lp(self, *args, **kwargs):
            return super().solve_lp(*args, **kwargs)

    backend = Custom()
    assert backend.lp_session() is backend


def test_the_time_limit_is_per_solve_not_per_model():
    """HiGHS counts its time limit against all runs of one object (HiGHS #1477): warm models
    that ran longer than the limit in total must still solve."""
    from polytrav import Box
    from polytrav.model.geometry import build_frame

    # per solve: 500x one solve (0.2 ms idle), so only the old total counting fails; not less,
    # since on a loaded machine a solve's wall time (what HiGHS counts) stretched to 67 ms
    limit = 0.1
    backend = get_solver("highs", options={"time_limit": limit})
    session = backend.lp_session()
    A, b = np.array([[1.0, 1.0], [1.0, -1.0]]), np.array([1.0, 0.5])
    model = backend.chebyshev_model(build_frame(Box([-1.0, -1.0], [1.0, 1.0]), 2))
    model.push(A / np.linalg.norm(A, axis=1)[:, None], np.zeros(2), np.array([True, False]))
    k, stalled = 0, False
    while k < 2 or min(session.h.getRunTime(), model.h.getRunTime()) < 2 * limit:
        k += 1
        t = time.perf_counter()
        lp = session.solve_lp(np.array([np.sin(k), np.cos(k)]), A, b, bounds=(-np.ones(2), np.ones(2)))
        took = time.perf_counter() - t
        # a limit is right only for a solve that itself ran that long (a stalled machine)
        assert lp.status is Status.OPTIMAL or took >= limit, (k, lp.message, took)
        stalled |= lp.status is not Status.OPTIMAL
        model.set_signs(np.array([k % 2 == 0, True]))
        t = time.perf_counter()
        cheb = model.solve()
        took = time.perf_counter() - t
        assert cheb.status is Status.OPTIMAL or took >= limit, (k, cheb.message, took)
    if not stalled:
        assert session.warm_solves == k - 1  # never rebuilt: every warm solve succeeded


def test_a_pooled_highs_object_forgets_its_model_and_options():
    from polytrav.solvers import highs

    loose = get_solver("highs", options={"primal_feasibility_tolerance": 1e-5, "presolve": "on"})
    h = loose.new_highs()
    h.addVars(2, np.zeros(2), np.ones(2))
    highs._IDLE.clear()
    highs._recycle(h)
    again = get_solver("highs").new_highs()
    assert again is h and h.getNumCol() == 0
    assert h.getOptionValue("primal_feasibility_tolerance")[1] == pytest.approx(1e-9)
    assert h.getOptionValue("presolve")[1] == "choose"


def test_a_milp_after_the_users_own_highs_mip_with_other_threads():
    """HiGHS's thread scheduler is global to the process: once a ``Highs`` with 2 threads has
    run a MIP (the user's own highspy), HiGHS refused the backend's ``threads=1`` model before
    starting (status "Not Set": an error, the MILP lost); the backend resets the scheduler."""
    import highspy

    highspy.Highs.resetGlobalScheduler(True)
    theirs = highspy.Highs()
    theirs.setOptionValue("output_flag", False)
    theirs.setOptionValue("threads", 2)
    theirs.addVars(2, np.zeros(2), np.full(2, 3.0))
    theirs.changeColsIntegrality(1, np.array([0], dtype=np.int32),
                                 np.array([highspy.HighsVarType.kInteger]))
    theirs.run()
    assert theirs.getModelStatus() == highspy.HighsModelStatus.kOptimal
    res = get_solver("highs").solve_milp(np.ones(2), sp.csr_matrix([[-1.0, -1.0]]), np.array([-1.5]),
                                         bounds=(np.zeros(2), np.full(2, 3.0)),
                                         integer=np.array([True, False]), time_limit=10)
    assert res.status is Status.OPTIMAL and res.objective == pytest.approx(1.5), res.message
