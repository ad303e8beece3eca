"""The ``polytrav`` command line (click).

``polytrav verify NET PROP`` decides one VNN-LIB property on an ONNX or ``.nnet`` network;
``polytrav verify --instances instances.csv --results out.csv`` runs a VNN-COMP instance list
and writes each row as it finishes. ``polytrav run job.toml`` runs a job file
(:mod:`polytrav.interface.config`); ``regions``, ``attack``, ``counterfactual`` and ``monotonicity`` run
one analysis; ``polytrav plugins`` and ``polytrav solvers`` list what is installed.

Exit codes (every command): 0 holds / complete, 1 violated (a confirmed counterexample or
violation), 2 unknown or partial (a budget, a lost LP, Ctrl-C), 3 timeout (``verify``), 4 bad
input (one line on stderr naming the problem), 5 internal error (a bug; ``POLYTRAV_DEBUG=1``
shows the traceback). JSON output never holds ``NaN`` or ``Infinity`` (they become null).
"""
from __future__ import annotations

import csv
import os
import sys
import time
from pathlib import Path

import click
import numpy as np

from polytrav.vocabulary.errors import PolytravError
from polytrav.vocabulary.results import Verdict, to_json

__all__ = ["main"]

#: Exit codes: holds/complete, violated, unknown or partial, timeout, bad input, a bug.
EXIT_HOLDS, EXIT_VIOLATED, EXIT_PARTIAL, EXIT_TIMEOUT, EXIT_BAD_INPUT, EXIT_INTERNAL = range(6)
#: Exit code when the reader of stdout went away (``| head``): 128 + SIGPIPE, as shells use.
EXIT_BROKEN_PIPE = 141


class _Progress:
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


def _fail(message: str):
    click.echo(f"polytrav: error: {message}", err=True)
    sys.exit(EXIT_BAD_INPUT)


def _message(exc: BaseException) -> str:
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
    return str(exc)


class _Cli(click.Group):
    """The command group; every way a command can end maps to one line and an exit code."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except BrokenPipeError:  # the reader left (``| head``): stop quietly, as shells expect
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            sys.exit(EXIT_BROKEN_PIPE)

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        try:
            rv = super().main(args, prog_name or "polytrav", complete_var,
                              standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:  # bare `polytrav`: the help
            click.echo(exc.ctx.get_help() if exc.ctx is not None else exc.format_message())
            sys.exit(EXIT_HOLDS)
        except click.UsageError as exc:  # unknown option or command, a bad option value
            where = f"; see {exc.ctx.command_path} --help" if exc.ctx is not None else ""
            _fail(exc.format_message().rstrip(".") + where)
        except click.ClickException as exc:
            _fail(exc.format_message())
        except click.Abort:  # Ctrl-C where no command catches it (loading, set-up)
            click.echo("polytrav: interrupted before any result", err=True)
            sys.exit(EXIT_PARTIAL)
        except (PolytravError, OSError) as exc:
            _fail(_message(exc))
        except Exception as exc:  # noqa: BLE001  a bug: one line, the traceback on request
            if os.environ.get("POLYTRAV_DEBUG") == "1":
                raise
            click.echo(f"polytrav: internal error: {type(exc).__name__}: {exc} (this is a bug; "
                       "POLYTRAV_DEBUG=1 shows the traceback)", err=True)
            sys.exit(EXIT_INTERNAL)
        sys.exit(rv if isinstance(rv, int) else 0)


def vnncomp_counterexample(x: np.ndarray, y: np.ndarray) -> str:
    """The counterexample in VNN-COMP's result format (``sat`` then ``((X_0 v) ... (Y_0 v))``)."""
    lines = ["sat", "("]
    lines += [f"(X_{i} {v!r})" for i, v in enumerate(np.asarray(x, float).tolist())]
    lines += [f"(Y_{j} {v!r})" for j, v in enumerate(np.asarray(y, float).tolist())]
    return "\n".join(lines + [")"])


@click.group(cls=_Cli, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="polytrav")
def main() -> None:
    """Exact traversal of the linear regions of ReLU networks, and verification on top."""


