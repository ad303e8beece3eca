"""The subdivision engine's cut of a layer, compiled (numba): the loop numpy cannot express.

:func:`cut_layer` takes the cells at the start of a layer (their vertices grouped by cell)
and cuts each by every neuron of the layer in turn, cell by cell: the same decisions as
:meth:`polytrav.traversal.subdivision._Batch.cut_layer` (its docstring and the module's say
which), with no temporary arrays. numba is optional (``pip install "polytrav[fast]"``): this
module is imported only by :func:`polytrav.traversal.subdivision.load_kernel`, when a run is
big enough to pay for it; without numba the numpy path gives the same cells. Compiled once,
cached on disk (``cache=True``: the functions live at module level for that).
"""
from __future__ import annotations

import numba
import numpy as np

__all__ = ["cut_layer", "layer_maps", "layer_screen", "layer_slack"]

jit = numba.njit(cache=True, nogil=True)


@jit
def popcount(x):
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@jit
def grow2(a, need):
    if need <= a.shape[0]:
        return a
    b = np.empty((max(need, 2 * a.shape[0]), a.shape[1]), a.dtype)
    b[: a.shape[0]] = a
    return b


@jit
def grow1(a, need):
    if need <= a.shape[0]:
        return a
    b = np.empty(max(need, 2 * a.shape[0]), a.dtype)
    b[: a.shape[0]] = a
    return b


@jit
def recentre(X, lo, hi, centre, reach, s):
    d = X.shape[1]
    m = hi - lo
    for j in range(d):
        t = 0.0
        for r in range(lo, hi):
            t += X[r, j]
        centre[s, j] = t / m
    far = 0.0
    for r in range(lo, hi):
        g = 0.0
        for j in range(d):
            e = X[r, j] - centre[s, j]
            g += e * e
        far = max(far, g)
    reach[s] = np.sqrt(far)


#: Below this many pairs of vertices across a cut every pair is a candidate edge; from it
#: the candidates are found by hashing (:func:`crossing_pairs`).
HASH_MIN_PAIRS = 256


@jit
def key_hash(A, r, skip_w, skip_bit):
    """A hash of row ``r`` of the bit sets ``A`` with bit ``skip_bit`` of word ``skip_w``
    cleared."""
    h = np.uint64(0x9E3779B97F4A7C15)
    for w in range(A.shape[1]):
        x = A[r, w]
        if w == skip_w:
            x &= ~skip_bit
        h ^= x
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(31)
    return h


@jit
def crossing_pairs(A, sgn, deg, d, P, Q, hkey, hval):
    """The candidate edges a cut crosses: pairs ``(P[e], Q[e])`` of a vertex above
    (``sgn > 0``) and one below (``sgn < 0``) of a piece (vertex ``r``'s hyperplane bits
    ``A[r]``, ``deg[r]`` of them), sorted, a superset of the pairs sharing ``d - 1``
    hyperplanes. Few pairs: all of them. Else two simple vertices (``d`` bits each) share
    ``d - 1`` iff one of their ``(d - 1)``-subsets is equal: the vertices below are hashed by
    each subset, those above look theirs up; a vertex on more than ``d`` hyperplanes pairs
    with every vertex across. Returns ``P, Q, hkey, hval`` (buffers, grown) and the count."""
    m, words = A.shape[0], A.shape[1]
    n_pos, n_neg, n_easy = 0, 0, 0
    for r in range(m):
        if sgn[r] > 0:
            n_pos += 1
        elif sgn[r] < 0:
            n_neg += 1
            if deg[r] == d:
                n_easy += 1
    n = 0
    if n_pos * n_neg < HASH_MIN_PAIRS:
        P = grow1(P, n_pos * n_neg)
        Q = grow1(Q, n_pos * n_neg)
        for p in range(m):
            if sgn[p] > 0:
                for q in range(m):
                    if sgn[q] < 0:
                        P[n], Q[n] = p, q
                        n += 1
        return P, Q, hkey, hval, n
    size = 2
    while size < 2 * d * n_easy:
        size *= 2
    hkey = grow1(hkey, size)
    hval = grow1(hval, size)
    hval[:size] = -1
    mask = np.uint64(size - 1)
    for q in range(m):
        if sgn[q] < 0 and deg[q] == d:
            for w in range(words):
                x = A[q, w]
                while x:
                    low = x & (~x + np.uint64(1))
                    x ^= low
                    h = key_hash(A, q, w, low)
                    slot = h & mask
                    while hval[slot] >= 0:
                        slot = (slot + np.uint64(1)) & mask
                    hkey[slot], hval[slot] = h, q
    for p in range(m):
        if sgn[p] <= 0:
            continue
        first = n
        P = grow1(P, n + max(n_neg, d * n_easy + n_neg))
        Q = grow1(Q, n + max(n_neg, d * n_easy + n_neg))
        if deg[p] != d:
            for q in range(m):
                if sgn[q] < 0:
                    Q[n] = q
                    n += 1
        else:
            for w in range(words):
                x = A[p, w]
                while x:
                    low = x & (~x + np.uint64(1))
                    x ^= low
                    h = key_hash(A, p, w, low)
                    slot = h & mask
                    while hval[slot] >= 0:
                        if hkey[slot] == h:
                            Q[n] = hval[slot]
                            n += 1
                        slot = (slot + np.uint64(1)) & mask
            for q in range(m):
                if sgn[q] < 0 and deg[q] != d:
                    Q[n] = q
                    n += 1
        if n - first > 1:  # in order, once each
            Q[first:n] = np.sort(Q[first:n])
            last = first
            for e in range(first + 1, n):
                if Q[e] != Q[last]:
                    last += 1
                    Q[last] = Q[e]
            n = last + 1
        for e in range(first, n):
            P[e] = p
    return P, Q, hkey, hval, n


