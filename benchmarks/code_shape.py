"""Lines of some modules and their largest functions (lines, parameters) at git revisions.

Issue 59's measure of the two-model code's shape: ``core/host/diff.py`` and
``core/verification/verify.py`` at the review's base (7da62e9) and now; any files and
revisions can be given. Reads the files with ``git show`` (no checkout).

    python benchmarks/code_shape.py                       # 7da62e9 and HEAD, the issue's files
    python benchmarks/code_shape.py --revs 7da62e9 HEAD --files core/host/settling.py --top 3
"""
from __future__ import annotations

import argparse
import ast
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILES = ["core/host/diff.py", "core/verification/verify.py"]


def source(rev: str, path: str) -> str | None:
    out = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, capture_output=True,
                         text=True)
    return out.stdout if out.returncode == 0 else None


def functions(text: str) -> list[tuple[str, int, int]]:
    """``(qualified name, lines, parameters)`` of every function, largest first (``self`` and
    ``cls`` not counted)."""
    found = []

    def walk(node, prefix=""):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = child.args
                names = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]
                names += [p.arg for p in (a.vararg, a.kwarg) if p is not None]
                params = len([n for n in names if n not in ("self", "cls")])
                found.append((prefix + child.name, child.end_lineno - child.lineno + 1, params))
                walk(child, prefix + child.name + ".")
            elif isinstance(child, ast.ClassDef):
                walk(child, prefix + child.name + ".")
    walk(ast.parse(text))
    return sorted(found, key=lambda f: -f[1])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--revs", nargs="+", default=["7da62e9", "HEAD"])
    ap.add_argument("--files", nargs="+", default=FILES)
    ap.add_argument("--top", type=int, default=5)
    args = ap.parse_args(argv)
    print("| file | revision | lines | largest functions (lines, parameters) |\n|---|---|---|---|")
    for path in args.files:
        for rev in args.revs:
            text = source(rev, path)
            if text is None:
                print(f"| {path} | {rev} | - | (not there) |")
                continue
            top = ", ".join(f"`{n}` {k} ({p})" for n, k, p in functions(text)[:args.top])
            print(f"| {path} | {rev} | {len(text.splitlines())} | {top} |")


if __name__ == "__main__":
    main()
