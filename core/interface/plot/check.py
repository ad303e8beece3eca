"""Checks of a picture's request, run before any traversal or drawing: the file name
(:func:`check_figure_path`, against the formats matplotlib can write here), the plane
(:func:`check_plane`: two input indices) and the axis labels (:func:`input_labels`: the
network's ``input_names``, else ``x_i``); and :func:`import_pyplot`, which says which extra
to install when matplotlib is missing. The pictures are drawn by
:mod:`polytrav.interface.plot`.
"""
from __future__ import annotations

import operator
import shutil
from collections.abc import Sequence
from os import PathLike
from pathlib import Path

from polytrav.interface.export import check_writable
from polytrav.model.network import Network
from polytrav.vocabulary.errors import ConfigError

__all__ = ["import_pyplot", "supported_formats", "check_figure_path", "plane_dims",
           "input_labels", "plane_labels", "check_plane"]


def import_pyplot():
    """``matplotlib.pyplot``, or a :class:`~polytrav.ConfigError` naming the extra to install."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ConfigError('pictures need matplotlib: pip install "polytrav[plot]"') from exc
    return plt


def supported_formats() -> dict[str, str]:
    """The file suffixes (without the dot) matplotlib can write here, with their descriptions.

    Those of ``FigureCanvasBase.get_supported_filetypes()``, less ``pgf`` without its TeX
    program and ``webp``/``avif`` without Pillow's support for them.
    """
    import_pyplot()
    import matplotlib
    from matplotlib.backend_bases import FigureCanvasBase

    formats = dict(FigureCanvasBase.get_supported_filetypes())
    if "pgf" in formats and shutil.which(matplotlib.rcParams["pgf.texsystem"]) is None:
        del formats["pgf"]
    for fmt in ("webp", "avif"):
        if fmt in formats:
            try:
                from PIL import features

                ok = bool(features.check(fmt))
            except Exception:  # noqa: BLE001 - no Pillow, or too old to know the format
                ok = False
            if not ok:
                del formats[fmt]
    return formats


def check_figure_path(path: str | PathLike) -> Path:
    """The absolute path a picture will be saved to, checked before any work.

    Raises
    ------
    ConfigError
        If the name has no suffix or one matplotlib cannot write (the message lists those it
        can), if it names a folder, or if it cannot be written (a missing folder, no permission).

    Examples
    --------
    >>> check_figure_path("out.xyz")
    Traceback (most recent call last):
    ...
    polytrav.vocabulary.errors.ConfigError: figure 'out.xyz': matplotlib cannot write '.xyz' files; ...
    """
    path = Path(path).expanduser()
    fmt = path.suffix[1:].lower()
    formats = supported_formats()
    listing = ", ".join("." + f for f in sorted(formats))
    if not fmt:
        raise ConfigError(f"figure '{path}': no file suffix to tell the format; end the name in "
                          f"one of {listing}")
    if fmt not in formats:
        raise ConfigError(f"figure '{path}': matplotlib cannot write '.{fmt}' files; use one of "
                          f"{listing}")
    path = path.resolve()
    if path.is_dir():
        raise ConfigError(f"figure '{path}' is a folder; give a file name such as "
                          f"'{path / 'partition.png'}'")
    check_writable(path, "figure")
    return path


def plane_dims(n: int, dims) -> tuple[int, int]:
    """The plane ``(i, j)`` of a picture of a network of ``n`` inputs; one-line errors."""
    if n < 2:
        raise ConfigError(f"partition pictures need at least 2 inputs; the network has {n}")
    if dims is None:
        if n == 2:
            return (0, 1)
        raise ConfigError(f"the network has {n} inputs: choose the plane to draw with dims "
                          f"(--dims I J), two different input indices in 0..{n - 1}")
    try:
        if isinstance(dims, (str, bytes)) or len(dims) != 2:
            raise TypeError
        i, j = (operator.index(d) for d in dims)
    except TypeError:
        raise ConfigError(f"dims must be two input indices (I, J) in 0..{n - 1}, got {dims!r}") \
            from None
    if not (0 <= i < n and 0 <= j < n):
        raise ConfigError(f"dims {(i, j)} out of range: the network has {n} inputs, so the "
                          f"valid indices are 0..{n - 1} (0-based)")
    if i == j:
        raise ConfigError(f"dims {(i, j)}: the plane needs two different inputs in 0..{n - 1}")
    return (i, j)


def _escape(name: str) -> str:
    """A model's name as plain matplotlib text (a ``$`` would start mathtext)."""
    return name.replace("$", r"\$")


