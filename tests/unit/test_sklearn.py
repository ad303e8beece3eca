"""Tests of ``Network.from_sklearn`` (polytrav.model.loaders.sklearn): scikit-learn ReLU MLPs and
Pipelines of affine scalers, compared with scikit-learn's own predictions; refusals by name.

Models are tiny and fitted for a few iterations (they need not be good, only fitted).
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

sklearn = pytest.importorskip("sklearn")

from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.neural_network import MLPClassifier, MLPRegressor  # noqa: E402
from sklearn.pipeline import Pipeline, make_pipeline  # noqa: E402
from sklearn.preprocessing import (  # noqa: E402
    FunctionTransformer, MaxAbsScaler, MinMaxScaler, OneHotEncoder, PolynomialFeatures,
    RobustScaler, StandardScaler,
)
from sklearn.svm import SVC  # noqa: E402

from polytrav import Box, Network, analyze, traverse  # noqa: E402
from polytrav.plugins.output_range import OutputRange  # noqa: E402
from polytrav.vocabulary.errors import ConfigError, NetworkError  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

SEED = 20260101
TOL = 1e-10  # float64 on both sides; folding the scalers only changes rounding
N_FEATURES = 3


def _data(n=60, seed=SEED):
    """Features of different scales and offsets (so a folded scaler that is wrong shows)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, N_FEATURES)) * [1.0, 10.0, 0.1] + [5.0, -20.0, 0.3]
    return X, rng


def _probe(X):
    """The training points and points well outside their range (affine means everywhere)."""
    return np.vstack([X, 3.0 * X - X.mean(axis=0), X[:5] * -4.0])


def _mlp(cls, **kwargs):
    kwargs = {"hidden_layer_sizes": (5, 4), "max_iter": 30, "random_state": 0, **kwargs}
    return cls(**kwargs)


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def _softmax(Z):
    E = np.exp(Z - Z.max(axis=1, keepdims=True))
    return E / E.sum(axis=1, keepdims=True)


def test_binary_classifier_output_is_the_logit_of_classes_1():
    X, _ = _data()
    y = np.where(X[:, 0] - 5.0 + 0.1 * (X[:, 1] + 20.0) > 0, "yes", "no")
    model = _mlp(MLPClassifier).fit(X, y)
    net = Network.from_sklearn(model)
    P = _probe(X)
    logit = net.forward(P)
    assert net.n_outputs == 1 and net.hidden_sizes == (5, 4) and net.name == "MLPClassifier"
    assert list(model.classes_) == ["no", "yes"]
    np.testing.assert_allclose(_sigmoid(logit[:, 0]), model.predict_proba(P)[:, 1],
                               rtol=0, atol=TOL)
    assert (model.predict(P) == model.classes_[(logit[:, 0] > 0).astype(int)]).all()


def test_multiclass_classifier_outputs_one_logit_per_class():
    X, _ = _data()
    y = np.digitize(X[:, 0] - 5.0, [-0.5, 0.5])  # 3 classes
    model = _mlp(MLPClassifier).fit(X, y + 7)
    net = Network.from_sklearn(model)
    P = _probe(X)
    logits = net.forward(P)
    assert logits.shape == (len(P), 3)
    np.testing.assert_allclose(_softmax(logits), model.predict_proba(P), rtol=0, atol=TOL)
    assert (model.predict(P) == model.classes_[logits.argmax(axis=1)]).all()


def test_multilabel_classifier_outputs_one_logit_per_label():
    X, _ = _data()
    Y = np.column_stack([X[:, 0] > 5.0, X[:, 1] > -20.0]).astype(int)
    model = _mlp(MLPClassifier).fit(X, Y)
    net = Network.from_sklearn(model)
    P = _probe(X)
    np.testing.assert_allclose(_sigmoid(net.forward(P)), model.predict_proba(P),
                               rtol=0, atol=TOL)


