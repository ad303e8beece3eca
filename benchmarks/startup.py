"""Start-up: every command's cost before its work, and every heavy dependency's import time
(issue 58), so that a dependency's slow new release shows in one command.

* **Commands**: each command of ``tests/support/startup.py`` (``verify`` proven by bounds,
  by LPs and violated, ``polytrav-vnnlib verify``, ``regions``, ``attack``, ``analyze``,
  ``explain``, ``diff``, ``--help``) runs as its console script on a tiny model (2-8-8-2,
  the work takes milliseconds), as a user runs it: its wall time from process start to exit,
  less the median of ``python -c "import numpy"``, is its start-up (an upper bound: it
  includes the tiny work). Rounds interleave the commands; medians are quoted. One extra run
  of each records the heavy modules it loaded.
* **Dependencies**: ``import X`` timed inside a fresh interpreter after ``import numpy``, for
  every module of ``startup.HEAVY`` and the light ones every command loads (its version
  beside it).

``--python`` measures another environment's console scripts (e.g. a checkout before a
change); the tiny models are written by this interpreter (it needs ``onnx``).

    python benchmarks/startup.py --repeats 7 --out benchmarks/results/startup.json
    python benchmarks/startup.py --python ../venv_before/bin/python --repeats 7 \\
        --out benchmarks/results/startup_before.json
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import ROOT, Run, median, parser, relative  # noqa: E402

sys.path.insert(0, str(ROOT / "tests" / "support"))
import startup  # noqa: E402

#: Modules every command loads, timed beside the heavy ones.
LIGHT = ("numpy", "click", "pluggy", "google.protobuf.message_factory", "highspy", "clarabel",
         "pydantic", "tqdm", "vnnlib", "scipy")
#: Distributions whose versions are recorded (the import names' own where they differ).
DISTRIBUTIONS = {"google.protobuf.message_factory": "protobuf", "sklearn": "scikit-learn"}
_IMPORT = ("import time, numpy\n"
           "t = time.perf_counter()\n"
           "import {name}\n"
           "print(time.perf_counter() - t)\n")
_VERSION = ("import importlib.metadata as m, sys\n"
            "for name in sys.argv[1:]:\n"
            "    try: print(name, m.version(name))\n"
            "    except m.PackageNotFoundError: print(name, '-')\n")


def wall(argv: list[str], cwd: Path, env: dict) -> tuple[float, int]:
    """Seconds from start to exit of ``argv``, and its exit code."""
    t0 = time.perf_counter()  # no timeout: waiting with one polls every 50 ms
    proc = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0, proc.returncode


def import_time(python: str, name: str, env: dict) -> float | None:
    """Seconds ``import name`` takes after ``import numpy`` in a fresh ``python``; None if it
    is not installed."""
    proc = subprocess.run([python, "-c", _IMPORT.format(name=name)], env=env,
                          capture_output=True, text=True, timeout=600)
    return float(proc.stdout) if proc.returncode == 0 else None


def versions(python: str, names, env: dict) -> dict:
    dists = sorted({DISTRIBUTIONS.get(n, n.split(".")[0]) for n in names} | {"polytrav"})
    out = subprocess.run([python, "-c", _VERSION, *dists], env=env, capture_output=True,
                         text=True, timeout=600).stdout
    return dict(line.split(" ", 1) for line in out.splitlines())


def main() -> None:
    ap = parser(__doc__, repeats=7, warmup=1, out=None)
    ap.add_argument("--python", default=sys.executable,
                    help="the interpreter whose environment's console scripts are measured")
    ap.add_argument("--commands", nargs="+", default=list(startup.COMMANDS),
                    help="commands to time (default: all)")
    ap.add_argument("--no-imports", action="store_true", help="skip the dependencies' table")
    args = ap.parse_args()
    python = str(Path(args.python).absolute())  # a venv's python: not resolved past the link
    bin_dir = Path(python).parent
    env = startup.environment()
    args.python = relative(python)  # the record names it relative to the repository
    run = Run("startup", args, quiet=True)
    folder = startup.write_inputs(Path(tempfile.mkdtemp(prefix="polytrav-startup-")))
    baseline_argv = [python, "-c", "import numpy"]
    times: dict[str, list[float]] = {name: [] for name in ["numpy", *args.commands]}
    codes: dict[str, set] = {name: set() for name in args.commands}
    for k in range(args.warmup + args.repeats):  # rounds: every command once per round
        for name in times:
            if name == "numpy":
                t, _ = wall(baseline_argv, folder, env)
            else:
                program, cmd_args, _, _ = startup.COMMANDS[name]
                t, code = wall([str(bin_dir / program), *cmd_args], folder, env)
                codes[name].add(code)
            if k >= args.warmup:
                times[name].append(t)
    base = median(times["numpy"])
    run.summary["numpy_import_s"] = base
    print(f"python -c 'import numpy': {base:.3f} s (median of {args.repeats})")
    print(f"{'command':16s} {'wall s':>8s} {'start-up s':>10s}  exit  heavy modules loaded")
    for name in args.commands:
        program, cmd_args, expected, _ = startup.COMMANDS[name]
        modules, _ = startup.loaded_modules(name, folder, python=python)
        loaded = startup.heavy(modules)
        t = median(times[name])
        run.add({"kind": "command", "case": name, "command": [program, *cmd_args],
                 "times": times[name], "median": t, "startup": t - base,
                 "exit_codes": sorted(codes[name]), "expected_exit": expected,
                 "heavy_loaded": loaded, "repeats": args.repeats, "warmup": args.warmup})
        print(f"{name:16s} {t:8.3f} {t - base:10.3f}  {','.join(map(str, sorted(codes[name]))):4s}"
              f"  {', '.join(loaded) or '-'}")
    run.summary["max_startup_s"] = max(r["startup"] for r in run.rows if r["kind"] == "command")
    print(f"largest start-up: {run.summary['max_startup_s']:.3f} s beyond import numpy")
    if not args.no_imports:
        names = [*LIGHT, *startup.HEAVY]
        have = versions(python, names, env)
        print(f"\n{'import (after numpy)':22s} {'median s':>9s}  version")
        for name in names:
            samples = [import_time(python, name, env) for _ in range(args.repeats)]
            samples = [s for s in samples if s is not None]
            t = median(samples)
            version = have.get(DISTRIBUTIONS.get(name, name.split(".")[0]), "-")
            run.add({"kind": "import", "case": name, "times": samples, "median": t,
                     "version": version, "repeats": len(samples)})
            print(f"{name:22s} {'-' if t is None else f'{t:9.3f}':>9s}  {version}")
        run.summary["polytrav"] = have.get("polytrav")
    run.write(args.out)


if __name__ == "__main__":
    main()
