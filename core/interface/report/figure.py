"""The report's figure: the histogram of counterfactual distances, as SVG text (matplotlib,
no pyplot: no display or backend needed)."""
from __future__ import annotations

import base64
import io

import numpy as np

__all__ = ["distance_histogram"]

#: Colours of the statuses (the report's legend uses the same).
COLOURS = {"exact": "#2e7d32", "bound": "#ef6c00"}


def distance_histogram(exact: list[float], bound: list[float], metric: str, *,
                       as_data_uri: bool = False) -> str | None:
    """A stacked histogram of the distances (exact minima, and upper bounds where the row
    was left unproven); SVG text to inline, or a ``data:`` URI; None without distances."""
    if not exact and not bound:
        return None
    from matplotlib import rc_context
    from matplotlib.figure import Figure

    values = np.asarray(exact + bound, dtype=float)
    bins = np.histogram_bin_edges(values, bins=min(30, max(5, int(np.sqrt(values.size)) + 1)))
    with rc_context({"svg.hashsalt": "polytrav-report", "svg.fonttype": "none"}):
        fig = Figure(figsize=(6.4, 3.0), layout="constrained")
        ax = fig.add_subplot()
        data = [np.asarray(v, dtype=float) for v in (exact, bound)]
        ax.hist(data, bins=bins, stacked=True, color=[COLOURS["exact"], COLOURS["bound"]],
                label=[f"exact ({len(exact)})", f"upper bound ({len(bound)})"])
        ax.set_xlabel(f"distance to the nearest other decision ({metric})")
        ax.set_ylabel("rows")
        ax.legend(frameon=False)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    svg = buffer.getvalue()
    if as_data_uri:
        return "data:image/svg+xml;base64," + base64.b64encode(svg).decode("ascii")
    text = svg.decode("utf-8")
    return text[text.index("<svg"):]  # inline: without the XML prolog and DOCTYPE
