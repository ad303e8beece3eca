"""The settle stage's branch and bound and region MILP (issue 59): two checkouts side by side.

Each instance runs :func:`polytrav.verify` in a fresh process of each side (a Python whose
environment has one checkout installed), the sides alternating per round (A B, then B A); a
side's number is the median over ``--rounds`` of the child's CPU time (``os.times``: user +
system, the child only, one BLAS thread) and its wall time. Each child also reports the
answer, how the region was decided (``Report.stats["settle"]["by"]``, ``details["bab"]``'s
method and nodes) and the commit it imported; the answers must agree between the sides.

Default instances: MNIST 784-256-256-10 (VNN-COMP mnistfc) instances that branch and bound,
the region's MILP, the region's bound or the attack decide, and ACAS Xu properties 1, 3 and 4
(5 inputs: the input split decides; branch and bound does not apply).

    python benchmarks/settle_stage.py --before ../venv_before/bin/python --after python \\
        --rounds 2 --out benchmarks/results/settle_stage.json
    python benchmarks/settle_stage.py --before A/bin/python --after B/bin/python --only acas
    python benchmarks/settle_stage.py --before A/bin/python --match "2021 prop_3_0.03" --timeout 600
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import DATA, THREADS, Run, acas_onnx, acas_vnnlib  # noqa: E402

MNIST = DATA / "mnistfc"
#: (edition, property, timeout): mnist-net_256x2 instances of 1-60 s in earlier runs.
MNIST_CASES = [("2021", "prop_0_0.03", 120), ("2021", "prop_6_0.05", 120),
               ("2021", "prop_10_0.05", 120), ("2022", "prop_8_0.03", 120),
               ("2022", "prop_4_0.03", 120), ("2021", "prop_3_0.03", 120),
               ("2021", "prop_7_0.03", 120), ("2021", "prop_14_0.03", 120),
               ("2021", "prop_3_0.05", 120), ("2022", "prop_12_0.05", 120)]
#: (network, property): ACAS Xu instances of 0.3-10 s.
ACAS_CASES = [("1_1", 1), ("2_8", 1), ("3_8", 1), ("2_2", 3), ("1_1", 4), ("3_3", 4)]


def cases(only: str | None) -> list[tuple[str, str, str, float]]:
    """``(name, onnx, vnnlib, timeout)`` of the selected family (None: both)."""
    out = []
    if only in (None, "mnist"):
        out += [(f"mnistfc 256x2 {ed} {prop}", str(MNIST / "onnx" / "mnist-net_256x2.onnx"),
                 str(MNIST / f"vnnlib_{ed}" / f"{prop}.vnnlib"), t) for ed, prop, t in MNIST_CASES]
    if only in (None, "acas"):
        out += [(f"acas {n} prop {p}", str(acas_onnx(n)), str(acas_vnnlib(p)), 116.0)
                for n, p in ACAS_CASES]
    return out


def worker(onnx: str, vnnlib: str, timeout: float) -> None:
    """One instance in this process: a JSON line on stdout."""
    import time

    import polytrav
    from polytrav import verify
    from polytrav.verification.vnnlib import read_vnnlib

    spec = read_vnnlib(vnnlib)  # parsed untimed
    t0, c0 = time.perf_counter(), os.times()
    result = verify(onnx, spec, timeout=timeout)
    c1 = os.times()
    stages = [r.stats.get("settle") or {} for r in result.reports]
    babs = [r[0].details.get("bab") for r in result.reports if r[0].details.get("bab")]
    print(json.dumps({
        "answer": str(result.answer), "cpu": (c1.user - c0.user) + (c1.system - c0.system),
        "wall": time.perf_counter() - t0, "polytopes": result.polytopes,
        "by": [s.get("by") for s in stages],
        "bab": [f"{b['method']} {b['verdict']} {b['nodes']} nodes" for b in babs],
        "checkout": str(Path(polytrav.__file__).resolve().parents[1])}))


def run_side(python: str, case: tuple) -> dict:
    _, onnx, vnnlib, timeout = case
    env = {**os.environ, **THREADS}
    out = subprocess.run([python, __file__, "--worker", onnx, vnnlib, str(timeout)],
                         capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="the Python of the checkout before")
    ap.add_argument("--after", default=sys.executable, help="the Python of the checkout after")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--only", choices=["mnist", "acas"])
    ap.add_argument("--match", help="only the instances whose name contains this")
    ap.add_argument("--timeout", type=float, help="seconds per instance (default: its own)")
    ap.add_argument("--out", help="results JSON")
    args = ap.parse_args(argv)
    run = Run("settle_stage", args)
    sides = {"before": args.before, "after": args.after}
    for case in cases(args.only):
        if args.match and args.match not in case[0]:
            continue
        if args.timeout:
            case = (*case[:3], args.timeout)
        got: dict[str, list] = {"before": [], "after": []}
        for k in range(args.rounds):
            for side in (("before", "after") if k % 2 == 0 else ("after", "before")):
                got[side].append(run_side(sides[side], case))
        row = {"case": case[0], "rounds": args.rounds}
        for side, runs in got.items():
            row[side] = {"answer": sorted({r["answer"] for r in runs}),
                         "cpu": statistics.median(r["cpu"] for r in runs),
                         "wall": statistics.median(r["wall"] for r in runs),
                         "cpus": [round(r["cpu"], 2) for r in runs],
                         "by": runs[0]["by"], "bab": runs[0]["bab"],
                         "polytopes": runs[0]["polytopes"], "checkout": runs[0]["checkout"]}
        row["same_answer"] = row["before"]["answer"] == row["after"]["answer"]
        row["cpu_ratio"] = row["after"]["cpu"] / max(row["before"]["cpu"], 1e-9)
        run.add(row)
    ratios = [r["cpu_ratio"] for r in run.rows]
    run.summary.update(median_cpu_ratio=statistics.median(ratios) if ratios else None,
                       same_answers=all(r["same_answer"] for r in run.rows))
    print(f"| instance | answer before / after | CPU s before | CPU s after | after / before "
          f"| decided by (after) |\n|---|---|---|---|---|---|")
    for r in run.rows:
        b, a = r["before"], r["after"]
        print(f"| {r['case']} | {'/'.join(b['answer'])} / {'/'.join(a['answer'])} | "
              f"{b['cpu']:.2f} | {a['cpu']:.2f} | {r['cpu_ratio']:.2f} | "
              f"{', '.join(map(str, a['by']))}; {', '.join(a['bab']) or '-'} |")
    print(f"median CPU ratio after / before: {run.summary['median_cpu_ratio']:.3f}; "
          f"same answers: {run.summary['same_answers']}")
    run.write(args.out)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    else:
        main()
