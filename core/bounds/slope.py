"""Sound bounds on a ReLU network's slope ``d f_output / d x_feature`` over sets of
activation patterns, by intervals carried through the layers, rigorous under float64
rounding (the monotonicity analysis's piece bound, and the big-M constants of
:meth:`polytrav.bounds.milp.RegionMilp.monotone`)."""
from __future__ import annotations

import numpy as np

from polytrav.vocabulary.tolerances import BOUND_TOL

__all__ = ["derivative_step", "masked", "slope_bounds", "slope_scale"]


def derivative_step(W: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bounds on ``W d`` for every ``d`` in ``[lo, hi]``, rigorous under float64 rounding.

    Each side is computed from the weights' signs (``W+ lo + W- hi``) and moved outward by
    :data:`~polytrav.vocabulary.tolerances.BOUND_TOL` times ``|W| (|lo| + |hi|)``, far above
    the rounding of the sums. A side that is a sum of terms each provably ``>= 0`` (a
    positive weight times a non-negative lower bound, a negative one times a non-positive
    upper bound) is at least 0 exactly, so it is clamped there: a slope proven ``>= 0``
    stays a proof (non-decreasing allows slopes of exactly 0, e.g. where every path from the
    feature is switched off), where an allowance alone would leave it ``-1e-9``.
    """
    Wp, Wn = np.maximum(W, 0.0), np.minimum(W, 0.0)
    slack = BOUND_TOL * ((Wp - Wn) @ (np.abs(lo) + np.abs(hi)))
    new_lo = Wp @ lo + Wn @ hi - slack
    new_hi = Wp @ hi + Wn @ lo + slack
    neg_lo, pos_hi = (lo < 0).astype(float), (hi > 0).astype(float)
    nonneg = (Wp @ neg_lo - Wn @ pos_hi) == 0  # every term of new_lo is >= 0
    nonpos = (Wp @ pos_hi - Wn @ neg_lo) == 0  # every term of new_hi is <= 0
    return (np.where(nonneg, np.maximum(new_lo, 0.0), new_lo),
            np.where(nonpos, np.minimum(new_hi, 0.0), new_hi))


def masked(lo: np.ndarray, hi: np.ndarray, on: np.ndarray, off: np.ndarray):
    """A derivative through ReLUs: passed where on, 0 where off, the hull of both else."""
    unstable = ~(on | off)
    return (np.where(on, lo, np.where(unstable, np.minimum(lo, 0.0), 0.0)),
            np.where(on, hi, np.where(unstable, np.maximum(hi, 0.0), 0.0)))


def _dot_bounds(lo_a, hi_a, lo_b, hi_b) -> tuple[float, float]:
    """Bounds on ``a . b`` for ``a``, ``b`` in boxes, rigorous under float64 rounding (the
    products' signs are exact, so a side whose every term is ``>= 0`` is clamped at 0)."""
    P = np.stack([lo_a * lo_b, lo_a * hi_b, hi_a * lo_b, hi_a * hi_b])
    low, high = P.min(axis=0), P.max(axis=0)
    slack = BOUND_TOL * float(np.abs(P).max(axis=0).sum())
    lo, hi = float(low.sum()) - slack, float(high.sum()) + slack
    return (max(lo, 0.0) if (low >= 0).all() else lo), (min(hi, 0.0) if (high <= 0).all() else hi)


def slope_bounds(weights, masks, feature: int, output: int, meet: str = "forward"
                 ) -> tuple[float, float]:
    """Bounds on the slope ``d f_output / d x_feature`` over every activation pattern that
    agrees with ``masks`` (per hidden layer ``(on, off)``: neurons known on, known off; the
    others may be either), rigorous under float64 rounding.

    The slope is ``e_out^T W_L D_{L-1} W_{L-1} ... D_0 W_0 e_feature``. ``meet="forward"``
    carries the derivative of each layer along ``e_feature`` forward as an interval
    (:func:`derivative_step`); ``meet="all"`` also carries the output's gradient backward
    as an interval and, at every hidden layer ``m`` (and the input), bounds the slope as
    the product of the forward interval at ``m`` and the backward one there; the tightest
    bound of each side is returned (each is sound, none dominates: an interval forgets
    that its entries share the same masks, and the two directions forget different ones).
    """
    n_hidden = len(weights) - 1
    fwd = []  # post-activation derivative intervals of each hidden layer
    lo = np.zeros(weights[0].shape[1])
    lo[feature] = 1.0
    hi = lo.copy()
    for k in range(n_hidden):
        lo, hi = masked(*derivative_step(weights[k], lo, hi), *masks[k])
        fwd.append((lo, hi))
    lo, hi = derivative_step(weights[-1][output:output + 1], lo, hi)
    best_lo, best_hi = float(lo[0]), float(hi[0])
    if meet == "forward":
        return best_lo, best_hi
    row = weights[-1][output].astype(float)
    blo, bhi = row, row  # the gradient of the output in each hidden layer's output
    for m in range(n_hidden - 1, -1, -1):
        if m < n_hidden - 1:  # the forward-only bound already met at the last layer
            low, high = _dot_bounds(blo, bhi, *fwd[m])
            best_lo, best_hi = max(best_lo, low), min(best_hi, high)
        blo, bhi = masked(blo, bhi, *masks[m])
        blo, bhi = derivative_step(weights[m].T, blo, bhi)
    best_lo, best_hi = max(best_lo, float(blo[feature])), min(best_hi, float(bhi[feature]))
    return best_lo, best_hi


def slope_scale(weights, feature: int, output: int) -> float:
    """The largest absolute path sum ``|W_L| ... |W_1| e_feature`` at ``output``: no slope
    (nor any derivative along the way, scaled by the later layers) exceeds it."""
    v = np.abs(weights[0][:, feature])
    for W in weights[1:]:
        v = np.abs(W) @ v
    return float(v[output])
