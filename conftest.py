"""Shared pytest fixtures (the repo root is never put on sys.path: --import-mode=importlib)."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("POLYTRAV_DISABLE_PLUGIN_AUTOLOAD", "1")

#: The shared data folder (``../shared/data`` next to the repo).
DATA_DIR = Path(__file__).resolve().parent.parent / "shared" / "data"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """``../shared/data``; skips the test if it is absent."""
    if not DATA_DIR.is_dir():
        pytest.skip(f"shared data folder {DATA_DIR} is absent (clone shared/ next to the repo)")
    return DATA_DIR


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
