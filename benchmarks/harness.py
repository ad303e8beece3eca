"""One harness for the scripts of ``benchmarks/``: named cases, timing, options, results.

* **Cases** (:func:`case`): the networks and regions several scripts use, each built in one
  place by name: ``grid``, ``acas_R``, ``mnist_EPS``, ``random_D-W-...-O``.
* **Timing** (:func:`measure`): ``warmup`` calls whose times are discarded (imports, compiled
  subproblems, caches: one-time costs land there, not on the first variant measured), then
  ``repeats`` timed calls; the median is quoted.
* **Options** (:func:`parser`): ``--cases``, ``--repeats`` (alias ``--repeat``), ``--warmup``,
  ``--out`` and, where asked for, ``--core`` (pins the process and its children to one core).
* **Results** (:class:`Run`): one JSON schema for every script::

      {"schema": 1, "benchmark": name, "command": [...], "settings": {...},
       "machine": {...}, "commit": {"sha", "dirty", ...}, "versions": {...},
       "started": iso time, "finished": iso time, "summary": {...},
       "rows": [{"case": ..., <variant key>: ..., "repeats": n, "warmup": k,
                 "times": [...], "median": s, ...metrics}]}

Scripts import it by path (``benchmarks/`` is not a package): ``sys.path`` gets this folder.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the scripts import each other
from machine import ROOT, commit, machine, versions  # noqa: E402

SCHEMA = 1
DATA = ROOT.parent / "shared" / "data"
ACAS = DATA / "acasxu"
#: The centre of the ACAS Xu boxes of the traversal benchmarks (normalised inputs).
ACAS_C = (-0.301041984, 0.0, 0.496690162, 0.4, 0.4)
#: One thread per process for the numeric libraries (children and peers).
THREADS = {k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


# ---------------------------------------------------------------------- cases
def acas_onnx(name: str = "1_1") -> Path:
    """The ONNX file of ACAS Xu network ``name`` (``1_1`` .. ``5_9``)."""
    return ACAS / "onnx" / f"ACASXU_run2a_{name}_batch_2000.onnx"


def acas_vnnlib(prop: int | str) -> Path:
    """The VNN-LIB file of ACAS Xu property ``prop``."""
    return ACAS / "vnnlib" / f"prop_{prop}.vnnlib"


def mnist_image(index: int = 0):
    """Test image ``index`` of ``mnist_test.npz`` in ``[0, 1]`` (flat) and its label."""
    import numpy as np

    data = np.load(DATA / "mnist" / "mnist_test.npz")
    return data["images"][index].reshape(-1) / 255.0, int(data["labels"][index])


def random_net(sizes: list[int], seed: int = 0):
    """Weights ``N(0, 1/fan_in)``, biases ``N(0, 0.1^2)``, layer sizes ``sizes``."""
    import numpy as np

    from polytrav import Network

    rng = np.random.default_rng(seed)
    return Network.from_arrays([rng.normal(size=(o, i)) / np.sqrt(i) for i, o in zip(sizes, sizes[1:])],
                               [rng.normal(size=o) * 0.1 for o in sizes[1:]])


def case(name: str):
    """``(network, region)`` of a named case.

    ``grid``: the 2-20-1 net trained on the grid data (``tests/support/reference.py``) over
    ``[-1, 1]^2``; ``acas_R``: ACAS Xu 1_1 over the box of half-width ``R`` around
    :data:`ACAS_C`; ``mnist_EPS``: ``mnist2x10.onnx``, the L-inf ball of radius ``EPS``
    around test image 0, within ``[0, 1]``; ``random_D-W-...-O``: :func:`random_net` of
    those layer sizes over ``[-1, 1]^D``.
    """
    import numpy as np

    from polytrav import Ball, Box, Network

    kind, _, arg = name.partition("_")
    if name == "grid":
        from polytrav.testing.reference import train_grid_net

        return train_grid_net([20]), Box([-1.0, -1.0], [1.0, 1.0])
    if kind == "acas" and arg:
        c, r = np.array(ACAS_C), float(arg)
        return Network.from_onnx(acas_onnx()), Box(c - r, c + r)
    if kind == "mnist" and arg:
        x0, _ = mnist_image(0)
        net = Network.from_onnx(DATA / "mnist" / "mnist2x10.onnx")
        return net, Ball(x0, float(arg), norm="inf") & Box(0.0, 1.0)
    if kind == "random" and arg:
        sizes = [int(s) for s in arg.split("-")]
        return random_net(sizes), Box(-np.ones(sizes[0]), np.ones(sizes[0]))
    raise SystemExit(f"unknown case {name!r} (grid, acas_R, mnist_EPS, random_D-W-...-O)")


# ---------------------------------------------------------------------- timing
@dataclass
class Timing:
    """The times of one measurement: ``times`` timed, ``warmup`` discarded."""

    times: list[float]
    warmup: list[float] = field(default_factory=list)
    result: Any = None  #: the last call's return value

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    def fields(self, prefix: str = "") -> dict:
        """The schema's timing fields of a row (``prefix`` for a row with two timings)."""
        return {f"{prefix}repeats": len(self.times), f"{prefix}warmup": len(self.warmup),
                f"{prefix}times": self.times, f"{prefix}median": self.median}


