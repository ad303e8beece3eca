"""Dressing of a partition picture: the wrapped title (:func:`set_title`), the legend below
or beside the axes (:func:`place_legend`), tick labels that fit the axis
(:func:`fitting_locator`) and the marks of a report's results (:func:`draw_report`).
Used by :func:`polytrav.interface.plot.partition`; matplotlib is imported inside.
"""
from __future__ import annotations

import math
import textwrap

import numpy as np

__all__ = ["set_title", "place_legend", "fitting_locator", "draw_report"]


def _axes_width(ax) -> float:
    """The axes' width in points as laid out so far (after the aspect is applied)."""
    ax.apply_aspect()
    return ax.get_position().width * ax.figure.get_figwidth() * 72


def set_title(ax, title: str, note: str | None) -> None:
    """The title, then the note, each wrapped to about the axes' width (at least 50 chars)."""
    chars = max(50, min(90, int(_axes_width(ax) / (0.5 * _points("medium")))))
    lines = [textwrap.fill(line, chars) for part in (title, note) if part
             for line in part.splitlines()]
    if lines:
        ax.set_title("\n".join(lines), fontsize="medium")


def _points(size) -> float:
    from matplotlib.font_manager import FontProperties

    return FontProperties(size=size).get_size_in_points()


def place_legend(ax, handles, right: bool) -> None:
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


def fitting_locator():
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


def draw_report(ax, report, shapes) -> list:
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
