"""Every built-in analysis against an independent truth: brute-force cells and per-cell LPs/QPs.

The truth enumerates activation patterns (``reference.brute_force_regions``: cells and local
models from its own masks) and solves each cell's problem with SciPy's ``linprog`` or, for
L2, with cvxpy + Clarabel directly; the analyses must agree to 1e-6.
"""
import cvxpy as cp
import numpy as np
import pytest
from reference import brute_force_regions, random_net, train_grid_net
from scipy.optimize import linprog

from polytrav import Ball, Box, Verdict, analyze, traverse
from polytrav.host.manager import available_solvers
from polytrav.plugins.adversarial import SoftmaxAttack
from polytrav.plugins.counterfactual import Counterfactual
from polytrav.plugins.linear_property import LinearProperty
from polytrav.plugins.monotonicity import Monotonicity
from polytrav.plugins.output_range import OutputRange
from polytrav.plugins.region_stats import RegionStats

TOL = 1e-6
LO, HI = np.array([-1.0, -1.0]), np.array([1.0, 1.0])
BOX = Box(LO, HI)
NETS = [(1, [8, 6], 1), (2, [10], 1), (3, [6, 5, 4], 1), (4, [8, 6], 3), (5, [7, 7], 4)]


def cell_lp_max(cell, g, g0=0.0, extra_A=None, extra_b=None):
    """max g·x + g0 over the cell (and extra rows), or -inf if empty."""
    A, b = cell["A"], cell["b"]
    if extra_A is not None:
        A, b = np.vstack([A, extra_A]), np.concatenate([b, extra_b])
    res = linprog(-g, A_ub=A, b_ub=b, bounds=[(None, None)] * g.size, method="highs")
    return -res.fun + g0 if res.status == 0 else -np.inf


def cell_distance(cell, x0, norm, G, h, immutable=()):
    """min ||x - x0||_norm over the cell with G x + h >= 0 (cvxpy + Clarabel), inf if empty."""
    x = cp.Variable(x0.size)
    cons = [cell["A"] @ x <= cell["b"], G @ x + h >= 0]
    cons += [x[j] == x0[j] for j in immutable]
    obj = cp.norm(x - x0, {1: 1, 2: 2, np.inf: "inf"}[norm])
    prob = cp.Problem(cp.Minimize(obj), cons)
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return prob.value if prob.status == "optimal" else np.inf


@pytest.fixture(scope="module", params=NETS, ids=lambda p: f"seed{p[0]}-{p[1]}-out{p[2]}")
def case(request):
    seed, widths, n_out = request.param
    net = random_net(seed, 2, widths, n_out=n_out)
    return net, brute_force_regions(net, LO, HI)


def test_output_range_equals_the_per_cell_lps(case):
    net, cells = case
    rng = np.random.default_rng(0)
    g = rng.standard_normal(net.n_outputs)
    result = analyze(net, BOX, OutputRange(weights=g))[0]
    top = max(cell_lp_max(c, g @ c["W"], g @ c["c"]) for c in cells)
    bottom = -max(cell_lp_max(c, -g @ c["W"], -g @ c["c"]) for c in cells)
    assert result.exact
    assert result.value["max"] == pytest.approx(top, abs=TOL)
    assert result.value["min"] == pytest.approx(bottom, abs=TOL)
    assert g @ net.forward(result.details["argmax"]) == pytest.approx(top, abs=TOL)
    assert g @ net.forward(result.details["argmin"]) == pytest.approx(bottom, abs=TOL)


def test_output_range_over_an_l2_ball_uses_a_conic_solver(case):
    net, cells = case
    ball = Ball([0.1, -0.2], 0.6, norm=2)
    result = analyze(net, ball, OutputRange())[0]
    best = -np.inf
    for c in cells:
        x = cp.Variable(2)
        prob = cp.Problem(cp.Maximize(c["W"][0] @ x + c["c"][0]),
                          [c["A"] @ x <= c["b"], cp.norm(x - np.array([0.1, -0.2])) <= 0.6])
        prob.solve(solver=cp.CLARABEL)
        if prob.status == "optimal":
            best = max(best, prob.value)
    assert result.exact and result.value["max"] == pytest.approx(best, abs=1e-6)


