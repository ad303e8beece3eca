"""Pictures of the partition in 2-D, like the paper's Figures 1, 3 and 4 (matplotlib extra).

:func:`partition` draws every polytope of a 2-D network inside a polyhedral region: filled
polygons, their edges coloured by the hidden layer whose hyperplane makes them (layer 1 the
thickest), each polytope's local decision boundary, the start point, optionally the
traversal's BFS tree, and the results of a :class:`~polytrav.Report` (output range extremes,
counterfactuals with their norm balls, monotonicity violations, other witnesses). Every
picture has a title, axis labels and a legend.

:func:`partition_slice` draws a plane through a higher-dimensional input space (two free
inputs, the others fixed, by default at the box centre) and says so in its title;
:func:`plane_slice` is the underlying 2-D network. :func:`save_partition` is the one call a
command-line tool needs: it checks the file name, the plane and the labels before drawing
(:func:`check_figure_path`, :func:`check_plane` can run before a long traversal), draws the
right kind of picture and saves it.

Axis labels are the network's ``input_names`` when it has them, else ``x_i`` with the
0-based input index ``i`` (the index ``--dims`` and ``dims`` use); ``labels=`` overrides both.
"""
from __future__ import annotations

import math
import operator
import shutil
import textwrap
from collections.abc import Sequence
from os import PathLike
from pathlib import Path

import numpy as np

from polytrav.vocabulary.errors import ConfigError
from polytrav.model.network import Network
from polytrav.model.region import Ball, Box, Polyhedron, Region

__all__ = ["partition", "partition_slice", "plane_slice", "save_partition", "check_figure_path",
           "check_plane", "input_labels", "supported_formats", "LAYER_COLORS"]

#: Edge colours of the hidden layers' hyperplanes (layer 1 first), cycled.
LAYER_COLORS = ("#1f3b99", "#d95f02", "#1b9e77", "#7570b3", "#e7298a", "#66a61e")
EDGE_TOL = 1e-7
#: Fixed coordinates listed by name in a slice's title (the rest are counted).
MAX_LISTED = 4
#: Regions up to this ratio of height to width (or width to height) are drawn to scale; a
#: thinner strip is stretched to this ratio (its two axes then have different scales).
MAX_ELONGATION = 2.0


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ConfigError('pictures need matplotlib: pip install "polytrav[plot]"') from exc
    return plt


# ---------------------------------------------------------------------- checks (before any work)
def supported_formats() -> dict[str, str]:
    """The file suffixes (without the dot) matplotlib can write here, with their descriptions.

    Those of ``FigureCanvasBase.get_supported_filetypes()``, less ``pgf`` without its TeX
    program and ``webp``/``avif`` without Pillow's support for them.
    """
    _pyplot()
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
        can), if it names a folder, or if its folder does not exist.

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
    if not path.parent.is_dir():
        raise ConfigError(f"figure '{path}': folder '{path.parent}' does not exist; create it "
                          "first")
    return path


def _dims(n: int, dims) -> tuple[int, int]:
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


