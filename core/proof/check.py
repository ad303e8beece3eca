"""An independent checker of polytrav's ``unsat`` certificates (format: docs/proofs.md).

``check_proof(network_file, property_file, certificate)`` answers ``valid``, ``invalid: step
N ...`` (the first step that fails) or ``incomplete: step N ...`` (no step fails, but step N
is a claim the certificate carries no evidence for, e.g. a box left to the traversal).

What it trusts: polytrav's readers of the network (:meth:`Network.from_onnx
<polytrav.model.network.Network.from_onnx>`, ``from_nnet``: the weights as float64 arrays)
and of the property (:func:`~polytrav.verification.vnnlib.read_vnnlib`: per case an input box
and an unsafe set ``C y <= d`` in DNF), NumPy's IEEE float64 arithmetic (round to nearest;
any summation order) and Python. It imports nothing of polytrav's bounds, solve, traversal
or host layers (``tests/unit/test_layers.py``): every bound is recomputed here.

A certificate per case of the property is a tree over the case's input box. A *split* node
halves its box at one coordinate and one float value (the children ``x_d <= at`` and ``x_d
>= at`` tile the box exactly, by construction: a gap or an overlap cannot be written). A
*bound* leaf carries, per disjunct ``C_q y <= d_q`` of the unsafe set, multipliers
``lam >= 0`` over its rows; the checker proves ``lam . (C_q y - d_q) > 0`` on the leaf's box,
so no point of the box meets the disjunct. It computes its own CROWN bound: every hidden
layer's pre-activation bounds by back-substitution, ReLU relaxed by ``alpha z <= relu(z) <=
s z + t`` (``alpha`` = 1 where ``hi >= -lo``, else 0; the chord, its intercept rounded up
until it provably lies above relu), then the rows' affine lower bounds in ``x``, combined
with ``lam`` and minimised over the box. Rounding: every float product ``fl(A @ B)`` is
off by at most ``gamma_n |A| @ |B|`` (``n`` the inner dimension); the checker carries these
terms, times bounds of ``|x|``, ``|a|`` and ``|z|``, as a *slack* that it subtracts, with
constants twice the classical ones (which also covers rounding the slack itself) and
:data:`TINY` for underflow. A *difference* leaf (version 3, two networks' ε-equivalence)
bounds ``g - f`` the same way on the networks' difference system (:func:`difference_bounder`).
NumPy + the standard library only.
"""
from __future__ import annotations

import hashlib
import io
import json
import sys
import zipfile
from dataclasses import dataclass
from fractions import Fraction
from types import SimpleNamespace

from polytrav.vocabulary.threads import one_thread

if sys.argv and sys.argv[0].endswith("polytrav-check-proof"):  # the console script: before
    one_thread()  # NumPy loads, one BLAS thread as polytrav's commands (docs/proofs.md)
import numpy as np  # noqa: E402

__all__ = ["FORMAT", "VERSION", "VERSIONS", "SPLIT", "BOUND", "OPEN", "SETTLED", "PHASE",
           "DIFF", "KIND_NAMES", "CLAIMS", "Bounder", "CheckResult", "check_proof",
           "check_diff_proof", "check_range_proof", "check_ball_proof", "joint_layers",
           "aligned", "matched_bounds", "difference_layers", "difference_bounder",
           "difference_margins", "diff_claim",
           "range_claim", "ball_claim",
           "network_digest", "property_digest", "main"]

#: The format written, and the versions read (1: input splits only; 2 adds phase splits and
#: multipliers of phase constraints, ``beta``; 3 adds difference-bound leaves; 4 bounds a
#: difference leaf in a phase tree with the joint network's bounds on its region; 5 meets
#: each network's bounds with their interval there, so 3 and 4, whose leaves a looser or
#: other bound proved, are no longer read).
FORMAT, VERSION, VERSIONS = "polytrav-proof", 5, (1, 2, 5)
#: Node kinds: a split of the box, a bound leaf, two leaves without evidence (a box left
#: open for the traversal; a case the input split did not settle), a split of one hidden
#: neuron's phase (version 2), a leaf bounded on the two networks' difference (version 3,
#: ``epsilon-equivalence`` only: :func:`difference_bounder`).
SPLIT, BOUND, OPEN, SETTLED, PHASE, DIFF = 0, 1, 2, 3, 4, 5
KIND_NAMES = {SPLIT: "split", BOUND: "bound", OPEN: "traversal claim", SETTLED: "claim",
              PHASE: "phase split", DIFF: "difference bound"}
#: The claims a certificate may make: a property's unsat; diff's ε-equivalence of two networks.
CLAIMS = ("unsat", "epsilon-equivalence", "output-range", "counterfactual")
BETA = ("node", "row", "on", "value")  # the sparse multipliers' arrays (case{k}_beta_...)
#: and the sparse slopes' (case{k}_alpha_...): a leaf's lower slope of a neuron in a row
ALPHA = BETA
U = 2.0 ** -53  # float64's unit roundoff
TINY = 1e-300  # covers underflow: at most n * 2^-1074 per product of length n
CHUNK = 32  # boxes bounded at once (few: the rows are the union of their unstable neurons)


@dataclass(frozen=True)
class CheckResult:
    """The checker's answer: ``status`` ``valid``, ``invalid`` or ``incomplete``; the step
    (None when valid) and what it found."""

    status: str
    step: int | None = None
    message: str = ""

    def __str__(self) -> str:
        if self.status == "valid":  # (a range's: the values at its witnesses)
            return "valid" + (f" ({self.message})" if self.message else "")
        return f"{self.status}: step {self.step} {self.message}"

    @property
    def exit_code(self) -> int:
        return {"valid": 0, "invalid": 1, "incomplete": 2}[self.status]


def _bytes(a) -> bytes:
    a = np.ascontiguousarray(a, dtype="<f8")
    return np.asarray(a.shape, "<i8").tobytes() + a.tobytes()


def network_digest(network) -> str:
    """sha256 of the network's layers as float64 (what was verified, whatever the file)."""
    h = hashlib.sha256()
    for W, b in zip(network.weights, network.biases):
        h.update(_bytes(W) + _bytes(b))
    return h.hexdigest()


def property_digest(spec) -> str:
    """sha256 of the property's cases: boxes, input rows, unsafe sets."""
    h = hashlib.sha256()
    for case in spec.cases:
        h.update(_bytes(case.lower) + _bytes(case.upper))
        if case.A is not None:
            h.update(_bytes(case.A) + _bytes(case.b))
        for C, d in case.unsafe:
            h.update(b"|" + _bytes(C) + _bytes(d))
    return h.hexdigest()


# ------------------------------------------------------------------ sound arithmetic

def _gam(n: int) -> float:
    """Twice the classical ``gamma_n = n u / (1 - n u)``: a float dot product of length ``n``
    is off by at most ``gamma_n`` times the dot product of the absolute values."""
    return 2.0 * (n + 2) * U


def _up(x):
    """An upper bound of the exact value of ``x``, a float result of at most three roundings."""
    return np.nextafter(x + np.abs(x) * (8 * U) + TINY, np.inf)


def _upsum(x, n: int):
    """An upper bound of a sum of ``n`` non-negative products computed in float as ``x``."""
    return _up(x * (1.0 + _gam(n)))


def _relaxation(lo, hi):
    """ReLU's lines ``alpha z <= relu(z) <= s z + t`` on ``[lo, hi]``, valid in exact
    arithmetic for the float values returned (``t`` rounded up: ``s lo + t >= 0`` and
    ``s hi + t >= hi``, so the line lies above relu on the interval)."""
    active, inactive = lo >= 0, hi <= 0
    unstable = ~active & ~inactive
    width = np.where(unstable, hi - lo, 1.0)
    s = np.clip(np.where(active, 1.0, np.where(unstable, hi / width, 0.0)), 0.0, 1.0)
    t = np.where(unstable, np.maximum(_up(-s * lo), _up(hi * (1.0 - s))), 0.0)
    alpha = np.where(active | (unstable & (hi >= -lo)), 1.0, 0.0)
    return alpha, s, t


