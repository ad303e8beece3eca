"""polytrav against nnenum, side by side, instance by instance (issue 27, item 1).

For each instance of a benchmark set, runs ``polytrav verify NET PROP --timeout T --json`` and
nnenum (``python -m nnenum.nnenum NET PROP T OUTFILE 1``: one process, its default "auto"
settings) as **separate processes, one after the other, each pinned to one core** with
``taskset -c CORE`` and with ``OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=MKL_NUM_THREADS=1``. Which
tool goes first alternates from one instance (and repeat) to the next, to spread the machine's
noise over both. Each time is the wall time from process start to exit, so start-up (imports,
loading the ONNX file) is included for both tools, as VNN-COMP counts it.

nnenum is GPL: it is never vendored, installed into polytrav's environment or imported. The
script runs a checkout of its public repository (``--nnenum``, e.g. ``../scratch/nnenum``, run
with ``PYTHONPATH=<checkout>/src``) with its own interpreter (``--nnenum-python``, a separate
venv). ``docs/benchmarks.md`` ("polytrav against nnenum") gives the setup commands.

Benchmark sets (``../shared/data``): ``acasxu`` (186 instances), ``reach_prob_density`` (36),
``rl_benchmarks`` (49), ``mnistfc`` (180), or the path of any VNN-COMP ``instances.csv``
(``onnx,vnnlib,timeout``; expected verdicts from a ``ground_truth.csv`` beside it with columns
``onnx,vnnlib,verdict``, if there is one). Each instance gets ``min(its timeout, --timeout)``
seconds; a tool still running ``--grace`` seconds after that is killed and answers ``timeout``.

Answers use VNN-LIB semantics (``sat`` = violated, ``unsat`` = holds; nnenum's ``violated`` /
``holds`` are mapped to these). A decided answer that contradicts the ground truth is printed
loudly at once, again at the end, and makes the exit status 1. polytrav re-checks its
counterexamples before it says ``sat``; nnenum's answer is recorded as it is.

The CSV (``--out``) gets one row per instance as soon as both tools finished it (network,
property, expected, timeout, each tool's answer and seconds, the ratio, every run with
``--repeat``); ``--resume`` skips instances already in it. ``--repeat N`` runs each instance N
times per tool and records the median time (and the answer of the median run; a wrong answer in
any run counts). A JSON with the same stem records the machine, the nnenum commit, both
interpreters' package versions and the command. At the end it prints the per-instance table and
the totals: answers, decided and wrong per tool, total wall time per tool and the ratio
polytrav/nnenum, the worst per-instance ratios, and the instances where polytrav took more
than 2x nnenum + 1 s.

``--filter`` keeps the instances whose label ``network/property`` (e.g. ``1_1/prop_3``,
``gcas/gcas_0``, ``mnist-net_256x2/2021/prop_0_0.03``) matches one of the patterns: shell
wildcards (``'*/prop_[234]'``) or, without wildcards, a substring (``3_3/``, ``robot``).

    python benchmarks/peers.py acasxu --nnenum ../scratch/nnenum \\
        --nnenum-python ../venv_nnenum/bin/python --out benchmarks/results/peers_acasxu.csv
    python benchmarks/peers.py reach_prob_density --nnenum ../scratch/nnenum \\
        --nnenum-python ../venv_nnenum/bin/python --timeout 120 \\
        --out benchmarks/results/peers_reach_prob_density.csv
    python benchmarks/peers.py rl_benchmarks --nnenum ../scratch/nnenum \\
        --nnenum-python ../venv_nnenum/bin/python --out benchmarks/results/peers_rl_benchmarks.csv
    python benchmarks/peers.py acasxu --filter '*/prop_[234]' 1_1/prop_3 --timeout 30 --repeat 3 \\
        --nnenum ../scratch/nnenum --nnenum-python ../venv_nnenum/bin/python --out /tmp/peers.csv
"""
from __future__ import annotations

import argparse
import csv
import fnmatch
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from acasxu import DATA, pending, resolve, selected_rows, write_meta  # noqa: E402

