"""Tests of the VNN-LIB reader (polytrav.verification.vnnlib) on VNN-LIB 1.0 files.

Data-driven tests read ``../shared/data`` through the ``data_dir`` fixture and skip if it is
absent; the synthetic tests build small files inline.
"""
from __future__ import annotations

import csv
import gzip
import hashlib
import re
from pathlib import Path

import numpy as np
import pytest

from polytrav import Box, Intersection
from polytrav.vocabulary.errors import ConfigError, RegionError
from polytrav.verification.vnnlib import MAX_DEPTH, VnnlibCase, parse_vnnlib, read_vnnlib
from polytrav.plugins.linear_property import LinearProperty

ACAS_PROPS = [f"prop_{k}" for k in range(1, 11)]
MNIST_FILES = [f"vnnlib_{year}/prop_{i}_{eps}" for year in (2021, 2022) for i in range(15)
               for eps in ("0.03", "0.05")]
MNIST_BOX_TOL = 1e-7  # the data README: clip(image/255 +- eps, 0, 1) within 1e-7 (float32)

#: Per ACAS Xu property: for each case (distinct input box), the row count of each conjunction.
ACAS_SHAPES = {
    "prop_1": [[1]], "prop_2": [[4]], "prop_3": [[4]], "prop_4": [[4]],
    "prop_5": [[1, 1, 1, 1]], "prop_6": [[1, 1, 1, 1], [1, 1, 1, 1]],
    "prop_7": [[3, 3]], "prop_8": [[2, 2, 2]], "prop_9": [[1, 1, 1, 1]],
    "prop_10": [[1, 1, 1, 1]],
}

HEADER = """\
(declare-const X_0 Real)
(declare-const X_1 Real)
(declare-const Y_0 Real)
(declare-const Y_1 Real)
"""  # 4 lines, so a file's first assertion is on line 5
BOX = "(assert (>= X_0 0))\n(assert (<= X_0 1))\n(assert (>= X_1 -1))\n(assert (<= X_1 1))\n"
UNSAFE = "(assert (>= Y_0 Y_1))\n"


def parse(body: str, **kw):
    return parse_vnnlib(body, source="p.vnnlib", **kw)


def rows(case: VnnlibCase) -> list:
    return [(C.tolist(), d.tolist()) for C, d in case.unsafe]


def acas(data_dir, name):
    return read_vnnlib(data_dir / "acasxu" / "vnnlib" / f"{name}.vnnlib", n_inputs=5, n_outputs=5)


# ----------------------------------------------------------------------------- ACAS Xu


@pytest.mark.parametrize("name", ACAS_PROPS)
def test_every_acas_property_parses(data_dir, name):
    spec = acas(data_dir, name)
    assert (spec.n_inputs, spec.n_outputs) == (5, 5)
    assert [[C.shape[0] for C, _ in case.unsafe] for case in spec.cases] == ACAS_SHAPES[name]
    for case in spec.cases:
        assert case.A is None and case.b is None
        assert np.all(case.lower <= case.upper)
        assert all(C.shape[1] == 5 and d.shape == (C.shape[0],) for C, d in case.unsafe)


def test_acas_prop_1_values_are_those_of_the_file(data_dir):
    case, = acas(data_dir, "prop_1").cases
    np.testing.assert_array_equal(case.lower, [0.6, -0.5, -0.5, 0.45, -0.5])
    np.testing.assert_array_equal(case.upper, [0.679857769, 0.5, 0.5, 0.5, -0.45])
    # (assert (>= Y_0 3.991125645861615))  ->  -Y_0 <= -3.991125645861615
    assert rows(case) == [([[-1.0, 0.0, 0.0, 0.0, 0.0]], [-3.991125645861615])]


def test_acas_prop_2_unsafe_set_is_one_conjunction_y0_maximal(data_dir):
    case, = acas(data_dir, "prop_2").cases
    (C, d), = case.unsafe  # (<= Y_j Y_0) for j = 1..4  ->  Y_j - Y_0 <= 0
    expected = np.hstack([-np.ones((4, 1)), np.eye(4)])
    np.testing.assert_array_equal(C, expected)
    np.testing.assert_array_equal(d, np.zeros(4))


