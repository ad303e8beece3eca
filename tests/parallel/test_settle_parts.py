"""A settle stage's open boxes as parts (issue 59): on an executor they run as the parts of
the run, and answer as the boxes run one after the other do."""
from __future__ import annotations

import numpy as np
import pytest
from reference import random_net

from polytrav import Box, Verdict, analyze
from polytrav.parallel import SerialExecutor, get_executor
from polytrav.plugins.linear_property import LinearProperty

REGION = Box(-np.ones(3), np.ones(3))


def runs(executor):
    """Per seed, the run of a LinearProperty whose split leaves boxes open (4 boxes, no deep
    search), with ``executor`` (None: the boxes in turn), for the nets where it does."""
    out = []
    for seed in range(10):
        net = random_net(seed, 3, [8, 8, 6], n_out=2)
        y = net.forward(np.random.default_rng(seed).uniform(-1, 1, (400, 3)))
        level = y[:, 0].max() + 0.1 * np.ptp(y[:, 0]) * (seed % 3 - 1)
        out.append(analyze(net, REGION, LinearProperty([(np.array([[-1.0, 0.0]]),
                                                         np.array([-level]))]),
                           executor=executor))
    return out


@pytest.fixture
def few_boxes(monkeypatch):
    import polytrav.bounds.settle as settle

    monkeypatch.setattr("polytrav.bounds.split.SPLIT_BOXES", 4)
    monkeypatch.setattr("polytrav.bounds.split.SPLIT_MAX_BOXES", 4)
    monkeypatch.setattr(settle, "VERIFY_POLICY", settle.SettlePolicy(deep_seconds=0.0))


def assert_same(serial, parted):
    opened = 0
    for a, b in zip(serial, parted):
        assert a[0].verdict is b[0].verdict and a[0].exact == b[0].exact
        assert a.stats["settle"]["open_boxes"] == b.stats["settle"]["open_boxes"]
        if a[0].verdict is Verdict.HOLDS:  # every box ran, in either way
            assert a.complete and b.complete
            assert a.stats["polytopes"] == b.stats["polytopes"]
            assert a.stats["settle"]["boxes_run"] == b.stats["settle"]["boxes_run"]
        if b.stats["settle"]["open_boxes"] > 1:
            opened += 1
            assert b.stats["settle"]["boxes_run"] >= 1
    assert opened, "no run left several boxes open"


def test_open_boxes_run_as_parts_on_a_process_pool(few_boxes):
    serial = runs(None)
    with get_executor(2) as pool:
        assert_same(serial, runs(pool))
    assert_same(serial, runs(SerialExecutor()))


def test_open_boxes_run_as_parts_on_a_dask_cluster(few_boxes):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        assert_same(runs(None), runs(client.get_executor()))
