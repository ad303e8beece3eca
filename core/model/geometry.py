"""The region's normalised frame: where the traversal does its geometry.

A region ``R`` in ``n`` input dimensions lives in an affine hull of dimension ``d <= n``
(zero-width box coordinates and explicit equalities remove dimensions). :func:`build_frame`
parametrises that hull as ``x = origin + U @ u`` and scales it so that the region's bounding
box is ``[-1, 1]^d`` in ``u``. Every tolerance of the traversal is stated in ``u``, so it does
not depend on the units of the inputs (ACAS Xu's raw inputs span 10^4, MNIST's 1).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from polytrav.vocabulary.errors import RegionError
from polytrav.model.region import Constraints, Region

__all__ = ["Frame", "L1Ball", "L2Ball", "build_frame", "halfspace_volume",
           "polyhedron_bounding_box"]

from polytrav.vocabulary.tolerances import (CONTAINS_TOL, EQUALITY_TOL, HIGH_DIM,  # noqa: E402
                                          MAX_COORDINATE, RADIUS_CAP_HIGH_DIM, SAME_VALUE_TOL,
                                          ZERO_ENTRY_TOL, ZERO_ROW_TOL)


@dataclass(frozen=True)
class L1Ball:
    """``||U u + w||_1 + kappa t <= radius`` in frame coordinates (``kappa`` bounds ``||U||_{2->1}``)."""

    U: np.ndarray
    w: np.ndarray
    radius: float
    kappa: float


@dataclass(frozen=True)
class L2Ball:
    """``||u - center|| <= radius`` in frame coordinates (the frame is scaled uniformly)."""

    center: np.ndarray
    radius: float


@dataclass(frozen=True)
class Frame:
    """Normalised coordinates of a region: ``x = origin + U @ u``, region ⊂ ``[-1, 1]^dim``.

    ``A_extra u <= b_extra`` are the region's inequalities in ``u`` beyond the bounding box
    ``±u_j <= 1``, with unit-norm rows; :attr:`A`, :attr:`b` add the box rows (built when
    asked for: 1568 dense rows on 784 inputs).
    """

    origin: np.ndarray
    basis: np.ndarray | None  # U, when it does not just select and scale coordinates
    A_extra: np.ndarray
    b_extra: np.ndarray
    l1_balls: tuple[L1Ball, ...] = field(default=())
    l2_balls: tuple[L2Ball, ...] = field(default=())
    free: np.ndarray | None = None  # input coordinates that vary, when U selects coordinates
    #: With ``free`` (``U`` selects coordinates): ``x[free] = origin[free] + scale * u``.
    scale: np.ndarray | None = None

    @cached_property
    def U(self) -> np.ndarray:
        """The ``n x d`` basis (read-only; built when asked for if it selects coordinates,
        which the hot paths (:meth:`pull`, :meth:`to_x`, :meth:`to_u`) do without it)."""
        if self.basis is not None:
            return self.basis
        U = np.zeros((self.origin.shape[0], self.dim))
        U[self.free, np.arange(self.dim)] = self.scale
        U.setflags(write=False)
        return U

    @cached_property
    def A(self) -> np.ndarray:
        """All inequality rows: ``[I; -I; A_extra]`` (read-only)."""
        d = self.dim
        A = np.zeros((2 * d + self.A_extra.shape[0], d))
        A[np.arange(d), np.arange(d)] = 1.0
        A[d + np.arange(d), np.arange(d)] = -1.0
        A[2 * d:] = self.A_extra
        A.setflags(write=False)
        return A

    @cached_property
    def b(self) -> np.ndarray:
        """Right-hand sides of :attr:`A` (read-only)."""
        b = np.concatenate([np.ones(2 * self.dim), self.b_extra])
        b.setflags(write=False)
        return b

    @cached_property
    def fingerprint(self) -> str:
        """A digest of the whole frame: equal for frames of the same region (cache keys)."""
        if self.free is None:
            rows, cols = np.nonzero(self.U)
            values, free = self.U[rows, cols], np.zeros(0)
        else:  # U's nonzeros, without building it
            rows, cols, values, free = self.free, np.arange(self.dim), self.scale, self.free
        shape = np.array([self.origin.shape[0], self.dim], float)
        return _digest([self.origin, shape, rows, cols, values, free, self.cell_fingerprint])

    @cached_property
    def cell_fingerprint(self) -> str:
        """A digest of the region's constraints in ``u`` only (``A``, ``b``, balls).

        Boxes of one dimension share it: problems over ``u`` alone compile once for all.
        """
        if self.is_box:  # [-1, 1]^dim: the dimension says it all
            return _digest([f"box {self.dim}"])
        rows, cols = np.nonzero(self.A)  # sparse: boxes with a few extra rows stay cheap
        arrays = [np.array(self.A.shape, float), rows, cols, self.A[rows, cols], self.b]
        for ball in self.l1_balls:
            arrays += [ball.U, ball.w, np.array([ball.radius, ball.kappa])]
        for ball in self.l2_balls:
            arrays += [ball.center, np.array([ball.radius])]
        return _digest(arrays)

    @property
    def radius_cap(self) -> float:
        """Largest Chebyshev radius the traversal's LPs look for (1 means uncapped)."""
        return RADIUS_CAP_HIGH_DIM if self.dim > HIGH_DIM else 1.0

    @property
    def is_box(self) -> bool:
        """Whether the region is exactly the box ``[-1, 1]^dim`` in frame coordinates."""
        return self.A_extra.shape[0] == 0 and not self.l1_balls and not self.l2_balls

    @property
    def dim(self) -> int:
        """Dimension ``d`` of the region's affine hull."""
        return self.basis.shape[1] if self.basis is not None else self.free.size

    def to_x(self, u: np.ndarray) -> np.ndarray:
        """Input-space point(s) of frame point(s) ``u``."""
        u = np.asarray(u, float)
        if self.free is not None:  # U selects and scales coordinates: no dense product
            if self._all_free:
                return self.origin + u * self.scale
            x = np.broadcast_to(self.origin, u.shape[:-1] + self.origin.shape).copy()
            x[..., self.free] += u * self.scale
            return x
        return self.origin + u @ self.U.T

    def pull(self, G: np.ndarray) -> np.ndarray:
        """``G @ U``: rows over input coordinates as rows over frame coordinates."""
        if self.free is not None:
            return (G if self._all_free else G[..., self.free]) * self.scale
        return G @ self.U

    @cached_property
    def _all_free(self) -> bool:
        return self.free is not None and np.array_equal(self.free, np.arange(self.origin.shape[0]))

    def reach(self) -> np.ndarray:
        """``|U| 1``: how far each input coordinate moves over ``[-1, 1]^d``."""
        if self.free is None:
            return np.abs(self.U).sum(axis=1)
        r = np.zeros(self.origin.shape[0])
        r[self.free] = np.abs(self.scale)
        return r

    def U_sparse(self):
        """``U`` as a ``scipy.sparse`` CSR matrix (a selection matrix for boxes)."""
        import scipy.sparse as sp

        if self.free is None:
            return sp.csr_matrix(self.U)
        return sp.csr_matrix((self.scale, (self.free, np.arange(self.dim))),
                             shape=(self.origin.shape[0], self.dim))

    def to_u(self, x: np.ndarray) -> np.ndarray:
        """Frame coordinates of input-space point ``x`` (assumed in the affine hull)."""
        x = np.asarray(x, float)
        if self.free is not None:
            return (x[..., self.free] - self.origin[self.free]) / self.scale
        return np.linalg.lstsq(self.U, (x - self.origin).T, rcond=None)[0].T

    def contains_u(self, u: np.ndarray, tol: float = CONTAINS_TOL) -> bool:
        """Whether frame point ``u`` satisfies every region constraint within ``tol``."""
        if np.abs(u).max(initial=0.0) > 1.0 + tol or np.any(self.A_extra @ u > self.b_extra + tol):
            return False
        for ball in self.l1_balls:
            if np.abs(ball.U @ u + ball.w).sum() > ball.radius * (1 + tol) + tol:
                return False
        for ball in self.l2_balls:
            if np.linalg.norm(u - ball.center) > ball.radius + tol:
                return False
        return True


