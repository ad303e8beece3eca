"""A 2-D slice of two models' comparison: where their decisions differ (shaded), ``|g - f|``
as the background, and the worst point of the slice (exact, by :func:`polytrav.diff` on the
plane); the title says where the slice lies, the caption the region's worst when given."""
from __future__ import annotations

from os import PathLike
from pathlib import Path

import numpy as np

from polytrav.interface.plot.check import (check_figure_path, import_pyplot, plane_dims,
                                           plane_labels)
from polytrav.interface.plot.slice import plane_slice, slice_region
from polytrav.model.decision import decisions
from polytrav.model.network import Network
from polytrav.model.region import Region
from polytrav.vocabulary.tolerances import EQUALITY_TOL

__all__ = ["save_diff_slice"]


def save_diff_slice(f: Network, g: Network, region: Region, path: str | PathLike, *,
                    dims=None, point=None, labels=None, output: int | None = None,
                    resolution: int = 240, dpi: int = 120, solver=None,
                    region_result=None) -> Path:
    """Draw the plane ``dims`` through ``point`` (default the region's bounding-box centre;
    the other inputs fixed there) and save it; returns the absolute path.

    The background is ``|g_j - f_j|`` (``output`` ``j``; default the largest over the outputs)
    on a ``resolution``-square grid; hatched red where the two models' decisions differ (argmax,
    or the sign of one score) at the grid's points; a star at the slice's worst point and its
    value, exact for the plane (:func:`polytrav.diff` on the 2-D slice), labelled "worst on
    this slice". The title names the plane's inputs and the values the others are held at.
    ``region_result``, the :class:`~polytrav.host.diff.DiffResult` of the whole region (what
    ``polytrav diff`` prints), adds a caption with the region's worst and whether it lies on
    the slice (then a second marker). The checks (suffix, plane) come first.
    """
    from polytrav.host.diff import diff, joint_network

    path = check_figure_path(path)
    joint_network(f, g)  # the same sizes, or one clear error
    n = f.n_inputs
    dims = plane_dims(n, dims)
    full, names = plane_labels(f, dims, labels)
    lo, hi = region.with_dims(n).bounding_box()
    centre = point is None
    point = (lo + hi) / 2 if point is None else np.asarray(point, float).reshape(-1)
    if n == 2 and dims == (0, 1):
        f2, g2, r2 = f, g, region.with_dims(2)
    else:
        f2, box = plane_slice(f, point, dims, lo[list(dims)], hi[list(dims)])
        g2, _ = plane_slice(g, point, dims, lo[list(dims)], hi[list(dims)])
        r2 = slice_region(region.with_dims(n), point, dims) if not region.is_box else box
    outs = None if output is None else [output]
    res = diff(f2, g2, r2, outputs=outs, volumes=True, solver=solver)
    (a, b), (c, d) = r2.bounding_box()[0], r2.bounding_box()[1]
    s, t = np.meshgrid(np.linspace(a, c, resolution), np.linspace(b, d, resolution))
    X = np.c_[s.ravel(), t.ravel()]
    Yf, Yg = f2.forward(X), g2.forward(X)
    cols = slice(None) if output is None else [output]
    gap = np.abs(Yg - Yf)[:, cols].max(axis=1)
    differ = decisions(Yf) != decisions(Yg)
    inside = np.array([r2.contains(x) for x in X]) if not r2.is_box else \
        np.ones(len(X), bool)
    gap[~inside] = np.nan
    differ &= inside
    plt = import_pyplot()
    fig, ax = plt.subplots(figsize=(5.6, 4.6))
    try:
        im = ax.imshow(gap.reshape(s.shape), origin="lower", extent=(a, c, b, d), aspect="auto",
                       cmap="Greys")
        fig.colorbar(im, ax=ax, label="|g - f|" if output is None else f"|g{output} - f{output}|")
        if differ.any():
            ax.contourf(s, t, differ.reshape(s.shape).astype(float), levels=[0.5, 1.5],
                        colors=["tab:red"], alpha=0.35, hatches=["//"])
        w = res.worst
        if w.witness is not None:
            ax.plot(*w.witness, marker="*", color="tab:blue", markersize=14, linestyle="none",
                    clip_on=False, zorder=5,
                    label=f"worst on this slice: |g{w.output} - f{w.output}| = {w.max_abs:.4g}")
        on = _region_worst(region_result, output, point, dims)
        if on is not None:
            ax.plot(*on.witness[list(dims)], marker="o", markerfacecolor="none",
                    color="tab:orange", markersize=16, mew=2, linestyle="none", clip_on=False,
                    zorder=6, label=f"the region's worst: |g{on.output} - f{on.output}| = "
                                    f"{on.max_abs:.4g}")
        ax.set_title(f"{slice_title(full, point, dims, centre)}\n{_share_text(res)}",
                     fontsize="medium")
        caption = _caption(region_result, output, on is not None)
        if caption:
            fig.text(0.5, -0.01, caption, ha="center", va="top", fontsize="small", wrap=True)
        ax.set_xlabel(names[0])
        ax.set_ylabel(names[1])
        if w.witness is not None or on is not None:
            ax.legend(loc="upper right", fontsize="small")
        fig.savefig(path, dpi=dpi, bbox_inches="tight")
    finally:
        plt.close(fig)
    return path


