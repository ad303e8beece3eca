"""Issue 60, adversarial review of the checker (:mod:`polytrav.proof.check`): malformed
certificates get an answer (never a crash, never ``valid``); the checker's bounds hold in
exact arithmetic (fractions) on adversarial networks; certificates an attacker builds at
random for a claim that is false by the smallest possible margin never check ``valid``."""
from __future__ import annotations

import io
import itertools
import json
import zipfile
from fractions import Fraction

import numpy as np
import pytest
from certificates import npz_bytes, read_certificate, write_certificate
from ctrl_c import save_mlp_onnx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polytrav import Network
from polytrav.proof import check
from polytrav.proof.check import (
    BOUND,
    OPEN,
    SPLIT,
    check_proof,
    network_digest,
    property_digest,
)
from polytrav.testing.reference import random_net
from polytrav.verification.vnnlib import read_vnnlib

N_IN = 3


def _exact_forward(layers, x):
    """Every hidden layer's pre-activations and the outputs at ``x``, in fractions."""
    a, hidden = [Fraction(float(v)) for v in x], []
    for k, (W, b) in enumerate(layers):
        z = [sum((Fraction(float(W[i, j])) * a[j] for j in range(W.shape[1])),
                 Fraction(float(b[i]))) for i in range(W.shape[0])]
        if k == len(layers) - 1:
            return hidden, z
        hidden.append(z)
        a = [max(v, Fraction(0)) for v in z]


def _below(bound, value) -> bool:
    """``bound <= value`` exactly, a NaN bound counting as no bound (it fails every test)."""
    return bool(np.isnan(bound) or bound == -np.inf
                or (np.isfinite(bound) and Fraction(float(bound)) <= value))


def _layers(seed, sizes, scale, cancel):
    rng = np.random.default_rng(seed)
    layers = []
    for n_in, n_out in itertools.pairwise(sizes):
        W = rng.normal(size=(n_out, n_in)) * scale
        if cancel and n_in > 1:  # large weights that nearly cancel in pairs
            W[:, 0] *= 1e6
            W[:, 1] = -W[:, 0] * (1 + rng.normal(size=n_out) * 1e-12)
        layers.append((W, rng.normal(size=n_out) * scale))
    return layers


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2 ** 32 - 1),
       scale=st.sampled_from([1e-170, 1e-8, 1e-3, 1.0, 1e3, 1e8, 1e100]),
       cancel=st.booleans(), width=st.sampled_from([0.0, 1e-300, 1e-12, 1e-3, 1.0]),
       depth=st.integers(1, 3), split=st.booleans())
def test_the_checkers_bounds_hold_in_exact_arithmetic(seed, scale, cancel, width, depth, split):
    """On a box (a point, a sliver, a wide one; a child bounded with its parent's bounds as
    the prior), every hidden bound and the margin's lower bound hold at the box's corners and
    centre, computed with fractions; weights tiny (underflow), huge, or nearly cancelling."""
    rng = np.random.default_rng(seed)
    sizes = [2] + [int(rng.integers(1, 5)) for _ in range(depth)] + [2]
    layers = _layers(seed, sizes, scale, cancel)
    x0 = rng.uniform(-1, 1, 2)
    lo, hi = (x0, x0) if width == 0.0 else (x0 - width, x0 + width)
    with np.errstate(all="ignore"):
        bounder = check.Bounder(layers, lo[None], hi[None])
        if split:  # the child x_0 >= x0[0] bounded with the parent's bounds
            lo = np.array([x0[0], lo[1]])
            bounder = check.Bounder(layers, lo[None], hi[None], bounder.bounds)
        C, d, lam = rng.normal(size=(2, 2)), rng.normal(size=2), rng.uniform(0, 1, (1, 2))
        low = bounder.margin(C, d, lam, np.arange(1))[0]
    assert low != np.inf
    for x in (x0, lo, hi, np.array([lo[0], hi[1]]), np.array([hi[0], lo[1]])):
        hidden, y = _exact_forward(layers, x)
        value = sum(Fraction(float(lam[0, r])) * (sum(Fraction(float(C[r, o])) * y[o]
                                                      for o in range(2)) - Fraction(float(d[r])))
                    for r in range(2))
        assert _below(low, value), (low, float(value))
        for (zlo, zhi), z in zip(bounder.bounds, hidden):
            for i, v in enumerate(z):
                assert _below(zlo[0, i], v) and _below(-zhi[0, i], -v), (zlo, zhi, z)


