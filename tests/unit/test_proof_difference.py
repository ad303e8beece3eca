"""Issue 60: the checker's difference-bound leaf (:func:`polytrav.proof.check.
difference_margins`, format version 3) and ``diff``'s certificates built on it.

The bound on ``g - f`` is checked against dense samples (a lower bound never above a sampled
difference) and the producer's own difference bound; its ReLU-difference lines against exact
fractions; certificates of ``diff``'s split check ``valid`` with far fewer leaves than the
joint network's bound needs, and every mutant that no longer proves the claim (ε lowered,
``g`` with one weight changed, a box dropped or its evidence removed, a leaf's kind or
multiplier changed, a version-2 header, the leaf on a one-network claim) is rejected."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from certificates import (
    diff_claim_header,
    perturbed_pair,
    random_mutant,
    read_certificate,
    write_certificate,
)
from ctrl_c import save_mlp_onnx

import polytrav
from polytrav import Network
from polytrav.bounds.difference import difference_bounds
from polytrav.proof.box_claim import write_box_claim
from polytrav.proof.check import (
    BOUND,
    DIFF,
    OPEN,
    PHASE,
    SPLIT,
    Bounder,
    check_diff_proof,
    check_proof,
    diff_claim,
    difference_bounder,
    difference_margins,
    joint_layers,
    network_digest,
    property_digest,
)
from polytrav.proof.equivalence import write_diff_proof
from polytrav.testing.reference import random_net

LOWER, UPPER = np.array([-1.0, -1.0]), np.array([1.0, 1.0])


def _layers(net):
    return [(np.asarray(W, float), np.asarray(b, float)) for W, b in zip(net.weights, net.biases)]


def _net(layers):
    return Network.from_arrays([W for W, _ in layers], [b for _, b in layers])


def _copies(seed, n_in=3, hidden=(10, 10, 8)):
    """``f`` and three copies: weights and biases moved by 2 %, by 20 %, and two neurons of
    the first hidden layer pruned (zero rows and columns)."""
    f = _layers(random_net(seed, n_in, list(hidden), n_out=2))
    rng = np.random.default_rng(seed)
    moved = [[(W * (1 + s * rng.normal(size=W.shape)), b * (1 + s * rng.normal(size=b.shape)))
              for W, b in f] for s in (0.02, 0.2)]
    pruned = [(W.copy(), b.copy()) for W, b in f]
    pruned[0][0][:2], pruned[0][1][:2], pruned[1][0][:, :2] = 0.0, 0.0, 0.0
    return f, moved + [pruned]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_difference_bound_is_below_every_sampled_difference(seed):
    f, copies = _copies(seed)
    rng = np.random.default_rng(seed)
    for g in copies:
        fn, gn = _net(f), _net(g)
        c, r = rng.uniform(-1, 1, (6, 3)), rng.uniform(0.01, 0.6, (6, 3))
        for j in range(2):
            C = np.zeros((1, 4))
            C[0, j], C[0, 2 + j] = -1.0, 1.0  # g_j - f_j >= bound
            low = difference_margins(f, g, c - r, c + r, [(C, np.zeros(1))], np.ones((6, 1)))[0]
            for k in range(6):
                X = rng.uniform(c[k] - r[k], c[k] + r[k], (4000, 3))
                X = np.vstack([X, c[k] - r[k], c[k] + r[k]])
                sampled = (gn.forward(X) - fn.forward(X))[:, j].min()
                assert low[k] <= sampled, (seed, j, k, low[k], sampled)
            # mostly at or above diff's own difference bound (the same lines; the checker's
            # intermediate bounds are also met with their intervals); on the close copy,
            # above the joint network's
            theirs = difference_bounds(fn, gn, c - r, c + r, path="difference").lower[:, j]
            assert (low >= theirs - 1e-9 - 1e-6 * np.abs(theirs)).mean() >= 0.5, (low, theirs)
            if g is copies[0]:
                joint = Bounder(joint_layers(f, g), c - r, c + r).margin(
                    C, np.zeros(1), np.ones((6, 1)), np.arange(6))
                assert np.all(low > joint), (low, joint)


def test_the_difference_lines_hold_exactly_on_the_difference_interval():
    """Where a ReLU difference's line is a chord (slope strictly between 0 and 1), it lies
    below ``min(D, 0)`` (lower) or above ``max(D, 0)`` (upper) at both ends of ``D``'s
    interval, in exact arithmetic on the floats the checker uses."""
    f, copies = _copies(4, hidden=(12, 12))
    rng = np.random.default_rng(4)
    checked = 0
    for g in copies:
        c, r = rng.uniform(-1, 1, (8, 3)), rng.uniform(0.05, 0.8, (8, 3))
        bounder = difference_bounder(f, g, c - r, c + r)
        for (zlo, zhi), (alpha, s, t, tl, (lp, up)) in zip(bounder.bounds, bounder.relu):
            n = zlo.shape[1] // 2
            for b, i in zip(*np.nonzero((alpha[:, n:] > 0) & (alpha[:, n:] < 1) & (lp == 0))):
                ld, ud = Fraction(zlo[b, n + i]), Fraction(zhi[b, n + i])
                ls, li = Fraction(alpha[b, n + i]), Fraction(tl[b, n + i])
                assert ls * ld + li <= min(ld, 0) and ls * ud + li <= 0
                checked += 1
            for b, i in zip(*np.nonzero((s[:, n:] > 0) & (s[:, n:] < 1) & (up == 0))):
                ld, ud = Fraction(zlo[b, n + i]), Fraction(zhi[b, n + i])
                us, ui = Fraction(s[b, n + i]), Fraction(t[b, n + i])
                assert us * ld + ui >= 0 and us * ud + ui >= max(ud, 0)
                checked += 1
    assert checked > 20


@pytest.fixture(scope="module")
def tight(tmp_path_factory):
    """``f`` (2-8-8-2) and ``g`` (weights moved by 2 %) as ONNX files, ε 5 % above their
    largest ``|g_j - f_j|`` on ``[-1, 1]^2`` (exact: ``polytrav.diff``) and a certificate."""
    folder = tmp_path_factory.mktemp("proof_difference")
    f, g, top = perturbed_pair(folder, LOWER, UPPER)
    eps = 1.05 * top
    written = write_diff_proof(f, g, LOWER, UPPER, eps, folder / "d.proof")
    return folder, f, g, top, eps, written


def _check(folder, cert, eps, g="g.onnx"):
    return str(check_diff_proof(folder / "f.onnx", folder / g, cert, eps, LOWER, UPPER))


def test_diffs_split_is_certified_by_difference_leaves(tight, tmp_path):
    """The certificate holds difference-bound leaves, checks valid, and has far fewer nodes
    than the same claim proven with the joint network's bounds alone."""
    folder, f, g, top, eps, written = tight
    header, arrays = read_certificate(folder / "d.proof")
    kind = arrays["case0_kind"]
    assert header["version"] == 5 and (kind == DIFF).sum() > 0 and written["uncertified"] == 0
    assert _check(folder, folder / "d.proof", eps) == "valid"
    joint = write_box_claim(joint_layers(_layers(f), _layers(g)),
                            diff_claim(2, LOWER, UPPER, eps), "epsilon-equivalence",
                            tmp_path / "j.proof")
    assert joint["uncertified"] == 0 and 4 * written["nodes"] < joint["nodes"], (written, joint)
    assert _check(folder, tmp_path / "j.proof", eps) == "valid"