@main.command()
@click.argument("network", required=False, type=click.Path(dir_okay=False))
@click.argument("prop", required=False, type=click.Path(dir_okay=False))
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Seconds for the instance (positive).")
@click.option("--solver", default=None, help="LP backend (see `polytrav solvers`).")
@click.option("--max-polytopes", type=click.IntRange(min=1), default=None, help="Polytope budget.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (per instance).")
@click.option("--counterexample", type=click.Path(dir_okay=False), default=None,
              help="Write a counterexample in VNN-COMP's format to this file.")
@click.option("--instances", type=click.Path(exists=True, dir_okay=False), default=None,
              help="A VNN-COMP instances.csv (onnx,vnnlib,timeout) to run in batch.")
@click.option("--results", type=click.Path(dir_okay=False), default=None,
              help="With --instances: the results CSV, written row by row.")
@click.option("--bounds/--no-bounds", default=True, show_default=True,
              help="Skip pieces on which sound bounds prove the property (--no-bounds: visit "
                   "every polytope, the paper's plain traversal).")
@click.option("--order", type=click.Choice(["best-first", "bfs"]), default="best-first",
              show_default=True, help="Order of the pieces: likely violations first, or the paper's BFS.")
@click.option("--split/--no-split", default=True, show_default=True,
              help="With bounds, bisect input boxes of few inputs first (proven sub-boxes are "
                   "done; the rest are traversed).")
@click.option("--bab/--no-bab", default=True, show_default=True,
              help="With bounds, give boxes of many inputs (robustness properties) to "
                   "neuron-level branch and bound before the traversal.")