def halfspace_volume(A: np.ndarray, b: np.ndarray, interior: np.ndarray) -> float | None:
    """The volume of the bounded polytope ``{u: A u <= b}`` (``interior`` strictly inside)
    from its vertices (qhull); None where qhull cannot tell (a sliver). One dimension: the
    interval's length."""
    from scipy.spatial import ConvexHull, HalfspaceIntersection, QhullError

    if A.shape[1] == 1:
        a = A[:, 0]
        return float(np.min(b[a > 0] / a[a > 0], initial=np.inf)
                     - np.max(b[a < 0] / a[a < 0], initial=-np.inf))
    try:
        V = HalfspaceIntersection(np.c_[A, -b], interior).intersections
        return float(ConvexHull(V).volume)
    except (QhullError, ValueError):
        return None


def polyhedron_bounding_box(c: Constraints) -> tuple[np.ndarray, np.ndarray]:
    """Tight bounding box of ``{A x <= b, E x = e}`` by 2n LPs (norm balls ignored: outer box)."""
    from scipy.optimize import linprog

    n = c.n
    lo, hi = np.full(n, -np.inf), np.full(n, np.inf)
    for j in range(n):
        for sign, store in ((1.0, lo), (-1.0, hi)):
            obj = np.zeros(n)
            obj[j] = sign
            res = linprog(obj, A_ub=c.A if len(c.b) else None, b_ub=c.b if len(c.b) else None,
                          A_eq=c.E if len(c.e) else None, b_eq=c.e if len(c.e) else None,
                          bounds=(None, None), method="highs")
            if res.status == 2:
                raise RegionError("Polyhedron: the constraints have no common point (empty region)")
            if res.status == 0:
                store[j] = sign * res.fun
            elif res.status != 3:
                raise RegionError(f"Polyhedron: bounding-box LP failed ({res.message})")
    return lo, hi


