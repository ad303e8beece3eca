"""Screening: which hyperplanes of a layer can cut a piece, grouped and ready for the LP.

Before a level is searched inside a piece, :class:`Screen` pulls the layer's hyperplanes back
to frame coordinates and keeps only those that cut the piece's interior: a closed-form test
against the frame box, the piece's inscribed ball and vertices, then one LP per survivor
(the ``interval`` screen), or the paper's two LPs per hyperplane (the ``lp`` screen).
Identical hyperplanes (duplicate neurons, up to sign, or closer than a sliver) are grouped
so that they flip together, and neurons constant on the piece are never flipped.
:class:`LevelRows` is the result: the rows the level pushes onto the Chebyshev model and
the mapping between the representatives' signs and the layer's code.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from polytrav.model.geometry import ZERO_ROW_TOL
from polytrav.solve.chebyshev import ChebyshevModel
from polytrav.traversal.cell_solver import CellSolver
from polytrav.traversal.piece import Enclosure
from polytrav.traversal.status import Strategy, TraversalStats
from polytrav.vocabulary.tolerances import DUPLICATE_TOL, SLIVER_TOL, VERTEX_MARGIN

__all__ = ["LevelRows", "Screen"]


@dataclass
class LevelRows:
    """One level's rows on a piece: the LP rows (candidates, then extras) and bit mapping."""

    H: np.ndarray  # pre-activation normals of the layer in u (all neurons)
    beta: np.ndarray
    cand_idx: np.ndarray  # neuron of each group representative (the LP's first rows)
    fixed_bits: np.ndarray  # bits of the neurons that are not flipped
    A_lp: np.ndarray
    b_lp: np.ndarray
    extra_signs: np.ndarray  # signs of the non-candidate rows kept in the LP ("all" rows)
    member: np.ndarray  # candidate neurons ...
    member_rep: np.ndarray  # ... their representative ...
    member_neg: np.ndarray  # ... and whether they are its opposite

    def full_bits(self, signs: np.ndarray) -> np.ndarray:
        """The layer's code from the representatives' signs."""
        bits = self.fixed_bits.copy()
        bits[self.member] = signs[self.member_rep] ^ self.member_neg
        return bits

    def lp_signs(self, signs: np.ndarray) -> np.ndarray:
        """Signs of every LP row from the representatives' signs."""
        return np.concatenate([signs, self.extra_signs])

    def signs_of(self, bits: np.ndarray) -> np.ndarray:
        """The representatives' signs in the layer's code ``bits``."""
        return np.asarray(bits, bool)[self.cand_idx]


