"""A VNN-LIB query as typed data: its networks and one formula of exact linear comparisons.

:func:`parse_query` reads VNN-LIB 2.0 with the official parser (the ``vnnlib`` package) and
VNN-LIB 1.0 through :mod:`polytrav.verification.vnnlib_shim`. The result, :class:`Query`,
holds

- the networks in declaration order (:class:`QueryNetwork`: name, ``equal_to``,
  ``isomorphic_to``, and its inputs, hidden nodes and outputs as :class:`Variable`: name,
  element type as the standard spells it, shape, ONNX node name of a hidden node);
- the conjunction of all assertions in disjunctive normal form: ``clauses`` (tuples of
  indices into ``atoms``), each :class:`Atom` a linear comparison
  ``sum_i a_i * var[idx] OP c`` with ``OP`` in ``<=, <, >=, >, ==`` (``!=`` becomes the
  disjunction of ``<`` and ``>``). Coefficients and constants are exact
  (:class:`fractions.Fraction` from each literal's text), with float copies for computation.

A product of two variables is refused, naming the position and the term. Every error is a
:class:`~polytrav.vocabulary.errors.ConfigError` with ``file:line:column``; use
:meth:`Query.error` to raise one at an atom or a variable.

Examples
--------
>>> q = parse_query('''(vnnlib-version <2.0>)
... (declare-network f (declare-input X real [1, 2]) (declare-output Y float32 [2]))
... (assert (and (>= X[0,0] -0.5) (<= (* 2.0 X[0,1]) 0.3)))
... (assert (!= Y[0] Y[1]))''')
>>> [(v.name, v.element_type, v.shape) for v in q.networks[0].variables]
[('X', 'real', (1, 2)), ('Y', 'float32', (2,))]
>>> [[str(q.atoms[i]) for i in clause] for clause in q.clauses]
[['X[0,0] >= -1/2', '2*X[0,1] <= 3/10', 'Y[0] - Y[1] < 0'], ['X[0,0] >= -1/2', '2*X[0,1] <= 3/10', 'Y[0] - Y[1] > 0']]
"""
from __future__ import annotations

import gzip
import math
import os
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import product
from os import PathLike
from typing import NamedTuple

from polytrav.verification.location import Source
from polytrav.vocabulary.errors import ConfigError

__all__ = ["MAX_DISJUNCTS", "ELEMENT_TYPES", "Variable", "QueryNetwork", "Term", "Atom",
           "Query", "parse_query", "read_query", "query_version"]

#: Largest number of disjuncts the expansion into disjunctive normal form may produce.
MAX_DISJUNCTS = 100_000

