"""Two checkouts of polytrav, one run: traversal, ACAS Xu verification and analyses, side by side.

For a change that must not change speed (the architecture redesign of issue 25): each side is
a Python interpreter whose environment has one checkout installed (``pip install -e``). Every
case runs in a fresh worker process of each side (imports untimed), one warm-up call
(untimed), then ``--repeats`` timed calls; the two sides alternate per round (A B, then B A)
and the quoted time is the median over rounds of each worker's median. Each worker also
reports what it found (polytopes, answers, optima), which must agree between the sides.

    python benchmarks/checkouts.py --before ../venv_before/bin/python --after python \\
        --rounds 5 --out benchmarks/results/checkouts.json

The worker (``--worker CASE``) uses only the public API that both sides share.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
ACAS = DATA / "acasxu"
ACAS_C = [-0.301041984, 0.0, 0.496690162, 0.4, 0.4]

#: ACAS Xu instances of 0.3-5 s (network, property), answers sat and unsat.
VERIFY = [("1_1", 1), ("2_8", 1), ("3_8", 1), ("5_9", 1), ("1_4", 2), ("1_9", 2), ("2_2", 3),
          ("1_1", 4), ("4_5", 10)]

CASES = {
    "traverse acas 1_1 r=0.005": "traversal",
    "traverse mnist2x10 eps=0.05": "traversal",
    "traverse random 2-32-32-1": "traversal",
    **{f"verify acas {n} prop {p}": "verification" for n, p in VERIFY},
    "output_range acas 1_1 r=0.005": "analyses",
    "counterfactual inf acas 1_1 r=0.005": "analyses",
    "counterfactual 1 acas 1_1 r=0.005": "analyses",
    "softmax_attack mnist2x10 eps=0.02": "analyses",
}


# ---------------------------------------------------------------- the worker (either side)


def _call(case: str):
    """A zero-argument callable for ``case`` returning a summary that both sides must share."""
    import numpy as np

    from polytrav import Ball, Box, Network, analyze, traverse, verify

    def acas(name="1_1"):
        return Network.from_onnx(ACAS / f"onnx/ACASXU_run2a_{name}_batch_2000.onnx")

    def acas_box(r):
        c = np.array(ACAS_C)
        return Box(c - r, c + r)

    def mnist(eps):
        net = Network.from_onnx(DATA / "mnist/mnist2x10.onnx")
        x0 = np.load(DATA / "mnist/mnist_test.npz")["images"][0].reshape(-1) / 255.0
        label = int(np.load(DATA / "mnist/mnist_test.npz")["labels"][0])
        return net, Ball(x0, eps, norm="inf") & Box(0.0, 1.0), label

    words = case.split()
    if words[0] == "traverse":
        if words[1] == "acas":
            net, region = acas(), acas_box(0.005)
        elif words[1] == "mnist2x10":
            net, region, _ = mnist(0.05)
        else:
            rng = np.random.default_rng(0)
            sizes = [2, 32, 32, 1]
            net = Network.from_arrays([rng.normal(size=(o, i)) / np.sqrt(i) for i, o in zip(sizes, sizes[1:])],
                                      [rng.normal(size=o) * 0.1 for o in sizes[1:]])
            region = Box([-1.0, -1.0], [1.0, 1.0])
        return lambda: len(list(traverse(net, region, strategy="hierarchical")))
    if words[0] == "verify":
        onnx = ACAS / f"onnx/ACASXU_run2a_{words[2]}_batch_2000.onnx"
        spec = ACAS / f"vnnlib/prop_{words[4]}.vnnlib"
        return lambda: str(verify(onnx, spec, timeout=116).answer)
    if words[0] == "output_range":
        net, region = acas(), acas_box(0.005)
        return lambda: round(analyze(net, region, "output_range", strategy="hierarchical")[0].value["max"], 9)
    if words[0] == "counterfactual":
        net, region = acas(), acas_box(0.005)
        params = {"x0": np.array(ACAS_C), "norm": words[1] if words[1] == "inf" else int(words[1])}
        return lambda: round(float(analyze(net, region, ("counterfactual", params), strategy="hierarchical")[0].value), 9)
    if words[0] == "softmax_attack":
        net, region, label = mnist(0.02)
        return lambda: round(float(analyze(net, region, ("softmax_attack", {"label": label}), strategy="hierarchical")[0].value), 9)
    raise SystemExit(f"unknown case {case!r}")


def worker(case: str, repeats: int) -> None:
    call = _call(case)
    found = call()  # warm-up: first imports and compiled subproblems
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        again = call()
        times.append(time.perf_counter() - t0)
        assert again == found, (again, found)
    print(json.dumps({"seconds": statistics.median(times), "found": found}))


# ---------------------------------------------------------------- the driver


def run_side(python: str, case: str, repeats: int) -> dict:
    # the same plugins on both sides: the built-ins only (an environment's third-party
    # plugins may not import against the other checkout)
    env = dict(os.environ, POLYTRAV_DISABLE_PLUGIN_AUTOLOAD="1")
    out = subprocess.run([python, __file__, "--worker", case, "--repeats", str(repeats)],
                         capture_output=True, text=True, check=False, env=env)
    if out.returncode:
        raise SystemExit(f"{python} failed on {case!r}:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def version(python: str) -> str:
    """The commit of the checkout ``python`` imports polytrav from."""
    code = "import polytrav, subprocess, pathlib; p = pathlib.Path(polytrav.__file__).parents[1]; " \
           "print(subprocess.run(['git', '-C', str(p), 'rev-parse', '--short', 'HEAD'], " \
           "capture_output=True, text=True).stdout.strip())"
    return subprocess.run([python, "-c", code], capture_output=True, text=True).stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", default=sys.executable, help="interpreter with the old checkout")
    ap.add_argument("--after", default=sys.executable, help="interpreter with the new checkout")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3, help="timed calls per worker")
    ap.add_argument("--cases", nargs="*", default=list(CASES))
    ap.add_argument("--out", type=Path)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args.worker, args.repeats)
    sides = {"before": args.before, "after": args.after}
    times = {c: {s: [] for s in sides} for c in args.cases}
    found = {c: {} for c in args.cases}
    for r in range(args.rounds):
        for case in args.cases:
            for side in (("before", "after") if r % 2 == 0 else ("after", "before")):
                res = run_side(sides[side], case, args.repeats)
                times[case][side].append(res["seconds"])
                found[case].setdefault(side, res["found"])
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    rows = []
    print("| group | case | before (s) | after (s) | after / before | same answer |")
    print("|---|---|---|---|---|---|")
    for case in args.cases:
        b, a = (statistics.median(times[case][s]) for s in ("before", "after"))
        same = found[case]["before"] == found[case]["after"]
        rows.append({"case": case, "group": CASES.get(case, ""), "before": b, "after": a,
                     "ratio": a / b, "same": same, "found": found[case], "all": times[case]})
        print(f"| {CASES.get(case, '')} | {case} | {b:.3f} | {a:.3f} | {a / b:.3f} | "
              f"{'yes' if same else 'NO: ' + str(found[case])} |")
    for group in dict.fromkeys(CASES.values()):
        ratios = [row["ratio"] for row in rows if row["group"] == group]
        if ratios:
            print(f"| {group} | median of {len(ratios)} |  |  | {statistics.median(ratios):.3f} |  |")
    if args.out:
        args.out.write_text(json.dumps({
            "machine": platform.platform(), "python": platform.python_version(),
            "before": version(args.before), "after": version(args.after),
            "command": "python benchmarks/checkouts.py --before <before> --after <after> "
                       f"--rounds {args.rounds} --repeats {args.repeats}", "rounds": args.rounds, "repeats": args.repeats,
            "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
