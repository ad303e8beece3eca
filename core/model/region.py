"""Closed convex input regions: boxes, norm balls, polyhedra and their intersections.

Every region reduces to :class:`Constraints`: linear inequalities ``A x <= b``, linear
equalities ``E x = e`` (zero-width box coordinates become equalities) and norm-ball
constraints ``||x - center||_p <= radius`` for ``p`` in {1, 2} (an L-infinity ball is a box).
Scalar bounds broadcast: ``Ball(x0, 0.05, norm=inf) & Box(0, 1)`` is the L-infinity ball
clipped to the unit box in ``len(x0)`` dimensions.

Examples
--------
>>> r = Ball([0.5, 0.5], 0.1, norm="inf") & Box(0, 1)
>>> r.n_dims, r.contains([0.55, 0.45])
(2, True)
>>> r.bounding_box()
(array([0.4, 0.4]), array([0.6, 0.6]))
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from polytrav.vocabulary.errors import RegionError

__all__ = ["Region", "Box", "Ball", "Polyhedron", "Intersection", "Constraints", "NormBall"]

from polytrav.vocabulary.tolerances import CONTAINS_TOL  # noqa: E402


@dataclass(frozen=True)
class NormBall:
    """``||(x - center) / scale||_p <= radius`` with ``p`` in {1, 2} (``scale`` None: 1)."""

    center: np.ndarray
    radius: float
    p: int
    scale: np.ndarray | None = None

    def distance(self, x: np.ndarray) -> float:
        d = x - self.center
        return float(np.linalg.norm(d if self.scale is None else d / self.scale, ord=self.p))


@dataclass(frozen=True)
class Constraints:
    """A region as ``A x <= b``, ``E x = e`` and norm balls (all in ``n`` dimensions)."""

    n: int
    A: np.ndarray
    b: np.ndarray
    E: np.ndarray
    e: np.ndarray
    balls: tuple[NormBall, ...] = field(default=())

    def violations(self, x: np.ndarray, tol: float = CONTAINS_TOL) -> list[str]:
        """Human-readable list of the constraints the point ``x`` (of ``n`` coordinates)
        violates beyond ``tol`` (scaled by the bound size); empty if it is inside."""
        out = []
        slack = self.A @ x - self.b
        for i in np.flatnonzero(slack > tol * (1.0 + np.abs(self.b))):
            out.append(f"inequality {i}: {self.A[i] @ x:.6g} > {self.b[i]:.6g}")
        res = np.abs(self.E @ x - self.e)
        for i in np.flatnonzero(res > tol * (1.0 + np.abs(self.e))):
            out.append(f"equality {i}: {self.E[i] @ x:.6g} != {self.e[i]:.6g}")
        for ball in self.balls:
            d = ball.distance(x)
            if d > ball.radius + tol * (1.0 + ball.radius):
                out.append(f"L{ball.p} ball: distance {d:.6g} > radius {ball.radius:.6g}")
        return out

    def __and__(self, other: "Constraints") -> "Constraints":
        return Constraints(
            self.n,
            np.vstack([self.A, other.A]),
            np.concatenate([self.b, other.b]),
            np.vstack([self.E, other.E]),
            np.concatenate([self.e, other.e]),
            self.balls + other.balls,
        )


def _vector(value, what: str, n: int | None = None) -> np.ndarray:
    try:
        arr = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise RegionError(f"{what} is not numeric ({exc})") from exc
    if arr.ndim > 1:
        raise RegionError(f"{what} must be a scalar or a 1-D vector, got shape {arr.shape}")
    if np.isnan(arr).any():
        where = "" if arr.ndim == 0 else f" at index {int(np.flatnonzero(np.isnan(arr))[0])}"
        raise RegionError(f"{what} contains NaN{where}; give a number (inf leaves a side open)")
    if n is not None and arr.ndim == 1 and arr.shape[0] != n:
        raise RegionError(f"{what} has {arr.shape[0]} entries, expected {n}")
    return arr


def _norm_key(norm) -> float:
    if norm in (1, "1", "l1", "L1"):
        return 1
    if norm in (2, "2", "l2", "L2"):
        return 2
    if norm in (math.inf, "inf", "linf", "Linf", np.inf):
        return math.inf
    raise RegionError(f"Ball: norm must be 1, 2 or inf, got {norm!r}")


class Region:
    """Base class of closed convex regions. Combine regions with ``&``."""

    #: Number of dimensions, or ``None`` for a region of scalars that broadcasts.
    n_dims: int | None

    def with_dims(self, n: int) -> "Region":
        """This region in ``n`` dimensions (broadcasting scalar bounds); checks the dimension."""
        if self.n_dims is not None and self.n_dims != n:
            raise RegionError(
                f"{type(self).__name__}: region has {self.n_dims} dimensions but {n} are needed "
                "(the network's inputs); build the region from that many bounds"
            )
        return self

    def constraints(self) -> Constraints:
        """The region as inequalities, equalities and norm balls."""
        raise NotImplementedError

    def bounding_box(self) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper bounds of every coordinate (``inf`` where unbounded)."""
        raise NotImplementedError

    def contains(self, x, tol: float = CONTAINS_TOL) -> bool:
        """Whether ``x`` satisfies every constraint within ``tol`` (scaled by the bound size)."""
        return not self.violations(x, tol)

    def violations(self, x, tol: float = CONTAINS_TOL) -> list[str]:
        """Human-readable list of the constraints ``x`` violates (empty if inside)."""
        x = np.asarray(x, dtype=np.float64).reshape(-1)
        reg = self.with_dims(x.shape[0]) if self.n_dims is None else self
        if reg.n_dims != x.shape[0]:
            return [f"point has {x.shape[0]} coordinates, region has {reg.n_dims}"]
        if reg.is_box:  # the bounds alone (no dense rows in high dimension)
            lo, hi = reg.bounding_box()
            out = [f"coordinate {i}: {x[i]:.6g} > upper bound {hi[i]:.6g}"
                   for i in np.flatnonzero(x - hi > tol * (1.0 + np.abs(hi)))]
            return out + [f"coordinate {i}: {x[i]:.6g} < lower bound {lo[i]:.6g}"
                          for i in np.flatnonzero(lo - x > tol * (1.0 + np.abs(lo)))]
        return reg.constraints().violations(x, tol)

    @property
    def is_box(self) -> bool:
        """Whether the region equals its bounding box (a box, an L-inf ball, or an
        intersection of those)."""
        return False

    def __and__(self, other: "Region") -> "Region":
        if not isinstance(other, Region):
            return NotImplemented
        return Intersection(self, other)


