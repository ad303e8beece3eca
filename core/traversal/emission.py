"""Emission: the polytopes a traversal hands out, their vertices, and LPs in the cell held.

:class:`Emitter` turns a last-level cell into a :class:`~polytrav.model.polytope.Polytope`
(counted against ``max_polytopes``), computes cells' vertices when they are expected to save
LPs (low dimension) or the caller asked for them, and, while the caller holds the polytope
just emitted, solves ``max g·u`` over it in the traversal's warm LP model
(:meth:`Emitter.maximize_in_cell`), accepting the maximiser only if a forward pass gives it
the polytope's code.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from polytrav.model.network import Network
from polytrav.model.polytope import Polytope
from polytrav.solve.chebyshev import ChebyshevModel
from polytrav.traversal.frontier import GuideRules
from polytrav.traversal.status import RunEnded, Strategy, TraversalStats, TraversalStatus
from polytrav.vocabulary.results import SolveResult, Status
from polytrav.vocabulary.tolerances import CELL_CODE_RTOL, VERTEX_CHECK_TOL, VERTEX_MAX_DIM, VERTEX_MIN_RADIUS

__all__ = ["Emitter", "VERTEX_MIN_FLIPS", "holds_code"]

#: At the last level, a cell's vertices are computed when at least this many flips remain to
#: be checked (at deeper levels always: they also screen the next level's hyperplanes).
VERTEX_MIN_FLIPS = 1


class Emitter:
    """Makes, counts and hands out polytopes; computes cells' vertices."""

    def __init__(self, net: Network, region, frame, strategy: Strategy, stats: TraversalStats,
                 guidance: GuideRules, *, max_polytopes=None, vertices: bool = False):
        self.net, self.region, self.frame, self.strategy = net, region, frame, strategy
        self.stats, self.guidance = stats, guidance
        self.max_polytopes = max_polytopes
        self.want_vertices = bool(vertices)
        self._emitted = None  # (index, model, top block signs) of the polytope the caller holds

    def use_vertices(self, n_flips: int, last: bool) -> bool:
        """Whether computing a cell's vertices is expected to save LPs."""
        if self.strategy.screen != "interval" or self.frame.dim > VERTEX_MAX_DIM:
            return False
        if not last or self.want_vertices:
            return True  # they also screen the next level's hyperplanes / the caller wants them
        # one qhull call costs about one warm LP (0.1-0.3 ms in <= 6 dimensions) and rules
        # out most flips; a count, not measured times, so that runs are repeatable
        return n_flips >= VERTEX_MIN_FLIPS

    def vertices(self, model: ChebyshevModel, signs: np.ndarray, u: np.ndarray,
                 t: float) -> np.ndarray | None:
        """Vertices of the cell's polyhedral outer hull (``None`` if qhull is not sure)."""
        from scipy.spatial import HalfspaceIntersection, QhullError

        if t < VERTEX_MIN_RADIUS:
            return None
        A, b = model.halfspaces(signs)
        try:
            V = HalfspaceIntersection(np.c_[A, -b], u).intersections
        except (QhullError, ValueError):
            return None
        self.stats.vertex_sets += 1
        if not np.isfinite(V).all() or (A @ V.T - b[:, None]).max() > VERTEX_CHECK_TOL:
            return None
        return V

    def polytope(self, code: tuple, u: np.ndarray, t: float, parent: int | None,
                 V: np.ndarray | None) -> Polytope:
        """The next emitted polytope (counted; the polytope budget is checked first)."""
        st = self.stats
        if self.max_polytopes is not None and st.polytopes >= self.max_polytopes:
            raise RunEnded(TraversalStatus.POLYTOPE_LIMIT)
        st.polytopes += 1
        exact_V = V if not (self.frame.l1_balls or self.frame.l2_balls) else None
        return Polytope(code, self.frame.to_x(u), t, st.polytopes - 1, parent, self.net,
                        self.region, exact_V)

    def emit(self, polytope: Polytope, model: ChebyshevModel,
             top_signs: np.ndarray) -> Iterator[Polytope]:
        """Yield ``polytope``; while the caller holds it, :meth:`maximize_in_cell` may use
        ``model`` (its top block then gets ``top_signs``, the polytope's)."""
        self._emitted = (polytope.index, model, top_signs)
        try:
            yield polytope
        finally:
            self._emitted = None

    def maximize_in_cell(self, polytope: Polytope, g: np.ndarray) -> SolveResult | None:
        """``max g·u`` over ``polytope`` ∩ region (frame coordinates), in the traversal's warm model.

        Only for the polytope just emitted, and only while the model holds exactly its levels:
        its cell (at ``t = 0``, :meth:`ChebyshevModel.maximize`) is the polytope minus the rows
        the screen proved not to cut a level's piece. The maximiser is accepted only if
        a forward pass gives it the polytope's activation code (within :data:`CELL_CODE_RTOL`),
        so the optimum is the polytope's own LP optimum. ``None`` otherwise (another polytope
        emitted since, an L2-ball region whose rows here are cutting planes, a restricted
        region, a solve that is not optimal, or the check failed): solve the LP elsewhere.
        """
        emitted = self._emitted
        if (emitted is None or emitted[0] != polytope.index or self.frame.l2_balls
                or self.guidance.version):
            return None
        _, model, top_signs = emitted
        model.set_signs(top_signs)
        res = model.maximize(g)
        if res.status is not Status.OPTIMAL or not holds_code(
                self.net, polytope.code, self.frame.to_x(res.x)):
            return None
        return res


def holds_code(net: Network, code: tuple, x: np.ndarray) -> bool:
    """Whether ``x``'s pre-activations have the signs of ``code``, each up to
    :data:`CELL_CODE_RTOL` times its floating-point scale ``|W| |z| + |b|``."""
    z = x
    for (W, b), on in zip(zip(net.weights[:-1], net.biases[:-1]), code):
        h = W @ z + b
        tol = CELL_CODE_RTOL * (np.abs(W) @ np.abs(z) + np.abs(b))
        if np.any(np.where(on, h < -tol, h > tol)):
            return False
        z = np.maximum(h, 0.0)
    return True
