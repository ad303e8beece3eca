"""analyze(): analyses by name or instance, reports, directives, fallbacks and bad input."""
import json
import signal

import numpy as np

import pytest
from reference import random_net

from polytrav import (Analysis, AnalysisResult, Box, ConfigError, Network, RegionError, Report,
                      Status, Verdict, analyze)
from polytrav.bounds.lagrange import CellBound
from polytrav.host.manager import analysis_classes, create_analysis
from polytrav.plugins.counterfactual import Counterfactual
from polytrav.plugins.linear_property import LinearProperty
from polytrav.plugins.output_range import OutputRange
from polytrav.vocabulary.results import SolveResult
from polytrav.traversal import Traversal
from polytrav.solvers.highs import HighsBackend

BOX = Box([-1.0, -1.0], [1.0, 1.0])


@pytest.fixture
def net():
    return random_net(1, 2, [8, 6])


#: 7 inputs: above VERTEX_MAX_DIM, so the analyses cannot read optima off vertices and solve LPs
BOX7 = Box(-0.5 * np.ones(7), 0.5 * np.ones(7))


@pytest.fixture
def net7():
    return random_net(1, 7, [6, 4])


@pytest.fixture
def classifier():
    return random_net(5, 2, [8, 6], n_out=3)


def test_builtins_are_registered_by_contract_names():
    assert {"output_range", "softmax_attack", "counterfactual", "monotonicity",
            "linear_property", "region_stats"} <= set(analysis_classes())


def test_names_tuples_dicts_and_instances_give_the_same_answer(net):
    by_instance = analyze(net, BOX, OutputRange(output=0))
    by_name = analyze(net, BOX, "output_range")
    by_pair = analyze(net, BOX, [("output_range", {"output": 0})])
    by_dict = analyze(net, BOX, [{"name": "output_range", "output": 0}])
    values = [r[0].value for r in (by_instance, by_name, by_pair, by_dict)]
    assert all(v == values[0] for v in values)


def test_report_is_indexable_labelled_and_json_safe(net):
    report = analyze(net, BOX, ["output_range", ("output_range", {"weights": [2.0]}),
                                "region_stats"])
    assert isinstance(report, Report) and len(report) == 3 and report.complete
    assert [r.analysis for r in report] == ["output_range", "output_range#2", "region_stats"]
    assert report["output_range#2"].value["max"] == pytest.approx(2 * report[0].value["max"])
    assert report.stats["polytopes"] == report["region_stats"].value["polytopes"]
    json.dumps(report.to_dict())


def test_unknown_analysis_name_lists_the_known_ones(net):
    with pytest.raises(ConfigError, match=r"unknown analysis 'counterfactuals'.*'counterfactual'"):
        analyze(net, BOX, "counterfactuals")


def test_a_parameter_the_analysis_does_not_take(net):
    with pytest.raises(ConfigError, match=r"does not take parameter\(s\) \['p'\]; it takes"):
        create_analysis("counterfactual", x0=[0, 0], p=2)


@pytest.mark.parametrize("spec, error, match", [
    ({"x0": [5.0, 0.0]}, RegionError, "x0 is outside the region"),
    ({"x0": [0.0, 0.0, 0.0]}, ConfigError, "x0 has 3 coordinates but the network takes 2"),
    ({"x0": [np.nan, 0.0]}, ConfigError, "NaN"),
    ({"x0": [0.1, 0.1], "norm": 3}, ConfigError, "norm must be 1, 2 or inf"),
    ({"x0": [0.1, 0.1], "target": 7}, ConfigError, "target must be a class"),
    ({"x0": [0.1, 0.1], "immutable": [2]}, ConfigError, "immutable must be distinct input indices"),
    ({"x0": [0.1, 0.1], "search": "dfs"}, ConfigError, "search must be one of"),
])
def test_counterfactual_bad_input(classifier, spec, error, match):
    with pytest.raises(error, match=match):
        analyze(classifier, BOX, Counterfactual(**spec))


def test_counterfactual_target_that_is_x0s_class(classifier):
    x0 = np.array([0.1, 0.1])
    own = int(np.argmax(classifier.forward(x0)))
    with pytest.raises(ConfigError, match="is x0's own class"):
        analyze(classifier, BOX, Counterfactual(x0, target=own))


@pytest.mark.parametrize("spec, match", [
    (("softmax_attack", {"label": 3}), r"label must be a class in \[0, 3\)"),
    (("softmax_attack", {"label": 0, "mode": "fast"}), "mode must be one of"),
    (("output_range", {"output": 3}), r"output must be an integer in \[0, 3\)"),
    (("output_range", {"weights": [1.0, 2.0]}), "weights must be 3 finite numbers"),
    (("monotonicity", {"feature": 2}), r"feature must be an input index in \[0, 2\)"),
    (("monotonicity", {"feature": 0, "direction": "up"}), "direction must be one of"),
    (("linear_property", {"unsafe": [([[1.0, 0.0]], [0.0])]}), r"expected C \(k, 3\)"),
    (("linear_property", {"unsafe": []}), "unsafe is empty"),
])
def test_analysis_parameter_errors(classifier, spec, match):
    with pytest.raises(ConfigError, match=match):
        analyze(classifier, BOX, [spec])


