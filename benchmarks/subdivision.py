"""Strategy "subdivision" against edge subdivision and against the LP traversal (issue 43).

``bunny``: the five networks shipped with edge subdivision (Berzins, ICML 2023, repository
``arturs-berzins/relu_edge_subdivision``) over ``[-0.5, 0.5]^d``, each with a ReLU after its
output so that polytrav's cells are edge subdivision's (it splits along the output's zero set
too). Both tools run in their own process, pinned to one core (``taskset -c CORE``) with one
thread (``OMP/OPENBLAS/MKL_NUM_THREADS=1``, ``torch.set_num_threads(1)``); each process makes a
first call (untimed: warm-up) and a second, timed one, as the issue measured (``--calls 1``:
the first call is timed, for nets that take minutes): the *warm* columns. Each process also
reports its *fresh* first call, the CLI user's case (``fresh_*``: polytrav's stream, edge
subdivision's call, each the first in its process), and its start-up before it
(``startup_*``: the interpreter and the tool's imports, edge subdivision's torch included;
not the net's loading by torch on polytrav's side); ``fresh_total_cpu``: the two summed. The two tools
alternate which goes first; the quoted times are medians over ``--repeat`` rounds. polytrav
is timed twice: the engine alone (:func:`polytrav.traversal.subdivision.subdivide`: codes,
vertices, radii of every cell) and the whole stream of ``Polytope`` objects
(``traverse(..., strategy="subdivision")``). Edge subdivision's cells are counted from its
vertices' sign vectors (each vertex's zeros set to every sign pattern, rows inside the box
kept); a count that differs from polytrav's is printed loudly and makes the exit status 1.

Edge subdivision states no licence: it is never vendored or imported here. ``--edge-subdivision``
names a checkout (``git clone https://github.com/arturs-berzins/relu_edge_subdivision``), whose
code runs in a child process with the checkout first on ``sys.path``; its networks are read
with ``torch.load`` (a state dict: data, no code).

``scaling``: subdivision against the hierarchical traversal, same process, alternating, on
random networks in 2-10 dimensions (``--more``: three nets for 6-8 inputs; ``--dims``: only
some) and on ACAS Xu boxes of several radii (``../shared/data``): cells, wall and CPU seconds
and cells per second of each, and their ratios. ``--kernel numpy``: the engine as without
numba (what ``auto`` runs where numba is not installed).

``skipping``: analyses that skip cells by bounds (``output_range`` and ``softmax_attack``)
under ``strategy="subdivision"`` and ``"hierarchical"`` on 7-8-input nets: CPU seconds,
polytopes skipped by each bound, values (``auto``'s crossover, issue 61).

``wide``: nets of three ReLU layers of 40 in 7-8 dimensions (the Ctrl-C tests' 8-input net
among them), far too many cells to finish: each strategy (subdivision with numba, without it,
the LP traversal) runs ``--timeout`` CPU seconds in its own pinned process, rounds alternating;
polytopes per CPU second, CPU seconds to the first polytope, ``stats.held`` and peak memory.

``profile``: where the engine's CPU time goes on bunny nets (default 3-D 3x16 and 2-D
2x50), in one pinned process: each phase of a batch (its layer's maps and screen, the cuts:
the compiled kernel's call alone and with its Python around it, the radii, splits) timed
around it, medians of ``--repeat`` runs (issue 61: shared vertices).

``pictures``: 2-D slices of ACAS Xu and mnistfc networks (``../shared/data``) with 10^4-10^5
cells: the subdivision's run, the picture of its polytopes as ``polytrav regions --plot``
draws and saves it, and the traversal on the same slice (``--timeout`` seconds; cut short, its
time for every cell is projected at its rate so far).

``--engine-only NET``: that bunny net is timed by the engine alone, its cells counted batch by
batch (the 3-D 8x32 net's 10^7 cells as Polytope objects would time Python, not the engine).
polytrav's rows say which kernel cut the layers (``kernel``: ``numba`` with ``polytrav[fast]``
installed, its first call loading the compiled code from numba's cache; else ``numpy``) and
the child's peak resident memory (``maxrss_gb``).

``parts``: a bunny net's cells by the engine in one process, then in parts on ``--workers``
local processes (:func:`polytrav.parallel.get_executor`): its level-1 pieces
(``pieces(..., strategy="subdivision")``) in ``--parts`` chunks, each child counting the cells
of ``Subdivision(..., within=keys)``; the counts must be equal, the speed-up is serial over
parallel wall time (pieces listing included); on a shared machine ``cpu_speedup`` says what
idle cores would give: serial CPU time over the listing's plus the busiest worker's.

    python benchmarks/subdivision.py bunny --edge-subdivision ../scratch/relu_edge_subdivision \\
        --repeat 5 --out benchmarks/results/subdivision_bunny.json
    python benchmarks/subdivision.py scaling --repeat 3 --out benchmarks/results/subdivision_scaling.json
    python benchmarks/subdivision.py parts --edge-subdivision ../scratch/relu_edge_subdivision \\
        --nets 3,8x32,relu,bunny --workers 2 --repeat 1 --out benchmarks/results/subdivision_parts.json
    python benchmarks/subdivision.py profile --edge-subdivision ../scratch/relu_edge_subdivision \\
        --repeat 15 --core 1 --out benchmarks/results/subdivision_profile.json
    python benchmarks/subdivision.py pictures --repeat 3 --timeout 60 --figures /tmp \\
        --out benchmarks/results/subdivision_pictures.json
"""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from harness import DATA, THREADS, Run, acas_onnx, case, parser, pin  # noqa: E402
os.environ.update({k: v for k, v in THREADS.items() if k not in os.environ})  # NumPy not loaded yet:
# one BLAS thread in this process too, as in the children and the pool's workers (the protocol)

