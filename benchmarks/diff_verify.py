"""Two-network ACAS Xu queries decided side by side: today's path against the difference path.

Issue 46 item 4. Reads a folder written by ``benchmarks/diff_instances.py`` and decides each
query (``polytrav.verification.standard.decide``, what ``polytrav-vnnlib`` runs) two ways,
one after the other, each in a fresh process with ``--timeout`` seconds:

* ``today``: the copies bounded separately, as before issue 46 (the input split's and the
  pieces' difference bounds off: ``VERIFY_POLICY`` with ``pair_bounds=False``, and the query
  answered by the stack's own traversal where a route exists);
* ``diff``: what ``decide`` does by default (the difference bounds on; a query of the
  ``|Y_g - Y_f| > eps`` shape routed to ``polytrav.diff`` where that route exists).

Every answer is checked independently: a ``sat`` witness is replayed in onnxruntime in
float32 on both ONNX files (``|g_j - f_j| > eps`` on some output); an ``unsat`` is checked,
with ``--milp-limit`` seconds per row, by the MILP of both networks in :mod:`polytrav.testing.milp`
(scipy/HiGHS, no polytrav code): its dual bounds on the largest ``±(g_j - f_j)`` over the
box must prove ``<= eps`` (a bound above ``eps`` leaves the answer unchecked; a MILP point
above ``eps`` would make it wrong, and is replayed as a sat witness would be). The two routes must never disagree. Rows are written as they finish
(``--out``), so a long run can be cut and resumed (``--resume``).

    python benchmarks/diff_instances.py ../scratch/diff --boxes p3 --epsilons 0.05 --relative 0.8 1.25
    python benchmarks/diff_verify.py ../scratch/diff --timeout 100 --out benchmarks/results/diff_verify.json
    python benchmarks/diff_instances.py ../scratch/small --small 10
    python benchmarks/diff_verify.py ../scratch/small --exact --out benchmarks/results/diff_verify_small.json

``--exact`` (small nets): also ``polytrav.diff``'s exact largest ``|g_j - f_j|`` over each
query's box against the MILP's (when the MILP closed its gap), to 1e-6. ``--resume --routes
diff``: the diff path again on the rows already in ``--out``, today's columns kept (each row's
``routes_run`` says what ran in this run). ``--summarise A.json B.json ...``: one summary of
several results files' rows.
"""
from __future__ import annotations

import csv
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from harness import THREADS, Run, load, parser  # noqa: E402

ROUTES = ("today", "diff")


def decide_one(folder: Path, row: dict, route: str, timeout: float) -> dict:
    """One query decided one way (run in a child process: ``--one``)."""
    import inspect

    import dataclasses

    import polytrav.bounds.settle as settle
    from polytrav.verification.query import parse_query
    from polytrav.verification.standard import decide

    today = route == "today"
    if today:  # this child process's policy: the stack's own bounds alone
        settle.VERIFY_POLICY = dataclasses.replace(settle.VERIFY_POLICY, pair_bounds=False)
    kwargs = {}
    if "route" in inspect.signature(decide).parameters:
        kwargs["route"] = "stack" if today else "diff"
    query = parse_query((folder / row["query"]).read_text())
    t = time.perf_counter()
    d = decide(query, {"f": str(folder / row["f"]), "g": str(folder / row["g"])},
               timeout=timeout, query_name=row["query"], **kwargs)
    x = None
    if d.witness is not None:
        x = [float(v) for v in np.ravel(np.asarray(_input_values(d.witness.values), float))]
    return {"answer": d.answer, "seconds": time.perf_counter() - t, "polytopes": d.polytopes,
            "lps": d.lps, "reason": d.reason, "x": x}


def _input_values(values: dict):
    """The first network's input from a witness's values (``X_f``, or ``X`` elements)."""
    for name in ("X_f", "X"):
        if name in values:
            return values[name]
    keys = sorted(k for k in values if str(k).startswith("X_f"))
    return [values[k] for k in keys]


