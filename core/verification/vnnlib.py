"""VNN-LIB properties of one network as input regions and unsafe output sets (``VnnlibSpec``).

A VNN-LIB 1.0 file (VNN-COMP 2021-2024) declares real inputs ``X_0 .. X_{n-1}`` and outputs
``Y_0 .. Y_{m-1}`` with ``(declare-const NAME Real)``; a 2.0 query declares one network with
typed, shaped inputs and outputs. The conjunction of all assertions describes the
*counterexamples*: constraints on the inputs give the input region and constraints on the
outputs the **unsafe** output set, so ``sat`` means the property is violated.

The file is read into a :class:`~polytrav.verification.query.Query` (the official parser;
1.0 through the shim). Inputs and outputs are flattened row-major (several input tensors are
concatenated in declaration order, as are outputs). The strict comparisons ``<`` and ``>``
are read as ``<=`` and ``>=``: the traversal works with closed sets, which differ only on the
boundary (VNN-COMP's own tooling does the same); ``==`` gives two rows. A query over several
networks or with hidden nodes is refused here (see :mod:`polytrav.verification.query`).

The reader expands the conjunction of assertions into disjunctive normal form. Each disjunct
splits into input constraints, which must bound every input (a box, plus optional general rows
``A x <= b``), and a conjunction of output constraints ``C y <= d``. Disjuncts with the same
input region are grouped into one :class:`VnnlibCase`, whose ``unsafe`` set is the
disjunction of their output conjunctions.

Errors in the file raise :class:`~polytrav.vocabulary.errors.ConfigError` with ``file:line:column`` and
the offending token; an input region that is unbounded or empty raises
:class:`~polytrav.vocabulary.errors.RegionError`.


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
>>> parse_vnnlib("(declare-const X_0 Real)\\n(declare-const Y_0 Real)\\n"
...              "(assert (<= X_0 X_1))", source="p.vnnlib")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
polytrav.vocabulary.errors.ConfigError: p.vnnlib:3:17: undeclared variable 'X_1': ...
"""
from __future__ import annotations

from dataclasses import dataclass
from os import PathLike

import numpy as np

from polytrav.model.region import Box, Polyhedron, Region
# MAX_DISJUNCTS and MAX_DEPTH are re-exported: the reader's limits
from polytrav.verification.location import MAX_DEPTH  # noqa: F401
from polytrav.verification.query import (MAX_DISJUNCTS, Atom, Query,  # noqa: F401
                                         Variable, parse_query, read_query)
from polytrav.vocabulary.errors import RegionError

__all__ = ["VnnlibSpec", "VnnlibCase", "read_vnnlib", "parse_vnnlib", "spec_of"]


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

    def property(self, mode: str = "verify", bounds: bool = True, bab: bool = True, pm=None,
                 split: bool = True, confirm=None, recorder=None):
        """The unsafe set as the registered ``linear_property`` analysis (the built-in
        :class:`~polytrav.plugins.linear_property.LinearProperty`, looked up by name).

        Parameters
        ----------
        mode : {"verify", "all"}, bounds : bool, bab : bool, split : bool, confirm : callable
            Passed on to the analysis.
        recorder : optional
            A proof's record of the case (:mod:`polytrav.proof.record`), passed on when
            given (default None: nothing is recorded).
        pm : plugin manager, optional
            The registry to look the analysis up in (default: a fresh one).

        Returns
        -------
        Analysis
        """
        from polytrav.host.manager import create_analysis

        extra = {} if recorder is None else {"recorder": recorder}
        return create_analysis("linear_property", pm=pm, unsafe=list(self.unsafe), mode=mode,
                               bounds=bounds, bab=bab, split=split, confirm=confirm, **extra)


@dataclass(frozen=True, eq=False)
class VnnlibSpec:
    """A parsed VNN-LIB file: the property is violated iff some case has a counterexample.

    Attributes
    ----------
    n_inputs, n_outputs : int
        Number of inputs and outputs (declared ``X_i`` and ``Y_j``; 2.0: elements of the
        input and output tensors).
    cases : tuple of VnnlibCase
        One per distinct input region, in order of first appearance.
    """

    n_inputs: int
    n_outputs: int
    cases: tuple[VnnlibCase, ...]


# ----------------------------------------------------------------------------- public functions


