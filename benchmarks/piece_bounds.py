"""The traversal's piece bounds replayed in CPU seconds, on the same pieces (issue 58).

``record`` runs :func:`polytrav.verify` on one ACAS Xu instance with the input split's open
boxes thinned to every N-th (``--every``; the answer is then not the instance's, only the
pieces matter) and saves the first ``--limit`` pieces the traversal bounds: their level,
input map ``M u + m``, vertices, halfspaces and margin, with the unsafe set and the network.
``replay`` bounds them again with :func:`polytrav.bounds.dnf.dnf_bound` as this checkout has
it and prints the pieces proven and the CPU seconds (:func:`time.process_time`, the median of
``--repeats``), so that two versions of the bounds compare on the same pieces, by CPU time,
which a loaded machine disturbs far less than wall time (the input split works to a wall-time
budget: on a loaded machine it leaves more boxes open, so whole runs do not compare). Only
pieces with vertices (low dimension) are recorded. Run with ``OPENBLAS_NUM_THREADS=1``.

``run`` times one whole instance in process (:func:`polytrav.verify` without a time limit,
as ``polytrav verify`` runs it; CPU and wall seconds, the split's and the traversal's counts)
and appends it to ``--out`` (JSON lines), so that runs alternated with and without a change
compare by CPU time on a loaded machine: without a time limit the split's deep search ends
by its count alone, the same work under any load (before, 30 s of wall clock capped it too,
and ``run`` passed a limit of 10 000 s to keep that cap out of reach: 3_3 property 2
bounded 22 528 boxes instead of 47 968 at a load average of 12).
``--numpy`` (both commands) keeps every slope ascent in NumPy (no compiled ascent,
:data:`polytrav.bounds.crown.KERNEL_AFTER`); without it, the compiled ascent runs from the
first piece in ``replay`` and as in any run in ``run``.

    OPENBLAS_NUM_THREADS=1 python benchmarks/piece_bounds.py record 3_3 2 --every 8 --out /tmp/p33.pkl
    OPENBLAS_NUM_THREADS=1 python benchmarks/piece_bounds.py replay /tmp/p33.pkl --repeats 3
    OPENBLAS_NUM_THREADS=1 python benchmarks/piece_bounds.py run 3_3 2 --numpy --out runs.jsonl
"""
from __future__ import annotations

import argparse
import pickle
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "acasxu"


class _Frame:
    """What a bound reads of a recorded piece's frame."""

    def __init__(self, dim: int):
        self.dim = dim

    def to_x(self, u):
        return u


class _Piece:
    """A recorded piece as :func:`~polytrav.bounds.dnf.dnf_bound` reads it."""

    def __init__(self, rec: dict):
        self.level, self.M, self.m, self.vertices = rec["level"], rec["M"], rec["m"], rec["V"]
        self.code, self.frame, self._rows = (), _Frame(rec["dim"]), (rec["A"], rec["b"])

    def halfspaces(self, box: bool = True):
        return self._rows


def record(network: str, prop: str, every: int, limit: int, out: Path) -> None:
    import polytrav.bounds.dnf as dnf
    import polytrav.bounds.settle as settle
    from polytrav import verify

    split_region, piece_margin = settle.split_region, dnf.dnf_piece_margin
    pieces, seen = [], {}

    def thinned(*args, **kwargs):
        found = split_region(*args, **kwargs)
        found.open_boxes = found.open_boxes[::every]
        return found

    def recorded(pairs, piece, context, **kwargs):
        margin = piece_margin(pairs, piece, context, **kwargs)
        seen["pairs"] = pairs
        if piece.vertices is not None and len(pieces) < limit:
            A, b = piece.halfspaces(box=False)
            pieces.append(dict(level=piece.level, M=piece.M, m=piece.m, V=piece.vertices, A=A,
                               b=b, dim=piece.frame.dim, margin=margin))
        return margin

    settle.split_region, dnf.dnf_piece_margin = thinned, recorded
    onnx = DATA / "onnx" / f"ACASXU_run2a_{network}_batch_2000.onnx"
    try:
        result = verify(onnx, DATA / "vnnlib" / f"prop_{prop}.vnnlib")
    finally:
        settle.split_region, dnf.dnf_piece_margin = split_region, piece_margin
    if not pieces:
        sys.exit("record: no piece was bounded (is the traversal's piece margin still "
                 "polytrav.bounds.dnf.dnf_piece_margin?)")
    with open(out, "wb") as f:
        pickle.dump({"onnx": str(onnx), "pairs": seen["pairs"], "pieces": pieces}, f)
    print(f"{len(pieces)} pieces of {network}/prop_{prop} (every {every}th open box; "
          f"{result.answer} in {result.seconds:.1f} s) -> {out}")


