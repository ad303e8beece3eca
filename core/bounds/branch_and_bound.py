"""Neuron-level branch and bound: a complete check of ``C f(x) - d > 0`` over an input box.

The traversal's pieces fix whole layers' activation patterns; on deep networks with many
unstable neurons (MNIST's ten-layer ``mnist10x10`` at eps 0.01) there are too many of them.
This module branches on one neuron's phase at a time instead (BaB-style, as in beta-CROWN,
Wang et al. 2021), on the CPU with numpy:

* **Bounding a node** (a set of phase decisions ``z >= 0`` / ``z <= 0``): CROWN
  back-substitution with optimised lower slopes (alpha) and Lagrange multipliers (beta >= 0)
  of the node's phase constraints and of the constraints of neurons stable by bounds; every
  iterate of the projected Adam is a sound bound (weak duality). The intermediate bounds of a
  node's still-unstable neurons are re-optimised the same way (only past the shallowest new
  decision) and intersected with its parent's. Concretised over the box in closed form.
* **Branching**: the widest unstable neuron of the earliest layer that has one
  (``widest_early``; ``babsr`` and ``early_babsr`` score by the bound's loss).
* **Leaves** (no unstable neuron left) are decided by an LP over the box and the pattern's
  halfspaces; its duals give a Lagrangian bound, sound whatever the LP's accuracy, and
  "empty" is accepted only with a Lagrangian certificate.
* **Counterexamples**: the box corner that minimises the worst row's bound is tried at every
  node, and a leaf LP's minimiser; only a point a forward pass confirms is returned.

The bounds are those of :mod:`polytrav.bounds.crown` (its back-substitution, batched over
nodes, with the multipliers of the known phases), and a row counts as proven when its bound
is positive after the one rounding allowance (:func:`~polytrav.bounds.crown.rounded_down`;
float64, no directed rounding), as do the leaves' Lagrangian bounds. The LPs go along the
caller's LP backend chain (:func:`~polytrav.solve.backend.solve_along`).
:func:`prove_margins` is the entry point; the analyses of
:mod:`polytrav.plugins.linear_property` and :mod:`polytrav.plugins.adversarial` run it on the
whole region before the traversal (see :func:`polytrav.bounds.settle.region_bab`).
"""
from __future__ import annotations

import enum
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from polytrav.bounds.crown import (Concretizer, LinearBounds, backsubstitute, optimized_rows,
                                   relax, rounded_down)
from polytrav.model.network import Network
from polytrav.solve.backend import SolverBackend, solve_along
from polytrav.vocabulary.results import SolveResult, Status
from polytrav.vocabulary.tolerances import EMPTY_TOL

__all__ = ["BaBOutcome", "BaBVerdict", "NeuronBaB", "prove_margins"]

BATCH_ELEMENTS = 1e6  # nodes per batch: about this many (node, neuron, neuron) slope entries


class BaBVerdict(str, enum.Enum):
    """What branch and bound decided about the box."""

    HOLDS = "holds"  #: every row proven positive on the box
    VIOLATED = "violated"  #: a forward pass confirms a counterexample
    TIMEOUT = "timeout"  #: the time limit came first
    UNKNOWN = "unknown"  #: a leaf LP's minimiser did not confirm

    def __str__(self) -> str:
        return self.value


@dataclass
class BaBOutcome:
    """What :func:`prove_margins` found: ``verdict`` is :attr:`BaBVerdict.HOLDS` (every row
    proven positive on the box), :attr:`~BaBVerdict.VIOLATED` (``counterexample``: a forward
    pass gives some row <= 0), :attr:`~BaBVerdict.TIMEOUT` or :attr:`~BaBVerdict.UNKNOWN` (a
    leaf LP's minimiser did not confirm)."""

    verdict: BaBVerdict
    counterexample: np.ndarray | None
    nodes: int
    seconds: float
    stats: dict = field(default_factory=dict)
    #: where the traversal should start (set by the caller: an attack's point, if any)
    start: np.ndarray | None = None

    def __post_init__(self):
        self.verdict = BaBVerdict(self.verdict)


