"""Cell enumeration by subdivision: every cell of a ReLU network in a polyhedral region.

Start from the region's polytope (the frame box ``[-1, 1]^d``, cut by the region's other
rows), then cut every cell by each neuron in turn, layer by layer. On a cell of the layers
before it a neuron's pre-activation is affine, so its zero set cuts the cell along one
hyperplane, and the cut is read off the cell's vertices: no LP. Many cells are cut by a neuron
at once, in vectorised numpy, or cell by cell by the compiled kernel
(:mod:`polytrav.traversal.subdivision_kernel`, numba; :data:`KERNELS`): a *batch*. A batch
stops cutting once it holds more than :data:`VERTICES_PER_CELL` times :data:`BATCH` vertex
rows (after any neuron, within a layer too), and one with more than :data:`BATCH` cells or
those rows is split into batches of at most that many, run one after the other (depth
first), so memory stays bounded by the batch and finished cells stream out early
(:attr:`Tally.held`).

Each cell keeps its own vertices, and each vertex the set of hyperplanes it lies on (a bit
per region row and per neuron): two vertices of a cell span an edge iff no third vertex of
the cell lies on every hyperplane they share (the smallest face holding both has no other
vertex), which is exact whatever the degeneracy. A cut keeps the vertices on each side, puts
the vertices on the hyperplane in both children and adds one vertex per edge it crosses.

Degeneracy is decided, not hoped away (the numbers are in :mod:`polytrav.vocabulary.tolerances`):

- a vertex within :data:`SNAP_TOL` (normalised units) of the hyperplane lies on it: vertices
  where several hyperplanes meet, duplicate and parallel neurons, neurons through vertices;
- a side of a cut thinner than :data:`RADIUS_TOL` holds no polytope (its Chebyshev radius is
  below the traversal's threshold): it is cut off and dropped, and a cell thin on both sides
  is dropped;
- a neuron constant on a cell (a dead neuron, or one made constant by the layers before) does
  not cut it; its bit is the constant's sign (on iff ``>= 0``), as the traversal's;
- a cut whose section has fewer than ``d`` vertices is inconsistent in floating point: the
  batch stops with :class:`Undecided` (its caller falls back to the LP traversal).

Every cell's vertex centroid is checked against all its hyperplanes: the distance to the
nearest is a certified inscribed radius. Cells where it is at most :data:`RADIUS_TOL` are
decided by the Chebyshev LP, as the traversal decides every cell: emitted iff its certified
radius exceeds :data:`RADIUS_TOL`.
"""
from __future__ import annotations

import importlib.util
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from polytrav.model.geometry import Frame
from polytrav.model.network import Network
from polytrav.vocabulary.ctrl_c import compiled_calls
from polytrav.vocabulary.extras import require
from polytrav.vocabulary.tolerances import RADIUS_TOL, SAME_VALUE_TOL, SNAP_TOL, ZERO_ROW_TOL

__all__ = ["BATCH", "KERNELS", "Cells", "Subdivision", "Tally", "Undecided", "first_layer_keys",
           "kernel_installed", "subdivide"]

#: A batch with more cells than this is split (bounds memory: the
#: 3-D 8 x 32 bunny's 9.9 million cells in 0.49 GB at 2 048, 0.70 GB at 8 192, 2.1 GB at
#: 65 536, and the smallest batch the fastest: 62, 66 and 84 s of CPU; docs/benchmarks.md).
BATCH = 1 << 11
#: ... and one with more than this many times ``batch`` vertex rows too, checked after each
#: neuron, so within a layer as well (in 7-10 dimensions a cell has hundreds or thousands of
#: vertices, and a layer can multiply each cell a million-fold; in 2-4 about 4-12).
VERTICES_PER_CELL = 16

#: How a layer's cuts run: ``"numba"``, the compiled kernel
#: (:mod:`polytrav.traversal.subdivision_kernel`, needs numba); ``"numpy"``, vectorised
#: numpy; ``"auto"``, the kernel once it is loaded in this process, and before that numpy
#: until this process's numpy cuts reach :data:`KERNEL_AFTER_WORK` vertex-neuron pairs
#: (vertex rows of a layer's cells times its neurons, summed over runs), or at once for
#: cells of :data:`KERNEL_MIN_VERTICES` vertices (7-10 inputs: numpy's edge search pairs
#: every vertex with every other), when numba is installed. Loading the kernel costs about
#: 0.45 s of CPU from numba's cache (about as much as numpy's cuts of 2-8 million pairs), so
#: a short run never pays it: the README's example (5 inputs, 1 224 polytopes) takes 0.16 s
#: in numpy against 0.55 s with the kernel loaded; 16 310 polytopes, 1.23 s against 0.88 s.
#: Both give the same cells.
KERNELS = ("auto", "numba", "numpy")
KERNEL_AFTER_WORK = 1 << 22
KERNEL_MIN_VERTICES = 100

#: The widest layer whose maps the compiled kernel computes once loaded (wider ones: a
#: gather and one BLAS product, faster there).
MAPS_MAX_WIDTH = 8

#: Cells the kernel cuts between two checks of the clock.
KERNEL_CHUNK = 4096


class Undecided(Exception):
    """A cut the engine cannot decide in floating point (``args[0]`` says which)."""


@dataclass
class Tally:
    """What a run of the engine did so far (summed over its batches)."""

    levels: list  #: cells after each layer (``stats.pieces``)
    cuts: int = 0  #: cells cut by a neuron
    snapped: int = 0  #: vertices taken as on a hyperplane they are within SNAP_TOL of
    thin: int = 0  #: cuts not made because a side was thinner than RADIUS_TOL
    #: the most vertex rows held at once by the batches waiting (a batch is cut on at most
    #: ``batch * VERTICES_PER_CELL`` rows; waiting ones add up along the depth-first path:
    #: each hidden layer on it holds its unfinished rest and the pieces of its cut, 0.6-4.1
    #: times those rows a layer on the nets measured, at most 5 by the tests)
    held: int = field(default=0, compare=False)


