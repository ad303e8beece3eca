"""Sound bounds on the difference ``g(x) - f(x)`` of two networks over boxes and traversal
pieces (ReluDiff / NeuroDiff).

Bounding ``f`` and ``g`` separately (CROWN on the block-diagonal stack, today's path) loses
the correlation of the two: when ``g`` is a pruned, perturbed or quantised copy of ``f``, the
bound on ``g_j - f_j`` is about as wide as the outputs' own ranges, while the difference is
small. For networks of the same depth on the same input ``x`` (their hidden neurons matched
layer by layer, a removed neuron meeting a zero neuron: :func:`align`), the difference is propagated layer by layer instead (Paulsen, Wang et al., ReluDiff,
ICSE 2020, and NeuroDiff, ASE 2020), as one back-substitution (:mod:`polytrav.bounds.crown`'s):

* the *joint system* has, per hidden layer ``k``, the pre-activations ``z_k`` of ``f`` and
  their differences ``D_k = z'_k - z_k`` to ``g``'s (``z'``), and as post-activations
  ``a_k = relu(z_k)`` and ``d_k = relu(z'_k) - relu(z_k)``; its affine maps are exact:
  ``z_{k+1} = W a_k + b`` and ``D_{k+1} = (W' - W) a_k + W' d_k + (b' - b)``
  (``W, b``: ``f``'s layer; ``W', b'``: ``g``'s), and at the input ``D_0 = (W'_0 - W_0) x +
  (b'_0 - b_0)``;
* ``a_k`` is relaxed as CROWN does (bounds of ``z_k`` from ``f``'s own CROWN bounds);
* ``d_k`` is relaxed by lines in ``D_k`` alone: ``|d| <= |D|`` with the sign of ``D``
  (ReLU is monotone and 1-Lipschitz), so ``min(D, 0) <= d <= max(D, 0)``; where ``f``'s
  neuron is active ``d >= D``, inactive ``d >= 0``; where ``g``'s is active ``d <= D``,
  inactive ``d <= 0``. A neuron stable in both networks is thus exact (``d = D`` or
  ``d = 0``, or ``D <= d <= 0`` / ``0 <= d <= D`` where the phases differ); otherwise
  the concave ``min(D, 0)`` is bounded below and the convex ``max(D, 0)`` above by their
  chords over ``[lo(D), hi(D)]``, the tightest lines in ``D`` there;
* better lines read ``z_k`` as well (NeuroDiff's idea of relaxing in both variables):
  ``relu(z') >= lam z'`` and ``relu(z) <= t z + tau`` (each network's ReLU lines) give
  ``d >= lam (z + D) - t z - tau``, and ``relu(z') <= s z' + sigma``, ``relu(z) >= mu z``
  give ``d <= s (z + D) + sigma - mu z`` (``lam, mu`` in ``{0, 1}``); per neuron the line of
  best extreme over the box of ``(z, D)`` is kept (:func:`relax_difference_paired`), and where
  both phases are known the exact ``d = -z`` or ``d = z + D`` (phases differing). These
  lines are :class:`~polytrav.bounds.crown.LinearBounds`' ``paired`` slopes. On ACAS Xu
  against perturbed or pruned copies, over sub-boxes of 1/16 of property 3's box in each
  input, the bound's median ratio to the sampled largest difference fell from 1.44-1.51
  to 1.22 (its 90th percentile from 4.6-5.1 to 2.3-2.4; choosing by the lines' means
  instead of their extremes gave 1.23-1.36);
* the bounds of ``D_k`` come from back-substituting its rows through the joint system
  (the intermediate bounds of the difference, NeuroDiff's symbolic intervals), met with
  ``lo(z') - hi(z) <= D <= hi(z') - lo(z)``; ``g``'s bounds are met with ``z + D``.

An output row ``c_f . y_f + c_g . y_g`` (``y``: ``f``'s outputs, ``y'``: ``g``'s) is
``(c_f + c_g) . y_f + c_g . (y' - y)``: a row of the joint system's outputs
``(y, y' - y)``, so any rows over the stacked outputs are bounded, ``c . (g - f)``
included. :meth:`NetworkPair.box_output_bounds` also runs today's stacked CROWN (which
shares its intermediate bounds) and keeps, per box and row, the better of the two affine
lower bounds (any of them is sound). On a traversal piece of the stack (its first hidden
layers fixed), :meth:`NetworkPair.piece_output_bounds` starts the joint system at the first
free layer, from the piece's affine input, and concretises over the piece (its vertices,
or LP-refined first rows); :func:`polytrav.bounds.dnf.dnf_bound` uses it for the stack of a
two-network query (:func:`stacked_pair`). The lower intercepts of the ``d`` relaxation are why
:class:`~polytrav.bounds.crown.LinearBounds` has ``lower_intercept``; slopes are not
optimised (α-CROWN) here.

Networks of different depths are bounded through their stack with the input shared
(:meth:`~polytrav.Network.stack` composed with ``x -> (x, x)``), i.e. today's path;
:func:`difference_bounds` says which path ran. Like every bound here, a value proves a
strict inequality only after :func:`~polytrav.bounds.crown.rounded_down`, which
:func:`difference_bounds` applies.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from polytrav.bounds.crown import (Concretizer, LinearBounds, backsubstitute, box_layer_bounds,
                                   layer_bounds, relax, rounded_down, rows_of)
from polytrav.model.network import Network
from polytrav.vocabulary.errors import NetworkError, RegionError

__all__ = ["DifferenceBounds", "NetworkPair", "difference_bounds", "relax_difference",
           "relax_difference_paired", "same_depth", "align", "stacked_pair"]

#: The paths :func:`difference_bounds` may take.
PATHS = ("best", "difference", "stacked")


def same_depth(f: Network, g: Network) -> bool:
    """Whether ``f`` and ``g`` have as many hidden layers, at least one (their neurons are
    then matched layer by layer: :func:`align`)."""
    return f.n_hidden_layers == g.n_hidden_layers > 0


def relax_difference(f_active, f_inactive, g_active, g_inactive, lo, hi):
    """Lines ``ls D + li <= relu(z') - relu(z) <= us D + ui`` in ``D = z' - z`` (module
    doc), from the phases each network's bounds prove and the bounds ``[lo, hi]`` of ``D``.
    Returns ``(ls, li, us, ui)``, arrays of the arguments' shape."""
    straddles = (lo < 0.0) & (hi > 0.0)
    width = np.where(straddles, hi - lo, 1.0)
    # min(D, 0) from below: D where D <= 0 throughout, 0 where D >= 0, else the chord
    chord_low = np.where(straddles, -lo / width, np.where(hi <= 0.0, 1.0, 0.0))
    ls = np.where(f_active, 1.0, np.where(f_inactive, 0.0, chord_low))
    li = np.where(f_active | f_inactive | ~straddles, 0.0, -chord_low * hi)
    # max(D, 0) from above: 0 where D <= 0 throughout, D where D >= 0, else the chord
    chord_up = np.where(straddles, hi / width, np.where(lo >= 0.0, 1.0, 0.0))
    us = np.where(g_active, 1.0, np.where(g_inactive, 0.0, chord_up))
    ui = np.where(g_active | g_inactive | ~straddles, 0.0, -chord_up * lo)
    return ls, li, us, ui


def relax_difference_paired(lf, uf, lg, ug, ld, ud, real):
    """Lines ``ls D + lp z + li <= relu(z + D) - relu(z) <= us D + up z + ui`` (module doc),
    from the bounds of ``z`` (``[lf, uf]``, ``f``'s), ``z' = z + D`` (``[lg, ug]``) and ``D``
    (``[ld, ud]``); ``real``: where ``z``'s bounds are numbers (elsewhere only its sign is
    known). Per neuron, the best of :func:`relax_difference`'s lines in ``D`` and those from
    each network's ReLU lines, ``relu(z') >= lam z'`` and ``relu(z) <= t z + tau`` below,
    ``relu(z') <= s z' + sigma`` and ``relu(z) >= mu z`` above (``lam, mu`` in ``{0, 1}``),
    by their extremes over the box of ``(z, D)`` (the upper line of least maximum, the lower
    line of greatest minimum); where both phases are known, the exact line.
    Returns ``(ls, lp, li, us, up, ui)``."""
    ls, li, us, ui = relax_difference(lf >= 0.0, uf <= 0.0, lg >= 0.0, ug <= 0.0, ld, ud)
    lp, up = np.zeros_like(ls), np.zeros_like(us)
    _, t, tau = relax(lf, uf)  # relu(z) <= t z + tau
    _, s, sigma = relax(lg, ug)  # relu(z') <= s z' + sigma
    zc, dc = np.where(real, (lf + uf) / 2, 0.0), (ld + ud) / 2
    zr, dr = np.where(real, (uf - lf) / 2, 0.0), (ud - ld) / 2
    # the lines' extremes over the box
    low, high = ls * dc + li - np.abs(ls) * dr, us * dc + ui + np.abs(us) * dr
    for k in (0.0, 1.0):
        # relu(z') - relu(z) >= k (z + D) - t z - tau
        least = k * dc + (k - t) * zc - tau - np.abs(k) * dr - np.abs(k - t) * zr
        take = real & (least > low)
        ls, lp, li = np.where(take, k, ls), np.where(take, k - t, lp), np.where(take, -tau, li)
        low = np.where(take, least, low)
        # relu(z') - relu(z) <= s (z + D) + sigma - k z
        most = s * dc + (s - k) * zc + sigma + np.abs(s) * dr + np.abs(s - k) * zr
        take = real & (most < high)
        us, up, ui = np.where(take, s, us), np.where(take, s - k, up), np.where(take, sigma, ui)
        high = np.where(take, most, high)
    exact = ((lf >= 0.0) | (uf <= 0.0)) & ((lg >= 0.0) | (ug <= 0.0))  # s z' - t z
    ls, lp, li = np.where(exact, s, ls), np.where(exact, s - t, lp), np.where(exact, 0.0, li)
    us, up, ui = np.where(exact, s, us), np.where(exact, s - t, up), np.where(exact, 0.0, ui)
    return ls, lp, li, us, up, ui


@dataclass(frozen=True)
class DifferenceBounds:
    """Bounds ``lower <= C (g(x) - f(x)) <= upper`` over each box (``(boxes, rows)``, or
    ``(rows,)`` for one box), rounding allowance applied; ``path``: ``"difference"`` (the
    difference propagated, with today's bound kept per row where better), or
    ``"stacked"`` (today's: the two networks' stack with the input shared)."""

    lower: np.ndarray
    upper: np.ndarray
    path: str


class NetworkPair:
    """Two networks of the same depth on the same input, as the layers ``(W, b)`` of each
    (``f_layers``, ``g_layers``), bounded together over batches of boxes.

    Their hidden neurons are matched layer by layer (:func:`align`: ``g``'s neurons to
    ``f``'s with the closest incoming weights, the columns already matched; a pruned neuron
    meets a zero neuron), so that a copy with neurons removed or reordered still pairs
    each neuron with its counterpart. ``origin``: per hidden layer, the positions of ``f``'s
    and ``g``'s neurons in that layer of a network that holds both (:meth:`in_stack`), whose
    hidden layers have ``widths`` neurons (default: the plain stack, ``f``'s neurons then
    ``g``'s); ``index`` and ``local`` map the pair's neurons to the holder's, for its phases
    and its traversal pieces.
    """

    def __init__(self, f_layers, g_layers, origin=None, widths=None):
        f_layers = [(np.asarray(W, float), np.asarray(b, float)) for W, b in f_layers]
        g_layers = [(np.asarray(W, float), np.asarray(b, float)) for W, b in g_layers]
        if len(f_layers) != len(g_layers) or f_layers[0][0].shape[1] != g_layers[0][0].shape[1] \
                or f_layers[-1][0].shape[0] != g_layers[-1][0].shape[0]:
            raise NetworkError("NetworkPair: the networks differ in depth or in their input or "
                               f"output sizes ({[W.shape for W, _ in f_layers]} against "
                               f"{[W.shape for W, _ in g_layers]}); bound networks of "
                               "different depths through their stack (difference_bounds)")
        self.f_layers, self.g_layers, maps = align(f_layers, g_layers)
        if origin is None:  # the plain stack: f's neurons, then g's, per layer
            origin = [(np.arange(W.shape[0]), W.shape[0] + np.arange(V.shape[0]))
                      for (W, _), (V, _) in zip(f_layers[:-1], g_layers[:-1])]
            widths = [W.shape[0] + V.shape[0] for (W, _), (V, _) in zip(f_layers[:-1],
                                                                      g_layers[:-1])]
        #: per hidden layer: the holder's neuron in that layer at each of the pair's matched
        #: positions, ``(f's, g's)`` (-1: a zero neuron)
        self.local = [(np.where(fm >= 0, F[np.maximum(fm, 0)], -1),
                       np.where(gm >= 0, G[np.maximum(gm, 0)], -1))
                      for (F, G), (fm, gm) in zip(origin, maps)]
        # per hidden layer of the pair's stack: the neuron's position in the holder, or -1
        starts = np.cumsum([0] + list(widths[:-1]))
        self.index = [np.where(np.concatenate(loc) >= 0, start + np.concatenate(loc), -1)
                      for start, loc in zip(starts, self.local)]
        #: the positions of ``f``'s and ``g``'s hidden neurons in the pair's stack
        sizes = [W.shape[0] for W, _ in self.f_layers[:-1]]
        starts = np.cumsum([0] + [2 * n for n in sizes[:-1]])
        self.halves = tuple(np.concatenate([start + side * n + np.arange(n)
                                            for n, start in zip(sizes, starts)])
                            for side in (0, 1))
        self.stacked = [_stack_layer(F, G, k == 0)
                        for k, (F, G) in enumerate(zip(self.f_layers, self.g_layers))]
        self.joint = [_joint_layer(F, G, k == 0)
                      for k, (F, G) in enumerate(zip(self.f_layers, self.g_layers))]

    @classmethod
    def of(cls, f: Network, g: Network) -> "NetworkPair":
        """The pair of two networks of the same depth (matched once per pair of networks)."""
        known = _PAIRS_OF.setdefault(f, weakref.WeakKeyDictionary())
        if g not in known:
            known[g] = cls(zip(f.weights, f.biases), zip(g.weights, g.biases))
        return known[g]

    @classmethod
    def in_stack(cls, network: Network) -> "NetworkPair | None":
        """The pair whose stack with the input shared ``network`` is, if it is one: the
        first half of its outputs depends on one set of neurons, the second half on another,
        disjoint from it, in every layer (the shape of a two-network VNN-LIB query:
        ``Network.stack`` of equal depths, the input equalities eliminated; neurons that
        reach no output are left out). None otherwise, and for a network without hidden
        layers."""
        Ws, bs = network.weights, network.biases
        if len(Ws) < 2 or Ws[-1].shape[0] % 2:
            return None
        half = Ws[-1].shape[0] // 2
        label = np.repeat([1, 2], half)  # 1: f's, 2: g's, 0: reaches no output
        labels = [label]
        for W in reversed(Ws[1:]):
            uses_f, uses_g = (W[label == 1] != 0).any(axis=0), (W[label == 2] != 0).any(axis=0)
            if (uses_f & uses_g).any():
                return None
            label = np.where(uses_f, 1, np.where(uses_g, 2, 0))
            labels.insert(0, label)
        F, G = [np.flatnonzero(v == 1) for v in labels], [np.flatnonzero(v == 2) for v in labels]
        if any(not len(part) for part in F[:-1] + G[:-1]):
            return None
        f_layers = [(Ws[0][F[0]], bs[0][F[0]])] + [
            (Ws[k][np.ix_(F[k], F[k - 1])], bs[k][F[k]]) for k in range(1, len(Ws))]
        g_layers = [(Ws[0][G[0]], bs[0][G[0]])] + [
            (Ws[k][np.ix_(G[k], G[k - 1])], bs[k][G[k]]) for k in range(1, len(Ws))]
        return cls(f_layers, g_layers, list(zip(F[:-1], G[:-1])), [W.shape[0] for W in Ws[:-1]])

    def box_output_bounds(self, mid: np.ndarray, rad: np.ndarray, C: np.ndarray,
                          phases: np.ndarray | None = None, path: str = "best",
                          steps: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Affine lower bounds ``C y >= L[b] u + g[b]`` of rows over the stacked outputs
        ``y = (f(x), g(x))`` on boxes ``x = mid[b] + rad[b] * u`` (as
        :func:`~polytrav.bounds.crown.box_output_bounds` on the stack, whose ``phases``, of
        the stack's neurons, are updated in place the same way, with phases of ``g`` that the
        difference proves). ``path``: ``"best"`` keeps per box and row the better of the
        difference's and the stacked CROWN's bound, ``"difference"`` or ``"stacked"`` one.
        ``steps``: ``f``'s intermediate bounds tightened by that many slope steps per box
        (:func:`~polytrav.bounds.difference_slopes.optimised_layer_bounds`; 0: CROWN's);
        ``g``'s are CROWN's, met with ``z + D`` in the joint system, about as tight where
        ``g`` is close to ``f`` and half the cost."""
        if path not in PATHS:
            raise ValueError(f"NetworkPair.box_output_bounds: path must be one of {PATHS}, "
                             f"got {path!r}")
        C = np.atleast_2d(np.asarray(C, float))
        held = None
        if phases is not None:  # the holder's phases, in the pair's order (padding: unknown)
            held = phases
            where = np.concatenate(self.index)
            phases = np.zeros((held.shape[0], where.shape[0]), held.dtype)
            phases[:, where >= 0] = held[:, where[where >= 0]]
        entry = None if phases is None else phases.copy()
        own = [None if phases is None else phases[:, half] for half in self.halves]
        if steps:  # f's optimised; g's are CROWN's, met with f's and D's in the joint system
            from polytrav.bounds.difference_slopes import optimised_layer_bounds

            f_bounds = optimised_layer_bounds(self.f_layers, mid, rad, own[0], steps)
        else:
            f_bounds = box_layer_bounds(self.f_layers, mid, rad, own[0])
        stack = _side_by_side(f_bounds, box_layer_bounds(self.g_layers, mid, rad, own[1]))
        if phases is not None:  # each network's phases proven, written back
            for half, known in zip(self.halves, own):
                phases[:, half] = known
        W, b = self.stacked[-1]
        L_s, g_s = backsubstitute(C @ W, C @ b, self.stacked, stack, len(self.stacked) - 1,
                                  None, None)
        J0 = self.joint[0][0]
        joint = None if path == "stacked" else self._joint_bounds(
            stack, (J0[None] * rad[:, None, :], mid @ J0.T), Concretizer(mid.shape[1]),
            self.joint, entry, phases)
        if held is not None:
            held[:, where[where >= 0]] = phases[:, where >= 0]
        if path == "stacked":
            return L_s, g_s
        n_out = self.f_layers[-1][0].shape[0]
        Cj = np.hstack([C[:, :n_out] + C[:, n_out:], C[:, n_out:]])  # on (y, y' - y)
        J, c = self.joint[-1]
        L_d, g_d = backsubstitute(Cj @ J, Cj @ c, self.joint, joint, len(self.joint) - 1,
                                  None, None)
        if path == "difference":
            return L_d, g_d
        better = (g_d - np.abs(L_d).sum(-1)) > (g_s - np.abs(L_s).sum(-1))
        return np.where(better[..., None], L_d, L_s), np.where(better, g_d, g_s)

    def piece_output_bounds(self, level: int, M: np.ndarray, m: np.ndarray, C: np.ndarray,
                            conc: Concretizer) -> tuple[np.ndarray, np.ndarray]:
        """Affine lower bounds ``C y >= L u + g`` of rows over the stacked outputs ``y = (f(x),
        g(x))`` on a traversal piece of level ``level`` (:class:`~polytrav.traversal.piece.PieceView`):
        on it the holder's first ``level`` hidden layers are affine and its layer ``level``
        takes ``M u + m`` (the holder's neurons of layer ``level - 1``, or the input at level
        0). The difference is propagated from there (module doc), the concretisation is
        ``conc``'s (the piece's vertices, or the frame box with LP-refined first rows);
        per row the better of this bound and the stack's CROWN bound is kept."""
        C = np.atleast_2d(np.asarray(C, float))
        if level == 0:
            S, s = M, m  # the stack's input: x itself
            F = G = (M, m)
            first = (self.joint[0][0] @ M, self.joint[0][0] @ m)
        else:  # the holder's layer level-1 neurons, in the pair's (matched) order
            F, G = (_select(where, M, m) for where in self.local[level - 1])
            S, s = np.vstack([F[0], G[0]]), np.concatenate([F[1], G[1]])
            J = self.joint[level][0]
            first = (J @ np.vstack([F[0], G[0] - F[0]]), J @ np.concatenate([F[1], G[1] - F[1]]))
        stacked, joint_layers = self.stacked[level:], self.joint[level:]
        own = _side_by_side(layer_bounds(self.f_layers[level:], *F, conc),
                            layer_bounds(self.g_layers[level:], *G, conc))
        W, b = stacked[-1]
        upto = len(stacked) - 1
        L_s, g_s = backsubstitute(C @ W, C @ b, stacked, own, upto, S, s)
        batch = LinearBounds(*[[a[None, None] for a in part] for part in
                               (own.lo, own.hi, own.lower_slope, own.upper_slope,
                                own.upper_intercept)])
        joint = self._joint_bounds(batch, (first[0][None], first[1][None]), conc, joint_layers,
                                   None, None)
        n_out = self.f_layers[-1][0].shape[0]
        Cj = np.hstack([C[:, :n_out] + C[:, n_out:], C[:, n_out:]])
        J, c = joint_layers[-1]
        L_d, g_d = backsubstitute(Cj @ J, Cj @ c, joint_layers, joint, upto, None, None)
        L_d, g_d = L_d[0], g_d[0]
        better = conc.lower(L_d, g_d) > conc.lower(L_s, g_s)
        return np.where(better[:, None], L_d, L_s), np.where(better, g_d, g_s)

    def _joint_bounds(self, stack: LinearBounds, first, conc, joint_layers, entry, phases
                      ) -> LinearBounds:
        """The joint system's bounds and relaxations per hidden layer (module doc), from the
        stack's CROWN bounds ``stack`` (a batch: boxes, or one piece); ``first``: the joint
        system's first map on the batch's coordinates (no bias), ``conc`` their lower bounds
        (a box's or a piece's), ``joint_layers``: the joint system's remaining layers;
        ``entry``: the phases known before those (their bounds are only signs), ``phases``:
        updated with ``g``'s phases proven here."""
        joint = LinearBounds([], [], [], [], [], first=first, lower_intercept=[], paired=[])
        start = 0
        for k, (J, c) in enumerate(joint_layers[:-1]):
            n = J.shape[0] // 2
            lo, hi = stack.lo[k][:, 0], stack.hi[k][:, 0]
            lf, uf, lg, ug = lo[:, :n], hi[:, :n], lo[:, n:], hi[:, n:]
            if k == 0:  # affine on the box or piece: its exact bounds (refined on a piece)
                L, g = first[0][:, n:], first[1][:, n:] + c[n:]
                L, g = np.concatenate([L, -L], 1), np.concatenate([g, -g], 1)
                low = conc.lower(L, g)
                if L.shape[0] == 1:
                    low[0] = conc.refine(L[0], g[0], low[0])
                ld, ud = low[:, :n], -low[:, n:]
                bounded = np.ones(n, bool)
            else:  # D's rows, per box those of the neurons unstable in f or g (else unused)
                bounded = (lf < 0.0) & (uf > 0.0) | (lg < 0.0) & (ug > 0.0)
                ld, ud = np.full(lf.shape, -1.0), np.full(lf.shape, 1.0)  # read by no line
                j, at = rows_of(bounded)
                if j.size:
                    L, g = backsubstitute(np.concatenate([J[n + j], -J[n + j]], -2),
                                          np.concatenate([c[n + j], -c[n + j]], -1),
                                          joint_layers, joint, k, None, None)
                    low = conc.lower(L, g)
                    w = j.shape[-1]
                    ld[at, j], ud[at, j] = low[:, :w], -low[:, w:]
                    ld, ud = np.where(bounded, ld, -1.0), np.where(bounded, ud, 1.0)
            # the networks' own bounds, where they are numbers (not a known phase's sign)
            known = np.zeros((lo.shape[0], 2 * n), bool) if entry is None or k == 0 \
                else entry[:, start:start + 2 * n] != 0
            real_f, real_g = ~known[:, :n] & bounded, ~known[:, n:] & bounded
            both = real_f & real_g
            ld = np.where(both, np.maximum(ld, lg - uf), ld)
            ud = np.where(both, np.minimum(ud, ug - lf), ud)
            ud = np.maximum(ud, ld)
            lg = np.where(real_f & real_g, np.maximum(lg, lf + ld), lg)
            ug = np.where(real_f & real_g, np.minimum(ug, uf + ud), ug)
            ug = np.maximum(ug, lg)
            if phases is not None:
                seen = phases[:, start + n:start + 2 * n]
                seen[...] = np.where(seen != 0, seen, np.where(lg >= 0.0, 1, np.where(
                    ug <= 0.0, -1, 0)))
            ls, lp, li, us, up, ui = relax_difference_paired(lf, uf, lg, ug, ld, ud,
                                                             real_f)
            f_half = slice(0, n)
            joint.lo.append(np.concatenate([lf, ld], -1)[:, None])
            joint.hi.append(np.concatenate([uf, ud], -1)[:, None])
            joint.lower_slope.append(np.concatenate(
                [np.broadcast_to(stack.lower_slope[k][..., f_half], lf[:, None].shape),
                 ls[:, None]], -1))
            joint.upper_slope.append(np.concatenate(
                [np.broadcast_to(stack.upper_slope[k][..., f_half], lf[:, None].shape),
                 us[:, None]], -1))
            joint.upper_intercept.append(np.concatenate(
                [np.broadcast_to(stack.upper_intercept[k][..., f_half], lf[:, None].shape),
                 ui[:, None]], -1))
            joint.lower_intercept.append(np.concatenate(
                [np.zeros_like(lf), li], -1)[:, None])
            joint.paired.append((lp[:, None], up[:, None]))
            start += 2 * n
        return joint


_PAIRS: "weakref.WeakKeyDictionary[Network, NetworkPair | None]" = weakref.WeakKeyDictionary()
_PAIRS_OF: "weakref.WeakKeyDictionary[Network, weakref.WeakKeyDictionary]" = \
    weakref.WeakKeyDictionary()


def stacked_pair(network: Network) -> "NetworkPair | None":
    """:meth:`NetworkPair.in_stack` of ``network``, found once per network (a run's pieces
    all ask)."""
    if network not in _PAIRS:
        _PAIRS[network] = NetworkPair.in_stack(network)
    return _PAIRS[network]


def align(f_layers, g_layers):
    """``g``'s hidden neurons matched to ``f``'s, layer by layer: the assignment of least total
    L1 distance between their incoming weights and biases (the columns matched by the layer
    before; :func:`scipy.optimize.linear_sum_assignment`); the unmatched neurons of the wider
    network meet zero neurons of the other (a zero row, bias and column: the same function).
    Returns the matched layers (equal widths) and per hidden layer ``(fm, gm)``: the neuron
    of ``f``, of ``g``, at each matched position (-1: a zero neuron)."""
    F, G, maps = [], [], []
    fm = gm = None
    for k, ((Wf, bf), (Wg, bg)) in enumerate(zip(f_layers, g_layers)):
        if k:  # the columns: the previous layer's matched positions
            Wf, Wg = _columns(Wf, fm), _columns(Wg, gm)
        if k == len(f_layers) - 1:  # the outputs correspond by position
            F.append((Wf, bf))
            G.append((Wg, bg))
            break
        nf, ng = Wf.shape[0], Wg.shape[0]
        if nf == ng and np.array_equal(Wf != 0, Wg != 0) and np.allclose(Wf, Wg, rtol=0.5, atol=0):
            fm, gm = np.arange(nf), np.arange(ng)  # already in step (a perturbed copy)
        else:  # (scipy only here: its import costs more than a quick query's answer)
            from scipy.optimize import linear_sum_assignment
            from scipy.spatial.distance import cdist

            rows, cols = linear_sum_assignment(cdist(np.column_stack([Wf, bf]),
                                                     np.column_stack([Wg, bg]), "cityblock"))
            n = max(nf, ng)
            fm, gm = np.full(n, -1), np.full(n, -1)
            fm[:nf] = np.arange(nf)
            gm[rows] = cols
            gm[nf:] = np.setdiff1d(np.arange(ng), cols)
        F.append(_rows(Wf, bf, fm))
        G.append(_rows(Wg, bg, gm))
        maps.append((fm, gm))
    return F, G, maps


def _side_by_side(f: LinearBounds, g: LinearBounds) -> LinearBounds:
    """The bounds of the two networks' stack from each network's own: the stack's layers are
    block-diagonal (after a shared first), so CROWN gives the same numbers at a quarter of
    the work."""
    def cat(a, b):
        return None if a is None else [np.concatenate([x, y], -1) for x, y in zip(a, b)]

    first = None if f.first is None else (np.concatenate([f.first[0], g.first[0]], -2),
                                          np.concatenate([f.first[1], g.first[1]], -1))
    return LinearBounds(cat(f.lo, g.lo), cat(f.hi, g.hi), cat(f.lower_slope, g.lower_slope),
                        cat(f.upper_slope, g.upper_slope),
                        cat(f.upper_intercept, g.upper_intercept), first=first,
                        unstable=cat(f.unstable, g.unstable))


def _select(where, M, m):
    """The rows ``where`` of ``M u + m`` (``-1``: a zero row)."""
    keep = where >= 0
    S, s = np.zeros((where.shape[0], M.shape[1])), np.zeros(where.shape[0])
    S[keep], s[keep] = M[where[keep]], m[where[keep]]
    return S, s


def _rows(W, b, where):
    """The rows ``where`` of a layer (``-1``: a zero neuron)."""
    keep = where >= 0
    W2, b2 = np.zeros((where.shape[0], W.shape[1])), np.zeros(where.shape[0])
    W2[keep], b2[keep] = W[where[keep]], b[where[keep]]
    return W2, b2


def _columns(W, where):
    """The columns ``where`` of a matrix (``-1``: a zero column)."""
    keep = where >= 0
    W2 = np.zeros((W.shape[0], where.shape[0]))
    W2[:, keep] = W[:, where[keep]]
    return W2


def _stack_layer(F, G, first: bool):
    """One layer of the two networks' stack with the input shared (first) or block-diagonal."""
    (Wf, bf), (Wg, bg) = F, G
    if first:
        return np.vstack([Wf, Wg]), np.concatenate([bf, bg])
    W = np.zeros((Wf.shape[0] + Wg.shape[0], Wf.shape[1] + Wg.shape[1]))
    W[:Wf.shape[0], :Wf.shape[1]] = Wf
    W[Wf.shape[0]:, Wf.shape[1]:] = Wg
    return W, np.concatenate([bf, bg])


def _joint_layer(F, G, first: bool):
    """One affine map of the joint system: ``(z, D)`` from ``x`` (first) or from ``(a, d)``."""
    (Wf, bf), (Wg, bg) = F, G
    if first:
        return np.vstack([Wf, Wg - Wf]), np.concatenate([bf, bg - bf])
    return np.block([[Wf, np.zeros_like(Wf)], [Wg - Wf, Wg]]), np.concatenate([bf, bg - bf])


def difference_bounds(f: Network, g: Network, lo, hi, C=None, *, path: str = "best"
                      ) -> DifferenceBounds:
    """Sound bounds of ``C (g(x) - f(x))`` over boxes ``lo <= x <= hi``.

    Parameters
    ----------
    f, g : Network
        Two networks with the same input and output sizes. Of the same depth, the
        difference is propagated through both (module doc); otherwise their stack with the
        input shared is bounded by CROWN.
    lo, hi : array_like
        ``(n_inputs,)`` for one box, or ``(boxes, n_inputs)`` for a batch.
    C : array_like, optional
        ``(rows, n_outputs)``: the rows bounded; default the identity (``g_j - f_j`` per
        output).
    path : {"best", "difference", "stacked"}
        ``"best"`` (default): per box and row the better of the difference's and today's
        bound (same depth; else ``"stacked"``); ``"difference"``: the difference's
        alone (same depth only); ``"stacked"``: today's.

    Returns
    -------
    DifferenceBounds
        ``lower``, ``upper`` (rounded outwards by :data:`~polytrav.bounds.crown.BOUND_TOL`)
        and the path that ran.

    Examples
    --------
    >>> f = Network.from_arrays([[[1.0, -1.0], [1.0, 1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
    >>> g = Network.from_arrays([[[1.0, -1.0], [1.0, 1.01]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
    >>> b = difference_bounds(f, g, [0.0, 0.0], [1.0, 1.0])
    >>> b.path, bool(b.lower[0] > -1e-6), bool(b.upper[0] < 0.0101)
    ('difference', True, True)
    """
    if path not in PATHS:
        raise ValueError(f"difference_bounds: path must be one of {PATHS}, got {path!r}")
    if (f.n_inputs, f.n_outputs) != (g.n_inputs, g.n_outputs):
        raise NetworkError(f"difference_bounds: f takes {f.n_inputs} inputs to {f.n_outputs} "
                           f"outputs but g {g.n_inputs} to {g.n_outputs}; compare networks "
                           "of the same input and output sizes")
    one = np.ndim(lo) == 1
    lo, hi = np.atleast_2d(np.asarray(lo, float)), np.atleast_2d(np.asarray(hi, float))
    if lo.shape != hi.shape or lo.shape[1] != f.n_inputs or (lo > hi).any():
        raise RegionError(f"difference_bounds: boxes need lo <= hi of {f.n_inputs} inputs "
                          f"each, got shapes {lo.shape} and {hi.shape}")
    C = np.eye(f.n_outputs) if C is None else np.atleast_2d(np.asarray(C, float))
    rows = np.vstack([-C, C])  # g - f from below, then from above
    stacked_rows = np.hstack([-rows, rows])  # over (y, y')
    mid, rad = (lo + hi) / 2, (hi - lo) / 2
    same = same_depth(f, g)
    if path == "difference" and not same:
        raise NetworkError("difference_bounds: path='difference' needs networks of the same "
                           "depth; use path='best' (the stack is bounded instead)")
    if same and path != "stacked":
        L, g0 = NetworkPair.of(f, g).box_output_bounds(mid, rad, stacked_rows, path=path)
        ran = "difference"
    else:
        from polytrav.bounds.crown import box_output_bounds

        n = f.n_inputs
        shared = Network.stack([f, g]).compose_input(np.vstack([np.eye(n), np.eye(n)]),
                                                     np.zeros(2 * n))
        L, g0 = box_output_bounds(list(zip(shared.weights, shared.biases)), mid, rad,
                                  stacked_rows)
        ran = "stacked"
    low = rounded_down(g0 - np.abs(L).sum(-1), g0)
    r = C.shape[0]
    lower, upper = low[:, r:], -low[:, :r]
    if one:
        lower, upper = lower[0], upper[0]
    return DifferenceBounds(lower, upper, ran)