# ------------------------------------------------------------------ whole certificates

def _zip(path, members):
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def _round(value: Fraction, down: bool) -> float:
    f = float(value)
    if (Fraction(f) > value) if down else (Fraction(f) < value):
        f = float(np.nextafter(f, -np.inf if down else np.inf))
    return f


def _claims(folder):
    """Write a random net as ``folder/net.onnx`` and return two VNN-LIB claims on
    ``[-1, 1]^3`` by name: ``"true"`` (output 0 never reaches a level above its sampled
    maximum) and ``"false"`` (a level just below it)."""
    net = random_net(17, N_IN, [8, 8], n_out=2)
    save_mlp_onnx(net.weights, net.biases, folder / "net.onnx")
    net = Network.from_onnx(folder / "net.onnx")
    y = net.forward(np.random.default_rng(17).uniform(-1, 1, (20000, N_IN)))[:, 0]
    box = "\n".join(f"(assert (>= X_{i} -1))\n(assert (<= X_{i} 1))" for i in range(N_IN))
    decl = [f"(declare-const X_{i} Real)" for i in range(N_IN)]
    decl += [f"(declare-const Y_{j} Real)" for j in range(2)]
    props = {}
    levels = {"true": y.max() + 0.05 * (y.max() - y.min()), "false": y.max() - 1e-9}
    for name, level in levels.items():
        props[name] = folder / f"{name}.vnnlib"
        props[name].write_text("\n".join(decl + [box, f"(assert (>= Y_0 {float(level)!r}))"]))
    return props


@pytest.fixture(scope="module")
def tight(tmp_path_factory):
    """A 3-8-8-2 net (ONNX) and a property that fails by the smallest margin there is: at a
    point ``x*``, ``Y_0 >= l0 and Y_1 <= l1`` with ``l0`` the largest float at most
    ``y_0(x*)`` and ``l1`` the smallest at least ``y_1(x*)`` (exactly), on ``[-1, 1]^3``."""
    folder = tmp_path_factory.mktemp("tight")
    net = random_net(5, N_IN, [8, 8], n_out=2)
    save_mlp_onnx(net.weights, net.biases, folder / "net.onnx")
    net = Network.from_onnx(folder / "net.onnx")
    layers = [(np.asarray(W, float), np.asarray(b, float)) for W, b in zip(net.weights, net.biases)]
    x = np.random.default_rng(5).uniform(-1, 1, N_IN)
    _, y = _exact_forward(layers, x)
    box = "\n".join(f"(assert (>= X_{i} -1))\n(assert (<= X_{i} 1))" for i in range(N_IN))
    decl = [f"(declare-const X_{i} Real)" for i in range(N_IN)]
    decl += [f"(declare-const Y_{j} Real)" for j in range(2)]
    prop = folder / "false.vnnlib"
    prop.write_text("\n".join(decl + [box, f"(assert (>= Y_0 {_round(y[0], True)!r}))",
                                      f"(assert (<= Y_1 {_round(y[1], False)!r}))"]) + "\n")
    header = {"format": check.FORMAT, "version": check.VERSION, "claim": "unsat", "cases": 1,
              "network_sha256": network_digest(net),
              "property_sha256": property_digest(read_vnnlib(prop))}
    return folder / "net.onnx", prop, header, x


