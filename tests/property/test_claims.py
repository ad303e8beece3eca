"""Every claim a result makes is true, in every mode a run can end in (hypothesis, seeded).

Random small networks and boxes; every built-in analysis run in full, stopped at its first
violation (where it has that mode), with a polytope budget, and interrupted after k polytopes
through the path Ctrl-C takes (``KeyboardInterrupt`` inside the run, ``on_interrupt="report"``
as the command line passes it). The claims checked against independent truth:

* ``exact`` holds iff ``scope`` is ``region``, and an exact value equals the brute-force
  answer over every activation pattern (``reference.brute_force_regions``, one SciPy LP per
  cell and objective; a MILP for the counterfactual's distance);
* a value that is not exact is one found at real points: inside the true range, below the
  true worst case;
* HOLDS only where the truth holds; VIOLATED only with a witness a forward pass confirms;
* the class, margin or disjunct printed are those at the witness, by a forward pass;
* the text says "(exact)", "worst", "the minimum", "the maximum" only of exact values.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polytrav.testing.milp import milp_counterfactual
from reference import brute_force_cells, brute_force_regions, random_net
from scipy.optimize import linprog

from polytrav import Box, Verdict, analyze
from polytrav.plugins.adversarial import SoftmaxAttack
from polytrav.plugins.counterfactual import Counterfactual
from polytrav.plugins.linear_property import LinearProperty
from polytrav.plugins.local_model import LocalModel
from polytrav.plugins.monotonicity import Monotonicity
from polytrav.plugins.output_range import OutputRange
from polytrav.plugins.region_stats import RegionStats
from polytrav.vocabulary.results import Scope
from polytrav.vocabulary.text import describe_result
from polytrav.vocabulary.tolerances import RADIUS_TOL

#: Agreement of a value with the truth (LP optima of well-scaled problems).
TOL = 1e-6
SETTINGS = settings(max_examples=6, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])
#: Words that claim a value over the whole region (printed only when it is exact).
REGION_WORDS = ("(exact)", "worst margin over the region", "(the minimum)", "(the maximum)",
                "over the region:")

cases = st.tuples(
    st.integers(0, 10_000),  # network seed
    st.integers(2, 3),  # inputs
    st.lists(st.integers(1, 5), min_size=1, max_size=3).filter(lambda w: sum(w) <= 8),  # hidden
    st.integers(2, 4),  # outputs
    st.integers(1, 3),  # k: polytopes before the budget or the interrupt
)


class Interrupt:
    """A progress hook raising ``KeyboardInterrupt`` after ``k`` polytopes (Ctrl-C's path)."""

    def __init__(self, k: int):
        self.k, self.seen = k, 0

    def __call__(self, traversal) -> None:
        self.seen += 1
        if self.seen == self.k:
            raise KeyboardInterrupt


def runs(net, box, make, k: int, stop_first=None):
    """``(mode, report)`` of ``make()`` in every mode: full, stop-at-first (``stop_first()``,
    if given), a budget of ``k`` polytopes, interrupted after ``k``."""
    out = [("full", analyze(net, box, make()))]
    if stop_first is not None:
        out.append(("stop-at-first", analyze(net, box, stop_first())))
    out.append(("budget", analyze(net, box, make(), max_polytopes=k)))
    interrupted = analyze(net, box, make(), progress=Interrupt(k), on_interrupt="report")
    out.append(("interrupted", interrupted))
    return out


def check_claims(report, mode: str, truth_exact, below=None) -> None:
    """The claims every result must keep; ``truth_exact(result)`` checks an exact value,
    ``below(result)`` a value that is not (found at real points)."""
    res = report[0]
    what = f"{res.analysis} ({mode}, {report.status.value})"
    assert res.exact == (res.scope is Scope.REGION), what
    assert res.to_dict()["scope"] == res.scope.value
    text = "\n".join(describe_result(res, report.analyses[0], report.network))
    if res.exact:
        truth_exact(res)
    else:
        assert not any(w in text for w in REGION_WORDS), f"{what} claims the region:\n{text}"
        if below is not None:
            below(res)
    if report.partial:
        assert res.verdict in (None, Verdict.UNKNOWN, Verdict.VIOLATED,
                               Verdict.VIOLATED_UNCONFIRMED), what


# ---------------------------------------------------------------- truths


def cell_max(cell, g, g0=0.0) -> float:
    """max g·x + g0 over one cell (input coordinates), -inf if empty."""
    res = linprog(-g, A_ub=cell["A"], b_ub=cell["b"], bounds=[(None, None)] * g.size,
                  method="highs")
    return -res.fun + g0 if res.status == 0 else -np.inf


def cell_depth(cell, C, d) -> float:
    """max t s.t. C (W x + c) + t <= d, t <= 1 over one cell (LinearProperty's LP)."""
    n = cell["W"].shape[1]
    A = np.vstack([np.c_[cell["A"], np.zeros(len(cell["A"]))], np.c_[C @ cell["W"], np.ones(len(C))]])
    b = np.concatenate([cell["b"], d - C @ cell["c"]])
    res = linprog(np.r_[np.zeros(n), -1.0], A_ub=A, b_ub=b,
                  bounds=[(None, None)] * n + [(None, 1.0)], method="highs")
    return -res.fun if res.status == 0 else -np.inf


def worst_margin(cells, label: int) -> float:
    m = cells[0]["W"].shape[0]
    return max(cell_max(c, c["W"][i] - c["W"][label], c["c"][i] - c["c"][label])
               for c in cells for i in range(m) if i != label)


def margin_at(net, x, label: int) -> tuple[int, float]:
    """The class with the largest other logit at ``x`` and its margin over ``label``."""
    y = net.forward(np.asarray(x, float))
    others = [i for i in range(y.size) if i != label]
    cls = max(others, key=lambda i: y[i])
    return cls, float(y[cls] - y[label])


def setup(spec):
    seed, n_in, widths, n_out, k = spec
    net = random_net(seed, n_in, widths, n_out=n_out)
    rng = np.random.default_rng(seed)
    centre = rng.uniform(-1, 1, n_in)
    half = rng.uniform(0.3, 1.5, n_in)
    lo, hi = centre - half, centre + half
    return net, lo, hi, Box(lo, hi), brute_force_regions(net, lo, hi), k, rng


def inside(box, x) -> bool:
    return x is not None and box.contains(np.asarray(x, float), tol=1e-7)


# ---------------------------------------------------------------- the analyses


@SETTINGS
@given(cases)
def test_output_range_claims(spec):
    net, lo, hi, box, cells, k, rng = setup(spec)
    g = rng.standard_normal(net.n_outputs)
    top = max(cell_max(c, g @ c["W"], g @ c["c"]) for c in cells)
    bottom = -max(cell_max(c, -g @ c["W"], -g @ c["c"]) for c in cells)

    def found(res):  # the range found lies inside the true range, at real points
        v, d = res.value, res.details
        if d["argmax"] is None:
            return
        assert bottom - TOL <= v["min"] and v["max"] <= top + TOL
        assert g @ net.forward(d["argmax"]) == pytest.approx(v["max"], abs=TOL)
        assert g @ net.forward(d["argmin"]) == pytest.approx(v["min"], abs=TOL)

    def exact(res):
        assert res.value["max"] == pytest.approx(top, abs=TOL)
        assert res.value["min"] == pytest.approx(bottom, abs=TOL)
        found(res)

    for mode, report in runs(net, box, lambda: OutputRange(weights=g), k):
        check_claims(report, mode, exact, found)


@SETTINGS
@given(cases)
def test_softmax_attack_claims(spec):
    net, lo, hi, box, cells, k, rng = setup(spec)
    label = int(rng.integers(net.n_outputs))
    truth = worst_margin(cells, label)

    def at_witness(res):  # the class and margin printed are the witness's, by a forward pass
        if res.witness is None:
            assert res.value is None
            return
        assert inside(box, res.witness)
        cls, margin = margin_at(net, res.witness, label)
        y = net.forward(res.witness)
        assert y[res.details["class"]] == pytest.approx(y[cls], abs=1e-9)  # (or a tie)
        assert res.value == pytest.approx(margin, abs=1e-9)
        assert res.value <= truth + TOL
        if res.verdict is Verdict.VIOLATED:
            assert margin > 0
        if res.verdict is Verdict.HOLDS:
            assert truth <= TOL

    def exact(res):
        assert res.value == pytest.approx(truth, abs=TOL)
        assert res.verdict is not Verdict.HOLDS or truth <= TOL
        at_witness(res)

    for mode, report in runs(net, box, lambda: SoftmaxAttack(label), k,
                             lambda: SoftmaxAttack(label, mode="verify")):
        check_claims(report, mode, exact, at_witness)
        res = report[0]
        if mode == "stop-at-first" and res.verdict is Verdict.VIOLATED:
            assert res.scope is Scope.WITNESS and not res.exact
        if res.verdict is Verdict.HOLDS:
            assert truth < TOL


@SETTINGS
@given(cases)
def test_linear_property_claims(spec):
    net, lo, hi, box, cells, k, rng = setup(spec)
    m = net.n_outputs
    ys = np.array([net.forward(x) for x in rng.uniform(lo, hi, (64, lo.size))])
    unsafe = []
    for _ in range(int(rng.integers(1, 3))):
        C = rng.standard_normal((int(rng.integers(1, 3)), m))
        C /= np.linalg.norm(C, axis=1)[:, None]
        d = np.quantile(ys @ C.T, rng.uniform(0.05, 0.6), axis=0)
        unsafe.append((C, d))
    truth = max(cell_depth(c, C, d) for c in cells for C, d in unsafe)

    def at_witness(res):
        if res.witness is None:
            return
        assert inside(box, res.witness)
        y = net.forward(res.witness)
        depth = [min(1.0, float(np.min(d - C @ y))) for C, d in unsafe]
        assert depth[res.details["disjunct"]] == pytest.approx(max(depth), abs=1e-9)  # ties
        assert res.value == pytest.approx(max(depth), abs=1e-9)
        assert res.value <= truth + TOL
        if res.verdict is Verdict.VIOLATED:
            assert res.value >= -1e-9

    def exact(res):
        assert res.value == pytest.approx(truth, abs=TOL)
        at_witness(res)

    for mode, report in runs(net, box, lambda: LinearProperty(unsafe, mode="all"), k,
                             lambda: LinearProperty(unsafe, mode="verify")):
        check_claims(report, mode, exact, at_witness)
        if report[0].verdict is Verdict.HOLDS:
            assert truth < TOL


@SETTINGS
@given(cases)
def test_monotonicity_claims(spec):
    net, lo, hi, box, cells, k, rng = setup(spec)
    j, out = int(rng.integers(lo.size)), int(rng.integers(net.n_outputs))
    radii = brute_force_cells(net, lo, hi)
    # slopes of the cells every traversal visits, and of those it may (a tolerance band)
    slopes = {np.packbits(c["code"]).tobytes(): c["W"][out, j] for c in cells}
    sure = [s for key, s in slopes.items() if radii.get(key, 0) > 10 * RADIUS_TOL]
    maybe = [s for key, s in slopes.items() if radii.get(key, 0) > RADIUS_TOL / 10]

    def found(res):
        v = res.value
        if v["min_slope"] is not None:
            assert min(maybe) - TOL <= v["min_slope"] <= v["max_slope"] <= max(maybe) + TOL
        pair = res.details["witness_pair"]
        if res.verdict is Verdict.VIOLATED:  # the pair, by a forward pass
            x1, x2 = pair
            assert inside(box, x1) and inside(box, x2) and x2[j] > x1[j]
            dy = net.forward(x2)[out] - net.forward(x1)[out]
            assert dy < 0 if res.details["direction"] == "increasing" else dy > 0

    def exact(res):
        v = res.value
        assert min(maybe) - TOL <= v["min_slope"] <= min(sure) + TOL
        assert max(sure) - TOL <= v["max_slope"] <= max(maybe) + TOL
        found(res)

    def make():
        return Monotonicity(j, "increasing", output=out)

    for mode, report in runs(net, box, make, k,
                             lambda: Monotonicity(j, "increasing", output=out, stop_at_first=True)):
        check_claims(report, mode, exact, found)
        if report[0].verdict is Verdict.HOLDS:
            assert min(sure) >= -TOL


@SETTINGS
@given(cases)
def test_region_stats_claims(spec):
    net, lo, hi, box, cells, k, rng = setup(spec)
    radii = brute_force_cells(net, lo, hi)
    sure = sum(r > 10 * RADIUS_TOL for r in radii.values())
    maybe = sum(r > RADIUS_TOL / 10 for r in radii.values())

    def exact(res):
        assert sure <= res.value["polytopes"] <= maybe

    def found(res):
        assert res.value["polytopes"] == res.n_polytopes <= maybe

    for mode, report in runs(net, box, lambda: RegionStats(volumes=False), k):
        check_claims(report, mode, exact, found)


@SETTINGS
@given(cases)
def test_counterfactual_claims(spec):
    seed, n_in, widths, _, k = spec
    net, lo, hi, box, _, k, rng = setup((seed, n_in, widths, 1, k))
    x0 = rng.uniform(lo, hi)
    truth = milp_counterfactual(net, x0, np.inf, lo, hi)
    assert truth.status in ("optimal", "infeasible"), truth.status  # infeasible: none exists
    cls0 = int(net.forward(x0)[0] >= 0)

    def found(res):
        if res.value is None:
            return
        assert res.value >= truth.value - TOL  # a distance found is at least the minimum
        if res.witness is not None:  # its class is the other one, by a forward pass
            assert inside(box, res.witness)
            assert int(net.forward(res.witness)[0] >= 0) != cls0

    def exact(res):
        if not np.isfinite(truth.value):
            assert res.value is None
            return
        assert res.value == pytest.approx(truth.value, abs=TOL)
        found(res)

    for mode, report in runs(net, box, lambda: Counterfactual(x0, norm=np.inf), k):
        check_claims(report, mode, exact, found)


@SETTINGS
@given(cases)
def test_local_model_claims(spec):
    net, lo, hi, box, _, k, rng = setup(spec)
    x0 = rng.uniform(lo, hi)

    def exact(res):  # the local model at x0 is known whatever the run: output by a forward pass
        kk = res.details["output_index"]
        assert kk == int(np.argmax(net.forward(x0)))
        assert res.value["output"] == pytest.approx(net.forward(x0)[kk], abs=1e-9)

    for mode, report in runs(net, box, lambda: LocalModel(x0), k):
        check_claims(report, mode, exact)