#: At most this many held inputs are named one by one in the title.
HELD_LISTED = 4


def slice_title(names, point, dims, centre: bool = False) -> str:
    """Where the slice lies: its two inputs and the values the others are held at
    (``centre``: the point is the box's centre, said so).

    >>> slice_title(["a", "b", "c"], [0.5, 0.0, 2.0], (0, 1))
    'slice of a and b; c held at 2'
    >>> slice_title([f"x{i}" for i in range(8)], [0.0] * 8, (0, 1), centre=True)
    'slice of x0 and x1; the other 6 inputs held at 0 (the box centre)'
    """
    i, j = dims
    point = np.asarray(point, float).reshape(-1)
    head = f"slice of {names[i]} and {names[j]}"
    others = [k for k in range(len(point)) if k not in (i, j)]
    if not others:
        return head
    where = " (the box centre)" if centre else ""
    vals = point[others]
    if len(others) > 1 and np.all(vals == vals[0]):
        return f"{head}; the other {len(others)} inputs held at {vals[0]:.4g}{where}"
    held = [f"{names[k]} = {point[k]:.4g}" for k in others[:HELD_LISTED]]
    if len(others) > HELD_LISTED:
        held.append(f"… ({len(others) - HELD_LISTED} more)")
    if len(others) == 1:
        return f"{head}; {names[others[0]]} held at {point[others[0]]:.4g}{where}"
    return f"{head}; held: {', '.join(held)}{where}"


def _share_text(res) -> str:
    """The slice's decision share, as its verdict says (0 when proven never to differ)."""
    if res.decisions_differ is False:
        return "the decisions never differ on this slice (proven)"
    if res.volume_share is None:
        return "decisions differ (red): share unknown"
    lo_s, hi_s = res.volume_share
    share = f"{lo_s:.3g}" if lo_s == hi_s else f"[{lo_s:.3g}, {hi_s:.3g}]"
    return f"decisions differ on {share} of the slice (red)"


def _region_worst(result, output, point, dims):
    """The region's worst :class:`OutputDiff` (of ``output`` when given) when its witness
    lies on the slice (the held inputs at ``point``'s values), else None."""
    w = _worst_of(result, output)
    if w is None or w.witness is None:
        return None
    x = np.asarray(w.witness, float)
    held = np.ones(x.shape[0], bool)
    held[list(dims)] = False
    tol = EQUALITY_TOL * (1 + np.abs(point[held]).max(initial=0.0))
    return w if np.all(np.abs(x[held] - point[held]) <= tol) else None


def _worst_of(result, output):
    if result is None:
        return None
    outs = [o for o in result.outputs if output is None or o.output == output]
    outs = [o for o in outs if np.isfinite(o.max_abs)]
    return max(outs, key=lambda o: o.max_abs) if outs else None


def _caption(result, output, on_slice: bool) -> str:
    """The region's worst next to the slice's, so the figure agrees with the printed text."""
    w = _worst_of(result, output)
    if w is None:
        return "the star is the worst on this slice only; the region's worst may be larger"
    what = "exact" if result.exact else "over the visited polytopes only"
    where = "on this slice (circle)" if on_slice else "off this slice"
    from polytrav.vocabulary.text import vector

    at = "" if w.witness is None else f" at x = {vector(w.witness)}"
    return (f"the region's worst: |g{w.output} - f{w.output}| = {w.max_abs:.4g} ({what}), "
            f"{where}{at}; the star is the worst on this slice")


