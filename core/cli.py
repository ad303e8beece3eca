"""The ``polytrav`` command line (click).

``polytrav verify NET PROP`` decides one VNN-LIB property on an ONNX or ``.nnet`` network;
``polytrav verify --instances instances.csv --results out.csv`` runs a VNN-COMP instance list
and writes each row as it finishes. Exit codes: 0 unsat (holds), 1 sat (violated), 2 unknown,
3 timeout, 4 bad input. ``polytrav run job.toml`` runs a job file (:mod:`polytrav.config`);
``polytrav plugins`` and ``polytrav solvers`` list what is installed.
"""
from __future__ import annotations

import csv
import json
import sys
import time
from pathlib import Path

import click
import numpy as np

from polytrav.errors import PolytravError

__all__ = ["main"]

#: Exit code of bad input (a malformed file, an unknown solver, ...).
EXIT_BAD_INPUT = 4


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


def vnncomp_counterexample(x: np.ndarray, y: np.ndarray) -> str:
    """The counterexample in VNN-COMP's result format (``sat`` then ``((X_0 v) ... (Y_0 v))``)."""
    lines = ["sat", "("]
    lines += [f"(X_{i} {v!r})" for i, v in enumerate(np.asarray(x, float).tolist())]
    lines += [f"(Y_{j} {v!r})" for j, v in enumerate(np.asarray(y, float).tolist())]
    return "\n".join(lines + [")"])


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="polytrav")
def main() -> None:
    """Exact traversal of the linear regions of ReLU networks, and verification on top."""


@main.command()
@click.argument("network", required=False, type=click.Path(dir_okay=False))
@click.argument("prop", required=False, type=click.Path(dir_okay=False))
@click.option("--timeout", type=float, default=None, help="Seconds for the instance.")
@click.option("--solver", default=None, help="LP backend (see `polytrav.available_solvers()`).")
@click.option("--max-polytopes", type=int, default=None, help="Polytope budget.")
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
@click.option("--total-timeout", type=float, default=None,
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
    onnxruntime before `sat` is printed. Exit code: 0 unsat, 1 sat, 2 unknown, 3 timeout,
    4 bad input.
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
    with _executor(workers, scheduler) as executor:
        result = _run_one(network, prop, timeout, solver, max_polytopes,
                          None if workers is None and scheduler is None else executor,
                          bounds=bounds, order=order, split=split, bab=bab)
    if counterexample and result.answer == "sat":
        Path(counterexample).write_text(vnncomp_counterexample(result.counterexample,
                                                               result.output) + "\n")
    if as_json:
        click.echo(json.dumps({"network": network, "property": prop, **result.to_dict()}))
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
    except (PolytravError, OSError) as exc:
        _fail(str(exc))


def _run_one(network, prop, timeout, solver, max_polytopes, executor, **options):
    from polytrav.verify import verify as run

    bar = _Progress(Path(prop).name, sys.stderr.isatty())
    try:
        return run(network, prop, timeout=timeout, solver=solver, max_polytopes=max_polytopes,
                   progress=bar, executor=executor, **options)
    except (PolytravError, OSError) as exc:
        _fail(str(exc))
    finally:
        bar.close()


def _batch(instances: Path, results, solver, max_polytopes, as_json, timeout_override,
           executor, **options) -> int:
    """Run every row of ``instances`` (paths relative to its folder), writing each result as
    it finishes; 4 if any input was bad."""
    from polytrav.verify import verify_many

    root = instances.parent
    rows = [r for r in csv.reader(instances.open()) if r and not r[0].startswith("#")]
    for k, row in enumerate(rows):
        if len(row) < 2:
            _fail(f"{instances}:{k + 1}: expected onnx,vnnlib[,timeout], got {row}")
    jobs = [(root / r[0], root / r[1],
             timeout_override or (float(r[2]) if len(r) > 2 and r[2] else None)) for r in rows]
    names = ["network", "property", "answer", "polytopes", "lps", "seconds", "reason"]
    out = open(results, "w", newline="") if results else None
    writer = csv.writer(out) if out else None
    if writer:
        writer.writerow(names)
    bad = 0
    try:
        for k, res in verify_many(jobs, executor=executor, solver=solver,
                                  max_polytopes=max_polytopes, **options):
            bad += res.answer == "error"
            rec = [rows[k][0], rows[k][1], res.answer, res.polytopes, res.lps,
                   f"{res.seconds:.3f}", res.reason]
            if writer:
                writer.writerow(rec)
                out.flush()
            if as_json:
                click.echo(json.dumps(dict(zip(names, rec))))
            else:
                click.echo(f"{rec[0]} {rec[1]}: {rec[2]} ({rec[3]} polytopes, {rec[5]} s)")
    finally:
        if out:
            out.close()
    return EXIT_BAD_INPUT if bad else 0


def _print_report(report, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(report.to_dict()))
        return
    if not report.complete:
        click.echo(f"PARTIAL REPORT: the traversal ended '{report.status.value}', so no result "
                   "below is a proof", err=False)
    for res in report.results:
        verdict = "" if res.verdict is None else f" {res.verdict.value}"
        exact = "" if res.exact else " (inexact)"
        click.echo(f"{res.analysis}:{verdict} {json.dumps(_plain(res.value))}{exact}")
    st = report.stats
    click.echo(f"{st.get('polytopes', 0)} polytopes, {st.get('lps', 0)} LPs, "
               f"{report.time:.3f} s, status {report.status.value}")


def _plain(value):
    from polytrav.results import _jsonable

    return _jsonable(value)


def _write_outputs(report, job, root: Path) -> None:
    out = job.output
    if out is None:
        return
    if out.json_path:
        (root / out.json_path).write_text(json.dumps(report.to_dict(), indent=1))
    if out.csv:
        with open(root / out.csv, "w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(["analysis", "verdict", "value", "exact", "n_polytopes", "n_solves",
                             "status"])
            for res in report.results:
                writer.writerow([res.analysis, "" if res.verdict is None else res.verdict.value,
                                 json.dumps(_plain(res.value)), res.exact, res.n_polytopes,
                                 res.n_solves, report.status.value])


