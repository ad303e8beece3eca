"""Pictures of the partition in 2-D, like the paper's Figures 1, 3 and 4 (matplotlib extra).

:func:`partition` draws every polytope of a 2-D network inside a polyhedral region: filled
polygons, their edges coloured by the hidden layer whose hyperplane makes them (level 1 the
thickest), each polytope's local decision boundary, optionally the traversal's BFS tree, and
the results of a :class:`~polytrav.Report` (output range extremes, counterfactuals with their
norm balls, monotonicity violations). :func:`plane_slice` turns a 2-D slice of a
higher-dimensional input into a 2-D network and box, so the same pictures work there.
"""
from __future__ import annotations

import numpy as np

from polytrav.errors import ConfigError
from polytrav.network import Network
from polytrav.region import Box

__all__ = ["partition", "plane_slice", "LAYER_COLORS"]

#: Edge colours of the hidden layers' hyperplanes (level 1 first), cycled.
LAYER_COLORS = ("#1f3b99", "#d95f02", "#1b9e77", "#7570b3", "#e7298a", "#66a61e")
EDGE_TOL = 1e-7


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ConfigError('pictures need matplotlib: pip install "polytrav[plot]"') from exc
    return plt


def plane_slice(net: Network, point, dims: tuple[int, int], lower, upper) -> tuple[Network, Box]:
    """The 2-D network ``(s, t) -> net(point + s e_i + t e_j)`` and its box ``[lower, upper]``.

    ``dims = (i, j)`` are the two free inputs; the others stay at ``point``'s values.
    """
    point = np.asarray(point, float).reshape(-1)
    i, j = dims
    if point.shape[0] != net.n_inputs or not (0 <= i < net.n_inputs and 0 <= j < net.n_inputs) or i == j:
        raise ConfigError(f"plane_slice: need a point of {net.n_inputs} inputs and two different "
                          f"input indices, got {point.shape[0]} values and dims {dims}")
    W0, b0 = net.weights[0], net.biases[0]
    rest = point.copy()
    rest[[i, j]] = 0.0
    weights = [W0[:, [i, j]]] + list(net.weights[1:])
    biases = [W0 @ rest + b0] + list(net.biases[1:])
    return Network.from_arrays(weights, biases), Box(lower, upper)


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


def partition(net: Network, region, ax=None, *, polytopes=None, report=None,
              bfs_tree: bool = False, decision: bool = True, cmap: str = "Pastel1",
              max_polytopes: int = 20000):
    """Draw the polytopes of a 2-D network in a polyhedral region; returns the axes.

    Parameters
    ----------
    net, region
        A network with two inputs and a polyhedral region (box, polyhedron, L-inf ball).
    ax : matplotlib Axes, optional
        Where to draw (a new figure otherwise).
    polytopes : list of Polytope, optional
        From a traversal already run; by default :func:`polytrav.traverse` runs here.
    report : Report, optional
        Draws its analyses' results: output range arg-min (v) and arg-max (^), each
        counterfactual's start, boundary point and norm ball, monotonicity violations
        (red outlines).
    bfs_tree : bool
        Arrows from each polytope to those its exploration discovered (the BFS tree).
    decision : bool
        Each polytope's local decision boundary (``logit = 0`` for one output, the border
        between the top two classes for several), dashed.
    """
    from polytrav.traverse import traverse

    plt = _pyplot()
    if net.n_inputs != 2:
        raise ConfigError(f"partition pictures need 2 inputs, the network has {net.n_inputs}; "
                          "take a plane through the input space with plane_slice()")
    if polytopes is None:
        run = traverse(net, region, max_polytopes=max_polytopes)
        polytopes = list(run)
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 6))
    colors = plt.get_cmap(cmap)
    shapes = {}
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
                continue
            level = min(layers)
            ax.plot(seg[:, 0], seg[:, 1], color=LAYER_COLORS[level % len(LAYER_COLORS)],
                    linewidth=max(2.4 - 0.6 * level, 0.6))
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
    if bfs_tree:
        by_index = {p.index: p for p in polytopes}
        for p in polytopes:
            if p.parent is not None and p.parent in by_index:
                a, b_ = by_index[p.parent].interior_point, p.interior_point
                ax.annotate("", xy=b_, xytext=a, arrowprops=dict(arrowstyle="->", color="dimgray",
                                                                lw=0.6))
    if report is not None:
        _draw_report(ax, report, shapes)
    lo, hi = region.with_dims(2).bounding_box()
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])
    ratio = (hi[1] - lo[1]) / (hi[0] - lo[0])
    ax.set_aspect("equal" if 0.2 <= ratio <= 5 else "auto")
    ax.set_xlabel("$x_1$")
    ax.set_ylabel("$x_2$")
    return ax


def _draw_report(ax, report, shapes) -> None:
    from matplotlib.patches import Circle, Polygon

    for res in report.results:
        name = res.analysis.split("#")[0]
        det = res.details
        if name == "output_range":
            for key, marker in (("argmin", "v"), ("argmax", "^")):
                if det.get(key) is not None:
                    x = det[key]
                    ax.plot(x[0], x[1], marker=marker, color="crimson", markersize=9,
                            markeredgecolor="black", zorder=5)
        elif name == "counterfactual" and res.witness is not None and res.value is not None:
            x0, r, p = np.asarray(det["x0"], float), res.value, det["norm"]
            if p == 2:
                ax.add_patch(Circle(x0, r, fill=False, color="black", linewidth=1.2))
            else:
                pts = ([[r, 0], [0, r], [-r, 0], [0, -r]] if p == 1
                       else [[r, r], [-r, r], [-r, -r], [r, -r]])
                ax.add_patch(Polygon(x0 + np.array(pts), fill=False, color="black", linewidth=1.2))
            ax.plot(*x0, "ko", markersize=5, zorder=5)
            ax.plot(*res.witness, "k*", markersize=10, zorder=5)
        elif name == "monotonicity":
            for v in det.get("violations", []):
                V = shapes.get(v["polytope"])
                if V is not None:
                    ax.add_patch(Polygon(V, fill=False, hatch="///", edgecolor="red",
                                         linewidth=0.0, alpha=0.6, zorder=4))
