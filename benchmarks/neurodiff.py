"""``polytrav.diff`` against NeuroDiff on NeuroDiff's own benchmark, side by side (issue 62).

The benchmark (Paulsen, Wang, Wang et al., "NeuroDiff: scalable differential verification of
neural networks using fine-grained approximation", ASE 2020): each ACAS Xu network ``f`` and
its copy ``g`` with weights rounded to 16 bits (the artifact's ``compressed_nnets``), over an
ACAS Xu property's input box (1, and 3 and 4), on output 0: does ``|g_0 - f_0| <= eps`` hold
everywhere, in the networks' normalised units? Both tools read the artifact's ``.nnet``
files (the Reluplex-era layout: polytrav says in a note what it ignores) with inputs and
outputs normalised (``Network.from_nnet(..., normalization="none")``), and the box is
NeuroDiff's (``nnet.c``'s ``load_inputs``, normalised as its ``normalize_input`` does:
clipped to the file's minima and maxima, then ``(x - mean) / range``).

**The peer** is built from its artifact outside this repository, never vendored::

    git clone https://github.com/pauls658/NeuroDiff-ASE2020-Artifact ../scratch/NeuroDiff
    apt-get install libopenblas-dev      # Debian's OpenBLAS, for the artifact's 0.3.6 zip
    cd ../scratch/NeuroDiff/DiffNN-Code
    CFLAGS="-DMAX_THREAD=2 -fcommon" make clean lineqall extravarssym all   # full NeuroDiff

(``-fcommon``: GCC 10 and later refuse the artifact's shared globals without it.)

**A query** runs both tools one after the other, each in a fresh process with ``--timeout``
seconds (the order alternates from query to query): NeuroDiff's ``delta_network_test PROP f
g EPS`` (``No adv!``: holds; ``adv found``: violated; killed at the timeout: unknown), then
polytrav's ``diff(f, g, box, outputs=[0], epsilon=EPS, verdict_only=True,
time_limit=TIMEOUT)`` (``--one``). Every answer is checked: ``--samples`` uniform points of
the box give the largest ``|g_0 - f_0|`` seen (a ``holds`` with a sample above ``eps`` is
wrong); a polytrav ``violated`` carries its point, replayed by a forward pass. The two tools
must never disagree.

    python benchmarks/neurodiff.py --neurodiff ../scratch/NeuroDiff/DiffNN-Code \\
        --timeout 120 --out benchmarks/results/neurodiff.json
    python benchmarks/neurodiff.py --neurodiff ... --nets 1_1 2_3 --props 1 --epsilons 0.05

``--summarise FILE``: the summary of a results file again (decided per tool, totals, the
ratio, queries slower than NeuroDiff + 1 s, disagreements).
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import THREADS, Run, load, parser  # noqa: E402

#: NeuroDiff's raw boxes (``nnet.c``, ``load_inputs``), per property: (lower, upper).
BOXES = {
    1: ([55947.691, -3.141592, -3.141592, 1145, 0], [60760, 3.141592, 3.141592, 1200, 60]),
    3: ([1500, -0.06, 3.10, 980, 960], [1800, 0.06, 3.141592, 1200, 1200]),
    4: ([1500, -0.06, 0, 1000, 700], [1800, 0.06, 0, 1200, 800]),
}
#: The queries of the paper: prop 1 at both epsilons, props 3 and 4 at 0.01.
DEFAULT_QUERIES = [(1, 0.05), (1, 0.01), (3, 0.01), (4, 0.01)]
NETS = [f"{a}_{b}" for a in range(1, 6) for b in range(1, 10)]


def files(neurodiff: Path, net: str) -> tuple[Path, Path]:
    """The original and the 16-bit copy of ACAS Xu network ``net`` in the artifact."""
    return (neurodiff / "nnet" / f"ACASXU_run2a_{net}_batch_2000.nnet",
            neurodiff / "compressed_nnets" / f"ACASXU_run2a_{net}_batch_2000_16bit.nnet")


def normalised_box(path: Path, prop: int):
    """NeuroDiff's box of ``prop`` in the normalised inputs of ``path``'s network."""
    import warnings

    from polytrav import Box, Network

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the Reluplex-era layout's note
        raw = Network.from_nnet(path)  # input_domain: the file's minima and maxima
    lo, hi = (np.asarray(v, float) for v in BOXES[prop])
    mins, maxes = raw.input_domain
    text = [ln for ln in path.read_text().splitlines() if not ln.startswith("//")]
    means = np.array([float(v) for v in text[5].split(",") if v.strip()][:5])
    ranges = np.array([float(v) for v in text[6].split(",") if v.strip()][:5])
    lo, hi = np.clip(lo, mins, maxes), np.clip(hi, mins, maxes)
    return Box((lo - means) / ranges, (hi - means) / ranges)


def query(neurodiff: Path, net: str, prop: int):
    """``(f, g, box)``: the network, its 16-bit copy (inputs and outputs normalised) and the
    property's normalised box."""
    import warnings

    from polytrav import Network

    f_path, g_path = files(neurodiff, net)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the Reluplex-era layout's note
        f = Network.from_nnet(f_path, normalization="none")
        g = Network.from_nnet(g_path, normalization="none")
    return f, g, normalised_box(f_path, prop)


