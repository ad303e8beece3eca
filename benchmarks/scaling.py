"""Scaling: one large traversal and an ACAS Xu batch on 1 and 2 workers, process pool and Dask.

Two workloads, each run ``--repeats`` times per configuration (medians reported):

* **traversal**: ``polytrav.verify(..., bounds=False)`` of one ACAS Xu instance that holds
  (plain traversal: every polytope is visited; ``--instance``, default network 4_2,
  property 3) split into parts over the level-1 pieces (``executor=``);
* **batch**: ``polytrav.verify_many(..., bounds=False)`` over ``--batch`` ACAS Xu instances
  of properties 3-4 that take 1-10 s each (whole instances per worker).

Both use the plain traversal so that the work is large and regular; with bounds the same
instances take well under a second each.

Configurations: ``serial`` (the plain run, the baseline), ``pool-1`` and ``pool-2`` (local
process pools), ``dask-2`` (a ``distributed.LocalCluster`` with 2 single-threaded worker
processes). Pools and clusters are started once, and every configuration (serial included)
is warmed up with ``--warmup`` tiny verifications (imports, first solves) before the timings,
as a long job would use it; start-up and warm-up are reported apart. Every configuration's
answers must equal the serial ones (exit status 1 otherwise).

The projection to 16 and 64 workers uses measured costs: the traversal's per-piece times
(one part per piece, run serially) and the batch's per-instance times, scheduled greedily in
submission order on W workers (the executors' behaviour), plus the serial listing of the
pieces; speed-up = serial time / projected makespan.

    python benchmarks/scaling.py --out benchmarks/results/scaling.json
    python benchmarks/scaling.py --repeats 1 --batch 6 --instance 1_1 4   # quick look
"""
from __future__ import annotations

import heapq
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from acasxu import read_instances  # noqa: E402
from harness import Run, Timing, parser  # noqa: E402


