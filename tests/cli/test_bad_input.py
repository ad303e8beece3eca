"""Every bad input of the command line ends in one line naming the problem, and exit code 4.

Each case runs ``polytrav`` in a subprocess as a user would; the table of cases is the one in
docs/cli.md ("Bad input"). Never a traceback, never a second line.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from reference import TINY_NNET



def polytrav(*args, cwd=None, timeout=120):
    """Run the console entry point (``python -m`` would miss the script's own sys.path)."""
    env = {**os.environ, "POLYTRAV_DEBUG": "0"}
    return subprocess.run([sys.executable, "-c", "from polytrav.interface.cli import main; main()", *args],
                          capture_output=True, text=True, cwd=cwd, timeout=timeout, env=env)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A tiny 2-input .nnet and 5-input ONNX net, and the bad files of the cases."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    root = tmp_path_factory.mktemp("cli")
    (root / "tiny.nnet").write_text(TINY_NNET)
    rng = np.random.default_rng(0)

    def save(name, act, n_in=5, n_out=3, kind=TensorProto.FLOAT, weight=None):
        W1, W2 = rng.normal(size=(6, n_in)), rng.normal(size=(n_out, 6))
        if weight is not None:
            W1[0, 0] = weight
        inits = [numpy_helper.from_array(a.astype(np.float32), n) for n, a in
                 (("W1", W1), ("b1", np.zeros(6)), ("W2", W2), ("b2", np.zeros(n_out)))]
        nodes = [helper.make_node("Gemm", ["input", "W1", "b1"], ["h"], transB=1),
                 helper.make_node(act, ["h"], ["r"]),
                 helper.make_node("Gemm", ["r", "W2", "b2"], ["output"], transB=1)]
        graph = helper.make_graph(
            nodes, name, [helper.make_tensor_value_info("input", kind, [1, n_in])],
            [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, n_out])], inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 8
        onnx.save(model, str(root / name))

    save("net5.onnx", "Relu")
    save("sigmoid.onnx", "Sigmoid")
    save("one_output.onnx", "Relu", n_in=2, n_out=1)
    save("int64.onnx", "Relu", n_in=2, kind=TensorProto.INT64)
    save("inf.onnx", "Relu", n_in=2, weight=np.inf)
    (root / "empty.onnx").write_bytes(b"")
    (root / "renamed.nnet").write_bytes((root / "net5.onnx").read_bytes())
    (root / "renamed.onnx").write_text(TINY_NNET)
    (root / "self.csv").write_text("tiny.nnet,two_inputs.vnnlib,60\n")
    (root / "two_networks.vnnlib").write_text(
        "(vnnlib-version <2.0>)\n"
        "(declare-network f (declare-input X_f real [2]) (declare-output Y_f real [1]))\n"
        "(declare-network g (equal-to f) (declare-input X_g real [2]) "
        "(declare-output Y_g real [1]))\n"
        "(assert (and (>= X_f[0] -1.0) (<= X_f[0] 1.0) (>= X_f[1] -1.0) (<= X_f[1] 1.0)))\n"
        "(assert (and (>= X_g[0] -1.0) (<= X_g[0] 1.0) (>= X_g[1] -1.0) (<= X_g[1] 1.0)))\n"
        "(assert (> Y_g[0] Y_f[0]))\n")
    (root / "garbage.onnx").write_bytes(rng.bytes(200))
    (root / "short.nnet").write_text("\n".join(TINY_NNET.splitlines()[:6]))
    (root / "net.txt").write_text("1 2 3")
    (root / "folder.onnx").mkdir()
    (root / "bad.vnnlib").write_text("(declare-const X_0 Real)\n(assert (<= X_0 0.5)\n")
    (root / "two_inputs.vnnlib").write_text(
        "(declare-const X_0 Real)\n(declare-const X_1 Real)\n(declare-const Y_0 Real)\n"
        "(assert (<= X_0 1))\n(assert (>= X_0 0))\n(assert (<= X_1 1))\n(assert (>= X_1 0))\n"
        "(assert (>= Y_0 1))\n")
    (root / "instances.csv").write_text("only_one_column\n")
    (root / "timeouts.csv").write_text("tiny.nnet,two_inputs.vnnlib,soon\n")
    (root / "negative.csv").write_text("tiny.nnet,two_inputs.vnnlib,-5\n")
    (root / "empty.csv").write_text("# nothing here\n")
    job = 'network = "tiny.nnet"\n[region]\nkind = "box"\nlower = -1\nupper = 1\n' \
          '[[analysis]]\nname = "output_range"\n'
    (root / "ok.toml").write_text(job)
    (root / "syntax.toml").write_text(job + "oops = \n")
    (root / "key.toml").write_text(job.replace("network =", "netwrk ="))
    (root / "analysis.toml").write_text(job.replace('"output_range"', '"output_rang"'))
    (root / "param.toml").write_text(job + "nrm = 2\n")
    (root / "type.toml").write_text(job.replace("lower = -1", 'lower = [-1, "a"]'))
    (root / "kind.toml").write_text(job.replace('kind = "box"', 'kind = "cube"'))
    (root / "export.toml").write_text(job + '[output]\nexport = "out.xyz"\n')
    (root / "two_networks.toml").write_text(
        job.replace("tiny.nnet", "one_output.onnx").replace(
            'kind = "box"\nlower = -1\nupper = 1', 'kind = "vnnlib"\nfile = "two_networks.vnnlib"'))
    (root / "proc.toml").write_text(job + '[output]\ncsv = "/proc/version"\n')
    return root