@st.composite
def _trees(draw, x):
    """A certificate's node arrays: random splits (values inside the box, at its bounds, at
    ``x*``), leaves of random kinds with multipliers zero, tiny, ordinary or huge."""
    lo, hi = [-np.ones(N_IN)], [np.ones(N_IN)]
    kind, dim, at, left, right = [BOUND], [-1], [0.0], [-1], [-1]
    for _ in range(draw(st.integers(0, 12))):
        leaves = [i for i, k in enumerate(kind) if k != SPLIT]
        i = draw(st.sampled_from(leaves))
        j = draw(st.integers(0, N_IN - 1))
        how = draw(st.sampled_from(["x*", "lo", "hi", "inside"]))
        a = {"x*": x[j], "lo": lo[i][j], "hi": hi[i][j]}.get(
            how, lo[i][j] + draw(st.floats(0, 1)) * (hi[i][j] - lo[i][j]))
        if not lo[i][j] <= a <= hi[i][j]:
            a = lo[i][j]
        kind[i], dim[i], at[i], left[i], right[i] = SPLIT, j, a, len(kind), len(kind) + 1
        for side in (0, 1):
            l, h = lo[i].copy(), hi[i].copy()
            (h if side == 0 else l)[j] = a
            lo.append(l), hi.append(h)
            kind.append(BOUND), dim.append(-1), at.append(0.0), left.append(-1), right.append(-1)
    n = len(kind)
    scale = st.sampled_from([0.0, 1e-320, 1e-200, 1.0, 1e200, 1e308])
    lam = np.array([[draw(st.floats(0, 1)) * draw(scale) for _ in range(2)] for _ in range(n)])
    kind = [k if k == SPLIT or not draw(st.booleans()) else draw(st.sampled_from([BOUND, OPEN]))
            for k in kind]
    arrays = {"case0_kind": np.array(kind), "case0_dim": np.array(dim),
              "case0_at": np.array(at), "case0_left": np.array(left),
              "case0_right": np.array(right), "case0_lam": lam}
    return arrays, np.array(lo), np.array(hi)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_no_built_certificate_proves_a_claim_false_by_one_rounding(tight, tmp_path_factory,
                                                                    data):
    """Random trees (degenerate boxes at ``x*`` included) with random multipliers, against
    the property that fails at ``x*`` by less than a rounding: never ``valid``."""
    net, prop, header, x = tight
    arrays, lo, hi = data.draw(_trees(x))
    path = tmp_path_factory.getbasetemp() / "built.proof"
    write_certificate(path, header, arrays)
    with np.errstate(all="ignore"):
        assert str(check_proof(net, prop, path)) != "valid"
    # the leaves whose box holds x* alone carry their multipliers (the others left open):
    # one of them must fail
    kind = arrays["case0_kind"]
    holds = ((lo <= x) & (x <= hi)).all(axis=1) & (kind == BOUND)
    if holds.any():
        kind[(kind == BOUND) & ~holds] = OPEN
        write_certificate(path, header, arrays)
        with np.errstate(all="ignore"):
            got = str(check_proof(net, prop, path))
        assert got.startswith("invalid: step ") and int(got.split()[2]) - 4 in \
            np.flatnonzero(holds), got


def test_the_point_itself_is_not_proven(tight, tmp_path):
    """The strongest honest try: per coordinate, ``[-1, 1]`` split at ``x*_j`` and its left
    part again at ``x*_j``, down to the point ``x*`` itself; every leaf with multipliers 1:
    the point's leaf fails (its margin is at most 0 in exact arithmetic)."""
    net, prop, header, x = tight
    kind, dim, at, left, right = [BOUND], [-1], [0.0], [-1], [-1]

    def split(i, j):
        kind[i], dim[i], at[i], left[i], right[i] = SPLIT, j, x[j], len(kind), len(kind) + 1
        for _ in range(2):
            kind.append(BOUND), dim.append(-1), at.append(0.0), left.append(-1), right.append(-1)

    node = 0
    for j in range(N_IN):
        split(node, j)          # [-1, x*_j] and [x*_j, 1]
        split(left[node], j)    # [-1, x*_j] and [x*_j, x*_j]
        node = right[left[node]]
    arrays = {"case0_kind": np.array(kind), "case0_dim": np.array(dim),
              "case0_at": np.array(at), "case0_left": np.array(left),
              "case0_right": np.array(right), "case0_lam": np.ones((len(kind), 2))}
    path = _zip(tmp_path / "p.proof", {"proof.json": json.dumps(header),
                                        "arrays.npz": npz_bytes(**arrays)})
    kind = arrays["case0_kind"]
    kind[(kind == BOUND) & (np.arange(len(kind)) != node)] = OPEN  # the point's leaf alone
    for lam in ([1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1e-300, 1e300]):
        arrays["case0_lam"][node] = lam
        path = _zip(tmp_path / "p.proof", {"proof.json": json.dumps(header),
                                            "arrays.npz": npz_bytes(**arrays)})
        with np.errstate(all="ignore"):
            got = str(check_proof(net, prop, path))
        assert got.startswith(f"invalid: step {4 + node} (case 0, node {node}, disjunct 0): "
                              "the bound "), (lam, got)


