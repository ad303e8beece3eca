"""Reader for VNN-LIB 1.0 property files (the format of VNN-COMP 2021-2024).

A file declares real inputs ``X_0 .. X_{n-1}`` and outputs ``Y_0 .. Y_{m-1}`` with
``(declare-const NAME Real)`` and then states ``(assert F)`` formulas. The conjunction of all
assertions describes the *counterexamples*: constraints on ``X`` give the input region and
constraints on ``Y`` the **unsafe** output set, so ``sat`` means the property is violated.

Supported syntax: comparisons ``<=``, ``>=``, ``<`` and ``>`` between linear terms, nested
``and`` and ``or``, and terms built from variables, numeric literals (decimal or scientific,
optionally signed), ``(+ t ...)``, ``(- t)``, ``(- t t ...)`` and ``(* c ... t)`` with at
most one non-constant factor. The strict comparisons ``<`` and ``>`` are read as ``<=`` and
``>=``: the traversal works with closed sets, which differ only on the boundary (VNN-COMP's
own tooling does the same). ``=`` does not occur in the benchmark files and is rejected.

The reader expands the conjunction of assertions into disjunctive normal form. Each disjunct
splits into input constraints, which must bound every input (a box, plus optional general rows
``A x <= b``), and a conjunction of output constraints ``C y <= d``. Disjuncts with the same
input region are grouped into one :class:`VnnlibCase`, whose ``unsafe`` set is the
disjunction of their output conjunctions.

Errors in the file raise :class:`~polytrav.vocabulary.errors.ConfigError` with ``file:line:column`` and
the offending token; an input region that is unbounded or empty raises
:class:`~polytrav.vocabulary.errors.RegionError`.

The reading of the text (S-expressions, terms, the expansion into disjunctive normal form)
is in :mod:`polytrav.verification.vnnlib_syntax`; this module builds the cases from it.

Examples
--------
>>> spec = parse_vnnlib('''
... (declare-const X_0 Real)
... (declare-const Y_0 Real)
... (declare-const Y_1 Real)
... (assert (>= X_0 -1))
... (assert (<= X_0 1.5e0))
... (assert (or (>= Y_0 2.5) (<= (- Y_0 Y_1) 0)))
... ''')
>>> spec.n_inputs, spec.n_outputs, len(spec.cases)
(1, 2, 1)
>>> case = spec.cases[0]
>>> case.lower, case.upper, case.A
(array([-1.]), array([1.5]), None)
>>> [(C.tolist(), d.tolist()) for C, d in case.unsafe]
[([[-1.0, 0.0]], [-2.5]), ([[1.0, -1.0]], [0.0])]
>>> parse_vnnlib("(declare-const X_0 Real)\\n(assert (<= X_0 X_1))",
...              source="p.vnnlib")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
polytrav.vocabulary.errors.ConfigError: p.vnnlib:2:17: undeclared variable 'X_1'; declare it ...
"""
from __future__ import annotations

import gzip
import os
from dataclasses import dataclass
from os import PathLike

import numpy as np

from polytrav.model.region import Box, Polyhedron, Region
# MAX_DISJUNCTS and MAX_DEPTH are re-exported: the reader's limits
from polytrav.verification.vnnlib_syntax import (MAX_DEPTH, MAX_DISJUNCTS,  # noqa: F401
                                                 Program, read_program)
from polytrav.vocabulary.errors import ConfigError, RegionError

__all__ = ["VnnlibSpec", "VnnlibCase", "read_vnnlib", "parse_vnnlib"]


# ----------------------------------------------------------------------------- result types


