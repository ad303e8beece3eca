"""Certificates of an output's exact range over a box: ``y_j`` stays strictly within
``(min - pad, max + pad)`` (the bound side), and the witnesses where ``min`` and ``max`` are
attained (the checker evaluates the network there exactly; docs/proofs.md).

The claim is an ``unsat`` of one case (the checker's
:func:`~polytrav.proof.check.range_claim`): no input of the box has ``y_j >= max + pad`` or
``y_j <= min - pad``, proven by :func:`~polytrav.proof.box_claim.write_box_claim`.
"""
from __future__ import annotations

import numpy as np

from polytrav.proof.box_claim import write_box_claim
from polytrav.proof.check import range_claim
from polytrav.vocabulary.tolerances import PROOF_RANGE_PAD

__all__ = ["write_range_proof", "range_bounds", "CLAIM"]

#: The certificate's ``claim`` (:data:`polytrav.proof.check.CLAIMS`).
CLAIM = "output-range"


def range_bounds(low: float | None, high: float | None) -> tuple:
    """The bounds a certificate claims for the range ``[low, high]``: each moved outwards by
    :data:`~polytrav.vocabulary.tolerances.PROOF_RANGE_PAD` (relative; None stays None)."""
    return (None if low is None else low - PROOF_RANGE_PAD * (1.0 + abs(low)),
            None if high is None else high + PROOF_RANGE_PAD * (1.0 + abs(high)))


def write_range_proof(network, lower, upper, output: int, path, *, low=None, high=None,
                      witnesses=(), seconds: float | None = None, solver=None) -> dict:
    """Write a certificate that ``low < y_output < high`` on the box ``[lower, upper]`` (a
    side None: not claimed; :func:`range_bounds` of an exact range gives the bounds) with the
    ``witnesses`` (input points where the extremes are attained) to ``path``, within
    ``seconds`` (None: no limit). Returns what was written
    (:func:`~polytrav.proof.box_claim.write_box_claim`), with ``low`` and ``high``.
    ``polytrav-check-proof NET FILE --output J --lower L --upper U --min A --max B`` checks
    it."""
    layers = [(np.asarray(W, float), np.asarray(b, float))
              for W, b in zip(network.weights, network.biases)]
    claim = range_claim(network.n_outputs, np.asarray(lower, float), np.asarray(upper, float),
                        output, low, high)
    X = np.array([np.asarray(x, float) for x in witnesses]).reshape(-1, network.n_inputs)
    return {**write_box_claim(layers, claim, CLAIM, path, seconds=seconds, solver=solver,
                              extra={"witness_x": X}), "low": low, "high": high}
