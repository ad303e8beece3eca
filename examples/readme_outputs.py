"""The outputs README.md shows, from running its examples: checks them, or writes them.

Every example in README.md that shows what it prints runs from the repo root, as a reader
would run it:

* a ``python`` block followed by a ``text`` block: the text is what the block prints;
* a ``bash`` block followed by a ``text`` block: the text is what the block's first command
  prints, and ``(exit code N)`` in the prose between them is its exit code;
* a ``python`` block whose last line is ``print(...)  # OUTPUT``: OUTPUT is the last line it
  prints.

Times (``0.004 s``) depend on the machine: they are compared as ``<time> s``, and ``--write``
takes this run's times only on the lines that differ otherwise. The examples that read
``../shared/data`` need it beside the repo; ``tests/test_docs.py`` runs the check.

    python examples/readme_outputs.py           # check: a diff per stale output, exit code 1
    python examples/readme_outputs.py --write   # write this run's outputs into README.md
"""
from __future__ import annotations

import argparse
import contextlib
import difflib
import io
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
WRITE = "python examples/readme_outputs.py --write"

FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.M | re.S)
TIME = re.compile(r"\d+(?:\.\d+)?(?= s\b)")
EXIT_CODE = re.compile(r"\(exit code (\d+)\)")
LAST_PRINT = re.compile(r"^print\(.*\)[ \t]*#[ \t]*(.*)$")


@dataclass
class Example:
    """One README example with the output it shows (``start:end`` of README's text)."""

    name: str
    lang: str
    code: str
    shown: str
    start: int
    end: int
    last_line_only: bool = False
    exit_code: int | None = None
    exit_span: tuple[int, int] | None = None

    @property
    def needs_data(self) -> bool:
        return "../shared/data" in self.code

    def run(self) -> tuple[str, int]:
        """What the example prints (its last line for ``last_line_only``) and its exit code."""
        if self.lang == "bash":
            return _run_command(_first_command(self.code))
        out = io.StringIO()
        here = os.getcwd()
        os.chdir(ROOT)
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(self.code, self.name, "exec"), {"__name__": "readme"})
        finally:
            os.chdir(here)
        text = out.getvalue()
        return (text.rstrip("\n").rsplit("\n", 1)[-1] if self.last_line_only else text), 0

    def differences(self, printed: str, exit_code: int) -> str:
        """A diff of the shown and the printed output, times masked; empty when they agree."""
        diff = "".join(difflib.unified_diff(
            normalised(self.shown).splitlines(keepends=True),
            normalised(printed).splitlines(keepends=True),
            "README.md (shown)", "printed now", n=1))
        if self.exit_code is not None and exit_code != self.exit_code:
            diff += f"exit code {exit_code}, README.md says {self.exit_code}\n"
        return diff


def normalised(text: str) -> str:
    """``text`` with times as ``<time> s``, no trailing blanks, one final newline."""
    lines = [TIME.sub("<time>", line).rstrip() for line in text.rstrip("\n").split("\n")]
    return "\n".join(lines) + "\n"


def merged(shown: str, printed: str) -> str:
    """``printed``, but a line that agrees with ``shown``'s (times masked) keeps its times."""
    old, new = shown.rstrip("\n").split("\n"), printed.rstrip("\n").split("\n")
    matcher = difflib.SequenceMatcher(None, [normalised(x) for x in old],
                                      [normalised(x) for x in new], autojunk=False)
    out = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        out += old[i1:i2] if tag == "equal" else new[j1:j2]
    return "\n".join(out)


def _first_command(block: str) -> str:
    lines = []
    for line in block.splitlines():
        lines.append(line)
        if not line.rstrip().endswith("\\"):
            break
    return "\n".join(lines)


def _run_command(command: str) -> tuple[str, int]:
    # this interpreter's scripts first, so that `polytrav` is the one installed beside it
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent),
                                                   os.environ.get("PATH", "")])}
    res = subprocess.run(command, shell=True, cwd=ROOT, env=env, capture_output=True, text=True)
    return res.stdout, res.returncode


def examples(text: str) -> list[Example]:
    """The examples of README.md's ``text`` that show their output, in order."""
    blocks = list(FENCE.finditer(text))
    found = []
    for k, block in enumerate(blocks):
        lang, code = block.group(1), block.group(2)
        line = text.count("\n", 0, block.start()) + 1
        after = blocks[k + 1] if k + 1 < len(blocks) else None
        if lang in ("python", "bash") and after is not None and after.group(1) == "text":
            between = text[block.end():after.start()]
            code_match = EXIT_CODE.search(between)
            found.append(Example(
                f"README.md line {line} ({lang} block)", lang, code, after.group(2),
                after.start(2), after.end(2),
                exit_code=int(code_match.group(1)) if code_match else None,
                exit_span=((block.end() + code_match.start(1), block.end() + code_match.end(1))
                           if code_match else None)))
            continue
        last = code.rstrip("\n").rsplit("\n", 1)[-1]
        shown = LAST_PRINT.match(last)
        if lang == "python" and shown is not None:
            at = block.start(2) + code.rstrip("\n").rfind("\n") + 1 + shown.start(1)
            found.append(Example(f"README.md line {line} (python block, last line)", lang, code,
                                 shown.group(1), at, at + len(shown.group(1)),
                                 last_line_only=True))
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true", help="write the outputs into README.md")
    args = ap.parse_args()
    text = README.read_text(encoding="utf-8")
    found = examples(text)
    edits, stale = [], 0
    for ex in found:
        printed, exit_code = ex.run()
        diff = ex.differences(printed, exit_code)
        print(f"{ex.name}: {'differs' if diff else 'agrees'}")
        if not diff:
            continue
        stale += 1
        if args.write:
            edits.append((ex.start, ex.end, merged(ex.shown, printed)
                          + ("" if ex.last_line_only else "\n")))
            if ex.exit_span is not None:
                edits.append((*ex.exit_span, str(exit_code)))
        else:
            print(diff, end="")
    if args.write:
        for start, end, new in sorted(edits, reverse=True):
            text = text[:start] + new + text[end:]
        README.write_text(text, encoding="utf-8")
        print(f"wrote {stale} of {len(found)} outputs into {README}")
        return 0
    if stale:
        print(f"{stale} of {len(found)} outputs in README.md are stale; regenerate them: {WRITE}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
