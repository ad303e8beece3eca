"""Certificates of the boxes that ``verify`` decided past the input split (format version 2).

The traversal proves such a box (one the split left open, or a case it did not split) by its
pieces: cells on which the first layers' activation patterns are fixed, each proven by a
bound over the piece. :func:`prove_box` certifies the same claim as a tree of neuron phase
splits in the traversal's order: a node splits a neuron of the first layer that has an
unstable one, so every phase constraint ``sign z_j(x) >= 0`` on the way is affine in ``x``
(the layers below it are fixed). Each node is bounded by the checker's own
:class:`~polytrav.proof.check.Bounder`, every row with the LP duals of the node's phase
constraints as multipliers ``beta`` (Neumaier and Shcherbina: any ``beta >= 0`` gives a sound
bound over the box, the LP's make it the bound over the node's region), so the recorder sees
the bounds the checker will compute. A leaf carries per disjunct the duals of the LP ``min s``
s.t. ``rows - s <= 0`` and ``-sign z_j(x) - s <= 0`` over the box: ``s > 0`` says that no
point of the box is both in the region and in the disjunct (an empty region included).

Nothing here runs unless ``verify`` is given ``proof=`` and answers ``unsat``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from polytrav.proof.check import (BOUND, DIFF, OPEN, PHASE, Bounder, difference_margins,
                                  matched_bounds)
from polytrav.vocabulary.results import Status

__all__ = ["PhaseTree", "prove_box", "MAX_NODES"]

#: Nodes of one box's tree at most (then the box stays a claim without a certificate).
MAX_NODES = 20000
#: Steps of slope and multiplier ascent (alpha, beta: :func:`~polytrav.bounds.crown.
#: optimized_rows`) on a node that the LP's duals do not prove: the first stage, then more
#: from its best where it does not prove it (40 in all: fewer nodes and less CPU than 10,
#: 20 or 80 at once on ACAS Xu 4_2's open boxes).
SLOPE_STEPS = (10, 30)
#: A node whose LP over its region (the duals' bound, unit-norm rows) is below ``-ASCENT_FLOOR``
#: is split without the slope ascent (None: the ascent always runs; not yet measured well
#: enough to set: see docs/benchmarks.md).
ASCENT_FLOOR = None


@dataclass
class PhaseTree:
    """One box's tree: node ``i``'s kind (``PHASE`` or ``BOUND``), split neuron, children
    (local indices; children after their parent), a leaf's multipliers over the unsafe rows,
    the multipliers of phases and a leaf's slopes, ``(node, row, on, value)`` each
    (docs/proofs.md)."""

    kind: list = field(default_factory=list)
    dim: list = field(default_factory=list)
    left: list = field(default_factory=list)
    right: list = field(default_factory=list)
    lam: dict = field(default_factory=dict)
    beta: list = field(default_factory=list)
    alpha: list = field(default_factory=list)

    def add(self) -> int:
        for part in (self.kind, self.dim, self.left, self.right):
            part.append(-1)
        return len(self.kind) - 1


@dataclass
class _Node:
    index: int
    sigma: np.ndarray  # the phases on the way: +1 z >= 0, -1 z <= 0, 0 free
    cons: list  # (neuron, its layer, sign, a, c): sign (a x + c) >= 0
    prior: list | None  # the parent's bounds
    partner: tuple | None = None  # (layer, neuron): the other network's neuron matched to the
    # one split last (diff's pair), split next while of either sign


def prove_box(layers, lo, hi, unsafe, lp, max_nodes: int | None = None,
              deadline: float | None = None, prior=None, pair=None) -> PhaseTree | None:
    """A tree of phase splits proving that no point of the box ``[lo, hi]`` meets the unsafe
    set ``unsafe`` (``(C, d)`` pairs as the property writes them). A node it has not proven
    when the tree reaches ``max_nodes`` nodes (default :data:`MAX_NODES`) or the time
    ``deadline`` (:func:`time.perf_counter`), or that it cannot prove with every phase fixed,
    is an ``OPEN`` leaf (no evidence); None if no leaf is proven. ``lp``: an LP backend (or
    session) reporting duals. ``prior``: the bounds the checker finds on the box's parent
    in the input split's tree (:class:`Bounder`'s ``prior``), if it has one. ``pair``: the
    two networks' matched layers and matching (``diff``'s claim, ``layers`` their joint
    network): a node below a phase split is first tried as a difference-bound leaf, bounded
    with its bounds on the joint network (format version 4)."""
    max_nodes = MAX_NODES if max_nodes is None else max_nodes
    starts = np.cumsum([0] + [W.shape[0] for W, _ in layers[:-1]])
    tree = PhaseTree()
    todo = [_Node(tree.add(), np.zeros(starts[-1], np.int8), [], prior)]
    while todo:
        if len(tree.kind) > max_nodes or (deadline is not None and time.perf_counter() > deadline):
            for node in todo:  # left without evidence: the checker says incomplete there
                tree.kind[node.index] = OPEN
            break
        node = todo.pop()
        bounder = Bounder(layers, lo[None], hi[None], node.prior, node.sigma[None],
                          _multipliers(node, tree, layers, starts, lo, hi, lp))
        if pair is not None and node.sigma.any() and _difference_proves(bounder, pair, unsafe,
                                                                        lo, hi):
            tree.kind[node.index] = DIFF
            tree.lam[node.index] = np.ones(sum(np.atleast_2d(C).shape[0] for C, _ in unsafe))
            continue
        lam, beta, worst, gap = _leaf(bounder, node, unsafe, lo, hi, lp, starts)
        alpha = []
        if lam is None and (ASCENT_FLOOR is None or gap is None or gap > -ASCENT_FLOOR):
            lam, beta, alpha = _optimized_leaf(bounder, unsafe, lo, hi, starts)
        if lam is not None:
            tree.kind[node.index], tree.lam[node.index] = BOUND, lam
            tree.beta.extend((node.index, row, on, v) for row, on, v in beta)
            tree.alpha.extend((node.index, row, on, v) for row, on, v in alpha)
            continue
        split = node.partner
        if split is None or not (bounder.bounds[split[0]][0][0, split[1]] < 0
                                 < bounder.bounds[split[0]][1][0, split[1]]):
            split = _split(bounder, worst)
        if split is None:  # every phase fixed and still not proven: a claim without evidence
            tree.kind[node.index] = OPEN
            continue
        k, j = split
        a, c = _affine_of(bounder, k, j)
        partner = None if pair is None or split == node.partner else _partner(pair, k, j)
        tree.kind[node.index], tree.dim[node.index] = PHASE, starts[k] + j
        for side, sign in ((tree.left, -1), (tree.right, 1)):
            child = tree.add()
            side[node.index] = child
            sigma = node.sigma.copy()
            sigma[starts[k] + j] = sign
            todo.append(_Node(child, sigma, node.cons + [(starts[k] + j, k, sign, a, c)],
                              [(zl.copy(), zh.copy()) for zl, zh in bounder.bounds], partner))
    return tree if (np.asarray(tree.kind) != OPEN).any() else None


def _partner(pair, k, j):
    """``(k, neuron)``: the joint network's neuron of the other network matched to neuron
    ``j`` of hidden layer ``k`` (``f``'s first, then ``g``'s), None if a zero neuron."""
    mf, mg = pair[2][k]
    n = int((mf >= 0).sum())
    mine, other, at = (mf, mg, n) if j < n else (mg, mf, 0)
    p = np.flatnonzero(mine == (j if j < n else j - n))
    return (k, at + int(other[p[0]])) if len(p) and other[p[0]] >= 0 else None


def _difference_proves(bounder, pair, unsafe, lo, hi) -> bool:
    """Whether the checker's difference bound, with the node's bounds on the joint network
    (``bounder``), proves every disjunct (``lam`` 1: diff's have one row each)."""
    lam = np.ones((1, sum(np.atleast_2d(C).shape[0] for C, _ in unsafe)))
    known = matched_bounds(bounder.bounds, pair[2])
    return bool((difference_margins(pair[0], pair[1], lo[None], hi[None], unsafe, lam,
                                    known) > 0).all())


def _rows(cons, below: int):
    """The constraints of layers below ``below`` as ``A x <= b`` (``-sign (a x + c) <= 0``)."""
    use = [con for con in cons if con[1] < below]
    if not use:
        return use, None, None
    return use, np.array([-s * a for _, _, s, a, _ in use]), np.array([s * c for *_, s, _, c in use])


def _multipliers(node, tree, layers, starts, lo, hi, lp):
    """The :class:`Bounder`'s ``beta`` callback of ``node``: per row of layer ``k``, the LP
    duals of the phase constraints below ``k`` (recorded in ``tree`` as the checker reads
    them)."""
    def beta(bounder, k, j):
        use, A, b = _rows(node.cons, k)
        if not use:
            return None
        n = layers[k][0].shape[0]
        rows = np.vstack([np.eye(n)[j], -np.eye(n)[j]])
        Lx, g, slack = bounder.affine(rows[None], k)
        low = bounder.lower(Lx, g, slack)[0]  # without multipliers: stable ones need none
        free = np.tile((low[:len(j)] < 0) & (low[len(j):] < 0), 2)
        Y = np.zeros((len(rows), len(b)))
        if free.any():
            Y[free] = _duals(lp, Lx[0][free], A, b, lo, hi)
        out = {}
        for ci, (neuron, layer, *_) in enumerate(use):
            arr = out.setdefault(layer, np.zeros((1, len(rows), starts[layer + 1] - starts[layer])))
            arr[0, :, neuron - starts[layer]] += Y[:, ci]
            for r in np.flatnonzero(Y[:, ci] > 0):
                tree.beta.append((node.index, 2 * (starts[k] + j[r % len(j)]) + r // len(j),
                                  neuron, float(Y[r, ci])))
        return out
    return beta


def _duals(lp, C, A, b, lo, hi) -> np.ndarray:
    """Per row ``c`` of ``C``, duals ``y >= 0`` of ``min c x  s.t.  A x <= b``, ``x`` in the
    box (zeros where not solved): one LP of the rows' copies side by side (block diagonal)."""
    from scipy.sparse import csr_matrix

    R, n = C.shape
    m = len(b)
    cols = (np.arange(R)[:, None, None] * n + np.arange(n)[None, None, :]).repeat(m, axis=1)
    blocks = csr_matrix((np.broadcast_to(A, (R, m, n)).reshape(-1), cols.reshape(-1),
                         np.arange(R * m + 1) * n), shape=(R * m, R * n))
    res = lp.solve_lp(C.reshape(-1), blocks, np.tile(b, R),
                      bounds=(np.tile(lo, R), np.tile(hi, R)))
    if res.status is not Status.OPTIMAL or res.duals is None:
        return np.zeros((R, m))
    return np.maximum(np.asarray(res.duals[:R * m], float), 0.0).reshape(R, m)


def _leaf(bounder, node, unsafe, lo, hi, lp, starts):
    """``(lam, beta, None, None)`` proving every disjunct on the node's region by the LP's
    duals, else ``(None, None, row, gap)``: the output combination of the first disjunct it
    does not prove and its LP's objective (both None if its LP is not solved; the
    objective None where the LP proves it but the rounded bound does not)."""
    out_layer = len(starts) - 1
    use, A, b = _rows(node.cons, out_layer)
    lams, betas = [], []
    for q, (C, d) in enumerate(unsafe):
        C, d = np.atleast_2d(np.asarray(C, float)), np.atleast_1d(np.asarray(d, float))
        norms = np.linalg.norm(C, axis=1)
        Lx, g, _ = bounder.affine((C / norms[:, None])[None], out_layer)
        R, n = Lx.shape[1], Lx.shape[2]
        G = np.vstack([Lx[0]] + ([A] if use else []))  # min s: G x - s <= h
        h = np.concatenate([d / norms - g[0]] + ([b] if use else []))
        cost = np.zeros(n + 1)
        cost[-1] = 1.0
        res = lp.solve_lp(cost, np.hstack([G, -np.ones((len(h), 1))]), h,
                          bounds=(np.append(lo, -np.inf), np.append(hi, np.inf)))
        if res.status is not Status.OPTIMAL or res.duals is None:
            return None, None, None, None
        y = np.maximum(np.asarray(res.duals[:len(h)], float), 0.0)
        lam, w = y[:R] / norms, y[R:]
        if not res.objective > 0:  # the combination a split should help most
            return None, None, lam @ C, float(res.objective)
        dense = {}
        for (neuron, layer, *_), v in zip(use, w):
            arr = dense.setdefault(layer, np.zeros((1, starts[layer + 1] - starts[layer])))
            arr[0, neuron - starts[layer]] += v
        if not bounder.margin(C, d, lam[None], np.array([0]), dense or None)[0] > 0:
            return None, None, lam @ C, None
        lams.append(lam)
        betas.extend((-1 - q, neuron, float(v)) for (neuron, *_), v in zip(use, w) if v > 0)
    return np.concatenate(lams), betas, None, None


def _optimized_leaf(bounder, unsafe, lo, hi, starts):
    """``(lam, beta, alpha)`` proving every disjunct on the node's region by optimised slopes
    and multipliers of the known phases (β-CROWN over the box, per row), or Nones."""
    from polytrav.bounds.crown import Concretizer, LinearBounds, optimized_rows
    from polytrav.proof.record import ascend_multipliers, conjunction_multipliers

    bounds = LinearBounds([], [], [], [], [], phase_sign=[])
    for (zl, zh), sign in zip(bounder.bounds, bounder.signs):
        bounds.push(zl[0], zh[0])
        bounds.phase_sign.append(-sign[0])
    mid, rad = (lo + hi) / 2, (hi - lo) / 2
    W, b = bounder.layers[-1]
    out_layer = len(starts) - 1
    lams, betas, alphas, row0 = [], [], [], 0
    for q, (C, d) in enumerate(unsafe):
        C, d = np.atleast_2d(np.asarray(C, float)), np.atleast_1d(np.asarray(d, float))
        norms = np.linalg.norm(C, axis=1)
        Cn = C / norms[:, None]
        R = len(C)
        slopes = [np.repeat(s[None], R, axis=0) for s in bounds.lower_slope]
        beta = [np.zeros((R, len(s))) for s in bounds.lower_slope]
        for steps in SLOPE_STEPS:  # more steps only where fewer do not prove it
            L, g, _ = optimized_rows(Cn @ W, Cn @ b, bounder.layers, bounds, out_layer,
                                     np.diag(rad), mid, Concretizer(len(lo)), steps,
                                     slopes=slopes, beta=beta)  # (from the last best)
            lam = np.ones(1)
            if R > 1:  # the conjunction's multipliers: ascent, else its LP
                found, value = ascend_multipliers(L[None], (g - d / norms)[None], enough=0.0)
                lam = found[0] if value[0] > 0 else conjunction_multipliers(L, g - d / norms)
            if lam is None:
                continue
            dense = {k: (lam @ v)[None] for k, v in enumerate(beta) if (lam @ v).any()}
            given = {k: np.where((bounds.lo[k] < 0) & (bounds.hi[k] > 0), v, np.nan)[None]
                     for k, v in enumerate(slopes)}
            lam = lam / norms
            if bounder.margin(C, d, lam[None], np.array([0]), dense or None, given)[0] > 0:
                break
        else:
            return None, None, None
        lams.append(lam)
        betas += [(-1 - q, starts[k] + i, float(v[0, i])) for k, v in dense.items()
                  for i in np.flatnonzero(v[0] > 0)]
        alphas += [(row0 + r, starts[k] + i, float(v[0, r, i])) for k, v in given.items()
                   for r, i in zip(*np.nonzero(np.isfinite(v[0])))]
        row0 += R
    return np.concatenate(lams), betas, alphas


def _split(bounder, row):
    """``(layer, neuron)`` to split: of the first layer with an unstable neuron, the one whose
    relaxation costs the output combination ``row`` (None: unknown) the most, ``|Lam| hi
    (-lo) / (hi - lo)`` with ``Lam`` its coefficient by back-substitution (BaBSR's score);
    None if every neuron's phase is known."""
    for k, (zl, zh) in enumerate(bounder.bounds):
        free = (zl[0] < 0) & (zh[0] > 0)
        if free.any():
            gap = np.where(free, zh[0] * -zl[0] / np.where(free, zh[0] - zl[0], 1.0), 0.0)
            if row is not None:
                Lz = np.asarray(row, float)  # on the output
                for j in range(len(bounder.layers) - 1, k, -1):
                    Lam = Lz @ bounder.layers[j][0]  # on a_{j-1}
                    alpha, s = (a[0] for a in bounder.relu[j - 1][:2])
                    Lz = Lam * np.where(Lam > 0, alpha, s)
                gap = np.where((gap * np.abs(Lam) > 0).any(), gap * np.abs(Lam), gap)
            return k, int(np.argmax(np.where(free, gap, -np.inf)))
    return None


def _affine_of(bounder, k, j):
    """``z_j`` of layer ``k`` as ``a x + c`` (exact but for rounding: the layers below are
    fixed on the region)."""
    n = bounder.layers[k][0].shape[0]
    Lx, g, _ = bounder.affine(np.eye(n)[[j]][None], k)
    return Lx[0, 0], float(g[0, 0])
