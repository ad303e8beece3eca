"""Tighter intermediate bounds for each network of a pair on a batch of boxes: optimised
(α-CROWN) lower slopes, box by box.

The bound on ``g - f`` (:mod:`polytrav.bounds.difference`) is loose mostly through each
network's own intermediate bounds: a neuron that CROWN leaves unstable takes a chord in the
difference's relaxation where a stable one is exact, and the chords' slack grows layer by
layer. On the open boxes of NeuroDiff's ACAS Xu 3_9 (property 1, ε 0.01) after 4 000 boxes
of the input split, CROWN's bound on ``|g_0 - f_0|`` had a median 0.030 (28 % of the boxes
under ε); with 10 slope steps per intermediate row, 0.0069 (69 %). The input split
(:func:`~polytrav.bounds.split.split_box`) therefore bounds a pair's box with ``f``'s
bounds so where CROWN's bound did not prove it, before halving it
(:data:`~polytrav.bounds.split.SPLIT_PAIR_STEPS`; ``g``'s follow from ``f``'s and the
difference's in :meth:`~polytrav.bounds.difference.NetworkPair.box_output_bounds`).

Each box is a piece of :func:`~polytrav.bounds.crown.layer_bounds` (its own frame; the
ascent starts from CROWN's slopes and each row keeps its best iterate, so every layer's
bounds are at least CROWN's given the layers before), met with the batch's CROWN bounds.
Any slopes in ``[0, 1]`` give sound bounds. (One ascent for the whole batch, with per-row
slopes of every earlier neuron, cost 2.5 times as much as box by box on ACAS Xu.)
"""
from __future__ import annotations

import numpy as np

from polytrav.bounds.crown import Concretizer, LinearBounds, box_layer_bounds, layer_bounds

__all__ = ["optimised_layer_bounds"]


def optimised_layer_bounds(layers, mid: np.ndarray, rad: np.ndarray,
                           phases: np.ndarray | None = None, steps: int = 10
                           ) -> LinearBounds:
    """:func:`~polytrav.bounds.crown.box_layer_bounds` of the boxes ``x = mid[b] + rad[b] *
    u`` (a batch), each hidden layer's bounds tightened by ``steps`` slope-ascent steps on
    the rows CROWN leaves unstable, box by box. ``phases`` (``(boxes, neurons)``, int8) as
    there: read, and updated in place with the phases proven."""
    entry = None if phases is None else phases.copy()  # known before: signs, not numbers
    crown = box_layer_bounds(layers, mid, rad, phases)
    lo = [a[:, 0].copy() for a in crown.lo]
    hi = [a[:, 0].copy() for a in crown.hi]
    ends = np.cumsum([a.shape[1] for a in lo])
    dim = mid.shape[1]
    for b in range(mid.shape[0]):
        known = None if entry is None else entry[b].copy()
        own = layer_bounds(layers, np.diag(rad[b]), mid[b], Concretizer(dim), steps, known)
        for k in range(1, len(lo)):  # (the first layer's are exact)
            free = slice(None) if entry is None else \
                entry[b, ends[k] - lo[k].shape[1]:ends[k]] == 0
            lo[k][b, free] = np.maximum(lo[k][b, free], own.lo[k][free])
            hi[k][b, free] = np.maximum(np.minimum(hi[k][b, free], own.hi[k][free]),
                                        lo[k][b, free])
    bounds = LinearBounds([], [], [], [], [], first=crown.first)
    for low, high, end in zip(lo, hi, ends):
        if phases is not None:
            seen = phases[:, end - low.shape[1]:end]
            seen[...] = np.where(low >= 0.0, 1, np.where(high <= 0.0, -1, seen))
        bounds.push(low[:, None, :], high[:, None, :])
    return bounds