def prove_margins(network, lo, hi, C, d, *, lp_backends: Sequence[SolverBackend],
                  time_limit: float | None = None, branching: str = "widest_early",
                  groups: Sequence[Sequence[int]] | None = None, pair: bool = True
                  ) -> BaBOutcome:
    """Branch and bound for ``C @ network(x) - d > 0`` (every row) for ``x`` in ``[lo, hi]``.

    ``C`` (rows, n_outputs) and ``d`` (rows,) are folded into the output layer.
    ``lp_backends``: the LP backend chain that decides the leaves (a run's
    ``context.backends("lp")``). ``time_limit`` in seconds (None: until decided).
    ``groups``: the rows of each conjunction of an unsafe set ``C_k y <= d_k`` in
    disjunctive normal form; then what is proven is that in every group *some* row is
    positive at every ``x`` (no conjunction is met), and a counterexample meets every row
    of one group. Default: every row its own group. ``pair``: a stack of two networks (a
    two-network query) is bounded by their difference too (:func:`_pair_bound`; a
    :class:`~polytrav.bounds.settle.SettlePolicy`'s ``pair_bounds``).
    """
    C, d = np.atleast_2d(np.asarray(C, float)), np.atleast_1d(np.asarray(d, float))
    groups = _groups(groups, C.shape[0])
    Ws = list(network.weights[:-1]) + [C @ network.weights[-1]]
    bs = list(network.biases[:-1]) + [C @ network.biases[-1] - d]
    if len(Ws) == 1 and all(len(g) == 1 for g in groups):  # affine: one LP-free bound is exact
        lo_, hi_ = np.asarray(lo, float), np.asarray(hi, float)
        mid, rad = (lo_ + hi_) / 2, (hi_ - lo_) / 2
        const = Ws[0] @ mid + bs[0]
        low = const - np.abs(Ws[0]) @ rad
        if (rounded_down(low, const) > 0).all():
            return BaBOutcome(BaBVerdict.HOLDS, None, 1, 0.0)
        x = np.where(Ws[0][int(np.argmin(low))] >= 0, lo_, hi_)  # the worst row's minimiser
        if (network.forward(x) @ C.T - d).min() <= 0:  # confirmed, as every VIOLATED is
            return BaBOutcome(BaBVerdict.VIOLATED, x, 1, 0.0)
        return BaBOutcome(BaBVerdict.UNKNOWN, None, 1, 0.0)  # within rounding of the boundary
    bab = NeuronBaB(Ws, bs, lo, hi, np.eye(C.shape[0]), branching=branching,
                    lp_backends=lp_backends, groups=groups)
    bab.extra_bound = _pair_bound(network, lo, hi, C, d) if pair else None
    batch = int(np.clip(BATCH_ELEMENTS / (bab.N * max(bab.sizes)), 1, 256))
    verdict, seconds = bab.search(time_limit, batch=batch)
    return BaBOutcome(verdict, bab.counterexample if verdict is BaBVerdict.VIOLATED else None,
                      bab.stats["nodes"], seconds, dict(bab.stats))


def _pair_bound(network, lo, hi, C, d):
    """For the stack of a two-network query (:func:`~polytrav.bounds.difference.stacked_pair`,
    where ``prove_margins`` asks): ``bound(split)``, each node's lower bounds
    of the rows ``C y - d`` by the networks' difference, the node's split neurons taken as
    known phases (facts on the node's part of the box; rounding allowance applied). None
    otherwise."""
    from polytrav.bounds.difference import stacked_pair

    pair = stacked_pair(network)
    if pair is None:
        return None
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    mid, rad = (lo + hi) / 2, (hi - lo) / 2

    def bound(split: np.ndarray) -> np.ndarray:
        B = split.shape[0]
        L, g = pair.box_output_bounds(np.repeat(mid[None], B, 0), np.repeat(rad[None], B, 0),
                                      C, phases=split.copy())
        return rounded_down(g - d - np.abs(L).sum(-1), g - d)
    return bound


def _groups(groups, rows: int) -> list[np.ndarray]:
    """The conjunctions' row indices (each row its own by default), checked."""
    if groups is None:
        return [np.array([r]) for r in range(rows)]
    groups = [np.asarray(g, int) for g in groups]
    if sorted(np.concatenate(groups).tolist()) != list(range(rows)):
        raise ValueError(f"groups must partition the {rows} rows, got {groups}")
    return groups


