"""Text of results: numbers, points, activation codes and one result's readable lines.

:func:`describe_result` is what ``print(result)`` shows (and, per result, ``print(report)``,
see :mod:`polytrav.host.summary`): the answer (verdict, value, and what the value covers: the
region when exact, else the polytopes visited or the witness), what the
analysis says about it (:meth:`polytrav.Analysis.describe`), the witness point (its first
coordinates; every one is in ``to_dict()`` / ``--json``), the network's output there and the
activation code of the polytope it lies in (by a forward pass).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from polytrav.vocabulary.results import AnalysisResult, Scope, Verdict

__all__ = ["describe_result", "coverage", "fmt", "vector", "code_string", "code_text", "parse_code",
           "SHOWN", "HEX_CODES_PAST"]

#: Past this many neurons a run spells a code as its packed bits in hex (:func:`code_text`).
HEX_CODES_PAST = 128

#: Coordinates of a point shown in text; the rest are elided (all are in the JSON).
SHOWN = 6
#: Neurons of an activation code shown bit by bit in text; longer codes show counts per layer.
SHOWN_CODE = 64

_VERDICTS = {
    Verdict.HOLDS: "HOLDS",
    Verdict.VIOLATED: "VIOLATED (witness confirmed by a forward pass)",
    Verdict.VIOLATED_UNCONFIRMED: "violated? (a candidate the forward pass did not confirm)",
    Verdict.UNKNOWN: "UNKNOWN",
}


def fmt(value: Any) -> str:
    """A number in 6 significant digits (``none`` for None or a non-finite value)."""
    if value is None:
        return "none"
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.6g}" if np.isfinite(value) else "none"
    return str(value)


def vector(x, shown: int = SHOWN) -> str:
    """``[a, b, c, …]`` with at most ``shown`` coordinates, and the length when elided."""
    x = np.asarray(x, float).reshape(-1)
    head = ", ".join(fmt(v) for v in x[:shown])
    return f"[{head}]" if x.size <= shown else f"[{head}, … {x.size} values]"


def code_string(code, limit: int | None = None) -> str:
    """An activation code as text: ``0``/``1`` per neuron, layers separated by ``|`` (the one
    spelling of a code everywhere: exports, listings, messages); past ``limit`` neurons, the
    count of active neurons per layer instead.

    >>> code_string((np.array([False, True, True]), np.array([True, False])))
    '011|10'
    >>> code_string((np.array([False, True, True]), np.array([True, False])), limit=4)
    '2/3 on | 1/2 on'
    """
    if limit is not None and sum(np.size(c) for c in code) > limit:
        return " | ".join(f"{int(np.sum(c))}/{np.size(c)} on" for c in code)
    return "|".join("".join("1" if b else "0" for b in c) for c in code)


def _value(value) -> str:
    if value is None:
        return "no value"
    if isinstance(value, dict):
        return ", ".join(f"{k} {fmt(v)}" for k, v in value.items() if np.isscalar(v) or v is None)
    return f"value {fmt(value)}"


def coverage(result: AnalysisResult) -> str:
    """What ``result.value`` covers, in words: ``exact``, or why not and what instead."""
    if result.exact:
        return "exact"
    n = result.n_polytopes
    if result.scope is Scope.WITNESS:
        return f"NOT exact: at the witness only, found after {n} polytope(s)"
    why = f"; {len(result.failures)} undecided subproblem(s)" if result.failures else ""
    return f"NOT exact: found over the {n} polytope(s) visited{why}"


def describe_result(result: AnalysisResult, analysis=None, network=None) -> list[str]:
    """The lines of one result (see the module doc)."""
    head = f"{result.analysis}: "
    if result.verdict is not None:
        head += _VERDICTS[result.verdict] + ", "
    head += _value(result.value)
    head += f" ({coverage(result)})"
    lines = [head]
    if analysis is not None:
        lines += ["  " + line for line in analysis.describe(result)]
    if result.witness is not None:
        full = "" if np.size(result.witness) <= SHOWN else (
            " (every coordinate: the result's .witness, or --json)")
        lines.append(f"  witness x = {vector(result.witness)}{full}")
        if network is not None:
            x = np.asarray(result.witness, float)
            y = network.forward(x)
            lines.append(f"  network output there = {vector(y)}")
            lines.append(f"  in the polytope with activation code {code_string(network.activation_code(x), SHOWN_CODE)}")
    lines += [f"  undecided: {f}" for f in result.failures[:3]]
    if len(result.failures) > 3:
        lines.append(f"  … and {len(result.failures) - 3} more undecided")
    return lines


def code_text(code) -> str:
    """An activation code as a run spells it in records and messages: :func:`code_string`, or
    past :data:`HEX_CODES_PAST` neurons ``"0x"`` and its packed bits in hex (unique, short).

    >>> code_text((np.array([False, True, True]), np.array([True, False])))
    '011|10'
    >>> code_text((np.ones(129, bool),))
    '0xffffffffffffffffffffffffffffffff80'
    """
    if sum(np.size(c) for c in code) > HEX_CODES_PAST:
        bits = np.concatenate([np.asarray(c, bool).ravel() for c in code])
        return "0x" + np.packbits(bits).tobytes().hex()
    return code_string(code)


def parse_code(text: str, widths=None) -> tuple[np.ndarray, ...]:
    """The inverse of :func:`code_text`: one bool array per layer; a hex code needs the
    layers' ``widths``.

    >>> layers = parse_code("011|10")
    >>> len(layers), layers[1].tolist()
    (2, [True, False])
    >>> tuple(int(c.sum()) for c in parse_code("0xffffffffffffffffffffffffffffffff80", (100, 29)))
    (100, 29)
    """
    text = str(text)
    if text.startswith("0x"):
        if widths is None:
            raise ValueError("parse_code: a hex code needs its layers' widths")
        bits = np.unpackbits(np.frombuffer(bytes.fromhex(text[2:]), np.uint8)).astype(bool)
        return tuple(np.split(bits[:sum(widths)], np.cumsum(widths)[:-1]))
    return tuple(np.array([c == "1" for c in layer], bool) for layer in text.split("|"))
