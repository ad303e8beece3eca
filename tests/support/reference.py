"""Independent truths for the tests: brute-force cell enumeration, a MILP, small trainers.

Nothing here uses polytrav's traversal, frame or solver code: only numpy and scipy.
"""
from __future__ import annotations

import numpy as np

from polytrav.testing.reference import (brute_force_cells, brute_force_regions,  # noqa: F401
                                        chebyshev_radius, grid_dataset, random_net,
                                        train_grid_net)


def perturbed_copy(net, seed: int, weights: float, biases: float | None = None):
    """``net`` with Gaussian noise of scale ``weights`` added to its weights and ``biases``
    (default ``weights``) to its biases, drawn in that order from ``default_rng(seed)``."""
    from polytrav import Network

    rng = np.random.default_rng(seed)
    biases = weights if biases is None else biases
    return Network.from_arrays([W + weights * rng.standard_normal(W.shape) for W in net.weights],
                               [b + biases * rng.standard_normal(b.shape) for b in net.biases])


def dnf_instance(net_seed: int, seed: int, shape, conjunctions=(1, 3), rows=(2, 4),
                 quantile: float = 0.4, shifts=(0.0, 0.05, 0.3)):
    """A random net of ``shape`` ``(n_in, widths, n_out)``, an L∞ box around a random point,
    and an unsafe set in DNF near the outputs' range: ``conjunctions`` and ``rows`` are the
    half-open ranges of their counts, each row's bound a sampled ``quantile`` (up to) of its
    values over the box, lowered by one of ``shifts`` (either verdict occurs)."""
    d, widths, m = shape
    net = random_net(net_seed, d, widths, n_out=m)
    rng = np.random.default_rng(seed)
    x0 = rng.uniform(-1, 1, d)
    eps = rng.uniform(0.05, 0.5)
    lo, hi = x0 - eps, x0 + eps
    Y = np.array([net.forward(x) for x in rng.uniform(lo, hi, (300, d))])
    pairs = []
    for _ in range(int(rng.integers(*conjunctions))):
        k = int(rng.integers(*rows))
        C = rng.normal(size=(k, m))
        d_ = np.quantile(Y @ C.T, rng.uniform(0.0, quantile), axis=0) - rng.choice(shifts)
        pairs.append((C, d_))
    return net, lo, hi, pairs


#: A tiny hand-written .nnet network (2 inputs, hidden layer of 3, 1 output) for loader and CLI tests.
TINY_NNET = """// a tiny hand-written network
2,2,1,3,
2,3,1,
0,
-1.0,-2.0,
1.0,2.0,
0.5,0.0,3.0,
2.0,4.0,10.0,
1.0,-1.0,
0.5,0.5,
-1.0,2.0,
0.1,
-0.2,
0.3,
1.0,-2.0,0.5,
0.25,
"""
