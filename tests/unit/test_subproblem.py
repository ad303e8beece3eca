"""Subproblem: the compiled standard form (highs, osqp) against cvxpy's own path (CLARABEL)."""
from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest

from polytrav.vocabulary.errors import ConfigError
from polytrav.host.manager import get_solver
from polytrav.vocabulary.results import Status
from polytrav.solve.subproblem import StandardForm, Subproblem

TOL = 1e-6


@pytest.fixture(scope="module")
def backends():
    return {name: get_solver(name) for name in ("highs", "osqp", "cvxpy:CLARABEL")}


def agree(sub, values, backends, names):
    """Solve ``sub`` at ``values`` on each backend; check statuses and objectives agree."""
    results = {name: sub.solve(backends[name], **values) for name in names}
    ref = results["cvxpy:CLARABEL"]
    for name, res in results.items():
        assert res.status is ref.status, (name, res, ref)
        assert res.solver == name
        if ref.status is Status.OPTIMAL:
            assert res.objective == pytest.approx(ref.objective, abs=TOL, rel=TOL), name
            assert set(res.extras["values"]) == set(sub.variables)
            first = next(iter(sub.variables))
            np.testing.assert_array_equal(res.x, np.ravel(res.extras["values"][first]))
        else:
            assert res.objective is None and res.x is None and res.extras["values"] == {}
    return results


def box_lp(d=5, m=30):
    u = cp.Variable(d, name="u")
    A, b, g = cp.Parameter((m, d), name="A"), cp.Parameter(m, name="b"), cp.Parameter(d, name="g")
    return Subproblem(cp.Problem(cp.Maximize(g @ u + 1.5), [A @ u <= b, -1 <= u, u <= 1]))


def test_lp_resolves_agree_and_box_rows_become_bounds(backends):
    rng = np.random.default_rng(0)
    d, m = 5, 30
    sub = box_lp(d, m)
    assert sub.form == "lp" and set(sub.parameters) == {"A", "b", "g"}
    for _ in range(4):
        values = dict(A=rng.standard_normal((m, d)), b=rng.random(m) + 0.1, g=rng.standard_normal(d))
        res = agree(sub, values, backends, ("highs", "osqp", "cvxpy:CLARABEL"))
        sf = sub.standard_form()
        assert isinstance(sf, StandardForm) and sf.sense == -1 and sf.P is None
        assert sf.A_ub.shape == (m, d) and sf.A_eq.shape == (0, d)  # the 2d box rows are bounds
        np.testing.assert_array_equal(sf.lo, -np.ones(d))
        np.testing.assert_array_equal(sf.hi, np.ones(d))
        np.testing.assert_allclose(sf.A_ub, values["A"])
        np.testing.assert_allclose(sf.b_ub, values["b"])
        u = res["highs"].extras["values"]["u"]
        assert res["highs"].objective == pytest.approx(values["g"] @ u + 1.5, abs=1e-9)
        assert sf.objective(u) == pytest.approx(res["highs"].objective, abs=1e-9)
        np.testing.assert_array_equal(sf.split(u)["u"], u)  # no auxiliaries: x is u


def test_standard_form_reapplies_the_compiled_map(monkeypatch):
    rng = np.random.default_rng(1)
    sub = box_lp(3, 4)
    sub.set(A=np.ones((4, 3)), b=np.ones(4), g=np.ones(3))
    sub.standard_form()

    def no_recompile(*args, **kwargs):
        raise AssertionError("standard_form recompiled the problem")

    monkeypatch.setattr(cp.Problem, "get_problem_data", no_recompile)
    A = rng.standard_normal((4, 3))
    sub.set(A=A, b=np.arange(4.0), g=-np.ones(3))
    sf = sub.standard_form()
    np.testing.assert_allclose(sf.A_ub, A)
    np.testing.assert_allclose(sf.b_ub, np.arange(4.0))
    np.testing.assert_allclose(sf.c, np.ones(3))  # minimise -(g·u + 1.5)
    assert sf.constant == pytest.approx(-1.5)


