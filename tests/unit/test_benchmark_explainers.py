"""``benchmarks/explainers.py``, polytrav's side and the judging of peers' answers, on a
small network with made-up peer answers (no peer is needed or imported); and the peer
script's network (``benchmarks/explainers_peers.py``, numpy only at import) against
polytrav's forward pass."""
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from polytrav import Network

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def load(name):
    spec = importlib.util.spec_from_file_location(f"benchmark_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench():
    """The two scripts loaded by path; ``sys.path`` and ``sys.modules`` as they were
    afterwards."""
    path, modules = list(sys.path), dict(sys.modules)
    try:
        yield load("explainers"), load("explainers_peers")
    finally:
        sys.path[:] = path
        for name in set(sys.modules) - set(modules):
            del sys.modules[name]


@pytest.fixture(scope="module")
def case(bench):
    explainers, _ = bench
    net = Network.from_arrays(
        [[[1.0, -1.0, 0.5], [0.5, 1.0, -1.0], [-1.0, 0.5, 1.0], [1.0, 1.0, 1.0]],
         [[1.0, -1.0, 0.5, 0.5]]],
        [[0.0, 0.1, -0.2, -0.5], [-0.3]])
    X = np.random.default_rng(0).uniform(0.0, 1.0, size=(40, 3))
    y = np.array([int(net.forward(x)[0] >= 0) for x in X])
    return explainers.Case("toy", "toy", X, y, ["a", "b", "c"], net, "-",
                           np.arange(len(X)), immutable=["a"], direction={"c": "decrease"})


@pytest.fixture(scope="module")
def poly(bench, case):
    explainers, _ = bench
    return explainers.polytrav_side(case, [0, 1, 2], time_limit=30)


def test_polytrav_side_is_exact_and_keeps_the_immutable(case, poly):
    assert poly["metric"].startswith("L1 scaled by MAD")
    assert np.allclose(poly["scale"], np.median(np.abs(case.X - np.median(case.X, 0)), 0))
    for r in poly["rows"]:
        x = case.X[r["row"]]
        assert r["exact"] and r["found"] and r["time"] > 0
        w = np.asarray(r["x"])
        assert w[0] == x[0] and w[2] <= x[2] + 1e-12  # immutable, only decrease
        assert int(case.net.forward(w)[0] >= 0) != r["class"]
        # the exact local model: attributions add up to the output minus the intercept
        assert np.allclose(r["attribution"],
                           np.asarray(r["gradient"]) * (x - np.median(case.X, 0)))


def test_peer_counterfactuals_are_judged_in_polytravs_metric(bench, case, poly):
    explainers, _ = bench
    p0, p1 = poly["rows"][0], poly["rows"][1]
    x1 = case.X[1].copy()
    x1[0] += 0.3  # moves the immutable feature
    peer = {"rows": [
        {"row": 0, "found": True, "time": 0.5, "x": p0["x"]},  # polytrav's own point
        {"row": 1, "found": True, "time": 1.5, "x": x1.tolist()},
        {"row": 2, "found": False, "time": 2.5, "error": "nothing found"},
    ]}
    j = explainers.judge_counterfactuals(case, poly, peer)
    assert (j["rows"], j["found"], j["nothing"], j["changed_immutable"]) == (3, 2, 1, 1)
    assert j["median_s"] == 1.5 and j["smaller_than_polytrav"] == []
    first = j["per_row"][0]
    assert first["valid"] and first["distance"] >= p0["distance"] - 1e-9
    assert j["per_row"][1]["changed_immutable"] == ["a"] and not j["per_row"][1]["valid"]
    # a valid answer nearer than polytrav's minimum is flagged
    fake = {**poly, "rows": [{**p0, "distance": first["distance"] + 1.0}, p1, poly["rows"][2]]}
    assert len(explainers.judge_counterfactuals(case, fake, peer)["smaller_than_polytrav"]) == 1


def test_shap_is_compared_by_top_features(bench, case, poly):
    explainers, _ = bench
    mean = case.X.mean(0)
    rows = [{"row": r["row"], "time": 0.1,
             "values": (np.asarray(r["gradient"]) * (case.X[r["row"]] - mean)).tolist()}
            for r in poly["rows"]]
    s = explainers.judge_shap(case, poly, {"background_mean": mean.tolist(), "rows": rows})
    assert s["answered"] == 3 and s["top3_overlap_mean"] == 3.0 and s["top1_same_mean"] == 3
    assert s["rel_l1_diff_mean_median"] == pytest.approx(0.0, abs=1e-12)


def test_the_peer_scripts_network_is_polytravs(bench, case):
    _, peers = bench
    relu = peers.ReluNet(case.net.weights, case.net.biases, case.names)
    want = np.array([case.net.forward(x)[0] for x in case.X])
    assert np.allclose(relu.logit(case.X), want)
    assert np.array_equal(relu.predict(case.X), (want >= 0).astype(int))
    assert np.allclose(relu.predict_proba(case.X).sum(1), 1.0)
