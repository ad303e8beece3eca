"""What every ``polytrav`` command shares: the exit codes, the one-line bad-input error and
the progress bar.

The command group itself (how an exception becomes a line and an exit code) is in
:mod:`polytrav.interface.cli`; the commands are in ``verify``, ``analysis`` and
``listing`` beside it.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import click

from polytrav.vocabulary.exits import ANSWER_EXIT, EXIT_INTERNAL

__all__ = ["EXIT_HOLDS", "EXIT_VIOLATED", "EXIT_PARTIAL", "EXIT_TIMEOUT", "EXIT_BAD_INPUT",
           "EXIT_INTERNAL", "EXIT_BROKEN_PIPE", "Progress", "fail", "error_message",
           "check_property_path", "SOLVER", "solver_option",
           "strategy_option", "parse_parameters", "proof_written"]

#: Exit codes (:mod:`polytrav.vocabulary.exits`, the one table): holds/complete, violated,
#: unknown or partial, timeout, bad input, a bug.
EXIT_HOLDS, EXIT_VIOLATED, EXIT_PARTIAL, EXIT_TIMEOUT, EXIT_BAD_INPUT = (
    ANSWER_EXIT[a] for a in ("unsat", "sat", "unknown", "timeout", "error"))
#: Exit code when the reader of stdout went away (``| head``): 128 + SIGPIPE, as shells use.
EXIT_BROKEN_PIPE = 141


class Progress:
    """A tqdm bar of polytopes visited, LPs per second and the frontier, on a terminal only."""

    def __init__(self, label: str, enabled: bool):
        self.bar = None
        if enabled:
            from tqdm import tqdm

            self.bar = tqdm(desc=label, unit=" polytopes", file=sys.stderr, leave=False,
                            dynamic_ncols=True, mininterval=0.2)
        self.t0 = time.perf_counter()
        self.seen = 0

    def __call__(self, traversal) -> None:
        if self.bar is None:
            return
        st = traversal.stats
        self.bar.update(st.polytopes - self.seen)
        self.seen = st.polytopes
        if self.bar.n % 50 == 0:
            rate = st.lps / max(time.perf_counter() - self.t0, 1e-9)
            self.bar.set_postfix(lps=st.lps, lps_per_s=f"{rate:.0f}",
                                 frontier=getattr(traversal, "frontier", "-"), refresh=False)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class SolverSpec(click.ParamType):
    """``--solver``: ``NAME`` (the LP backend) or ``FORM=NAME[,FORM=NAME...]`` for the forms
    lp, qp, socp and milp (``lp=highs,qp=osqp``); the value :func:`polytrav.analyze` takes."""

    name = "solver"

    def convert(self, value, param, ctx):
        if not isinstance(value, str) or "=" not in value:
            return value
        from polytrav.host.runner import FORMS  # the forms a run has backend chains for

        out = {}
        for item in value.split(","):
            form, _, backend = item.partition("=")
            form, backend = form.strip(), backend.strip()
            if form not in FORMS or not backend:
                self.fail(f"{item!r} is not FORM=NAME with FORM one of {list(FORMS)} "
                          f"(e.g. lp=highs,qp=osqp)", param, ctx)
            if form in out:
                self.fail(f"{form} is given twice in {value!r}", param, ctx)
            out[form] = backend
        return out


SOLVER = SolverSpec()


def strategy_option(f):
    """The ``--strategy`` option of the commands that enumerate polytopes."""
    return click.option(
        "--strategy", type=click.Choice(["auto", "hierarchical", "subdivision", "seed-faithful"]),
        default="auto", show_default=True,
        help="How to enumerate: auto (subdivision for a box or polyhedron of at most 8 free "
             "inputs, 7 without numba, else the LP traversal), hierarchical (the LP traversal) "
             "or subdivision (cells cut neuron by neuron, no LPs: far faster in 2-8 "
             "dimensions).")(f)


def solver_option(f):
    """The ``--solver`` option of the commands that solve."""
    return click.option(
        "--solver", type=SOLVER, default=None,
        help="Backends: NAME (the LP backend) or FORM=NAME,... for lp, qp, socp, milp "
             "(e.g. lp=highs,qp=osqp; see `polytrav solvers`). Each named backend is tried "
             "first, the other installed ones of its form follow as fallbacks.")(f)


def parse_parameters(tokens) -> dict:
    """``KEY=VALUE`` arguments as parameters: each value read as a TOML value (``1``, ``inf``,
    ``[0.1, 0.2]``, ``"text"``), a bare comma-separated list as an array, else as text."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib

    out = {}
    for token in tokens:
        key, eq, value = token.partition("=")
        if not eq or not key.strip().isidentifier():
            fail(f"analysis parameter {token!r} is not KEY=VALUE (e.g. norm=1 x0=0.1,0.2)")
        key = key.strip()
        if key in out:
            fail(f"analysis parameter {key!r} is given twice")
        for text in (value, f"[{value}]"):
            try:
                out[key] = tomllib.loads(f"v = {text}")["v"]
                break
            except tomllib.TOMLDecodeError:
                continue
        else:
            out[key] = value
    return out


