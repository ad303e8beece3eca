"""Issue 60: a certificate's budget holds in every stage of ``diff``'s certificate, the
halving of the boxes the split proved as a pair included. The clock jumps one second per
chunk of boxes bounded (no real time): past the deadline no more chunk is bounded, and the
certificate cut short checks ``incomplete``, never ``valid``; with no budget it is ``valid``."""
from __future__ import annotations

import time

import numpy as np
import pytest
from ctrl_c import save_mlp_onnx

import polytrav
from polytrav import Network
from polytrav.host.runner import RunSession
from polytrav.proof import record
from polytrav.proof.check import CHUNK, check_diff_proof, diff_claim, joint_layers
from polytrav.proof.equivalence import CLAIM
from polytrav.proof.record import ProofRecorder
from polytrav.testing.reference import random_net

LOWER, UPPER = np.array([-1.0, -1.0]), np.array([1.0, 1.0])
DEPTH = 8  # the box halved 8 times: 256 boxes, 8 chunks


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """``f`` (2-8-8-2), ``g`` (weights moved by 2 %) as ONNX files; ε 5 % above their
    largest ``|g_j - f_j|`` on the box (exact: ``polytrav.diff``)."""
    folder = tmp_path_factory.mktemp("proof_budget")
    f0 = random_net(11, 2, [8, 8], n_out=2)
    rng = np.random.default_rng(11)
    save_mlp_onnx(f0.weights, f0.biases, folder / "f.onnx")
    save_mlp_onnx([W * (1 + rng.normal(size=W.shape) * 0.02) for W in f0.weights],
                  f0.biases, folder / "g.onnx")
    f, g = (Network.from_onnx(folder / name) for name in ("f.onnx", "g.onnx"))
    eps = 1.05 * polytrav.diff(f, g, polytrav.Box(LOWER, UPPER)).max_abs
    return folder, f, g, eps


def _layers(net):
    return [(np.asarray(W, float), np.asarray(b, float)) for W, b in zip(net.weights, net.biases)]


def _certify(pair, path, seconds, monkeypatch):
    """The box's 256 boxes given to the recorder as the split's, proven as a pair; their
    leaves recorded within ``seconds`` of a clock that jumps 1 s per chunk bounded. Returns
    what was written and the chunks bounded."""
    _, f, g, eps = pair
    now, chunks = [0.0], [0]
    bound = record.difference_margins

    def jumping(*args):
        chunks[0] += 1
        now[0] += 1.0
        return bound(*args)
    monkeypatch.setattr(time, "perf_counter", lambda: now[0])
    monkeypatch.setattr(record, "difference_margins", jumping)
    fl, gl = _layers(f), _layers(g)
    layers = joint_layers(fl, gl)
    claim = diff_claim(2, LOWER, UPPER, eps)
    recorder = ProofRecorder(Network.from_arrays([W for W, _ in layers], [b for _, b in layers]),
                             claim, claim=CLAIM,
                             pair=(fl, gl, [(np.arange(len(b)),) * 2 for _, b in fl[:-1]]))
    case = recorder.case(0)
    case.start(LOWER, UPPER, difference=True)
    boxes, fresh = [(0, LOWER, UPPER)], 1
    for level in range(DEPTH):  # halve every box along x_0, then x_1, ...
        halves = []
        for i, lo, hi in boxes:
            d = level % 2
            mid = (lo[d] + hi[d]) / 2
            case.split(i, d, mid, fresh, fresh + 1)
            halves += [(fresh, lo, np.where(np.arange(2) == d, mid, hi)),
                       (fresh + 1, np.where(np.arange(2) == d, mid, lo), hi)]
            fresh += 2
        boxes = halves
    case.bounded([i for i, *_ in boxes], np.ones(len(boxes)), None, None)  # proven as a pair
    recorder.certify_rest(RunSession(None).chains["lp"][0], seconds)
    return recorder.write(path), chunks[0]


def test_a_budget_cut_in_the_halving_stage_checks_incomplete_never_valid(pair, tmp_path,
                                                                          monkeypatch):
    folder, _, _, eps = pair
    written, chunks = _certify(pair, tmp_path / "all.proof", None, monkeypatch)
    assert chunks == 2 ** DEPTH // CHUNK and written["uncertified"] == 0
    assert str(check_diff_proof(folder / "f.onnx", folder / "g.onnx", tmp_path / "all.proof",
                                eps, LOWER, UPPER)) == "valid"
    for seconds in (0.5, 2.5, 5.5):
        cut, chunks = _certify(pair, tmp_path / "cut.proof", seconds, monkeypatch)
        assert chunks == int(seconds) + 1, (seconds, chunks)  # the one in flight, no more
        assert cut["certified"] == CHUNK * chunks
        assert cut["uncertified"] == 2 ** DEPTH - CHUNK * chunks
        answer = check_diff_proof(folder / "f.onnx", folder / "g.onnx", tmp_path / "cut.proof",
                                  eps, LOWER, UPPER)
        assert answer.status == "incomplete", answer