def warm(executor, n: int) -> float:
    """Run ``n`` tiny verifications on ``executor`` (imports, first solves); seconds taken."""
    from polytrav.verification.verify import verify_many
    from polytrav import Network
    from polytrav.verification.vnnlib import parse_vnnlib

    t0 = time.perf_counter()
    net = Network.from_arrays([[[1.0, -1.0], [1.0, 1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
    spec = parse_vnnlib("(declare-const X_0 Real) (declare-const X_1 Real) (declare-const Y_0 Real)"
                        " (assert (>= X_0 -1)) (assert (<= X_0 1)) (assert (>= X_1 -1))"
                        " (assert (<= X_1 1)) (assert (>= Y_0 2.5))")
    list(verify_many([(net, spec, None)] * n, executor=executor))
    return time.perf_counter() - t0


def executors(names: list[str]):
    """``(name, executor factory)``; factories return ``(executor, closer)``."""
    from polytrav.parallel import SerialExecutor, process_pool

    def pool(n):
        def make():
            ex = process_pool(n)
            return ex, ex.shutdown
        return make

    def dask2():
        from distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)

        def close():
            client.close()
            cluster.close()
        return client.get_executor(), close

    table = {"serial": lambda: (None, lambda: None), "serial-parts": lambda: (SerialExecutor(), lambda: None),
             "pool-1": pool(1), "pool-2": pool(2), "dask-2": dask2}
    return [(n, table[n]) for n in names]


def run_traversal(inst: dict, executor) -> dict:
    from polytrav import verify

    res = verify(inst["onnx"], inst["vnnlib"], executor=executor, bounds=False)
    stats = res.reports[0].stats
    return {"answer": res.answer, "polytopes": res.polytopes, "seconds": res.seconds,
            "parts": stats.get("parts"), "pieces": stats.get("pieces_total"),
            "enumeration_seconds": stats.get("enumeration_seconds")}


def run_batch(batch: list[dict], executor) -> dict:
    from polytrav.verification.verify import verify_many

    t0 = time.perf_counter()
    answers = {}
    per = {}
    for i, res in verify_many([(b["onnx"], b["vnnlib"], b["timeout"]) for b in batch],
                              executor=executor, bounds=False):
        answers[i] = res.answer
        per[i] = res.seconds
    return {"answers": [answers[i] for i in range(len(batch))], "seconds": time.perf_counter() - t0,
            "instance_seconds": [per[i] for i in range(len(batch))]}


def greedy_makespan(costs: list[float], workers: int) -> float:
    """Makespan of tasks taken in order by the first free of ``workers``."""
    free = [0.0] * workers
    for c in costs:
        t = heapq.heappop(free)
        heapq.heappush(free, t + c)
    return max(free)


def chunked(costs: list[float], n_parts: int) -> list[float]:
    size = max(1, -(-len(costs) // n_parts))
    return [sum(costs[i:i + size]) for i in range(0, len(costs), size)]


def piece_costs(inst: dict) -> tuple[list[float], float]:
    """Per-piece seconds (one part per piece, run serially) and the pieces' listing seconds."""
    from polytrav import analyze
    from polytrav.verification.vnnlib import read_vnnlib
    from polytrav.parallel import SerialExecutor
    from polytrav.verification.verify import load_network

    net = load_network(inst["onnx"])
    (case,) = read_vnnlib(inst["vnnlib"], n_inputs=net.n_inputs, n_outputs=net.n_outputs).cases
    run = lambda parts: analyze(net, case.region(), case.property("verify", bounds=False),  # noqa: E731
                                executor=SerialExecutor(), parts=parts)
    report = run(run(None).stats["pieces_total"])
    return report.stats["part_seconds"], report.stats["enumeration_seconds"]


def main() -> int:
    ap = parser(__doc__.split("\n")[0], repeats=3, warmup=4)
    ap.add_argument("--instance", nargs=2, default=["4_2", "3"], metavar=("NETWORK", "PROP"))
    ap.add_argument("--batch", type=int, default=16, help="instances in the batch")
    ap.add_argument("--configs", nargs="+", default=["serial", "pool-1", "pool-2", "dask-2"])
    args = ap.parse_args()

    from polytrav.parallel import n_workers  # noqa: F401  (import cost out of the timings)

    (inst,) = read_instances([int(args.instance[1])], [args.instance[0]], None)
    pool = read_instances([3, 4], None, None)
    # batch: instances that take 1-10 s in the recorded ACAS Xu run, by network order
    rows = {(r["network"], r["property"]): float(r["seconds"])
            for r in _csv(Path(__file__).parent / "results" / "acasxu.csv")}
    batch = [b for b in pool if 1.0 <= rows.get((b["key"]["network"], b["key"]["property"]), 0) <= 10.0]
    batch = batch[:args.batch]
    print(f"traversal: {inst['key']}; batch: {len(batch)} instances", flush=True)

    run = Run("scaling", args, quiet=True)
    run.summary.update(instance=inst["key"], batch=[b["key"] for b in batch])
    label = f"traversal {inst['key']['network']} prop {inst['key']['property']}"
    reference, medians = None, {}
    for name, make in executors(args.configs):
        t0 = time.perf_counter()
        executor, close = make()
        started = time.perf_counter() - t0
        # warm-up: imports and first solves of every worker, on tiny instances (discarded)
        warmup = warm(executor, args.warmup)
        trav, bat = [], []
        try:
            for r in range(args.repeats):
                trav.append(run_traversal(inst, executor))
                bat.append(run_batch(batch, executor))
                print(f"{name} #{r + 1}: traversal {trav[-1]['seconds']:.2f} s, "
                      f"batch {bat[-1]['seconds']:.2f} s", flush=True)
        finally:
            close()
        answers = ([t["answer"] for t in trav], [b["answers"] for b in bat],
                   [t["polytopes"] for t in trav if t["answer"] == "unsat"])
        if reference is None:
            reference = answers
        same = (set(answers[0]) == set(reference[0]) and all(a == reference[1][0] for a in answers[1])
                and set(answers[2]) == set(reference[2]))
        common = {"config": name, "start_seconds": started, "warmup_seconds": warmup,
                  "same_answers_as_serial": same}
        for case, runs in ((label, trav), (f"batch of {len(batch)}", bat)):
            t = Timing([x["seconds"] for x in runs])
            medians[name, case[:5]] = t.median
            run.add({"case": case, **common, **t.fields(), "runs": runs})

    base = args.configs[0]
    print("\n| configuration | traversal (s) | speed-up | batch (s) | speed-up | start + warm-up (s) | same answers |")
    print("|---|---|---|---|---|---|---|")
    for r in run.rows[::2]:
        name = r["config"]
        tr, ba = medians[name, "trave"], medians[name, "batch"]
        print(f"| {name} | {tr:.2f} | {medians[base, 'trave'] / tr:.2f}x | {ba:.2f} | "
              f"{medians[base, 'batch'] / ba:.2f}x | {r['start_seconds'] + r['warmup_seconds']:.1f} | "
              f"{r['same_answers_as_serial']} |")

    # projection from measured per-task costs
    costs, listing = piece_costs(inst)
    inst_costs = [statistics.median(b["instance_seconds"][i] for b in run.rows[1]["runs"])
                  for i in range(len(batch))]
    proj = {}
    for w in (1, 2, 16, 64):
        trav = listing + greedy_makespan(chunked(costs, 8 * w), w)
        bat = greedy_makespan(inst_costs, w)
        proj[w] = {"traversal": (listing + sum(costs)) / trav, "batch": sum(inst_costs) / bat}
    run.summary["projection"] = {"piece_seconds": costs, "listing_seconds": listing,
                             "instance_seconds": inst_costs, "speedup": proj}
    print(f"\nprojection ({len(costs)} pieces, listing {listing:.2f} s of {listing + sum(costs):.2f} s; "
          f"{len(inst_costs)} instances):")
    for w, p in proj.items():
        print(f"  {w:3d} workers: traversal {p['traversal']:.2f}x, batch {p['batch']:.2f}x")
    run.write(args.out)
    ok = all(r["same_answers_as_serial"] for r in run.rows)
    print("answers equal the serial run's" if ok else "ANSWERS DIFFER FROM THE SERIAL RUN")
    return 0 if ok else 1


def _csv(path: Path) -> list[dict]:
    import csv

    return list(csv.DictReader(open(path, newline=""))) if path.exists() else []


if __name__ == "__main__":
    sys.exit(main())
