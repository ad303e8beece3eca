"""Profile curves: one output along each of the top features through a point (matplotlib).

Each panel is :func:`polytrav.host.profile.profile`'s exact piecewise-linear curve across
the domain's range of one feature, its breakpoints marked and the point's own value shown.
The top features are those with the largest ``|slope|`` of the local model at the point
(times each feature's ``scale``, if given: e.g. its domain width, for the score's change
across the feature's range). :func:`draw_profiles` draws onto any matplotlib ``Figure``
(the report's, without pyplot).
"""
from __future__ import annotations

from os import PathLike
from pathlib import Path

import numpy as np
from polytrav.host.profile import profile
from polytrav.interface.plot.check import check_figure_path, import_pyplot, input_labels
from polytrav.model.network import Network
from polytrav.model.region import Box
from polytrav.vocabulary.errors import ConfigError

__all__ = ["draw_profiles", "plot_profiles", "save_profiles", "top_features"]


def top_features(net: Network, x, top: int, output: int = 0, scale=None) -> list[int]:
    """The ``top`` inputs with the largest ``|d output / d x_j|`` at ``x``, each times
    ``scale[j]`` if given (ties: lower index)."""
    W, _ = net.local_model(net.activation_code(np.asarray(x, float)))
    effect = np.abs(W[output]) * (1.0 if scale is None else np.asarray(scale, float))
    return [int(j) for j in np.argsort(-effect, kind="stable")[:top]]


def plot_profiles(net: Network, x, domain, *, features=None, top: int = 4, output: int = 0,
                  labels=None):
    """A figure with one panel per feature: output ``output`` along it through ``x``.

    ``domain`` is a :class:`~polytrav.Box` or ``(lo, hi)`` (each feature's range);
    ``features`` (indices, or names: ``input_names``, else ``x<j>``) default to the :func:`top_features`. Returns the figure.
    """
    box = domain.with_dims(net.n_inputs) if isinstance(domain, Box) else Box(*domain).with_dims(net.n_inputs)
    names = input_labels(net, labels)
    if features is None:
        features = top_features(net, x, top, output)
    plain = list(net.input_names or [f"x{j}" for j in range(net.n_inputs)])
    idx = [_index(f, plain) for f in features]
    if not idx:
        raise ConfigError("plot_profiles: no feature to draw")
    plt = import_pyplot()
    fig = plt.figure(figsize=(3.2 * len(idx), 2.8))
    draw_profiles(fig, net, x, box, idx, output=output, names=names)
    fig.tight_layout()
    return fig


def draw_profiles(fig, net: Network, x, box: Box, idx: list[int], *, output: int = 0,
                  names=None, threshold: float | None = None, ylabel: str | None = None) -> None:
    """One panel per input of ``idx`` on ``fig``: output ``output`` along it through ``x``
    across ``box``'s range (the exact curve, its breakpoints and the point), and a dashed
    line at ``threshold`` (a decision boundary) if given."""
    names = names or [f"x{j}" for j in range(net.n_inputs)]
    x = np.asarray(x, float)
    axes = fig.subplots(1, len(idx), squeeze=False)[0]
    for ax, j in zip(axes, idx):
        if not box.upper[j] > box.lower[j]:
            ax.set_title(f"{names[j]}: fixed in the domain", fontsize=9)
            continue
        p = profile(net, x, j, box.lower[j], box.upper[j])
        ax.plot(p.values, p.outputs[:, output], "-", color="C0", lw=1.5)
        ax.plot(p.values, p.outputs[:, output], ".", color="C0", ms=4, label="breakpoints")
        ax.plot([x[j]], [net.forward(x)[output]], "o", color="C3", label="the point")
        if threshold is not None:
            ax.axhline(threshold, color="0.5", lw=0.8, ls="--")
        ax.set_xlabel(names[j])
        n = len(p.values) - 2
        ax.set_title(f"{n} breakpoint{'' if n == 1 else 's'}", fontsize=9)
    axes[0].set_ylabel(ylabel or f"output {output}")
    axes[0].legend(fontsize=8)


def _index(feature, names) -> int:
    if isinstance(feature, str) and feature in names:
        return names.index(feature)
    if not isinstance(feature, str) and 0 <= int(feature) < len(names):
        return int(feature)
    raise ConfigError(f"plot_profiles: unknown feature {feature!r}; features: {list(names)[:10]}")


def save_profiles(net: Network, x, domain, path: str | PathLike, *, dpi: int = 120,
                  **kwargs) -> Path:
    """:func:`plot_profiles` saved to ``path`` (checked first); returns the absolute path.

    >>> import tempfile, pathlib
    >>> net = Network.from_arrays([[[1.0, -1.0], [1.0, 1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "profiles.png"
    >>> save_profiles(net, [0.2, 0.1], (-1, 1), out) == out.resolve()
    True
    """
    path = check_figure_path(path)
    plt = import_pyplot()
    fig = plot_profiles(net, x, domain, **kwargs)
    try:
        fig.savefig(path, dpi=dpi, bbox_inches="tight")
    finally:
        plt.close(fig)
    return path
