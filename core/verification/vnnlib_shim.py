"""VNN-LIB 1.0 text as VNN-LIB 2.0 text (the shim), with positions mapped back.

A 1.0 file (VNN-COMP 2021-2024) declares scalars ``(declare-const X_i Real)`` and
``(declare-const Y_j Real)`` and asserts over them with SMT-LIB numbers. The official parser
reads 2.0 only, so :func:`convert` rewrites the text:

- a header is put before the file's first line: ``(vnnlib-version <2.0>)`` and one network
  ``N`` with the input ``X real [n]`` and the output ``Y real [m]`` (the declared counts;
  1.0 is real-valued);
- each ``declare-const`` form is removed (its line breaks kept);
- a declared ``X_i`` / ``Y_j`` becomes ``X[i]`` / ``Y[j]`` (other names are left for the
  parser to name as undeclared);
- a number becomes a plain decimal, exactly (``0`` -> ``0.0``, ``-1.5e-1`` -> ``-0.15``).

Lines keep their numbers, and the returned map takes an offset of the 2.0 text back to the
1.0 text. The checks only 1.0 has (declarations, numbers) are made here.
"""
from __future__ import annotations

import bisect
import math
import re
from decimal import Decimal
from typing import NamedTuple

from polytrav.verification.location import Source, blank

__all__ = ["Shimmed", "convert", "is_v1"]

_DECLS = re.compile(r";[^\n]*|\(\s*declare-const(?![^\s()])"
                    r"(?:\s+([^\s()]+)\s+([^\s()]+)\s*\))?")
_PIECE = re.compile(
    r"(?P<com>;[^\n]*)"
    r"|(?P<decl>\(\s*declare-const(?![^\s()])[^()]*\))"
    r"|(?<![^\s()])(?P<var>[XY]_(?:0|[1-9]\d*))(?![^\s();])"
    r"|(?<![^\s()])(?P<bad>[-+]?(?i:nan|inf|infinity))(?![^\s();])"
    r"|(?<![^\s()])(?!-?\d+\.\d+(?![^\s();]))(?P<num>[-+]?\.?\d[^\s();]*)")
_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?\Z")
_NAME = re.compile(r"([XY])_(0|[1-9]\d*)\Z")
_V2 = re.compile(r"\s*(?:;[^\n]*\s*)*\(\s*vnnlib-version(?![^\s()])")


def is_v1(text: str) -> bool:
    """Whether ``text`` is not a 2.0 query (its first form is not ``(vnnlib-version ...)``)."""
    return _V2.match(text) is None


def _decimal(token: str) -> str:
    """A 1.0 number as a 2.0 decimal with the same exact value."""
    value = Decimal(token)
    if value.adjusted() < -400:  # far below the smallest double
        return "0.0"
    text = format(value, "f")
    return text if "." in text else text + ".0"


class _Shim:
    """One conversion: the declarations found, then the rewriting of every piece."""

    def __init__(self, src: Source):
        self.src = src
        self.declared: dict[str, tuple[str, int, int]] = {}  # name -> (kind, index, offset)
        self.renamed: dict[str, str] = {}  # X_i -> X[i]

    def declare(self, m: re.Match) -> None:
        """Record the declaration ``m`` of :data:`_DECLS` (a comment is skipped)."""
        name, sort = m.group(1), m.group(2)
        if name is None:
            if m.group().startswith(";"):
                return
            raise self.src.error(m.start(), "declare-const takes a name and a sort, as in "
                                            "(declare-const X_0 Real)")
        at = m.start(1)
        match = _NAME.match(name)
        if match is None:
            raise self.src.error(at, f"variable names must be X_<i> (inputs) or Y_<j> "
                                     f"(outputs), got {name!r}")
        if name in self.declared:
            first = self.src.where(self.declared[name][2])
            raise self.src.error(at, f"{name!r} is declared twice (first at {first})")
        if sort != "Real":
            raise self.src.error(m.start(2), f"expected sort 'Real' but got {sort!r}")
        self.declared[name] = (match.group(1), int(match.group(2)), at)
        self.renamed[name] = f"{name[0]}[{name[2:]}]"

    def count(self, kind: str, what: str) -> tuple[int, Exception | None]:
        """The number of ``kind`` variables, and the error if they are none or have gaps."""
        indices = sorted(i for k, i, _ in self.declared.values() if k == kind)
        if not indices:
            return 1, self.src.error(None, f"declares no {what} variables {kind}_0, {kind}_1, ...")
        if indices[-1] != len(indices) - 1:
            missing = next(i for i, j in enumerate(indices) if i != j)
            return indices[-1] + 1, self.src.error(
                None, f"{what}s must be {kind}_0 .. {kind}_{indices[-1]} without gaps, but "
                      f"{kind}_{missing} is not declared")
        return len(indices), None

    def piece(self, m: re.Match) -> str:
        kind = m.lastgroup
        token = m.group()
        if kind == "var":
            return self.renamed.get(token, token)
        if kind == "num":
            if not _NUMBER.match(token):
                raise self.src.error(m.start(), f"malformed number {token!r}")
            if not math.isfinite(float(token)):
                raise self.src.error(m.start(), f"numeric literal {token!r} overflows to inf")
            return _decimal(token)
        if kind == "bad":
            raise self.src.error(m.start(), f"non-finite literal {token!r} (NaN and inf are "
                                            "not allowed)")
        if kind == "decl":
            return "\n" * token.count("\n")
        return token  # a comment


