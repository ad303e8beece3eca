"""Certified global monotonicity on tabular MLPs: polytrav against a MILP (issue 28, item 3).

Small ReLU MLPs (2x16, 2x32, 2x64) are trained with torch (seed 0, full-batch Adam, 300
steps, weight decay 0.1) on scikit-learn's bundled diabetes data (442 rows, 10 standardised
features, standardised target; ``pip install scikit-learn`` for the data only; the networks
are built with ``Network.from_arrays``). For every network, feature ``j`` and direction: is
the output non-decreasing (non-increasing) in ``x_j`` over the data's box (per feature min
to max)? Answered by

* polytrav: ``analyze(net, Box(lo, hi), Monotonicity(j, direction, stop_at_first=True),
  time_limit=...)`` (slope bounds on pieces, input splitting, a confirmed pair);
* the MILP of :mod:`polytrav.testing.slope_milp` (HiGHS, ``mode="decide"``).

Both verdicts are re-checked here: a ``violated`` one's pair by a float64 forward pass (in the
box, only ``x_j`` differs, ``x'_j > x_j``, the output strictly lower/higher). A ``holds``
against a ``violated`` is a disagreement: printed loudly, exit status 1. Times are medians
over ``--repeat`` runs (in this process, after one untimed warm-up run).

    python benchmarks/tabular_monotonicity.py                 # 3 nets x 10 features x 2 directions
    python benchmarks/tabular_monotonicity.py --quick         # a smoke run (seconds)
"""
from __future__ import annotations

import csv
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from harness import Run, measure, parser  # noqa: E402
from polytrav.testing.slope_milp import slope_milp  # noqa: E402

SIZES = (16, 32, 64)
DIRECTIONS = ("increasing", "decreasing")
FIELDS = ["net", "feature", "direction", "polytrav", "polytrav_s", "polytrav_polytopes",
          "polytrav_pieces_proven", "milp", "milp_s", "milp_binaries", "agree", "pairs_checked"]


def load_data() -> tuple[np.ndarray, np.ndarray]:
    """The diabetes data, features and target standardised."""
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True)
    return (X - X.mean(0)) / X.std(0), (y - y.mean()) / y.std()


def train(X: np.ndarray, y: np.ndarray, width: int, seed: int = 0, steps: int = 300):
    """A ``width``-``width`` ReLU MLP regressor; returns the ``Network`` and the training MSE."""
    import torch

    from polytrav import Network

    torch.manual_seed(seed)
    model = torch.nn.Sequential(
        torch.nn.Linear(X.shape[1], width), torch.nn.ReLU(), torch.nn.Linear(width, width),
        torch.nn.ReLU(), torch.nn.Linear(width, 1)).double()
    opt = torch.optim.Adam(model.parameters(), 1e-2, weight_decay=0.1)
    Xt, yt = torch.tensor(X), torch.tensor(y)[:, None]
    for _ in range(steps):
        opt.zero_grad()
        loss = ((model(Xt) - yt) ** 2).mean()
        loss.backward()
        opt.step()
    lin = [m for m in model if isinstance(m, torch.nn.Linear)]
    net = Network.from_arrays([m.weight.detach().numpy() for m in lin],
                              [m.bias.detach().numpy() for m in lin])
    return net, float(loss.detach())


def pair_ok(net, lo, hi, pair, feature: int, direction: str) -> bool:
    """A violating pair, re-checked from scratch by a float64 forward pass."""
    if pair is None:
        return False
    x, x2 = (np.asarray(p, float) for p in pair)
    others = np.arange(net.n_inputs) != feature
    inside = all((p >= lo).all() and (p <= hi).all() for p in (x, x2))
    y, y2 = net.forward(x)[0], net.forward(x2)[0]
    return bool(inside and x2[feature] > x[feature] and np.array_equal(x[others], x2[others])
                and (y2 < y if direction == "increasing" else y2 > y))


def run_polytrav(net, lo, hi, feature: int, direction: str, time_limit: float):
    from polytrav import Box, analyze
    from polytrav.plugins.monotonicity import Monotonicity

    t0 = time.perf_counter()
    rep = analyze(net, Box(lo, hi), Monotonicity(feature, direction, stop_at_first=True),
                  time_limit=time_limit)
    seconds = time.perf_counter() - t0
    res = rep[0]
    proven = int(sum(rep.stats.get("proven") or [0]))  # pieces proven, over the levels
    return res.verdict.value, seconds, res.n_polytopes, proven, res.details.get("witness_pair")