BUNNIES = ["2,2x50,relu,bunny", "2,2x100,relu,bunny", "2,4x32,relu,bunny",
           "3,3x16,relu,bunny", "3,8x32,relu,bunny"]

#: The child process that runs edge subdivision (its code from the checkout in argv[1]).
PEER = r'''
import itertools, json, os, sys, time
T0 = float(sys.argv[4])  # the parent's perf_counter as it started this process
peer, name, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, peer)
import numpy as np, torch
torch.set_num_threads(1)
from NN import Net
from edge_subdivision import skeletal_subdivision
startup_cpu, startup_s = time.process_time(), time.perf_counter() - T0
d, rest = name.split(",")[:2]
depth, width = map(int, rest.split("x"))
d = int(d)
f = Net(ks=[d, *[width] * depth, 1])
f.load_state_dict(torch.load(os.path.join(peer, "models", name), map_location="cpu"))
def run():
    t, c = time.perf_counter(), time.process_time()
    with torch.no_grad():
        out = skeletal_subdivision(f, bbox=(-0.5, 0.5), device="cpu", verbose=False)
    return time.perf_counter() - t, time.process_time() - c, out
first = run()
for _ in range(calls - 2):
    run()
seconds, cpu, (vs, edges, sv) = run() if calls > 1 else first
sv, cells = sv.numpy().astype(np.int8), set()
for signs in itertools.product((1, -1), repeat=d):
    p = sv.copy(); z = p == 0; k = z.cumsum(1) - 1; ok = z.sum(1) == d
    p[z] = np.array(signs, np.int8)[np.minimum(k[z], d - 1)]
    cells.update(map(bytes, p[ok & (p[:, :2 * d] == 1).all(1)][:, 2 * d:]))
import resource
print(json.dumps({"seconds": seconds, "cpu": cpu, "fresh": first[0], "fresh_cpu": first[1],
                  "startup": startup_s, "startup_cpu": startup_cpu,
                  "cells": len(cells), "vertices": len(vs),
                  "edges": len(edges),
                  "maxrss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6}))
'''


def bunny_net(path: Path):
    """The bunny network with a ReLU after its output (cells = edge subdivision's)."""
    import numpy as np
    import torch

    from polytrav import Network

    sd = torch.load(path, map_location="cpu", weights_only=True)
    n = len(sd) // 2
    W = [sd[f"fcs.{i}.weight"].double().numpy() for i in range(n)]
    b = [sd[f"fcs.{i}.bias"].double().numpy() for i in range(n)]
    return Network.from_arrays(W + [np.ones((1, 1))], b + [np.zeros(1)])


