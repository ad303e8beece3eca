"""Conversion of fitted scikit-learn ReLU MLPs (and affine-preprocessing Pipelines) into a Network.

Supported: ``MLPClassifier`` and ``MLPRegressor`` with ``activation="relu"`` (or
``"identity"``: every hidden layer is then affine and the whole model folds into one affine
map), alone or as the last step of a ``Pipeline`` whose earlier steps are affine
preprocessing: ``StandardScaler``, ``MinMaxScaler`` and ``MaxAbsScaler`` (without
``clip``), ``RobustScaler``, ``FunctionTransformer()`` (no function: the identity),
``"passthrough"`` / ``None`` steps and nested ``Pipeline`` objects. The preprocessing is folded
into the first affine map, as the ``.nnet`` normalisation is, so the network takes the raw
features. Anything else (other estimators, ``tanh`` / ``logistic`` hidden layers, clipping
scalers, ``ColumnTransformer``, encoders, ...) is refused with its class and step named.

The network returns the output layer's *pre-activation*; the MLP's output function
(``out_activation_``) is not applied. Output ``k`` of the network is:

* ``MLPClassifier``, two classes: one output, the logit of ``classes_[1]``;
  ``predict_proba(X)[:, 1] == sigmoid(output)``.
* ``MLPClassifier``, ``c > 2`` classes: ``c`` outputs, the logit of ``classes_[k]``;
  ``predict_proba(X) == softmax(outputs)`` and the predicted class is ``classes_[argmax]``.
* ``MLPClassifier``, multilabel (a 0/1 target matrix): the logit of label ``k``, whose
  probability is ``sigmoid(output k)``.
* ``MLPRegressor``: target ``k`` (``predict(X)[:, k]``; one output for one target); with
  ``loss="poisson"``, its log.

sigmoid, softmax and exp are increasing, so thresholds on probabilities and predictions are
thresholds on these outputs (``predict`` gives ``classes_[1]`` where the logit is ``> 0``).
The network keeps that vocabulary: ``classes`` is the estimator's ``classes_`` (classifiers)
and ``link`` its output function (``out_activation_``): ``"sigmoid"`` (``"logistic"``: binary
and multilabel), ``"softmax"``, ``"identity"`` (regressors), None for the Poisson loss's
``exp``; so :meth:`Network.predict_proba <polytrav.Network.predict_proba>` and
:meth:`Network.predict <polytrav.Network.predict>` answer as the estimator's own do.
The weights are read in float64 (a model fitted on float32 data has float32 weights, which
float64 holds exactly; scikit-learn then computes in float32 and differs by its rounding).
"""

from __future__ import annotations

import numpy as np

from polytrav.vocabulary.errors import ConfigError, NetworkError
from polytrav.vocabulary.extras import require
from polytrav.model.network import Network

__all__ = ["load_sklearn", "SUPPORTED_ESTIMATORS", "SUPPORTED_PREPROCESSING"]

#: The models whose network polytrav builds (the last step of a Pipeline).
SUPPORTED_ESTIMATORS = ("MLPClassifier", "MLPRegressor")
#: The preprocessing steps folded into the first layer (all affine per feature).
SUPPORTED_PREPROCESSING = ("StandardScaler", "MinMaxScaler", "MaxAbsScaler", "RobustScaler",
                           "FunctionTransformer", "passthrough")
_ACTIVATIONS = ("relu", "identity")
#: The MLP's output function (``out_activation_``) as the network's ``link`` (``"exp"``, the
#: Poisson loss's, has none: the outputs are the log of the prediction).
_LINKS = {"logistic": "sigmoid", "softmax": "softmax", "identity": "identity"}
_SUPPORTED = (
    f"supported: {' or '.join(SUPPORTED_ESTIMATORS)} with activation in {list(_ACTIVATIONS)}, "
    f"alone or last in a Pipeline of {', '.join(SUPPORTED_PREPROCESSING)} "
    "(MinMaxScaler and MaxAbsScaler without clip, FunctionTransformer without func)"
)


def _steps(model, pipeline_cls, path: str = ""):
    """``(path, estimator)`` of every step of a (nested) Pipeline, or of ``model`` alone."""
    if isinstance(model, pipeline_cls):
        for name, step in model.steps:
            yield from _steps(step, pipeline_cls, f"{path}/{name}" if path else name)
    else:
        yield path, model


