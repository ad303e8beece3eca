"""A plane through a higher-dimensional input space, as a 2-D problem: the network
restricted to the plane (:func:`plane_slice`) and the region cut by it
(:func:`slice_region`). :func:`polytrav.interface.plot.partition_slice` draws it.
"""
from __future__ import annotations

import math

import numpy as np

from polytrav.model.network import Network
from polytrav.model.region import Ball, Box, Polyhedron, Region
from polytrav.vocabulary.errors import ConfigError
from polytrav.vocabulary.tolerances import EQUALITY_TOL

__all__ = ["plane_slice", "slice_region"]


def plane_slice(net: Network, point, dims: tuple[int, int], lower, upper) -> tuple[Network, Box]:
    """The 2-D network ``(s, t) -> net(point + s e_i + t e_j)`` and its box ``[lower, upper]``.

    ``dims = (i, j)`` are the two free inputs; the others stay at ``point``'s values (the
    values of ``i`` and ``j`` in ``point`` are ignored). The 2-D network has no
    ``input_names``: its inputs are ``net``'s inputs ``i`` and ``j`` (see :func:`partition_slice`,
    which labels them).
    """
    point = np.asarray(point, float).reshape(-1)
    i, j = dims
    n = net.n_inputs
    if point.shape[0] != n or not (0 <= i < n and 0 <= j < n) or i == j:
        raise ConfigError(f"plane_slice: need a point of {net.n_inputs} inputs and two different "
                          f"input indices, got {point.shape[0]} values and dims {dims}")
    W0, b0 = net.weights[0], net.biases[0]
    rest = point.copy()
    rest[[i, j]] = 0.0
    weights = [W0[:, [i, j]]] + list(net.weights[1:])
    biases = [W0 @ rest + b0] + list(net.biases[1:])
    return Network.from_arrays(weights, biases, name=net.name), Box(lower, upper)


def slice_region(region: Region, point: np.ndarray, dims: tuple[int, int]) -> Region:
    """``{(s, t): point + s e_i + t e_j in region}`` as a 2-D region."""
    i, j = dims
    if region.is_box:
        lo, hi = region.bounding_box()
        return Box(lo[[i, j]], hi[[i, j]])
    c = region.constraints()
    rest = point.copy()
    rest[[i, j]] = 0.0
    A, b = c.A[:, [i, j]], c.b - c.A @ rest
    if c.E.shape[0]:
        if np.abs(c.E[:, [i, j]]).max() > 0:
            raise ConfigError("partition_slice: the region's equality constraints involve the "
                              f"plane's inputs {dims}; the slice is not 2-D. Pick other dims")
        if np.abs(c.E @ rest - c.e).max() > EQUALITY_TOL * (1 + np.abs(c.e).max()):
            raise ConfigError("partition_slice: the point breaks the region's equality "
                              "constraints; pass a point of the region")
    out = Polyhedron(A, b)
    for ball in c.balls:
        s = np.ones_like(ball.center) if ball.scale is None else ball.scale
        off = np.abs(np.delete((ball.center - rest) / s, [i, j]))
        left = (math.sqrt(max(ball.radius ** 2 - float(off @ off), 0.0)) if ball.p == 2
                else ball.radius - float(off.sum()))
        if left <= 0:
            raise ConfigError(f"partition_slice: the plane misses the region's L{ball.p} ball "
                              "(or only touches it); pass a point of the region")
        out = out & Ball(ball.center[[i, j]], left, norm=ball.p,
                         scale=None if ball.scale is None else s[[i, j]])
    return out
