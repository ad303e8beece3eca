"""Shared pytest fixtures (the repo root is never put on sys.path: --import-mode=importlib)."""
from __future__ import annotations

import importlib
import importlib.metadata
import os
import signal
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("POLYTRAV_DISABLE_PLUGIN_AUTOLOAD", "1")
# One OpenMP thread per test process (torch, imported later, and the subprocesses that tests
# start): with -n auto the workers fill the cores already, and more threads spun on each
# other's cores (the paper-figures example used 50 CPU s with them, 25 s without).
os.environ.setdefault("OMP_NUM_THREADS", "1")

try:  # Hypothesis: no test depends on the machine's speed (no deadline, no "too slow" check)
    from hypothesis import HealthCheck, settings
except ImportError:  # pragma: no cover - the dev extra installs it
    pass
else:
    settings.register_profile("polytrav", deadline=None,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile("polytrav")

#: The shared data folder (``../shared/data`` next to the repo).
DATA_DIR = Path(__file__).resolve().parent.parent / "shared" / "data"

#: How to install the example third-party plugin (``tests/example_plugin``), for skip reasons.
EXAMPLE_PLUGIN_INSTALL = (
    'example plugin not installed: pip install -e tests/example_plugin '
    '(the README\'s test command, pip install -e ".[dev]" -e tests/example_plugin, does)')


def example_plugin_installed() -> bool:
    """Whether the example plugin is *installed*: its distribution's ``polytrav`` entry point.

    Decided from the installed metadata, never from ``find_spec`` or ``sys.modules``, so the
    answer does not depend on what an earlier test (or doctest collection) imported.
    """
    return any(ep.name == "example" and ep.value == "polytrav_example"
               for ep in importlib.metadata.entry_points(group="polytrav"))


# Doctest collection (--doctest-modules) imports every module under testpaths, which put the
# uninstalled example package in sys.modules as ``polytrav_example``: tests then saw it or
# not depending on order, and process-pool workers could not import it. Installed, its code
# is collected as before; not installed, it is left alone (its tests skip, saying how to
# install it).
collect_ignore = [] if example_plugin_installed() else ["tests/example_plugin"]


@pytest.fixture(scope="session")
def example_plugin():
    """The installed example plugin package ``polytrav_example``; skips if it is not installed."""
    if not example_plugin_installed():
        pytest.skip(EXAMPLE_PLUGIN_INSTALL)
    return importlib.import_module("polytrav_example")


@pytest.hookimpl(tryfirst=True)  # before ``-m`` selects by the marks
def pytest_collection_modifyitems(config, items):
    """A test that reads the shared data (it uses :func:`data_dir`, directly or through another
    fixture, or lives in ``tests/integration``) is marked ``integration``: ``-m "not
    integration"`` runs what needs no data."""
    for item in items:
        if "data_dir" in getattr(item, "fixturenames", ()) or "integration" in item.path.parts:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """``../shared/data``; skips the test if it is absent."""
    if not DATA_DIR.is_dir():
        pytest.skip(f"shared data folder {DATA_DIR} is absent (clone shared/ next to the repo)")
    return DATA_DIR


@pytest.fixture
def ctrl_c_raises():
    """Ctrl-C raises KeyboardInterrupt here, as in a Python program: a test worker of
    pytest-xdist, or a test run started in the background (``cmd &`` in a script), may have
    inherited SIGINT ignored."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture
def tiny_net():
    """A hand-written 2-2-1 network whose two hyperplanes cross at the origin."""
    from polytrav import Network

    return Network.from_arrays([[[1.0, -1.0], [1.0, 1.0]], [[1.0, -2.0]]], [[0.0, 0.0], [0.5]])


@pytest.fixture
def unit_box():
    """The box [-1, 1]^2."""
    from polytrav import Box

    return Box([-1.0, -1.0], [1.0, 1.0])


@pytest.fixture
def rng():
    return np.random.default_rng(0)
