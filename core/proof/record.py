"""Recording an ``unsat``'s certificate as ``verify`` proves it (format: docs/proofs.md).

:class:`ProofRecorder` holds one :class:`CaseRecord` per case of the property. The settle
stage's input split (:func:`~polytrav.bounds.split.split_box`, its ``recorder``) reports each
batch of boxes it bounded (:meth:`CaseRecord.bounded`: a proven box becomes a *bound* leaf,
with per disjunct the row whose CROWN bound is positive, else the multipliers of the
conjunction's LP, :func:`conjunction_multipliers`) and each halving (:meth:`CaseRecord.split`).
A box never proven nor split (left open for the traversal) and a case the split did not
settle are leaves without a certificate, which the checker reports as ``incomplete``.
Nothing here runs unless ``verify`` is given ``proof=``.
"""
from __future__ import annotations

import io
import json
import time
import zipfile
from pathlib import Path

import numpy as np

from polytrav.proof.check import (BETA, BOUND, CHUNK, DIFF, FORMAT, OPEN, SETTLED, SPLIT, VERSION,
                                  Bounder, difference_margins, network_digest, property_digest)
from polytrav.vocabulary.tolerances import PROOF_LAM_TOL

__all__ = ["ProofRecorder", "CaseRecord", "conjunction_multipliers", "ascend_multipliers",
           "REST_TIME_FACTOR", "REST_MIN_SECONDS"]

#: The phase trees of the boxes decided past the input split (:meth:`ProofRecorder.
#: certify_rest`) may take this many times the seconds ``verify`` took, at least
#: :data:`REST_MIN_SECONDS`; the boxes left then stay claims without a certificate.
REST_TIME_FACTOR, REST_MIN_SECONDS = 4.0, 10.0
#: Halvings of a box the split proved as a pair of networks and the checker's bounds do not
#: (:meth:`CaseRecord.certify_pair`), before it goes to a phase tree.
PAIR_HALVINGS = 3
#: Exponentiated-gradient steps of :func:`ascend_multipliers` (per batch of boxes at once,
#: before any LP).
ASCENT_STEPS = 60


def conjunction_multipliers(L: np.ndarray, g: np.ndarray) -> np.ndarray | None:
    """``lam >= 0`` summing to 1 that maximises ``min over u in [-1, 1]^n of lam . (L u +
    g)`` (the dual of ``min s  s.t.  s >= L u + g``, the conjunction's LP over a box), or
    None if the LP is not solved. ``L``: ``(rows, n)``, ``g``: ``(rows,)``."""
    from scipy.optimize import linprog

    r, n = L.shape
    # variables (lam, s): maximise g.lam - sum(s), -s <= L^T lam <= s
    c = np.concatenate([-g, np.ones(n)])
    A_ub = np.block([[L.T, -np.eye(n)], [-L.T, -np.eye(n)]])
    A_eq = np.concatenate([np.ones(r), np.zeros(n)])[None, :]
    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(2 * n), A_eq=A_eq, b_eq=[1.0],
                  bounds=[(0, None)] * (r + n), method="highs")
    return np.maximum(res.x[:r], 0.0) if res.status == 0 else None


def ascend_multipliers(L: np.ndarray, g: np.ndarray, steps: int = ASCENT_STEPS,
                       enough: np.ndarray | float = np.inf) -> tuple[np.ndarray, np.ndarray]:
    """The dual of :func:`conjunction_multipliers` on a batch, by exponentiated-gradient
    ascent on the simplex (``L``: ``(m, rows, n)``, ``g``: ``(m, rows)``): the best ``lam``
    of each and its value ``lam . g - |L^T lam|_1`` (what any ``lam`` proves: the checker
    only needs it positive). Costs a few NumPy calls per step for the whole batch, where an
    LP per box costs milliseconds; it ends early once every value exceeds ``enough``."""
    m, r, _ = L.shape
    lam = np.full((m, r), 1.0 / r)
    best, value = lam.copy(), np.full(m, -np.inf)
    for t in range(steps):
        v = np.einsum("mr,mrn->mn", lam, L)
        f = (lam * g).sum(axis=1) - np.abs(v).sum(axis=1)
        better = f > value
        best[better], value[better] = lam[better], f[better]
        if (value > enough).all():
            break
        grad = g - np.einsum("mrn,mn->mr", L, np.sign(v))
        scale = np.abs(grad).max(axis=1, keepdims=True) + 1e-300
        lam = lam * np.exp(grad / scale / np.sqrt(t + 1.0))
        lam /= lam.sum(axis=1, keepdims=True)
    return best, value