#: The element types of the standard, as it spells them.
ELEMENT_TYPES = ("real", "float16", "float32", "float64", "bfloat16", "float8e4m3fn",
                 "float8e5m2", "float8e4m3fnuz", "float8e5m2fnuz", "float4e2m1", "int8",
                 "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                 "complex64", "complex128", "bool")
_DTYPE = {"Real": "real", "F16": "float16", "F32": "float32", "F64": "float64",
          "BF16": "bfloat16", "F8E4M3FN": "float8e4m3fn", "F8E5M2": "float8e5m2",
          "F8E4M3FNUZ": "float8e4m3fnuz", "F8E5M2FNUZ": "float8e5m2fnuz",
          "F4E2M1": "float4e2m1", "I8": "int8", "I16": "int16", "I32": "int32", "I64": "int64",
          "U8": "uint8", "U16": "uint16", "U32": "uint32", "U64": "uint64",
          "C64": "complex64", "C128": "complex128", "Bool": "bool"}
_OPS = {"LessEqual": "<=", "LessThan": "<", "GreaterEqual": ">=", "GreaterThan": ">",
        "Equal": "==", "NotEqual": "!="}
_ONE, _ZERO = Fraction(1), Fraction(0)


# ----------------------------------------------------------------------------- the model


@dataclass(frozen=True)
class Variable:
    """A declared tensor: an input, a hidden node or an output of one network.

    ``element_type`` is the standard's spelling (``real``, ``float32``, ...; an unknown name
    as written); ``shape`` is ``()`` for a scalar; ``onnx_name`` (hidden nodes only) is the
    ONNX node output it names, quotes stripped.
    """

    name: str
    kind: str  # "input", "hidden" or "output"
    element_type: str
    shape: tuple[int, ...]
    network: str
    onnx_name: str | None = None

    @property
    def size(self) -> int:
        """Number of elements (row-major ``flat`` indices run over ``range(size)``)."""
        return math.prod(self.shape)

    def element(self, index: tuple[int, ...]) -> str:
        """The element's name as written in 2.0: ``X[0,3]`` (``X`` for a scalar)."""
        return f"{self.name}[{','.join(map(str, index))}]" if self.shape else self.name


@dataclass(frozen=True)
class QueryNetwork:
    """A declared network: its name, equivalence (``None`` when absent) and variables,
    each group in declaration order."""

    name: str
    equal_to: str | None
    isomorphic_to: str | None
    inputs: tuple[Variable, ...]
    hidden: tuple[Variable, ...]
    outputs: tuple[Variable, ...]

    @property
    def variables(self) -> tuple[Variable, ...]:
        """Inputs, hidden nodes, outputs: the order of the standard's assignments."""
        return self.inputs + self.hidden + self.outputs


class Term(NamedTuple):
    """``coefficient * variable[index]``; ``flat`` is the row-major index."""

    variable: str
    index: tuple[int, ...]
    flat: int
    coefficient: Fraction
    coefficient_float: float


class Atom(NamedTuple):
    """A linear comparison ``sum(terms) op constant``, ``op`` one of ``<= < >= > ==``.

    ``terms`` have non-zero coefficients, ordered by variable (declaration order) then
    ``flat``; an atom without terms compares two constants. ``origin`` numbers the
    comparison in the file (source order), for positions.
    """

    op: str
    terms: tuple[Term, ...]
    constant: Fraction
    constant_float: float
    origin: int

    def __str__(self) -> str:
        parts = []
        for t in self.terms:
            name = f"{t.variable}[{','.join(map(str, t.index))}]" if t.index else t.variable
            c = t.coefficient
            text = name if abs(c) == 1 else f"{abs(c)}*{name}"
            parts.append(("- " if c < 0 else "+ ") + text if parts else
                         ("-" if c < 0 else "") + text)
        return f"{' '.join(parts) or '0'} {self.op} {self.constant}"


@dataclass(frozen=True, eq=False)
class Query:
    """A parsed query: networks, and the assertions as a DNF over ``atoms``.

    ``version`` is the VNN-LIB version of the file (``"1.0"`` read through the shim, whose
    input is ``X`` and output ``Y`` of the one network ``N``).
    """

    networks: tuple[QueryNetwork, ...]
    atoms: tuple[Atom, ...]
    clauses: tuple[tuple[int, ...], ...]
    version: str
    source: Source = field(repr=False)

    @property
    def variables(self) -> dict[str, Variable]:
        """Every variable by name, in declaration order."""
        return {v.name: v for n in self.networks for v in n.variables}

    @property
    def dnf(self) -> tuple[tuple[Atom, ...], ...]:
        """The clauses as tuples of atoms."""
        return tuple(tuple(self.atoms[i] for i in clause) for clause in self.clauses)

    def where(self, item: Atom | Variable | None) -> int | None:
        """The offset in the file of an atom's comparison or a variable's declaration."""
        if item is None:
            return None
        if isinstance(item, Atom):
            return self.source.comparison(item.origin)
        return self.source.declaration(item.name, self.version)

    def error(self, item: Atom | Variable | None, message: str, cls=ConfigError) -> Exception:
        """``cls("file:line:col: message")`` at ``item`` (``file: message`` for None)."""
        return self.source.error(self.where(item), message, cls)


# ----------------------------------------------------------------------------- reading


def read_query(path: str | PathLike) -> Query:
    """Read a query file (``.vnnlib`` or gzip-compressed ``.vnnlib.gz``; 1.0 or 2.0).

    Raises
    ------
    polytrav.vocabulary.errors.ConfigError
        The file is not VNN-LIB text or not a valid query.
    OSError
        The file cannot be opened.
    """
    source = str(os.fspath(path))
    return parse_query(_read_text(path), source=source)


def query_version(path: str | PathLike) -> str:
    """``"2.0"`` if the file's first form declares VNN-LIB 2.0, else ``"1.0"`` (nothing parsed
    beyond that; errors as :func:`read_query`'s)."""
    from polytrav.verification.vnnlib_shim import is_v1

    return "1.0" if is_v1(_read_text(path)) else "2.0"


def _read_text(path) -> str:
    source = str(os.fspath(path))
    opener = gzip.open if source.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            return fh.read()
    except (UnicodeDecodeError, gzip.BadGzipFile, EOFError) as exc:
        raise ConfigError(f"{source}: not a VNN-LIB text file ({exc})") from exc


def parse_query(text: str, *, source: str = "<string>") -> Query:
    """Parse the text of a query (VNN-LIB 2.0, or 1.0 through the shim).

    Parameters
    ----------
    text : str
        The file's contents.
    source : str
        The name used in messages (``source:line:column: ...``).

    Returns
    -------
    Query

    Raises
    ------
    polytrav.vocabulary.errors.ConfigError
        Syntax, type or declaration errors (the official parser's, with positions), and
        non-linear terms.
    """
    import vnnlib

    from polytrav.verification.vnnlib_shim import convert, is_v1

    if is_v1(text):
        parsed, src, problem = convert(text, source)
        version = "1.0"
        if problem is not None and "(assert" not in parsed:
            raise problem  # nothing asserted: the declarations are the first problem
    else:
        parsed, src, problem, version = text, Source(text, source), None, "2.0"
    src.check_depth()
    try:
        tree = vnnlib.parse_query_string(parsed)
    except vnnlib.VNNLibException as exc:
        raise src.package_error(exc) from None
    if problem is not None:
        raise problem
    return _Builder(tree, src, version).query()


class _NonLinear(Exception):
    """A product of two variable terms; ``path`` is filled in on the way up."""

    def __init__(self):
        super().__init__()
        self.path: list[int] = []


class _Builder:
    """The package's tree to a :class:`Query` (one pass; positions only on error)."""

    def __init__(self, tree, src: Source, version: str):
        self.src, self.version = src, version
        self.networks = tuple(self._network(n) for n in tree.networks)
        self.vars = {v.name: v for n in self.networks for v in n.variables}
        self.rank = {name: k for k, name in enumerate(self.vars)}
        self.strides = {v.name: _strides(v.shape) for v in self.vars.values()}
        self.tree = tree
        self.atoms: list[Atom] = []
        self.exact: dict[str, tuple[Fraction, float]] = {}
        self.ordinal = 0
        import vnnlib

        self.var, self.literals = vnnlib.Var, (vnnlib.Float, vnnlib.Int)

    def _network(self, net) -> QueryNetwork:
        def variables(decls, kind):
            return tuple(Variable(d.name, kind, self._type(d), tuple(d.shape), net.name,
                                  _unquote(d.onnx_name) if kind == "hidden" else None)
                         for d in decls)
        return QueryNetwork(net.name, net.equal_to or None, net.isometric_to or None,
                            variables(net.inputs, "input"), variables(net.hidden, "hidden"),
                            variables(net.outputs, "output"))

    def _type(self, decl) -> str:
        name = _DTYPE.get(decl.dtype.name)
        return name if name is not None else self.src.declared_type(decl.name)

    def query(self) -> Query:
        parts = []
        for k, assertion in enumerate(self.tree.assertions):
            parts.append(self._formula(assertion.expr, k))
        common = [i for dnf in parts if len(dnf) == 1 for i in dnf[0]]
        branching = [dnf for dnf in parts if len(dnf) > 1]
        rest = _conjoin(branching, lambda: self.src.error(
            None, f"the assertions expand to more than {MAX_DISJUNCTS} disjuncts")) \
            if branching else [()]
        clauses = tuple(tuple(common) + c for c in rest)
        return Query(self.networks, tuple(self.atoms), clauses, self.version, self.src)

    def _formula(self, node, k: int) -> list[tuple[int, ...]]:
        kind = type(node).__name__
        if kind == "And":
            return _conjoin([self._formula(a, k) for a in node.args], lambda: self.src.error(
                self.src.assertion(k), f"an assertion expands to more than {MAX_DISJUNCTS} "
                                       "disjuncts"))
        if kind == "Or":
            return [c for a in node.args for c in self._formula(a, k)]
        return self._comparison(node, _OPS[kind])

    def _comparison(self, node, op: str) -> list[tuple[int, ...]]:
        origin = self.ordinal
        self.ordinal += 1
        lhs, rhs = node.lhs, node.rhs
        if type(lhs) is self.var and type(rhs) in self.literals:  # the common bound
            name = lhs.name
            index = tuple(lhs.indices)
            flat = sum(i * s for i, s in zip(index, self.strides[name]))
            constant, value = self._literal(rhs.lexeme)
            return self._atoms(op, (Term(name, index, flat, _ONE, 1.0),), constant, value,
                               origin)
        try:
            coefs, const = self._linear_at(node.lhs, 1)
            rc, rconst = self._linear_at(node.rhs, 2)
        except _NonLinear as exc:
            where = self.src.comparison(origin, tuple(reversed(exc.path)))
            raise self.src.error(where, f"non-linear term: '*' multiplies two terms with "
                                        f"variables; got {self.src.show(where)}") from None
        for key, c in rc.items():
            coefs[key] = coefs.get(key, _ZERO) - c
        constant = rconst - const
        terms = tuple(sorted((Term(name, _unflat(flat, self.vars[name].shape), flat, c, float(c))
                              for (name, flat), c in coefs.items() if c),
                             key=lambda t: (self.rank[t.variable], t.flat)))
        return self._atoms(op, terms, constant, float(constant), origin)

    def _atoms(self, op, terms, constant, value, origin) -> list[tuple[int, ...]]:
        """The DNF of one comparison (``!=``: ``<`` or ``>``), its atoms recorded."""
        if op == "!=":
            first = self._add(Atom("<", terms, constant, value, origin))
            return [(first,), (self._add(Atom(">", terms, constant, value, origin)),)]
        return [(self._add(Atom(op, terms, constant, value, origin)),)]

    def _add(self, atom: Atom) -> int:
        self.atoms.append(atom)
        return len(self.atoms) - 1

    def _linear(self, node) -> tuple[dict, Fraction]:
        """``({(name, flat): coefficient}, constant)`` of an arithmetic term."""
        kind = type(node).__name__
        if kind == "Var":
            name = node.name
            flat = sum(i * s for i, s in zip(node.indices, self.strides[name]))
            return {(name, flat): _ONE}, _ZERO
        if kind in ("Float", "Int"):
            return {}, self._literal(node.lexeme)[0]
        if kind == "Negate":
            coefs, const = self._linear_at(node.expr, 1)
            return {k: -c for k, c in coefs.items()}, -const
        if kind == "Multiply":
            return self._product(node.args)
        if kind == "Plus":
            args, signs = node.args, [1] * len(node.args)
        else:  # Minus: head - rest...
            args = (node.head, *node.rest)
            signs = [1] + [-1] * (len(args) - 1)
        coefs, const = {}, _ZERO
        for k, (arg, sign) in enumerate(zip(args, signs)):
            c2, k2 = self._linear_at(arg, k + 1)
            for key, c in c2.items():
                coefs[key] = coefs.get(key, _ZERO) + (c if sign > 0 else -c)
            const += k2 if sign > 0 else -k2
        return coefs, const

    def _linear_at(self, node, item: int):
        try:
            return self._linear(node)
        except _NonLinear as exc:
            exc.path.append(item)
            raise

    def _product(self, args) -> tuple[dict, Fraction]:
        factor, varying = _ONE, None
        for k, arg in enumerate(args):
            coefs, const = self._linear_at(arg, k + 1)
            if not coefs:
                factor *= const
            elif varying is None:
                varying = (coefs, const)
            else:
                exc = _NonLinear()
                exc.path.append(k + 1)
                raise exc
        if varying is None:
            return {}, factor
        return {key: factor * c for key, c in varying[0].items()}, factor * varying[1]

    def _literal(self, lexeme: str) -> tuple[Fraction, float]:
        """A literal's exact value and its float (cached by text)."""
        value = self.exact.get(lexeme)
        if value is None:
            exact = Fraction(lexeme)
            try:
                value = self.exact[lexeme] = (exact, float(exact))
            except OverflowError:
                where = self.src.comparison(self.ordinal - 1)
                raise self.src.error(where, f"numeric literal {lexeme[:20]!r} overflows to "
                                            "inf") from None
        return value


def _strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


def _unflat(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    index = []
    for size in reversed(shape):
        flat, i = divmod(flat, size)
        index.append(i)
    return tuple(reversed(index))


def _unquote(name: str | None) -> str | None:
    """An ONNX name without its quotes, ``\\" \\\\ \\n \\t`` unescaped."""
    if name is None or len(name) < 2 or name[0] != '"':
        return name
    body, out, k = name[1:-1], [], 0
    escapes = {'"': '"', "\\": "\\", "n": "\n", "t": "\t"}
    while k < len(body):
        if body[k] == "\\" and k + 1 < len(body):
            out.append(escapes.get(body[k + 1], body[k + 1]))
            k += 2
        else:
            out.append(body[k])
            k += 1
    return "".join(out)


def _conjoin(parts: list[list[tuple[int, ...]]], too_many) -> list[tuple[int, ...]]:
    """Distribute a conjunction of DNFs into one DNF (``too_many()`` builds the error)."""
    size = math.prod(len(p) for p in parts)
    if size > MAX_DISJUNCTS:
        raise too_many()
    return [tuple(i for conj in combo for i in conj) for combo in product(*parts)]