def input_labels(net: Network, labels: Sequence[str] | None = None) -> tuple[str, ...]:
    """One axis label per input of ``net``: ``labels``, else ``net.input_names``, else ``x_i``.

    ``x_i`` uses the 0-based input index and is written as mathtext (``"$x_{2}$"``).

    >>> net = Network.from_arrays([[[1.0, 1.0, 1.0]]], [[0.0]])
    >>> input_labels(net)
    ('$x_{0}$', '$x_{1}$', '$x_{2}$')
    >>> input_labels(Network.from_arrays([[[1.0, 1.0]]], [[0.0]], input_names=["speed", "angle"]))
    ('speed', 'angle')
    """
    n = net.n_inputs
    if labels is not None:
        if isinstance(labels, (str, bytes)) or not isinstance(labels, Sequence):
            raise ConfigError(f"labels must be a sequence of {n} strings (one per input), got "
                              f"{type(labels).__name__} {labels!r}")
        labels = tuple(labels)
        if len(labels) != n:
            raise ConfigError(f"labels has {len(labels)} entries but the network has {n} inputs; "
                              "give one label per input")
        if not all(isinstance(v, str) for v in labels):
            raise ConfigError(f"labels must be strings, got {labels!r}")
        return labels
    names = getattr(net, "input_names", None)  # None also for a Network pickled before names
    if names is not None:
        return tuple(_escape(v) for v in names)
    return tuple(f"$x_{{{i}}}$" for i in range(n))


def plane_labels(net: Network, dims: tuple[int, int],
                  labels) -> tuple[tuple[str, ...], tuple[str, str]]:
    """All inputs' labels and the plane's two; ``labels`` may also be just the plane's two."""
    if labels is not None and not isinstance(labels, (str, bytes)) and net.n_inputs > 2 \
            and isinstance(labels, Sequence) and len(labels) == 2:
        full = list(input_labels(net))
        labels = tuple(labels)
        if not all(isinstance(v, str) for v in labels):
            raise ConfigError(f"labels must be strings, got {labels!r}")
        full[dims[0]], full[dims[1]] = labels
        full = tuple(full)
    else:
        full = input_labels(net, labels)
    return full, (full[dims[0]], full[dims[1]])


def check_plane(net: Network, dims=None, labels: Sequence[str] | None = None,
                region=None) -> tuple[int, int]:
    """Check the plane and the labels of a picture of ``net`` before any work; return the plane.

    ``dims`` is two different 0-based input indices (``None`` for a network of two inputs:
    ``(0, 1)``); ``labels`` one per input, or two (the plane's axes) for a network of more;
    ``region``, if given, must give both of the plane's inputs a positive width.

    Raises
    ------
    ConfigError
        Naming the valid index range, the number of labels expected, or the input of zero
        width (its picture would be empty).

    >>> net = Network.from_arrays([[[1.0, 1.0, 1.0, 1.0, 1.0]]], [[0.0]])
    >>> check_plane(net, (2, 4))
    (2, 4)
    >>> check_plane(net, (2, 5))
    Traceback (most recent call last):
    ...
    polytrav.vocabulary.errors.ConfigError: dims (2, 5) out of range: ... the valid indices are 0..4 (0-based)
    """
    dims = plane_dims(net.n_inputs, dims)
    plane_labels(net, dims, labels)
    if region is not None:
        lo, hi = region.with_dims(net.n_inputs).bounding_box()
        flat = [i for i in dims if not hi[i] > lo[i]]
        if flat:
            i = flat[0]
            raise ConfigError(f"input {i} has zero width in the region (lower = upper = "
                              f"{lo[i]:g}), so the picture would be empty; give it a positive "
                              "width, or draw two other inputs (dims, --dims I J)")
    return dims