@dataclass
class Cells:
    """Cells of a subdivision: one row per cell.

    ``codes`` ``(C, n_neurons)`` bool, the activation code (layer by layer); ``vertices`` the
    cells' vertices in frame coordinates, cell ``i``'s in ``vertices[starts[i]:starts[i + 1]]``;
    ``centres`` ``(C, d)`` the vertex centroids; ``radii`` ``(C,)`` the distance from each
    centre to its cell's nearest hyperplane (a certified inscribed radius).
    """

    codes: np.ndarray
    vertices: np.ndarray
    starts: np.ndarray
    centres: np.ndarray
    radii: np.ndarray
    tally: Tally | None = field(default=None, repr=False)  #: set by :func:`subdivide`

    def __len__(self) -> int:
        return self.codes.shape[0]

    @classmethod
    def join(cls, parts: list[Cells], d: int, n: int) -> Cells:
        """One :class:`Cells` of ``parts`` (``d`` dimensions, ``n`` neurons)."""
        if not parts:
            return cls(np.zeros((0, n), bool), np.zeros((0, d)), np.zeros(1, np.int64),
                       np.zeros((0, d)), np.zeros(0))
        shift = np.cumsum([0] + [p.vertices.shape[0] for p in parts[:-1]])
        starts = np.concatenate([[0]] + [p.starts[1:] + s for p, s in zip(parts, shift)])
        return cls(np.vstack([p.codes for p in parts]), np.vstack([p.vertices for p in parts]),
                   starts, np.vstack([p.centres for p in parts]),
                   np.concatenate([p.radii for p in parts]))


class _Store:
    """Columns of equal length that grow by appending (capacity doubles)."""

    def __init__(self, **cols: np.ndarray):
        self.n = next(iter(cols.values())).shape[0]
        self._cols = dict(cols)  # owned: callers pass new arrays

    def __getattr__(self, name: str) -> np.ndarray:
        try:
            return self.__dict__["_cols"][name][: self.__dict__["n"]]
        except KeyError:
            raise AttributeError(name) from None

    def append(self, **cols: np.ndarray) -> np.ndarray:
        """Append rows; returns their indices."""
        k = next(iter(cols.values())).shape[0]
        need = self.n + k
        for name, col in self._cols.items():
            if need > col.shape[0]:
                grown = np.empty((max(need, 2 * col.shape[0]),) + col.shape[1:], col.dtype)
                grown[: self.n] = col[: self.n]
                self._cols[name] = col = grown
            col[self.n: need] = cols[name]
        first, self.n = self.n, need
        return np.arange(first, need)

    def take(self, rows: np.ndarray) -> _Store:
        """A new store of ``rows``."""
        return _Store(**{k: np.take(getattr(self, k), rows, axis=0) for k in self._cols})

    def rows(self, a: int, b: int) -> _Store:
        """A new store of rows ``a`` to ``b`` (copied)."""
        return _Store(**{k: getattr(self, k)[a:b].copy() for k in self._cols})

    def compress(self, mask: np.ndarray) -> _Store:
        """A new store of the rows where ``mask``."""
        return _Store(**{k: np.compress(mask, getattr(self, k), axis=0) for k in self._cols})


