"""Independent truths for the tests: brute-force cell enumeration, a MILP, small trainers.

Nothing here uses polytrav's traversal, frame or solver code: only numpy and scipy.
"""
from __future__ import annotations

import numpy as np

from polytrav.testing.reference import (brute_force_cells, brute_force_regions,  # noqa: F401
                                        chebyshev_radius, random_net)


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


def grid_dataset(n: int = 20, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The paper's grid dataset in [-1, 1]^2: a checkerboard of 4x4 squares, labels 0/1."""
    g = np.linspace(-1, 1, n)
    X = np.array([(a, b) for a in g for b in g])
    y = ((np.floor((X[:, 0] + 1) * 2).clip(0, 3) + np.floor((X[:, 1] + 1) * 2).clip(0, 3)) % 2)
    return X, y.astype(float)


def train_grid_net(widths: list[int], seed: int = 0, epochs: int = 3000, lr: float = 0.05):
    """Train a ReLU net with a logit output on the grid dataset (full-batch Adam, numpy)."""
    from polytrav import Network

    X, y = grid_dataset()
    rng = np.random.default_rng(seed)
    sizes = [2, *widths, 1]
    Ws = [rng.standard_normal((sizes[k + 1], sizes[k])) * np.sqrt(2 / sizes[k]) for k in range(len(sizes) - 1)]
    bs = [rng.standard_normal(sizes[k + 1]) * 0.1 for k in range(len(sizes) - 1)]
    params = Ws + bs
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    L = len(Ws)
    for step in range(1, epochs + 1):
        acts, pre = [X], []
        z = X
        for k in range(L):
            h = z @ Ws[k].T + bs[k]
            pre.append(h)
            z = np.maximum(h, 0) if k < L - 1 else h
            acts.append(z)
        p = 1 / (1 + np.exp(-z[:, 0]))
        g = ((p - y) / len(y))[:, None]
        grads_W, grads_b = [None] * L, [None] * L
        for k in reversed(range(L)):
            grads_W[k] = g.T @ acts[k]
            grads_b[k] = g.sum(0)
            if k:
                g = (g @ Ws[k]) * (pre[k - 1] > 0)
        grads = grads_W + grads_b
        for i, (p_, g_) in enumerate(zip(params, grads)):
            m[i] = 0.9 * m[i] + 0.1 * g_
            v[i] = 0.999 * v[i] + 0.001 * g_**2
            p_ -= lr * (m[i] / (1 - 0.9**step)) / (np.sqrt(v[i] / (1 - 0.999**step)) + 1e-8)
    return Network.from_arrays(Ws, bs, name=f"grid-2-{'-'.join(map(str, widths))}-1")


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
