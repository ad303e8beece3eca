"""VNN-COMP mnistfc (2021 and 2022 properties) with ``polytrav.verify``: answers and times.

Runs rows of ``../shared/data/mnistfc/instances.csv`` (180 rows: the first 90 are VNN-COMP
2021, the last 90 VNN-COMP 2022, same networks, other images) through
:func:`polytrav.verify` with each row's timeout (120 s for 256x2, 300 s for 256x4 and 256x6)
and compares each answer with ``mnistfc/ground_truth.csv``, matched by edition, network and
property name. ``sat`` = an adversarial example exists (robustness violated), ``unsat`` =
robust. ``correct`` is ``yes``/``no`` for a decided answer, ``unchecked`` for a decided answer
on an instance no trusted tool decided (ground truth ``unknown``), ``undecided`` otherwise.

Default: the 60 instances of ``mnist-net_256x2`` (784-256-256-10), both editions. The CSV
(``--out``) gets one row per instance as soon as it finishes and ``--resume`` continues it,
as in ``acasxu.py`` (whose runner this script uses); a JSON with the same stem records the
machine and command. The summary table gives decided / correct / wrong per edition and wrong
answers are printed loudly (exit status 1).

    python benchmarks/mnistfc.py --out benchmarks/results/mnistfc_256x2.csv
    python benchmarks/mnistfc.py --out benchmarks/results/mnistfc_256x2.csv --resume   # continue / reprint
    python benchmarks/mnistfc.py --networks 256x2 256x4 256x6 --out benchmarks/results/mnistfc_all.csv
    python benchmarks/mnistfc.py --editions 2022 --limit 2 --timeout 20 --out /tmp/mnistfc.csv
"""
from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from acasxu import (DATA, add_run_options, group_summary, pending, report_wrong,  # noqa: E402
                    run_instances, selected_rows, summary_table, write_meta)

BENCH = DATA / "mnistfc"
KEY = ["edition", "network", "property"]
ROWS_PER_EDITION = 90


def full_name(network: str) -> str:
    """``mnist-net_256x2`` from ``256x2``, ``mnist-net_256x2`` or ``mnist-net_256x2.onnx``."""
    stem = Path(network).stem if network.endswith(".onnx") else network
    return stem if stem.startswith("mnist-net_") else f"mnist-net_{stem}"


def read_instances(networks: list[str], editions: list[str], props: list[str] | None,
                   timeout: float | None) -> list[dict]:
    """Selected rows of instances.csv with their edition and expected verdict, in file order."""
    truth = {(r["edition"], r["network"], r["property"]): r["verdict"]
             for r in csv.DictReader(open(BENCH / "ground_truth.csv", newline=""))}
    out = []
    for k, (onnx, vnnlib, seconds) in enumerate(csv.reader(open(BENCH / "instances.csv",
                                                                newline=""))):
        edition = "2021" if k < ROWS_PER_EDITION else "2022"
        if f"vnnlib_{edition}/" not in vnnlib:
            raise SystemExit(f"instances.csv row {k + 1} ({vnnlib}) is not of edition {edition}")
        key = {"edition": edition, "network": Path(onnx).stem, "property": Path(vnnlib).stem}
        if (key["network"] not in networks or edition not in editions
                or (props and key["property"] not in props)):
            continue
        out.append({"key": key, "onnx": str(BENCH / onnx), "vnnlib": str(BENCH / vnnlib),
                    "timeout": float(timeout if timeout is not None else seconds),
                    "expected": truth[(edition, key["network"], key["property"])]})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--networks", nargs="+", default=["256x2"],
                    help="256x2, 256x4, 256x6 (or full names; default: 256x2)")
    ap.add_argument("--editions", nargs="+", default=["2021", "2022"], choices=["2021", "2022"])
    ap.add_argument("--props", nargs="+", help="property names such as prop_0_0.03 (default: all)")
    add_run_options(ap, ROOT / "benchmarks" / "results" / "mnistfc.csv")
    args = ap.parse_args()
    instances = read_instances([full_name(n) for n in args.networks], args.editions, args.props,
                               args.timeout)
    if not instances:
        raise SystemExit("no instance matches --networks/--editions/--props")
    instances = instances[:args.limit] if args.limit else instances
    for inst in instances:
        inst["mode"] = args.mode
    todo = pending(instances, args.out, KEY, args.resume, args.overwrite)
    print(f"{len(instances)} instances selected, {len(todo)} to run, {args.workers} worker(s)")
    t0 = time.perf_counter()
    run_instances(todo, args.out, KEY, args.workers)
    rows = selected_rows(instances, args.out, KEY)
    groups = {f"{e} {n}": group_summary([r for r in rows if (r["edition"], r["network"]) == (e, n)])
              for e, n in dict.fromkeys((r["edition"], r["network"]) for r in rows)}
    groups.update({e: group_summary([r for r in rows if r["edition"] == e])
                   for e in sorted({r["edition"] for r in rows})})
    groups["all"] = group_summary(rows)
    print()
    print(summary_table(groups, "edition / network"))
    print(f"\nwall time of this invocation: {time.perf_counter() - t0:.0f} s; "
          f"results in {args.out}")
    n_wrong = report_wrong(rows, KEY)
    write_meta(args.out, args, groups)
    sys.exit(1 if n_wrong else 0)


if __name__ == "__main__":
    main()