@pytest.mark.parametrize("targets", [1, 2])
def test_regressor_outputs_are_the_predictions(targets):
    X, rng = _data()
    Y = X @ rng.normal(size=(N_FEATURES, targets))
    model = _mlp(MLPRegressor).fit(X, Y[:, 0] if targets == 1 else Y)
    net = Network.from_sklearn(model)
    P = _probe(X)
    expected = model.predict(P).reshape(len(P), targets)
    np.testing.assert_allclose(net.forward(P), expected, rtol=TOL, atol=TOL)


def test_poisson_regressor_outputs_the_log_of_the_prediction():
    X, _ = _data()
    model = _mlp(MLPRegressor, loss="poisson").fit(X, np.exp(0.1 * X[:, 0]))
    net = Network.from_sklearn(model)
    P = _probe(X)
    np.testing.assert_allclose(np.exp(net.forward(P)[:, 0]), model.predict(P), rtol=TOL)


def test_identity_activation_folds_into_one_affine_map():
    X, _ = _data()
    model = _mlp(MLPRegressor, activation="identity").fit(X, X[:, 0] - X[:, 2])
    net = Network.from_sklearn(model)
    assert net.n_hidden_layers == 0
    P = _probe(X)
    np.testing.assert_allclose(net.forward(P)[:, 0], model.predict(P), rtol=TOL, atol=TOL)


PREPROCESSING = {
    "standard": [StandardScaler()],
    "standard-no-mean": [StandardScaler(with_mean=False)],
    "standard-no-std": [StandardScaler(with_std=False)],
    "minmax": [MinMaxScaler(feature_range=(-1.0, 2.0))],
    "maxabs": [MaxAbsScaler()],
    "robust": [RobustScaler(quantile_range=(10.0, 90.0))],
    "robust-no-centering": [RobustScaler(with_centering=False)],
    "robust-no-scaling": [RobustScaler(with_scaling=False)],
    "function-identity": [FunctionTransformer()],
    "passthrough": ["passthrough"],
    "none": [None],
    "chain-and-nested": [StandardScaler(), "passthrough",
                         Pipeline([("mm", MinMaxScaler()), ("ma", MaxAbsScaler())]),
                         RobustScaler()],
}


@pytest.mark.parametrize("key", list(PREPROCESSING))
def test_pipeline_scalers_fold_into_the_first_layer(key):
    X, _ = _data()
    steps = [(f"s{k}", step) for k, step in enumerate(PREPROCESSING[key])]
    mlp = _mlp(MLPRegressor, hidden_layer_sizes=(6,))
    model = Pipeline([*steps, ("mlp", mlp)]).fit(X, X[:, 0] * X[:, 2] - 0.01 * X[:, 1])
    net = Network.from_sklearn(model)
    assert net.hidden_sizes == (6,) and net.n_inputs == N_FEATURES and net.name == "Pipeline"
    P = _probe(X)
    np.testing.assert_allclose(net.forward(P)[:, 0], model.predict(P), rtol=TOL, atol=TOL)


def test_pipeline_classifier_with_scaler():
    X, _ = _data()
    model = make_pipeline(StandardScaler(), _mlp(MLPClassifier))
    model.fit(X, (X[:, 1] > -20.0).astype(int))
    P = _probe(X)
    np.testing.assert_allclose(_sigmoid(Network.from_sklearn(model).forward(P)[:, 0]),
                               model.predict_proba(P)[:, 1], rtol=0, atol=TOL)


def test_feature_names_become_input_names():
    pd = pytest.importorskip("pandas")
    X, _ = _data()
    frame = pd.DataFrame(X, columns=["age", "income", "ratio"])
    model = make_pipeline(StandardScaler(), _mlp(MLPRegressor)).fit(frame, X[:, 0])
    net = Network.from_sklearn(model)
    assert net.input_names == ("age", "income", "ratio")
    np.testing.assert_allclose(net.forward(X)[:, 0], model.predict(frame), rtol=TOL, atol=TOL)
    assert Network.from_sklearn(_mlp(MLPRegressor).fit(X, X[:, 0])).input_names is None


def _breast_cancer_pipeline():
    """The breast-cancer data as a DataFrame (feature names) and a scaled MLP on string labels."""
    pytest.importorskip("pandas")
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    labels = np.where(y == 1, "benign", "malignant")
    model = make_pipeline(StandardScaler(), _mlp(MLPClassifier, hidden_layer_sizes=(8,),
                                                 max_iter=60)).fit(X, labels)
    return X, model


