"""Solver backends side by side: the same traversal and analyses with every installed backend.

Traversals: for each case the default traversal once per LP backend (one warm-up call per
backend, discarded, then the median of ``--repeats`` calls), with time, LPs solved,
polytopes, whether the polytope set equals the HiGHS set, and the ratio of each backend's
time to the default backend's (``highs``). Analyses (``--analyses``): the counterfactual of
the region's centre with every LP backend (L1 norm, LPs) and every QP backend (L2 norm, QPs),
each backend alone serving its form, with subproblem solves, time and agreement with the
first backend's distance. A backend that exceeds ``--limit`` seconds is stopped, marked and
not run again.

    python benchmarks/solvers.py                      # grid, ACAS Xu 1_1 r=0.005, mnist2x10 eps 0.01
    python benchmarks/solvers.py --cases grid --repeats 3 --analyses
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import ROOT, Run, case, measure, parser  # noqa: E402

from polytrav import analyze, available_solvers, traverse  # noqa: E402
from polytrav.plugins.counterfactual import Counterfactual  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "solvers.json"


def main() -> None:
    ap = parser(__doc__, cases=["grid", "acas_0.005", "mnist_0.01"], repeats=3, out=OUT)
    ap.add_argument("--solvers", nargs="+", default=None, help="default: every installed backend")
    ap.add_argument("--limit", type=float, default=300.0)
    ap.add_argument("--analyses", action="store_true", help="compare backends on analyses only")
    args = ap.parse_args()
    if args.analyses:
        return compare_analyses(args)
    run = Run("solvers", args)
    for name in args.cases:
        net, region = case(name)
        ref = None
        for solver in args.solvers or available_solvers("lp"):
            def go(solver=solver):
                tr = traverse(net, region, solver=solver, time_limit=args.limit, strategy="hierarchical")
                return tr, {p.key for p in tr}

            t = measure(go, args.repeats, args.warmup, slow=0.9 * args.limit)
            tr, keys = t.result
            if ref is None:  # the first backend is the reference (highs, the default)
                ref = (solver, keys, t.median)
            run.add({"case": name, "solver": solver, **t.fields(), "status": str(tr.status),
                     "lps": tr.stats.lps, "polytopes": len(keys), "reference": ref[0],
                     "same_set": keys == ref[1], "over_reference": t.median / ref[2]})
    run.write(args.out)
    print(f"\n| case | backend | status | polytopes | LPs | median s ({args.repeats} runs) | "
          "same set as the default | time / default's |")
    print("|---|---|---|---|---|---|---|---|")
    for r in run.rows:
        print(f"| {r['case']} | {r['solver']} | {r['status']} | {r['polytopes']} | {r['lps']} | "
              f"{r['median']:.3f} | {'yes' if r['same_set'] else 'NO'} | {r['over_reference']:.2f} |")


def compare_analyses(args) -> None:
    """Counterfactual (L1: LPs, L2: QPs) of the region's centre, one backend at a time."""
    run = Run("solvers_analyses", args)
    for name in args.cases:
        net, region = case(name)
        lo, hi = region.bounding_box()
        x0 = (lo + hi) / 2
        for norm, form in ((1, "lp"), (2, "qp")):
            ref = None
            for solver in args.solvers or available_solvers(form):
                t = measure(lambda solver=solver, form=form, norm=norm: analyze(
                    net, region, Counterfactual(x0, norm=norm), solver={form: [solver]},
                    time_limit=args.limit, strategy="hierarchical"),
                    args.repeats, args.warmup, slow=0.9 * args.limit)
                report = t.result
                res = report[0]
                if ref is None:
                    ref = (res.value, t.median)
                agree = (res.value is None and ref[0] is None) or (
                    res.value is not None and ref[0] is not None
                    and abs(res.value - ref[0]) <= 1e-6 * max(1.0, abs(ref[0])))
                run.add({"case": name, "norm": norm, "solver": solver, **t.fields(),
                         "status": str(report.status), "exact": res.exact,
                         "solves": res.n_solves, "distance": res.value, "agrees": agree,
                         "over_reference": t.median / ref[1]})
    run.write(None if args.out is None else Path(args.out).with_name("solvers_analyses.json"))
    print("\n| case | norm | backend | exact | solves | median s | distance agrees | time / first backend's |")
    print("|---|---|---|---|---|---|---|---|")
    for r in run.rows:
        print(f"| {r['case']} | L{r['norm']} | {r['solver']} | {'yes' if r['exact'] else 'NO'} | "
              f"{r['solves']} | {r['median']:.3f} | {'yes' if r['agrees'] else 'NO'} | "
              f"{r['over_reference']:.2f} |")


if __name__ == "__main__":
    main()