def _interval(W, b, lo, hi):
    """Bounds of ``W a + b`` over the boxes ``a`` in ``[lo, hi]`` (``(B, n)``), rounded
    outwards: ``W c + b -+ |W| r`` with ``[lo, hi]`` in ``c -+ r``, less the products'
    rounding (``gamma_{n+1}`` of the absolute values)."""
    c = (lo + hi) / 2
    r = np.nextafter(np.maximum(hi - c, c - lo), np.inf)
    A = np.abs(W).T
    mid, rad = c @ W.T + b, r @ A
    err = _up(_gam(W.shape[1] + 1) * (np.abs(c) @ A + np.abs(b) + rad))
    mag = _up(8 * U * (np.abs(mid) + rad + err))
    return (np.nextafter(mid - rad - err - mag, -np.inf),
            np.nextafter(mid + rad + err + mag, np.inf))


def _rowsum(L, v):
    """``sum_n L[b, r, n] v[b, n]`` (in any order, as every product here)."""
    return np.matmul(L, v[..., None])[..., 0]


class Bounder:
    """Rigorous CROWN bounds of a network on a batch of boxes ``[lo, hi]`` (``(B, n_in)``).

    ``prior``: per hidden layer, bounds that hold on each box's region (its parent's: the
    neurons stable there keep them, the others are bounded again). ``sigma`` (``(B, neurons)``): the phases the region
    imposes (+1: ``z >= 0``, -1: ``z <= 0``; version 2's phase splits), which clamp the
    bounds. ``beta(bounder, k, j)``: per layer ``i < k``, the multipliers of the rows
    bounding layer ``k``'s neurons ``j`` (``(B, 2 len(j), n_i)``: lower bounds of ``z_j``,
    then of ``-z_j``), or None; called once the layers below ``k`` are bounded. ``relax(self,
    k, zlo, zhi)``: layer ``k``'s bounds (tightened), lines ``(alpha, s, t, tl)`` (``alpha z + tl
    <= a <= s z + t``, ``tl <= 0 <= t``; with ``cross = (lp, up)``, the second half's lines
    also have ``lp z`` and ``up z`` of the first half's same neuron, else None) and the bound
    of ``|a|`` (default ReLU's, ``tl`` and ``cross`` None); ``inexact``: the layers' floats are each the rounding of an exact value (off by at
    most ``u`` times itself: :func:`difference_layers`). ``again``: per hidden layer, which
    neurons of either sign on the ``prior`` are bounded again on each box (``(B, n)``; default
    all; the others keep the prior's bounds, which hold). ``interval`` (plain ReLU layers, no
    ``prior``): each layer's bounds are met with its interval bound from the bounds below
    (:func:`_interval`; two bounds that hold: so does their meet)."""

    def __init__(self, layers, lo, hi, prior=None, sigma=None, beta=None, relax=None,
                 inexact=False, again=None, interval=False):
        self.layers = layers
        self.inexact = int(bool(inexact))
        self.m = (lo + hi) / 2
        self.r = np.nextafter(np.maximum(hi - self.m, self.m - lo), np.inf)  # box in m +- r
        self.xmax = np.maximum(np.abs(lo), np.abs(hi))
        # the slack's terms are non-negative floats computed plainly: each is at least its
        # exact value times (1 - u)^chain, chain the roundings along it (dot products, sums)
        self.chain = sum(W.shape[0] + W.shape[1] + 12 for W, _ in layers)
        self.relu = []  # per hidden layer: (alpha, s, t, tl, cross) (tl None: 0; cross below)
        self.weights = []  # per layer j: the slack's weights on |Lz| (see affine), twice
        self.bounds = []  # per hidden layer: (lo, hi) of z on each box
        self.signs = []  # per hidden layer: +1 / -1 where z >= 0 / z <= 0 is known, else 0
        amax = self.xmax
        start = 0
        for k in range(len(layers) - 1):
            W, b = layers[k]
            n = W.shape[0]
            plain = _gam(n + self.inexact) * (amax @ np.abs(W).T + np.abs(b))
            self.weights.append((plain, None))
            if prior is None:
                zlo, zhi, j = np.empty((lo.shape[0], n)), np.empty((lo.shape[0], n)), np.arange(n)
            else:  # the parent's bounds hold on its sub-regions: its stable neurons stay
                zlo, zhi = prior[k][0].copy(), prior[k][1].copy()
                keep = (zlo >= 0) | (zhi <= 0) | (False if again is None else ~again[k])
                j = np.flatnonzero(~keep.all(axis=0))
            if len(j):  # +-z_j = +-(W[j] a + b[j]): exact rows on the layer's input
                rows, const = np.vstack([W[j], -W[j]]), np.concatenate([b[j], -b[j]])
                low = self.lower(*self.affine(np.broadcast_to(rows, (lo.shape[0],) + rows.shape),
                                              k, const=const,
                                              beta=None if beta is None else beta(self, k, j)))
                if self.inexact:  # the rows W[j], b[j] are off by u (|W[j]| amax + |b[j]|)
                    low = np.nextafter(low - np.tile(plain[:, j], 2), -np.inf)
                nlo, nhi = low[:, :len(j)], np.maximum(-low[:, len(j):], low[:, :len(j)])
                if prior is not None:  # a neuron stable on the parent (as in the split), or
                    # not bounded again, keeps its bounds on its box, whichever boxes of the
                    # batch bound it again
                    nlo, nhi = (np.where(keep[:, j], zlo[:, j], nlo),
                                np.where(keep[:, j], zhi[:, j], nhi))
                zlo[:, j], zhi[:, j] = nlo, nhi
            if interval:
                ilo, ihi = _interval(W, b, *((lo, hi) if k == 0 else
                                             (np.maximum(z, 0.0) for z in self.bounds[-1])))
                zlo, zhi = np.maximum(zlo, ilo), np.minimum(zhi, ihi)
            if sigma is not None:  # the region's phases: z >= 0 or z <= 0 on it
                sk = sigma[:, start:start + n]
                zlo, zhi = np.where(sk > 0, np.maximum(zlo, 0.0), zlo), np.where(
                    sk < 0, np.minimum(zhi, 0.0), zhi)
            if relax is None:
                lines, amax = _relaxation(zlo, zhi) + (None, None), np.maximum(zhi, 0.0)
            else:
                zlo, zhi, lines, amax = relax(self, k, zlo, zhi)
            self.bounds.append((zlo, zhi))
            self.signs.append(np.where(zlo >= 0, 1.0, np.where(zhi <= 0, -1.0, 0.0)))
            self.relu.append(lines)
            self.weights[k] = (plain, plain + 4 * U * np.maximum(np.abs(zlo), np.abs(zhi)))
            start += n
        W, b = layers[-1]
        self.weights.append((_gam(W.shape[0] + self.inexact) * (amax @ np.abs(W).T + np.abs(b)),
                             None))

    def affine(self, Lz, k, boxes=slice(None), const=None, beta=None, slopes=None):
        """``(Lx, g, slack)`` with ``Lz . z_k >= Lx . x + g - slack`` on each of the ``boxes``
        (default all), where ``z_k = W_k a_{k-1} + b_k`` (``a_{-1} = x``) and ``Lz`` is
        ``(B, R, n_k)``; with ``const`` (``(R,)``), of ``Lz . a_{k-1} + const`` instead.
        ``beta``: per layer ``i < k`` (a dict), multipliers ``(B, R, n_i) >= 0`` of the known
        phases ``sign z_i >= 0``: the function bounded is less ``beta sign z_i`` (``<= 0`` on
        the region), a lower bound of it. ``slopes``: per layer (a dict), lower slopes ``(B, R,
        n_i)`` in ``[0, 1]`` (NaN: none given) of its unstable neurons instead of ``alpha``.

        ``Lz . z_j = (Lz W_j) . a + Lz . b_j``: ``fl(Lz W_j)`` and ``fl(Lz . b_j)`` are off by
        at most ``gamma |Lz| |W_j|`` and ``gamma |Lz| |b_j|``; with ``|a| <= amax`` their
        terms are ``|Lz| . weights`` (``gamma (|W_j| amax + |b_j|)``); below layer ``k``,
        ``Lz = fl(Lam * slope)`` is off by ``u |Lz|`` per entry, times ``|z| <= zmax``
        (``4 u zmax`` in the weights), and ``fl(Lz - beta sign)`` by ``u (|Lz| + beta)``.
        Each update of ``g`` rounds by at most ``u |g|``.
        """
        g = np.zeros(Lz.shape[:2])
        slack = np.zeros(Lz.shape[:2])
        for j in range(k, -1, -1):
            W, b = self.layers[j]
            if beta is not None and j in beta:  # Lz is on z_j: less beta sign z_j
                zlo, zhi = self.bounds[j]
                zmax = np.maximum(np.abs(zlo), np.abs(zhi))[boxes]
                slack = slack + 2 * U * _rowsum(np.abs(Lz) + beta[j], zmax)
                Lz = Lz - beta[j] * self.signs[j][boxes][:, None, :]
            Lz = np.ascontiguousarray(Lz)  # (a broadcast array would leave BLAS out)
            if const is not None and j == k:  # the rows are on a_{k-1} already, exactly
                Lam, g = Lz, g + const
            else:
                weights = self.weights[j][0 if j == k else 1][boxes]
                Lam = Lz @ W
                g = g + Lz @ b
                slack = slack + _rowsum(np.abs(Lz), weights) + 2 * U * np.abs(g)
            if j == 0:
                return Lam, g, _up(slack * (1.0 + _gam(self.chain)))
            alpha, s, t, tl = (None if a is None else a[boxes][:, None, :]
                               for a in self.relu[j - 1][:4])
            if slopes is not None and j - 1 in slopes:  # any slope in [0, 1] of the unstable
                zlo, zhi = (z[boxes][:, None, :] for z in self.bounds[j - 1])
                given = (zlo < 0) & (zhi > 0) & (slopes[j - 1] >= 0) & (slopes[j - 1] <= 1)
                alpha = np.where(given, slopes[j - 1], alpha)
            pos, neg = np.maximum(Lam, 0.0), np.minimum(Lam, 0.0)
            Lz = pos * alpha + neg * s  # (one term is 0: exactly fl(Lam * slope))
            if self.relu[j - 1][4] is not None:  # the second half's lines also read the first's
                n = Lam.shape[2] // 2
                lp, up = (a[boxes][:, None, :] for a in self.relu[j - 1][4])
                cross = pos[..., n:] * lp + neg[..., n:] * up
                Lz[..., :n] += cross
                zlo, zhi = (z[boxes][:, :n] for z in self.bounds[j - 1])
                slack = slack + 4 * U * _rowsum(np.abs(cross) + np.abs(Lz[..., :n]),
                                                np.maximum(np.abs(zlo), np.abs(zhi)))
            lost = -_rowsum(neg, t[:, 0])  # sum of Lam t over Lam < 0, negated
            if tl is not None:  # and of Lam tl over Lam > 0 (tl <= 0)
                lost = lost - _rowsum(pos, tl[:, 0])
            g = g - lost
            slack = slack + _gam(W.shape[1] + (tl is not None)) * lost + 2 * U * np.abs(g)
        raise AssertionError("unreachable")

    def lower(self, Lx, g, slack, boxes=slice(None)):
        """A lower bound of ``Lx . x + g - slack`` over each of the ``boxes`` (``Lx`` ``(B,
        R, n_in)``): ``Lx . m - |Lx| . r``, less its rounding."""
        n = Lx.shape[-1]
        m, r = self.m[boxes], self.r[boxes]
        t1 = _rowsum(Lx, m)
        t2 = _upsum(_rowsum(np.abs(Lx), r), n)
        t3 = _gam(n) * _upsum(_rowsum(np.abs(Lx), np.abs(m)), n)
        total = t1 - t2 - t3 + g - slack
        mag = np.abs(t1) + t2 + t3 + np.abs(g) + slack
        return np.nextafter(total - _up(8 * U * mag), -np.inf)

    def margin(self, C, d, lam, boxes, beta=None, slopes=None):
        """A lower bound of ``lam . (C y - d)`` over each of the ``boxes`` (indices; ``lam``
        ``(len(boxes), rows)``, >= 0), less ``beta sign z`` (``beta``: per layer, ``(len(boxes),
        n_i)``; a row of its own, with multiplier 1); ``slopes``: per layer, ``(len(boxes),
        rows, n_i)``, as in :meth:`affine`."""
        if beta is not None:
            B, n_out = len(boxes), C.shape[1]
            C = np.vstack([C, np.zeros((1, n_out))])
            d, lam = np.append(d, 0.0), np.hstack([lam, np.ones((B, 1))])
            beta = {i: np.concatenate([np.zeros((B, C.shape[0] - 1, v.shape[1])), v[:, None, :]],
                                      axis=1) for i, v in beta.items()}
            if slopes is not None:
                slopes = {i: np.concatenate([v, np.full((B, 1, v.shape[2]), np.nan)], axis=1)
                          for i, v in slopes.items()}
        B, r = lam.shape
        Lx, g, slack = self.affine(np.broadcast_to(C, (B,) + C.shape), len(self.layers) - 1,
                                   boxes, beta=beta, slopes=slopes)
        n = Lx.shape[-1]
        Lc = np.einsum("br,brn->bn", lam, Lx)
        gc = np.einsum("br,br->b", lam, g) - lam @ d
        sc = _up(_upsum(np.einsum("br,br->b", lam, slack), r)
                 + _gam(r) * (_upsum(np.einsum("br,brn,bn->b", lam, np.abs(Lx), self.xmax[boxes]),
                                     r * n)
                              + _upsum(np.einsum("br,br->b", lam, np.abs(g)), r)
                              + _upsum(lam @ np.abs(d), r))
                 + 2 * U * np.abs(gc))
        return self.lower(Lc[:, None, :], gc[:, None], sc[:, None], boxes)[:, 0]