@click.option("--total-timeout", type=click.FloatRange(min=0, min_open=True), default=None,
              help="With --instances: seconds for the whole batch (instances not started by "
                   "then answer timeout).")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Local worker processes (instances of a batch, or parts of one traversal).")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="A Dask scheduler (tcp://host:8786) to run on instead of local workers.")
def verify(network, prop, timeout, solver, max_polytopes, as_json, counterexample, instances,
           results, bounds, order, split, bab, total_timeout, workers, scheduler) -> None:
    """Decide a VNN-LIB property: sat (violated), unsat (holds), unknown or timeout.

    \b
    Examples:
      polytrav verify net.onnx prop_3.vnnlib --timeout 116
      polytrav verify net.onnx prop.vnnlib --json --counterexample cex.txt
      polytrav verify --instances instances.csv --results results.csv --workers 2
      polytrav verify net.onnx prop.vnnlib --scheduler tcp://10.0.0.5:8786

    A counterexample is confirmed by a float64 forward pass and, for ONNX files, by
    onnxruntime before `sat` is printed. Ctrl-C answers `unknown` (interrupted). Exit code:
    0 unsat, 1 sat, 2 unknown, 3 timeout, 4 bad input.
    """
    if instances is not None:
        if network or prop:
            _fail("give either NETWORK PROP or --instances, not both")
        with _executor(workers, scheduler) as executor:
            sys.exit(_batch(Path(instances), results, solver, max_polytopes, as_json, timeout,
                            executor, bounds=bounds, order=order, split=split, bab=bab,
                            time_limit=total_timeout))
    if not (network and prop):
        _fail("verify needs NETWORK and PROP (or --instances FILE); see polytrav verify --help")
    if results or total_timeout is not None:
        _fail("--results and --total-timeout belong to a batch: give --instances FILE")
    with _executor(workers, scheduler) as executor:
        result = _run_one(network, prop, timeout, solver, max_polytopes,
                          None if workers is None and scheduler is None else executor,
                          bounds=bounds, order=order, split=split, bab=bab)
    if counterexample and result.answer == "sat":
        Path(counterexample).write_text(vnncomp_counterexample(result.counterexample,
                                                               result.output) + "\n")
    if as_json:
        click.echo(to_json({"network": network, "property": prop, **result.to_dict()}))
    else:
        click.echo(result.answer)
        if result.answer == "sat":
            click.echo(f"counterexample input:  {np.array2string(result.counterexample, precision=9)}")
            click.echo(f"network output there:  {np.array2string(result.output, precision=9)}")
        elif result.reason:
            click.echo(f"why: {result.reason}")
        click.echo(f"{result.polytopes} polytopes, {result.proven} pieces proven by bounds, "
                   f"{result.lps} LPs, {result.seconds:.3f} s")
    sys.exit(result.exit_code)


def _executor(workers, scheduler):
    from polytrav.parallel import get_executor

    try:
        return get_executor(workers, scheduler)
    except (PolytravError, OSError, ValueError, TypeError) as exc:  # a malformed address
        _fail(f"--scheduler {scheduler!r}: {_message(exc)} (expected tcp://HOST:PORT)"
              if scheduler else _message(exc))


def _run_one(network, prop, timeout, solver, max_polytopes, executor, **options):
    from polytrav.verification.verify import verify as run

    bar = _Progress(Path(prop).name, sys.stderr.isatty())
    try:
        return run(network, prop, timeout=timeout, solver=solver, max_polytopes=max_polytopes,
                   progress=bar, executor=executor, on_interrupt="report", **options)
    finally:
        bar.close()


def _instance_path(root: Path, name: str, folder: str) -> Path:
    """``root/name``, else ``root/folder/name`` (VNN-COMP benchmarks keep onnx/ and vnnlib/)."""
    path = root / name
    return path if path.exists() or not (root / folder / name).exists() else root / folder / name


def _batch_rows(instances: Path, timeout_override):
    """The instances of a VNN-COMP list, checked before any run (line numbers in errors)."""
    root = instances.parent
    rows, jobs = [], []
    for k, row in enumerate(csv.reader(instances.open()), start=1):
        if not row or not row[0].strip() or row[0].startswith("#"):
            continue
        if len(row) < 2:
            _fail(f"{instances}:{k}: expected onnx,vnnlib[,timeout], got {','.join(row)!r}")
        timeout = None
        if len(row) > 2 and row[2].strip():
            try:
                timeout = float(row[2])
            except ValueError:
                _fail(f"{instances}:{k}: the timeout {row[2]!r} is not a number of seconds")
            if not timeout > 0 or not np.isfinite(timeout):
                _fail(f"{instances}:{k}: the timeout must be positive seconds, got {row[2]!r}")
        rows.append(row)
        jobs.append((_instance_path(root, row[0].strip(), "onnx"),
                     _instance_path(root, row[1].strip(), "vnnlib"), timeout_override or timeout))
    if not jobs:
        _fail(f"{instances} lists no instances (rows: onnx,vnnlib[,timeout])")
    return rows, jobs


#: A batch's exit code: the first of these answers that occurs (else 0: every one unsat).
_BATCH_PRECEDENCE = (("error", EXIT_BAD_INPUT), ("sat", EXIT_VIOLATED), ("unknown", EXIT_PARTIAL),
                     ("timeout", EXIT_TIMEOUT))


def _batch(instances: Path, results, solver, max_polytopes, as_json, timeout_override,
           executor, **options) -> int:
    """Run every row of ``instances`` (paths relative to its folder, or to its ``onnx/`` and
    ``vnnlib/`` subfolders), writing each result as it finishes."""
    from polytrav.verification.verify import verify_many

    rows, jobs = _batch_rows(instances, timeout_override)
    names = ["network", "property", "answer", "polytopes", "lps", "seconds", "reason"]
    out = open(results, "w", newline="") if results else None
    writer = csv.writer(out) if out else None
    if writer:
        writer.writerow(names)
    seen: set[str] = set()
    done = 0
    try:
        for k, res in verify_many(jobs, executor=executor, solver=solver,
                                  max_polytopes=max_polytopes, **options):
            seen.add(str(res.answer))
            done += 1
            rec = [rows[k][0], rows[k][1], res.answer, res.polytopes, res.lps,
                   f"{res.seconds:.3f}", res.reason]
            if writer:
                writer.writerow(rec)
                out.flush()
            if as_json:
                click.echo(to_json({"network": rows[k][0], "property": rows[k][1],
                                    **res.to_dict()}))
            else:
                why = f": {res.reason}" if res.answer in ("error", "unknown") and res.reason else ""
                click.echo(f"{rec[0]} {rec[1]}: {rec[2]} ({rec[3]} polytopes, {rec[5]} s){why}")
    except KeyboardInterrupt:
        click.echo(f"PARTIAL: interrupted after {done} of {len(jobs)} instances"
                   + (f"; {results} holds those" if results else ""), err=True)
        return EXIT_PARTIAL
    finally:
        if out:
            out.close()
    return next((code for answer, code in _BATCH_PRECEDENCE if answer in seen), EXIT_HOLDS)


def _print_report(report, as_json: bool) -> None:
    click.echo(to_json(report.to_dict()) if as_json else str(report))


def _report_exit(report) -> int:
    """1 if an analysis found a confirmed violation; 2 if any answer is not final; else 0."""
    if any(r.verdict is Verdict.VIOLATED for r in report.results):
        return EXIT_VIOLATED
    if report.partial or any(not r.exact or r.verdict in (Verdict.UNKNOWN,
                                                          Verdict.VIOLATED_UNCONFIRMED)
                             for r in report.results):
        return EXIT_PARTIAL
    return EXIT_HOLDS


def _export_option(f):
    return click.option(
        "--export", "export_path", type=click.Path(dir_okay=False), default=None,
        help="Write the visited polytopes to FILE: .json, .csv, .parquet or .graphml "
             "(docs/exports.md).")(f)


def _check_export(path) -> None:
    if path:
        from polytrav.interface.export import check_export_path

        check_export_path(path)


def _write_export(path, polytopes, report=None, stats=None) -> None:
    if path:
        from polytrav.interface.export import export

        written = export(path, polytopes=polytopes, report=report, stats=stats)
        click.echo(f"exported {len(polytopes)} polytopes to {written}", err=True)


@main.command()
@click.argument("job", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@_export_option
def run(job, as_json, export_path) -> None:
    """Run a job file (TOML): network, region, analyses by registered name.

    \b
    Example job.toml:
      network = "model.onnx"
      [region]
      kind = "box"
      lower = [-1, -1]
      upper = [1, 1]
      [[analysis]]
      name = "output_range"
      [[analysis]]
      name = "counterfactual"
      x0 = [0.1, 0.2]
      norm = 2
    Then: polytrav run job.toml --json

    The file is checked before any work (unknown keys, unknown analyses, wrong types).
    Ctrl-C stops cleanly with a partial report, marked as such. Exit code 0 complete, 1 a
    confirmed violation, 2 partial, 4 bad input.
    """
    from polytrav.interface.config import run_job, write_job_outputs

    _check_export(export_path)
    bar = _Progress(Path(job).name, sys.stderr.isatty())
    try:
        report, spec, root = run_job(job, progress=bar, on_interrupt="report",
                                     keep_polytopes=bool(export_path))
    finally:
        bar.close()
    write_job_outputs(report, spec, root)
    _write_export(export_path, report.polytopes, report=report)
    _print_report(report, as_json)
    sys.exit(_report_exit(report))


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def plugins(as_json) -> None:
    """List installed plugins: their distribution, version, analyses and solvers.

    \b
    Example:
      polytrav plugins
    """
    import os

    from polytrav.host.manager import get_plugin_manager, list_plugins

    if os.environ.get("POLYTRAV_DISABLE_PLUGIN_AUTOLOAD") == "1":
        click.echo("note: POLYTRAV_DISABLE_PLUGIN_AUTOLOAD=1, third-party plugins are not loaded",
                   err=True)
    rows = list_plugins(get_plugin_manager())
    if as_json:
        click.echo(to_json(rows))
        return
    for row in rows:
        things = ", ".join(row["analyses"] + row["solvers"]) or "-"
        click.echo(f"{row['name']}  ({row['distribution']} {row['version']}): {things}")


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def solvers(as_json) -> None:
    """List solver backends: problem forms, availability, whether they certify optimality.

    \b
    Example:
      polytrav solvers
    """
    from polytrav.host.manager import get_plugin_manager, solver_classes

    rows = [{"name": name, "forms": sorted(cls.forms), "available": bool(cls.is_available()),
             "certifies_optimality": bool(getattr(cls, "certifies_optimality", True))}
            for name, cls in solver_classes(get_plugin_manager()).items()]
    if as_json:
        click.echo(to_json(rows))
        return
    for r in rows:
        state = "installed" if r["available"] else "not installed"
        cert = "" if r["certifies_optimality"] else ", first-order (answers confirmed elsewhere)"
        click.echo(f"{r['name']}: {'/'.join(r['forms'])}, {state}{cert}")


def _vector(text: str | None, what: str):
    """Comma-separated numbers (``inf`` allowed: a side left open; NaN refused)."""
    if text is None:
        return None
    try:
        values = np.array([float(v) for v in text.split(",")])
    except ValueError:
        _fail(f"{what} must be comma-separated numbers, got {text!r}")
    if np.isnan(values).any():
        _fail(f"{what} contains NaN (entry {int(np.flatnonzero(np.isnan(values))[0])}); give numbers")
    return values


def _finite(values, what: str):
    if values is not None and not np.isfinite(values).all():
        _fail(f"{what} must be finite, got {values.tolist()}")
    return values


@main.command()
@click.argument("network", type=click.Path(dir_okay=False))
@click.option("--lower", help="Box lower corner, comma-separated (a single value broadcasts).")
@click.option("--upper", help="Box upper corner, comma-separated.")
@click.option("--vnnlib", "vnnlib", type=click.Path(dir_okay=False),
              help="Take the region from a VNN-LIB file's (first) input box instead.")
@click.option("--list", "as_list", is_flag=True, help="One line per polytope: index, parent, code.")
@click.option("--plot", type=click.Path(dir_okay=False),
              help="Save a picture of the partition (format from the suffix: .png, .pdf, .svg, ...).")
@click.option("--dims", nargs=2, type=int, default=None,
              help="For --plot on more than 2 inputs: the two inputs of the plane (0-based; the "
                   "others at the box centre).")
@click.option("--labels", default=None,
              help="Input names for the plot's axes, comma-separated, one per input (default: "
                   "the model's input names, else x_0, x_1, ...).")
@click.option("--max-polytopes", type=click.IntRange(min=1), default=None, help="Polytope budget.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Seconds (an incomplete count is marked as such).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@_export_option
def regions(network, lower, upper, vnnlib, as_list, plot, dims, labels, max_polytopes, timeout,
            as_json, export_path) -> None:
    """Count, list or draw the linear regions of a network inside a box.

    \b
    Examples:
      polytrav regions net.onnx --lower -1 --upper 1
      polytrav regions net.onnx --lower -1,-1 --upper 1,1 --list
      polytrav regions net.onnx --lower -1,-1 --upper 1,1 --plot partition.png
      polytrav regions acas.onnx --vnnlib prop_3.vnnlib --plot slice.png --dims 0 1
      polytrav regions net.onnx --lower 0 --upper 1 --export polytopes.parquet

    Ctrl-C stops with the count so far (exit code 2). Exit code 0 complete, 2 incomplete,
    4 bad input.
    """
    from polytrav.vocabulary.text import code_string
    from polytrav.host.runner import traverse
    from polytrav.traversal import TraversalStatus
    from polytrav.verification.verify import load_network

    _check_export(export_path)
    if not plot and (dims is not None or labels is not None):
        _fail("--dims and --labels only shape the picture: give --plot FILE too")
    net = load_network(network)
    region = _region_from(net, lower, upper, vnnlib)
    names = None if labels is None else [v.strip() for v in labels.split(",")]
    if names is not None and not all(names):
        _fail(f"--labels has an empty name ({labels!r}); give one name per input, "
              "comma-separated")
    if plot:
        from polytrav.interface.plot import check_figure_path, check_plane

        check_figure_path(plot)
        check_plane(net, dims, names)
    bar = _Progress("regions", sys.stderr.isatty())
    run = traverse(net, region, max_polytopes=max_polytopes, time_limit=timeout)
    polytopes = []
    try:
        for p in run:
            polytopes.append(p)
            bar(run)
    except KeyboardInterrupt:
        run.close(TraversalStatus.INTERRUPTED)
    finally:
        bar.close()
    stats = {"polytopes": len(polytopes), "status": run.status.value, "complete": run.complete,
             "per_level": run.stats.pieces, "lps": run.stats.lps,
             "seconds": run.stats.total_time, "slivers": run.stats.slivers}
    saved = None
    if plot and run.status is not TraversalStatus.INTERRUPTED:
        from polytrav.interface.plot import save_partition

        saved = save_partition(net, region, plot, polytopes=polytopes, dims=dims, labels=names,
                               complete=run.complete)
    _write_export(export_path, polytopes, stats=stats)
    if as_json:
        if as_list:
            stats["list"] = [{"index": p.index, "parent": p.parent, "code": code_string(p.code),
                              "interior_point": p.interior_point} for p in polytopes]
        click.echo(to_json(stats))
    else:
        if as_list:
            for p in polytopes:
                click.echo(f"{p.index}\t{'' if p.parent is None else p.parent}\t"
                           f"{code_string(p.code)}")
        state = ("" if run.complete else
                 f" (PARTIAL: {run.status.value}; the count so far, not the total)")
        click.echo(f"{len(polytopes)} polytopes in the box{state}; per level {run.stats.pieces}; "
                   f"{run.stats.lps} LPs, {run.stats.total_time:.3f} s")
        if run.stats.slivers:
            click.echo(f"(and {run.stats.slivers} slivers, cells thinner than RADIUS_TOL, "
                       "crossed but not counted: see docs/concepts.md)")
    if saved is not None:
        plane = "" if net.n_inputs == 2 else (
            f" (a 2-D slice through inputs {dims[0]} and {dims[1]} at the box centre: it shows "
            "fewer polytopes than the box holds)")
        click.echo(f"saved the picture to {saved}{plane}", err=True)
    elif plot:
        click.echo("picture not saved: the run was interrupted", err=True)
    sys.exit(EXIT_HOLDS if run.complete else EXIT_PARTIAL)


def _region_from(net, lower, upper, vnnlib):
    """The region of a command: a box from --lower/--upper, or a VNN-LIB file's input box."""
    from polytrav.model.region import Box

    if vnnlib:
        if lower is not None or upper is not None:
            _fail("give the box with --lower and --upper, or --vnnlib FILE, not both")
        from polytrav.verification.vnnlib import read_vnnlib

        region = read_vnnlib(vnnlib, n_inputs=net.n_inputs, n_outputs=net.n_outputs).cases[0].region()
    elif lower is None or upper is None:
        _fail("give the box with --lower and --upper (e.g. --lower -1 --upper 1), or --vnnlib FILE")
    else:
        lo, hi = _vector(lower, "--lower"), _vector(upper, "--upper")
        region = Box(lo if lo.size > 1 else lo[0], hi if hi.size > 1 else hi[0])
    return region.with_dims(net.n_inputs)


def _region_options(f):
    for option in reversed([
        click.option("--lower", help="Box lower corner, comma-separated (one value broadcasts)."),
        click.option("--upper", help="Box upper corner, comma-separated."),
        click.option("--vnnlib", type=click.Path(dir_okay=False),
                     help="Take the region from a VNN-LIB file's (first) input box instead."),
        click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None,
                     help="Seconds (an incomplete run is partial)."),
        click.option("--max-polytopes", type=click.IntRange(min=1), default=None,
                     help="Polytope budget (a run cut short is partial)."),
        click.option("--solver", default=None, help="LP backend (see `polytrav solvers`)."),
        click.option("--json", "as_json", is_flag=True, help="Print the report as JSON."),
        _export_option,
    ]):
        f = option(f)
    return f


def _analysis_command(network, lower, upper, vnnlib, timeout, max_polytopes, solver, as_json,
                      export_path, analysis) -> None:
    from polytrav.host.runner import analyze
    from polytrav.verification.verify import load_network

    _check_export(export_path)
    net = load_network(network)
    region = _region_from(net, lower, upper, vnnlib)
    bar = _Progress(analysis.name, sys.stderr.isatty())
    try:
        report = analyze(net, region, analysis, solver=solver, time_limit=timeout, progress=bar,
                         max_polytopes=max_polytopes, keep_polytopes=bool(export_path),
                         on_interrupt="report")
    finally:
        bar.close()
    _write_export(export_path, report.polytopes, report=report)
    _print_report(report, as_json)
    sys.exit(_report_exit(report))


@main.command()
@click.argument("network", type=click.Path(dir_okay=False))
@_region_options
@click.option("--label", type=click.IntRange(min=0), default=None,
              help="Multiclass: the true class (worst margin of every other class's logit).")
@click.option("--output", type=click.IntRange(min=0), default=0, show_default=True,
              help="Single output (regression / binary logit): its min and max.")
@click.option("--stop-at-first", is_flag=True, help="Multiclass: stop at the first adversarial point.")
def attack(network, lower, upper, vnnlib, timeout, max_polytopes, solver, as_json,
           export_path, label, output, stop_at_first):
    """Local adversarial attack: exact worst case over the region (paper §5.1).

    With --label: the largest logit margin of another class (softmax attack, LPs), the class
    and the input where it is reached; else the min and max of one output and where.

    \b
    Examples:
      polytrav attack mnist.onnx --vnnlib prop_0_0.03.vnnlib --label 7
      polytrav attack net.onnx --lower -1,-1 --upper 1,1 --output 0 --json

    Exit code 0 complete (no adversarial input with --label), 1 an adversarial input
    confirmed by a forward pass, 2 partial (timeout, Ctrl-C), 4 bad input.
    """
    from polytrav.host.manager import create_analysis

    if stop_at_first and label is None:
        _fail("--stop-at-first needs --label (it stops at the first input where another class wins)")
    if label is not None and output != 0:
        _fail("give --label (multiclass: the worst margin against a class) or --output (the "
              "range of one output), not both")
    analysis = (create_analysis("softmax_attack", label=label,
                                mode="verify" if stop_at_first else "worst")
                if label is not None else create_analysis("output_range", output=output))
    _analysis_command(network, lower, upper, vnnlib, timeout, max_polytopes, solver, as_json,
                      export_path, analysis)


@main.command()
@click.argument("network", type=click.Path(dir_okay=False))
@_region_options
@click.option("--x0", required=True, help="The input to explain, comma-separated.")
@click.option("--norm", type=click.Choice(["1", "2", "inf"]), default="2", show_default=True,
              help="The distance: L1, L2 or L-infinity.")
@click.option("--target", type=click.IntRange(min=0), default=None,
              help="Multiclass: the class to reach.")
def counterfactual(network, lower, upper, vnnlib, timeout, max_polytopes, solver, as_json,
                   export_path, x0, norm, target):
    """Closest input of another class (L1, L2 or L-inf), exact over the region (paper §5.2).

    Prints the distance, the classes, and the counterfactual point (just past the boundary,
    its class confirmed by a forward pass).

    \b
    Example:
      polytrav counterfactual net.onnx --lower 0 --upper 1 --x0 0.2,0.7 --norm 1

    Exit code 0 complete, 2 partial (timeout, Ctrl-C), 4 bad input.
    """
    from polytrav.host.manager import create_analysis

    analysis = create_analysis("counterfactual", x0=_finite(_vector(x0, "--x0"), "--x0"),
                               norm=np.inf if norm == "inf" else int(norm), target=target)
    _analysis_command(network, lower, upper, vnnlib, timeout, max_polytopes, solver, as_json,
                      export_path, analysis)


@main.command()
@click.argument("network", type=click.Path(dir_okay=False))
@_region_options
@click.option("--feature", type=click.IntRange(min=0), required=True, help="Input index (0-based).")
@click.option("--direction", type=click.Choice(["increasing", "decreasing"]), default=None,
              help="Required direction (default: either).")
@click.option("--output", type=click.IntRange(min=0), default=0, show_default=True,
              help="The output whose slope is checked (0-based).")
def monotonicity(network, lower, upper, vnnlib, timeout, max_polytopes, solver, as_json,
                 export_path, feature, direction, output):
    """Is one output monotone in one input over the region? Every violating polytope (paper §5.3).

    \b
    Example:
      polytrav monotonicity net.onnx --lower -1 --upper 1 --feature 0 --direction increasing

    Exit code 0 monotone (complete), 1 a confirmed violating pair, 2 partial, 4 bad input.
    """
    from polytrav.host.manager import create_analysis

    analysis = create_analysis("monotonicity", feature=feature, direction=direction,
                               output=output)
    _analysis_command(network, lower, upper, vnnlib, timeout, max_polytopes, solver, as_json,
                      export_path, analysis)
