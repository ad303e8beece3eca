"""Solver backends side by side: the same traversal and analyses with every installed backend.

Traversals: for each case the script runs the default traversal once per LP backend (median
of ``--repeats`` runs), and prints time, LPs solved, polytopes, whether the polytope set
equals the HiGHS set, and the speed ratio of the default backend (``highs``) to each other
backend. Analyses (``--analyses``): the counterfactual of the region's centre with every LP
backend (L1 norm, LPs) and every QP backend (L2 norm, QPs), each backend alone serving its
form, with subproblem solves, time and agreement with the default backend's distance. A
backend that exceeds ``--limit`` seconds is stopped and marked.

    python benchmarks/solvers.py                      # grid, ACAS Xu 1_1 r=0.005, mnist2x10 eps 0.01
    python benchmarks/solvers.py --cases grid --repeats 3 --analyses
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from traversal import case  # noqa: E402

from polytrav import analyze, available_solvers, traverse  # noqa: E402
from polytrav.plugins.counterfactual import Counterfactual  # noqa: E402


def run(net, region, solver, limit):
    t0 = time.perf_counter()
    tr = traverse(net, region, solver=solver, time_limit=limit, strategy="hierarchical")
    keys = {p.key for p in tr}
    return time.perf_counter() - t0, tr, keys


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", nargs="+", default=["grid", "acas_0.005", "mnist_0.01"])
    ap.add_argument("--solvers", nargs="+", default=None, help="default: every installed LP backend")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--limit", type=float, default=300.0)
    ap.add_argument("--out", default=str(ROOT / "results" / "solvers.json"))
    ap.add_argument("--analyses", action="store_true", help="compare backends on analyses only")
    args = ap.parse_args()
    if args.analyses:
        return compare_analyses(args)
    solvers = args.solvers or available_solvers("lp")
    rows = []
    for name in args.cases:
        net, region = case(name)
        ref_keys, ref_time = None, None
        for solver in solvers:
            times, tr, keys = [], None, None
            for _ in range(args.repeats):
                el, tr, keys = run(net, region, solver, args.limit)
                times.append(el)
                if not tr.complete:
                    break
            med = statistics.median(times)
            if solver == "highs":
                ref_keys, ref_time = keys, med
            row = {"case": name, "solver": solver, "seconds": med, "status": str(tr.status),
                   "lps": tr.stats.lps, "polytopes": len(keys),
                   "same_set_as_highs": None if ref_keys is None else keys == ref_keys,
                   "highs_speedup": None if ref_time is None else med / ref_time}
            rows.append(row)
            print(json.dumps(row), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"command": " ".join(sys.argv), "rows": rows}, indent=2))
    print("\n| case | backend | status | polytopes | LPs | median s | same set as highs | highs is faster by |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        same = "-" if r["same_set_as_highs"] is None else ("yes" if r["same_set_as_highs"] else "NO")
        ratio = "-" if r["highs_speedup"] is None else f"{r['highs_speedup']:.1f}x"
        print(f"| {r['case']} | {r['solver']} | {r['status']} | {r['polytopes']} | {r['lps']} | "
              f"{r['seconds']:.3f} | {same} | {ratio} |")


def compare_analyses(args) -> None:
    """Counterfactual (L1: LPs, L2: QPs) of the region's centre, one backend at a time."""
    rows = []
    for name in args.cases:
        net, region = case(name)
        lo, hi = region.bounding_box()
        x0 = (lo + hi) / 2
        for norm, form in ((1, "lp"), (2, "qp")):
            ref = None
            for solver in args.solvers or available_solvers(form):
                times, report = [], None
                for _ in range(args.repeats):
                    t0 = time.perf_counter()
                    report = analyze(net, region, Counterfactual(x0, norm=norm),
                                     solver={form: [solver]}, time_limit=args.limit,
                                     strategy="hierarchical")
                    times.append(time.perf_counter() - t0)
                res = report[0]
                med = statistics.median(times)
                if ref is None:
                    ref = (res.value, med)
                agree = (res.value is None and ref[0] is None) or (
                    res.value is not None and ref[0] is not None
                    and abs(res.value - ref[0]) <= 1e-6 * max(1.0, abs(ref[0])))
                row = {"case": name, "norm": norm, "solver": solver, "seconds": med,
                       "status": str(report.status), "exact": res.exact,
                       "solves": res.n_solves, "distance": res.value, "agrees": agree,
                       "default_speedup": med / ref[1]}
                rows.append(row)
                print(json.dumps(row), flush=True)
    out = Path(args.out).with_name("solvers_analyses.json")
    out.write_text(json.dumps({"command": " ".join(sys.argv), "rows": rows}, indent=2))
    print("\n| case | norm | backend | exact | solves | median s | distance agrees | default is faster by |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['case']} | L{r['norm']} | {r['solver']} | {'yes' if r['exact'] else 'NO'} | "
              f"{r['solves']} | {r['seconds']:.3f} | {'yes' if r['agrees'] else 'NO'} | "
              f"{r['default_speedup']:.1f}x |")


if __name__ == "__main__":
    main()