# ------------------------------------------------------------------ the certificate

class _Fail(Exception):
    def __init__(self, step: int, message: str):
        super().__init__(message)
        self.step, self.message = step, message


def _read(path):
    """The certificate's header (``proof.json``) and arrays (``arrays.npz``)."""
    try:
        with zipfile.ZipFile(path) as z:
            header = json.loads(z.read("proof.json"))
            npz = np.load(io.BytesIO(z.read("arrays.npz")), allow_pickle=False)
            if not isinstance(npz, np.lib.npyio.NpzFile):
                raise TypeError("arrays.npz is not an .npz archive")
            with npz:
                arrays = {k: npz[k] for k in npz.files}
    except Exception as exc:  # noqa: BLE001 (any failure to read an untrusted file: odd
        # zip members, deep JSON, truncated arrays...) answers invalid, never a crash
        raise _Fail(1, f"(the file): not a readable certificate ({type(exc).__name__}: "
                       f"{exc})") from None
    if not isinstance(header, dict):
        raise _Fail(1, "(the file): proof.json is not an object")
    if header.get("format") != FORMAT or type(header.get("version")) is not int \
            or header.get("version") not in VERSIONS:
        raise _Fail(1, f"(the file): format {header.get('format')!r} version "
                       f"{header.get('version')!r}; this checker reads {FORMAT!r} "
                       f"{' and '.join(map(str, VERSIONS))}")
    return header, arrays