class Shimmed(NamedTuple):
    """The 2.0 text, the :class:`Source` mapping positions back to the 1.0 file, and the
    error of missing or gapped declarations (raised once the text has parsed, so that
    syntax errors come first)."""

    text: str
    source: Source
    problem: Exception | None


def convert(text: str, source: str) -> Shimmed:
    """The 2.0 text of a 1.0 file, with its positions and pending problem (:class:`Shimmed`).

    Parameters
    ----------
    text : str
        The 1.0 file's text.
    source : str
        The file's name, for messages.

    Returns
    -------
    Shimmed

    Raises
    ------
    polytrav.vocabulary.errors.ConfigError
        An empty file, a malformed declaration or number.

    Examples
    --------
    >>> new, _, _ = convert("(declare-const X_0 Real)\\n(declare-const Y_0 Real)\\n"
    ...                  "(assert (<= X_0 1e-3))", "p.vnnlib")
    >>> print(new)  # doctest: +NORMALIZE_WHITESPACE
    (vnnlib-version <2.0>)(declare-network N (declare-input X real [1])
     (declare-output Y real [1]))
    <BLANKLINE>
    (assert (<= X[0] 0.001))
    """
    src = Source(text, source)
    if not blank(text).strip():
        raise src.error(0, "expected '(declare-const ...)' or '(assert ...)' but got end of "
                           "file (the file is empty)")
    if "declare-network" in blank(text):
        raise src.error(0, "a VNN-LIB 2.0 query starts with (vnnlib-version <2.0>)")
    shim = _Shim(src)
    for m in _DECLS.finditer(text):
        shim.declare(m)
    (n_x, no_x), (n_y, no_y) = shim.count("X", "input"), shim.count("Y", "output")
    header = (f"(vnnlib-version <2.0>)(declare-network N (declare-input X real [{n_x}]) "
              f"(declare-output Y real [{n_y}]))")
    body = _PIECE.sub(shim.piece, text)
    parsed = header + body
    back = Source(text, source, parsed, lambda offset: _back(shim, text, header, offset))
    return Shimmed(parsed, back, no_x or no_y)


def _back(shim: _Shim, text: str, header: str, offset: int) -> int:
    """The 1.0 offset of a 2.0 offset (the conversion is replayed, recording each piece)."""
    offset -= len(header)
    if offset <= 0:
        return 0
    new_starts, pieces, shift = [], [], 0
    for m in _PIECE.finditer(text):
        new = shim.piece(m)
        new_starts.append(m.start() + shift)
        pieces.append((m.start(), m.end(), len(new)))
        shift += len(new) - (m.end() - m.start())
    k = bisect.bisect_right(new_starts, offset) - 1
    if k < 0:
        return offset
    start, end, size = pieces[k]
    inside = offset - new_starts[k]
    if inside < size:
        return start + min(inside, end - start - 1) if inside else start
    return end + inside - size
