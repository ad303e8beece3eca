"""The model's decision at a point: one rule for every analysis, the report and ``diff``.

A classifier's outputs are scores, one per class (one output: a binary classifier's logit of
class 1). The decision is the class whose score is **strictly the largest**; one output: class
1 where the score is ``> 0``, class 0 where it is ``< 0``. Where scores tie (a score of exactly
0, or two equal largest scores) the model decides **no class** (:data:`TIE`). Ties are where
decisions change, a set of no volume unless the scores are equal on a whole region (a dead ReLU
output): a counterfactual must reach an input whose class another score wins strictly, and
``diff`` counts a decision change only where both models decide.
"""
from __future__ import annotations

import numpy as np

__all__ = ["TIE", "decisions"]

#: The class index of a tie: no class.
TIE = -1


def decisions(Y) -> np.ndarray:
    """Per row of the scores ``Y`` ``(n, n_outputs)``, the class index, :data:`TIE` (-1)
    where the largest scores tie (one output: 1 where ``> 0``, 0 where ``< 0``, -1 at 0).

    >>> decisions([[2.0], [0.0], [-1.0]]).tolist(), decisions([[1.0, 3.0], [2.0, 2.0]]).tolist()
    ([1, -1, 0], [1, -1])
    """
    Y = np.asarray(Y, dtype=np.float64)
    if Y.shape[1] == 1:
        return np.where(Y[:, 0] > 0, 1, np.where(Y[:, 0] < 0, 0, TIE))
    k = np.argmax(Y, axis=1)
    top = Y[np.arange(Y.shape[0]), k]
    ties = (Y == top[:, None]).sum(axis=1) > 1
    return np.where(ties, TIE, k)