@jit
def cut_layer(X, act, vstart, centre, reach, G, off, norms, near, side, hyper0,
              snap, radius_tol, same_tol, bits0, k0, budget):
    """Cut cells ``0 .. C-1`` (vertices ``X[vstart[i]:vstart[i+1]]`` with their
    hyperplane bits ``act``; ``centre``, ``reach``; the layer's bits so far ``bits0``) by
    the layer's neurons from ``k0`` on: neuron ``k`` is ``G[i, k]·u + off[i, k]`` on cell
    ``i`` (gradient norm ``norms[i, k]``; it may cut the cell iff ``near[i, k]``, else it
    lies on side ``side[i, k]``), hyperplane ``hyper0 + k``. Returns the cells after the
    layer: parent, the layer's bits, centre, reach, vertex ends, vertices and their bits;
    the tally (cuts, snapped, thin); an error ``(kind, hyperplane)``: kind 1, every vertex
    of a cell on the hyperplane; 2, a section with fewer than ``d`` vertices; and where it
    stopped ``(cell, neuron)``: once more than ``budget`` vertex rows are held (the output
    and the cell being cut, after at least one neuron), cells before ``cell`` are cut by
    the whole layer, the pieces of ``cell`` (if any are returned) up to ``neuron``
    (excluded), the cells after it not at all; ``(C, n)``: every cell is cut.

    A cell's pieces live in one buffer of vertex rows (``bS``/``bE``: each piece's
    range): a piece the neuron does not cut stays where it is, one it cuts gets its two
    children written at the buffer's end (the first child takes its place in the list)."""
    C = vstart.size - 1
    d, words, n = X.shape[1], act.shape[1], off.shape[1]
    tally = np.zeros(3, np.int64)
    err = np.zeros(2, np.int64)
    stop = np.array([C, n], np.int64)
    o_parent = np.empty(2 * C + 16, np.int64)
    o_bits = np.empty((2 * C + 16, n), np.bool_)
    o_centre = np.empty((2 * C + 16, d))
    o_reach = np.empty(2 * C + 16)
    o_X = np.empty((2 * X.shape[0] + 16, d))
    o_act = np.empty((2 * X.shape[0] + 16, words), np.uint64)
    o_cell = np.empty(2 * X.shape[0] + 16, np.int64)
    nc = 0
    nv = 0
    bX = np.empty((256, d))
    bA = np.empty((256, words), np.uint64)
    bS = np.empty(16, np.int64)  # each piece's first vertex row, -1: dropped
    bE = np.empty(16, np.int64)  # and its end
    bC = np.empty((16, d))
    bR = np.empty(16)
    bB = np.empty((16, n), np.bool_)
    dist = np.empty(64)
    sgn = np.empty(64, np.int8)
    nX = np.empty((64, d))
    nA = np.empty((64, words), np.uint64)
    shared = np.empty(words, np.uint64)
    deg = np.empty(64, np.int64)
    P = np.empty(64, np.int64)
    below = np.empty(64, np.int64)  # a piece's vertices below the hyperplane
    Q = np.empty(64, np.int64)
    hkey = np.empty(64, np.uint64)
    hval = np.empty(64, np.int64)
    for i in range(C):
        if i > 0 and nv > budget:  # stop between cells
            stop[0], stop[1] = i, k0
            break
        lo, hi = vstart[i], vstart[i + 1]
        if hi - lo > bX.shape[0]:
            bX = grow2(bX, hi - lo)
            bA = grow2(bA, hi - lo)
        for r in range(hi - lo):
            for j in range(d):
                bX[r, j] = X[lo + r, j]
            for w in range(words):
                bA[r, w] = act[lo + r, w]
        nb = hi - lo  # rows used in the buffer
        ns = 1  # pieces
        bS[0], bE[0] = 0, hi - lo
        for j in range(d):
            bC[0, j] = centre[i, j]
        bR[0] = reach[i]
        for kk in range(k0):  # the bits from k0 on are set below
            bB[0, kk] = bits0[i, kk]
        k_end = n
        for k in range(k0, n):
            if k > k0 and nv + nb > budget:  # stop within the cell
                k_end = k
                break
            if not near[i, k]:
                for s in range(ns):
                    bB[s, k] = side[i, k]
                continue
            c = off[i, k]
            nm = norms[i, k]
            word = (hyper0 + k) // 64
            bit = np.uint64(1) << np.uint64((hyper0 + k) % 64)
            for s in range(ns):
                lo = bS[s]
                if lo < 0:
                    continue
                hi = bE[s]
                m = hi - lo
                zc = c
                for j in range(d):
                    zc += bC[s, j] * G[i, k, j]
                spread = nm * bR[s]
                if abs(zc) > spread + same_tol * (1.0 + spread + abs(c)):
                    bB[s, k] = zc >= 0.0
                    continue
                top, bottom = 0.0, 0.0
                if m > dist.shape[0]:  # scratch grown geometrically (no call per cut)
                    dist = np.empty(2 * m)
                    sgn = np.empty(2 * m, np.int8)
                    deg = np.empty(2 * m, np.int64)
                for r in range(m):
                    t = 0.0
                    for j in range(d):
                        t += bX[lo + r, j] * G[i, k, j]
                    t = (t + c) / nm
                    dist[r] = t
                    if abs(t) <= snap:
                        sgn[r] = 0
                        tally[1] += 1
                        bA[lo + r, word] |= bit
                    elif t > 0:
                        sgn[r] = 1
                        top = max(top, t)
                    else:
                        sgn[r] = -1
                        bottom = min(bottom, t)
                if top == 0.0 and bottom == 0.0:
                    err[0], err[1] = 1, hyper0 + k
                    return (o_parent[:nc], o_bits[:nc], o_centre[:nc], o_reach[:nc],
                            o_cell[:nv], o_X[:nv], o_act[:nv], tally, err, stop)
                if not (top > 0.0 and bottom < 0.0):  # not cut: its side
                    bB[s, k] = top > 0.0
                    continue
                # the new vertices: one on each edge the hyperplane crosses
                nz, n_pos = 0, 0
                for r in range(m):
                    if sgn[r] == 0:
                        nz += 1
                    elif sgn[r] > 0:
                        n_pos += 1
                    deg[r] = 0
                    for w in range(words):
                        deg[r] += popcount(bA[lo + r, w])
                npairs = n_pos * (m - nz - n_pos)
                if npairs < HASH_MIN_PAIRS:  # few: every pair, as crossing_pairs (no call)
                    if npairs > P.shape[0] or m > below.shape[0]:
                        P, Q = np.empty(2 * npairs, np.int64), np.empty(2 * npairs, np.int64)
                        below = np.empty(2 * m, np.int64)
                    n_neg = 0
                    for q in range(m):
                        if sgn[q] < 0:
                            below[n_neg] = q
                            n_neg += 1
                    npairs = 0
                    for p in range(m):
                        if sgn[p] > 0:
                            for e in range(n_neg):
                                P[npairs], Q[npairs] = p, below[e]
                                npairs += 1
                else:
                    P, Q, hkey, hval, npairs = crossing_pairs(bA[lo:hi], sgn, deg, d, P, Q,
                                                              hkey, hval)
                ne = 0
                for e in range(npairs):
                    p, q = P[e], Q[e]
                    n_sh = 0
                    for w in range(words):
                        shared[w] = bA[lo + p, w] & bA[lo + q, w]
                        n_sh += popcount(shared[w])
                    if n_sh < d - 1:
                        continue
                    if n_sh >= d or deg[p] > d or deg[q] > d:
                        hold = 0
                        for r in range(m):
                            ok = True
                            for w in range(words):
                                if (bA[lo + r, w] & shared[w]) != shared[w]:
                                    ok = False
                                    break
                            if ok:
                                hold += 1
                        if hold != 2:
                            continue
                    if ne == nX.shape[0]:
                        nX = grow2(nX, ne + 1)
                        nA = grow2(nA, ne + 1)
                    t = dist[p] / (dist[p] - dist[q])
                    for j in range(d):
                        nX[ne, j] = bX[lo + p, j] + t * (bX[lo + q, j] - bX[lo + p, j])
                    for w in range(words):
                        nA[ne, w] = shared[w]
                    nA[ne, word] |= bit
                    ne += 1
                if ne + nz < d:
                    err[0], err[1] = 2, hyper0 + k
                    return (o_parent[:nc], o_bits[:nc], o_centre[:nc], o_reach[:nc],
                            o_cell[:nv], o_X[:nv], o_act[:nv], tally, err, stop)
                keep_on = top > radius_tol
                keep_off = -bottom > radius_tol
                if keep_on and keep_off:
                    tally[0] += 1
                else:
                    tally[2] += 1
                if not (keep_on or keep_off):  # both sides thin: no polytope
                    bS[s] = -1
                    continue
                # the "off" child (the vertices on or below, then the new ones) takes the
                # piece's place; the "on" child (above, then on, then the new) is appended
                if nb + 2 * (m + ne) > bX.shape[0]:
                    bX = grow2(bX, nb + 2 * (m + ne))
                    bA = grow2(bA, nb + 2 * (m + ne))
                if ns + 1 > bS.shape[0]:
                    bS = grow1(bS, ns + 1)
                    bE = grow1(bE, ns + 1)
                    bR = grow1(bR, ns + 1)
                    bC = grow2(bC, ns + 1)
                    bB = grow2(bB, ns + 1)
                for child in range(2):
                    if (child == 0 and not keep_off) or (child == 1 and not keep_on):
                        continue
                    e = nb
                    for phase in range(2):
                        for r in range(m):
                            if child == 0:
                                take = phase == 0 and sgn[r] <= 0
                            elif keep_off:
                                take = sgn[r] > 0 if phase == 0 else sgn[r] == 0
                            else:  # the cell keeps its thick side: in order
                                take = phase == 0 and sgn[r] >= 0
                            if take:
                                for j in range(d):
                                    bX[e, j] = bX[lo + r, j]
                                for w in range(words):
                                    bA[e, w] = bA[lo + r, w]
                                e += 1
                    for r in range(ne):
                        for j in range(d):
                            bX[e, j] = nX[r, j]
                        for w in range(words):
                            bA[e, w] = nA[r, w]
                        e += 1
                    t_ = s if child == 0 or not keep_off else ns
                    if t_ == ns:
                        for kk in range(n):
                            bB[ns, kk] = bB[s, kk]
                        ns += 1
                    bB[t_, k] = child == 1
                    bS[t_], bE[t_] = nb, e
                    recentre(bX, nb, e, bC, bR, t_)
                    nb = e
        # the cell's pieces after the layer
        if nc + ns > o_parent.shape[0]:
            o_parent = grow1(o_parent, nc + ns)
            o_reach = grow1(o_reach, nc + ns)
            o_bits = grow2(o_bits, nc + ns)
            o_centre = grow2(o_centre, nc + ns)
        if nv + nb > o_X.shape[0]:
            o_X = grow2(o_X, nv + nb)
            o_act = grow2(o_act, nv + nb)
            o_cell = grow1(o_cell, nv + nb)
        for s in range(ns):
            if bS[s] < 0:
                continue
            for r in range(bS[s], bE[s]):
                for j in range(d):
                    o_X[nv, j] = bX[r, j]
                for w in range(words):
                    o_act[nv, w] = bA[r, w]
                o_cell[nv] = nc
                nv += 1
            o_parent[nc] = i
            for kk in range(n):
                o_bits[nc, kk] = bB[s, kk]
            for j in range(d):
                o_centre[nc, j] = bC[s, j]
            o_reach[nc] = bR[s]
            nc += 1
        if k_end < n:
            stop[0], stop[1] = i, k_end
            break
    return (o_parent[:nc], o_bits[:nc], o_centre[:nc], o_reach[:nc], o_cell[:nv],
            o_X[:nv], o_act[:nv], tally, err, stop)


