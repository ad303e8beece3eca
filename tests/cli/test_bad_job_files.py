"""Every bad job file (``polytrav run job.toml``) ends in one line naming the key and what to do.

Each case writes a job file next to a tiny 2-input, 1-output network and runs ``polytrav run``
in a subprocess as a user would (see tests/cli/test_bad_input.py): exit code 4, exactly one
line ``polytrav: error: ...`` on stderr, never a traceback, never an internal error (exit 5),
never the words of numpy, pydantic or Python's exceptions. The checks are listed in
docs/config.md ("What is checked").
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from reference import TINY_NNET


def polytrav(*args, cwd=None, timeout=120):
    env = {**os.environ, "POLYTRAV_DEBUG": "0"}
    command = [sys.executable, "-c", "from polytrav.interface.cli import main; main()", *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=timeout,
                          env=env)


NET = 'network = "tiny.nnet"\n'
BOX = '[region]\nkind = "box"\nlower = -1\nupper = 1\n'
RANGE = '[[analysis]]\nname = "output_range"\n'
JOB = NET + BOX + RANGE


def analysis(body: str) -> str:
    return NET + BOX + "[[analysis]]\n" + body


#: Words that must never reach the user: tracebacks, errno, Python's and numpy's and
#: pydantic's own phrasing.
JARGON = ("Traceback", "Errno", "__init__()", "numpy", "inhomogeneous", "array element",
          "could not convert", "unhashable", "codec", "Input should be", "input should be",
          "valid dictionary", "model_type", "union", "discriminator", "Value error", "pydantic",
          "list[float]", "internal error")

#: (case, file name, contents (text, or bytes written as they are), words the line must hold)
CASES = [
    # the file itself
    ("binary file as the job", "model.onnx", bytes(range(256)) * 4,
     ["job file", "model.onnx", "is not a text TOML file"]),
    ("UTF-16 job file", "job.toml", "\ufeff".encode("utf-16-le") + JOB.encode("utf-16-le"),
     ["is not a text TOML file", "UTF-8"]),
    # analyses: parameters missing, of the wrong type, unusable
    ("analysis without a name", "job.toml", analysis("output = 0\n"),
     ["analysis[0].name: missing", 'name = "..."']),
    ("single brackets around analysis", "job.toml",
     NET + BOX + '[analysis]\nname = "output_range"\n',
     ["analysis: must be a list of tables", "[[analysis]] (double brackets)"]),
    ("no analysis", "job.toml", NET + BOX, ["analysis: no analysis", "add an [[analysis]] table"]),
    ("counterfactual without x0", "job.toml", analysis('name = "counterfactual"\n'),
     ["analysis[0] (counterfactual): needs parameter 'x0'", "it takes x0, norm, target"]),
    ("linear_property without unsafe", "job.toml", analysis('name = "linear_property"\n'),
     ["analysis[0] (linear_property): needs parameter 'unsafe'", "it takes unsafe"]),
    ("x0 as text", "job.toml", analysis('name = "counterfactual"\nx0 = "0,0"\n'),
     ["analysis[0].x0 (counterfactual)", "not text", "got '0,0'"]),
    ("x0 of ragged lists", "job.toml", analysis('name = "counterfactual"\nx0 = [[0], [0, 1]]\n'),
     ["analysis[0].x0 (counterfactual)", "same length", "got [[0], [0, 1]]"]),
    ("x0 as a table", "job.toml", analysis('name = "counterfactual"\nx0 = {a = 1}\n'),
     ["analysis[0].x0 (counterfactual)", "not a table"]),
    ("norm as a list", "job.toml", analysis('name = "counterfactual"\nx0 = [0, 0]\nnorm = [2]\n'),
     ["analysis[0].norm (counterfactual)", "single value", "got [2]"]),
    ("x0 of the wrong length", "job.toml", analysis('name = "counterfactual"\nx0 = [0]\n'),
     ["analysis[0] (counterfactual)", "x0 has 1 coordinates but the network takes 2"]),
    ("weights as text", "job.toml", analysis('name = "output_range"\nweights = "a, b"\n'),
     ["analysis[0].weights (output_range)", "not text"]),
    ("unsafe of ragged lists", "job.toml",
     analysis('name = "linear_property"\nunsafe = [[[[1], [1, 2]], [0]]]\n'),
     ["analysis[0].unsafe (linear_property)", "same length"]),
    ("a flag as text", "job.toml", analysis('name = "region_stats"\nvolumes = "no"\n'),
     ["analysis[0].volumes (region_stats)", "must be true or false", "got 'no'"]),
    ("a misspelt parameter", "job.toml", analysis('name = "counterfactual"\nxo = [0, 0]\n'),
     ["analysis[0] (counterfactual)", "does not take parameter(s) ['xo']", "'x0'"]),
    ("output out of range", "job.toml", analysis('name = "output_range"\noutput = 3\n'),
     ["analysis[0] (output_range)", "output must be an integer in [0, 1)"]),
    # regions
    ("region without kind", "job.toml", NET + '[region]\nlower = -1\nupper = 1\n' + RANGE,
     ["region.kind: missing", 'kind = "box"']),
    ("region as text", "job.toml", NET + 'region = "box"\n' + RANGE,
     ["region: must be a table", "got 'box'"]),
    ("ragged polyhedron rows", "job.toml",
     NET + '[region]\nkind = "polyhedron"\nA = [[1, 0], [1]]\nb = [1, 1]\n' + RANGE,
     ["region.A", "rows must have equal length", "input count"]),
    ("polyhedron b of the wrong length", "job.toml",
     NET + '[region]\nkind = "polyhedron"\nA = [[1, 0], [0, 1]]\nb = [1]\n' + RANGE,
     ["region.b", "one right-hand side per row of A"]),
    ("unbounded polyhedron", "job.toml",
     NET + '[region]\nkind = "polyhedron"\nA = [[1, 0], [0, 1]]\nb = [1, 1]\n' + RANGE,
     ["region", "unbounded", "[region.within]"]),
    ("bounds longer than the inputs", "job.toml",
     NET + '[region]\nkind = "box"\nlower = [-1, -1, -1]\nupper = 1\n' + RANGE,
     ["region", "3 dimensions but 2 are needed"]),
    ("an infinite bound", "job.toml", NET + BOX.replace("lower = -1", "lower = -inf") + RANGE,
     ["region", "unbounded along input 0", "finite bounds"]),
    ("within missing the ball", "job.toml",
     NET + '[region]\nkind = "ball"\ncenter = [0, 0]\nradius = 1\n[region.within]\nkind = "box"\n'
     'lower = 5\nupper = 6\n' + RANGE, ["region", "empty", "[region.within]"]),
    ("missing VNN-LIB file", "job.toml",
     NET + '[region]\nkind = "vnnlib"\nfile = "x.vnnlib"\n' + RANGE,
     ["region.file: 'x.vnnlib' not found", "relative to the job file's folder, {d}"]),
    ("binary VNN-LIB file", "job.toml",
     NET + '[region]\nkind = "vnnlib"\nfile = "garbage.bin"\n' + RANGE,
     ["region.file: 'garbage.bin' is not a VNN-LIB text file"]),
    # the network
    ("missing network file", "job.toml", JOB.replace("tiny.nnet", "missing.onnx"),
     ["network: 'missing.onnx' not found", "relative to the job file's folder, {d}"]),
    ("network is a folder", "job.toml", JOB.replace("tiny.nnet", "sub"),
     ["network: 'sub' is a folder", ".onnx or .nnet"]),
    # start, budgets, strategy, solver
    ("start outside the region", "job.toml", NET + "start = [5, 0]\n" + BOX + RANGE,
     ["start: [5.0, 0.0] is outside the region", "coordinate 0"]),
    ("start of the wrong length", "job.toml", NET + "start = [0]\n" + BOX + RANGE,
     ["start: has 1 coordinates but the network takes 2"]),
    ("zero time limit", "job.toml", NET + "time_limit = 0\n" + BOX + RANGE,
     ["time_limit: must be greater than 0", "seconds", "got 0"]),
    ("zero polytope budget", "job.toml", NET + "max_polytopes = 0\n" + BOX + RANGE,
     ["max_polytopes: must be at least 1", "leave it out for no limit"]),
    ("unknown strategy", "job.toml", NET + 'strategy = "hierarchial"\n' + BOX + RANGE,
     ["strategy: unknown strategy 'hierarchial'", "did you mean 'hierarchical'"]),
    ("unknown solver", "job.toml", NET + 'solver = "higs"\n' + BOX + RANGE,
     ["solver: unknown solver 'higs'", "did you mean 'highs'"]),
    ("unknown problem form in the solver table", "job.toml",
     NET + '[solver]\nlpp = "highs"\n' + BOX + RANGE,
     ["solver: unknown problem form 'lpp'", "did you mean 'lp'"]),
    # outputs
    ("json and export the same file", "job.toml",
     JOB + '[output]\njson = "r.json"\nexport = "r.json"\n',
     ["output.json and output.export both name 'r.json'", "its own file"]),
    ("csv and export the same file", "job.toml",
     JOB + '[output]\ncsv = "r.csv"\nexport = "./r.csv"\n',
     ["output.csv and output.export both name", "its own file"]),
    ("output over the network", "job.toml", JOB + '[output]\njson = "tiny.nnet"\n',
     ["output.json: 'tiny.nnet' is the network file", "another file name"]),
    ("output over the job file", "job.toml", JOB + '[output]\ncsv = "job.toml"\n',
     ["output.csv: 'job.toml' is the job file itself"]),
    ("output is a folder", "job.toml", JOB + '[output]\njson = "sub"\n',
     ["output.json: 'sub' is a folder", "report.json"]),
    ("output that refuses writes", "job.toml", JOB + '[output]\ncsv = "/proc/version"\n',
     ["output.csv: '/proc/version' cannot be written (it refuses writes",
      "give a path in a folder you can write to"]),
    # numbers only where numbers belong (docs/config.md): no quotes, no true, no 3.5 counts
    ("a time limit of true", "job.toml", NET + "time_limit = true\n" + BOX + RANGE,
     ["time_limit: must be a number (seconds", "got True"]),
    ("a quoted time limit", "job.toml", NET + 'time_limit = "60"\n' + BOX + RANGE,
     ["time_limit: must be a number (seconds", "got '60'"]),
    ("a quoted polytope budget", "job.toml", NET + 'max_polytopes = "3"\n' + BOX + RANGE,
     ["max_polytopes: must be a whole number", "got '3'"]),
    ("a fractional polytope budget", "job.toml", NET + "max_polytopes = 3.5\n" + BOX + RANGE,
     ["max_polytopes: must be a whole number", "got 3.5"]),
    ("a quoted bound", "job.toml", NET + BOX.replace("lower = -1", 'lower = "-2"') + RANGE,
     ["region.lower: must be a number or a list of numbers", "got '-2'"]),
    ("a quoted radius", "job.toml",
     NET + '[region]\nkind = "ball"\ncenter = [0, 0]\nradius = "1"\n' + RANGE,
     ["region.radius: must be a number", "got '1'"]),
    ("a norm of true", "job.toml",
     NET + '[region]\nkind = "ball"\ncenter = [0, 0]\nradius = 1\nnorm = true\n' + RANGE,
     ["region.norm: must be 1, 2 or 'inf'", "got True"]),
    ("a quoted start", "job.toml", NET + 'start = ["0", 0]\n' + BOX + RANGE,
     ["start[0]: must be a number", "got '0'"]),
    ("a quoted analysis number", "job.toml",
     analysis('name = "counterfactual"\nx0 = [0, 0]\nnorm = "2"\n'),
     ["analysis[0].norm (counterfactual): must be numbers, not text", "got '2'"]),
    ("true among an analysis's numbers", "job.toml",
     analysis('name = "counterfactual"\nx0 = [true, 0]\n'),
     ["analysis[0].x0 (counterfactual): must be numbers, not true or false", "got [True, 0]"]),
]


@pytest.fixture
def folder(tmp_path):
    """The tiny network, a binary file and a sub-folder, next to the job file."""
    (tmp_path / "tiny.nnet").write_text(TINY_NNET)
    (tmp_path / "garbage.bin").write_bytes(bytes(range(128, 256)) * 4)
    (tmp_path / "sub").mkdir()
    return tmp_path


def write(folder, name, contents):
    path = folder / name
    if isinstance(contents, bytes):
        path.write_bytes(contents)
    else:
        path.write_text(contents, encoding="utf-8")
    return path


@pytest.mark.parametrize("case, name, contents, words", CASES, ids=[c[0] for c in CASES])
def test_a_bad_job_file_is_one_line_and_exit_4(folder, case, name, contents, words):
    res = polytrav("run", str(write(folder, name, contents)))
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 4, (res.stdout, res.stderr)
    assert len(lines) == 1 and lines[0].startswith("polytrav: error: "), res.stderr
    for w in words:
        assert w.format(d=folder) in lines[0], (w, lines[0])
    for jargon in JARGON:
        assert jargon not in res.stderr + res.stdout, (jargon, lines[0])


def test_a_refused_output_writes_nothing(folder):
    """Outputs are checked before any work: the network stays, no report is half-written."""
    write(folder, "job.toml", JOB + '[output]\njson = "tiny.nnet"\ncsv = "r.csv"\n')
    assert polytrav("run", str(folder / "job.toml")).returncode == 4
    write(folder, "job.toml", JOB + '[output]\njson = "r.json"\nexport = "r.json"\n')
    assert polytrav("run", str(folder / "job.toml")).returncode == 4
    assert (folder / "tiny.nnet").read_text() == TINY_NNET
    assert not (folder / "r.json").exists() and not (folder / "r.csv").exists()


def test_a_byte_order_mark_is_accepted(folder):
    """Editors on Windows save UTF-8 with a BOM; it is not a TOML error."""
    path = folder / "job.toml"
    path.write_bytes(b"\xef\xbb\xbf" + JOB.encode("utf-8"))
    res = polytrav("run", str(path))
    assert res.returncode == 0 and res.stdout.startswith("output_range:"), res.stderr