def polytrav_one(neurodiff: Path, net: str, prop: int, eps: float, timeout: float,
                 workers: int = 1) -> dict:
    """One query by polytrav (run in a child process: ``--one``); with ``workers`` > 1, in
    parts on a pool of that many processes (``diff(..., executor=)``). ``cpu``: this
    process's CPU seconds and its pool's."""
    import resource
    from concurrent.futures import ProcessPoolExecutor

    from polytrav import diff

    t = time.perf_counter()
    f, g, box = query(neurodiff, net, prop)
    kwargs = dict(outputs=[0], epsilon=eps, verdict_only=True, time_limit=timeout)
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            res = diff(f, g, box, executor=pool, **kwargs)
    else:
        res = diff(f, g, box, **kwargs)
    seconds = time.perf_counter() - t
    x = None if res.violation is None else np.asarray(res.violation.get("x"), float).tolist()
    cpu = sum(getattr(resource.getrusage(who), k) for who in (resource.RUSAGE_SELF,
              resource.RUSAGE_CHILDREN) for k in ("ru_utime", "ru_stime"))
    return {"answer": res.verdict.value, "seconds": seconds, "x": x, "cpu": cpu,
            "polytopes": res.n_polytopes, "split": res.split, "workers": workers}


def run_polytrav(neurodiff: Path, net: str, prop: int, eps: float, timeout: float,
                 workers: int = 1) -> dict:
    """:func:`polytrav_one` in a fresh process, killed at twice the budget (``hung``)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--neurodiff", str(neurodiff),
           "--one", net, str(prop), str(eps), "--timeout", str(timeout),
           "--workers", str(workers)]
    t = time.perf_counter()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=2 * timeout + 60,
                             env={**os.environ, **THREADS})
    except subprocess.TimeoutExpired:
        return {"answer": "hung", "seconds": time.perf_counter() - t}
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode or not lines:
        return {"answer": "error", "seconds": time.perf_counter() - t,
                "reason": (out.stderr.strip().splitlines() or ["?"])[-1]}
    row = json.loads(lines[-1])
    row["wall"] = time.perf_counter() - t  # with the interpreter's start-up, as NeuroDiff's
    return row


def run_neurodiff(neurodiff: Path, net: str, prop: int, eps: float, timeout: float) -> dict:
    """NeuroDiff's answer and wall time (its own process, killed at the timeout)."""
    f_path, g_path = files(neurodiff, net)
    cmd = [str(neurodiff / "delta_network_test"), str(prop), str(f_path), str(g_path), str(eps)]
    t = time.perf_counter()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                             cwd=neurodiff)
    except subprocess.TimeoutExpired:
        return {"answer": "unknown", "seconds": time.perf_counter() - t, "reason": "timeout"}
    text = out.stdout + out.stderr
    answer = "holds" if "No adv!" in text else "violated" if "adv found" in text else "error"
    return {"answer": answer, "seconds": time.perf_counter() - t}


def sampled_gap(neurodiff: Path, net: str, prop: int, n: int, seed: int = 0) -> float:
    """The largest ``|g_0 - f_0|`` over ``n`` uniform points of the box (float64)."""
    f, g, box = query(neurodiff, net, prop)
    X = np.random.default_rng(seed).uniform(box.lower, box.upper, (n, 5))
    return float(np.abs(g.forward(X)[:, 0] - f.forward(X)[:, 0]).max())


def replayed(neurodiff: Path, net: str, prop: int, eps: float, x) -> bool:
    """A polytrav witness: in the box and ``|g_0 - f_0| > eps`` by a forward pass."""
    f, g, box = query(neurodiff, net, prop)
    x = np.asarray(x, float)
    return bool(box.contains(x) and abs(g.forward(x)[0] - f.forward(x)[0]) > eps)