class Box(Region):
    """``lower <= x <= upper``; scalars broadcast. A coordinate with ``lower == upper`` is fixed.

    Parameters
    ----------
    lower, upper : float or array_like of shape (n_dims,)
        Bounds; ``-inf``/``inf`` leave a side open.
    """

    def __init__(self, lower, upper):
        lo = _vector(lower, "Box lower bound")
        hi = _vector(upper, "Box upper bound")
        if lo.ndim == 1 and hi.ndim == 1 and lo.shape != hi.shape:
            raise RegionError(
                f"Box: lower has {lo.shape[0]} entries but upper has {hi.shape[0]}; give both "
                "the same length"
            )
        n = lo.shape[0] if lo.ndim == 1 else (hi.shape[0] if hi.ndim == 1 else None)
        if n is not None and lo.ndim + hi.ndim < 2:  # a scalar side broadcasts (own copies)
            lo, hi = np.broadcast_to(lo, (n,)).copy(), np.broadcast_to(hi, (n,)).copy()
        bad = np.flatnonzero(np.atleast_1d(lo > hi))
        if bad.size:
            i = int(bad[0])
            raise RegionError(
                f"Box: lower bound exceeds upper bound at coordinate {i} "
                f"(lower={np.atleast_1d(lo)[i]}, upper={np.atleast_1d(hi)[i]}); swap them"
            )
        self.lower, self.upper, self.n_dims = lo, hi, n

    def violations(self, x, tol: float = CONTAINS_TOL) -> list[str]:
        x = np.asarray(x, dtype=np.float64).reshape(-1)
        if self.n_dims == x.shape[0] and (x >= self.lower).all() and (x <= self.upper).all():
            return []  # inside without the tolerance (the common case, four array operations)
        return super().violations(x, tol)

    def with_dims(self, n: int) -> "Box":
        if self.n_dims is None:
            return Box(np.full(n, float(self.lower)), np.full(n, float(self.upper)))
        return super().with_dims(n)

    def constraints(self) -> Constraints:
        n = self._need_dims()
        I = np.eye(n)
        fixed = self.lower == self.upper
        up = np.isfinite(self.upper) & ~fixed
        lo = np.isfinite(self.lower) & ~fixed
        return Constraints(
            n,
            np.vstack([I[up], -I[lo]]),
            np.concatenate([self.upper[up], -self.lower[lo]]),
            I[fixed],
            self.lower[fixed],
        )

    def bounding_box(self):
        self._need_dims()
        return self.lower.copy(), self.upper.copy()

    @property
    def is_box(self) -> bool:
        return True

    def _need_dims(self) -> int:
        if self.n_dims is None:
            raise RegionError("Box: scalar bounds need a dimension; call with_dims(n) first")
        return self.n_dims

    def __repr__(self):
        return f"Box(lower={self.lower!r}, upper={self.upper!r})"


