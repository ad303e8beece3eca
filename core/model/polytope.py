"""A local polytope: one activation code's region inside the traversal region.

The traversal emits one :class:`Polytope` per full-dimensional polytope meeting the region.
It stores only the code, an interior point and bookkeeping; the halfspaces ``A, b`` and the
local model ``W, c`` are computed from the network on first access.
"""
from __future__ import annotations

from functools import cached_property

import numpy as np

from polytrav.model.network import Code, Network
from polytrav.model.region import Region
from polytrav.vocabulary.tolerances import CONTAINS_TOL

__all__ = ["Polytope"]


class Polytope:
    """One linear region of a ReLU network inside a region.

    Attributes
    ----------
    code : tuple of ndarray of bool
        Activation code, one array per hidden layer; a neuron is on iff its pre-activation
        is ``>= 0`` on the polytope's interior.
    interior_point : ndarray, shape (n_inputs,)
        Chebyshev centre of polytope ∩ region (in input coordinates).
    radius : float
        Chebyshev radius of polytope ∩ region in the region's normalised coordinates
        (each coordinate of the region's bounding box scaled to [-1, 1]), capped at
        0.1 for regions of more than 50 dimensions (see ``polytrav.model.geometry``); always
        ``> polytrav.vocabulary.tolerances.RADIUS_TOL``. With an L2-ball region (cutting planes) the
        centre is a certified interior point and the radius a certified inscribed radius,
        at least half the Chebyshev radius (``0.0`` for :meth:`of_point`'s). Under strategy ``"subdivision"`` the point is the
        centroid of the polytope's vertices and the radius the distance from it to the
        nearest hyperplane: a certified inscribed radius, at most the Chebyshev radius.
    index : int
        Visit order, from 0.
    parent : int or None
        Index of the polytope whose exploration discovered this one (``None`` for the first).
    vertices : ndarray, shape (n_vertices, d), or None
        Vertices of polytope ∩ region in the region's frame coordinates ``u`` (see
        ``polytrav.model.geometry.Frame``), when the traversal computed them (low-dimensional
        polyhedral regions); analyses use them to skip LPs.
    """

    __slots__ = ("code", "interior_point", "radius", "index", "parent", "network", "region",
                 "vertices", "__dict__")

    def __init__(self, code: Code, interior_point: np.ndarray, radius: float, index: int,
                 parent: int | None, network: Network, region: Region,
                 vertices: np.ndarray | None = None):
        self.code = code
        self.interior_point = interior_point
        self.radius = radius
        self.index = index
        self.parent = parent
        self.network = network
        self.region = region
        self.vertices = vertices

    @classmethod
    def of_point(cls, x: np.ndarray, network: Network, region: Region) -> "Polytope":
        """The polytope of ``x``'s activation code, found outside a traversal (a MILP's
        point, say): ``x`` is its interior point, its radius is unknown (``0.0``) and its
        ``index`` is ``-1``; its rows and local model are the code's, as for any polytope."""
        x = np.asarray(x, dtype=float)
        return cls(network.activation_code(x), x, 0.0, -1, None, network, region)

    @cached_property
    def local_model(self) -> tuple[np.ndarray, np.ndarray]:
        """``(W, c)`` with ``output = W @ x + c`` on the polytope."""
        return self.network.local_model(self.code)

    @property
    def W(self) -> np.ndarray:
        """Local model matrix, shape ``(n_outputs, n_inputs)``."""
        return self.local_model[0]

    @property
    def c(self) -> np.ndarray:
        """Local model offset, shape ``(n_outputs,)``."""
        return self.local_model[1]

    @cached_property
    def halfspaces(self) -> tuple[np.ndarray, np.ndarray]:
        """``(A, b)``: neuron rows (layer by layer) then region rows, ``A x <= b``.

        Rows are scaled to unit norm (a neuron whose pre-activation is constant on the
        polytope keeps its zero row). Equalities of the region appear as two opposite rows;
        L1/L2 balls of the region are not halfspaces and are left out (see ``region``).
        """
        rows, rhs = [], []
        for (Wh, bh), on in zip(self.network.hyperplanes(self.code), self.code):
            s = np.where(on, -1.0, 1.0)  # on: -h <= 0 ; off: h <= 0
            rows.append(s[:, None] * Wh)
            rhs.append(-s * bh)
        cons = self.region.with_dims(self.network.n_inputs).constraints()
        rows += [cons.A, cons.E, -cons.E]
        rhs += [cons.b, cons.e, -cons.e]
        A, b = np.vstack(rows), np.concatenate(rhs)
        norms = np.linalg.norm(A, axis=1)
        norms[norms == 0] = 1.0
        return A / norms[:, None], b / norms

    @property
    def A(self) -> np.ndarray:
        """Halfspace normals, see :attr:`halfspaces`."""
        return self.halfspaces[0]

    @property
    def b(self) -> np.ndarray:
        """Halfspace offsets, see :attr:`halfspaces`."""
        return self.halfspaces[1]

    def contains(self, x, tol: float = CONTAINS_TOL) -> bool:
        """Whether ``x`` lies in the closed polytope ∩ region's halfspaces (within ``tol``)."""
        x = np.asarray(x, float)
        return bool(np.all(self.A @ x <= self.b + tol))

    @property
    def key(self) -> bytes:
        """The code packed into bytes (hashable, compact)."""
        bits = np.concatenate(self.code) if self.code else np.zeros(0, bool)  # affine net: ()
        return np.packbits(bits).tobytes()

    def __repr__(self) -> str:
        on = sum(int(c.sum()) for c in self.code)
        return (f"<Polytope #{self.index} ({on}/{sum(c.size for c in self.code)} neurons on), "
                f"radius={self.radius:.3g}>")
