"""The peer side of ``benchmarks/explainers.py``: DiCE, alibi, shap, aletheia-dnn and PiML on
a ReLU network.

Run by ``explainers.py`` with the Python of a separate virtual environment that holds the
peers (``dice-ml``, ``alibi`` with TensorFlow, ``shap``; ``aletheia-dnn`` and ``PiML`` in one
of Python 3.10, the newest their wheels support); it never imports polytrav, and polytrav's
process never imports it. It reads ``case.json`` and ``case.npz`` from the folder given on the
command line and writes ``peers.json`` there:

* ``case.npz``: ``weights_<k>``, ``biases_<k>`` (the network, ``y = W x + b`` per layer,
  ReLU between, one logit: class 1 iff it is ``>= 0``), ``X`` (the data, the model's input
  units), ``y`` (the labels), ``rows`` (positions of the rows to explain);
* ``case.json``: ``names``, ``immutable`` (names), ``ranges`` (per row, ``{name: [lo, hi]}``
  for every mutable feature: the same region polytrav searches), ``peers`` (which to run),
  ``dice_method``, ``shap_samples``, ``shap_background``, ``alibi_iter``, ``scale``
  (polytrav's per-feature units), ``repeats``.

Every peer is run row by row and timed around its call only; an exception is recorded (its
type and message), never hidden. Nothing here judges the answers: ``explainers.py`` does,
in polytrav's metric.
"""
from __future__ import annotations

import json
import sys
import time
import traceback
import warnings
from pathlib import Path

import numpy as np


class ReluNet:
    """The network as a scikit-learn-like classifier (what DiCE's ``sklearn`` backend and
    shap call): ``predict_proba`` (sigmoid of the logit), ``predict``, ``logit``."""

    def __init__(self, weights, biases, names):
        self.weights, self.biases, self.names = weights, biases, list(names)
        self.classes_ = np.array([0, 1])

    def _array(self, X):
        if hasattr(X, "columns"):
            X = X[self.names].to_numpy(float)
        return np.atleast_2d(np.asarray(X, float))

    def logit(self, X):
        h = self._array(X)
        for k, (W, b) in enumerate(zip(self.weights, self.biases)):
            h = h @ W.T + b
            if k < len(self.weights) - 1:
                h = np.maximum(h, 0.0)
        return h[:, 0]

    def predict_proba(self, X):
        z = self.logit(X)
        p = 1.0 / (1.0 + np.exp(-np.clip(z, -500, 500)))
        return np.column_stack([1.0 - p, p])

    def predict(self, X):
        return (self.logit(X) >= 0).astype(int)


def version(module: str) -> str | None:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as v

    try:
        return v(module)
    except PackageNotFoundError:
        return None


def failure(exc: BaseException) -> dict:
    return {"error": f"{type(exc).__name__}: {exc}"[:500]}


def run_dice(net, X, y, names, rows, spec, weights="inverse_mad") -> dict:
    """DiCE on each row: one counterfactual of the opposite class, the mutable features only,
    in the permitted ranges. ``weights``: DiCE's ``feature_weights`` (``"inverse_mad"``, its
    default, or ``{name: weight}``)."""
    import dice_ml
    import pandas as pd

    frame = pd.DataFrame(X, columns=names)
    frame["_label"] = y
    data = dice_ml.Data(dataframe=frame, continuous_features=list(names), outcome_name="_label")
    model = dice_ml.Model(model=net, backend="sklearn")
    dice = dice_ml.Dice(data, model, method=spec["dice_method"])
    mutable = [n for n in names if n not in spec["immutable"]]
    extra = {"feature_weights": weights} if spec["dice_method"] == "genetic" else {}
    out = []
    for pos, ranges in zip(rows, spec["ranges"]):
        q = pd.DataFrame(X[[pos]], columns=names)
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = dice.generate_counterfactuals(
                    q, total_CFs=1, desired_class="opposite", features_to_vary=mutable,
                    permitted_range=ranges, verbose=False, **extra)
            cf = res.cf_examples_list[0].final_cfs_df
            dt = time.perf_counter() - t0
        except Exception as exc:  # noqa: BLE001 (DiCE raises when it finds nothing)
            out.append({"row": int(pos), "found": False, "time": time.perf_counter() - t0,
                        **failure(exc)})
            continue
        if cf is None or len(cf) == 0:
            out.append({"row": int(pos), "found": False, "time": dt})
            continue
        out.append({"row": int(pos), "found": True, "time": dt,
                    "x": cf[names].to_numpy(float)[0].tolist()})
    return {"version": version("dice-ml"), "method": spec["dice_method"],
            "feature_weights": weights if isinstance(weights, str) else "polytrav's metric",
            "rows": out}