def test_acas_prop_4_fixes_x2_at_zero(data_dir):
    case, = acas(data_dir, "prop_4").cases
    assert case.lower[2] == case.upper[2] == 0.0
    region = case.region()
    assert isinstance(region, Box)
    assert region.constraints().E.shape == (1, 5)  # the fixed coordinate is an equality


def test_acas_prop_6_has_two_input_boxes_with_the_same_unsafe_set(data_dir):
    first, second = acas(data_dir, "prop_6").cases
    np.testing.assert_array_equal(first.lower, [-0.129289109, 0.11140846, -0.499999896, -0.5, -0.5])
    np.testing.assert_array_equal(first.upper, [0.700434925, 0.499999896, -0.499204121, 0.5, 0.5])
    np.testing.assert_array_equal(second.lower[1:2], [-0.499999896])
    np.testing.assert_array_equal(second.upper[1:2], [-0.11140846])
    assert rows(first) == rows(second)
    expected = [([[-1.0] + [1.0 if k == j else 0.0 for k in range(1, 5)]], [0.0])
                for j in range(1, 5)]  # (<= Y_j Y_0)
    assert rows(first) == expected


def test_acas_prop_7_is_a_disjunction_of_two_conjunctions(data_dir):
    case, = acas(data_dir, "prop_7").cases
    (C3, d3), (C4, d4) = case.unsafe  # Y_3 (then Y_4) <= Y_0, Y_1, Y_2
    np.testing.assert_array_equal(C3, [[-1, 0, 0, 1, 0], [0, -1, 0, 1, 0], [0, 0, -1, 1, 0]])
    np.testing.assert_array_equal(C4, [[-1, 0, 0, 0, 1], [0, -1, 0, 0, 1], [0, 0, -1, 0, 1]])
    assert not d3.any() and not d4.any()


def test_region_and_property_of_a_case(data_dir):
    case, = acas(data_dir, "prop_2").cases
    region = case.region()
    assert isinstance(region, Box)
    assert region.contains((case.lower + case.upper) / 2)
    prop = case.property(mode="all")
    assert isinstance(prop, LinearProperty) and prop.mode == "all"
    assert isinstance(prop.unsafe, list) and prop.unsafe[0][0] is case.unsafe[0][0]


def test_network_size_mismatch_is_reported(data_dir):
    path = data_dir / "acasxu" / "vnnlib" / "prop_1.vnnlib"
    with pytest.raises(ConfigError, match=r"prop_1\.vnnlib: declares 5 inputs \(X_0 \.\. X_4\) "
                                          r"but the network has 784 inputs"):
        read_vnnlib(path, n_inputs=784)
    with pytest.raises(ConfigError, match="declares 5 outputs .* network has 10 outputs"):
        read_vnnlib(path, n_outputs=10)


# ----------------------------------------------------------------------------- mnistfc


@pytest.fixture(scope="module")
def mnist_props(data_dir):
    """properties.csv rows by ``vnnlib_<year>/<property>`` and the test images in [0, 1]."""
    with open(data_dir / "mnistfc" / "properties.csv", newline="") as fh:
        props = {f"vnnlib_{r['edition']}/{r['property']}": r for r in csv.DictReader(fh)}
    images = np.load(data_dir / "mnist" / "mnist_test.npz")["images"] / 255.0
    return props, images