class NeuronBaB:
    """Branch and bound over ReLU phases for ``C (net(x)) > 0`` on ``x in [xl, xu]`` (module
    docstring); with ``groups`` (conjunctions), some row of every group ``> 0``.

    ``on_bounded(nodes, bound)``, when set, sees every batch of bounded nodes (their
    ``lo``, ``hi``, ``split`` and ``done`` arrays) and their final bounds before they are
    classified, and ``on_leaf(active, proven)`` every leaf LP's answer with the leaf's phases:
    the tests check each against sample points of the box.
    """

    on_bounded = None
    on_leaf = None

    def __init__(self, Ws, bs, xl, xu, C, iters=10, root_iters=100, lr=0.1,
                 branching="widest_early", int_iters=10, *, lp_backends: Sequence[SolverBackend],
                 groups: Sequence[Sequence[int]] | None = None):
        #: the LP backend chain of the leaves (:meth:`leaf_lp`)
        self.lp_backends = list(lp_backends)
        self.Ws = [np.asarray(W, float) for W in Ws[:-1]]
        self.bs = [np.asarray(b, float) for b in bs[:-1]]
        #: the network whose margins are bounded (its forward pass checks every candidate)
        self.net = Network(Ws, bs)
        self.C = np.atleast_2d(np.asarray(C, float))
        self.Wc = self.C @ np.asarray(Ws[-1], float)
        self.bc = self.C @ np.asarray(bs[-1], float)
        self.L = len(self.Ws)
        self.sizes = [W.shape[0] for W in self.Ws]
        off = np.concatenate([[0], np.cumsum(self.sizes)]).astype(int)
        self.sl = [slice(off[k], off[k + 1]) for k in range(self.L)]
        self.layer_of = np.concatenate([[k] * n for k, n in enumerate(self.sizes)])
        self.N = int(off[-1])
        self.R = self.C.shape[0]
        self.groups = _groups(groups, self.R)
        #: (groups, rows): which rows belong to each group
        self.member = np.zeros((len(self.groups), self.R), bool)
        for k, g in enumerate(self.groups):
            self.member[k, g] = True
        self.xl, self.xu = np.asarray(xl, float), np.asarray(xu, float)
        self.mid, self.rad = (self.xl + self.xu) / 2, (self.xu - self.xl) / 2
        W0, b0 = self.Ws[0], self.bs[0]
        c = W0 @ self.mid + b0
        r = np.abs(W0) @ self.rad
        self.z0 = (c - r, c + r)
        # back-substitution (polytrav.bounds.crown) in the box's coordinates u in [-1, 1]^d,
        # x = mid + rad * u, where the box's bound of L u + g is g - |L|_1
        self.layers = list(zip(self.Ws, self.bs))
        self.M = np.diag(self.rad)
        self.first = (W0 * self.rad, W0 @ self.mid)
        self.box = Concretizer(self.xl.shape[0])
        self.iters, self.root_iters, self.lr = iters, root_iters, lr
        self.branching = branching
        # proven_share: the sum of 2^-depth over closed nodes (1.0: everything)
        self.stats = dict(nodes=0, leaves=0, lp=0, empty=0, batches=0, proven_share=0.0)
        self.counterexample = None
        self.int_alpha = {}
        self.int_iters = int_iters

    # ------------------------------------------------------------------ relaxation
    def relax(self, lo, hi):
        """Masks and relaxation (:func:`~polytrav.bounds.crown.relax`) of every neuron of a
        batch of nodes ((B, N) arrays, or a layer's columns of them)."""
        with np.errstate(invalid="ignore", divide="ignore"):  # layers not bounded yet: inf
            a0, u, t = relax(lo, hi)
        act = lo >= 0.0
        ina = (hi <= 0.0) & ~act
        unst = ~act & ~ina
        # Lagrangian sign of the constraint of stable neurons: active z>=0 -> -beta z,
        # inactive z<=0 -> +beta z (both only lower the objective on the domain).
        sig = np.where(act, -1.0, np.where(ina, 1.0, 0.0))
        return dict(lo=lo, hi=hi, act=act, ina=ina, unst=unst, u=u, t=t, a0=a0, sig=sig)

    def _update(self, rel, lo, hi, sl):
        """Layer ``sl``'s relaxation in ``rel`` after its bounds ``lo``, ``hi`` changed."""
        r = self.relax(lo[:, sl], hi[:, sl])
        for key in ("act", "ina", "unst", "u", "t", "a0", "sig"):
            rel[key][:, sl] = r[key]

    # ------------------------------------------------------------------ back-substitution
    def _linear(self, rel, upto):
        """The nodes' :class:`~polytrav.bounds.crown.LinearBounds` of layers ``< upto`` (views
        of ``rel``), on the box's coordinates ``u`` (``x = mid + rad * u``)."""
        def per_layer(key):  # (B, 1, n_k): the rows' axis
            return [rel[key][:, None, sl] for sl in self.sl[:upto]]

        return LinearBounds(per_layer("lo"), per_layer("hi"), per_layer("a0"), per_layer("u"),
                            per_layer("t"), first=self.first, phase_sign=per_layer("sig"),
                            unstable=per_layer("unst"))

    def lower_bound(self, Lam, const, upto, rel, alpha=None):
        """Lower bound over the box of ``Lam @ a_{upto-1} + const`` (rows (B, R, .)), by
        :func:`~polytrav.bounds.crown.backsubstitute`; ``alpha``: (B, R, N) lower slopes,
        or None (CROWN's)."""
        slopes = None if alpha is None else [alpha[..., sl] for sl in self.sl[:upto]]
        L, g = backsubstitute(Lam, const, self.layers, self._linear(rel, upto), upto,
                              self.M, self.mid, slopes)
        return self.box.lower(L, g)

    # ------------------------------------------------------------------ node bounding
    def intermediate(self, lo, hi, split, kstart, opt_iters=0, use_beta=False, kend=None,
                     root=False):
        """Recompute layers kstart.. of the (B, N) bounds in place (intersected, split-clamped).

        Layer k's rows use the slopes ``self.int_alpha[k]`` (optimised at the root) when there
        are some, else CROWN's; ``opt_iters > 0`` optimises them (and, with ``use_beta``, the
        multipliers of the split / stable-neuron constraints): at the ``root`` every row, and
        the slopes are stored; at other nodes only the unstable neurons' rows."""
        rel = self.relax(lo, hi)
        B = lo.shape[0]
        for k in range(max(kstart, 1), self.L if kend is None else kend):
            sl = self.sl[k]
            W, b = self.Ws[k], self.bs[k]
            n = W.shape[0]
            Lam = np.broadcast_to(np.vstack([W, -W]), (B, 2 * n, W.shape[1]))
            const = np.broadcast_to(np.concatenate([b, -b]), (B, 2 * n))
            stored = self.int_alpha.get(k)
            if opt_iters and not root:
                self._opt_unstable(lo, hi, split, rel, k, opt_iters, use_beta)
                continue
            if opt_iters:
                alpha = (np.repeat(rel["a0"][:, None, :], 2 * n, axis=1) if stored is None
                         else np.array(np.broadcast_to(stored, (B, 2 * n, self.N))))
                beta = np.zeros((B, 2 * n, self.N))
                _, _, bound = self.optimize(Lam, const, k, rel, alpha, beta, opt_iters,
                                            use_beta=use_beta)
                self.int_alpha[k] = alpha
            elif stored is not None:
                bound = self.lower_bound(Lam, const, k, rel,
                                         np.broadcast_to(stored, (B, 2 * n, self.N)))
            else:
                bound = self.lower_bound(Lam, const, k, rel)
            lo[:, sl] = np.maximum(lo[:, sl], bound[:, :n])
            hi[:, sl] = np.minimum(hi[:, sl], -bound[:, n:])
            self._clamp(lo, hi, split, sl)
            self._update(rel, lo, hi, sl)
        return rel

    def _opt_unstable(self, lo, hi, split, rel, k, iters, use_beta):
        """Per-node alpha(-beta) optimised bounds of layer k's unstable neurons only (in place,
        lo/hi/rel of layer k updated)."""
        sl = self.sl[k]
        n = self.sizes[k]
        W, b = self.Ws[k], self.bs[k]
        U = rel["unst"][:, sl]
        node, j = np.nonzero(U)
        if len(node):
            P = len(node)
            ncol = sl.start
            Lam = np.concatenate([W[j], -W[j]])[:, None, :]
            const = np.concatenate([b[j], -b[j]])[:, None]
            nodes = np.concatenate([node, node])
            sub = {key: v[nodes, :ncol] for key, v in rel.items()}
            stored = self.int_alpha.get(k)
            if stored is None:
                alpha = sub["a0"][:, None, :].copy()
            else:
                stored = stored[0]  # (2n, N): the root's optimised slopes of layer k's rows
                alpha = np.concatenate([stored[j], stored[n + j]])[:, None, :ncol].copy()
            beta = np.zeros_like(alpha)
            _, _, bound = self.optimize(Lam, const, k, sub, alpha, beta, iters, use_beta=use_beta)
            bound = bound[:, 0]
            gl = sl.start + j
            lo[node, gl] = np.maximum(lo[node, gl], bound[:P])
            hi[node, gl] = np.minimum(hi[node, gl], -bound[P:])
        self._clamp(lo, hi, split, sl)
        self._update(rel, lo, hi, sl)

    @staticmethod
    def _clamp(lo, hi, split, sl=slice(None)):
        s = split[:, sl]
        lo[:, sl] = np.where(s > 0, np.maximum(lo[:, sl], 0.0), lo[:, sl])
        hi[:, sl] = np.where(s < 0, np.minimum(hi[:, sl], 0.0), hi[:, sl])

    def final(self, rel, alpha, beta, iters):
        """Each node's proven lower bound of every row (after the rounding allowance,
        :func:`~polytrav.bounds.crown.rounded_down`: ``> 0`` proves the row), the
        back-substitution's tape and the rows' coefficients ``L`` on ``u``."""
        B = alpha.shape[0]
        Lam0 = np.broadcast_to(self.Wc, (B,) + self.Wc.shape)
        const0 = np.broadcast_to(self.bc, (B, self.R))
        tape = []
        L, g, low = self.optimize(Lam0, const0, self.L, rel, alpha, beta, iters, tape=tape)
        return rounded_down(low, g), tape, L

    def optimize(self, Lam0, const0, upto, rel, alpha, beta, iters, use_beta=True, tape=None):
        """Optimise alpha, beta (in place) for rows Lam0 @ a_{upto-1} + const0 over the box
        (:func:`~polytrav.bounds.crown.optimized_rows`); returns ``(L, g, low)`` of each
        row's best iterate (``tape``: its back-substitution)."""
        ncol = self.sl[upto - 1].stop
        alpha, beta = alpha[..., :ncol], beta[..., :ncol]  # views: updated in place
        unst = rel["unst"][:, None, :ncol]
        sig = (rel["sig"][:, None, :ncol] != 0) & use_beta
        alpha[:] = np.where(unst, np.clip(alpha, 0, 1), 0.0)
        beta[:] = np.where(sig, np.maximum(beta, 0), 0.0)
        slopes = [alpha[..., sl] for sl in self.sl[:upto]]
        betas = [beta[..., sl] for sl in self.sl[:upto]] if use_beta else None
        return optimized_rows(Lam0, const0, self.layers, self._linear(rel, upto), upto, self.M,
                              self.mid, self.box, iters, slopes=slopes, beta=betas, lr=self.lr,
                              tape=tape)

    # ------------------------------------------------------------------ branching
    def choose(self, lo, hi, split, rel, tape, worst_row):
        """One neuron index (into N) per node to split on."""
        B = lo.shape[0]
        free = rel["unst"] & (split == 0)
        if self.branching == "widest_early":
            score = np.where(free, (hi - lo) * (1.0 + 1e-3) ** 0, -np.inf)
            # earliest layer with a free unstable neuron, widest inside it
            first = np.where(free.any(1), np.argmax(free, axis=1), 0)
            lay = self.layer_of[first]
            score = np.where(self.layer_of[None, :] == lay[:, None], score, -np.inf)
            return np.argmax(score, axis=1)
        idx = np.arange(B)
        score = np.zeros((B, self.N))
        gap = np.where(free, -lo * hi / np.where(free, hi - lo, 1.0), 0.0)
        for k, Lam, *_ in tape:
            sl = self.sl[k]
            lam = Lam[idx, worst_row]  # (B, n_k): coefficient on a_k of the worst row
            if self.branching in ("babsr", "early_babsr"):
                # bound loss due to the relaxation of neuron j: intercept of the upper line for
                # negative coefficients; for positive ones the lower line's worst gap.
                score[:, sl] = np.abs(lam) * gap[:, sl]
            else:
                raise ValueError(self.branching)
        if self.branching == "early_babsr":  # earliest layer with a free unstable neuron
            first = np.where(free.any(1), np.argmax(free, axis=1), 0)
            free = free & (self.layer_of[None, :] == self.layer_of[first][:, None])
        # tie-break towards earlier layers
        score = np.where(free, score * (1 + 1e-6 * (self.L - self.layer_of))[None, :]
                         + 1e-9 * (hi - lo), -np.inf)
        return np.argmax(score, axis=1)

    # ------------------------------------------------------------------ leaves
    def leaf_lp(self, rel, groups):
        """Exact decision of a node whose neurons all have a fixed phase (no unstable one), for
        the unproven ``groups`` (row indices of conjunctions).

        Returns (verified, x_candidate). Sound: the bound is the Lagrangian of the LP duals."""
        self.stats["lp"] += 1
        act = rel["act"]
        # compose the affine maps of the fixed pattern: z_k = A_k x + c_k
        A, c = self.Ws[0], self.bs[0]
        G, h = [], []  # constraints G x + h >= 0 (sign-adjusted pre-activations)
        for k in range(self.L):
            if k > 0:
                D = act[self.sl[k - 1]].astype(float)  # phase of the previous layer
                A = self.Ws[k] @ (D[:, None] * A)
                c = self.Ws[k] @ (D * c) + self.bs[k]
            s = np.where(act[self.sl[k]], 1.0, -1.0)
            G.append(s[:, None] * A)
            h.append(s * c)
        D = act[self.sl[self.L - 1]].astype(float)
        Fo = self.Wc @ (D[:, None] * A)
        fo = self.Wc @ (D * c) + self.bc
        G, h = np.vstack(G), np.concatenate(h)
        for grp in groups:
            res = self._solve_group(Fo[grp], fo[grp], G, h)
            if res.status is Status.INFEASIBLE:  # the node is empty: certify it (else unknown)
                return self._certify_empty(G, h), None
            if res.status is not Status.OPTIMAL:
                return False, None
            n_g = len(grp)
            lam = np.ones(1) if n_g == 1 else np.maximum(res.duals[:n_g], 0.0)
            if lam.sum() <= 0:
                return False, None
            lam = lam / lam.sum()  # max_i (F_i x + f_i) >= sum_i lam_i (F_i x + f_i)
            first = 0 if n_g == 1 else n_g  # where the node's rows' duals start
            mu = np.maximum(res.duals[first:first + len(h)], 0.0)
            # Lagrangian: lam (F x + f) - mu (G x + h) <= max_i (F_i x + f_i) on the node
            g = lam @ Fo[grp] - mu @ G
            const = lam @ fo[grp] - mu @ h + g @ self.mid
            if rounded_down(const - np.abs(g) @ self.rad, const) <= 0:
                return False, np.clip(res.x[:self.xl.shape[0]], self.xl, self.xu)
        return True, None

    def _solve_group(self, F, f, G, h) -> SolveResult:
        """``min_x max_i (F_i x + f_i)`` over the node (``G x + h >= 0``, the box): one row
        is ``min F x`` (duals: the node's rows); several are ``min t, F x + f <= t`` (duals:
        the rows of ``F``, then the node's)."""
        if len(F) == 1:
            return self._solve_lp(F[0], -G, h, (self.xl, self.xu))
        n = self.xl.shape[0]
        c = np.zeros(n + 1)
        c[-1] = 1.0
        A = np.block([[F, -np.ones((len(F), 1))], [-G, np.zeros((len(G), 1))]])
        b = np.concatenate([-f, h])
        return self._solve_lp(c, A, b, (np.append(self.xl, -np.inf), np.append(self.xu, np.inf)))

    def _certify_empty(self, G, h):
        """Sound emptiness test of {x in box: G x + h >= 0}: the LP max_{x,t} t, t <= G x + h
        gives multipliers lam >= 0 (sum 1); if max_box lam (G x + h) < 0 no x satisfies all."""
        m, n = G.shape
        c = np.zeros(n + 1); c[-1] = -1.0
        A = np.hstack([-G, np.ones((m, 1))])
        res = self._solve_lp(c, A, h, (np.append(self.xl, -np.inf), np.append(self.xu, 1.0)))
        if res.status is not Status.OPTIMAL:
            return False
        lam = np.maximum(res.duals[:m], 0.0)
        if lam.sum() <= 0:
            return False
        lam = lam / lam.sum()
        g = lam @ G
        const = lam @ h + g @ self.mid
        ok = bool(rounded_down(-(const + np.abs(g) @ self.rad), const) > 0)
        self.stats["lp_infeasible"] = self.stats.get("lp_infeasible", 0) + int(ok)
        return ok

    def _solve_lp(self, c, A_ub, b_ub, bounds) -> SolveResult:
        """``min c x`` s.t. ``A_ub x <= b_ub`` and ``bounds``, along :attr:`lp_backends`
        (:func:`~polytrav.solve.backend.solve_along`): OPTIMAL with duals, INFEASIBLE from a
        backend that certifies optimality, or undecided (an optimum without duals proves
        nothing here: the Lagrangian bound needs them)."""
        def attempt(backend):
            res = backend.solve_lp(c, A_ub, b_ub, bounds=bounds)
            if res.status is Status.OPTIMAL and res.duals is None:
                return replace(res, status=Status.ERROR, message=f"{res.message} (no duals)")
            return res

        return solve_along(self.lp_backends, attempt)[0]

    def worst_rows(self, done: np.ndarray, bound: np.ndarray) -> np.ndarray:
        """Per node, the row to work on: in the unproven group whose best row's bound is
        lowest, that best row (proving it proves the group)."""
        best = np.where(self.member[None], bound[:, None, :], -np.inf)  # (B, groups, R)
        group_best = best.max(axis=2)
        group_best = np.where((done[:, None, :] & self.member[None]).any(axis=2), np.inf,
                              group_best)
        g = np.argmin(group_best, axis=1)
        return np.argmax(best[np.arange(len(g)), g], axis=1)

    def proven(self, done: np.ndarray) -> np.ndarray:
        """Per node (``done``: (B, R) rows proven): every group has a proven row."""
        return (done[:, None, :] & self.member[None]).any(axis=2).all(axis=1)

    def violated(self, M: np.ndarray) -> np.ndarray:
        """Per point (``M``: (B, R) margins): some group has every row negative."""
        return ((M[:, None, :] < 0) | ~self.member[None]).all(axis=2).any(axis=1)

    def check_point(self, x):
        m = self.C @ self.net.forward(x)
        return bool(self.violated(m[None])[0]), m

    # ------------------------------------------------------------------ main loop
    def run(self, time_limit: float | None = None, batch: int = 256) -> tuple[str, float]:
        """:meth:`search` in the words of robustness: ``("robust" | "violated" | "timeout" |
        "unknown", seconds)``."""
        verdict, seconds = self.search(time_limit, batch)
        return ("robust" if verdict is BaBVerdict.HOLDS else verdict.value), seconds

    def search(self, time_limit: float | None = None, batch: int = 256
               ) -> tuple[BaBVerdict, float]:
        """``(verdict, seconds)``; a violation's input is :attr:`counterexample` (confirmed by
        a forward pass)."""
        t0 = time.perf_counter()
        self._deadline = None if time_limit is None else t0 + time_limit
        N, R = self.N, self.R
        lo = np.full((1, N), -np.inf)
        hi = np.full((1, N), np.inf)
        lo[:, self.sl[0]], hi[:, self.sl[0]] = self.z0
        split = np.zeros((1, N), np.int8)
        rel = self.root_bounds(lo, hi, split)
        if rel is None:
            return BaBVerdict.TIMEOUT, time.perf_counter() - t0
        alpha = np.repeat(rel["a0"][:, None, :], R, axis=1)
        beta = np.zeros((1, R, N))
        bound, tape, Lu = self.final(rel, alpha, beta, self.root_iters)
        if self.extra_bound is not None:
            bound = np.maximum(bound, self.extra_bound(split))
        self.root_bound = bound[0].copy()
        done = bound > 0
        Q = dict(lo=lo, hi=hi, split=split, alpha=alpha, beta=beta, done=done, bound=bound)
        # the root itself may be a leaf / verified
        status = self._process(Q, rel, tape, Lu, bound, t0)
        pending = status
        while pending is not None and len(pending["lo"]):
            if self.counterexample is not None:
                return BaBVerdict.VIOLATED, time.perf_counter() - t0
            if self._deadline is not None and time.perf_counter() > self._deadline:
                return BaBVerdict.TIMEOUT, time.perf_counter() - t0
            # take the last `batch` nodes (DFS-like, bounded memory)
            n = len(pending["lo"])
            take = slice(max(0, n - batch), n)
            P = {k: v[take] for k, v in pending.items()}
            pending = {k: v[:take.start] for k, v in pending.items()}
            children = self._branch(P)
            rel = self.intermediate(children["lo"], children["hi"], children["split"],
                                    children.pop("kmin"), opt_iters=self.int_iters,
                                    use_beta=True)
            bound, tape, Lu = self.final(rel, children["alpha"], children["beta"], self.iters)
            if self.extra_bound is not None:
                bound = np.maximum(bound, self.extra_bound(children["split"]))
            children["bound"] = bound
            children["done"] = children["done"] | (bound > 0)
            new = self._process(children, rel, tape, Lu, bound, t0)
            self.stats["batches"] += 1
            if new is not None and len(new["lo"]):
                pending = {k: np.concatenate([pending[k], new[k]]) for k in pending}
        if self.counterexample is not None:
            return BaBVerdict.VIOLATED, time.perf_counter() - t0
        return (BaBVerdict.UNKNOWN if self.unknown else BaBVerdict.HOLDS), time.perf_counter() - t0

    unknown = False
    attack = True
    #: ``bound(split)``: other sound lower bounds of the rows per node (``(B, R)``), each
    #: node keeping the better (:func:`_pair_bound`); None: none
    extra_bound = None

    def root_bounds(self, lo, hi, split):
        """Root intermediate bounds, alpha-CROWN layer by layer (None past the deadline)."""
        for k in range(1, self.L):
            if self._deadline is not None and time.perf_counter() > self._deadline:
                return None
            self.intermediate(lo, hi, split, k, opt_iters=self.root_iters, kend=k + 1, root=True)
        return self.relax(lo, hi)

    def _branch(self, P):
        """Two children per node of P, split on the neuron chosen at bounding time."""
        B = len(P["lo"])
        j = P["choice"]
        C = {k: np.concatenate([v, v]) for k, v in P.items() if k != "choice"}
        idx = np.arange(2 * B)
        jj = np.concatenate([j, j])
        C["split"][idx, jj] = np.concatenate([np.ones(B, np.int8), -np.ones(B, np.int8)])
        self._clamp(C["lo"], C["hi"], C["split"])
        C["kmin"] = int(self.layer_of[j].min()) + 1
        return C

    def _process(self, Q, rel, tape, Lu, bound, t0):
        """Classify bounded nodes: verified, empty, leaf (LP), or pending (with a choice)."""
        B = len(Q["lo"])
        self.stats["nodes"] += B
        if self.on_bounded is not None:
            self.on_bounded(Q, bound)
        done = Q["done"]
        worst = self.worst_rows(done, bound)
        idx = np.arange(B)
        if self.attack:  # cheap attack: the box corner minimising the worst row's linear bound
            Lw = Lu[idx, worst]  # on u: its signs pick the box corner
            X = np.where(Lw >= 0, self.xl, self.xu)
            bad = self.violated(self.net.forward(X) @ self.C.T)
            if bad.any():
                self.counterexample = X[np.argmax(bad)]
                return None
        empty = (Q["lo"] > Q["hi"] + EMPTY_TOL).any(1)
        self.stats["empty"] += int(empty.sum())
        alive = ~self.proven(done) & ~empty
        free = rel["unst"] & (Q["split"] == 0)
        leaf = alive & ~free.any(1)
        for i in np.flatnonzero(leaf):
            self.stats["leaves"] += 1
            r_rel = {k: v[i] for k, v in rel.items()}
            ok, xc = self.leaf_lp(r_rel, [g for g in self.groups if not done[i, g].any()])
            if self.on_leaf is not None:
                self.on_leaf(rel["act"][i], ok)
            if not ok:
                if xc is not None and self.check_point(xc)[0]:
                    self.counterexample = xc
                    return None
                self.unknown = True  # LP says violated but the point does not confirm
        keep = alive & ~leaf
        depth = (Q["split"] != 0).sum(1)
        self.stats["proven_share"] += float(np.ldexp(1.0, -depth[~keep]).sum())
        if not keep.any():
            return {k: v[:0] for k, v in Q.items() if k != "choice"} | {"choice": np.zeros(0, int)}
        choice = self.choose(Q["lo"], Q["hi"], Q["split"], rel, tape, worst)
        out = {k: v[keep] for k, v in Q.items()}
        out["choice"] = choice[keep]
        return out