def _case_tree(k, arrays, n_in, n_rows, n_hidden, version, first_step):
    """The case's node arrays, checked as a tree whose children follow their parent, and its
    multipliers ``beta`` and slopes ``alpha`` (version 2; each ``(node, row, on, value)``,
    sorted by node)."""
    names = ("kind", "dim", "at", "left", "right", "lam")
    try:
        kind, dim, at, left, right, lam = (arrays[f"case{k}_{x}"] for x in names)
        sparse = [[arrays.get(f"case{k}_{what}_{x}", np.zeros(0, int if x != "value" else float))
                   if version >= 2 else np.zeros(0, int if x != "value" else float)
                   for x in BETA] for what in ("beta", "alpha")]
    except KeyError as exc:
        raise _Fail(first_step, f"(case {k}): array {exc} missing") from None
    N = len(kind) if kind.ndim == 1 else 0
    shapes_ok = (N >= 1 and all(a.shape == (N,) for a in (dim, at, left, right))
                 and lam.shape == (N, n_rows) and lam.dtype == at.dtype == np.float64
                 and all(a.dtype.kind == "i" for a in (kind, dim, left, right))
                 and all(a.dtype.kind == "i" for x in sparse for a in x[:3])
                 and all(x[3].dtype == np.float64 for x in sparse)
                 and all(a.ndim == 1 and len(a) == len(x[3]) for x in sparse for a in x))
    if not shapes_ok:  # (float64 and signed integers only: the rounding analysis is float64's)
        raise _Fail(first_step, f"(case {k}): node arrays of inconsistent shapes or types")
    kind, dim, left, right = (a.astype(np.int64) for a in (kind, dim, left, right))
    checked = []
    for (node, row, on, value), what, rows_ok, top in (
            (sparse[0], "multiplier of a phase (beta)", lambda r: r < 2 * n_hidden, np.inf),
            (sparse[1], "slope (alpha)", lambda r: (0 <= r) & (r < n_rows), 1.0)):
        node, row, on = (a.astype(np.int64) for a in (node, row, on))
        bad = ~((0 <= node) & (node < N) & (0 <= on) & (on < n_hidden) & rows_ok(row)
                & np.isfinite(value) & (value >= 0) & (value <= top))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise _Fail(first_step + int(node[i]) if 0 <= node[i] < N else first_step,
                        f"(case {k}): {what} {i} is negative, not finite or out of range")
        order = np.argsort(node, kind="stable")
        checked.append((node[order], row[order], on[order], value[order]))
    parents = np.zeros(N, int)
    for i in range(N):
        if kind[i] in (SPLIT, PHASE) and (kind[i] == SPLIT or version >= 2):
            for c in (left[i], right[i]):
                if not i < c < N:
                    raise _Fail(first_step + i, f"(case {k}, node {i}): child {c} is not a "
                                                f"later node")
                parents[c] += 1
            if not 0 <= dim[i] < (n_in if kind[i] == SPLIT else n_hidden):
                raise _Fail(first_step + i, f"(case {k}, node {i}): split coordinate "
                                            f"{dim[i]} out of range")
        elif kind[i] not in (BOUND, OPEN, SETTLED) + ((DIFF,) if version >= 3 else ()):
            raise _Fail(first_step + i, f"(case {k}, node {i}): unknown kind {kind[i]}")
    for i in range(1, N):
        if parents[i] != 1:
            raise _Fail(first_step + i, f"(case {k}, node {i}): has {parents[i]} parents "
                                        "(every node but the root has one)")
    return kind, dim, at, left, right, lam, checked


class _Multipliers:
    """A chunk's multipliers of the known phases, dense per layer, from the sparse ``beta``
    (rows: ``2 i + side`` bounds hidden neuron ``i``'s ``z`` (side 0) or ``-z`` (side 1); ``-1
    - q``, disjunct ``q``'s leaf bound; ``on``: the hidden neuron whose phase it multiplies).
    One on a neuron of no known phase, or not below its row's layer, counts for nothing."""

    def __init__(self, sparse, idx, starts):
        self.slopes = _Multipliers(sparse[1:], idx, starts) if len(sparse) > 1 else None
        node, row, on, value = sparse[0]
        a, b = np.searchsorted(node, idx[0]), np.searchsorted(node, idx[-1], side="right")
        pos = np.full(idx[-1] + 1 - idx[0], -1)
        pos[idx - idx[0]] = np.arange(len(idx))
        keep = pos[node[a:b] - idx[0]] >= 0
        self.node = pos[node[a:b][keep] - idx[0]]
        self.row, self.on, self.value = row[a:b][keep], on[a:b][keep], value[a:b][keep]
        self.starts, self.B = starts, len(idx)
        self.layer_on = np.searchsorted(starts, self.on, side="right") - 1

    def _dense(self, pick, rows, upto, empty=0.0):
        """Per layer below ``upto``: ``(B, rows, n)`` of the entries ``pick`` (row indices),
        summed (``empty`` where none; NaN: the slopes', the last of each place kept)."""
        out = {}
        for i in range(upto):
            mine = pick & (self.layer_on == i)
            if mine.any():
                arr = np.full((self.B, rows, self.starts[i + 1] - self.starts[i]), empty)
                at = (self.node[mine], self.rowpos[mine], self.on[mine] - self.starts[i])
                if empty == 0.0:
                    np.add.at(arr, at, self.value[mine])
                else:
                    arr[at] = self.value[mine]
                out[i] = arr
        return out or None

    def intermediate(self, bounder, k, j):
        """For :class:`Bounder`: layer ``k``'s rows of neurons ``j`` (local indices)."""
        where = np.full(self.starts[k + 1] - self.starts[k], -1)
        where[j] = np.arange(len(j))
        neuron = self.row // 2
        pick = (self.row >= 0) & (neuron >= self.starts[k]) & (neuron < self.starts[k + 1])
        local = where[np.clip(neuron - self.starts[k], 0, len(where) - 1)]
        pick &= local >= 0
        self.rowpos = np.where(pick, local + len(j) * (self.row % 2), 0)
        return self._dense(pick, 2 * len(j), k)

    def leaf(self, q, sub, upto):
        """Disjunct ``q``'s multipliers on the leaves ``sub`` (chunk positions): per layer
        ``(len(sub), n)``."""
        self.rowpos = np.zeros(len(self.row), int)
        out = self._dense(self.row == -1 - q, 1, upto)
        return None if out is None else {i: v[sub, 0] for i, v in out.items()}

    def leaf_slopes(self, rows, sub, upto):
        """The slopes of the property's rows ``rows`` (a range) on the leaves ``sub``: per
        layer ``(len(sub), len(rows), n)``, NaN where none is given."""
        s = self.slopes
        pick = (s.row >= rows.start) & (s.row < rows.stop)
        s.rowpos = np.where(pick, s.row - rows.start, 0)
        out = s._dense(pick, len(rows), upto, empty=np.nan)
        return None if out is None else {i: v[sub] for i, v in out.items()}


