"""The VNN-LIB 2.0 conformance suite ``vnnlib-satisfactory`` against ``polytrav-vnnlib``
(issue 26, item 5).

Runs ``vnnlib-satisfactory run --solver polytrav-vnnlib`` in a scratch folder (the suite
generates its ONNX models and queries there, calls the solver once per case as a new process
with ``--timeout 5.0`` and judges each answer), then reads its ``report.json`` and prints the
outcome per category as a Markdown table, every case that did not pass with the solver's
message, and the totals.

Exit status 1 if any case failed or errored, or is suspect without being one of
:data:`EXPECTED_SUSPECTS` (cases the standard itself says a solver must refuse, or that are
not piecewise linear: polytrav refuses them by name, and the suite reads any refusal as
``suspect``); 0 otherwise.

    pip install -e ".[conformance]"        # the suite (the dev extra has it)
    python benchmarks/conformance.py                   # every category
    python benchmarks/conformance.py --test maxpool    # one category
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

#: Suspect cases and why polytrav refuses them (the suite reads a refusal as ``suspect``).
EXPECTED_SUSPECTS = {
    "div/div01": "Div of two tensors that depend on the inputs: not piecewise linear",
    "div/div02": "Div of two tensors that depend on the inputs: not piecewise linear",
    "div/div03": "Div of two tensors that depend on the inputs: not piecewise linear",
    "div/div04": "Div of two tensors that depend on the inputs: not piecewise linear",
    "mul/mul03": "Mul(X, X): not piecewise linear",
    "network_isomorphic/network_isomorphic01":
        "declares N2's input float16 for a float32 model: §5.3.2 (2) requires an error (the "
        "official parser refuses the query too)",
}
OUTCOMES = ("pass", "fail", "suspect", "error", "skip")


def run_suite(solver: str, test: str | None = None, timeout: float = 5.0,
              folder: Path | None = None) -> dict:
    """Run the suite in ``folder`` (default: a new scratch folder) and return its report."""
    exe = shutil.which("vnnlib-satisfactory")
    if exe is None:
        raise FileNotFoundError("vnnlib-satisfactory is not installed: pip install -e "
                                "\".[conformance]\"")
    folder = Path(folder or tempfile.mkdtemp(prefix="conformance-"))
    cmd = [exe, "run", "--solver", solver, "--timeout", str(timeout), "--no-verbose"]
    if test:
        cmd += ["--test", test]
    subprocess.run(cmd, cwd=folder, check=True, capture_output=True, text=True)
    return json.loads((folder / ".vnnlib-satisfactory" / "report.json").read_text())


def outcomes(report: dict) -> list[tuple[str, str, str, str]]:
    """``(test_id, category, outcome, message)`` for every case, skipped ones included."""
    rows = [(r["test_id"], r["category"], r["outcome"],
             (r.get("stderr") or r.get("error") or "").strip().splitlines()[-1:] or [""])
            for r in report["results"]]
    rows = [(t, c, o, m[0]) for t, c, o, m in rows]
    for r in report.get("skipped", []):
        test_id = r["test_id"] if isinstance(r, dict) else str(r)
        rows.append((test_id, test_id.split("/")[0], "skip",
                     f"not claimed: {r.get('missing_op', '?')}" if isinstance(r, dict) else ""))
    return rows


def table(rows) -> str:
    """Outcome counts per category, as Markdown."""
    per = defaultdict(lambda: dict.fromkeys(OUTCOMES, 0))
    for _, category, outcome, _ in rows:
        per[category][outcome] += 1
    lines = ["| category | " + " | ".join(OUTCOMES) + " |", "|---" * (len(OUTCOMES) + 1) + "|"]
    for category in sorted(per):
        lines.append(f"| {category} | " + " | ".join(str(per[category][o]) or "" for o in OUTCOMES)
                     + " |")
    total = {o: sum(p[o] for p in per.values()) for o in OUTCOMES}
    lines.append("| **total** | " + " | ".join(f"**{total[o]}**" for o in OUTCOMES) + " |")
    return "\n".join(lines)


def unexpected(rows) -> list[str]:
    """The cases that make the run fail: fail, error, or an unexplained suspect."""
    return [t for t, _, o, _ in rows
            if o in ("fail", "error") or (o == "suspect" and t not in EXPECTED_SUSPECTS)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--test", help="one category (default: all)")
    ap.add_argument("--timeout", type=float, default=5.0, help="seconds per case (the suite's)")
    ap.add_argument("--solver", default=shutil.which("polytrav-vnnlib"),
                    help="the solver executable (default: polytrav-vnnlib on PATH)")
    args = ap.parse_args(argv)
    if not args.solver:
        print("polytrav-vnnlib is not on PATH (pip install -e . installs it)", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    rows = outcomes(run_suite(args.solver, args.test, args.timeout))
    print(table(rows))
    print()
    for test_id, _, outcome, message in rows:
        if outcome not in ("pass", "skip"):
            why = EXPECTED_SUSPECTS.get(test_id, "UNEXPECTED")
            print(f"{test_id}: {outcome} ({why})\n    solver: {message}")
    bad = unexpected(rows)
    print(f"\n{len(rows)} cases in {time.perf_counter() - t0:.0f} s; "
          f"unexpected: {', '.join(bad) or 'none'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
