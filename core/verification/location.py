"""Positions in a query file for error messages: ``file:line:column`` (1-based).

The official parser (the ``vnnlib`` package) reports syntax errors with a line and a column
(1-based on line 1, 0-based after: a bug of the package, corrected here), semantic errors as
JSON with a line and the offending symbol (the column is found by searching the line), and
keeps no position on the tree. :class:`Source` turns all of these into positions of the file
as written: for a VNN-LIB 1.0 file, through the shim's map from the 2.0 text back to the 1.0
text. Positions are computed only when an error is raised.
"""
from __future__ import annotations

import bisect
import json
import re

import numpy as np

from polytrav.vocabulary.errors import ConfigError

__all__ = ["MAX_DEPTH", "Source", "blank"]

#: Deepest nesting of parentheses accepted (the parser is recursive and crashes far deeper).
MAX_DEPTH = 200

_QUIET = re.compile(r'"(?:[^"\\\n]|\\.)*"|;[^\n]*')
_TOKEN = re.compile(r"\(|\)|[^\s()]+")
_SYNTAX = re.compile(r"Parse error: syntax error at line (\d+), column (\d+): '(.*)'\Z", re.S)
_COMPARISON = re.compile(r"\((?=\s*(?:<=|>=|==|!=|<|>)[\s(])")
_ASSERT = re.compile(r"\((?=\s*assert[\s(])")
_SHOW = 40  # characters of a form shown in a message


def blank(text: str) -> str:
    """``text`` with comments and string literals replaced by spaces (offsets kept)."""
    if ";" not in text and '"' not in text:
        return text
    return _QUIET.sub(lambda m: " " * len(m.group()), text)


