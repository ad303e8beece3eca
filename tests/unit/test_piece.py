"""Level-1 pieces: the work units of parallel runs and checkpoints partition the traversal."""
from __future__ import annotations

import numpy as np
import pytest
from reference import random_net

from polytrav import Ball, Box, ConfigError, Network, Polyhedron, traverse
from polytrav.host.runner import pieces
from polytrav.traversal import Piece

REGIONS = {
    "box": lambda d: Box(-np.ones(d), np.ones(d)),
    "polyhedron": lambda d: Box(-np.ones(d), np.ones(d)) & Polyhedron(np.ones((1, d)), [0.7]),
    "l1-ball": lambda d: Ball(np.zeros(d), 1.2, norm=1),
    "l2-ball": lambda d: Ball(np.full(d, 0.1), 0.9, norm=2),
}


def split_codes(net, region):
    run = pieces(net, region)
    found = list(run)
    assert run.complete and all(isinstance(p, Piece) for p in found)
    keys = []
    for p in found:
        sub = traverse(net, region, within=[p])
        keys += [q.key for q in sub]
        assert sub.complete
    return found, keys


@pytest.mark.parametrize("region", sorted(REGIONS))
@pytest.mark.parametrize("seed,widths,d", [(0, [6, 5], 2), (1, [5, 4, 3], 3), (2, [8], 2)])
def test_subtrees_of_the_pieces_partition_the_traversal(region, seed, widths, d):
    net = random_net(seed, d, widths)
    reg = REGIONS[region](d)
    full = traverse(net, reg)
    full_keys = [p.key for p in full]
    found, keys = split_codes(net, reg)
    assert full.complete
    assert len(keys) == len(set(keys)) == len(full_keys)  # no polytope twice
    assert set(keys) == set(full_keys)
    assert len({p.key for p in found}) == len(found) == full.stats.pieces[0]


def test_one_traversal_within_many_pieces_equals_the_whole():
    net = random_net(3, 3, [6, 6])
    reg = Box(-np.ones(3), np.ones(3))
    found = list(pieces(net, reg))
    together = traverse(net, reg, within=found)
    keys = [p.key for p in together]
    assert together.complete and together.stats.pieces[0] == len(found)
    assert sorted(keys) == sorted(p.key for p in traverse(net, reg))
    assert [p.index for p in together] == []  # the iterator is exhausted ...
    assert together.stats.polytopes == len(keys)  # ... and counted every polytope once


def test_affine_network_is_one_piece():
    net = Network.from_arrays([[[1.0, 2.0]]], [[0.5]])
    reg = Box([-1, -1], [1, 1])
    (piece,) = list(pieces(net, reg))
    assert len(list(traverse(net, reg, within=[piece]))) == 1


def test_a_piece_of_another_network_is_refused():
    reg = Box([-1, -1], [1, 1])
    piece = next(iter(pieces(random_net(0, 2, [6, 5]), reg)))
    other = random_net(1, 2, [6, 5])
    for strategy in ("hierarchical", "subdivision"):
        with pytest.raises(ConfigError, match="not a level-1 piece"):
            list(traverse(other, reg, within=[piece], strategy=strategy))


def test_within_and_a_guide_do_not_mix():
    net = random_net(0, 2, [4, 4])
    reg = Box([-1, -1], [1, 1])
    with pytest.raises(ConfigError, match="guide"):
        traverse(net, reg, within=[], guide=object())
