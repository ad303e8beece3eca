"""ACAS Xu (VNN-COMP 2021 instances) with ``polytrav.verify``: answers, times, Figure 5.

Runs the instances of ``../shared/data/acasxu/instances.csv`` (onnx, vnnlib, timeout; 116 s
each) through :func:`polytrav.verify` and compares every answer with
``acasxu/ground_truth.csv`` (VNN-LIB semantics: ``sat`` = property violated, ``unsat`` =
property holds). ``correct`` is ``yes``/``no`` for a ``sat``/``unsat`` answer and
``undecided`` for ``timeout``/``unknown``/``error``. ``proven`` counts the pieces that bounds
proved inside the traversals; ``split_boxes``, ``split_proven``, ``split_open`` are the input
splitting's boxes bounded, proven and left to traverse (empty where it did not run).

The CSV (``--out``) gets one row per instance as soon as it finishes (flushed), so a killed
run loses at most the instances in progress: ``--resume`` skips the (network, property) pairs
already in the CSV and appends the rest; with every instance already done it only prints the
summary and redraws the figure. A JSON next to the CSV (same stem) records the machine and the
command of every invocation. ``--workers N`` runs N instances at a time in separate processes
(default 1: in this process); each worker pays the import and first-call costs once, untimed.

At the end: a markdown table per property (answers, decided, correct, wrong, total and median
time), a loud list of wrong answers (exit status 1 if there is any) and, with ``--figure``,
the paper's Figure 5: per property, the number of polytopes (log) and the time (log) per
network, markers for holds (unsat), violated (sat) and undecided.

    python benchmarks/acasxu.py --out benchmarks/results/acasxu.csv --figure benchmarks/results/acasxu_fig5.png
    python benchmarks/acasxu.py --out benchmarks/results/acasxu.csv --resume        # continue / reprint
    python benchmarks/acasxu.py --props all --out benchmarks/results/acasxu_all.csv  # all 186 instances
    python benchmarks/acasxu.py --networks 1_7 3_3 --props 3 4 --timeout 20 --out /tmp/acas.csv --figure /tmp/acas.png
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import re
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
BENCH = DATA / "acasxu"
sys.path.insert(0, str(ROOT / "benchmarks"))

from harness import header, now, relative  # noqa: E402

#: CSV columns after the instance's own key columns.
RESULT_FIELDS = ["answer", "expected", "correct", "polytopes", "lps", "seconds", "timeout",
                 "reason", "proven", "mode", "split_boxes", "split_proven", "split_open"]
KEY = ["network", "property"]
DECIDED = ("sat", "unsat")


# ---------------------------------------------------------------------- instances
def resolve(folder: Path, name: str, sub: str) -> Path:
    """A file named in an instances.csv: relative to its folder, else in ``folder/sub``."""
    path = folder / name
    return path if path.exists() else folder / sub / Path(name).name


def network_name(onnx: str) -> str:
    """``1_1`` from ``ACASXU_run2a_1_1_batch_2000.onnx``."""
    return re.search(r"(\d_\d)_batch", onnx).group(1)


def read_instances(props: list[int] | None, networks: list[str] | None,
                   timeout: float | None) -> list[dict]:
    """Selected rows of instances.csv, with their expected verdicts, in the file's order."""
    truth = {(r["network"], r["property"]): r["verdict"]
             for r in csv.DictReader(open(BENCH / "ground_truth.csv", newline=""))}
    out = []
    for onnx, vnnlib, seconds in csv.reader(open(BENCH / "instances.csv", newline="")):
        net = network_name(onnx)
        prop = re.search(r"prop_(\d+)", vnnlib).group(1)
        if (props and int(prop) not in props) or (networks and net not in networks):
            continue
        out.append({"key": {"network": net, "property": prop},
                    "onnx": str(resolve(BENCH, onnx, "onnx")),
                    "vnnlib": str(resolve(BENCH, vnnlib, "vnnlib")),
                    "timeout": float(timeout if timeout is not None else seconds),
                    "expected": truth[(net, prop)]})
    return out


