"""Issue 60: difference-bound leaves in phase trees (format version 4). A box that ``diff``
leaves to its traversal gets a phase tree on the joint network ``[f; g]``; a node below a
phase split may be a difference-bound leaf, which the checker bounds with the node's bounds
on the joint network (its phases' region) met with each network's own.

Checked: such certificates check ``valid`` with far fewer nodes than phase trees of joint
bound leaves alone; the bound on a node's region is never above a sampled difference of the
region's points; mutants rejected: a phase flipped (a split's children swapped), a branch
dropped (a phase split made a difference leaf, its subtree cut off), the header's version 3
(no region bounds for difference leaves), a lowered ε; 200 random mutants against a false
claim are never ``valid``."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from certificates import (diff_claim_header, perturbed_pair, random_mutant, read_certificate,
                          write_certificate)

from polytrav.bounds import settle
from polytrav.proof import phases
from polytrav.proof.check import (
    BOUND,
    DIFF,
    OPEN,
    PHASE,
    Bounder,
    check_diff_proof,
    difference_margins,
    joint_layers,
    matched_bounds,
)
from polytrav.proof.equivalence import write_diff_proof

LOWER, UPPER = np.array([-1.0, -1.0]), np.array([1.0, 1.0])


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    """``f`` (2-8-8-2), ``g`` (weights and biases moved by 2 %), ε 5 % above their largest
    ``|g_j - f_j|`` on the box, and the certificates of the box as one phase tree (the input
    split off): with difference leaves (``d.proof``) and without (``j.proof``)."""
    folder = tmp_path_factory.mktemp("proof_phase_difference")
    f, g, top = perturbed_pair(folder, LOWER, UPPER)
    eps = 1.05 * top
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(settle, "DIFF_POLICY",
                   dataclasses.replace(settle.DIFF_POLICY, split_max_effective=0))
        written = write_diff_proof(f, g, LOWER, UPPER, eps, folder / "d.proof")
        prove_box = phases.prove_box
        mp.setattr(phases, "prove_box", lambda *a, **k: prove_box(*a, **{**k, "pair": None}))
        joint = write_diff_proof(f, g, LOWER, UPPER, eps, folder / "j.proof")
    return folder, f, g, top, eps, written, joint


def _check(folder, cert, eps):
    return str(check_diff_proof(folder / "f.onnx", folder / "g.onnx", cert, eps, LOWER, UPPER))


def test_phase_trees_with_difference_leaves_check_valid_and_are_smaller(trees):
    folder, _, _, _, eps, written, joint = trees
    header, arrays = read_certificate(folder / "d.proof")
    kind = arrays["case0_kind"]
    assert header["version"] == 5 and kind[0] == PHASE and (kind == DIFF).sum() >= 5, kind
    assert written["uncertified"] == joint["uncertified"] == 0
    assert _check(folder, folder / "d.proof", eps) == "valid"
    assert _check(folder, folder / "j.proof", eps) == "valid"
    assert 4 * written["nodes"] < joint["nodes"], (written, joint)


def _layers(net):
    return [(np.asarray(W, float), np.asarray(b, float)) for W, b in zip(net.weights, net.biases)]


def test_the_bound_on_a_phase_region_is_below_every_sampled_difference(trees):
    """Per sub-box and phase of a first-layer neuron pair of ``f`` and ``g`` (both active,
    both inactive, mixed), the difference bound with the joint network's bounds on that
    region is never above ``g_j - f_j`` at the region's sampled points."""
    _, f, g, *_ = trees
    fl, gl = _layers(f), _layers(g)
    layers = joint_layers(fl, gl)
    n = fl[0][0].shape[0]
    maps = [(np.arange(len(b)),) * 2 for _, b in fl[:-1]]
    rng = np.random.default_rng(5)
    checked = 0
    for _ in range(12):
        c, r = rng.uniform(-0.8, 0.8, 2), rng.uniform(0.05, 0.2, 2)
        lo, hi = c - r, c + r
        X = rng.uniform(lo, hi, (20000, 2))
        zf, zg = X @ fl[0][0].T + fl[0][1], X @ gl[0][0].T + gl[0][1]
        for j in range(n):
            for sf, sg in ((1, 1), (-1, -1), (1, -1), (-1, 1)):
                inside = (sf * zf[:, j] >= 0) & (sg * zg[:, j] >= 0)
                if inside.sum() < 50:
                    continue
                sigma = np.zeros((1, sum(len(b) for _, b in layers[:-1])), np.int8)
                sigma[0, j], sigma[0, n + j] = sf, sg
                known = matched_bounds(Bounder(layers, lo[None], hi[None], sigma=sigma).bounds,
                                       maps)
                for q in range(2):
                    C = np.zeros((1, 4))
                    C[0, q], C[0, 2 + q] = -1.0, 1.0  # g_q - f_q >= bound
                    low = difference_margins(fl, gl, lo[None], hi[None], [(C, np.zeros(1))],
                                             np.ones((1, 1)), known)[0, 0]
                    Xi = X[inside]
                    assert low <= (g.forward(Xi) - f.forward(Xi))[:, q].min()
                    checked += 1
    assert checked > 50