def test_malformed_certificates_are_invalid_not_a_crash(tight, tmp_path):
    """Shapes, types and members an attacker may write: each is ``invalid`` at step 1 (the
    file) or at the case's first step, never an exception, never ``valid``."""
    net, prop, header, _ = tight
    good = {"case0_kind": np.array([BOUND]), "case0_dim": np.array([-1]),
            "case0_at": np.array([0.0]), "case0_left": np.array([-1]),
            "case0_right": np.array([-1]), "case0_lam": np.ones((1, 2))}

    def arrays(**change):
        return {"proof.json": json.dumps(header), "arrays.npz": npz_bytes(**{**good, **change})}

    npy = io.BytesIO()
    np.save(npy, np.zeros(3))
    cases = {
        "header a list": ({"proof.json": "[1]", "arrays.npz": npz_bytes(**good)}, 1),
        "version true": ({"proof.json": json.dumps({**header, "version": True}),
                          "arrays.npz": npz_bytes(**good)}, 1),
        "cases true": ({"proof.json": json.dumps({**header, "cases": True}),
                        "arrays.npz": npz_bytes(**good)}, 3),
        "arrays an .npy": ({"proof.json": json.dumps(header), "arrays.npz": npy.getvalue()}, 1),
        "object array": (arrays(case0_lam=np.array([None], dtype=object)), 1),
        "kind 2-D": (arrays(case0_kind=np.array([[BOUND]])), 4),
        "kind 0-D": (arrays(case0_kind=np.array(BOUND)), 4),
        "kind empty": (arrays(case0_kind=np.array([], int)), 4),
        "children uint64": (arrays(case0_left=np.array([2 ** 64 - 1], np.uint64)), 4),
        "kind float": (arrays(case0_kind=np.array([1.0])), 4),
        "lam longdouble": (arrays(case0_lam=np.ones((1, 2), np.longdouble)), 4),
        "lam float16": (arrays(case0_lam=np.ones((1, 2), np.float16)), 4),
        "lam of the wrong length": (arrays(case0_lam=np.ones((1, 1))), 4),
        "lam one row for all": (arrays(case0_lam=np.ones(2)), 4),
        "at longdouble": (arrays(case0_at=np.zeros(1, np.longdouble)), 4),
        "a missing array": ({"proof.json": json.dumps(header),
                             "arrays.npz": npz_bytes(**{k: v for k, v in good.items()
                                                   if k != "case0_dim"})}, 4),
        "no arrays member": ({"proof.json": json.dumps(header)}, 1),
        "deeply nested JSON": ({"proof.json": "[" * 100000 + "]" * 100000,
                                "arrays.npz": npz_bytes(**good)}, 1),
        "truncated arrays": ({"proof.json": json.dumps(header),
                              "arrays.npz": npz_bytes(**good)[:-40]}, 1),
    }
    for name, (members, step) in cases.items():
        got = str(check_proof(net, prop, _zip(tmp_path / "m.proof", members)))
        assert got.startswith(f"invalid: step {step} "), f"{name}: {got}"
    # a member flagged encrypted (zipfile refuses to read it)
    data = bytearray(_zip(tmp_path / "e.proof", arrays()).read_bytes())
    for at in range(len(data) - 8):
        if data[at:at + 4] in (b"PK\x03\x04", b"PK\x01\x02"):
            flag = at + (6 if data[at + 2] == 3 else 8)
            data[flag] |= 1
    (tmp_path / "e.proof").write_bytes(bytes(data))
    got = str(check_proof(net, prop, tmp_path / "e.proof"))
    assert got.startswith("invalid: step 1 (the file): not a readable certificate"), got


# ------------------------------------------------------------------ mutations of real ones

@pytest.fixture(scope="module")
def certified(tmp_path_factory):
    """A certificate ``verify`` wrote for a true claim (``Y_0 >= level`` above the sampled
    maximum on ``[-1, 1]^3``), and the same claim made false (``level`` below an output the
    net reaches), with the header's digest for each."""
    from polytrav import verify

    folder = tmp_path_factory.mktemp("certified")
    props = _claims(folder)
    result = verify(folder / "net.onnx", props["true"], proof=folder / "p.proof")
    assert result.answer == "unsat" and str(
        check_proof(folder / "net.onnx", props["true"], folder / "p.proof")) == "valid"
    header, arrays = read_certificate(folder / "p.proof")
    digests = {name: property_digest(read_vnnlib(p)) for name, p in props.items()}
    return folder / "net.onnx", props, digests, header, arrays


