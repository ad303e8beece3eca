"""OSQP backend: warm re-solve sessions and the known traps in ``shared/data/solver_traps``."""
import numpy as np
import pytest
from problems import trap_qps

from polytrav import Status, available_solvers
from polytrav.host.manager import get_solver

pytest.importorskip("osqp")

# min 0.5 x^2 s.t. l <= x <= u: the answer is the point of [l, u] nearest 0
P, Q, A = np.eye(1), np.zeros(1), np.eye(1)


def test_session_moves_an_interval_past_the_old_upper_bound():
    """The stale-bounds trap: new l (2) > old u (1), sent on its own, then u on its own."""
    session = get_solver("osqp").qp_session(P, Q, A, [-1.0], [1.0])
    res = session.solve()
    assert res.status is Status.OPTIMAL and res.x == pytest.approx([0.0], abs=1e-9)
    session.update(l=[2.0])  # l > u for now: the model is infeasible, and says so
    res = session.solve()
    assert res.status is Status.INFEASIBLE and "lower bound 2 > upper bound 1" in res.message
    session.update(u=[3.0])
    res = session.solve()
    assert res.status is Status.OPTIMAL and res.x == pytest.approx([2.0], abs=1e-9)
    assert res.extras["warm"] and res.objective == pytest.approx(2.0)
    session.update(l=[-5.0], u=[-4.0])  # both at once, now below the old interval
    assert session.solve().x == pytest.approx([-4.0], abs=1e-9)


def test_naive_partial_update_keeps_stale_bounds():
    """Why the session exists: raw ``osqp`` drops a lone ``update(l=...)`` with ``l > u_old``."""
    import osqp
    import scipy.sparse as sp

    solver = osqp.OSQP()
    solver.setup(sp.csc_matrix(P), Q, sp.csc_matrix(A), np.array([-1.0]), np.array([1.0]),
                 verbose=False, polishing=True, eps_abs=1e-9, eps_rel=1e-9)
    solver.solve(raise_error=False)
    solver.update(l=np.array([2.0]))  # prints "ERROR in osqp_update_data_vec", raises nothing
    solver.update(u=np.array([3.0]))
    naive = solver.solve(raise_error=False)
    if naive.info.status == "solved" and abs(naive.x[0] - 2.0) < 1e-6:
        pytest.skip(f"osqp {osqp.__version__} applies partial bound updates correctly")
    assert naive.x[0] == pytest.approx(0.0, abs=1e-6)  # solved with the stale l = -1


def test_session_q_updates_and_warm_start():
    P2 = np.array([[2.0, 0.5], [0.5, 1.0]])
    A2 = np.vstack([np.eye(2), [[1.0, 1.0]]])
    l, u = np.array([-1.0, -1.0, -np.inf]), np.array([1.0, 1.0, 1.0])
    session = get_solver("osqp").qp_session(P2, [0.0, 0.0], A2, l, u)
    cold = get_solver("osqp")
    for q in ([-1.0, -1.0], [3.0, -2.0], [-4.0, -4.0]):
        session.update(q=q)
        warm = session.solve()
        ref = cold.solve_qp(P2, q, A_ub=[[1.0, 1.0]], b_ub=[1.0], bounds=(-np.ones(2), np.ones(2)))
        assert warm.status is Status.OPTIMAL and ref.status is Status.OPTIMAL
        np.testing.assert_allclose(warm.x, ref.x, atol=1e-7)
    assert session.n_solves == 3 and warm.extras["warm"]


def test_lower_bound_above_upper_bound_is_infeasible_not_an_osqp_error():
    res = get_solver("osqp").solve_lp([1.0], None, None, bounds=(np.array([1.0]), np.array([0.0])))
    assert res.status is Status.INFEASIBLE and res.x is None


def test_nonconvex_qp_is_an_error_status():
    res = get_solver("osqp").solve_qp(np.diag([1.0, -1.0]), [0.0, 0.0], [[1.0, 1.0]], [1.0])
    assert res.status is Status.ERROR and "OSQP" in res.message


# ---------------------------------------------------------------- HiGHS QP hang examples


@pytest.mark.parametrize("i", range(3))
def test_osqp_solves_highs_hang_qps_fast(i, data_dir):
    """HiGHS 1.15's QP solver hung on these (not run here); OSQP must answer at once.

    ``min |x - x0|^2 s.t. A x <= b`` is ``P = 2 I``, ``q = -2 x0``. "At once" is a count, not
    a clock: OSQP needs 100-275 iterations here, and a budget of 2 000 ends a hang as
    ``LIMIT``. The answer is checked through its KKT conditions.
    """
    A, b, x0 = trap_qps(data_dir / "solver_traps" / "highs_qp_hang_examples.npz")[i]
    res = get_solver("osqp", options={"max_iter": 2_000}).solve_qp(2 * np.eye(2), -2 * x0, A, b)
    assert res.status is Status.OPTIMAL, res.message
    assert res.iterations <= 2_000
    x, y = res.x, res.duals[: len(b)]
    assert (A @ x - b).max() <= 1e-8  # feasible
    assert y.min() >= -1e-9  # dual feasible
    np.testing.assert_allclose(2 * (x - x0) + A.T @ y, 0.0, atol=1e-7)  # stationary
    assert np.abs(y * (A @ x - b)).max() <= 1e-7  # complementary
    for name in available_solvers("qp")[1:]:  # the other QP backends agree
        other = get_solver(name).solve_qp(2 * np.eye(2), -2 * x0, A, b)
        assert other.status in (Status.OPTIMAL, Status.OPTIMAL_INACCURATE), name
        np.testing.assert_allclose(other.x, x, atol=1e-5 if other.status is Status.OPTIMAL else 1e-3,
                                   err_msg=name)
