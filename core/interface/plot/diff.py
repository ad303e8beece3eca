"""A 2-D slice of two models' comparison: where their decisions differ (shaded), ``|g - f|``
as the background, and the worst point of the slice (exact, by :func:`polytrav.diff` on the
plane)."""
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

__all__ = ["save_diff_slice"]


def save_diff_slice(f: Network, g: Network, region: Region, path: str | PathLike, *,
                    dims=None, point=None, labels=None, output: int | None = None,
                    resolution: int = 240, dpi: int = 120, solver=None) -> Path:
    """Draw the plane ``dims`` through ``point`` (default the region's bounding-box centre;
    the other inputs fixed there) and save it; returns the absolute path.

    The background is ``|g_j - f_j|`` (``output`` ``j``; default the largest over the outputs)
    on a ``resolution``-square grid; hatched red where the two models' decisions differ (argmax,
    or the sign of one score) at the grid's points; a star at the slice's worst point and its
    value, exact for the plane (:func:`polytrav.diff` on the 2-D slice). The checks (suffix,
    plane) come first.
    """
    from polytrav.host.diff import diff, joint_network

    path = check_figure_path(path)
    joint_network(f, g)  # the same sizes, or one clear error
    n = f.n_inputs
    dims = plane_dims(n, dims)
    names = plane_labels(f, dims, labels)[1]
    lo, hi = region.with_dims(n).bounding_box()
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
                    label=f"worst: |g{w.output} - f{w.output}| = {w.max_abs:.4g}")
        if res.volume_share is not None:
            lo_s, hi_s = res.volume_share
            share = f"{lo_s:.3g}" if lo_s == hi_s else f"[{lo_s:.3g}, {hi_s:.3g}]"
            ax.set_title(f"decisions differ on {share} of the slice (red)")
        ax.set_xlabel(names[0])
        ax.set_ylabel(names[1])
        if w.witness is not None:
            ax.legend(loc="upper right", fontsize="small")
        fig.savefig(path, dpi=dpi, bbox_inches="tight")
    finally:
        plt.close(fig)
    return path


