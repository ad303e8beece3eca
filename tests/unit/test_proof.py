"""Issue 60: certificates of ``unsat`` (``verify(..., proof=)``) and the independent checker
(:mod:`polytrav.proof.check`): valid certificates check ``valid``; tampered ones are rejected
at the step that no longer holds; a ``sat`` gets none; the checker's bounds are sound."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from certificates import read_certificate, write_certificate
from ctrl_c import save_mlp_onnx

from polytrav import Network, verify
from polytrav.proof import check
from polytrav.proof.check import BOUND, OPEN, SPLIT, check_proof, network_digest
from polytrav.testing.reference import random_net

BOX = "\n".join(f"(assert (>= X_{i} -1))\n(assert (<= X_{i} 1))" for i in range(3))


def _vnnlib(path: Path, unsafe: str) -> Path:
    decl = [f"(declare-const X_{i} Real)" for i in range(3)]
    decl += [f"(declare-const Y_{j} Real)" for j in range(2)]
    path.write_text("\n".join(decl + [BOX, unsafe]) + "\n")
    return path


def _instance(folder: Path, seed: int, gap: float = 0.05):
    """A random 3-8-8-2 net (ONNX, float32 weights) and ``Y_0 >= level`` just above its
    sampled maximum on ``[-1, 1]^3`` (unsat), or below it for a negative ``gap`` (sat)."""
    net = random_net(seed, 3, [8, 8], n_out=2)
    save_mlp_onnx(net.weights, net.biases, folder / "net.onnx")
    y = Network.from_onnx(folder / "net.onnx").forward(
        np.random.default_rng(seed).uniform(-1, 1, (20000, 3)))[:, 0]
    level = y.max() + gap * (y.max() - y.min())
    return folder / "net.onnx", _vnnlib(folder / "prop.vnnlib", f"(assert (>= Y_0 {float(level)!r}))")


@pytest.fixture(scope="module")
def proven(tmp_path_factory):
    """Three unsat instances and their certificates."""
    out = []
    for seed in (3, 11, 29):
        folder = tmp_path_factory.mktemp(f"proof{seed}")
        net, prop = _instance(folder, seed)
        result = verify(net, prop, proof=folder / "p.proof")
        assert result.answer == "unsat"
        out.append((net, prop, folder / "p.proof", result))
    return out


def test_certificates_of_unsat_check_valid(proven):
    for net, prop, cert, result in proven:
        assert result.proof["path"] == str(cert) and result.proof["uncertified"] == 0
        assert result.proof["certified"] >= 1
        assert str(check_proof(net, prop, cert)) == "valid"


def test_a_conjunction_proven_by_its_lp_carries_its_multipliers(tmp_path):
    """``Y_0 >= c and Y_0 <= c - 0.01``: neither row is impossible alone, their sum is; the
    leaf carries the LP's multipliers on both rows."""
    net, _ = _instance(tmp_path, 5)
    prop = _vnnlib(tmp_path / "conj.vnnlib", "(assert (>= Y_0 0.2))\n(assert (<= Y_0 0.19))")
    result = verify(net, prop, proof=tmp_path / "c.proof")
    assert result.answer == "unsat"
    _, arrays = read_certificate(tmp_path / "c.proof")
    leaves = arrays["case0_lam"][arrays["case0_kind"] == BOUND]
    assert (leaves > 0).sum(axis=1).max() == 2  # both rows, from the LP's dual
    assert str(check_proof(net, prop, tmp_path / "c.proof")) == "valid"


def test_a_sat_instance_gets_no_certificate(tmp_path):
    net, prop = _instance(tmp_path, 7, gap=-0.2)
    result = verify(net, prop, proof=tmp_path / "p.proof")
    assert result.answer == "sat" and result.proof is None
    assert not (tmp_path / "p.proof").exists()


def _mutant(cert, tmp_path, change):
    header, arrays = read_certificate(cert)
    change(header, arrays)
    return write_certificate(tmp_path / "mutant.proof", header, arrays)


def _first(arrays, kind):
    return int(np.flatnonzero(arrays["case0_kind"] == kind)[0])


def _set(arrays, key, index, value):
    arrays[f"case0_{key}"][index] = value


