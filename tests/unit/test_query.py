"""Tests of the query model (polytrav.verification.query), the VNN-LIB 1.0 shim
(polytrav.verification.vnnlib_shim) and positions in errors (polytrav.verification.location)."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from polytrav.verification.query import ELEMENT_TYPES, Atom, parse_query, read_query
from polytrav.verification.vnnlib import parse_vnnlib
from polytrav.verification.vnnlib_shim import convert, is_v1
from polytrav.vocabulary.errors import ConfigError, RegionError

MONO = """\
(vnnlib-version <2.0>)
; two copies of one network
(declare-network f
    (declare-input  X_f real [1, 5])
    (declare-hidden H float32 [1] "node\\"out")
    (declare-output Y_f real [1, 5])
)
(declare-network g
    (equal-to f)
    (declare-input  X_g real [1, 5])
    (declare-output Y_g real [1, 5])
)
(assert (and (>= X_f[0,0] -0.3) (<= X_f[0,0] 0.6)))
(assert (<= X_g[0,0] X_f[0,0]))
(assert (== X_g[0,1] X_f[0,1]))
(assert (or (< Y_f[0,3] Y_g[0,3]) (> (- Y_f[0,2] (* 2.0 Y_g[0,1]) 3.0) (+ 1.5 (- X_f[0,4])))))
(assert (!= Y_f[0,0] 0.5))
"""

ONE = """\
(vnnlib-version <2.0>)
(declare-network N
    (declare-input X float32 [1, 2])
    (declare-output Y float32 [3])
)
"""
BOX = "(assert (and (>= X[0,0] 0.0) (<= X[0,0] 1.0) (>= X[0,1] -1.0) (<= X[0,1] 1.0)))\n"


def parse(text: str):
    return parse_query(text, source="q.vnnlib")


def message(text: str, cls=ConfigError, reader=parse) -> str:
    with pytest.raises(cls) as info:
        reader(text)
    return str(info.value)


# ----------------------------------------------------------------------------- the model


def test_networks_in_declaration_order_with_their_variables():
    q = parse(MONO)
    f, g = q.networks
    assert (f.name, f.equal_to, f.isomorphic_to) == ("f", None, None)
    assert (g.name, g.equal_to, g.isomorphic_to) == ("g", "f", None)
    assert [v.name for v in f.variables] == ["X_f", "H", "Y_f"]
    x, h = f.inputs[0], f.hidden[0]
    assert (x.kind, x.element_type, x.shape, x.network, x.onnx_name, x.size) == \
        ("input", "real", (1, 5), "f", None, 5)
    assert (h.kind, h.element_type, h.shape, h.onnx_name) == ("hidden", "float32", (1,), 'node"out')
    assert list(q.variables) == ["X_f", "H", "Y_f", "X_g", "Y_g"]
    assert q.version == "2.0"


def test_assertions_are_one_dnf_of_exact_linear_atoms():
    q = parse(MONO)
    first, *_ = q.dnf
    assert [str(a) for a in first] == [
        "X_f[0,0] >= -3/10", "X_f[0,0] <= 3/5", "-X_f[0,0] + X_g[0,0] <= 0",
        "-X_f[0,1] + X_g[0,1] == 0", "Y_f[0,3] - Y_g[0,3] < 0", "Y_f[0,0] < 1/2"]
    assert len(q.clauses) == 4  # (< or >) x (!= as < or >)
    relation = q.dnf[2][4]  # Y_f[0,2] - 2 Y_g[0,1] - 3 > 1.5 - X_f[0,4]
    assert relation.op == ">" and relation.constant == Fraction(9, 2)
    assert [(t.variable, t.index, t.flat, t.coefficient) for t in relation.terms] == [
        ("X_f", (0, 4), 4, 1), ("Y_f", (0, 2), 2, 1), ("Y_g", (0, 1), 1, -2)]
    assert relation.terms[2].coefficient_float == -2.0 and relation.constant_float == 4.5
    low = q.atoms[0]
    assert low.constant == Fraction(-3, 10) and low.constant_float == -0.3
    assert isinstance(low, Atom) and low.origin == 0 and q.atoms[-1].origin == 6


def test_constants_are_exact_where_doubles_are_not():
    q = parse(ONE + "(assert (<= (+ X[0,0] 0.1 0.2) 0.3))\n(assert (>= Y[0] "
                    "0.100000000000000000000000000001))\n")
    tight, tiny = q.atoms
    assert tight.constant == 0 and tight.constant_float == 0.0  # 0.3 - 0.1 - 0.2, exactly
    assert tiny.constant == Fraction(10 ** 29 + 1, 10 ** 30) and tiny.constant_float == 0.1


def test_element_types_keep_the_users_spelling():
    q = parse(ONE.replace("X float32", "X Real").replace("Y float32", "Y float32") +
              "(assert (<= X[0,0] X[0,1]))\n(assert (<= Y[0] Y[1]))\n")
    assert [v.element_type for v in q.networks[0].variables] == ["Real", "float32"]
    assert "float32" in ELEMENT_TYPES and "Real" not in ELEMENT_TYPES


def test_scalars_and_constant_comparisons():
    q = parse("(vnnlib-version <2.0>)\n(declare-network N (declare-input X real [])"
              " (declare-output Y real [2]))\n(assert (<= X 1.0))\n(assert (<= 0.0 1.0))\n")
    bound, constant = q.atoms
    assert bound.terms[0][:3] == ("X", (), 0) and constant.terms == ()


def test_a_product_of_variables_is_refused_at_the_term():
    text = ONE + "(assert (<= (* 2.0 (+ X[0,0] 1.0) X[0,1]) 1.0))\n"
    assert message(text) == ("q.vnnlib:6:35: non-linear term: '*' multiplies two terms with "
                             "variables; got 'X[0,1]'")
    nested = ONE + "(assert (>= Y[0] 0.0))\n(assert (<= 1.0 (- (* (+ X[0,0] 1.0) (- X[0,1])))))\n"
    assert message(nested) == ("q.vnnlib:7:38: non-linear term: '*' multiplies two terms with "
                               "variables; got '(- X[0,1])'")


# ----------------------------------------------------------------------------- positions


def test_syntax_errors_have_1_based_columns_on_every_line():
    assert message("(vnnlib-version <2.0>) @") == "q.vnnlib:1:24: syntax error at '@'"
    assert message(ONE + "(assert (<= X[0,0] 1.0 2.0))\n") == "q.vnnlib:6:24: syntax error at '2.0'"
    assert message(ONE + "(assert (<= X[0,0] 1e-3))\n") == "q.vnnlib:6:21: syntax error at 'e-3'"
    assert message(ONE + "(assert (<= X[0,0] 1.0)\n") == (
        "q.vnnlib:7:1: expected ')' but got end of file (the '(' at 6:1 is never closed)")
    assert message(ONE) == ("q.vnnlib:6:1: unexpected end of file (a query ends with at least "
                            "one (assert ...))")


def test_semantic_errors_are_placed_on_their_symbol():
    assert message(ONE + "(assert (<= X[0,0] 1))\n").startswith(
        "q.vnnlib:6:20: type mismatch in arithmetic expression '1': Expected type 'F32'")
    assert message(ONE + "(assert (<= X[0,2] 1.0))\n") == (
        "q.vnnlib:6:13: index out of bounds for variable 'X[0,2]': Index 2 is out of bounds "
        "for dimension 1 with size 2.")
    assert message(MONO.replace("(equal-to f)", "(equal-to h)")).startswith("q.vnnlib:9:")


def test_too_deep_nesting_is_refused_before_the_parser_crashes():
    deep = ONE + "(assert " + "(and " * 100_000 + "(<= X[0,0] 1.0)" + ")" * 100_001
    assert message(deep) == "q.vnnlib:6:1004: parentheses nested deeper than 200 levels"


def test_a_missing_file_is_an_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_query(tmp_path / "missing.vnnlib")


def test_errors_at_atoms_and_variables(tmp_path):
    path = tmp_path / "m.vnnlib"
    path.write_text(MONO)
    q = read_query(path)
    assert str(q.error(q.atoms[2], "here")) == f"{path}:14:9: here"
    assert str(q.error(q.variables["Y_g"], "there")) == f"{path}:11:21: there"
    assert str(q.error(None, "file")) == f"{path}: file"


# ----------------------------------------------------------------------------- the 1.0 shim


def test_shim_rewrites_declarations_names_and_numbers_keeping_lines():
    text = ("; a property\n(declare-const X_0 Real)\n(declare-const Y_0 Real)\n"
            "(declare-const Y_1 Real)\n(assert (<= X_0 1e-3))\n(assert (>= X_0 -.5))\n"
            "(assert (<= (+ Y_0 +2) Y_1 ))\n")
    assert is_v1(text) and not is_v1("; v2\n(vnnlib-version <2.0>)")
    parsed, src, problem = convert(text, "p.vnnlib")
    assert problem is None
    assert parsed.splitlines()[0] == (
        "(vnnlib-version <2.0>)(declare-network N (declare-input X real [1]) "
        "(declare-output Y real [2])); a property")
    assert parsed.splitlines()[4:] == ["(assert (<= X[0] 0.001))", "(assert (>= X[0] -0.5))",
                                       "(assert (<= (+ Y[0] 2.0) Y[1] ))"]
    assert parsed.count("\n") == text.count("\n")
    line7 = parsed.index("Y[1]")
    assert src.where(src.back(line7)) == "p.vnnlib:7:24"
    assert src.where(src.back(parsed.index("0.001"))) == "p.vnnlib:5:17"


def test_v1_numbers_are_exact_and_the_model_is_one_network():
    q = parse("(declare-const X_0 Real)\n(declare-const Y_0 Real)\n(assert (>= X_0 "
              "8.177014294255894e-05))\n(assert (<= X_0 1))\n(assert (<= Y_0 0))\n")
    assert q.version == "1.0" and [n.name for n in q.networks] == ["N"]
    assert q.atoms[0].constant == Fraction("8.177014294255894e-05")
    assert q.atoms[0].constant_float == 8.177014294255894e-05


# ----------------------------------------------------------------------------- VnnlibSpec of 2.0


def test_a_one_network_v2_query_gives_a_spec_flattened_row_major():
    spec = parse_vnnlib(ONE + BOX + "(assert (== (+ X[0,0] X[0,1]) 0.5))\n"
                        "(assert (or (>= Y[2] Y[0]) (> Y[1] 0.25)))\n", n_inputs=2, n_outputs=3)
    case, = spec.cases
    assert case.lower.tolist() == [0.0, -1.0] and case.upper.tolist() == [1.0, 1.0]
    assert case.A.tolist() == [[1.0, 1.0], [-1.0, -1.0]] and case.b.tolist() == [0.5, -0.5]
    assert [(C.tolist(), d.tolist()) for C, d in case.unsafe] == [
        ([[1.0, 0.0, -1.0]], [0.0]), ([[0.0, -1.0, 0.0]], [-0.25])]


def test_v2_spec_errors_name_elements_and_declarations():
    assert message(ONE + "(assert (and (>= X[0,0] 0.0) (<= X[0,0] 1.0) (>= X[0,1] -1.0)))\n"
                   "(assert (>= Y[0] 0.0))\n", RegionError, parse_vnnlib) == (
        "<string>:3:20: input 'X[0,1]' has no upper bound, so the input region is unbounded; "
        "add (assert (<= X[0,1] <number>))")
    assert message(ONE + BOX + "(assert (>= Y[0] 0.0))\n", ConfigError,
                   lambda t: parse_vnnlib(t, n_inputs=784)).startswith(
        "<string>: declares 2 inputs (X of shape [1, 2]) but the network has 784 inputs")


def test_queries_read_vnnlib_does_not_support_yet_are_refused_clearly():
    assert "declares 2 networks; read_vnnlib reads one-network queries only" in message(
        MONO, ConfigError, parse_vnnlib)
    hidden = ONE.replace("(declare-output", '(declare-hidden H float32 [1] "h")\n'
                         "    (declare-output") + BOX + "(assert (>= Y[0] H[0]))\n"
    assert "hidden nodes are not supported by read_vnnlib yet" in message(
        hidden, ConfigError, parse_vnnlib)
    ints = ONE.replace("float32", "int64") + "(assert (>= Y[0] 1))\n"
    assert "element type 'int64'" in message(ints, ConfigError, parse_vnnlib)


def test_the_v2_spelling_of_a_v1_file_gives_the_same_spec():
    v1 = ("(declare-const X_0 Real)\n(declare-const X_1 Real)\n(declare-const Y_0 Real)\n"
          "(assert (>= X_0 0))\n(assert (<= X_0 1))\n(assert (>= X_1 -1))\n(assert (<= X_1 1))\n"
          "(assert (or (>= Y_0 0.5) (<= Y_0 0)))\n")
    parsed = convert(v1, "p").text
    a, b = parse_vnnlib(v1), parse_vnnlib(parsed)
    for x, y in zip(a.cases, b.cases):
        np.testing.assert_array_equal(x.lower, y.lower)
        assert [(C.tolist(), d.tolist()) for C, d in x.unsafe] == \
            [(C.tolist(), d.tolist()) for C, d in y.unsafe]


def test_isomorphic_networks_keep_their_reference():
    q = parse(MONO.replace("(equal-to f)", "(isomorphic-to f)"))
    assert [(n.name, n.equal_to, n.isomorphic_to) for n in q.networks] == [
        ("f", None, None), ("g", None, "f")]
