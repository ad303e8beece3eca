"""Issue 60, item 3 for ``diff``: certificates of the ε-equivalence ``|g_j - f_j| <= ε`` over a
box (:func:`polytrav.proof.equivalence.write_diff_proof`) check ``valid`` with
:func:`polytrav.proof.check.check_diff_proof`, which builds the joint network and the claim
itself; mutants that no longer prove the claim (ε lowered below the true maximum, a weight of
``g`` changed so that the claim fails, a box dropped or moved, numbers perturbed) never do."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from certificates import (
    diff_claim_header,
    random_mutant,
    read_certificate,
    write_certificate,
)
from ctrl_c import save_mlp_onnx

import polytrav
from polytrav import Network
from polytrav.proof.check import (
    BOUND,
    DIFF,
    OPEN,
    PHASE,
    SPLIT,
    check_diff_proof,
    joint_layers,
)
from polytrav.proof.equivalence import write_diff_proof
from polytrav.testing.reference import random_net

LOWER, UPPER = np.array([-1.0, -1.0]), np.array([1.0, 1.0])


def _layers(net):
    return [(np.asarray(W, float), np.asarray(b, float)) for W, b in zip(net.weights, net.biases)]


def _net(layers):
    return Network.from_arrays([W for W, _ in layers], [b for _, b in layers])


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """``f`` (2-8-8-2) and ``g`` (its weights moved by 2 %) as ONNX files, the exact largest
    ``|g_j - f_j|`` on ``[-1, 1]^2`` (``polytrav.diff``), ε a quarter above it, and a
    certificate of it."""
    folder = tmp_path_factory.mktemp("proof_diff")
    f0 = random_net(7, 2, [8, 8], n_out=2)
    rng = np.random.default_rng(7)
    save_mlp_onnx(f0.weights, f0.biases, folder / "f.onnx")
    save_mlp_onnx([W * (1 + rng.normal(size=W.shape) * 0.02) for W in f0.weights], f0.biases,
                  folder / "g.onnx")
    f, g = (Network.from_onnx(folder / name) for name in ("f.onnx", "g.onnx"))
    top = polytrav.diff(f, g, polytrav.Box(LOWER, UPPER)).max_abs
    eps = 1.25 * top
    assert polytrav.diff(f, g, polytrav.Box(LOWER, UPPER), epsilon=eps,
                         verdict_only=True).verdict.value == "holds"
    written = write_diff_proof(f, g, LOWER, UPPER, eps, folder / "d.proof")
    return folder, f, g, top, eps, written


def _check(folder, cert, eps, g="g.onnx", outputs=None):
    return str(check_diff_proof(folder / "f.onnx", folder / g, cert, eps, LOWER, UPPER, outputs))


def test_a_certificate_of_an_epsilon_equivalence_checks_valid(pair):
    folder, f, g, top, eps, written = pair
    assert written["certified"] > 0 and written["uncertified"] == 0
    assert _check(folder, folder / "d.proof", eps) == "valid"
    # the independent truth: no sampled point comes near epsilon
    X = np.random.default_rng(0).uniform(LOWER, UPPER, (20000, 2))
    assert np.abs(g.forward(X) - f.forward(X)).max() <= top + 1e-12 < eps


def test_the_joint_network_computes_both_networks():
    """``joint_layers`` stacks two networks of different depths on one input: its outputs
    are ``[f(x); g(x)]`` at sampled points (forward passes of each network alone)."""
    f, g = random_net(1, 3, [5, 4], n_out=2), random_net(2, 3, [6], n_out=2)
    X = np.random.default_rng(1).uniform(-2, 2, (500, 3))
    for a, b in ((f, g), (g, f)):
        joint = _net(joint_layers(_layers(a), _layers(b)))
        assert np.allclose(joint.forward(X), np.hstack([a.forward(X), b.forward(X)]),
                           rtol=1e-12, atol=1e-12)


def test_a_pair_of_different_depths_is_certified(tmp_path):
    f0, g0 = random_net(3, 2, [6, 6], n_out=1), random_net(4, 2, [8], n_out=1)
    save_mlp_onnx(f0.weights, f0.biases, tmp_path / "f.onnx")
    save_mlp_onnx(g0.weights, g0.biases, tmp_path / "g.onnx")
    f, g = (Network.from_onnx(tmp_path / n) for n in ("f.onnx", "g.onnx"))
    eps = 1.1 * polytrav.diff(f, g, polytrav.Box(LOWER, UPPER)).max_abs
    write_diff_proof(f, g, LOWER, UPPER, eps, tmp_path / "d.proof")
    assert _check(tmp_path, tmp_path / "d.proof", eps) == "valid"
    assert _check(tmp_path, tmp_path / "d.proof", 0.9 * eps / 1.1).startswith("invalid: step 3")


def test_a_box_left_to_phase_trees_is_certified(pair, tmp_path, monkeypatch):
    """Without the input split (no input counts as effective), the whole box is one phase
    tree; it checks valid, its outputs named."""
    from polytrav.bounds import settle

    folder, f, g, top, eps, _ = pair
    for name in ("VERIFY_POLICY", "DIFF_POLICY"):
        monkeypatch.setattr(settle, name, dataclasses.replace(getattr(settle, name),
                                                              split_max_effective=0))
    written = write_diff_proof(f, g, LOWER, UPPER, eps, tmp_path / "t.proof", outputs=[1])
    _, arrays = read_certificate(tmp_path / "t.proof")
    assert (arrays["case0_kind"] == PHASE).any() and not (arrays["case0_kind"] == SPLIT).any()
    assert written["uncertified"] == 0
    assert _check(folder, tmp_path / "t.proof", eps, outputs=[1]) == "valid"
    assert _check(folder, tmp_path / "t.proof", eps).startswith("invalid: step 3")


def test_mutants_that_no_longer_prove_the_claim_are_rejected(pair, tmp_path):
    folder, f, g, top, eps, _ = pair
    header, arrays = read_certificate(folder / "d.proof")
    cert = tmp_path / "m.proof"
    low = 0.9 * top  # a false claim: some point has |g_j - f_j| > low
    write_certificate(cert, diff_claim_header(folder, header, low, LOWER, UPPER), arrays)
    assert _check(folder, cert, low).startswith("invalid: step ")
    # g with one weight changed so that the claim fails at epsilon
    W = [np.array(w) for w in g.weights]
    W[-1][0, 0] += 50 * eps
    save_mlp_onnx(W, g.biases, folder / "g2.onnx")
    g2 = Network.from_onnx(folder / "g2.onnx")
    assert polytrav.diff(f, g2, polytrav.Box(LOWER, UPPER)).max_abs > eps
    write_certificate(cert, diff_claim_header(folder, header, eps, LOWER, UPPER, "g2.onnx"), arrays)
    assert _check(folder, cert, eps, "g2.onnx").startswith("invalid: step ")
    kind = arrays["case0_kind"]
    leaf = int(np.flatnonzero((kind == BOUND) | (kind == DIFF))[0])
    dropped = {**arrays, "case0_kind": np.where(np.arange(len(kind)) == leaf, OPEN, kind)}
    write_certificate(cert, header, dropped)  # a box without its evidence
    assert _check(folder, cert, eps) == f"incomplete: step {4 + leaf} (case 0, node {leaf}) " \
                                        "is a traversal claim without a certificate"
    keep = np.arange(len(kind)) != leaf  # a box removed: its parent's child is missing
    write_certificate(cert, header, {k: v[keep] if k.startswith("case0_") and "_beta_" not in k
                                     and "_alpha_" not in k else v for k, v in arrays.items()})
    assert _check(folder, cert, eps).startswith("invalid: step ")


def test_random_mutants_never_prove_a_false_claim(pair, tmp_path):
    """400 mutants (a multiplier, a split's value, a kind, a child, a coordinate changed;
    one to three changes each) against the claim at 0.9 times the true maximum (its digest
    in the header): none checks valid; against the true claim each gets an answer."""
    folder, f, g, top, eps, _ = pair
    header, arrays = read_certificate(folder / "d.proof")
    rng = np.random.default_rng(60)
    low = 0.9 * top
    false_header = diff_claim_header(folder, header, low, LOWER, UPPER)
    cert = tmp_path / "r.proof"
    for _ in range(400):
        a = random_mutant(arrays, rng, [SPLIT, BOUND, OPEN, PHASE])
        with np.errstate(invalid="ignore"):
            write_certificate(cert, false_header, a)
            assert _check(folder, cert, low).split(":")[0] in ("invalid", "incomplete")
            write_certificate(cert, header, a)
            assert _check(folder, cert, eps).split(":")[0] in ("valid", "invalid", "incomplete")