@st.composite
def _mutations(draw, arrays):
    """One to four changes anywhere in the node arrays: a number replaced (by zero, a
    tiny, huge, negative or non-finite value, or another node's), a node's kind, split
    coordinate or child changed, rows of multipliers swapped, nodes dropped or repeated."""
    a = {k: v.copy() for k, v in arrays.items()}
    values = st.sampled_from([0.0, -0.0, 1e-320, 1e-8, 0.5, 1.0, 1e8, 1e308, -1.0, np.inf,
                              -np.inf, np.nan])
    for _ in range(draw(st.integers(1, 4))):
        n = len(a["case0_kind"])
        i = draw(st.integers(0, n - 1))
        what = draw(st.sampled_from(["lam", "lam scale", "lam swap", "at", "at edge", "dim",
                                     "kind", "child", "drop", "repeat"]))
        if what == "lam":
            a["case0_lam"][i, draw(st.integers(0, a["case0_lam"].shape[1] - 1))] = draw(values)
        elif what == "lam scale":  # an earlier mutant's inf times 0 is a NaN: meant
            with np.errstate(invalid="ignore"):
                a["case0_lam"][i] *= draw(st.floats(0, 10))
        elif what == "lam swap":
            j = draw(st.integers(0, n - 1))
            a["case0_lam"][[i, j]] = a["case0_lam"][[j, i]]
        elif what == "at":
            a["case0_at"][i] = draw(st.one_of(values, st.floats(-1, 1)))
        elif what == "at edge":
            a["case0_at"][i] = draw(st.sampled_from([-1.0, 1.0, np.nextafter(1.0, 2.0)]))
        elif what == "dim":
            a["case0_dim"][i] = draw(st.integers(-2, N_IN + 1))
        elif what == "kind":
            a["case0_kind"][i] = draw(st.sampled_from([SPLIT, BOUND, OPEN, check.SETTLED, 4,
                                                       -1]))
        elif what == "child":
            a[draw(st.sampled_from(["case0_left", "case0_right"]))][i] = draw(
                st.integers(-2, n + 1))
        elif what == "drop" and n > 1:  # (a node's arrays; the sparse ones list entries)
            a = {k: v if "_beta_" in k or "_alpha_" in k else np.delete(v, i, axis=0)
                 for k, v in a.items()}
        elif what == "repeat":
            a = {k: v if "_beta_" in k or "_alpha_" in k else np.concatenate([v, v[i:i + 1]])
                 for k, v in a.items()}
    return a


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_no_mutant_of_a_real_certificate_proves_the_false_claim(certified, tmp_path_factory,
                                                                 data):
    """Random mutants of a certificate ``verify`` wrote: against the claim made false (its
    digest updated: only the numbers decide) none checks ``valid``; against the true claim
    every answer is one of the three (no crash)."""
    net, props, digests, header, arrays = certified
    mutant = data.draw(_mutations(arrays))
    path = tmp_path_factory.getbasetemp() / "mutant.proof"
    for name in ("false", "true"):
        _zip(path, {"proof.json": json.dumps({**header, "property_sha256": digests[name]}),
                    "arrays.npz": npz_bytes(**mutant)})
        got = str(check_proof(net, props[name], path))
        assert got.split(":")[0] in ({"invalid", "incomplete"} if name == "false"
                                     else {"valid", "invalid", "incomplete"}), (name, got)