def _plane_labels(net: Network, dims: tuple[int, int],
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


def check_plane(net: Network, dims=None, labels: Sequence[str] | None = None) -> tuple[int, int]:
    """Check the plane and the labels of a picture of ``net`` before any work; return the plane.

    ``dims`` is two different 0-based input indices (``None`` for a network of two inputs:
    ``(0, 1)``); ``labels`` one per input, or two (the plane's axes) for a network of more.

    Raises
    ------
    ConfigError
        Naming the valid index range, or the number of labels expected.

    >>> net = Network.from_arrays([[[1.0, 1.0, 1.0, 1.0, 1.0]]], [[0.0]])
    >>> check_plane(net, (2, 4))
    (2, 4)
    >>> check_plane(net, (2, 5))
    Traceback (most recent call last):
    ...
    polytrav.vocabulary.errors.ConfigError: dims (2, 5) out of range: ... the valid indices are 0..4 (0-based)
    """
    dims = _dims(net.n_inputs, dims)
    _plane_labels(net, dims, labels)
    return dims


# ---------------------------------------------------------------------- slices
def plane_slice(net: Network, point, dims: tuple[int, int], lower, upper) -> tuple[Network, Box]:
    """The 2-D network ``(s, t) -> net(point + s e_i + t e_j)`` and its box ``[lower, upper]``.

    ``dims = (i, j)`` are the two free inputs; the others stay at ``point``'s values (the
    values of ``i`` and ``j`` in ``point`` are ignored). The 2-D network has no
    ``input_names``: its inputs are ``net``'s inputs ``i`` and ``j`` (see :func:`partition_slice`,
    which labels them).
    """
    point = np.asarray(point, float).reshape(-1)
    i, j = dims
    n = net.n_inputs
    if point.shape[0] != n or not (0 <= i < n and 0 <= j < n) or i == j:
        raise ConfigError(f"plane_slice: need a point of {net.n_inputs} inputs and two different "
                          f"input indices, got {point.shape[0]} values and dims {dims}")
    W0, b0 = net.weights[0], net.biases[0]
    rest = point.copy()
    rest[[i, j]] = 0.0
    weights = [W0[:, [i, j]]] + list(net.weights[1:])
    biases = [W0 @ rest + b0] + list(net.biases[1:])
    return Network.from_arrays(weights, biases, name=net.name), Box(lower, upper)


def _slice_region(region: Region, point: np.ndarray, dims: tuple[int, int]) -> Region:
    """``{(s, t): point + s e_i + t e_j in region}`` as a 2-D region."""
    i, j = dims
    if region.is_box:
        lo, hi = region.bounding_box()
        return Box(lo[[i, j]], hi[[i, j]])
    c = region.constraints()
    rest = point.copy()
    rest[[i, j]] = 0.0
    A, b = c.A[:, [i, j]], c.b - c.A @ rest
    if c.E.shape[0]:
        if np.abs(c.E[:, [i, j]]).max() > 0:
            raise ConfigError("partition_slice: the region's equality constraints involve the "
                              f"plane's inputs {dims}; the slice is not 2-D. Pick other dims")
        if np.abs(c.E @ rest - c.e).max() > 1e-9 * (1 + np.abs(c.e).max()):
            raise ConfigError("partition_slice: the point breaks the region's equality "
                              "constraints; pass a point of the region")
    out = Polyhedron(A, b)
    for ball in c.balls:
        off = np.abs(np.delete(ball.center - rest, [i, j]))
        left = (math.sqrt(max(ball.radius ** 2 - float(off @ off), 0.0)) if ball.p == 2
                else ball.radius - float(off.sum()))
        if left <= 0:
            raise ConfigError(f"partition_slice: the plane misses the region's L{ball.p} ball "
                              "(or only touches it); pass a point of the region")
        out = out & Ball(ball.center[[i, j]], left, norm=ball.p)
    return out


def _fmt(v: float) -> str:
    return f"{v:.5g}"


def _count(n: int) -> str:
    return f"{n} polytope" if n == 1 else f"{n} polytopes"


def _net_desc(net: Network) -> str:
    sizes = "-".join(str(n) for n in (net.n_inputs, *net.hidden_sizes, net.n_outputs))
    return f"{net.name} ({sizes})" if net.name else f"a {sizes} network"


# ---------------------------------------------------------------------- drawing
def _polygon(A: np.ndarray, b: np.ndarray, inside: np.ndarray) -> np.ndarray | None:
    from scipy.spatial import HalfspaceIntersection, QhullError

    keep = np.linalg.norm(A, axis=1) > 0
    try:
        V = HalfspaceIntersection(np.c_[A[keep], -b[keep]], inside).intersections
    except (QhullError, ValueError):
        return None
    c = V.mean(axis=0)
    return V[np.argsort(np.arctan2(V[:, 1] - c[1], V[:, 0] - c[0]))]


def _layer_of_rows(polytope) -> np.ndarray:
    sizes = [c.size for c in polytope.code]
    owner = np.concatenate([np.full(n, k) for k, n in enumerate(sizes)] or [np.zeros(0, int)])
    n_region = polytope.A.shape[0] - owner.size
    return np.concatenate([owner, np.full(n_region, -1)]).astype(int)


def _clip_line(w: np.ndarray, c: float, V: np.ndarray) -> np.ndarray | None:
    """The segment of ``{w.x + c = 0}`` inside the convex polygon ``V`` (ordered vertices)."""
    vals = V @ w + c
    pts = []
    for k in range(len(V)):
        a, b = vals[k], vals[(k + 1) % len(V)]
        if (a < 0) != (b < 0):
            s = a / (a - b)
            pts.append(V[k] + s * (V[(k + 1) % len(V)] - V[k]))
    return np.array(pts[:2]) if len(pts) >= 2 else None


def _layer_width(level: int) -> float:
    return max(2.4 - 0.6 * level, 0.6)


def partition(net: Network, region, ax=None, *, polytopes=None, report=None,
              bfs_tree: bool = False, decision: bool = True, cmap: str = "Pastel1",
              max_polytopes: int = 20000, labels: Sequence[str] | None = None,
              title: str | None = None, note: str | None = None, start=None,
              legend: bool = True, complete: bool | None = None):
    """Draw the polytopes of a 2-D network in a polyhedral region; returns the axes.

    Parameters
    ----------
    net, region
        A network with two inputs and a bounded polyhedral region (box, polyhedron, ball).
    ax : matplotlib Axes, optional
        Where to draw (a new figure otherwise).
    polytopes : list of Polytope, optional
        From a traversal already run; by default :func:`polytrav.traverse` runs here (from
        ``start``).
    report : Report, optional
        Draws its analyses' results: output range arg-min (v) and arg-max (^), each
        counterfactual's start, boundary point and norm ball, monotonicity violations
        (hatched red), and any other analysis's witness point (X).
    bfs_tree : bool
        Arrows from each polytope to those its exploration discovered (the BFS tree).
    decision : bool
        Each polytope's local decision boundary (``logit = 0`` for one output, the border
        between the top two classes for several), dashed.
    labels : two str, optional
        Axis labels; default the network's ``input_names``, else ``x_0`` and ``x_1``.
    title : str, optional
        Default: the network and the number of polytopes drawn. ``""`` for none.
    note : str, optional
        A second line under the title (wrapped).
    start : point, optional
        The traversal's start point, marked in the picture. Default: the box centre for a
        box region (where :func:`polytrav.traverse` starts by default), else the centre of
        the first polytope visited.
    legend : bool
        A legend below the axes (beside a tall picture): one entry per hidden layer whose
        hyperplanes show, the region boundary, the decision boundaries, the start point, the
        BFS tree and the report's marks, each if drawn.
    """
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    from polytrav.host.runner import traverse

    plt = _pyplot()
    if net.n_inputs != 2:
        raise ConfigError(f"partition pictures need 2 inputs, the network has {net.n_inputs}; "
                          "take a plane through the input space with partition_slice()")
    axis_labels = input_labels(net, labels)
    region = region.with_dims(2)
    lo, hi = region.bounding_box()
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        raise ConfigError(f"partition: the region is unbounded (bounding box {lo} to {hi}); "
                          "pictures need a bounded region")
    start_label = "traversal start point"
    if start is None and region.is_box:
        start = (lo + hi) / 2
    elif start is not None:
        start = np.asarray(start, float).reshape(-1)
        if start.shape != (2,):
            raise ConfigError(f"partition: start must have 2 coordinates, got {start.shape[0]}")
    complete = complete  # given with ``polytopes``: whether their traversal was complete
    if polytopes is None:
        run = traverse(net, region, start=start, max_polytopes=max_polytopes)
        polytopes = list(run)
        complete = run.complete
    else:
        polytopes = list(polytopes)
    if start is None and polytopes:
        first = min(polytopes, key=lambda p: p.index)
        start, start_label = first.interior_point, "start: first polytope's centre"
    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 7.0), layout="constrained")
    colors = plt.get_cmap(cmap)
    shapes = {}
    levels, boundary, decided = set(), False, False
    for p in polytopes:
        A, b = p.A, p.b
        V = _polygon(A, b, p.interior_point)
        if V is None:
            continue
        shapes[p.index] = V
        ax.fill(V[:, 0], V[:, 1], color=colors(p.index % colors.N), alpha=0.9, linewidth=0)
        owner = _layer_of_rows(p)
        for k in range(len(V)):
            seg = np.array([V[k], V[(k + 1) % len(V)]])
            mid = seg.mean(axis=0)
            tight = np.flatnonzero(np.abs(A @ mid - b) < EDGE_TOL * (1 + np.abs(b)))
            layers = [owner[t] for t in tight if owner[t] >= 0]
            if not layers:
                ax.plot(seg[:, 0], seg[:, 1], color="black", linewidth=1.2)
                boundary = True
                continue
            level = min(layers)
            levels.add(level)
            ax.plot(seg[:, 0], seg[:, 1], color=LAYER_COLORS[level % len(LAYER_COLORS)],
                    linewidth=_layer_width(level))
        if decision:
            W, c = p.local_model
            if W.shape[0] == 1:
                w, c0 = W[0], c[0]
            else:
                top = np.argsort(W @ p.interior_point + c)[-2:]
                w, c0 = W[top[1]] - W[top[0]], c[top[1]] - c[top[0]]
            seg = _clip_line(w, c0, V)
            if seg is not None:
                ax.plot(seg[:, 0], seg[:, 1], color="black", linestyle="--", linewidth=0.8)
                decided = True
    drew_tree = False
    if bfs_tree:
        by_index = {p.index: p for p in polytopes}
        for p in polytopes:
            if p.parent is not None and p.parent in by_index:
                a, b_ = by_index[p.parent].interior_point, p.interior_point
                ax.annotate("", xy=b_, xytext=a, arrowprops=dict(arrowstyle="->", color="dimgray",
                                                                lw=0.6))
                drew_tree = True
    if start is not None:
        ax.plot(*start, marker="o", markersize=7, markerfacecolor="white",
                markeredgecolor="black", linestyle="", zorder=6, clip_on=False)
    report_handles = _draw_report(ax, report, shapes) if report is not None else []

    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])
    ratio = (hi[1] - lo[1]) / (hi[0] - lo[0])
    if 1 / MAX_ELONGATION <= ratio <= MAX_ELONGATION:
        ax.set_aspect("equal")  # true shapes: angles, norm balls
    else:  # a thin strip drawn at most MAX_ELONGATION times longer than wide, not a sliver
        ax.set_aspect("auto")
        ax.set_box_aspect(min(max(ratio, 1 / MAX_ELONGATION), MAX_ELONGATION))
    ax.set_xlabel(axis_labels[0])
    ax.set_ylabel(axis_labels[1])
    if title is None:
        state = " (incomplete traversal)" if complete is False else ""
        title = f"Partition of {_net_desc(net)}: {_count(len(polytopes))}{state}"
    _set_title(ax, title, note)
    if legend:
        handles = [Patch(facecolor=colors(0), edgecolor="none", label="polytope (linear region)")]
        handles += [Line2D([], [], color=LAYER_COLORS[k % len(LAYER_COLORS)],
                           linewidth=_layer_width(k), label=f"layer {k + 1} hyperplanes")
                    for k in sorted(levels)]
        if boundary:
            handles.append(Line2D([], [], color="black", linewidth=1.2, label="region boundary"))
        if decided:
            handles.append(Line2D([], [], color="black", linestyle="--", linewidth=0.8,
                                  label="local decision boundary"))
        if drew_tree:
            handles.append(Line2D([], [], color="dimgray", linewidth=0.6, marker=">",
                                  markersize=4, label="BFS tree (discovery)"))
        if start is not None:
            handles.append(Line2D([], [], marker="o", markersize=7, markerfacecolor="white",
                                  markeredgecolor="black", linestyle="", label=start_label))
        _place_legend(ax, handles + report_handles, right=ratio > 1.2)
    ax.xaxis.set_major_locator(_fitting_locator())
    ax.yaxis.set_major_locator(_fitting_locator())
    return ax


