"""The commands that traverse a region or analyse it: ``regions`` (count, list, draw),
``attack``, ``counterfactual``, ``monotonicity`` (one analysis each) and ``run`` (a job file),
with their shared options (the region, ``--export``) and report printing.

Exit codes as in :mod:`polytrav.interface.cli`: 0 complete, 1 a confirmed violation,
2 partial, 4 bad input.
"""
from __future__ import annotations

import sys
from pathlib import Path

import click
import numpy as np

from polytrav.interface.cli.common import (EXIT_HOLDS, EXIT_PARTIAL, EXIT_VIOLATED, Progress,
                                           fail, parse_parameters, proof_written, solver_option,
                                           strategy_option)
from polytrav.interface.console import answered
from polytrav.vocabulary.results import Verdict, to_json

__all__ = ["regions", "analyze", "attack", "counterfactual", "monotonicity", "run", "region_from"]


def _print_report(report, as_json: bool) -> None:
    click.echo(to_json(report.to_dict()) if as_json else str(report))


def _report_exit(report) -> int:
    """1 if an analysis found a confirmed violation; 2 if any answer is not final (a verdict
    other than HOLDS, or a measurement that is not exact); else 0."""
    if any(r.verdict is Verdict.VIOLATED for r in report.results):
        return EXIT_VIOLATED
    if report.partial or any(r.verdict is not Verdict.HOLDS if r.verdict is not None
                             else not r.exact for r in report.results):
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


@click.command()
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
    bar = Progress(Path(job).name, sys.stderr.isatty())
    try:
        report, spec, root = run_job(job, progress=bar, on_interrupt="report",
                                     keep_polytopes=bool(export_path))
        answered()  # the report is in hand: a Ctrl-C now would only lose it
    finally:
        bar.close()
    write_job_outputs(report, spec, root)
    _write_export(export_path, report.polytopes, report=report)
    _print_report(report, as_json)
    sys.exit(_report_exit(report))


def _vector(text: str | None, what: str):
    """Comma-separated numbers (NaN refused; ``inf`` is read, callers that need finite
    values refuse it)."""
    if text is None:
        return None
    try:
        values = np.array([float(v) for v in text.split(",")])
    except ValueError:
        fail(f"{what} must be comma-separated numbers, got {text!r}")
    if np.isnan(values).any():
        fail(f"{what} contains NaN (entry {int(np.flatnonzero(np.isnan(values))[0])}); give numbers")
    return values


def _finite(values, what: str):
    if values is not None and not np.isfinite(values).all():
        fail(f"{what} must be finite, got {values.tolist()}")
    return values


@click.command()
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
              help="Seconds of traversal, after the one-time imports (an incomplete count "
                   "is marked as such).")
@strategy_option
@solver_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@_export_option
def regions(network, lower, upper, vnnlib, as_list, plot, dims, labels, max_polytopes, timeout,
            strategy, solver, as_json, export_path) -> None:
    """Count, list or draw the linear regions of a network inside a box.

    \b
    Examples:
      polytrav regions net.onnx --lower -1 --upper 1
      polytrav regions net.onnx --lower -1,-1 --upper 1,1 --list
      polytrav regions net.onnx --lower -1,-1 --upper 1,1 --plot partition.png
      polytrav regions net.onnx --lower -1,-1 --upper 1,1 --strategy subdivision
      polytrav regions net.onnx --lower -1,-1 --upper 1,1 --strategy hierarchical --solver scipy
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
        fail("--dims and --labels only shape the picture: give --plot FILE too")
    if plot:
        from polytrav.interface.plot import check_figure_path

        check_figure_path(plot)
    net = load_network(network)
    region = region_from(net, lower, upper, vnnlib)
    names = None if labels is None else [v.strip() for v in labels.split(",")]
    if names is not None and not all(names):
        fail(f"--labels has an empty name ({labels!r}); give one name per input, "
              "comma-separated")
    if plot:
        from polytrav.interface.plot import check_plane

        check_plane(net, dims, names, region)
    if isinstance(solver, dict):  # the traversal solves LPs only
        if set(solver) - {"lp"}:
            fail(f"regions solves LPs only (the traversal's and subdivision's thin cells): "
                 f"give --solver NAME or lp=NAME, not {sorted(set(solver) - {'lp'})}")
        solver = solver["lp"]
    bar = Progress("regions", sys.stderr.isatty())
    run = traverse(net, region, strategy=strategy, solver=solver, max_polytopes=max_polytopes,
                   time_limit=timeout)
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


def region_from(net, lower, upper, vnnlib):
    """The region of a command: a box from --lower/--upper, or a VNN-LIB file's input box."""
    from polytrav.model.region import Box

    if vnnlib:
        if lower is not None or upper is not None:
            fail("give the box with --lower and --upper, or --vnnlib FILE, not both")
        from polytrav.interface.config import vnnlib_region

        region = vnnlib_region(vnnlib, net)
    elif lower is None or upper is None:
        fail("give the box with --lower and --upper (e.g. --lower -1 --upper 1), or --vnnlib FILE")
    else:
        lo, hi = _vector(lower, "--lower"), _vector(upper, "--upper")
        n = net.n_inputs
        for what, v in (("--lower", lo), ("--upper", hi)):
            if v.size not in (1, n):
                fail(f"{what} has {v.size} values but the network takes {n} inputs ({n} are "
                     "needed, comma-separated, or one value for every input)")
        open_ = [(w, v) for w, v in (("--lower", lo), ("--upper", hi)) if not np.isfinite(v).all()]
        if open_:
            fail(f"{open_[0][0]} must be finite numbers, got {open_[0][1].tolist()}; polytrav "
                 "traverses bounded boxes: give every input a finite lower and upper bound")
        crossed = np.flatnonzero(np.broadcast_to(lo, (n,)) > np.broadcast_to(hi, (n,)))
        if crossed.size:
            j = int(crossed[0])
            fail(f"--lower is above --upper at input {j} ({lo[min(j, lo.size - 1)]:g} > "
                 f"{hi[min(j, hi.size - 1)]:g}); swap them")
        region = Box(lo if lo.size > 1 else lo[0], hi if hi.size > 1 else hi[0])
    return region.with_dims(net.n_inputs)