def run_route(folder: Path, row: dict, route: str, timeout: float) -> dict:
    """:func:`decide_one` in a fresh process, killed at twice the budget (answer ``hung``)."""
    import os

    cmd = [sys.executable, str(Path(__file__).resolve()), str(folder), "--one", row["query"],
           "--route", route, "--timeout", str(timeout)]
    env = {**os.environ, **THREADS}
    t = time.perf_counter()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=2 * timeout + 60,
                             env=env)
    except subprocess.TimeoutExpired:
        return {"answer": "hung", "seconds": time.perf_counter() - t}
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode or not lines:
        return {"answer": "error", "seconds": time.perf_counter() - t,
                "reason": (out.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(lines[-1])


def replay(folder: Path, row: dict, x) -> tuple[bool, float]:
    """The witness in onnxruntime, float32, on both files: ``(|g - f| > eps somewhere, max)``."""
    import onnxruntime as ort

    gaps = []
    ys = []
    for name in (row["f"], row["g"]):
        sess = ort.InferenceSession(str(folder / name), providers=["CPUExecutionProvider"])
        inp = sess.get_inputs()[0]
        shape = [d if isinstance(d, int) else 1 for d in inp.shape]
        ys.append(sess.run(None, {inp.name: np.asarray(x, np.float32).reshape(shape)})[0]
                  .astype(np.float64).ravel())
    gaps = np.abs(ys[1] - ys[0])
    return bool(gaps.max() > float(row["epsilon"])), float(gaps.max())


def query_box(folder: Path, row: dict) -> tuple[np.ndarray, np.ndarray]:
    """The query's box on the shared input (its ε-query shape)."""
    from polytrav.verification.diff_query import diff_shape
    from polytrav.verification.query import read_query

    shape = diff_shape(read_query(folder / row["query"]))
    return shape.lower, shape.upper


def joint_of(folder: Path, row: dict):
    from polytrav import Network

    f, g = Network.from_onnx(folder / row["f"]), Network.from_onnx(folder / row["g"])
    n = f.n_inputs
    return f, g, Network.stack([f, g]).compose_input(np.vstack([np.eye(n)] * 2), np.zeros(2 * n))


def milp_check(folder: Path, row: dict, limit: float) -> dict:
    """The largest ``|g_j - f_j|`` over the query's box by the MILP of both networks: its dual
    bound (``milp_max``: proves the maximum is at most it) and its best point's value."""
    from polytrav.testing.milp import lp_bounds, milp_max_linear

    f, _, joint = joint_of(folder, row)
    lo, hi = query_box(folder, row)
    m = f.n_outputs
    best, seen, t = -np.inf, -np.inf, time.perf_counter()  # dual bound, best point
    bounds = lp_bounds(joint, lo, hi)  # once for the MILPs (MIPVerify's tightening)
    for j in range(m):
        for s in (1.0, -1.0):
            c = np.zeros(2 * m)
            c[j], c[m + j] = -s, s
            left = limit - (time.perf_counter() - t)
            if left <= 0:
                return {"milp": "time", "milp_seconds": time.perf_counter() - t}
            r = milp_max_linear(joint, c, lo, hi, time_limit=left, bounds=bounds)
            if r.status not in ("optimal", "time_limit", "limit") or not np.isfinite(r.bound):
                return {"milp": r.status, "milp_seconds": time.perf_counter() - t}
            best, seen = max(best, r.bound), max(seen, r.value if np.isfinite(r.value) else -np.inf)
    return {"milp": "bound", "milp_max": best, "milp_point": seen,
            "milp_seconds": time.perf_counter() - t}


def exact_check(folder: Path, row: dict, milp: dict, timeout: float) -> dict:
    """``polytrav.diff``'s exact largest ``|g_j - f_j|`` over the box against the MILP's."""
    import polytrav

    f, g, _ = joint_of(folder, row)
    lo, hi = query_box(folder, row)
    t = time.perf_counter()
    r = polytrav.diff(f, g, polytrav.Box(lo, hi), decisions=False, time_limit=timeout)
    out = {"exact_max": r.max_abs, "exact_complete": r.exact, "exact_polytopes": r.n_polytopes,
           "exact_seconds": time.perf_counter() - t}
    if r.exact and milp.get("milp") == "bound" and milp["milp_max"] - milp["milp_point"] <= 1e-9:
        out["exact_vs_milp"] = abs(r.max_abs - milp["milp_point"])
    return out


def check(folder: Path, row: dict, rec: dict, milp_limit: float, cache: dict) -> dict:
    """The independent checks of one route's answer (the MILP once per query: ``cache``)."""
    eps = float(row["epsilon"])
    if rec.get("answer") == "sat":
        ok, gap = replay(folder, row, rec["x"]) if rec.get("x") else (False, None)
        return {"check": "replayed" if ok else "WRONG: witness not replayed", "replay_gap": gap}
    if rec.get("answer") == "unsat" and milp_limit > 0:
        if "milp" not in cache:
            cache["milp"] = milp_check(folder, row, milp_limit)
        m = cache["milp"]
        if m["milp"] != "bound":
            return {"check": f"unchecked (MILP {m['milp']})", **m}
        if m["milp_point"] > eps:
            return {"check": "WRONG: the MILP found |g - f| > eps", **m}
        # the MILP's dual bounds prove max |g - f| <= milp_max; above eps: not checked
        return {"check": "milp agrees" if m["milp_max"] <= eps else "unchecked (MILP bound)",
                **m}
    return {"check": ""}


def summarise(rows: list[dict], timeout: float) -> dict:
    blank = {k: v for r in ROUTES for k, v in ((f"{r}_answer", "not run"), (f"{r}_seconds", 0.0))}
    rows = [{**blank, **x} for x in rows]  # a route not run (--routes)
    decided = {r: [x for x in rows if x[f"{r}_answer"] in ("sat", "unsat")] for r in ROUTES}
    both = [x for x in rows if all(x[f"{r}_answer"] in ("sat", "unsat") for r in ROUTES)]
    ratios = [x["today_seconds"] / x["diff_seconds"] for x in both if x["diff_seconds"] > 0]
    wrong = [x["query"] for x in rows for r in ROUTES if str(x.get(f"{r}_check", "")).startswith("WRONG")]
    disagree = [x["query"] for x in both if x["today_answer"] != x["diff_answer"]]
    out = {"instances": len(rows), "timeout": timeout}
    for r in ROUTES:
        times = [min(x[f"{r}_seconds"], timeout) for x in rows]
        out[r] = {"decided": len(decided[r]),
                  "sat": sum(x[f"{r}_answer"] == "sat" for x in rows),
                  "unsat": sum(x[f"{r}_answer"] == "unsat" for x in rows),
                  "total_seconds": sum(times), "max_seconds": max(times, default=0.0),
                  "median_seconds": statistics.median(times) if times else None,
                  "over_budget": [x["query"] for x in rows
                                  if x[f"{r}_answer"] not in ("sat", "unsat")]}
    out["ratio_today_over_diff_median"] = statistics.median(ratios) if ratios else None
    out["only_diff_decides"] = [x["query"] for x in decided["diff"] if x not in decided["today"]]
    out["only_today_decides"] = [x["query"] for x in decided["today"] if x not in decided["diff"]]
    out["wrong"], out["disagree"] = wrong, disagree
    out["unsat_checked_by_milp"] = sum(str(x.get(f"{r}_check", "")) == "milp agrees"
                                       for x in rows for r in ROUTES)
    out["sat_replayed"] = sum(x.get(f"{r}_check") == "replayed" for x in rows for r in ROUTES)
    gaps = [x["exact_vs_milp"] for x in rows if "exact_vs_milp" in x]
    if gaps:
        out["exact_vs_milp"] = {"compared": len(gaps), "max_abs_difference": max(gaps),
                                "within_1e-6": sum(g <= 1e-6 for g in gaps)}
    return out


def main(argv=None) -> int:
    ap = parser(__doc__, repeats=None)
    ap.add_argument("folder", type=Path, nargs="?",
                    help="written by benchmarks/diff_instances.py")
    ap.add_argument("--timeout", type=float, default=100.0, help="seconds per instance and route")
    ap.add_argument("--networks", nargs="*", help="only these networks (e.g. 1_1 3_3)")
    ap.add_argument("--kinds", nargs="*", default=["prune", "perturb"])
    ap.add_argument("--milp-limit", type=float, default=120.0,
                    help="seconds of MILP per unsat answer (0: no check)")
    ap.add_argument("--resume", action="store_true", help="keep the rows already in --out")
    ap.add_argument("--routes", nargs="*", choices=ROUTES, default=list(ROUTES),
                    help="run only these routes; with --resume, on the rows already in --out "
                         "the others' columns are kept (e.g. the diff path after a change to it, "
                         "against today's path measured before)")
    ap.add_argument("--exact", action="store_true",
                    help="also polytrav.diff's exact largest |g - f| against the MILP (small nets)")
    ap.add_argument("--summarise", nargs="+", type=Path, metavar="RESULTS",
                    help="instead: the summary of these results files' rows together")
    ap.add_argument("--one", help=argparse_hidden())
    ap.add_argument("--route", choices=ROUTES, help=argparse_hidden())
    args = ap.parse_args(argv)
    if args.summarise:
        rows = [r for path in args.summarise for r in load(path)["rows"]]
        print(json.dumps(summarise(rows, args.timeout), indent=1))
        return 0
    rows = list(csv.DictReader(open(args.folder / "instances.csv")))
    if args.one:
        row = next(r for r in rows if r["query"] == args.one)
        print(json.dumps(decide_one(args.folder, row, args.route, args.timeout)))
        return 0
    rows = [r for r in rows if (not args.networks or r["network"] in args.networks)
            and r["kind"] in args.kinds]
    run = Run("diff_verify", args)
    done = {}
    if args.resume and args.out and Path(args.out).exists():
        done = {r["query"]: r for r in load(args.out)["rows"]}
    for row in rows:
        again = [r for r in ROUTES if r in args.routes]
        if row["query"] in done:
            again = [r for r in ROUTES if r in args.routes]
            if again == list(ROUTES):
                run.add(done[row["query"]])
                continue
        rec = {"query": row["query"], "network": row["network"], "kind": row["kind"],
               "box": row["box"], "epsilon": float(row["epsilon"]),
               "sampled": float(row["sampled"])}
        if again != list(ROUTES) and row["query"] in done:  # the others', as measured before
            rec = {k: v for k, v in done[row["query"]].items()
                   if not any(k.startswith(f"{r}_") for r in again)}
        rec["routes_run"] = list(again)
        cache: dict = {}
        for route in again:
            r = run_route(args.folder, row, route, args.timeout)
            rec.update({f"{route}_{k}": v for k, v in r.items() if k != "x"})
            rec.update({f"{route}_{k}": v for k, v in check(args.folder, row, r,
                                                              args.milp_limit, cache).items()})
            if r.get("x") is not None:
                rec[f"{route}_x"] = r["x"]
        if args.exact:  # small nets: the exact largest difference against the MILP's
            if "milp" not in cache:
                cache["milp"] = milp_check(args.folder, row, args.milp_limit)
            rec.update({k: v for k, v in cache["milp"].items()})
            rec.update(exact_check(args.folder, row, cache["milp"], args.timeout))
        run.add(rec)
        run.record["summary"] = summarise(run.rows, args.timeout)
        run.write(args.out)
    run.record["summary"] = summarise(run.rows, args.timeout)
    run.write(args.out)
    print(json.dumps(run.record["summary"], indent=1))
    return 0


def argparse_hidden():
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    raise SystemExit(main())
