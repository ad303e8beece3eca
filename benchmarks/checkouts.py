"""Two checkouts of polytrav, one run: traversal, ACAS Xu verification and analyses, side by side.

For a change that must not change speed (or must show how much it changed it): each side is a
Python interpreter whose environment has one checkout installed (``pip install -e``). Every
case runs in a fresh worker process of each side (imports untimed), ``--warmup`` calls
(discarded), then ``--repeats`` timed calls; the two sides alternate per round (A B, then B A)
and a side's time is the median over ``--rounds`` rounds of each worker's median. Each worker
also reports what it found (polytopes, answers, optima), which must agree between the sides,
and the commit of the checkout it imported. The table gives per case after / before, per
family and over all cases the median of those ratios.

    python benchmarks/checkouts.py --before ../venv_before/bin/python --after python \\
        --rounds 5 --out benchmarks/results/checkouts.json
    python benchmarks/checkouts.py --before A/bin/python --after B/bin/python \\
        --families traversal analyses --rounds 3     # some families only

The worker (``--worker CASE``) uses only the public API that both sides share.
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
from harness import (ACAS_C, Run, acas_onnx, acas_vnnlib, case, measure,  # noqa: E402
                     median, mnist_image, parser, pin)

#: ACAS Xu instances of 0.3-5 s (network, property), answers sat and unsat.
VERIFY = [("1_1", 1), ("2_8", 1), ("3_8", 1), ("5_9", 1), ("1_4", 2), ("1_9", 2), ("2_2", 3),
          ("1_1", 4), ("4_5", 10)]

#: Case -> family. Names: ``traverse acas 1_1 r=R``, ``traverse mnist2x10 eps=E``,
#: ``traverse random D-W-...-O``, ``verify acas NET prop P``, ``output_range acas 1_1 r=R``,
#: ``counterfactual NORM acas 1_1 r=R``, ``softmax_attack mnist2x10 eps=E``.
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
FAMILIES = {"traverse": "traversal", "verify": "verification"}


def family(name: str) -> str:
    return CASES.get(name) or FAMILIES.get(name.split()[0], "analyses")


# ---------------------------------------------------------------- the worker (either side)


def _call(name: str):
    """A zero-argument callable for case ``name`` returning a summary both sides must share."""
    import numpy as np

    from polytrav import analyze, traverse, verify

    words = name.split()
    value = words[-1].split("=")[-1]
    if words[0] == "traverse":
        net, region = case({"acas": f"acas_{value}", "mnist2x10": f"mnist_{value}"}.get(
            words[1], f"random_{value}"))
        return lambda: len(list(traverse(net, region, strategy="hierarchical")))
    if words[0] == "verify":
        onnx, spec = acas_onnx(words[2]), acas_vnnlib(words[4])
        return lambda: str(verify(onnx, spec, timeout=116).answer)
    net, region = case(f"acas_{value}" if "acas" in words else f"mnist_{value}")
    if words[0] == "output_range":
        return lambda: round(analyze(net, region, "output_range", strategy="hierarchical")[0].value["max"], 9)
    if words[0] == "counterfactual":
        params = {"x0": np.array(ACAS_C), "norm": words[1] if words[1] == "inf" else int(words[1])}
        return lambda: round(float(analyze(net, region, ("counterfactual", params), strategy="hierarchical")[0].value), 9)
    if words[0] == "softmax_attack":
        label = mnist_image(0)[1]
        return lambda: round(float(analyze(net, region, ("softmax_attack", {"label": label}), strategy="hierarchical")[0].value), 9)
    raise SystemExit(f"unknown case {name!r}")


def worker(name: str, repeats: int, warmup: int) -> None:
    from machine import commit

    call, found = _call(name), []
    t = measure(lambda: found.append(call()), repeats, warmup)
    assert all(f == found[0] for f in found), found
    print(json.dumps({**t.fields(), "found": found[0], "commit": commit()}))


# ---------------------------------------------------------------- the driver


def run_side(python: str, name: str, repeats: int, warmup: int) -> dict:
    # the same plugins on both sides: the built-ins only (an environment's third-party
    # plugins may not import against the other checkout)
    env = dict(os.environ, POLYTRAV_DISABLE_PLUGIN_AUTOLOAD="1")
    out = subprocess.run([python, __file__, "--worker", name, "--repeats", str(repeats),
                          "--warmup", str(warmup)], capture_output=True, text=True, check=False, env=env)
    if out.returncode:
        raise SystemExit(f"{python} failed on {name!r}:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = parser(__doc__, repeats=3, warmup=1, core=True)
    ap.add_argument("--before", default=sys.executable, help="interpreter with the old checkout")
    ap.add_argument("--after", default=sys.executable, help="interpreter with the new checkout")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cases", nargs="*", default=None, help=f"default: all of {list(CASES)}")
    ap.add_argument("--families", nargs="+", choices=sorted(set(CASES.values())),
                    default=sorted(set(CASES.values())), help="families of the default cases")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args.worker, args.repeats, args.warmup)
    pin(args.core)
    cases = args.cases or [c for c, f in CASES.items() if f in args.families]
    sides = {"before": args.before, "after": args.after}
    res = {c: {s: [] for s in sides} for c in cases}
    for r in range(args.rounds):
        for name in cases:
            for side in (("before", "after") if r % 2 == 0 else ("after", "before")):
                res[name][side].append(run_side(sides[side], name, args.repeats, args.warmup))
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    run = Run("checkouts", args, quiet=True)
    ratios = {}
    for name in cases:
        rows = {}
        for side in sides:
            workers = res[name][side]
            rows[side] = {"case": name, "family": family(name), "side": side,
                          "commit": workers[0]["commit"], "repeats": len(workers),
                          "warmup": args.warmup, "times": [w["median"] for w in workers],
                          "median": statistics.median(w["median"] for w in workers),
                          "calls": [w["times"] for w in workers], "found": workers[0]["found"]}
        ratios[name] = rows["after"]["median"] / rows["before"]["median"]
        rows["after"].update(over_before=ratios[name],
                             same_answer=rows["after"]["found"] == rows["before"]["found"])
        run.add(rows["before"])
        run.add(rows["after"])
    fams = {f: median(ratios[c] for c in cases if family(c) == f) for f in dict.fromkeys(map(family, cases))}
    run.summary.update(sides={s: rows[s]["commit"] for s in sides},
                       interpreters=sides, rounds=args.rounds, over_before=ratios,
                       family_median=fams, overall_median=statistics.median(ratios.values()))
    print("| family | case | before (s) | after (s) | after / before | same answer |")
    print("|---|---|---|---|---|---|")
    for before, after in zip(run.rows[::2], run.rows[1::2]):
        same = "yes" if after["same_answer"] else f"NO: {before['found']} / {after['found']}"
        print(f"| {after['family']} | {after['case']} | {before['median']:.3f} | {after['median']:.3f} | "
              f"{after['over_before']:.3f} | {same} |")
    for f, m in fams.items():
        n = sum(family(c) == f for c in cases)
        print(f"| **{f}** | median of {n} |  |  | **{m:.3f}** |  |")
    print(f"| **all** | median of {len(cases)} |  |  | **{run.summary['overall_median']:.3f}** |  |")
    print(f"before: {run.summary['sides']['before']}, after: {run.summary['sides']['after']}")
    run.write(args.out)


if __name__ == "__main__":
    main()
