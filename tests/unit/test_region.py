"""Regions: constraints, broadcasting, containment and the normalised frame."""
import numpy as np
import pytest

from polytrav import Ball, Box, Polyhedron, RegionError
from polytrav.model.geometry import build_frame


def test_scalar_box_broadcasts_in_intersection():
    r = Ball([0.5, 0.02, 0.9], 0.05, norm="inf") & Box(0, 1)
    assert r.n_dims == 3
    lo, hi = r.bounding_box()
    np.testing.assert_allclose(lo, [0.45, 0.0, 0.85])
    np.testing.assert_allclose(hi, [0.55, 0.07, 0.95])
    assert r.contains([0.5, 0.0, 0.9]) and not r.contains([0.5, -0.01, 0.9])


def test_violations_name_the_constraint():
    r = Ball([0.0, 0.0], 1.0, norm=2)
    assert r.violations([0.0, 0.5]) == []
    assert "L2 ball" in r.violations([1.0, 1.0])[0]


@pytest.mark.parametrize("make,match", [
    (lambda: Box([0, 1], [1, 0]), "exceeds upper bound at coordinate 1"),
    (lambda: Box([0, 0], [1, 1, 1]), "same length"),
    (lambda: Ball([0, 0], -1), "radius"),
    (lambda: Ball([0, 0], 1, norm=3), "norm must be 1, 2 or inf"),
    (lambda: Polyhedron([[1, 0]], [1, 2]), "1 rows but b has 2"),
    (lambda: Box([0, np.nan], [1, 1]), "NaN"),
    (lambda: Box([0, 0], [1, 1]) & Box([0, 0, 0], [1, 1, 1]), "different dimensions"),
])
def test_bad_regions_are_named(make, match):
    with pytest.raises(RegionError, match=match):
        make()


def test_frame_normalises_units_and_fixes_coordinates():
    region = Box([0.0, 5.0, -3e4], [60760.0, 5.0, 3e4])
    f = build_frame(region, 3)
    assert f.dim == 2
    np.testing.assert_allclose(f.to_x(np.array([-1.0, -1.0])), [0.0, 5.0, -3e4])
    np.testing.assert_allclose(f.to_x(np.array([1.0, 1.0])), [60760.0, 5.0, 3e4])
    np.testing.assert_allclose(f.to_u(np.array([30380.0, 5.0, 0.0])), [0.0, 0.0])
    assert f.is_box


def test_frame_of_polyhedron_with_equality_and_balls():
    region = Polyhedron([[1.0, 0, 0], [-1.0, 0, 0], [0, 1.0, 0], [0, -1.0, 0]], [1, 1, 1, 1],
                        A_eq=[[1.0, 1.0, 1.0]], b_eq=[0.5]) & Ball([0, 0, 0], 3.0, norm=2)
    f = build_frame(region, 3)
    assert f.dim == 2 and len(f.l2_balls) == 1
    x = f.to_x(np.zeros(2))
    assert x.sum() == pytest.approx(0.5)


def test_empty_or_unbounded_regions_are_refused():
    with pytest.raises(RegionError, match="unbounded"):
        build_frame(Polyhedron([[1.0, 1.0]], [1.0]), 2)
    with pytest.raises(RegionError, match="empty"):
        build_frame(Polyhedron([[1.0, 0.0], [-1.0, 0.0], [0, 1.0], [0, -1.0]], [-1.0, 0.0, 1, 1]), 2)
    with pytest.raises(RegionError, match="single point"):
        build_frame(Box([0.0, 0.0], [0.0, 0.0]), 2)


def test_is_box_names_the_regions_equal_to_their_bounding_box():
    box = Box([0.0, 0.0], [1.0, 1.0])
    assert box.is_box and Ball([0.0, 0.0], 1.0, norm="inf").is_box
    assert (box & Ball([0.5, 0.5], 0.1, norm="inf")).is_box
    assert not Ball([0.0, 0.0], 1.0, norm=2).is_box
    assert not (box & Polyhedron([[1.0, 1.0]], [1.0])).is_box


def test_box_like_membership_and_emptiness_come_from_the_bounds():
    region = Box([0.0, 0.0], [1.0, 1.0]) & Ball([0.5, 0.5], 0.25, norm="inf")
    assert region.violations(np.array([0.5, 0.6])) == []
    bad = region.violations(np.array([0.9, 0.1]))
    assert len(bad) == 2 and "coordinate 0" in bad[0] and "coordinate 1" in bad[1]
    with pytest.raises(RegionError, match="empty.*coordinate 1"):
        build_frame(Box([0.0, 0.0], [1.0, 1.0]) & Box([0.0, 2.0], [1.0, 3.0]), 2)
