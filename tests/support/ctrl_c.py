"""What the Ctrl-C tests share: a network with far more polytopes than a test waits for, the
installed console scripts, a run Ctrl-C'd once its terminal shows it is ready, and how a run
that got SIGINT may end."""
from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

import numpy as np
import pytest

#: The one line on stderr of a Ctrl-C that found no command running yet, per console script,
#: with its exit code (docs/cli.md, docs/vnnlib.md).
BEFORE_ANY_RESULT = {"polytrav": ("polytrav: interrupted before any result", 2),
                     "polytrav-vnnlib": ("polytrav-vnnlib: interrupted before any answer", 130)}
#: The one line of a Ctrl-C that a command did not catch itself (loading, set-up).
BEFORE_THE_END = ("polytrav: interrupted before the command finished", 2)
CONSOLE = Path(__file__).resolve().parents[2] / "core" / "interface" / "console.py"
#: Seconds to wait for a readiness signal, or for the end after Ctrl-C: a hang guard only.
HANG = 600


def as_from_a_terminal() -> None:
    """A child's ``preexec_fn``: Ctrl-C at its default action, as a terminal starts a command,
    whatever this test process inherited (a background job of a script ignores SIGINT, and so
    would the command it starts: polytrav, like Python, keeps an inherited ignore)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def console_script(name: str) -> str:
    """The installed console script ``name`` of this interpreter's environment."""
    path = Path(sys.executable).parent / name
    if not path.exists():
        pytest.skip(f"the console script {name} is not installed next to {sys.executable} "
                    "(pip install -e . installs it)")
    return str(path)


def _read(fd) -> bytes:
    """What the pseudo-terminal has, or b"" once the process closed it."""
    ready, _, _ = select.select([fd], [], [], HANG)
    assert ready, f"nothing on the terminal for {HANG} s: the command hangs"
    try:
        return os.read(fd, 65536)
    except OSError:  # EIO: every writer is gone
        return b""


def interrupted_when(ready: re.Pattern, args, cwd):
    """Run ``polytrav args`` with stderr on a pseudo-terminal (as a user's: progress bars
    show), Ctrl-C once the terminal shows ``ready`` (never, if the command ends before);
    the exit code, stdout and what the terminal showed. Nothing waits a fixed time."""
    main, terminal = pty.openpty()
    termios.tcsetwinsize(terminal, (24, 120))  # the bar needs a width
    with tempfile.TemporaryFile("w+") as stdout:
        proc = subprocess.Popen([console_script("polytrav"), *args], stdout=stdout,
                                preexec_fn=as_from_a_terminal,
                                stderr=terminal, stdin=subprocess.DEVNULL, cwd=cwd)
        os.close(terminal)
        try:
            shown, chunk = b"", b"?"
            while chunk and not ready.search(shown):
                chunk = _read(main)
                shown += chunk
            if chunk:  # the terminal shows it ready; else the command ended on its own
                proc.send_signal(signal.SIGINT)
            guard = time.monotonic() + HANG  # a hang guard only: a lost Ctrl-C fails, not hangs
            while chunk := _read(main):
                shown += chunk
                assert time.monotonic() < guard, f"still running {HANG} s after its Ctrl-C"
            code = proc.wait(timeout=HANG)
        finally:
            if proc.poll() is None:
                proc.kill()
            os.close(main)
        stdout.seek(0)
        return code, stdout.read(), shown.decode(errors="replace")