def _subtree(arrays, i):
    """Node ``i`` and every node below it."""
    out, todo = [], [i]
    while todo:
        node = todo.pop()
        out.append(node)
        if arrays["case0_kind"][node] == PHASE:
            todo += [int(arrays["case0_left"][node]), int(arrays["case0_right"][node])]
    return out


def _without(arrays, drop):
    """The arrays with the nodes ``drop`` removed (indices renumbered; their multipliers and
    slopes too)."""
    n = len(arrays["case0_kind"])
    keep = np.setdiff1d(np.arange(n), drop)
    new = np.full(n, -1)
    new[keep] = np.arange(len(keep))
    a = {}
    for key, v in arrays.items():
        if key in ("case0_kind", "case0_dim", "case0_at", "case0_lam"):
            a[key] = v[keep]
        elif key in ("case0_left", "case0_right"):
            a[key] = np.where(v[keep] >= 0, new[np.maximum(v[keep], 0)], -1).astype(v.dtype)
        else:
            a[key] = v.copy()
    for what in ("beta", "alpha"):
        if f"case0_{what}_node" in arrays:
            stay = np.isin(arrays[f"case0_{what}_node"], keep)
            for x in ("node", "row", "on", "value"):
                a[f"case0_{what}_{x}"] = arrays[f"case0_{what}_{x}"][stay]
            a[f"case0_{what}_node"] = new[a[f"case0_{what}_node"]].astype(
                arrays[f"case0_{what}_node"].dtype)
    return a


def test_mutants_of_phase_difference_leaves_are_rejected(trees, tmp_path):
    folder, _, _, top, eps, *_ = trees
    header, arrays = read_certificate(folder / "d.proof")
    kind = arrays["case0_kind"]
    cert = tmp_path / "m.proof"
    # every phase split with a difference leaf as a child: flipped, and dropped
    parents = [i for i in np.flatnonzero(kind == PHASE)
               if DIFF in (kind[arrays["case0_left"][i]], kind[arrays["case0_right"][i]])]
    assert len(parents) >= 3
    for i in parents:
        a = {k: v.copy() for k, v in arrays.items()}
        a["case0_left"][i], a["case0_right"][i] = arrays["case0_right"][i], arrays["case0_left"][i]
        write_certificate(cert, header, a)
        assert _check(folder, cert, eps).startswith("invalid: step "), ("flipped", i)
        a = _without(arrays, _subtree(arrays, i)[1:])
        a["case0_kind"][i], a["case0_lam"][i] = DIFF, 1.0
        a["case0_left"][i] = a["case0_right"][i] = -1
        write_certificate(cert, header, a)
        assert _check(folder, cert, eps).startswith("invalid: step "), ("dropped", i)
    for old in (3, 4):  # (versions whose difference leaves another bound proved: not read)
        write_certificate(cert, {**header, "version": old}, arrays)
        assert _check(folder, cert, eps).startswith("invalid: step 1 (the file): format "
                                                    f"'polytrav-proof' version {old}; this checker "
                                                    "reads 'polytrav-proof' 1 and 2 and 5"), old
    assert _check(folder, folder / "d.proof", 0.9 * top).startswith("invalid: step 3")


def test_random_mutants_of_phase_difference_leaves_never_prove_a_false_claim(trees, tmp_path):
    folder, _, _, top, _, *_ = trees
    header, arrays = read_certificate(folder / "d.proof")
    low = 0.9 * top
    false_header = diff_claim_header(folder, header, low, LOWER, UPPER)
    rng = np.random.default_rng(64)
    cert = tmp_path / "r.proof"
    for _ in range(200):
        a = random_mutant(arrays, rng, [BOUND, OPEN, PHASE, DIFF])
        with np.errstate(invalid="ignore"):
            write_certificate(cert, false_header, a)
            assert _check(folder, cert, low).split(":")[0] in ("invalid", "incomplete")
