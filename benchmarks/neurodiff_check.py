"""Independent checks of NeuroDiff's benchmark (issue 62): the largest ``|g_0 - f_0|`` over each
property's box, with no polytrav bound or traversal in the loop.

For each ACAS Xu network ``f`` and its 16-bit copy ``g`` (the artifact's files, read as
``benchmarks/neurodiff.py`` reads them) and each property box:

* **dense sampling**, everywhere: ``--samples`` uniform points of the box plus its corners
  give the largest ``|g_0 - f_0|`` seen, a lower bound on the true largest (an "holds" at an
  ``eps`` below it would be wrong);
* **a MILP of both networks** (:func:`polytrav.testing.milp.milp_max_linear` on their stack
  with the input shared: scipy/HiGHS, big-M from interval bounds), on the smaller boxes
  (``--milp-props``, default 3 and 4): its dual bound on ``max ±(g_0 - f_0)``, with
  ``--milp-limit`` seconds per sign, is an upper bound on the true largest; an "holds" at an
  ``eps`` above it is confirmed. A MILP stopped by its limit reports its bound all the same
  (``status`` says so).

    python benchmarks/neurodiff_check.py --neurodiff ../scratch/NeuroDiff/DiffNN-Code \\
        --out benchmarks/results/neurodiff_check.json
    python benchmarks/neurodiff_check.py --neurodiff ... --nets 1_1 3_9 --props 3 4

Each row: network, property, the sampled largest, the MILP's bound and best point (where
run) and which of the paper's epsilons each confirms (``confirmed``: the MILP's bound is at
most ``eps``; ``refuted``: a sample is above it).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from itertools import product
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import neurodiff as nd  # noqa: E402

EPSILONS = (0.05, 0.01)
CHUNK = 200_000


def sampled_largest(f, g, lo, hi, samples: int, seed: int = 0) -> float:
    """The largest ``|g_0 - f_0|`` over ``samples`` uniform points of the box and its corners."""
    rng = np.random.default_rng(seed)
    free = np.flatnonzero(hi > lo)
    corners = np.tile(lo, (2 ** len(free), 1))
    corners[:, free] = [[hi[i] if bit else lo[i] for i, bit in zip(free, bits)]
                        for bits in product((0, 1), repeat=len(free))]
    best = float(np.abs(g.forward(corners)[:, 0] - f.forward(corners)[:, 0]).max())
    for start in range(0, samples, CHUNK):
        X = rng.uniform(lo, hi, (min(CHUNK, samples - start), lo.shape[0]))
        best = max(best, float(np.abs(g.forward(X)[:, 0] - f.forward(X)[:, 0]).max()))
    return best


def milp_largest(f, g, lo, hi, limit: float) -> dict:
    """The MILP's largest ``±(g_0 - f_0)`` over the box: its best value and dual bound."""
    from polytrav import Network
    from polytrav.testing.milp import milp_max_linear

    n, m = f.n_inputs, f.n_outputs
    stack = Network.stack([f, g]).compose_input(np.vstack([np.eye(n), np.eye(n)]),
                                                np.zeros(2 * n))
    row = np.zeros(2 * m)
    row[0], row[m] = -1.0, 1.0
    t = time.perf_counter()
    runs = [milp_max_linear(stack, s * row, lo, hi, time_limit=limit, bounds="lp")
            for s in (1.0, -1.0)]
    bound = max(float(r.bound) if np.isfinite(r.bound) else np.inf for r in runs)
    return {"milp_value": max(float(r.value) for r in runs), "milp_bound": bound,
            "milp_status": [r.status for r in runs], "milp_seconds": time.perf_counter() - t}


def check(neurodiff: Path, net: str, prop: int, samples: int, milp_limit: float | None
          ) -> dict:
    f, g, box = nd.query(neurodiff, net, prop)
    lo, hi = np.asarray(box.lower, float), np.asarray(box.upper, float)
    t = time.perf_counter()
    row = {"net": net, "prop": prop, "samples": samples,
           "sampled": sampled_largest(f, g, lo, hi, samples)}
    row["sample_seconds"] = time.perf_counter() - t
    if milp_limit is not None:
        row.update(milp_largest(f, g, lo, hi, milp_limit))
    row["confirmed"] = [e for e in EPSILONS if row.get("milp_bound", np.inf) <= e]
    row["refuted"] = [e for e in EPSILONS if row["sampled"] > e]
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--neurodiff", type=Path, required=True,
                    help="the artifact's DiffNN-Code folder (its nnet/ and compressed_nnets/)")
    ap.add_argument("--nets", nargs="*", default=nd.NETS)
    ap.add_argument("--props", nargs="*", type=int, default=[1, 3, 4])
    ap.add_argument("--milp-props", nargs="*", type=int, default=[3, 4])
    ap.add_argument("--milp-limit", type=float, default=120.0, help="seconds per MILP (sign)")
    ap.add_argument("--samples", type=int, default=1_000_000)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    if not (args.neurodiff / "nnet").is_dir():
        print(f"neurodiff_check: {args.neurodiff} has no nnet/ folder; pass the artifact's "
              "DiffNN-Code folder with --neurodiff", file=sys.stderr)
        return 2
    rows = []
    for prop, net in product(args.props, args.nets):
        limit = args.milp_limit if prop in args.milp_props else None
        rows.append(check(args.neurodiff, net, prop, args.samples, limit))
        print(json.dumps(rows[-1]), flush=True)
    refuted = [r for r in rows if r["refuted"]]
    summary = {"rows": len(rows), "largest_sampled": max(r["sampled"] for r in rows),
               "milp_rows": sum("milp_bound" in r for r in rows),
               "confirmed_at_0.01": sum(0.01 in r["confirmed"] for r in rows),
               "refuted": [(r["net"], r["prop"], r["refuted"]) for r in refuted]}
    print(json.dumps(summary))
    if args.out:
        args.out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
