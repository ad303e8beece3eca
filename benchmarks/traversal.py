"""Traversal speed: the default strategy against the paper-faithful baseline, same run.

Cases (issue 2): (a) the 2-20-1 grid net over [-1, 1]^2; (b) ACAS Xu 1_1 over boxes of
half-width 0.005 and 0.01 around c (normalised inputs); (c) MNIST ``mnist2x10.onnx`` around the
first test image, L-inf eps 0.01 and 0.05 intersected with [0, 1].

For each case: the median of ``--repeats`` runs of the default strategy (after ``--warmup``
discarded ones), one run of ``seed-faithful`` (with ``--baseline-limit`` seconds; a capped
baseline is compared by rate and marked), a check that the polytope sets are identical, LPs per polytope, facets per
polytope (LPs on a sample of polytopes), and the traversal's own memory per visited polytope
(tracemalloc peak of a streaming run, polytopes not kept).

    python benchmarks/traversal.py                       # all cases, writes benchmarks/results/traversal.json
    python benchmarks/traversal.py --cases grid acas_0.005 --repeats 3
"""
from __future__ import annotations

import sys
import tracemalloc
from pathlib import Path

import numpy as np
from scipy.optimize import linprog

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import ROOT, Run, case, measure, parser  # noqa: E402

from polytrav import traverse  # noqa: E402


def run_once(net, region, strategy, time_limit=None):
    run = traverse(net, region, strategy=strategy, time_limit=time_limit)
    return run, [p.key for p in run]


def facets_per_polytope(net, region, sample: list, max_rows: int = 400) -> float | None:
    """Mean number of facets (irredundant rows) of polytope ∩ region on sampled polytopes."""
    counts = []
    for p in sample:
        A, b = p.A, p.b
        keep = np.linalg.norm(A, axis=1) > 0
        A, b = A[keep], b[keep]
        if A.shape[0] > max_rows:
            return None
        n = 0
        for i in range(A.shape[0]):
            others = np.delete(np.arange(A.shape[0]), i)
            res = linprog(-A[i], A_ub=A[others], b_ub=b[others], bounds=(None, None), method="highs")
            n += res.status == 0 and -res.fun > b[i] + 1e-9 * (1 + abs(b[i]))
        counts.append(n)
    return float(np.mean(counts))


def memory_per_polytope(net, region) -> float:
    tracemalloc.start()
    run = traverse(net, region, strategy="hierarchical")
    for _ in run:
        pass
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / max(run.stats.polytopes, 1)


def bench(name: str, args) -> dict:
    net, region = case(name)
    fast = measure(lambda: run_once(net, region, "hierarchical"), args.repeats, args.warmup)
    run, keys = fast.result
    assert run.complete, run.status
    base = measure(lambda: run_once(net, region, "seed-faithful", args.baseline_limit), 1, 0)
    run_b, keys_b = base.result
    if run_b.complete:
        identical = set(keys) == set(keys_b) and len(keys_b) == len(keys)
        ratio = base.median / fast.median
    else:
        identical = set(keys_b) <= set(keys)
        ratio = (base.median / max(len(keys_b), 1)) / (fast.median / len(keys))
    rng = np.random.default_rng(0)
    polys = list(traverse(net, region, strategy="hierarchical"))
    sample = [polys[i] for i in rng.choice(len(polys), min(args.facet_sample, len(polys)), replace=False)]
    return {
        "case": name,
        "variant": "hierarchical",
        **fast.fields(),
        "network": repr(net),
        "polytopes": run.stats.polytopes,
        "polytopes_per_s": run.stats.polytopes / fast.median,
        "lps_per_polytope": run.stats.lps_per_polytope,
        "facets_per_polytope": facets_per_polytope(net, region, sample),
        "flips_ruled_out_by_vertices": run.stats.flips_vertex,
        "lp_seconds": run.stats.lp_time,
        "bytes_per_polytope": memory_per_polytope(net, region),
        **base.fields("baseline_"),
        "baseline_complete": run_b.complete,
        "baseline_polytopes": len(keys_b),
        "baseline_lps": run_b.stats.lps,
        "identical_sets": identical,
        "speedup_vs_seed_faithful": ratio,
    }


def main() -> None:
    ap = parser(__doc__, cases=["grid", "acas_0.005", "acas_0.01", "mnist_0.01", "mnist_0.05"],
                repeats=5, out=ROOT / "benchmarks" / "results" / "traversal.json")
    ap.add_argument("--baseline-limit", type=float, default=600.0)
    ap.add_argument("--facet-sample", type=int, default=30)
    args = ap.parse_args()
    run = Run("traversal", args)
    for name in args.cases:
        run.add(bench(name, args))
    run.write(args.out)
    print("\n| case | polytopes | median s | polytopes/s | LPs/polytope | facets/polytope | B/polytope | seed-faithful s | identical | speed-up |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in run.rows:
        fpp = "n/a" if r["facets_per_polytope"] is None else f"{r['facets_per_polytope']:.1f}"
        capped = "" if r["baseline_complete"] else " (capped, by rate)"
        print(f"| {r['case']} | {r['polytopes']} | {r['median']:.3f} | {r['polytopes_per_s']:.0f} | "
              f"{r['lps_per_polytope']:.2f} | {fpp} | {r['bytes_per_polytope']:.0f} | "
              f"{r['baseline_median']:.1f}{capped} | {r['identical_sets']} | {r['speedup_vs_seed_faithful']:.1f}x |")


if __name__ == "__main__":
    main()