def read_vnnlib(path: str | PathLike, *, n_inputs: int | None = None,
                n_outputs: int | None = None) -> VnnlibSpec:
    """Read a VNN-LIB file (``.vnnlib``, or gzip-compressed ``.vnnlib.gz``; 1.0 or 2.0).

    Parameters
    ----------
    path : str or path-like
        The file; its name prefixes every error message.
    n_inputs, n_outputs : int, optional
        The network's input and output sizes; if given, the file must declare exactly that
        many inputs and outputs.

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
    return spec_of(read_query(path), n_inputs, n_outputs)


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
    return spec_of(parse_query(text, source=source), n_inputs, n_outputs)


# ----------------------------------------------------------------------------- building cases


class _Layout:
    """Where each input and output element sits in the flat vectors, and its name."""

    def __init__(self, query: Query, variables: tuple[Variable, ...], what: str,
                 expected: int | None):
        self.query, self.variables = query, variables
        self.offset, n = {}, 0
        for v in variables:
            self.offset[v.name] = n
            n += v.size
        self.n = n
        if expected is not None and n != expected:
            raise query.error(None, f"declares {n} {what}s ({self.span()}) but the network has "
                                    f"{expected} {what}s; is this the property of another "
                                    "network?")

    def span(self) -> str:
        if self.query.version == "1.0":
            name = self.variables[0].name
            return f"{name}_0 .. {name}_{self.n - 1}"
        return ", ".join(f"{v.name} of shape {list(v.shape)}" for v in self.variables)

    def locate(self, j: int) -> tuple[int | None, str]:
        """The offset of the declaration of flat element ``j``, and the element's name."""
        for v in self.variables:
            k = j - self.offset[v.name]
            if 0 <= k < v.size:
                v1 = self.query.version == "1.0"
                name = f"{v.name}_{k}" if v1 else v.element(_unflat(k, v.shape))
                return self.query.source.declaration(name if v1 else v.name,
                                                     self.query.version), name
        raise IndexError(j)

    def row(self, atom: Atom) -> np.ndarray:
        row = np.zeros(self.n)
        for t in atom.terms:
            row[self.offset[t.variable] + t.flat] = t.coefficient_float
        return row


def spec_of(query: Query, n_inputs: int | None = None,
            n_outputs: int | None = None) -> VnnlibSpec:
    """The :class:`VnnlibSpec` of a one-network query without hidden nodes.

    Raises
    ------
    polytrav.vocabulary.errors.ConfigError, polytrav.vocabulary.errors.RegionError
        As in :func:`read_vnnlib`; also for several networks, hidden nodes, or element types
        other than ``real`` and floating point.
    """
    _check_supported(query)
    net = query.networks[0]
    inputs = _Layout(query, net.inputs, "input", n_inputs)
    outputs = _Layout(query, net.outputs, "output", n_outputs)
    kinds = {v.name: v.kind for v in net.variables}
    v1 = query.version == "1.0"
    kind_of: list[str] = []
    for atom in query.atoms:
        found = {kinds[t.variable] for t in atom.terms}
        if not found:
            raise query.error(atom, f"comparison {query.source.show(query.where(atom))} has no "
                                    "variable left")
        if len(found) > 1:
            raise query.error(atom, f"comparison {query.source.show(query.where(atom))} mixes "
                                    f"inputs{' X_i' if v1 else ''} and outputs"
                                    f"{' Y_j' if v1 else ''}; only constraints on one kind are "
                                    f"supported")
        kind_of.append(found.pop())
    if "output" not in kind_of:
        out, example = ("an output Y_j", "Y_0 Y_1") if v1 else ("an output", "<output> 0.0")
        raise query.error(None, f"no assertion constrains {out}, so the unsafe set is not "
                                f"stated; add e.g. (assert (>= {example}))")
    regions: dict[tuple[int, ...], tuple] = {}
    cases: dict[tuple, tuple[tuple, dict]] = {}
    for k, clause in enumerate(query.clauses):
        ins = tuple(i for i in clause if kind_of[i] == "input")
        outs = [i for i in clause if kind_of[i] == "output"]
        if not outs:
            raise query.error(None, f"disjunct {k} of the assertions (in disjunctive normal "
                                    f"form) constrains no output{' Y_j' if v1 else ''}; every "
                                    "input of its region "
                                    "would be a counterexample")
        if ins not in regions:
            regions[ins] = _input_region(query, inputs, [query.atoms[i] for i in ins])
        region = regions[ins]
        C, d = _rows(outputs, [query.atoms[i] for i in outs])
        unsafe = cases.setdefault(_key(*region), (region, {}))[1]
        unsafe.setdefault(_key(C, d), (C, d))  # drop repeated conjunctions
    return VnnlibSpec(inputs.n, outputs.n, tuple(
        VnnlibCase(*region, tuple(unsafe.values())) for region, unsafe in cases.values()))


