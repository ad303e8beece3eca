"""Bounds on g - f of ACAS Xu pairs: the copies bounded separately (today) against the difference.

Reads a folder written by ``benchmarks/diff_instances.py``. Part 1, per pair (network, copy
kind) and property box: the width ``upper - lower`` of the bound on each ``g_j - f_j`` over
the box (``--networks``) from the stack's CROWN (``path="stacked"``, today's) and from
:func:`polytrav.bounds.difference.difference_bounds` (``"difference"`` alone, and
``"best"``, each output's better of the two, what the input split uses), with the median
time of each (``--repeats``); the summary quotes the median over outputs and pairs of the
width ratio new / today. Part 2 (``--verify``): the queries of ``--verify-networks`` on the
boxes ``--verify-boxes`` at ``--epsilons``, decided by ``polytrav.verification.standard.decide`` (what
``polytrav-vnnlib verify`` runs: ``sat`` only with a witness onnxruntime confirms in exact
arithmetic) with the difference bounds off (today: ``pair_bounds=False`` in ``VERIFY_POLICY``
and ``DIFF_POLICY``, the input split's and ``verify``'s pieces') and on, one after the
other, each with ``--timeout`` seconds: answers, times, and the instances only one way
decides. ``--split-boxes N``: on the same queries, the input split alone for ``N`` boxes
both ways (the proven volume share: a count-based measure, unlike the times).

    python benchmarks/diff_instances.py ../scratch/diff          # the 45 networks' pairs
    python benchmarks/diff_bounds.py ../scratch/diff --networks 1_1 1_6 2_2 2_7 3_3 3_8 4_4 4_9 5_5 \
        --repeats 1 --verify --out benchmarks/results/diff_bounds.json
"""
from __future__ import annotations

import csv
import re
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import Run, parser  # noqa: E402

PATHS = ("stacked", "difference", "best")


def box_of(text: str) -> tuple[np.ndarray, np.ndarray]:
    lo = [float(v) for v in re.findall(r"\(>= X_f\[0,0,0,\d\] ([-+0-9.eE]+)\)", text)]
    hi = [float(v) for v in re.findall(r"\(<= X_f\[0,0,0,\d\] ([-+0-9.eE]+)\)", text)]
    return np.array(lo), np.array(hi)


def widths(folder: Path, rows: list[dict], repeats: int, run: Run, scale: float = 1.0
           ) -> list[dict]:
    from polytrav import Network
    from polytrav.bounds.difference import difference_bounds

    seen, out = set(), []
    for r in rows:
        key = (r["network"], r["kind"], r["box"])
        if key in seen:
            continue
        seen.add(key)
        f, g = Network.from_onnx(folder / r["f"]), Network.from_onnx(folder / r["g"])
        lo, hi = box_of((folder / r["query"]).read_text())
        mid, half = (lo + hi) / 2, scale * (hi - lo) / 2
        lo, hi = mid - half, mid + half
        row = {"network": r["network"], "kind": r["kind"], "box": r["box"], "scale": scale,
               "sampled": float(r["sampled"])}
        for path in PATHS:
            times = []
            for _ in range(repeats):
                t = time.perf_counter()
                b = difference_bounds(f, g, lo, hi, path=path)
                times.append(time.perf_counter() - t)
            row[f"{path}_width"] = (b.upper - b.lower).tolist()
            row[f"{path}_seconds"] = statistics.median(times)
        for path in ("difference", "best"):
            row[f"{path}_ratio"] = (np.array(row[f"{path}_width"])
                                    / np.array(row["stacked_width"])).tolist()
        out.append(run.add(row))
    return out


def decide_both(folder: Path, rows: list[dict], timeout: float, run: Run) -> list[dict]:
    import dataclasses

    import polytrav.bounds.settle as settle
    from polytrav.verification.query import parse_query
    from polytrav.verification.standard import decide

    out = []
    for r in rows:
        row = {"query": r["query"], "sampled": float(r["sampled"]), "epsilon": float(r["epsilon"])}
        policies = settle.VERIFY_POLICY, settle.DIFF_POLICY
        for name, flag in (("today", False), ("difference", True)):
            settle.VERIFY_POLICY, settle.DIFF_POLICY = (
                dataclasses.replace(p, pair_bounds=flag) for p in policies)
            query = parse_query((folder / r["query"]).read_text())
            t = time.perf_counter()
            d = decide(query, {"f": str(folder / r["f"]), "g": str(folder / r["g"])},
                       timeout=timeout, query_name=r["query"])
            row[f"{name}_answer"], row[f"{name}_seconds"] = d.answer, time.perf_counter() - t
        settle.VERIFY_POLICY, settle.DIFF_POLICY = policies
        out.append(run.add(row))
    return out


