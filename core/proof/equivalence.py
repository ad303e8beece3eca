"""Certificates of ``diff``'s ε-equivalence: ``|g_j - f_j| <= ε`` over a box (docs/proofs.md).

The claim is an ``unsat`` on the joint network ``x -> [f(x); g(x)]`` (the checker's own
:func:`~polytrav.proof.check.joint_layers` and :func:`~polytrav.proof.check.diff_claim`): no
input of the box has ``g_j - f_j >= ε`` or ``f_j - g_j >= ε``, proven again by
:func:`~polytrav.proof.box_claim.write_box_claim`.
"""
from __future__ import annotations

import numpy as np

from polytrav.proof.box_claim import write_box_claim
from polytrav.proof.check import aligned, diff_claim, joint_layers

__all__ = ["write_diff_proof", "CLAIM"]

#: The certificate's ``claim`` (:data:`polytrav.proof.check.CLAIMS`).
CLAIM = "epsilon-equivalence"


def write_diff_proof(f, g, lower, upper, epsilon: float, path, *, outputs=None,
                     seconds: float | None = None, solver=None) -> dict:
    """Write a certificate that ``|g_j - f_j| <= epsilon`` for the ``outputs`` (default all)
    of the networks ``f`` and ``g`` on the box ``[lower, upper]`` to ``path``, within
    ``seconds`` (None: no limit). Call it where :func:`polytrav.diff` answers HOLDS:
    elsewhere its leaves stay unproven. Returns what was written
    (:func:`~polytrav.proof.box_claim.write_box_claim`). ``polytrav-check-proof F G FILE
    --epsilon E --lower L --upper U`` checks it."""
    fl, gl = ([(np.asarray(W, float), np.asarray(b, float)) for W, b in zip(net.weights,
                                                                          net.biases)]
              for net in (f, g))
    layers = joint_layers(fl, gl)
    pair, extra = None, {}
    if len(fl) == len(gl) > 1:  # the neurons matched (a pruned copy: zero neurons), as the
        from polytrav.bounds.difference import align  # checker will (pair_f{k}, pair_g{k})

        maps = align(fl, gl)[2]
        extra = {f"pair_{x}{k}": np.asarray(m, np.int64) for k, ms in enumerate(maps)
                 for x, m in zip("fg", ms)}
        pair = (aligned(fl, [m for m, _ in maps]), aligned(gl, [m for _, m in maps]),
                [tuple(np.asarray(m, np.int64) for m in ms) for ms in maps])
    claim = diff_claim(f.n_outputs, np.asarray(lower, float), np.asarray(upper, float),
                       epsilon, outputs)
    return write_box_claim(layers, claim, CLAIM, path, seconds=seconds, solver=solver,
                           pair=pair, extra=extra)