def past(deadline: float | None) -> bool:
    """Whether the time :func:`time.perf_counter` reads is past ``deadline`` (None: never)."""
    return deadline is not None and time.perf_counter() > deadline


class CaseRecord:
    """One case's tree, as the input split builds it: nodes by the split's box ids (the
    root is 0), each a split ``(dim, at, left, right)`` or a leaf's multipliers."""

    def __init__(self, lower, upper, unsafe, pair=None):
        self.lower, self.upper = np.asarray(lower, float), np.asarray(upper, float)
        self.pair = pair  # (f's layers, g's, matching: check.matched_bounds): boxes bounded as
        # a pair, and nodes of phase trees, may be difference leaves
        self.by_pair: list[int] = []  # boxes the split proved as a pair, not yet certified
        self.kinds: dict[int, int] = {}  # a leaf's kind where not BOUND
        self.difference = False  # whether the split bounded the boxes as a pair
        self.unsafe = unsafe
        C = [np.atleast_2d(np.asarray(C, float)) for C, _ in unsafe]
        d = [np.atleast_1d(np.asarray(d, float)) for _, d in unsafe]
        self.C = np.vstack(C)
        self.norms = np.concatenate([np.linalg.norm(Ck, axis=1) for Ck in C])
        self.d = np.concatenate(d) / self.norms  # as the split sees them: unit-norm rows
        ends = np.cumsum([0] + [Ck.shape[0] for Ck in C])
        self.rows = [np.arange(a, b) for a, b in zip(ends[:-1], ends[1:])]
        self.splits: dict[int, tuple] = {}
        self.leaves: dict[int, np.ndarray] = {}
        self.subtrees: dict = {}  # a leaf's phase tree (polytrav.proof.phases), by its id
        self.bounds: dict = {}  # the checker's bounds on a split node (certify_rest)
        self.boxes: dict = {}  # each node's (lower, upper, path), as unproven() found them
        self.used = False  # whether the input split ran on the case
        self.certifiable = True  # False: the split bounded boxes in a way the checker does not

    def start(self, lower, upper, difference: bool) -> None:
        """The split begins on ``[lower, upper]``; ``difference``: its boxes are bounded with
        the bounds on two networks' difference too (no certificate for those yet)."""
        self.used = True
        self.certifiable = ((not difference or self.pair is not None)
                            and np.array_equal(lower, self.lower)
                            and np.array_equal(upper, self.upper))
        self.difference = difference and self.certifiable

    def bounded(self, ids, margins, Ls, gs) -> None:
        """A batch of boxes bounded: ``ids``, their margins (``> 0``: proven), their rows'
        bounds ``C y >= L u + g`` in the box's ``[-1, 1]`` coordinates (unit-norm rows)."""
        if not self.certifiable:
            return
        proven = [k for k, margin in enumerate(margins) if margin > 0]
        if self.difference:  # certified once the split ends (certify_pair)
            self.by_pair += [int(ids[k]) for k in proven]
            return
        if not proven:
            return
        Ls, gs = np.asarray(Ls)[proven], np.asarray(gs)[proven] - self.d
        low = gs - np.abs(Ls).sum(axis=2)  # each row alone, over the box
        lam = np.zeros(gs.shape)
        for r in self.rows:
            best = r[np.argmax(low[:, r], axis=1)]
            alone = (low[np.arange(len(best)), best] > 0) | (len(r) == 1)
            lam[np.flatnonzero(alone), best[alone]] = 1.0
            joint = np.flatnonzero(~alone)  # the conjunction's LP proved these
            if len(joint):
                enough = PROOF_LAM_TOL * (1.0 + np.abs(gs[joint][:, r]).max(axis=1))
                found, value = ascend_multipliers(Ls[joint][:, r], gs[joint][:, r],
                                                  enough=enough)
                for k, f, v, e in zip(joint, found, value, enough):
                    if not v > e:
                        f = conjunction_multipliers(Ls[k][r], gs[k][r])
                    if f is None:
                        lam[k, best[k]] = 1.0  # the checker will say this leaf is not proven
                    else:
                        lam[k, r] = f / self.norms[r]  # on the property's rows as written
        for k, i in enumerate(proven):
            self.leaves[int(ids[i])] = lam[k]

    def split(self, parent: int, dim: int, at: float, left: int, right: int) -> None:
        self.splits[int(parent)] = (int(dim), float(at), int(left), int(right))

    def unproven(self) -> dict[int, tuple[np.ndarray, np.ndarray, list[int]]]:
        """The boxes of the leaves without a certificate (nor a phase tree), by id, each with
        its path of split nodes from the root."""
        boxes, todo, out = {0: (self.lower, self.upper, [])}, [0], {}
        while todo:
            node = todo.pop()
            lo, hi, path = boxes[node]
            if node in self.splits:
                dim, at, left, right = self.splits[node]
                boxes[left] = (lo, np.where(np.arange(len(hi)) == dim, at, hi), path + [node])
                boxes[right] = (np.where(np.arange(len(lo)) == dim, at, lo), hi, path + [node])
                todo += [left, right]
            elif node not in self.leaves and node not in self.subtrees:
                out[node] = boxes[node]
        self.boxes = boxes
        return out

    def arrays(self) -> dict[str, np.ndarray]:
        """The case's nodes in breadth-first order (children after their parent), each phase
        tree's other nodes after them."""
        order = [0]
        index = {0: 0}
        at = 0
        while at < len(order):
            node = order[at]
            if node in self.splits:
                for child in self.splits[node][2:]:
                    index[child] = len(order)
                    order.append(child)
            at += 1
        N = len(order)
        grafts = {}  # per phase tree: its local node -> the case's node
        for node, tree in self.subtrees.items():
            grafts[node] = np.concatenate([[index[node]], N + np.arange(len(tree.kind) - 1)])
            N += len(tree.kind) - 1
        out = {"kind": np.zeros(N, np.int8), "dim": np.full(N, -1, np.int32),
               "at": np.zeros(N), "left": np.full(N, -1, np.int32),
               "right": np.full(N, -1, np.int32), "lam": np.zeros((N, len(self.d)))}
        for i, node in enumerate(order):
            if node in self.splits:
                dim, a, left, right = self.splits[node]
                out["kind"][i], out["dim"][i], out["at"][i] = SPLIT, dim, a
                out["left"][i], out["right"][i] = index[left], index[right]
            elif node in self.leaves:
                out["kind"][i], out["lam"][i] = self.kinds.get(node, BOUND), self.leaves[node]
            elif node not in self.subtrees:
                out["kind"][i] = OPEN if self.used else SETTLED
        beta, alpha = [], []
        for node, tree in self.subtrees.items():
            g = grafts[node]
            out["kind"][g], out["dim"][g] = tree.kind, tree.dim
            for part in ("left", "right"):
                local = np.asarray(getattr(tree, part))
                out[part][g] = np.where(local >= 0, g[np.maximum(local, 0)], -1)
            for i, lam in tree.lam.items():
                out["lam"][g[i]] = lam
            beta += [(g[i], row, on, v) for i, row, on, v in tree.beta]
            alpha += [(g[i], row, on, v) for i, row, on, v in tree.alpha]
        for what, entries in (("beta", beta), ("alpha", alpha)):
            cols = np.array(entries, dtype=object).reshape(-1, 4).T
            for x, col, dtype in zip(BETA, cols, (np.int32, np.int32, np.int32, float)):
                out[f"{what}_{x}"] = np.asarray(col, dtype=dtype)
        return out

    def point(self, y) -> None:
        """The case is one input, proven by its output ``y`` (a forward pass): a bound leaf
        with per disjunct its row farthest from the unsafe set."""
        self.used, self.certifiable = True, True
        g = self.C @ np.asarray(y, float) / self.norms
        self.bounded([0], [1.0], np.zeros((1, len(g), 0)), g[None, :])

    @staticmethod
    def counts(kind: np.ndarray) -> dict:
        """Nodes, bound leaves, leaves without a certificate, of the nodes' ``kind``."""
        return {"nodes": len(kind), "certified": int(((kind == BOUND) | (kind == DIFF)).sum()),
                "uncertified": int(((kind == OPEN) | (kind == SETTLED)).sum())}

    def certify_pair(self, layers, deadline: float | None = None) -> None:
        """The boxes the split proved as a pair of networks, each a leaf the checker proves:
        a difference-bound leaf (:func:`~polytrav.proof.check.difference_margins`), else a
        bound leaf on the joint network ``layers``; a box neither proves is halved (its
        widest side, relative to the case's box), at most :data:`PAIR_HALVINGS` times, and
        what is left then goes to a phase tree (:meth:`certify_rest`). Past the ``deadline``
        (:func:`time.perf_counter`, checked between chunks of boxes) the boxes not yet
        proven stay leaves without a certificate."""
        if not self.by_pair:
            return
        self.unproven()  # every node's box
        todo = [(int(i),) + tuple(self.boxes[i][:2]) for i in self.by_pair]
        self.by_pair = []
        fresh = 1 + max([i for i, *_ in todo] + [c for parent, (*_, left, right) in
                                                  self.splits.items() for c in (parent, left,
                                                                                right)])
        width = np.where(self.upper > self.lower, self.upper - self.lower, np.inf)
        for halvings in range(PAIR_HALVINGS + 1):
            rest, todo = self._prove(layers, todo, deadline), []
            for i, lo, hi in rest if halvings < PAIR_HALVINGS and not past(deadline) else ():
                j = int(np.argmax((hi - lo) / width))
                mid = (lo[j] + hi[j]) / 2
                if lo[j] < mid < hi[j]:
                    self.splits[i] = (j, float(mid), fresh, fresh + 1)
                    todo += [(fresh, lo, np.where(np.arange(len(hi)) == j, mid, hi)),
                             (fresh + 1, np.where(np.arange(len(lo)) == j, mid, lo), hi)]
                    fresh += 2

    def _prove(self, layers, boxes, deadline=None) -> list:
        """Leaves for the ``boxes`` (``(id, lo, hi)``) that the checker's difference bound
        or joint bound proves, until the ``deadline``; returns the others."""
        rest = []
        lam = np.ones(len(self.d))  # (diff's disjuncts: one row each)
        for at in range(0, len(boxes), CHUNK):
            if past(deadline):  # the rest stay leaves without a certificate
                break
            part = boxes[at:at + CHUNK]
            ids = [i for i, *_ in part]
            lo, hi = np.array([b[1] for b in part]), np.array([b[2] for b in part])
            many = np.broadcast_to(lam, (len(part), len(lam)))
            proven = (difference_margins(self.pair[0], self.pair[1], lo, hi, self.unsafe,
                                         many) > 0).all(axis=0)
            joint = np.zeros(len(part), bool)
            if not proven.all():
                left = np.flatnonzero(~proven)
                bounder = Bounder(layers, lo[left], hi[left])
                joint[left] = np.all([bounder.margin(np.atleast_2d(C), np.atleast_1d(d),
                                                     many[left][:, r], np.arange(len(left))) > 0
                                      for (C, d), r in zip(self.unsafe, self.rows)], axis=0)
            for k, i in enumerate(ids):
                if proven[k] or joint[k]:
                    self.leaves[i] = lam
                    if proven[k]:
                        self.kinds[i] = DIFF
                else:
                    rest.append(part[k])
        return rest

    def certify_rest(self, layers, box_region: bool, lp, deadline) -> None:
        """Phase trees (:func:`polytrav.proof.phases.prove_box`) for the boxes without a
        certificate: those the split left to the traversal, or the whole case if it did not
        split it (``box_region``: the case's region is its box). A box it cannot prove in
        its budget stays a claim without one."""
        from polytrav.proof.phases import prove_box

        if not (self.used or box_region):
            return
        self.certify_pair(layers, deadline)
        unproven = self.unproven()
        for node, (lo, hi, path) in unproven.items():
            if past(deadline):  # (the others stay leaves without a certificate)
                break
            for at, inner in enumerate(path):  # the boxes' bounds as the checker finds them
                if inner not in self.bounds:  # (each node's on its parent's), once each
                    box = self.boxes[inner]
                    self.bounds[inner] = Bounder(layers, box[0][None], box[1][None],
                                                 self.bounds[path[at - 1]] if at else None
                                                 ).bounds
            prior = self.bounds.get(path[-1]) if path else None
            tree = prove_box(layers, lo, hi, self.unsafe, lp, deadline=deadline, prior=prior,
                             pair=self.pair)
            if tree is not None:
                self.subtrees[node] = tree