class Ball(Region):
    """``||(x - center) / scale||_norm <= radius`` for ``norm`` in {1, 2, inf}.

    ``scale`` (optional, positive, one per coordinate or one number) measures each
    coordinate in its own unit: a weighted norm. The L-infinity ball is a box; the L1 and
    L2 balls stay norm constraints (a scaled L2 ball is not a traversal region: it serves
    :class:`~polytrav.Restrict`'s screening and membership checks).
    """

    def __init__(self, center, radius, norm=2, *, scale=None):
        self.center = _vector(center, "Ball center")
        if self.center.ndim != 1:
            raise RegionError("Ball: center must be a vector of coordinates")
        try:
            self.radius = float(radius)
        except (TypeError, ValueError) as exc:
            raise RegionError(f"Ball: radius must be a number, got {radius!r}") from exc
        if not np.isfinite(self.radius) or self.radius < 0:
            raise RegionError(f"Ball: radius must be finite and >= 0, got {radius!r}")
        self.norm = _norm_key(norm)
        self.n_dims = self.center.shape[0]
        self.scale = None
        if scale is not None:
            s = np.broadcast_to(_vector(scale, "Ball scale", self.n_dims), self.center.shape)
            if not (np.all(np.isfinite(s)) and np.all(s > 0)):
                raise RegionError("Ball: scale must be positive and finite, one per coordinate")
            self.scale = np.array(s)

    def distance(self, x) -> float:
        """``||(x - center) / scale||_norm``."""
        d = np.asarray(x, float) - self.center
        return float(np.linalg.norm(d if self.scale is None else d / self.scale, ord=self.norm))

    def constraints(self) -> Constraints:
        if self.norm == math.inf:
            return Box(*self.bounding_box()).constraints()
        n = self.n_dims
        if self.radius == 0:
            return Constraints(n, np.zeros((0, n)), np.zeros(0), np.eye(n), self.center.copy())
        return Constraints(
            n, np.zeros((0, n)), np.zeros(0), np.zeros((0, n)), np.zeros(0),
            (NormBall(self.center.copy(), self.radius, int(self.norm), self.scale),),
        )

    def bounding_box(self):
        r = self.radius if self.scale is None else self.radius * self.scale
        return self.center - r, self.center + r

    @property
    def is_box(self) -> bool:
        return self.norm == math.inf

    def __repr__(self):
        scale = "" if self.scale is None else f", scale={self.scale!r}"
        return f"Ball(center={self.center!r}, radius={self.radius!r}, norm={self.norm}{scale})"


