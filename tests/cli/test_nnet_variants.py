"""The NNet variants in circulation (issue 62, item 1): the Reluplex-era ACAS Xu layout (the
normalisation of the original seven-input network: 7 minima / maxima and 8 means / ranges
for 5 inputs) and unbounded inputs (``±inf``, ``±3.40282e+38``). Each reads as the same
network as the standard layout, and says in an ``InputNote`` what it ignored; the command
line prints that note as one line."""
from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from polytrav import Network
from polytrav.vocabulary.errors import InputNote, NetworkError

#: A 2-3-1 network in the standard layout; the header's normalisation lines are lines 4-7.
HEAD = "2,2,1,3,\n2,3,1,\n0,\n"
STANDARD = HEAD + "-1.0,-2.0,\n1.0,2.0,\n0.5,0.0,3.0,\n2.0,4.0,10.0,\n"
#: The Reluplex-era layout of the same network: two values of dropped inputs between.
RELUPLEX = HEAD + "-1.0,-2.0,0.0,-3.0,\n1.0,2.0,100.0,3.0,\n0.5,0.0,35.1,0.0,3.0,\n" \
                  "2.0,4.0,100.0,6.0,10.0,\n"
LAYERS = "1.0,-1.0,\n0.5,0.5,\n-1.0,2.0,\n0.1,\n-0.2,\n0.3,\n1.0,-2.0,0.5,\n0.25,\n"


def write(tmp_path, name, header):
    path = tmp_path / name
    path.write_text(header + LAYERS)
    return path


def read(path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        net = Network.from_nnet(path)
    return net, [str(w.message) for w in caught if issubclass(w.category, InputNote)]


def test_the_reluplex_layout_is_the_same_network_and_says_what_it_ignored(tmp_path):
    standard, notes = read(write(tmp_path, "standard.nnet", STANDARD))
    assert notes == []
    variant, notes = read(write(tmp_path, "reluplex.nnet", RELUPLEX))
    X = np.random.default_rng(0).uniform([-1, -2], [1, 2], (200, 2))
    assert np.array_equal(variant.forward(X), standard.forward(X))
    for a, b in zip(variant.input_domain, standard.input_domain):
        assert np.array_equal(a, b)
    assert len(notes) == 1
    assert "4 minima and maxima for 2 inputs" in notes[0]
    assert "the first 2 (inputs) and the last (the output) were read, the 2 between ignored" \
        in notes[0]


@pytest.mark.parametrize("bound", ["inf", "3.40282e+38"])
def test_unbounded_inputs_declare_no_domain(tmp_path, bound):
    header = HEAD + f"-{bound},-{bound},\n{bound},{bound},\n0.5,0.0,3.0,\n2.0,4.0,10.0,\n"
    net, notes = read(write(tmp_path, "open.nnet", header))
    standard, _ = read(write(tmp_path, "standard.nnet", STANDARD))
    assert net.input_domain is None
    X = np.random.default_rng(1).normal(size=(50, 2))
    assert np.array_equal(net.forward(X), standard.forward(X))
    assert len(notes) == 1 and "2 of the 2 inputs have no bound" in notes[0]


@pytest.mark.parametrize("header, message", [
    (HEAD + "-1.0,-2.0,0.0,-3.0,\n1.0,2.0,100.0,\n", r"line 5: 3 maxima but 4 minima"),
    (HEAD + "-1.0,\n", r"line 4: expected 2 values \(the minimum of each input\), found 1"),
    (HEAD + "-1.0,-2.0,0.0,-3.0,\n1.0,2.0,100.0,3.0,\n0.5,0.0,3.0,\n",
     r"line 6: expected 5 values \(the input means and output mean\), found 3"),
])
def test_a_layout_that_is_neither_is_refused_in_one_line(tmp_path, header, message):
    with pytest.raises(NetworkError, match=message):
        Network.from_nnet(write(tmp_path, "bad.nnet", header))


def test_the_command_line_prints_the_note_as_one_line_and_answers(tmp_path):
    """``polytrav verify`` on the variant: the same answer as on the standard file, and one
    ``polytrav: note:`` line on stderr."""
    write(tmp_path, "standard.nnet", STANDARD)
    write(tmp_path, "reluplex.nnet", RELUPLEX)
    (tmp_path / "p.vnnlib").write_text(
        "(declare-const X_0 Real)\n(declare-const X_1 Real)\n(declare-const Y_0 Real)\n"
        "(assert (>= X_0 -1.0))\n(assert (<= X_0 1.0))\n"
        "(assert (>= X_1 -2.0))\n(assert (<= X_1 2.0))\n(assert (>= Y_0 1000.0))\n")
    polytrav = str(Path(sys.executable).with_name("polytrav"))  # the console script
    runs = {name: subprocess.run([polytrav, "verify", f"{name}.nnet", "p.vnnlib"],
                                 cwd=tmp_path, capture_output=True, text=True)
            for name in ("standard", "reluplex")}
    assert runs["standard"].returncode == runs["reluplex"].returncode == 0
    assert runs["standard"].stdout.splitlines()[0] == runs["reluplex"].stdout.splitlines()[0] \
        == "unsat"
    notes = [line for line in runs["reluplex"].stderr.splitlines() if line.strip()]
    assert len(notes) == 1 and notes[0].startswith("polytrav: note: .nnet file 'reluplex.nnet'")
    assert "note" not in runs["standard"].stderr
