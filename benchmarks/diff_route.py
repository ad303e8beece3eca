"""Two-network ε queries decided both ways: by ``polytrav.diff`` and by the stacked network.

Reads a folder written by ``benchmarks/diff_instances.py``. Per chosen query (``--queries``
by name, else those of ``--networks`` on ``--boxes`` at ``--epsilons``),
``polytrav.verification.standard.decide`` (what ``polytrav-vnnlib verify`` and ``polytrav
verify --network`` run: ``sat`` only with a witness onnxruntime confirms in exact
arithmetic) with ``route="diff"`` (the default: ``polytrav.diff`` with ``verdict_only``,
its input split first) and ``route="stack"`` (today's: the stacked network through
``verify``), alternating which goes first, ``--repeats`` times, each with ``--timeout``
seconds. Per query: both answers, the median seconds of each route and their ratio
(diff / stack), polytopes and LPs; the summary: decided per route, total of the median
times, the median ratio over the queries both decide, and any disagreement.

    python benchmarks/diff_instances.py ../scratch/di --networks 1_1 3_3 2_4 --epsilons 0.02 0.05
    python benchmarks/diff_route.py ../scratch/di --queries 3_3_perturb_p3_eps0.05.vnnlib ... \
        --timeout 100 --repeats 3 --out benchmarks/results/diff_route.json
"""
from __future__ import annotations

import csv
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import Run, parser  # noqa: E402

ROUTES = ("diff", "stack")


def decide_both(folder: Path, rows: list[dict], timeout: float, repeats: int, run: Run):
    from polytrav.verification.query import parse_query
    from polytrav.verification.standard import decide

    out = []
    for r in rows:
        models = {"f": str(folder / r["f"]), "g": str(folder / r["g"])}
        row = {"query": r["query"], "sampled": float(r["sampled"]),
               "epsilon": float(r["epsilon"])}
        seen = {name: [] for name in ROUTES}
        for k in range(repeats):
            for name in (ROUTES if k % 2 == 0 else ROUTES[::-1]):
                query = parse_query((folder / r["query"]).read_text())
                t = time.perf_counter()
                d = decide(query, models, timeout=timeout, query_name=r["query"], route=name)
                seen[name].append((time.perf_counter() - t, d))
        for name in ROUTES:
            answers = sorted({d.answer for _, d in seen[name]})
            last = seen[name][-1][1]
            row[f"{name}_answer"] = answers[0] if len(answers) == 1 else "/".join(answers)
            row[f"{name}_seconds"] = statistics.median(s for s, _ in seen[name])
            row[f"{name}_polytopes"], row[f"{name}_lps"] = last.polytopes, last.lps
            row[f"{name}_decided_by"] = last.route
        row["ratio"] = row["diff_seconds"] / row["stack_seconds"]
        print(row, flush=True)
        out.append(run.add(row))
    return out


def summarise(rows: list[dict], timeout: float) -> dict:
    decided = {n: [r["query"] for r in rows if r[f"{n}_answer"] in ("sat", "unsat")]
               for n in ROUTES}
    both = [r for r in rows if r["query"] in decided["diff"] and r["query"] in decided["stack"]]
    return {"timeout": timeout, "queries": len(rows),
            **{f"{n}_decided": len(decided[n]) for n in ROUTES},
            **{f"{n}_seconds_total": sum(r[f"{n}_seconds"] for r in rows) for n in ROUTES},
            "median_ratio_both_decided": statistics.median(r["ratio"] for r in both)
            if both else None,
            "only_diff": [q for q in decided["diff"] if q not in decided["stack"]],
            "only_stack": [q for q in decided["stack"] if q not in decided["diff"]],
            "disagreements": [r["query"] for r in both
                              if r["diff_answer"] != r["stack_answer"]]}


def main(argv=None) -> int:
    ap = parser(__doc__.splitlines()[0], repeats=3, warmup=0)
    ap.add_argument("folder", type=Path, help="written by benchmarks/diff_instances.py")
    ap.add_argument("--queries", nargs="*", help="query file names (default: by the filters)")
    ap.add_argument("--networks", nargs="*", default=["1_1", "2_4", "3_3"])
    ap.add_argument("--boxes", nargs="*", default=["p3", "p4"])
    ap.add_argument("--epsilons", nargs="*", type=float, default=[0.02, 0.05])
    ap.add_argument("--timeout", type=float, default=100.0)
    args = ap.parse_args(argv)
    rows = list(csv.DictReader(open(args.folder / "instances.csv")))
    if args.queries:
        chosen = [r for q in args.queries for r in rows if r["query"] == q]
    else:
        chosen = [r for r in rows if r["box"] in args.boxes and r["network"] in args.networks
                  and float(r["epsilon"]) in args.epsilons]
    run = Run("diff_route", args, argv=argv)
    verify_rows = decide_both(args.folder, chosen, args.timeout, args.repeats, run)
    run.summary.update(summarise(verify_rows, args.timeout))
    print(run.summary)
    run.write(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