def test_tampered_certificates_fail_at_their_step(proven, tmp_path):
    net, prop, cert, _ = proven[0]
    header, arrays = read_certificate(cert)
    leaf, split = _first(arrays, BOUND), _first(arrays, SPLIT)
    step = (lambda i: 4 + i)  # steps 1-3: the file, the network, the property
    cases = {
        "zeroed multipliers": (lambda h, a: _set(a, "lam", leaf, 0.0),
                               f"invalid: step {step(leaf)} (case 0, node {leaf}, disjunct 0)"),
        "flipped multiplier": (lambda h, a: _set(a, "lam", leaf, -a["case0_lam"][leaf]),
                               f"invalid: step {step(leaf)} (case 0, node {leaf}): a multiplier"),
        "split outside its box": (lambda h, a: _set(a, "at", split, 1.5),
                                  f"invalid: step {step(split)} (case 0, node {split}): split at"),
        "split coordinate": (lambda h, a: _set(a, "dim", split, 3),
                             f"invalid: step {step(split)} (case 0, node {split}): split "
                             "coordinate"),
        "child pointing back": (lambda h, a: _set(a, "left", split, 0),
                                f"invalid: step {step(split)} (case 0, node {split}): child 0"),
        "leaf left open": (lambda h, a: _set(a, "kind", leaf, OPEN),
                           f"incomplete: step {step(leaf)} (case 0, node {leaf}) is a "
                           "traversal claim"),
        "unknown version": (lambda h, a: h.update(version=99), "invalid: step 1 (the file)"),
        "other property": (lambda h, a: h.update(property_sha256="0" * 64),
                           "invalid: step 3 (the property)"),
        "other network": (lambda h, a: h.update(network_sha256="0" * 64),
                          "invalid: step 2 (the network)"),
    }
    for name, (change, expected) in cases.items():
        got = str(check_proof(net, prop, _mutant(cert, tmp_path, change)))
        assert got.startswith(expected), f"{name}: {got}"


def test_a_removed_leaf_orphans_its_parent(proven, tmp_path):
    net, prop, cert, _ = proven[1]
    header, arrays = read_certificate(cert)
    N = len(arrays["case0_kind"])
    parent = int(np.flatnonzero((arrays["case0_left"] == N - 1)
                                | (arrays["case0_right"] == N - 1))[0])
    mutant = {k: (v[:-1] if k.startswith("case0_") else v) for k, v in arrays.items()}
    got = str(check_proof(net, prop, write_certificate(tmp_path / "m.proof", header, mutant)))
    assert got.startswith(f"invalid: step {4 + parent} (case 0, node {parent}): child {N - 1}")


def test_a_network_that_breaks_the_property_fails_a_leaf(proven, tmp_path):
    """The certificate, its network digest updated, against a copy of the network whose
    output bias is raised past the property's level: the digest passes, a bound leaf fails."""
    net_path, prop, cert, _ = proven[2]
    net = Network.from_onnx(net_path)
    biases = [b.copy() for b in net.biases]
    biases[-1][0] += 10.0
    save_mlp_onnx(net.weights, biases, tmp_path / "broken.onnx")
    broken = Network.from_onnx(tmp_path / "broken.onnx")
    mutant = _mutant(cert, tmp_path, lambda h, a: h.update(network_sha256=network_digest(broken)))
    got = str(check_proof(tmp_path / "broken.onnx", prop, mutant))
    assert got.startswith("invalid: step ") and "is not > 0" in got, got
    assert int(got.split()[2]) >= 4


def test_garbage_is_not_a_certificate(proven, tmp_path):
    net, prop, _, _ = proven[0]
    (tmp_path / "junk.proof").write_bytes(b"not a zip")
    assert str(check_proof(net, prop, tmp_path / "junk.proof")).startswith(
        "invalid: step 1 (the file): not a readable certificate")


@pytest.mark.parametrize("seed", range(6))
def test_the_checkers_bound_is_below_every_sampled_point(seed):
    """Soundness of the checker's own CROWN: on random boxes, its lower bound of ``lam . (C
    y - d)`` is at most the value at every sampled point of the box."""
    rng = np.random.default_rng(seed)
    net = random_net(seed, 3, [8, 6, 5], n_out=3)
    layers = [(np.asarray(W, float), np.asarray(b, float)) for W, b in zip(net.weights, net.biases)]
    lo = rng.uniform(-1, 0.5, (5, 3))
    hi = lo + rng.uniform(0, 0.8, (5, 3))
    C, d = rng.normal(size=(2, 3)), rng.normal(size=2)
    lam = rng.uniform(0, 1, (5, 2))
    low = check.Bounder(layers, lo, hi).margin(C, d, lam, slice(None))
    for b in range(5):
        X = rng.uniform(lo[b], hi[b], (4000, 3))
        values = (net.forward(X) @ C.T - d) @ lam[b]
        assert low[b] <= values.min(), (seed, b, low[b], values.min())


