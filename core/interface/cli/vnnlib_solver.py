"""``polytrav-vnnlib``: the solver command line of VNN-LIB 2.0 (chapter 5).

::

    polytrav-vnnlib (--name | --version)
    polytrav-vnnlib verify QUERY [--network NAME=FILE]... [--timeout SECONDS] [--route diff|stack]
    polytrav-vnnlib supports --CAPABILITY          (alias: capabilities)

``verify`` prints exactly one of ``sat``, ``unsat``, ``unknown``, ``timed-out`` on the first
line of stdout, and for ``sat`` the assignment of §5.3.1; nothing else goes to stdout. The
answer comes before ``--timeout`` seconds have passed since the process started (a float is
accepted: test harnesses send ``5.0``). ``supports`` prints one item per line (see
:data:`polytrav.verification.standard.CAPABILITIES`).

Errors go to stderr as ``polytrav-vnnlib: message`` with nothing on stdout. Exit codes (the
standard defines none; these follow its reference solver): 0 a result was printed (whatever
it is), 1 a usage error or a query, mapping or model the standard says to refuse (§5.3.2) or
polytrav cannot read, 2 an internal error (a bug: the traceback follows the message), 130
Ctrl-C before the answer (128 + SIGINT, as shells report it; one line on stderr, nothing on
stdout); a Ctrl-C once the answer is being printed is ignored.
"""
from __future__ import annotations

import math
import sys
import traceback
from pathlib import Path

import click

from polytrav.interface.console import answered, since_start
from polytrav.verification.standard import CAPABILITIES, capability_lines

__all__ = ["main", "cli"]

#: Seconds kept back from ``--timeout`` for printing, the witness check and exit.
_RESERVE = 0.3
#: Share of ``--timeout`` kept back as well (process start-up varies on a loaded machine).
_RESERVE_SHARE = 0.05
EXIT_ANSWERED, EXIT_REFUSED, EXIT_INTERNAL = 0, 1, 2
#: Exit code of Ctrl-C before the answer (128 + SIGINT).
EXIT_INTERRUPTED = 130
#: The standard's words where they are not polytrav's :class:`~polytrav.Answer` values
#: (VNN-LIB 2.0 prints ``timed-out``); used only where this command prints.
_WORDS = {"timeout": "timed-out"}


def _out(lines: list[str]) -> None:
    answered()  # the answer goes out whole: Ctrl-C is ignored from here on
    sys.stdout.buffer.write("".join(line + "\n" for line in lines).encode())
    sys.stdout.flush()


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--name", "show_name", is_flag=True, help="Print the solver's name.")
@click.option("--version", "show_version", is_flag=True, help="Print the solver's version.")
@click.pass_context
def cli(ctx, show_name, show_version) -> None:
    """polytrav as a VNN-LIB 2.0 solver (chapter 5 of the standard)."""
    if ctx.invoked_subcommand is None:
        if show_name == show_version:
            raise click.UsageError("give --name, --version, or a command (verify, supports); -h "
                                   "shows the help")
        from importlib.metadata import version

        _out(["polytrav" if show_name else version("polytrav")])


@cli.command(context_settings={"allow_interspersed_args": True})
@click.argument("query", type=click.Path(dir_okay=False))
@click.option("--network", "networks", multiple=True, metavar="NAME=FILE",
              help="The model file of a declared network (once per network not equal-to "
                   "another).")
@click.option("--timeout", type=float, default=None,
              help="Seconds from the process start (VNN-COMP's convention).")
@click.option("--route", type=click.Choice(["diff", "stack"]), default="diff",
              help="A two-network |Y_g - Y_f| > eps query: polytrav.diff over the joint "
                   "partition (default), or the stacked network.")
@click.option("--serialise-assignments", "--assignments", "serialise", default=None,
              hidden=True, help="Not supported (supports --serialise-assignments: false).")
@click.option("--proof", type=click.Path(dir_okay=False), default=None,
              help="Write a certificate of an unsat to this file, for polytrav check-proof "
                   "NETWORK QUERY FILE (a one-network query read as real numbers).")
