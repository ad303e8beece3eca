"""MNIST local robustness (the paper's protocol): polytrav's SoftmaxAttack against a MILP.

Networks ``mnist2x10.onnx`` (784-10-10-10) and ``mnist10x10.nnet`` (784-10x10-10; the .nnet
header's normalisation is min 0, max 1, mean 0, range 1, so both take pixel / 255 in [0, 1]
in row-major order, as ``mnist_test.npz`` stores them). Images: the first ``--per-digit``
(5) test images of each digit, 50 images, run in test-set order. Radii ``--eps`` 0.01 and
0.05 in L-inf, intersected with [0, 1]. For each (network, eps, image) with label = the true
test label:

* polytrav: ``analyze(net, Ball(x0, eps, norm="inf") & Box(0, 1), SoftmaxAttack(label,
  mode="verify"), time_limit=T)``: robust (HOLDS), not robust (VIOLATED: an adversarial
  image, re-checked here: inside the region and argmax != label) or unknown (anything else).
* MILP baseline (:mod:`polytrav.testing.milp`, big-M + HiGHS): ``milp_robust`` over the box
  ``[clip(x0 - eps, 0, 1), clip(x0 + eps, 0, 1)]``, the decision version as MIPVerify poses
  it: per class i != label (most promising first), a MILP that accepts only margins
  ``f_i - f_label > 0`` (HiGHS ``objective_bound``) and stops at the first one. Big-M from
  interval bounds (``--milp-bounds interval``, the default) or tightened by LP
  (``--milp-bounds lp``, MIPVerify's choice; needed on ten layers). ``--milp-time-limit``
  seconds per image (default ``--time-limit``). Robust iff every class is proven unable to
  win; not robust with the MILP's point (its margin recomputed by a forward pass); unknown
  otherwise.

A clean image the network already misclassifies is recorded as ``misclassified`` and still
run with its true label: both methods then find it not robust (the clean point itself is in
the region), so it counts as "not robust" and is excluded from nothing; the tables give how
many there are. Times are wall clock of the whole call (the MILP's includes building its
model); the import and first-call costs are paid by an untimed warm-up (eps 1e-4 on the first
image, per network). ``agree`` compares the two verdicts when both are decided; a
disagreement is printed loudly. The time ratio is MILP / polytrav per row; the tables quote
its median and the ratio of the median times.

Outputs: ``--out`` JSON (machine and settings of every invocation, every row with its
adversarial image) and a CSV with the same stem, both rewritten after every row; ``--resume``
skips rows already in the JSON (and with nothing left only prints the tables and draws the
figures). ``--figure``: the paper's Figure 6 analogue (polytopes and seconds per image, per
eps, per network; markers robust / not robust / unknown; MILP seconds as bars, hatched when
the MILP did not decide). ``--adversarial-figure``: two
adversarial images under their clean images, with the predicted labels (as Fig. 6c).

    python benchmarks/mnist_robustness.py --out benchmarks/results/mnist_robustness.json \\
        --figure benchmarks/results/mnist_fig6.png --adversarial-figure benchmarks/results/mnist_fig6c.png
    python benchmarks/mnist_robustness.py --out benchmarks/results/mnist_robustness.json --resume
    python benchmarks/mnist_robustness.py --nets mnist2x10 --per-digit 1 --digits 0 1 --eps 0.01 \\
        --time-limit 20 --out /tmp/mnist.json --figure /tmp/fig6.png --adversarial-figure /tmp/fig6c.png
"""
from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from acasxu import DATA  # noqa: E402
from harness import header  # noqa: E402
from polytrav.testing.milp import milp_robust  # noqa: E402

from polytrav import Ball, Box, Network, Verdict, analyze  # noqa: E402
from polytrav.plugins.adversarial import SoftmaxAttack  # noqa: E402

NETS = {"mnist2x10": "mnist/mnist2x10.onnx", "mnist10x10": "mnist/mnist10x10.nnet"}
ROBUST, NOT_ROBUST, UNKNOWN = "robust", "not robust", "unknown"
WITNESS_TOL = 1e-7  # as polytrav's own witness check
CSV_FIELDS = ["net", "eps", "test_index", "label", "predicted", "misclassified", "polytrav",
              "polytrav_status", "polytopes", "lps", "polytrav_s", "polytrav_margin",
              "adversarial_class", "witness_ok", "milp", "milp_status", "milp_margin", "milp_s",
              "agree", "ratio_milp_over_polytrav"]