class Source:
    """A query file's text and name; ``parsed`` is the text the parser read (the 2.0 text
    of a 1.0 file) and ``back`` maps an offset of ``parsed`` to one of ``text``."""

    def __init__(self, text: str, name: str, parsed: str | None = None, back=None):
        self.text, self.name = text, name
        self.parsed = text if parsed is None else parsed
        self._back = back
        self._lines: dict[str, list[int]] = {}

    # offsets and lines ---------------------------------------------------------

    def _starts(self, text: str) -> list[int]:
        key = "parsed" if text is self.parsed else "text"
        if key not in self._lines:
            self._lines[key] = [0] + [m.end() for m in re.finditer("\n", text)]
        return self._lines[key]

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based line and column of an offset of ``text``."""
        starts = self._starts(self.text)
        line = bisect.bisect_right(starts, offset)
        return line, offset - starts[line - 1] + 1

    def where(self, offset: int) -> str:
        line, col = self.line_col(offset)
        return f"{self.name}:{line}:{col}"

    def error(self, offset: int | None, message: str, cls=ConfigError) -> Exception:
        """``cls("file:line:col: message")`` (``file: message`` when ``offset`` is None)."""
        prefix = self.name if offset is None else self.where(offset)
        return cls(f"{prefix}: {message}")

    def back(self, offset: int) -> int:
        """The offset of ``text`` that an offset of ``parsed`` comes from."""
        return offset if self._back is None else self._back(offset)

    def _parsed_offset(self, line: int, col0: int) -> int:
        starts = self._starts(self.parsed)
        line = min(max(line, 1), len(starts))
        return min(starts[line - 1] + col0, len(self.parsed))

    def token_at(self, offset: int) -> str:
        """The token of ``text`` starting at ``offset`` (``''`` at the end)."""
        m = _TOKEN.match(self.text, offset)
        return m.group() if m else ""

    # the k-th form of a kind -----------------------------------------------------

    def comparison(self, ordinal: int, path: tuple[int, ...] = ()) -> int:
        """The offset in ``text`` of comparison number ``ordinal`` (source order), or of its
        sub-term reached by ``path`` (item indices of the nested lists)."""
        quiet = blank(self.parsed)
        starts = [m.start() for _, m in zip(range(ordinal + 1), _COMPARISON.finditer(quiet))]
        offset = starts[-1] if len(starts) > ordinal else 0
        for item in path:
            items = _items(quiet, offset)
            if item >= len(items):
                break
            offset = items[item]
        return self.back(offset)

    def declaration(self, name: str, version: str) -> int | None:
        """The offset in ``text`` of the name in a variable's declaration (1.0: the
        ``declare-const`` of ``name``; 2.0: ``declare-input/hidden/output``)."""
        kind = "const" if version == "1.0" else "(?:input|hidden|output)"
        m = re.search(rf"\(\s*declare-{kind}\s+({re.escape(name)})(?![^\s()])", blank(self.text))
        return m.start(1) if m else None

    def declared_type(self, name: str) -> str:
        """The element type written in the 2.0 declaration of ``name``."""
        m = re.search(rf"\(\s*declare-(?:input|hidden|output)\s+{re.escape(name)}\s+"
                      r"([^\s()]+)", blank(self.parsed))
        return m.group(1) if m else "unknown"

    def assertion(self, ordinal: int) -> int:
        """The offset in ``text`` of assertion number ``ordinal``."""
        starts = [m.start() for _, m in zip(range(ordinal + 1), _ASSERT.finditer(blank(self.parsed)))]
        return self.back(starts[-1] if starts else 0)

    def show(self, offset: int) -> str:
        """The form or token of ``text`` at ``offset``, quoted and shortened."""
        quiet = blank(self.text)
        if quiet.startswith("(", offset):
            end = _matching(quiet, offset)
            form = " ".join(self.text[offset:end + 1].split())
        else:
            form = self.token_at(offset)
        return repr(form if len(form) <= _SHOW else form[: _SHOW - 4] + " ...")

    # the parser's errors -------------------------------------------------------------

    def package_error(self, exc: Exception) -> ConfigError:
        """The official parser's exception as ``ConfigError("file:line:col: ...")``."""
        text = str(exc).strip()
        m = _SYNTAX.match(text)
        if m:
            line, col, token = int(m.group(1)), int(m.group(2)), m.group(3)
            return self._syntax(line, col - 1 if line == 1 else col, token)
        try:
            report = json.loads(text)
            first = report["errors"][0]
        except (ValueError, KeyError, IndexError, TypeError):
            return ConfigError(f"{self.name}: {text}")
        line, symbol = int(first.get("line", 1)), str(first.get("offendingSymbol", ""))
        start = self._parsed_offset(line, 0)
        end = self.parsed.find("\n", start)
        found = self.parsed.find(symbol, start, len(self.parsed) if end < 0 else end) if symbol else -1
        offset = self.back(found if found >= 0 else start)
        message = first.get("message", first.get("errorCode", "error")).rstrip(".")
        hint = first.get("hint", "")
        shown = repr(self.token_at(offset)) if found >= 0 else repr(symbol)
        shown = "" if f"'{symbol}'" in message else f" {shown}"
        return self.error(offset, f"{message[0].lower()}{message[1:]}{shown}"
                                  + (f": {hint}" if hint else ""))

    def _syntax(self, line: int, col0: int, token: str) -> ConfigError:
        if token == "":  # the end of the input
            unclosed = _unclosed(blank(self.text))
            if unclosed is not None:
                line0, col = self.line_col(unclosed)
                return self.error(len(self.text), f"expected ')' but got end of file (the '(' "
                                                  f"at {line0}:{col} is never closed)")
            return self.error(len(self.text), "unexpected end of file (a query ends with at "
                                              "least one (assert ...))")
        offset = self.back(self._parsed_offset(line, col0))
        if token == "(":  # name the form by its head
            m = _TOKEN.search(blank(self.text), offset + 1)
            offset = m.start() if m else offset
        if token == ")" and _unmatched(blank(self.text), offset):
            return self.error(offset, "unexpected ')' with no matching '('")
        return self.error(offset, f"syntax error at {self.show(offset)}")

    def check_depth(self) -> None:
        """Refuse parentheses nested deeper than :data:`MAX_DEPTH` (before parsing)."""
        quiet = _QUIET.sub("", self.text) if (";" in self.text or '"' in self.text) else self.text
        raw = np.frombuffer(quiet.encode("utf-8", "replace"), np.uint8)
        depth = np.cumsum((raw == 40).astype(np.int32) - (raw == 41))
        if depth.size == 0 or depth.max() <= MAX_DEPTH:
            return
        quiet, level = blank(self.text), 0
        for m in re.finditer(r"[()]", quiet):
            level += 1 if m.group() == "(" else -1
            if level > MAX_DEPTH:
                raise self.error(m.start(), f"parentheses nested deeper than {MAX_DEPTH} levels")


def _matching(quiet: str, start: int) -> int:
    """The offset of the ``)`` closing the ``(`` at ``start`` (the end if none)."""
    level = 0
    for m in re.finditer(r"[()]", quiet[start:]):
        level += 1 if m.group() == "(" else -1
        if level == 0:
            return start + m.start()
    return len(quiet) - 1


def _items(quiet: str, start: int) -> list[int]:
    """Offsets of the items of the list opening at ``start`` (item 0 is its head)."""
    items, level = [], 0
    for m in _TOKEN.finditer(quiet, start + 1):
        tok = m.group()
        if level == 0 and tok != ")":
            items.append(m.start())
        level += 1 if tok == "(" else -1 if tok == ")" else 0
        if level < 0:
            break
    return items


def _unclosed(quiet: str) -> int | None:
    """The offset of the last ``(`` that is never closed, if any."""
    stack: list[int] = []
    for m in re.finditer(r"[()]", quiet):
        if m.group() == "(":
            stack.append(m.start())
        elif stack:
            stack.pop()
    return stack[-1] if stack else None


def _unmatched(quiet: str, offset: int) -> bool:
    """Whether the ``)`` at ``offset`` closes no ``(``."""
    return quiet[:offset + 1].count(")") > quiet[:offset + 1].count("(")
