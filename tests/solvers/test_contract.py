"""The backend contract: every registered LP/QP backend gets known answers and agrees with the others.

Parametrised over ``available_solvers("lp")`` and ``available_solvers("qp")``, so a new backend
(or plugin) is checked by simply being installed. Problems with closed-form answers live in
``tests/support/problems.py``.
"""
import functools
import itertools
import subprocess
import sys

import numpy as np
import pytest
from problems import LPS, PROBLEMS, QPS
from reference import random_net

import polytrav
from polytrav import Box, ConfigError, Status, available_solvers
from polytrav.extend import SolveResult
from polytrav.host.manager import get_solver, solver_classes
from polytrav.vocabulary.results import SOLUTION_PRESENT

LP_SOLVERS = available_solvers("lp")
QP_SOLVERS = available_solvers("qp")
SOLVERS_BY_FORM = {"lp": LP_SOLVERS, "qp": QP_SOLVERS}

TOL = 1e-6  #: objective and feasibility tolerance of a clean OPTIMAL
INACCURATE_TOL = 1e-4  #: the same for OPTIMAL_INACCURATE, accepted from SCS only
X_TOL = 1e-5  #: distance to a unique minimiser (ECOS' QP minimisers are good to ~1e-6)
DUAL_TOL = 1e-4  #: stationarity residual (ECOS recovers QP duals through a cone epigraph: ~1e-5)
UNBOUNDED = (Status.UNBOUNDED, Status.INFEASIBLE_OR_UNBOUNDED)


def tolerance(name: str, res: SolveResult) -> float:
    """The accuracy a result must meet; fails for an inaccurate result not from SCS."""
    if res.status is Status.OPTIMAL:
        return TOL
    assert res.status is Status.OPTIMAL_INACCURATE and name == "cvxpy:SCS", (
        f"{name}: {res.status} ({res.message}); only SCS may return optimal_inaccurate"
    )
    return INACCURATE_TOL


@functools.cache
def solve(name: str, problem_name: str) -> SolveResult:
    """One backend's result on one problem of :data:`problems.PROBLEMS` (cached)."""
    problem = next(p for p in PROBLEMS if p.name == problem_name)
    return problem.solve(get_solver(name))


CASES = [(name, p) for p in LPS for name in LP_SOLVERS] + [(name, p) for p in QPS for name in QP_SOLVERS]


@pytest.mark.parametrize("name,problem", CASES, ids=[f"{n}-{p.name}" for n, p in CASES])
def test_known_answer(name, problem):
    res = solve(name, problem.name)
    assert res.solver == name
    if problem.status == "optimal":
        assert res.status in SOLUTION_PRESENT, f"{name}: {res.status} ({res.message})"
        tol = tolerance(name, res)
        assert res.objective == pytest.approx(problem.objective, abs=tol, rel=tol)
        assert problem.max_violation(res.x) <= tol
        assert problem.value(res.x) == pytest.approx(problem.objective, abs=tol, rel=tol)
        if problem.x is not None:
            np.testing.assert_allclose(res.x, problem.x, atol=X_TOL if tol == TOL else 1e-2)
        if res.duals is not None:
            m_ub = problem.parts()[2].shape[0]
            assert problem.stationarity(res.x, res.duals) <= DUAL_TOL
            assert res.duals[:m_ub].min(initial=0.0) >= -DUAL_TOL  # y >= 0 on A_ub x <= b_ub
    elif problem.status == "infeasible":
        assert res.status is Status.INFEASIBLE, f"{name}: {res.status} ({res.message})"
        assert res.x is None and res.objective is None
    else:
        assert res.status in UNBOUNDED, f"{name}: {res.status} ({res.message})"
        assert res.x is None and res.objective is None


# ---------------------------------------------------------------- agreement


def random_problem(form: str, seed: int):
    """A random feasible, bounded LP or QP (box [-1, 1]^n, a strictly feasible point)."""
    rng = np.random.default_rng(seed)
    n, m = 6, 10
    A = rng.standard_normal((m, n))
    x_in = rng.uniform(-0.5, 0.5, n)
    b = A @ x_in + rng.uniform(0.05, 1.0, m)
    A_eq = rng.standard_normal((1, n))
    args = {"A_ub": A, "b_ub": b, "A_eq": A_eq, "b_eq": A_eq @ x_in, "bounds": (-np.ones(n), np.ones(n))}
    if form == "lp":
        return dict(c=rng.standard_normal(n), **args)
    M = rng.standard_normal((n, 3))  # rank-3 PSD P: minimisers need not be unique in x
    return dict(P=M @ M.T, q=rng.standard_normal(n), **args)


def _agree(form: str, results: dict[str, SolveResult], unique_x: bool) -> None:
    for (a, ra), (b, rb) in itertools.combinations(results.items(), 2):
        sa, sb = (Status.UNBOUNDED if s in UNBOUNDED else s for s in (ra.status, rb.status))
        ok_a, ok_b = ra.status in SOLUTION_PRESENT, rb.status in SOLUTION_PRESENT
        assert ok_a == ok_b and (ok_a or sa == sb), f"{a}: {ra.status} vs {b}: {rb.status}"
        if ok_a:
            tol = tolerance(a, ra) + tolerance(b, rb)
            assert ra.objective == pytest.approx(rb.objective, abs=tol, rel=tol), (a, b)
            if unique_x:
                np.testing.assert_allclose(ra.x, rb.x, atol=2 * X_TOL if tol < 1e-5 else 1e-2,
                                           err_msg=f"{a} vs {b}")