BOX = ["--lower", "-1", "--upper", "1"]
SMALL5 = ["--lower", "-0.1", "--upper", "0.1"]

#: (case, arguments with {d} for the files' folder, words the one-line message must hold)
CASES = [
    ("missing network file", ["regions", "{d}/missing.onnx", *BOX], "not found"),
    ("network is a folder", ["regions", "{d}/folder.onnx", *BOX], "is a directory"),
    ("unknown network format", ["regions", "{d}/net.txt", *BOX], "unknown format '.txt'"),
    ("malformed ONNX", ["regions", "{d}/garbage.onnx", *BOX], "garbage.onnx"),
    ("unsupported layer", ["regions", "{d}/sigmoid.onnx", *SMALL5], "Sigmoid"),
    ("truncated .nnet", ["regions", "{d}/short.nnet", *BOX], "short.nnet"),
    ("NaN bound", ["regions", "{d}/tiny.nnet", "--lower", "nan", "--upper", "1"], "NaN"),
    ("not a number", ["regions", "{d}/tiny.nnet", "--lower", "a,b", "--upper", "1"],
     "comma-separated numbers"),
    ("box of the wrong length", ["regions", "{d}/net5.onnx", "--lower", "0,0", "--upper", "1,1"],
     "5 are needed"),
    ("lower above upper", ["regions", "{d}/tiny.nnet", "--lower", "1", "--upper", "0"], "swap"),
    ("no box", ["regions", "{d}/tiny.nnet"], "--lower and --upper"),
    ("box and VNN-LIB", ["regions", "{d}/tiny.nnet", *BOX, "--vnnlib", "{d}/two_inputs.vnnlib"],
     "not both"),
    ("negative timeout", ["attack", "{d}/tiny.nnet", *BOX, "--timeout", "-1"], "x>0"),
    ("zero timeout", ["regions", "{d}/tiny.nnet", *BOX, "--timeout", "0"], "x>0"),
    ("zero polytope budget", ["regions", "{d}/tiny.nnet", *BOX, "--max-polytopes", "0"], "x>=1"),
    ("plane input out of range", ["regions", "{d}/net5.onnx", *SMALL5, "--plot", "{d}/p.png",
                                  "--dims", "0", "7"], "0..4"),
    ("no plane on 5 inputs", ["regions", "{d}/net5.onnx", *SMALL5, "--plot", "{d}/p.png"],
     "--dims"),
    ("unknown picture format", ["regions", "{d}/tiny.nnet", *BOX, "--plot", "{d}/p.xyz"], "xyz"),
    ("labels of the wrong count", ["regions", "{d}/tiny.nnet", *BOX, "--plot", "{d}/p.png",
                                   "--labels", "a,b,c"], "labels"),
    ("plane options without a picture", ["regions", "{d}/tiny.nnet", *BOX, "--dims", "0", "1"],
     "--plot"),
    ("an empty label", ["regions", "{d}/tiny.nnet", *BOX, "--plot", "{d}/p.png", "--labels",
                        "a,"], "empty name"),
    ("a box too wide for float64", ["regions", "{d}/tiny.nnet", "--lower", "-1e308", "--upper",
                                    "1e308"], "rescale"),
    ("a label and an output", ["attack", "{d}/net5.onnx", *SMALL5, "--label", "0", "--output",
                               "1"], "not both"),
    ("unknown export format", ["regions", "{d}/tiny.nnet", *BOX, "--export", "{d}/e.xyz"],
     "xyz"),
    ("x0 of the wrong length", ["counterfactual", "{d}/tiny.nnet", *BOX, "--x0", "0"],
     "x0 has 1 coordinates"),
    ("x0 outside the region", ["counterfactual", "{d}/tiny.nnet", *BOX, "--x0", "2,0"],
     "outside the region"),
    ("x0 not finite", ["counterfactual", "{d}/tiny.nnet", *BOX, "--x0", "inf,0"], "finite"),
    ("feature out of range", ["monotonicity", "{d}/tiny.nnet", *BOX, "--feature", "5"],
     "feature"),
    ("output out of range", ["attack", "{d}/tiny.nnet", *BOX, "--output", "3"], "output"),
    ("label out of range", ["attack", "{d}/net5.onnx", *SMALL5, "--label", "9"], "label"),
    ("target out of range", ["counterfactual", "{d}/net5.onnx", *SMALL5, "--x0", "0,0,0,0,0",
                             "--target", "9"], "target"),
    ("stop at first without a label", ["attack", "{d}/tiny.nnet", *BOX, "--stop-at-first"],
     "--label"),
    ("stop at first without a direction", ["monotonicity", "{d}/tiny.nnet", *BOX, "--feature",
                                           "0", "--stop-at-first"], "needs a direction"),
    ("unknown solver", ["attack", "{d}/tiny.nnet", *BOX, "--solver", "higs"],
     "did you mean 'highs'"),
    ("unknown norm", ["counterfactual", "{d}/tiny.nnet", *BOX, "--x0", "0,0", "--norm", "3"],
     "--norm"),
    ("unknown command", ["regoins"], "Did you mean 'regions'"),
    ("unknown option", ["regions", "{d}/tiny.nnet", "--lowr", "0"], "'--lower'"),
    ("missing property file", ["verify", "{d}/tiny.nnet", "{d}/missing.vnnlib"], "not found"),
    ("malformed VNN-LIB", ["verify", "{d}/net5.onnx", "{d}/bad.vnnlib"], "bad.vnnlib:3:1"),
    ("property of other shape", ["verify", "{d}/net5.onnx", "{d}/two_inputs.vnnlib"], "X_"),
    ("verify without a property", ["verify", "{d}/tiny.nnet"], "NETWORK and PROP"),
    ("malformed instance list", ["verify", "--instances", "{d}/instances.csv"],
     "onnx,vnnlib"),
    ("non-numeric timeout in the list", ["verify", "--instances", "{d}/timeouts.csv"],
     "timeouts.csv:1"),
    ("negative timeout in the list", ["verify", "--instances", "{d}/negative.csv"],
     "positive seconds"),
    ("empty instance list", ["verify", "--instances", "{d}/empty.csv"], "lists no instances"),
    ("results without a batch", ["verify", "{d}/tiny.nnet", "{d}/two_inputs.vnnlib",
                                 "--results", "{d}/r.csv"], "--instances"),
    ("malformed scheduler address", ["verify", "{d}/tiny.nnet", "{d}/two_inputs.vnnlib",
                                     "--scheduler", "notanaddress"], "tcp://HOST:PORT"),
    ("zero workers", ["verify", "{d}/tiny.nnet", "{d}/two_inputs.vnnlib", "--workers", "0"],
     "--workers"),
    ("missing job file", ["run", "{d}/missing.toml"], "not"),
    ("job file syntax", ["run", "{d}/syntax.toml"], "at line 8"),
    ("unknown job key", ["run", "{d}/key.toml"], "network"),
    ("unknown analysis", ["run", "{d}/analysis.toml"], "did you mean 'output_range'"),
    ("unknown analysis parameter", ["run", "{d}/param.toml"], "nrm"),
    ("wrong value type", ["run", "{d}/type.toml"], "region.lower"),
    ("unknown region kind", ["run", "{d}/kind.toml"], "cube"),
    ("unknown export format in a job", ["run", "{d}/export.toml"], "xyz"),
    ("export where no file can be made", ["regions", "{d}/tiny.nnet", *BOX, "--export",
                                          "/proc/version.csv"],
     "'/proc/version.csv' cannot be written (the folder '/proc' takes no new files)"),
    ("picture where no file can be made", ["regions", "{d}/tiny.nnet", *BOX, "--plot",
                                           "/proc/p.png"],
     "'/proc/p.png' cannot be written (the folder '/proc' takes no new files)"),
    ("counterexample in a missing folder", ["verify", "{d}/tiny.nnet", "{d}/two_inputs.vnnlib",
                                            "--counterexample", "/nonexistent/dir/cex.txt"],
     "--counterexample: no folder '/nonexistent/dir' to write 'cex.txt' in; create it first"),
    ("job output that refuses writes", ["run", "{d}/proc.toml"],
     "output.csv: '/proc/version' cannot be written (it refuses writes"),
    ("empty ONNX file", ["regions", "{d}/empty.onnx", *BOX], "the file is empty (0 bytes)"),
    ("integer ONNX input", ["regions", "{d}/int64.onnx", *BOX],
     "input 'input' holds int64 numbers"),
    ("infinite weight", ["regions", "{d}/inf.onnx", *BOX], "contains inf at index (0, 0)"),
    ("two-network VNN-LIB as a region", ["regions", "{d}/one_output.onnx", "--vnnlib",
                                         "{d}/two_networks.vnnlib"],
     "decide this query with polytrav verify QUERY --network NAME=FILE"),
    ("two-network VNN-LIB as a job's region", ["run", "{d}/two_networks.toml"],
     "region: {d}/two_networks.vnnlib declares 2 networks; a region is the input box of a "
     "one-network file"),
    ("a label on one output", ["attack", "{d}/one_output.onnx", *BOX, "--label", "0"],
     "for one output drop --label"),
    ("an infinite bound", ["regions", "{d}/tiny.nnet", "--lower=-inf", "--upper", "1"],
     "give every input a finite lower and upper bound"),
    ("a picture of a flat box", ["regions", "{d}/tiny.nnet", "--lower", "0.5,-1", "--upper",
                                 "0.5,1", "--plot", "{d}/flat.png"],
     "input 0 has zero width in the region"),
    ("an empty model file of a query", ["verify", "{d}/two_networks.vnnlib", "--network",
                                        "f={d}/empty.onnx"], "the file is empty (0 bytes)"),
    ("a folder as a query's model", ["verify", "{d}/two_networks.vnnlib", "--network",
                                     "f={d}/folder.onnx"], "it is a folder; give the network's"),
    ("a network as the property", ["verify", "{d}/tiny.nnet", "{d}/tiny.nnet"],
     "PROP '{d}/tiny.nnet' is a network file (.nnet), not a VNN-LIB property"),
    ("network and property swapped", ["verify", "{d}/two_inputs.vnnlib", "{d}/tiny.nnet"],
     "verify takes NETWORK then PROP"),
    ("a network as --vnnlib", ["regions", "{d}/tiny.nnet", "--vnnlib", "{d}/tiny.nnet"],
     "'{d}/tiny.nnet' is a network file (.nnet), not a VNN-LIB property"),
    ("more bounds than inputs", ["regions", "{d}/tiny.nnet", "--lower", "1,2,3", "--upper", "1"],
     "--lower has 3 values but the network takes 2 inputs"),
    ("an ONNX model named .nnet", ["regions", "{d}/renamed.nnet", *BOX],
     "is it an ONNX model named .nnet? (then rename it to .onnx)"),
    ("a .nnet named .onnx", ["regions", "{d}/renamed.onnx", *BOX],
     "it is a text file, not an ONNX model (a .nnet network must be named .nnet)"),
    ("the results over the instance list", ["verify", "--instances", "{d}/self.csv",
                                            "--results", "{d}/self.csv"],
     "is the instance list itself"),
    ("a counterexample file for a batch", ["verify", "--instances", "{d}/self.csv",
                                           "--counterexample", "{d}/cex.txt"],
     "--counterexample FILE is for one instance"),
    ("a solver for an unknown problem form", ["attack", "{d}/tiny.nnet", *BOX, "--solver",
                                              "gpu=highs"], "is not FORM=NAME with FORM one of"),
    ("a QP backend for regions", ["regions", "{d}/tiny.nnet", *BOX, "--solver", "qp=osqp"],
     "regions solves LPs only"),
    ("an unknown analysis", ["analyze", "{d}/tiny.nnet", *BOX, "--analysis", "countrfactual"],
     "did you mean 'counterfactual'"),
    ("a parameter the analysis does not take", ["analyze", "{d}/tiny.nnet", *BOX, "--analysis",
                                                "counterfactual", "x0=0,0", "nrom=2"],
     "did you mean 'norm'"),
    ("a missing analysis parameter", ["analyze", "{d}/tiny.nnet", *BOX, "--analysis",
                                      "counterfactual"], "needs parameter 'x0'"),
    ("an analysis parameter without a value", ["analyze", "{d}/tiny.nnet", *BOX, "--analysis",
                                               "output_range", "norm"], "is not KEY=VALUE"),
]