def measure(fn: Callable[[], Any], repeats: int = 3, warmup: int = 1, *,
            slow: float | None = None) -> Timing:
    """Call ``fn`` ``warmup`` times (discarded), then ``repeats`` times timed.

    ``slow`` (seconds): a call that takes longer ends the measurement (a capped or very long
    run is not run again); if that call was a warm-up, it is kept as the one timed call.
    """
    warm, times, result = [], [], None
    for k in range(warmup + repeats):
        t0 = time.perf_counter()
        result = fn()
        elapsed = time.perf_counter() - t0
        (warm if k < warmup else times).append(elapsed)
        if slow is not None and elapsed > slow:
            break
    if not times:  # the slow warm-up is the measurement
        times = [warm.pop()]
    return Timing(times, warm, result)


def median(values) -> float | None:
    """The median, ``None`` for no values."""
    values = list(values)
    return statistics.median(values) if values else None


def pin(core: int | None) -> None:
    """Run this process (and the processes it starts) on ``core`` only."""
    if core is not None:
        os.sched_setaffinity(0, {core})


# ---------------------------------------------------------------------- options
def parser(doc: str, *, cases: list[str] | None = None, repeats: int | None = 3, warmup: int = 1,
           out: str | Path | None = None, core: bool = False) -> argparse.ArgumentParser:
    """An ``ArgumentParser`` with the common options (``cases=None``: no ``--cases``;
    ``repeats=None``: no ``--repeats``/``--warmup``, for a script that times one run)."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    if cases is not None:
        ap.add_argument("--cases", nargs="+", default=list(cases), help="cases to run")
    if repeats is not None:
        ap.add_argument("--repeats", "--repeat", dest="repeats", type=int, default=repeats,
                        help=f"timed calls per measurement, median quoted (default {repeats})")
        ap.add_argument("--warmup", type=int, default=warmup,
                        help=f"untimed calls first, discarded (default {warmup})")
    ap.add_argument("--out", type=Path, default=None if out is None else Path(out),
                    help="results file" + ("" if out is None else f" (default {relative(str(out))})"))
    if core:
        ap.add_argument("--core", type=int, default=None, help="pin the run to this core")
    return ap


# ---------------------------------------------------------------------- results
def relative(arg: str) -> str:
    """``arg`` with this repository's (and its parent's) absolute paths made relative."""
    return arg.replace(str(ROOT) + "/", "").replace(str(ROOT.parent) + "/", "../")


def environment() -> dict:
    """The schema's ``machine``, ``commit`` and ``versions``."""
    return {"machine": machine(), "commit": commit(), "versions": versions()}


def header(benchmark: str, args: argparse.Namespace | None = None, argv: list[str] | None = None) -> dict:
    """The schema's fields before the rows: what ran (``argv``: the script's arguments, default
    ``sys.argv``'s), with which settings, where, when."""
    argv = sys.argv if argv is None else [sys.argv[0], *argv]
    return {"schema": SCHEMA, "benchmark": benchmark, "command": ["python", *map(relative, argv)],
            "settings": dict(vars(args or argparse.Namespace())), **environment(),
            "started": now()}


def _json(o):
    import numpy as np

    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, Path):
        return relative(str(o))
    return str(o)


class Run:
    """One run of a benchmark: its header (command, machine, commit, versions), rows, summary."""

    def __init__(self, benchmark: str, args: argparse.Namespace | None = None, *,
                 argv: list[str] | None = None, quiet: bool = False):
        self.record = {**header(benchmark, args, argv), "summary": {}, "rows": []}
        self.quiet = quiet

    @property
    def rows(self) -> list[dict]:
        return self.record["rows"]

    @property
    def summary(self) -> dict:
        return self.record["summary"]

    def add(self, row: dict) -> dict:
        """Append a row (and print it as one JSON line)."""
        self.rows.append(row)
        if not self.quiet:
            print(json.dumps(row, default=_json), flush=True)
        return row

    def write(self, path: str | Path | None) -> Path | None:
        """Write the record as JSON (``None``: nowhere); the end time and load go in too."""
        if path is None:
            return None
        self.record["finished"] = now()
        self.record["machine"]["loadavg_end"] = list(os.getloadavg())
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(self.record, indent=1, default=_json) + "\n")
        tmp.replace(path)
        return path


def load(path: str | Path) -> dict:
    """A results file (any schema: files written before the harness have none)."""
    return json.loads(Path(path).read_text())


def now() -> str:
    """The time now (UTC, ISO 8601, seconds)."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