def test_the_relaxation_lies_above_relu_in_exact_arithmetic():
    """The chord's intercept is rounded up until ``s lo + t >= 0`` and ``s hi + t >= hi``
    hold for the floats themselves (checked with fractions)."""
    from fractions import Fraction

    rng = np.random.default_rng(0)
    lo, hi = -rng.uniform(1e-9, 10, 2000), rng.uniform(1e-9, 10, 2000)
    _, s, t = check._relaxation(lo, hi)
    for a, b, sv, tv in zip(lo, hi, s, t):
        a, b, sv, tv = map(Fraction, (a, b, sv, tv))
        assert 0 <= sv <= 1 and sv * a + tv >= 0 and sv * b + tv >= b


def test_the_interval_bound_holds_in_exact_arithmetic():
    """``_interval``'s bounds of ``W a + b`` enclose its exact extremes over each box, with
    weights and boxes of mixed magnitudes (the extremes computed with fractions)."""
    from fractions import Fraction

    rng = np.random.default_rng(1)
    W = rng.normal(size=(7, 9)) * 10.0 ** rng.integers(-6, 4, (7, 9))
    b = rng.normal(size=7) * 100
    lo = rng.normal(size=(20, 9)) * 10.0 ** rng.integers(-3, 3, (20, 9))
    hi = lo + rng.uniform(0, 1, (20, 9)) * 10.0 ** rng.integers(-12, 2, (20, 9))
    zlo, zhi = check._interval(W, b, lo, hi)
    for k in range(20):
        for i in range(7):
            terms = [sorted((Fraction(W[i, n]) * Fraction(lo[k, n]),
                             Fraction(W[i, n]) * Fraction(hi[k, n]))) for n in range(9)]
            least = Fraction(b[i]) + sum(t[0] for t in terms)
            most = Fraction(b[i]) + sum(t[1] for t in terms)
            assert Fraction(zlo[k, i]) <= least and most <= Fraction(zhi[k, i])


