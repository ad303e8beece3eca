"""One row of a dataset, as an analysis sees it in :func:`polytrav.explain`.

:func:`polytrav.explain` runs the same analyses on every row of a dataset. It hands each
analysis class a :class:`Row` (the row's values, the dataset's domain, the feature names)
through :meth:`Analysis.for_row <polytrav.Analysis.for_row>`, which returns the analysis
instance for that row and the region to run it on. Built-in and third-party analyses take
part the same way.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple, Sequence

import numpy as np

from polytrav.model.region import Box
from polytrav.model.scales import DataSummary
from polytrav.vocabulary.errors import ConfigError

__all__ = ["Row", "Table"]


class Table(NamedTuple):
    """Rows of named numeric columns without pandas (what ``polytrav explain`` and ``diff
    --rows`` read from a CSV file): ``values`` of shape ``(n_rows, n_columns)``, the column
    names, each row's label and the labels' name. :func:`polytrav.explain` and
    :func:`~polytrav.host.diff_rows.changed_rows` take it as they take a DataFrame."""

    values: np.ndarray
    columns: tuple[str, ...]
    index: list
    index_name: str | None = None


@dataclass(frozen=True)
class Row:
    """A row ``x`` of the dataset with its ``domain`` (the data box) and feature names.

    Parameters
    ----------
    x : ndarray, shape (n_inputs,)
        The row's values (finite).
    domain : Box
        The box every analysis of the row stays inside (its lower and upper bounds have
        ``n_inputs`` entries).
    features : tuple of str
        One name per input (column names of a DataFrame, else ``x0, x1, ...``).
    label : Any
        The row's index label in the dataset.
    data : DataSummary, optional
        The dataset's per-feature statistics (median, MAD, std, min, max), computed once per
        :func:`polytrav.explain` call: what per-feature scales and baselines come from.
    """

    x: np.ndarray
    domain: Box
    features: tuple[str, ...]
    label: Any = None
    data: DataSummary | None = None

    def indices(self, spec, who: str) -> np.ndarray:
        """Input indices from feature names or integer positions (``spec``: one or a list).

        Raises :class:`~polytrav.ConfigError` naming ``who`` for an unknown name or an
        index out of range.
        """
        items: Sequence = [spec] if isinstance(spec, (str, int, np.integer)) else list(spec)
        out = []
        for item in items:
            if isinstance(item, str):
                if item not in self.features:
                    raise ConfigError(f"{who}: unknown feature {item!r}; features: "
                                      f"{list(self.features)}")
                out.append(self.features.index(item))
            elif isinstance(item, (int, np.integer)) and 0 <= item < len(self.features):
                out.append(int(item))
            else:
                raise ConfigError(f"{who}: a feature is a name or an index in "
                                  f"[0, {len(self.features)}), got {item!r}")
        return np.asarray(out, dtype=int)

    def per_feature(self, mapping, who: str) -> dict[int, Any]:
        """``{index: value}`` from a mapping keyed by feature names or indices."""
        if not isinstance(mapping, dict):
            raise ConfigError(f"{who}: expected a dict keyed by feature, got "
                              f"{type(mapping).__name__}")
        return {int(self.indices(k, who)[0]): v for k, v in mapping.items()}

    def box_around(self, radius, who: str) -> Box:
        """``Box(x - radius, x + radius)`` intersected with the domain (``radius``: a number
        or one per input, non-negative)."""
        r = np.broadcast_to(np.asarray(radius, float), self.x.shape) if np.ndim(radius) == 0 \
            else np.asarray(radius, float).reshape(-1)
        if r.shape != self.x.shape or not np.all(np.isfinite(r)) or np.any(r < 0):
            raise ConfigError(f"{who}: radius must be a non-negative number or {self.x.size} of "
                              f"them, got {radius!r}")
        lo, hi = self.domain.lower, self.domain.upper
        return Box(np.clip(self.x - r, lo, hi), np.clip(self.x + r, lo, hi))
