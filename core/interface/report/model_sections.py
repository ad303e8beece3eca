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

The score is the network's output (for several outputs, the last class's).
"""
from __future__ import annotations

import numpy as np
from polytrav.interface.report.figure import profile_figure
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
    output, score = _score(net)
    out["score"] = score
    table, why = None, None
    if regions or n_profiles:
        table, why = _region_table(explanation)
    if regions:
        out["regions"] = _regions(explanation, table, why, output, number)
    if monotonicity:
        options = {"time_limit": MONOTONICITY_TIME_LIMIT,
                   **(monotonicity if isinstance(monotonicity, dict) else {})}
        out["monotonicity"] = _monotonicity(explanation, output, options, number)
    if n_profiles:
        out["profiles"] = [] if table is None else _profiles(
            explanation, table, n_profiles, output, score, figures)
    return out


def _score(net) -> tuple[int, str]:
    """The output the sections show, and its name."""
    k = net.n_outputs - 1
    if net.link == "identity":
        return k, "prediction" if net.n_outputs == 1 else f"output {k}"
    if net.classes:
        return k, f"logit of {net.classes[-1]}"
    return k, "score" if net.n_outputs == 1 else f"output {k}"


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


def _regions(explanation, table, why, output, number) -> dict:
    if table is None:
        return {"why": why, "rows": [], "n": 0, "omitted": 0, "excluded": 0}
    widths = _widths(explanation)
    n_rows = sum(r.count for r in table.regions)
    rows = []
    for r in table.regions[:REGION_ROWS]:
        slope = r.gradient[output]
        top = np.argsort(-np.abs(slope) * widths, kind="stable")[:3]
        p = r.probability_mean
        rows.append({
            "id": r.id, "count": r.count, "share": f"{r.count / n_rows:.0%}",
            "classes": ", ".join(f"{c}: {n}" for c, n in r.classes.items()) or "—",
            "score": f"{number(float(r.score_mean[output]))} ± {number(float(r.score_std[output]))}",
            "probability": "—" if p is None else number(float(p[min(output, len(p) - 1)])),
            "radius": number(r.radius),
            "volume": "—" if r.volume_share is None else f"{r.volume_share:.3g}",
            "slopes": ", ".join(f"{explanation.features[j]} {slope[j]:+.3g}" for j in top)})
    return {"why": None, "rows": rows, "n": len(table),
            "omitted": max(len(table) - REGION_ROWS, 0), "excluded": len(table.excluded)}


# ---------------------------------------------------------------- monotonicity


def _monotonicity(explanation, output, options, number) -> dict:
    from polytrav.host.monotonicity_table import monotonicity_table

    net = explanation.network
    table = monotonicity_table(net, explanation.domain,
                               output=None if net.n_outputs == 1 else output, **options)
    rows = []
    for r in table.rows:
        evidence = []
        for word, pair in (("falls", r.down), ("rises", r.up)):
            if pair is not None:
                v, v2, y, y2 = map(float, pair)
                evidence.append(f"{word}: {r.name} {number(v)} → {number(v2)}, "
                                f"score {number(y)} → {number(y2)}")
        rows.append({"feature": r.name, "verdict": r.verdict,
                     "status": "unknown" if r.verdict == "unknown" else "exact",
                     "evidence": "; ".join(evidence) or (
                         "proven over the whole domain" if r.verdict != "unknown" else ""),
                     "why": r.why or "", "polytopes": r.polytopes,
                     "seconds": f"{r.seconds:.2g}"})
    budget = ", ".join(f"{k}={v}" for k, v in options.items() if k in ("time_limit",
                                                                        "max_polytopes"))
    return {"rows": rows, "budget": budget or "none",
            "unknown": sum(r["status"] == "unknown" for r in rows)}


# ---------------------------------------------------------------- profiles


def _profiles(explanation, table, n, output, score, figures) -> list[dict]:
    net, box = explanation.network, explanation.domain
    widths = _widths(explanation)
    scale = np.where(widths > 0, widths, 1.0)
    threshold = _threshold(net)
    from polytrav.interface.plot.profile import top_features

    out = []
    for r in table.regions[:n]:
        positions = [int(p) for p in r.rows]
        X = explanation.data[positions] / scale
        pick = positions[int(np.argmin(((X - X.mean(axis=0)) ** 2).sum(axis=1)))]
        x = explanation.data[pick]
        idx = top_features(net, x, min(PROFILE_FEATURES, net.n_inputs), output, scale=widths)
        out.append({"region": r.id, "count": r.count,
                    "row": str(explanation.index[pick]),
                    "features": [explanation.features[j] for j in idx],
                    "figure": profile_figure(net, x, box, idx, figures, f"profile-region-{r.id}",
                                             output=output, names=list(explanation.features),
                                             threshold=threshold, ylabel=score)})
    return out
