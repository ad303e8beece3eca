"""Certificates of ``diff``'s ε-equivalence on two-network queries: sizes, checker time
against the time ``diff`` took (issue 60, item 3).

Per query of a folder that ``benchmarks/diff_instances.py`` wrote (its ``instances.csv``):
:func:`polytrav.diff` with ``verdict_only`` at the query's ε (its box and outputs, the
networks as exact float64 models), then, where it holds,
:func:`polytrav.proof.equivalence.write_diff_proof` within ``--budget`` seconds (None: no
limit) and :func:`polytrav.proof.check.check_diff_proof` on the certificate. One CSV row per
query: the verdict, diff's wall and CPU seconds, the certificate's nodes, certified and
uncertified leaves, bytes, its wall and CPU seconds, the checker's answer and seconds (wall
and CPU). Runs in this process (imports and first calls paid once, before the first row).

    python benchmarks/diff_instances.py OUT --networks 1_1 1_3 2_4 3_3 --boxes p3 ...
    python benchmarks/proofs_diff.py OUT --budget 120 --out benchmarks/results/proofs_diff.csv
    python benchmarks/proofs_diff.py OUT --only 1_1_prune_p3_eps0.05.vnnlib
    python benchmarks/proofs_diff.py OUT --factor 4      # polytrav diff --proof's budget
    python benchmarks/proofs_diff.py OUT --factor 4 --out F.csv --resume   # skip F's rows
    python benchmarks/proofs_diff.py OUT --factor 4 --cpu-clock   # on a shared machine

Each row is written and flushed as its query ends, so a cut run is usable; ``--resume``
appends to ``--out`` and skips the queries it already holds. A query that raises gets a row
whose ``check`` is ``error: <the exception>`` and the run goes on. ``--cpu-clock``: the
budgets count this process's CPU seconds (``time.perf_counter``, which the deadlines read,
made ``time.process_time`` here; ``--factor`` times diff's CPU seconds), so that a loaded
machine does not cut certificates that an idle one would finish; the wall columns stay wall.
NumPy's BLAS runs on one thread, as in ``polytrav diff --proof`` and ``polytrav check-proof``
(docs/cli.md, "Threads"), unless one of its variables is set: under load a second OpenBLAS
thread multiplied the checker's CPU seconds by 6 (1_2 pruned ε 0.05: 18.7 s against 3.1 s).
"""
from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
import time
from pathlib import Path

FIELDS = ["query", "verdict", "diff_s", "diff_cpu", "nodes", "certified", "uncertified",
          "bytes", "proof_s", "proof_cpu", "check", "check_s", "check_cpu"]


WALL = time.perf_counter  # (kept before --cpu-clock replaces it)
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def run(folder: Path, row: dict, budget: float | None, factor: float | None = None) -> dict:
    import numpy as np

    import polytrav
    from polytrav.proof.check import check_diff_proof
    from polytrav.proof.equivalence import write_diff_proof
    from polytrav.verification.diff_query import diff_shape
    from polytrav.verification.query import read_query

    shape = diff_shape(read_query(folder / row["query"]))
    f, g = (polytrav.Network.from_onnx(folder / row[k]) for k in ("f", "g"))
    eps, outputs = float(shape.epsilon), list(shape.outputs)
    t, c = WALL(), time.process_time()
    res = polytrav.diff(f, g, polytrav.Box(shape.lower, shape.upper), outputs=outputs,
                        epsilon=eps, verdict_only=True)
    out = {"query": row["query"], "verdict": res.verdict.value,
           "diff_s": WALL() - t, "diff_cpu": time.process_time() - c}
    if res.verdict.value != "holds":
        return out
    if factor is not None:  # as `polytrav diff --proof`: a multiple of diff's (wall) time
        budget = max(10.0, factor * out["diff_cpu" if time.perf_counter is time.process_time
                                        else "diff_s"])
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "d.proof"
        t, c = WALL(), time.process_time()
        written = write_diff_proof(f, g, shape.lower, shape.upper, eps, path, outputs=outputs,
                                   seconds=budget)
        out.update(proof_s=WALL() - t, proof_cpu=time.process_time() - c,
                   **{k: written[k] for k in ("nodes", "certified", "uncertified", "bytes")})
        t, c = WALL(), time.process_time()
        answer = check_diff_proof(folder / row["f"], folder / row["g"], path, eps,
                                  np.asarray(shape.lower), np.asarray(shape.upper), outputs)
        out.update(check=answer.status, check_s=WALL() - t,
                   check_cpu=time.process_time() - c)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path, help="a folder of benchmarks/diff_instances.py")
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds for each certificate (default: no limit)")
    ap.add_argument("--factor", type=float, default=None,
                    help="seconds for each certificate: this many times diff's, at least 10 "
                         "(polytrav diff --proof's rule with 4; instead of --budget)")
    ap.add_argument("--only", nargs="*", default=None, help="these queries only")
    ap.add_argument("--out", type=Path, default=None, help="CSV file (default: stdout)")
    ap.add_argument("--resume", action="store_true",
                    help="append to --out, skipping the queries it already holds")
    ap.add_argument("--cpu-clock", action="store_true",
                    help="budgets in CPU seconds of this process (a shared machine)")
    args = ap.parse_args(argv)
    if not any(name in os.environ for name in THREAD_VARIABLES):  # (before NumPy loads)
        os.environ.update(dict.fromkeys(THREAD_VARIABLES, "1"))
    if args.cpu_clock:
        time.perf_counter = time.process_time
    with open(args.folder / "instances.csv") as fh:
        rows = [r for r in csv.DictReader(fh) if args.only is None or r["query"] in args.only]
    done = set()
    if args.resume and args.out and args.out.exists() and args.out.stat().st_size:
        with open(args.out) as fh:
            done = {r["query"] for r in csv.DictReader(fh)}
    out = open(args.out, "a" if done else "w", newline="") if args.out else sys.stdout
    writer = csv.DictWriter(out, FIELDS)
    if not done:
        writer.writeheader()
    for row in rows:
        if row["query"] in done:
            continue
        try:
            result = run(args.folder, row, args.budget, args.factor)
        except Exception as exc:  # one query's failure is a row, not the end of the run
            result = {"query": row["query"], "check": f"error: {type(exc).__name__}: {exc}"}
        writer.writerow({k: (f"{v:.3f}" if isinstance(v, float) else v)
                         for k, v in result.items()})
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