def main(argv=None) -> int:
    ap = parser(__doc__.split("\n")[0], repeats=3, warmup=1,
                out=ROOT / "benchmarks" / "results" / "tabular_monotonicity.csv")
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    ap.add_argument("--features", type=int, nargs="+", default=None)
    ap.add_argument("--time-limit", type=float, default=10.0, help="seconds per run, each tool")
    ap.add_argument("--quick", action="store_true", help="2x16, features 0-2, one run each")
    args = ap.parse_args(argv)
    if args.quick:
        args.sizes, args.features, args.repeats, args.time_limit = [16], [0, 1, 2], 1, 5.0
    run = Run("tabular_monotonicity", args, argv=argv, quiet=True)
    X, y = load_data()
    lo, hi = X.min(0), X.max(0)
    features = args.features if args.features is not None else list(range(X.shape[1]))
    rows, disagreements, losses = [], [], {}
    for width in args.sizes:
        net, loss = train(X, y, width)
        name = f"2x{width}"
        losses[name] = loss
        for _ in range(args.warmup):  # warm-up, discarded: first-call costs of this network
            run_polytrav(net, lo, hi, 0, "increasing", args.time_limit)
            slope_milp(net, lo, hi, 0, 0, "increasing", time_limit=args.time_limit)
        for j in features:
            for d in DIRECTIONS:
                pt = measure(lambda j=j, d=d: run_polytrav(net, lo, hi, j, d, args.time_limit),
                             args.repeats, 0)
                verdict, _, n_poly, proven, pair = pt.result
                mt = measure(lambda j=j, d=d: slope_milp(net, lo, hi, j, 0, d, time_limit=args.time_limit),
                             args.repeats, 0)
                m = mt.result
                checked = ((verdict != "violated" or pair_ok(net, lo, hi, pair, j, d))
                           and (m.verdict != "violated" or pair_ok(net, lo, hi, m.pair, j, d)))
                decided = {verdict, m.verdict} & {"holds", "violated"}
                agree = not (len(decided) == 2 and {verdict, m.verdict} == decided)
                row = {"case": f"{name} x{j} {d}", "net": name, "feature": j, "direction": d,
                       "polytrav": verdict, "polytrav_s": round(pt.median, 4),
                       "polytrav_polytopes": n_poly, "polytrav_pieces_proven": proven,
                       "milp": m.verdict, "milp_s": round(mt.median, 4),
                       "milp_binaries": m.n_binaries, "agree": agree, "pairs_checked": checked,
                       **pt.fields("polytrav_"), **mt.fields("milp_")}
                rows.append(run.add(row))
                if not agree or not checked:
                    disagreements.append(row)
                    print(f"!!! DISAGREEMENT or unchecked pair: {row}", flush=True)
                print(f"{name:5s} x{j} {d:10s} polytrav {verdict:10s} {row['polytrav_s']:8.3f} s "
                      f"({n_poly} polytopes) | milp {m.verdict:10s} {row['milp_s']:8.3f} s",
                      flush=True)
    summary = summarise(rows)
    print("\nnet    runs  both decided  polytrav decided  milp decided  median polytrav s  "
          "median milp s  ratio of medians")
    for name, s in summary.items():
        print(f"{name:5s} {s['runs']:5d} {s['both_decided']:13d} {s['polytrav_decided']:17d} "
              f"{s['milp_decided']:13d} {s['median_polytrav_s']:18.4f} {s['median_milp_s']:14.4f} "
              f"{s['ratio']:17.3f}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    run.summary.update(training_mse=losses, nets=summary)
    run.write(out.with_suffix(".json"))
    if disagreements:
        print(f"\n{len(disagreements)} DISAGREEMENT(S) between polytrav and the MILP", flush=True)
        return 1
    return 0


def summarise(rows: list[dict]) -> dict:
    """Per network: counts of decided verdicts and the medians of each tool's median times."""
    out = {}
    for name in dict.fromkeys(r["net"] for r in rows):
        mine = [r for r in rows if r["net"] == name]
        dec = lambda v: v in ("holds", "violated")  # noqa: E731
        mp = statistics.median(r["polytrav_s"] for r in mine)
        mm = statistics.median(r["milp_s"] for r in mine)
        out[name] = {"runs": len(mine),
                     "both_decided": sum(dec(r["polytrav"]) and dec(r["milp"]) for r in mine),
                     "polytrav_decided": sum(dec(r["polytrav"]) for r in mine),
                     "milp_decided": sum(dec(r["milp"]) for r in mine),
                     "polytrav_holds": sum(r["polytrav"] == "holds" for r in mine),
                     "milp_holds": sum(r["milp"] == "holds" for r in mine),
                     "median_polytrav_s": mp, "median_milp_s": mm,
                     "ratio": mp / mm if mm > 0 else float("nan")}
    return out


if __name__ == "__main__":
    sys.exit(main())