def _region_options(f):
    for option in reversed([
        click.option("--lower", help="Box lower corner, comma-separated (one value broadcasts)."),
        click.option("--upper", help="Box upper corner, comma-separated."),
        click.option("--vnnlib", type=click.Path(dir_okay=False),
                     help="Take the region from a VNN-LIB file's (first) input box instead."),
        click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None,
                     help="Seconds of work, after the one-time imports (an incomplete run "
                          "is partial)."),
        click.option("--max-polytopes", type=click.IntRange(min=1), default=None,
                     help="Polytope budget (a run cut short is partial)."),
        strategy_option,
        solver_option,
        click.option("--json", "as_json", is_flag=True, help="Print the report as JSON."),
        _export_option,
    ]):
        f = option(f)
    return f


def _analysis_command(network, lower, upper, vnnlib, timeout, max_polytopes, strategy, solver,
                      as_json, export_path, analysis, check=None, after=None) -> None:
    """Run one analysis; ``check(net)`` refuses, in the CLI's words, what the analysis's own
    validation would refuse in Python's. ``analysis`` may be ``make(net, region)``.
    ``after(net, region, report)``: once the report is printed (e.g. a certificate)."""
    from polytrav.host.runner import analyze
    from polytrav.verification.verify import load_network

    _check_export(export_path)
    net = load_network(network)
    if check is not None:
        check(net)
    region = region_from(net, lower, upper, vnnlib)
    if callable(analysis):
        analysis = analysis(net, region)
    bar = Progress(analysis.name, sys.stderr.isatty())
    try:
        report = analyze(net, region, analysis, solver=solver, strategy=strategy,
                         time_limit=timeout, progress=bar,
                         max_polytopes=max_polytopes, keep_polytopes=bool(export_path),
                         on_interrupt="report")
        answered()  # the report is in hand: a Ctrl-C now would only lose it
    finally:
        bar.close()
    _write_export(export_path, report.polytopes, report=report)
    _print_report(report, as_json)
    if after is not None:
        after(net, region, report)
    sys.exit(_report_exit(report))


@click.command()
@click.argument("network", type=click.Path(dir_okay=False))
@click.argument("parameters", nargs=-1, metavar="[KEY=VALUE]...")
@click.option("--analysis", "name", required=True,
              help="A registered analysis, built-in or from a plugin (see `polytrav plugins`).")