def test_qp_resolves_agree(backends):
    rng = np.random.default_rng(2)
    u = cp.Variable(2, name="u")
    x0, C, e = cp.Parameter(2, name="x0"), cp.Parameter((20, 2), name="C"), cp.Parameter(20, name="e")
    sub = Subproblem(cp.Problem(cp.Minimize(cp.sum_squares(u - x0)), [C @ u <= e]))
    assert sub.form == "qp"
    with pytest.raises(ConfigError, match="served by"):
        sub.solve(backends["highs"], x0=np.zeros(2), C=np.zeros((20, 2)), e=np.ones(20))
    for _ in range(5):
        values = dict(x0=3 * rng.standard_normal(2), C=rng.standard_normal((20, 2)),
                      e=rng.random(20) + 0.1)
        res = agree(sub, values, backends, ("osqp", "cvxpy:CLARABEL"))
        np.testing.assert_allclose(res["osqp"].x, res["cvxpy:CLARABEL"].x, atol=1e-5)
        sf = sub.standard_form()
        assert sf.P is not None and sf.sense == 1
        assert np.all(values["C"] @ res["osqp"].x <= values["e"] + 1e-7)


@pytest.mark.parametrize("norm", [cp.norm1, lambda z: cp.norm(z, "inf")], ids=["l1", "linf"])
def test_norm_distance_lps_with_auxiliaries(backends, norm):
    rng = np.random.default_rng(3)
    d, m = 4, 6
    u = cp.Variable(d, name="u")
    x0, A, b = cp.Parameter(d, name="x0"), cp.Parameter((m, d), name="A"), cp.Parameter(m, name="b")
    sub = Subproblem(cp.Problem(cp.Minimize(norm(u - x0)), [A @ u <= b, cp.abs(u) <= 1]))
    assert sub.form == "lp"
    for _ in range(4):
        values = dict(x0=2 * rng.standard_normal(d), A=rng.standard_normal((m, d)),
                      b=rng.random(m) + 0.1)
        res = agree(sub, values, backends, ("highs", "osqp", "cvxpy:CLARABEL"))
        sf = sub.standard_form()
        assert sf.c.shape[0] > d  # cvxpy's auxiliaries
        u_val = res["highs"].extras["values"]["u"]
        assert u_val.shape == (d,)
        assert res["highs"].objective == pytest.approx(
            float(norm(u_val - values["x0"]).value), abs=1e-7)


def test_equality_constraints_and_attribute_variables(backends):
    rng = np.random.default_rng(4)
    v = cp.Variable(3, name="v", nonneg=True)  # cvxpy swaps it for a copy: split must follow
    w = cp.Variable((2, 2), name="w")
    E, f, c = cp.Parameter((2, 3), name="E"), cp.Parameter(2, name="f"), cp.Parameter(3, name="c")
    prob = cp.Problem(cp.Minimize(c @ v + cp.sum(w)), [E @ v == f, v <= 2, w >= v[0], w <= 3])
    sub = Subproblem(prob, variables={"v": v, "w": w})
    for _ in range(4):
        values = dict(E=rng.random((2, 3)) + 0.1, f=rng.random(2) + 0.5, c=rng.standard_normal(3))
        res = agree(sub, values, backends, ("highs", "osqp", "cvxpy:CLARABEL"))
        if res["highs"].status is Status.OPTIMAL:
            vals = res["highs"].extras["values"]
            assert vals["w"].shape == (2, 2)
            np.testing.assert_allclose(values["E"] @ vals["v"], values["f"], atol=1e-8)
            assert res["highs"].x.shape == (3,)
    assert sub.standard_form().A_eq.shape[0] == 2