def test_softmax_attack_worst_margin(case):
    net, cells = case
    if net.n_outputs < 2:
        pytest.skip("needs classes")
    x0 = np.array([0.2, 0.3])
    label = int(np.argmax(net.forward(x0)))
    region = Ball(x0, 0.3, norm=np.inf) & BOX
    result = analyze(net, region, SoftmaxAttack(label))[0]
    extra_A = np.vstack([np.eye(2), -np.eye(2)])
    extra_b = np.concatenate([x0 + 0.3, 0.3 - x0])
    worst = max(cell_lp_max(c, c["W"][i] - c["W"][label], c["c"][i] - c["c"][label], extra_A, extra_b)
                for c in cells for i in range(net.n_outputs) if i != label)
    assert result.value == pytest.approx(worst, abs=TOL)
    assert result.verdict is (Verdict.VIOLATED if worst > 1e-7 else Verdict.HOLDS)
    if result.verdict is Verdict.VIOLATED:
        y = net.forward(result.witness)
        assert np.max(np.delete(y, label)) > y[label]
        assert result.details["probabilities"].sum() == pytest.approx(1.0)
        verify = analyze(net, region, SoftmaxAttack(label, mode="verify"))
        assert verify[0].verdict is Verdict.VIOLATED and verify.stats["polytopes"] <= result.n_polytopes


@pytest.mark.parametrize("norm", [1, 2, np.inf])
def test_counterfactual_equals_brute_force_in_every_search_mode(case, norm):
    net, cells = case
    x0 = np.array([0.15, -0.1])
    y0 = net.forward(x0)
    binary = net.n_outputs == 1
    cls0 = int(y0[0] >= 0) if binary else int(np.argmax(y0))
    truth = np.inf
    for c in cells:
        W, b0 = c["W"], c["c"]
        targets = [1 - cls0] if binary else [q for q in range(net.n_outputs) if q != cls0]
        for q in targets:
            if binary:
                s = 1.0 if q == 1 else -1.0
                G, h = s * W[:1], s * b0[:1]
            else:
                others = [i for i in range(net.n_outputs) if i != q]
                G, h = W[q] - W[others], b0[q] - b0[others]
            truth = min(truth, cell_distance(c, x0, norm, G, h))
    for search in ("full", "shrink", "best-first"):
        result = analyze(net, BOX, Counterfactual(x0, norm=norm, search=search))[0]
        assert result.exact, result.failures
        if not np.isfinite(truth):
            assert result.value is None
            continue
        assert result.value == pytest.approx(truth, abs=TOL), search
        w = result.witness
        assert w is not None and BOX.contains(w)
        yw = net.forward(w)
        assert (int(yw[0] >= 0) if binary else int(np.argmax(yw))) != cls0
        assert result.details["returned_distance"] >= result.value - 1e-9
        assert result.details["returned_distance"] <= result.value + 1e-3


def test_monotonicity_matches_finite_differences(case):
    net, cells = case
    slopes = [c["W"][0, 0] for c in cells]
    result = analyze(net, BOX, Monotonicity(0))[0]
    assert result.value["min_slope"] == pytest.approx(min(slopes), abs=1e-9)
    assert result.value["max_slope"] == pytest.approx(max(slopes), abs=1e-9)
    grid = np.linspace(-1, 1 - 1e-3, 60)
    X = np.array([[a, b] for a in grid for b in grid])
    fd = (np.array([net.forward(x + [1e-3, 0])[0] for x in X])
          - np.array([net.forward(x)[0] for x in X])) / 1e-3
    assert fd.min() >= min(slopes) - 1e-6 and fd.max() <= max(slopes) + 1e-6
    increasing = analyze(net, BOX, Monotonicity(0, "increasing"))[0]
    if min(slopes) < -1e-9:
        assert increasing.verdict is Verdict.VIOLATED
        assert len(increasing.details["violations"]) == sum(s < -1e-9 for s in slopes)
        x1, x2 = increasing.details["witness_pair"]
        assert net.forward(x2)[0] < net.forward(x1)[0] and x2[0] > x1[0]
    else:
        assert increasing.verdict is Verdict.HOLDS


def test_linear_property_equals_per_cell_feasibility(case):
    net, cells = case
    rng = np.random.default_rng(3)
    for trial in range(4):
        C = rng.standard_normal((2, net.n_outputs))
        d = rng.standard_normal(2) + trial - 2.0
        reachable = False
        for c in cells:
            A = np.vstack([c["A"], C @ c["W"]])
            b = np.concatenate([c["b"], d - C @ c["c"]])
            if linprog(np.zeros(2), A_ub=A, b_ub=b, bounds=[(None, None)] * 2,
                       method="highs").status == 0:
                reachable = True
                break
        result = analyze(net, BOX, LinearProperty([(C, d)]))[0]
        if reachable:
            assert result.verdict in (Verdict.VIOLATED, Verdict.VIOLATED_UNCONFIRMED)
        else:
            assert result.verdict is Verdict.HOLDS
        if result.verdict is Verdict.VIOLATED:
            assert np.all(C @ net.forward(result.witness) <= d + 1e-6)