def verify(query, networks, timeout, route, serialise, proof) -> None:
    """Decide QUERY: print sat (with the assignment), unsat, unknown or timed-out."""
    from polytrav.verification.query import read_query
    from polytrav.verification.standard import check_mapping, decide

    if serialise is not None:
        raise click.UsageError("--serialise-assignments is not supported (supports "
                               "--serialise-assignments prints false); the assignment is "
                               "printed on stdout")
    if timeout is not None and not (math.isfinite(timeout) and timeout >= 0):
        raise click.UsageError(f"--timeout must be zero or more seconds, not {timeout:g}")
    mapping: dict[str, str] = {}
    for token in networks:
        name, sep, path = token.partition("=")
        if not sep or not name or not path:
            raise click.UsageError(f"--network takes <name>=<filepath>; {token!r} is not a "
                                   "network name and a file path separated by '='")
        if name in mapping:
            raise click.UsageError(f"--network maps {name!r} more than once; each declared "
                                   "network takes exactly one model file")
        mapping[name] = path
    if not Path(query).is_file():
        raise click.UsageError(f"query file does not exist: {query}")
    parsed = read_query(query)
    name = Path(query).name
    models = check_mapping(parsed, mapping, name)
    left = None if timeout is None else timeout * (1 - _RESERVE_SHARE) - _RESERVE - since_start()
    if left is not None and left <= 0:
        _out([_WORDS["timeout"]])
        return
    if proof is not None:
        from polytrav.interface.export import check_writable

        check_writable(proof, "--proof")
    decision = decide(parsed, models, timeout=left, query_name=name, route=route, proof=proof)
    if decision.answer != "sat":
        word = _WORDS.get(decision.answer, decision.answer.value)
        _out([word])
        if decision.reason:
            click.echo(f"polytrav-vnnlib: {word}: {decision.reason}", err=True)
        if proof is not None:
            click.echo(f"polytrav-vnnlib: {_proof_note(decision, query, models, proof)}",
                       err=True)
        return
    from polytrav.verification.assignment import render_assignment

    if proof is not None:
        click.echo(f"polytrav-vnnlib: {_proof_note(decision, query, models, proof)}", err=True)
    text = render_assignment(parsed, decision.witness.values)
    answered()
    sys.stdout.buffer.write(("sat\n" + text).encode())
    sys.stdout.flush()


def _proof_note(decision, query, models, path) -> str:
    """What ``--proof`` wrote; a certificate that ``check-proof NETWORK QUERY`` would not
    read as written (the query compiles to another network or property: several networks,
    hidden nodes, float32 semantics) is removed, and the line says so."""
    info = decision.proof
    if info is None:
        why = (f"the answer is {decision.answer}" if decision.answer != "unsat" else
               f"the {decision.route} route carries no certificate yet, or the query is "
               "float32 (its widened unsafe set is not the file's)")
        return f"proof: none written to {path}: {why}"
    from polytrav.model.network import Network
    from polytrav.proof.check import network_digest, property_digest
    from polytrav.verification.vnnlib import read_vnnlib

    files = list(models.values())
    net = Network.from_onnx(files[0]) if len(files) == 1 else None
    same = net is not None and network_digest(net) == info["network_sha256"]
    if same:
        spec = read_vnnlib(query, n_inputs=net.n_inputs, n_outputs=net.n_outputs)
        same = property_digest(spec) == info["property_sha256"]
    if not same:
        Path(path).unlink()
        return (f"proof: none written to {path}: the query compiles to another network or "
                "property than check-proof NETWORK QUERY reads")
    return (f"proof: wrote {path} ({info['bytes']} bytes): {info['certified']} leaves with a "
            f"certificate, {info['uncertified']} without one")


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def _capability_options(f):
    for flag in reversed(list(CAPABILITIES)):
        f = click.option(flag, _dest(flag), is_flag=True, help="One capability.")(f)
    # the spelling of the standard's own example (§5.4.2)
    return click.option("--multiple-inputs-output-theories", "alias_io", is_flag=True,
                        hidden=True)(f)


@cli.command()
@_capability_options
def supports(alias_io, **flags) -> None:
    """Print what polytrav supports for one capability, one item per line."""
    chosen = [flag for flag in CAPABILITIES if flags[_dest(flag)]]
    chosen += ["--multiple-input-output-theories"] if alias_io else []
    if len(chosen) != 1:
        raise click.UsageError("supports needs exactly one capability; the standard defines "
                               + ", ".join(CAPABILITIES))
    _out(capability_lines(chosen[0]))


cli.add_command(supports, "capabilities")  # §5.1's name for the same command


def main(argv=None) -> None:
    """The console script: run :func:`cli` and turn every error into a line and an exit
    code (nothing on stdout)."""
    from polytrav.interface.cli.common import print_notes
    from polytrav.vocabulary.errors import PolytravError

    print_notes("polytrav-vnnlib")
    try:
        cli.main(args=argv, prog_name="polytrav-vnnlib", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:  # Ctrl-C in a process whose SIGINT is not the console's
        click.echo("polytrav-vnnlib: interrupted before any answer", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except click.ClickException as exc:
        click.echo(f"polytrav-vnnlib: {exc.format_message()}", err=True)
        sys.exit(EXIT_REFUSED)
    except (PolytravError, OSError) as exc:
        from polytrav.interface.cli.common import error_message

        click.echo(f"polytrav-vnnlib: {error_message(exc)}", err=True)
        sys.exit(EXIT_REFUSED)
    except Exception as exc:  # noqa: BLE001  a bug: say so, with the traceback
        click.echo(f"polytrav-vnnlib: internal error: {type(exc).__name__}: {exc}", err=True)
        traceback.print_exc()
        sys.exit(EXIT_INTERNAL)
    sys.exit(EXIT_ANSWERED)
