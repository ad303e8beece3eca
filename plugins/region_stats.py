"""Region statistics: how the network partitions the region (paper §2-4).

Counts polytopes and pieces per level (from the traversal), the Chebyshev radii, each
polytope's volume share where it is cheap (regions of at most ``VOLUME_MAX_DIM`` dimensions,
exact from the polytope's vertices), and the adjacency graph: an edge joins two polytopes
whose activation codes differ in exactly one neuron (the paper's one-adjacency), plus the
traversal's discovery steps (``parent``). :meth:`RegionStats.graph` exports it to networkx
(``pip install "polytrav[graph]"``), built as the GraphML export of :mod:`polytrav.interface.export`.
"""
from __future__ import annotations

import numpy as np

from polytrav.extend import Analysis, AnalysisResult, halfspace_volume, hookimpl

__all__ = ["RegionStats", "VOLUME_MAX_DIM"]

#: Volumes are computed (qhull) for regions of at most this many dimensions.
VOLUME_MAX_DIM = 4


class RegionStats(Analysis):
    """Counts per level, radii, volumes (low dimension) and the one-adjacency graph.

    ``value`` is ``{"polytopes", "per_level", "min_radius", "volume_share_sum"}``
    (``min_radius``: the smallest ``Polytope.radius`` of the run);
    ``details["polytopes"]`` lists ``(index, parent, code, volume_share)``; ``details["edges"]``
    the one-flip adjacency pairs. ``exact`` after a complete run; otherwise the counts are
    of the polytopes visited (``scope`` ``visited``).
    """

    name = "region_stats"

    def __init__(self, volumes: bool = True):
        self.volumes = volumes

    def begin(self, context) -> None:
        self._records = []
        self._keys = {}
        self._min_radius = np.inf
        self._region_volume = None
        if self.volumes and context.frame.dim <= VOLUME_MAX_DIM:
            self._region_volume = _volume(*_frame_halfspaces(context.frame), context.frame)

    def visit(self, polytope, context):
        bits = np.concatenate(polytope.code)
        share = None
        if self._region_volume:
            A, b = _frame_halfspaces(context.frame)
            from polytrav.extend import cell_rows

            Ac, bc = cell_rows(polytope, context.frame)
            vol = _volume(np.vstack([A, Ac]), np.concatenate([b, bc]), context.frame,
                          context.frame.to_u(polytope.interior_point))
            share = None if vol is None else vol / self._region_volume
        self._keys[np.packbits(bits).tobytes()] = polytope.index
        self._records.append((polytope.index, polytope.parent, bits, share))
        self._min_radius = min(self._min_radius, polytope.radius)
        return None

    def _edges(self) -> list[tuple[int, int]]:
        from polytrav.extend import one_flip_pairs  # the one definition of one-adjacency

        return one_flip_pairs((index, bits) for index, _, bits, _ in self._records)

    def finish(self, context) -> AnalysisResult:
        shares = [r[3] for r in self._records]
        total = float(sum(shares)) if shares and all(s is not None for s in shares) else None
        self._last_edges = self._edges()
        self._last_records = self._records
        self._layer_sizes = tuple(context.network.hidden_sizes)  # for graph()'s codes
        return AnalysisResult(
            analysis=self.label, verdict=None,
            value={"polytopes": len(self._records), "per_level": list(context.stats.pieces),
                   "min_radius": float(self._min_radius) if self._records else None,
                   "volume_share_sum": total},
            exact=self.exact(context), n_polytopes=self.n_polytopes,
            details={"polytopes": [(i, p, "".join("1" if b else "0" for b in bits), s)
                                   for i, p, bits, s in self._records],
                     "edges": self._last_edges},
        )

    def describe(self, result) -> list[str]:
        from polytrav.extend import fmt

        v = result.value
        visited = "" if result.exact else " visited"
        return [f"{v['polytopes']} polytopes{visited} (per level {v['per_level']}), smallest Chebyshev "
                f"radius {fmt(v['min_radius'])}"]

    def combine(self, parts, context) -> AnalysisResult:
        """Concatenate the parts' polytopes (indices offset part by part); edges from codes."""
        self._records, self._keys, offset = [], {}, 0
        radii = []
        for p in parts:
            for i, parent, code, share in p.details["polytopes"]:
                bits = np.array([c == "1" for c in code], bool)
                self._keys[np.packbits(bits).tobytes()] = i + offset
                self._records.append((i + offset, None if parent is None else parent + offset,
                                      bits, share))
            if p.value["min_radius"] is not None:
                radii.append(p.value["min_radius"])
            offset += p.n_polytopes
        self._min_radius = min(radii, default=np.inf)
        self.n_polytopes = offset
        self.failures = [f for p in parts for f in p.failures]
        return self.finish(context)

    def graph(self):
        """The last run's one-flip adjacency graph as a ``networkx.Graph``.

        Built by :func:`polytrav.extend.adjacency_graph`, like the GraphML of
        ``polytrav.interface.export.export(...)``: nodes are visit indices with attributes ``index``,
        ``parent`` (``-1`` for none), ``code`` (layers separated by ``|``) and
        ``volume_share`` (``-1.0`` where not computed); an edge joins codes that differ in
        exactly one neuron (the pairs of ``details["edges"]``), its attribute ``discovery``
        True when one end discovered the other. Needs ``pip install "polytrav[graph]"``.
        """
        from polytrav.extend import adjacency_graph

        cuts = np.cumsum(self._layer_sizes)[:-1]
        return adjacency_graph(
            (index, parent, np.split(bits, cuts),
             {"volume_share": -1.0 if share is None else float(share)})
            for index, parent, bits, share in self._last_records)


def _frame_halfspaces(frame):
    return frame.A, frame.b


def _volume(A, b, frame, interior=None) -> float | None:
    """Volume (in ``u`` units) of ``{A u <= b}`` from its vertices (None if qhull fails, or
    the frame has norm balls: the rows are then an outer hull)."""
    if frame.l1_balls or frame.l2_balls:
        return None
    return halfspace_volume(A, b, np.zeros(frame.dim) if interior is None else interior)


@hookimpl
def polytrav_add_analyses():
    """Register :class:`RegionStats`."""
    return [RegionStats]