def test_every_case_of_the_property_is_checked(tmp_path):
    """A property of two input boxes, ``Y_0 >= 1`` unreachable on ``[-1, 0]^3`` and reached
    on ``[0, 1]^3``: the first box's valid certificate, copied as the second case's (or the
    second case left out), does not check ``valid``."""
    from polytrav import verify

    net = random_net(17, N_IN, [8, 8], n_out=2)
    save_mlp_onnx(net.weights, net.biases, tmp_path / "net.onnx")
    net = Network.from_onnx(tmp_path / "net.onnx")
    assert net.forward(np.random.default_rng(0).uniform(-1, 0, (20000, N_IN)))[:, 0].max() < 1
    assert net.forward(np.random.default_rng(1).uniform(0, 1, (20000, N_IN)))[:, 0].max() > 1
    decl = "\n".join([f"(declare-const X_{i} Real)" for i in range(N_IN)]
                     + [f"(declare-const Y_{j} Real)" for j in range(2)])

    def box(a, b):
        return " ".join(f"(>= X_{i} {a}) (<= X_{i} {b})" for i in range(N_IN))

    one = tmp_path / "one.vnnlib"
    one.write_text(f"{decl}\n(assert (and {box(-1, 0)}))\n(assert (>= Y_0 1.0))\n")
    two = tmp_path / "two.vnnlib"
    two.write_text(f"{decl}\n(assert (or (and {box(-1, 0)}) (and {box(0, 1)})))\n"
                   "(assert (>= Y_0 1.0))\n")
    assert len(read_vnnlib(two).cases) == 2
    assert verify(tmp_path / "net.onnx", one, proof=tmp_path / "one.proof").answer == "unsat"
    assert str(check_proof(tmp_path / "net.onnx", one, tmp_path / "one.proof")) == "valid"
    header, arrays = read_certificate(tmp_path / "one.proof")
    header["property_sha256"] = property_digest(read_vnnlib(two))
    copied = {**arrays, **{k.replace("case0", "case1"): v for k, v in arrays.items()}}
    for cases, members, expected in ((2, copied, "invalid: step "),
                                     (1, arrays, "invalid: step 3 (the property)"),
                                     (2, arrays, "invalid: step ")):
        path = _zip(tmp_path / "m.proof", {"proof.json": json.dumps({**header, "cases": cases}),
                                            "arrays.npz": npz_bytes(**members)})
        got = str(check_proof(tmp_path / "net.onnx", two, path))
        assert got.startswith(expected), (cases, got)
        if cases == 2:
            assert int(got.split()[2]) >= 4 + len(arrays["case0_kind"]), got  # in case 1


# ------------------------------------------------------------------ phase splits (version 2)

@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2 ** 32 - 1), scale=st.sampled_from([1e-8, 1.0, 1e3, 1e8]),
       width=st.sampled_from([1e-12, 1e-3, 1.0]), fixed=st.integers(0, 6),
       size=st.sampled_from([0.0, 1e-300, 1.0, 1e3, 1e200]))
def test_bounds_with_phases_and_multipliers_hold_in_exact_arithmetic(seed, scale, width, fixed,
                                                                     size):
    """A box and some hidden neurons' phases (those of a point ``x0`` in it, so the region is
    not empty), random multipliers ``beta >= 0`` on any rows and any neurons: every hidden
    bound and the margin hold at ``x0`` in fractions."""
    rng = np.random.default_rng(seed)
    sizes = [2, 4, 4, 3, 2]
    layers = _layers(seed, sizes, scale, False)
    x0 = rng.uniform(-1, 1, 2)
    lo, hi = x0 - width * rng.uniform(0, 1, 2), x0 + width * rng.uniform(0, 1, 2)
    hidden, y = _exact_forward(layers, x0)
    z = [v for layer in hidden for v in layer]
    sigma = np.zeros((1, len(z)), np.int8)
    for i in rng.choice(len(z), fixed, replace=False):
        sigma[0, i] = 1 if z[i] >= 0 else -1
    starts = np.cumsum([0] + sizes[1:-1])

    def beta(bounder, k, j):
        return {i: rng.uniform(0, 1, (1, 2 * len(j), sizes[i + 1])) * size
                * (rng.uniform(size=(1, 2 * len(j), sizes[i + 1])) < 0.5) for i in range(k)}

    with np.errstate(all="ignore"):
        bounder = check.Bounder(layers, lo[None], hi[None], None, sigma, beta)
        C, d, lam = rng.normal(size=(2, 2)), rng.normal(size=2), rng.uniform(0, 1, (1, 2))
        leaf = {i: rng.uniform(0, 1, (1, sizes[i + 1])) * size for i in range(len(sizes) - 2)}
        low = bounder.margin(C, d, lam, np.arange(1), leaf)
    value = sum(Fraction(float(lam[0, r])) * (sum(Fraction(float(C[r, o])) * y[o] for o in range(2))
                                              - Fraction(float(d[r]))) for r in range(2))
    assert _below(low[0], value), (low, float(value))  # (the beta terms are >= 0 at x0: less)
    for k, ((zlo, zhi), zk) in enumerate(zip(bounder.bounds, hidden)):
        for i, v in enumerate(zk):
            assert _below(zlo[0, i], v) and _below(-zhi[0, i], -v), (k, i, zlo, zhi, float(v))
    assert len(starts) == len(hidden) + 1


