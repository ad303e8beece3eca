"""The ``polytrav verify`` command: one VNN-LIB instance, or a VNN-COMP ``instances.csv``
batch whose results are written row by row, on local workers or a Dask scheduler.

Answers and exit codes as in :mod:`polytrav.interface.cli`: 0 unsat, 1 sat, 2 unknown,
3 timeout, 4 bad input; a batch exits with the first of error, sat, unknown, timeout that
occurs (else 0).
"""
from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import click
import numpy as np

from polytrav.interface.cli.common import (EXIT_HOLDS, EXIT_PARTIAL, NETWORK_SUFFIXES,
                                           Progress, check_property_path, error_message,
                                           fail, proof_written, solver_option,
                                           strategy_option)
from polytrav.vocabulary.errors import PolytravError
from polytrav.vocabulary.exits import ANSWER_EXIT
from polytrav.vocabulary.results import to_json

__all__ = ["verify", "check_proof", "proof_line", "vnncomp_counterexample"]


def vnncomp_counterexample(x: np.ndarray, y: np.ndarray) -> str:
    """The counterexample in VNN-COMP's result format (``sat`` then ``((X_0 v) ... (Y_0 v))``)."""
    lines = ["sat", "("]
    lines += [f"(X_{i} {v!r})" for i, v in enumerate(np.asarray(x, float).tolist())]
    lines += [f"(Y_{j} {v!r})" for j, v in enumerate(np.asarray(y, float).tolist())]
    return "\n".join(lines + [")"])


@click.command()
@click.argument("network", required=False, type=click.Path(dir_okay=False))
@click.argument("prop", required=False, type=click.Path(dir_okay=False))
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Seconds for the instance, from the process start (VNN-COMP's "
                   "convention); in a batch, from the row's start.")
@solver_option
@click.option("--max-polytopes", type=click.IntRange(min=1), default=None, help="Polytope budget.")
@strategy_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (per instance).")
@click.option("--counterexample", type=click.Path(dir_okay=False), default=None,
              help="Write a counterexample in VNN-COMP's format to this file.")
@click.option("--proof", type=click.Path(dir_okay=False), default=None,
              help="Write a certificate of an unsat to this file (polytrav check-proof "
                   "checks it; docs/proofs.md).")
@click.option("--proof-seconds", type=click.FloatRange(min=0, min_open=True), default=None,
              help="With --proof: seconds for the certificate's phase trees (default 4 times "
                   "the run's, at least 10); what they leave unproven checks incomplete.")
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
@click.option("--network", "networks", multiple=True, metavar="NAME=FILE",
              help="A VNN-LIB 2.0 query's network and its model file (repeat for several "
                   "networks; then PROP alone names the query).")
