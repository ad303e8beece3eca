"""Every command on a tiny model, and which heavy modules it loaded: what the start-up guard
(``tests/cli/test_startup_imports.py``) asserts and ``benchmarks/startup.py`` times.

A command's start-up is what it costs before its work: on these inputs the work takes
milliseconds, so the run's wall time less ``python -c "import numpy"`` bounds it.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

#: Modules that cost a tenth of a second or more to import (``benchmarks/startup.py``
#: measures each): a command loads one only on a path that uses it.
HEAVY = ("onnx", "ml_dtypes", "onnxruntime", "scipy.optimize", "scipy.sparse", "cvxpy",
         "pandas", "pyarrow", "matplotlib", "jinja2", "dask", "distributed", "torch",
         "sklearn", "skops.io", "networkx", "osqp", "numba")
BOX = ["--lower", "-1", "--upper", "1"]
#: name: (console script, arguments, its exit code, the heavy modules its path uses). Run in
#: the folder :func:`write_inputs` fills.
COMMANDS = {
    "help": ("polytrav", ["--help"], 0, ()),
    "verify": ("polytrav", ["verify", "f.onnx", "safe.vnnlib"], 0, ()),  # proven by bounds
    "verify-lps": ("polytrav", ["verify", "f.onnx", "safe.vnnlib", "--no-bounds"], 0, ()),
    "verify-sat": ("polytrav", ["verify", "f.onnx", "unsafe.vnnlib"], 1, ("onnxruntime",)),
    "vnnlib-verify": ("polytrav-vnnlib", ["verify", "safe2.vnnlib", "--network", "N=f.onnx"],
                      0, ()),
    "regions": ("polytrav", ["regions", "f.onnx", *BOX], 0, ()),
    "attack": ("polytrav", ["attack", "f.onnx", *BOX, "--label", "0"], 1, ()),
    "analyze": ("polytrav", ["analyze", "f.onnx", *BOX, "--analysis", "output_range"], 0, ()),
    "explain": ("polytrav", ["explain", "f.onnx", "rows.csv", "--domain", "-1:1", "--analysis",
                             "local_model"], 0, ()),  # pandas only for --table or --report
    "diff": ("polytrav", ["diff", "f.onnx", "g.onnx", *BOX], 0, ()),
}


def write_inputs(folder: Path) -> Path:
    """The tiny models and inputs the commands read: ``f.onnx`` (2-8-8-2 ReLU MLP), ``g.onnx``
    (f with its output biases moved), properties proven by bounds (``safe.vnnlib``, and as a
    VNN-LIB 2.0 query ``safe2.vnnlib``) and violated (``unsafe.vnnlib``), rows in ``rows.csv``."""
    from ctrl_c import random_layers, save_mlp_onnx

    weights, biases = random_layers(np.random.default_rng(0), [2, 8, 8, 2])
    save_mlp_onnx(weights, biases, folder / "f.onnx")
    save_mlp_onnx(weights, biases[:-1] + [biases[-1] + 0.1], folder / "g.onnx")
    box = "".join(f"(declare-const X_{i} Real)\n" for i in range(2)) + "".join(
        f"(declare-const Y_{j} Real)\n" for j in range(2)) + "".join(
        f"(assert (>= X_{i} -1))\n(assert (<= X_{i} 1))\n" for i in range(2))
    (folder / "safe.vnnlib").write_text(box + "(assert (>= Y_0 1000000))\n")
    (folder / "unsafe.vnnlib").write_text(box + "(assert (>= Y_0 -1000000))\n")
    (folder / "safe2.vnnlib").write_text(
        "(vnnlib-version <2.0>)\n(declare-network N (declare-input X float32 [1, 2]) "
        "(declare-output Y float32 [1, 2]))\n"
        + "".join(f"(assert (>= X[0,{i}] -1.0)) (assert (<= X[0,{i}] 1.0))\n" for i in range(2))
        + "(assert (>= Y[0,0] 1000000.0))\n")
    rows = np.random.default_rng(1).uniform(-1, 1, (3, 2))
    (folder / "rows.csv").write_text("a,b\n" + "".join(f"{x},{y}\n" for x, y in rows))
    return folder


def console_script(name: str, python: str | None = None) -> Path:
    """The console script ``name`` next to ``python`` (default: this interpreter)."""
    return Path(python or sys.executable).parent / name


def environment() -> dict:
    """The environment a user runs the commands in: the installed plugins load (the test
    session switches them off), one thread per numeric library, bytecode caches as usual."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("POLYTRAV_DISABLE_PLUGIN_AUTOLOAD", "PYTHONDONTWRITEBYTECODE")}
    return {**env, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


#: Runs a console script as its own file does (``runpy``), then writes ``sys.modules`` to
#: the file named by POLYTRAV_MODULES_OUT at exit: what the command loaded, whatever the
#: way it ended.
_RUN = """
import atexit, json, os, runpy, sys
out = os.environ.pop("POLYTRAV_MODULES_OUT")
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def loaded_modules(command: str, folder: Path, timeout: float = 600,
                   python: str | None = None) -> tuple[set, object]:
    """Run ``command`` of :data:`COMMANDS` in ``folder`` (with ``python``'s console script):
    every module it loaded, and the finished process (its exit code and output)."""
    program, args, _, _ = COMMANDS[command]
    return modules_of(program, args, folder, timeout, python)


def modules_of(program: str, args: list[str], folder: Path, timeout: float = 600,
               python: str | None = None) -> tuple[set, object]:
    """Run console script ``program`` with ``args`` in ``folder``: every module it loaded,
    and the finished process."""
    python = python or sys.executable
    out = folder / f"modules-{os.getpid()}.json"
    out.unlink(missing_ok=True)
    env = {**environment(), "POLYTRAV_MODULES_OUT": str(out)}
    proc = subprocess.run([python, "-c", _RUN, str(console_script(program, python)), *args],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=timeout)
    modules = set(json.loads(out.read_text())) if out.exists() else set()
    return modules, proc


def heavy(modules: set) -> list[str]:
    """The :data:`HEAVY` modules among ``modules``."""
    return [m for m in HEAVY if m in modules]
