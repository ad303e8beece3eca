"""Memory of a streaming traversal: bytes per visited polytope at 10^5 and 10^6 polytopes.

A synthetic network (``--inputs`` random inputs, default 3; ``--widths``, default two hidden
layers of 140 random neurons: more than 10^6 polytopes in [-1, 1]^3) is traversed with a polytope budget, the consumer only counting
the polytopes (streaming). Each budget runs in a fresh process, which reports its peak
resident memory (``ru_maxrss``) and its resident memory after the first polytope (imports,
solver, network: the fixed cost). Bytes per polytope = (peak - fixed) / polytopes.

    python benchmarks/memory.py --out benchmarks/results/memory.json
    python benchmarks/memory.py --budgets 100000 --widths 60 60     # quick look
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import Run, parser  # noqa: E402

CHILD = """
import json, resource, sys, time
import numpy as np
from polytrav import Box, Network, traverse

widths, budget, seed, d = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(seed)
sizes = [d, *widths, 1]
net = Network.from_arrays([rng.standard_normal((sizes[k + 1], sizes[k])) for k in range(len(sizes) - 1)],
                          [0.5 * rng.standard_normal(sizes[k + 1]) for k in range(len(sizes) - 1)])
rss = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
t0 = time.perf_counter()
run = traverse(net, Box(-np.ones(d), np.ones(d)), max_polytopes=budget, strategy="hierarchical")
n, fixed = 0, None
for polytope in run:
    n += 1
    if fixed is None:
        fixed = rss()
print(json.dumps({"polytopes": n, "status": run.status.value, "seconds": time.perf_counter() - t0,
                  "fixed_bytes": fixed, "peak_bytes": rss(), "pieces": run.stats.pieces,
                  "lps": run.stats.lps}))
"""


def main() -> int:
    ap = parser(__doc__.split("\n")[0], repeats=None)
    ap.add_argument("--inputs", type=int, default=3, help="input dimension")
    ap.add_argument("--widths", nargs="+", type=int, default=[140, 140])
    ap.add_argument("--budgets", nargs="+", type=int, default=[100_000, 1_000_000])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    run = Run("memory", args, quiet=True)
    for budget in args.budgets:
        out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(args.widths), str(budget),
                              str(args.seed), str(args.inputs)], capture_output=True, text=True, check=True)
        rec = json.loads(out.stdout.strip().splitlines()[-1])
        rec = run.add({"case": f"random {args.inputs}-{'-'.join(map(str, args.widths))}-1",
                       "budget": budget, "repeats": 1, "warmup": 0, "times": [rec["seconds"]],
                       "median": rec["seconds"], **rec,
                       "bytes_per_polytope": (rec["peak_bytes"] - rec["fixed_bytes"]) / max(rec["polytopes"], 1)})
        print(f"{rec['polytopes']:>9} polytopes ({rec['status']}, {rec['seconds']:.0f} s): peak "
              f"{rec['peak_bytes'] / 2**20:.0f} MiB, fixed {rec['fixed_bytes'] / 2**20:.0f} MiB, "
              f"{rec['bytes_per_polytope']:.0f} bytes per polytope", flush=True)
        run.write(args.out)  # after every budget: a long run keeps what it measured
    return 0


if __name__ == "__main__":
    sys.exit(main())
