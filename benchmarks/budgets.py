"""Budgets that hold (issue 63, item 2): the two runs the issue timed, wall clock per run.

* **wine**: scikit-learn's wine data (13 features, 3 classes), ``StandardScaler`` and
  ``MLPClassifier((32, 32))`` (``random_state=0``) through ``Network.from_sklearn``; the L1
  counterfactual of each row by ``polytrav.explain_rows`` with ``time_limit=5`` per row; the
  row's wall time (``RowResult.time``) and how long its MILP ran. ``--milp-after N`` runs the
  counterfactual's MILP after N polytopes (default: the analysis's own 500, which a loaded
  machine may not reach in 5 s), so that every row has one.
* **mnist**: ``polytrav counterfactual mnist-net_256x2.onnx --lower 0 --upper 1 --x0 <test
  image 0> --norm 2 --timeout 1 --json`` as a user runs it; its wall time and the report's
  work time (``time``).

    python benchmarks/budgets.py wine --rows 8 --milp-after 20
    python benchmarks/budgets.py mnist --repeats 3
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def wine(rows: int, milp_after: int | None) -> None:
    from sklearn.datasets import load_wine
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    import polytrav

    X, y = load_wine(return_X_y=True, as_frame=True)
    pipe = make_pipeline(StandardScaler(), MLPClassifier((32, 32), max_iter=2000,
                                                         random_state=0)).fit(X, y)
    net = polytrav.Network.from_sklearn(pipe)
    options = {"norm": 1} if milp_after is None else {"norm": 1, "milp_after": milp_after}
    t0, times = time.perf_counter(), []
    for row in polytrav.explain_rows(net, X, [("counterfactual", options)], time_limit=5):
        res = row.results.get("counterfactual")
        milp = None if res is None else res.details.get("milp")
        seconds = milp.get("seconds") if isinstance(milp, dict) else None
        times.append(row.time)
        print(f"row {row.position}: {row.time:.2f} s, exact {res.exact if res else None}, "
              f"MILP {'-' if seconds is None else f'{seconds:.2f} s'}", flush=True)
        if len(times) >= rows:
            break
    print(f"{options}, time_limit=5: {len(times)} rows in {time.perf_counter() - t0:.1f} s, "
          f"the longest {max(times):.2f} s")


def mnist(repeats: int) -> None:
    import numpy as np

    image = np.load(DATA / "mnist" / "mnist_test.npz")["images"][0] / 255.0
    cmd = [str(Path(sys.executable).parent / "polytrav"), "counterfactual",
           str(DATA / "mnistfc" / "onnx" / "mnist-net_256x2.onnx"), "--lower", "0", "--upper",
           "1", "--x0", ",".join(repr(float(v)) for v in image), "--norm", "2", "--timeout",
           "1", "--json"]
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        report = json.loads(res.stdout)
        print(f"--timeout 1: wall {wall:.2f} s, work {report['time']:.2f} s, status "
              f"{report['status']}, {report['stats']['lps']} LPs, exit {res.returncode}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", choices=["wine", "mnist"])
    ap.add_argument("--rows", type=int, default=8)
    ap.add_argument("--milp-after", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    if args.run == "wine":
        wine(args.rows, args.milp_after)
    else:
        mnist(args.repeats)


if __name__ == "__main__":
    main()