def _check_case(k, case, layers, arrays, version, first_step, failures, gaps, pair=None):
    """Check case ``k``: its tree, its boxes, its bound leaves (``pair``: the two networks'
    layers where difference-bound leaves may be). The first failing step goes to
    ``failures``, the steps without evidence to ``gaps``; returns the case's steps."""
    n_in = case.lower.shape[0]
    rows = [np.asarray(C, float) for C, _ in case.unsafe]
    ds = [np.asarray(d, float) for _, d in case.unsafe]
    ends = np.cumsum([0] + [C.shape[0] for C in rows])
    starts = np.cumsum([0] + [W.shape[0] for W, _ in layers[:-1]])
    kind, dim, at, left, right, lam, sparse = _case_tree(k, arrays, n_in, int(ends[-1]),
                                                          int(starts[-1]), version, first_step)
    N = len(kind)
    lo = np.empty((N, n_in))
    hi = np.empty((N, n_in))
    lo[0], hi[0] = case.lower, case.upper
    sigma = np.zeros((N, starts[-1]), np.int8)  # the phases of each node's region
    for i in np.flatnonzero((kind == SPLIT) | (kind == PHASE)):  # parents first: top-down
        j, a, c = dim[i], at[i], (left[i], right[i])
        lo[list(c)], hi[list(c)], sigma[list(c)] = lo[i], hi[i], sigma[i]
        if kind[i] == PHASE:  # left: z_j <= 0, right: z_j >= 0 (they cover every phase)
            sigma[c[0], j], sigma[c[1], j] = -1, 1
            continue
        if not lo[i, j] <= a <= hi[i, j]:  # (false for NaN)
            raise _Fail(first_step + i, f"(case {k}, node {i}): split at x_{j} = {a!r} "
                                        f"outside the box [{lo[i, j]!r}, {hi[i, j]!r}]")
        hi[c[0], j] = lo[c[1], j] = a
    for i in np.flatnonzero((kind == OPEN) | (kind == SETTLED)):
        gaps.append((first_step + int(i), f"(case {k}, node {i}) is a {KIND_NAMES[kind[i]]} "
                                          "without a certificate"))
    leaves, diffs = np.flatnonzero(kind == BOUND), np.flatnonzero(kind == DIFF)
    both = np.flatnonzero((kind == BOUND) | (kind == DIFF))
    bad = both[~(np.isfinite(lam[both]).all(axis=1) & (lam[both] >= 0).all(axis=1))]
    if len(bad):
        raise _Fail(first_step + int(bad[0]), f"(case {k}, node {bad[0]}): a multiplier is "
                                              "negative or not finite")
    # every node's bounds, parents first (a bound proven on a region holds on its parts:
    # only the neurons unstable on the parent are bounded again), then each bound leaf's
    # disjuncts
    parent = np.zeros(N, int)
    depth = np.zeros(N, int)
    for i in np.flatnonzero((kind == SPLIT) | (kind == PHASE)):
        parent[[left[i], right[i]]] = i
        depth[[left[i], right[i]]] = depth[i] + 1
    bounds = [(np.empty((N, W.shape[0])), np.empty((N, W.shape[0]))) for W, _ in layers[:-1]]
    # the nodes whose bounds matter: bound leaves, difference leaves in a phase tree (their
    # bounds on the joint network, on the region of their phases: version 4), their ancestors
    phased = diffs[sigma[diffs].any(axis=1)] if pair is not None and version >= 4 else diffs[:0]
    need = np.zeros(N, bool)
    for i in np.concatenate([leaves, phased])[::-1]:
        while not need[i]:
            need[i] = True
            i = parent[i]  # (the root is its own parent)
    failed = []
    for level in range(depth.max() + 1):
        at_level = np.flatnonzero(need & (depth == level))
        for start in range(0, len(at_level), CHUNK):
            idx = at_level[start:start + CHUNK]
            prior = None if level == 0 else [(a[parent[idx]], b[parent[idx]]) for a, b in bounds]
            mult = _Multipliers(sparse, idx, starts)
            bounder = Bounder(layers, lo[idx], hi[idx], prior, sigma[idx], mult.intermediate)
            for (a, b), (za, zb) in zip(bounds, bounder.bounds):
                a[idx], b[idx] = za, zb
            mine = np.flatnonzero(kind[idx] == BOUND)
            if not len(mine):
                continue
            sub = idx[mine]
            lows = np.array([bounder.margin(
                C, d, lam[sub, ends[q]:ends[q + 1]], mine, mult.leaf(q, mine, len(layers) - 1),
                mult.leaf_slopes(range(ends[q], ends[q + 1]), mine, len(layers) - 1))
                for q, (C, d) in enumerate(zip(rows, ds))])  # (disjuncts, leaves)
            for b in np.flatnonzero(~(lows > 0).all(axis=0)):
                q = int(np.flatnonzero(~(lows[:, b] > 0))[0])
                failed.append((first_step + int(sub[b]), f"(case {k}, node {sub[b]}, disjunct "
                               f"{q}): the bound {float(lows[q, b])!r} is not > 0"))
    if len(diffs) and pair is None:
        failed.append((first_step + int(diffs[0]), f"(case {k}, node {diffs[0]}): a difference "
                       "bound needs an epsilon-equivalence of two networks of one depth, their "
                       "neurons matched"))
        diffs = diffs[:0]
    for start in range(0, len(diffs), CHUNK):  # each box on its own, in a phase tree with
        idx = diffs[start:start + CHUNK]       # the joint network's bounds on its region
        free = ~np.isin(idx, phased)[:, None]  # no phase on the way: the box's own only
        known = matched_bounds([(np.where(free, -np.inf, a[idx]), np.where(free, np.inf, b[idx]))
                                for a, b in bounds], pair[2])
        lows = difference_margins(pair[0], pair[1], lo[idx], hi[idx], case.unsafe, lam[idx],
                                  known)
        for b in np.flatnonzero(~(lows > 0).all(axis=0)):
            q = int(np.flatnonzero(~(lows[:, b] > 0))[0])
            failed.append((first_step + int(idx[b]), f"(case {k}, node {idx[b]}, disjunct {q}): "
                           f"the difference bound {float(lows[q, b])!r} is not > 0"))
    if failed:
        failures.append(min(failed))
    return N


def joint_layers(f_layers, g_layers):
    """``f`` and ``g`` side by side on one input, with outputs ``[f(x); g(x)]`` (exact: the
    weights are copied into blocks; the shallower network is lengthened by layers ``z =
    relu(z) - relu(-z)`` after its last hidden layer)."""
    def deeper(layers, depth):
        layers = list(layers)
        while len(layers) < depth:
            W, b = layers[-1]
            n = W.shape[0]
            layers[-1:] = [(np.vstack([W, -W]), np.concatenate([b, -b])),
                           (np.hstack([np.eye(n), -np.eye(n)]), np.zeros(n))]
        return layers
    depth = max(len(f_layers), len(g_layers))
    out = []
    for k, ((Wf, bf), (Wg, bg)) in enumerate(zip(deeper(f_layers, depth),
                                                  deeper(g_layers, depth))):
        W = np.vstack([Wf, Wg]) if k == 0 else np.block(
            [[Wf, np.zeros((len(Wf), Wg.shape[1]))], [np.zeros((len(Wg), Wf.shape[1])), Wg]])
        out.append((W, np.concatenate([bf, bg])))
    return out


def difference_layers(f_layers, g_layers):
    """The difference system of two networks of one architecture (ReluDiff, NeuroDiff): per
    layer the map from ``(a, d)`` to ``(z, D)``: ``z = W a + b`` (``f``'s layer), ``D = z' - z =
    (W' - W) a + W' d + (b' - b)`` (``g``'s ``W', b'``; the first from ``x``), where ``a =
    relu(z)``, ``d = relu(z') - relu(z)``; the outputs are ``(y, y' - y)``. The floats ``W' -
    W`` and ``b' - b`` are roundings of the exact differences (the :class:`Bounder`'s
    ``inexact``)."""
    out = []
    for k, ((W, b), (V, c)) in enumerate(zip(f_layers, g_layers)):
        M = np.vstack([W, V - W]) if k == 0 else np.block([[W, np.zeros_like(W)], [V - W, V]])
        out.append((M, np.concatenate([b, c - b])))
    return out


def aligned(layers, maps):
    """``layers`` with hidden layer ``k``'s neurons at the positions ``maps[k]`` (a neuron's
    index, -1: a zero neuron), the next layer's columns likewise: the same function (copies
    and zeros, exact). None unless every neuron is at exactly one position."""
    out, cols = [], None
    for k, (W, b) in enumerate(layers):
        if cols is not None:
            W = np.where(cols >= 0, W[:, np.maximum(cols, 0)], 0.0)
        if k == len(layers) - 1:
            return out + [(W, b)]
        rows = np.asarray(maps[k])
        if rows.ndim != 1 or rows.dtype.kind != "i" or not np.array_equal(
                np.sort(rows[rows >= 0]), np.arange(W.shape[0])):
            return None
        out.append((np.where(rows[:, None] >= 0, W[np.maximum(rows, 0)], 0.0),
                    np.where(rows >= 0, b[np.maximum(rows, 0)], 0.0)))
        cols = rows