def run_dice_metric(net, X, y, names, rows, spec) -> dict:
    """DiCE with ``feature_weights`` that make its proximity loss polytrav's metric: DiCE's
    genetic method weighs each feature's change in min-max normalised units, so the weight
    ``range_j / scale_j`` gives ``|x'_j - x_j| / scale_j``."""
    span = X.max(0) - X.min(0)
    weights = {n: float(span[j] / spec["scale"][j]) if span[j] > 0 else 1.0
               for j, n in enumerate(names)}
    return run_dice(net, X, y, names, rows, spec, weights)


def run_alibi(net, X, names, rows, spec) -> dict:
    """alibi's ``Counterfactual`` (Wachter et al.: L1 distance, unscaled, gradients of the
    black box by finite differences; it needs TensorFlow). It has no immutable features: each
    row gets its own ``feature_range``, the row's value for an immutable feature (lo = hi)
    and the permitted range for the others, so an explainer is built per row (timed with
    the row). ``target_proba=1, tol=0.5``: any point the network gives to the other class
    (its default, 1 +- 0.05, asks for a probability of 0.95)."""
    import tensorflow as tf
    from alibi.explainers import Counterfactual

    tf.compat.v1.disable_eager_execution()  # alibi's Counterfactual is TF1-style (its docs)
    out = []
    for pos, ranges in zip(rows, spec["ranges"]):
        x = X[pos]
        lo = np.array([ranges[n][0] if n in ranges else x[j] for j, n in enumerate(names)])
        hi = np.array([ranges[n][1] if n in ranges else x[j] for j, n in enumerate(names)])
        t0 = time.perf_counter()
        try:
            tf.compat.v1.reset_default_graph()
            explainer = Counterfactual(net.predict_proba, shape=(1, X.shape[1]),
                                       target_class="other", target_proba=1.0, tol=0.5,
                                       feature_range=(lo[None].astype(np.float32),
                                                      hi[None].astype(np.float32)),
                                       max_iter=spec["alibi_iter"], max_lam_steps=5)
            exp = explainer.explain(x[None].astype(np.float32))
            dt = time.perf_counter() - t0
            cf = exp.cf
            if cf is None:
                out.append({"row": int(pos), "found": False, "time": dt})
            else:
                out.append({"row": int(pos), "found": True, "time": dt,
                            "x": np.asarray(cf["X"], float)[0].tolist()})
        except Exception as exc:  # noqa: BLE001 (recorded, the next row goes on)
            out.append({"row": int(pos), "found": False, "time": time.perf_counter() - t0,
                        **failure(exc)})
    return {"version": version("alibi"), "method": "Counterfactual (Wachter, L1 unscaled)",
            "rows": out}


def run_shap(net, X, names, rows, spec) -> dict:
    """shap's ``KernelExplainer`` on the logit, background: ``shap_background`` rows drawn
    with seed 0 (shap's own advice for speed), ``nsamples`` model calls per row."""
    import shap

    rng = np.random.default_rng(0)
    take = rng.choice(len(X), size=min(spec["shap_background"], len(X)), replace=False)
    background = X[np.sort(take)]
    explainer = shap.KernelExplainer(net.logit, background)
    out = []
    for pos in rows:
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                values = explainer.shap_values(X[[pos]], nsamples=spec["shap_samples"],
                                               silent=True)
            out.append({"row": int(pos), "time": time.perf_counter() - t0,
                        "values": np.asarray(values, float).reshape(-1).tolist()})
        except Exception as exc:  # noqa: BLE001 (recorded, the next row goes on)
            out.append({"row": int(pos), "time": time.perf_counter() - t0, **failure(exc)})
    return {"version": version("shap"), "method": "KernelExplainer (logit)",
            "expected_value": float(np.asarray(explainer.expected_value).reshape(-1)[0]),
            "background_mean": background.mean(0).tolist(), "rows": out}