@dataclass(frozen=True, eq=False)
class VnnlibCase:
    """One input region of a VNN-LIB property and the unsafe output set on it.

    Attributes
    ----------
    lower, upper : numpy.ndarray, shape (n_inputs,)
        The input box (finite; ``lower == upper`` fixes a coordinate).
    A, b : numpy.ndarray or None
        Extra input rows ``A x <= b`` (shapes ``(k, n_inputs)`` and ``(k,)``), or ``None``
        when the input constraints are a pure box.
    unsafe : tuple of (C, d)
        A disjunction of conjunctions ``C @ y <= d`` (``C`` of shape ``(k, n_outputs)``):
        an input of the region whose output meets any of them is a counterexample.

    Arrays are read-only; cases compare by identity.
    """

    lower: np.ndarray
    upper: np.ndarray
    A: np.ndarray | None
    b: np.ndarray | None
    unsafe: tuple[tuple[np.ndarray, np.ndarray], ...]

    def region(self) -> Region:
        """The input region: ``Box(lower, upper)``, intersected with ``Polyhedron(A, b)`` if any.

        Returns
        -------
        polytrav.Region
        """
        box = Box(self.lower, self.upper)
        return box if self.A is None else box & Polyhedron(self.A, self.b)

    def property(self, mode: str = "verify", bounds: bool = True, bab: bool = True, pm=None):
        """The unsafe set as the registered ``linear_property`` analysis (the built-in
        :class:`~polytrav.plugins.linear_property.LinearProperty`, looked up by name).

        Parameters
        ----------
        mode : {"verify", "all"}, bounds : bool, bab : bool
            Passed on to the analysis.
        pm : plugin manager, optional
            The registry to look the analysis up in (default: a fresh one).

        Returns
        -------
        Analysis
        """
        from polytrav.host.manager import create_analysis

        return create_analysis("linear_property", pm=pm, unsafe=list(self.unsafe), mode=mode,
                               bounds=bounds, bab=bab)


@dataclass(frozen=True, eq=False)
class VnnlibSpec:
    """A parsed VNN-LIB file: the property is violated iff some case has a counterexample.

    Attributes
    ----------
    n_inputs, n_outputs : int
        Number of declared ``X_i`` and ``Y_j`` variables.
    cases : tuple of VnnlibCase
        One per distinct input region, in order of first appearance.
    """

    n_inputs: int
    n_outputs: int
    cases: tuple[VnnlibCase, ...]


# ----------------------------------------------------------------------------- public functions


def read_vnnlib(path: str | PathLike, *, n_inputs: int | None = None,
                n_outputs: int | None = None) -> VnnlibSpec:
    """Read a VNN-LIB file (``.vnnlib``, or gzip-compressed ``.vnnlib.gz``).

    Parameters
    ----------
    path : str or path-like
        The file; its name prefixes every error message.
    n_inputs, n_outputs : int, optional
        The network's input and output sizes; if given, the file must declare exactly that
        many ``X_i`` and ``Y_j``.

    Returns
    -------
    VnnlibSpec

    Raises
    ------
    polytrav.vocabulary.errors.ConfigError
        The file is malformed, uses unsupported syntax, or does not fit the network sizes.
    polytrav.vocabulary.errors.RegionError
        An input is not bounded on both sides, or its bounds are empty.
    OSError
        The file cannot be opened.
    """
    source = str(os.fspath(path))
    opener = gzip.open if source.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            text = fh.read()
    except (UnicodeDecodeError, gzip.BadGzipFile, EOFError) as exc:
        raise ConfigError(f"{source}: not a VNN-LIB text file ({exc})") from exc
    return parse_vnnlib(text, source=source, n_inputs=n_inputs, n_outputs=n_outputs)


def parse_vnnlib(text: str, *, source: str = "<string>", n_inputs: int | None = None,
                 n_outputs: int | None = None) -> VnnlibSpec:
    """Parse the text of a VNN-LIB file.

    Parameters
    ----------
    text : str
        The file contents.
    source : str
        Name used in error messages (``source:line:column: ...``).
    n_inputs, n_outputs : int, optional
        As in :func:`read_vnnlib`.

    Returns
    -------
    VnnlibSpec

    Raises
    ------
    polytrav.vocabulary.errors.ConfigError, polytrav.vocabulary.errors.RegionError
        As in :func:`read_vnnlib`.
    """
    return _spec(read_program(text, source), n_inputs, n_outputs)


# ----------------------------------------------------------------------------- building cases


