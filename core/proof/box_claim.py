"""Certificates of a claim on one box that the checker builds itself (``diff``'s
ε-equivalence, an output's range): an ``unsat`` of one case, proven again the way ``verify``
records a proof, with the bounds the checker recomputes (docs/proofs.md).

:func:`write_box_claim` splits the box with the network's own CROWN bounds (the input split
of :func:`polytrav.bounds.settle.split_region`, without the bounds on two networks'
difference, which the checker does not compute), then gives each box the split leaves open a
phase tree (:mod:`polytrav.proof.phases`). A box neither proves within the budget stays a
claim without evidence (the checker answers ``incomplete``).
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np

from polytrav.proof.record import ProofRecorder

__all__ = ["write_box_claim"]


def write_box_claim(layers, claim, name: str, path, *, seconds: float | None = None,
                    solver=None, extra: dict | None = None, pair=None) -> dict:
    """Prove ``claim`` (one case: a box and an unsafe set, as the checker builds it) on the
    network ``layers`` (``(W, b)`` pairs) and write its certificate, claim ``name``, to
    ``path`` within ``seconds`` (None: no limit; each box's phase tree is capped by
    :data:`~polytrav.proof.phases.MAX_NODES` nodes); ``extra``: more arrays to store; ``pair``: the
    two networks' matched layers and their matching (``diff``'s claim on
    networks of one architecture): the split bounds the boxes with the bounds on their
    difference, as ``diff`` does, and the boxes it proves become difference-bound leaves.
    Returns what was written: the path, the counts of nodes, bound leaves and leaves
    without a certificate, the file's bytes, the seconds taken."""
    from polytrav.bounds import settle, split
    from polytrav.host.runner import RunSession
    from polytrav.model.network import Network

    t0 = time.perf_counter()
    case = claim.cases[0]
    network = Network.from_arrays([W for W, _ in layers], [b for _, b in layers])
    recorder = ProofRecorder(network, claim, claim=name, pair=pair)
    pairs = [(C / np.linalg.norm(C, axis=1)[:, None], d / np.linalg.norm(C, axis=1))
             for C, d in case.unsafe]
    lp = RunSession(solver).chains["lp"]
    policy = settle.DIFF_POLICY if pair is not None else dataclasses.replace(
        settle.VERIFY_POLICY, pair_bounds=False)  # (the bounds the checker computes)
    if split.effective_inputs(network, case.lower, case.upper, pairs, lp,
                              policy.pair_bounds) <= policy.split_max_effective:
        settle.split_region(pairs, network, case.lower, case.upper, lp, seconds, policy,
                            recorder.case(0))
    left = None if seconds is None else max(0.0, seconds - (time.perf_counter() - t0))
    recorder.certify_rest(lp[0], left)
    return {"path": str(path), **recorder.write(path, extra),
            "seconds": time.perf_counter() - t0}
