"""The VNN-LIB 2.0 monotonicity query on every ACAS Xu network, end to end (issue 26, item 6).

Per network: write the query (two copies ``f`` and ``g``, ``g`` equal-to ``f``; the box on
``X_f``; ``X_g[0] >= -0.3``, ``X_g[0] <= X_f[0]``, the other inputs equal; unsafe
``Y_f[3] < Y_g[3]``: is output 3 non-decreasing in input 0?), run ``polytrav-vnnlib verify``
as a new process (wall time from before the process starts to after it exits: process
start, imports, model loading, the answer and the assignment) and check the printed
assignment: the result line, the relations on the printed inputs, and onnxruntime's float32
outputs at the printed inputs (strictly). Repeats each network ``--repeat`` times and
reports per-network medians, then the median over networks.

``--general`` adds a vacuous output condition (``Y_f[0] <= 1e9``) so the query no longer has
the monotonicity shape: the two copies are traversed as one block-diagonal network instead
of by slopes (the comparison the docs quote).

    python benchmarks/vnnlib_monotonicity.py                       # 45 networks, 3 repeats
    python benchmarks/vnnlib_monotonicity.py --general --networks 1_1 3_3
"""
from __future__ import annotations

import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import ACAS, Run, measure, parser  # noqa: E402

ONNX = ACAS / "onnx"
LOWER = [-0.3, -0.5, -0.5, -0.5, -0.5]
UPPER = [0.6, 0.5, 0.5, 0.5, 0.5]


def query_text(general: bool) -> str:
    lines = ["(vnnlib-version <2.0>)",
             "(declare-network f (declare-input X_f real [1, 1, 1, 5]) "
             "(declare-output Y_f real [1, 5]))",
             "(declare-network g (equal-to f) (declare-input X_g real [1, 1, 1, 5]) "
             "(declare-output Y_g real [1, 5]))"]
    lines += [f"(assert (>= X_f[0,0,0,{i}] {LOWER[i]})) (assert (<= X_f[0,0,0,{i}] {UPPER[i]}))"
              for i in range(5)]
    lines += ["(assert (>= X_g[0,0,0,0] -0.3)) (assert (<= X_g[0,0,0,0] X_f[0,0,0,0]))"]
    lines += [f"(assert (== X_g[0,0,0,{i}] X_f[0,0,0,{i}]))" for i in range(1, 5)]
    lines += ["(assert (< Y_f[0,3] Y_g[0,3]))"]
    if general:
        lines += ["(assert (<= Y_f[0,0] 1000000000.0))"]
    return "\n".join(lines) + "\n"


def checked(stdout: str, onnx_path: Path) -> bool:
    """The printed assignment is a violation: relations on the printed inputs, onnxruntime's
    float32 outputs at them (strict), and the printed outputs are those."""
    import onnxruntime as ort

    lines = stdout.splitlines()
    if not lines or lines[0] != "sat":
        return False
    xf, yf = [float(v) for v in lines[2:7]], [float(v) for v in lines[8:13]]
    xg, yg = [float(v) for v in lines[14:19]], [float(v) for v in lines[20:25]]
    s = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    name = s.get_inputs()[0].name
    out = [s.run(None, {name: np.array(x, np.float32).reshape(1, 1, 1, 5)})[0].ravel()
           for x in (xf, xg)]
    in_box = all(lo <= v <= hi for v, lo, hi in zip(xf, LOWER, UPPER))
    return bool(in_box and xg[1:] == xf[1:] and -0.3 <= xg[0] <= xf[0]
                and out[0][3] < out[1][3] and np.allclose(out[0], yf) and np.allclose(out[1], yg))


def main(argv=None) -> int:
    ap = parser(__doc__.splitlines()[0], repeats=3, warmup=1)
    ap.add_argument("--networks", nargs="*", help="e.g. 1_1 3_3 (default: all 45)")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--general", action="store_true",
                    help="break the monotonicity shape: traverse the two copies as one network")
    args = ap.parse_args(argv)
    run = Run("vnnlib_monotonicity", args, argv=argv, quiet=True)
    exe = shutil.which("polytrav-vnnlib")
    if exe is None:
        print("polytrav-vnnlib is not on PATH (pip install -e . installs it)", file=sys.stderr)
        return 2
    paths = sorted(ONNX.glob("*.onnx"))
    if args.networks:
        paths = [p for p in paths if re.search(r"(\d_\d)_batch", p.name).group(1) in args.networks]
    if not paths:
        print(f"no ACAS Xu networks found in {ONNX}", file=sys.stderr)
        return 2
    query = Path(tempfile.mkdtemp()) / "mono.vnnlib"
    query.write_text(query_text(args.general))
    medians, answers, bad = [], {}, []
    for path in paths:
        name = re.search(r"(\d_\d)_batch", path.name).group(1)
        t = measure(lambda path=path: subprocess.run(
            [exe, "verify", str(query), "--network", f"f={path}", "--timeout", str(args.timeout)],
            capture_output=True, text=True, check=False), args.repeats, args.warmup)
        res, times = t.result, t.times
        answer = res.stdout.split("\n", 1)[0]
        answers[answer] = answers.get(answer, 0) + 1
        ok = answer == "sat" and checked(res.stdout, path)
        if answer == "sat" and not ok:
            bad.append(name)
        medians.append(t.median)
        run.add({"case": name, **t.fields(), "answer": answer, "checked": ok})
        print(f"{name}: {answer} checked={ok} median {medians[-1]:.3f} s "
              f"(runs {', '.join(f'{t:.3f}' for t in times)})", flush=True)
    print(f"\n{len(paths)} networks, {'general stack' if args.general else 'monotonicity shape'}"
          f": answers {answers}; median {statistics.median(medians):.3f} s, max "
          f"{max(medians):.3f} s, mean {statistics.mean(medians):.3f} s; assignments that fail "
          f"the check: {bad or 'none'}")
    run.summary.update(answers=answers, median=statistics.median(medians), failed_check=bad)
    run.write(args.out)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