def test_the_checker_runs_without_bounds_solve_traversal_or_host(proven):
    """In a fresh interpreter, checking a certificate loads no module of those layers."""
    import subprocess
    import sys

    net, prop, cert, _ = proven[0]
    code = ("import sys; from polytrav.proof.check import check_proof; "
            f"print(check_proof({str(net)!r}, {str(prop)!r}, {str(cert)!r})); "
            "print(sorted(m for m in sys.modules if m.split('.')[:2] in "
            "[['polytrav', x] for x in ('bounds', 'solve', 'traversal', 'host')]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.stdout.split("\n")[:2] == ["valid", "[]"], out.stdout + out.stderr


def test_the_ascent_and_the_lp_find_the_same_multipliers():
    """The recorder's batched ascent on a conjunction's dual reaches the LP's optimum (the
    LP is its fallback), on random conjunctions over a box."""
    from polytrav.proof.record import ascend_multipliers, conjunction_multipliers

    rng = np.random.default_rng(1)
    L, g = rng.normal(size=(40, 3, 5)), rng.normal(size=(40, 3)) + 3.0
    lam, value = ascend_multipliers(L, g, steps=400)
    for k in range(40):
        exact = conjunction_multipliers(L[k], g[k])
        best = exact @ g[k] - np.abs(exact @ L[k]).sum()
        assert value[k] <= best + 1e-9 and value[k] >= best - 0.05 * (1 + abs(best)), k


def _random_mutant(rng, arrays, lo_hi):
    """One to three random changes of a certificate's numbers: multipliers scaled, replaced
    or moved to other rows, a split moved inside its box or to another coordinate, a leaf
    left open."""
    a = {k: v.copy() for k, v in arrays.items()}
    kind, lam = a["case0_kind"], a["case0_lam"]
    leaves, splits = np.flatnonzero(kind == BOUND), np.flatnonzero(kind == SPLIT)
    for _ in range(rng.integers(1, 4)):
        what = rng.integers(5 if len(splits) else 3)
        if what == 0:
            lam[rng.choice(leaves)] *= rng.uniform(0.1, 10)
        elif what == 1:
            lam[rng.choice(leaves)] = rng.uniform(0, 1, lam.shape[1])
        elif what == 2:
            kind[rng.choice(leaves)] = OPEN
        elif what == 3:
            i = rng.choice(splits)
            j = a["case0_dim"][i]
            lo, hi = lo_hi[i]
            a["case0_at"][i] = rng.uniform(lo[j], hi[j])
        else:
            a["case0_dim"][rng.choice(splits)] = rng.integers(3)
    return a


def _boxes(arrays, lower, upper):
    kind, dim, at = arrays["case0_kind"], arrays["case0_dim"], arrays["case0_at"]
    boxes = {0: (lower.copy(), upper.copy())}
    for i in np.flatnonzero(kind == SPLIT):
        lo, hi = boxes[i]
        left, right = (lo.copy(), hi.copy()), (lo.copy(), hi.copy())
        left[1][dim[i]] = right[0][dim[i]] = at[i]
        boxes[arrays["case0_left"][i]], boxes[arrays["case0_right"][i]] = left, right
    return boxes


def test_no_mutant_proves_a_false_claim(proven, tmp_path):
    """Hundreds of random mutants of a valid certificate, checked against a property that
    fails (its level lowered below a point's output, the digest updated so that only the
    numbers decide): none checks valid."""
    from polytrav.proof.check import property_digest
    from polytrav.verification.vnnlib import read_vnnlib

    net_path, prop, cert, _ = proven[0]
    net = Network.from_onnx(net_path)
    y = net.forward(np.random.default_rng(0).uniform(-1, 1, (2000, 3)))[:, 0]
    false_prop = _vnnlib(tmp_path / "false.vnnlib", f"(assert (>= Y_0 {float(y.max() - 0.01)!r}))")
    digest = property_digest(read_vnnlib(false_prop))
    header, arrays = read_certificate(cert)
    header["property_sha256"] = digest
    boxes = _boxes(arrays, -np.ones(3), np.ones(3))
    rng = np.random.default_rng(60)
    answers = set()
    for n in range(200):
        mutant = _random_mutant(rng, arrays, boxes)
        got = str(check_proof(net_path, false_prop, write_certificate(tmp_path / "m.proof", header, mutant)))
        assert got != "valid", f"mutant {n} proves a false claim"
        answers.add(got.split(":")[0])
    assert answers <= {"invalid", "incomplete"}


def test_structural_mutants_fail_at_their_node(proven, tmp_path):
    """At random nodes: a split value outside its box, a coordinate out of range, a
    negative multiplier: each fails at that node's step."""
    net, prop, cert, _ = proven[1]
    header, arrays = read_certificate(cert)
    kind = arrays["case0_kind"]
    boxes = _boxes(arrays, -np.ones(3), np.ones(3))
    rng = np.random.default_rng(7)
    for n in range(100):
        a = {k: v.copy() for k, v in arrays.items()}
        what = n % 3
        if what < 2:
            i = int(rng.choice(np.flatnonzero(kind == SPLIT)))
            if what == 0:
                j = a["case0_dim"][i]
                lo, hi = boxes[i]
                a["case0_at"][i] = hi[j] + rng.uniform(1e-9, 1) if rng.random() < 0.5 \
                    else lo[j] - rng.uniform(1e-9, 1)
            else:
                a["case0_dim"][i] = rng.choice([-1, 3, 7])
        else:
            i = int(rng.choice(np.flatnonzero(kind == BOUND)))
            a["case0_lam"][i, 0] = -rng.uniform(1e-12, 1)
        got = str(check_proof(net, prop, write_certificate(tmp_path / "s.proof", header, a)))
        assert got.startswith(f"invalid: step {4 + i} (case 0, node {i})"), (n, got)


def test_a_case_decided_by_the_traversal_is_certified_by_phase_splits(proven, tmp_path):
    """Without the input split the traversal decides the case: the certificate proves it by
    a tree of neuron phase splits (every leaf with evidence) and checks valid."""
    net, prop, _, _ = proven[0]
    result = verify(net, prop, split=False, proof=tmp_path / "t.proof")
    assert result.answer == "unsat"
    assert result.proof["uncertified"] == 0 and result.proof["certified"] > 1
    _, arrays = read_certificate(tmp_path / "t.proof")
    assert (arrays["case0_kind"] == check.PHASE).any() and len(arrays["case0_beta_value"])
    assert str(check_proof(net, prop, tmp_path / "t.proof")) == "valid"


def test_boxes_the_split_leaves_open_are_certified_by_phase_splits(tmp_path, monkeypatch):
    """With the input split cut to 6 boxes it leaves boxes to the traversal: each gets a
    phase tree (starting from the bounds the checker finds on its parent box), and the
    certificate checks valid with no leaf lacking evidence."""
    import polytrav.bounds.split as split

    for name in ("SPLIT_BOXES", "SPLIT_MAX_BOXES", "SPLIT_DEEP_MAX_BOXES"):
        monkeypatch.setattr(split, name, 6)
    for seed in (3, 29):
        net, prop = _instance(tmp_path, seed)
        result = verify(net, prop, proof=tmp_path / "p.proof")
        assert result.answer == "unsat" and result.split["open"] > 0
        assert result.proof["uncertified"] == 0
        _, arrays = read_certificate(tmp_path / "p.proof")
        assert (arrays["case0_kind"] == SPLIT).any() and len(arrays["case0_beta_value"])
        assert str(check_proof(net, prop, tmp_path / "p.proof")) == "valid"


def test_a_box_past_the_budget_stays_a_claim(proven, tmp_path, monkeypatch):
    """A phase tree stopped by its node budget keeps its nodes not proven as leaves without
    evidence (with no node at all: the box itself); the checker answers incomplete, naming
    the first."""
    from polytrav.proof import phases

    net, prop, _, _ = proven[0]
    monkeypatch.setattr(phases, "MAX_NODES", 0)
    result = verify(net, prop, split=False, proof=tmp_path / "t.proof")
    assert result.answer == "unsat"
    assert (result.proof["certified"], result.proof["uncertified"]) == (0, 1)
    assert str(check_proof(net, prop, tmp_path / "t.proof")) == (
        "incomplete: step 4 (case 0, node 0) is a claim without a certificate")
    monkeypatch.setattr(phases, "MAX_NODES", 2)
    result = verify(net, prop, split=False, proof=tmp_path / "t.proof")
    assert result.proof["uncertified"] == 2 and result.proof["nodes"] == 3
    assert str(check_proof(net, prop, tmp_path / "t.proof")).startswith(
        "incomplete: step 5 (case 0, node 1) is a traversal claim without a certificate")


def test_every_sample_lands_in_a_leaf_of_its_phases(tmp_path):
    """Small networks whose cases the traversal decides: every certificate checks valid,
    and each of 4000 sampled inputs, sent down the phase tree by its own pre-activations'
    signs, ends in a bound leaf (the leaves cover the box)."""
    for seed in (5, 8):
        net = random_net(seed, 3, [6, 6], n_out=2)
        save_mlp_onnx(net.weights, net.biases, tmp_path / "net.onnx")
        net = Network.from_onnx(tmp_path / "net.onnx")
        X = np.random.default_rng(seed).uniform(-1, 1, (4000, 3))
        y = net.forward(X)[:, 0]
        level = y.max() + 0.05 * (y.max() - y.min())
        prop = _vnnlib(tmp_path / "p.vnnlib", f"(assert (>= Y_0 {float(level)!r}))")
        result = verify(tmp_path / "net.onnx", prop, split=False, proof=tmp_path / "p.proof")
        assert result.answer == "unsat" and result.proof["uncertified"] == 0
        assert str(check_proof(tmp_path / "net.onnx", prop, tmp_path / "p.proof")) == "valid"
        _, a = read_certificate(tmp_path / "p.proof")
        kind, dim, left, right = (a[f"case0_{x}"] for x in ("kind", "dim", "left", "right"))
        Z = np.hstack(_preactivations(net, X))  # every sample lands in one leaf
        node = np.zeros(len(X), int)
        for _ in range(len(kind)):
            phase = kind[node] == check.PHASE
            if not phase.any():
                break
            i = node[phase]
            node[phase] = np.where(Z[phase, dim[i]] >= 0, right[i], left[i])
        assert (kind[node] == BOUND).all()


def _preactivations(net, X):
    out, a = [], X
    for W, b in list(zip(net.weights, net.biases))[:-1]:
        z = a @ np.asarray(W).T + b
        out.append(z)
        a = np.maximum(z, 0)
    return out