def matched_bounds(bounds, maps):
    """The joint network's hidden bounds (``(lo, hi)`` per layer, ``f``'s neurons then
    ``g``'s) as :func:`difference_bounder`'s ``known``, in the matched order ``maps`` (per
    layer ``(f's, g's)`` as :func:`aligned` reads them; a zero neuron is 0)."""
    out = []
    for (lo, hi), (mf, mg) in zip(bounds, maps):
        mf, mg = np.asarray(mf), np.asarray(mg)
        out.append(tuple((np.where(m >= 0, lo[:, at + np.maximum(m, 0)], 0.0),
                          np.where(m >= 0, hi[:, at + np.maximum(m, 0)], 0.0))
                         for m, at in ((mf, 0), (mg, int((mf >= 0).sum())))))
    return out


def difference_bounder(f_layers, g_layers, lo, hi, known=None) -> Bounder:
    """Rigorous bounds of :func:`difference_layers` on boxes ``[lo, hi]``: ``a = relu(z)``
    relaxed as CROWN does, ``d = relu(z + D) - relu(z)`` by lines in ``D`` (ReLU is monotone
    and 1-Lipschitz: ``min(D, 0) <= d <= max(D, 0)``): ``d >= D`` where ``f``'s neuron is
    active, ``d >= 0`` where inactive, else the chord of ``min(D, 0)`` over ``D``'s bounds;
    ``d <= D`` where ``g``'s is active, ``d <= 0`` where inactive, else the chord of ``max(D,
    0)``; the chords' intercepts rounded outwards at both ends. ``D``'s bounds are met with
    ``g``'s own (its CROWN) less ``f``'s, ``g``'s with ``f``'s plus ``D``'s (rounded outwards);
    each network's own bounds are the ``prior``: only the neurons of either sign are bounded
    again through the system. ``known``: per hidden layer ``((lo, hi) of f's z, (lo, hi) of
    g's)`` that hold on the region bounded (a phase tree's node, :func:`matched_bounds`), met
    with each network's own (two bounds that hold on the region: so does their meet)."""
    mine, own = (Bounder(layers, lo, hi, interval=True).bounds for layers in (f_layers, g_layers))
    if known is not None:
        mine, own = ([(np.maximum(a, c), np.minimum(b, e)) for (a, b), (c, e) in
                      zip(bounds, [k[x] for k in known])] for x, bounds in enumerate((mine, own)))
    prior = [(np.concatenate([fl, np.nextafter(gl - fh, -np.inf)], 1),  # (D = z' - z: only
              np.concatenate([fh, np.nextafter(gh - fl, np.inf)], 1))  # those of either sign
             for (fl, fh), (gl, gh) in zip(mine, own)]                 # are bounded again)

    def relax(bounder, k, zlo, zhi):
        n = zlo.shape[1] // 2
        (lf, uf), (gl, gh) = mine[k], own[k]
        lf, uf = np.maximum(zlo[:, :n], lf), np.minimum(zhi[:, :n], uf)
        ld = np.maximum(zlo[:, n:], np.nextafter(gl - uf, -np.inf))
        ud = np.minimum(zhi[:, n:], np.nextafter(gh - lf, np.inf))
        lg = np.maximum(gl, np.nextafter(lf + ld, -np.inf))
        ug = np.minimum(gh, np.nextafter(uf + ud, np.inf))
        alpha, s, t = _relaxation(lf, uf)  # f's lines, and g's upper line
        _, sg, tg = _relaxation(lg, ug)
        cut = (ld < 0) & (ud > 0)
        w = np.where(cut, ud - ld, 1.0)
        chord = np.clip(np.where(cut, -ld / w, np.where(ud <= 0, 1.0, 0.0)), 0.0, 1.0)
        ls = np.where(lf >= 0, 1.0, np.where(uf <= 0, 0.0, chord))  # d >= ls D + li
        li = np.where((lf < 0) & (uf > 0) & cut,
                      np.minimum(-_up(-ld * (1.0 - ls)), -_up(ls * ud)), 0.0)
        chord = np.clip(np.where(cut, ud / w, np.where(ld >= 0, 1.0, 0.0)), 0.0, 1.0)
        us = np.where(lg >= 0, 1.0, np.where(ug <= 0, 0.0, chord))  # d <= us D + ui
        ui = np.where((lg < 0) & (ug > 0) & cut,
                      np.maximum(_up(-us * ld), _up(ud * (1.0 - us))), 0.0)
        # lines in z and D (NeuroDiff): relu(z') >= k z' and relu(z) <= s z + t give d >= k D
        # + (k - s) z - t; relu(z') <= sg z' + tg and relu(z) >= k z give d <= sg D + (sg - k)
        # z + tg (k in {0, 1}; the float k - s is off by at most u |k - s| <= u zmax ... times
        # |z|: in the intercept). Per neuron the line of best extreme over the box is kept.
        lp, up, zmax = np.zeros_like(ls), np.zeros_like(us), np.maximum(np.abs(lf), np.abs(uf))
        zc, zr, dc, dr = (lf + uf) / 2, (uf - lf) / 2, (ld + ud) / 2, (ud - ld) / 2
        low, high = ls * dc + li - ls * dr, us * dc + ui + us * dr
        for k in (0.0, 1.0):
            p, c = k - s, -_up(t + U * np.abs(k - s) * zmax)
            least = k * dc + p * zc + c - k * dr - np.abs(p) * zr
            take = (lf < 0) & (uf > 0) & (least > low)
            ls, lp, li = np.where(take, k, ls), np.where(take, p, lp), np.where(take, c, li)
            low = np.where(take, least, low)
            p, c = sg - k, _up(tg + U * np.abs(sg - k) * zmax)
            most = sg * dc + p * zc + c + sg * dr + np.abs(p) * zr
            take = (lg < 0) & (ug > 0) & (most < high)
            us, up, ui = np.where(take, sg, us), np.where(take, p, up), np.where(take, c, ui)
            high = np.where(take, most, high)
        lines = tuple(np.concatenate(p, axis=1) for p in (
            (alpha, ls), (s, us), (t, ui), (np.zeros_like(li), np.minimum(li, 0.0)))) + (
            (lp, up),)
        amax = np.concatenate([np.maximum(uf, 0.0), np.maximum(np.abs(ld), np.abs(ud))], 1)
        return np.concatenate([lf, ld], 1), np.concatenate([uf, ud], 1), lines, amax
    # bounded again: only D where f's or g's neuron may take both signs (elsewhere d's lines
    # do not read D's bounds: d = D, d = 0, or one network's relu); never z (the system's
    # rows of z are f's own, rounded more loosely: the meet keeps f's)
    again = [np.concatenate([np.zeros(fl.shape, bool), ((fl < 0) & (fh > 0)) | ((gl < 0)
                                                                           & (gh > 0))], 1)
             for (fl, fh), (gl, gh) in zip(mine, own)]
    return Bounder(difference_layers(f_layers, g_layers), lo, hi, prior, relax=relax,
                   inexact=True, again=again)


def difference_margins(f_layers, g_layers, lo, hi, unsafe, lam, known=None) -> np.ndarray:
    """Per disjunct ``C y <= d`` of ``unsafe`` (rows over the outputs ``[f; g]``, entries
    0 and +-1, as :func:`diff_claim` writes them) a lower bound of ``lam . (C y - d)`` over
    each box (``(disjuncts, boxes)``; ``lam``: ``(boxes, rows)``), by
    :func:`difference_bounder`: ``c_f . y + c_g . y' = (c_f + c_g) . y + c_g . (y' - y)``
    (exact for such entries); ``known``: as :func:`difference_bounder`'s."""
    bounder = difference_bounder(f_layers, g_layers, lo, hi, known)
    m, boxes, out, r0 = len(f_layers[-1][1]), np.arange(len(lo)), [], 0
    for C, d in unsafe:
        C = np.atleast_2d(np.asarray(C, float))
        if not np.isin(C, (-1.0, 0.0, 1.0)).all():
            raise ValueError("difference_margins: rows of entries 0 and +-1 only")
        rows = np.hstack([C[:, :m] + C[:, m:], C[:, m:]])
        out.append(bounder.margin(rows, np.asarray(d, float), lam[:, r0:r0 + len(C)], boxes))
        r0 += len(C)
    return np.array(out)


