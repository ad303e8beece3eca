"""The cell of a polytope in a region's frame: its neuron halfspaces in coordinates ``u``.

A polytope's cell is "polytope ∩ region" in the frame's normalised coordinates ``u``
(:class:`~polytrav.model.geometry.Frame`): one unit-norm halfspace per hidden neuron
(:func:`cell_rows`), built from each layer's hyperplanes (the masking recursion,
:meth:`~polytrav.Network.hyperplanes`), which consecutive polytopes mostly share
(:class:`LayerPlanes` keeps them while the code before a layer is unchanged). The analyses'
subproblems, the Lagrangian cell bounds and the counterfactual's distance bounds read them.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from polytrav.vocabulary.tolerances import ZERO_ROW_TOL

if TYPE_CHECKING:
    from polytrav.model.geometry import Frame
    from polytrav.model.polytope import Polytope

__all__ = ["layer_planes", "LayerPlanes", "stack_planes", "signed_cell_rows", "cell_rows",
           "local_model_u"]


def layer_planes(frame: "Frame", Wh: np.ndarray, bh: np.ndarray):
    """One layer's hyperplanes ``Wh x + bh`` in frame coordinates: unit normals ``G``,
    offsets ``g0`` (``h = |.| (G u + g0)``) and the normals' lengths (0 for a neuron constant
    on the region's affine hull)."""
    G, g0 = frame.pull(Wh), Wh @ frame.origin + bh
    norms = np.linalg.norm(G, axis=1)
    safe = np.where(norms > 0, norms, 1.0)
    return G / safe[:, None], g0 / safe, norms


class LayerPlanes:
    """Per hidden layer of consecutive polytopes, ``derive(W_hat, b_hat)`` of its hyperplanes
    (:meth:`~polytrav.Network.hyperplanes`, the masking recursion). Layer ``k`` depends only
    on the code of the layers before it, which consecutive polytopes mostly share, so each
    layer is kept until that code changes."""

    def __init__(self, derive: Callable[[np.ndarray, np.ndarray], Any]):
        self.derive = derive
        self._code: tuple = ()
        self._layers: list[tuple] = []  # per layer: (W_hat, b_hat, derived)

    def __call__(self, polytope: "Polytope") -> list:
        net, code, layers = polytope.network, polytope.code, self._layers
        keep = 1  # layer 0 depends on no code; layer k + 1 on codes 0..k
        while keep < len(layers) and np.array_equal(self._code[keep - 1], code[keep - 1]):
            keep += 1
        del layers[keep:]
        for k in range(len(layers), len(code)):
            W, b = net.weights[k], net.biases[k]
            if k:  # the masking recursion from the layer before
                Wp, bp, _ = layers[-1]
                on = code[k - 1]
                W, b = W @ (Wp * on[:, None]), W @ (bp * on) + b
            layers.append((W, b, self.derive(W, b)))
        self._code = code
        return [L[2] for L in layers]


def stack_planes(planes: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each layer's :func:`layer_planes` stacked: ``(G, g0, zero)``, with the rows of neurons
    constant on the region's affine hull (``zero``) set to 0 in ``G``."""
    G = np.vstack([p[0] for p in planes])
    g0 = np.concatenate([p[1] for p in planes])
    norms = np.concatenate([p[2] for p in planes])
    zero = norms <= ZERO_ROW_TOL * max(float(norms.max(initial=0.0)), 1e-300)
    G[zero] = 0.0
    return G, g0, zero


def signed_cell_rows(code, stacked: tuple) -> tuple[np.ndarray, np.ndarray]:
    """:func:`cell_rows` from :func:`stack_planes` and the polytope's ``code`` (at least one
    hidden layer)."""
    G, g0, zero = stacked
    s = np.where(np.concatenate(code), -1.0, 1.0)  # on: -h <= 0 ; off: h <= 0
    A, b = s[:, None] * G, -s * g0
    b[zero] = 1.0
    return A, b


def cell_rows(polytope: "Polytope", frame: "Frame") -> tuple[np.ndarray, np.ndarray]:
    """The polytope's neuron halfspaces ``A u <= b`` in frame coordinates ``u``.

    One unit-norm row per hidden neuron, layer by layer (a fixed shape, so it can feed a
    cvxpy parameter); a neuron constant on the region's affine hull gets the row ``0 <= 1``.
    """
    if not polytope.code:  # an affine network: one always-true row keeps the shape non-empty
        return np.zeros((1, frame.dim)), np.ones(1)
    planes = [layer_planes(frame, Wh, bh)
              for Wh, bh in polytope.network.hyperplanes(polytope.code)]
    return signed_cell_rows(polytope.code, stack_planes(planes))


def local_model_u(polytope: "Polytope", frame: "Frame") -> tuple[np.ndarray, np.ndarray]:
    """The local model in frame coordinates: ``output = W_u @ u + c_u`` on the polytope."""
    W, c = polytope.local_model
    return frame.pull(W), W @ frame.origin + c
