"""polytrav.testing on the built-ins and the example plugin: every analysis and backend passes
the contract a third party checks its own plugin against, and the checks catch what they say.
"""
import numpy as np
import pytest
from scipy.optimize import linprog

from polytrav import Analysis, AnalysisResult, Verdict, available_solvers
from polytrav.testing import check_analysis, check_backend


def _output_extremes(net, region, cells):
    """min and max of the output over every cell, by an LP per cell (SciPy, not polytrav)."""
    lo, hi = np.inf, -np.inf
    for cell in cells:
        for sign in (1.0, -1.0):
            res = linprog(sign * cell["W"][0], A_ub=cell["A"], b_ub=cell["b"],
                          bounds=(None, None), method="highs")
            value = sign * res.fun + cell["c"][0]
            lo, hi = min(lo, value), max(hi, value)
    return lo, hi


def _output_range(net, region, cells):
    lo, hi = _output_extremes(net, region, cells)
    return {"value": {"min": lo, "max": hi}}


def _property(net, region, cells):
    """y >= 0.5 somewhere: violated iff the maximum reaches it."""
    return {"verdict": Verdict.VIOLATED if _output_extremes(net, region, cells)[1] >= 0.5
            else Verdict.HOLDS}


def _model_diff(net, region, cells):
    """Output 1 against output 0 (the joint network of two one-output models): the extremes
    of y1 - y0 by an LP per cell, and the verdict at epsilon 1."""
    lo, hi = np.inf, -np.inf
    for cell in cells:
        w, c = cell["W"][1] - cell["W"][0], cell["c"][1] - cell["c"][0]
        for sign in (1.0, -1.0):
            res = linprog(sign * w, A_ub=cell["A"], b_ub=cell["b"], bounds=(None, None),
                          method="highs")
            value = sign * res.fun + c
            lo, hi = min(lo, value), max(hi, value)
    worst = max(hi, -lo)
    return {"value": {"max_abs": worst, "max": hi, "min": lo},
            "verdict": Verdict.VIOLATED if worst > 1.0 else Verdict.HOLDS}


#: (name, parameters, options of check_analysis, checks skipped and why)
BUILT_INS = [
    ("output_range", {}, {"reference": _output_range}, ()),
    ("local_model", {"x0": [0.1, 0.2]}, {"row_options": {}}, ()),
    ("linear_property", {"unsafe": ([[-1.0]], [-0.5])}, {"reference": _property}, ()),
    ("softmax_attack", {"label": 0}, {"n_outputs": 3}, ()),
    ("counterfactual", {"x0": [0.1, 0.2], "norm": 1}, {"row_options": {"norm": 1}}, ()),
    ("counterfactual", {"x0": [0.1, 0.2], "norm": 2}, {}, ()),
    ("counterfactual", {"x0": [0.1, 0.2], "norm": np.inf}, {}, ()),
    ("monotonicity", {"feature": 0}, {}, ()),
    # min_radius is the smallest Polytope.radius a run reports: the Chebyshev radius under the
    # LP traversal, a certified inscribed radius (smaller) under subdivision
    ("region_stats", {}, {}, ("parts", "strategies")),
    ("model_diff", {"epsilon": 1.0}, {"n_outputs": 2, "reference": _model_diff}, ()),
]


@pytest.mark.parametrize("name,params,options,skip", BUILT_INS,
                         ids=[f"{b[0]}-{k}" for k, b in enumerate(BUILT_INS)])
def test_every_built_in_analysis_passes_the_contract(name, params, options, skip):
    ran = check_analysis(name, params=params, skip=skip, **options)
    assert "runs" in ran and "strategies" in ran or "strategies" in skip


@pytest.mark.parametrize("name", sorted(n for n in {*available_solvers("lp"), *available_solvers("qp")}
                                        if not n.startswith("cvxpy:")))  # those: test_contract
def test_every_built_in_backend_passes_the_contract(name):
    assert "known_answers" in check_backend(name)


@pytest.fixture
def autoload(monkeypatch, example_plugin):
    monkeypatch.setenv("POLYTRAV_DISABLE_PLUGIN_AUTOLOAD", "0")


def test_the_example_plugin_passes_the_contract(autoload):
    assert check_analysis("output_bounds", params={"lower": -1.0, "upper": 1.0})
    assert check_backend("example-lp")


class Forgetful(Analysis):
    """Counts polytopes but never resets its count, and takes any parameter."""

    name = "forgetful"
    seen = 0

    def __init__(self, **anything):
        self.anything = anything

    def visit(self, polytope, context):
        type(self).seen += 1

    def finish(self, context):
        return AnalysisResult(self.label, None, float(type(self).seen))


def test_the_checks_name_what_a_broken_analysis_gets_wrong():
    with pytest.raises(AssertionError) as info:
        check_analysis(Forgetful, registered=False)
    text = str(info.value)
    assert "run twice" in text  # the count is not reset by begin
    assert "fails" in text and "contract checks" in text


def test_an_unregistered_analysis_is_told_how_to_register():
    with pytest.raises(AssertionError, match="polytrav_add_analyses"):
        check_analysis(Forgetful)
