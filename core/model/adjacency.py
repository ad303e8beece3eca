"""Adjacency of polytopes: two polytopes are neighbours when their activation codes differ
in exactly one neuron (the paper's one-adjacency), and the graph of that relation."""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from polytrav.vocabulary.errors import ConfigError
from polytrav.vocabulary.text import code_string, parse_code

__all__ = ["one_flip_pairs", "adjacency_graph"]


def _flat(code) -> np.ndarray:
    if isinstance(code, str):
        code = parse_code(code)
    if isinstance(code, np.ndarray) and code.dtype == bool and code.ndim == 1:
        return code
    return np.concatenate([np.asarray(layer, bool).ravel() for layer in code])


def one_flip_pairs(items: Iterable[tuple[int, Any]]) -> list[tuple[int, int]]:
    """Pairs ``(a, b)``, ``a < b``, of indices whose codes differ in exactly one neuron.

    ``items`` are ``(index, code)`` with a code as per-layer bool arrays, one flat bool array
    or a :func:`code_string`. This is polytrav's one definition of adjacency (the paper's
    one-adjacency); every code must have the same number of neurons.

    >>> one_flip_pairs([(0, "01|1"), (1, "11|1"), (2, "10|0"), (3, "01|0")])
    [(0, 1), (0, 3)]
    """
    keys: dict[int, int] = {}
    order = []
    n = None
    for index, code in items:
        bits = _flat(code)
        if n is None:
            n = bits.size
        elif bits.size != n:
            raise ConfigError(f"one_flip_pairs: code of {index} has {bits.size} neurons, the "
                              f"others {n}")
        key = int("".join("1" if b else "0" for b in bits) or "0", 2)
        keys[key] = index
        order.append((index, key))
    masks = [1 << j for j in range(n or 0)]
    edges = set()
    for index, key in order:
        for mask in masks:
            other = keys.get(key ^ mask)
            if other is not None:
                edges.add((min(index, other), max(index, other)))
    return sorted(edges)


def _networkx():
    try:
        import networkx as nx
    except ImportError as exc:
        raise ConfigError('graphs need networkx: pip install "polytrav[graph]"') from exc
    return nx


def adjacency_graph(nodes: Iterable[tuple[int, int | None, Any, dict]]):
    """The one-flip adjacency graph as a ``networkx.Graph`` (needs ``polytrav[graph]``).

    ``nodes`` are ``(index, parent, code, attributes)``; ``code`` as per-layer bool arrays
    (or a :func:`code_string`). Node ``index`` gets the attributes ``index``, ``parent``
    (``-1`` when ``None``: GraphML has no null), ``code`` (:func:`code_string`) and the given
    ones. An edge joins two codes that differ in exactly one neuron (:func:`one_flip_pairs`);
    its attribute ``discovery`` is True when one end is the other's ``parent``. A discovery
    step that flipped several neurons at once is not an edge (the ``parent`` attribute keeps
    it).
    """
    nx = _networkx()
    g = nx.Graph()
    items = []
    parent_of = {}
    for index, parent, code, attrs in nodes:
        index = int(index)
        parent = None if parent is None else int(parent)
        text = code if isinstance(code, str) else code_string(code)
        g.add_node(index, index=index, parent=-1 if parent is None else parent, code=text,
                   **attrs)
        parent_of[index] = parent
        items.append((index, text))
    for a, b in one_flip_pairs(items):
        g.add_edge(a, b, discovery=parent_of.get(b) == a or parent_of.get(a) == b)
    return g
