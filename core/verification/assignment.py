"""A satisfying assignment as VNN-LIB 2.0 prints it (chapter 5, §5.3.1).

After ``sat``, every declared variable in declaration order: per network, in the order the
networks are declared (``equal-to`` copies included, they have variables of their own), its
inputs, then its hidden nodes, then its outputs. Each variable is a header line
``<name> <declared type> [<d1>,<d2>,...]`` (no spaces in the brackets; ``[]`` for a scalar)
followed by its elements in row-major order, one per line; lines end with ``\\n``. The
standard fixes no number format: floats are printed as Python's shortest round-trip
``repr`` (as the reference solver, ``vnnlib-test-solver``, prints them), integers of integer
types as integers, and an exact :class:`~fractions.Fraction` with a finite decimal expansion
(a constant the query fixes a coordinate to) as that decimal, digit for digit.
"""
from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

import numpy as np

from polytrav.vocabulary.errors import ConfigError

__all__ = ["INTEGER_TYPES", "variables_in_order", "render_assignment", "render_number"]

#: Element types whose values are integers.
INTEGER_TYPES = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                           "uint64", "bool"})


def variables_in_order(query) -> list:
    """The query's variables in the order §5.3.1 prints them."""
    return [v for net in query.networks for group in (net.inputs, net.hidden, net.outputs)
            for v in group]


def render_number(value, element_type: str = "real") -> str:
    """One element as printed (see the module doc)."""
    if isinstance(value, Fraction):
        exact = _decimal(value)
        if exact is not None:
            return exact
        value = float(value)
    if element_type in INTEGER_TYPES:
        if float(value) != int(value):
            raise ConfigError(f"assignment: {value!r} is not a value of type {element_type}")
        return str(int(value))
    return repr(float(value))


def render_assignment(query, values: Mapping[str, object]) -> str:
    """The lines after ``sat``: ``values`` maps every variable's name to its elements (any
    array-like of the variable's size, row-major; Fractions allowed element-wise)."""
    lines = []
    for v in variables_in_order(query):
        if v.name not in values:
            raise ConfigError(f"assignment: no value for {v.name!r} (every declared variable "
                              "is printed)")
        elems = np.asarray(values[v.name], dtype=object).reshape(-1)
        if elems.size != v.size:
            raise ConfigError(f"assignment: {v.name!r} has {elems.size} values; its shape "
                              f"{list(v.shape)} has {v.size} elements")
        lines.append(f"{v.name} {v.element_type} [{','.join(map(str, v.shape))}]")
        lines += [render_number(x, v.element_type) for x in elems]
    return "".join(line + "\n" for line in lines)


def _decimal(q: Fraction) -> str | None:
    """``q`` as a plain decimal, exactly, if its expansion is finite (the denominator has only
    the factors 2 and 5), else None; ``.0`` kept for integers, as a float's repr has it."""
    d, twos, fives = q.denominator, 0, 0
    while d % 2 == 0:
        d, twos = d // 2, twos + 1
    while d % 5 == 0:
        d, fives = d // 5, fives + 1
    if d != 1:
        return None
    places = max(twos, fives)
    scaled = abs(q.numerator) * 10 ** places // q.denominator  # exact: 10^places / den is whole
    digits = str(scaled).rjust(places + 1, "0")
    whole, frac = digits[:len(digits) - places], digits[len(digits) - places:] or "0"
    return ("-" if q < 0 else "") + whole + "." + frac
