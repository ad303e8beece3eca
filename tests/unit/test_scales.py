"""Per-feature scales of a dataset (polytrav.model.scales): the statistics against numpy's,
zero scales replaced only as asked and recorded, bad scales refused in one line; scaled
balls (``Ball(..., scale=)``) contain what they should."""
from __future__ import annotations

import numpy as np
import pytest

from polytrav import Ball, ConfigError, RegionError
from polytrav.extend import DataSummary, FeatureScale, as_scale

X = np.array([[1.0, 0.0, 5.0, 2.0],
              [3.0, 0.0, 5.0, 2.0],
              [2.0, 1.0, 5.0, 4.0],
              [8.0, 0.0, 5.0, np.nan],
              [4.0, 0.0, 5.0, 3.0]])


def test_statistics_are_numpys_over_finite_values():
    s = DataSummary.of(X)
    finite = [X[np.isfinite(X[:, j]), j] for j in range(X.shape[1])]
    assert np.allclose(s.median, [np.median(c) for c in finite])
    assert np.allclose(s.mad, [np.median(np.abs(c - np.median(c))) for c in finite])
    assert np.allclose(s.std, [np.std(c) for c in finite])
    assert np.allclose(s.range, [np.ptp(c) for c in finite])
    assert s.rows == 5


def test_a_zero_mad_is_replaced_as_asked_and_recorded():
    s = DataSummary.of(X)
    names = ("income", "flag", "const", "size")
    mad = s.scale("mad", "std", names)
    assert mad.values[0] == 1.0 and mad.values[3] == 0.5  # |1-3|, |3-3|, |2-3|, |8-3|, |4-3|
    assert mad.values[1] == pytest.approx(np.std(X[:, 1])) and mad.replaced[1] == "std"
    assert mad.values[2] == 1.0 and mad.replaced[2] == "constant"  # no change is possible
    assert "std for 'flag'" in mad.describe() and "'const'" in mad.describe()
    assert s.scale("mad", "range", names).values[1] == 1.0
    assert s.scale("mad", 0.25, names).values[1] == 0.25
    held = s.scale("mad", "immutable", names)
    assert held.held == (1,) and held.replaced == {1: "immutable", 2: "constant"}
    with pytest.raises(ConfigError, match="feature 'flag' has a mad of 0"):
        s.scale("mad", "error", names)
    with pytest.raises(ConfigError, match="zero_scale must be one of"):
        s.scale("mad", -1.0)
    with pytest.raises(ConfigError, match="scale must be one of"):
        s.scale("iqr")
    assert not s.scale("std").replaced.keys() - {2}


def test_bad_scales_are_refused_in_one_line():
    assert as_scale(None, 3, "who") is None
    assert np.array_equal(as_scale(2.0, 3, "who").values, [2.0, 2.0, 2.0])
    given = FeatureScale(np.ones(3))
    assert as_scale(given, 3, "who") is given
    for bad, message in ((np.array([1.0, 0.0, 1.0]), "positive and finite"),
                         ([1.0, np.inf, 1.0], "positive and finite"),
                         ([1.0, 2.0], "expected 3|positive number"),
                         ("mad", "needs the data")):
        with pytest.raises(ConfigError, match=message):
            as_scale(bad, 3, "who")


def test_a_scaled_ball_measures_each_coordinate_in_its_unit():
    b = Ball([0.0, 0.0], 1.0, norm=2, scale=[10.0, 0.1])
    assert b.contains([9.9, 0.0]) and not b.contains([0.0, 0.2])
    assert b.distance([6.0, 0.08]) == pytest.approx(1.0)
    lo, hi = b.bounding_box()
    assert np.allclose(hi, [10.0, 0.1]) and np.allclose(lo, [-10.0, -0.1])
    box = Ball([1.0, 1.0], 2.0, norm="inf", scale=[1.0, 3.0])
    assert box.is_box and box.contains([3.0, 7.0]) and not box.contains([3.1, 1.0])
    assert Ball([0.0, 0.0], 1.0, norm=1, scale=[2.0, 1.0]).contains([1.0, 0.5])
    with pytest.raises(RegionError, match="scale must be positive"):
        Ball([0.0, 0.0], 1.0, scale=[1.0, 0.0])