def test_region_stats_counts_volumes_and_one_flip_edges(case):
    net, cells = case
    stats = RegionStats()
    result = analyze(net, BOX, stats)[0]
    assert result.value["polytopes"] == len(cells)
    assert result.value["volume_share_sum"] == pytest.approx(1.0, abs=1e-6)
    codes = {"".join("1" if b else "0" for b in c["code"]) for c in cells}
    assert {code for _, _, code, _ in result.details["polytopes"]} == codes
    by_index = {i: code for i, _, code, _ in result.details["polytopes"]}
    for a, b in result.details["edges"]:
        assert sum(x != y for x, y in zip(by_index[a], by_index[b])) == 1
    pytest.importorskip("networkx")
    g = stats.graph()
    assert g.number_of_nodes() == len(cells)


# ---------------------------------------------------------------- across backends


@pytest.fixture(scope="module")
def seven_d():
    """A 7-input classifier (above VERTEX_MAX_DIM, so every linear optimum needs a solve)."""
    net = random_net(4, 7, [5, 4], n_out=3)
    box = Box(-0.5 * np.ones(7), 0.5 * np.ones(7))   # 143 polytopes: every backend in seconds
    x0 = np.full(7, 0.05)
    label = int(np.argmax(net.forward(x0)))
    prop = [(np.array([[1.0, -1.0, 0.0]]), np.array([0.0]))]
    analyses = lambda: [OutputRange(), Counterfactual(x0, norm=1), SoftmaxAttack(label),  # noqa: E731
                        LinearProperty(prop, mode="all")]
    return net, box, analyses, analyze(net, box, analyses())


@pytest.mark.parametrize("backend", available_solvers("lp"))
def test_every_lp_analysis_agrees_on_every_lp_backend(seven_d, backend):
    net, box, analyses, reference = seven_d
    # a backend that does not certify (OSQP, SCS) is given first, not alone: its
    # "infeasible" answers are confirmed by the next backend of the chain
    report = analyze(net, box, analyses(), solver=backend)
    assert report.complete and report.solver["lp"][0] == backend
    assert all(r.exact for r in report), [r.failures[:1] for r in report]
    tol = 1e-5 if backend in ("osqp", "cvxpy:SCS", "cvxpy:OSQP") else 1e-7
    for key in ("min", "max"):
        assert report[0].value[key] == pytest.approx(reference[0].value[key], abs=tol)
    assert report[1].value == pytest.approx(reference[1].value, abs=tol)
    assert report[2].value == pytest.approx(reference[2].value, abs=tol)
    assert report[2].verdict is reference[2].verdict
    assert report[3].verdict is reference[3].verdict
    assert report[3].value == pytest.approx(reference[3].value, abs=tol)


@pytest.mark.parametrize("backend", available_solvers("qp"))
def test_l2_counterfactual_agrees_on_every_qp_backend(backend):
    net = random_net(4, 2, [8, 6], n_out=3)
    x0 = np.array([0.15, -0.1])
    reference = analyze(net, BOX, Counterfactual(x0, norm=2), solver={"qp": "cvxpy:CLARABEL"})
    # a backend that does not certify (OSQP, SCS) has its "infeasible" answers confirmed on
    # the next backend of the chain, so it is given first, not alone
    report = analyze(net, BOX, Counterfactual(x0, norm=2), solver={"qp": backend})
    assert report[0].exact and report.solver["qp"][0] == backend
    assert report[0].value == pytest.approx(reference[0].value, abs=1e-5)


def test_counterfactual_on_the_grid_net_prunes_and_keeps_the_optimum():
    net = train_grid_net([20], epochs=1500)
    x0 = np.array([0.1, 0.12])
    full = analyze(net, BOX, Counterfactual(x0, norm=2, search="full"))
    best = analyze(net, BOX, Counterfactual(x0, norm=2, milp_after=None))  # the traversal's
    assert best[0].value == pytest.approx(full[0].value, abs=1e-9)
    assert best.stats["polytopes"] < full.stats["polytopes"]
    assert best.complete and best.stats["pruned"] > 0
    assert full[0].details["skipped_by_bound"] > 0  # "full" visits all, solves fewer


