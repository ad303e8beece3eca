"""The hand-written VNN-LIB reader: text to linear constraints in disjunctive normal form.

It tokenises the file into S-expressions, interprets ``declare-const`` and ``assert``
commands, and turns each comparison into one :class:`Atomic` constraint on the inputs ``X``
or the outputs ``Y``; :meth:`Program.disjuncts` expands the conjunction of assertions into
disjunctive normal form. Errors carry ``file:line:column`` (:class:`Source`). The supported
syntax is listed in :mod:`polytrav.verification.vnnlib`, which turns the constraints into
input regions and unsafe output sets.
"""
from __future__ import annotations

import bisect
import math
import re
from itertools import product

from polytrav.vocabulary.errors import ConfigError

__all__ = ["MAX_DISJUNCTS", "MAX_DEPTH", "Source", "Atomic", "Program", "read_program"]

#: Largest number of disjuncts the expansion into disjunctive normal form may produce.
MAX_DISJUNCTS = 100_000
#: Deepest nesting of parentheses accepted (keeps the recursive interpreter within bounds).
MAX_DEPTH = 200

_TOKEN = re.compile(r"\(|\)|;[^\n]*|[^\s();]+")
_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?\Z")
_NUMBERISH = re.compile(r"[-+]?\.?\d")
_NONFINITE = {"nan", "inf", "infinity"}
_VARIABLE = re.compile(r"([XY])_(0|[1-9]\d*)\Z")
_COMPARISONS = {"<=": 1.0, "<": 1.0, ">=": -1.0, ">": -1.0}
_SHOW = 40  # characters of a list shown in a message


# ----------------------------------------------------------------------------- S-expressions


class Source:
    """The text and its name; turns offsets into ``line:column`` for messages."""

    def __init__(self, text: str, name: str):
        self.text, self.name = text, name
        self._starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line_col(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self._starts, offset)
        return line, offset - self._starts[line - 1] + 1

    def where(self, offset: int) -> str:
        line, col = self.line_col(offset)
        return f"{self.name}:{line}:{col}"

    def error(self, offset: int | None, message: str, cls=ConfigError) -> Exception:
        prefix = self.name if offset is None else self.where(offset)
        return cls(f"{prefix}: {message}")


class _Atom:
    """A symbol or number token at ``start``."""

    __slots__ = ("text", "start")

    def __init__(self, text: str, start: int):
        self.text, self.start = text, start

    def show(self) -> str:
        return repr(self.text)


class _List:
    """A parenthesised list from ``start`` (its ``(``) to ``end`` (its ``)``)."""

    __slots__ = ("items", "start", "end")

    def __init__(self, start: int):
        self.items: list = []
        self.start, self.end = start, start

    def show(self) -> str:
        text = "(" + " ".join(_render(i) for i in self.items) + ")"
        return repr(text if len(text) <= _SHOW else text[: _SHOW - 4] + " ...")


def _render(node) -> str:
    if isinstance(node, _Atom):
        return node.text
    return "(" + " ".join(_render(i) for i in node.items) + ")"


def _read_forms(src: Source) -> list[_List]:
    """Tokenise (skipping ``;`` comments) and group the tokens into top-level lists."""
    top: list = []
    stack: list[_List] = []
    for m in _TOKEN.finditer(src.text):
        tok = m.group()
        if tok == "(":
            if len(stack) >= MAX_DEPTH:
                raise src.error(m.start(), f"parentheses nested deeper than {MAX_DEPTH} levels")
            node = _List(m.start())
            (stack[-1].items if stack else top).append(node)
            stack.append(node)
        elif tok == ")":
            if not stack:
                raise src.error(m.start(), "unexpected ')' with no matching '('")
            stack.pop().end = m.start()
        elif tok[0] != ";":
            if not stack:
                raise src.error(m.start(), f"expected '(' but got {tok!r}")
            stack[-1].items.append(_Atom(tok, m.start()))
    if stack:
        line, col = src.line_col(stack[-1].start)
        raise src.error(len(src.text), f"expected ')' but got end of file (the '(' at "
                                       f"{line}:{col} is never closed)")
    if not top:
        raise src.error(0, "expected '(declare-const ...)' or '(assert ...)' but got end of "
                           "file (the file is empty)")
    return top

# ----------------------------------------------------------------------------- linear terms


class _Linear:
    """``sum(coefs[v] * v) + const`` over variable keys ``("X", i)`` / ``("Y", j)``."""

    __slots__ = ("coefs", "const")

    def __init__(self, coefs: dict, const: float):
        self.coefs, self.const = coefs, const

    def scaled(self, factor: float) -> "_Linear":
        return _Linear({k: factor * c for k, c in self.coefs.items()}, factor * self.const)

    def plus(self, other: "_Linear", sign: float = 1.0) -> "_Linear":
        coefs = dict(self.coefs)
        for k, c in other.coefs.items():
            coefs[k] = coefs.get(k, 0.0) + sign * c
        return _Linear(coefs, self.const + sign * other.const)