def test_infeasible_and_unbounded(backends):
    u = cp.Variable(2, name="u")
    lo, hi, g = cp.Parameter(2, name="lo"), cp.Parameter(2, name="hi"), cp.Parameter(2, name="g")
    a, t = cp.Parameter(2, name="a"), cp.Parameter(name="t")
    # rows that are all singletons: contradicting bounds are reported without a solver call
    sub = Subproblem(cp.Problem(cp.Maximize(g @ u), [u >= lo, u <= hi, cp.multiply(a, u) <= t]))
    both = ("highs", "osqp", "cvxpy:CLARABEL")
    agree(sub, dict(lo=[0, 0], hi=[1, 1], g=[1, 1], a=[1, 1], t=2.0), backends, both)
    res = agree(sub, dict(lo=[0, 2], hi=[1, 1], g=[1, 1], a=[1, 1], t=2.0), backends, both)
    assert res["highs"].status is Status.INFEASIBLE and "lower bound" in res["highs"].message
    # a coefficient that vanishes: the row 0 <= t stays a row, infeasible iff t < 0
    assert agree(sub, dict(lo=[0, 0], hi=[1, 1], g=[1, 1], a=[0, 1], t=-1.0), backends,
                 both)["highs"].status is Status.INFEASIBLE
    res = agree(sub, dict(lo=[0, 0], hi=[1, 1], g=[1, 1], a=[0, 1], t=0.5), backends, both)
    assert res["highs"].objective == pytest.approx(1.5)
    # general rows: infeasible
    A, b = cp.Parameter((3, 2), name="A"), cp.Parameter(3, name="b")
    gen = Subproblem(cp.Problem(cp.Maximize(g @ u), [A @ u <= b]))
    A_val = np.array([[1.0, 1.0], [-1.0, -1.0], [1.0, -1.0]])
    res = agree(gen, dict(A=A_val, b=[1, -2, 0], g=[1, 0]), backends, both)
    assert res["highs"].status is Status.INFEASIBLE
    # free variables: unbounded
    res = agree(gen, dict(A=A_val, b=[1, 1, 0], g=[-1, 0]), backends, both)
    assert res["highs"].status is Status.UNBOUNDED
    assert agree(gen, dict(A=A_val, b=[1, 1, 0], g=[1, 0]), backends, both)[
        "highs"].objective == pytest.approx(0.5)


def test_osqp_stale_bounds_trap_data(backends):
    """The feasible interval jumps past the old one (new lower > old upper) between re-solves.

    cvxpy 1.9's own OSQP re-solve does not fall into the trap (it passes ``l`` and ``u``
    together, and its inequality rows keep ``l = -inf``); the compiled path on the osqp backend
    hands OSQP complete data every time, and must give CLARABEL's answers.
    """
    u = cp.Variable(2, name="u")
    lo, hi, x0 = cp.Parameter(name="lo"), cp.Parameter(name="hi"), cp.Parameter(2, name="x0")
    f = cp.Parameter(name="f")
    w = np.array([1.0, 2.0])
    sub = Subproblem(cp.Problem(cp.Minimize(cp.sum_squares(u - x0)),
                                [lo <= w @ u, w @ u <= hi, u[0] - u[1] == f]))
    osqp_cvxpy = get_solver("cvxpy:OSQP")
    steps = [(0, 1, 0), (2, 3, 5), (-4, -3, -5), (10, 11, 0), (1, 0, 0), (0, 1, 20)]
    for a, b, f_val in steps:
        values = dict(lo=a, hi=b, x0=[0.5, -0.5], f=f_val)
        res = agree(sub, values, backends, ("osqp", "cvxpy:CLARABEL"))
        assert (res["osqp"].status is Status.INFEASIBLE) == (a > b)
        again = sub.solve(osqp_cvxpy, **values)  # cvxpy's warm OSQP path, same answer today
        assert again.status is res["osqp"].status
        if a <= b:
            assert again.objective == pytest.approx(res["osqp"].objective, abs=1e-5)


def test_socp_and_forms(backends):
    u, x0 = cp.Variable(2, name="u"), cp.Parameter(2, name="x0")
    sub = Subproblem(cp.Problem(cp.Minimize(cp.sum(u)), [cp.norm2(u - x0) <= 1]))
    assert sub.form == "socp"
    res = sub.solve(backends["cvxpy:CLARABEL"], x0=[1.0, 2.0])
    assert res.status is Status.OPTIMAL and res.objective == pytest.approx(3 - np.sqrt(2), abs=1e-7)
    with pytest.raises(ConfigError, match="cvxpy"):
        sub.standard_form()
    with pytest.raises(ConfigError, match="socp"):
        sub.solve(backends["highs"])


