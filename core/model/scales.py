"""Per-feature scales of a dataset: what one unit of change in each feature is worth.

A counterfactual's distance in raw units makes features with small units cheap (a change
of 0.01 in a fractal dimension costs as little as 0.01 in an area of 2 000). Dividing each
feature's change by a scale of the data puts them on one footing:
``||(x - x0) / scale||_p``. :class:`DataSummary` holds a dataset's per-feature statistics
and gives the usual scales (:meth:`DataSummary.scale`):

* ``"mad"``: the median absolute deviation ``median(|x_j - median(x_j)|)`` (raw, without the
  normal-consistency factor 1.4826), the recourse literature's default for L1 (Wachter et
  al. 2017; DiCE);
* ``"std"``: the standard deviation (``ddof=0``);
* ``"range"``: ``max - min``.

A feature whose scale is 0 (a MAD of 0: more than half the rows share one value, as in most
binary features) is never silently given 1: ``zero=`` says what replaces it — ``"std"``
(default), ``"range"``, a positive number, ``"immutable"`` (the feature may not change) or
``"error"``; a feature that is constant in the data gets 1 (its domain allows no change)
— and :class:`FeatureScale` records each replacement, so every output can name the metric.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from polytrav.vocabulary.errors import ConfigError

__all__ = ["SCALES", "DataSummary", "FeatureScale", "as_scale"]

#: The scales :meth:`DataSummary.scale` computes from the data.
SCALES = ("mad", "std", "range")
_ZERO = ("std", "range", "immutable", "error")


@dataclass(frozen=True, eq=False)
class FeatureScale:
    """Positive per-feature ``values`` (the unit of each feature's change) and their
    ``kind`` (``"mad"``, ``"std"``, ``"range"``, or ``"given"`` for an array);
    ``replaced`` maps a feature index whose scale was 0 to what replaced it (``"std"``,
    ``"range"``, ``"constant"``, ``"immutable"`` or a number as text); ``held`` are the
    features ``zero="immutable"`` holds fixed (their value is a placeholder 1); ``names``
    the features' names (for :meth:`describe`)."""

    values: np.ndarray
    kind: str = "given"
    replaced: dict[int, str] = field(default_factory=dict)
    held: tuple[int, ...] = ()
    names: tuple[str, ...] | None = None

    def describe(self) -> str:
        """The metric's scale in words, e.g. ``"scaled by MAD (zero MAD: std for 'x3')"``."""
        features = self.names
        name = {"mad": "MAD", "std": "std", "range": "range"}.get(self.kind, "given scales")
        if not self.replaced:
            return f"scaled by {name}"
        by: dict[str, list[str]] = {}
        for j, what in self.replaced.items():
            by.setdefault(what, []).append(repr(features[j]) if features else f"x{j}")
        parts = []
        for what, names in by.items():
            shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
            parts.append(f"held fixed: {shown}" if what == "immutable" else
                         f"1 for constant {shown}" if what == "constant" else f"{what} for {shown}")
        return f"scaled by {name} (zero {name}: {'; '.join(parts)})"


def as_scale(scale, n: int, who: str) -> FeatureScale | None:
    """``scale`` (None, a :class:`FeatureScale`, a positive number or ``n`` of them) checked
    (:class:`ConfigError` naming ``who``)."""
    if scale is None or isinstance(scale, FeatureScale):
        values = None if scale is None else scale.values
        out = scale
    else:
        if isinstance(scale, str):
            raise ConfigError(f"{who}: scale {scale!r} needs the data (it is computed over the "
                              "rows: polytrav.explain does it); here give the scales as an array")
        try:
            values = np.broadcast_to(np.asarray(scale, float), (n,)).copy()
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{who}: scale must be a positive number or {n} of them") from exc
        out = FeatureScale(values)
    if values is not None:
        if values.shape != (n,):
            raise ConfigError(f"{who}: scale has {values.shape} entries, expected {n}")
        bad = np.flatnonzero(~(np.isfinite(values) & (values > 0)))
        if bad.size:
            raise ConfigError(f"{who}: scale must be positive and finite; input(s) "
                              f"{bad[:5].tolist()} are not ({values[bad[:5]].tolist()}): give "
                              "every feature a positive unit, or hold it fixed (immutable)")
    return out


@dataclass(frozen=True, eq=False)
class DataSummary:
    """Per-feature statistics of a dataset's finite values (arrays of ``n_features``):
    ``median``, ``mad``, ``std``, ``lower``, ``upper``; ``rows`` counted."""

    median: np.ndarray
    mad: np.ndarray
    std: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    rows: int

    @classmethod
    def of(cls, X: np.ndarray) -> DataSummary:
        """The statistics of ``X`` (rows by features; NaN and inf ignored per column)."""
        import warnings

        V = np.where(np.isfinite(X), X, np.nan)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column stays NaN
            med = np.nanmedian(V, axis=0)
            return cls(med, np.nanmedian(np.abs(V - med), axis=0), np.nanstd(V, axis=0),
                       np.nanmin(V, axis=0), np.nanmax(V, axis=0), int(X.shape[0]))

    @property
    def range(self) -> np.ndarray:
        return self.upper - self.lower

    def scale(self, kind: str, zero="std", features=None) -> FeatureScale:
        """The :class:`FeatureScale` of ``kind`` (:data:`SCALES`), its zeros replaced as
        ``zero`` says (module docstring); ``features`` name them in errors."""
        if kind not in SCALES:
            raise ConfigError(f"scale must be one of {SCALES} or an array of positive numbers, "
                              f"got {kind!r}")
        if not (zero in _ZERO or (isinstance(zero, (int, float)) and not isinstance(zero, bool)
                                  and np.isfinite(zero) and zero > 0)):
            raise ConfigError(f"zero_scale must be one of {_ZERO} or a positive number, "
                              f"got {zero!r}")
        values = np.array({"mad": self.mad, "std": self.std, "range": self.range}[kind], float)
        replaced, held = {}, []
        for j in np.flatnonzero(~(values > 0)):
            j = int(j)
            name = repr(features[j]) if features else f"input {j}"
            if not self.range[j] > 0:
                values[j], replaced[j] = 1.0, "constant"  # the data's box allows no change
            elif zero == "error":
                raise ConfigError(f"scale {kind!r}: feature {name} has a {kind} of 0; pass "
                                  "zero_scale='std', 'range', 'immutable' or a positive number")
            elif zero == "immutable":
                values[j], replaced[j] = 1.0, "immutable"
                held.append(j)
            elif isinstance(zero, str):
                alt = self.std[j] if zero == "std" else self.range[j]
                values[j], replaced[j] = float(alt), zero
            else:
                values[j], replaced[j] = float(zero), f"{float(zero):g}"
        return FeatureScale(values, kind, replaced, tuple(held),
                            None if features is None else tuple(features))