@pytest.mark.parametrize("case, args, words", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_and_exit_4(files, case, args, words):
    res = polytrav(*[a.format(d=files) for a in args])
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 4, (res.stdout, res.stderr)
    assert len(lines) == 1 and lines[0].startswith("polytrav: error: "), res.stderr
    assert words.format(d=files) in lines[0], lines[0]
    assert "Traceback" not in res.stderr + res.stdout
    for internal in ("Unable to extract tag", "list[float]", "[Errno", "discriminator",
                     "polytrav.", "Box(", "use output_range"):  # no Python-API advice
        assert internal not in lines[0], lines[0]


def test_json_never_holds_nan_or_infinity(files):
    """A run cut before its first polytope has no min or max: null, not Infinity."""
    import json

    res = polytrav("attack", f"{files}/net5.onnx", *SMALL5, "--json", "--timeout", "1e-9")
    assert res.returncode == 2, res.stderr

    def refuse(token):
        raise AssertionError(f"{token} in the JSON")

    out = json.loads(res.stdout, parse_constant=refuse)
    assert out["results"][0]["value"] == {"min": None, "max": None}


def test_every_case_is_in_the_docs_table():
    table = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip() for line in table.splitlines() if line.startswith("| ")}
    assert {case for case, _, _ in CASES} <= rows, {case for case, _, _ in CASES} - rows