def test_bad_inputs():
    u, p, q = cp.Variable(2, name="u"), cp.Parameter(name="p"), cp.Parameter(2, name="q")
    with pytest.raises(ConfigError, match="not convex"):
        Subproblem(cp.Problem(cp.Maximize(cp.norm2(u)), [u <= 1]))
    with pytest.raises(ConfigError, match="not DPP"):
        Subproblem(cp.Problem(cp.Minimize(p * p * cp.sum(u)), [u >= 0, u <= 1]))
    with pytest.raises(ConfigError, match="sum_squares"):
        Subproblem(cp.Problem(cp.Minimize(cp.quad_form(u - q, np.eye(2)))))
    twin = cp.Variable(2, name="u")
    with pytest.raises(ConfigError, match="two variables"):
        Subproblem(cp.Problem(cp.Minimize(cp.sum(u) + cp.sum(twin)), [u >= 0, twin >= 0]))
    with pytest.raises(ConfigError, match="not a variable of the problem"):
        Subproblem(cp.Problem(cp.Minimize(cp.sum(u)), [u >= q]), variables={"t": twin})
    sub = Subproblem(cp.Problem(cp.Minimize(p * cp.sum(u)), [u >= q, u <= 1]))
    with pytest.raises(ConfigError, match=r"unknown parameter 'r'.*\['p', 'q'\]"):
        sub.set(r=1.0)
    with pytest.raises(ConfigError, match=r"'q' expects shape \(2,\), got \(3,\)"):
        sub.set(q=np.zeros(3))
    sub.set(q=np.zeros(2))
    with pytest.raises(ConfigError, match="'p' has no value"):
        sub.standard_form()
    nonneg = cp.Parameter(name="n", nonneg=True)
    sub = Subproblem(cp.Problem(cp.Minimize(nonneg * cp.sum(u)), [u >= 0]))
    with pytest.raises(ConfigError, match="'n'"):
        sub.set(n=-1.0)


def test_compiled_subproblems_are_shared_by_key_and_give_fresh_answers():
    """Counterfactual queries on one region share one compiled problem (x0 is a parameter);
    the traversal's own (``milp_after=None``: L2's branch and bound would settle some runs
    before any cell needs it)."""
    from reference import random_net

    from polytrav import Box, analyze
    from polytrav.solve import subproblem as sp_mod
    from polytrav.plugins.counterfactual import Counterfactual

    net = random_net(5, 2, [8, 6], n_out=3)
    box = Box([-1.0, -1.0], [1.0, 1.0])
    points = [np.array([0.15, -0.1]), np.array([-0.4, 0.3]), np.array([0.7, 0.6])]
    for norm in (1, 2, np.inf):
        fresh = []
        for x0 in points:
            sp_mod._COMPILED.clear()
            fresh.append(analyze(net, box, Counterfactual(x0, norm=norm, milp_after=None))[0].value)
        sp_mod._COMPILED.clear()
        shared = [analyze(net, box, Counterfactual(x0, norm=norm, milp_after=None))[0].value
                  for x0 in points[:1]]
        compiled = set(sp_mod._COMPILED)  # the distance problem (not for L∞ on a box: the
        # direct LP), the step past the boundary, and a cell maximum where vertices are absent
        shared += [analyze(net, box, Counterfactual(x0, norm=norm, milp_after=None))[0].value
                   for x0 in points[1:]]
        assert set(sp_mod._COMPILED) <= compiled | {k for k in sp_mod._COMPILED if k[0] == "max_linear"}
        assert sum(k[0] == "counterfactual" for k in sp_mod._COMPILED) == (0 if norm == np.inf else 1)
        assert None not in fresh and shared == pytest.approx(fresh, abs=1e-9)


def test_the_compiled_cache_is_bounded():
    from polytrav.solve import subproblem as sp_mod

    sp_mod._COMPILED.clear()
    u = cp.Variable(1, name="u")
    build = lambda: Subproblem(cp.Problem(cp.Minimize(cp.sum(u)), [u >= 0]))  # noqa: E731
    first = sp_mod.compiled(("k", 0), build)
    assert sp_mod.compiled(("k", 0), build) is first
    for k in range(1, sp_mod.COMPILED_CACHE_SIZE + 1):
        sp_mod.compiled(("k", k), build)
    assert len(sp_mod._COMPILED) == sp_mod.COMPILED_CACHE_SIZE and ("k", 0) not in sp_mod._COMPILED


def test_lp_session_is_kept_for_an_equal_backend():
    """Runs get fresh backend instances; equal ones (class, options) re-solve the warm model."""
    rng = np.random.default_rng(1)
    sub = box_lp()
    values = dict(A=rng.standard_normal((30, 5)), b=rng.random(30) + 0.1, g=rng.standard_normal(5))
    first = sub.solve(get_solver("highs"), **values)
    session = sub._session[1]
    again = sub.solve(get_solver("highs"), **values)
    assert sub._session[1] is session and session.warm_solves == 1
    assert again.objective == pytest.approx(first.objective, abs=1e-9)
    sub.solve(get_solver("highs", options={"simplex_strategy": 1}), **values)
    assert sub._session[1] is not session  # other options: another session