# ---------------------------------------------------------------------- one instance
def warm_up() -> None:
    """Import and first-call costs (polytrav, HiGHS, the VNN-LIB reader) out of the timings."""
    from polytrav import Network, verify
    from polytrav.verification.vnnlib import parse_vnnlib

    net = Network.from_arrays([[[1.0, -1.0], [1.0, 1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
    verify(net, parse_vnnlib("(declare-const X_0 Real) (declare-const X_1 Real) "
                             "(declare-const Y_0 Real) (assert (>= X_0 -1)) (assert (<= X_0 1)) "
                             "(assert (>= X_1 -1)) (assert (<= X_1 1)) (assert (>= Y_0 2.5))"))


def correctness(answer: str, expected: str) -> str:
    """``yes``/``no`` for a decided answer against a known verdict, else why not."""
    if answer not in DECIDED:
        return "undecided"
    if expected not in DECIDED:
        return "unchecked"
    return "yes" if answer == expected else "no"


def run_instance(inst: dict) -> dict:
    """One CSV row: ``polytrav.verify`` on the instance, with its timeout."""
    from polytrav import verify

    row = dict(inst["key"], expected=inst["expected"], timeout=inst["timeout"],
               mode=inst.get("mode", "bounds"))
    t0 = time.perf_counter()
    try:
        res = verify(inst["onnx"], inst["vnnlib"], timeout=inst["timeout"],
                     bounds=inst.get("mode", "bounds") == "bounds")
        row.update(answer=res.answer, polytopes=res.polytopes, lps=res.lps,
                   seconds=round(res.seconds, 3), reason=res.reason, proven=res.proven)
        if res.split is not None:  # input splitting: boxes bounded, proven, left to traverse
            row.update(split_boxes=res.split["boxes"], split_proven=res.split["proven"],
                       split_open=res.split["open"])
    except Exception as exc:  # a crash is a result too: record it and go on
        row.update(answer="error", polytopes="", lps="",
                   seconds=round(time.perf_counter() - t0, 3), reason=repr(exc))
    row["correct"] = correctness(row["answer"], row["expected"])
    return row


# ---------------------------------------------------------------------- the run
def read_rows(path: Path) -> list[dict]:
    if not path.exists() or path.stat().st_size == 0:
        return []
    return list(csv.DictReader(open(path, newline="")))


def run_instances(instances: list[dict], out: Path, key: list[str], workers: int) -> None:
    """Run ``instances``, appending each row to ``out`` (flushed) as soon as it finishes."""
    if not instances:
        return
    fields = key + RESULT_FIELDS
    new_file = not out.exists() or out.stat().st_size == 0
    if not new_file:  # append in the file's own columns (older files lack the newer ones)
        fields = next(csv.reader(open(out, newline="")))
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "a", newline="") as f:
        writer = csv.DictWriter(f, fields, extrasaction="ignore")
        if new_file:
            writer.writeheader()

        def record(k: int, row: dict) -> None:
            writer.writerow(row)
            f.flush()
            name = " ".join(str(row[c]) for c in key)
            print(f"[{k}/{len(instances)}] {name}: {row['answer']} (expected {row['expected']}, "
                  f"{row['correct']}) {row['seconds']} s, {row['polytopes']} polytopes", flush=True)

        if workers <= 1:
            warm_up()
            for k, inst in enumerate(instances, 1):
                record(k, run_instance(inst))
            return
        with ProcessPoolExecutor(max_workers=workers, initializer=warm_up) as pool:
            futures = [pool.submit(run_instance, inst) for inst in instances]
            try:
                for k, fut in enumerate(as_completed(futures), 1):
                    record(k, fut.result())
            except KeyboardInterrupt:
                pool.shutdown(cancel_futures=True)
                raise


def pending(instances: list[dict], out: Path, key: list[str], resume: bool,
            overwrite: bool) -> list[dict]:
    """The instances still to run; refuses to clobber an existing CSV unless told."""
    if out.exists() and out.stat().st_size > 0 and not resume:
        if not overwrite:
            raise SystemExit(f"{out} exists: pass --resume to continue it or --overwrite to "
                             "start again")
        out.unlink()
    done = {tuple(r[c] for c in key) for r in read_rows(out)}
    return [i for i in instances if tuple(i["key"][c] for c in key) not in done]


def selected_rows(instances: list[dict], out: Path, key: list[str]) -> list[dict]:
    """The CSV's rows of the selected instances (the last one if an instance appears twice)."""
    wanted = {tuple(i["key"][c] for c in key) for i in instances}
    rows = {tuple(r[c] for c in key): r for r in read_rows(out)}
    return [r for k, r in rows.items() if k in wanted]


#: The machine and code when the script started (the code a run uses is the code it imported).
START = header("acasxu")


def write_meta(out: Path, args: argparse.Namespace, summary: dict, **extra) -> None:
    """Append this invocation (the harness's header: command, settings, machine and code at its
    start; ``extra``; the summary) to the JSON next to the CSV, under ``runs``."""
    path = out.with_suffix(".json")
    runs = json.loads(path.read_text())["runs"] if path.exists() else []
    meta = {**START, "benchmark": Path(sys.argv[0]).stem, "settings": dict(vars(args)), **extra,
            "finished": now(), "summary": summary}
    meta["machine"] = {**meta["machine"], "loadavg_end": list(os.getloadavg())}
    runs.append(meta)
    path.write_text(relative(json.dumps({"runs": runs}, indent=2, default=str)))


# ---------------------------------------------------------------------- summary
def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def fsec(v: float | None) -> str:
    return "-" if v is None else (f"{v:.2f}" if v < 10 else f"{v:.1f}")


def group_summary(rows: list[dict]) -> dict:
    """Counts of answers, decided / correct / wrong, total and median seconds of some rows."""
    secs = [float(r["seconds"]) for r in rows]
    decided = [float(r["seconds"]) for r in rows if r["answer"] in DECIDED]
    answers = [r["answer"] for r in rows]
    return {"instances": len(rows), "unsat": answers.count("unsat"), "sat": answers.count("sat"),
            "timeout": answers.count("timeout"),
            "unknown": answers.count("unknown") + answers.count("error"),
            "decided": len(decided), "correct": sum(r["correct"] == "yes" for r in rows),
            "wrong": sum(r["correct"] == "no" for r in rows),
            "unchecked": sum(r["correct"] == "unchecked" for r in rows),
            "total_s": sum(secs), "median_s": median(secs), "median_decided_s": median(decided)}


def summary_table(groups: dict[str, dict], label: str) -> str:
    lines = [f"| {label} | instances | unsat (holds) | sat (violated) | timeout | unknown/error | "
             "decided | correct | wrong | unchecked | total s | median s | median s (decided) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, s in groups.items():
        lines.append(f"| {name} | {s['instances']} | {s['unsat']} | {s['sat']} | {s['timeout']} | "
                     f"{s['unknown']} | {s['decided']} | {s['correct']} | {s['wrong']} | "
                     f"{s['unchecked']} | "
                     f"{fsec(s['total_s'])} | {fsec(s['median_s'])} | "
                     f"{fsec(s['median_decided_s'])} |")
    return "\n".join(lines)


def report_wrong(rows: list[dict], key: list[str]) -> int:
    """Print every wrong answer loudly (stdout and stderr); return how many there are."""
    wrong = [r for r in rows if r["correct"] == "no"]
    if wrong:
        msg = [f"!!! {len(wrong)} WRONG ANSWER(S) -- polytrav contradicts the ground truth !!!"]
        msg += [f"!!!   {' '.join(r[c] for c in key)}: answered {r['answer']}, expected "
                f"{r['expected']} ({r['reason']})" for r in wrong]
        print("\n".join(msg), flush=True)
        print("\n".join(msg), file=sys.stderr, flush=True)
    else:
        print("wrong answers: 0")
    return len(wrong)


# ---------------------------------------------------------------------- Figure 5
MARKERS = {"unsat": ("o", "tab:green", "holds (unsat)"),
           "sat": ("X", "tab:red", "violated (sat)"),
           "undecided": ("s", "tab:gray", "undecided (timeout/unknown)")}


def marker_class(answer: str) -> str:
    return answer if answer in DECIDED else "undecided"


def net_order(row: dict) -> tuple[int, ...]:
    return tuple(int(v) for v in row["network"].split("_"))


def figure_panels(rows: list[dict]) -> list[tuple[str, list[dict], list[str]]]:
    """``(title, rows, x labels)``: one panel per property run on several networks, and one
    shared panel for the properties run on a single network (5-10)."""
    props = sorted({int(r["property"]) for r in rows})
    by_prop = {p: sorted((r for r in rows if int(r["property"]) == p), key=net_order)
               for p in props}
    panels = [(f"property {p}", prow, [r["network"] for r in prow])
              for p, prow in by_prop.items() if len(prow) > 1]
    single = [prow[0] for prow in by_prop.values() if len(prow) == 1]
    if single:
        title = "properties " + ", ".join(r["property"] for r in single)
        panels.append((title, single, [f"p{r['property']} {r['network']}" for r in single]))
    return panels


def scatter_panel(top, bottom, prow: list[dict], names: list[str]) -> None:
    """Polytopes (top) and seconds (bottom) of one panel's rows, one marker per verdict."""
    for cls, (marker, color, label) in MARKERS.items():
        pts = [(k, r) for k, r in enumerate(prow)
               if marker_class(r["answer"]) == cls and r["polytopes"] not in ("", None)]
        if pts:
            xs = [k for k, _ in pts]
            top.scatter(xs, [max(int(r["polytopes"]), 1) for _, r in pts], marker=marker,
                        color=color, s=22, label=label)
            bottom.scatter(xs, [max(float(r["seconds"]), 1e-3) for _, r in pts], marker=marker,
                           color=color, s=22, label=label)
    for t in {float(r["timeout"]) for r in prow}:
        bottom.axhline(t, color="tab:gray", lw=0.8, ls="--")
    step = -(-len(names) // 15)
    for ax in (top, bottom):
        ax.set_xticks(range(0, len(names), step))
        ax.set_xticklabels(names[::step], rotation=90, fontsize=7)
        ax.set_xlim(-0.8, len(names) - 0.2)
        ax.grid(alpha=0.3, which="both", axis="y")


def draw_figure5(rows: list[dict], path: Path) -> None:
    """Per property: polytopes (log, top) and seconds (log, bottom) per network."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = figure_panels(rows)
    ncol = min(len(panels), 4)
    nblock = -(-len(panels) // ncol)
    fig, axes = plt.subplots(2 * nblock, ncol, figsize=(4.2 * ncol, 5.0 * nblock), squeeze=False,
                             layout="constrained")
    counts = [int(r["polytopes"]) for r in rows if r["polytopes"] not in ("", None)]
    secs = [float(r["seconds"]) for r in rows] + [float(r["timeout"]) for r in rows]
    ylim_p = (0.7, max(counts + [10]) * 2)
    ylim_s = (max(min(secs), 1e-3) / 2, max(secs) * 2)
    for j, (title, prow, names) in enumerate(panels):
        top, bottom = axes[2 * (j // ncol), j % ncol], axes[2 * (j // ncol) + 1, j % ncol]
        scatter_panel(top, bottom, prow, names)
        top.set(title=title, yscale="log", ylabel="polytopes", ylim=ylim_p)
        bottom.set(yscale="log", ylabel="seconds", ylim=ylim_s, xlabel="network")
    for j in range(len(panels), nblock * ncol):
        axes[2 * (j // ncol), j % ncol].axis("off")
        axes[2 * (j // ncol) + 1, j % ncol].axis("off")
    handles = [plt.Line2D([], [], marker=m, color=c, ls="", label=lab)
               for m, c, lab in MARKERS.values()]
    handles.append(plt.Line2D([], [], color="tab:gray", ls="--", label="timeout"))
    fig.suptitle("ACAS Xu: polytrav.verify per network")
    fig.legend(handles=handles, loc="outside lower center", ncol=2 if ncol < 3 else len(handles),
               frameon=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
    plt.close(fig)


# ---------------------------------------------------------------------- main
def parse_props(values: list[str]) -> list[int] | None:
    if values == ["all"]:
        return None
    return [int(v) for v in values]


def add_run_options(ap: argparse.ArgumentParser, default_out: Path) -> None:
    """Options shared with ``mnistfc.py``."""
    ap.add_argument("--timeout", type=float, help="seconds per instance (default: the csv's)")
    ap.add_argument("--limit", type=int, help="run only the first N selected instances")
    ap.add_argument("--mode", choices=["bounds", "plain"], default="bounds",
                    help="bounds: prune pieces proven by sound bounds (default); plain: visit "
                         "every polytope (the paper's traversal)")
    ap.add_argument("--workers", type=int, default=1,
                    help="instances at a time, in separate processes (default 1: in-process)")
    ap.add_argument("--out", type=Path, default=default_out, help="CSV, one row per instance")
    ap.add_argument("--resume", action="store_true", help="skip instances already in --out")
    ap.add_argument("--overwrite", action="store_true", help="start --out again from scratch")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--props", nargs="+", default=["1", "2", "3", "4"],
                    help="properties (1-10) or 'all' (default: 1 2 3 4, 180 instances)")
    ap.add_argument("--networks", nargs="+", help="networks such as 1_1 3_3 (default: all 45)")
    ap.add_argument("--figure", type=Path, help="PNG of Figure 5 (polytopes and time per network)")
    add_run_options(ap, ROOT / "benchmarks" / "results" / "acasxu.csv")
    args = ap.parse_args()
    instances = read_instances(parse_props(args.props), args.networks, args.timeout)
    if not instances:
        raise SystemExit("no instance matches --props/--networks")
    instances = instances[:args.limit] if args.limit else instances
    for inst in instances:
        inst["mode"] = args.mode
    todo = pending(instances, args.out, KEY, args.resume, args.overwrite)
    print(f"{len(instances)} instances selected, {len(todo)} to run, {args.workers} worker(s)")
    t0 = time.perf_counter()
    run_instances(todo, args.out, KEY, args.workers)
    rows = selected_rows(instances, args.out, KEY)
    groups = {f"prop {p}": group_summary([r for r in rows if r["property"] == p])
              for p in sorted({r["property"] for r in rows}, key=int)}
    groups["all"] = group_summary(rows)
    print()
    print(summary_table(groups, "property"))
    print(f"\nwall time of this invocation: {time.perf_counter() - t0:.0f} s; "
          f"results in {args.out}")
    n_wrong = report_wrong(rows, KEY)
    write_meta(args.out, args, groups)
    if args.figure and rows:
        draw_figure5(rows, args.figure)
        print(f"figure: {args.figure}")
    sys.exit(1 if n_wrong else 0)


if __name__ == "__main__":
    main()