def test_mutants_of_difference_leaves_that_no_longer_prove_the_claim_are_rejected(tight,
                                                                                 tmp_path):
    folder, f, g, top, eps, _ = tight
    header, arrays = read_certificate(folder / "d.proof")
    kind = arrays["case0_kind"]
    cert = tmp_path / "m.proof"
    leaves = np.flatnonzero(kind == DIFF)
    low = 0.97 * top  # a false claim: some point has |g_j - f_j| > low
    write_certificate(cert, diff_claim_header(folder, header, low, LOWER, UPPER), arrays)
    assert _check(folder, cert, low).startswith("invalid: step ")
    # g with one weight changed so that the claim fails at epsilon
    W = [np.array(w) for w in g.weights]
    W[-1][1, 2] += 40 * eps
    save_mlp_onnx(W, g.biases, tmp_path / "g2.onnx")
    (tmp_path / "f.onnx").write_bytes((folder / "f.onnx").read_bytes())
    assert polytrav.diff(f, Network.from_onnx(tmp_path / "g2.onnx"),
                         polytrav.Box(LOWER, UPPER)).max_abs > eps
    write_certificate(cert, diff_claim_header(tmp_path, header, eps, LOWER, UPPER, "g2.onnx"), arrays)
    assert _check(tmp_path, cert, eps, "g2.onnx").startswith("invalid: step ")
    leaf = int(leaves[0])
    write_certificate(cert, header, {**arrays, "case0_kind": np.where(
        np.arange(len(kind)) == leaf, OPEN, kind)})  # a box without its evidence
    assert _check(folder, cert, eps) == (f"incomplete: step {4 + leaf} (case 0, node {leaf}) "
                                         "is a traversal claim without a certificate")
    keep = np.arange(len(kind)) != leaf  # a box removed: its parent's child is missing
    write_certificate(cert, header, {k: v[keep] if k.startswith("case0_") and "_beta_" not in k
                                     and "_alpha_" not in k else v for k, v in arrays.items()})
    assert _check(folder, cert, eps).startswith("invalid: step ")
    # a difference leaf read as a bound leaf of the joint network: that bound fails
    as_bound = np.where(np.isin(np.arange(len(kind)), leaves), BOUND, kind)
    write_certificate(cert, header, {**arrays, "case0_kind": as_bound})
    assert _check(folder, cert, eps).startswith("invalid: step ")
    # a multiplier zeroed: its disjunct's bound is 0, not > 0
    lam = arrays["case0_lam"].copy()
    lam[leaf, 0] = 0.0
    write_certificate(cert, header, {**arrays, "case0_lam": lam})
    answer = _check(folder, cert, eps)
    assert answer.startswith(f"invalid: step {4 + leaf} (case 0, node {leaf}, disjunct 0): the "
                             "difference bound ") and answer.endswith(" is not > 0"), answer
    # an older version has no difference leaves
    write_certificate(cert, {**header, "version": 2}, arrays)
    assert _check(folder, cert, eps) == (f"invalid: step {4 + leaf} (case 0, node {leaf}): "
                                         "unknown kind 5")


