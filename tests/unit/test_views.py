"""The protocols a run and the bounds read (host/views.py, bounds/views.py): the real objects
and their substitutes satisfy the same ones."""
import numpy as np
from reference import random_net

from polytrav import Analysis, AnalysisResult, Box, analyze, traverse
from polytrav.bounds.split import BoxPiece, LpContext
from polytrav.bounds.views import BoundContext, BoundPiece
from polytrav.host.manager import get_solver
from polytrav.host.views import ProgressView, TraversalView
from polytrav.parallel import MergedTraversal, PartsProgress
from polytrav.traversal import TraversalStats, TraversalStatus

NET = random_net(0, 2, [5, 4])
BOX = Box([-1.0, -1.0], [1.0, 1.0])


def test_traversals_and_the_merged_traversal_are_traversal_views():
    for strategy in ("hierarchical", "subdivision"):
        run = traverse(NET, BOX, strategy=strategy)
        list(run)
        assert isinstance(run, TraversalView) and isinstance(run, ProgressView), strategy
    merged = MergedTraversal(run.frame, None, TraversalStatus.COMPLETE, TraversalStats())
    assert isinstance(merged, TraversalView) and merged.complete and merged.time_left() is None
    assert isinstance(PartsProgress(3, 7, 1, 2), ProgressView)


def test_pieces_and_contexts_are_what_bounds_read():
    seen_pieces, seen_contexts = [], []

    class Looks(Analysis):
        name = "looks"

        def begin(self, context):
            seen_contexts.append(context)

        def visit(self, polytope, context):
            return None

        def piece_margin(self, piece, context):
            seen_pieces.append(piece)
            return -1.0

        def finish(self, context):
            return AnalysisResult(self.label, None, None)

    analyze(NET, BOX, Looks(), strategy="hierarchical")
    assert seen_pieces and all(isinstance(p, BoundPiece) for p in seen_pieces)
    assert isinstance(BoxPiece(np.zeros(2), np.ones(2)), BoundPiece)
    assert isinstance(seen_contexts[0], BoundContext)
    assert isinstance(LpContext(NET, [get_solver("highs")]), BoundContext)
