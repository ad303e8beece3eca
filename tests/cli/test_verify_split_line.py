"""Issue 63 item 6: ``polytrav verify``'s text line says how an ``unsat`` was proven: by the
input split's boxes (then "0 polytopes traversed"), not "0 polytopes, 0 LPs" alone; the same
for a VNN-LIB 2.0 query (``--network``) and a batch; the counts agree with ``--json``."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from ctrl_c import console_script, save_mlp_onnx
from reference import random_net

from polytrav import Network

SPLIT_LINE = re.compile(r"proven by an input split: (\d+) boxes proven by bounds \((\d+) "
                        r"bounded\), 0 polytopes traversed, 0 LPs, [0-9.]+ s")


@pytest.fixture(scope="module")
def instance(tmp_path_factory) -> Path:
    """A 3-8-8-6-3 ReLU net and "Y_0 >= level" just above its sampled maximum on [-1, 1]^3:
    unsat, and the input split's boxes prove it before any traversal (VNN-LIB 1.0 and 2.0)."""
    folder = tmp_path_factory.mktemp("split_line")
    net = random_net(204, 3, [8, 8, 6], n_out=3)
    save_mlp_onnx(net.weights, net.biases, folder / "net.onnx")
    X = np.random.default_rng(0).uniform(-1, 1, (20000, 3))
    y = Network.from_onnx(folder / "net.onnx").forward(X)[:, 0]
    level = y.max() + 0.05 * (y.max() - y.min())
    lines = [f"(declare-const X_{i} Real)" for i in range(3)]
    lines += [f"(declare-const Y_{j} Real)" for j in range(3)]
    lines += [f"(assert (>= X_{i} -1))\n(assert (<= X_{i} 1))" for i in range(3)]
    (folder / "prop.vnnlib").write_text("\n".join(lines + [f"(assert (>= Y_0 {level:.6f}))"])
                                        + "\n")
    (folder / "query.vnnlib").write_text(
        "(vnnlib-version <2.0>)\n(declare-network N (declare-input X float32 [1, 3]) "
        "(declare-output Y float32 [1, 3]))\n"
        + "".join(f"(assert (>= X[0,{i}] -1.0)) (assert (<= X[0,{i}] 1.0))\n" for i in range(3))
        + f"(assert (>= Y[0,0] {level:.6f}))\n")
    (folder / "instances.csv").write_text("net.onnx,prop.vnnlib,60\n")
    return folder


def polytrav(folder, *args):
    return subprocess.run([console_script("polytrav"), *args], cwd=folder, capture_output=True,
                          text=True, timeout=600)


def test_unsat_by_the_split_says_so(instance):
    out = polytrav(instance, "verify", "net.onnx", "prop.vnnlib")
    assert out.returncode == 0, out.stderr
    answer, line = out.stdout.splitlines()[:2]
    assert answer == "unsat"
    m = SPLIT_LINE.fullmatch(line)
    assert m is not None, line
    saved = json.loads(polytrav(instance, "verify", "net.onnx", "prop.vnnlib", "--json").stdout)
    assert saved["polytopes"] == 0 and saved["split"]["open"] == 0
    assert (int(m.group(1)), int(m.group(2))) == (saved["split"]["proven"],
                                                  saved["split"]["boxes"])
    # without the split, the traversal's counts as before
    out = polytrav(instance, "verify", "net.onnx", "prop.vnnlib", "--no-split")
    assert out.stdout.startswith("unsat\n") and "input split" not in out.stdout
    assert re.search(r"^\d+ polytopes, \d+ pieces proven by bounds, \d+ LPs", out.stdout,
                     re.MULTILINE), out.stdout


def test_a_vnnlib_2_query_and_a_batch_say_so_too(instance):
    out = polytrav(instance, "verify", "query.vnnlib", "--network", "N=net.onnx")
    assert out.returncode == 0, out.stderr
    answer, line = out.stdout.splitlines()[:2]
    assert answer == "unsat"
    assert line.endswith(" (route: stack)") and SPLIT_LINE.fullmatch(line[:-len(" (route: stack)")])
    out = polytrav(instance, "verify", "--instances", "instances.csv")
    assert out.returncode == 0, out.stderr
    assert re.search(r"net\.onnx prop\.vnnlib: unsat \(proven by an input split: \d+ boxes",
                     out.stdout), out.stdout


def test_the_python_results_carry_the_line(instance):
    from polytrav.verification.query import read_query
    from polytrav.verification.standard import check_mapping, decide
    from polytrav.verification.verify import verify

    res = verify(instance / "net.onnx", instance / "prop.vnnlib")
    assert res.answer == "unsat" and SPLIT_LINE.fullmatch(res.work_line())
    query = read_query(instance / "query.vnnlib")
    decision = decide(query, check_mapping(query, {"N": str(instance / "net.onnx")}, "q"))
    assert decision.answer == "unsat" and decision.split["proven"] > 0
    assert SPLIT_LINE.fullmatch(decision.work_line())
