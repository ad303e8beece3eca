"""The ReLU network: affine layers with ReLU between them and an affine output.

A :class:`Network` with ``L`` hidden layers holds ``L + 1`` affine maps ``(W_k, b_k)`` as
float64 arrays, ``W_k`` shaped ``(n_out, n_in)``. It computes

    h_1 = W_1 x + b_1,  z_1 = relu(h_1),  ...,  y = W_{L+1} z_L + b_{L+1}.

A neuron is *on* when its pre-activation is ``>= 0``; the tuple of per-layer boolean arrays is
the point's *activation code*. On the set of points sharing a code the network is the affine
map returned by :meth:`Network.local_model`.
"""
from __future__ import annotations

from collections.abc import Sequence
from os import PathLike

import numpy as np

from polytrav.model.decision import TIE, decisions
from polytrav.vocabulary.errors import NetworkError

__all__ = ["LINKS", "Network"]

Code = tuple[np.ndarray, ...]

#: How a network's outputs become the model's answer (:attr:`Network.link`): ``"sigmoid"``
#: (each output a logit: one output, a binary classifier's logit of ``classes[1]``; several,
#: a multilabel classifier's), ``"softmax"`` (one logit per class), ``"identity"`` (a
#: regressor: the outputs are the prediction). ``None`` is unknown.
LINKS = ("sigmoid", "softmax", "identity")


def _as_matrix(value, what: str) -> np.ndarray:
    try:
        arr = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise NetworkError(f"Network: {what} is not numeric ({exc})") from exc
    return arr


def _existing(path, kind: str):
    """``path`` if it names a file; else a NetworkError saying where relative paths start."""
    import os
    from pathlib import Path

    p = Path(path)
    if p.is_file():
        return path
    if p.is_dir():
        raise NetworkError(f"{kind} model {str(path)!r} is a folder; give the model file")
    where = "" if p.is_absolute() else f" (relative paths start at {os.getcwd()})"
    raise NetworkError(f"{kind} model file {str(path)!r} not found{where}")


def _check_finite(arr: np.ndarray, what: str) -> None:
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise NetworkError(
            f"Network: {what} contains {arr[tuple(bad)]} at index {tuple(int(i) for i in bad)}; "
            "every weight and bias must be finite"
        )


def _check_names(names, n_inputs: int) -> tuple[str, ...] | None:
    if names is None:
        return None
    try:
        if isinstance(names, (str, bytes)):
            raise TypeError
        names = tuple(names)
    except TypeError:
        raise NetworkError(
            f"Network: input_names must be a sequence of {n_inputs} strings (one per input), "
            f"got {type(names).__name__} {names!r}"
        ) from None
    if len(names) != n_inputs:
        raise NetworkError(
            f"Network: input_names has {len(names)} names but the network takes {n_inputs} "
            "inputs; give one name per input"
        )
    bad = [(k, v) for k, v in enumerate(names) if not isinstance(v, str) or not v.strip()]
    if bad:
        k, v = bad[0]
        raise NetworkError(
            f"Network: input_names[{k}] is {v!r}; every input name must be a non-empty string"
        )
    return tuple(str(v) for v in names)  # plain str, also from numpy string arrays


def _check_link(link, n_outputs: int) -> str | None:
    if link is None:
        return None
    if not isinstance(link, str) or link not in LINKS:
        raise NetworkError(f"Network: link must be one of {list(LINKS)} or None, got {link!r}")
    if link == "softmax" and n_outputs < 2:
        raise NetworkError(f"Network: link 'softmax' needs one output per class (at least 2), "
                           f"but the network has {n_outputs}; a binary logit is 'sigmoid'")
    return link


def _check_classes(classes, link: str | None, n_outputs: int) -> tuple | None:
    if classes is None:
        return None
    if link == "identity":
        raise NetworkError("Network: classes given but link is 'identity' (a regressor has no "
                           "classes); give link='sigmoid' or 'softmax', or no classes")
    n = 2 if n_outputs == 1 else n_outputs  # one output: a binary logit of classes[1]
    try:
        if isinstance(classes, (str, bytes)):
            raise TypeError
        labels = tuple(v.item() if isinstance(v, np.generic) else v for v in classes)
        distinct = len(set(labels)) == len(labels)
    except TypeError:
        raise NetworkError(f"Network: classes must be a sequence of {n} distinct labels, got "
                           f"{type(classes).__name__} {classes!r}") from None
    if len(labels) != n:
        what = ("one output is the logit of classes[1]: give (negative, positive)"
                if n_outputs == 1 else "give one label per output")
        raise NetworkError(f"Network: classes has {len(labels)} labels but the network needs "
                           f"{n}; {what}")
    if not distinct or any(v is None for v in labels):
        raise NetworkError(f"Network: classes must be {n} distinct labels (not None), "
                           f"got {list(labels)!r}")
    return labels