@_region_options
def analyze(network, parameters, name, lower, upper, vnnlib, timeout, max_polytopes, strategy,
            solver, as_json, export_path) -> None:
    """Run any registered analysis, its parameters given as KEY=VALUE.

    \b
    Examples:
      polytrav analyze net.onnx --lower -1 --upper 1 --analysis output_range
      polytrav analyze net.onnx --lower 0 --upper 1 --analysis counterfactual x0=0.2,0.7 norm=1
      polytrav analyze net.onnx --lower 0 --upper 1 --analysis output_bounds lower=-1 upper=1
      polytrav analyze net.onnx --lower 0 --upper 1 --analysis counterfactual x0=0.2,0.7 \
          norm=2 --solver lp=highs,qp=osqp

    Values are TOML (numbers, inf, true, "text", [lists]); a bare a,b,c is a list. Exit code
    0 holds / complete, 1 violated, 2 unknown or partial, 4 bad input.
    """
    from polytrav.interface.analysis_params import build_analysis

    params = parse_parameters(parameters)
    _analysis_command(network, lower, upper, vnnlib, timeout, max_polytopes, strategy, solver,
                      as_json, export_path, lambda net, region: build_analysis(
                          name, params, net, region, f"polytrav analyze --analysis {name}"))


@click.command()
@click.argument("network", type=click.Path(dir_okay=False))
@_region_options
@click.option("--label", type=click.IntRange(min=0), default=None,
              help="Multiclass: the true class (worst margin of every other class's logit).")
@click.option("--output", type=click.IntRange(min=0), default=0, show_default=True,
              help="Single output (regression / binary logit): its min and max.")
@click.option("--stop-at-first", is_flag=True, help="Multiclass: stop at the first adversarial point.")
@click.option("--proof", type=click.Path(dir_okay=False), default=None,
              help="Single output: where the range is exact, write a certificate of its bounds "
                   "and witnesses to this file (polytrav check-proof NET FILE --output J ... "
                   "checks it; docs/proofs.md).")
def attack(network, lower, upper, vnnlib, timeout, max_polytopes, strategy, solver, as_json,
           export_path, label, output, stop_at_first, proof):
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
        fail("--stop-at-first needs --label (it stops at the first input where another class wins)")
    if label is not None and output != 0:
        fail("give --label (multiclass: the worst margin against a class) or --output (the "
              "range of one output), not both")
    analysis = (create_analysis("softmax_attack", label=label,
                                mode="verify" if stop_at_first else "worst")
                if label is not None else create_analysis("output_range", output=output))

    if proof is not None:
        from polytrav.interface.export import check_writable

        if label is not None:
            fail("--proof FILE certifies one output's range: drop --label")
        check_writable(proof, "--proof")

    def classes(net) -> None:
        if label is not None and net.n_outputs < 2:
            fail(f"--label needs a network of at least 2 outputs (classes); {network} has 1: "
                 "for one output drop --label, and attack gives its min and max (--output 0)")

    def certify(net, region, report) -> None:
        click.echo(_range_proof(net, region, report, output, proof, solver), err=as_json)

    _analysis_command(network, lower, upper, vnnlib, timeout, max_polytopes, strategy, solver,
                      as_json, export_path, analysis, check=classes,
                      after=None if proof is None else certify)


def _range_proof(net, region, report, output, path, solver) -> str:
    """Write the certificate of an exact output range (within
    :data:`~polytrav.proof.record.REST_TIME_FACTOR` times the run's time, at least
    :data:`~polytrav.proof.record.REST_MIN_SECONDS`); the line saying what was written and
    how to check it, or why nothing was."""
    from polytrav.proof.output_range import range_bounds, write_range_proof
    from polytrav.proof.record import REST_MIN_SECONDS, REST_TIME_FACTOR

    result = report[0]
    if not result.exact or not region.is_box:
        why = "the range is not exact" if not result.exact else "the region has input rows"
        return (f"proof: none written to {path}: {why} (a certificate is written for an exact "
                "range over a box)")
    lower, upper = region.bounding_box()
    low, high = range_bounds(result.value["min"], result.value["max"])
    written = write_range_proof(net, lower, upper, output, path, low=low, high=high,
                                witnesses=[result.details["argmin"], result.details["argmax"]],
                                solver=solver, seconds=max(REST_MIN_SECONDS,
                                                           REST_TIME_FACTOR * report.time))
    text = proof_written(path, written, "its budget ran out")
    box = ",".join(map(repr, map(float, lower))), ",".join(map(repr, map(float, upper)))
    return (text + f"; check: polytrav check-proof NET {path} --output {output} --lower "
            f"{box[0]} --upper {box[1]} --min {low!r} --max {high!r}")


@click.command()
@click.argument("network", type=click.Path(dir_okay=False))
@_region_options
@click.option("--x0", required=True, help="The input to explain, comma-separated.")
@click.option("--norm", type=click.Choice(["1", "2", "inf"]), default="2", show_default=True,
              help="The distance: L1, L2 or L-infinity.")
