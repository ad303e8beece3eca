"""The region's MILP (:mod:`polytrav.bounds.milp`) against the reference MILP of
:mod:`polytrav.testing.milp` (its own big-M encoding with interval bounds, through SciPy), and
HiGHS's MILP form."""
from __future__ import annotations

import numpy as np
import pytest
from budgets import DECIDE
from polytrav.testing.milp import milp_counterfactual, milp_linear_dnf_feasible
from reference import dnf_instance, random_net

from polytrav.bounds import milp as region_milp
from polytrav.bounds.milp import RegionMilp
from polytrav.solvers.highs import HighsBackend
from polytrav.vocabulary.results import Status

MILP = [HighsBackend()]
CASES = [(4, [8, 8, 8], 3), (5, [8, 8, 8], 3), (3, [10, 10], 3), (6, [8, 8, 8, 8], 4),
         (10, [12, 12], 4)]


def instance(seed):
    """A net, a box, and conjunctions of 1-3 rows (unit norm) near the outputs' range."""
    net, lo, hi, pairs = dnf_instance(500 + seed, seed, CASES[seed % len(CASES)],
                                      conjunctions=(1, 4), rows=(1, 4), quantile=0.3,
                                      shifts=(0.0, 3.0, 6.0))
    norms = [np.linalg.norm(C, axis=1) for C, _ in pairs]
    return net, lo, hi, [(C / n[:, None], d / n) for (C, d), n in zip(pairs, norms)]


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.truth
def test_verdict_equals_the_reference_milp(seed):
    """Both verdicts occur (7 of the 20 hold); a counterexample lies in the box and meets
    every row of one conjunction by a forward pass."""
    net, lo, hi, pairs = instance(seed)
    truth = milp_linear_dnf_feasible(net, pairs, lo, hi)
    if abs(truth.value) < 1e-5:
        pytest.skip("the unsafe set's boundary is within the MILPs' tolerances")
    out = RegionMilp(net, lo, hi).prove(pairs, MILP, time_limit=DECIDE)
    assert out.verdict == ("violated" if truth.feasible else "holds"), (out, truth.value)
    if out.verdict == "violated":
        x = out.point
        assert np.all(x >= lo) and np.all(x <= hi)
        assert any(np.all(C @ net.forward(x) <= d) for C, d in pairs)


def test_the_encoding_holds_every_point_of_the_box():
    """Every hidden neuron's bounds contain its value at sampled points and corners, and the
    unstable ones are the binaries."""
    net, lo, hi, _ = instance(4)
    milp = RegionMilp(net, lo, hi)
    rng = np.random.default_rng(0)
    X = np.vstack([rng.uniform(lo, hi, (3000, lo.size)),
                   np.where(rng.random((500, lo.size)) < 0.5, lo, hi)])
    for H, (l, u) in zip(net.pre_activations(X), milp.bounds):
        assert np.all(H >= l) and np.all(H <= u)
    assert milp.binaries == sum(int(((l < 0) & (u > 0)).sum()) for l, u in milp.bounds) > 0


def test_refusals_say_why(monkeypatch):
    net, lo, hi, pairs = instance(0)
    milp = RegionMilp(net, lo, hi)
    assert milp.prove(pairs, []).reason == "no MILP backend is installed"
    monkeypatch.setattr(region_milp, "MILP_MAX_BINARIES", milp.binaries - 1)
    out = milp.prove(pairs, MILP)
    assert out.verdict == "unknown" and "unstable neurons" in out.reason and out.solves == 0


def test_a_backend_that_fails_is_one_failed_try():
    """A backend raising on every MILP: alone it leaves the region undecided, saying why;
    before HiGHS in the chain, HiGHS decides."""

    class Broken(HighsBackend):
        name = "broken"

        def solve_milp(self, *args, **kwargs):
            raise RuntimeError("native crash")

    net, lo, hi, pairs = robust_instance()
    milp = RegionMilp(net, lo, hi)
    alone = milp.prove(pairs, [Broken()])
    assert alone.verdict == "unknown" and "native crash" in alone.reason
    assert milp.prove(pairs, [Broken(), HighsBackend()]).verdict == "holds"


def test_a_point_the_forward_pass_refuses_is_unknown():
    """A feasible MILP point that ``unsafe`` does not confirm decides nothing."""
    net, lo, hi, pairs = next(inst for inst in map(instance, range(20))
                              if milp_linear_dnf_feasible(net := inst[0], inst[3], inst[1],
                                                          inst[2]).value > 1e-3)
    out = RegionMilp(net, lo, hi).prove(pairs, MILP, unsafe=lambda x: False)
    assert out.verdict == "unknown" and "not confirmed" in out.reason