def _affine_hull(c: Constraints) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """``x = x_p + N z`` spanning ``{E x = e}``; when ``N`` only selects coordinates, ``free``
    lists them and ``N`` is None (no dense ``n x n`` work on 784 inputs)."""
    n = c.n
    if c.E.shape[0] == 0:
        return np.zeros(n), None, np.arange(n)
    unit = (np.count_nonzero(c.E, axis=1) == 1)
    if unit.all():
        x_p = np.zeros(n)
        fixed = {}
        for row, val in zip(c.E, c.e):
            j = int(np.flatnonzero(row)[0])
            v = val / row[j]
            if j in fixed and not np.isclose(fixed[j], v, rtol=SAME_VALUE_TOL, atol=SAME_VALUE_TOL):
                raise RegionError(
                    f"region fixes coordinate {j} to two values ({fixed[j]} and {v}); it is empty"
                )
            fixed[j] = v
        for j, v in fixed.items():
            x_p[j] = v
        free = np.array([j for j in range(n) if j not in fixed], dtype=int)
        return x_p, None, free
    from scipy.linalg import null_space

    x_p, *_ = np.linalg.lstsq(c.E, c.e, rcond=None)
    if np.linalg.norm(c.E @ x_p - c.e) > EQUALITY_TOL * (1 + np.linalg.norm(c.e)):
        raise RegionError("region's equality constraints are inconsistent; it is empty")
    return x_p, null_space(c.E), None


def _digest(items) -> str:
    h = hashlib.blake2b(digest_size=16)
    for a in items:
        if isinstance(a, str):
            h.update(a.encode())
            continue
        a = np.ascontiguousarray(a, dtype=float)
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _check_magnitude(region: Region) -> None:
    """RegionError if a finite bound exceeds :data:`MAX_COORDINATE` in magnitude."""
    lo, hi = region.bounding_box()
    big = np.abs(np.concatenate([lo, hi]))
    big = big[np.isfinite(big)]
    if big.size and big.max() > MAX_COORDINATE:
        raise RegionError(
            f"region bound {big.max():.3g} is beyond {MAX_COORDINATE:.0e} in magnitude: float64 "
            "cannot resolve the polytopes of such a box; rescale the inputs or shrink the box")


#: Frames of the last few boxes (their bounds' bytes -> Frame): many runs on one box (the rows
#: of :func:`polytrav.explain`, a dataset's domain) build it once. A frame is never changed
#: after it is built (its lazy attributes depend on it alone), so runs may share it.
_BOX_FRAMES: dict[tuple, "Frame"] = {}
BOX_FRAMES_KEPT = 8


def build_frame(region: Region, n: int) -> Frame:
    """Normalised frame of ``region`` in ``n`` input dimensions (boxes: the last few kept).

    Raises
    ------
    RegionError
        If the region does not have ``n`` dimensions, is unbounded, or is empty.
    """
    region = region.with_dims(n)
    if not region.is_box:
        return _build_frame(region, n)
    lo, hi = region.bounding_box()
    key = (n, np.asarray(lo, float).tobytes(), np.asarray(hi, float).tobytes())
    frame = _BOX_FRAMES.pop(key, None)
    if frame is None:
        frame = _build_frame(region, n)
        while len(_BOX_FRAMES) >= BOX_FRAMES_KEPT:
            _BOX_FRAMES.pop(next(iter(_BOX_FRAMES)))
    _BOX_FRAMES[key] = frame  # most recent last
    return frame