def diff_claim(n_outputs, lower, upper, epsilon, outputs=None):
    """``|g_j - f_j| <= epsilon`` for the ``outputs`` ``j`` (default all) over the box, as the
    unsat of one case of the joint network (outputs ``[f; g]``): per output two disjuncts,
    ``g_j - f_j >= epsilon`` and ``f_j - g_j >= epsilon`` (closed: none of their points
    exists, so ``|g_j - f_j| < epsilon`` everywhere)."""
    case = SimpleNamespace(lower=np.asarray(lower, float), upper=np.asarray(upper, float),
                           A=None, b=None, unsafe=[])
    for j in (range(n_outputs) if outputs is None else outputs):
        row = np.zeros((1, 2 * n_outputs))
        row[0, j], row[0, n_outputs + j] = 1.0, -1.0  # f_j - g_j
        case.unsafe += [(row, np.array([-float(epsilon)])), (-row, np.array([-float(epsilon)]))]
    return SimpleNamespace(cases=[case])


def range_claim(n_outputs, lower, upper, output, low=None, high=None):
    """``low < y_output < high`` over the box (a side None: no claim there) as the unsat of
    one case: the disjuncts ``y_output >= high`` and ``y_output <= low``."""
    row = np.zeros((1, n_outputs))
    row[0, output] = 1.0
    unsafe = ([] if high is None else [(-row, np.array([-float(high)]))]) + (
        [] if low is None else [(row, np.array([float(low)]))])
    return SimpleNamespace(cases=[SimpleNamespace(lower=np.asarray(lower, float), A=None,
                                                  upper=np.asarray(upper, float), b=None,
                                                  unsafe=unsafe)])


def ball_claim(layers, x0, radius, lower, upper, target=None, threshold=None, scale=None):
    """No input of another class than ``x0``'s (of class ``target`` where given) in the box
    ``|x_i - x0_i| <= radius * scale_i`` (None: the whole box) within ``[lower, upper]``: the
    L-infinity counterfactual's minimum is then above ``radius``. ``x0``'s class is its
    output's argmax computed exactly (one output: the side of ``threshold``, default 0); the
    unsafe set is closed (a tie counts as another class). The ball's box is rounded outwards."""
    x0, lower, upper = (np.asarray(v, float) for v in (x0, lower, upper))
    if radius is not None:
        r = float(radius) * (np.ones_like(x0) if scale is None else np.asarray(scale, float))
        lower = np.maximum(lower, np.nextafter(x0 - r - 4 * U * (np.abs(x0) + r) - TINY, -np.inf))
        upper = np.minimum(upper, np.nextafter(x0 + r + 4 * U * (np.abs(x0) + r) + TINY, np.inf))
    m = len(layers[-1][1])
    y = [_exact_output(layers, x0, j) for j in range(m)]
    rows = []  # per disjunct, C y <= d
    if m == 1:
        t = float(threshold or 0.0)
        side = 1.0 if y[0] > Fraction(t) else -1.0  # the other side: side * y <= side * t
        rows = [(np.array([[side]]), np.array([side * t]))]
    else:
        c0 = max(range(m), key=lambda j: y[j])
        others = [k for k in range(m) if k != c0] if target is None else [target]
        for k in others:  # y_k >= y_j for j = c0 (or, for the target, every j)
            C = np.zeros((m - 1 if target is not None else 1, m))
            for i, j in enumerate([c0] if target is None else [j for j in range(m) if j != k]):
                C[i, j], C[i, k] = 1.0, -1.0
            rows.append((C, np.zeros(len(C))))
    return SimpleNamespace(cases=[SimpleNamespace(lower=lower, upper=upper, A=None, b=None,
                                                  unsafe=rows)])


def _exact_output(layers, x, j):
    """Output ``j`` at ``x``, in fractions (exact)."""
    a = [Fraction(float(v)) for v in x]
    for k, (W, b) in enumerate(layers):
        rows = range(W.shape[0]) if k < len(layers) - 1 else [j]
        z = [sum((Fraction(float(w)) * v for w, v in zip(W[i], a) if w), Fraction(float(b[i])))
             for i in rows]
        a = z if k == len(layers) - 1 else [max(v, Fraction(0)) for v in z]
    return a[0]


def _read_network(path):
    """The layers of an ``.onnx`` or ``.nnet`` file as float64 arrays."""
    from polytrav.model.network import Network

    net = Network.from_onnx(path) if str(path).lower().endswith(".onnx") else \
        Network.from_nnet(path)
    return [(np.asarray(W, float), np.asarray(b, float)) for W, b in zip(net.weights, net.biases)]


class _Net:
    """Layers as :func:`network_digest` reads them."""

    def __init__(self, layers):
        self.weights, self.biases = [W for W, _ in layers], [b for _, b in layers]


def check_proof(network_file, property_file, certificate) -> CheckResult:
    """Check ``certificate`` (a path) for the property's ``unsat`` on the network: steps 1
    (the file), 2 (the network's digest), 3 (the property's digest and cases), then each
    case's nodes in order. The first failing step makes the answer ``invalid``; else the
    first step without evidence makes it ``incomplete``; else ``valid``."""
    from polytrav.verification.vnnlib import read_vnnlib

    def claim(layers):
        return read_vnnlib(property_file, n_inputs=layers[0][0].shape[1],
                           n_outputs=layers[-1][0].shape[0])
    return _check(certificate, lambda: _read_network(network_file), claim, "unsat")


def check_diff_proof(f_file, g_file, certificate, epsilon, lower, upper,
                     outputs=None) -> CheckResult:
    """Check ``certificate`` for ``diff``'s ε-equivalence of the networks in ``f_file`` and
    ``g_file``: ``|g_j - f_j| <= epsilon`` on the box ``[lower, upper]`` (one value: every
    input's) for the ``outputs`` (default all). The
    checker builds the joint network (:func:`joint_layers`) and the claim (:func:`diff_claim`)
    itself; the steps are those of :func:`check_proof`."""
    lower, upper = np.atleast_1d(np.asarray(lower, float)), np.atleast_1d(np.asarray(upper, float))
    held = {}

    def layers():
        f, g = _read_network(f_file), _read_network(g_file)
        n = f[0][0].shape[1]
        if g[0][0].shape[1] != n or len(f[-1][1]) != len(g[-1][1]) or not {len(lower),
                                                                            len(upper)} <= {1, n}:
            raise _Fail(2, f"(the networks): F and G must take the box's inputs ({len(lower)}; "
                           "one value is every input's) and give as many outputs")
        held["f"], held["g"] = f, g
        return joint_layers(f, g)

    def pair(arrays):  # the networks' neurons matched (pair_f{k}, pair_g{k}), if they can be
        f, g = held["f"], held["g"]
        if len(f) != len(g):
            return None
        maps = [[arrays.get(f"pair_{x}{k}", np.arange(len(f[k][1]) if x == "f" else
                                                        len(g[k][1])))
                 for k in range(len(f) - 1)] for x in "fg"]
        if any(len(a) != len(b) for a, b in zip(*maps)):
            return None
        f, g = aligned(f, maps[0]), aligned(g, maps[1])
        return None if f is None or g is None else (f, g, list(zip(*maps)))

    def claim(layers):
        m, n = len(layers[-1][1]) // 2, layers[0][0].shape[1]
        if outputs is not None and not all(0 <= j < m for j in outputs):
            raise _Fail(3, f"(the property): outputs {list(outputs)} are not all in 0..{m - 1}")
        return diff_claim(m, np.broadcast_to(lower, n), np.broadcast_to(upper, n), epsilon,
                          outputs)
    return _check(certificate, layers, claim, "epsilon-equivalence", pair=pair)