def polytrav_worker(path: str, calls: int, stream: bool = True, launched: float | None = None,
                    batch: int | None = None) -> None:
    """Child process: polytrav on one bunny net. ``stream``: first the fresh call, the stream's
    first in this process (``fresh``; ``startup``: this process's time before it, the
    interpreter and ``import polytrav``, not the net's loading by torch), then ``calls - 1``
    warm-up calls of the engine and of the stream, then one timed (warm) call of each (a
    timed call in which ``auto`` loaded the compiled kernel is flagged ``*_loaded_kernel``);
    ``stream=False``: the engine only (its cells counted batch by batch), no fresh call.
    ``launched``: the parent's ``perf_counter`` as it started this process."""
    import resource

    import numpy as np

    from polytrav import Box, traverse
    from polytrav.model.geometry import build_frame
    from polytrav.traversal import subdivision
    from polytrav.traversal.subdivision import Subdivision

    out = {"startup_cpu": time.process_time(),
           "startup": None if launched is None else time.perf_counter() - launched}
    net = bunny_net(Path(path))
    d = net.n_inputs
    box = Box(np.full(d, -0.5), np.full(d, 0.5))
    frame = build_frame(box, d)
    if stream:  # the CLI user's case: the first call in a fresh process
        t, cpu = time.perf_counter(), time.process_time()
        run = traverse(net, box, strategy="subdivision")
        out["fresh_cells"] = sum(1 for _ in run)
        out["fresh"], out["fresh_cpu"] = time.perf_counter() - t, time.process_time() - cpu
        out["fresh_kernel"] = "numba" if subdivision._KERNEL else "numpy"
    def call(what: str) -> int:
        if what == "engine":
            return sum(len(part) for part in Subdivision(
                net, frame, **({} if batch is None else {"batch": batch})))
        run = traverse(net, box, strategy="subdivision")
        cells = sum(1 for _ in run)
        assert run.complete, run.status
        return cells

    whats = ("engine", "stream") if stream else ("engine",)
    for _ in range(calls - 1):  # warm-up calls of both before either is timed
        for what in whats:
            call(what)
    for what in whats:
        before = subdivision._KERNEL
        t, cpu = time.perf_counter(), time.process_time()
        out[what + "_cells"] = call(what)
        out[what] = time.perf_counter() - t
        out[what + "_cpu"] = time.process_time() - cpu
        if subdivision._KERNEL is not before:  # "auto" loaded the kernel in this timed call
            out[what + "_loaded_kernel"] = True
    out["kernel"] = "numba" if subdivision._KERNEL else "numpy"
    out["maxrss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    print(json.dumps(out))


def count_within(path: str, keys: list[bytes] | None) -> tuple[int, float, int]:
    """In a worker: the cells of the bunny net at ``path`` inside the level-1 pieces ``keys``,
    the CPU seconds they took and the worker's process id."""
    import numpy as np

    from polytrav import Box
    from polytrav.model.geometry import build_frame
    from polytrav.traversal.subdivision import Subdivision, load_kernel

    net = bunny_net(Path(path))
    d = net.n_inputs
    frame = build_frame(Box(np.full(d, -0.5), np.full(d, 0.5)), d)
    load_kernel()  # as "auto" does on these nets; loaded before the clock starts
    t = time.process_time()
    cells = sum(len(b) for b in Subdivision(net, frame,
                                            within=None if keys is None else set(keys)))
    return cells, time.process_time() - t, os.getpid()


def parts(args, run: Run) -> dict:
    """Serial engine against parts on local processes (see the module doc)."""
    import numpy as np

    from polytrav import Box
    from polytrav.host.runner import pieces
    from polytrav.parallel import get_executor

    from subdivision import count_within  # by module name: the workers import it so

    peer = Path(args.edge_subdivision).resolve()
    wrong = []
    for name in args.nets or ["3,8x32,relu,bunny"]:
        path = str(peer / "models" / name)
        net = bunny_net(Path(path))
        box = Box(np.full(net.n_inputs, -0.5), np.full(net.n_inputs, 0.5))
        serial, parallel, counts, cpu = [], [], set(), []
        with get_executor(args.workers) as pool:
            list(pool.map(count_within, [path] * args.workers, [[]] * args.workers))  # warm-up
            count_within(path, [])  # and here
            for _ in range(args.repeats):
                t = time.perf_counter()
                cells, serial_cpu, _ = count_within(path, None)
                counts.add(cells)
                serial.append(time.perf_counter() - t)
                t, c = time.perf_counter(), time.process_time()
                keys = [p.key for p in pieces(net, box, strategy="subdivision")]
                listing_cpu = time.process_time() - c
                size = -(-len(keys) // args.parts)
                chunks = [keys[i:i + size] for i in range(0, len(keys), size)]
                done = list(pool.map(count_within, [path] * len(chunks), chunks))
                parallel.append(time.perf_counter() - t)
                counts.add(sum(n for n, _, _ in done))
                busy = {}  # CPU seconds per worker process
                for _, seconds, pid in done:
                    busy[pid] = busy.get(pid, 0.0) + seconds
                # on idle cores the parallel wall time is the listing plus the busiest worker
                cpu.append({"serial": serial_cpu, "listing": listing_cpu,
                            "workers": sorted(busy.values()),
                            "speedup": serial_cpu / (listing_cpu + max(busy.values()))})
        row = {"case": name, "workers": args.workers, "parts": args.parts, "pieces": len(keys),
               "repeats": args.repeats, "cells": sorted(counts), "serial_times": serial,
               "parallel_times": parallel, "serial_s": statistics.median(serial),
               "parallel_s": statistics.median(parallel), "cpu": cpu,
               "cpu_speedup": statistics.median(c["speedup"] for c in cpu)}
        row["speedup"] = row["serial_s"] / row["parallel_s"]
        if len(counts) != 1:
            wrong.append(name)
            print(f"!!! {name}: serial and parts counted {sorted(counts)}", flush=True)
        run.add(row)
    return {"different_counts": wrong}


def profile(args, run: Run) -> dict:
    """Where the engine's CPU time goes on bunny nets (issue 61's shared vertices): each
    phase of a batch timed by ``process_time`` around it, the compiled kernel loaded first
    (``--kernel numpy``: the numpy path), medians over ``--repeat`` runs after the warm-up."""
    import numpy as np

    from polytrav import Box
    from polytrav.model.geometry import build_frame
    from polytrav.traversal import subdivision
    from polytrav.traversal.subdivision import Subdivision, _Batch

    spent: dict[str, float] = {}

    def timed(name, f):
        def call(*a, **k):
            t = time.process_time()
            try:
                return f(*a, **k)
            finally:
                spent[name] = spent.get(name, 0.0) + time.process_time() - t
        return call

    if args.kernel == "numpy":
        subdivision._KERNEL = False
    kernel = subdivision.load_kernel()
    phases = {"open": "open", "cuts by the kernel, with their Python": "_cut_compiled",
              "cuts (all)": "cut_layer", "radii": "_radii", "split": "split",
              "carve": "carve"}
    saved = {m: getattr(_Batch, m) for m in phases.values()}
    for label, m in phases.items():
        setattr(_Batch, m, timed(label, saved[m]))
    compiled = kernel.cut_layer if kernel else None
    if kernel:
        kernel.cut_layer = timed("kernel cut_layer (compiled)", compiled)
    try:
        for name in args.nets or ["3,3x16,relu,bunny", "2,2x50,relu,bunny"]:
            net = bunny_net(Path(args.edge_subdivision).resolve() / "models" / name)
            d = net.n_inputs
            frame = build_frame(Box(np.full(d, -0.5), np.full(d, 0.5)), d)
            per_run = []
            for k in range(args.warmup + args.repeats):
                spent.clear()
                t = time.process_time()
                cells = sum(len(b) for b in Subdivision(net, frame))
                total = time.process_time() - t
                if k >= args.warmup:
                    per_run.append({"total": total, **spent})
            keys = sorted({k for r in per_run for k in r}, key=lambda k: k != "total")
            row = {"case": name, "cells": cells, "kernel": "numba" if kernel else "numpy",
                   "repeats": args.repeats,
                   "cpu_s": {k: statistics.median(r.get(k, 0.0) for r in per_run) for k in keys}}
            print(name, {k: round(v, 4) for k, v in row["cpu_s"].items()}, flush=True)
            run.add(row)
    finally:
        for m, f in saved.items():
            setattr(_Batch, m, f)
        if kernel:
            kernel.cut_layer = compiled
    return {}


#: In a child's command: replaced by the parent's ``perf_counter`` as it starts the child (the
#: clock is the system's monotonic one, the same in every process), for its start-up wall time.
LAUNCHED = "{launched}"


def child(cmd: list[str], core: int | None, timeout: float) -> dict | None:
    if core is not None and shutil.which("taskset"):
        cmd = ["taskset", "-c", str(core), *cmd]
    cmd = [str(time.perf_counter()) if a == LAUNCHED else a for a in cmd]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                             env={**os.environ, **THREADS})
    except subprocess.TimeoutExpired:
        return None
    if res.returncode != 0:
        raise RuntimeError(f"{cmd[:4]} failed: {res.stderr[-2000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def bunny(args, run: Run) -> dict:
    peer = Path(args.edge_subdivision).resolve()
    wrong = []
    for name in args.nets or BUNNIES:
        path = peer / "models" / name
        calls = args.warmup + 1
        ours = [sys.executable, str(Path(__file__).resolve()), "worker", str(path),
                str(calls), "engine" if name in (args.engine_only or ()) else "stream",
                LAUNCHED, *([str(args.batch)] if args.batch else [])]
        theirs = [sys.executable, "-c", PEER, str(peer), name, str(calls), LAUNCHED]
        runs = {"polytrav": [], "edge": []}
        for k in range(args.repeats):
            order = (("polytrav", ours), ("edge", theirs))
            for tool, cmd in (order if k % 2 == 0 else order[::-1]):
                runs[tool].append(child(cmd, args.core, args.timeout))
        done = {t: [r for r in rs if r is not None] for t, rs in runs.items()}
        row = {"case": name, "repeats": args.repeats, "warmup": args.warmup,
               "polytrav_cells": done["polytrav"][0]["engine_cells"] if done["polytrav"] else None,
               "edge_cells": done["edge"][0]["cells"] if done["edge"] else None,
               "edge_vertices": done["edge"][0]["vertices"] if done["edge"] else None,
               "edge_edges": done["edge"][0]["edges"] if done["edge"] else None,
               "kernel": done["polytrav"][0].get("kernel") if done["polytrav"] else None,
               "polytrav_maxrss_gb": max((r["maxrss_gb"] for r in done["polytrav"]), default=None),
               "edge_maxrss_gb": max((r["maxrss_gb"] for r in done["edge"]), default=None)}
        for key, tool, field in (("engine_s", "polytrav", "engine"),
                                 ("stream_s", "polytrav", "stream"),
                                 ("edge_s", "edge", "seconds"),
                                 ("engine_cpu_s", "polytrav", "engine_cpu"),
                                 ("stream_cpu_s", "polytrav", "stream_cpu"),
                                 ("edge_cpu_s", "edge", "cpu"),
                                 # fresh: the first call in a new process, start-up apart
                                 ("fresh_s", "polytrav", "fresh"),
                                 ("fresh_cpu_s", "polytrav", "fresh_cpu"),
                                 ("startup_s", "polytrav", "startup"),
                                 ("startup_cpu_s", "polytrav", "startup_cpu"),
                                 ("fresh_total_cpu_s", "polytrav", "fresh_total_cpu"),
                                 ("edge_fresh_s", "edge", "fresh"),
                                 ("edge_fresh_cpu_s", "edge", "fresh_cpu"),
                                 ("edge_startup_s", "edge", "startup"),
                                 ("edge_startup_cpu_s", "edge", "startup_cpu"),
                                 ("edge_fresh_total_cpu_s", "edge", "fresh_total_cpu")):
            for r in done[tool]:
                if r.get("fresh_cpu") is not None:
                    r["fresh_total_cpu"] = r["startup_cpu"] + r["fresh_cpu"]
            times = [r.get(field) for r in done[tool]]
            row[key[:-2] + "_times"] = times
            row[key] = statistics.median(times) if len(times) == args.repeats \
                and None not in times else None
        for key in ("stream", "engine", "stream_cpu", "engine_cpu"):  # warm: the protocol
            edge = row["edge_cpu_s" if key.endswith("cpu") else "edge_s"]
            if edge and row[key + "_s"]:
                row[key + "_over_edge"] = row[key + "_s"] / edge
        for key in ("fresh", "fresh_cpu", "fresh_total_cpu"):  # fresh: the CLI user's case
            if row["edge_" + key + "_s"] and row[key + "_s"]:
                row[key + "_over_edge"] = row[key + "_s"] / row["edge_" + key + "_s"]
        row["fresh_kernel"] = done["polytrav"][0].get("fresh_kernel") if done["polytrav"] else None
        for what in ("engine", "stream"):  # timed calls that paid for loading the kernel
            row[what + "_loaded_kernel"] = sum(bool(r.get(what + "_loaded_kernel"))
                                               for r in done["polytrav"])
        fresh_cells = {r["fresh_cells"] for r in done["polytrav"] if "fresh_cells" in r}
        if fresh_cells - {row["polytrav_cells"]}:
            wrong.append(name)
            print(f"!!! {name}: the fresh call counted {sorted(fresh_cells)} cells", flush=True)
        if None not in (row["polytrav_cells"], row["edge_cells"]) \
                and row["polytrav_cells"] != row["edge_cells"]:
            wrong.append(name)
            print(f"!!! {name}: polytrav {row['polytrav_cells']} cells, edge subdivision "
                  f"{row['edge_cells']}", flush=True)
        run.add(row)
    return {"different_counts": wrong}


def scaling(args, run: Run) -> dict:
    import numpy as np

    from polytrav.testing import random_net

    from polytrav import Box, traverse

    from polytrav.traversal import subdivision

    nets = [(0, 2, [16, 16]), (0, 3, [16, 16]), (0, 4, [12, 12]), (0, 5, [10, 10]),
            (0, 6, [8, 8]), (0, 7, [8, 8]), (0, 8, [6, 6])]
    if args.more:  # two more nets per dimension for 6-8 inputs, and 9-10 inputs (issue 61)
        nets += [(1, 6, [8, 8]), (2, 6, [8, 8]), (1, 7, [8, 8]), (2, 7, [8, 8]),
                 (1, 8, [6, 6]), (2, 8, [6, 6]), (0, 9, [5, 5]), (1, 9, [5, 5]), (0, 10, [4, 4]),
                 (1, 10, [4, 4])]
    if args.dims:
        nets = [n for n in nets if n[1] in args.dims]
    cases = [(f"random {d}-D {w}" + (f" seed {seed}" if seed else ""), random_net(seed, d, w),
              Box(-np.ones(d), np.ones(d))) for seed, d, w in nets]
    if acas_onnx().exists() and not args.dims:
        cases += [(f"ACAS Xu 1_1, r={r}", *case(f"acas_{r}")) for r in (0.003, 0.005)]
    if args.kernel == "numpy":  # as without numba: load_kernel finds none
        subdivision._KERNEL = False
    for label, net, region in cases:
        times = {"subdivision": [], "hierarchical": []}
        cpu = {s: [] for s in times}
        cells = {}
        for s in list(times) * args.warmup:  # warm-up: first-call costs (discarded)
            sum(1 for _ in traverse(net, region, strategy=s, time_limit=args.timeout))
        for k in range(args.repeats):
            for s in (("subdivision", "hierarchical") if k % 2 == 0
                      else ("hierarchical", "subdivision")):
                t, c = time.perf_counter(), time.process_time()
                tr = traverse(net, region, strategy=s, time_limit=args.timeout)
                cells[s] = sum(1 for _ in tr)
                times[s].append(time.perf_counter() - t if tr.complete else None)
                cpu[s].append(time.process_time() - c if tr.complete else None)
        med = {s: statistics.median(v) if None not in v else None for s, v in times.items()}
        med_cpu = {s: statistics.median(v) if None not in v else None for s, v in cpu.items()}
        row = {"case": label, "dims": region.with_dims(net.n_inputs).bounding_box()[0].size,
               "cells": cells, "repeats": args.repeats, "warmup": args.warmup,
               "kernel": "numba" if subdivision._KERNEL else "numpy",
               **{f"{s}_times": v for s, v in times.items()}, **{f"{s}_s": v for s, v in med.items()},
               **{f"{s}_cpu_times": v for s, v in cpu.items()},
               **{f"{s}_cpu_s": v for s, v in med_cpu.items()}}
        if None not in med.values():
            row["traversal_over_subdivision"] = med["hierarchical"] / med["subdivision"]
            row["cells_per_s"] = {s: cells[s] / med[s] for s in med}
        if None not in med_cpu.values():
            row["cpu_traversal_over_subdivision"] = (med_cpu["hierarchical"]
                                                     / med_cpu["subdivision"])
        run.add(row)
    return {}


#: ``wide``: (seed, inputs): nets [d, 40, 40, 40, 3] drawn as the Ctrl-C tests' (seed 1,
#: 8 inputs: tests/support/ctrl_c.py's big.onnx), far too many cells to finish.
WIDE = [(1, 8), (2, 8), (1, 7), (2, 7)]


def wide_worker(seed: int, d: int, strategy: str, seconds: float) -> None:
    """Child process: ``seconds`` of CPU of ``traverse`` on a wide net in [-1, 1]^d;
    ``strategy`` "numpy": subdivision without the compiled kernel."""
    import resource

    import numpy as np

    from polytrav import Box, Network, traverse
    from polytrav.traversal import subdivision

    rng = np.random.default_rng(seed)
    sizes = [d, 40, 40, 40, 3]
    weights, biases = [], []
    for m, n in zip(sizes[:-1], sizes[1:]):  # as tests/support/ctrl_c.py's random_layers
        weights.append(rng.normal(size=(n, m)))
        biases.append(rng.normal(size=n))
    if strategy == "numpy":
        subdivision._KERNEL = False
    else:
        subdivision.load_kernel()  # numba's cache read before the clock starts
    c = time.process_time()
    run = traverse(Network(weights, biases), Box(-np.ones(d), np.ones(d)),
                   strategy="hierarchical" if strategy == "hierarchical" else "subdivision",
                   time_limit=20 * seconds)  # wall: a guard on a loaded machine
    first, n = None, 0
    for _ in run:
        n += 1
        if first is None:
            first = time.process_time() - c
        if n % 64 == 0 and time.process_time() - c > seconds:  # CPU seconds
            run.close()
    cpu = time.process_time() - c
    print(json.dumps({"polytopes": n, "cpu_s": cpu, "first_cpu_s": first,
                      "per_cpu_s": n / cpu, "held": run.stats.held,
                      "status": run.status.value,
                      "maxrss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6}))


def wide(args, run: Run) -> dict:
    """Wide nets (3 x 40) in 7-8 dimensions: polytopes per CPU second of subdivision (numba,
    numpy) and the LP traversal over ``--timeout`` CPU seconds each, in their own processes
    (peak memory), alternating."""
    strategies = ["subdivision", "numpy", "hierarchical"]
    for seed, d in WIDE:
        rounds = {s: [] for s in strategies}
        for k in range(args.repeats):
            for s in strategies[k % 3:] + strategies[: k % 3]:
                out = child([sys.executable, __file__, "wide-worker", str(seed), str(d), s,
                             str(args.timeout)], args.core, 10 * args.timeout + 120)
                rounds[s].append(out)
                print(d, seed, s, out, flush=True)
        med = {s: {key: statistics.median([r[key] for r in v if r[key] is not None] or [None])
                   for key in ("per_cpu_s", "first_cpu_s", "maxrss_gb", "held", "polytopes")}
               for s, v in rounds.items()}
        run.add({"case": f"random {d}-D [40, 40, 40] seed {seed}", "dims": d,
                 "seconds": args.timeout, "rounds": rounds, "medians": med,
                 "numba_over_traversal": med["subdivision"]["per_cpu_s"]
                 / med["hierarchical"]["per_cpu_s"],
                 "numpy_over_traversal": med["numpy"]["per_cpu_s"]
                 / med["hierarchical"]["per_cpu_s"]})
    return {}


def skipping(args, run: Run) -> dict:
    """Analyses that skip cells by bounds (``output_range`` and ``softmax_attack``: an LP
    per polytope unless a bound rules it out) under each strategy, on the 7-8-input nets of
    tests/unit/test_lagrange.py and the scaling nets: CPU seconds, the polytopes each skipped
    by its bound, and the values (equal)."""
    import numpy as np

    from polytrav import Box, analyze
    from polytrav.plugins.adversarial import SoftmaxAttack
    from polytrav.plugins.output_range import OutputRange
    from polytrav.testing import random_net

    cases = [(21, 8, [8, 6], 3), (22, 8, [7, 6], 4), (0, 7, [8, 8], 3), (0, 8, [6, 6], 3)]
    for seed, n_in, widths, n_out in cases:
        net = random_net(seed, n_in, widths, n_out=n_out)
        lo, hi = -np.ones(n_in), np.ones(n_in)
        lo[0] = -0.5
        g = np.random.default_rng(seed).standard_normal(n_out)
        cpu = {"subdivision": [], "hierarchical": []}
        seen = {}
        for k in range(args.warmup + args.repeats):
            for s in (("subdivision", "hierarchical") if k % 2 == 0
                      else ("hierarchical", "subdivision")):
                c = time.process_time()
                rep = analyze(net, Box(lo, hi), [OutputRange(weights=g), SoftmaxAttack(0)],
                              strategy=s)
                if k >= args.warmup:
                    cpu[s].append(time.process_time() - c)
                seen[s] = {"polytopes": rep.stats["polytopes"], "exact": rep[0].exact and
                           rep[1].exact, "range": rep[0].value, "attack": rep[1].value,
                           "skipped_by_bound": [rep[0].details["skipped_by_bound"],
                                                rep[1].details["skipped_by_bound"]]}
        med = {s: statistics.median(v) for s, v in cpu.items()}
        run.add({"case": f"random {n_in}-D {widths} seed {seed}, {n_out} outputs",
                 "repeats": args.repeats, **{f"{s}_cpu_times": v for s, v in cpu.items()},
                 **{f"{s}_cpu_s": v for s, v in med.items()}, "runs": seen,
                 "traversal_over_subdivision": med["hierarchical"] / med["subdivision"]})
    return {}


def pictures(args, run: Run) -> dict:
    """2-D slices of real networks: subdivision and the picture of its polytopes (as
    ``polytrav regions --plot`` draws it), against the traversal on the same slice."""
    import matplotlib

    matplotlib.use("Agg")
    import numpy as np

    from polytrav import Box, Network, traverse
    from polytrav.interface.plot import plane_slice, save_partition

    cases = []
    if acas_onnx().exists():
        net = Network.from_onnx(acas_onnx())
        for r in (0.5, 1.0):  # inputs 0 and 1 in [-r, r], the others at 0
            net2, _ = plane_slice(net, np.zeros(5), (0, 1), np.full(2, -r), np.full(2, r))
            cases.append((f"ACAS Xu 1_1, inputs 0-1 in [-{r}, {r}]^2", net2,
                          Box(np.full(2, -r), np.full(2, r))))
    images = DATA / "mnist" / "mnist_test.npz"
    for name, (lo, hi) in (("256x2", (-0.5, 1.5)), ("256x4", (0.0, 1.0))):
        path = DATA / "mnistfc" / "onnx" / f"mnist-net_{name}.onnx"
        if path.exists() and images.exists():
            X = np.load(images)["images"].astype(float) / 255.0
            plane = Network.from_onnx(path).compose_input(
                np.stack([X[1] - X[0], X[2] - X[0]], axis=1), X[0])
            cases.append((f"mnistfc {name}, the plane of test images 0-2, [{lo}, {hi}]^2",
                          plane, Box([lo, lo], [hi, hi])))
    out = Path(args.figures or ".") / "slice.png"
    for label, net, box in cases:
        engine, draw = [], []
        for _ in range(args.warmup):  # warm-up (discarded)
            save_partition(net, box, out, polytopes=list(traverse(net, box, strategy="subdivision")))
        for _ in range(args.repeats):
            t = time.perf_counter()
            run = traverse(net, box, strategy="subdivision")
            polytopes = list(run)
            engine.append(time.perf_counter() - t)
            t = time.perf_counter()
            save_partition(net, box, out, polytopes=polytopes)
            draw.append(time.perf_counter() - t)
        t = time.perf_counter()
        trav = traverse(net, box, strategy="hierarchical", time_limit=args.timeout)
        visited = sum(1 for _ in trav)
        trav_s = time.perf_counter() - t
        row = {"case": label, "cells": len(polytopes), "repeats": args.repeats,
               "warmup": args.warmup, "subdivision_times": engine, "picture_times": draw,
               "subdivision_s": statistics.median(engine), "picture_s": statistics.median(draw), "traversal_cells": visited,
               "traversal_s": trav_s, "traversal_complete": trav.complete}
        rate = visited / trav_s
        # the traversal's time for every cell: measured, or (cut short) at its rate so far
        row["traversal_over_subdivision"] = (trav_s if trav.complete else len(polytopes) / rate) \
            / row["subdivision_s"]
        run.add(row)
    return {}


def main() -> None:
    if len(sys.argv) > 5 and sys.argv[1] == "wide-worker":
        return wide_worker(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], float(sys.argv[5]))
    if len(sys.argv) > 5 and sys.argv[1] == "worker":
        return polytrav_worker(sys.argv[2], int(sys.argv[3]), sys.argv[4] == "stream",
                               float(sys.argv[5]), int(sys.argv[6]) if len(sys.argv) > 6 else None)
    ap = parser(__doc__.split("\n")[0], repeats=3, warmup=1, core=True)
    ap.add_argument("mode", choices=["bunny", "scaling", "pictures", "parts", "skipping", "wide",
                                     "profile"])
    ap.add_argument("--workers", type=int, default=2, help="parts: local worker processes")
    ap.add_argument("--more", action="store_true",
                    help="scaling: a second net per dimension from 6, and 9-10 inputs")
    ap.add_argument("--parts", type=int, default=48, help="parts: chunks of level-1 pieces")
    ap.add_argument("--dims", type=int, nargs="*", help="scaling: only the nets of these inputs")
    ap.add_argument("--kernel", choices=["auto", "numpy"], default="auto",
                    help="scaling, profile: numpy: the engine as without numba")
    ap.add_argument("--edge-subdivision", help="a checkout of relu_edge_subdivision (bunny)")
    ap.add_argument("--nets", nargs="*", help="bunny networks (default: all five)")
    ap.add_argument("--engine-only", nargs="*",
                    help="bunny networks timed by the engine alone (no Polytope objects: the "
                         "3-D 8x32 net's 10^7 cells)")
    ap.add_argument("--calls", type=int, default=None,
                    help="bunny: calls per process, the last one timed (sets --warmup to "
                         "CALLS - 1; 1 for nets that take minutes)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per process / run")
    ap.add_argument("--batch", type=int, help="bunny: the engine's batch (default: its BATCH)")
    ap.add_argument("--figures", help="pictures: the folder for the last picture drawn")
    args = ap.parse_args()
    if args.calls is not None:
        args.warmup = args.calls - 1
    if args.mode in ("bunny", "parts", "profile") and not args.edge_subdivision:
        ap.error(f"{args.mode} needs --edge-subdivision PATH (a checkout of relu_edge_subdivision)")
    if args.mode not in ("bunny", "parts", "wide"):  # these pin each child with taskset
        pin(args.core)
    run = Run(f"subdivision {args.mode}", args)
    run.summary.update({"bunny": bunny, "scaling": scaling, "pictures": pictures,
                        "parts": parts, "skipping": skipping, "wide": wide,
                        "profile": profile}[args.mode](args, run))
    run.write(args.out)
    sys.exit(1 if run.summary.get("different_counts") else 0)


if __name__ == "__main__":
    main()
