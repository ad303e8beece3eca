"""Conversion of ``torch.nn`` modules (possibly nested ``Sequential``) into a Network.

The leaf modules are applied in order, in float64, to an affine function of the flattened
input, ``t = J z + c``, kept as an offset tensor ``c`` (batch of 1) and the columns of ``J``
(batch of ``n_in``). Affine modules act on ``c`` with their bias and on ``J`` without it, so
runs of affine modules compose exactly; each ``ReLU`` turns the current map into a layer. A
module ending in ``ReLU`` gets an identity output layer.

``BatchNorm`` and ``Dropout`` always use their evaluation semantics (running statistics, no
dropout), whatever the module's train/eval mode. Files are read with
``torch.load(weights_only=True)`` only: polytrav never unpickles arbitrary objects.
"""

from __future__ import annotations

import copy
import math
import os
import pickle
from collections.abc import Mapping
from os import PathLike
from pathlib import Path

from polytrav.vocabulary.errors import ConfigError, NetworkError
from polytrav.vocabulary.extras import MissingExtra, installed
from polytrav.model.network import Network

__all__ = ["load_torch", "SUPPORTED_LAYERS"]

SUPPORTED_LAYERS = (
    "Linear",
    "ReLU",
    "Flatten",
    "Unflatten",
    "Conv2d",
    "AvgPool2d",
    "BatchNorm1d",
    "BatchNorm2d",
    "Identity",
    "Dropout",
)
_DROPOUTS = (
    "Dropout",
    "Dropout1d",
    "Dropout2d",
    "Dropout3d",
    "AlphaDropout",
    "FeatureAlphaDropout",
)


class _Unsupported(Exception):
    """A supported layer configured in a way the loader cannot represent; carries the reason."""


def _leaves(module, nn, path: str = ""):
    """``(path, module)`` for every non-Sequential module, in forward order."""
    if isinstance(module, nn.Sequential):
        for name, child in module.named_children():
            yield from _leaves(child, nn, f"{path}.{name}" if path else name)
    else:
        yield path, module


def _param(tensor, torch):
    return None if tensor is None else tensor.detach().to(device="cpu", dtype=torch.float64)


def _affine(module, torch):
    """``f(X, bias)`` applying ``module`` to a float64 batch; ``bias=False`` drops its constant."""
    F = torch.nn.functional
    kind = type(module).__name__
    if kind == "Linear":
        W, b = _param(module.weight, torch), _param(module.bias, torch)
        return lambda X, bias: F.linear(X, W, b if bias else None)
    if kind == "Conv2d":
        if module.padding_mode != "zeros":
            raise _Unsupported(f"padding_mode={module.padding_mode!r} (only 'zeros' is supported)")
        W, b = _param(module.weight, torch), _param(module.bias, torch)
        return lambda X, bias: F.conv2d(
            X, W, b if bias else None, module.stride, module.padding, module.dilation, module.groups
        )
    if kind == "AvgPool2d":
        return lambda X, bias: F.avg_pool2d(
            X,
            module.kernel_size,
            module.stride,
            module.padding,
            module.ceil_mode,
            module.count_include_pad,
            module.divisor_override,
        )
    if kind in ("BatchNorm1d", "BatchNorm2d"):
        if module.running_mean is None:
            raise _Unsupported(
                "track_running_stats=False uses batch statistics, which are not affine"
            )
        scale = 1.0 / torch.sqrt(_param(module.running_var, torch) + module.eps)
        if module.weight is not None:
            scale = _param(module.weight, torch) * scale
        shift = -_param(module.running_mean, torch) * scale
        if module.bias is not None:
            shift = shift + _param(module.bias, torch)

        def f(X, bias):
            shape = (1, -1) + (1,) * (X.ndim - 2)
            Y = X * scale.reshape(shape)
            return Y + shift.reshape(shape) if bias else Y

        return f
    if kind in ("Flatten", "Unflatten"):

        def f(X, bias):
            dim = module.start_dim if kind == "Flatten" else module.dim
            if dim % X.ndim == 0:
                raise _Unsupported(f"it acts on the batch dimension (dim {dim})")
            return module(X)

        return f
    if kind == "Identity" or kind in _DROPOUTS:
        return lambda X, bias: X
    return None


def _infer_input_shape(leaves) -> tuple[int, ...]:
    for position, (path, module) in enumerate(leaves):
        kind = type(module).__name__
        if kind == "Linear":
            return (module.in_features,)
        if kind == "BatchNorm1d":
            return (module.num_features,)
        if kind not in ("ReLU", "Identity", *_DROPOUTS):
            raise NetworkError(
                f"torch module: cannot infer the input shape from layer {kind} at position "
                f"{position} ({path!r}); pass input_shape=(C, H, W) or the shape it expects"
            )
    raise NetworkError(
        "torch module: has no Linear layer to infer the input size from; pass input_shape"
    )