class ProofRecorder:
    """The certificate of one ``verify`` instance: :meth:`case` per case of the property,
    :meth:`write` once it is ``unsat``."""

    def __init__(self, network, spec, claim: str = "unsat", pair=None):
        self.network, self.spec, self.claim = network, spec, claim  # (check.CLAIMS)
        self.cases = [CaseRecord(c.lower, c.upper, c.unsafe, pair) for c in spec.cases]

    def case(self, k: int) -> CaseRecord:
        return self.cases[k]

    def certify_rest(self, lp, seconds: float | None = None) -> None:
        """Phase trees for every box without a certificate (:meth:`CaseRecord.certify_rest`),
        within ``seconds`` if given; ``lp``: an LP backend reporting duals."""
        layers = [(np.asarray(W, float), np.asarray(b, float))
                  for W, b in zip(self.network.weights, self.network.biases)]
        deadline = None if seconds is None else time.perf_counter() + seconds
        session = lp.lp_session()
        for case, spec_case in zip(self.cases, self.spec.cases):
            case.certify_rest(layers, spec_case.A is None, session, deadline)

    def write(self, path, extra: dict | None = None) -> dict:
        """Write the certificate to ``path`` (a zip: ``proof.json``, ``arrays.npz``; ``extra``:
        more arrays, e.g. an output range's witnesses); returns the counts (nodes, bound
        leaves, leaves without a certificate), the file's bytes and the digests."""
        from importlib.metadata import version

        each = [case.arrays() for case in self.cases]
        arrays = {f"case{k}_{name}": a for k, case in enumerate(each) for name, a in case.items()}
        arrays.update(extra or {})
        counts = [CaseRecord.counts(case["kind"]) for case in each]
        counts = {key: sum(c[key] for c in counts) for key in ("nodes", "certified", "uncertified")}
        buf = io.BytesIO()
        np.savez_compressed(buf, **arrays)
        header = {"format": FORMAT, "version": VERSION, "claim": self.claim,
                  "cases": len(self.cases), "producer": f"polytrav {version('polytrav')}",
                  "network_sha256": network_digest(self.network),
                  "property_sha256": property_digest(self.spec), **counts}
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("proof.json", json.dumps(header, indent=1))
            z.writestr("arrays.npz", buf.getvalue())
        return {**counts, "bytes": Path(path).stat().st_size,
                "network_sha256": header["network_sha256"],
                "property_sha256": header["property_sha256"]}
