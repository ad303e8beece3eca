"""Lower bounds of the distance from ``x0`` to a class, without a solve: over a level-1
piece, a polytope, and a polytope's part of each target class (:class:`DistanceBounds`)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from polytrav.extend import LayerPlanes

if TYPE_CHECKING:
    from polytrav.extend import Frame
    from polytrav import Network
    from polytrav.extend import Polytope
    from polytrav.plugins.counterfactual.problem import Problem

__all__ = ["DistanceBounds", "halfspace_distance"]


def halfspace_distance(G: np.ndarray, g: np.ndarray, x0: np.ndarray, dual: float,
                       unit: np.ndarray | None = None) -> np.ndarray:
    """Distance (in the norm whose dual is ``dual``, of ``(x - x0) / unit``) from ``x0`` to
    each ``{x: G x + g >= 0}``: in the scaled coordinates the rows are ``G unit``."""
    norms = np.linalg.norm(G if unit is None else G * unit, ord=dual, axis=1)
    gap = -(G @ x0 + g)
    dist = np.divide(gap, norms, out=np.zeros_like(gap), where=(gap > 0) & (norms > 0))
    dist[(norms == 0) & (gap > 0)] = np.inf
    return dist


class DistanceBounds:
    """Distances from ``x0`` to the farthest of a set's halfspaces (in the norm ``p`` of
    ``(x - x0) / unit``, so the rows' norms are those of ``W unit``): lower
    bounds of the distance to any point of the set. Pure queries (the per-layer cache of
    :class:`LayerPlanes` aside)."""

    def __init__(self, problem: Problem, network: Network):
        self.problem = problem
        W1, b1 = network.weights[0], network.biases[0]
        self.h1 = W1 @ problem.x0 + b1
        self.n1 = np.linalg.norm(W1 * problem.unit, ord=problem.dual, axis=1)
        self.planes = LayerPlanes(self.plane_gaps)  # see cell

    def plane_gaps(self, W: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A layer's ``(W_hat x0 + b_hat, row norms)`` (:class:`LayerPlanes`' per-layer data)."""
        problem = self.problem
        return W @ problem.x0 + b, np.linalg.norm(W * problem.unit, ord=problem.dual, axis=1)

    def piece(self, bits: np.ndarray) -> float:
        """Over the level-1 piece of the first layer's code ``bits``."""
        s = np.where(bits, 1.0, -1.0)
        gap = -s * self.h1
        ok = (gap > 0) & (self.n1 > 0)
        return float(np.max(gap[ok] / self.n1[ok], initial=0.0))

    def cell(self, polytope: Polytope) -> float:
        """Over the polytope: its neuron halfspaces, from each layer's ``(W_hat x0 + b_hat,
        row norms)`` (:class:`LayerPlanes`)."""
        planes = self.planes(polytope)
        s = np.where(np.concatenate(polytope.code), 1.0, -1.0)
        gap = -s * np.concatenate([p[0] for p in planes])
        norms = np.concatenate([p[1] for p in planes])
        if np.any((norms == 0) & (gap > 0)):
            return np.inf
        ok = (gap > 0) & (norms > 0)
        return float(np.max(gap[ok] / norms[ok], initial=0.0))

    def classes(self, polytope: Polytope, frame: Frame) -> tuple[np.ndarray, np.ndarray]:
        """For every target class at once, from its rows ``G x + g >= 0``
        (:meth:`~polytrav.plugins.counterfactual.problem.Problem.class_rows`):
        :func:`halfspace_distance` from ``x0`` to the farthest row (a lower bound of the
        distance to the class on the polytope), and whether every row can hold somewhere on
        the region's bounding box (else the class is out of reach).

        Row ``i`` of class ``q`` is ``W[q] - W[i]``, so its norms are pairwise distances
        between the rows of ``W`` (``cdist``: no ``classes x outputs x inputs`` array)."""
        from scipy.spatial.distance import cdist

        problem = self.problem
        W, c = problem.local_scores(polytope)
        T = np.asarray(problem.targets)
        y, z = W @ problem.x0 + c, W @ frame.origin + c
        if problem.binary:  # class 1: logit >= 0; class 0: -logit >= 0
            s = np.where(T == 1, 1.0, -1.0)[:, None]
            gap, h = -s * y[:1], s * z[:1]
            norms = np.full((T.size, 1), np.linalg.norm(W[0] * problem.unit, ord=problem.dual))
            reach = np.full((T.size, 1), np.abs(frame.pull(W[:1])).sum())
            rows = np.ones((T.size, 1), bool)
        else:
            metric = {1: "cityblock", 2: "euclidean", np.inf: "chebyshev"}[problem.dual]
            Wu = frame.pull(W)
            gap, h = y[None, :] - y[T][:, None], z[T][:, None] - z[None, :]
            Ws = W * problem.unit  # the rows in the scaled coordinates
            norms = cdist(Ws[T], Ws, metric)
            reach = cdist(Wu[T], Wu, "cityblock")  # max of (G u) over [-1, 1]^d, less h
            rows = ~np.eye(W.shape[0], dtype=bool)[T]  # i = q is no row
        dist = np.divide(gap, norms, out=np.zeros_like(gap), where=rows & (gap > 0) & (norms > 0))
        dist[rows & (norms == 0) & (gap > 0)] = np.inf
        out = rows & (((reach == 0) & (h < 0)) | (reach + h < 0))
        return dist.max(axis=1, initial=0.0), ~out.any(axis=1)