SETS = {"acasxu": DATA / "acasxu", "mnistfc": DATA / "mnistfc",
        "reach_prob_density": DATA / "vnncomp2022" / "reach_prob_density",
        "rl_benchmarks": DATA / "vnncomp2022" / "rl_benchmarks"}
KEY = ["network", "property"]
TOOLS = ("polytrav", "nnenum")
FIELDS = KEY + ["expected", "timeout", "first",
                "polytrav_answer", "polytrav_s", "nnenum_answer", "nnenum_s", "ratio",
                "polytrav_runs", "nnenum_runs", "polytrav_reason", "nnenum_reason", "wrong"]
DECIDED = ("sat", "unsat")
#: nnenum's result file -> VNN-LIB answer.
NNENUM_ANSWERS = {"holds": "unsat", "violated": "sat", "timeout": "timeout", "error": "error",
                  "none": "unknown"}
THREADS_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


# ---------------------------------------------------------------------- instances
def acasxu_key(onnx: str, vnnlib: str) -> dict:
    return {"network": re.search(r"(\d_\d)_batch", onnx).group(1),
            "property": Path(vnnlib).stem}


def read_truth(folder: Path, name: str) -> dict:
    """Expected verdicts of a set, keyed like the instances (``network``, ``property``)."""
    path = folder / "ground_truth.csv"
    if not path.exists():
        return {}
    rows = list(csv.DictReader(open(path, newline="")))
    if name == "acasxu":
        return {(r["network"], f"prop_{r['property']}"): r["verdict"] for r in rows}
    if name == "mnistfc":
        return {(r["network"], f"{r['edition']}/{r['property']}"): r["verdict"] for r in rows}
    if rows and {"onnx", "vnnlib", "verdict"} <= set(rows[0]):
        return {(Path(r["onnx"]).stem, Path(r["vnnlib"]).stem): r["verdict"] for r in rows}
    return {}


def read_instances(bench: str, cap: float | None) -> list[dict]:
    """The rows of a set's instances.csv, each with its key, files, timeout and verdict."""
    if bench in SETS:
        name, folder, path = bench, SETS[bench], SETS[bench] / "instances.csv"
    else:
        path = Path(bench)
        name, folder = "csv", path.parent
        if not path.is_file():
            raise SystemExit(f"{bench}: neither a set ({', '.join(SETS)}) nor an instances.csv")
    truth = read_truth(folder, name)
    out = []
    for k, row in enumerate(csv.reader(open(path, newline=""))):
        if not row or row[0].startswith("#"):
            continue
        onnx, vnnlib, seconds = (c.strip() for c in row[:3])
        if name == "acasxu":
            key = acasxu_key(onnx, vnnlib)
        elif name == "mnistfc":
            edition = re.search(r"vnnlib_(\d{4})", vnnlib).group(1)
            key = {"network": Path(onnx).stem, "property": f"{edition}/{Path(vnnlib).stem}"}
        else:
            key = {"network": Path(onnx).stem, "property": Path(vnnlib).stem}
        timeout = float(seconds) if cap is None else min(float(seconds), cap)
        out.append({"key": key, "label": f"{key['network']}/{key['property']}",
                    "onnx": str(resolve(folder, onnx, "onnx")),
                    "vnnlib": str(resolve(folder, vnnlib, "vnnlib")), "timeout": timeout,
                    "expected": truth.get((key["network"], key["property"]), "unknown")})
    return out


def matches(label: str, patterns: list[str] | None) -> bool:
    """Whether ``label`` matches a pattern: a shell wildcard, or else a substring."""
    if not patterns:
        return True
    return any(fnmatch.fnmatchcase(label, p) if any(c in p for c in "*?[") else p in label
               for p in patterns)


# ---------------------------------------------------------------------- one run of one tool
def polytrav_command() -> list[str]:
    """The ``polytrav`` console script of this interpreter's environment (else on PATH)."""
    exe = Path(sys.executable).parent / "polytrav"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("polytrav")
    if found is None:
        raise SystemExit("no `polytrav` command next to this interpreter nor on PATH")
    return [found]