class Atomic:
    """One linear constraint ``sum(coefs[i] * kind_i) <= rhs`` on a single kind of variable."""

    __slots__ = ("kind", "coefs", "rhs")

    def __init__(self, kind: str, coefs: dict, rhs: float):
        self.kind, self.coefs, self.rhs = kind, coefs, rhs

# ----------------------------------------------------------------------------- interpretation


class Program:
    """Declarations and assertions, interpreted command by command."""

    def __init__(self, src: Source):
        self.src = src
        self.symbols: dict[str, tuple[str, int]] = {}
        self.declared_at: dict[tuple[str, int], _Atom] = {}
        self.atoms: list[Atomic] = []
        self.asserts: list[list[tuple[int, ...]]] = []

    def error(self, node, message: str) -> ConfigError:
        return self.src.error(node.start, message)

    # commands ---------------------------------------------------------------

    def command(self, form: _List) -> None:
        head = self._head(form, "a command")
        if head.text == "declare-const":
            self._declare(form)
        elif head.text == "assert":
            operand = self._operands(form, 1, "a formula")[0]
            self.asserts.append(self._formula(operand))
        else:
            raise self.error(head, f"unknown command {head.text!r} (expected declare-const "
                                   "or assert)")

    def _head(self, form: _List, what: str) -> _Atom:
        if not form.items:
            raise self.src.error(form.end, f"expected {what} but got ')' (empty list)")
        head = form.items[0]
        if not isinstance(head, _Atom):
            raise self.error(head, f"expected an operator name but got {head.show()}")
        return head

    def _operands(self, form: _List, count: int, what: str) -> list:
        """Exactly ``count`` operands after the head, else an error at the first misfit."""
        ops = form.items[1:]
        if len(ops) < count:
            raise self.src.error(form.end, f"expected {what} but got ')' "
                                           f"({form.items[0].text} takes {count} operand"
                                           f"{'s' if count > 1 else ''})")
        if len(ops) > count:
            raise self.error(ops[count], f"expected ')' but got {ops[count].show()}")
        return ops

    def _declare(self, form: _List) -> None:
        name, sort = self._operands(form, 2, "a name and a sort")
        if not isinstance(name, _Atom):
            raise self.error(name, f"expected a variable name but got {name.show()}")
        match = _VARIABLE.match(name.text)
        if match is None:
            raise self.error(name, f"variable names must be X_<i> (inputs) or Y_<j> (outputs), "
                                   f"got {name.show()}")
        if name.text in self.symbols:
            first = self.src.where(self.declared_at[self.symbols[name.text]].start)
            raise self.error(name, f"{name.show()} is declared twice (first at {first})")
        if not isinstance(sort, _Atom) or sort.text != "Real":
            raise self.error(sort, f"expected sort 'Real' but got {sort.show()}")
        key = (match.group(1), int(match.group(2)))
        self.symbols[name.text] = key
        self.declared_at[key] = name

    # formulas -----------------------------------------------------------------

    def _formula(self, node) -> list[tuple[int, ...]]:
        """The formula in disjunctive normal form: a list of conjunctions of atom indices."""
        if not isinstance(node, _List):
            raise self.error(node, f"expected a comparison, 'and' or 'or' but got {node.show()}")
        head = self._head(node, "a formula")
        op = head.text
        if op in _COMPARISONS:
            return [(self._comparison(node, _COMPARISONS[op]),)]
        if op not in ("and", "or"):
            hint = " (equalities are not supported)" if op == "=" else ""
            raise self.error(head, f"unknown operator {op!r}{hint}; expected <=, >=, <, >, "
                                   "and or or")
        if len(node.items) < 2:
            raise self.src.error(node.end, f"expected a formula but got ')' ({op!r} needs at "
                                           "least one operand)")
        parts = [self._formula(child) for child in node.items[1:]]
        if op == "or":
            return [conj for part in parts for conj in part]
        return _conjoin(parts, lambda: self.error(node, f"'and' expands to more than "
                                                        f"{MAX_DISJUNCTS} disjuncts"))

    def _comparison(self, node: _List, sign: float) -> int:
        """Record ``lhs <= rhs`` (``sign`` 1) or ``lhs >= rhs`` (``sign`` -1); its atom index."""
        lhs, rhs = self._operands(node, 2, "a term")
        expr = self._term(lhs).plus(self._term(rhs), -1.0).scaled(sign)
        coefs = {k: c for k, c in expr.coefs.items() if c != 0.0}
        kinds = {k[0] for k in coefs}
        if not kinds:
            raise self.error(node, f"comparison {node.show()} has no variable left")
        if len(kinds) > 1:
            raise self.error(node, f"comparison {node.show()} mixes inputs X_i and outputs Y_j; "
                                   "only constraints on one kind are supported")
        kind = kinds.pop()
        coefs = {k[1]: c for k, c in coefs.items()}
        self.atoms.append(Atomic(kind, coefs, 0.0 - expr.const))
        return len(self.atoms) - 1

    def _term(self, node) -> _Linear:
        if isinstance(node, _Atom):
            return self._atom_term(node)
        head = self._head(node, "a term")
        args = node.items[1:]
        if head.text not in ("+", "-", "*"):
            raise self.error(head, f"unknown operator {head.text!r} in a term (expected +, - or *)")
        if not args:
            raise self.src.error(node.end, f"expected a term but got ')' ({head.text!r} needs at "
                                           "least one operand)")
        terms = [self._term(a) for a in args]
        if head.text == "*":
            return self._product(args, terms)
        if head.text == "-" and len(terms) == 1:
            return terms[0].scaled(-1.0)
        out = terms[0]
        for t in terms[1:]:
            out = out.plus(t, 1.0 if head.text == "+" else -1.0)
        return out

    def _product(self, args: list, terms: list[_Linear]) -> _Linear:
        factor, varying = 1.0, None
        for arg, term in zip(args, terms):
            if not term.coefs:
                factor *= term.const
            elif varying is None:
                varying = term
            else:
                raise self.error(arg, f"non-linear term: '*' multiplies two terms with variables; "
                                      f"got {arg.show()}")
        if not math.isfinite(factor):
            raise self.error(args[0], "product of constants overflows to inf")
        return _Linear({}, factor) if varying is None else varying.scaled(factor)

    def _atom_term(self, node: _Atom) -> _Linear:
        text = node.text
        if _NUMBER.match(text):
            value = float(text)
            if not math.isfinite(value):
                raise self.error(node, f"numeric literal {text!r} overflows to inf")
            return _Linear({}, value)
        if text.lstrip("+-").lower() in _NONFINITE:
            raise self.error(node, f"non-finite literal {text!r} (NaN and inf are not allowed)")
        if _NUMBERISH.match(text):
            raise self.error(node, f"malformed number {text!r}")
        key = self.symbols.get(text)
        if key is None:
            raise self.error(node, f"undeclared variable {text!r}; declare it with "
                                   f"(declare-const {text} Real) before use")
        return _Linear({key: 1.0}, 0.0)

    # declarations and disjuncts -----------------------------------------------

    def count_declared(self, kind: str, what: str, expected: int | None) -> int:
        """The number of ``kind`` variables (``"X"`` or ``"Y"``): declared without gaps, and
        ``expected`` many if given."""
        indices = sorted(i for k, i in self.declared_at if k == kind)
        n = len(indices)
        if n == 0:
            raise self.src.error(None, f"declares no {what} variables {kind}_0, {kind}_1, ...")
        if indices[-1] != n - 1:
            missing = next(i for i, j in enumerate(indices) if i != j)
            raise self.src.error(None, f"{what}s must be {kind}_0 .. {kind}_{indices[-1]} "
                                       f"without gaps, but {kind}_{missing} is not declared")
        if expected is not None and n != expected:
            raise self.src.error(None, f"declares {n} {what}s ({kind}_0 .. {kind}_{n - 1}) but "
                                       f"the network has {expected} {what}s; is this the "
                                       "property of another network?")
        return n

    def disjuncts(self) -> list[tuple[int, ...]]:
        """The conjunction of all assertions in disjunctive normal form (atom indices)."""
        common = [i for dnf in self.asserts if len(dnf) == 1 for i in dnf[0]]
        branching = [dnf for dnf in self.asserts if len(dnf) > 1]
        rest = _conjoin(branching, lambda: self.src.error(
            None, f"the assertions expand to more than {MAX_DISJUNCTS} disjuncts")) \
            if branching else [()]
        return [tuple(common) + conj for conj in rest]


def _conjoin(parts: list[list[tuple[int, ...]]], too_many) -> list[tuple[int, ...]]:
    """Distribute a conjunction of DNFs into one DNF (``too_many()`` builds the error)."""
    size = math.prod(len(p) for p in parts)
    if size > MAX_DISJUNCTS:
        raise too_many()
    return [tuple(i for conj in combo for i in conj) for combo in product(*parts)]


def read_program(text: str, source: str) -> Program:
    """Read and interpret the text of a VNN-LIB file (``source`` names it in errors)."""
    src = Source(text, source)
    forms = _read_forms(src)
    program = Program(src)
    for form in forms:
        program.command(form)
    return program