@st.composite
def _phase_trees(draw, n_hidden):
    """Random phase splits of random neurons from the root, leaves of random kinds, random
    multipliers: ``lam`` zero to huge, ``beta`` entries on any node, row and neuron."""
    kind, dim, left, right = [BOUND], [-1], [-1], [-1]
    for _ in range(draw(st.integers(0, 10))):
        i = draw(st.sampled_from([i for i, k in enumerate(kind) if k != check.PHASE]))
        kind[i], dim[i], left[i], right[i] = check.PHASE, draw(st.integers(0, n_hidden - 1)), \
            len(kind), len(kind) + 1
        kind += [BOUND, BOUND]
        dim += [-1, -1]
        left += [-1, -1]
        right += [-1, -1]
    n = len(kind)
    scale = st.sampled_from([0.0, 1e-320, 1e-8, 1.0, 1e8, 1e308])
    lam = np.array([[draw(st.floats(0, 1)) * draw(scale) for _ in range(2)] for _ in range(n)])
    m = draw(st.integers(0, 40))
    beta = {"node": np.array([draw(st.integers(0, n - 1)) for _ in range(m)], np.int64),
            "row": np.array([draw(st.integers(-1, 2 * n_hidden - 1)) for _ in range(m)], np.int64),
            "on": np.array([draw(st.integers(0, n_hidden - 1)) for _ in range(m)], np.int64),
            "value": np.array([draw(st.floats(0, 1)) * draw(scale) for _ in range(m)])}
    arrays = {"case0_kind": np.array(kind), "case0_dim": np.array(dim),
              "case0_at": np.zeros(n), "case0_left": np.array(left),
              "case0_right": np.array(right), "case0_lam": lam,
              **{f"case0_beta_{k}": v for k, v in beta.items()}}
    return arrays


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_no_phase_tree_proves_a_claim_false_by_one_rounding(tight, tmp_path_factory, data):
    """Random phase-split trees with random multipliers of the phases (any node, row,
    neuron; zero to huge), against the property that fails at ``x*`` by less than a
    rounding: never ``valid``."""
    net, prop, header, _ = tight
    arrays = data.draw(_phase_trees(16))
    path = write_certificate(tmp_path_factory.getbasetemp() / "phases.proof", header, arrays)
    got = str(check_proof(net, prop, path))
    assert got.split(":")[0] in ("invalid", "incomplete"), got


@pytest.fixture(scope="module")
def phased(tmp_path_factory):
    """A certificate of phase splits ``verify`` wrote (no input split: the traversal
    decides) for a true claim, and the claim made false, with the header's digest for
    each."""
    from polytrav import verify

    folder = tmp_path_factory.mktemp("phased")
    props = _claims(folder)
    result = verify(folder / "net.onnx", props["true"], split=False, proof=folder / "p.proof")
    assert result.answer == "unsat" and result.proof["uncertified"] == 0
    assert str(check_proof(folder / "net.onnx", props["true"], folder / "p.proof")) == "valid"
    header, arrays = read_certificate(folder / "p.proof")
    assert (arrays["case0_kind"] == check.PHASE).any()
    digests = {name: property_digest(read_vnnlib(p)) for name, p in props.items()}
    return folder / "net.onnx", props, digests, header, arrays


