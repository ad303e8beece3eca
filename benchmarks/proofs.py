"""Proof certificates on ACAS Xu: what is certified, sizes, checker time against verifier
time, and the cost of recording (issue 60).

Per instance (network, property) of ``../shared/data/acasxu``: ``polytrav.verify`` without a
certificate and with ``proof=`` (alternating, ``--repeat`` times each; medians), then
:func:`polytrav.proof.check.check_proof` on the certificate. One CSV row per instance:
answer, verify seconds (wall and CPU: ``time.process_time``, which a loaded machine
inflates less) without and with recording, the certificate's nodes, certified and
uncertified leaves, bytes, the checker's answer and seconds. Runs in this process (imports
and first calls paid once, before the first timed run).

    python benchmarks/proofs.py --networks all --props 3 4 --instances 1_1:5 1_1:6 3_3:9 4_5:10 \
        --timeout 116 --out benchmarks/results/proofs_acas_timing.csv
    python benchmarks/proofs.py --props --instances 1_1:2 1_7:2 3_3:2 --timeout 116
    python benchmarks/proofs.py --props --instances 3_3:2 4_2:2 --rest-factor 50

``--rest-factor``: the phase trees' budget (:data:`polytrav.proof.record.REST_TIME_FACTOR`,
times the time ``verify`` took) for boxes decided past the input split; the row's
``phase_nodes`` counts their nodes.
"""
from __future__ import annotations

import argparse
import csv
import statistics
import sys
import tempfile
import time
from pathlib import Path

DATA = Path("../shared/data/acasxu")


def instance(net: str, prop: int) -> tuple[Path, Path]:
    return (DATA / "onnx" / f"ACASXU_run2a_{net}_batch_2000.onnx",
            DATA / "vnnlib" / f"prop_{prop}.vnnlib")


def run(net: str, prop: int, repeat: int, timeout: float | None) -> dict:
    from polytrav import verify
    from polytrav.proof.check import check_proof

    onnx, vnnlib = instance(net, prop)
    plain, recorded, cpu_plain, cpu_recorded = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "p.proof"
        for _ in range(repeat):
            t, c = time.perf_counter(), time.process_time()
            r0 = verify(onnx, vnnlib, timeout=timeout)
            plain.append(time.perf_counter() - t)
            cpu_plain.append(time.process_time() - c)
            t, c = time.perf_counter(), time.process_time()
            r1 = verify(onnx, vnnlib, timeout=timeout, proof=path)
            recorded.append(time.perf_counter() - t)
            cpu_recorded.append(time.process_time() - c)
        row = {"network": net, "property": prop, "answer": str(r0.answer),
               "answer_recorded": str(r1.answer),
               "verify_s": round(statistics.median(plain), 3),
               "verify_proof_s": round(statistics.median(recorded), 3),
               "verify_cpu_s": round(statistics.median(cpu_plain), 3),
               "verify_proof_cpu_s": round(statistics.median(cpu_recorded), 3)}
        info = r1.proof or {}
        row.update({k: info.get(k, "") for k in ("nodes", "certified", "uncertified", "bytes")})
        row["phase_nodes"] = _phase_nodes(path) if r1.proof is not None else ""
        if r1.proof is not None:
            t, c = time.perf_counter(), time.process_time()
            checked = check_proof(onnx, vnnlib, path)
            row.update({"check": checked.status, "check_s": round(time.perf_counter() - t, 3),
                        "check_cpu_s": round(time.process_time() - c, 3),
                        "check_message": "" if checked.status == "valid" else str(checked)})
    return row


def _phase_nodes(path) -> int:
    """The certificate's phase-split nodes (:data:`polytrav.proof.check.PHASE`)."""
    import io
    import zipfile

    import numpy as np

    from polytrav.proof.check import PHASE

    with zipfile.ZipFile(path) as z, np.load(io.BytesIO(z.read("arrays.npz"))) as npz:
        return int(sum((npz[k] == PHASE).sum() for k in npz.files if k.endswith("_kind")))


def summary(rows: list[dict]) -> None:
    """Counts per checker answer, and over the certificates written: total seconds of
    verify without and with recording and of the checker (wall; CPU where recorded), and
    the certificates' sizes."""
    written = [r for r in rows if r.get("check")]
    print(f"{len(rows)} instances: "
          + ", ".join(f"{a} {sum(r['answer'] == a for r in rows)}"
                      for a in sorted({r['answer'] for r in rows})))
    print("checker: " + ", ".join(f"{a} {sum(r['check'] == a for r in written)}"
                                  for a in sorted({r['check'] for r in written})))
    if not written:
        return
    for key in ("verify_s", "verify_proof_s", "check_s", "verify_cpu_s", "verify_proof_cpu_s",
                "check_cpu_s"):
        if key in written[0]:
            print(f"  total {key}: {sum(float(r[key]) for r in written):.2f}")
    sizes = sorted(int(r["bytes"]) for r in written)
    print(f"  certificate bytes: median {statistics.median(sizes):.0f}, max {sizes[-1]}; "
          f"leaves: max {max(int(r['certified']) for r in written)}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--networks", nargs="+", default=["1_1"],
                    help="e.g. 1_1 3_3; 'all': the 45 networks")
    ap.add_argument("--props", nargs="*", type=int, default=[3, 4])
    ap.add_argument("--instances", nargs="+", default=None, metavar="NET:PROP",
                    help="After networks x props: e.g. 1_1:5 1_9:7 (--props alone: none).")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=None)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--rest-factor", type=float, default=None,
                    help="the phase trees' budget, times verify's time (default: the library's)")
    args = ap.parse_args()
    if args.rest_factor is not None:
        import polytrav.proof.record as record

        record.REST_TIME_FACTOR = args.rest_factor
    run("1_1", 4, 1, None)  # imports and first calls, untimed
    rows = []
    writer = None
    out = open(args.out, "w", newline="") if args.out else None
    if args.networks == ["all"]:
        args.networks = [f"{a}_{b}" for a in range(1, 6) for b in range(1, 10)]
    todo = [(net, prop) for prop in args.props for net in args.networks]
    todo += [(n, int(p)) for n, p in (i.split(":") for i in args.instances or [])]
    for net, prop in todo:
        row = run(net, prop, args.repeat, args.timeout)
        rows.append(row)
        print(row, flush=True)
        if out is not None:
            if writer is None:
                writer = csv.DictWriter(out, fieldnames=list(row) + [
                    k for k in ("check", "check_s", "check_cpu_s", "check_message")
                    if k not in row])
                writer.writeheader()
            writer.writerow(row)
            out.flush()
    if out is not None:
        out.close()
    summary(rows)
    bad = [r for r in rows if r.get("check") == "invalid"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