def _build_frame(region: Region, n: int) -> Frame:
    _check_magnitude(region)
    if region.is_box:  # only the bounds matter: no dense rows (784 inputs make 1568 of them)
        lo, hi = region.bounding_box()
        if (lo > hi).any():
            j = int(np.flatnonzero(lo > hi)[0])
            raise RegionError(f"region is empty: its bounds cross at coordinate {j} "
                              f"(lower {lo[j]}, upper {hi[j]})")
        fixed = np.flatnonzero(lo == hi)
        E = np.zeros((fixed.size, n))
        E[np.arange(fixed.size), fixed] = 1.0
        c = Constraints(n, np.zeros((0, n)), np.zeros(0), E, lo[fixed])
    else:
        c = region.constraints()
    x_p, N, free = _affine_hull(c)
    d = N.shape[1] if free is None else free.size

    def lift(z):  # N @ z
        if free is None:
            return N @ z
        x = np.zeros(n)
        x[free] = z
        return x

    if d == 0:
        raise RegionError("region is a single point (every coordinate is fixed); nothing to traverse")
    # region rows in z (x = x_p + N z); N selects columns when the hull fixes coordinates
    Az = c.A[:, free] if free is not None else c.A @ N
    bz = c.b - c.A @ x_p
    # bounding box in z
    if free is not None:
        lo, hi = region.bounding_box()
        lo, hi = lo[free], hi[free]
    else:
        lo, hi = polyhedron_bounding_box(
            Constraints(d, Az, bz, np.zeros((0, d)), np.zeros(0))
        )
    l2 = []
    for ball in c.balls:
        if ball.p == 2:
            if ball.scale is not None:
                raise RegionError("a scaled L2 ball is not a traversal region (give a Box, a "
                                  "Polyhedron or an unscaled Ball)")
            zc = (N.T @ (ball.center - x_p)) if free is None else (ball.center - x_p)[free]
            dist2 = float(np.sum((ball.center - x_p - lift(zc)) ** 2))
            rho2 = ball.radius**2 - dist2
            if rho2 <= 0:
                raise RegionError(
                    "region: the L2 ball meets the region's affine hull in at most one point"
                )
            rho = float(np.sqrt(rho2))
            l2.append((zc, rho))
            lo, hi = np.maximum(lo, zc - rho), np.minimum(hi, zc + rho)
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        j = int(np.flatnonzero(~(np.isfinite(lo) & np.isfinite(hi)))[0])
        raise RegionError(
            f"region is unbounded along coordinate {j if free is None else int(free[j])}; "
            "intersect it with a Box to traverse"
        )
    if (hi - lo <= 0).any():
        j = int(np.flatnonzero(hi - lo <= 0)[0])
        raise RegionError(
            f"region has zero width along free coordinate {j}; state it as an equality "
            "(Box with lower == upper, or Polyhedron(A_eq=...)) so it is traversed in its affine hull"
        )
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    if l2:
        half = np.full(d, half.max())
    U = N * half[None, :] if free is None else None
    origin = x_p + lift(mid)
    # inequalities in u, unit rows, plus the bounding box rows; first drop the single-coordinate
    # rows the bounding box implies (all of a box's rows) without dense work on them
    single = np.count_nonzero(Az, axis=1) == 1
    if single.any():
        rows = np.flatnonzero(single)
        j = np.argmax(np.abs(Az[rows]), axis=1)
        a = Az[rows, j]
        implied = (bz[rows] - a * mid[j]) / np.abs(a * half[j]) >= 1.0 - SAME_VALUE_TOL
        keep = np.ones(Az.shape[0], bool)
        keep[rows[implied]] = False
        Az, bz = Az[keep], bz[keep]
    Au = Az * half[None, :]
    bu = bz - Az @ mid
    norms = np.linalg.norm(Au, axis=1)
    scale = np.maximum(np.abs(bu), 1.0)
    const = norms <= ZERO_ROW_TOL * scale
    if (bu[const] < -ZERO_ROW_TOL * scale[const]).any():
        raise RegionError("region is empty: a constraint cannot hold on its affine hull")
    Au, bu, norms = Au[~const], bu[~const], norms[~const]
    Au, bu = Au / norms[:, None], bu / norms
    # drop rows implied by the box rows (single-coordinate rows at |b| >= 1)
    single = np.count_nonzero(np.abs(Au) > ZERO_ENTRY_TOL, axis=1) == 1
    implied = single & (bu >= 1.0 - SAME_VALUE_TOL)
    Au, bu = Au[~implied], bu[~implied]
    for M in (Au, bu):  # shared by the models of a run, which never write to them
        M.setflags(write=False)
    frame = Frame(origin, U, Au, bu, (), tuple(L2Ball((zc - mid) / half[0], rho / half[0])
                                             for zc, rho in l2),
                  free, None if free is None else half)
    l1 = []
    for ball in c.balls:
        if ball.p == 1:
            s = np.ones(n) if ball.scale is None else ball.scale
            U = frame.U / s[:, None]
            kappa = min(
                float(np.linalg.norm(U, axis=1).sum()),
                float(np.sqrt(n) * np.linalg.norm(U, 2)),
            )
            l1.append(L1Ball(np.array(U), (origin - ball.center) / s, ball.radius, kappa))
    if l1:
        frame = replace(frame, l1_balls=tuple(l1))
    return frame
