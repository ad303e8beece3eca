"""The report's sections on the model over the data, computed from the explanation's rows:

* the **region table**: the distinct local linear models the rows fall in
  (:func:`polytrav.region_table`), the :data:`REGION_ROWS` largest shown with their class
  mix, score, Chebyshev radius, volume share and largest coefficients;
* the **monotonicity table** over the data domain (:func:`polytrav.monotonicity_table`),
  each feature with a budget (default :data:`MONOTONICITY_TIME_LIMIT` seconds per
  direction): a feature not settled within it is ``unknown`` with why, never certified;
* **profile plots**: for each of the largest regions, its representative row (the row of
  the region nearest the region's mean row, each feature in units of its domain width: a
  real applicant, typical of the region) and the exact score along each of the
  :data:`PROFILE_FEATURES` features that move the score most across their range there
  (``|slope| * width``).

The score (:class:`Score`): one output's value (a binary logit, a regressor's
prediction); for a classifier of several classes, a difference of two logits, which is what
decides between two classes (a logit alone is not: adding the same amount to every logit
changes no probability): in the region table and each profile, the majority class's (the
representative row's) logit less the runner-up's; in the monotonicity table, each class's
log-odds against the first class, ``logit[k] - logit[0]``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from polytrav.interface.report.figure import profile_figure
from polytrav.model.network import Network
from polytrav.vocabulary.errors import ConfigError

__all__ = ["MONOTONICITY_TIME_LIMIT", "PROFILE_FEATURES", "PROFILE_REGIONS", "REGION_ROWS",
           "model_sections"]

#: Regions listed (the most rows first; the rest are counted).
REGION_ROWS = 20
#: Regions profiled by default (``profiles=True``), and features per profile.
PROFILE_REGIONS = 3
PROFILE_FEATURES = 4
#: Seconds of each monotonicity run (one feature, one direction) by default.
MONOTONICITY_TIME_LIMIT = 10.0


def model_sections(explanation, *, regions, monotonicity, profiles, figures, number) -> dict:
    """``{"score": ..., "regions": ..., "monotonicity": ..., "profiles": ...}`` for the
    templates (None where not asked). ``regions``: bool; ``monotonicity``: bool or a dict
    of :func:`polytrav.monotonicity_table` options (its budget); ``profiles``: bool or the
    number of regions profiled."""
    net = explanation.network
    n_profiles = PROFILE_REGIONS if profiles is True else int(profiles or 0)
    if not isinstance(monotonicity, (bool, dict, type(None))):
        raise ConfigError(f"report: monotonicity must be True, False or a dict of "
                          f"monotonicity_table options, got {type(monotonicity).__name__}")
    out = {"score": None, "regions": None, "monotonicity": None, "profiles": None}
    if net is None or explanation.data is None or not (regions or monotonicity or n_profiles):
        return out
    score = Score.of(net)
    out["score"] = score.words
    table, why = None, None
    if regions or n_profiles:
        table, why = _region_table(explanation)
    if regions:
        out["regions"] = _regions(explanation, table, why, score, number)
    if monotonicity:
        options = {"time_limit": MONOTONICITY_TIME_LIMIT,
                   **(monotonicity if isinstance(monotonicity, dict) else {})}
        out["monotonicity"] = _monotonicity(explanation, score, options, number)
    if n_profiles:
        out["profiles"] = [] if table is None else _profiles(
            explanation, table, n_profiles, score, figures)
    return out


@dataclass(frozen=True)
class Score:
    """What the sections show of the network's outputs: one ``output`` (``pairwise``
    False), or, for a classifier of several classes, a difference of two logits."""

    net: Network
    pairwise: bool
    output: int  #: the output shown (one-output networks and regressors)
    name: str  #: the score's short name (a profile's axis)
    words: str  #: the score in words, for the sections' notes

    @classmethod
    def of(cls, net) -> Score:
        m = net.n_outputs
        if net.link == "identity":
            return cls(net, False, 0, "prediction" if m == 1 else "prediction's output 0",
                       "prediction" if m == 1 else
                       f"prediction's output 0 (of {m}; polytrav.region_table lists every one)")
        if m == 1:
            label = f" of {net.classes[1]}" if net.classes else ""
            return cls(net, False, 0, "score", f"score (the logit{label}; > 0 decides "
                                      f"{net.class_label(1)}, < 0 {net.class_label(0)})")
        if net.link == "sigmoid":  # multilabel: each output its own logit
            return cls(net, False, 0, "logit of the first label", "logit of the first label "
                                      "(polytrav.region_table lists every one)")
        return cls(net, True, 0, "logit[a] − logit[b]",
                   "margin of a class over another: the difference of their "
                                 "logits, logit[a] − logit[b], > 0 where a beats b (a region's a "
                                 "is its majority class, b the runner-up, named per row)")

    def label(self, k: int) -> str:
        return str(self.net.class_label(k))

    def pair(self, Y: np.ndarray) -> tuple[int, int]:
        """The majority class of the rows' logits ``Y`` and the runner-up (the largest mean
        logit of the other classes)."""
        k = np.argmax(Y, axis=1)
        a = int(np.bincount(k, minlength=Y.shape[1]).argmax())
        means = Y.mean(axis=0)
        means[a] = -np.inf
        return a, int(np.argmax(means))

    def contrast(self, a: int, b: int):
        """The network of the one output ``logit[a] - logit[b]`` (a binary classifier
        between ``b`` and ``a``)."""
        net = self.net
        W, c = net.weights[-1], net.biases[-1]
        return Network([*net.weights[:-1], (W[a] - W[b])[None]], [*net.biases[:-1],
                       np.array([c[a] - c[b]])], input_names=net.input_names,
                       classes=[self.label(b), self.label(a)], link="sigmoid")


def _threshold(net) -> float | None:
    """The score's decision boundary, where one output decides (a binary logit)."""
    return 0.0 if net.n_outputs == 1 and net.link in (None, "sigmoid") else None