def test_softmax_attack_needs_several_outputs(net):
    with pytest.raises(ConfigError, match="at least 2 outputs"):
        analyze(net, BOX, ("softmax_attack", {"label": 0}))


def test_solver_configuration_errors(net):
    with pytest.raises(ConfigError, match="unknown solver 'glpk'"):
        analyze(net, BOX, "output_range", solver="glpk")
    with pytest.raises(ConfigError, match="solver keys must be problem forms"):
        analyze(net, BOX, "output_range", solver={"sdp": "highs"})
    with pytest.raises(ConfigError, match="does not serve 'qp' problems"):
        analyze(net, BOX, "output_range", solver={"qp": "highs"})
    with pytest.raises(ConfigError, match="does not serve 'milp' problems"):
        analyze(net, BOX, "output_range", solver={"milp": "scipy"})


# ---------------------------------------------------------------- failures and fallbacks


class FailingBackend(HighsBackend):
    """HiGHS, except that the chosen ``solve_lp`` calls (0-based) return an error."""

    name = "failing"

    def __init__(self, fail_on=(), options=None):
        super().__init__(options)
        self.fail_on = set(fail_on)
        self.calls = 0

    def solve_lp(self, *args, **kwargs):
        k = self.calls
        self.calls += 1
        if k in self.fail_on or "all" in self.fail_on:
            return SolveResult(Status.ERROR, solver=self.name, message=f"injected failure {k}")
        return super().solve_lp(*args, **kwargs)


def barely_holds(net, region):
    """``y <= min(y) - 0.001`` as an unsafe set: it holds, and some cells need an LP."""
    low = analyze(net, region, OutputRange())[0].value["min"]
    return [(np.array([[1.0]]), np.array([low - 1e-3]))]


def test_a_lost_lp_makes_the_verdict_unknown_not_holds(net7):
    prop = barely_holds(net7, BOX7)
    clean = analyze(net7, BOX7, LinearProperty(prop, bounds=False), strategy="hierarchical")[0]
    assert clean.verdict is Verdict.HOLDS and clean.n_solves > 0
    report = analyze(net7, BOX7, LinearProperty(prop, bounds=False),
                     solver=[FailingBackend(fail_on={0})], strategy="hierarchical")
    result = report[0]
    assert report.complete and result.verdict is Verdict.UNKNOWN and not result.exact
    assert "injected failure 0" in result.failures[0]
    assert len(result.failures) == 1


def test_a_failed_solve_is_retried_on_the_next_backend(net7):
    prop = barely_holds(net7, BOX7)
    backend = FailingBackend(fail_on={"all"})
    report = analyze(net7, BOX7, LinearProperty(prop), solver={"lp": backend}, settle=False)
    # proven (verify mode: the value covers the LPs solved, not the region; no settle
    # stage: the traversal's subproblems are what fall back)
    assert report[0].verdict is Verdict.HOLDS and not report[0].failures
    assert report.solver["lp"][0] == "failing" and len(report.solver["lp"]) > 1
    assert report.stats["subproblem_fallbacks"] >= report[0].n_solves > 0


def test_output_range_with_a_lost_lp_is_inexact(net7, monkeypatch):
    # the cell LPs go through the backend chain only where the traversal's model cannot serve
    monkeypatch.setattr(Traversal, "maximize_in_cell", lambda self, polytope, g: None)
    monkeypatch.setattr(CellBound, "use_box_lp", False)
    report = analyze(net7, BOX7, OutputRange(), solver=[FailingBackend(fail_on={"all"})],
                     strategy="hierarchical")
    assert not report[0].exact and report[0].failures


def test_cell_lps_in_the_traversal_model_equal_the_subproblem_path(net7, monkeypatch):
    """OutputRange's LPs solved in the traversal's warm model give the subproblem path's optima."""
    monkeypatch.setattr(CellBound, "use_box_lp", False)
    direct = analyze(net7, BOX7, [OutputRange(0), OutputRange(weights=[1.0] * net7.n_outputs)],
                     strategy="hierarchical")
    assert direct.stats["subproblem_in_traversal_model"] > 10
    assert direct.stats["subproblem_in_traversal_model"] == direct.stats["subproblem_solves"]
    monkeypatch.setattr(Traversal, "maximize_in_cell", lambda self, polytope, g: None)
    compiled = analyze(net7, BOX7, [OutputRange(0), OutputRange(weights=[1.0] * net7.n_outputs)],
                       strategy="hierarchical")
    assert compiled.stats["subproblem_in_traversal_model"] == 0
    for a, b in zip(direct, compiled):
        for key in ("min", "max"):
            assert a.value[key] == pytest.approx(b.value[key], abs=1e-9), key
    assert direct.stats["polytopes"] == compiled.stats["polytopes"]
    monkeypatch.setattr(CellBound, "use_box_lp", True)
    boxed = analyze(net7, BOX7, [OutputRange(0), OutputRange(weights=[1.0] * net7.n_outputs)],
                    strategy="hierarchical")
    assert boxed.stats["subproblem_box_lp"] > 0
    for a, b in zip(direct, boxed):
        for key in ("min", "max"):
            assert a.value[key] == pytest.approx(b.value[key], abs=1e-9), key