def _bits(index: int, words: int) -> np.ndarray:
    row = np.zeros(words, np.uint64)
    row[index // 64] = np.uint64(1) << np.uint64(index % 64)
    return row


class _Layers:
    """The network's hidden layers in frame coordinates (``x = origin + U u``) and the
    hyperplane numbering shared by a run's batches."""

    def __init__(self, net: Network, frame: Frame, kernel: str = "auto"):
        self.d = d = frame.dim
        self.frame = frame
        self.weights, self.biases = list(net.weights[:-1]), list(net.biases[:-1])
        if self.weights:
            W = self.weights[0]
            self.weights[0], self.biases[0] = frame.pull(W), W @ frame.origin + self.biases[0]
        self.offsets = np.concatenate([[0], np.cumsum([W.shape[0] for W in self.weights])])
        self.offsets = self.offsets.astype(int)
        self.n_region = 2 * d + frame.A_extra.shape[0]
        self.words = max(1, -(-(self.n_region + int(self.offsets[-1])) // 64))
        if kernel not in KERNELS:
            raise ValueError(f"subdivide: kernel must be one of {KERNELS}, not {kernel!r}")
        self.mode = kernel
        if kernel == "numba" and self.kernel(1) is None:
            require('subdivide: kernel="numba"', "fast")

    def kernel(self, work: int, per_cell: float = 0.0):
        """The compiled kernel (:mod:`polytrav.traversal.subdivision_kernel`) for a layer of
        ``work`` vertex-neuron pairs and ``per_cell`` vertices a cell, or None: numpy."""
        global _NUMPY_WORK
        if self.mode == "numpy":
            return None
        if (self.mode == "auto" and not _KERNEL and per_cell < KERNEL_MIN_VERTICES
                and _NUMPY_WORK + work < KERNEL_AFTER_WORK):
            _NUMPY_WORK += work
            return None
        return load_kernel()


_KERNEL = None  # the compiled kernel's module once loaded; False: numba is not installed
_NUMPY_WORK = 0  # vertex-neuron pairs cut in numpy by runs of kernel "auto" so far


def kernel_installed() -> bool:
    """Whether the compiled kernel can load (numba is installed), without importing it."""
    if _KERNEL is None:
        return importlib.util.find_spec("numba") is not None
    return bool(_KERNEL)


def load_kernel():
    """The compiled kernel (the module :mod:`polytrav.traversal.subdivision_kernel`), or
    None without numba."""
    global _KERNEL
    if _KERNEL is None:
        try:
            from polytrav.traversal import subdivision_kernel
        except ImportError:
            subdivision_kernel = False
        _KERNEL = subdivision_kernel
    return _KERNEL or None


class Subdivision:
    """A run of the engine: iterating it yields :class:`Cells` batch by batch (each cell once,
    every cell by the end); :attr:`tally` counts what was done so far.

    ``near``: ``(u, code)``, a point in frame coordinates and its activation code; batches and
    the cells in each come in order of their centres' distance from ``u``, those whose code
    matches first. ``clock.check()`` runs between neurons (it may raise to stop the run).
    ``kernel``: how the layers' cuts run (:data:`KERNELS`; the same cells either way).
    ``levels``: cut by the first ``levels`` hidden layers only (1: the level-1 pieces; their
    codes' later columns are False). ``within``: the keys (:func:`first_layer_keys`) of the
    level-1 pieces to enumerate; the cells of the others are dropped after the first layer.
    Raises :class:`Undecided` where floating point cannot decide a cut: the batches yielded
    before are right, the rest is not known.
    """

    def __init__(self, net: Network, frame: Frame, clock=None, *, batch: int = BATCH,
                 near: tuple[np.ndarray, np.ndarray] | None = None, kernel: str = "auto",
                 levels: int | None = None, within: set[bytes] | None = None):
        if frame.l1_balls or frame.l2_balls:
            raise ValueError("subdivide: the region must be polyhedral (no L1/L2 balls)")
        self.layers = _Layers(net, frame, kernel)
        n = len(self.layers.weights)
        self.levels = n if levels is None else min(levels, n)
        self.within = within
        self.tally = Tally(levels=[0] * len(self.layers.weights))
        self.clock, self.batch, self.near = clock, batch, near

    def __iter__(self) -> Iterator[Cells]:
        n_layers, tally = self.levels, self.tally
        rows = self.batch * VERTICES_PER_CELL  # past these vertex rows a batch stops, is split
        root = _Batch.root(self.layers, self.tally)
        stack = [(root, 0, 0)]  # (batch, layer, its next neuron): depth first
        held = root.v.n  # vertex rows of the batches on the stack
        tally.held = max(tally.held, held)
        while stack:
            part, layer, k = stack.pop()
            held -= part.v.n
            if layer == n_layers:
                yield part.cells(self._order)
                continue
            if part.opened < layer:
                part.open(layer)
            # at most `batch` cells, and VERTICES_PER_CELL times as many vertex rows
            size = min(self.batch, part.c.n * rows // max(1, part.v.n))
            if part.c.n > max(1, size):
                pieces = part.split(max(1, size), self._order,
                                    int(self.layers.offsets[layer]) + k)
            else:
                n = self.layers.weights[layer].shape[0]
                pieces = []
                for p, kk in part.cut_layer(layer, k, self.clock, rows):
                    if kk < n:  # stopped within the layer (too many vertex rows)
                        pieces.append((p, layer, kk))
                        continue
                    if layer == 0 and self.within is not None:  # the level-1 pieces asked for
                        keys = first_layer_keys(p.c.code[:, : self.layers.offsets[1]])
                        p.keep(np.fromiter((key in self.within for key in keys), bool,
                                           len(keys)))
                    tally.levels[layer] += p.c.n
                    pieces.append((p, layer + 1, 0))
                k = None
                if self.near is not None and len(pieces) > 1:  # the start's batch first
                    pieces.sort(key=lambda e: not self._holds_start(*e))
            for entry in reversed(pieces):
                entry = entry if k is None else (entry, layer, k)
                stack.append(entry)
                held += entry[0].v.n
            tally.held = max(tally.held, held)

    def _holds_start(self, part: _Batch, layer: int, k: int) -> bool:
        """Whether a cell of ``part`` (at neuron ``k`` of ``layer``) has the start's code
        in every bit decided so far."""
        m = int(self.layers.offsets[min(layer, len(self.layers.weights))]) + k
        return bool(np.any(np.all(part.c.code[:, :m] == self.near[1][:m], axis=1)))

    def _order(self, codes: np.ndarray, centres: np.ndarray) -> np.ndarray | None:
        """The order of cells by nearness (None: no ``near``)."""
        if self.near is None:
            return None
        u, code = self.near
        k = codes.shape[1]
        gap = np.linalg.norm(centres - u, axis=1)
        return np.argsort(np.where(np.all(codes == code[:k], axis=1), -1.0, gap), kind="stable")


def first_layer_keys(codes: np.ndarray) -> np.ndarray:
    """The keys of the level-1 pieces of ``codes`` (their first layer's bits, as
    :attr:`polytrav.traversal.Piece.key`): one ``bytes`` object per row."""
    packed = np.packbits(np.asarray(codes, bool), axis=1)
    return np.array([row.tobytes() for row in packed], dtype=object)


def subdivide(net: Network, frame: Frame, clock=None, *, batch: int = BATCH,
              kernel: str = "auto") -> Cells:
    """Every cell of ``net`` (its hidden layers) inside the polyhedral region of ``frame``,
    in one :class:`Cells` (``tally`` set); ``kernel``: one of :data:`KERNELS`.

    Raises :class:`Undecided` where floating point cannot decide a cut, and whatever
    ``clock.check()`` raises between neurons.
    """
    run = Subdivision(net, frame, clock, batch=batch, kernel=kernel)
    cells = Cells.join(list(run), frame.dim, int(run.layers.offsets[-1]))
    cells.tally = run.tally
    return cells


class _Batch:
    """Cells cut together, with their vertices: the state between cuts."""

    def __init__(self, layers: _Layers, tally: Tally, c: _Store, v: _Store,
                 inverse: list, opened: int, G=None, off=None):
        self.L, self.tally, self.c, self.v = layers, tally, c, v
        self.d, self.words, self.n_region = layers.d, layers.words, layers.n_region
        #: per layer opened, ``(C_l, n_l)``: one over the gradient norms of its
        #: pre-activations on the cells at its start, NaN where a neuron is constant (cell
        #: ``i``'s row is ``c.anc[i, l]``)
        self.inverse = inverse
        self.opened = opened  #: the last layer whose maps are set
        #: that layer's pre-activations on the cells at its start: gradients
        #: ``(C_l, d, n_l)``, offsets and gradient norms ``(C_l, n_l)``
        self.G, self.off, self.norms = G, off, None
        #: per neuron ``(C_l, n_l)``: whether it may cut the cell (ball screen), its side if not
        self.near = self.side = None
        self.dead = 0  #: vertex rows dropped (``cell == -1``) and not yet compacted

    @classmethod
    def root(cls, layers: _Layers, tally: Tally) -> _Batch:
        """The region's polytope: the frame box cut by the region's other rows."""
        d, words, fr = layers.d, layers.words, layers.frame
        corners = np.array(list(itertools.product((1.0, -1.0), repeat=d))).reshape(-1, d)
        act = np.zeros((corners.shape[0], words), np.uint64)
        for j in range(d):  # row j: u_j <= 1 ; row d + j: -u_j <= 1
            for row, side in ((j, 1.0), (d + j, -1.0)):
                act[corners[:, j] == side] |= _bits(row, words)
        v = _Store(X=corners, cell=np.zeros(corners.shape[0], np.int64), act=act)
        c = _Store(code=np.zeros((1, int(layers.offsets[-1])), bool), centre=np.zeros((1, d)),
                   reach=np.full(1, np.sqrt(d)),
                   anc=np.zeros((1, max(1, len(layers.weights))), np.int64))
        part = cls(layers, tally, c, v, [], -1)
        for i, (a, b) in enumerate(zip(fr.A_extra, fr.b_extra)):  # the region's other rows
            ids = np.arange(part.c.n)
            part._cut(ids, np.broadcast_to(-a, (ids.size, d)), np.full(ids.size, b),
                      np.full(ids.size, np.linalg.norm(a)), np.zeros(ids.size, bool), 2 * d + i,
                      region=True)
        return part

    # ---------------------------------------------------------------- layers
    def open(self, layer: int) -> None:
        """Set the pre-activation maps of ``layer`` on the cells at its start."""
        W, b = self.L.weights[layer], self.L.biases[layer]
        C, d = self.c.n, self.d
        if self.G is None:
            G = np.broadcast_to(W.T, (C, d, W.shape[0]))
            off = np.broadcast_to(b, (C, W.shape[0]))
        else:  # the layer before, masked by each cell's code, then this layer's weights
            lo, hi = self.L.offsets[layer - 1], self.L.offsets[layer]
            anc = self.c.anc[:, layer - 1]
            on = self.c.code[:, lo:hi]
            # compiled (once loaded) for narrow layers; else a gather and one BLAS product
            kernel = self.L.kernel(0) if W.shape[0] <= MAPS_MAX_WIDTH else None
            if kernel is not None and self.G.strides[0] != 0:
                with compiled_calls():
                    G, off = kernel.layer_maps(self.G, self.off, np.ascontiguousarray(anc),
                                               np.ascontiguousarray(on),
                                               np.ascontiguousarray(W.T), b)
            else:
                if self.G.strides[0] == 0:  # the first layer's maps: one for every cell
                    M, off = self.G[0] * on[:, None, :], self.off[0] * on
                else:
                    M, off = np.take(self.G, anc, axis=0), np.take(self.off, anc, axis=0)
                    M *= on[:, None, :]
                    off *= on
                G = (M.reshape(-1, M.shape[2]) @ W.T).reshape(C, d, W.shape[0])
                off = off @ W.T + b
        self.G, self.off = G, off
        self.c.anc[:, layer] = np.arange(C)
        self.opened = layer
        kernel = self.L.kernel(0) if _KERNEL else None
        if kernel is not None and G.strides[0] != 0:  # compiled once loaded: one pass
            with compiled_calls():
                self.norms, inverse, self.near, self.side = kernel.layer_screen(
                    np.require(G, requirements="C"), np.require(off, requirements="C"),
                    self.c.centre, self.c.reach, ZERO_ROW_TOL, SAME_VALUE_TOL)
            self.inverse.append(inverse)
            return
        self.norms = np.sqrt(np.einsum("cdk,cdk->ck", G, G))
        live = self.norms > ZERO_ROW_TOL * (1.0 + np.abs(off))
        self.inverse.append(np.divide(1.0, self.norms, out=np.full_like(self.norms, np.nan),
                                      where=live))
        # each neuron against each cell's ball: its descendants lie in it, so a neuron that
        # misses the ball misses them (they lie on the side of the centre)
        zc = np.einsum("cd,cdk->ck", self.c.centre, G) + off
        spread = self.norms * self.c.reach[:, None]
        self.near = live & (np.abs(zc) <= spread + SAME_VALUE_TOL * (1.0 + spread + np.abs(off)))
        self.side = np.where(live, zc >= 0, off >= 0)

    def cut_layer(self, layer: int, k0: int, clock, budget: int) -> list[tuple[_Batch, int]]:
        """Cut every cell by each neuron of ``layer`` (opened) from ``k0`` on, until more
        than ``budget`` vertex rows are held (after at least one neuron). Returns the
        batches, in order, each with its next neuron (the layer's width: cut by all)."""
        n = self.G.shape[2]
        kernel = self.L.kernel(self.v.n * (n - k0), self.v.n / max(1, self.c.n))
        if kernel is not None and self.c.n:
            return self._cut_compiled(kernel, layer, k0, clock, budget)
        G = np.ascontiguousarray(self.G[:, :, k0:].transpose(2, 0, 1))  # neuron by neuron
        off, norms = self.off[:, k0:].T.copy(), self.norms[:, k0:].T.copy()
        near, side = self.near[:, k0:].T.copy(), self.side[:, k0:].T.copy()
        for k in range(k0, n):
            if k > k0 and self.v.n > budget:
                return [(self, k)]
            if clock is not None:
                clock.check()
            j = int(self.L.offsets[layer]) + k
            anc = self.c.anc[:, layer]
            bit = side[k - k0][anc]
            ids = np.flatnonzero(near[k - k0][anc])
            if ids.size:
                src = anc[ids]
                self._cut(ids, np.take(G[k - k0], src, axis=0), off[k - k0][src],
                          norms[k - k0][src], bit, self.n_region + j, code=j)
            else:
                self.c.code[:, j] = bit
        return [(self, n)]

    def _cut_compiled(self, kernel, layer: int, k0: int, clock,
                      budget: int) -> list[tuple[_Batch, int]]:
        """:meth:`cut_layer` by the compiled kernel, :data:`KERNEL_CHUNK` cells a call."""
        self._compact()
        c, v = self.c, self.v
        X, act = v.X, v.act
        if np.any(v.cell[1:] < v.cell[:-1]):  # group the vertices by cell
            by_cell = np.argsort(v.cell, kind="stable")
            X, act = np.take(X, by_cell, axis=0), np.take(act, by_cell, axis=0)
        vstart = np.zeros(c.n + 1, np.int64)
        np.cumsum(np.bincount(v.cell, minlength=c.n), out=vstart[1:])
        # the layer's maps, one row per cell (at a layer's start each cell is its own row)
        src = c.anc[:, layer]
        mine = src.size == self.off.shape[0] and np.array_equal(src, np.arange(src.size))
        # contiguous and writeable: one compiled signature (a read-only array is another)
        pick = (lambda a: np.require(a, requirements="CW")) if mine else \
            (lambda a: np.take(a, src, axis=0))
        G = np.ascontiguousarray(pick(self.G).transpose(0, 2, 1))
        off, norms, near, side = (pick(a) for a in (self.off, self.norms, self.near, self.side))
        lo_bit, hi_bit = self.L.offsets[layer], self.L.offsets[layer + 1]
        bits0 = np.ascontiguousarray(c.code[:, lo_bit:hi_bit])
        hyper0 = self.n_region + int(lo_bit)
        n = off.shape[1]
        out, held, stop = [], 0, (c.n, n)
        for lo in range(0, c.n, KERNEL_CHUNK):
            if held > budget:  # the chunks before hold enough: the rest waits
                stop = (lo, k0)
                break
            if clock is not None:
                clock.check()
            hi = min(c.n, lo + KERNEL_CHUNK)
            a, b = vstart[lo], vstart[hi]
            with compiled_calls():
                parent, bits, centre, reach, cell, Xo, acto, tally, err, at = kernel.cut_layer(
                    X[a:b], act[a:b], vstart[lo: hi + 1] - a, c.centre[lo:hi], c.reach[lo:hi],
                    G[lo:hi], off[lo:hi], norms[lo:hi], near[lo:hi], side[lo:hi], hyper0,
                    SNAP_TOL, RADIUS_TOL, SAME_VALUE_TOL, bits0[lo:hi], k0,
                    max(0, budget - held))
            self.tally.cuts += int(tally[0])
            self.tally.snapped += int(tally[1])
            self.tally.thin += int(tally[2])
            if err[0] == 1:
                raise Undecided(f"every vertex of a cell lies on hyperplane {int(err[1])}")
            if err[0] == 2:
                raise Undecided(f"a cut by hyperplane {int(err[1])} has fewer than {self.d} "
                                "vertices on its section")
            if out:  # cells numbered after the chunks before
                parent, cell = parent + lo, cell + sum(o[0].size for o in out)
            out.append((parent, bits, centre, reach, cell, Xo, acto))
            held += Xo.shape[0]
            if at[0] < hi - lo:  # stopped: more than `budget` rows held
                stop = (lo + int(at[0]), int(at[1]))
                break
        parent, bits, centre, reach, cell, Xo, acto = (
            out[0] if len(out) == 1 else (np.concatenate(col) for col in zip(*out)))
        code = np.take(c.code, parent, axis=0)
        code[:, lo_bit:hi_bit] = bits
        done = _Batch(self.L, self.tally, _Store(code=code, centre=centre, reach=reach,
                                                 anc=np.take(c.anc, parent, axis=0)),
                      _Store(X=Xo, cell=cell, act=acto),
                      list(self.inverse), self.opened, self.G, self.off)
        done.norms, done.near, done.side = self.norms, self.near, self.side
        i, k = stop
        if i == c.n:
            return [(done, n)]
        # cells before i: cut by the layer; i's pieces: up to neuron k (if it was begun);
        # the cells after: not yet
        first = int(np.searchsorted(parent, i))
        batches = [(done.carve(0, first), n)] if first else []
        if k > k0:
            batches.append((done.carve(first, parent.size), k))
            i += 1
        if i < c.n:
            batches.append((self.carve(i, c.n), k0))
        return batches

    def carve(self, a: int, b: int) -> _Batch:
        """Cells ``a`` to ``b`` (copied) as a batch of their own, at the same point of the
        layer (the layer's maps shared)."""
        self._compact()
        cell = self.v.cell
        if not np.any(cell[1:] < cell[:-1]):  # grouped by cell: one range
            va, vb = np.searchsorted(cell, [a, b])
            v = self.v.rows(va, vb)
        else:
            v = self.v.compress((cell >= a) & (cell < b))
        v.cell[:] -= a
        part = _Batch(self.L, self.tally, self.c.rows(a, b), v, list(self.inverse),
                      self.opened, self.G, self.off)
        part.norms, part.near, part.side = self.norms, self.near, self.side
        return part

    def split(self, size: int, order, decided: int) -> list[_Batch]:
        """This batch as batches of at most ``size`` cells (``order(codes, centres)``: the
        cells' order by their first ``decided`` bits, or None), at the start of a layer
        (after :meth:`open`) or within it."""
        self._compact()
        C = self.c.n
        ranked = order(self.c.code[:, :decided], self.c.centre)
        lo = self.opened  # the maps of earlier layers are shared, the current one's split
        fresh = np.array_equal(self.c.anc[:, lo], np.arange(C))  # each cell its maps' row
        if ranked is None and not np.any(self.v.cell[1:] < self.v.cell[:-1]):
            if not fresh:
                cuts = np.cumsum([0] + [len(ids) for ids in
                                        np.array_split(np.arange(C), -(-C // size))])
                return [self.carve(a, b) for a, b in zip(cuts[:-1], cuts[1:])]
            return self._split_in_order(size)
        ranked = np.arange(C) if ranked is None else ranked
        pieces = []
        for ids in np.array_split(ranked, -(-C // size)):
            ids = np.sort(ids)
            c = self.c.take(ids)
            rows = ids  # the rows of the layer's maps these cells use
            if fresh:
                c.anc[:, lo] = np.arange(ids.size)
            else:
                rows, c.anc[:, lo] = np.unique(c.anc[:, lo], return_inverse=True)
            mine = np.zeros(C, bool)
            mine[ids] = True
            renumber = np.full(C, -1, np.int64)
            renumber[ids] = np.arange(ids.size)
            v = self.v.compress(mine[self.v.cell])
            v.cell[:] = renumber[v.cell]
            inverse = [*self.inverse[:lo], np.take(self.inverse[lo], rows, axis=0)]
            part = _Batch(self.L, self.tally, c, v, inverse, lo, np.take(self.G, rows, axis=0),
                          np.take(self.off, rows, axis=0))
            part.norms = np.take(self.norms, rows, axis=0)
            part.near = np.take(self.near, rows, axis=0)
            part.side = np.take(self.side, rows, axis=0)
            pieces.append(part)
        return pieces

    def _split_in_order(self, size: int) -> list[_Batch]:
        """:meth:`split` of a batch whose vertices are grouped by cell in order, into runs
        of consecutive cells (copied ranges: no gathers, no pass over the whole batch per
        part)."""
        C, lo = self.c.n, self.opened
        ends = np.cumsum([len(ids) for ids in np.array_split(np.arange(C), -(-C // size))])
        cuts = np.concatenate([[0], ends])
        vcuts = np.searchsorted(self.v.cell, cuts)  # each run's first vertex row
        pieces = []
        for a, b, va, vb in zip(cuts[:-1], cuts[1:], vcuts[:-1], vcuts[1:]):
            c = self.c.rows(a, b)
            c.anc[:, lo] = np.arange(b - a)
            v = _Store(X=self.v.X[va:vb].copy(), cell=self.v.cell[va:vb] - a,
                       act=self.v.act[va:vb].copy())
            inverse = [*self.inverse[:lo], self.inverse[lo][a:b].copy()]
            part = _Batch(self.L, self.tally, c, v, inverse, lo, self.G[a:b].copy(),
                          self.off[a:b].copy())
            part.norms, part.near, part.side = (x[a:b].copy() for x in
                                                (self.norms, self.near, self.side))
            pieces.append(part)
        return pieces

    # ---------------------------------------------------------------- cuts
    def _cut(self, ids: np.ndarray, a: np.ndarray, c: np.ndarray, norm: np.ndarray,
             bit: np.ndarray, hyper: int, code: int | None = None, region: bool = False) -> None:
        """Cut cells ``ids`` by ``a_i·u + c_i = 0`` (row ``i`` of ``a``, ``c`` and the norms
        ``norm`` of ``a`` for cell ``ids[i]``); ``bit``: every cell's side (on iff ``>= 0``),
        set here for ``ids`` (the other cells lie wholly on theirs).

        ``code``: the neuron's column of the codes; ``region``: a region row (``a·u + c >= 0``
        inside), the cells' other side is dropped."""
        cells, verts = self.c, self.v
        C = cells.n
        const = norm <= ZERO_ROW_TOL * (1.0 + np.abs(c))
        zc = np.einsum("ij,ij->i", np.take(cells.centre, ids, axis=0), a) + c
        # cells whose vertices all lie strictly on one side, by a ball around the centre
        spread = norm * cells.reach[ids]
        open_ = ~const & (np.abs(zc) <= spread + SAME_VALUE_TOL * (1.0 + spread + np.abs(c)))
        bit[ids] = np.where(const, c >= 0, zc >= 0)
        cut = np.zeros(C, bool)
        if open_.any():
            opened = ids[open_]
            at = np.full(C + 1, -1, np.int64)  # the last entry: the dead rows' cell -1
            at[opened] = np.flatnonzero(open_)
            rows = np.flatnonzero(at[verts.cell] >= 0)
            rc = verts.cell[rows]
            i = at[rc]
            X = np.take(verts.X, rows, axis=0)
            dist = (np.einsum("ij,ij->i", X, np.take(a, i, axis=0)) + c[i]) / norm[i]
            near = np.abs(dist) <= SNAP_TOL  # on the hyperplane
            self.tally.snapped += int(near.sum())
            sign = np.sign(dist).astype(np.int8)
            sign[near] = 0
            top, bottom = np.zeros(C), np.zeros(C)
            off_plane = np.where(near, 0.0, dist)
            np.maximum.at(top, rc, off_plane)
            np.minimum.at(bottom, rc, off_plane)
            cut = (top > 0) & (bottom < 0)
            if np.any(top[opened] == bottom[opened]):  # both 0 (top >= 0 >= bottom)
                raise Undecided(f"every vertex of a cell lies on hyperplane {hyper}")
            bit[opened] = top[opened] > 0
            zero = rows[near]
            if zero.size:
                verts.act[zero] = np.take(verts.act, zero, axis=0) | _bits(hyper, self.words)
        if code is not None:
            cells.code[:, code] = bit
        if region and not bit[~cut].all():
            raise Undecided("a region row leaves a cell no interior")
        if cut.any():
            mine = np.flatnonzero(cut[rc])
            mine = mine[np.argsort(rc[mine], kind="stable")]  # grouped by cell
            self._split(rows[mine], rc[mine], np.take(X, mine, axis=0), sign[mine], dist[mine],
                        top, bottom, hyper, code, region)

    def _split(self, rows, rc, X, sign, dist, top, bottom, hyper, code, region) -> None:
        """Cut the cells of ``rc`` (their vertices' rows, grouped by cell, with their
        coordinates ``X``, sides ``sign`` and signed distances ``dist``; ``top``, ``bottom``
        the largest distance on each side, by cell)."""
        cells, verts = self.c, self.v
        act = np.take(verts.act, rows, axis=0)
        first = np.empty(rc.size, bool)  # rc is grouped: a cell's first row
        first[0] = True
        np.not_equal(rc[1:], rc[:-1], out=first[1:])
        start = np.flatnonzero(first)
        ids = rc[start]
        S = ids.size
        slot = np.cumsum(first) - 1  # each row's cell, as 0 .. S-1
        count = np.bincount(slot, minlength=S)
        # candidate edges: each "on" vertex with each "off" vertex of its cell
        pos = np.flatnonzero(sign > 0)
        neg = np.flatnonzero(sign < 0)
        n_neg = np.bincount(slot[neg], minlength=S)
        neg_start = np.cumsum(n_neg) - n_neg
        rep = n_neg[slot[pos]]
        p = np.repeat(pos, rep)
        q = neg[np.repeat(neg_start[slot[pos]] - np.cumsum(rep) + rep, rep) + np.arange(p.size)]
        shared = np.take(act, p, axis=0) & np.take(act, q, axis=0)
        n_shared = np.bitwise_count(shared).sum(axis=1)
        keep_pair = n_shared >= self.d - 1
        p, q, shared, n_shared = p[keep_pair], q[keep_pair], shared[keep_pair], n_shared[keep_pair]
        # Two simple vertices (each on exactly d hyperplanes: independent ones, as every
        # vertex is made on an edge crossed transversally) sharing d - 1 hyperplanes lie on
        # the line those meet in, which meets the cell in a face: they span an edge. Other
        # pairs span an edge iff no third vertex of the cell lies on every hyperplane they
        # share (the smallest face holding both has no other vertex).
        degree = np.bitwise_count(act).sum(axis=1)
        check = np.flatnonzero((n_shared >= self.d) | (degree[p] > self.d) | (degree[q] > self.d))
        edge = np.ones(p.size, bool)
        if check.size:
            rep = count[slot[p[check]]]
            pair = np.repeat(np.arange(check.size), rep)
            w = np.repeat(start[slot[p[check]]] - np.cumsum(rep) + rep, rep) + np.arange(pair.size)
            sh = np.take(shared[check], pair, axis=0)
            on_all = np.all((np.take(act, w, axis=0) & sh) == sh, axis=1)
            edge[check] = np.bincount(pair, weights=on_all, minlength=check.size) == 2
        p, q, shared = p[edge], q[edge], shared[edge]
        owner = slot[p]
        section = np.bincount(owner, minlength=S) + np.bincount(slot[sign == 0], minlength=S)
        if np.any(section < self.d):
            raise Undecided(f"a cut by hyperplane {hyper} has fewer than {self.d} vertices "
                            "on its section")
        t = dist[p] / (dist[p] - dist[q])
        Xp = np.take(X, p, axis=0)
        X_new = Xp + t[:, None] * (np.take(X, q, axis=0) - Xp)
        act_new = shared | _bits(hyper, self.words)
        up, z, down = sign > 0, sign == 0, sign < 0
        # a side too thin for a polytope (its Chebyshev radius is below RADIUS_TOL) is cut
        # off and dropped, like a region row's outside
        keep_on = (top[ids] > RADIUS_TOL) if not region else np.ones(S, bool)
        keep_off = (-bottom[ids] > RADIUS_TOL) & (not region)
        if region and np.any(top[ids] <= RADIUS_TOL):
            raise Undecided("a region row leaves a cell no interior")
        both = keep_on & keep_off
        one = keep_on ^ keep_off
        self.tally.cuts += int(both.sum())
        self.tally.thin += 0 if region else int((~both).sum())
        if both.any():  # the "off" side keeps the cell, the "on" side becomes a new one
            b_ids = ids[both]
            new_ids = cells.append(code=np.take(cells.code, b_ids, axis=0),
                                   centre=np.take(cells.centre, b_ids, axis=0),
                                   reach=cells.reach[b_ids],
                                   anc=np.take(cells.anc, b_ids, axis=0))
            if code is not None:
                cells.code[b_ids, code] = False
                cells.code[new_ids, code] = True
            k = np.cumsum(both) - 1  # slot -> index among the cells cut in two
            twin = new_ids[k]
            mine = both[slot]
            verts.cell[rows[mine & up]] = twin[slot[mine & up]]
            zb, mb = mine & z, both[owner]
            Xz, Xn = np.compress(zb, X, axis=0), np.compress(mb, X_new, axis=0)
            An = np.compress(mb, act_new, axis=0)
            verts.append(X=np.vstack([Xz, Xn, Xn]),
                         cell=np.concatenate([twin[slot[zb]], ids[owner[mb]], twin[owner[mb]]]),
                         act=np.vstack([np.compress(zb, act, axis=0), An, An]))
            n2 = int(both.sum())
            grp = np.concatenate([k[slot[mine & ~up]], n2 + k[slot[mine & ~down]],
                                  k[owner[mb]], n2 + k[owner[mb]]])
            self._recentre(np.concatenate([b_ids, new_ids]), grp,
                           np.vstack([np.compress(mine & ~up, X, axis=0),
                                      np.compress(mine & ~down, X, axis=0), Xn, Xn]),
                           2 * n2)
        if one.any():  # the cell keeps its thick side, in place
            gone = one[slot] & np.where(keep_on[slot], down, up)
            self._drop_rows(rows[gone])
            mine = one[owner]
            verts.append(X=np.compress(mine, X_new, axis=0), cell=ids[owner[mine]],
                          act=np.compress(mine, act_new, axis=0))
            if code is not None:
                cells.code[ids[one], code] = keep_on[one]
            stay = one[slot] & ~gone
            self._recentre(ids[one], np.concatenate([np.cumsum(one)[slot[stay]] - 1,
                                                     np.cumsum(one)[owner[mine]] - 1]),
                           np.vstack([np.compress(stay, X, axis=0),
                                      np.compress(mine, X_new, axis=0)]), int(one.sum()))
        if not (keep_on | keep_off).all():  # both sides thin: the cell holds no polytope
            self._drop_cells(ids[~(keep_on | keep_off)])

    def keep(self, mask: np.ndarray) -> None:
        """Keep only the cells where ``mask``."""
        if not mask.all():
            self._drop_cells(np.flatnonzero(~mask))

    def _drop_rows(self, rows: np.ndarray) -> None:
        """Remove vertex rows (a side cut off): marked ``cell = -1``, compacted later."""
        self.v.cell[rows] = -1
        self.dead += rows.size

    def _drop_cells(self, ids: np.ndarray) -> None:
        """Remove cells (too thin for a polytope) and their vertices."""
        dead = np.zeros(self.c.n + 1, bool)  # the last entry: the dead rows' cell -1
        dead[ids] = True
        self._drop_rows(np.flatnonzero(dead[self.v.cell] & (self.v.cell >= 0)))
        live = ~dead[:-1]
        renumber = np.append(np.cumsum(live) - 1, -1)
        self.v.cell[:] = renumber[self.v.cell]
        self.c = self.c.take(np.flatnonzero(live))

    def _compact(self) -> None:
        """Forget the dropped vertex rows."""
        if self.dead:
            self.v = self.v.compress(self.v.cell >= 0)
            self.dead = 0

    def _recentre(self, ids: np.ndarray, slot: np.ndarray, X: np.ndarray, n: int) -> None:
        """The centre and reach of cells ``ids`` from their vertices ``X`` (cell ``ids[slot]``)."""
        count = np.bincount(slot, minlength=n)
        centre = np.stack([np.bincount(slot, weights=X[:, j], minlength=n)
                           for j in range(self.d)], axis=1) / count[:, None]
        gap = X - np.take(centre, slot, axis=0)
        gap = np.einsum("ij,ij->i", gap, gap)
        reach = np.zeros(n)
        np.maximum.at(reach, slot, gap)
        self.c.centre[ids] = centre
        self.c.reach[ids] = np.sqrt(reach)

    # ---------------------------------------------------------------- the result
    def cells(self, order) -> Cells:
        """The finished cells (``order(codes, centres)``: their order, or None)."""
        self._compact()
        cells, verts = self.c, self.v
        radii = self._radii()
        ranked = order(cells.code, cells.centre)
        if ranked is None:
            if not np.any(verts.cell[1:] < verts.cell[:-1]):  # in order already (the kernel's)
                starts = np.zeros(cells.n + 1, np.int64)
                np.cumsum(np.bincount(verts.cell, minlength=cells.n), out=starts[1:])
                return Cells(codes=cells.code, vertices=verts.X, starts=starts,
                             centres=cells.centre, radii=radii)
            ranked = np.arange(cells.n)
        rank = np.empty(cells.n, np.int64)
        rank[ranked] = np.arange(cells.n)
        by_cell = np.argsort(rank[verts.cell], kind="stable")
        starts = np.zeros(cells.n + 1, np.int64)
        np.cumsum(np.bincount(verts.cell, minlength=cells.n)[ranked], out=starts[1:])
        return Cells(codes=np.take(cells.code, ranked, axis=0),
                     vertices=np.take(verts.X, by_cell, axis=0), starts=starts,
                     centres=np.take(cells.centre, ranked, axis=0), radii=radii[ranked])

    def _radii(self) -> np.ndarray:
        """Each centre's distance to its cell's nearest hyperplane: the region's rows and
        every neuron's, on the side the code gives (the pre-activations by a forward pass
        through the code-masked layers: the cell's own maps, up to rounding)."""
        cells, fr = self.c, self.L.frame
        u = cells.centre
        r = 1.0 - np.abs(u).max(axis=1, initial=0.0)  # the frame box [-1, 1]^d
        if fr.A_extra.shape[0]:
            A = fr.A_extra
            r = np.minimum(r, np.min((fr.b_extra - u @ A.T) / np.linalg.norm(A, axis=1), axis=1))
        h = u
        kernel = self.L.kernel(0) if _KERNEL else None  # compiled if loaded for the cuts
        for layer in range(len(self.inverse)):  # the layers cut so far
            W, bias = self.L.weights[layer], self.L.biases[layer]
            z = h @ W.T + bias
            if kernel is not None:  # compiled: the same numbers, no temporaries
                with compiled_calls():
                    kernel.layer_slack(z, cells.code, int(self.L.offsets[layer]),
                                       self.inverse[layer],
                                       np.ascontiguousarray(cells.anc[:, layer]), r)
                h = z
                continue
            code = cells.code[:, self.L.offsets[layer]: self.L.offsets[layer + 1]]
            h = z * code
            slack = h - z
            slack += h  # z where the neuron is on, -z where off
            slack *= np.take(self.inverse[layer], cells.anc[:, layer], axis=0)
            # fmin skips the NaN of constant neurons (no hyperplane)
            r = np.fmin(r, np.fmin.reduce(slack, axis=1, initial=np.inf))
        return r
