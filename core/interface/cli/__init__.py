"""The ``polytrav`` command line (click).

``polytrav verify NET PROP`` decides one VNN-LIB property on an ONNX or ``.nnet`` network;
``polytrav verify --instances instances.csv --results out.csv`` runs a VNN-COMP instance list
and writes each row as it finishes. ``polytrav run job.toml`` runs a job file
(:mod:`polytrav.interface.config`); ``regions`` counts, lists or draws the polytopes;
``analyze --analysis NAME KEY=VALUE...`` runs any registered analysis, and ``attack``,
``counterfactual`` and ``monotonicity`` run one built-in each; ``explain MODEL DATA.csv``
runs per-row analyses on a dataset and writes the report; ``polytrav plugins`` and ``polytrav solvers`` list what is installed.

Exit codes (every command): 0 holds / complete, 1 violated (a confirmed counterexample or
violation), 2 unknown or partial (a budget, a lost LP, Ctrl-C), 3 timeout (``verify``), 4 bad
input (one line on stderr naming the problem; also a missing extra, named with its pip line),
5 internal error (a bug; ``POLYTRAV_DEBUG=1`` shows the traceback). JSON output never holds ``NaN`` or ``Infinity`` (they become null).

This module holds the command group (every way a command can end maps to one line and an
exit code; the console script enters through :mod:`polytrav.interface.console`, which
handles Ctrl-C before this module loads); the commands live beside it by family: ``verify``
(``verify``, one instance or a batch), ``analysis`` (``regions``, ``attack``,
``counterfactual``, ``monotonicity``, ``run``) and ``listing`` (``plugins``, ``solvers``),
with what they share in ``common``. A new command goes in one of those (or a new module of
this package) and is added to the group below.
"""
from __future__ import annotations

import os
import sys

import click

from polytrav.interface.cli.analysis import (analyze, attack, counterfactual, monotonicity,
                                             regions, run)
# the exit codes and vnncomp_counterexample are re-exported: they stay reachable here
from polytrav.interface.cli.common import (EXIT_BAD_INPUT, EXIT_BROKEN_PIPE,  # noqa: F401
                                           EXIT_HOLDS, EXIT_INTERNAL, EXIT_PARTIAL, EXIT_TIMEOUT,
                                           EXIT_VIOLATED, error_message, fail,
                                           print_notes)
from polytrav.interface.cli.diff import diff
from polytrav.interface.cli.explain import explain
from polytrav.interface.cli.listing import plugins, solvers
from polytrav.interface.cli.verify import check_proof, verify, vnncomp_counterexample  # noqa: F401
from polytrav.interface.console import answered, working
from polytrav.vocabulary.errors import PolytravError

__all__ = ["main"]


class _Cli(click.Group):
    """The command group; every way a command can end maps to one line and an exit code."""

    def invoke(self, ctx):
        working()  # Ctrl-C from here on: KeyboardInterrupt, the command's partial answer
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:  # where the command does not catch it (loading, set-up)
            sys.stdout.flush()
            click.echo("polytrav: interrupted before the command finished", err=True)
            sys.exit(EXIT_PARTIAL)
        except BrokenPipeError:  # the reader left (``| head``): stop quietly, as shells expect
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            sys.exit(EXIT_BROKEN_PIPE)

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        try:
            self._main(args, prog_name, complete_var, **extra)
        finally:
            answered()  # Ctrl-C from here on is ignored: the answer and its exit code stand

    def _main(self, args, prog_name, complete_var, **extra):
        print_notes("polytrav")
        try:
            rv = super().main(args, prog_name or "polytrav", complete_var,
                              standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:  # bare `polytrav`: the help
            click.echo(exc.ctx.get_help() if exc.ctx is not None else exc.format_message())
            sys.exit(EXIT_HOLDS)
        except click.UsageError as exc:  # unknown option or command, a bad option value
            where = f"; see {exc.ctx.command_path} --help" if exc.ctx is not None else ""
            fail(exc.format_message().rstrip(".") + where)
        except click.ClickException as exc:
            fail(exc.format_message())
        except click.Abort:  # Ctrl-C while parsing, in a process whose SIGINT is not ours
            click.echo("polytrav: interrupted before any result", err=True)
            sys.exit(EXIT_PARTIAL)
        except (PolytravError, OSError) as exc:
            fail(error_message(exc))
        except ModuleNotFoundError as exc:  # a path without its own check: name the extra
            from polytrav.vocabulary.extras import extra_of, pip_line

            extra = extra_of(exc.name)
            if extra is None or os.environ.get("POLYTRAV_DEBUG") == "1":
                self._bug(exc)
            words = list(args) if args is not None else sys.argv[1:]
            command = f"polytrav {words[0]}" if words else "this command"
            fail(f"{command} needs {exc.name} (the {extra!r} extra), which is not installed: "
                 f"{pip_line(extra)}")
        except Exception as exc:  # noqa: BLE001  a bug: one line, the traceback on request
            self._bug(exc)
        sys.exit(rv if isinstance(rv, int) else 0)

    @staticmethod
    def _bug(exc: Exception):
        """A bug: one line and exit 5 (``POLYTRAV_DEBUG=1``: the traceback)."""
        if os.environ.get("POLYTRAV_DEBUG") == "1":
            raise exc  # with its traceback
        click.echo(f"polytrav: internal error: {type(exc).__name__}: {exc} (this is a bug; "
                   "POLYTRAV_DEBUG=1 shows the traceback)", err=True)
        sys.exit(EXIT_INTERNAL)


@click.group(cls=_Cli, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="polytrav")
def main() -> None:
    """Exact traversal of the linear regions of ReLU networks, and verification on top."""


for _command in (verify, check_proof, run, plugins, solvers, regions, analyze, attack,
                 counterfactual, monotonicity, explain, diff):
    main.add_command(_command)