# ---------------------------------------------------------------- directives and interrupts


class Interrupting(Analysis):
    name = "interrupting"

    def __init__(self, after: int = 3):
        self.after = after

    def visit(self, polytope, context):
        if self.n_polytopes > self.after:
            raise KeyboardInterrupt
        return None

    def finish(self, context):
        return AnalysisResult(self.label, None, self.n_polytopes, exact=self.exact(context))


def test_ctrl_c_is_re_raised_by_default(net):
    with pytest.raises(KeyboardInterrupt):
        analyze(net, BOX, [Interrupting(after=3), "output_range"])


def test_ctrl_c_gives_a_partial_report_when_asked(net):
    report = analyze(net, BOX, [Interrupting(after=3), "output_range"], on_interrupt="report")
    assert report.status.value == "interrupted" and not report.complete and report.partial
    assert report[0].value == 4 and not report[0].exact and not report[1].exact
    assert str(report).startswith("PARTIAL REPORT (interrupted)")


class CtrlCWhileFinishing(Analysis):
    """Ctrl-C while the run's answer is being made (``finish``), after the traversal ended."""
    name = "ctrl_c_while_finishing"

    def visit(self, polytope, context):
        return None

    def finish(self, context):
        signal.raise_signal(signal.SIGINT)
        return AnalysisResult(self.label, None, self.n_polytopes, exact=self.exact(context))


def test_a_ctrl_c_while_the_answer_is_made_keeps_it_when_a_report_is_asked(net, ctrl_c_raises):
    """The traversal had ended: the Ctrl-C asks for the report being made, whole (it lost
    the answer: "interrupted before the command finished")."""
    report = analyze(net, BOX, [CtrlCWhileFinishing(), "output_range"], on_interrupt="report")
    assert report.complete and report[0].exact and report[1].exact
    assert report[0].value == report.stats["polytopes"]
    with pytest.raises(KeyboardInterrupt):  # the default: the Ctrl-C is raised, as asked
        analyze(net, BOX, [CtrlCWhileFinishing(), "output_range"])


def test_unknown_on_interrupt_is_refused(net):
    with pytest.raises(ConfigError, match="on_interrupt"):
        analyze(net, BOX, "output_range", on_interrupt="ignore")


def test_a_decided_run_is_not_partial(net):
    reachable = [(np.array([[-1.0]]), np.array([1e3]))]
    report = analyze(net, BOX, LinearProperty(reachable))
    assert report.decided and not report.partial and "stopped early" in str(report)


def test_stop_ends_the_run_once_every_analysis_is_decided(net):
    reachable = [(np.array([[-1.0]]), np.array([1e3]))]  # y >= -1000: everywhere
    report = analyze(net, BOX, LinearProperty(reachable), settle=False)
    # a final verdict; its value is the witness's, not the region's
    assert report[0].verdict is Verdict.VIOLATED and not report[0].exact
    assert report.stats["polytopes"] == 1 and report.status.value == "stopped"
    settled = analyze(net, BOX, LinearProperty(reachable))  # the settle stage's attack
    assert settled[0].verdict is Verdict.VIOLATED and settled.status.value == "stopped"
    assert settled.stats["polytopes"] == 0 and settled.stats["settle"]["by"] == "attack"
    both = analyze(net, BOX, [LinearProperty(reachable), "region_stats"])
    assert both.complete and both[1].value["polytopes"] > 1


def test_same_instance_twice_is_refused(net):
    a = OutputRange()
    with pytest.raises(ConfigError, match="twice"):
        analyze(net, BOX, [a, a])


def test_affine_network():
    net = Network.from_arrays([[[1.0, -2.0]]], [[0.5]])
    report = analyze(net, BOX, "output_range")
    assert report[0].value == {"min": pytest.approx(-2.5), "max": pytest.approx(3.5)}


def test_a_traversal_that_lost_an_lp_gives_unknown(net):
    """The traversal's own LPs fail (no fallback): the property is UNKNOWN, never HOLDS."""
    from polytrav.solvers.scipy import ScipyBackend

    class Flaky(ScipyBackend):
        name = "flaky"
        calls = 0

        def solve_lp(self, *args, **kwargs):
            type(self).calls += 1
            if type(self).calls % 4 == 0:
                return SolveResult(Status.ERROR, solver=self.name, message="injected")
            return super().solve_lp(*args, **kwargs)

    report = analyze(net, BOX, LinearProperty(barely_holds(net, BOX)), solver=[Flaky()],
                     settle=False)  # the traversal's LPs, not the settle stage's split
    assert report.status.value == "solver_failure" and not report.complete
    assert report[0].verdict is Verdict.UNKNOWN and not report[0].exact


def test_progress_is_called_once_per_polytope(net):
    seen = []
    report = analyze(net, BOX, OutputRange(), progress=lambda trav: seen.append(trav.stats.polytopes))
    assert seen == list(range(1, report.stats["polytopes"] + 1))
