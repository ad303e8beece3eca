"""A model file as a :class:`~polytrav.Network` and a line saying how it was loaded (the
report's model card): ONNX (``.onnx``), NNet (``.nnet``), a scikit-learn model saved with
skops (``.skops``: no code runs while loading; types outside skops' defaults must be
trusted by name), or a pickle / joblib file only when asked for explicitly (loading one runs
code from the file)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

from polytrav.vocabulary.errors import ConfigError

__all__ = ["PICKLE_SUFFIXES", "REVIEWED_SKOPS_TYPES", "load_model"]

#: Suffixes read with pickle / joblib (``unsafe_pickle=True`` only).
PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib")

#: Types outside skops' default trust that a fitted ReLU MLP holds, reviewed: scikit-learn's
#: own optimiser state of ``MLPClassifier`` / ``MLPRegressor`` (plain arrays and numbers,
#: restored by ``__setstate__`` without running code named by the file).
REVIEWED_SKOPS_TYPES = ("sklearn.neural_network._stochastic_optimizers.AdamOptimizer",
                        "sklearn.neural_network._stochastic_optimizers.SGDOptimizer")


def load_model(path, *, trust=(), unsafe_pickle: bool = False):
    """``(network, source)`` from a model file, by its suffix.

    ``trust`` names more types a ``.skops`` file may hold (after review);
    ``unsafe_pickle`` allows ``.pkl`` / ``.pickle`` / ``.joblib`` files, which execute code
    from the file while loading. ``source`` says the format and file, e.g.
    ``"scikit-learn Pipeline, skops file 'credit.skops'"``.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if not path.is_file():
        raise FileNotFoundError(2, "No such file", str(path))
    if suffix in (".onnx", ".nnet"):
        from polytrav.model.network import Network

        net = Network.from_onnx(path) if suffix == ".onnx" else Network.from_nnet(path)
        return net, f"{suffix[1:].upper()} file {path.name!r}"
    if suffix == ".skops":
        return _from_sklearn(_load_skops(path, tuple(trust)), f"skops file {path.name!r}")
    if suffix in PICKLE_SUFFIXES:
        if not unsafe_pickle:
            raise ConfigError(f"model {str(path)!r} is a {suffix} file: loading it runs code "
                              "from the file; save the model with skops (skops.io.dump) or "
                              "pass --unsafe-pickle if you trust the file")
        return _from_sklearn(_load_pickle(path), f"{suffix[1:]} file {path.name!r} (unsafe "
                                                 "pickle, trusted by the user)")
    raise ConfigError(f"model {str(path)!r}: unknown format {suffix!r}; polytrav reads .onnx, "
                      ".nnet and .skops files (and .pkl / .joblib with --unsafe-pickle)")


def _load_skops(path: Path, trust: tuple[str, ...]):
    if importlib.util.find_spec("skops") is None:
        raise ConfigError(f"model {str(path)!r}: reading .skops files needs skops: "
                          'pip install "polytrav[sklearn]"')
    import skops.io as sio

    try:
        untrusted = sio.get_untrusted_types(file=path)
    except Exception as exc:  # a corrupt or foreign file: one line
        raise ConfigError(f"model {str(path)!r} is not a readable skops file: {exc}") from exc
    unknown = [t for t in untrusted if t not in REVIEWED_SKOPS_TYPES and t not in trust]
    if unknown:
        raise ConfigError(f"model {str(path)!r} holds types skops does not trust by default: "
                          f"{unknown}; review them, then pass --trust TYPE for each")
    return sio.load(path, trusted=list(untrusted))


def _load_pickle(path: Path):
    if importlib.util.find_spec("joblib") is not None:
        import joblib

        return joblib.load(path)
    import pickle

    with open(path, "rb") as f:
        return pickle.load(f)  # asked for with --unsafe-pickle


def _from_sklearn(model, where: str):
    from polytrav.model.network import Network

    net = Network.from_sklearn(model)
    return net, f"scikit-learn {type(model).__name__}, {where}"
