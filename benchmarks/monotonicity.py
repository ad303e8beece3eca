"""ACAS Xu monotonicity with ``Monotonicity(..., stop_at_first=True)`` (issue 26, item 6).

Is output ``--output`` (default 3) non-decreasing in input ``--feature`` (default 0) over a box,
on every ACAS Xu network of ``../shared/data/acasxu/onnx``? Per network: the verdict, the
polytopes visited, the seconds of ``analyze`` (in this process, after the imports and one
untimed warm-up run), and whether the witness pair is re-checked by a plain forward pass
(both points in the box, only the feature differs, the output strictly lower at the larger
feature). At the end: medians, the slowest network, the verdict counts.

Boxes (normalised ACAS Xu inputs): ``wide`` (default) is the issue's query, ``X_0`` in
``[-0.3, 0.6]`` and every other input over its whole normalised range ``[-0.5, 0.5]``;
``prop1`` is the input box of ACAS Xu property 1.

    python benchmarks/monotonicity.py                                   # 45 networks, wide box
    python benchmarks/monotonicity.py --box prop1 --out benchmarks/results/monotonicity_prop1.csv
    python benchmarks/monotonicity.py --networks 1_1 3_3 --full 20       # also without stop_at_first
    python benchmarks/monotonicity.py --centre      # start at the centre, not at the sampled point
"""
from __future__ import annotations

import csv
import re
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import ACAS, Run, measure, parser  # noqa: E402

ONNX = ACAS / "onnx"

BOXES = {
    "wide": ([-0.3, -0.5, -0.5, -0.5, -0.5], [0.6, 0.5, 0.5, 0.5, 0.5]),
    "prop1": ([0.6, -0.5, -0.5, 0.45, -0.5], [0.679857769, 0.5, 0.5, 0.5, -0.45]),
}
FIELDS = ["network", "verdict", "polytopes", "seconds", "pair_checked", "status",
          "full_verdict", "full_polytopes", "full_seconds", "full_status"]


def network_name(path: Path) -> str:
    """``1_1`` from ``ACASXU_run2a_1_1_batch_2000.onnx``."""
    return re.search(r"(\d_\d)_batch", path.name).group(1)


def pair_checked(net, box, res, feature: int, output: int) -> bool:
    """The witness pair, re-checked from scratch by a float64 forward pass."""
    pair = res.details.get("witness_pair")
    if pair is None:
        return False
    x, x2 = (np.asarray(p, float) for p in pair)
    others = np.arange(net.n_inputs) != feature
    return bool(box.contains(x) and box.contains(x2) and x2[feature] > x[feature]
                and np.array_equal(x[others], x2[others])
                and net.forward(x2)[output] < net.forward(x)[output])


def run_one(net, box, feature: int, output: int, stop: bool, time_limit: float | None,
            centre: bool = False, repeats: int = 1, warmup: int = 1):
    """The report of ``analyze`` and its median time (``warmup`` calls discarded)."""
    from polytrav import analyze
    from polytrav.plugins.monotonicity import Monotonicity

    start = (box.lower + box.upper) / 2 if centre else None
    t = measure(lambda: analyze(net, box, Monotonicity(feature, "increasing", output, stop_at_first=stop),
                                time_limit=time_limit, start=start), repeats, warmup, slow=1.0)
    return t.result, t


def main(argv=None) -> int:
    ap = parser(__doc__.splitlines()[0], repeats=1, warmup=1)
    ap.add_argument("--box", choices=sorted(BOXES), default="wide")
    ap.add_argument("--feature", type=int, default=0)
    ap.add_argument("--output", type=int, default=3)
    ap.add_argument("--networks", nargs="*", help="e.g. 1_1 3_3 (default: all 45)")
    ap.add_argument("--time-limit", type=float, default=60.0, help="per run, seconds")
    ap.add_argument("--full", type=float, default=None, metavar="SECONDS",
                    help="also run without stop_at_first, with this time limit")
    ap.add_argument("--centre", action="store_true",
                    help="start every run at the box's centre (not at the sampled point of the "
                         "most violating slope): how far the traversal walks to a violation")
    args = ap.parse_args(argv)
    run = Run("monotonicity", args, argv=argv, quiet=True)

    from polytrav import Box, Network

    box = Box(*(np.array(v) for v in BOXES[args.box]))
    paths = sorted(ONNX.glob("*.onnx"), key=network_name)
    if args.networks:
        paths = [p for p in paths if network_name(p) in args.networks]
    if not paths:
        print(f"no ACAS Xu networks found in {ONNX}", file=sys.stderr)
        return 2
    nets = {network_name(p): Network.from_onnx(p) for p in paths}

    rows = []
    writer = None
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        handle = open(args.out, "w", newline="")
        writer = csv.DictWriter(handle, FIELDS)
        writer.writeheader()
    print(f"box {args.box}: {BOXES[args.box]}; output {args.output} non-decreasing in input "
          f"{args.feature}?")
    for name, net in nets.items():
        rep, t = run_one(net, box, args.feature, args.output, True, args.time_limit,
                         args.centre, args.repeats, args.warmup)
        res = rep[0]
        row = {"network": name, "verdict": res.verdict.value, "polytopes": res.n_polytopes,
               "seconds": round(t.median, 4), "status": rep.status.value,
               "pair_checked": pair_checked(net, box, res, args.feature, args.output)}
        if args.full is not None:  # the baseline: once, no warm-up (seconds at its limit)
            full, ft = run_one(net, box, args.feature, args.output, False, args.full,
                               args.centre, 1, 0)
            row.update(full_verdict=full[0].verdict.value, full_polytopes=full[0].n_polytopes,
                       full_seconds=round(ft.median, 4), full_status=full.status.value)
        rows.append(row)
        run.add({"case": name, **t.fields(), **row})
        print("  ".join(f"{k}={v}" for k, v in row.items()), flush=True)
        if writer:
            writer.writerow(row)
            handle.flush()
    secs = [r["seconds"] for r in rows]
    print(f"\n{len(rows)} networks: verdicts "
          f"{ {v: sum(r['verdict'] == v for r in rows) for v in sorted({r['verdict'] for r in rows})} }, "
          f"pairs re-checked {sum(r['pair_checked'] for r in rows)}/"
          f"{sum(r['verdict'] == 'violated' for r in rows)}")
    print(f"median {statistics.median(secs):.3f} s, mean {statistics.mean(secs):.3f} s, "
          f"max {max(secs):.3f} s ({rows[secs.index(max(secs))]['network']}); "
          f"median polytopes {statistics.median(r['polytopes'] for r in rows)}")
    if args.full is not None:
        fsecs = [r["full_seconds"] for r in rows]
        print(f"without stop_at_first (limit {args.full} s): median {statistics.median(fsecs):.3f} s, "
              f"median polytopes {statistics.median(r['full_polytopes'] for r in rows)}")
    if args.out:
        run.write(args.out.with_suffix(".json"))
    bad = [r for r in rows if r["verdict"] == "violated" and not r["pair_checked"]]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