@pytest.mark.parametrize("problem", PROBLEMS, ids=[p.name for p in PROBLEMS])
def test_backends_agree_on_known_problems(problem):
    names = SOLVERS_BY_FORM[problem.form]
    _agree(problem.form, {n: solve(n, problem.name) for n in names}, problem.x is not None)


@pytest.mark.parametrize("form,seed", [("lp", 0), ("lp", 1), ("lp", 2), ("qp", 0), ("qp", 1), ("qp", 2)])
def test_backends_agree_on_random_problems(form, seed):
    args = random_problem(form, seed)
    results = {}
    for name in SOLVERS_BY_FORM[form]:
        s = get_solver(name)
        res = s.solve_lp(**args) if form == "lp" else s.solve_qp(**args)
        assert res.status in SOLUTION_PRESENT, f"{name}: {res.status} ({res.message})"
        A, b = args["A_ub"], args["b_ub"]
        assert (A @ res.x - b).max() <= tolerance(name, res)
        results[name] = res
    _agree(form, results, unique_x=False)


# ---------------------------------------------------------------- the traversal


TRAVERSAL_NET = {"seed": 3, "n_in": 2, "widths": [4, 3]}


@functools.lru_cache(maxsize=1)
def reference_keys() -> frozenset:
    net = random_net(**TRAVERSAL_NET)
    return frozenset(p.key for p in polytrav.traverse(net, Box([-1, -1], [1, 1]), solver="highs"))


@pytest.mark.parametrize("name", [n for n in LP_SOLVERS if n != "highs"])
def test_traversal_same_polytopes_for_every_lp_backend(name):
    # OSQP (ADMM + polishing) and SCS (eps 1e-9) both decide the Chebyshev radii here at
    # 1e-7; if a backend ever cannot, the traversal falls back to scipy, and stats.failures
    # would say so.
    net = random_net(**TRAVERSAL_NET)
    trav = polytrav.traverse(net, Box([-1, -1], [1, 1]), solver=name)
    keys = frozenset(p.key for p in trav)
    assert trav.status is polytrav.TraversalStatus.COMPLETE, trav.stats.failures
    assert len(keys) > 5
    assert keys == reference_keys()


# ---------------------------------------------------------------- registry and errors


def test_preference_order_per_form():
    cvx = [n for n in solver_classes() if n.startswith("cvxpy:")]
    assert cvx == [f"cvxpy:{s}" for s in ("CLARABEL", "ECOS", "SCS", "OSQP", "HIGHS")]
    assert LP_SOLVERS[:4] == ["highs", "scipy", "clarabel", "osqp"]
    assert all(n.startswith("cvxpy:") for n in LP_SOLVERS[4:])
    assert QP_SOLVERS[:2] == ["clarabel", "osqp"]  # certified answers first
    assert "highs" not in QP_SOLVERS and "cvxpy:HIGHS" not in QP_SOLVERS  # HiGHS QP can hang
    socp = available_solvers("socp")
    assert set(socp) <= {"cvxpy:CLARABEL", "cvxpy:ECOS", "cvxpy:SCS"}


def test_registered_cvxpy_backends_match_cvxpy():
    cvxpy = pytest.importorskip("cvxpy")
    listed = {n.split(":", 1)[1] for n in available_solvers() if n.startswith("cvxpy:")}
    assert listed == set(cvxpy.installed_solvers()) & {"CLARABEL", "ECOS", "SCS", "OSQP", "HIGHS"}


def test_availability_check_imports_no_solver():
    code = (
        "import sys, polytrav; polytrav.available_solvers('qp'); "
        "print(sorted(m for m in ('cvxpy', 'osqp', 'clarabel', 'ecos', 'scs') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                         check=False)  # a guard against a hang only
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_lp_only_backend_refuses_qp_by_name():
    with pytest.raises(NotImplementedError, match=r"'highs' does not solve QPs.*\['lp', 'milp'\]"):
        get_solver("highs").solve_qp(np.eye(1), [0.0])
    with pytest.raises(NotImplementedError, match=r"'scipy' does not solve MILPs.*\['lp'\]"):
        get_solver("scipy").solve_milp([0.0], None, None)


@pytest.mark.parametrize("name", [n for n in LP_SOLVERS if n not in ("highs", "scipy")])
def test_rejected_option_is_named(name):
    with pytest.raises(ConfigError, match=f"solver '{name}' rejected option no_such_option=1"):
        get_solver(name, options={"no_such_option": 1}).solve_lp([1.0], [[1.0]], [1.0])


def test_user_options_pass_through():
    res = get_solver("osqp", options={"max_iter": 1, "polishing": False}).solve_qp(
        np.eye(2), [1.0, 1.0], [[1.0, 1.0]], [-1.0])
    assert res.status in (Status.LIMIT, Status.OPTIMAL_INACCURATE) and res.iterations == 1


def test_unknown_cvxpy_solver_class():
    from polytrav.solvers.cvxpy_backend import cvxpy_backend_class

    with pytest.raises(ConfigError, match="unknown solver 'NOPE'"):
        cvxpy_backend_class("NOPE")