def save_mlp_onnx(weights, biases, path: Path) -> None:
    """Save a ReLU MLP (float32 ``Gemm`` layers with ``Relu`` between them) as ONNX."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits, prev = [], [], "input"
    for k, (W, b) in enumerate(zip(weights, biases)):
        inits += [numpy_helper.from_array(np.asarray(W, np.float32), f"W{k}"),
                  numpy_helper.from_array(np.asarray(b, np.float32), f"b{k}")]
        last = k == len(weights) - 1
        nodes.append(helper.make_node("Gemm", [prev, f"W{k}", f"b{k}"],
                                      ["output" if last else f"h{k}"], transB=1))
        if not last:
            nodes.append(helper.make_node("Relu", [f"h{k}"], [f"r{k}"]))
            prev = f"r{k}"
    n_in, n_out = np.shape(weights[0])[1], np.shape(weights[-1])[0]
    graph = helper.make_graph(
        nodes, path.stem, [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, n_in])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, n_out])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))


def random_layers(rng, sizes):
    """Standard normal weights and biases, drawn layer by layer (weights, then biases)."""
    weights, biases = [], []
    for m, n in zip(sizes[:-1], sizes[1:]):
        weights.append(rng.normal(size=(n, m)))
        biases.append(rng.normal(size=n))
    return weights, biases


def write_big(root: Path, n_inputs: int = 4) -> Path:
    """A 4-input net with three ReLU layers of 40 (``big.onnx``): far more polytopes in
    [-1, 1]^4 than a test waits for; a VNN-LIB 1.0 property only a full traversal decides
    (``far.vnnlib``), the same as a 2.0 query (``far2.vnnlib``), and a job file.

    On 8 inputs the default strategy is subdivision with numba installed (the LP traversal
    without it): the first layer alone has millions of cells, which subdivision streams from
    its first few thousand cuts (a batch stops within a layer once it holds too many
    vertices); on 4 inputs it cuts a first batch of cells through all three layers before
    it reports a polytope."""
    weights, biases = random_layers(np.random.default_rng(1), [n_inputs, 40, 40, 40, 3])
    biases[-1][2] = -1e4  # class 2 never wins: a counterfactual towards it visits everything
    save_mlp_onnx(weights, biases, root / "big.onnx")
    lines = ["(declare-const X_%d Real)" % i for i in range(n_inputs)]
    lines += ["(declare-const Y_%d Real)" % j for j in range(3)]
    lines += [f"(assert (>= X_{i} -1))\n(assert (<= X_{i} 1))" for i in range(n_inputs)]
    lines += ["(assert (>= Y_0 1000000))"]  # unreachable: only a full traversal says unsat
    (root / "far.vnnlib").write_text("\n".join(lines) + "\n")
    (root / "far2.vnnlib").write_text(
        f"(vnnlib-version <2.0>)\n(declare-network N (declare-input X float32 [1, {n_inputs}]) "
        "(declare-output Y float32 [1, 3]))\n"
        + "".join(f"(assert (>= X[0,{i}] -1.0)) (assert (<= X[0,{i}] 1.0))\n"
                  for i in range(n_inputs))
        + "(assert (>= Y[0,0] 1000000.0))\n")
    (root / "job.toml").write_text('network = "big.onnx"\n[region]\nkind = "box"\nlower = -1\n'
                                   'upper = 1\n[[analysis]]\nname = "output_range"\n')
    names = [f"x{i}" for i in range(n_inputs)]
    (root / "rows.csv").write_text("\n".join([  # explain: see EXPLAIN_LONG
        ",".join(["id", *names]), ",".join(["quick", *["0.999"] * n_inputs]),
        ",".join(["long", *["-1"] * n_inputs]), ",".join(["centre", *["0"] * n_inputs])]) + "\n")
    return root


def explain_long(n_inputs: int) -> list[str]:
    """``polytrav explain`` options on ``rows.csv`` of :func:`write_big` that make the run
    certain to be in its second row long after the first: each counterfactual may only
    increase every feature and searches its whole box (``search "full"``, no MILP, no time
    limit), so row ``quick`` (every feature at 0.999) searches a box that meets one polytope,
    rows ``long`` and ``centre`` boxes with far more polytopes than a test waits for."""
    import json

    names = [f"x{i}" for i in range(n_inputs)]
    analyses = [["counterfactual", {"norm": 1, "search": "full", "milp_after": None,
                                    "direction": {name: "increase" for name in names}}]]
    return ["--index-col", "id", "--domain", "-1:1", "--time-limit", "1e9",
            "--analyses", json.dumps(analyses)]


def _take_over_line() -> int:
    """The line of console.py where the console script takes SIGINT over."""
    for k, line in enumerate(CONSOLE.read_text().splitlines(), 1):
        if line.startswith("if ") and "in STARTING" in line:
            return k
    raise AssertionError("console.py no longer takes SIGINT over at import")


def in_interpreter_start_up(code: int, err: str) -> bool:
    """Whether SIGINT came before any code of polytrav's could run, in the interpreter's own
    start-up (docs/cli.md): before Python has a handler (death by the signal, nothing said),
    while Python sets up its streams, runs ``site`` or sets up ``__main__`` (its fatal
    ``init_...`` report, or "failed to set __main__.__loader__", exit 1),
    or in the imports that lead to console.py's take-over (Python's KeyboardInterrupt
    traceback, death by the signal). In the last two, no frame is in polytrav's code but the
    package's two ``__init__`` files and console.py's module code up to the take-over. CPython
    may also report the interrupt while it checks ``argv[0]`` for ``sys.path`` and then run
    on, the Ctrl-C lost before any code of polytrav's ran. A crash (SIGSEGV, SIGABRT) is
    never one of these."""
    if code == -2 and err == "":
        return True
    # CPython reports the interrupt while it sets up sys.path, then runs on: no frame of the
    # repository's code (the console script's own path, .../bin/polytrav, may show)
    if err.startswith("Failed checking if argv[0] is an import path entry\n") and re.search(
            r"KeyboardInterrupt:?\s*$", err) and not re.search(
                rf'File "{re.escape(str(CONSOLE.parents[2]))}/(core|plugins|solvers)/', err):
        return True
    # Python's start-up reports: a fatal ``init_...`` error, or (CPython 3.11) failing to set
    # ``__main__.__loader__`` as the script's module is set up, before it runs a line
    fatal = code == 1 and re.match(
        r"Fatal Python error: init_\w+: |python\S*: failed to set __main__\.__loader__\n", err)
    if not (fatal or code == -2) or not re.search(r"KeyboardInterrupt:?\s*$", err):
        return False
    root = CONSOLE.parents[2]
    for file, line, where in re.findall(r'File "([^"]+)", line (\d+), in (\S+)', err):
        path = Path(file)
        if root not in path.parents:
            continue  # the console script, importlib, site, the standard library
        if path in (root / "core" / "__init__.py", root / "core" / "interface" / "__init__.py"):
            continue
        if path == CONSOLE and where == "<module>" and int(line) <= _take_over_line():
            continue
        return False
    return True