# ---------------------------------------------------------------------- data
def load_net(name: str) -> Network:
    path = DATA / NETS[name]
    return Network.from_onnx(path) if path.suffix == ".onnx" else Network.from_nnet(path)


def load_test_set() -> tuple[np.ndarray, np.ndarray]:
    """Test images as float rows in [0, 1] (row-major 28x28) and their labels."""
    data = np.load(DATA / "mnist" / "mnist_test.npz")
    return data["images"].astype(float) / 255.0, data["labels"].astype(int)


def select_images(labels: np.ndarray, digits: list[int], per_digit: int) -> list[int]:
    """The first ``per_digit`` test indices of each digit, in test-set order."""
    chosen = [i for d in digits for i in np.flatnonzero(labels == d)[:per_digit]]
    return sorted(int(i) for i in chosen)


# ---------------------------------------------------------------------- the two methods
def region_of(x0: np.ndarray, eps: float):
    return Ball(x0, eps, norm="inf") & Box(0.0, 1.0)


def witness_ok(net: Network, x0: np.ndarray, eps: float, label: int, w: np.ndarray) -> bool:
    """An independent check of an adversarial image: in the L-inf ball, in [0, 1], misclassified."""
    inside = (np.max(np.abs(w - x0)) <= eps + WITNESS_TOL and np.min(w) >= -WITNESS_TOL
              and np.max(w) <= 1.0 + WITNESS_TOL)
    return bool(inside and np.argmax(net.forward(w)) != label)


def run_polytrav(net: Network, x0: np.ndarray, eps: float, label: int, limit: float) -> dict:
    t0 = time.perf_counter()
    report = analyze(net, region_of(x0, eps), SoftmaxAttack(label, mode="verify"),
                     time_limit=limit)
    seconds = time.perf_counter() - t0
    res = report[0]
    out = {"polytrav_status": report.status.value, "polytopes": report.stats["polytopes"],
           "lps": report.stats["lps"] + report.stats["subproblem_solves"], "polytrav_s": seconds,
           "polytrav_margin": None, "adversarial_class": None, "witness_ok": None,
           "witness": None}
    if res.verdict is Verdict.HOLDS:
        out["polytrav"] = ROBUST
    elif res.verdict is Verdict.VIOLATED:
        w = np.asarray(res.witness, float)
        out.update(polytrav=NOT_ROBUST, polytrav_margin=res.value, witness=w.tolist(),
                   adversarial_class=int(np.argmax(net.forward(w))),
                   witness_ok=witness_ok(net, x0, eps, label, w))
    else:
        out["polytrav"] = UNKNOWN
    return out


def run_milp(net: Network, x0: np.ndarray, eps: float, label: int, limit: float,
             bounds: str) -> dict:
    lo, hi = np.clip(x0 - eps, 0.0, 1.0), np.clip(x0 + eps, 0.0, 1.0)
    t0 = time.perf_counter()
    try:
        m = milp_robust(net, label, lo, hi, time_limit=limit, bounds=bounds)
        status, value = m.status, float(m.value)
    except Exception as exc:  # e.g. MilpCheckError: record it, never count it as an answer
        status, value = f"error: {exc!r}", float("nan")
    seconds = time.perf_counter() - t0
    if status == "optimal":
        verdict = ROBUST if value <= 0 else NOT_ROBUST
    else:
        verdict = NOT_ROBUST if value > 0 else UNKNOWN  # nan > 0 is False
    margin = value if np.isfinite(value) else None
    return {"milp": verdict, "milp_status": status, "milp_margin": margin, "milp_s": seconds}


def agreement(a: str, b: str) -> str:
    if UNKNOWN in (a, b):
        return "n/a"
    return "yes" if a == b else "NO"


def run_one(net: Network, name: str, x0: np.ndarray, label: int, index: int, eps: float,
            limit: float, milp_limit: float, milp_bounds: str) -> dict:
    predicted = int(np.argmax(net.forward(x0)))
    row = {"net": name, "eps": eps, "test_index": index, "label": label, "predicted": predicted,
           "misclassified": predicted != label}
    row.update(run_polytrav(net, x0, eps, label, limit))
    row.update(run_milp(net, x0, eps, label, milp_limit, milp_bounds))
    row["agree"] = agreement(row["polytrav"], row["milp"])
    row["ratio_milp_over_polytrav"] = row["milp_s"] / row["polytrav_s"]
    return row