def _ascents(numpy: bool, at_once: bool) -> None:
    """Every slope ascent in NumPy (``numpy``), or compiled from the first (``at_once``)."""
    from polytrav.bounds import crown

    if numpy:
        crown.KERNEL_AFTER = sys.maxsize
    elif at_once:
        crown.KERNEL_AFTER = 0


def run(network: str, prop: str, numpy: bool, out: Path | None) -> None:
    import json
    import os

    from polytrav import verify
    from polytrav.bounds import crown

    _ascents(numpy, at_once=False)
    onnx = DATA / "onnx" / f"ACASXU_run2a_{network}_batch_2000.onnx"
    wall, cpu = time.perf_counter(), time.process_time()
    result = verify(onnx, DATA / "vnnlib" / f"prop_{prop}.vnnlib")
    row = {"instance": f"{network}/prop_{prop}", "answer": str(result.answer),
           "cpu_s": round(time.process_time() - cpu, 2),
           "wall_s": round(time.perf_counter() - wall, 2), "numpy": numpy,
           "compiled": bool(crown._kernel), "polytopes": result.polytopes, "lps": result.lps,
           "split": result.split, "load": round(os.getloadavg()[0], 1)}
    print(json.dumps(row))
    if out is not None:
        with open(out, "a") as f:
            f.write(json.dumps(row) + "\n")


def replay(path: Path, repeats: int, numpy: bool) -> None:
    from polytrav.bounds.dnf import dnf_bound
    from polytrav.bounds.split import LpContext
    from polytrav.host.runner import RunSession
    from polytrav.verification.verify import load_network

    _ascents(numpy, at_once=True)
    with open(path, "rb") as f:
        saved = pickle.load(f)
    context = LpContext(load_network(saved["onnx"]), RunSession(None).chains["lp"])
    pieces = [_Piece(rec) for rec in saved["pieces"]]
    seconds = []
    for _ in range(repeats):
        t = time.process_time()
        margins = np.array([dnf_bound(saved["pairs"], p, context)[0] for p in pieces])
        seconds.append(time.process_time() - t)
    was = np.array([rec["margin"] for rec in saved["pieces"]])
    print(f"{len(pieces)} pieces: {int((margins > 0).sum())} proven (recorded: "
          f"{int((was > 0).sum())}; {int(((was > 0) & (margins <= 0)).sum())} no longer), "
          f"CPU {statistics.median(seconds):.2f} s (median of {repeats}: "
          f"{', '.join(f'{s:.2f}' for s in seconds)})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="record the pieces one instance's traversal bounds")
    rec.add_argument("network", help="e.g. 3_3")
    rec.add_argument("prop", help="e.g. 2")
    rec.add_argument("--every", type=int, default=8, help="traverse every N-th open box")
    rec.add_argument("--limit", type=int, default=3000, help="pieces recorded at most")
    rec.add_argument("--out", type=Path, required=True)
    rep = sub.add_parser("replay", help="bound recorded pieces again, in CPU seconds")
    rep.add_argument("pieces", type=Path)
    rep.add_argument("--repeats", type=int, default=3)
    one = sub.add_parser("run", help="one instance's verify in process, in CPU seconds")
    one.add_argument("network", help="e.g. 3_3")
    one.add_argument("prop", help="e.g. 2")
    one.add_argument("--out", type=Path, help="append the row here (JSON lines)")
    for p in (rep, one):
        p.add_argument("--numpy", action="store_true", help="no compiled slope ascent")
    args = ap.parse_args()
    if args.command == "record":
        record(args.network, args.prop, args.every, args.limit, args.out)
    elif args.command == "run":
        run(args.network, args.prop, args.numpy, args.out)
    else:
        replay(args.pieces, args.repeats, args.numpy)


if __name__ == "__main__":
    main()