def _widths(explanation) -> np.ndarray:
    box = explanation.domain
    return np.asarray(box.upper - box.lower, dtype=float)


# ---------------------------------------------------------------- regions


def _region_table(explanation):
    """The region table of the rows (their positions as its row labels), or why not."""
    import pandas as pd
    from polytrav.host.regions import region_table

    X = pd.DataFrame(explanation.data, columns=list(explanation.features))
    try:
        return region_table(explanation.network, X, domain=explanation.domain), None
    except ConfigError as exc:
        return None, str(exc)


def _regions(explanation, table, why, score: Score, number) -> dict:
    if table is None:
        return {"why": why, "rows": [], "n": 0, "omitted": 0, "excluded": 0}
    widths = _widths(explanation)
    n_rows = sum(r.count for r in table.regions)
    net = explanation.network
    rows = []
    for r in table.regions[:REGION_ROWS]:
        p = r.probability_mean
        if score.pairwise:  # the majority class's logit less the runner-up's, at the rows
            Y = net.forward(explanation.data[[int(i) for i in r.rows]])
            a, b = score.pair(Y)
            slope = r.gradient[a] - r.gradient[b]
            gap = Y[:, a] - Y[:, b]
            text = (f"{score.label(a)} − {score.label(b)}: {number(float(gap.mean()))} ± "
                    f"{number(float(gap.std()))}")
            prob = "—" if p is None else f"{score.label(a)}: {number(float(p[a]))}"
        else:
            k = score.output
            slope = r.gradient[k]
            text = f"{number(float(r.score_mean[k]))} ± {number(float(r.score_std[k]))}"
            prob = "—" if p is None else number(float(p[min(k, len(p) - 1)]))
        top = np.argsort(-np.abs(slope) * widths, kind="stable")[:3]
        rows.append({
            "id": r.id, "count": r.count, "share": f"{r.count / n_rows:.0%}",
            "classes": ", ".join(f"{c}: {n}" for c, n in r.classes.items()) or "—",
            "score": text, "probability": prob,
            "radius": number(r.radius),
            "volume": "—" if r.volume_share is None else f"{r.volume_share:.3g}",
            "slopes": ", ".join(f"{explanation.features[j]} {slope[j]:+.3g}" for j in top)})
    return {"why": None, "rows": rows, "n": len(table),
            "omitted": max(len(table) - REGION_ROWS, 0), "excluded": len(table.excluded)}


