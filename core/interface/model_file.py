"""A model file as a :class:`~polytrav.Network` and a line saying how it was loaded (the
report's model card): ONNX (``.onnx``), NNet (``.nnet``), a scikit-learn model saved with
skops (``.skops``: no code runs while loading; types outside skops' defaults must be
trusted by name), or a pickle / joblib file only when asked for explicitly (loading one runs
code from the file). :func:`read_names` and :func:`with_names` give a model without them
(an ONNX file) its feature names and class labels."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from polytrav.vocabulary.errors import ConfigError

__all__ = ["PICKLE_SUFFIXES", "REVIEWED_SKOPS_TYPES", "load_model", "read_names", "with_names"]

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


def read_names(path) -> tuple[list[str] | None, list[str] | None]:
    """``(features, classes)`` from a names file: one feature name a line, or JSON
    ``{"features": [...], "classes": [...]}`` (either key may be left out)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--names {str(path)!r} cannot be read ({exc}); give a text file "
                          "with one feature name a line, or a JSON file") from exc
    if path.suffix.lower() != ".json":
        return [line.strip() for line in text.splitlines() if line.strip()], None
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--names {str(path)!r} is not JSON ({exc.msg} at line {exc.lineno}); "
                          'give {"features": [...], "classes": [...]}') from exc
    if not isinstance(spec, dict) or set(spec) - {"features", "classes"} or not all(
            isinstance(v, list) for v in spec.values()):
        raise ConfigError(f"--names {str(path)!r} must be a JSON object with the lists "
                          '"features" and/or "classes", e.g. {"features": ["age", "income"], '
                          '"classes": ["deny", "approve"]}')
    return spec.get("features"), spec.get("classes")


def with_names(net, features=None, classes=None):
    """``net`` with these feature names and class labels (each None: kept). Classes on a
    network without a link make it a classifier: one output, the logit of ``classes[1]``
    (sigmoid); several, one logit per class (softmax)."""
    from polytrav.model.network import Network

    if features is not None and len(features) != net.n_inputs:
        raise ConfigError(f"{len(features)} feature names given but the model takes "
                          f"{net.n_inputs} inputs; give one name per input, in the model's "
                          "input order")
    want = 2 if net.n_outputs == 1 else net.n_outputs
    if classes is not None and len(classes) != want:
        what = ("one output (a binary logit): give 2 labels, the negative class first"
                if net.n_outputs == 1 else f"{net.n_outputs} outputs: give one label per output")
        raise ConfigError(f"{len(classes)} class labels given but the model has {what}")
    link = net.link
    if classes is not None and link == "identity":
        raise ConfigError("class labels given but the model is a regressor (its outputs are "
                          "the prediction); drop the labels")
    if classes is not None and link is None:
        link = "sigmoid" if net.n_outputs == 1 else "softmax"
    return Network(net.weights, net.biases, input_shape=net.input_shape,
                   input_domain=net.input_domain, name=net.name,
                   input_names=features if features is not None else net.input_names,
                   classes=classes if classes is not None else net.classes, link=link)