def _axes_width(ax) -> float:
    """The axes' width in points as laid out so far (after the aspect is applied)."""
    ax.apply_aspect()
    return ax.get_position().width * ax.figure.get_figwidth() * 72


def _set_title(ax, title: str, note: str | None) -> None:
    """The title, then the note, each wrapped to about the axes' width (at least 50 chars)."""
    chars = max(50, min(90, int(_axes_width(ax) / (0.5 * _points("medium")))))
    lines = [textwrap.fill(line, chars) for part in (title, note) if part
             for line in part.splitlines()]
    if lines:
        ax.set_title("\n".join(lines), fontsize="medium")


def _points(size) -> float:
    from matplotlib.font_manager import FontProperties

    return FontProperties(size=size).get_size_in_points()


def _place_legend(ax, handles, right: bool) -> None:
    """A legend beside a tall picture (``right``), else centred under the axes, below the
    tick labels and the x label, in as many columns as fit the axes' width."""
    import matplotlib
    from matplotlib.transforms import ScaledTranslation

    if right:
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.03, 1.0),
                  fontsize="small", frameon=False)
        return
    rc = matplotlib.rcParams
    drop = (rc["xtick.major.size"] + rc["xtick.major.pad"] + 1.3 * _points(rc["xtick.labelsize"])
            + rc["axes.labelpad"] + 1.6 * _points(rc["axes.labelsize"]) + 4)
    fig = ax.figure
    anchor = ax.transAxes + ScaledTranslation(0, -drop / 72, fig.dpi_scale_trans)
    size = _points("small")
    widest = max(len(h.get_label()) for h in handles) * 0.55 * size + 4.5 * size
    ncol = int(max(1, min(3, _axes_width(ax) // widest)))
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0),
              bbox_transform=anchor, fontsize="small", ncol=ncol, frameon=False)


def _fitting_locator():
    """A tick locator whose labels fit along the axis, even a thin strip's short side.

    Like matplotlib's default (``MaxNLocator``), but at each draw it takes the most ticks
    (at most 8) whose formatted labels fit side by side (x) or stacked (y) along the axis
    as drawn, so narrow axes get fewer ticks instead of overlapping labels.
    """
    import matplotlib
    from matplotlib.ticker import MaxNLocator

    class FittingLocator(MaxNLocator):
        def tick_values(self, vmin, vmax):
            axis = self.axis
            if axis is None or axis.axes is None:
                return super().tick_values(vmin, vmax)
            ax = axis.axes
            horizontal = axis.axis_name == "x"
            length = (ax.bbox.width if horizontal else ax.bbox.height) * 72 / ax.figure.dpi
            size = _points(matplotlib.rcParams["xtick.labelsize" if horizontal
                                               else "ytick.labelsize"])
            lo, hi = sorted((vmin, vmax))
            slack = 1e-9 * (hi - lo)
            formatter = axis.get_major_formatter()
            most = max(1, min(7, axis.get_tick_space()))  # at most matplotlib's own cap
            for nbins in [most] + [k for k in (7, 5, 4, 3, 2, 1) if k < most]:
                self.set_params(nbins=nbins)
                ticks = super().tick_values(vmin, vmax)
                inside = [t for t in ticks if lo - slack <= t <= hi + slack]
                if not inside:
                    continue
                if len(inside) < 2:
                    break
                # the room between neighbouring ticks, in points
                room = length * (inside[1] - inside[0]) / max(hi - lo, 1e-300)
                if horizontal:  # side by side: the widest label plus a gap
                    texts = formatter.format_ticks(inside)
                    need = 0.65 * size * max(len(t) for t in texts) + size
                else:  # stacked: a line plus a gap
                    need = 1.8 * size
                if need <= room:
                    break
            else:  # not even two labels fit: keep one
                return np.asarray(inside[:1] or ticks[:1])
            return ticks

    return FittingLocator(nbins=9, steps=[1, 2, 2.5, 5, 10])


def _draw_report(ax, report, shapes) -> list:
    """Draw a report's results; return one legend handle per kind of mark drawn."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Circle, Patch, Polygon

    handles: dict[str, object] = {}

    def mark(label, **style):
        handles.setdefault(label, Line2D([], [], linestyle="", label=label, **style))

    for res in report.results:
        name = res.analysis.split("#")[0]
        det = res.details
        if name == "output_range":
            for key, marker, what in (("argmin", "v", "output minimum"),
                                      ("argmax", "^", "output maximum")):
                if det.get(key) is not None:
                    x = det[key]
                    ax.plot(x[0], x[1], marker=marker, color="crimson", markersize=9,
                            markeredgecolor="black", zorder=5, clip_on=False)
                    mark(f"{what} (output_range)", marker=marker, color="crimson",
                         markersize=9, markeredgecolor="black")
        elif name == "counterfactual" and res.witness is not None and res.value is not None:
            x0, r, p = np.asarray(det["x0"], float), res.value, det["norm"]
            if p == 2:
                ax.add_patch(Circle(x0, r, fill=False, color="black", linewidth=1.2))
            else:
                pts = ([[r, 0], [0, r], [-r, 0], [0, -r]] if p == 1
                       else [[r, r], [-r, r], [-r, -r], [r, -r]])
                ax.add_patch(Polygon(x0 + np.array(pts), fill=False, color="black", linewidth=1.2))
            norm = "∞" if p == math.inf else f"{p:g}"
            handles.setdefault(f"L{norm} ball, radius the distance",
                               Line2D([], [], color="black", linewidth=1.2,
                                      label=f"L{norm} ball, radius the distance"))
            ax.plot(*x0, "ko", markersize=5, zorder=5, clip_on=False)
            ax.plot(*res.witness, "k*", markersize=10, zorder=5, clip_on=False)
            mark("counterfactual start x0", marker="o", color="black", markersize=5)
            mark("counterfactual (witness)", marker="*", color="black", markersize=10)
        elif name == "monotonicity":
            for v in det.get("violations", []):
                V = shapes.get(v["polytope"])
                if V is not None:
                    ax.add_patch(Polygon(V, fill=False, hatch="///", edgecolor="red",
                                         linewidth=0.0, alpha=0.6, zorder=4))
                    handles.setdefault("monotonicity violation",
                                       Patch(fill=False, hatch="///", edgecolor="red",
                                             label="monotonicity violation"))
            _witness(ax, res, mark)
        elif name != "output_range":
            _witness(ax, res, mark)
    return list(handles.values())


def _witness(ax, res, mark) -> None:
    w = None if res.witness is None else np.asarray(res.witness, float).reshape(-1)
    if w is not None and w.shape == (2,) and np.isfinite(w).all():
        ax.plot(*w, marker="X", color="darkviolet", markeredgecolor="black", markersize=9,
                linestyle="", zorder=5, clip_on=False)
        mark(f"{res.analysis} witness", marker="X", color="darkviolet", markeredgecolor="black",
             markersize=9)


def partition_slice(net: Network, region, dims=None, ax=None, *, point=None,
                    labels: Sequence[str] | None = None, total: int | None = None,
                    total_complete: bool = True,
                    title: str | None = None, note: str | None = None,
                    max_polytopes: int = 20000, **kwargs):
    """Draw the partition on a plane through the input space of ``net``; returns the axes.

    The plane holds inputs ``dims = (i, j)`` free and the others at ``point`` (default the
    centre of the region's bounding box, the box centre for a box). Its polytopes are those
    of the 2-D network :func:`plane_slice` makes: the region's polytopes that the plane
    meets, usually far fewer than the region holds. The title says which plane it is, where
    the other inputs are, and (given ``total``, the number of polytopes a traversal of the
    whole region found) both counts.

    ``labels`` gives one label per input of ``net`` (or just the plane's two); other
    keywords go to :func:`partition`. A report cannot be drawn here (its points are not on
    the plane).
    """
    if kwargs.get("report") is not None:
        raise ConfigError("partition_slice: a report's points are not on the plane; draw reports "
                          "on a network of two inputs with partition()")
    dims = _dims(net.n_inputs, dims)
    full, (li, lj) = _plane_labels(net, dims, labels)
    region = region.with_dims(net.n_inputs)
    lo, hi = region.bounding_box()
    kind = "box" if region.is_box else "region"
    if point is None:
        if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
            raise ConfigError("partition_slice: the region is unbounded; give the point the "
                              "plane goes through")
        point, where = (lo + hi) / 2, ("the box centre" if region.is_box
                                       else "the centre of the region's bounding box")
    else:
        point = np.asarray(point, float).reshape(-1)
        if point.shape[0] != net.n_inputs:
            raise ConfigError(f"partition_slice: point has {point.shape[0]} coordinates, the "
                              f"network takes {net.n_inputs}")
        where = "the given point"
    net2, _ = plane_slice(net, point, dims, lo[list(dims)], hi[list(dims)])
    region2 = _slice_region(region, point, dims)
    from polytrav.host.runner import traverse

    start2 = point[list(dims)] if region2.contains(point[list(dims)]) else None
    run = traverse(net2, region2, start=start2, max_polytopes=max_polytopes)
    polytopes = list(run)
    others = [k for k in range(net.n_inputs) if k not in dims]
    fixed = ", ".join(f"{full[k]}={_fmt(point[k])}" for k in others[:MAX_LISTED])
    if len(others) > MAX_LISTED:
        fixed += f" and {len(others) - MAX_LISTED} more inputs"
    if title is None:
        state = " (incomplete traversal)" if not run.complete else ""
        title = f"Partition of {_net_desc(net)} on a plane: {_count(len(polytopes))}{state}"
    if note is None:
        plane = (f"Slice through {li}, {lj} at {where} ({fixed})." if others
                 else f"The plane of {li}, {lj}.")
        if total is not None and others:
            found = "found" if total_complete else "cut short, found at least"
            count = (f"A traversal of the whole {kind} {found} {_count(total)} (the count "
                     f"polytrav regions prints); this plane meets {_count(len(polytopes))}.")
        elif others:
            count = (f"Polytope counts for the whole {kind} (as polytrav regions prints them) "
                     "are not this slice's.")
        else:
            count = ""
        note = f"{plane} {count}".strip()
    return partition(net2, region2, ax, polytopes=polytopes, labels=(li, lj), title=title,
                     note=note, start=start2, **kwargs)


def save_partition(net: Network, region, path: str | PathLike, *, polytopes=None, dims=None,
                   labels: Sequence[str] | None = None, report=None, point=None,
                   dpi: int = 120, complete: bool = True, **kwargs) -> Path:
    """Draw the partition of ``net`` in ``region`` and save it; returns the absolute path.

    The checks come first, before any traversal or drawing: the file suffix
    (:func:`check_figure_path`), the plane and the labels (:func:`check_plane`). A network of
    two inputs (with ``dims`` ``None`` or ``(0, 1)``) gets :func:`partition`, reusing
    ``polytopes`` if given; any other plane gets :func:`partition_slice` through ``point``
    (default the box centre), whose title also compares with ``len(polytopes)``, the count of
    the whole region. ``complete=False`` says those polytopes come from a traversal cut short
    (a budget), so the figure does not present their count as the total. Other keywords go
    to the drawing function.

    Raises
    ------
    ConfigError
        Bad suffix, missing folder, bad ``dims`` or ``labels``, or a report on a slice.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from polytrav import Box
    >>> net = Network.from_arrays([[[1.0, -1.0], [1.0, 1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "partition.png"
    >>> save_partition(net, Box([-1, -1], [1, 1]), out) == out.resolve()
    True
    """
    path = check_figure_path(path)
    dims = check_plane(net, dims, labels)
    plt = _pyplot()
    if net.n_inputs == 2 and dims == (0, 1):
        ax = partition(net, region, polytopes=polytopes, labels=labels, report=report,
                       complete=complete if polytopes is not None else None, **kwargs)
    else:
        if report is not None:
            raise ConfigError("save_partition: a report can only be drawn on a network of two "
                              "inputs (its points are not on the plane of a slice)")
        total = None if polytopes is None else len(polytopes)
        ax = partition_slice(net, region, dims, point=point, labels=labels, total=total,
                             total_complete=complete, **kwargs)
    try:
        ax.figure.savefig(path, dpi=dpi, bbox_inches="tight")
    finally:
        plt.close(ax.figure)
    return path