@pytest.mark.parametrize("name", MNIST_FILES)
def test_every_mnistfc_property_is_an_eps_box_and_nine_label_flips(data_dir, mnist_props, name):
    props, images = mnist_props
    spec = read_vnnlib(data_dir / "mnistfc" / f"{name}.vnnlib", n_inputs=784, n_outputs=10)
    case, = spec.cases
    info = props[name]
    image, eps, label = images[int(info["test_index"])], float(info["eps"]), int(info["label"])
    np.testing.assert_allclose(case.lower, np.clip(image - eps, 0, 1), rtol=0, atol=MNIST_BOX_TOL)
    np.testing.assert_allclose(case.upper, np.clip(image + eps, 0, 1), rtol=0, atol=MNIST_BOX_TOL)
    assert case.A is None
    # (or (and (>= Y_j Y_label)) ...) over j != label  ->  Y_label - Y_j <= 0
    others = [j for j in range(10) if j != label]
    assert len(case.unsafe) == len(others) == 9
    for (C, d), j in zip(case.unsafe, others):
        row = np.zeros(10)
        row[label], row[j] = 1.0, -1.0
        np.testing.assert_array_equal(C, [row])
        np.testing.assert_array_equal(d, [0.0])


def test_mnistfc_bounds_equal_the_literals_of_the_file(data_dir):
    path = data_dir / "mnistfc" / "vnnlib_2021" / "prop_0_0.03.vnnlib"
    text = path.read_text()
    case, = read_vnnlib(path).cases
    upper = {int(i): float(v) for i, v in re.findall(r"\(assert \(<= X_(\d+) (\S+)\)\)", text)}
    lower = {int(i): float(v) for i, v in re.findall(r"\(assert \(>= X_(\d+) (\S+)\)\)", text)}
    assert len(upper) == len(lower) == 784
    np.testing.assert_array_equal(case.upper, [upper[i] for i in range(784)])
    np.testing.assert_array_equal(case.lower, [lower[i] for i in range(784)])
    assert (case.lower[205], case.upper[205]) == (0.1464705914258957, 0.20647059381008148)


# ----------------------------------------------------------------------------- syntax and semantics


def test_linear_arithmetic_and_number_forms():
    spec = parse(HEADER + BOX + """
(assert (or
  (and (<= (+ Y_0 (* 2 Y_1) -1.5e-1) (- 3)))
  (and (> (- Y_0 Y_1 .5) (* Y_1 -2.5E+1 2)))
  (< (- (* 0.5 (+ Y_0 Y_1))) +4)))
""")
    case, = spec.cases
    assert rows(case) == [
        ([[1.0, 2.0]], [-3.0 + 0.15]),          # Y_0 + 2 Y_1 - 0.15 <= -3
        ([[-1.0, -49.0]], [-0.5]),              # Y_0 - Y_1 - 0.5 >= -50 Y_1
        ([[-0.5, -0.5]], [4.0]),                # -(Y_0 + Y_1)/2 < 4, read as <=
    ]


def test_general_input_rows_give_a_polyhedron():
    case, = parse(HEADER + BOX + "(assert (<= (+ X_0 X_1) 0.5))\n(assert (>= (* 4 X_0) 0.5))\n"
                  + UNSAFE).cases
    np.testing.assert_array_equal(case.lower, [0.125, -1.0])  # 4 X_0 >= 0.5 tightens X_0 >= 0
    np.testing.assert_array_equal(case.A, [[1.0, 1.0]])
    np.testing.assert_array_equal(case.b, [0.5])
    region = case.region()
    assert isinstance(region, Intersection)
    assert region.contains([0.2, 0.2]) and not region.contains([0.4, 0.4])


def test_disjuncts_with_the_same_box_are_grouped_and_repeats_dropped():
    spec = parse(HEADER + """
(assert (or (and (>= X_0 0) (<= X_0 1) (>= Y_0 1))
            (and (<= X_0 1) (>= X_0 0.0) (>= Y_1 2))
            (and (>= X_0 0) (<= X_0 1) (>= Y_0 1))
            (and (>= X_0 2) (<= X_0 3) (>= Y_0 1))))
(assert (and (>= X_1 0) (<= X_1 1)))
""")
    first, second = spec.cases
    assert rows(first) == [([[-1.0, 0.0]], [-1.0]), ([[0.0, -1.0]], [-2.0])]
    assert rows(second) == [([[-1.0, 0.0]], [-1.0])]
    np.testing.assert_array_equal(second.lower, [2.0, 0.0])