def _load_file(path: Path, module, torch):
    label = f"torch file '{path.name}'"
    try:
        obj = torch.load(os.fspath(path), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        if "global" in str(exc):
            raise NetworkError(
                f"{label}: refused: it holds pickled Python objects, and polytrav never unpickles "
                "arbitrary objects (torch.load(weights_only=True)). Build the module in Python and "
                "pass it to load_torch, or save module.state_dict() and call "
                "load_torch(path, module=<a module with the same architecture>)"
            ) from exc
        raise NetworkError(
            f"{label}: cannot read it ({exc.__class__.__name__}); the file is corrupt"
        ) from exc
    except (RuntimeError, EOFError, ValueError, KeyError) as exc:
        raise NetworkError(f"{label}: cannot read it ({type(exc).__name__}: {exc})") from exc
    if isinstance(obj, torch.nn.Module):
        return obj
    if not isinstance(obj, Mapping):
        raise NetworkError(f"{label}: holds a {type(obj).__name__}, not a state dict")
    if module is None:
        raise NetworkError(
            f"{label}: holds a state dict ({len(obj)} entries) but no architecture; pass "
            "module=<a torch.nn.Module with that architecture>"
        )
    module = copy.deepcopy(module)
    try:
        module.load_state_dict(obj)
    except (RuntimeError, TypeError, KeyError) as exc:
        raise NetworkError(f"{label}: the state dict does not fit the given module: {exc}") from exc
    return module


def load_torch(obj, *, input_shape: tuple[int, ...] | None = None, module=None) -> Network:
    """Convert a ``torch.nn`` module or a saved state dict into a Network (``polytrav[torch]``).

    Parameters
    ----------
    obj : torch.nn.Module or str or path-like
        A ``Sequential`` (possibly nested) of ``Linear``, ``ReLU``, ``Flatten``, ``Unflatten``,
        ``Conv2d``, ``AvgPool2d``, ``BatchNorm1d``/``2d``, ``Identity`` and ``Dropout``; or a file
        written by ``torch.save(module.state_dict(), path)``, loaded into ``module``.
    input_shape : tuple of int, optional
        Shape of one input without the batch dimension, e.g. ``(1, 28, 28)``. Required when the
        first layer does not fix it (``Conv2d``, ``AvgPool2d``, ``Flatten``).
    module : torch.nn.Module, optional
        The architecture to load a state-dict file into (a copy is used; ``module`` itself is
        left unchanged). Only with a path.

    Returns
    -------
    Network
        Weights in float64; named after the file stem, or the module's class name.

    Raises
    ------
    NetworkError
        For an unsupported layer (naming its class, position and path), a file holding
        pickled objects or only a state dict without ``module``, or a corrupt file.
    ConfigError
        If the arguments do not fit together.

    Examples
    --------
    >>> import torch
    >>> model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU(), torch.nn.Linear(2, 1))
    >>> with torch.no_grad():
    ...     for p in model.parameters():
    ...         _ = p.fill_(1.0)
    >>> net = load_torch(model)
    >>> net, net.forward([1.0, -3.0])
    (<Network 'Sequential' 2-2-1>, array([1.]))
    """
    if not installed("torch"):
        raise MissingExtra(
            'load_torch needs torch (the \'torch\' extra), which is not installed: '
            'pip install "polytrav[torch]" (for the CPU build, first: pip install torch '
            '--index-url https://download.pytorch.org/whl/cpu)', "torch", ("torch",))
    import torch
    if isinstance(obj, (str, PathLike)):
        name = Path(obj).stem
        if module is not None and not isinstance(module, torch.nn.Module):
            raise ConfigError(
                f"load_torch: module= must be a torch.nn.Module, got {type(module).__name__}"
            )
        obj = _load_file(Path(obj), module, torch)
    elif isinstance(obj, torch.nn.Module):
        if module is not None:
            raise ConfigError(
                "load_torch: module= is only used with a path to a state dict, not with a module"
            )
        name = type(obj).__name__
    else:
        raise ConfigError(
            f"load_torch: expected a torch.nn.Module or a file path, got {type(obj).__name__}"
        )

    leaves = list(_leaves(obj, torch.nn))
    if input_shape is None:
        input_shape = _infer_input_shape(leaves)
    input_shape = tuple(int(d) for d in input_shape)
    if not input_shape or min(input_shape) < 1:
        raise ConfigError(f"load_torch: input_shape must be positive integers, got {input_shape}")
    n = math.prod(input_shape)
    weights, biases = [], []
    with torch.no_grad():
        C = torch.zeros((1, *input_shape), dtype=torch.float64)
        J = torch.eye(n, dtype=torch.float64).reshape(n, *input_shape)
        for position, (path, layer) in enumerate(leaves):
            kind = type(layer).__name__
            where = f"layer {kind} at position {position} ({path!r})"
            if kind == "ReLU":
                weights.append(J.reshape(J.shape[0], -1).T.numpy().copy())
                biases.append(C.reshape(-1).numpy().copy())
                m = math.prod(C.shape[1:])
                C = torch.zeros_like(C)
                J = torch.eye(m, dtype=torch.float64).reshape(m, *C.shape[1:])
                continue
            try:
                f = _affine(layer, torch)
                if f is None:
                    raise NetworkError(
                        f"torch module: unsupported {where}; supported layers: "
                        f"{', '.join(SUPPORTED_LAYERS)}"
                    )
                C, J = f(C, True), f(J, False)
            except _Unsupported as exc:
                raise NetworkError(f"torch module: {where}: {exc}") from exc
            except RuntimeError as exc:  # shape mismatches inside torch
                raise NetworkError(
                    f"torch module: {where} cannot take an input of shape "
                    f"{tuple(C.shape[1:])}: {exc}"
                ) from exc
        weights.append(J.reshape(J.shape[0], -1).T.numpy().copy())
        biases.append(C.reshape(-1).numpy().copy())
    try:
        return Network(weights, biases, input_shape=input_shape, name=name)
    except NetworkError as exc:
        raise NetworkError(f"torch module {name!r}: {exc}") from exc
