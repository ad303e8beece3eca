"""Layer 4, the traversal engine: hierarchical breadth-first traversal of the local polytopes
inside a region (paper §4).

Level ``l`` of a network with ``L`` hidden layers partitions each level-``(l-1)`` polytope
(a *piece*) with the hyperplanes of layer ``l`` (the paper's masking recursion). Inside one
piece, polytopes are connected by flipping one hyperplane's side (one-adjacency, paper §3),
so a breadth-first search over flips visits them all (paper Theorem 2). The traversal:

1. screens the layer's hyperplanes against the piece (:mod:`.screen`): a hyperplane that
   does not cut the piece's interior never needs a flip;
2. groups identical hyperplanes (duplicate neurons, up to sign) so they flip together, and
   never flips a neuron whose pre-activation is constant on the piece (zero normal);
3. decides each flip with the Chebyshev LP of the flipped cell (``maximise t`` such that the
   ball of radius ``t`` fits; :mod:`.cell_solver`) and hashes every code an LP decided;
4. recurses into each polytope of the level before moving on (depth-first over levels,
   breadth-first within a level; :mod:`.level`), emitting level-``L`` polytopes as it goes
   (:mod:`.emission`).

A cell counts as a polytope iff its certified Chebyshev radius (the smallest slack of all its
constraints at the LP's centre, in the region's normalised coordinates) exceeds
:data:`~polytrav.vocabulary.tolerances.RADIUS_TOL`. Cells thinner than that but thicker than
:data:`~polytrav.vocabulary.tolerances.SLIVER_TOL` are *slivers*: not emitted, but crossed,
so that no polytope is cut off behind one. An LP that is neither optimal nor infeasible is
re-solved cold and then on each fallback backend in turn; if all fail, the flip is recorded
in ``stats.failures`` and the traversal ends ``incomplete``.

Modules: :mod:`.engine` (:class:`Traversal`, the iterator), :mod:`.options`
(:class:`TraversalOptions`: how a run goes, as one value), :mod:`.status` (how a run ends,
its counters, strategies, budgets), :mod:`.piece` (pieces as callers and pruners see them),
:mod:`.cell_solver`, :mod:`.screen`, :mod:`.level`, :mod:`.frontier` (order, guide, pruning)
and :mod:`.emission`. ``polytrav.traverse`` (in :mod:`polytrav.host.runner`) looks backend
names up and builds a :class:`Traversal` from its :class:`TraversalOptions`.
"""
from polytrav.traversal.engine import Traversal
from polytrav.traversal.options import TraversalOptions
from polytrav.traversal.piece import Piece, PieceView
from polytrav.traversal.status import STRATEGIES, Strategy, TraversalStats, TraversalStatus

__all__ = ["Piece", "PieceView", "STRATEGIES", "Strategy", "Traversal", "TraversalOptions",
           "TraversalStats", "TraversalStatus"]