def test_breast_cancer_pipeline_keeps_classes_link_and_names():
    X, model = _breast_cancer_pipeline()
    net = Network.from_sklearn(model)
    assert net.classes == ("benign", "malignant") and net.link == "sigmoid"
    assert net.input_names == tuple(X.columns) and net.input_names[27] == "worst concave points"
    P = _probe(X.to_numpy())
    frame = X.__class__(P, columns=X.columns)
    np.testing.assert_allclose(net.predict_proba(P), model.predict_proba(frame), rtol=0,
                               atol=1e-9)
    assert (net.predict(P) == model.predict(frame)).all()
    x = P[0]
    k = net.class_index(x)
    assert net.class_label(k) == model.predict(frame.iloc[:1])[0]
    assert net.class_probability(x, k) == pytest.approx(model.predict_proba(frame.iloc[:1])[0, k],
                                                        abs=1e-9)


def test_iris_pipeline_is_a_softmax_over_its_classes():
    from sklearn.datasets import load_iris

    data = load_iris()
    model = make_pipeline(StandardScaler(), _mlp(MLPClassifier, hidden_layer_sizes=(8,),
                                                 max_iter=200))
    model.fit(data.data, data.target_names[data.target])
    net = Network.from_sklearn(model)  # fitted on an array: no feature names
    assert net.classes == ("setosa", "versicolor", "virginica") and net.link == "softmax"
    assert net.input_names is None
    P = _probe(data.data)
    np.testing.assert_allclose(net.predict_proba(P), model.predict_proba(P), rtol=0, atol=1e-9)
    assert (net.predict(P) == model.predict(P)).all()
    assert net.predict(P).dtype == model.predict(P).dtype


def test_regressors_multilabel_and_poisson_links():
    X, _ = _data()
    reg = Network.from_sklearn(_mlp(MLPRegressor).fit(X, X[:, 0]))
    assert reg.link == "identity" and reg.classes is None
    np.testing.assert_allclose(reg.predict(X), reg.forward(X)[:, 0])
    poisson = Network.from_sklearn(_mlp(MLPRegressor, loss="poisson").fit(X, np.exp(X[:, 2])))
    assert poisson.link is None and poisson.classes is None
    Y = np.column_stack([X[:, 0] > 5.0, X[:, 1] > -20.0]).astype(int)
    model = _mlp(MLPClassifier).fit(X, Y)
    multi = Network.from_sklearn(model)
    assert multi.link == "sigmoid" and multi.classes == (0, 1)
    P = _probe(X)
    np.testing.assert_allclose(multi.predict_proba(P), model.predict_proba(P), rtol=0, atol=1e-9)
    assert (multi.predict(P) == model.predict(P)).all()


def _fitted_mlp():
    X, _ = _data()
    return X, X[:, 0] > 5.0


@pytest.mark.parametrize("build, match", [
    (lambda X, y: _mlp(MLPClassifier, activation="tanh").fit(X, y),
     r"MLPClassifier\(activation='tanh'\) is not piecewise linear.*'relu'"),
    (lambda X, y: _mlp(MLPRegressor, activation="logistic").fit(X, y),
     r"MLPRegressor\(activation='logistic'\)"),
    (lambda X, y: SVC().fit(X, y), r"unsupported estimator SVC; supported: MLPClassifier"),
    (lambda X, y: make_pipeline(StandardScaler(), SVC()).fit(X, y),
     r"step 'svc': unsupported estimator SVC"),
    (lambda X, y: make_pipeline(MinMaxScaler(clip=True), _mlp(MLPClassifier)).fit(X, y),
     r"step 'minmaxscaler': MinMaxScaler\(clip=True\) clips its output, which is not affine"),
    (lambda X, y: _mlp(MLPClassifier), r"the model: this MLPClassifier is not fitted"),
    (lambda X, y: Pipeline([("scale", StandardScaler()),
                            ("mlp", _mlp(MLPClassifier).fit(X, y))]),
     r"step 'scale': this StandardScaler is not fitted"),
    (lambda X, y: make_pipeline(PolynomialFeatures(), _mlp(MLPClassifier)).fit(X, y),
     r"unsupported preprocessing step PolynomialFeatures; supported: .*StandardScaler"),
    (lambda X, y: make_pipeline(ColumnTransformer([("s", StandardScaler(), [0, 1, 2])]),
                                _mlp(MLPClassifier)).fit(X, y),
     r"unsupported preprocessing step ColumnTransformer"),
    (lambda X, y: make_pipeline(OneHotEncoder(handle_unknown="ignore"),
                                _mlp(MLPClassifier)).fit(X.round(), y),
     r"unsupported preprocessing step OneHotEncoder"),
    (lambda X, y: make_pipeline(FunctionTransformer(np.abs), _mlp(MLPClassifier)).fit(X, y),
     r"FunctionTransformer\(func=<ufunc 'absolute'>\) applies an arbitrary function"),
], ids=["tanh", "logistic", "svc", "pipeline-svc", "minmax-clip", "unfitted-mlp",
        "unfitted-scaler", "polynomial", "column-transformer", "one-hot", "function"])