def class_pairs(net, x0):
    """A counterfactual's conjunctions as ``C y <= 0``: every other class at least as high."""
    y0 = net.forward(x0)
    if net.n_outputs == 1:
        return [(np.array([[1.0 if y0[0] >= 0 else -1.0]]), np.zeros(1))]
    c0, m = int(np.argmax(y0)), net.n_outputs
    return [(np.eye(m)[[i for i in range(m) if i != q]] - np.eye(m)[[q]], np.zeros(m - 1))
            for q in range(m) if q != c0]


@pytest.mark.parametrize("norm", [1, np.inf])
@pytest.mark.parametrize("seed", range(8))
@pytest.mark.truth
def test_closest_equals_the_reference_counterfactual_milp(seed, norm):
    """The nearest point with another class: the same distance as the reference MILP, a
    proven bound within the allowance of it, and the point in the box at that distance;
    within a radius below the optimum, nothing, and the radius is the bound."""
    n_in, widths, n_out = [(4, [8, 8], 1), (5, [10, 10], 3), (3, [12], 2), (6, [8, 8, 8], 4)][seed % 4]
    net = random_net(900 + seed, n_in, widths, n_out=n_out)
    lo, hi = -np.ones(n_in), np.ones(n_in)
    x0 = np.random.default_rng(seed).uniform(-0.5, 0.5, n_in)
    truth = milp_counterfactual(net, x0, norm, lo, hi)
    out = RegionMilp(net, lo, hi).closest(x0, norm, class_pairs(net, x0), MILP, radius=np.inf)
    if not np.isfinite(truth.value):
        assert out.point is None and out.bound == np.inf
        return
    assert out.distance == pytest.approx(truth.value, abs=1e-6)
    assert truth.value - 1e-5 <= out.bound <= out.distance + 1e-12  # the objective, rounded
    assert np.all(out.point >= lo) and np.all(out.point <= hi)
    assert np.linalg.norm(out.point - x0, ord=norm) == pytest.approx(out.distance)
    short = 0.9 * truth.value
    none = RegionMilp(net, lo, hi).closest(x0, norm, class_pairs(net, x0), MILP, radius=short)
    assert none.point is None and none.bound == short


class _Kept(HighsBackend):
    """HiGHS as it is, with the heuristics options of each ``Highs`` object as it starts a
    solve (the objects are recycled after)."""

    def __init__(self):
        super().__init__()
        self.models = []

    def run(self, h, limit=None):
        self.models.append(_heuristics(h))
        return super().run(h, limit)


def _heuristics(model) -> tuple:
    return tuple(model.getOptionValue(k)[1] for k in (
        "mip_heuristic_effort", "mip_heuristic_run_rins", "mip_heuristic_run_rens",
        "mip_heuristic_run_root_reduced_cost"))


@pytest.mark.parametrize("norm", [1, np.inf])
def test_heuristics_only_while_no_point_is_known(norm):
    """The nearest point's first MILP (no radius: no point known) keeps HiGHS's primal
    heuristics at HiGHS's defaults; once a point bounds the distance, or with a finite
    radius from the start, they are off, as for every other MILP. Read from the ``Highs``
    objects as they start."""
    net = random_net(901, 5, [10, 10], n_out=3)
    lo, hi = -np.ones(5), np.ones(5)
    x0 = np.random.default_rng(1).uniform(-0.5, 0.5, 5)
    defaults = _heuristics(HighsBackend().new_highs())
    off = (0.0, False, False, False)
    assert defaults[0] > 0 and defaults != off
    kept = _Kept()
    out = RegionMilp(net, lo, hi).closest(x0, norm, class_pairs(net, x0), [kept], radius=np.inf)
    assert out.point is not None and len(kept.models) == 2
    assert kept.models == [defaults, off]
    kept.models.clear()
    RegionMilp(net, lo, hi).closest(x0, norm, class_pairs(net, x0), [kept],
                                    radius=2 * out.distance)
    assert kept.models == [off, off]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.truth
def test_closest_in_an_l1_ball_equals_the_reference(seed):
    """With ``l1_ball=(x0, r)`` the bounds hold in the ball only (tighter: fewer binaries
    than over the box ``x0 +- r``); they contain every sampled point of it, and the nearest
    point within ``r`` is the reference MILP's."""
    n_in, widths, n_out = [(4, [8, 8], 1), (5, [10, 10], 3), (3, [12], 2), (6, [8, 8, 8], 4)][seed % 4]
    net = random_net(900 + seed, n_in, widths, n_out=n_out)
    x0 = np.random.default_rng(seed).uniform(-0.5, 0.5, n_in)
    truth = milp_counterfactual(net, x0, 1, -np.ones(n_in), np.ones(n_in))
    if not np.isfinite(truth.value):
        return
    r = 1.3 * truth.value
    lo, hi = np.maximum(-1.0, x0 - r), np.minimum(1.0, x0 + r)
    ball = RegionMilp(net, lo, hi, l1_ball=(x0, r))
    assert ball.binaries <= RegionMilp(net, lo, hi).binaries
    rng = np.random.default_rng(1)
    steps = rng.laplace(size=(4000, n_in))
    steps *= (r * rng.random(4000) ** (1 / n_in) / np.abs(steps).sum(axis=1))[:, None]
    X = np.clip(x0 + steps, lo, hi)
    for H, (l, u) in zip(net.pre_activations(X), ball.bounds):
        assert np.all(H >= l) and np.all(H <= u)
    out = ball.closest(x0, 1, class_pairs(net, x0), MILP, radius=r)
    assert out.distance == pytest.approx(truth.value, abs=1e-6)
    assert truth.value - 1e-5 <= out.bound <= out.distance
    with pytest.raises(ValueError, match="L1 ball"):
        ball.closest(x0, np.inf, class_pairs(net, x0), MILP, radius=r)
    with pytest.raises(ValueError, match="L1 ball"):
        ball.prove(class_pairs(net, x0), MILP)


