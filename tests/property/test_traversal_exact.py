"""The traversal against independent truth on random small networks (hypothesis, seeded).

Truth: brute-force enumeration of activation patterns (one scipy LP per candidate pattern,
tests/support/reference.py) and dense sampling. Cells whose radius sits within a factor 10 of
RADIUS_TOL are a tolerance band either answer may take.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import brute_force_cells, random_net

from polytrav import Box, traverse
from polytrav.vocabulary.tolerances import RADIUS_TOL

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])

nets = st.tuples(
    st.integers(0, 10_000),  # seed
    st.integers(2, 3),  # inputs
    st.lists(st.integers(1, 5), min_size=1, max_size=3),  # hidden widths
)


def assert_same_cells(run_keys: set[bytes], truth: dict[bytes, float], what: str) -> None:
    sure = {k for k, r in truth.items() if r > 10 * RADIUS_TOL}
    possible = {k for k, r in truth.items() if r > RADIUS_TOL / 10}
    missed = sure - run_keys
    extra = run_keys - possible
    assert not missed, f"{what}: traversal missed {len(missed)} polytopes, e.g. {next(iter(missed)).hex()}"
    assert not extra, f"{what}: traversal emitted {len(extra)} codes with no cell, e.g. {next(iter(extra)).hex()}"


def check_run(net, lo, hi, strategy="hierarchical", samples=3000):
    run = traverse(net, Box(lo, hi), strategy=strategy)
    polys = list(run)
    assert run.complete, run.status
    keys = [p.key for p in polys]
    assert len(keys) == len(set(keys)), "a polytope was emitted twice"
    assert [p.index for p in polys] == list(range(len(polys)))
    for p in polys:
        x = p.interior_point
        assert np.all(lo <= x + 1e-12) and np.all(x <= hi + 1e-12)
        assert all(np.array_equal(a, b) for a, b in zip(net.activation_code(x), p.code)), \
            f"interior point of polytope {p.index} has another code"
        np.testing.assert_allclose(p.W @ x + p.c, net.forward(x), rtol=1e-9, atol=1e-9)
        assert p.contains(x)
    pts = np.random.default_rng(1).uniform(lo, hi, size=(samples, len(lo)))
    pre = net.pre_activations(pts)
    sample_keys = np.packbits(np.hstack([h >= 0 for h in pre]), axis=1)
    missing = {row.tobytes() for row in sample_keys} - set(keys)
    assert not missing, f"{len(missing)} sampled codes not visited, e.g. {next(iter(missing)).hex()}"
    return run, set(keys)


@SETTINGS
@given(nets)
def test_hierarchical_equals_brute_force(spec):
    seed, n_in, widths = spec
    net = random_net(seed, n_in, widths)
    lo, hi = -np.ones(n_in), np.ones(n_in)
    _, keys = check_run(net, lo, hi)
    assert_same_cells(keys, brute_force_cells(net, lo, hi), f"net {spec}")


@settings(max_examples=6, deadline=None, derandomize=True)
@given(nets)
def test_seed_faithful_equals_hierarchical(spec):
    seed, n_in, widths = spec
    net = random_net(seed, n_in, widths)
    lo, hi = -np.ones(n_in), np.ones(n_in)
    _, fast = check_run(net, lo, hi)
    _, slow = check_run(net, lo, hi, strategy="seed-faithful")
    assert fast == slow


@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.tuples(st.integers(0, 10_000), st.integers(2, 4),
                 st.lists(st.integers(1, 5), min_size=1, max_size=3)))
def test_subdivision_equals_brute_force_and_the_traversal(spec):
    seed, n_in, widths = spec
    net = random_net(seed, n_in, widths)
    lo, hi = -np.ones(n_in), np.ones(n_in)
    run, keys = check_run(net, lo, hi, strategy="subdivision")
    assert not run.stats.fallback, run.stats.fallback
    assert keys == check_run(net, lo, hi)[1]
    assert_same_cells(keys, brute_force_cells(net, lo, hi), f"net {spec}")


@pytest.mark.parametrize("lo,hi", [([0.2, -0.3], [0.25, -0.1]), ([-3.0, -2.0], [4.0, 5.0]),
                                   ([1e3, -1e3], [1.2e3, 1e3])])
def test_boxes_of_other_sizes_and_units(lo, hi):
    net = random_net(7, 2, [6, 4], scale=1.0)
    if abs(lo[0]) > 100:  # inputs in the thousands, like ACAS Xu's raw units
        net = net.compose_input(np.diag([1e-3, 1e-3]), [0.0, 0.0])
    lo, hi = np.array(lo), np.array(hi)
    _, keys = check_run(net, lo, hi)
    assert_same_cells(keys, brute_force_cells(net, lo, hi), "scaled box")


@settings(max_examples=5, deadline=None, derandomize=True)
@given(st.integers(0, 10_000), st.lists(st.integers(2, 6), min_size=1, max_size=2))
def test_high_dimensional_box_equals_brute_force(seed, widths):
    """Above HIGH_DIM inputs the box is kept as bounds and cells are certified differently."""
    from polytrav.model.geometry import HIGH_DIM

    n_in = HIGH_DIM + 10
    net = random_net(seed, n_in, widths, scale=0.3)
    x0 = np.random.default_rng(seed).uniform(-0.5, 0.5, n_in)
    lo, hi = x0 - 0.2, x0 + 0.2
    _, keys = check_run(net, lo, hi, samples=2000)
    assert_same_cells(keys, brute_force_cells(net, lo, hi), f"high-dim net {seed} {widths}")
    _, slow = check_run(net, lo, hi, strategy="seed-faithful", samples=10)
    assert keys == slow
