"""Runs in parts: serial, process pool and a real Dask cluster give the serial run's answers."""
from __future__ import annotations

import numpy as np
import pytest
from parallel_faults import DieOnce
from records import same_records
from reference import random_net

from polytrav import Box, ConfigError, analyze
from polytrav.parallel import SerialExecutor, get_executor
from polytrav.plugins.adversarial import SoftmaxAttack
from polytrav.plugins.counterfactual import Counterfactual
from polytrav.plugins.linear_property import LinearProperty
from polytrav.plugins.monotonicity import Monotonicity
from polytrav.plugins.output_range import OutputRange
from polytrav.plugins.region_stats import RegionStats
from polytrav.traversal import TraversalStatus

NET = random_net(6, 3, [8, 8], n_out=3)
REGION = Box(-np.ones(3), np.ones(3))


def analyses(example_plugin):
    """The built-in analyses and a third-party plugin's (the installed example package's:
    process-pool and Dask workers import it by name, as they would any user's plugin)."""
    return [OutputRange(output=1), RegionStats(), Monotonicity(0),
            SoftmaxAttack(0, mode="worst"), Counterfactual(np.zeros(3), norm=1),
            LinearProperty([([[1.0, -1.0, 0.0]], [-50.0])], mode="verify"),
            example_plugin.OutputBounds(lower=-100.0, upper=100.0)]


def codes(report):
    return sorted(code for _, _, code, _ in report["region_stats"].details["polytopes"])


def assert_same(serial, parted):
    assert parted.complete and serial.complete
    assert parted.stats["polytopes"] == serial.stats["polytopes"]
    assert codes(parted) == codes(serial)  # the same polytopes, none twice
    for a, b in zip(serial.results, parted.results):
        assert a.analysis == b.analysis and a.verdict == b.verdict
        # final: an exact value, or a proven verdict (verify mode's value is not the region's)
        assert a.exact == b.exact and a.scope == b.scope
        assert a.exact or a.verdict.value in ("holds", "violated")
        if isinstance(a.value, dict):
            for key in a.value:
                assert a.value[key] == pytest.approx(b.value[key], rel=1e-9, abs=1e-9), key
        elif a.value is None or b.value is None:
            assert a.value is None and b.value is None
        else:
            assert a.value == pytest.approx(b.value, rel=1e-9, abs=1e-9)
    assert parted["region_stats"].value["per_level"] == serial["region_stats"].value["per_level"]
    assert len(parted["region_stats"].details["edges"]) == len(serial["region_stats"].details["edges"])


@pytest.fixture(scope="module", params=["auto", "hierarchical"])
def serial(request, example_plugin):
    """``(strategy, report)``: the plain run of :func:`analyses` (skips without the example
    plugin installed) by the default strategy (here subdivision, whose parts are the level-1
    pieces of its first layer) and by the traversal."""
    return request.param, analyze(NET, REGION, analyses(example_plugin), strategy=request.param)


def test_serial_executor_in_parts_equals_the_plain_run(serial, example_plugin):
    strategy, plain = serial
    assert_same(plain, analyze(NET, REGION, analyses(example_plugin), executor=SerialExecutor(),
                               parts=7, strategy=strategy))


def test_process_pool_equals_the_serial_run(serial, example_plugin):
    strategy, plain = serial
    with get_executor(2) as pool:
        assert_same(plain, analyze(NET, REGION, analyses(example_plugin), executor=pool,
                                   strategy=strategy))


def test_a_violation_stops_the_run_in_parts():
    prop = LinearProperty([([[-1.0, 0.0, 0.0]], [0.0])], mode="verify")  # y0 >= 0 somewhere
    report = analyze(NET, REGION, prop, executor=SerialExecutor(), parts=20)
    # the verdict is final; the value is the witness's (the run stopped there)
    assert report[0].verdict.value == "violated" and report[0].scope.value == "witness"
    assert report.status is TraversalStatus.STOPPED
    assert report.stats["parts"] < 20


def test_an_analysis_without_combine_is_refused():
    from polytrav import Analysis

    class Plain(Analysis):
        name = "plain"

        def visit(self, polytope, context):
            return None

    with pytest.raises(ConfigError, match=r"\['plain'\] do not implement combine"):
        analyze(NET, REGION, Plain(), executor=SerialExecutor())


def test_polytope_budget_in_parts_is_incomplete():
    report = analyze(NET, REGION, OutputRange(), executor=SerialExecutor(), parts=10,
                     max_polytopes=20)
    assert report.status is TraversalStatus.POLYTOPE_LIMIT and not report[0].exact


def test_a_killed_pool_worker_makes_the_run_incomplete(tmp_path):
    with get_executor(2) as pool:
        report = analyze(NET, REGION, DieOnce(str(tmp_path / "died")), executor=pool, parts=6)
    assert (tmp_path / "died").exists()
    assert report.status is TraversalStatus.WORKER_LOST and not report.complete
    assert not report[0].exact and report.stats["lost_parts"] >= 1
    assert any("BrokenProcessPool" in f for f in report.stats["failures"])


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client


def test_dask_cluster_traversal_equals_the_serial_run(serial, example_plugin, dask_client):
    dask_client.wait_for_workers(2)  # both up (a worker killed by a test before restarts)
    strategy, plain = serial
    report = analyze(NET, REGION, analyses(example_plugin), executor=dask_client.get_executor(),
                     strategy=strategy)
    assert_same(plain, report)
    assert report.stats["workers"] == 2


