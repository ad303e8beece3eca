"""The profile figure (matplotlib Agg): a non-empty file, one panel per top feature."""
from __future__ import annotations

import numpy as np
import pytest
from polytrav import ConfigError
from polytrav.testing.reference import random_net

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from polytrav.interface.plot.profile import plot_profiles, save_profiles, top_features


def test_save_profiles_writes_a_picture_of_the_top_features(tmp_path):
    net = random_net(0, 4, [6, 5], 1)
    x = np.array([0.1, -0.3, 0.2, 0.4])
    out = save_profiles(net, x, (-2.0, 2.0), tmp_path / "profiles.png", top=3)
    assert out.exists() and out.stat().st_size > 1000
    W, _ = net.local_model(net.activation_code(x))
    top = top_features(net, x, 3)
    assert sorted(np.abs(W[0])[top]) == sorted(np.abs(W[0]))[-3:]
    fig = plot_profiles(net, x, (-2.0, 2.0), features=[0, "x2"])
    assert [ax.get_xlabel() for ax in fig.axes] == ["$x_{0}$", "$x_{2}$"]
    with pytest.raises(ConfigError):
        plot_profiles(net, x, (-2.0, 2.0), features=["age"])
