"""Third-party plugins: the example package registers only through its entry point."""
import importlib.util

import numpy as np
import pytest
from reference import random_net

from polytrav import Box, traverse
from polytrav.manager import available_solvers, get_plugin_manager, get_solver

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("polytrav_example") is None,
    reason="example plugin not installed: pip install -e tests/example_plugin (.ci/run does)",
)


@pytest.fixture
def autoload(monkeypatch):
    monkeypatch.setenv("POLYTRAV_DISABLE_PLUGIN_AUTOLOAD", "0")


def test_entry_point_backend_is_discovered_and_serves_a_traversal(autoload):
    assert "example-lp" in available_solvers("lp")
    backend = get_solver("example-lp")
    before = type(backend).solves
    net = random_net(3, 2, [4, 3])
    box = Box([-1.0, -1.0], [1.0, 1.0])
    run = traverse(net, box, solver="example-lp")
    keys = {p.key for p in run}
    assert run.complete and type(backend).solves > before
    assert keys == {p.key for p in traverse(net, box)}


def test_autoload_off_and_block(autoload, monkeypatch):
    assert "example-lp" not in available_solvers(pm=get_plugin_manager(block=("example",)))
    monkeypatch.setenv("POLYTRAV_DISABLE_PLUGIN_AUTOLOAD", "1")
    assert "example-lp" not in available_solvers()
    assert "highs" in available_solvers()
