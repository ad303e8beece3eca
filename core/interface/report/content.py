"""What the report says, as plain data for its templates: the model card, the applicants,
the dataset's summaries and any extra tables. Every number carries its status: ``exact``
(proven), ``bound`` (an upper bound: a point was found, its minimality not proven) or
``unknown``. A partial explanation (a run stopped by Ctrl-C) is marked at the top: which
rows were explained and which were not, and the sections left out."""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np

from polytrav.interface.report.figure import COLOURS, distance_histogram
from polytrav.interface.report.model_sections import model_sections
from polytrav.vocabulary.errors import ConfigError
from polytrav.vocabulary.tolerances import CHANGE_TOL, GRID_VALUE_RTOL

__all__ = ["MAX_TABLE_ROWS", "STATUSES", "report_content"]

#: The statuses of the report's numbers, as its legend explains them.
STATUSES = {
    "exact": "proven over the whole region asked (an exact traversal, a MILP's dual bound "
             "to the solver's tolerances, or a forward pass of the network)",
    "bound": "an upper bound: a point with this value was found and checked, but no proof "
             "that none is nearer (a budget stopped the search)",
    "unknown": "no number: the analysis failed or found no point before its budget",
}

#: Rows of an extra table shown (the rest is counted).
MAX_TABLE_ROWS = 200
#: Runs of consecutive rows named in the partial report's lists (the rest are counted).
MAX_SPANS = 20
#: The report's sections that a caller may leave out with a reason (``left_out``).
SECTION_TITLES = {"regions": "the region table", "profiles": "the profile plots",
                  "monotonicity": "the monotonicity table"}


def report_content(explanation, *, max_rows: int, title: str | None, tables: dict,
                   figures, regions, monotonicity, profiles, left_out: dict | None = None) -> dict:
    """The templates' context: ``title``, ``generated``, ``statuses``, ``colours``,
    ``partial`` (None, or which rows were explained and which not), ``left_out`` (sections
    left out and why: ``{"monotonicity": why}``, keys of :data:`SECTION_TITLES`), ``model``,
    ``counterfactuals`` / ``local_models`` (their labels), ``applicants``, ``omitted``,
    ``dataset``, ``sections`` (regions, monotonicity, profiles: see
    :func:`~polytrav.interface.report.model_sections.model_sections`) and ``tables``."""
    cf = _labels(explanation, "counterfactual")
    lm = _labels(explanation, "local_model")
    steps = _resolutions(explanation)
    rows = [_applicant(explanation, r, cf, lm, steps) for r in explanation.rows]
    shown = [a for i, a in enumerate(rows) if i < max_rows]
    unknown = [a for i, a in enumerate(rows) if i >= max_rows and a["unknown"]]
    shown += unknown[:10 * max(max_rows, 1)]
    unexpected = sorted(set(left_out or {}) - set(SECTION_TITLES))
    if unexpected:
        raise ConfigError(f"report: left_out names sections {unexpected}; known: "
                          f"{sorted(SECTION_TITLES)}")
    partial = _partial(explanation)
    title = title or "Model validation report"
    return {
        "title": title if partial is None else
        f"{title} (PARTIAL: {partial['done']} of {partial['total']} rows explained)",
        "partial": partial,
        "left_out": {key: {"title": SECTION_TITLES[key], "why": why}
                     for key, why in (left_out or {}).items()},
        "generated": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "statuses": STATUSES, "colours": COLOURS,
        "model": _model_card(explanation),
        "counterfactuals": cf, "local_models": lm,
        "applicants": shown, "omitted": len(rows) - len(shown), "n_rows": len(rows),
        "dataset": _dataset(explanation, rows, cf, figures, steps),
        "sections": model_sections(
            explanation, regions=False if "regions" in (left_out or {}) else regions,
            monotonicity=False if "monotonicity" in (left_out or {}) else monotonicity,
            profiles=False if "profiles" in (left_out or {}) else profiles, figures=figures,
            number=_number),
        "tables": [_table(name, obj) for name, obj in tables.items()],
    }


def _labels(explanation, name: str) -> list[str]:
    """The labels of the analyses of that registered name, in the given order."""
    return [label for label, (n, _) in explanation.analyses.items() if n == name]


