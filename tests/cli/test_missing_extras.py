"""A command path that needs an extra that is not installed says which, with its pip line,
and exits 4 (issue 63, item 6): ``explain --table`` / ``--report`` before any row runs, and
any other path (``verify``'s onnxruntime re-check of a counterexample) through the command
line's last resort.

The extra is made unimportable, not uninstalled: the console script runs under a wrapper that
puts a finder first in ``sys.meta_path`` that refuses the module (as an import of a module
that is not installed fails).
"""
from __future__ import annotations

import subprocess
import sys

import pytest
from ctrl_c import HANG, console_script, save_mlp_onnx

#: Run the console script ``argv[2]`` with ``argv[3:]``, the modules ``argv[1]`` (comma-
#: separated) unimportable.
WRAPPER = """
import runpy, sys
blocked = set(sys.argv[1].split(","))
class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Blocker())
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("extras")
    save_mlp_onnx([[[1.0, -1.0], [0.5, 1.0]], [[1.0, -1.0]]], [[0.0, 0.1], [-0.2]],
                  root / "small.onnx")
    (root / "rows.csv").write_text("a,b\n0.1,0.2\n0.5,0.9\n0.3,0.3\n")
    (root / "sat.vnnlib").write_text(
        "(declare-const X_0 Real)\n(declare-const X_1 Real)\n(declare-const Y_0 Real)\n"
        "(assert (>= X_0 0))\n(assert (<= X_0 1))\n(assert (>= X_1 0))\n(assert (<= X_1 1))\n"
        "(assert (>= Y_0 -10))\n")  # every input: verify finds and re-checks a counterexample
    return root


def without(modules: str, args, cwd) -> subprocess.CompletedProcess:
    """``polytrav args`` with ``modules`` unimportable."""
    return subprocess.run([sys.executable, "-c", WRAPPER, modules, console_script("polytrav"),
                           *args], capture_output=True, text=True, cwd=cwd, timeout=HANG)


@pytest.mark.parametrize("blocked, args, line", [
    ("pandas", ["--table", "t.csv"], "--table 't.csv' needs pandas (the 'export' extra), "
                                     'which is not installed: pip install "polytrav[export]"'),
    ("pyarrow", ["--table", "t.parquet"], "--table 't.parquet' needs pyarrow (the 'export' "
                                          'extra), which is not installed: pip install '
                                          '"polytrav[export]"'),
    ("pandas", ["--report", "r.html"], "--report 'r.html' needs pandas (the 'report' extra), "
                                       'which is not installed: pip install "polytrav[report]"'),
    ("jinja2,matplotlib", ["--report", "r.md"], "--report 'r.md' needs jinja2 and matplotlib "
                                                "(the 'report' extra), which is not installed: "
                                                'pip install "polytrav[report]"'),
])
def test_explain_names_the_extra_before_any_row_runs(folder, blocked, args, line):
    res = without(blocked, ["explain", "small.onnx", "rows.csv", *args], folder)
    assert (res.returncode, res.stdout, res.stderr) == (4, "", f"polytrav: error: {line}\n")
    assert not (folder / args[1]).exists()  # nothing ran, nothing written


def test_the_same_run_with_the_extras_writes_both(folder):
    res = without("nothing_blocked", ["explain", "small.onnx", "rows.csv", "--table", "t.csv",
                                      "--report", "r.html", "--no-monotonicity"], folder)
    assert res.returncode == 0 and res.stdout.startswith("explained 3 rows"), res.stderr
    assert (folder / "t.csv").exists() and (folder / "r.html").exists()


def test_any_other_path_names_the_extra_of_the_module_it_lacks(folder):
    """verify re-checks its counterexample with onnxruntime, without a check of its own."""
    res = without("onnxruntime", ["verify", "small.onnx", "sat.vnnlib"], folder)
    assert res.returncode == 4, res.stderr
    assert res.stderr == ("polytrav: error: polytrav verify needs onnxruntime (the 'onnx' "
                          'extra), which is not installed: pip install "polytrav[onnx]"\n')
    assert "internal error" not in res.stderr