def _spec(program: Program, n_inputs: int | None, n_outputs: int | None) -> VnnlibSpec:
    """The cases of a read program: its disjuncts grouped by input region."""
    n_in = program.count_declared("X", "input", n_inputs)
    n_out = program.count_declared("Y", "output", n_outputs)
    if not any(a.kind == "Y" for a in program.atoms):
        raise program.src.error(None, "no assertion constrains an output Y_j, so the unsafe "
                                      "set is not stated; add e.g. (assert (>= Y_0 Y_1))")
    regions: dict[tuple[int, ...], tuple] = {}
    cases: dict[tuple, tuple[tuple, dict]] = {}
    for k, conj in enumerate(program.disjuncts()):
        inputs = tuple(i for i in conj if program.atoms[i].kind == "X")
        outputs = [i for i in conj if program.atoms[i].kind == "Y"]
        if not outputs:
            raise program.src.error(None, f"disjunct {k} of the assertions (in disjunctive "
                                          "normal form) constrains no output Y_j; every input "
                                          "of its region would be a counterexample")
        if inputs not in regions:
            regions[inputs] = _input_region(program, inputs, n_in)
        region = regions[inputs]
        C, d = _output_rows(program, outputs, n_out)
        unsafe = cases.setdefault(_key(*region), (region, {}))[1]
        unsafe.setdefault(_key(C, d), (C, d))  # drop repeated conjunctions
    return VnnlibSpec(n_in, n_out, tuple(
        VnnlibCase(*region, tuple(unsafe.values())) for region, unsafe in cases.values()))


def _input_region(program: Program, atoms: tuple[int, ...], n: int) -> tuple:
    """``(lower, upper, A, b)`` of the input atoms of one disjunct (checked bounded, not empty)."""
    lower, upper = np.full(n, -np.inf), np.full(n, np.inf)
    rows, rhs = [], []
    for i in atoms:
        atom = program.atoms[i]
        if len(atom.coefs) == 1:
            (j, c), = atom.coefs.items()
            bound = atom.rhs / c
            if c > 0:
                upper[j] = min(upper[j], bound)
            else:
                lower[j] = max(lower[j], bound)
        else:
            rows.append(_dense(atom.coefs, n))
            rhs.append(atom.rhs)
    _check_box(program, lower, upper)
    A = _frozen(np.array(rows)) if rows else None
    b = _frozen(np.array(rhs) + 0.0) if rows else None
    return _frozen(lower + 0.0), _frozen(upper + 0.0), A, b


def _check_box(program: Program, lower: np.ndarray, upper: np.ndarray) -> None:
    for j in range(lower.shape[0]):
        side = "lower" if lower[j] == -np.inf else "upper" if upper[j] == np.inf else None
        if side is not None:
            op = ">=" if side == "lower" else "<="
            raise program.src.error(program.declared_at[("X", j)].start, (
                f"input 'X_{j}' has no {side} bound, so the input region is unbounded; "
                f"add (assert ({op} X_{j} <number>))"), RegionError)
        if lower[j] > upper[j]:
            raise program.src.error(program.declared_at[("X", j)].start, (
                f"input 'X_{j}' has lower bound {float(lower[j])!r} above upper bound "
                f"{float(upper[j])!r}, so the input region is empty"), RegionError)


def _output_rows(program: Program, atoms: list[int], n: int) -> tuple[np.ndarray, np.ndarray]:
    C = np.array([_dense(program.atoms[i].coefs, n) for i in atoms])
    d = np.array([program.atoms[i].rhs for i in atoms]) + 0.0
    return _frozen(C), _frozen(d)


# ----------------------------------------------------------------------------- helpers


def _dense(coefs: dict[int, float], n: int) -> np.ndarray:
    row = np.zeros(n)
    for j, c in coefs.items():
        row[j] = c
    return row


def _frozen(arr: np.ndarray) -> np.ndarray:
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    arr.setflags(write=False)
    return arr


def _key(*arrays: np.ndarray | None) -> tuple:
    """A hashable key equal for arrays of equal shapes and values."""
    return tuple(None if a is None else (a.shape, a.tobytes()) for a in arrays)