def check(row: dict, neurodiff: Path, gap: float) -> str:
    """``ok``, ``disagree`` or ``wrong: ...`` for one row's two answers."""
    answers = {row["polytrav"]["answer"], row["neurodiff"]["answer"]}
    if {"holds", "violated"} <= answers:
        return "disagree"
    for tool in ("polytrav", "neurodiff"):
        if row[tool]["answer"] == "holds" and gap > row["epsilon"]:
            return f"wrong: {tool} says holds, a sample gives {gap:.6g}"
    if row["polytrav"]["answer"] == "violated" and not replayed(
            neurodiff, row["net"], row["prop"], row["epsilon"], row["polytrav"].get("x")):
        return "wrong: polytrav's witness does not replay"
    return "ok"


def summarise(rows: list[dict]) -> dict:
    """Decided per tool, totals (an undecided query counts its time), the ratio, per-query
    slowdowns, disagreements."""
    decided = {t: sum(r[t]["answer"] in ("holds", "violated") for r in rows)
               for t in ("polytrav", "neurodiff")}
    total = {t: sum(r[t].get("wall", r[t]["seconds"]) for r in rows)
             for t in ("polytrav", "neurodiff")}
    slower = [f"{r['net']}/p{r['prop']}/{r['epsilon']}" for r in rows
              if r["polytrav"].get("wall", r["polytrav"]["seconds"])
              > r["neurodiff"]["seconds"] + 1.0]
    both = [r for r in rows if r["polytrav"]["answer"] in ("holds", "violated")
            and r["neurodiff"]["answer"] in ("holds", "violated")]
    ratios = [r["polytrav"].get("wall", r["polytrav"]["seconds"]) / r["neurodiff"]["seconds"]
              for r in both if r["neurodiff"]["seconds"] > 0]
    return {"queries": len(rows), "decided": decided, "total_seconds": total,
            "ratio": total["polytrav"] / total["neurodiff"] if total["neurodiff"] else None,
            "geomean_ratio_both_decided": (float(np.exp(np.mean(np.log(ratios))))
                                           if ratios else None),
            "median_ratio_both_decided": statistics.median(ratios) if ratios else None,
            "slower_than_neurodiff_plus_1s": slower,
            "checks": {c: sum(r["check"] == c for r in rows) for c in {r["check"] for r in rows}}}


def main(argv=None) -> int:
    ap = parser(__doc__, repeats=None)
    ap.add_argument("--neurodiff", type=Path, required=True,
                    help="the artifact's DiffNN-Code folder, built (see above)")
    ap.add_argument("--nets", nargs="+", default=NETS, help="ACAS Xu networks (1_1 .. 5_9)")
    ap.add_argument("--queries", nargs="+", default=None, metavar="PROP:EPS",
                    help="property and epsilon pairs (default: 1:0.05 1:0.01 3:0.01 4:0.01)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per tool and query")
    ap.add_argument("--samples", type=int, default=200_000, help="points per box for the check")
    ap.add_argument("--workers", type=int, default=1,
                    help="polytrav's processes (> 1: diff(..., executor=) on a process pool; "
                         "NeuroDiff is built with 2 threads)")
    ap.add_argument("--one", nargs=3, metavar=("NET", "PROP", "EPS"), help=argparse_hidden())
    ap.add_argument("--summarise", type=Path, default=None, help="a results file to summarise")
    args = ap.parse_args(argv)
    neurodiff = args.neurodiff.resolve()
    if args.one:
        net, prop, eps = args.one
        print(json.dumps(polytrav_one(neurodiff, net, int(prop), float(eps), args.timeout,
                                      args.workers)))
        return 0
    if args.summarise:
        print(json.dumps(summarise(load(args.summarise)["rows"]), indent=1))
        return 0
    if not (neurodiff / "delta_network_test").is_file():
        ap.error(f"{neurodiff}/delta_network_test is missing: build NeuroDiff first (see --help)")
    queries = DEFAULT_QUERIES if args.queries is None else [
        (int(q.split(":")[0]), float(q.split(":")[1])) for q in args.queries]
    run = Run("neurodiff", args)
    k = 0
    for prop, eps in queries:
        for net in args.nets:
            tools = [("neurodiff", run_neurodiff),
                     ("polytrav", lambda *a: run_polytrav(*a, workers=args.workers))]
            row = {"net": net, "prop": prop, "epsilon": eps}
            for name, fn in (tools if k % 2 == 0 else tools[::-1]):  # alternate the order
                row[name] = fn(neurodiff, net, prop, eps, args.timeout)
            k += 1
            row["sampled_max_gap"] = sampled_gap(neurodiff, net, prop, args.samples)
            row["check"] = check(row, neurodiff, row["sampled_max_gap"])
            run.add(row)
            run.summary.update(summarise(run.rows))
            run.write(args.out)
    print(json.dumps(run.summary, indent=1))
    return 1 if any(r["check"] != "ok" for r in run.rows) else 0


def argparse_hidden():
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    sys.exit(main())