@jit
def layer_slack(z, code, lo, inverse, anc, r):
    """One layer of :meth:`polytrav.traversal.subdivision._Batch._radii`, in place: ``r[i]``
    lowered to the distance of cell ``i``'s centre from each neuron's hyperplane (``z[i, k]``
    on the side ``code[i, lo + k]`` gives, times ``inverse[anc[i], k]``; NaN: no
    hyperplane), and ``z`` masked by the code (the layer's output)."""
    for i in range(z.shape[0]):
        a = anc[i]
        m = r[i]
        for k in range(z.shape[1]):
            on = code[i, lo + k]
            s = z[i, k] if on else -z[i, k]
            s *= inverse[a, k]
            if s < m:  # False for NaN
                m = s
            if not on:
                z[i, k] = 0.0
        r[i] = m


@jit
def layer_maps(G, off, anc, on, Wt, b):
    """:meth:`polytrav.traversal.subdivision._Batch.open`'s maps of the next layer: cell
    ``i``'s gradients ``(G[anc[i]] masked by on[i]) @ Wt`` ``(C, d, n)`` and offsets
    ``(off[anc[i]] masked) @ Wt + b`` ``(C, n)``, without gathering the masked maps."""
    C, d, n = anc.size, G.shape[1], Wt.shape[1]
    Gn = np.zeros((C, d, n))
    offn = np.empty((C, n))
    for i in range(C):
        a = anc[i]
        for k in range(n):
            offn[i, k] = b[k]
        for m in range(Wt.shape[0]):
            if not on[i, m]:
                continue
            for j in range(d):
                g = G[a, j, m]
                for k in range(n):
                    Gn[i, j, k] += g * Wt[m, k]
            o = off[a, m]
            for k in range(n):
                offn[i, k] += o * Wt[m, k]
    return Gn, offn