def print_notes(program: str) -> None:
    """From now on, an :class:`~polytrav.vocabulary.errors.InputNote` (part of an input file
    ignored or read in a variant) prints as one line ``<program>: note: ...`` on stderr;
    other warnings as Python prints them."""
    import warnings

    from polytrav.vocabulary.errors import InputNote

    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, InputNote):
            click.echo(f"{program}: note: {message}", err=True)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show


def fail(message: str):
    """Print ``polytrav: error: message`` on stderr and exit with :data:`EXIT_BAD_INPUT`."""
    click.echo(f"polytrav: error: {message}", err=True)
    sys.exit(EXIT_BAD_INPUT)


#: Suffixes of network files (a property given in their place is refused by name).
NETWORK_SUFFIXES = (".onnx", ".nnet")


def check_property_path(path, what: str) -> None:
    """Refuse a network file given where a VNN-LIB property belongs (``what``: ``PROP``,
    ``--vnnlib``), before its text is parsed as VNN-LIB."""
    suffix = Path(path).suffix.lower()
    if suffix in NETWORK_SUFFIXES:
        fail(f"{what} {str(path)!r} is a network file ({suffix}), not a VNN-LIB property; "
             "give the .vnnlib file there")


def error_message(exc: BaseException) -> str:
    """One line for a bad-input exception (file errors without raw ``[Errno N]`` text)."""
    name = getattr(exc, "filename", None)
    if isinstance(exc, FileNotFoundError) and name:
        where = "" if Path(name).is_absolute() else f" (relative paths start at {os.getcwd()})"
        return f"file {str(name)!r} not found{where}"
    if isinstance(exc, IsADirectoryError) and name:
        return f"{str(name)!r} is a folder; give a file"
    if isinstance(exc, PermissionError) and name:
        return f"{str(name)!r}: permission denied"
    if isinstance(exc, OSError) and name:
        return f"{str(name)!r}: {exc.strerror or exc}"
    if type(exc) is OSError and exc.strerror:  # no file named (EIO): what kind of failure
        return (f"a file could not be read or written: {exc.strerror or exc}; check the paths "
                "given and the free space")
    return str(exc)


def proof_written(path, written: dict, uncertified_why: str) -> str:
    """The line every ``--proof`` prints once a certificate is written: its size and leaves,
    those without evidence with ``uncertified_why``.

    >>> proof_written("p.proof", {"bytes": 10, "certified": 3, "uncertified": 1}, "budget")
    'proof: wrote p.proof (10 bytes): 3 leaves with a certificate, 1 without one (budget)'
    """
    text = (f"proof: wrote {path} ({written['bytes']} bytes): {written['certified']} leaves "
            "with a certificate")
    if written["uncertified"]:
        text += f", {written['uncertified']} without one ({uncertified_why})"
    return text
