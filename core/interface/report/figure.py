"""The report's figures as SVG (matplotlib, no pyplot: no display or backend needed): the
histogram of counterfactual distances and the profile panels. :class:`Figures` puts each
one where its format wants it: inline SVG text in HTML, an ``.svg`` file next to a Markdown
report (linked by its relative path)."""
from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np

__all__ = ["COLOURS", "Figures", "distance_histogram", "profile_figure"]

#: Colours of the statuses (the report's legend uses the same).
COLOURS = {"exact": "#2e7d32", "bound": "#ef6c00"}

#: Fixed SVG ids and no dates: the same report twice is the same text.
_RC = {"svg.hashsalt": "polytrav-report", "svg.fonttype": "none"}


class Figures:
    """Where the figures go: ``folder`` None inlines them (SVG text without the XML
    prolog); else each is written to ``folder/<name>.svg`` and the link is
    ``<folder name>/<name>.svg``."""

    def __init__(self, folder: Path | None = None):
        self.folder = folder
        for stale in () if folder is None else [*folder.glob("distances-*.svg"),
                                                 *folder.glob("profile-region-*.svg")]:
            stale.unlink()  # a previous report's figures: this one writes its own

    def put(self, fig, name: str) -> str:
        """The figure's inline SVG text, or the relative link of its file."""
        buffer = io.BytesIO()
        fig.savefig(buffer, format="svg", metadata={"Date": None})
        svg = buffer.getvalue().decode("utf-8")
        if self.folder is None:
            return svg[svg.index("<svg"):]
        self.folder.mkdir(parents=True, exist_ok=True)
        file = self.folder / f"{re.sub(r'[^A-Za-z0-9_.-]+', '-', name)}.svg"
        file.write_text(svg, encoding="utf-8")
        return f"{self.folder.name}/{file.name}"


def distance_histogram(exact: list[float], bound: list[float], metric: str, figures: Figures,
                       name: str) -> str | None:
    """A stacked histogram of the distances (exact minima, and upper bounds where the row
    was left unproven), put by ``figures``; None without distances."""
    if not exact and not bound:
        return None
    from matplotlib import rc_context
    from matplotlib.figure import Figure

    values = np.asarray(exact + bound, dtype=float)
    bins = np.histogram_bin_edges(values, bins=min(30, max(5, int(np.sqrt(values.size)) + 1)))
    with rc_context(_RC):
        fig = Figure(figsize=(6.4, 3.0), layout="constrained")
        ax = fig.add_subplot()
        data = [np.asarray(v, dtype=float) for v in (exact, bound)]
        ax.hist(data, bins=bins, stacked=True, color=[COLOURS["exact"], COLOURS["bound"]],
                label=[f"exact ({len(exact)})", f"upper bound ({len(bound)})"])
        ax.set_xlabel(f"distance to the nearest other decision ({metric})")
        ax.set_ylabel("rows")
        ax.legend(frameon=False)
        return figures.put(fig, name)


def profile_figure(net, x, box, idx: list[int], figures: Figures, name: str, *, output: int,
                   names, threshold: float | None, ylabel: str) -> str:
    """The exact profile panels through ``x`` along the inputs ``idx``
    (:func:`polytrav.interface.plot.profile.draw_profiles`), put by ``figures``."""
    from matplotlib import rc_context
    from matplotlib.figure import Figure
    from polytrav.interface.plot.profile import draw_profiles

    with rc_context(_RC):
        fig = Figure(figsize=(2.9 * len(idx), 2.6))  # fixed margins: half the time of a layout
        draw_profiles(fig, net, x, box, idx, output=output, names=names, threshold=threshold,
                      ylabel=ylabel)
        fig.subplots_adjust(left=0.6 / (2.9 * len(idx)) + 0.02, right=0.98, bottom=0.2,
                            top=0.88, wspace=0.35)
        return figures.put(fig, name)