def _scaler(est, where: str, sk) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``(a, c)`` with ``est.transform(x) == a * x + c`` per feature (None for 1 or 0)."""
    pre = sk.preprocessing
    if isinstance(est, pre.FunctionTransformer):
        if est.func is not None:
            raise NetworkError(
                f"scikit-learn model: {where}: FunctionTransformer(func={est.func!r}) applies "
                "an arbitrary function; only FunctionTransformer() (the identity) is supported")
        return None, None
    if getattr(est, "clip", False):  # MinMaxScaler, MaxAbsScaler (scikit-learn >= 1.8)
        raise NetworkError(
            f"scikit-learn model: {where}: {type(est).__name__}(clip=True) clips its output, "
            "which is not affine; refit it with clip=False")
    _check_fitted(est, where, sk)
    if isinstance(est, pre.MinMaxScaler):  # x * scale_ + min_
        return np.asarray(est.scale_, np.float64), np.asarray(est.min_, np.float64)
    if isinstance(est, pre.StandardScaler):  # (x - mean_) / scale_
        mean = est.mean_ if est.with_mean else None
        scale = est.scale_ if est.with_std else None
    elif isinstance(est, pre.RobustScaler):  # (x - center_) / scale_
        mean = est.center_ if est.with_centering else None
        scale = est.scale_ if est.with_scaling else None
    else:  # MaxAbsScaler: x / scale_
        mean, scale = None, est.scale_
    a = None if scale is None else 1.0 / np.asarray(scale, np.float64)
    if mean is None:
        return a, None
    mean = np.asarray(mean, np.float64)
    return a, -mean if a is None else -mean * a


def _check_fitted(est, where: str, sk) -> None:
    try:
        sk.utils.validation.check_is_fitted(est)
    except sk.exceptions.NotFittedError as exc:
        raise NetworkError(
            f"scikit-learn model: {where}: this {type(est).__name__} is not fitted; call "
            "fit(X, y) before converting it") from exc


def load_sklearn(model) -> Network:
    """Convert a fitted scikit-learn ReLU MLP, or a Pipeline ending in one, into a Network
    (needs ``polytrav[sklearn]``).

    Parameters
    ----------
    model : MLPClassifier or MLPRegressor or Pipeline
        A fitted model with ``activation="relu"`` (or ``"identity"``), or a fitted Pipeline of
        affine preprocessing steps ending in one; see :mod:`polytrav.model.loaders.sklearn`
        for the steps folded in and what each output means (logits for classifiers).

    Returns
    -------
    Network
        Taking the raw features; named after the model's class; ``input_names`` are the
        feature names seen in ``fit`` (``feature_names_in_`` of the first step, set when
        fitted on a DataFrame with string column names), else None; ``classes`` and
        ``link`` as the module doc says.

    Raises
    ------
    ImportError
        If scikit-learn is not installed.
    ConfigError
        If ``model`` is not a scikit-learn estimator.
    NetworkError
        For an unfitted model or step, an unsupported estimator, step or activation (naming
        its class and step), or a non-finite weight.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from sklearn.neural_network import MLPRegressor
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> X = np.random.default_rng(0).normal(size=(40, 2))
    >>> mlp = MLPRegressor(hidden_layer_sizes=(4,), max_iter=5, random_state=0)
    >>> model = make_pipeline(StandardScaler(), mlp)
    >>> with warnings.catch_warnings():  # 5 iterations: not converged, and that is fine here
    ...     warnings.simplefilter("ignore")
    ...     model = model.fit(X, X[:, 0] - X[:, 1])
    >>> net = load_sklearn(model)
    >>> net, bool(np.allclose(net.forward(X)[:, 0], model.predict(X), rtol=0, atol=1e-12))
    (<Network 'Pipeline' 2-4-1>, True)
    """
    require("load_sklearn", "sklearn", ("sklearn",))  # MissingExtra with its pip line
    import sklearn.base
    import sklearn.exceptions
    import sklearn.neural_network
    import sklearn.pipeline
    import sklearn.preprocessing
    import sklearn.utils.validation
    sk = sklearn
    if not isinstance(model, sk.base.BaseEstimator):
        raise ConfigError(
            f"load_sklearn: expected a fitted scikit-learn estimator, got "
            f"{type(model).__name__}; {_SUPPORTED}")
    name = type(model).__name__
    steps = [(path, est) for path, est in _steps(model, sk.pipeline.Pipeline)
             if not (est is None or (isinstance(est, str) and est == "passthrough"))]
    if not steps:
        raise NetworkError(f"scikit-learn model: this {name} has only passthrough steps; "
                           f"{_SUPPORTED}")
    *pre, (last_path, mlp) = steps
    mlp_types = (sk.neural_network.MLPClassifier, sk.neural_network.MLPRegressor)
    scaler_types = (sk.preprocessing.StandardScaler, sk.preprocessing.MinMaxScaler,
                    sk.preprocessing.MaxAbsScaler, sk.preprocessing.RobustScaler,
                    sk.preprocessing.FunctionTransformer)

    def where(path: str) -> str:
        return f"step {path!r}" if path else "the model"

    scale = shift = None  # the folded preprocessing: x -> scale * x + shift, per feature
    for path, est in pre:
        here = where(path)
        if isinstance(est, mlp_types):
            raise NetworkError(
                f"scikit-learn model: {here}: the {type(est).__name__} must be the last step; "
                f"{_SUPPORTED}")
        if not isinstance(est, scaler_types):
            raise NetworkError(
                f"scikit-learn model: {here}: unsupported preprocessing step "
                f"{type(est).__name__}; {_SUPPORTED}")
        a, c = _scaler(est, here, sk)
        if a is None and c is None:
            continue
        n = (a if a is not None else c).shape[0]
        if scale is None:
            scale, shift = np.ones(n), np.zeros(n)
        if n != scale.shape[0]:
            raise NetworkError(
                f"scikit-learn model: {here}: {type(est).__name__} takes {n} features but "
                f"the steps before it give {scale.shape[0]}")
        if a is not None:
            scale, shift = scale * a, shift * a
        if c is not None:
            shift = shift + c
    here = where(last_path)
    if isinstance(mlp, scaler_types):
        raise NetworkError(
            f"scikit-learn model: this {name} ends in {type(mlp).__name__} ({here}); its last "
            "step must be an MLPClassifier or MLPRegressor")
    if not isinstance(mlp, mlp_types):
        kind = mlp if isinstance(mlp, str) else type(mlp).__name__
        raise NetworkError(f"scikit-learn model: {here}: unsupported estimator {kind}; "
                           f"{_SUPPORTED}")
    if mlp.activation not in _ACTIVATIONS:
        raise NetworkError(
            f"scikit-learn model: {here}: {type(mlp).__name__}(activation={mlp.activation!r}) "
            f"is not piecewise linear; polytrav needs activation='relu' (or 'identity')")
    _check_fitted(mlp, here, sk)
    weights = [np.array(W, dtype=np.float64).T for W in mlp.coefs_]
    biases = [np.array(b, dtype=np.float64).reshape(-1) for b in mlp.intercepts_]
    if mlp.activation == "identity":  # y = W_L (... (W_1 x + b_1) ...) + b_L: one affine map
        W, b = weights[0], biases[0]
        for W_k, b_k in zip(weights[1:], biases[1:]):
            W, b = W_k @ W, W_k @ b + b_k
        weights, biases = [W], [b]
    if scale is not None:
        if scale.shape[0] != weights[0].shape[1]:
            raise NetworkError(
                f"scikit-learn model: {here}: {type(mlp).__name__} takes "
                f"{weights[0].shape[1]} features but the preprocessing gives {scale.shape[0]}")
        biases[0] = biases[0] + weights[0] @ shift
        weights[0] = weights[0] * scale[None, :]
    input_names = getattr(steps[0][1], "feature_names_in_", None)  # set by fit on a DataFrame
    link = _LINKS.get(getattr(mlp, "out_activation_", None))
    classes = getattr(mlp, "classes_", None) if link in ("sigmoid", "softmax") else None
    try:
        return Network(weights, biases, name=name,
                       input_names=None if input_names is None else list(input_names),
                       classes=None if classes is None else list(classes), link=link)
    except NetworkError as exc:
        raise NetworkError(f"scikit-learn model {name!r}: {exc}") from exc