class Screen:
    """Screens and groups a layer's hyperplanes on a piece (see the module docstring)."""

    def __init__(self, net, frame, strategy: Strategy, cells: CellSolver, stats: TraversalStats):
        self.net, self.frame, self.strategy = net, frame, strategy
        self.cells, self.stats = cells, stats
        #: ``misses(A, b) -> (to_on, to_off) | None``: the guide's balls (set by the engine).
        self.misses = None

    def level_rows(self, model: ChebyshevModel, piece: Enclosure) -> LevelRows:
        """Layer ``piece.level``'s hyperplanes on ``piece``: screened, grouped, ready to push."""
        k, Mt, mt = piece.level, piece.M, piece.m
        W, bias = self.net.weights[k], self.net.biases[k]
        H = self.frame.pull(W) if Mt is None else W @ Mt  # None: the frame itself (level 1)
        beta = W @ mt + bias
        rows = _classify(H, beta)
        cand = self.cuts(rows, model, piece)
        reps, members = _group_duplicates(rows.A[cand], rows.beta[cand])
        cand_idx = np.flatnonzero(cand)[reps]
        # fixed bits: non-candidates from the piece (constant sign there), zero rows from beta
        fixed_bits = (H @ piece.u + beta) >= 0.0
        fixed_bits[rows.zero] = beta[rows.zero] >= 0.0
        extra = np.flatnonzero(~cand & ~rows.zero) if self.strategy.rows == "all" else np.zeros(0, int)
        self.stats.candidates += int(cand.sum())
        # every candidate neuron takes its group representative's bit (negated if opposite)
        ci = np.flatnonzero(cand)
        return LevelRows(
            H=H, beta=beta, cand_idx=cand_idx, fixed_bits=fixed_bits,
            A_lp=np.vstack([rows.A[cand_idx], rows.A[extra]]),
            b_lp=np.concatenate([rows.beta[cand_idx], rows.beta[extra]]),
            extra_signs=fixed_bits[extra],
            member=np.array([ci[j] for mem in members for j, _ in mem], int),
            member_rep=np.array([g for g, mem in enumerate(members) for _ in mem], int),
            member_neg=np.array([o < 0 for mem in members for _, o in mem], bool),
        )

    def cuts(self, rows: "_Rows", model: ChebyshevModel, piece: Enclosure) -> np.ndarray:
        """Boolean mask of the hyperplanes that cut the interior of ``piece`` (the current one).

        ``interval``: the closed-form test against the frame box ``[-1, 1]^d`` (exact for the
        first level of a box region), then, for deeper levels, a hyperplane passing through
        the piece's inscribed ball cuts it, the piece's vertices (when known) decide the rest
        up to a margin, and any other survivor gets one LP: does the piece extend to the side
        of the hyperplane its centre is not on? Unless that side misses every ball of a
        guide's restriction (``misses``, :meth:`GuideRules.misses`): the row is then kept
        without an LP, since a flip into that side is skipped anyway (a kept row that does
        not cut only adds a row to the level's LP). ``lp``: the paper's Algorithm 2, two LPs
        per hyperplane, no closed-form tests.
        """
        k, piece_u, piece_t, piece_V = piece.level, piece.u, piece.t, piece.V
        l1 = np.abs(rows.H).sum(axis=1)
        maybe = ~rows.zero & (rows.beta_raw - l1 < 0) & (rows.beta_raw + l1 > 0)
        if self.strategy.screen == "interval":
            if k == 0 and self.frame.is_box:
                return maybe
            value = rows.A @ piece_u + rows.beta
            sure = maybe & (np.abs(value) < piece_t)
            if piece_V is not None:
                vals = rows.A @ piece_V.T + rows.beta[:, None]
                lo, hi = vals.min(axis=1), vals.max(axis=1)
                maybe &= (lo < VERTEX_MARGIN) & (hi > -VERTEX_MARGIN)
                sure |= maybe & (lo < -VERTEX_MARGIN) & (hi > VERTEX_MARGIN)
            idx = np.flatnonzero(maybe & ~sure)
            far = self.misses(rows.A[idx], rows.beta[idx]) if self.misses and idx.size else None
            if far is not None:  # the side to test misses every ball: kept, no LP
                skip = np.where(value[idx] < 0, far[0], far[1])
                sure[idx[skip]] = True
                self.stats.screen_far += int(skip.sum())
                idx = idx[~skip]
            sides = [(i, [value[i] < 0]) for i in idx]
        else:
            sure = np.zeros_like(maybe)
            sides = [(i, [True, False]) for i in np.flatnonzero(~rows.zero)]
        out = sure.copy()
        for i, wanted in sides:
            cuts = True
            for side in wanted:
                model.push(rows.A[i : i + 1], rows.beta[i : i + 1], np.array([side]))
                cell = self.cells.solve(model, ("screen", k, int(i)))
                model.pop()
                self.stats.screen_lps += 1
                if cell is not None and cell[0] <= SLIVER_TOL:
                    cuts = False  # undecided LPs keep the row: a flip LP will decide
                    break
            out[i] = cuts
        return out


@dataclass
class _Rows:
    H: np.ndarray  # raw pre-activation normals in u
    beta_raw: np.ndarray
    A: np.ndarray  # unit normals (zero rows left at 0)
    beta: np.ndarray
    zero: np.ndarray  # constant on the piece


def _classify(H: np.ndarray, beta: np.ndarray) -> _Rows:
    norms = np.linalg.norm(H, axis=1)
    scale = max(float(norms.max(initial=0.0)), 1e-300)
    zero = norms <= ZERO_ROW_TOL * scale
    safe = np.where(zero, 1.0, norms)
    return _Rows(H, beta, H / safe[:, None], beta / safe, zero)


def _group_duplicates(A: np.ndarray, beta: np.ndarray) -> tuple[np.ndarray, list]:
    """Representatives of identical hyperplanes and, per representative, ``(row, ±1)`` members
    (unit rows in frame coordinates: equal within DUPLICATE_TOL, or within a sliver)."""
    n = A.shape[0]
    if n == 0:
        return np.zeros(0, int), []
    G = A @ A.T
    near = np.abs(G) > 1.0 - DUPLICATE_TOL
    if np.count_nonzero(near) == n and near.diagonal().all():  # no two rows near-parallel
        return np.arange(n), [[(i, 1)] for i in range(n)]
    owner = -np.ones(n, int)
    reps, members = [], []
    for i in range(n):
        if owner[i] >= 0:
            continue
        owner[i] = len(reps)
        group = [(i, 1)]
        for j in np.flatnonzero(near[i] & (owner < 0)):
            orient = 1 if G[i, j] > 0 else -1
            dA, db = np.abs(A[j] - orient * A[i]), abs(beta[j] - orient * beta[i])
            # equal rows, or rows whose values differ by at most 2 SLIVER_TOL on the frame box:
            # no cell between them is ever crossed, so apart they would wall off what lies
            # beyond (a slab thinner than a sliver); together they are crossed as one
            if (dA.max() <= DUPLICATE_TOL and db <= DUPLICATE_TOL) or dA.sum() + db <= 2 * SLIVER_TOL:
                owner[j] = len(reps)
                group.append((int(j), orient))
        reps.append(i)
        members.append(group)
    return np.array(reps, int), members