def test_a_difference_leaf_proves_nothing_about_one_network(tight, tmp_path):
    """A one-network ``unsat`` certificate with a difference leaf is invalid at that leaf."""
    folder, *_ = tight
    net = random_net(5, 2, [6], n_out=1)
    save_mlp_onnx(net.weights, net.biases, tmp_path / "n.onnx")
    (tmp_path / "p.vnnlib").write_text(
        "(declare-const X_0 Real)\n(declare-const X_1 Real)\n(declare-const Y_0 Real)\n"
        "(assert (>= X_0 -1))\n(assert (<= X_0 1))\n(assert (>= X_1 -1))\n(assert (<= X_1 1))\n"
        "(assert (>= Y_0 1000))\n")
    from polytrav.verification.vnnlib import read_vnnlib

    spec = read_vnnlib(tmp_path / "p.vnnlib", n_inputs=2, n_outputs=1)
    header = {"format": "polytrav-proof", "version": 5, "claim": "unsat", "cases": 1,
              "network_sha256": network_digest(Network.from_onnx(tmp_path / "n.onnx")),
              "property_sha256": property_digest(spec)}
    one = {"case0_kind": np.array([DIFF]), "case0_dim": np.array([-1]),
           "case0_at": np.zeros(1), "case0_left": np.array([-1]),
           "case0_right": np.array([-1]), "case0_lam": np.ones((1, 1))}
    write_certificate(tmp_path / "u.proof", header, one)
    assert str(check_proof(tmp_path / "n.onnx", tmp_path / "p.vnnlib", tmp_path / "u.proof")) \
        == ("invalid: step 4 (case 0, node 0): a difference bound needs an epsilon-equivalence "
            "of two networks of one depth, their neurons matched")


def test_random_mutants_of_difference_leaves_never_prove_a_false_claim(tight, tmp_path):
    """300 mutants (a multiplier, a split's value, a kind, a child, a coordinate; one to
    three changes each) against the claim at 0.97 times the true maximum: none is valid."""
    folder, f, g, top, eps, _ = tight
    header, arrays = read_certificate(folder / "d.proof")
    rng = np.random.default_rng(61)
    low = 0.97 * top
    false_header = diff_claim_header(folder, header, low, LOWER, UPPER)
    cert = tmp_path / "r.proof"
    for _ in range(300):
        a = random_mutant(arrays, rng, [SPLIT, BOUND, OPEN, PHASE, DIFF])
        with np.errstate(invalid="ignore"):
            write_certificate(cert, false_header, a)
            assert _check(folder, cert, low).split(":")[0] in ("invalid", "incomplete")
            write_certificate(cert, header, a)
            assert _check(folder, cert, eps).split(":")[0] in ("valid", "invalid", "incomplete")