# ---------------------------------------------------------------- monotonicity


def _monotonicity(explanation, score: Score, options, number) -> dict:
    from polytrav.host.monotonicity_table import Monotone, monotonicity_table

    net = explanation.network
    if score.pairwise:  # each class's log-odds against the first
        tables = [(f"{score.label(k)} vs {score.label(0)}",
                   monotonicity_table(score.contrast(k, 0), explanation.domain, **options))
                  for k in range(1, net.n_outputs)]
    else:
        tables = [(None, monotonicity_table(net, explanation.domain, output=None if
                                            net.n_outputs == 1 else score.output, **options))]
    rows = []
    for which, r in ((w, r) for w, t in tables for r in t.rows):
        evidence = []
        for word, pair in (("falls", r.down), ("rises", r.up)):
            if pair is not None:
                v, v2, y, y2 = map(float, pair)
                evidence.append(f"{word}: {r.name} {number(v)} → {number(v2)}, "
                                f"score {number(y)} → {number(y2)}")
        unknown = r.verdict is Monotone.UNKNOWN
        rows.append({"feature": r.name, "log_odds": which, "verdict": r.verdict.value,
                     "status": "unknown" if unknown else "exact",
                     "evidence": "; ".join(evidence) or (
                         "" if unknown else "proven over the whole domain"),
                     "why": r.why or "", "polytopes": r.polytopes,
                     "seconds": f"{r.seconds:.2g}"})
    budget = ", ".join(f"{k}={v}" for k, v in options.items() if k in ("time_limit",
                                                                        "max_polytopes"))
    words = (f"log-odds of each class against {score.label(0)}, logit[k] − "
             f"logit[{score.label(0)}] (the column 'log-odds' names k)" if score.pairwise
             else score.words)
    return {"rows": rows, "budget": budget or "none", "per_class": score.pairwise,
            "score": words,
            "unknown": sum(r["status"] == "unknown" for r in rows)}


# ---------------------------------------------------------------- profiles


def _profiles(explanation, table, n, score: Score, figures) -> list[dict]:
    net, box = explanation.network, explanation.domain
    widths = _widths(explanation)
    scale = np.where(widths > 0, widths, 1.0)
    from polytrav.interface.plot.profile import top_features

    out = []
    for r in table.regions[:n]:
        positions = [int(p) for p in r.rows]
        X = explanation.data[positions] / scale
        pick = positions[int(np.argmin(((X - X.mean(axis=0)) ** 2).sum(axis=1)))]
        x = explanation.data[pick]
        shown, threshold, ylabel = net, _threshold(net), score.name
        if score.pairwise:  # the row's class against its runner-up
            y = net.forward(x)
            a, b = np.argsort(-y, kind="stable")[:2]
            shown, threshold = score.contrast(int(a), int(b)), 0.0
            ylabel = f"logit[{score.label(a)}] − logit[{score.label(b)}]"
        k = 0 if score.pairwise else score.output
        idx = top_features(shown, x, min(PROFILE_FEATURES, net.n_inputs), k, scale=widths)
        out.append({"region": r.id, "count": r.count,
                    "row": str(explanation.index[pick]), "score": ylabel,
                    "features": [explanation.features[j] for j in idx],
                    "figure": profile_figure(shown, x, box, idx, figures, f"profile-region-{r.id}",
                                             output=k, names=list(explanation.features),
                                             threshold=threshold, ylabel=ylabel)})
    return out