def split_both(folder: Path, rows: list[dict], max_boxes: int, run: Run) -> list[dict]:
    """The input split alone on each query's box, for ``max_boxes`` boxes (a count, not a
    time: the same work whatever the machine's load), without and with the difference."""
    import polytrav.bounds.split as split
    from polytrav.solvers.highs import HighsBackend
    from polytrav.verification.instance import compile_query
    from polytrav.verification.query import parse_query

    out = []
    for r in rows:
        inst = compile_query(parse_query((folder / r["query"]).read_text()),
                             {"f": str(folder / r["f"]), "g": str(folder / r["g"])})
        case = inst.spec.cases[0]
        pairs = []
        for C, d in case.unsafe:
            norm = np.linalg.norm(C, axis=1)
            pairs.append((C / norm[:, None], d / norm))
        row = {"query": r["query"], "sampled": float(r["sampled"]),
               "epsilon": float(r["epsilon"]), "max_boxes": max_boxes}
        for name, flag in (("today", False), ("difference", True)):
            t = time.perf_counter()
            res = split.split_box(inst.network, case.lower, case.upper, pairs, [HighsBackend()],
                                  max_boxes=max_boxes, difference=flag)
            row[f"{name}_split_seconds"] = time.perf_counter() - t
            row[f"{name}_proven_share"] = res.proven_volume_share
            row[f"{name}_open"] = len(res.open_boxes)
            row[f"{name}_candidate"] = res.candidate is not None
        out.append(run.add(row))
    return out


def summarise(width_rows, verify_rows, timeout, split_rows=()) -> dict:
    summary = {}
    for path in ("difference", "best") if width_rows else ():
        ratios = [v for r in width_rows for v in r[f"{path}_ratio"]]
        summary[f"{path}_width_ratio_median"] = statistics.median(ratios)
        for box in sorted({r["box"] for r in width_rows}):
            for kind in sorted({r["kind"] for r in width_rows}):
                part = [v for r in width_rows if r["box"] == box and r["kind"] == kind
                        for v in r[f"{path}_ratio"]]
                if part:
                    summary[f"{path}_width_ratio_median_{kind}_{box}"] = statistics.median(part)
    if width_rows:
        summary["bound_seconds_median"] = {p: statistics.median(r[f"{p}_seconds"]
                                                                for r in width_rows) for p in PATHS}
    if verify_rows:
        for name in ("today", "difference"):
            answers = [r[f"{name}_answer"] for r in verify_rows]
            summary[f"{name}_decided"] = sum(a in ("sat", "unsat") for a in answers)
            summary[f"{name}_seconds_total"] = sum(r[f"{name}_seconds"] for r in verify_rows)
        both = [r for r in verify_rows if {r["today_answer"], r["difference_answer"]} <= {"sat", "unsat"}]
        if both:
            summary["speedup_median_both_decided"] = statistics.median(
                r["today_seconds"] / r["difference_seconds"] for r in both)
        summary["decided_only_with_difference"] = [
            r["query"] for r in verify_rows if r["difference_answer"] in ("sat", "unsat")
            and r["today_answer"] not in ("sat", "unsat")]
        summary["decided_only_today"] = [
            r["query"] for r in verify_rows if r["today_answer"] in ("sat", "unsat")
            and r["difference_answer"] not in ("sat", "unsat")]
        summary["disagreements"] = [r["query"] for r in verify_rows if {
            r["today_answer"], r["difference_answer"]} == {"sat", "unsat"}]
        summary["timeout"] = timeout
    if split_rows:
        for name in ("today", "difference"):
            summary[f"split_{name}_proven_share_median"] = statistics.median(
                r[f"{name}_proven_share"] for r in split_rows)
            summary[f"split_{name}_all_proven"] = sum(
                r[f"{name}_proven_share"] >= 1.0 - 1e-12 for r in split_rows)
            summary[f"split_{name}_candidates"] = sum(r[f"{name}_candidate"] for r in split_rows)
        summary["split_seconds_ratio_median"] = statistics.median(
            r["difference_split_seconds"] / r["today_split_seconds"] for r in split_rows)
    return summary


def main(argv=None) -> int:
    ap = parser(__doc__.splitlines()[0], repeats=3, warmup=0)
    ap.add_argument("folder", type=Path, help="written by benchmarks/diff_instances.py")
    ap.add_argument("--networks", nargs="*",
                    help="the networks whose pairs' widths are measured (default: all in the folder)")
    ap.add_argument("--skip-widths", action="store_true", help="no part 1")
    ap.add_argument("--scale", type=float, default=1.0,
                    help="part 1 on the property box shrunk by this factor around its centre "
                         "(0.125: a box of the input split's size; default 1)")
    ap.add_argument("--verify", action="store_true", help="also decide queries both ways")
    ap.add_argument("--verify-boxes", nargs="*", default=["p3", "p4"])
    ap.add_argument("--epsilons", nargs="*", type=float, default=[0.02, 0.05])
    ap.add_argument("--verify-networks", nargs="*", default=["1_1", "2_4", "3_3"])
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("--split-boxes", type=int, default=0,
                    help="also run the input split alone on those queries for this many boxes")
    args = ap.parse_args(argv)
    rows = list(csv.DictReader(open(args.folder / "instances.csv")))
    run = Run("diff_bounds", args, argv=argv)
    width_rows = [] if args.skip_widths else widths(
        args.folder, [r for r in rows if not args.networks or r["network"] in args.networks],
        args.repeats, run, args.scale)
    verify_rows, split_rows = [], []
    chosen = [r for r in rows if r["box"] in args.verify_boxes
              and r["network"] in args.verify_networks and float(r["epsilon"]) in args.epsilons]
    if args.split_boxes:
        split_rows = split_both(args.folder, chosen, args.split_boxes, run)
    if args.verify:
        verify_rows = decide_both(args.folder, chosen, args.timeout, run)
    run.summary.update(summarise(width_rows, verify_rows, args.timeout, split_rows))
    print(run.summary)
    run.write(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