@st.composite
def _phase_mutations(draw, arrays):
    """One to four changes: a multiplier of a phase replaced (zero, tiny, huge, negative,
    non-finite), scaled, moved to another node, row or neuron, dropped or repeated; a phase
    split's neuron changed, its children swapped, a node's kind changed; a leaf's ``lam``."""
    a = {k: v.copy() for k, v in arrays.items()}
    values = st.sampled_from([0.0, 1e-320, 1e-8, 0.5, 1e8, 1e308, -1e-12, np.inf, np.nan])
    n, n_hidden = len(a["case0_kind"]), 16
    for _ in range(draw(st.integers(1, 4))):
        m = len(a["case0_beta_value"])
        e = draw(st.integers(0, max(m - 1, 0)))
        i = draw(st.integers(0, n - 1))
        what = draw(st.sampled_from(["value", "scale", "node", "row", "on", "drop beta",
                                     "repeat beta", "dim", "swap", "kind", "lam"]))
        if what in ("value", "scale", "node", "row", "on", "drop beta") and not m:
            continue
        if what == "value":
            a["case0_beta_value"][e] = draw(values)
        elif what == "scale":
            with np.errstate(over="ignore"):
                a["case0_beta_value"] *= draw(st.floats(0, 10))
        elif what == "node":
            a["case0_beta_node"][e] = draw(st.integers(-1, n))
        elif what == "row":
            a["case0_beta_row"][e] = draw(st.integers(-2, 2 * n_hidden))
        elif what == "on":
            a["case0_beta_on"][e] = draw(st.integers(-1, n_hidden))
        elif what == "drop beta":
            keep = np.arange(m) != e
            for x in check.BETA:
                a[f"case0_beta_{x}"] = a[f"case0_beta_{x}"][keep]
        elif what == "repeat beta" and m:
            for x in check.BETA:
                a[f"case0_beta_{x}"] = np.concatenate([a[f"case0_beta_{x}"],
                                                       a[f"case0_beta_{x}"][e:e + 1]])
        elif what == "dim":
            a["case0_dim"][i] = draw(st.integers(-1, n_hidden))
        elif what == "swap":
            a["case0_left"][i], a["case0_right"][i] = a["case0_right"][i], a["case0_left"][i]
        elif what == "kind":
            a["case0_kind"][i] = draw(st.sampled_from([SPLIT, BOUND, OPEN, check.PHASE, 7]))
        else:
            a["case0_lam"][i] = draw(st.floats(0, 2)) * a["case0_lam"][draw(st.integers(0, n - 1))]
    return a


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_no_mutant_of_a_phase_certificate_proves_the_false_claim(phased, tmp_path_factory,
                                                                  data):
    """Random mutants of a phase-split certificate ``verify`` wrote: against the claim made
    false none checks ``valid``; against the true claim every answer is one of the three."""
    net, props, digests, header, arrays = phased
    mutant = data.draw(_phase_mutations(arrays))
    path = tmp_path_factory.getbasetemp() / "phase_mutant.proof"
    for name in ("false", "true"):
        write_certificate(path, {**header, "property_sha256": digests[name]}, mutant)
        got = str(check_proof(net, props[name], path))
        assert got.split(":")[0] in ({"invalid", "incomplete"} if name == "false"
                                     else {"valid", "invalid", "incomplete"}), (name, got)


def test_a_perturbed_multiplier_of_a_phase_fails_or_stays_sound(phased, tmp_path):
    """Each of 60 multipliers of a phase, scaled by 0 to 1000 or moved to another neuron:
    the certificate checks valid (any ``beta >= 0`` is sound: a worse one may still prove
    the true claim) or fails at a node; a version-1 reader's format is still read."""
    net, props, digests, header, arrays = phased
    rng = np.random.default_rng(60)
    m = len(arrays["case0_beta_value"])
    answers = set()
    for e in rng.choice(m, min(60, m), replace=False):
        a = {k: v.copy() for k, v in arrays.items()}
        if rng.random() < 0.5:
            a["case0_beta_value"][e] *= rng.choice([0.0, 1e-3, 10.0, 1e3])
        else:
            a["case0_beta_on"][e] = rng.integers(16)
        got = str(check_proof(net, props["true"], write_certificate(tmp_path / "b.proof",
                                                                     header, a)))
        assert got == "valid" or got.startswith("invalid: step "), got
        answers.add(got.split(":")[0])
    assert "invalid" in answers


def test_a_version_1_certificate_is_still_read(certified, tmp_path):
    """A certificate of the input split alone in version 1's format (no multipliers of
    phases) checks valid; a phase split in it is an unknown kind."""
    net, props, digests, header, arrays = certified
    v1 = {k: v for k, v in arrays.items() if "beta" not in k}
    header = {**header, "version": 1, "property_sha256": digests["true"]}
    assert str(check_proof(net, props["true"], write_certificate(tmp_path / "v1.proof", header,
                                                                 v1))) == "valid"
    v1["case0_kind"] = np.where(v1["case0_kind"] == SPLIT, check.PHASE, v1["case0_kind"])
    got = str(check_proof(net, props["true"], write_certificate(tmp_path / "v1.proof", header, v1)))
    assert got.startswith("invalid: step 4 (case 0, node 0): unknown kind 4"), got
