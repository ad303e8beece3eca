"""Certificates of an L-infinity counterfactual's proven minimum: no input of another class
(of the target class, where one is asked) within distance ``radius`` of ``x0`` in the
region's box, ``radius`` just below the minimum (docs/proofs.md).

The claim is an ``unsat`` of one case that the checker builds itself
(:func:`~polytrav.proof.check.ball_claim`: ``x0``'s class computed exactly, the ball's box
rounded outwards), proven by :func:`~polytrav.proof.box_claim.write_box_claim`. L1 and L2
minima, and those with immutable or discrete inputs, carry none (docs/proofs.md).
"""
from __future__ import annotations

import numpy as np

from polytrav.proof.box_claim import write_box_claim
from polytrav.proof.check import ball_claim
from polytrav.vocabulary.tolerances import PROOF_RANGE_PAD

__all__ = ["write_ball_proof", "radius_below", "CLAIM"]

#: The certificate's ``claim`` (:data:`polytrav.proof.check.CLAIMS`).
CLAIM = "counterfactual"


def radius_below(distance: float | None) -> float | None:
    """The radius a certificate claims for the minimum ``distance`` (None: no input of
    another class in the region): just below it, by
    :data:`~polytrav.vocabulary.tolerances.PROOF_RANGE_PAD` relative to ``1 + distance``."""
    return None if distance is None else distance - PROOF_RANGE_PAD * (1.0 + distance)


def write_ball_proof(network, x0, radius, lower, upper, path, *, target=None, threshold=None,
                     scale=None, seconds: float | None = None, solver=None) -> dict:
    """Write a certificate that no input within L-infinity distance ``radius`` (per input
    times ``scale``; None: anywhere) of ``x0`` in the box ``[lower, upper]`` has another
    class than ``x0``'s (``target``'s, where given; one output: the other side of
    ``threshold``) to ``path``, within ``seconds`` (None: no limit). Returns what was
    written (:func:`~polytrav.proof.box_claim.write_box_claim`), with the radius."""
    layers = [(np.asarray(W, float), np.asarray(b, float))
              for W, b in zip(network.weights, network.biases)]
    claim = ball_claim(layers, x0, radius, lower, upper, target, threshold, scale)
    return {**write_box_claim(layers, claim, CLAIM, path, seconds=seconds, solver=solver),
            "radius": radius}