@main.command()
@click.argument("job", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
def run(job, as_json) -> None:
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
    Ctrl-C stops cleanly with a partial report, marked as such. Exit code 0 when the run
    was complete, 2 when partial, 4 on bad input.
    """
    from polytrav.config import run_job

    bar = _Progress(Path(job).name, sys.stderr.isatty())
    try:
        report, spec, root = run_job(job, progress=bar)
    except (PolytravError, OSError) as exc:
        _fail(str(exc))
    finally:
        bar.close()
    _write_outputs(report, spec, root)
    _print_report(report, as_json)
    sys.exit(0 if report.complete else 2)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def plugins(as_json) -> None:
    """List installed plugins: their distribution, version, analyses and solvers.

    \b
    Example:
      polytrav plugins
    """
    import os

    from polytrav.manager import get_plugin_manager, list_plugins

    if os.environ.get("POLYTRAV_DISABLE_PLUGIN_AUTOLOAD") == "1":
        click.echo("note: POLYTRAV_DISABLE_PLUGIN_AUTOLOAD=1, third-party plugins are not loaded",
                   err=True)
    rows = list_plugins(get_plugin_manager())
    if as_json:
        click.echo(json.dumps(rows))
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
    from polytrav.manager import get_plugin_manager, solver_classes

    rows = [{"name": name, "forms": sorted(cls.forms), "available": bool(cls.is_available()),
             "certifies_optimality": bool(getattr(cls, "certifies_optimality", True))}
            for name, cls in solver_classes(get_plugin_manager()).items()]
    if as_json:
        click.echo(json.dumps(rows))
        return
    for r in rows:
        state = "installed" if r["available"] else "not installed"
        cert = "" if r["certifies_optimality"] else ", first-order (answers confirmed elsewhere)"
        click.echo(f"{r['name']}: {'/'.join(r['forms'])}, {state}{cert}")


def _vector(text: str | None, what: str):
    if text is None:
        return None
    try:
        return np.array([float(v) for v in text.split(",")])
    except ValueError:
        _fail(f"{what} must be comma-separated numbers, got {text!r}")


@main.command()
@click.argument("network", type=click.Path(dir_okay=False))
@click.option("--lower", help="Box lower corner, comma-separated (a single value broadcasts).")
@click.option("--upper", help="Box upper corner, comma-separated.")
@click.option("--vnnlib", "vnnlib", type=click.Path(dir_okay=False),
              help="Take the region from a VNN-LIB file's (first) input box instead.")
@click.option("--list", "as_list", is_flag=True, help="One line per polytope: index, parent, code.")
@click.option("--plot", type=click.Path(dir_okay=False), help="Save a picture of the partition (PNG).")
@click.option("--dims", nargs=2, type=int, default=None,
              help="For --plot on more than 2 inputs: the two inputs of the plane (others at the box centre).")
@click.option("--max-polytopes", type=int, default=None, help="Polytope budget.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def regions(network, lower, upper, vnnlib, as_list, plot, dims, max_polytopes, as_json) -> None:
    """Count, list or draw the linear regions of a network inside a box.

    \b
    Examples:
      polytrav regions net.onnx --lower -1 --upper 1
      polytrav regions net.onnx --lower -1,-1 --upper 1,1 --list
      polytrav regions net.onnx --lower -1,-1 --upper 1,1 --plot partition.png
      polytrav regions acas.onnx --vnnlib prop_3.vnnlib --plot slice.png --dims 0 1
    """
    from polytrav.traverse import traverse
    from polytrav.verify import load_network

    try:
        net = load_network(network)
        region = _region_from(net, lower, upper, vnnlib)
        bar = _Progress("regions", sys.stderr.isatty())
        run = traverse(net, region, max_polytopes=max_polytopes)
        polytopes = []
        for p in run:
            polytopes.append(p)
            bar(run)
        bar.close()
        if plot:
            _plot_regions(net, region, polytopes, plot, dims)
    except (PolytravError, OSError) as exc:
        _fail(str(exc))
    stats = {"polytopes": len(polytopes), "status": run.status.value,
             "per_level": run.stats.pieces, "lps": run.stats.lps,
             "seconds": run.stats.total_time}
    code = lambda p: "|".join("".join("1" if b else "0" for b in c) for c in p.code)  # noqa: E731
    if as_json:
        if as_list:
            stats["list"] = [{"index": p.index, "parent": p.parent, "code": code(p),
                              "interior_point": p.interior_point.tolist()} for p in polytopes]
        click.echo(json.dumps(stats))
    else:
        if as_list:
            for p in polytopes:
                click.echo(f"{p.index}\t{'' if p.parent is None else p.parent}\t{code(p)}")
        complete = "" if run.complete else f" (INCOMPLETE: {run.status.value})"
        click.echo(f"{len(polytopes)} polytopes{complete}; per level {run.stats.pieces}; "
                   f"{run.stats.lps} LPs, {run.stats.total_time:.3f} s")
    sys.exit(0 if run.complete else 2)


def _plot_regions(net, region, polytopes, path, dims) -> None:
    from polytrav.plot import partition, plane_slice

    if net.n_inputs != 2:
        if dims is None:
            _fail(f"the network has {net.n_inputs} inputs; --plot needs --dims I J (a plane)")
        lo, hi = region.bounding_box()
        net2, box = plane_slice(net, (lo + hi) / 2, tuple(dims), lo[list(dims)], hi[list(dims)])
        ax = partition(net2, box)
    else:
        ax = partition(net, region, polytopes=polytopes)
    ax.figure.savefig(path, dpi=120, bbox_inches="tight")


def _region_from(net, lower, upper, vnnlib):
    """The region of a command: a box from --lower/--upper, or a VNN-LIB file's input box."""
    from polytrav.region import Box

    if vnnlib:
        from polytrav.loaders.vnnlib import read_vnnlib

        region = read_vnnlib(vnnlib, n_inputs=net.n_inputs, n_outputs=net.n_outputs).cases[0].region()
    elif lower is None or upper is None:
        _fail("give the box with --lower and --upper, or --vnnlib FILE")
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
        click.option("--timeout", type=float, default=None, help="Seconds (an incomplete run is partial)."),
        click.option("--solver", default=None, help="LP backend."),
        click.option("--json", "as_json", is_flag=True, help="Print the report as JSON."),
    ]):
        f = option(f)
    return f