def warm_up(net: Network, x0: np.ndarray, label: int, milp_bounds: str) -> None:
    """First-call costs (cvxpy/HiGHS set-up in 784 dimensions, the MILP) out of the timings."""
    analyze(net, region_of(x0, 1e-4), SoftmaxAttack(label, mode="verify"), time_limit=30.0)
    milp_robust(net, label, np.clip(x0 - 1e-4, 0, 1), np.clip(x0 + 1e-4, 0, 1),
                time_limit=30.0, bounds=milp_bounds)


# ---------------------------------------------------------------------- outputs
def key_of(row: dict) -> tuple:
    return row["net"], round(float(row["eps"]), 12), int(row["test_index"])


def save(rows: list[dict], runs: list[dict], out: Path) -> None:
    """The JSON (everything) and the CSV (no images), both rewritten whole."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps({"runs": runs, "rows": rows}, indent=1))
    tmp.replace(out)
    with open(out.with_suffix(".csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, CSV_FIELDS, extrasaction="ignore")
        writer.writeheader()
        for r in rows:
            writer.writerow({k: (f"{v:.4f}" if isinstance(v, float) and k.endswith("_s") else v)
                             for k, v in r.items()})


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def fnum(v: float | None, fmt: str = ".3f") -> str:
    return "-" if v is None else format(v, fmt)


def group_stats(rows: list[dict]) -> dict:
    pt = [r["polytrav_s"] for r in rows]
    mi = [r["milp_s"] for r in rows]
    return {"images": len(rows), "misclassified": sum(r["misclassified"] for r in rows),
            **{f"polytrav_{v}": sum(r["polytrav"] == v for r in rows)
               for v in (ROBUST, NOT_ROBUST, UNKNOWN)},
            **{f"milp_{v}": sum(r["milp"] == v for r in rows)
               for v in (ROBUST, NOT_ROBUST, UNKNOWN)},
            "agree": sum(r["agree"] == "yes" for r in rows),
            "disagree": sum(r["agree"] == "NO" for r in rows),
            "median_polytopes": median([r["polytopes"] for r in rows]),
            "max_polytopes": max((r["polytopes"] for r in rows), default=None),
            "median_polytrav_s": median(pt), "median_milp_s": median(mi),
            "median_ratio": median([r["ratio_milp_over_polytrav"] for r in rows]),
            "ratio_of_medians": (median(mi) / median(pt)) if pt else None}


def tables(rows: list[dict]) -> str:
    groups = {(n, e): [r for r in rows if (r["net"], r["eps"]) == (n, e)]
              for n, e in dict.fromkeys((r["net"], r["eps"]) for r in rows)}
    lines = ["| net | eps | images | misclassified | polytrav robust / not / unknown | "
             "MILP robust / not / unknown | agree | DISAGREE | median polytopes | max polytopes | "
             "median polytrav s | median MILP s | median ratio MILP/polytrav | ratio of medians |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (n, e), rs in list(groups.items()) + [(("all", ""), rows)]:
        s = group_stats(rs)
        lines.append(
            f"| {n} | {e} | {s['images']} | {s['misclassified']} | {s['polytrav_robust']} / "
            f"{s['polytrav_not robust']} / {s['polytrav_unknown']} | {s['milp_robust']} / "
            f"{s['milp_not robust']} / {s['milp_unknown']} | {s['agree']} | {s['disagree']} | "
            f"{fnum(s['median_polytopes'], '.0f')} | {s['max_polytopes']} | "
            f"{fnum(s['median_polytrav_s'])} | {fnum(s['median_milp_s'])} | "
            f"{fnum(s['median_ratio'], '.1f')} | {fnum(s['ratio_of_medians'], '.1f')} |")
    return "\n".join(lines)


def report_problems(rows: list[dict]) -> int:
    """Print disagreements and bad witnesses loudly; return how many rows have one."""
    bad = [r for r in rows if r["agree"] == "NO" or r["witness_ok"] is False]
    for r in bad:
        msg = (f"!!! {r['net']} eps {r['eps']} test image {r['test_index']} (label {r['label']}): "
               f"polytrav {r['polytrav']} ({r['polytrav_status']}, witness_ok {r['witness_ok']}), "
               f"MILP {r['milp']} ({r['milp_status']}, margin {r['milp_margin']})")
        print(msg, flush=True)
        print(msg, file=sys.stderr, flush=True)
    if not bad:
        print("disagreements: 0; every adversarial image re-checked")
    return len(bad)


# ---------------------------------------------------------------------- figures
MARKERS = {ROBUST: ("o", "tab:green"), NOT_ROBUST: ("X", "tab:red"), UNKNOWN: ("s", "tab:gray")}


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def image_axis(ax, rows: list[dict]) -> None:
    """x ticks: one per digit group (rows are sorted by digit, then test index)."""
    labels = [r["label"] for r in rows]
    starts = [k for k in range(len(labels)) if k == 0 or labels[k] != labels[k - 1]]
    ends = starts[1:] + [len(labels)]
    ax.set_xticks([(s + e - 1) / 2 for s, e in zip(starts, ends)])
    ax.set_xticklabels([str(labels[s]) for s in starts])
    for s in starts[1:]:
        ax.axvline(s - 0.5, color="0.85", lw=0.6)
    ax.set_xlim(-0.7, len(labels) - 0.3)


def draw_figure6(rows: list[dict], path: Path) -> None:
    """Per network (row pair) and eps (column): polytopes and seconds per image."""
    plt = pyplot()
    nets = list(dict.fromkeys(r["net"] for r in rows))
    epss = sorted({r["eps"] for r in rows})
    fig, axes = plt.subplots(2 * len(nets), len(epss), figsize=(6.5 * len(epss), 4.6 * len(nets)),
                             squeeze=False, layout="constrained")
    secs = [v for r in rows for v in (r["polytrav_s"], r["milp_s"])]
    ylim_s = (min(secs) / 2, max(secs) * 2)
    ylim_p = (0.7, max(r["polytopes"] for r in rows) * 2)
    for i, net in enumerate(nets):
        for j, eps in enumerate(epss):
            rs = sorted((r for r in rows if (r["net"], r["eps"]) == (net, eps)),
                        key=lambda r: (r["label"], r["test_index"]))
            top, bottom = axes[2 * i, j], axes[2 * i + 1, j]
            bottom.bar(range(len(rs)), [r["milp_s"] for r in rs], width=0.6, color="0.8",
                       hatch=[("///" if r["milp"] == UNKNOWN else "") for r in rs],
                       edgecolor="0.6", linewidth=0)
            for verdict, (marker, color) in MARKERS.items():
                ks = [k for k, r in enumerate(rs) if r["polytrav"] == verdict]
                top.scatter(ks, [max(rs[k]["polytopes"], 1) for k in ks], marker=marker,
                            color=color, s=22)
                bottom.scatter(ks, [rs[k]["polytrav_s"] for k in ks], marker=marker, color=color,
                               s=22)
            top.set(title=f"{net}, eps {eps}", yscale="log", ylabel="polytopes", ylim=ylim_p)
            bottom.set(yscale="log", ylabel="seconds", ylim=ylim_s, xlabel="image (by digit)")
            for ax in (top, bottom):
                image_axis(ax, rs)
                ax.grid(alpha=0.3, which="major", axis="y")
    handles = [plt.Line2D([], [], marker=m, color=c, ls="", label=f"polytrav: {v}")
               for v, (m, c) in MARKERS.items()]
    handles.append(plt.Rectangle((0, 0), 1, 1, color="0.8", label="MILP seconds"))
    handles.append(plt.Rectangle((0, 0), 1, 1, facecolor="0.8", edgecolor="0.6", hatch="///",
                                 linewidth=0, label="MILP undecided"))
    fig.suptitle("MNIST L-inf robustness: polytrav SoftmaxAttack (verify) per test image")
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), frameon=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
    plt.close(fig)


def adversarial_examples(rows: list[dict], count: int = 2) -> list[dict]:
    """Not-robust rows of correctly classified images with a checked witness, distinct images,
    smallest eps first."""
    cands = sorted((r for r in rows if r["polytrav"] == NOT_ROBUST and r["witness_ok"]
                    and not r["misclassified"]),
                   key=lambda r: (r["eps"], list(NETS).index(r["net"]), r["test_index"]))
    picked, seen = [], set()
    for r in cands:
        if r["test_index"] not in seen:
            picked.append(r)
            seen.add(r["test_index"])
    return picked[:count]


def draw_adversarial(rows: list[dict], images: np.ndarray, path: Path) -> bool:
    """Clean images (top) and their adversarial images (bottom), side by side."""
    picked = adversarial_examples(rows)
    if not picked:
        return False
    plt = pyplot()
    fig, axes = plt.subplots(2, len(picked), figsize=(3.2 * len(picked), 6.6), squeeze=False,
                             layout="constrained")
    for j, r in enumerate(picked):
        clean, adv = images[r["test_index"]], np.asarray(r["witness"])
        for ax, img, title in (
                (axes[0, j], clean, f"test image {r['test_index']}\nlabel {r['label']}, "
                                    f"predicted {r['predicted']}"),
                (axes[1, j], adv, f"adversarial ({r['net']}, eps {r['eps']})\n"
                                  f"predicted {r['adversarial_class']}")):
            ax.imshow(img.reshape(28, 28), cmap="gray", vmin=0.0, vmax=1.0)
            ax.set_title(title, fontsize=9)
            ax.axis("off")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return True


# ---------------------------------------------------------------------- main
def load_previous(out: Path, resume: bool, overwrite: bool) -> tuple[list[dict], list[dict]]:
    """Rows and run records (machine, command) already in ``out``."""
    if out.exists() and not resume:
        if not overwrite:
            raise SystemExit(f"{out} exists: pass --resume to continue it or --overwrite to "
                             "start again")
        return [], []
    saved = json.loads(out.read_text()) if out.exists() else {"rows": [], "runs": []}
    return saved["rows"], saved["runs"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nets", nargs="+", default=list(NETS), choices=list(NETS))
    ap.add_argument("--eps", nargs="+", type=float, default=[0.01, 0.05])
    ap.add_argument("--per-digit", type=int, default=5, help="first N test images of each digit")
    ap.add_argument("--digits", nargs="+", type=int, default=list(range(10)))
    ap.add_argument("--time-limit", type=float, default=120.0, help="polytrav seconds per image")
    ap.add_argument("--milp-time-limit", type=float,
                    help="MILP seconds per image (default: --time-limit)")
    ap.add_argument("--milp-bounds", choices=["interval", "lp"], default="interval",
                    help="big-M from interval bounds, or tightened by LP (MIPVerify)")
    ap.add_argument("--out", type=Path,
                    default=ROOT / "benchmarks" / "results" / "mnist_robustness.json",
                    help="JSON; the CSV goes next to it with the same stem")
    ap.add_argument("--resume", action="store_true", help="skip rows already in --out")
    ap.add_argument("--overwrite", action="store_true", help="start --out again from scratch")
    ap.add_argument("--figure", type=Path, help="PNG: Figure 6 analogue")
    ap.add_argument("--adversarial-figure", type=Path, help="PNG: two adversarial images")
    args = ap.parse_args()
    milp_limit = args.milp_time_limit or args.time_limit
    images, labels = load_test_set()
    indices = select_images(labels, args.digits, args.per_digit)
    rows, runs = load_previous(args.out, args.resume, args.overwrite)
    done = {key_of(r) for r in rows}
    meta = header("mnist_robustness", argparse.Namespace(**{
        k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}))
    runs.append(meta)
    meta["test_indices"] = indices
    t_start = time.perf_counter()
    for name in args.nets:
        todo = [(e, i) for e in args.eps for i in indices if (name, round(e, 12), i) not in done]
        if not todo:
            continue
        net = load_net(name)
        warm_up(net, images[indices[0]], int(labels[indices[0]]), args.milp_bounds)
        for k, (eps, i) in enumerate(todo, 1):
            row = run_one(net, name, images[i], int(labels[i]), i, eps, args.time_limit,
                          milp_limit, args.milp_bounds)
            rows.append(row)
            meta["seconds"] = time.perf_counter() - t_start
            save(rows, runs, args.out)
            print(f"[{name} {k}/{len(todo)}] eps {eps} image {i} (label {row['label']}, "
                  f"predicted {row['predicted']}): polytrav {row['polytrav']} "
                  f"{row['polytrav_s']:.2f} s, {row['polytopes']} polytopes; MILP {row['milp']} "
                  f"({row['milp_status']}) {row['milp_s']:.2f} s; agree {row['agree']}", flush=True)
    wanted = {(n, round(e, 12), i) for n in args.nets for e in args.eps for i in indices}
    rows_now = [r for r in rows if key_of(r) in wanted]
    print()
    print(tables(rows_now))
    print(f"\nwall time of this invocation: {time.perf_counter() - t_start:.0f} s; results in "
          f"{args.out} and {args.out.with_suffix('.csv')}")
    n_bad = report_problems(rows_now)
    if args.figure and rows_now:
        draw_figure6(rows_now, args.figure)
        print(f"figure: {args.figure}")
    if args.adversarial_figure:
        drawn = draw_adversarial(rows_now, images, args.adversarial_figure)
        print(f"adversarial figure: {args.adversarial_figure}" if drawn else
              "adversarial figure: no adversarial image of a correctly classified image")
    sys.exit(1 if n_bad else 0)


if __name__ == "__main__":
    main()
