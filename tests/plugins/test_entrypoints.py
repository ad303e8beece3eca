"""Third-party plugins: the example package registers only through its entry point.

The tests that need the example package (``tests/example_plugin``) take the ``example_plugin``
fixture (conftest.py): it skips them, saying how to install it, unless its distribution is
installed, whatever an earlier test imported.
"""
import pytest
from reference import random_net

from polytrav import Box, traverse
from polytrav.host.manager import available_solvers, get_plugin_manager, get_solver


@pytest.fixture
def autoload(monkeypatch, example_plugin):
    """Entry points loaded, with the example plugin installed (else the test skips)."""
    monkeypatch.setenv("POLYTRAV_DISABLE_PLUGIN_AUTOLOAD", "0")


def test_entry_point_backend_is_discovered_and_serves_a_traversal(autoload):
    assert "example-lp" in available_solvers("lp")
    backend = get_solver("example-lp")
    before = type(backend).solves
    net = random_net(3, 2, [4, 3])
    box = Box([-1.0, -1.0], [1.0, 1.0])
    run = traverse(net, box, solver="example-lp", strategy="hierarchical")  # LPs
    keys = {p.key for p in run}
    assert run.complete and type(backend).solves > before
    assert keys == {p.key for p in traverse(net, box)}


def test_autoload_off_and_block(autoload, monkeypatch):
    assert "example-lp" not in available_solvers(pm=get_plugin_manager(block=("example",)))
    monkeypatch.setenv("POLYTRAV_DISABLE_PLUGIN_AUTOLOAD", "1")
    assert "example-lp" not in available_solvers()
    assert "highs" in available_solvers()


def test_entry_point_analysis_runs_end_to_end(autoload):
    from polytrav import Verdict, analyze
    from polytrav.host.manager import analysis_classes

    assert "output_bounds" in analysis_classes()
    net = random_net(3, 2, [4, 3])
    box = Box([-1.0, -1.0], [1.0, 1.0])
    rng = analyze(net, box, "output_range")[0].value
    holds = analyze(net, box, {"name": "output_bounds", "lower": rng["min"] - 1e-6,
                               "upper": rng["max"] + 1e-6})
    assert holds[0].verdict is Verdict.HOLDS and holds.complete
    mid = (rng["min"] + rng["max"]) / 2
    violated = analyze(net, box, ("output_bounds", {"lower": rng["min"], "upper": mid}))
    assert violated[0].verdict is Verdict.VIOLATED
    assert net.forward(violated[0].witness)[0] > mid


def test_list_plugins_names_the_example_with_its_distribution(autoload):
    from polytrav import list_plugins

    rows = {row["name"]: row for row in list_plugins()}
    example = rows["example"]
    assert example["distribution"] == "polytrav-example-plugin" and example["version"] == "0.1.0"
    assert example["analyses"] == ["output_bounds"] and example["solvers"] == ["example-lp"]
    assert "polytrav.plugins.counterfactual" in rows
    assert rows["polytrav.plugins.counterfactual"]["analyses"] == ["counterfactual"]


def test_allow_list_environment_variable(autoload, monkeypatch):
    monkeypatch.setenv("POLYTRAV_PLUGINS", "someone-else")
    assert "example-lp" not in available_solvers()
    monkeypatch.setenv("POLYTRAV_PLUGINS", "example")
    assert "example-lp" in available_solvers()


def test_a_broken_entry_point_is_a_plugin_error(monkeypatch):
    """Needs no example plugin: the only distribution is a fake one."""
    import importlib.metadata

    from polytrav import PluginError

    class Broken:
        name, value, group, dist = "broken", "no_such_module_xyz", "polytrav", None

        def load(self):
            raise ImportError("No module named 'no_such_module_xyz'")

    monkeypatch.setenv("POLYTRAV_DISABLE_PLUGIN_AUTOLOAD", "0")

    class Dist:
        entry_points = [Broken()]
        metadata = {"Name": "broken-dist"}
        version = "0"

    monkeypatch.setattr(importlib.metadata, "distributions", lambda: [Dist()])
    with pytest.raises(PluginError, match="entry point 'broken'.*no_such_module_xyz"):
        get_plugin_manager()
