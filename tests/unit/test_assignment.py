"""§5.3.1 assignments, byte for byte as the reference solver (vnnlib-test-solver 2.0.1) prints
them for the same values (its output for these two queries was recorded by running it)."""
from fractions import Fraction

import pytest

from polytrav import ConfigError
from polytrav.verification.assignment import render_assignment, render_number
from polytrav.verification.query import parse_query

MAT = """(vnnlib-version <2.0>)
(declare-network N
    (declare-input A float32 [2, 2])
    (declare-output B int32 [1])
)
(assert (>= A[0,0] 0.0))
(assert (<= B[0] 5))
"""

MONO = """(vnnlib-version <2.0>)
(declare-network f
    (declare-input X_f real [1, 5])
    (declare-output Y_f real [1, 5])
)
(declare-network g
    (equal-to f)
    (declare-input X_g real [1, 5])
    (declare-output Y_g real [1, 5])
)
(assert (and (>= X_f[0,0] -0.3) (<= X_f[0,0] 0.6)))
(assert (<= X_g[0,0] X_f[0,0]))
(assert (< Y_f[0,3] Y_g[0,3]))
"""


def test_matrix_and_integer_variables_as_the_reference_prints_them():
    out = render_assignment(parse_query(MAT), {"A": [[0.5, 0.3], [0.4, 0.2]], "B": [-1]})
    assert out == "A float32 [2,2]\n0.5\n0.3\n0.4\n0.2\nB int32 [1]\n-1\n"


def test_two_networks_in_declaration_order_copies_included():
    values = {"X_f": [0.5, -0.25, 0.0, 0.1, 1.0], "Y_f": [1.0, 2.0, 3.0, 4.0, 5.0],
              "X_g": [0.25, -0.25, 0.0, 0.1, 1.0], "Y_g": [1.5, 2.5, 3.5, 4.5, 1e10]}
    out = render_assignment(parse_query(MONO), values)
    # the reference prints the TOML integer 1 of its configuration as "1"; a float is "1.0"
    assert out == ("X_f real [1,5]\n0.5\n-0.25\n0.0\n0.1\n1.0\n"
                   "Y_f real [1,5]\n1.0\n2.0\n3.0\n4.0\n5.0\n"
                   "X_g real [1,5]\n0.25\n-0.25\n0.0\n0.1\n1.0\n"
                   "Y_g real [1,5]\n1.5\n2.5\n3.5\n4.5\n10000000000.0\n")


def test_exact_constants_print_digit_for_digit():
    assert render_number(Fraction("-0.3")) == "-0.3"
    assert render_number(Fraction("0.30000000000000000001")) == "0.30000000000000000001"
    assert render_number(Fraction(5)) == "5.0"
    assert render_number(Fraction(1, 3)) == repr(1 / 3)  # no finite decimal: the float


def test_missing_or_misshapen_values_are_named():
    q = parse_query(MAT)
    with pytest.raises(ConfigError, match="no value for 'B'"):
        render_assignment(q, {"A": [0.0] * 4})
    with pytest.raises(ConfigError, match="'A' has 3 values; its shape \\[2, 2\\] has 4"):
        render_assignment(q, {"A": [0.0] * 3, "B": [0]})
    with pytest.raises(ConfigError, match="not a value of type int32"):
        render_assignment(q, {"A": [0.0] * 4, "B": [0.5]})