def _analysis_command(network, lower, upper, vnnlib, timeout, solver, as_json, analysis) -> None:
    from polytrav.run import analyze
    from polytrav.verify import load_network

    try:
        net = load_network(network)
        region = _region_from(net, lower, upper, vnnlib)
        bar = _Progress(analysis.name, sys.stderr.isatty())
        report = analyze(net, region, analysis, solver=solver, time_limit=timeout, progress=bar)
        bar.close()
    except (PolytravError, OSError) as exc:
        _fail(str(exc))
    _print_report(report, as_json)
    sys.exit(0 if report.complete or report.status.value == "stopped" else 2)


@main.command()
@click.argument("network", type=click.Path(dir_okay=False))
@_region_options
@click.option("--label", type=int, default=None,
              help="Multiclass: the true class (worst margin of every other class's logit).")
@click.option("--output", type=int, default=0, show_default=True,
              help="Single output (regression / binary logit): its min and max.")
@click.option("--stop-at-first", is_flag=True, help="Multiclass: stop at the first adversarial point.")
def attack(network, lower, upper, vnnlib, timeout, solver, as_json, label, output, stop_at_first):
    """Local adversarial attack: exact worst case over the region (paper §5.1).

    With --label: the largest logit margin of another class (softmax attack, LPs); else the
    min and max of one output (output range).

    \b
    Examples:
      polytrav attack mnist.onnx --vnnlib prop_0_0.03.vnnlib --label 7
      polytrav attack net.onnx --lower -1,-1 --upper 1,1 --output 0 --json
    """
    from polytrav.plugins.adversarial import SoftmaxAttack
    from polytrav.plugins.output_range import OutputRange

    analysis = (SoftmaxAttack(label, mode="verify" if stop_at_first else "worst")
                if label is not None else OutputRange(output=output))
    _analysis_command(network, lower, upper, vnnlib, timeout, solver, as_json, analysis)