def test_strict_comparisons_are_closed_and_zero_has_no_sign():
    case, = parse(HEADER + "(assert (> X_0 0))\n(assert (< X_0 0.0))\n(assert (> X_1 -0))\n"
                  "(assert (< X_1 1))\n(assert (> Y_0 0))\n").cases
    assert case.lower.tolist() == [0.0, 0.0] and case.upper.tolist() == [0.0, 1.0]
    assert rows(case) == [([[-1.0, 0.0]], [0.0])]
    assert not np.signbit(case.lower).any() and not np.signbit(case.unsafe[0][1]).any()


def test_results_are_read_only():
    case, = parse(HEADER + BOX + UNSAFE).cases
    for arr in (case.lower, case.upper, *case.unsafe[0]):
        with pytest.raises(ValueError):
            arr[0] = 1.0


def test_read_vnnlib_reads_gzip_and_names_the_file(tmp_path):
    path = tmp_path / "spec.vnnlib.gz"
    path.write_bytes(gzip.compress((HEADER + BOX + UNSAFE).encode()))
    assert read_vnnlib(path).cases[0].upper.tolist() == [1.0, 1.0]
    bad = tmp_path / "bad.vnnlib"
    bad.write_text(HEADER + "(assert (<= X_0 1.0 X_1))\n")
    with pytest.raises(ConfigError, match=re.escape(f"{bad}:5:21: syntax error at 'X_1'")):
        read_vnnlib(bad)
    binary = tmp_path / "binary.vnnlib"
    binary.write_bytes(b"\xff\xfe(\x00")
    with pytest.raises(ConfigError, match="binary.vnnlib: not a VNN-LIB text file"):
        read_vnnlib(binary)


# ----------------------------------------------------------------------------- errors

