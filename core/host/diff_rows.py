"""Which rows of a dataset two models decide differently (forward passes): the data-file
half of comparing a model's new version (:func:`polytrav.diff` answers for a region)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from polytrav.host.row import Table
from polytrav.model.decision import decisions
from polytrav.model.network import Network
from polytrav.vocabulary.errors import ConfigError, NetworkError

__all__ = ["RowChange", "changed_rows"]


@dataclass(frozen=True)
class RowChange:
    """One row whose decision differs: its ``label`` (the DataFrame's index, else the
    position), ``position``, the classes ``f_class`` and ``g_class`` (class labels when the
    models have them; None at a tie) and both models' outputs."""

    label: Any
    position: int
    f_class: Any
    g_class: Any
    f_output: np.ndarray
    g_output: np.ndarray

    def to_dict(self) -> dict[str, Any]:
        plain = lambda v: v.item() if isinstance(v, np.generic) else v  # noqa: E731
        return {"row": plain(self.label), "position": self.position,
                "f_class": plain(self.f_class), "g_class": plain(self.g_class),
                "f_output": [float(v) for v in self.f_output],
                "g_output": [float(v) for v in self.g_output]}


def changed_rows(f: Network, g: Network, X) -> list[RowChange]:
    """The rows of ``X`` where ``f`` and ``g`` decide differently, in ``X``'s order.

    A decision is the argmax output when it is unique, or for one output the score's sign
    (class 1 when > 0, class 0 when < 0), as :func:`polytrav.diff` counts them; a tie is no
    class, and a row where exactly one model ties counts as changed. ``X``: an array of rows
    in the models' input order, or a DataFrame or :class:`~polytrav.host.row.Table` (its
    columns picked by ``f``'s input names when it has them; its index labels the rows).

    >>> f = Network.from_arrays([[[1.0]]], [[0.0]])
    >>> g = Network.from_arrays([[[1.0]]], [[-0.5]])
    >>> [(r.label, r.f_class, r.g_class) for r in changed_rows(f, g, [[0.2], [0.9], [-1.0]])]
    [(0, 1, 0)]
    """
    if (f.n_inputs, f.n_outputs) != (g.n_inputs, g.n_outputs):
        raise NetworkError(f"changed_rows: f takes {f.n_inputs} inputs to {f.n_outputs} "
                           f"outputs but g {g.n_inputs} to {g.n_outputs}; compare models of "
                           "the same input and output sizes")
    labels = None
    if isinstance(X, Table):
        labels = list(X.index)
        if f.input_names and all(n in X.columns for n in f.input_names):
            X = X.values[:, [X.columns.index(n) for n in f.input_names]]
        else:
            X = X.values
    elif hasattr(X, "columns") and hasattr(X, "index"):  # a DataFrame
        labels = list(X.index)
        if f.input_names and all(n in X.columns for n in f.input_names):
            X = X[list(f.input_names)]
        X = X.to_numpy(dtype=float)
    X = np.atleast_2d(np.asarray(X, dtype=float))
    if X.shape[1] != f.n_inputs:
        raise ConfigError(f"changed_rows: the rows have {X.shape[1]} columns but the models "
                          f"take {f.n_inputs} inputs")
    Yf, Yg = f.forward(X), g.forward(X)
    cf, cg = decisions(Yf), decisions(Yg)
    out = []
    for k in np.flatnonzero(cf != cg):
        out.append(RowChange(label=int(k) if labels is None else labels[k], position=int(k),
                             f_class=_label(f, cf[k]), g_class=_label(g, cg[k]),
                             f_output=Yf[k], g_output=Yg[k]))
    return out




def _label(net: Network, k: int):
    if k < 0:
        return None
    if net.classes is not None and len(net.classes) == max(net.n_outputs, 2):
        return net.classes[k]
    return int(k)