def _input_problem(x, n_inputs: int) -> str:
    """What is wrong with an input numpy cannot read as float64 numbers."""
    shape = f"an array of shape ({n_inputs},) or (n, {n_inputs})"
    if x is None:
        return f"Network: input is None; give {shape}"
    if isinstance(x, (str, bytes)):
        return f"Network: input is text ({x!r}), not numbers; give {shape}"
    try:
        ragged = np.asarray(x, dtype=object).dtype == object and np.ndim(x) >= 1 and \
            len({np.shape(v) for v in x}) > 1
    except (TypeError, ValueError):
        ragged = True
    if ragged:
        return f"Network: input is not a rectangular array (rows of different lengths); give {shape}"
    return (f"Network: input is not numeric ({type(x).__name__} {_brief(x)}); give {shape} "
            "of numbers")


def _brief(x) -> str:
    text = repr(x)
    return text if len(text) <= 60 else text[:57] + "..."


def _sigmoid(y: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-y))`` without overflow warnings."""
    e = np.exp(-np.abs(y))
    return np.where(y >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _softmax(Y: np.ndarray) -> np.ndarray:
    """Softmax along the last axis (scikit-learn's: the maximum subtracted first)."""
    E = np.exp(Y - Y.max(axis=-1, keepdims=True))
    return E / E.sum(axis=-1, keepdims=True)


class Network:
    """A feed-forward ReLU network as a stack of float64 affine maps.

    Parameters
    ----------
    weights : sequence of array_like
        ``L + 1`` matrices, the k-th shaped ``(n_k, n_{k-1})``.
    biases : sequence of array_like
        ``L + 1`` vectors, the k-th shaped ``(n_k,)``.
    input_shape : tuple of int, optional
        Shape of one input as the source model expects it (e.g. ``(1, 28, 28)``); inputs are
        flattened in row-major order. Defaults to ``(n_inputs,)``.
    input_domain : (lower, upper), optional
        Bounds outside which the source model does something the affine layers do not
        (the clipping of ``.nnet`` files). Traversal refuses regions that leave it.
    name : str, optional
        A label for messages and reports.
    input_names : sequence of str, optional
        One name per (flattened) input, e.g. ``("rho", "theta", "psi", "v_own", "v_int")``;
        pictures label their axes with them. ``None`` (the default) when the model has no
        names. Kept by nothing that changes the inputs (:meth:`compose_input` drops them).
    classes : sequence, optional
        The class labels of a classifier (scikit-learn's ``classes_``): one per output, or
        ``(negative, positive)`` for a network with one output (the logit of
        ``classes[1]``). :meth:`predict` and :meth:`class_label` answer in them; ``None``
        (the default): classes are their indices.
    link : {"sigmoid", "softmax", "identity", None}, optional
        How the outputs become the model's answer (:data:`LINKS`): ``"sigmoid"`` (logits:
        one output, a binary classifier; several, a multilabel one), ``"softmax"`` (one
        logit per class), ``"identity"`` (a regressor). ``None`` (the default): unknown, so
        no probabilities; polytrav's analyses then read one output as a binary logit (class
        1 iff ``>= 0``) and several as one score per class (the largest wins).
        ``classes`` and ``link`` are kept by what keeps the outputs (:meth:`compose_input`)
        and dropped by what changes them (:meth:`with_inputs`, :meth:`stack`).

    Raises
    ------
    NetworkError
        If shapes do not chain, a value is not finite, there is no layer,
        ``input_names`` does not hold one non-empty string per input, ``link`` is not one
        of :data:`LINKS` (or ``"softmax"`` on one output), or ``classes`` does not hold the
        distinct labels the outputs need (none for ``"identity"``).

    Examples
    --------
    >>> net = Network.from_arrays([[[1.0, -1.0], [1.0, 1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
    >>> net.forward([1.0, 2.0])
    array([3.])
    >>> [c.tolist() for c in net.activation_code([1.0, 2.0])]
    [[False, True]]
    """

    #: Defaults for a Network pickled before these attributes existed.
    classes: tuple | None = None
    link: str | None = None

    def __init__(
        self,
        weights: Sequence,
        biases: Sequence,
        *,
        input_shape: tuple[int, ...] | None = None,
        input_domain: tuple[np.ndarray, np.ndarray] | None = None,
        name: str | None = None,
        input_names: Sequence[str] | None = None,
        classes: Sequence | None = None,
        link: str | None = None,
    ):
        weights = list(weights)
        biases = list(biases)
        if len(weights) == 0:
            raise NetworkError("Network: no layers given; pass at least the output layer")
        if len(weights) != len(biases):
            raise NetworkError(
                f"Network: {len(weights)} weight matrices but {len(biases)} bias vectors; "
                "give one bias per layer"
            )
        Ws, bs = [], []
        n_prev = None
        for k, (W, b) in enumerate(zip(weights, biases), start=1):
            W = _as_matrix(W, f"layer {k} weights")
            b = _as_matrix(b, f"layer {k} bias").reshape(-1)
            if W.ndim != 2:
                raise NetworkError(
                    f"Network: layer {k} weights must be 2-D (n_out, n_in), got shape {W.shape}"
                )
            if b.shape[0] != W.shape[0]:
                raise NetworkError(
                    f"Network: layer {k} has {W.shape[0]} outputs (weights {W.shape}) "
                    f"but its bias has {b.shape[0]} entries"
                )
            if n_prev is not None and W.shape[1] != n_prev:
                raise NetworkError(
                    f"Network: layer {k} weights have shape {W.shape} but layer {k - 1} outputs "
                    f"{n_prev} values; weights are (n_out, n_in)"
                )
            _check_finite(W, f"layer {k} weights")
            _check_finite(b, f"layer {k} bias")
            W.setflags(write=False)
            b.setflags(write=False)
            Ws.append(W)
            bs.append(b)
            n_prev = W.shape[0]
        self.weights: tuple[np.ndarray, ...] = tuple(Ws)
        self.biases: tuple[np.ndarray, ...] = tuple(bs)
        self.input_shape = tuple(input_shape) if input_shape is not None else (self.n_inputs,)
        if int(np.prod(self.input_shape)) != self.n_inputs:
            raise NetworkError(
                f"Network: input_shape {self.input_shape} has {int(np.prod(self.input_shape))} "
                f"entries but the first layer takes {self.n_inputs}"
            )
        if input_domain is not None:
            lo = np.broadcast_to(np.asarray(input_domain[0], dtype=float), (self.n_inputs,))
            hi = np.broadcast_to(np.asarray(input_domain[1], dtype=float), (self.n_inputs,))
            input_domain = (lo.copy(), hi.copy())
        self.input_domain = input_domain
        self.name = name
        self.input_names = _check_names(input_names, self.n_inputs)
        self.link = _check_link(link, self.n_outputs)
        self.classes = _check_classes(classes, self.link, self.n_outputs)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_arrays(cls, weights: Sequence, biases: Sequence, *,
                    input_names: Sequence[str] | None = None, **kwargs) -> "Network":
        """Build from lists of ``(n_out, n_in)`` weight matrices and bias vectors.

        ``input_names`` and the other keywords are those of :class:`Network`.

        >>> net = Network.from_arrays([[[1.0, 2.0]]], [[0.0]], input_names=["speed", "angle"])
        >>> net.input_names
        ('speed', 'angle')
        """
        return cls(weights, biases, input_names=input_names, **kwargs)

    @classmethod
    def stack(cls, networks: Sequence["Network"], *, names: Sequence[str] | None = None,
              name: str | None = None) -> "Network":
        """Networks side by side: one block-diagonal network on the stacked inputs.

        The result takes the inputs of ``networks[0]``, then those of ``networks[1]``, ...
        (concatenated in order) and returns their outputs concatenated in order; each layer's
        weight matrix is block-diagonal, so network ``k``'s outputs depend on its own inputs
        only, and its activation code is the concatenation of the networks' codes. Several
        copies of one network (VNN-LIB 2.0's ``equal-to``) over a product of regions are then
        a single network to traverse, bound, split and branch on.

        Exact: the weights and biases are copied in float64 into blocks padded with zeros.
        Networks with fewer hidden layers than the deepest are padded after their output
        layer with identity layers written as ``y = relu(y) - relu(-y)``: a hidden layer
        ``[y; -y]`` (``2 * n_outputs`` neurons) per missing layer, read back by ``[I, -I]``.
        That is exact (one of the two terms is zero), so the stack computes the same
        function, but its neurons add the hyperplanes ``y_i = 0`` of that network's outputs:
        the partition of a stack of networks of different depths is finer than the product
        of their partitions (sound, with more polytopes). Copies have equal depths and are
        never padded.

        Parameters
        ----------
        networks : sequence of Network
            At least one network.
        names : sequence of str, optional
            One label per network (e.g. VNN-LIB network names ``("f", "g")``); default the
            networks' positions ``"0"``, ``"1"``, .... Input ``i`` of network ``k`` is named
            ``f"{names[k]}.{input}"``, ``input`` being its own input name, else ``x{i}``.
        name : str, optional
            The stack's name; default ``"stack(<names>)"``.

        Returns
        -------
        Network
            ``input_shape`` is ``(total inputs,)``; ``input_domain`` is the concatenation of
            the networks' domains (``-inf``/``inf`` for a network without one; None when no
            network has one); no ``classes`` or ``link`` (the outputs are several models').

        Raises
        ------
        NetworkError
            If ``networks`` is empty or holds something other than :class:`Network`, or
            ``names`` does not give one distinct non-empty string per network.

        Examples
        --------
        >>> f = Network.from_arrays([[[1.0, -1.0]], [[2.0]]], [[0.0], [1.0]])
        >>> g = Network.from_arrays([[[1.0]]], [[0.5]])          # affine, no hidden layer
        >>> s = Network.stack([f, g], names=["f", "g"])
        >>> s, s.input_names
        (<Network 'stack(f, g)' 3-3-2>, ('f.x0', 'f.x1', 'g.x0'))
        >>> s.forward([2.0, 1.0, -3.0]), f.forward([2.0, 1.0]), g.forward([-3.0])
        (array([ 3. , -2.5]), array([3.]), array([-2.5]))
        """
        nets = list(networks)
        if not nets:
            raise NetworkError("Network.stack: no networks given; pass at least one Network")
        for k, net in enumerate(nets):
            if not isinstance(net, Network):
                raise NetworkError(f"Network.stack: networks[{k}] is a {type(net).__name__}, "
                                   "not a Network; load it first (Network.from_onnx, ...)")
        if names is None:
            labels = [str(k) for k in range(len(nets))]
        else:
            labels = list(names) if not isinstance(names, (str, bytes)) else None
            if labels is None or len(labels) != len(nets) or len(set(labels)) != len(labels) \
                    or not all(isinstance(v, str) and v.strip() for v in labels):
                raise NetworkError(
                    f"Network.stack: names must be {len(nets)} distinct non-empty strings "
                    f"(one per network), got {names!r}")
        depth = max(net.n_hidden_layers for net in nets)
        layers = []  # per network: its (W, b) list padded to depth + 1 maps
        for net in nets:
            Ws, bs = list(net.weights), list(net.biases)
            m = net.n_outputs
            for pad in range(depth - net.n_hidden_layers):
                if pad == 0:  # first pad: [y; -y] from the output map
                    W, b = Ws.pop(), bs.pop()
                    Ws.append(np.vstack([W, -W]))
                    bs.append(np.concatenate([b, -b]))
                else:  # further pads: [y; -y] from [relu(y); relu(-y)]
                    P = np.block([[np.eye(m), -np.eye(m)], [-np.eye(m), np.eye(m)]])
                    Ws.append(P)
                    bs.append(np.zeros(2 * m))
                if len(Ws) == depth:  # the last pad: read y back
                    Ws.append(np.hstack([np.eye(m), -np.eye(m)]))
                    bs.append(np.zeros(m))
            layers.append((Ws, bs))
        weights, biases = [], []
        for k in range(depth + 1):
            blocks = [Ws[k] for Ws, _ in layers]
            W = np.zeros((sum(B.shape[0] for B in blocks), sum(B.shape[1] for B in blocks)))
            r = c = 0
            for B in blocks:
                W[r:r + B.shape[0], c:c + B.shape[1]] = B
                r, c = r + B.shape[0], c + B.shape[1]
            weights.append(W)
            biases.append(np.concatenate([bs[k] for _, bs in layers]))
        domain = None
        if any(net.input_domain is not None for net in nets):
            domain = tuple(np.concatenate([
                net.input_domain[side] if net.input_domain is not None
                else np.full(net.n_inputs, -np.inf if side == 0 else np.inf) for net in nets])
                for side in (0, 1))
        input_names = [f"{label}.{net.input_names[i] if net.input_names else f'x{i}'}"
                       for label, net in zip(labels, nets) for i in range(net.n_inputs)]
        return cls(weights, biases, input_domain=domain, input_names=input_names,
                   name=name if name is not None else f"stack({', '.join(labels)})")

    @classmethod
    def from_onnx(cls, path: str | PathLike, **kwargs) -> "Network":
        """Load an ONNX model (needs ``polytrav[onnx]``); see :mod:`polytrav.model.loaders.onnx`."""
        from polytrav.model.loaders.onnx import load_onnx

        return load_onnx(_existing(path, "ONNX"), **kwargs)

    @classmethod
    def from_nnet(cls, path: str | PathLike, **kwargs) -> "Network":
        """Load a Reluplex ``.nnet`` file; see :mod:`polytrav.model.loaders.nnet`."""
        from polytrav.model.loaders.nnet import load_nnet

        return load_nnet(_existing(path, ".nnet"), **kwargs)

    @classmethod
    def from_torch(cls, module, **kwargs) -> "Network":
        """Convert a ``torch.nn`` module or a saved state file (needs ``polytrav[torch]``);
        see :mod:`polytrav.model.loaders.torch`."""
        from polytrav.model.loaders.torch import load_torch

        return load_torch(module, **kwargs)

    @classmethod
    def from_sklearn(cls, model) -> "Network":
        """Convert a fitted scikit-learn ``MLPClassifier`` / ``MLPRegressor`` (ReLU), or a
        ``Pipeline`` of scalers ending in one (needs ``polytrav[sklearn]``); classifiers give
        logits, with the estimator's ``classes_`` and output function as :attr:`classes`
        and :attr:`link`. See :mod:`polytrav.model.loaders.sklearn`."""
        from polytrav.model.loaders.sklearn import load_sklearn

        return load_sklearn(model)

    # ------------------------------------------------------------------ shape facts
    @property
    def n_inputs(self) -> int:
        """Number of inputs."""
        return self.weights[0].shape[1]

    @property
    def n_outputs(self) -> int:
        """Number of outputs."""
        return self.weights[-1].shape[0]

    @property
    def hidden_sizes(self) -> tuple[int, ...]:
        """Number of neurons in each hidden (ReLU) layer."""
        return tuple(W.shape[0] for W in self.weights[:-1])

    @property
    def n_hidden_layers(self) -> int:
        """Number of hidden layers ``L`` (the number of levels of the traversal)."""
        return len(self.weights) - 1

    @property
    def n_neurons(self) -> int:
        """Total number of ReLU neurons."""
        return int(sum(self.hidden_sizes))

    def __repr__(self) -> str:
        sizes = "-".join(str(n) for n in (self.n_inputs, *self.hidden_sizes, self.n_outputs))
        label = f" {self.name!r}" if self.name else ""
        return f"<Network{label} {sizes}>"

    # ------------------------------------------------------------------ evaluation
    def _as_input(self, x) -> tuple[np.ndarray, bool]:
        """``x`` as a float64 batch and whether it was one point; a :class:`NetworkError`
        naming what is wrong for None, a non-numeric or ragged value, a wrong shape, or a
        NaN or infinite value (the public entry points' one check; :meth:`_propagate` takes
        checked batches unchecked)."""
        if x is None:
            raise NetworkError(_input_problem(x, self.n_inputs))
        try:
            x = np.asarray(x, dtype=np.float64)
        except (TypeError, ValueError):
            raise NetworkError(_input_problem(x, self.n_inputs)) from None
        single = x.ndim == 1
        if x.ndim == 0:
            raise NetworkError(f"Network: input is a single number ({x.item()!r}) but the network "
                               f"takes {self.n_inputs} values per sample; give an array of "
                               f"shape ({self.n_inputs},) or (n, {self.n_inputs})")
        X = x.reshape(1, -1) if single else x.reshape(x.shape[0], int(np.prod(x.shape[1:])))
        if X.shape[1] != self.n_inputs:
            raise NetworkError(
                f"Network: input has {X.shape[1]} values per sample (shape {x.shape}) but the "
                f"network takes {self.n_inputs}"
            )
        if not np.isfinite(X).all():
            k, j = (int(v) for v in np.argwhere(~np.isfinite(X))[0])
            where = f"input {j}" if single else f"sample {k}, input {j}"
            raise NetworkError(f"Network: input has {X[k, j]} at {where}; every input value "
                               "must be finite (a missing value must be filled in first)")
        return X, single

    def _propagate(self, X: np.ndarray, hidden: list | None, output: bool = True):
        """The forward pass on a batch ``X``: each hidden layer's pre-activations appended to
        ``hidden`` (unless None), the outputs returned (None without ``output``)."""
        z = X
        for W, b in zip(self.weights[:-1], self.biases[:-1]):
            h = z @ W.T + b
            if hidden is not None:
                hidden.append(h)
            z = np.maximum(h, 0.0)
        return z @ self.weights[-1].T + self.biases[-1] if output else None

    def trace(self, x) -> tuple[list[np.ndarray], np.ndarray]:
        """Pre-activations of every hidden layer and the output at ``x``, from one forward pass.

        ``x`` is one point ``(n_inputs,)`` or a batch ``(n, n_inputs)``; the arrays have a
        leading batch axis exactly when ``x`` does. :meth:`pre_activations` and
        :meth:`forward` are its two halves (the same pass).

        >>> net = Network.from_arrays([[[1.0, -1.0], [1.0, 1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> hs, y = net.trace([[1.0, 2.0], [2.0, 1.0]])
        >>> hs[0].tolist(), y.tolist()
        ([[-1.0, 3.0], [1.0, 3.0]], [[3.0], [4.0]])
        """
        X, single = self._as_input(x)
        hidden: list[np.ndarray] = []
        y = self._propagate(X, hidden)
        return ([h[0] for h in hidden], y[0]) if single else (hidden, y)

    def input_gradient(self, G, hidden: list[np.ndarray]) -> np.ndarray:
        """The gradient in ``x`` of ``G @ f(x)`` where :meth:`trace` gave the pre-activations
        ``hidden``: backpropagation through the active neurons (``h >= 0``, the activation
        code's convention). ``G`` is one row over the outputs, or one row per traced point.

        >>> net = Network.from_arrays([[[1.0, -1.0], [1.0, 1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> hs, _ = net.trace([1.0, 2.0])
        >>> net.input_gradient([1.0], hs).tolist()
        [1.0, 1.0]
        """
        G = np.asarray(G, float) @ self.weights[-1]
        for W, h in zip(reversed(self.weights[:-1]), reversed(hidden)):
            G = (G * (h >= 0.0)) @ W
        return G

    def pre_activations(self, x) -> list[np.ndarray]:
        """Pre-activations of every hidden layer at ``x`` (``(n_inputs,)`` or ``(n, n_inputs)``)."""
        X, single = self._as_input(x)
        hidden: list[np.ndarray] = []
        self._propagate(X, hidden, output=False)
        return [h[0] for h in hidden] if single else hidden

    def forward(self, x) -> np.ndarray:
        """Network output at ``x``: shape ``(n_outputs,)`` for one point, ``(n, n_outputs)`` for many."""
        X, single = self._as_input(x)
        y = self._propagate(X, None)
        return y[0] if single else y

    __call__ = forward

    # ------------------------------------------------------------------ the model's answer
    def _n_classes(self, who: str) -> int:
        """How many classes the outputs stand for (refused for a regressor or multilabel)."""
        m = self.n_outputs
        if self.link == "identity":
            raise NetworkError(f"Network.{who}: the network is a regressor (link 'identity'); "
                               "it has no classes")
        if self.link == "sigmoid" and m > 1:
            raise NetworkError(f"Network.{who}: the network is a multilabel classifier ({m} "
                               "sigmoid outputs), with no single class per input; use "
                               "predict_proba")
        return 2 if m == 1 else m

    def class_index(self, x):
        """The index of the class the network gives ``x`` (one point or a batch).

        One output is a binary logit: class 1 where it is ``> 0``, class 0 where ``< 0``;
        several outputs: the strictly largest. At a tie the model decides no class: -1
        (:func:`~polytrav.model.decision.decisions`, the rule of every analysis, the report
        and ``diff``; scikit-learn's ``predict`` says ``classes_[0]`` or the first largest
        there). That is how polytrav's analyses read a network of unknown ``link`` too.

        Raises
        ------
        NetworkError
            For a regressor (link ``"identity"``) or a multilabel classifier.

        >>> net = Network.from_arrays([[[1.0, -1.0]]], [[0.0]], classes=["no", "yes"])
        >>> net.class_index([2.0, 1.0]), net.class_index([[0.0, 1.0], [1.0, 1.0]]).tolist()
        (1, [0, -1])
        """
        self._n_classes("class_index")
        X, single = self._as_input(x)
        k = decisions(self._propagate(X, None))
        return int(k[0]) if single else k

    def class_label(self, index: int):
        """The label of class ``index``: ``classes[index]``, else ``index`` itself (the
        helper for anything reporting a class index: any network, ``index`` in ``[0, 2)``
        for one output, ``[0, n_outputs)`` for several; a multilabel network's labels);
        None for a tie (``-1``, :meth:`class_index`'s no class).

        >>> Network.from_arrays([[[1.0, -1.0]]], [[0.0]], classes=["no", "yes"]).class_label(1)
        'yes'
        """
        n = 2 if self.n_outputs == 1 else self.n_outputs
        if not isinstance(index, (int, np.integer)) or isinstance(index, (bool, np.bool_)) \
                or not TIE <= index < n:
            raise NetworkError(f"Network.class_label: index must be a class index in [0, {n}) "
                               f"or -1 (a tie), got {index!r}")
        if index == TIE:
            return None
        return int(index) if self.classes is None else self.classes[int(index)]

    def predict_proba(self, x) -> np.ndarray:
        """Class probabilities at ``x``, as scikit-learn's ``predict_proba``.

        ``(n, n_classes)`` for a batch, ``(n_classes,)`` for one point: ``[1 - p, p]`` with
        ``p = sigmoid(output)`` for one sigmoid output, ``softmax(outputs)`` for softmax,
        ``sigmoid(outputs)`` per label for a multilabel network; columns in the order of
        :attr:`classes`.

        Raises
        ------
        NetworkError
            If the network's ``link`` is not ``"sigmoid"`` or ``"softmax"`` (a regressor,
            or unknown: give ``link=`` when building the network).

        >>> net = Network.from_arrays([[[1.0, -1.0]]], [[0.0]], link="sigmoid")
        >>> net.predict_proba([1.0, 1.0]).tolist()
        [0.5, 0.5]
        """
        if self.link not in ("sigmoid", "softmax"):
            raise NetworkError(
                f"Network.predict_proba: the network's link is {self.link!r}, so its outputs "
                "have no probabilities; a classifier has link 'sigmoid' or 'softmax' "
                "(Network.from_sklearn sets it; else pass link= to Network)")
        X, single = self._as_input(x)
        Y = self._propagate(X, None)
        if self.link == "softmax":
            P = _softmax(Y)
        elif Y.shape[1] == 1:
            p = _sigmoid(Y[:, 0])
            P = np.column_stack([1.0 - p, p])
        else:
            P = _sigmoid(Y)
        return P[0] if single else P

    def class_probability(self, x, index: int) -> float | None:
        """The probability the model gives class ``index`` at the point ``x``
        (:meth:`predict_proba`'s column ``index``); None when the network's ``link`` gives
        no probabilities (``None``, ``"identity"``).

        >>> net = Network.from_arrays([[[1.0, -1.0]]], [[0.0]], link="sigmoid")
        >>> round(net.class_probability([2.0, 0.0], 1), 4)
        0.8808
        """
        if self.link not in ("sigmoid", "softmax"):
            return None
        P = self.predict_proba(np.asarray(x, dtype=np.float64).reshape(-1))
        if not isinstance(index, (int, np.integer)) or not 0 <= index < P.shape[0]:
            raise NetworkError(f"Network.class_probability: index must be in "
                               f"[0, {P.shape[0]}), got {index!r}")
        return float(P[int(index)])

    def predict(self, x):
        """The model's prediction at ``x``, as scikit-learn's ``predict``.

        A classifier's class labels (:meth:`class_index` through :meth:`class_label`: an
        array of labels for a batch, one label for one point; None where the scores tie,
        polytrav's one decision rule); a multilabel classifier's
        0/1 matrix (row); a regressor's (link ``"identity"``) outputs, one column dropped
        for one output.

        >>> net = Network.from_arrays([[[1.0, -1.0]]], [[0.0]], classes=["no", "yes"])
        >>> net.predict([[2.0, 1.0], [0.0, 1.0]]).tolist()
        ['yes', 'no']
        """
        X, single = self._as_input(x)
        if self.link == "identity":
            Y = self._propagate(X, None)
            Y = Y[:, 0] if Y.shape[1] == 1 else Y
            return Y[0] if single else Y
        if self.link == "sigmoid" and self.n_outputs > 1:
            Z = (self._propagate(X, None) >= 0).astype(int)
            return Z[0] if single else Z
        k = self.class_index(X)
        if single:
            return self.class_label(int(k[0]))
        tie = k == TIE
        if self.classes is None and not tie.any():
            return k
        labels = list(range(max(self.n_outputs, 2)) if self.classes is None else self.classes)
        arr = np.asarray(labels)
        if tie.any() or arr.tolist() != labels:  # a tie's None, or mixed types numpy converts
            arr = np.array(labels + [None], dtype=object)  # index -1 (a tie): None
        return arr[k]

    def activation_code(self, x) -> Code:
        """Activation code at ``x``: one boolean array per hidden layer, ``True`` iff pre-activation >= 0."""
        return tuple(h >= 0.0 for h in self.pre_activations(x))

    def local_model(self, code: Code, G: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The affine map ``y = W @ x + c`` the network computes on the polytope of ``code``.

        Returns ``W`` shaped ``(n_outputs, n_inputs)`` and ``c`` shaped ``(n_outputs,)``; with
        ``G`` (rows over the outputs) the map of ``G @ y`` instead: ``(G @ W, G @ c)``, built
        from the output side without ``W`` (cheaper for a few rows).
        """
        if len(code) != self.n_hidden_layers:
            raise NetworkError(
                f"Network: code has {len(code)} layers but the network has {self.n_hidden_layers}"
            )
        W_out, b_out = self.weights[-1], self.biases[-1]
        if G is not None:
            W_out, b_out = G @ W_out, G @ b_out
        W, z = W_out, np.zeros(self.n_inputs)
        masks = [self._mask(code, k) for k in range(len(code))]
        for k, mask in enumerate(masks):  # the offset: the masked network's output at x = 0
            z = np.where(mask, self.weights[k] @ z + self.biases[k], 0.0)
        for k in range(len(code) - 1, -1, -1):  # the matrix, from the output side (fewer rows)
            W = (W * masks[k][None, :]) @ self.weights[k]
        if not code:
            W = W.copy()
        return W, W_out @ z + b_out

    def local_models(self, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`local_model` of many polytopes at once: ``codes`` ``(P, n_neurons)`` (each
        code's layers side by side); returns ``W`` ``(P, n_outputs, n_inputs)`` and ``c``
        ``(P, n_outputs)``."""
        codes = np.asarray(codes, dtype=bool)
        codes = codes.reshape(codes.shape[0] if codes.ndim else 0, self.n_neurons)
        cuts = np.cumsum([0, *self.hidden_sizes])
        masks = [codes[:, lo:hi] for lo, hi in zip(cuts[:-1], cuts[1:])]
        z = np.zeros((codes.shape[0], self.n_inputs))
        for k, mask in enumerate(masks):  # the offset: the masked network's output at x = 0
            z = (z @ self.weights[k].T + self.biases[k]) * mask
        P, n_out = codes.shape[0], self.n_outputs
        if n_out <= self.n_inputs:  # the matrix from the output side (fewer rows)
            W = np.broadcast_to(self.weights[-1], (P, *self.weights[-1].shape))
            for k in range(len(masks) - 1, -1, -1):
                W = (W * masks[k][:, None, :]) @ self.weights[k]
        else:  # from the input side (fewer columns): a plane's network, say
            W = np.broadcast_to(self.weights[0], (P, *self.weights[0].shape))
            for k, mask in enumerate(masks):
                W = self.weights[k + 1] @ (W * mask[:, :, None])
        return np.array(W), z @ self.weights[-1].T + self.biases[-1]

    def hyperplanes(self, code: Code) -> list[tuple[np.ndarray, np.ndarray]]:
        """Pre-activations of each hidden layer as affine maps of ``x`` on the polytope of ``code``.

        Returns ``[(W_hat_l, b_hat_l)]`` (the paper's masking recursion, eqs. 9-11): on that
        polytope, layer ``l``'s pre-activation is ``W_hat_l @ x + b_hat_l``; its rows are the
        polytope's level-``l`` hyperplanes.
        """
        out = []
        M = c = None  # the identity map before the first layer
        for k, (W, b) in enumerate(zip(self.weights[:-1], self.biases[:-1])):
            out.append((W.copy(), b.copy()) if M is None else (W @ M, W @ c + b))
            mask = self._mask(code, k)
            M, c = out[-1][0] * mask[:, None], out[-1][1] * mask
        return out

    def _mask(self, code: Code, k: int) -> np.ndarray:
        mask = np.asarray(code[k], dtype=bool)
        if mask.shape != (self.weights[k].shape[0],):
            raise NetworkError(
                f"Network: code for layer {k + 1} has shape {mask.shape}, "
                f"expected ({self.weights[k].shape[0]},)"
            )
        return mask

    # ------------------------------------------------------------------ transformations
    def with_inputs(self) -> "Network":
        """The network of ``x -> [self(x); x]``: the outputs, then the inputs passed through.

        Exact: each hidden layer carries ``[relu(x); relu(-x)]`` (``2 * n_inputs`` more
        neurons) and the output layer reads ``x = relu(x) - relu(-x)``. Those neurons add the
        hyperplanes ``x_i = 0`` to the partition (sound, with more polytopes). Used where a
        property relates inputs and outputs in one comparison (VNN-LIB 2.0's ``MNC``). The
        outputs change, so ``classes`` and ``link`` are not kept.

        Examples
        --------
        >>> net = Network.from_arrays([[[1.0, -1.0]], [[2.0]]], [[0.0], [1.0]])
        >>> net.with_inputs().forward([3.0, -2.0])
        array([11.,  3., -2.])
        """
        n = self.n_inputs
        eye = np.eye(n)
        Ws, bs = [], []
        for k, (W, b) in enumerate(zip(self.weights, self.biases)):
            last = k == len(self.weights) - 1
            carry = eye if last else np.vstack([eye, -eye])  # from x (k == 0) ...
            if k > 0:  # ... or from [relu(x); relu(-x)]
                carry = carry @ np.hstack([eye, -eye])
            rows = np.zeros((carry.shape[0], W.shape[1]))
            Ws.append(np.block([[W, np.zeros((W.shape[0], carry.shape[1] if k else 0))],
                                [rows, carry]]) if k else np.vstack([W, carry]))
            bs.append(np.concatenate([b, np.zeros(carry.shape[0])]))
        return Network(Ws, bs, input_shape=self.input_shape, name=self.name,
                       input_names=self.input_names)

    def compose_input(self, A, c) -> "Network":
        """The network of ``z -> self(A @ z + c)``: an affine change of input coordinates.

        ``A`` is ``(n_inputs, n_new)`` and ``c`` is ``(n_inputs,)``. The new inputs are not
        the old ones, so ``input_names`` is not kept; the outputs are, with their
        ``classes`` and ``link``.
        """
        A = np.asarray(A, dtype=np.float64)
        c = np.asarray(c, dtype=np.float64).reshape(-1)
        W1 = self.weights[0] @ A
        b1 = self.weights[0] @ c + self.biases[0]
        return Network([W1, *self.weights[1:]], [b1, *self.biases[1:]], name=self.name,
                       classes=self.classes, link=self.link)