def timed(cmd: list[str], env: dict, cwd: str, limit: float) -> tuple[int | None, float, str,
                                                                         str]:
    """Run ``cmd``; (return code or None if killed at ``limit``, wall s, stdout, stderr)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=limit)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)  # the tool's own process group (it may have children)
        out, err = proc.communicate()
        code = None
    return code, time.perf_counter() - t0, out, err


def tail(text: str, n: int = 160) -> str:
    text = " ".join(text.strip().split())
    return text[-n:]


def run_polytrav(inst: dict, ctx: dict) -> tuple[str, float, str]:
    """(answer, wall seconds, reason) of one ``polytrav verify --json`` process."""
    cmd = ctx["taskset"] + ctx["polytrav"] + ["verify", inst["onnx"], inst["vnnlib"],
                                             "--timeout", str(inst["timeout"]), "--json"]
    code, secs, out, err = timed(cmd, ctx["env"], ctx["cwd"], inst["timeout"] + ctx["grace"])
    if code is None:
        return "timeout", secs, f"killed after {inst['timeout']} + {ctx['grace']} s"
    try:
        res = json.loads(out.strip().splitlines()[-1])
        return res["answer"], secs, res.get("reason") or ""
    except (ValueError, IndexError, KeyError, TypeError):
        return "error", secs, f"exit {code}: {tail(err or out)}"


def run_nnenum(inst: dict, ctx: dict) -> tuple[str, float, str]:
    """(answer, wall seconds, reason) of one nnenum process (its result file parsed)."""
    result = Path(ctx["cwd"]) / "nnenum_result.txt"
    result.unlink(missing_ok=True)
    cmd = ctx["taskset"] + [ctx["nnenum_python"], "-m", "nnenum.nnenum", inst["onnx"],
                            inst["vnnlib"], str(inst["timeout"]), str(result), "1"]
    code, secs, out, err = timed(cmd, ctx["nnenum_env"], ctx["cwd"],
                                 inst["timeout"] + ctx["grace"])
    if code is None:
        return "timeout", secs, f"killed after {inst['timeout']} + {ctx['grace']} s"
    text = result.read_text().strip() if result.exists() else ""
    answer = NNENUM_ANSWERS.get(text, "error" if not text else "unknown")
    reason = "" if answer in DECIDED or answer == "timeout" else \
        f"exit {code}, result {text or 'missing'}: {tail(err or out)}"
    return answer, secs, reason


RUNNERS = {"polytrav": run_polytrav, "nnenum": run_nnenum}


# ---------------------------------------------------------------------- one instance
def verdict(answer: str, expected: str) -> str:
    """``wrong`` for a decided answer contradicting a decided ground truth, else ``''``."""
    return "wrong" if answer in DECIDED and expected in DECIDED and answer != expected else ""


def median_run(runs: list[tuple[str, float, str]]) -> tuple[str, float, str]:
    """The run of median time (the lower median for an even count)."""
    ordered = sorted(runs, key=lambda r: r[1])
    return ordered[(len(ordered) - 1) // 2]


def run_instance(inst: dict, index: int, ctx: dict) -> dict:
    """Both tools on one instance, ``--repeat`` times each, alternating which goes first."""
    runs = {tool: [] for tool in TOOLS}
    firsts = []
    for rep in range(ctx["repeat"]):
        order = TOOLS if (index + rep) % 2 == 0 else TOOLS[::-1]
        firsts.append(order[0])
        for tool in order:
            runs[tool].append(RUNNERS[tool](inst, ctx))
    row = dict(inst["key"], expected=inst["expected"], timeout=inst["timeout"],
               first=" ".join(firsts))
    wrong = []
    for tool in TOOLS:
        answer, secs, reason = median_run(runs[tool])
        row[f"{tool}_answer"], row[f"{tool}_s"] = answer, round(secs, 3)
        row[f"{tool}_reason"] = reason
        row[f"{tool}_runs"] = " ".join(f"{a}:{s:.3f}" for a, s, _ in runs[tool])
        if any(verdict(a, inst["expected"]) for a, _, _ in runs[tool]):
            wrong.append(tool)
    row["ratio"] = round(row["polytrav_s"] / row["nnenum_s"], 3) if row["nnenum_s"] > 0 else ""
    row["wrong"] = " ".join(wrong)
    return row


def shout(lines: list[str]) -> None:
    text = "\n".join(lines)
    print(text, flush=True)
    print(text, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------- set-up
def nnenum_setup(args: argparse.Namespace) -> dict:
    """The environment and facts of the nnenum checkout; fails early if it cannot run."""
    # absolute, without resolving symlinks (a venv's python is one): the tools run elsewhere
    python = args.nnenum_python
    python = os.path.abspath(python) if os.sep in python else shutil.which(python) or python
    src = args.nnenum.resolve() / "src"
    if not (src / "nnenum" / "nnenum.py").is_file():
        raise SystemExit(f"--nnenum {args.nnenum}: no src/nnenum/nnenum.py there (a checkout of "
                         "nnenum's public repository is expected)")
    env = dict(os.environ, **THREADS_ENV)
    env["PYTHONPATH"] = os.pathsep.join([str(src)] + ([env["PYTHONPATH"]]
                                                      if env.get("PYTHONPATH") else []))
    probe = ("import json, importlib.metadata as m, platform, nnenum.nnenum\n"
             "v = {}\n"
             "for p in ('numpy', 'scipy', 'onnx', 'onnxruntime', 'skl2onnx', 'swiglpk',"
             " 'termcolor', 'threadpoolctl'):\n"
             "    try: v[p] = m.version(p)\n"
             "    except m.PackageNotFoundError: v[p] = None\n"
             "print(json.dumps({'python': platform.python_version(), 'versions': v}))")
    with tempfile.TemporaryDirectory() as cwd:
        res = subprocess.run([python, "-c", probe], env=env, cwd=cwd,
                             capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"nnenum does not import with {args.nnenum_python}:\n{res.stderr}")
    info = json.loads(res.stdout.strip().splitlines()[-1])
    commit = subprocess.run(["git", "-C", str(args.nnenum), "rev-parse", "HEAD"],
                            capture_output=True, text=True)
    if commit.returncode == 0:
        info["commit"] = commit.stdout.strip()
    elif (args.nnenum / "COMMIT").is_file():  # an exported tree (git archive) with a note
        info["commit"] = (args.nnenum / "COMMIT").read_text().strip()
    else:
        info["commit"] = None
    return {"nnenum_env": env, "nnenum_info": info, "nnenum_python": python}


def default_core() -> int:
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else [0]
    return cores[-1]


# ---------------------------------------------------------------------- summary
def fnum(v) -> str:
    if v in ("", None):
        return "-"
    v = float(v)
    return f"{v:.2f}" if v < 10 else f"{v:.1f}"


def instance_table(rows: list[dict]) -> str:
    lines = ["| instance | expected | polytrav | s | nnenum | s | polytrav/nnenum |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        flag = lambda t: " **WRONG**" if t in r["wrong"].split() else ""  # noqa: E731
        lines.append(f"| {r['network']}/{r['property']} | {r['expected']} | "
                     f"{r['polytrav_answer']}{flag('polytrav')} | {fnum(r['polytrav_s'])} | "
                     f"{r['nnenum_answer']}{flag('nnenum')} | {fnum(r['nnenum_s'])} | "
                     f"{fnum(r['ratio'])} |")
    return "\n".join(lines)


def totals(rows: list[dict]) -> dict:
    """Per tool: answers, decided, wrong, wall time; then ratios and slow instances."""
    out = {"instances": len(rows)}
    for tool in TOOLS:
        answers = [r[f"{tool}_answer"] for r in rows]
        out[tool] = {"sat": answers.count("sat"), "unsat": answers.count("unsat"),
                     "timeout": answers.count("timeout"),
                     "unknown/error": sum(a not in ("sat", "unsat", "timeout") for a in answers),
                     "decided": sum(a in DECIDED for a in answers),
                     "wrong": sum(tool in r["wrong"].split() for r in rows),
                     "total_s": round(sum(float(r[f"{tool}_s"]) for r in rows), 2)}
    both = [r for r in rows if r["polytrav_answer"] in DECIDED and r["nnenum_answer"] in DECIDED]
    out["both_decided"] = len(both)
    out["both_decided_s"] = {t: round(sum(float(r[f"{t}_s"]) for r in both), 2) for t in TOOLS}
    nn = out["nnenum"]["total_s"]
    out["ratio_total"] = round(out["polytrav"]["total_s"] / nn, 3) if nn else None
    nb = out["both_decided_s"]["nnenum"]
    out["ratio_both_decided"] = round(out["both_decided_s"]["polytrav"] / nb, 3) if nb else None
    # per-instance comparisons where nnenum decided (a quick nnenum error says nothing of speed)
    timed_rows = [r for r in rows
                  if r["nnenum_answer"] in DECIDED and r["ratio"] not in ("", None)]
    ratios = [float(r["ratio"]) for r in timed_rows]
    out["ratio_median"] = round(statistics.median(ratios), 3) if ratios else None
    worst = sorted(timed_rows, key=lambda r: -float(r["ratio"]))
    out["worst"] = [(f"{r['network']}/{r['property']}", float(r["ratio"]),
                     float(r["polytrav_s"]), float(r["nnenum_s"])) for r in worst[:5]]
    out["over_2x_plus_1s"] = [f"{r['network']}/{r['property']}" for r in timed_rows
                              if float(r["polytrav_s"]) > 2 * float(r["nnenum_s"]) + 1]
    out["only_polytrav_decided"] = [f"{r['network']}/{r['property']}" for r in rows
                                    if r["polytrav_answer"] in DECIDED
                                    and r["nnenum_answer"] not in DECIDED]
    out["only_nnenum_decided"] = [f"{r['network']}/{r['property']}" for r in rows
                                  if r["nnenum_answer"] in DECIDED
                                  and r["polytrav_answer"] not in DECIDED]
    return out


def print_totals(t: dict) -> None:
    print("| tool | instances | unsat | sat | timeout | unknown/error | decided | wrong | "
          "total wall s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for tool in TOOLS:
        s = t[tool]
        print(f"| {tool} | {t['instances']} | {s['unsat']} | {s['sat']} | {s['timeout']} | "
              f"{s['unknown/error']} | {s['decided']} | {s['wrong']} | {s['total_s']:.1f} |")
    print(f"\npolytrav/nnenum total wall: {t['ratio_total']} (all instances); "
          f"{t['ratio_both_decided']} on the {t['both_decided']} decided by both "
          f"({t['both_decided_s']['polytrav']:.1f} s / {t['both_decided_s']['nnenum']:.1f} s); "
          f"median per-instance ratio {t['ratio_median']} (instances nnenum decided)")
    print("worst per-instance ratios (nnenum decided): " + ("; ".join(
        f"{name} {ratio:.2f}x ({p:.2f} s / {n:.2f} s)" for name, ratio, p, n in t["worst"])
        or "-"))
    over = t["over_2x_plus_1s"]
    print(f"over 2x nnenum + 1 s (nnenum decided): {len(over)}"
          + (f" ({', '.join(over)})" if over else ""))
    for tool in TOOLS:
        only = t[f"only_{tool}_decided"]
        print(f"decided by {tool} only: {len(only)}" + (f" ({', '.join(only)})" if only else ""))


# ---------------------------------------------------------------------- main
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bench", help=f"{', '.join(SETS)}, or the path of an instances.csv")
    ap.add_argument("--nnenum", type=Path, required=True,
                    help="checkout of nnenum's public repository (outside this repository)")
    ap.add_argument("--nnenum-python", default=sys.executable,
                    help="interpreter of nnenum's own venv (default: this one)")
    ap.add_argument("--filter", nargs="+", metavar="PATTERN",
                    help="keep instances whose network/property matches (wildcards or substring)")
    ap.add_argument("--limit", type=int, help="only the first N selected instances")
    ap.add_argument("--timeout", type=float,
                    help="cap in seconds per instance (default: each instance's own timeout)")
    ap.add_argument("--grace", type=float, default=10.0,
                    help="seconds past the timeout before a process is killed (default 10)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per tool and instance (median)")
    ap.add_argument("--core", type=int, default=None,
                    help="CPU the processes are pinned to (default: the last one allowed)")
    ap.add_argument("--out", type=Path, help="CSV, one row per instance "
                    "(default: benchmarks/results/peers_<set>.csv)")
    ap.add_argument("--resume", action="store_true", help="skip instances already in --out")
    ap.add_argument("--overwrite", action="store_true", help="start --out again from scratch")
    args = ap.parse_args()
    if args.repeat < 1:
        raise SystemExit("--repeat must be at least 1")
    stem = args.bench if args.bench in SETS else Path(args.bench).parent.name
    out = args.out or ROOT / "benchmarks" / "results" / f"peers_{stem}.csv"

    instances = [i for i in read_instances(args.bench, args.timeout)
                 if matches(i["label"], args.filter)]
    instances = instances[:args.limit] if args.limit is not None else instances
    if not instances:
        raise SystemExit("no instance matches --filter")
    if shutil.which("taskset") is None:
        raise SystemExit("taskset (util-linux) is needed to pin each process to one core")
    core = default_core() if args.core is None else args.core
    ctx = {"taskset": ["taskset", "-c", str(core)], "polytrav": polytrav_command(),
           "env": dict(os.environ, **THREADS_ENV),
           "grace": args.grace, "repeat": args.repeat, "core": core}
    ctx.update(nnenum_setup(args))
    todo = pending(instances, out, KEY, args.resume, args.overwrite)
    print(f"{len(instances)} instances selected, {len(todo)} to run, on core {core}, "
          f"{args.repeat} run(s) per tool; nnenum {ctx['nnenum_info'].get('commit')}")

    t0 = time.perf_counter()
    out.parent.mkdir(parents=True, exist_ok=True)
    new_file = not out.exists() or out.stat().st_size == 0
    with open(out, "a", newline="") as f, tempfile.TemporaryDirectory() as cwd:
        # a fresh working directory: `python -m` puts it first on sys.path, so stray files
        # (a types.py, say) must not shadow the standard library for either tool
        ctx["cwd"] = cwd
        writer = csv.DictWriter(f, FIELDS, extrasaction="ignore")
        if new_file:
            writer.writeheader()
        for k, inst in enumerate(todo):
            row = run_instance(inst, instances.index(inst), ctx)
            writer.writerow(row)
            f.flush()
            print(f"[{k + 1}/{len(todo)}] {inst['label']} (expected {row['expected']}, "
                  f"{row['timeout']:g} s): polytrav {row['polytrav_answer']} "
                  f"{row['polytrav_s']:.2f} s, nnenum {row['nnenum_answer']} "
                  f"{row['nnenum_s']:.2f} s, ratio {fnum(row['ratio'])}", flush=True)
            if row["wrong"]:
                shout([f"!!! WRONG ANSWER: {inst['label']}: " + ", ".join(
                    f"{t} answered {row[f'{t}_answer']}" for t in row["wrong"].split())
                    + f", expected {row['expected']} !!!"])

    rows = selected_rows(instances, out, KEY)
    print()
    print(instance_table(rows))
    print()
    summary = totals(rows)
    print_totals(summary)
    print(f"\nwall time of this invocation: {time.perf_counter() - t0:.0f} s; results in {out}")
    wrong = [r for r in rows if r["wrong"]]
    if wrong:
        shout([f"!!! {len(wrong)} INSTANCE(S) WITH A WRONG ANSWER !!!"]
              + [f"!!!   {r['network']}/{r['property']}: {r['wrong']} (polytrav "
                 f"{r['polytrav_answer']}, nnenum {r['nnenum_answer']}, expected "
                 f"{r['expected']})" for r in wrong])
    else:
        print("wrong answers: 0")
    write_meta(out, args, summary, nnenum=ctx["nnenum_info"], core=ctx["core"])
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