def test_dask_retries_the_part_of_a_killed_worker(dask_client, tmp_path):
    alone = analyze(NET, REGION, OutputRange(output=0))
    report = analyze(NET, REGION, DieOnce(str(tmp_path / "died")),
                     executor=dask_client.get_executor(), parts=6)
    assert (tmp_path / "died").exists()  # a worker really died ...
    assert report.complete and report[0].exact  # ... and its part was retried
    assert report[0].value == pytest.approx(alone[0].value)
    assert report.stats["polytopes"] == alone.stats["polytopes"]


def test_dask_batch_of_instances_equals_serial(dask_client, tmp_path):
    from polytrav.verification.vnnlib import parse_vnnlib
    from polytrav.verification.verify import verify_many

    def spec(limit):
        text = "".join(f"(declare-const X_{i} Real)" for i in range(3)) + "(declare-const Y_0 Real)" \
            + "(declare-const Y_1 Real)(declare-const Y_2 Real)" \
            + "".join(f"(assert (>= X_{i} -1))(assert (<= X_{i} 1))" for i in range(3)) \
            + f"(assert (>= Y_0 {limit}))"
        return parse_vnnlib(text)

    jobs = [(NET, spec(limit), None) for limit in (-5.0, 0.0, 5.0, 50.0, 500.0)]
    serial = dict(verify_many(jobs))
    parallel = dict(verify_many(jobs, executor=dask_client.get_executor()))
    assert sorted(parallel) == list(range(len(jobs)))
    assert [parallel[i].answer for i in range(len(jobs))] == [serial[i].answer for i in range(len(jobs))]
    assert {serial[i].answer for i in serial} == {"sat", "unsat"}


def test_dask_explain_equals_the_serial_run(dask_client):
    """``explain`` over a dataset on a Dask cluster: chunks of rows on two worker processes,
    each with its own session, give the serial table."""
    from polytrav import explain

    X = np.random.default_rng(4).uniform(-0.9, 0.9, (12, 3))
    specs = [("counterfactual", {"norm": 1, "immutable": [2]}), "local_model",
             ("output_range", {"radius": 0.2, "output": 1})]
    serial = explain(NET, X, specs, domain=REGION)
    parted = explain(NET, X, specs, domain=REGION, executor=dask_client.get_executor(),
                     chunk_size=3)
    same_records(parted.records(), serial.records())
    assert all(r.ok for r in parted) and len(parted.records()) == 12


def test_a_batch_time_limit_answers_timeout_for_what_did_not_start(tmp_path):
    from polytrav.verification.vnnlib import parse_vnnlib
    from polytrav.verification.verify import verify_many

    text = "".join(f"(declare-const X_{i} Real)" for i in range(3)) \
        + "(declare-const Y_0 Real)(declare-const Y_1 Real)(declare-const Y_2 Real)" \
        + "".join(f"(assert (>= X_{i} -1))(assert (<= X_{i} 1))" for i in range(3)) \
        + "(assert (>= Y_0 500.0))"
    jobs = [(NET, parse_vnnlib(text), None)] * 3
    results = dict(verify_many(jobs, time_limit=1e-9, bounds=False))
    assert [results[i].answer for i in range(3)] == ["timeout"] * 3
    assert "time limit was spent" in results[2].reason
    with get_executor(2) as pool:
        results = dict(verify_many(jobs, executor=pool, time_limit=1e-9))
    assert {r.answer for r in results.values()} == {"timeout"}


def test_ctrl_c_in_a_run_in_parts_re_raises_or_reports_the_parts_done():
    def interrupt(progress):
        if progress.pieces_done >= 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        analyze(NET, REGION, OutputRange(output=1), executor=SerialExecutor(), parts=4,
                progress=interrupt)
    report = analyze(NET, REGION, OutputRange(output=1), executor=SerialExecutor(), parts=4,
                     progress=interrupt, on_interrupt="report")
    assert report.status is TraversalStatus.INTERRUPTED and report.partial
    assert not report[0].exact and report.stats["polytopes"] > 0


def test_serial_and_parted_reports_count_subproblems_under_the_same_keys():
    from polytrav.host.runner import SUBPROBLEM_STATS

    serial = analyze(NET, REGION, Counterfactual(np.zeros(3), norm=2))
    parted = analyze(NET, REGION, Counterfactual(np.zeros(3), norm=2),
                     executor=SerialExecutor(), parts=3)
    for report in (serial, parted):
        assert set(SUBPROBLEM_STATS) <= set(report.stats), sorted(report.stats)


def test_serial_and_parted_reports_have_the_same_stats_keys(tmp_path):
    """``Report.stats`` has one set of keys: a serial run, a run in parts and a checkpointed
    run report the same ones (a serial run as a run in no parts)."""
    from polytrav.host.stats import PART_STATS

    serial = analyze(NET, REGION, OutputRange(output=1))
    parted = analyze(NET, REGION, OutputRange(output=1), executor=SerialExecutor(), parts=2)
    saved = analyze(NET, REGION, OutputRange(output=1), checkpoint=tmp_path / "run.json", parts=2)
    assert set(serial.stats) == set(parted.stats) == set(saved.stats)
    assert set(PART_STATS) <= set(serial.stats)
    assert serial.stats["parts"] == 0 and serial.stats["part_seconds"] == []
    assert parted.stats["parts"] == saved.stats["parts"] == 2