def test_refusals_name_the_estimator_and_what_is_supported(build, match):
    model = build(*_fitted_mlp())
    with pytest.raises(NetworkError, match=match):
        Network.from_sklearn(model)


def test_a_pipeline_must_end_in_its_only_mlp():
    X, y = _fitted_mlp()
    mlp = _mlp(MLPClassifier).fit(X, y)
    model = Pipeline([("mlp", mlp), ("scale", StandardScaler().fit(X[:, :1]))])
    with pytest.raises(NetworkError, match=r"step 'mlp': the MLPClassifier must be the last step"):
        Network.from_sklearn(model)
    model = Pipeline([("scale", StandardScaler().fit(X)), ("end", "passthrough")])
    with pytest.raises(NetworkError, match=r"Pipeline ends in StandardScaler \(step 'scale'\); "
                                           "its last step must be an MLPClassifier"):
        Network.from_sklearn(model)


def test_not_an_estimator_and_missing_sklearn(monkeypatch):
    with pytest.raises(ConfigError, match=r"expected a fitted scikit-learn estimator, got list"):
        Network.from_sklearn([[1.0]])
    monkeypatch.setitem(sys.modules, "sklearn", None)
    with pytest.raises(ConfigError, match=r'load_sklearn needs sklearn \(the .sklearn. extra\), '
                                          r'which is not installed: pip install "polytrav\[sklearn\]"'):
        Network.from_sklearn(object())  # MissingExtra: the library's own error


def test_traversal_and_analysis_run_on_a_converted_classifier():
    """A from_sklearn network is a real Network: traversed, and its output range is exact
    (scikit-learn's probability at the arg-max is the sigmoid of the maximal logit)."""
    rng = np.random.default_rng(SEED)
    X = rng.uniform(-1.0, 1.0, size=(80, 2))
    model = make_pipeline(StandardScaler(), _mlp(MLPClassifier, hidden_layer_sizes=(6, 4)))
    model.fit(X, (X[:, 0] * X[:, 1] > 0).astype(int))
    net = Network.from_sklearn(model)
    region = Box([-1.0, -1.0], [1.0, 1.0])
    codes = {tuple(np.concatenate(p.code).tolist()) for p in traverse(net, region)}
    grid = np.stack(np.meshgrid(*[np.linspace(-1.0, 1.0, 31)] * 2), axis=-1).reshape(-1, 2)
    assert {tuple(np.concatenate(c).tolist()) for c in map(net.activation_code, grid)} <= codes
    assert len(codes) > 1
    report = analyze(net, region, OutputRange(0))
    result = report[0]
    assert report.complete
    logits = net.forward(grid)[:, 0]
    assert result.value["min"] <= logits.min() + TOL and result.value["max"] >= logits.max() - TOL
    for sense in ("min", "max"):
        x = result.details[f"arg{sense}"]
        assert region.contains(x)
        p = model.predict_proba(np.asarray(x).reshape(1, -1))[0, 1]
        assert abs(_sigmoid(result.value[sense]) - p) < 1e-9
