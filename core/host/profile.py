"""``profile()``: the network's outputs along one feature through a point, exactly.

Along the segment ``x + t e_j`` (the other features fixed) the network is piecewise linear
in ``t``. :func:`profile` finds every point where the activation pattern changes, layer by
layer: between two consecutive breakpoints found so far a layer's input is linear in ``t``,
so each of its neurons crosses zero at most once there, at a point found in closed form;
those crossings are added, and the next layer is examined. The outputs are linear between
the final breakpoints, and each breakpoint's value is a forward pass.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from polytrav.model.network import Network
from polytrav.vocabulary.errors import ConfigError

__all__ = ["Profile", "profile"]


@dataclass(frozen=True)
class Profile:
    """The piecewise-linear curve of the outputs along ``feature``.

    ``values`` (the feature's values at the breakpoints, increasing, ``lo`` and ``hi``
    included) and ``outputs`` ``(len(values), n_outputs)`` (forward passes there): linear
    interpolation between them is the network exactly. ``x`` is the point the segment goes
    through; ``name`` the feature's name.
    """

    feature: int
    name: str
    x: np.ndarray
    values: np.ndarray
    outputs: np.ndarray

    def __call__(self, v) -> np.ndarray:
        """The outputs at feature value(s) ``v`` in ``[lo, hi]``, by interpolation."""
        v = np.asarray(v, float)
        return np.stack([np.interp(v, self.values, self.outputs[:, k])
                         for k in range(self.outputs.shape[1])], axis=-1)

    def to_pandas(self):
        """One row per breakpoint: the feature's value, then each output."""
        import pandas as pd

        cols = {self.name: self.values}
        cols.update({f"output.{k}": self.outputs[:, k] for k in range(self.outputs.shape[1])})
        return pd.DataFrame(cols)


def profile(net: Network, x, feature, lo: float, hi: float, *, features=None) -> Profile:
    """The network along input ``feature`` from ``lo`` to ``hi`` through ``x``, exactly.

    Parameters
    ----------
    net : Network
    x : array_like (n_inputs,)
        The point; its ``feature`` is replaced along the segment, the others are kept.
    feature : int or str
        The input index, or its name (in ``features``).
    lo, hi : float
        The segment's ends (``lo < hi``).
    features : sequence of str, optional
        Feature names (default: the network's ``input_names``, else ``x<j>``).

    Returns
    -------
    Profile
        The breakpoints (every value where some neuron's pre-activation crosses 0 inside
        the segment, plus ``lo`` and ``hi``) and the outputs there.

    Examples
    --------
    >>> net = Network.from_arrays([[[1.0, 0.0], [1.0, 0.0]], [[1.0, -2.0]]], [[0.0, -1.0], [0.0]])
    >>> p = profile(net, [0.0, 5.0], 0, -2.0, 3.0)
    >>> p.values.tolist(), p.outputs[:, 0].tolist()
    ([-2.0, 0.0, 1.0, 3.0], [0.0, 0.0, 1.0, -1.0])
    """
    x = np.asarray(x, float).reshape(-1)
    if x.shape != (net.n_inputs,) or not np.isfinite(x).all():
        raise ConfigError(f"profile: x must be {net.n_inputs} finite numbers")
    names = list(features or net.input_names or [f"x{k}" for k in range(net.n_inputs)])
    if isinstance(feature, str) and feature in names:
        feature = names.index(feature)
    if not isinstance(feature, (int, np.integer)) or not 0 <= feature < net.n_inputs:
        raise ConfigError(f"profile: feature must be an input index in [0, {net.n_inputs}) "
                          f"or a name of {names[:10]}, got {feature!r}")
    lo, hi = float(lo), float(hi)
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ConfigError(f"profile: need finite lo < hi, got {lo}, {hi}")
    j = int(feature)
    t = np.array([lo, hi])
    for layer in range(net.n_hidden_layers):
        h = net.pre_activations(_points(x, j, t))[layer]  # (len(t), width)
        h0, h1 = h[:-1], h[1:]
        cross = (h0 > 0) & (h1 < 0) | (h0 < 0) & (h1 > 0)
        k, _ = np.nonzero(cross)
        s = h0[cross] / (h0[cross] - h1[cross])
        t = np.unique(np.concatenate([t, t[k] + s * (t[k + 1] - t[k])]))
    return Profile(j, str(names[j]), x, t, net.forward(_points(x, j, t)))


def _points(x, j, t):
    P = np.repeat(x[None, :], t.size, axis=0)
    P[:, j] = t
    return P