def test_immutable_features_stay_fixed():
    net = random_net(4, 2, [8, 6], n_out=3)
    x0 = np.array([0.15, -0.1])
    result = analyze(net, BOX, Counterfactual(x0, norm=1, immutable=[1]))[0]
    if result.value is not None:
        assert result.details["boundary_point"][1] == pytest.approx(x0[1], abs=1e-9)
        assert result.witness[1] == pytest.approx(x0[1], abs=1e-9)


def test_counterfactual_cell_bound_equals_the_polytopes_halfspace_distances():
    """The per-layer cache of the bound gives, polytope after polytope, the direct value."""
    from polytrav.plugins.counterfactual import halfspace_distance

    net = random_net(3, 2, [6, 5, 4], n_out=3)
    x0 = np.array([0.15, -0.1])
    for norm, dual in ((1, np.inf), (2, 2), (np.inf, 1)):
        a = Counterfactual(x0, norm=norm)
        analyze(net, BOX, a)  # begin sets the per-layer cache; the run leaves it filled
        assert a._problem.dual == dual
        polytopes = list(traverse(net, BOX))
        assert len(polytopes) > 20
        for p in polytopes + polytopes[::-1]:
            direct = 0.0
            for (Wh, bh), on in zip(net.hyperplanes(p.code), p.code):
                s = np.where(on, 1.0, -1.0)
                direct = max(direct, float(np.max(halfspace_distance(
                    s[:, None] * Wh, s * bh, x0, dual), initial=0.0)))
            assert a._search.bounds.cell(p) == pytest.approx(direct, rel=1e-12, abs=1e-15), p.code


def test_counterfactual_class_screen_equals_the_per_class_checks():
    """The batched screen of the target classes: each class's lower bound is the
    halfspace_distance of its rows, and it is in reach iff every row can hold on the box."""
    from polytrav.model.geometry import build_frame
    from polytrav.plugins.counterfactual import halfspace_distance

    region = Box(-0.3 * np.ones(3), 0.3 * np.ones(3))
    reach_seen = set()
    for n_out in (1, 4):
        net = random_net(5, 3, [6, 5], n_out=n_out)
        frame = build_frame(region, net.n_inputs)
        for p in (1, 2, np.inf):
            cf = Counterfactual(np.array([0.1, -0.2, 0.3]), norm=p)
            analyze(net, region, cf)
            for poly in traverse(net, region):
                lbs, reach = cf._search.bounds.classes(poly, frame)
                problem = cf._problem
                for q, lb, ok in zip(problem.targets, lbs, reach):
                    G, g = problem.class_rows(poly, q)
                    direct = float(np.max(halfspace_distance(G, g, problem.x0, problem.dual),
                                          initial=0.0))
                    assert lb == pytest.approx(direct, rel=1e-12, abs=1e-15)
                    K, h = frame.pull(G), G @ frame.origin + g
                    out = np.any((np.linalg.norm(K, axis=1) == 0) & (h < 0)) or \
                        np.any(np.abs(K).sum(axis=1) + h < 0)
                    assert ok == (not out)
                    reach_seen.add(bool(ok))
    assert reach_seen == {True, False}


def test_the_printed_answers_agree_with_a_forward_pass():
    """``print(report)``: margins, classes, extremes and codes as a plain forward pass gives
    them at the printed points (not as the analyses computed them)."""
    from polytrav.vocabulary.text import code_string, fmt, vector

    net = random_net(3, 2, [8, 6], n_out=3)
    x0 = np.array([0.1, -0.2])
    report = analyze(net, BOX, [OutputRange(output=0), SoftmaxAttack(0, mode="worst"),
                                Counterfactual(x0, norm=2)])
    text = str(report)
    rng, att, cf = report
    y_lo, y_hi = (net.forward(rng.details[k])[0] for k in ("argmin", "argmax"))
    assert f"min {fmt(y_lo)}, max {fmt(y_hi)}" in text
    y = net.forward(att.witness)
    cls = int(np.argmax(y[1:]) + 1)
    assert f"worst margin over the region: logit[{cls}] - logit[0] = {fmt(y[cls] - y[0])}" in text
    assert att.details["class"] == cls and att.value == y[cls] - y[0]
    assert f"witness x = {vector(att.witness)}" in text
    assert f"activation code {code_string(net.activation_code(att.witness))}" in text
    assert (f"from x0 (class {int(np.argmax(net.forward(x0)))}) to the nearest input of class "
            f"{int(np.argmax(net.forward(cf.witness)))}") in text
    assert str(report[1]).splitlines()[0] in text  # print(result): the same block