class Polyhedron(Region):
    """``A x <= b`` (and optionally ``A_eq x == b_eq``).

    Parameters
    ----------
    A : array_like, shape (n_constraints, n_dims)
    b : array_like, shape (n_constraints,)
    A_eq, b_eq : array_like, optional
        Equality constraints; state equalities here rather than as two opposite
        inequalities so that the traversal works in the region's affine hull.
    """

    def __init__(self, A, b, A_eq=None, b_eq=None):
        self.A, self.b = self._rows(A, b, "A", "b")
        n = self.A.shape[1]
        if A_eq is None:
            self.A_eq, self.b_eq = np.zeros((0, n)), np.zeros(0)
        else:
            self.A_eq, self.b_eq = self._rows(A_eq, b_eq, "A_eq", "b_eq")
            if self.A_eq.shape[1] != n:
                raise RegionError(
                    f"Polyhedron: A has {n} columns but A_eq has {self.A_eq.shape[1]}"
                )
        self.n_dims = n

    @staticmethod
    def _rows(A, b, na, nb):
        try:
            A = np.array(A, dtype=np.float64)
            b = np.array(b, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError) as exc:
            raise RegionError(f"Polyhedron: {na}/{nb} are not numeric ({exc})") from exc
        if A.ndim != 2:
            raise RegionError(f"Polyhedron: {na} must be 2-D (n_constraints, n_dims), got {A.shape}")
        if b.shape[0] != A.shape[0]:
            raise RegionError(
                f"Polyhedron: {na} has {A.shape[0]} rows but {nb} has {b.shape[0]} entries"
            )
        if not (np.isfinite(A).all() and not np.isnan(b).any()):
            raise RegionError(f"Polyhedron: {na} must be finite and {nb} must not contain NaN")
        return A, b

    def constraints(self) -> Constraints:
        keep = np.isfinite(self.b)
        if (self.b[~keep] < 0).any():
            raise RegionError("Polyhedron: a right-hand side is -inf, so the region is empty")
        return Constraints(self.n_dims, self.A[keep], self.b[keep], self.A_eq, self.b_eq)

    def bounding_box(self):
        from polytrav.model.geometry import polyhedron_bounding_box

        return polyhedron_bounding_box(self.constraints())

    def __repr__(self):
        return f"Polyhedron({self.A.shape[0]} inequalities, {self.A_eq.shape[0]} equalities, n_dims={self.n_dims})"


class Intersection(Region):
    """The intersection of regions (built with ``&``)."""

    def __init__(self, *parts: Region):
        flat: list[Region] = []
        for p in parts:
            flat.extend(p.parts if isinstance(p, Intersection) else [p])
        dims = {p.n_dims for p in flat if p.n_dims is not None}
        if len(dims) > 1:
            raise RegionError(
                f"Intersection: parts have different dimensions {sorted(dims)}; "
                "build them in the same space"
            )
        self.n_dims = dims.pop() if dims else None
        if self.n_dims is not None:
            flat = [p.with_dims(self.n_dims) for p in flat]
        self.parts = tuple(flat)

    def with_dims(self, n: int) -> "Intersection":
        if self.n_dims is None:
            return Intersection(*(p.with_dims(n) for p in self.parts))
        return super().with_dims(n)

    def constraints(self) -> Constraints:
        out = self.parts[0].constraints()
        for p in self.parts[1:]:
            out = out & p.constraints()
        return out

    def bounding_box(self):
        los, his = zip(*(p.bounding_box() for p in self.parts if not isinstance(p, Polyhedron)))\
            if any(not isinstance(p, Polyhedron) for p in self.parts) else ((), ())
        if any(isinstance(p, Polyhedron) for p in self.parts):
            from polytrav.model.geometry import polyhedron_bounding_box

            lo, hi = polyhedron_bounding_box(self.constraints())
            los, his = (*los, lo), (*his, hi)
        return np.max(np.vstack(los), axis=0), np.min(np.vstack(his), axis=0)

    @property
    def is_box(self) -> bool:
        return all(p.is_box for p in self.parts)

    def __repr__(self):
        return " & ".join(repr(p) for p in self.parts)
