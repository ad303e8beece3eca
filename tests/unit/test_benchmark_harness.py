"""``benchmarks/harness.py``: warm-up calls are discarded, medians, the result schema (no
timing is asserted)."""
import importlib.util
import json
import sys
from pathlib import Path

import pytest

HARNESS = Path(__file__).resolve().parents[2] / "benchmarks" / "harness.py"


@pytest.fixture(scope="module")
def harness():
    """The harness loaded by path; ``sys.path`` and ``sys.modules`` as they were afterwards
    (it puts ``benchmarks/`` on the path and imports ``machine`` from there)."""
    path, modules = list(sys.path), dict(sys.modules)
    spec = importlib.util.spec_from_file_location("benchmark_harness", HARNESS)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path[:] = path
        for name in set(sys.modules) - set(modules):
            del sys.modules[name]


def test_warmup_calls_are_made_and_discarded(harness):
    calls = []
    t = harness.measure(lambda: calls.append(len(calls)) or len(calls), repeats=3, warmup=2)
    assert calls == [0, 1, 2, 3, 4]
    assert len(t.warmup) == 2 and len(t.times) == 3
    assert t.result == 5  # the last call's
    assert t.fields() == {"repeats": 3, "warmup": 2, "times": t.times, "median": t.median}


def test_a_slow_call_ends_the_measurement(harness):
    calls = []
    t = harness.measure(lambda: calls.append(1), repeats=5, warmup=1, slow=-1.0)
    assert len(calls) == 1 and len(t.times) == 1 and t.warmup == []  # the warm-up is kept


def test_median_of_given_times(harness):
    assert harness.Timing([3.0, 1.0, 2.0]).median == 2.0
    assert harness.Timing([4.0, 1.0]).median == 2.5
    assert harness.median([]) is None


def test_parser_has_the_common_options(harness):
    args = harness.parser("doc", cases=["a", "b"], core=True).parse_args(
        ["--repeat", "2", "--cases", "b", "--core", "0"])
    assert (args.repeats, args.warmup, args.cases, args.core, args.out) == (2, 1, ["b"], 0, None)


def test_a_run_writes_the_schema(harness, tmp_path):
    run = harness.Run("demo", harness.parser("doc").parse_args([]), argv=[], quiet=True)
    t = harness.Timing([0.2, 0.1, 0.3], [0.5])
    run.add({"case": "c", "variant": "v", **t.fields(), "polytopes": 7})
    run.summary["ratio"] = 1.5
    saved = json.loads(run.write(tmp_path / "r.json").read_text())
    assert saved["schema"] == 1 and saved["benchmark"] == "demo"
    for key in ("command", "settings", "machine", "commit", "versions", "started", "finished"):
        assert key in saved, key
    assert {"python", "numpy", "scipy", "highspy", "polytrav"} <= set(saved["versions"])
    assert {"cpu", "cores", "memory", "platform"} <= set(saved["machine"])
    assert saved["summary"] == {"ratio": 1.5}
    assert saved["rows"] == [{"case": "c", "variant": "v", "repeats": 3, "warmup": 1,
                              "times": [0.2, 0.1, 0.3], "median": 0.2, "polytopes": 7}]
