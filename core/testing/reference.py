"""Independent truths: every activation code with a full-dimensional cell in a box, by brute
force (one Chebyshev LP per candidate pattern, layer by layer); random small networks, and
the paper's grid dataset with a small trainer (NumPy only).

Nothing here uses polytrav's traversal, frames or backends: only numpy and SciPy.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import linprog

__all__ = ["chebyshev_radius", "brute_force_cells", "brute_force_regions", "random_net",
           "grid_dataset", "train_grid_net"]


def chebyshev_radius(A: np.ndarray, b: np.ndarray) -> tuple[float, np.ndarray | None]:
    """max t s.t. A u + t ||A_i|| <= b, -1 <= u <= 1 (box rows included), 0 <= t <= 1."""
    d = A.shape[1]
    I = np.eye(d)
    A = np.vstack([A, I, -I])
    b = np.concatenate([b, np.ones(2 * d)])
    norms = np.linalg.norm(A, axis=1)
    keep = norms > 1e-12
    if (b[~keep] < 0).any():
        return -1.0, None
    A, b, norms = A[keep], b[keep], norms[keep]
    res = linprog(np.r_[np.zeros(d), -1.0], A_ub=np.c_[A, norms], b_ub=b,
                  bounds=[(-1, 1)] * d + [(0, 1)], method="highs")
    if res.status != 0:
        return -1.0, None
    return -res.fun, res.x[:d]


def brute_force_cells(net, lo, hi, tol: float = 1e-9, regions: bool = False) -> dict[bytes, float]:
    """Every activation code with a full-dimensional cell in the box [lo, hi], with its radius.

    Enumerates patterns neuron by neuron and layer by layer (a prefix whose cell is empty has
    no non-empty extension), one Chebyshev LP per candidate pattern, in the box's normalised
    coordinates u = (x - mid) / half. Returns {packed code: radius} for radius > tol.
    """
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    d = lo.size
    # a cell: (list of bits per layer, A_rows, b_rows) with constraints A u <= b
    cells = [([], np.zeros((0, d)), np.zeros(0), np.diag(half), mid.copy())]
    for W, bias in zip(net.weights[:-1], net.biases[:-1]):
        W, bias = np.asarray(W), np.asarray(bias)
        new_cells = []
        for bits, A, b, M, m in cells:
            H, beta = W @ M, W @ m + bias  # pre-activation = H u + beta
            partial = [([], A, b)]
            for i in range(H.shape[0]):
                nxt = []
                for pbits, pA, pb in partial:
                    for on in (True, False):
                        s = -1.0 if on else 1.0  # on: -(h) <= 0
                        A2 = np.vstack([pA, s * H[i]])
                        b2 = np.concatenate([pb, [-s * beta[i]]])
                        if np.linalg.norm(H[i]) <= 1e-12 * max(1.0, np.abs(H).max()):
                            if (beta[i] >= 0) != on:
                                continue
                            A2, b2 = pA, pb
                        r, _ = chebyshev_radius(A2, b2)
                        if r > tol:
                            nxt.append((pbits + [on], A2, b2))
                partial = nxt
            for pbits, pA, pb in partial:
                mask = np.array(pbits, bool)
                new_cells.append((bits + [mask], pA, pb, H * mask[:, None], beta * mask))
        cells = new_cells
    if regions:
        Wl, bl = np.asarray(net.weights[-1]), np.asarray(net.biases[-1])
        scale = np.diag(1.0 / half)
        out = []
        for bits, A, b, M, m in cells:
            Ax = np.vstack([A @ scale, np.eye(d), -np.eye(d)])
            bx = np.concatenate([b + A @ (mid / half), hi, -lo])
            Wx = Wl @ M @ scale
            cx = Wl @ (m - M @ (mid / half)) + bl
            out.append({"code": np.concatenate(bits), "A": Ax, "b": bx, "W": Wx, "c": cx})
        return out
    out = {}
    for bits, A, b, _, _ in cells:
        r, _ = chebyshev_radius(A, b)
        out[np.packbits(np.concatenate(bits)).tobytes()] = r
    return out


def brute_force_regions(net, lo, hi) -> list[dict]:
    """Every full-dimensional cell in the box: ``{"code", "A", "b", "W", "c"}`` in input space.

    ``A x <= b`` is the cell ∩ box (box rows included), ``W x + c`` the network on it; both
    come from the enumeration's own masks, not from polytrav.
    """
    return brute_force_cells(net, lo, hi, regions=True)


def random_net(seed: int, n_in: int, widths: list[int], n_out: int = 1, scale: float = 1.0):
    """A random ReLU network (standard normal weights, biases ~ N(0, 0.5^2))."""
    from polytrav.model.network import Network

    rng = np.random.default_rng(seed)
    sizes = [n_in, *widths, n_out]
    Ws = [rng.standard_normal((sizes[k + 1], sizes[k])) * scale for k in range(len(sizes) - 1)]
    bs = [rng.standard_normal(sizes[k + 1]) * 0.5 for k in range(len(sizes) - 1)]
    return Network.from_arrays(Ws, bs)


def grid_dataset(n: int = 20, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The paper's grid dataset in [-1, 1]^2: a checkerboard of 4x4 squares, labels 0/1."""
    g = np.linspace(-1, 1, n)
    X = np.array([(a, b) for a in g for b in g])
    y = ((np.floor((X[:, 0] + 1) * 2).clip(0, 3) + np.floor((X[:, 1] + 1) * 2).clip(0, 3)) % 2)
    return X, y.astype(float)


def train_grid_net(widths: list[int], seed: int = 0, epochs: int = 3000, lr: float = 0.05):
    """Train a ReLU net with a logit output on the grid dataset (full-batch Adam, numpy)."""
    from polytrav.model.network import Network

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
