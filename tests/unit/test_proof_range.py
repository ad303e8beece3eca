"""Issue 60, item 3 for ``output_range``: a certificate of an exact range's bound side (``min
- pad < y_j < max + pad`` on the box) with the witnesses where it is attained
(:func:`polytrav.proof.output_range.write_range_proof`) checks ``valid`` with
:func:`polytrav.proof.check.check_range_proof`, which evaluates the network at the witnesses
exactly; mutants that no longer prove the claim never do."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from certificates import read_certificate, write_certificate
from ctrl_c import save_mlp_onnx

import polytrav
from polytrav import Network
from polytrav.proof.check import (
    BOUND,
    OPEN,
    check_range_proof,
    network_digest,
    property_digest,
    range_claim,
)
from polytrav.proof.output_range import range_bounds, write_range_proof
from polytrav.testing.reference import random_net

LOWER, UPPER = np.array([-1.0, -1.0, -1.0]), np.array([1.0, 1.0, 1.0])


@pytest.fixture(scope="module")
def ranged(tmp_path_factory):
    """A 3-10-10-2 net, output 1's exact range on ``[-1, 1]^3`` (``output_range``) and a
    certificate of it."""
    folder = tmp_path_factory.mktemp("proof_range")
    net0 = random_net(11, 3, [10, 10], n_out=2)
    save_mlp_onnx(net0.weights, net0.biases, folder / "net.onnx")
    net = Network.from_onnx(folder / "net.onnx")
    from polytrav.host.manager import create_analysis

    res = polytrav.analyze(net, polytrav.Box(LOWER, UPPER),
                           create_analysis("output_range", output=1))[0]
    assert res.exact
    low, high = range_bounds(res.value["min"], res.value["max"])
    written = write_range_proof(net, LOWER, UPPER, 1, folder / "r.proof", low=low, high=high,
                                witnesses=[res.details["argmin"], res.details["argmax"]])
    return folder, net, res, low, high, written


def test_a_range_certificate_checks_valid_and_names_the_attained_values(ranged):
    folder, net, res, low, high, written = ranged
    assert written["uncertified"] == 0
    got = check_range_proof(folder / "net.onnx", folder / "r.proof", 1, LOWER, UPPER, low, high)
    assert got.status == "valid"
    values = [float(part.split(" = ")[1].split(" at ")[0]) for part in got.message.split("; ")]
    assert values == pytest.approx([res.value["min"], res.value["max"]], abs=1e-12)
    # the independent truth: no sampled point leaves the range
    y = net.forward(np.random.default_rng(0).uniform(LOWER, UPPER, (20000, 3)))[:, 1]
    assert res.value["min"] - 1e-12 <= y.min() and y.max() <= res.value["max"] + 1e-12
    assert low < res.value["min"] and res.value["max"] < high  # the pads are outward
    one_side = check_range_proof(folder / "net.onnx", folder / "r.proof", 1, LOWER, UPPER,
                                 None, high)  # another claim: its digest differs
    assert str(one_side).startswith("invalid: step 3")


def test_range_mutants_are_rejected(ranged, tmp_path):
    folder, net, res, low, high, _ = ranged
    header, arrays = read_certificate(folder / "r.proof")
    cert = tmp_path / "m.proof"
    lowered = res.value["max"] - 1e-3 * (1 + abs(res.value["max"]))  # false: the max exceeds it
    write_certificate(cert, {**header, "property_sha256": property_digest(
        range_claim(2, LOWER, UPPER, 1, low, lowered))}, arrays)
    got = str(check_range_proof(folder / "net.onnx", cert, 1, LOWER, UPPER, low, lowered))
    assert got.startswith("invalid: step "), got
    outside = {**arrays, "witness_x": arrays["witness_x"] + 2.0}  # witnesses outside the box
    write_certificate(cert, header, outside)
    got = str(check_range_proof(folder / "net.onnx", cert, 1, LOWER, UPPER, low, high))
    assert got.startswith("invalid: step ") and "(the witnesses)" in got, got
    kind = arrays["case0_kind"]
    leaf = int(np.flatnonzero(kind == BOUND)[-1])
    write_certificate(cert, header, {**arrays, "case0_kind": np.where(
        np.arange(len(kind)) == leaf, OPEN, kind)})
    got = str(check_range_proof(folder / "net.onnx", cert, 1, LOWER, UPPER, low, high))
    assert got.startswith(f"incomplete: step {4 + leaf} "), got
    W = [np.array(w) for w in net.weights]  # a network whose output 1 exceeds the claim
    W[-1][1] *= 1.5
    save_mlp_onnx(W, net.biases, tmp_path / "other.onnx")
    other = Network.from_onnx(tmp_path / "other.onnx")
    y = other.forward(np.random.default_rng(1).uniform(LOWER, UPPER, (20000, 3)))[:, 1]
    assert y.max() > high or y.min() < low
    write_certificate(cert, {**header, "network_sha256": network_digest(other)}, arrays)
    got = str(check_range_proof(tmp_path / "other.onnx", cert, 1, LOWER, UPPER, low, high))
    assert got.startswith("invalid: step "), got


def test_the_exact_evaluation_at_a_witness():
    from polytrav.proof.check import _exact_output

    net = random_net(2, 3, [5], n_out=2)
    layers = [(np.asarray(W, float), np.asarray(b, float)) for W, b in zip(net.weights, net.biases)]
    x = np.array([0.25, -0.5, 0.75])
    z = [sum((Fraction(float(w)) * Fraction(float(v)) for w, v in zip(row, x)),
             Fraction(float(b))) for row, b in zip(*layers[0])]
    a = [max(v, Fraction(0)) for v in z]
    want = sum((Fraction(float(w)) * v for w, v in zip(layers[1][0][1], a)),
               Fraction(float(layers[1][1][1])))
    assert _exact_output(layers, x, 1) == want
    assert float(want) == pytest.approx(net.forward(x[None])[0, 1], abs=1e-12)


# ------------------------------------------------------------------ counterfactuals (L-inf)

@pytest.fixture(scope="module")
def nearest(tmp_path_factory):
    """A 3-10-10-3 classifier, the exact L-infinity counterfactual of ``x0`` on ``[-1, 1]^3``
    and a certificate of its minimum."""
    from polytrav.host.manager import create_analysis
    from polytrav.proof.counterfactual import radius_below, write_ball_proof

    folder = tmp_path_factory.mktemp("proof_ball")
    net0 = random_net(11, 3, [10, 10], n_out=3)
    save_mlp_onnx(net0.weights, net0.biases, folder / "net.onnx")
    net = Network.from_onnx(folder / "net.onnx")
    x0 = np.array([0.1, -0.2, 0.3])
    res = polytrav.analyze(net, polytrav.Box(LOWER, UPPER),
                           create_analysis("counterfactual", x0=x0, norm=np.inf))[0]
    assert res.exact and res.value is not None
    radius = radius_below(res.value)
    written = write_ball_proof(net, x0, radius, LOWER, UPPER, folder / "c.proof")
    return folder, net, x0, res, radius, written


def test_a_counterfactual_minimum_is_certified(nearest):
    from polytrav.proof.check import check_ball_proof

    folder, net, x0, res, radius, written = nearest
    assert written["uncertified"] == 0 and radius < res.value
    assert str(check_ball_proof(folder / "net.onnx", folder / "c.proof", x0, radius, LOWER,
                                UPPER)) == "valid"
    # the independent truth: dense samples of the ball keep x0's class; the witness does not
    X = x0 + np.random.default_rng(2).uniform(-radius, radius, (20000, 3))
    c0 = int(np.argmax(net.forward(x0[None])[0]))
    assert (np.argmax(net.forward(X), axis=1) == c0).all()
    assert int(np.argmax(net.forward(np.asarray(res.witness)[None])[0])) != c0


def test_a_counterfactual_certificate_rejects_a_larger_radius(nearest, tmp_path):
    """The claim at a radius past the minimum is false (the witness is inside): with its
    digest in the header, the tree no longer proves it."""
    from polytrav.proof.check import _read_network, ball_claim, check_ball_proof

    folder, net, x0, res, radius, _ = nearest
    header, arrays = read_certificate(folder / "c.proof")
    bigger = 1.05 * res.value
    claim = ball_claim(_read_network(folder / "net.onnx"), x0, bigger, LOWER, UPPER)
    write_certificate(tmp_path / "m.proof", {**header, "property_sha256": property_digest(
        claim)}, arrays)
    got = str(check_ball_proof(folder / "net.onnx", tmp_path / "m.proof", x0, bigger, LOWER,
                               UPPER))
    assert got.startswith("invalid: step "), got