@main.command()
@click.argument("network", type=click.Path(dir_okay=False))
@_region_options
@click.option("--x0", required=True, help="The input to explain, comma-separated.")
@click.option("--norm", type=click.Choice(["1", "2", "inf"]), default="2", show_default=True)
@click.option("--target", type=int, default=None, help="Multiclass: the class to reach.")
def counterfactual(network, lower, upper, vnnlib, timeout, solver, as_json, x0, norm, target):
    """Closest input of another class (L1, L2 or L-inf), exact over the region (paper §5.2).

    \b
    Example:
      polytrav counterfactual net.onnx --lower 0 --upper 1 --x0 0.2,0.7 --norm 1
    """
    from polytrav.plugins.counterfactual import Counterfactual

    analysis = Counterfactual(_vector(x0, "--x0"), norm=np.inf if norm == "inf" else int(norm),
                              target=target)
    _analysis_command(network, lower, upper, vnnlib, timeout, solver, as_json, analysis)


@main.command()
@click.argument("network", type=click.Path(dir_okay=False))
@_region_options
@click.option("--feature", type=int, required=True, help="Input index.")
@click.option("--direction", type=click.Choice(["increasing", "decreasing"]), default=None,
              help="Required direction (default: either).")
@click.option("--output", type=int, default=0, show_default=True)
def monotonicity(network, lower, upper, vnnlib, timeout, solver, as_json, feature, direction,
                 output):
    """Is one output monotone in one input over the region? Every violating polytope (paper §5.3).

    \b
    Example:
      polytrav monotonicity net.onnx --lower -1 --upper 1 --feature 0 --direction increasing
    """
    from polytrav.plugins.monotonicity import Monotonicity

    _analysis_command(network, lower, upper, vnnlib, timeout, solver, as_json,
                      Monotonicity(feature, direction=direction, output=output))
