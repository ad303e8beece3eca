"""Traversal speed: the default strategy against the paper-faithful baseline, same run.

Cases (issue 2): (a) the 2-20-1 grid net over [-1, 1]^2; (b) ACAS Xu 1_1 over boxes of
half-width 0.005 and 0.01 around c (normalised inputs); (c) MNIST ``mnist2x10.onnx`` around the
first test image, L-inf eps 0.01 and 0.05 intersected with [0, 1].

For each case: the median of ``--repeats`` runs of each fast strategy, one run of
``seed-faithful`` (with ``--baseline-limit`` seconds; a capped baseline is compared by rate
and marked), a check that the polytope sets are identical, LPs per polytope, facets per
polytope (LPs on a sample of polytopes), and the traversal's own memory per visited polytope
(tracemalloc peak of a streaming run, polytopes not kept).

    python benchmarks/traversal.py                       # all cases, writes benchmarks/results/traversal.json
    python benchmarks/traversal.py --cases grid acas_0.005 --repeats 3
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
from scipy.optimize import linprog

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT / "tests" / "support"))

from reference import train_grid_net  # noqa: E402

from polytrav import Ball, Box, Network, traverse  # noqa: E402

ACAS_C = np.array([-0.301041984, 0.0, 0.496690162, 0.4, 0.4])


def case(name: str):
    """``(network, region)`` of a named case."""
    if name == "grid":
        return train_grid_net([20]), Box([-1.0, -1.0], [1.0, 1.0])
    if name.startswith("acas_"):
        r = float(name.split("_")[1])
        net = Network.from_onnx(DATA / "acasxu/onnx/ACASXU_run2a_1_1_batch_2000.onnx")
        return net, Box(ACAS_C - r, ACAS_C + r)
    if name.startswith("mnist_"):
        eps = float(name.split("_")[1])
        net = Network.from_onnx(DATA / "mnist/mnist2x10.onnx")
        x0 = np.load(DATA / "mnist/mnist_test.npz")["images"][0].reshape(-1) / 255.0
        return net, Ball(x0, eps, norm="inf") & Box(0.0, 1.0)
    raise SystemExit(f"unknown case {name!r}")


def run_once(net, region, strategy, time_limit=None):
    t0 = time.perf_counter()
    run = traverse(net, region, strategy=strategy, time_limit=time_limit)
    keys = [p.key for p in run]
    return time.perf_counter() - t0, run, keys


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


def bench(name: str, repeats: int, baseline_limit: float, facet_sample: int) -> dict:
    net, region = case(name)
    fast_times, run, keys = [], None, None
    for _ in range(repeats):
        el, run, keys = run_once(net, region, "hierarchical")
        fast_times.append(el)
    assert run.complete, run.status
    fast = statistics.median(fast_times)
    el_b, run_b, keys_b = run_once(net, region, "seed-faithful", time_limit=baseline_limit)
    baseline_complete = run_b.complete
    if baseline_complete:
        identical = set(keys) == set(keys_b) and len(keys_b) == len(keys)
        ratio = el_b / fast
    else:
        identical = set(keys_b) <= set(keys)
        ratio = (el_b / max(len(keys_b), 1)) / (fast / len(keys))
    rng = np.random.default_rng(0)
    polys = list(traverse(net, region, strategy="hierarchical"))
    sample = [polys[i] for i in rng.choice(len(polys), min(facet_sample, len(polys)), replace=False)]
    out = {
        "case": name,
        "network": repr(net),
        "polytopes": run.stats.polytopes,
        "seconds_median": fast,
        "seconds_all": fast_times,
        "polytopes_per_s": run.stats.polytopes / fast,
        "lps_per_polytope": run.stats.lps_per_polytope,
        "facets_per_polytope": facets_per_polytope(net, region, sample),
        "flips_ruled_out_by_vertices": run.stats.flips_vertex,
        "lp_seconds": run.stats.lp_time,
        "bytes_per_polytope": memory_per_polytope(net, region),
        "baseline_seconds": el_b,
        "baseline_complete": baseline_complete,
        "baseline_polytopes": len(keys_b),
        "baseline_lps": run_b.stats.lps,
        "identical_sets": identical,
        "speedup_vs_seed_faithful": ratio,
    }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", nargs="+",
                    default=["grid", "acas_0.005", "acas_0.01", "mnist_0.01", "mnist_0.05"])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--baseline-limit", type=float, default=600.0)
    ap.add_argument("--facet-sample", type=int, default=30)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "traversal.json"))
    args = ap.parse_args()
    results = []
    for name in args.cases:
        r = bench(name, args.repeats, args.baseline_limit, args.facet_sample)
        results.append(r)
        print(json.dumps(r, default=float), flush=True)
    meta = {"machine": platform.platform(), "python": platform.python_version(),
            "processor": platform.processor(), "command": " ".join(sys.argv)}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"meta": meta, "results": results}, indent=2, default=float))
    print("\n| case | polytopes | median s | polytopes/s | LPs/polytope | facets/polytope | B/polytope | seed-faithful s | identical | speed-up |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        fpp = "n/a" if r["facets_per_polytope"] is None else f"{r['facets_per_polytope']:.1f}"
        capped = "" if r["baseline_complete"] else " (capped, by rate)"
        print(f"| {r['case']} | {r['polytopes']} | {r['seconds_median']:.3f} | {r['polytopes_per_s']:.0f} | "
              f"{r['lps_per_polytope']:.2f} | {fpp} | {r['bytes_per_polytope']:.0f} | "
              f"{r['baseline_seconds']:.1f}{capped} | {r['identical_sets']} | {r['speedup_vs_seed_faithful']:.1f}x |")


if __name__ == "__main__":
    main()