#: (file body, error class, exact message after "p.vnnlib"). Columns count from 1. Syntax
#: errors are the official parser's (``syntax error at``), at the 1.0 file's position.
MALFORMED = {
    "missing close paren": (
        HEADER + "(assert (<= X_0 1)\n", ConfigError,
        ":6:1: expected ')' but got end of file (the '(' at 5:1 is never closed)"),
    "extra close paren": (
        HEADER + "(assert (<= X_0 1)))\n", ConfigError,
        ":5:20: unexpected ')' with no matching '('"),
    "extra operand": (
        HEADER + "(assert (<= X_0 1.0 X_1))\n", ConfigError,
        ":5:21: syntax error at 'X_1'"),
    "missing operand": (
        HEADER + "(assert (<= X_0))\n", ConfigError,
        ":5:16: syntax error at ')'"),
    "empty assert": (
        HEADER + "(assert)\n", ConfigError,
        ":5:8: syntax error at ')'"),
    "unknown operator": (
        HEADER + "(assert (foo X_0 1))\n", ConfigError,
        ":5:10: syntax error at 'foo'"),
    "equality": (
        HEADER + "(assert (= X_0 1))\n", ConfigError,
        ":5:10: syntax error at '='"),
    "unknown term operator": (
        HEADER + "(assert (<= (sin X_0) 1))\n", ConfigError,
        ":5:14: syntax error at 'sin'"),
    "unknown command": (
        HEADER + "(check-sat)\n", ConfigError,
        ":5:2: syntax error at 'check-sat'"),
    "formula is an atom": (
        HEADER + "(assert X_0)\n", ConfigError,
        ":5:9: syntax error at 'X_0'"),
    "top-level atom": (
        HEADER + "assert\n", ConfigError, ":5:1: syntax error at 'assert'"),
    "undeclared variable": (
        HEADER + "(assert (<= X_2 1))\n", ConfigError,
        ":5:13: undeclared variable 'X_2': Variable must be declared before use."),
    "non-linear": (
        HEADER + "(assert (<= (* 2 X_0 X_1) 1))\n", ConfigError,
        ":5:22: non-linear term: '*' multiplies two terms with variables; got 'X_1'"),
    "non-linear nested": (
        HEADER + "(assert (<= (* (+ X_0 1) (- X_1)) 1))\n", ConfigError,
        ":5:26: non-linear term: '*' multiplies two terms with variables; got '(- X_1)'"),
    "mixed inputs and outputs": (
        HEADER + "(assert (<= X_0 Y_0))\n", ConfigError,
        ":5:9: comparison '(<= X_0 Y_0)' mixes inputs X_i and outputs Y_j; only constraints "
        "on one kind are supported"),
    "constants only": (
        HEADER + "(assert (<= (- X_0 X_0) 1))\n", ConfigError,
        ":5:9: comparison '(<= (- X_0 X_0) 1)' has no variable left"),
    "nan": (
        HEADER + "(assert (<= X_0 nan))\n", ConfigError,
        ":5:17: non-finite literal 'nan' (NaN and inf are not allowed)"),
    "inf": (
        HEADER + "(assert (>= X_0 -inf))\n", ConfigError,
        ":5:17: non-finite literal '-inf' (NaN and inf are not allowed)"),
    "overflowing literal": (
        HEADER + "(assert (<= X_0 1e999))\n", ConfigError,
        ":5:17: numeric literal '1e999' overflows to inf"),
    "malformed number": (
        HEADER + "(assert (<= X_0 1.2.3))\n", ConfigError, ":5:17: malformed number '1.2.3'"),
    "empty file": ("", ConfigError,
                   ":1:1: expected '(declare-const ...)' or '(assert ...)' but got end of file "
                   "(the file is empty)"),
    "comments only": (
        "; nothing here\n\n", ConfigError,
        ":1:1: expected '(declare-const ...)' or '(assert ...)' but got end of file "
        "(the file is empty)"),
    "bad variable name": (
        "(declare-const Z_0 Real)\n", ConfigError,
        ":1:16: variable names must be X_<i> (inputs) or Y_<j> (outputs), got 'Z_0'"),
    "declared twice": (
        HEADER + "(declare-const X_1 Real)\n", ConfigError,
        ":5:16: 'X_1' is declared twice (first at p.vnnlib:2:16)"),
    "sort not real": (
        "(declare-const X_0 Int)\n", ConfigError, ":1:20: expected sort 'Real' but got 'Int'"),
    "gap in inputs": (
        "(declare-const X_0 Real)\n(declare-const X_2 Real)\n(declare-const Y_0 Real)\n",
        ConfigError, ": inputs must be X_0 .. X_2 without gaps, but X_1 is not declared"),
    "no outputs declared": (
        "(declare-const X_0 Real)\n(assert (<= X_0 1))\n", ConfigError,
        ": declares no output variables Y_0, Y_1, ..."),
    "no output constraints": (
        HEADER + BOX, ConfigError,
        ": no assertion constrains an output Y_j, so the unsafe set is not stated; add e.g. "
        "(assert (>= Y_0 Y_1))"),
    "disjunct without outputs": (
        HEADER + BOX + "(assert (or (>= Y_0 1) (<= X_0 0.5)))\n", ConfigError,
        ": disjunct 1 of the assertions (in disjunctive normal form) constrains no output Y_j; "
        "every input of its region would be a counterexample"),
    "no upper bound": (
        HEADER + "(assert (>= X_0 0))\n(assert (<= X_0 1))\n(assert (>= X_1 0))\n" + UNSAFE,
        RegionError,
        ":2:16: input 'X_1' has no upper bound, so the input region is unbounded; add "
        "(assert (<= X_1 <number>))"),
    "no lower bound": (
        HEADER + "(assert (<= X_0 1))\n" + UNSAFE, RegionError,
        ":1:16: input 'X_0' has no lower bound, so the input region is unbounded; add "
        "(assert (>= X_0 <number>))"),
    "empty box": (
        HEADER + BOX + "(assert (>= X_1 2))\n" + UNSAFE, RegionError,
        ":2:16: input 'X_1' has lower bound 2.0 above upper bound 1.0, so the input region "
        "is empty"),
    "too deep": (
        HEADER + "(assert " + "(and " * MAX_DEPTH + ")" * (MAX_DEPTH + 1), ConfigError,
        f":5:{9 + 5 * (MAX_DEPTH - 1)}: parentheses nested deeper than {MAX_DEPTH} levels"),
    "too many disjuncts": (
        HEADER + BOX + "(assert (or (>= Y_0 0) (>= Y_1 0)))\n" * 17, ConfigError,
        ": the assertions expand to more than 100000 disjuncts"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_files_name_file_line_column_and_token(case):
    body, cls, message = MALFORMED[case]
    with pytest.raises(cls) as info:
        parse(body)
    assert str(info.value) == "p.vnnlib" + message


def test_network_size_mismatch_on_a_string():
    with pytest.raises(ConfigError, match=r"^p\.vnnlib: declares 2 outputs \(Y_0 \.\. Y_1\) "
                                          r"but the network has 3 outputs"):
        parse(HEADER + BOX + UNSAFE, n_inputs=2, n_outputs=3)


# ----------------------------------------------------------------------------- the 155 files

#: ``path fingerprint`` per 1.0 file of shared/data (acasxu, mnistfc, vnncomp2022), taken from
#: the hand-written reader this package replaced (main at e27fa2f): the new reader must agree.
FINGERPRINTS = Path(__file__).with_name("data") / "vnnlib_v1_fingerprints.txt"


def fingerprint(spec) -> str:
    """A hash of a spec's sizes, cases' boxes and rows, and unsafe (C, d), exact to the bit."""
    h = hashlib.sha256()

    def arr(a):
        if a is None:
            h.update(b"N")
            return
        a = np.ascontiguousarray(a, dtype=np.float64)
        h.update(repr(a.shape).encode())
        h.update(a.tobytes())

    h.update(f"{spec.n_inputs},{spec.n_outputs},{len(spec.cases)}".encode())
    for case in spec.cases:
        for a in (case.lower, case.upper, case.A, case.b):
            arr(a)
        h.update(str(len(case.unsafe)).encode())
        for C, d in case.unsafe:
            arr(C)
            arr(d)
    return h.hexdigest()[:16]


def test_every_v1_file_reads_as_the_hand_written_reader_read_it(data_dir):
    expected = dict(line.split() for line in FINGERPRINTS.read_text().splitlines())
    assert len(expected) == 155
    got = {name: fingerprint(read_vnnlib(data_dir / name)) for name in expected}
    assert {k for k in expected if got[k] != expected[k]} == set()


def _models_of(data_dir) -> dict:
    """Each 1.0 file's model, from the benchmarks' instances.csv lists."""
    import csv

    out = {}
    for listing in sorted(data_dir.rglob("instances.csv")):
        root = listing.parent
        for row in csv.reader(listing.open()):
            onnx_ = root / row[0] if (root / row[0]).exists() else root / "onnx" / row[0]
            prop = root / row[1] if (root / row[1]).exists() else root / "vnnlib" / row[1]
            out.setdefault(str(prop.relative_to(data_dir)), onnx_)
    return out


@pytest.mark.integration
def test_every_v1_file_compiles_with_its_model_to_the_same_spec(data_dir):
    """``polytrav-vnnlib`` and ``polytrav verify QUERY --network`` read 1.0 files through
    ``compile_query`` (the model's network ``N``): the same cases, exact to the bit."""
    from polytrav.verification.instance import compile_query
    from polytrav.verification.query import read_query

    expected = dict(line.split() for line in FINGERPRINTS.read_text().splitlines())
    models = _models_of(data_dir)
    missing = sorted(set(expected) - set(models))
    assert not missing, f"no instances.csv row names {missing[:3]}"
    got = {name: fingerprint(compile_query(read_query(data_dir / name),
                                           {"N": models[name]}).spec) for name in expected}
    assert {k for k in expected if got[k] != expected[k]} == set()
