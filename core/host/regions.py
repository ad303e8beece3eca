"""``region_table()``: the linear regions a dataset's rows fall in, one row per region.

A ReLU network is one affine map per activation pattern (its linear region, a polytope).
:func:`region_table` groups the rows of ``X`` by the pattern :meth:`Network.activation_code
<polytrav.Network.activation_code>` gives them and, per region, reports the rows, their
predicted classes and scores, the exact local model ``y = W x + c`` (in the inputs' own
units: the gradient per feature and the intercept), the Chebyshev radius of the region
inside the domain (one LP) and, in low dimension, its exact share of the domain's volume.
:meth:`RegionTable.locate` gives the same row for any point, on the data or off it.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from polytrav.host.explain import as_domain, as_table
from polytrav.host.runner import lp_backends
from polytrav.model.geometry import halfspace_volume
from polytrav.model.network import Network
from polytrav.model.region import Box
from polytrav.solve.backend import solve_along
from polytrav.vocabulary.errors import ConfigError, SolverError
from polytrav.vocabulary.results import Status
from polytrav.vocabulary.tolerances import RADIUS_TOL, ZERO_ROW_TOL

__all__ = ["VOLUME_MAX_DIM", "RegionRow", "RegionTable", "cell_halfspaces", "region_table"]

#: The ``classes`` key of the rows' points where the scores tie (no class is decided).
TIE_LABEL = "(tie)"

#: Volume shares are computed for domains of at most this many free dimensions (features
#: of positive width); above it, ``volume_share`` is None.
VOLUME_MAX_DIM = 6



@dataclass(frozen=True)
class RegionRow:
    """One linear region: its pattern, the data rows in it, and its exact local model.

    ``id`` is the region's rank in the table (0: the most rows), None for a region no row of
    ``X`` falls in (:meth:`RegionTable.locate` off the data; then ``in_data`` is False,
    ``count`` 0 and the row statistics NaN). ``gradient`` is ``W`` ``(n_outputs, n_inputs)``
    and ``intercept`` ``c``: the network is ``W x + c`` on the region, ``x`` in the inputs'
    own units. ``radius`` is the Chebyshev radius of region ∩ domain in domain-normalised
    units (each free feature's half-width is 1; 0 when the region misses the domain's
    interior); ``volume_share`` its share of the domain's volume, or None where not computed.
    """

    id: int | None
    code: str
    count: int
    rows: tuple
    in_data: bool
    classes: dict
    score_mean: np.ndarray
    score_std: np.ndarray
    probability_mean: np.ndarray | None
    probability_std: np.ndarray | None
    gradient: np.ndarray
    intercept: np.ndarray
    radius: float
    volume_share: float | None
    centre: np.ndarray | None = field(default=None, repr=False)


class RegionTable:
    """The regions of :func:`region_table`, most rows first.

    ``regions`` (``RegionRow`` list, index = id), ``excluded`` (labels of rows with a
    non-finite value, left out), ``domain`` (a Box), ``features``; :meth:`to_pandas`,
    :meth:`locate`, :meth:`profile`.
    """

    def __init__(self, net, regions, excluded, domain, features, geometry):
        self.net, self.regions, self.excluded = net, regions, excluded
        self.domain, self.features, self._geometry = domain, features, geometry
        self._by_code = {r.code: r for r in regions}

    def __len__(self) -> int:
        return len(self.regions)

    def __getitem__(self, id: int) -> RegionRow:
        return self.regions[id]

    def __repr__(self) -> str:
        n = sum(r.count for r in self.regions)
        return (f"<RegionTable {len(self.regions)} regions, {n} rows, "
                f"{len(self.excluded)} excluded>")

    def locate(self, x) -> RegionRow:
        """The region of the point ``x`` (any point, on the data or off it).

        The pattern is :meth:`Network.activation_code <polytrav.Network.activation_code>`'s
        (a pre-activation of exactly 0 counts as on), so a point on a boundary belongs to the
        region on the neurons' "on" side. If a row of ``X`` has that pattern, its table row;
        else a row computed now, with ``id`` None and ``in_data`` False.
        """
        x = np.asarray(getattr(x, "to_numpy", lambda: x)(), dtype=float).reshape(-1)
        if x.shape != (self.net.n_inputs,) or not np.isfinite(x).all():
            raise ConfigError(f"region_table.locate: x must be {self.net.n_inputs} finite "
                              f"numbers, got {x.tolist()[:8]}")
        code = _code_string(self.net.activation_code(x))
        if code in self._by_code:
            return self._by_code[code]
        return _region(self.net, self.net.activation_code(x), None, [], np.empty((0, x.size)),
                       self.domain, self._geometry)

    def profile(self, x, feature, **kwargs):
        """:func:`polytrav.host.profile.profile` through ``x`` across the domain's range of
        ``feature`` (a name or an index)."""
        from polytrav.host.profile import profile

        j = _feature_index(feature, self.features)
        return profile(self.net, x, j, self.domain.lower[j], self.domain.upper[j],
                       features=self.features, **kwargs)

    def to_pandas(self):
        """One row per region (index ``id``, most rows first): ``count``, ``class`` (the
        majority class), ``classes`` (label: count), ``score_mean``/``score_std`` (per output:
        ``.<name>`` suffixed for several), ``probability_mean``/``probability_std`` (where
        the link gives probabilities: of the positive class for one sigmoid output, per class
        ``.<label>`` for softmax), ``radius``, ``volume_share``, ``grad.<feature>`` and
        ``intercept`` (per output ``.<name>`` for several), ``rows``, ``code``."""
        import pandas as pd

        outs = _output_names(self.net)
        records = [self._record(r, outs) for r in self.regions]
        return pd.DataFrame.from_records(records, index="id") if records else pd.DataFrame()

    def _record(self, r: RegionRow, outs) -> dict[str, Any]:
        rec: dict[str, Any] = {"id": r.id, "count": r.count}
        if r.classes:
            rec["class"] = max(r.classes.items(), key=lambda kv: kv[1])[0]
            rec["classes"] = dict(r.classes)
        rec.update(_per_output("score_mean", r.score_mean, outs))
        rec.update(_per_output("score_std", r.score_std, outs))
        if r.probability_mean is not None:
            names = _probability_names(self.net)
            rec.update(_per_output("probability_mean", r.probability_mean, names))
            rec.update(_per_output("probability_std", r.probability_std, names))
        rec["radius"], rec["volume_share"] = r.radius, r.volume_share
        for k, out in enumerate(outs):
            suffix = "" if len(outs) == 1 else f".{out}"
            rec.update({f"grad{suffix}.{f}": float(g) for f, g in zip(self.features, r.gradient[k])})
            rec[f"intercept{suffix}"] = float(r.intercept[k])
        rec["rows"], rec["code"] = list(r.rows), r.code
        return rec


def region_table(net: Network, X, *, domain=None, solver=None, volumes: bool = True) -> RegionTable:
    """The distinct linear regions the rows of ``X`` fall in, one row each, exactly.

    Parameters
    ----------
    net : Network
    X : array_like (n_rows, n_inputs) or pandas.DataFrame
        The rows (a DataFrame's index labels name them; else positions). Rows with a
        non-finite value are left out and listed in ``RegionTable.excluded``.
    domain : Box or (lo, hi), optional
        The box the radii and volume shares are measured in. Default: X's per-column
        minimum and maximum (as :func:`polytrav.explain`). Features of zero width are held
        fixed (the volume is that of the other features).
    solver : optional
        The LP backend of the Chebyshev radii (name or instance; default HiGHS, with the
        installed LP backends as fallbacks).
    volumes : bool
        Compute the volume shares (default True; False: None, and no qhull).

    Returns
    -------
    RegionTable
        Per region: the rows, the class mix, score mean and std, the local model, the
        Chebyshev radius (one LP) and the volume share. The volume share is computed
        only where it is cheap: at most :data:`VOLUME_MAX_DIM` (6) free features, from the
        vertices of region ∩ domain (one qhull halfspace intersection and one convex hull,
        exact up to float64); else None (also for a sliver qhull cannot resolve). A flat
        region (radius at most ``RADIUS_TOL``) has share 0.

    Examples
    --------
    >>> import numpy as np
    >>> from polytrav import Network
    >>> net = Network.from_arrays([[[1.0, 0.0], [0.0, 1.0]], [[1.0, -1.0]]], [[0.0, 0.0], [0.0]])
    >>> t = region_table(net, np.array([[1.0, 1.0], [2.0, 3.0], [-1.0, 2.0], [np.nan, 0.0]]),
    ...                  domain=(-4.0, 4.0))
    >>> [(r.count, r.rows, r.gradient.tolist()) for r in t.regions]
    [(2, (0, 1), [[1.0, -1.0]]), (1, (2,), [[0.0, -1.0]])]
    >>> t.excluded, round(t[0].volume_share, 6), t.locate([1.0, -1.0]).in_data
    ([3], 0.25, False)
    """
    if not isinstance(net, Network):
        raise ConfigError(f"region_table: net must be a polytrav.Network, got {type(net).__name__}")
    values, features, index, _ = as_table(X, net, "region_table")
    finite = np.isfinite(values).all(axis=1)
    excluded = [index[i] for i in np.flatnonzero(~finite)]
    if not finite.any():
        raise ConfigError("region_table: every row of X has a non-finite value")
    box = as_domain(domain, values[finite], "region_table")
    keep = np.flatnonzero(finite)
    groups: dict[str, list[int]] = {}
    codes = {}
    for i, code in zip(keep, _codes(net, values[keep])):
        key = _code_string(code)
        groups.setdefault(key, []).append(int(i))
        codes.setdefault(key, code)
    order = sorted(groups, key=lambda k: (-len(groups[k]), groups[k][0]))
    backend, fallbacks = lp_backends(solver)
    geometry = _Geometry([backend, *fallbacks], volumes)
    regions = [_region(net, codes[k], rid, [index[i] for i in groups[k]], values[groups[k]],
                       box, geometry) for rid, k in enumerate(order)]
    return RegionTable(net, regions, excluded, box, features, geometry)


# ---------------------------------------------------------------- one region


def _codes(net: Network, X: np.ndarray) -> list[tuple]:
    hidden = net.pre_activations(X)
    return [tuple(h[i] >= 0.0 for h in hidden) for i in range(X.shape[0])]


def _code_string(code) -> str:
    return "|".join("".join("1" if b else "0" for b in layer) for layer in code)


@dataclass(frozen=True)
class _Geometry:
    backends: list  # the LP chain of the Chebyshev radii
    volumes: bool


def _region(net, code, rid, labels, X, box, geometry) -> RegionRow:
    W, c = net.local_model(code)
    n_out = net.n_outputs
    with np.errstate(all="ignore"):
        Y = net.forward(X) if len(X) else np.empty((0, n_out))
        mean = Y.mean(axis=0) if len(X) else np.full(n_out, np.nan)
        std = Y.std(axis=0) if len(X) else np.full(n_out, np.nan)
        pmean = pstd = None
        if net.link in ("sigmoid", "softmax"):
            P = net.predict_proba(X) if len(X) else None
            if net.link == "sigmoid" and n_out == 1:
                P = None if P is None else P[:, 1:]
            width = 1 if net.link == "sigmoid" and n_out == 1 else n_out
            pmean = P.mean(axis=0) if P is not None else np.full(width, np.nan)
            pstd = P.std(axis=0) if P is not None else np.full(width, np.nan)
    classes = {}
    if len(X) and _is_classifier(net):
        k = net.class_index(X)
        classes = {TIE_LABEL if i < 0 else net.class_label(int(i)): n
                   for i, n in sorted(Counter(k.tolist()).items())}
    radius, share, centre = _measure(net, code, box, geometry)
    return RegionRow(rid, _code_string(code), len(labels), tuple(labels), rid is not None,
                     classes, mean, std, pmean, pstd, W, c, radius, share, centre)


def _is_classifier(net) -> bool:
    return net.link != "identity" and not (net.link == "sigmoid" and net.n_outputs > 1)


def cell_halfspaces(net: Network, code, box: Box) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The region of ``code`` inside ``box`` as ``A u <= b`` in the box's normalised
    coordinates ``u`` of its free features (``x = mid + half * u``, ``-1 <= u <= 1``
    included as rows), rows of unit norm; and the free features' indices. A row of a neuron
    constant on the box is dropped if its sign holds, else kept as ``0 <= -1``."""
    lo, hi = box.lower, box.upper
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    free = np.flatnonzero(half > 0)
    d = free.size
    rows, rhs = [np.eye(d), -np.eye(d)], [np.ones(2 * d)]
    for (Wh, bh), on in zip(net.hyperplanes(code), code):
        G, g0 = Wh[:, free] * half[free], Wh @ mid + bh
        s = np.where(on, -1.0, 1.0)  # on: -h <= 0; off: h <= 0
        A, b = s[:, None] * G, -s * g0
        norms = np.linalg.norm(A, axis=1)
        flat = norms <= ZERO_ROW_TOL * max(float(norms.max(initial=0.0)), np.finfo(float).tiny)
        if (b[flat] < 0).any():
            return np.zeros((1, d)), -np.ones(1), free
        rows.append(A[~flat] / norms[~flat, None])
        rhs.append(b[~flat] / norms[~flat])
    return np.vstack(rows), np.concatenate(rhs), free


def _measure(net, code, box, geometry) -> tuple[float, float | None, np.ndarray | None]:
    """(Chebyshev radius, volume share, centre in x) of the region of ``code`` in ``box``."""
    A, b, free = cell_halfspaces(net, code, box)
    d = free.size
    mid, half = (box.lower + box.upper) / 2, (box.upper - box.lower) / 2
    if d == 0:
        inside = bool((b >= 0).all())
        share = (1.0 if inside else 0.0) if geometry.volumes else None
        return 0.0, share, (mid.copy() if inside else None)
    c = np.r_[np.zeros(d), -1.0]
    norms = np.linalg.norm(A, axis=1)
    res, _ = solve_along(geometry.backends, lambda be: be.solve_lp(
        c, np.c_[A, norms], b, bounds=(np.r_[np.full(d, -1.0), 0.0], np.r_[np.ones(d), 1.0])))
    cheap = geometry.volumes and d <= VOLUME_MAX_DIM
    if res.status is Status.INFEASIBLE:
        return 0.0, (0.0 if cheap else None), None
    if res.status is not Status.OPTIMAL:
        raise SolverError(f"region_table: the Chebyshev LP of region {_code_string(code)} "
                          f"did not solve: {res.message}")
    radius = max(float(res.x[d]), 0.0)
    u = res.x[:d]
    centre = mid.copy()
    centre[free] += half[free] * u
    if not cheap:
        return radius, None, centre
    if radius <= RADIUS_TOL:
        return radius, 0.0, centre
    volume = halfspace_volume(A, b, u)
    return radius, None if volume is None else volume / 2.0 ** d, centre


# ---------------------------------------------------------------- names


def _output_names(net) -> list[str]:
    if net.n_outputs == 1:
        return ["score"]
    if net.classes is not None and len(net.classes) == net.n_outputs:
        return [str(c) for c in net.classes]
    return [str(k) for k in range(net.n_outputs)]


def _probability_names(net) -> list[str]:
    if net.n_outputs == 1:
        return ["p"]
    return _output_names(net)


def _per_output(name, values, names) -> dict[str, float]:
    if len(names) == 1:
        return {name: float(values[0])}
    return {f"{name}.{n}": float(v) for n, v in zip(names, values)}


def _feature_index(feature, features) -> int:
    if isinstance(feature, (int, np.integer)) and not isinstance(feature, bool):
        if 0 <= feature < len(features):
            return int(feature)
    elif feature in features:
        return features.index(feature)
    raise ConfigError(f"unknown feature {feature!r}; features: {list(features)[:10]}")