def test_closest_without_a_proven_bound_proves_nothing():
    """A backend whose optimum carries no dual bound: no bound, and the reason says so."""

    class NoBound(HighsBackend):
        name = "nobound"

        def solve_milp(self, *args, **kwargs):
            res = super().solve_milp(*args, **kwargs)
            res.extras.pop("bound", None)
            return res

    net = random_net(901, 5, [10, 10], n_out=3)
    x0 = np.zeros(5)
    out = RegionMilp(net, -np.ones(5), np.ones(5)).closest(x0, 1, class_pairs(net, x0),
                                                           [NoBound()], radius=np.inf)
    assert out.bound is None and "without a proven bound" in out.reason, out


def test_highs_milp_form_and_cutoff():
    """``solve_milp``: the integer optimum, and with a cutoff the first point below it or a
    proof that none is."""
    h = HighsBackend()
    c, A, b = np.array([-1.0, -1.0]), np.array([[2.0, 2.0]]), np.array([3.0])
    bounds = (np.zeros(2), np.full(2, 5.0))
    res = h.solve_milp(c, A, b, bounds=bounds, integer=np.array([True, True]))
    assert res.status is Status.OPTIMAL and res.objective == pytest.approx(-1.0)
    assert res.extras["bound"] == pytest.approx(-1.0)  # the proven lower bound
    relaxed = h.solve_milp(c, A, b, bounds=bounds)
    assert relaxed.objective == pytest.approx(-1.5)
    below = h.solve_milp(c, A, b, bounds=bounds, integer=np.array([True, True]), cutoff=-0.5)
    assert below.status is Status.OPTIMAL and c @ below.x < -0.5
    none = h.solve_milp(c, A, b, bounds=bounds, integer=np.array([True, True]), cutoff=-1.5)
    assert none.status is Status.INFEASIBLE and none.x is None
    assert "milp" in HighsBackend.forms


def robust_instance():
    """A 10-input 12-12 net and an L∞ box on which the top class cannot lose (the region's
    bound does not prove it: branch and bound or the MILP must)."""
    net = random_net(77, 10, [12, 12], n_out=4)
    x0 = np.random.default_rng(1).uniform(-1, 1, 10)
    c = int(np.argmax(net.forward(x0)))
    pairs = [((np.eye(4)[[c]] - np.eye(4)[[j]]) / np.sqrt(2), np.zeros(1))
             for j in range(4) if j != c]
    assert not milp_linear_dnf_feasible(net, pairs, x0 - 0.3, x0 + 0.3).feasible
    return net, x0 - 0.3, x0 + 0.3, pairs


def test_verify_mode_proves_the_region_by_milp(monkeypatch):
    """With no time for the branch-and-bound probe, the region's MILP proves it."""
    import dataclasses

    from polytrav import Box, LinearProperty, Verdict, analyze
    from polytrav.bounds import settle

    monkeypatch.setattr(settle, "VERIFY_POLICY",
                        dataclasses.replace(settle.VERIFY_POLICY, bab_probe_share=0.0))
    net, lo, hi, pairs = robust_instance()
    report = analyze(net, Box(lo, hi), LinearProperty(pairs, split=False),
                     time_limit=DECIDE)  # the settle stage's region MILP, not the input split
    bab = report[0].details["bab"]
    assert report[0].verdict is Verdict.HOLDS and report.stats["polytopes"] == 0
    assert bab["method"] == "milp" and bab["binaries"] > 0, bab


def test_verify_mode_says_why_the_milp_did_not_decide():
    """A run whose ``milp`` chain is empty decides the region by branch and bound, and its
    ``details["bab"]`` says why the MILP did not run."""
    from polytrav import Box, LinearProperty, analyze

    net, lo, hi, pairs = robust_instance()
    report = analyze(net, Box(lo, hi), LinearProperty(pairs, split=False),
                     solver={"milp": []}, time_limit=DECIDE)  # not the input split
    bab = report[0].details["bab"]
    assert bab["method"] == "branch_and_bound"
    assert bab["milp"] == "no backend serves the 'milp' form"