@click.option("--target", type=click.IntRange(min=0), default=None,
              help="Multiclass: the class to reach.")
@click.option("--threshold", type=float, default=None,
              help="One output: the decision threshold (a regressor needs one: the nearest "
                   "input whose prediction is on the other side of it).")
@click.option("--proof", type=click.Path(dir_okay=False), default=None,
              help="With --norm inf: where the minimum is exact, write a certificate that no "
                   "input of another class is nearer (polytrav check-proof NET FILE --x0 ... "
                   "checks it; docs/proofs.md).")
def counterfactual(network, lower, upper, vnnlib, timeout, max_polytopes, strategy, solver,
                   as_json, export_path, x0, norm, target, threshold, proof):
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
                               norm=np.inf if norm == "inf" else int(norm), target=target,
                               threshold=threshold)
    if proof is not None:
        from polytrav.interface.export import check_writable

        if norm != "inf":
            fail(f"--proof FILE certifies an L-infinity minimum (--norm inf); an L{norm} "
                 "minimum has no certificate of this kind (docs/proofs.md)")
        check_writable(proof, "--proof")

    def certify(net, region, report) -> None:
        click.echo(_ball_proof(net, region, report, proof, solver, target), err=as_json)

    _analysis_command(network, lower, upper, vnnlib, timeout, max_polytopes, strategy, solver,
                      as_json, export_path, analysis, after=None if proof is None else certify)


def _ball_proof(net, region, report, path, solver, target) -> str:
    """Write the certificate of an exact L-infinity counterfactual's minimum (budget as
    :func:`_range_proof`'s); the line saying what was written and how to check it, or why
    nothing was."""
    from polytrav.proof.counterfactual import radius_below, write_ball_proof
    from polytrav.proof.record import REST_MIN_SECONDS, REST_TIME_FACTOR

    result = report[0]
    if not result.exact or not region.is_box:
        why = "the minimum is not exact" if not result.exact else "the region has input rows"
        return (f"proof: none written to {path}: {why} (a certificate is written for an exact "
                "minimum over a box)")
    det = result.details
    lower, upper = region.bounding_box()
    radius = radius_below(result.value)
    written = write_ball_proof(net, det["x0"], radius, lower, upper, path,
                               target=target, threshold=det["threshold"], scale=det["scale"],
                               solver=solver, seconds=max(REST_MIN_SECONDS,
                                                          REST_TIME_FACTOR * report.time))
    text = proof_written(path, written, "its budget ran out")

    def csv(v):
        return ",".join(repr(float(x)) for x in np.atleast_1d(v))
    extra = "".join(f" --{k} {v}" for k, v in (
        ("target", target), ("threshold", None if det["threshold"] is None else repr(float(det["threshold"]))),
        ("scale", None if det["scale"] is None else csv(det["scale"]))) if v is not None)
    return (text + f"; check: polytrav check-proof NET {path} --x0 {csv(det['x0'])} --radius "
            f"{'none' if radius is None else repr(radius)} --lower {csv(lower)} --upper "
            f"{csv(upper)}{extra}")


@click.command()
@click.argument("network", type=click.Path(dir_okay=False))
@_region_options
@click.option("--feature", type=click.IntRange(min=0), required=True, help="Input index (0-based).")
@click.option("--direction", type=click.Choice(["increasing", "decreasing"]), default=None,
              help="Required direction (default: either).")
@click.option("--output", type=click.IntRange(min=0), default=0, show_default=True,
              help="The output whose slope is checked (0-based).")
@click.option("--stop-at-first", is_flag=True,
              help="Stop at the first confirmed violating pair (needs --direction).")
def monotonicity(network, lower, upper, vnnlib, timeout, max_polytopes, strategy, solver,
                 as_json, export_path, feature, direction, output, stop_at_first):
    """Is one output monotone in one input over the region? Every violating polytope (paper §5.3).

    \b
    Example:
      polytrav monotonicity net.onnx --lower -1 --upper 1 --feature 0 --direction increasing

    Exit code 0 monotone (complete), 1 a confirmed violating pair, 2 partial, 4 bad input.
    """
    from polytrav.host.manager import create_analysis

    analysis = create_analysis("monotonicity", feature=feature, direction=direction,
                               output=output, stop_at_first=stop_at_first)
    _analysis_command(network, lower, upper, vnnlib, timeout, max_polytopes, strategy, solver,
                      as_json, export_path, analysis)