def _number(value, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


# ---------------------------------------------------------------- a partial run


def _partial(explanation) -> dict | None:
    """Which rows were explained and which not, for a partial explanation (else None)."""
    if not getattr(explanation, "partial", False):
        return None
    done = sorted(r.position for r in explanation.rows)
    missing = explanation.missing_positions
    return {"done": len(done), "missing": len(missing), "total": len(explanation.index),
            "why": "The run was interrupted (Ctrl-C)" if explanation.interrupted
            else "The run stopped",
            "done_rows": _spans(done, explanation.index),
            "missing_rows": _spans(missing, explanation.index)}


def _spans(positions: list[int], index: list) -> str:
    """Sorted positions as runs of consecutive rows by their labels: ``c0 … c2, c7``."""
    runs: list[list[int]] = []
    for p in positions:
        if runs and p == runs[-1][1] + 1:
            runs[-1][1] = p
        else:
            runs.append([p, p])
    text = [str(index[a]) if a == b else f"{index[a]} … {index[b]} ({b - a + 1} rows)"
            for a, b in runs[:MAX_SPANS]]
    if len(runs) > MAX_SPANS:
        rest = sum(b - a + 1 for a, b in runs[MAX_SPANS:])
        text.append(f"and {rest} more rows")
    return ", ".join(text) or "none"


# ---------------------------------------------------------------- the model card


def _model_card(explanation) -> dict:
    net, box = explanation.network, explanation.domain
    features = explanation.features or tuple(f"x{j}" for j in range(net.n_inputs if net else 0))
    inputs = [{"name": name,
               "low": _number(float(box.lower[j])) if box is not None else "—",
               "high": _number(float(box.upper[j])) if box is not None else "—"}
              for j, name in enumerate(features)]
    card = {"source": explanation.source or "not given", "inputs": inputs,
            "analyses": [{"label": label, "name": name,
                          "options": ", ".join(f"{k}={v!r}" for k, v in options.items()) or "defaults"}
                         for label, (name, options) in explanation.analyses.items()],
            "rows": len(explanation) if not getattr(explanation, "partial", False) else
            f"{len(explanation)} of {len(explanation.index)} (PARTIAL: interrupted)",
            "wall_time": f"{explanation.wall_time:.3g} s"}
    if net is not None:
        card.update(
            layers=" → ".join(str(n) for n in (net.n_inputs, *net.hidden_sizes, net.n_outputs)),
            neurons=net.n_neurons, link=net.link or "not given",
            classes=", ".join(str(c) for c in net.classes) if net.classes else "not given")
    return card


# ---------------------------------------------------------------- applicants


def _applicant(explanation, row, cf: list[str], lm: list[str], steps: list) -> dict:
    f = row.figures
    reasons = [_reasons(row, label, explanation.features) for label in lm]
    counterfactuals = [_counterfactual(row, label, explanation.features, steps) for label in cf]
    return {"label": str(row.label), "position": row.position,
            "answer": "Decision" if "row.class" in f else "Prediction",
            "decision": ("none (the scores tie)" if "row.class" in f and f["row.class"] is None
                         else _number(f.get("row.class", f.get("row.prediction")))),
            "probability": _number(f.get("row.probability")),
            "error": row.errors.get("row"),
            "unknown": bool(row.errors) or any(r["status"] == "unknown" for r in reasons)
            or any(c["status"] != "exact" for c in counterfactuals),
            "reasons": reasons, "counterfactuals": counterfactuals}


def _reasons(row, lm: str, features) -> dict:
    f = row.figures
    if lm in row.errors:
        return {"label": lm, "status": "unknown", "why": row.errors[lm], "toward": [],
                "away": [], "attributions": []}
    pick = [(k, f[k]) for k in f if k.startswith(f"{lm}.reason.") and f[k]]
    attributions = [{"feature": name, "value": _number(f.get(f"{lm}.attribution.{name}"))}
                    for name in features if f.get(f"{lm}.attribution.{name}") is not None]
    return {"label": lm, "status": "exact" if f.get(f"{lm}.exact") else "unknown", "why": None,
            "toward": [v for k, v in pick if ".toward." in k],
            "away": [v for k, v in pick if ".away." in k], "attributions": attributions}


#: A counterfactual's certificate by its ``proof`` figure.
PROOFS = {
    "milp": "minimal: proven by a MILP (its dual bound, to the solver's tolerances)",
    "branch-and-bound": "minimal: proven by branch and bound over the unstable neurons (QP "
                        "relaxations, certified dual bounds, to 1e-6 relative)",
    None: "minimal: proven by the traversal",
}


def _counterfactual(row, cf: str, features, steps: list) -> dict:
    f = row.figures
    result = row.results.get(cf)
    out = {"label": cf, "status": "unknown", "distance": "—",
           "metric": f.get(f"{cf}.metric") or "",
           "target": _number(f.get(f"{cf}.class")), "probability": _number(f.get(f"{cf}.probability")),
           "changes": [], "small": 0, "certificate": None}
    if cf in row.errors or result is None:
        out["certificate"] = f"unknown: {row.errors.get(cf, 'the analysis did not run')}"
        return out
    found, exact = bool(f.get(f"{cf}.found")), bool(f.get(f"{cf}.exact"))
    if exact and not found:
        out.update(status="exact", certificate="no input of another class exists in the row's "
                   "region: proven by the traversal")
        return out
    out["distance"] = _number(f.get(f"{cf}.distance"))
    for name, step in zip(features, steps):
        change = f.get(f"{cf}.change.{name}")
        if change is None or not _changed(change, step.width):
            continue  # none, or the solver's rounding
        if not step.counts(change):
            out["small"] += 1  # below the data's resolution: not a change a person makes
            continue
        to = f.get(f"{cf}.x.{name}")
        out["changes"].append({"feature": name, "from": step.show(to - change),
                               "to": step.show(to, 1), "change": step.show(change, 1, sign=True)})
    if exact:
        out.update(status="exact", certificate=PROOFS.get(f.get(f"{cf}.proof"), PROOFS[None]))
    else:
        out.update(status="bound" if found else "unknown",
                   certificate=f"unknown: {_why_unknown(result)}")
    return out


@dataclass(frozen=True)
class Resolution:
    """A feature's resolution in the data: its values are whole multiples of ``10**-decimals``
    (``decimals`` None: no such step up to :data:`MAX_DECIMALS`; then a change counts past
    ``CHANGE_TOL`` of the domain ``width``)."""

    decimals: int | None
    width: float

    def counts(self, change: float) -> bool:
        """Whether a counterfactual's change is one at the data's resolution: at least half
        its step (it survives rounding to the data's decimals)."""
        if self.decimals is None:
            return abs(change) > CHANGE_TOL * max(self.width, 1.0)
        return abs(change) >= 0.5 * 10.0 ** -self.decimals

    def show(self, value: float, extra: int = 0, sign: bool = False) -> str:
        """``value`` at the data's decimals (plus ``extra``), else 4 significant digits."""
        if self.decimals is None:
            return f"{value:+.4g}" if sign else _number(float(value))
        return f"{value:{'+' if sign else ''}.{self.decimals + extra}f}"

    def words(self) -> str:
        return "—" if self.decimals is None else f"{10.0 ** -self.decimals:g}"


#: Most decimals a feature's resolution is looked for with (finer data has none).
MAX_DECIMALS = 6


def _resolutions(explanation) -> list[Resolution]:
    """Each feature's :class:`Resolution` over the explanation's rows."""
    data = explanation.data
    out = []
    for j, width in enumerate(_widths(explanation)):
        v = np.asarray([] if data is None else data[:, j], float)
        v = v[np.isfinite(v)]
        decimals = None
        for k in range(MAX_DECIMALS + 1):
            scaled = v * 10.0 ** k
            if v.size and np.all(np.abs(scaled - np.round(scaled))
                                 <= GRID_VALUE_RTOL * np.maximum(1.0, np.abs(scaled))):
                decimals = k
                break
        out.append(Resolution(decimals, width))
    return out


def _changed(change: float, width: float = 1.0) -> bool:
    """Whether an immutable feature changed at all (``CHANGE_TOL`` of its domain width)."""
    return abs(change) > CHANGE_TOL * max(width, 1.0)


def _why_unknown(result) -> str:
    """Why a counterfactual was left unproven, from its result."""
    if result.failures:
        return (f"{len(result.failures)} subproblem(s) undecided by every solver "
                f"(e.g. {result.failures[0]})")
    kind = "the distance is the found point's (an upper bound)" if result.witness is not None \
        else "no point of the other decision found"
    return (f"the search stopped at its budget (time_limit / max_polytopes) after "
            f"{result.n_polytopes} polytope(s); {kind}")


# ---------------------------------------------------------------- the dataset


def _dataset(explanation, rows: list[dict], cf: list[str], figures, steps: list) -> dict:
    """The classes, the rows left unknown and why, and one summary per counterfactual."""
    return {"classes": _class_counts(explanation),
            "unknown": [{"label": a["label"], "why": _row_why(a)} for a in rows if a["unknown"]],
            "counterfactuals": [_distances(explanation, label, figures, steps) for label in cf]}


#: The norms of the metrics, in formulas.
_SUMS = {"L1": "Σ_j |x_j − x0_j| / s_j", "L2": "√(Σ_j ((x_j − x0_j) / s_j)²)",
         "L∞": "max_j |x_j − x0_j| / s_j"}
#: The scales of the metrics, in words.
_SCALES = {
    "MAD": "feature j's median absolute deviation over the report's rows, "
           "median(|x_j − median(x_j)|) (without the normal-consistency factor 1.4826)",
    "std": "feature j's standard deviation over the report's rows",
    "range": "feature j's range over the report's rows (maximum − minimum)",
    "given scales": "the unit given for feature j"}


def _definition(metric: str) -> str | None:
    """The metric in a sentence: its formula and what ``s_j`` is (None: unscaled units)."""
    norm = metric.split(" ")[0]
    if "scaled by" not in metric or norm not in _SUMS:
        return None
    kind = next((k for k in _SCALES if f"scaled by {k}" in metric), "given scales")
    return (f"{metric}: the distance from the row x0 to a point x is {_SUMS[norm]}, where s_j "
            f"is {_SCALES[kind]}; the parenthesis names what replaced a scale of 0. A distance "
            f"of 1 is a change of one such unit in one feature. The units are listed below.")


def _units(explanation, cf: str) -> list[float] | None:
    """The per-feature units a row's counterfactual measured its distance in."""
    for r in explanation.rows:
        result = r.results.get(cf)
        unit = None if result is None else result.details.get("scale")
        if unit is not None:
            return [float(u) for u in unit]
    return None


def _distances(explanation, cf: str, figures, steps: list) -> dict:
    """One counterfactual over the rows: the distances' histogram, its metric defined with
    each feature's unit, how often each feature changes (at the data's resolution), the
    immutable features checked."""
    exact, bound, metric = [], [], ""
    for r in explanation.rows:
        d = r.figures.get(f"{cf}.distance")
        if r.figures.get(f"{cf}.found") and d is not None and math.isfinite(d):
            (exact if r.figures.get(f"{cf}.exact") else bound).append(float(d))
            metric = metric or r.figures.get(f"{cf}.metric") or ""
    units = _units(explanation, cf)
    out = {"label": cf, "features": [], "immutable": [],
           "histogram": distance_histogram(exact, bound, metric, figures, f"distances-{cf}"),
           "exact": len(exact), "bound": len(bound), "metric": metric,
           "median": _number(_median(exact + bound)), "definition": _definition(metric),
           "units": [] if units is None else [
               {"feature": name, "unit": _number(u), "resolution": step.words()}
               for name, u, step in zip(explanation.features, units, steps)]}
    found = [r for r in explanation.rows if r.figures.get(f"{cf}.found")]
    widths = dict(zip(explanation.features, _widths(explanation)))
    for name, step in zip(explanation.features, steps):
        changes = [r.figures.get(f"{cf}.change.{name}") for r in found]
        moved = [abs(c) for c in changes if c is not None and step.counts(c)]
        out["features"].append({"feature": name, "rows": len(moved),
                                "share": f"{len(moved) / len(found):.0%}" if found else "—",
                                "median": _number(_median(moved))})
    options = explanation.analyses[cf][1]
    for name in _immutable(options.get("immutable"), explanation.features):
        changed = sum(1 for r in found
                      if _changed(r.figures.get(f"{cf}.change.{name}") or 0.0, widths[name]))
        out["immutable"].append({"feature": name, "changed": changed, "ok": changed == 0})
    return out


def _widths(explanation) -> list[float]:
    """Each feature's domain width (1 where the explanation has no domain)."""
    box = explanation.domain
    if box is None:
        return [1.0] * len(explanation.features)
    return [float(hi - lo) for lo, hi in zip(box.lower, box.upper)]


def _row_why(a: dict) -> str:
    if a["error"]:
        return a["error"]
    parts = [f"{c['label']}: {c['certificate']}" for c in a["counterfactuals"]
             if c["status"] != "exact"]
    parts += [f"{r['label']}: {r['why'] or 'not proven'}" for r in a["reasons"]
              if r["status"] == "unknown"]
    return "; ".join(parts)


def _immutable(spec, features) -> list[str]:
    names = [spec] if isinstance(spec, (str, int)) else list(spec or ())
    return [features[n] if isinstance(n, int) else str(n) for n in names]


def _class_counts(explanation) -> list[dict]:
    counts: dict[str, int] = {}
    for r in explanation.rows:
        if "row.class" in r.figures:
            key = str(r.figures["row.class"])
            counts[key] = counts.get(key, 0) + 1
    return [{"label": k, "rows": v} for k, v in counts.items()]


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


# ---------------------------------------------------------------- extra tables


def _table(name: str, obj) -> dict:
    """Any DataFrame-like (``to_pandas()``, or a DataFrame) as a heading, column names and
    rows of text (the index first)."""
    df = obj.to_pandas() if hasattr(obj, "to_pandas") else obj
    if not hasattr(df, "itertuples"):
        raise ConfigError(f"report table {name!r}: need a DataFrame or an object with "
                        f"to_pandas(), got {type(obj).__name__}")
    index = df.index.name or ""
    columns = [index, *map(str, df.columns)]
    rows = [[_number(v) if isinstance(v, float) else str(v) for v in t]
            for t in df.head(MAX_TABLE_ROWS).itertuples(index=True)]
    return {"name": name, "columns": columns, "rows": rows,
            "omitted": max(len(df) - MAX_TABLE_ROWS, 0)}