def check_range_proof(network_file, certificate, output, lower, upper, low=None,
                      high=None) -> CheckResult:
    """Check ``certificate`` for an output's range: ``low < y_output < high`` on the box
    ``[lower, upper]`` (one value: every input's; a side None: not claimed). The steps are
    those of :func:`check_proof`, then the witnesses (array ``witness_x``, if any), each in
    the box: a valid answer names the output's exact value at each (where the range is
    attained)."""
    lower, upper = np.atleast_1d(np.asarray(lower, float)), np.atleast_1d(np.asarray(upper, float))

    def claim(layers):
        n, m = layers[0][0].shape[1], len(layers[-1][1])
        if not 0 <= output < m or not {len(lower), len(upper)} <= {1, n} or low is high is None:
            raise _Fail(3, f"(the property): output {output} of {m}, a box of {n} inputs, a "
                           "bound below or above")
        return range_claim(m, np.broadcast_to(lower, n), np.broadcast_to(upper, n), output,
                           low, high)

    def witnesses(arrays, layers, step):
        X = arrays.get("witness_x", np.zeros((0, len(layers[0][0][0]))))
        box = claim(layers).cases[0]
        if X.dtype != np.float64 or X.ndim != 2 or X.shape[1] != len(box.lower) or not (
                (box.lower <= X) & (X <= box.upper)).all():
            raise _Fail(step, "(the witnesses): not points of the box")
        return "; ".join(f"y_{output} = {float(_exact_output(layers, x, output))!r} at witness "
                         f"{i}" for i, x in enumerate(X))
    return _check(certificate, lambda: _read_network(network_file), claim, "output-range",
                  witnesses)


def check_ball_proof(network_file, certificate, x0, radius, lower, upper, target=None,
                     threshold=None, scale=None) -> CheckResult:
    """Check ``certificate`` for :func:`ball_claim`: within L-infinity distance ``radius``
    (per input times ``scale``; None: anywhere) of ``x0`` in the box ``[lower, upper]`` no
    input has another class than ``x0``'s (``target``'s, where given)."""
    def claim(layers):
        n, m = layers[0][0].shape[1], len(layers[-1][1])
        if not (len(x0) == n and {len(np.atleast_1d(lower)), len(np.atleast_1d(upper))} <= {1, n}
                and (target is None or (m > 1 and 0 <= target < m))
                and (scale is None or len(scale) == n)):
            raise _Fail(3, f"(the property): x0 and the box of {n} inputs, a target of {m} "
                           "classes")
        return ball_claim(layers, x0, radius, np.broadcast_to(lower, n),
                          np.broadcast_to(upper, n), target, threshold, scale)
    return _check(certificate, lambda: _read_network(network_file), claim, "counterfactual")


def _check(certificate, read_layers, read_claim, claim_name, finish=None,
           pair=lambda arrays: None) -> CheckResult:
    try:
        header, arrays = _read(certificate)
        layers = read_layers()
        digest = network_digest(_Net(layers))
        if header.get("network_sha256") != digest:
            raise _Fail(2, "(the network): the certificate is for another network (sha256 "
                           f"{str(header.get('network_sha256'))[:12]}..., this one "
                           f"{digest[:12]}...)")
        spec = read_claim(layers)
        if header.get("property_sha256") != property_digest(spec):
            raise _Fail(3, "(the property): the certificate is for another property")
        if header.get("claim") != claim_name or type(header.get("cases")) is not int \
                or header.get("cases") != len(spec.cases):
            raise _Fail(3, f"(the property): the claim must be {claim_name} over its "
                           f"{len(spec.cases)} cases")
        step, failures, gaps = 4, [], []
        for k, case in enumerate(spec.cases):
            with np.errstate(all="ignore"):  # an overflow is a NaN or infinite bound: it fails
                step += _check_case(k, case, layers, arrays, header["version"], step,
                                    failures, gaps, pair(arrays))
            if failures:
                raise _Fail(*failures[0])
        found = "" if finish is None else finish(arrays, layers, step)
    except _Fail as fail:
        return CheckResult("invalid", fail.step, fail.message)
    if gaps:
        return CheckResult("incomplete", *gaps[0])
    return CheckResult("valid", message=found)


def main(argv=None) -> int:
    """``polytrav-check-proof NET PROP FILE``, ``polytrav-check-proof F G FILE --epsilon E
    --lower L --upper U [--outputs J]`` (diff's ε-equivalence; comma-separated values) or
    ``polytrav-check-proof NET FILE --output J --lower L --upper U [--min A] [--max B]`` (an
    output's range ``A < y_J < B``) or ``polytrav-check-proof NET FILE --x0 X --radius R
    --lower L --upper U [--target Q] [--threshold T] [--scale S]`` (no other class within
    L-infinity distance ``R`` of ``X``; ``R`` ``none``: in the box):
    prints the answer; exit 0 valid, 1 invalid, 2 incomplete, 4 bad input."""
    args = sys.argv[1:] if argv is None else list(argv)
    usage = ("usage: polytrav-check-proof NETWORK PROPERTY CERTIFICATE, or F G CERTIFICATE "
             "--epsilon E --lower L --upper U [--outputs J], or NETWORK CERTIFICATE --output J "
             "--lower L --upper U [--min A] [--max B], or NETWORK CERTIFICATE --x0 X --radius R "
             "--lower L --upper U [--target Q] [--threshold T] [--scale S]  (answers valid, "
             "invalid: step N ..., or incomplete: step N ...)")
    if args[:1] in (["-h"], ["--help"]):
        print(usage, file=sys.stderr)
        return 0
    opts = {}
    names = ("--epsilon", "--lower", "--upper", "--outputs", "--output", "--min", "--max",
             "--x0", "--radius", "--target", "--threshold", "--scale")
    while len(args) >= 2 and args[-2] in names:
        opts[args[-2][2:]] = args[-1]
        args = args[:-2]
    mode = "range" if "output" in opts else "ball" if "x0" in opts else "diff" if opts else ""
    if len(args) != (3 if mode in ("", "diff") else 2) or (
            opts and not {"lower", "upper"} <= set(opts)) or (
            mode == "diff" and "epsilon" not in opts):
        print(usage, file=sys.stderr)
        return 4
    from pathlib import Path

    from polytrav.vocabulary.errors import PolytravError

    names = {"range": ("NETWORK", "CERTIFICATE"), "ball": ("NETWORK", "CERTIFICATE"),
             "diff": ("F", "G", "CERTIFICATE"), "": ("NETWORK", "PROPERTY", "CERTIFICATE")}
    for path, what in zip(args, names[mode]):
        if not Path(path).is_file():
            print(f"polytrav-check-proof: {what} file {path!r} not found", file=sys.stderr)
            return 4

    def numbers(key, kind=float):
        return None if key not in opts else [kind(v) for v in opts[key].split(",")]

    try:  # the options' values
        v = {k: numbers(k) for k in ("lower", "upper", "x0", "scale")}
        one = {k: None if k not in opts or opts[k] == "none" else float(opts[k])
               for k in ("epsilon", "min", "max", "radius", "threshold")}
        ints = {k: None if k not in opts else int(opts[k]) for k in ("output", "target")}
        outputs = numbers("outputs", int)
    except ValueError as exc:
        print(f"polytrav-check-proof: the options take (comma-separated) numbers ({exc})",
              file=sys.stderr)
        return 4
    box = (v["lower"], v["upper"])
    try:
        if mode == "range":
            result = check_range_proof(*args, ints["output"], *box, one["min"], one["max"])
        elif mode == "ball":
            result = check_ball_proof(*args, v["x0"], one["radius"], *box, ints["target"],
                                      one["threshold"], v["scale"])
        elif mode == "diff":
            result = check_diff_proof(*args, one["epsilon"], *box, outputs)
        else:
            result = check_proof(*args)
    except (OSError, PolytravError) as exc:  # a bad network or property file: one line
        print(f"polytrav-check-proof: {exc}", file=sys.stderr)
        return 4
    print(result)
    return result.exit_code


if __name__ == "__main__":
    sys.exit(main())
