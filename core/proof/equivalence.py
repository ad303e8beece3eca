"""Certificates of ``diff``'s ε-equivalence: ``|g_j - f_j| <= ε`` over a box (docs/proofs.md).

The claim is an ``unsat`` on the joint network ``x -> [f(x); g(x)]`` (the checker's own
:func:`~polytrav.proof.check.joint_layers` and :func:`~polytrav.proof.check.diff_claim`): no
input of the box has ``g_j - f_j >= ε`` or ``f_j - g_j >= ε``. :func:`write_diff_proof`
proves it again the way ``verify`` records a proof, with the bounds the checker recomputes:
the input split with the joint network's own CROWN bounds (not the bounds on the two
networks' difference, which the checker does not compute), then phase trees
(:mod:`polytrav.proof.phases`) for the boxes it leaves open. A box neither proves within
the budget stays a claim without evidence (the checker answers ``incomplete``).
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np

from polytrav.proof.check import diff_claim, joint_layers
from polytrav.proof.record import ProofRecorder

__all__ = ["write_diff_proof", "CLAIM"]

#: The certificate's ``claim`` (:data:`polytrav.proof.check.CLAIMS`).
CLAIM = "epsilon-equivalence"


def write_diff_proof(f, g, lower, upper, epsilon: float, path, *, outputs=None,
                     seconds: float | None = None, solver=None) -> dict:
    """Write a certificate that ``|g_j - f_j| <= epsilon`` for the ``outputs`` (default all)
    of the networks ``f`` and ``g`` on the box ``[lower, upper]`` to ``path``, within
    ``seconds`` (None: no limit; each box's phase tree is capped by
    :data:`~polytrav.proof.phases.MAX_NODES` nodes). Call it where :func:`polytrav.diff`
    answers HOLDS: elsewhere its leaves stay unproven. Returns what was written: the path,
    the counts of nodes, bound leaves and leaves without a certificate, the file's bytes,
    the seconds taken. ``polytrav-check-proof F G FILE --epsilon E --lower L --upper U``
    checks it."""
    from polytrav.bounds import settle, split
    from polytrav.host.runner import RunSession
    from polytrav.model.network import Network

    t0 = time.perf_counter()
    lower, upper = np.asarray(lower, float), np.asarray(upper, float)
    layers = joint_layers(*[[(np.asarray(W, float), np.asarray(b, float))
                             for W, b in zip(net.weights, net.biases)] for net in (f, g)])
    joint = Network.from_arrays([W for W, _ in layers], [b for _, b in layers])
    claim = diff_claim(f.n_outputs, lower, upper, epsilon, outputs)
    recorder = ProofRecorder(joint, claim, claim=CLAIM)
    pairs = [(C / np.linalg.norm(C, axis=1)[:, None], d / np.linalg.norm(C, axis=1))
             for C, d in claim.cases[0].unsafe]
    session = RunSession(solver)
    policy = dataclasses.replace(settle.VERIFY_POLICY, pair_bounds=False)  # the checker's bounds
    if split.effective_inputs(joint, lower, upper, pairs, session.chains["lp"],
                              False) <= policy.split_max_effective:
        settle.split_region(pairs, joint, lower, upper, session.chains["lp"],
                            seconds, policy,
                            recorder.case(0))
    left = None if seconds is None else max(0.0, seconds - (time.perf_counter() - t0))
    recorder.certify_rest(session.chains["lp"][0], left)
    return {"path": str(path), **recorder.write(path), "seconds": time.perf_counter() - t0}