@click.option("--route", type=click.Choice(["diff", "stack"]), default="diff",
              show_default=True,
              help="A two-network |Y_g - Y_f| > eps query (--network): decide it by "
                   "polytrav.diff over the joint partition, or as the stacked network.")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Local worker processes (instances of a batch, or parts of one traversal).")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="A Dask scheduler (tcp://host:8786) to run on instead of local workers.")
def verify(network, prop, timeout, solver, max_polytopes, strategy, as_json, counterexample,
           proof, proof_seconds, instances, results, bounds, order, split, bab, total_timeout,
           networks, route, workers, scheduler) -> None:
    """Decide a VNN-LIB property: sat (violated), unsat (holds), unknown or timeout.

    \b
    Examples:
      polytrav verify net.onnx prop_3.vnnlib --timeout 116
      polytrav verify net.onnx prop.vnnlib --json --counterexample cex.txt
      polytrav verify net.onnx prop_3.vnnlib --proof p3.proof   # then: polytrav check-proof
      polytrav verify --instances instances.csv --results results.csv --workers 2
      polytrav verify net.onnx prop.vnnlib --scheduler tcp://10.0.0.5:8786
      polytrav verify mono.vnnlib --network f=net.onnx   # VNN-LIB 2.0, several networks

    A counterexample is confirmed by a float64 forward pass and, for ONNX files, by
    onnxruntime before `sat` is printed. Ctrl-C answers `unknown` (interrupted). Exit code:
    0 unsat, 1 sat, 2 unknown, 3 timeout, 4 bad input.
    """
    if counterexample is not None:
        from polytrav.interface.export import check_writable

        if instances is not None or networks:
            fail("--counterexample FILE is for one instance NETWORK PROP (a batch's results "
                 "CSV has a counterexample column)" if instances is not None else
                 "--counterexample FILE is for NETWORK PROP; a query with --network prints "
                 "its assignment")
        check_writable(counterexample, "--counterexample")
    if proof is not None:
        from polytrav.interface.export import check_writable

        if instances is not None or networks:
            fail("--proof FILE is for one instance NETWORK PROP")
        check_writable(proof, "--proof")
    if proof_seconds is not None and proof is None:
        fail("--proof-seconds S is the budget of --proof FILE's certificate: give --proof FILE")
    if instances is not None:
        if network or prop:
            fail("give either NETWORK PROP or --instances, not both")
        with _executor(workers, scheduler) as executor:
            sys.exit(_batch(Path(instances), results, solver, max_polytopes, as_json, timeout,
                            executor, bounds=bounds, order=order, split=split, bab=bab,
                            strategy=strategy, time_limit=total_timeout))
    if timeout is not None:  # VNN-COMP's convention: seconds from the process start
        from polytrav.interface.console import since_start

        timeout = max(timeout - since_start(), sys.float_info.min)  # spent: answers timeout
    if networks and strategy != "auto":
        fail("--strategy is for one network's property; a query with --network runs its own "
             "route (--route): drop --strategy")
    if networks:
        if prop is not None or network is None:
            fail("with --network NAME=FILE give only the query: polytrav verify QUERY "
                 "--network NAME=FILE ...")
        sys.exit(_run_query(network, _mapping(networks), timeout, as_json, solver, route))
    if network and prop:
        if (Path(network).suffix.lower() == ".vnnlib"
                and Path(prop).suffix.lower() in NETWORK_SUFFIXES):
            fail(f"verify takes NETWORK then PROP; {network!r} is a property and {prop!r} a "
                 "network: swap them")
        check_property_path(prop, "PROP")
    if network and prop and _is_v2_instance(prop):
        if strategy != "auto":
            fail(f"--strategy is for a VNN-LIB 1.0 property; {prop} is a VNN-LIB 2.0 query, "
                 "which runs its own route (--route): drop --strategy")
        sys.exit(_run_query(prop, {None: network}, timeout, as_json, solver, route))
    if not (network and prop):
        fail("verify needs NETWORK and PROP (or --instances FILE); see polytrav verify --help")
    if results or total_timeout is not None:
        fail("--results and --total-timeout belong to a batch: give --instances FILE")
    with _executor(workers, scheduler) as executor:
        result = _run_one(network, prop, timeout, solver, max_polytopes,
                          None if workers is None and scheduler is None else executor,
                          bounds=bounds, order=order, split=split, bab=bab, proof=proof,
                          proof_seconds=proof_seconds, strategy=strategy)
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
        click.echo(result.work_line())
        if proof is not None:
            click.echo(proof_line(result, proof))
        if result.solves:
            from polytrav.host.summary import solves_lines

            for line in solves_lines(result.solves, chains=result.reports[0].solver,
                                     lps=sum(r.stats["lps"] for r in result.reports),
                                     subproblems=sum(r.stats["subproblem_solves"]
                                                     for r in result.reports)):
                click.echo(line)
    sys.exit(result.exit_code)


def proof_line(result, path) -> str:
    """What ``--proof`` wrote: the certificate's leaves (those without evidence named), or
    why nothing was written.

    >>> class R: answer, proof = "sat", None
    >>> proof_line(R(), "p.proof")
    'proof: none written to p.proof: the answer is sat (a certificate is written for unsat only)'
    """
    info = result.proof
    if info is None:
        return (f"proof: none written to {path}: the answer is {result.answer} (a certificate "
                "is written for unsat only)")
    return proof_written(info["path"], info, "decided by the traversal or branch and bound; "
                         "the checker answers incomplete")


@click.command("check-proof")
@click.argument("network", type=click.Path(dir_okay=False))
@click.argument("prop", type=click.Path(dir_okay=False))
@click.argument("certificate", type=click.Path(dir_okay=False), required=False)
@click.option("--epsilon", type=float, default=None,
              help="The certificate is diff's (polytrav diff --proof): NETWORK and PROP are the "
                   "models F and G, the claim |g_j - f_j| <= E on the box --lower/--upper.")
@click.option("--output", type=int, default=None,
              help="The certificate is an output range's (polytrav attack --output J --proof): "
                   "NETWORK CERTIFICATE, the claim MIN < y_J < MAX on the box.")
@click.option("--lower", default=None, help="With --epsilon or --output: the box's lower "
                                            "corner, comma-separated.")
@click.option("--upper", default=None, help="With --epsilon or --output: its upper corner.")
@click.option("--outputs", default=None, help="With --epsilon: the outputs compared, "
                                              "comma-separated (default all).")
@click.option("--min", "low", default=None, help="With --output: the range's claimed bound below.")
@click.option("--max", "high", default=None, help="With --output: the bound above.")
@click.option("--x0", default=None,
              help="The certificate is a counterfactual's (polytrav counterfactual --norm inf "
                   "--proof): NETWORK CERTIFICATE, no input of another class than x0's within "
                   "L-infinity distance --radius R (none: in the box) inside the box.")
@click.option("--radius", default=None, help="With --x0: the radius (just below the minimum).")
@click.option("--target", default=None, help="With --x0: the class asked for.")
@click.option("--threshold", default=None, help="With --x0: a regressor's threshold.")
@click.option("--scale", default=None, help="With --x0: the inputs' scales, comma-separated.")
def check_proof(network, prop, certificate, epsilon, output, lower, upper, outputs, low,
                high, x0, radius, target, threshold, scale) -> None:
    """Check a certificate of unsat (polytrav verify --proof), of diff's epsilon-equivalence
    (polytrav diff --proof), of an output's range (polytrav attack --output J --proof) or of
    an L-infinity counterfactual's minimum (polytrav counterfactual --norm inf --proof):
    valid, invalid or incomplete.

    \b
    Examples:
      polytrav check-proof net.onnx prop_3.vnnlib p3.proof
      polytrav check-proof f.onnx g.onnx d.proof --epsilon 0.05 --lower -1,-1 --upper 1,1
      polytrav check-proof net.onnx r.proof --output 0 --lower -1 --upper 1 --max 2.1174
      polytrav check-proof net.onnx c.proof --x0 0.1,0.2 --radius 0.146 --lower -1 --upper 1

    The checker (polytrav.proof.check, also the polytrav-check-proof script) reads the
    networks and the property itself and recomputes every bound with rounding accounted for;
    it prints `valid`, `invalid: step N ...` (the first step that fails) or `incomplete:
    step N ...` (a claim the certificate carries no evidence for). Exit code: 0 valid, 1
    invalid, 2 incomplete, 4 bad input.
    """
    from polytrav.proof.check import main

    opts = {"--epsilon": epsilon, "--output": output, "--lower": lower, "--upper": upper,
            "--outputs": outputs, "--min": low, "--max": high, "--x0": x0, "--radius": radius,
            "--target": target, "--threshold": threshold, "--scale": scale}
    extra = [x for k, v in opts.items() if v is not None for x in (k, str(v))]
    modes = [k for k, v in (("--epsilon", epsilon), ("--output", output), ("--x0", x0))
             if v is not None]
    if len(modes) > 1:
        fail(f"check-proof: give one of --epsilon (a diff certificate), --output (a range's) "
             f"and --x0 (a counterfactual's), not {' and '.join(modes)}")
    if modes and (lower is None or upper is None):
        fail(f"check-proof: {modes[0]} needs the box: --lower L --upper U")
    if output is not None and low is None and high is None:
        fail("check-proof: --output needs the claimed range: --min A and/or --max B")
    if x0 is not None and radius is None:
        fail("check-proof: --x0 needs --radius R (none: the whole box)")
    if not modes and extra:
        fail("check-proof: the box and the claim's values go with --epsilon (a diff "
             "certificate), --output (a range's) or --x0 (a counterfactual's)")
    files = [network, prop] + ([] if certificate is None else [certificate])
    names = (("NETWORK", "CERTIFICATE") if output is not None or x0 is not None else
             ("F", "G", "CERTIFICATE") if epsilon is not None else
             ("NETWORK", "PROP", "CERTIFICATE"))
    if len(files) != len(names):
        fail(f"check-proof: give {' '.join(names)}")
    for path, what in zip(files, names):
        if not Path(path).is_file():
            fail(f"check-proof: {what} file {path!r} not found")
    sys.exit(main(files + extra))


def _mapping(tokens) -> dict:
    out = {}
    for token in tokens:
        name, sep, path = token.partition("=")
        if not (sep and name and path):
            fail(f"--network takes NAME=FILE; {token!r} is not a network name and a file path "
                 "separated by '='")
        if name in out:
            fail(f"--network maps {name!r} more than once")
        out[name] = path
    return out


def _is_v2_instance(prop) -> bool:
    """Whether PROP is a VNN-LIB 2.0 query that needs the multi-network path."""
    from polytrav.verification.query import query_version, read_query
    from polytrav.verification.standard import needs_instance

    if not Path(prop).is_file():
        return False
    try:
        if query_version(prop) != "2.0":  # a 1.0 file is parsed once, by the usual path
            return False
        query = read_query(prop)
    except PolytravError:
        return False  # the usual path reports the error
    return needs_instance(query)


def _run_query(prop, models, timeout, as_json, solver=None, route="diff") -> int:
    """A VNN-LIB 2.0 query with several networks, hidden nodes or input-output comparisons
    (:func:`polytrav.verification.standard.decide`, as ``polytrav-vnnlib verify`` runs it;
    ``route`` as there): the answer, for ``sat`` the assignment (VNN-LIB 2.0, §5.3.1), and
    the exit code."""
    from polytrav.verification.assignment import render_assignment
    from polytrav.verification.query import read_query
    from polytrav.verification.standard import check_mapping, decide

    query = read_query(prop)
    if None in models:  # NETWORK PROP: the one network of the query without equal-to
        own = [n.name for n in query.networks if n.equal_to is None]
        if len(own) != 1:
            fail(f"{prop} declares {len(own)} networks that need a model file "
                 f"({', '.join(own)}); give each with --network NAME=FILE")
        models = {own[0]: models[None]}
    decision = decide(query, check_mapping(query, models, Path(prop).name), timeout=timeout,
                      query_name=Path(prop).name, solver=solver, route=route)
    answer = decision.answer
    if as_json:
        click.echo(to_json({"property": prop, "answer": answer, "reason": decision.reason,
                            "seconds": decision.seconds, "polytopes": decision.polytopes,
                            "lps": decision.lps, "proven": decision.proven,
                            "split": decision.split, "route": decision.route,
                            "assignment": None if decision.witness is None
                            else {k: [float(v) for v in vals] for k, vals in
                                  decision.witness.values.items()}}))
    else:
        click.echo(answer)
        if decision.witness is not None:
            click.echo(render_assignment(query, decision.witness.values), nl=False)
        elif decision.reason:
            click.echo(f"why: {decision.reason}")
        click.echo(f"{decision.work_line()} (route: {decision.route})")
    return ANSWER_EXIT[answer]


def _executor(workers, scheduler):
    from polytrav.parallel import get_executor

    try:
        return get_executor(workers, scheduler)
    except (PolytravError, OSError, ValueError, TypeError) as exc:  # a malformed address
        fail(f"--scheduler {scheduler!r}: {error_message(exc)} (expected tcp://HOST:PORT)"
              if scheduler else error_message(exc))


def _run_one(network, prop, timeout, solver, max_polytopes, executor, **options):
    from polytrav.verification.verify import verify as run

    bar = Progress(Path(prop).name, sys.stderr.isatty())
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
    """The instances of a VNN-COMP list, checked before any run (line numbers in errors):
    a header row (``onnx,vnnlib,timeout``) is skipped; every row's files must exist."""
    root = instances.parent
    rows, jobs, lines = [], [], []
    for k, row in enumerate(csv.reader(instances.open()), start=1):
        if not row or not row[0].strip() or row[0].startswith("#"):
            continue
        if len(row) < 2:
            fail(f"{instances}:{k}: expected onnx,vnnlib[,timeout], got {','.join(row)!r}")
        if not rows and _is_header(row):
            continue
        timeout = None
        if len(row) > 2 and row[2].strip():
            try:
                timeout = float(row[2])
            except ValueError:
                fail(f"{instances}:{k}: the timeout {row[2]!r} is not a number of seconds "
                     "(rows are onnx,vnnlib,timeout; a header row may come first)")
            if not timeout > 0 or not np.isfinite(timeout):
                fail(f"{instances}:{k}: the timeout must be positive seconds, got {row[2]!r}")
        rows.append(row)
        lines.append(k)
        jobs.append((_instance_path(root, row[0].strip(), "onnx"),
                     _instance_path(root, row[1].strip(), "vnnlib"), timeout_override or timeout))
    if not jobs:
        fail(f"{instances} lists no instances (rows: onnx,vnnlib[,timeout])")
    _check_instance_files(instances, lines, rows, jobs)
    return rows, jobs


def _is_header(row) -> bool:
    """A first row naming columns (``onnx,vnnlib[,timeout]``), not files: no model or
    VNN-LIB suffix, and no number of seconds."""
    if len(row) > 2 and row[2].strip():
        try:
            float(row[2])
            return False
        except ValueError:
            pass
    return (not row[0].strip().lower().endswith((".onnx", ".nnet", ".onnx.gz"))
            and not row[1].strip().lower().endswith((".vnnlib", ".vnnlib.gz")))


def _check_instance_files(instances: Path, lines, rows, jobs) -> None:
    """Every row's network and property file exist (all rows, before any run)."""
    problems = []
    for k, row, (net, prop, _) in zip(lines, rows, jobs):
        for path, name, what, folder in ((net, row[0].strip(), "network", "onnx"),
                                         (prop, row[1].strip(), "property", "vnnlib")):
            if not path.is_file():
                state = "is a folder" if path.is_dir() else "not found"
                problems.append(f"{instances}:{k}: {what} file {name!r} {state} (looked in "
                                f"{str(instances.parent.resolve())!r} and its {folder}/ folder)")
        if net.is_file() and net.suffix.lower() not in NETWORK_SUFFIXES:
            problems.append(f"{instances}:{k}: network file {row[0].strip()!r} has unknown "
                            f"format {net.suffix!r}; polytrav reads .onnx and .nnet files")
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        fail(problems[0] + more + "; fix the paths in the list (relative to its folder) and "
             "run again")


#: A batch's exit code: the first of these answers that occurs (else 0: every one unsat).
#: Which answer of a batch sets its exit code, first to last (codes: ``ANSWER_EXIT``).
_BATCH_PRECEDENCE = ("error", "sat", "unknown", "timeout")


def _batch(instances: Path, results, solver, max_polytopes, as_json, timeout_override,
           executor, **options) -> int:
    """Run every row of ``instances`` (paths relative to its folder, or to its ``onnx/`` and
    ``vnnlib/`` subfolders), writing each result as it finishes."""
    from polytrav.verification.verify import INTERRUPTED, verify_many

    if results:
        from polytrav.interface.export import check_writable

        if Path(results).resolve() == instances.resolve():
            fail(f"--results {results!r} is the instance list itself, which writing the "
                 "results would overwrite; give another file name")
        check_writable(results, "--results")
    rows, jobs = _batch_rows(instances, timeout_override)
    names = ["network", "property", "answer", "polytopes", "lps", "seconds", "reason",
             "counterexample"]
    out = open(results, "w", newline="") if results else None
    writer = csv.writer(out) if out else None
    if writer:
        writer.writerow(names)
    seen: set[str] = set()
    done = cut = 0
    try:
        def started(k: int) -> None:
            click.echo(f"running {k + 1} of {len(jobs)}: {rows[k][0]} {rows[k][1]}", err=True)

        for k, res in verify_many(jobs, executor=executor, solver=solver, on_start=started,
                                  max_polytopes=max_polytopes, **options):
            seen.add(str(res.answer))
            if res.reason == INTERRUPTED:
                cut += 1
            else:
                done += 1
            cex = "" if res.counterexample is None else json.dumps(
                np.asarray(res.counterexample, float).tolist())
            rec = [rows[k][0], rows[k][1], res.answer, res.polytopes, res.lps,
                   f"{res.seconds:.3f}", res.reason, cex]
            if writer:
                writer.writerow(rec)
                out.flush()
            if as_json:
                click.echo(to_json({"network": rows[k][0], "property": rows[k][1],
                                    **res.to_dict()}))
            else:
                why = f": {res.reason}" if res.answer in ("error", "unknown") and res.reason else ""
                click.echo(f"{rec[0]} {rec[1]}: {rec[2]} ({res.work_line()}){why}")
    except KeyboardInterrupt:
        click.echo(f"PARTIAL: interrupted after {done} of {len(jobs)} instances"
                   + (f" ({cut} interrupted while running: answer unknown)" if cut else "")
                   + (f"; {results} holds those" if results else ""), err=True)
        return EXIT_PARTIAL
    finally:
        if out:
            out.close()
    return next((ANSWER_EXIT[answer] for answer in _BATCH_PRECEDENCE if answer in seen),
                EXIT_HOLDS)