@jit
def layer_screen(G, off, centre, reach, zero_tol, same_tol):
    """:meth:`polytrav.traversal.subdivision._Batch.open`'s screen of a layer's maps ``G``
    ``(C, d, n)``, ``off`` ``(C, n)`` against each cell's ball (``centre``, ``reach``), in
    one pass: the gradient norms, their inverses (NaN: a constant neuron), whether each
    neuron may cut the cell (``near``) and its side if not (``side``)."""
    C, d, n = G.shape
    norms = np.empty((C, n))
    inverse = np.empty((C, n))
    near = np.empty((C, n), np.bool_)
    side = np.empty((C, n), np.bool_)
    for i in range(C):
        for k in range(n):
            s, zc = 0.0, 0.0
            for j in range(d):
                g = G[i, j, k]
                s += g * g
                zc += centre[i, j] * g
            nm = np.sqrt(s)
            c = off[i, k]
            zc += c
            norms[i, k] = nm
            live = nm > zero_tol * (1.0 + abs(c))
            inverse[i, k] = 1.0 / nm if live else np.nan
            spread = nm * reach[i]
            near[i, k] = live and abs(zc) <= spread + same_tol * (1.0 + spread + abs(c))
            side[i, k] = zc >= 0.0 if live else c >= 0.0
    return norms, inverse, near, side
