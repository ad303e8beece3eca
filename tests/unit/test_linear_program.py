"""``LinearProgram``: an LP in arrays gives, on an LP backend and on a cvxpy backend, the
optimum ``scipy.optimize.linprog`` finds (objective in the problem's own sense, ``x`` the
first block, every block by name), and says infeasible where it is."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

from polytrav.extend import get_solver
from polytrav.solve.linear_program import LinearProgram
from polytrav.vocabulary.results import Status

BACKENDS = ["highs", "clarabel", "cvxpy:CLARABEL"]


def random_lp(seed: int):
    rng = np.random.default_rng(seed)
    n, m = 4, 6
    A = rng.normal(size=(m, n))
    b = rng.uniform(0.5, 2.0, m)  # the origin is feasible
    lo = np.append(-np.ones(n - 1), -np.inf)
    hi = np.append(np.ones(n - 1), 1.0)
    return rng.normal(size=n), A, b, lo, hi


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("maximize", [False, True])
def test_the_optimum_is_linprogs(backend, seed, maximize):
    c, A, b, lo, hi = random_lp(seed)
    truth = linprog(-c if maximize else c, A_ub=A, b_ub=b, bounds=list(zip(lo, hi)),
                    method="highs")
    lp = LinearProgram(c, A, b, lo, hi, {"u": 3, "t": 1}, maximize=maximize)
    res = lp.solve(get_solver(backend))
    if truth.status == 3:  # unbounded
        assert res.status is not Status.OPTIMAL
        return
    want = -truth.fun if maximize else truth.fun
    assert res.status in (Status.OPTIMAL, Status.OPTIMAL_INACCURATE)
    assert res.objective == pytest.approx(want, abs=1e-6)
    values = res.extras["values"]
    assert np.array_equal(res.x, values["u"]) and values["t"].shape == (1,)
    z = np.concatenate([values["u"], values["t"]])
    assert np.all(A @ z <= b + 1e-6) and c @ z == pytest.approx(want, abs=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_empty_lp_is_infeasible(backend):
    lp = LinearProgram([1.0], [[1.0], [-1.0]], [-1.0, -1.0], [-5.0], [5.0], {"u": 1})
    assert lp.solve(get_solver(backend)).status is Status.INFEASIBLE


def test_the_blocks_must_fill_the_columns_and_no_parameter_is_taken():
    with pytest.raises(ValueError, match="do not add up"):
        LinearProgram([1.0, 2.0], np.zeros((0, 2)), [], [0, 0], [1, 1], {"u": 1})
    lp = LinearProgram([1.0], np.zeros((0, 1)), [], [0.0], [1.0], {"u": 1})
    with pytest.raises(TypeError, match="no parameters"):
        lp.solve(get_solver("highs"), g=[1.0])