def run_aletheia(net, X, y, names, rows, spec) -> dict:
    """aletheia-dnn's ``UnwrapperClassifier`` (its own wheels: Python <= 3.10): the network's
    weights in scikit-learn's convention (``coefs_``: inputs by outputs), ``fit`` on the data
    (it groups the rows by activation pattern) and ``summary()``: one row per local linear
    model met by the data (count, response mean and std, local and global AUC). Timed
    around ``fit`` and ``summary``, best of ``repeats``."""
    from aletheia import UnwrapperClassifier

    coefs = [np.asarray(W).T for W in net.weights]
    times, table = [], None
    for _ in range(spec.get("repeats", 3)):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf = UnwrapperClassifier(coefs, list(net.biases), feature_names=list(names))
            clf.fit(X, y)
            table = clf.summary()
        times.append(time.perf_counter() - t0)
    return {"version": version("aletheia-dnn"), "times": times,
            "columns": [str(c) for c in table.columns],
            "counts": sorted((int(c) for c in table["Count"]), reverse=True),
            "head": table.head(5).to_dict(orient="list")}


def run_piml(net, X, y, names, rows, spec) -> dict:
    """PiML's ``Experiment`` with the scikit-learn model (the same weights, set on an
    ``MLPClassifier``) registered as an external model, then ``model_interpret``."""
    import pandas as pd
    from piml import Experiment
    from sklearn.neural_network import MLPClassifier

    frame = pd.DataFrame(X, columns=names)
    frame["target"] = y
    exp = Experiment()
    exp.data_loader(data=frame, silent=True)
    exp.data_prepare(target="target", task_type="classification", silent=True)
    hidden = tuple(np.asarray(W).shape[0] for W in net.weights[:-1])
    model = MLPClassifier(hidden, max_iter=1).fit(X, y)  # the shapes; weights set next
    model.coefs_ = [np.asarray(W).T for W in net.weights]
    model.intercepts_ = [np.asarray(b) for b in net.biases]
    exp.model_train(model=model, name="MLP")
    exp.model_interpret(model="MLP", show="global_fi", return_data=True)
    return {"version": version("PiML"), "interpret": "ran"}


PEERS = {"dice": run_dice_metric, "dice_mad": run_dice, "alibi": run_alibi, "shap": run_shap,
         "aletheia": run_aletheia, "piml": run_piml}
WITH_LABELS = ("dice", "dice_mad", "aletheia", "piml")


def main(folder: str) -> int:
    folder = Path(folder)
    spec = json.loads((folder / "case.json").read_text())
    arrays = np.load(folder / "case.npz")
    layers = sum(1 for k in arrays.files if k.startswith("weights_"))
    net = ReluNet([arrays[f"weights_{k}"] for k in range(layers)],
                  [arrays[f"biases_{k}"] for k in range(layers)], spec["names"])
    X, y, rows = arrays["X"], arrays["y"], [int(r) for r in arrays["rows"]]
    result = {"python": sys.version.split()[0]}
    for name in spec["peers"]:
        t0 = time.perf_counter()
        try:
            if name in WITH_LABELS:
                result[name] = PEERS[name](net, X, y, spec["names"], rows, spec)
            else:
                result[name] = PEERS[name](net, X, spec["names"], rows, spec)
        except Exception as exc:  # noqa: BLE001 (no import, or a failure before any row)
            result[name] = {**failure(exc), "traceback": traceback.format_exc()[-2000:]}
        result[name]["wall"] = time.perf_counter() - t0
        print(f"  peer {name}: {result[name].get('error', 'ran')} "
              f"({result[name]['wall']:.1f} s)", flush=True)
    (folder / "peers.json").write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