def _check_supported(query: Query) -> None:
    if len(query.networks) != 1:
        raise query.error(None, f"declares {len(query.networks)} networks; read_vnnlib reads "
                                "one-network queries only (not supported by read_vnnlib yet; "
                                "use polytrav.verification.query.read_query)")
    net = query.networks[0]
    if net.hidden:
        raise query.error(net.hidden[0], f"declares hidden node {net.hidden[0].name!r}; "
                                         "hidden nodes are not supported by read_vnnlib yet")
    for v in net.inputs + net.outputs:
        if v.element_type != "real" and not v.element_type.startswith(("float", "bfloat")):
            raise query.error(v, f"{v.kind} {v.name!r} has element type {v.element_type!r}; "
                                 "read_vnnlib reads real and floating-point types only")


def _signed(atom: Atom) -> list[float]:
    """The signs turning ``atom`` into ``<=`` rows (``==``: two rows)."""
    return {"<=": [1.0], "<": [1.0], ">=": [-1.0], ">": [-1.0], "==": [1.0, -1.0]}[atom.op]


def _input_region(query: Query, layout: _Layout, atoms: list[Atom]) -> tuple:
    """``(lower, upper, A, b)`` of the input atoms of one disjunct (checked bounded, not empty)."""
    n = layout.n
    lower, upper = np.full(n, -np.inf), np.full(n, np.inf)
    rows, rhs = [], []
    for atom in atoms:
        for sign in _signed(atom):
            if len(atom.terms) == 1:
                t = atom.terms[0]
                j, c = layout.offset[t.variable] + t.flat, sign * t.coefficient_float
                bound = (sign * atom.constant_float) / c
                if c > 0:
                    upper[j] = min(upper[j], bound)
                else:
                    lower[j] = max(lower[j], bound)
            else:
                rows.append(sign * layout.row(atom))
                rhs.append(sign * atom.constant_float)
    _check_box(query, layout, lower, upper)
    A = _frozen(np.array(rows) + 0.0) if rows else None
    b = _frozen(np.array(rhs) + 0.0) if rows else None
    return _frozen(lower + 0.0), _frozen(upper + 0.0), A, b


def _check_box(query: Query, layout: _Layout, lower: np.ndarray, upper: np.ndarray) -> None:
    bad = np.flatnonzero(np.isinf(lower) | np.isinf(upper) | (lower > upper))
    if not bad.size:
        return
    j = int(bad[0])
    at, name = layout.locate(j)
    side = "lower" if lower[j] == -np.inf else "upper" if upper[j] == np.inf else None
    if side is not None:
        op = ">=" if side == "lower" else "<="
        raise query.source.error(at, f"input {name!r} has no {side} bound, so the input region "
                                    f"is unbounded; add (assert ({op} {name} <number>))",
                          RegionError)
    raise query.source.error(at, f"input {name!r} has lower bound {float(lower[j])!r} above upper "
                                f"bound {float(upper[j])!r}, so the input region is empty",
                      RegionError)


def _rows(layout: _Layout, atoms: list[Atom]) -> tuple[np.ndarray, np.ndarray]:
    C, d = [], []
    for atom in atoms:
        for sign in _signed(atom):
            C.append(sign * layout.row(atom))
            d.append(sign * atom.constant_float)
    return _frozen(np.array(C) + 0.0), _frozen(np.array(d) + 0.0)


# ----------------------------------------------------------------------------- helpers


def _unflat(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else ()


def _frozen(arr: np.ndarray) -> np.ndarray:
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    arr.setflags(write=False)
    return arr


def _key(*arrays: np.ndarray | None) -> tuple:
    """A hashable key equal for arrays of equal shapes and values."""
    return tuple(None if a is None else (a.shape, a.tobytes()) for a in arrays)
