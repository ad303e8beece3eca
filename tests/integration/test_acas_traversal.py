"""Traversal on the real ACAS Xu networks: baseline agreement, raw units, a fixed input."""
from __future__ import annotations

import numpy as np
import pytest

from polytrav import Box, Network, traverse

pytestmark = pytest.mark.integration
C = np.array([-0.301041984, 0.0, 0.496690162, 0.4, 0.4])


@pytest.fixture(scope="module")
def acas(data_dir):
    onnx = Network.from_onnx(data_dir / "acasxu/onnx/ACASXU_run2a_1_1_batch_2000.onnx")
    nnet = Network.from_nnet(data_dir / "acasxu/nnet/ACASXU_run2a_1_1_batch_2000.nnet")
    return onnx, nnet


def codes(net, region, **kw):
    run = traverse(net, region, **kw)
    keys = [p.key for p in run]
    assert run.complete, run.status
    assert len(keys) == len(set(keys))
    return set(keys)


def test_default_equals_seed_faithful_on_a_small_box(acas):
    onnx, _ = acas
    region = Box(C - 0.002, C + 0.002)
    fast = codes(onnx, region)  # auto: subdivision in 5-D
    assert len(fast) > 20
    assert fast == codes(onnx, region, strategy="seed-faithful")


@pytest.mark.parametrize("fixed", [False, True])
def test_subdivision_equals_the_traversal_on_acas_boxes(acas, fixed):
    """Both engines on a 5-D box of ~1 200 polytopes, and on a 4-D one (an input fixed)."""
    onnx, _ = acas
    lo, hi = C - 0.005, C + 0.005
    if fixed:
        lo[3] = hi[3] = C[3]
    sub = codes(onnx, Box(lo, hi), strategy="subdivision")
    assert len(sub) > (100 if fixed else 1000)
    assert sub == codes(onnx, Box(lo, hi), strategy="hierarchical")


def test_raw_units_give_the_same_polytopes(acas):
    """The .nnet network folds the normalisation in: raw inputs span 10^4, same partition."""
    onnx, nnet = acas
    mean = np.array([19791.091, 0.0, 0.0, 650.0, 600.0])
    rng = np.array([60261.0, 6.28318530718, 6.28318530718, 1100.0, 1200.0])
    r = 0.003
    raw = Box(mean + rng * (C - r), mean + rng * (C + r))
    assert codes(onnx, Box(C - r, C + r)) == codes(nnet, raw)


def test_fixed_coordinate_like_property_4(acas):
    onnx, _ = acas
    lo, hi = C - 0.004, C + 0.004
    lo[3] = hi[3] = C[3]  # one input fixed, as in ACAS Xu property 4
    run = traverse(onnx, Box(lo, hi))
    polys = list(run)
    assert run.complete and len(polys) > 5
    keys = {p.key for p in polys}
    pts = np.random.default_rng(0).uniform(lo, hi, size=(4000, 5))
    sample = {np.packbits(np.concatenate(onnx.activation_code(x))).tobytes() for x in pts}
    assert sample <= keys
    for p in polys:
        assert p.interior_point[3] == pytest.approx(C[3])
        np.testing.assert_allclose(p.W @ p.interior_point + p.c, onnx.forward(p.interior_point),
                                   rtol=1e-9, atol=1e-9)
