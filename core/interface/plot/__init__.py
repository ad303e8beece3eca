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

Beside this module: :mod:`polytrav.interface.plot.check` (the checks and labels, run before
any work), :mod:`polytrav.interface.plot.slice` (the 2-D network and region of a plane) and
:mod:`polytrav.interface.plot.layout` (title, legend, ticks and a report's marks); the names
a user calls are re-exported here.
"""
from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from pathlib import Path

import numpy as np

from polytrav.interface.plot.check import (check_figure_path, check_plane, import_pyplot,
                                           input_labels, plane_dims, plane_labels,
                                           supported_formats)
from polytrav.interface.plot.layout import draw_report, fitting_locator, place_legend, set_title
from polytrav.interface.plot.slice import plane_slice, slice_region
from polytrav.model.geometry import build_frame
from polytrav.model.network import Network
from polytrav.vocabulary.errors import ConfigError
from polytrav.vocabulary.tolerances import EDGE_TOL

__all__ = ["partition", "partition_slice", "plane_slice", "save_partition", "check_figure_path",
           "check_plane", "input_labels", "supported_formats", "LAYER_COLORS"]

#: Edge colours of the hidden layers' hyperplanes (layer 1 first), cycled.
LAYER_COLORS = ("#1f3b99", "#d95f02", "#1b9e77", "#7570b3", "#e7298a", "#66a61e")
#: The polytope budget of a picture's own run (``max_polytopes``): pictures of 10^5 polytopes
#: take seconds (docs/benchmarks.md, "Pictures").
MAX_DRAWN = 200_000
#: Fixed coordinates listed by name in a slice's title (the rest are counted).
MAX_LISTED = 4
#: Regions up to this ratio of height to width (or width to height) are drawn to scale; a
#: thinner strip is stretched to this ratio (its two axes then have different scales).
MAX_ELONGATION = 2.0


def _fmt(v: float) -> str:
    return f"{v:.5g}"


def _count(n: int) -> str:
    return f"{n} polytope" if n == 1 else f"{n} polytopes"


def _net_desc(net: Network) -> str:
    sizes = "-".join(str(n) for n in (net.n_inputs, *net.hidden_sizes, net.n_outputs))
    return f"{net.name} ({sizes})" if net.name else f"a {sizes} network"


# ---------------------------------------------------------------------- drawing
def _polygon(A: np.ndarray, b: np.ndarray, inside: np.ndarray) -> np.ndarray | None:
    """The vertices of ``{A x <= b}`` around ``inside`` (unordered; None if qhull fails)."""
    from scipy.spatial import HalfspaceIntersection, QhullError

    keep = np.linalg.norm(A, axis=1) > 0
    try:
        return HalfspaceIntersection(np.c_[A[keep], -b[keep]], inside).intersections
    except (QhullError, ValueError):
        return None


class _Rings:
    """The polygons of many polytopes, their vertices in order, side by side: polygon ``i``
    is ``points[starts[i]:starts[i + 1]]``; edge ``e`` goes from ``points[e]`` to
    ``points[after[e]]`` and belongs to polygon ``owner[e]``."""

    def __init__(self, points: np.ndarray, sizes: np.ndarray):
        self.points = points
        self.starts = np.concatenate([[0], np.cumsum(sizes)])
        self.owner = np.repeat(np.arange(sizes.size), sizes)
        self.after = np.arange(points.shape[0]) + 1
        self.after[self.starts[1:] - 1] = self.starts[:-1]

    def polygon(self, i: int) -> np.ndarray:
        return self.points[self.starts[i]: self.starts[i + 1]]

    def segments(self, edges: np.ndarray) -> np.ndarray:
        """``(len(edges), 2, 2)``: the ends of ``edges``."""
        return np.stack([self.points[edges], self.points[self.after[edges]]], axis=1)


def _rings(polytopes, frame) -> tuple[list, _Rings]:
    """The polytopes that have a polygon, and their polygons (from ``p.vertices`` when the
    run computed them, else from the inequalities)."""
    drawn, parts = [], []
    for p in polytopes:
        if p.vertices is not None and len(p.vertices) >= 3:
            V = frame.to_x(p.vertices)
        else:
            V = _polygon(p.A, p.b, p.interior_point)
            if V is None:
                continue
        drawn.append(p)
        parts.append(V)
    if not parts:
        return drawn, _Rings(np.zeros((0, 2)), np.zeros(0, int))
    sizes = np.array([len(V) for V in parts])
    points = np.vstack(parts)
    owner = np.repeat(np.arange(sizes.size), sizes)
    centre = np.stack([np.bincount(owner, points[:, j]) for j in range(2)], axis=1)
    gap = points - centre[owner] / sizes[owner, None]
    order = np.lexsort((np.arctan2(gap[:, 1], gap[:, 0]), owner))  # by angle, polygon by polygon
    return drawn, _Rings(points[order], sizes)


def _codes(polytopes) -> np.ndarray:
    """The polytopes' codes, one row each (the layers side by side)."""
    return np.array([np.concatenate(p.code) if p.code else np.zeros(0, bool)
                     for p in polytopes])


def _edge_layers(polytopes, rings: _Rings, lo, hi) -> tuple[np.ndarray, np.ndarray]:
    """Every edge of the polygons once: the hidden layer whose hyperplane makes it (``-1``:
    the region's boundary) and one edge ``e`` of ``rings`` that is it. An edge two polytopes
    share is made by the first layer where their codes differ; any other (the region's
    boundary, or an edge of one polytope along several of its neighbours) by the layer of
    its polytope's inequality tight along it."""
    if not polytopes:
        return np.zeros(0, int), np.zeros(0, int)
    ends = rings.segments(np.arange(rings.points.shape[0]))
    # the same edge seen from both sides: its ends on a fine grid, in either order
    grid = np.round((ends - lo) / (hi - lo) * 2.0 ** 32).astype(np.int64)
    swap = (grid[:, 0, 0] > grid[:, 1, 0]) | ((grid[:, 0, 0] == grid[:, 1, 0])
                                              & (grid[:, 0, 1] > grid[:, 1, 1]))
    grid[swap] = grid[swap][:, ::-1]
    _, first, group, count = np.unique(grid.reshape(-1, 4), axis=0, return_index=True,
                                       return_inverse=True, return_counts=True)
    group = group.reshape(-1)
    codes = _codes(polytopes)
    neuron_layer = np.repeat(np.arange(len(polytopes[0].code)),
                             [c.size for c in polytopes[0].code]).astype(int)
    layer = np.full(first.size, -2)
    pair = np.flatnonzero(count == 2)
    if pair.size and codes.shape[1]:
        order = np.argsort(group, kind="stable")
        at = np.searchsorted(group[order], pair)
        i, j = rings.owner[order[at]], rings.owner[order[at + 1]]
        differ = codes[i] != codes[j]
        known = differ.any(axis=1)
        layer[pair[known]] = neuron_layer[np.argmax(differ[known], axis=1)]
    for g in np.flatnonzero(layer == -2):  # the polytope's inequality tight along the edge
        e = first[g]
        layer[g] = _tight_layer(polytopes[rings.owner[e]], ends[e].mean(axis=0))
    return layer, first


def _decision_segments(net: Network, polytopes, rings: _Rings) -> np.ndarray:
    """Each polytope's local decision boundary inside its polygon, ``(n, 2, 2)``: ``logit =
    0`` for one output, else the border between its top two classes at its centre."""
    codes = _codes(polytopes)
    W, c = net.local_models(codes)
    if W.shape[1] == 1:
        w, c0 = W[:, 0], c[:, 0]
    else:
        centre = np.array([p.interior_point for p in polytopes])
        top = np.argsort(np.einsum("pod,pd->po", W, centre) + c, axis=1)[:, -2:]
        rows = np.arange(len(polytopes))
        w = W[rows, top[:, 1]] - W[rows, top[:, 0]]
        c0 = c[rows, top[:, 1]] - c[rows, top[:, 0]]
    ends = rings.segments(np.arange(rings.points.shape[0]))
    owner = rings.owner
    val = np.einsum("ekd,ed->ek", ends, w[owner]) + c0[owner, None]
    cross = np.flatnonzero((val[:, 0] < 0) != (val[:, 1] < 0))
    t = val[cross, 0] / (val[cross, 0] - val[cross, 1])
    points = ends[cross, 0] + t[:, None] * (ends[cross, 1] - ends[cross, 0])
    who = owner[cross]
    first = np.r_[True, who[1:] != who[:-1]]  # a convex polygon: two crossings, in order
    second = np.r_[False, (who[1:] == who[:-1]) & first[:-1]]
    keep = np.flatnonzero(second)
    return np.stack([points[keep - 1], points[keep]], axis=1)


def _draw_segments(ax, segments: np.ndarray, **style) -> None:
    """Segments ``(n, 2, 2)`` as one line broken by NaN (one artist, drawn fast)."""
    if len(segments):
        gaps = np.full((len(segments), 1, 2), np.nan)
        xy = np.concatenate([segments, gaps], axis=1).reshape(-1, 2)
        ax.plot(xy[:, 0], xy[:, 1], **style)


def _tight_layer(polytope, point: np.ndarray) -> int:
    """The first hidden layer with an inequality of ``polytope`` tight at ``point`` (``-1``:
    only the region's)."""
    A, b = polytope.A, polytope.b
    owner = _layer_of_rows(polytope)
    tight = np.flatnonzero(np.abs(A @ point - b) < EDGE_TOL * (1 + np.abs(b)))
    layers = [owner[t] for t in tight if owner[t] >= 0]
    return min(layers) if layers else -1


def _layer_of_rows(polytope) -> np.ndarray:
    sizes = [c.size for c in polytope.code]
    owner = np.concatenate([np.full(n, k) for k, n in enumerate(sizes)] or [np.zeros(0, int)])
    n_region = polytope.A.shape[0] - owner.size
    return np.concatenate([owner, np.full(n_region, -1)]).astype(int)


def _layer_width(level: int) -> float:
    return max(2.4 - 0.6 * level, 0.6)


def partition(net: Network, region, ax=None, *, polytopes=None, report=None,
              bfs_tree: bool = False, decision: bool = True, cmap: str = "Pastel1",
              max_polytopes: int = MAX_DRAWN, labels: Sequence[str] | None = None,
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
        ``start``, ``strategy="auto"``: subdivision on a polyhedral region, the traversal
        for a ball or ``bfs_tree``), at most ``max_polytopes`` of them.
    report : Report, optional
        Draws its analyses' results: output range arg-min (v) and arg-max (^), each
        counterfactual's start, boundary point and norm ball, monotonicity violations
        (hatched red), and any other analysis's witness point (X).
    bfs_tree : bool
        Arrows from each polytope to those its exploration discovered (the BFS tree): the
        parents of the LP traversal (``strategy="hierarchical"``); polytopes without them
        (subdivision's) draw no tree, with a warning.
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
    from matplotlib.collections import PolyCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    from polytrav.host.runner import traverse

    plt = import_pyplot()
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
        strategy = "hierarchical" if bfs_tree else "auto"  # the tree is the traversal's
        run = traverse(net, region, start=start, max_polytopes=max_polytopes, strategy=strategy)
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
    drawn, rings = _rings(polytopes, build_frame(region, 2))
    shapes = {p.index: rings.polygon(i) for i, p in enumerate(drawn)}
    index = np.array([p.index for p in drawn], dtype=int)
    ax.add_collection(PolyCollection(list(shapes.values()), linewidths=0, alpha=0.9,
                                     facecolors=colors(index % colors.N)))
    layer, first = _edge_layers(drawn, rings, lo, hi)
    levels = {int(k) for k in np.unique(layer[layer >= 0])}
    boundary = bool(np.any(layer < 0))
    if boundary:
        _draw_segments(ax, rings.segments(first[layer < 0]), color="black", linewidth=1.2)
    for level in sorted(levels, reverse=True):  # layer 1 on top
        _draw_segments(ax, rings.segments(first[layer == level]),
                       color=LAYER_COLORS[level % len(LAYER_COLORS)],
                       linewidth=_layer_width(level))
    decided = False
    if decision and drawn:
        lines = _decision_segments(net, drawn, rings)
        decided = len(lines) > 0
        _draw_segments(ax, lines, color="black", linestyle="--", linewidth=0.8)
    drew_tree = False
    if bfs_tree:
        by_index = {p.index: p for p in polytopes}
        for p in polytopes:
            if p.parent is not None and p.parent in by_index:
                a, b_ = by_index[p.parent].interior_point, p.interior_point
                ax.annotate("", xy=b_, xytext=a, arrowprops=dict(arrowstyle="->", color="dimgray",
                                                                lw=0.6))
                drew_tree = True
        if not drew_tree and len(polytopes) > 1:
            import warnings

            warnings.warn("partition: bfs_tree=True drew no tree: these polytopes carry no "
                          "discovery parents (subdivision, the default on a polyhedral "
                          "region, finds cells without a traversal tree); pass the polytopes "
                          "of traverse(..., strategy='hierarchical'), or no polytopes "
                          "(partition then runs that traversal)", UserWarning, stacklevel=2)
    if start is not None:
        ax.plot(*start, marker="o", markersize=7, markerfacecolor="white",
                markeredgecolor="black", linestyle="", zorder=6, clip_on=False)
    report_handles = draw_report(ax, report, shapes) if report is not None else []

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
    set_title(ax, title, note)
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
        place_legend(ax, handles + report_handles, right=ratio > 1.2)
    ax.xaxis.set_major_locator(fitting_locator())
    ax.yaxis.set_major_locator(fitting_locator())
    return ax


def partition_slice(net: Network, region, dims=None, ax=None, *, point=None,
                    labels: Sequence[str] | None = None, total: int | None = None,
                    total_complete: bool = True,
                    title: str | None = None, note: str | None = None,
                    max_polytopes: int = MAX_DRAWN, **kwargs):
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
    dims = plane_dims(net.n_inputs, dims)
    full, (li, lj) = plane_labels(net, dims, labels)
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
    region2 = slice_region(region, point, dims)
    from polytrav.host.runner import traverse

    start2 = point[list(dims)] if region2.contains(point[list(dims)]) else None
    strategy = "hierarchical" if kwargs.get("bfs_tree") else "auto"
    run = traverse(net2, region2, start=start2, max_polytopes=max_polytopes, strategy=strategy)
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
    dims = check_plane(net, dims, labels, region)
    plt = import_pyplot()
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
