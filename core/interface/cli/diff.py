"""``polytrav diff F G``: two models over one region (:func:`polytrav.diff`)."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from polytrav.interface.cli.analysis import region_from
from polytrav.interface.cli.common import (EXIT_HOLDS, EXIT_PARTIAL, EXIT_VIOLATED, Progress,
                                           fail, proof_written, solver_option)
from polytrav.vocabulary.results import Verdict, to_json

__all__ = ["diff", "DIFF_EXPORTS"]

#: What ``--export`` writes: JSON (everything), or one row per compared output.
DIFF_EXPORTS = (".json", ".csv", ".parquet")


@click.command()
@click.argument("f_model", metavar="F", type=click.Path(dir_okay=False))
@click.argument("g_model", metavar="G", type=click.Path(dir_okay=False))
@click.option("--lower", help="Box lower corner, comma-separated (one value broadcasts).")
@click.option("--upper", help="Box upper corner, comma-separated.")
@click.option("--vnnlib", type=click.Path(dir_okay=False),
              help="Take the region from a VNN-LIB file's (first) input box instead; a "
                   "two-network |Y_g - Y_f| > eps query also gives epsilon and the outputs.")
@click.option("--epsilon", type=click.FloatRange(min=0), default=None,
              help="Decide epsilon-equivalence: max |g_j - f_j| <= E over the region.")
@click.option("--verdict-only", is_flag=True,
              help="Only the epsilon verdict: stop at the first violation.")
@click.option("--outputs", default=None,
              help="The outputs compared, comma-separated (default all).")
@click.option("--no-decisions", is_flag=True, help="Skip decision changes and their share.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Seconds of work (an incomplete run is partial).")
@click.option("--max-polytopes", type=click.IntRange(min=1), default=None,
              help="Polytope budget (a run cut short is partial).")
@solver_option
@click.option("--plot", type=click.Path(dir_okay=False), default=None,
              help="Draw a 2-D slice: where the decisions differ and the worst point.")
@click.option("--dims", nargs=2, type=int, default=None,
              help="The slice's two inputs (needed above 2 inputs); the others at the box centre.")
@click.option("--export", "export_path", type=click.Path(dir_okay=False), default=None,
              help="Write the result: .json (everything), .csv or .parquet (one row per output).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--proof", type=click.Path(dir_okay=False), default=None,
              help="With --epsilon: where the verdict holds, write a certificate to this file "
                   "(polytrav check-proof F G FILE --epsilon E --lower L --upper U checks it; "
                   "docs/proofs.md).")
@click.option("--proof-seconds", type=click.FloatRange(min=0, min_open=True), default=None,
              help="With --proof: seconds for the certificate (default 4 times the diff's, at "
                   "least 10); what it leaves unproven checks incomplete.")
@click.option("--rows", "rows_path", type=click.Path(dir_okay=False), default=None,
              help="Also list the rows of this CSV file whose decision changes (forward "
                   "passes); without a box, only that.")
@click.option("--index-col", default=None, help="The --rows CSV column holding the rows' labels.")
@click.option("--drop", multiple=True, metavar="COLUMN",
              help="A --rows CSV column that is not an input (a label); repeat or comma-separate.")
def diff(f_model, g_model, lower, upper, vnnlib, epsilon, verdict_only, outputs, no_decisions,
         timeout, max_polytopes, solver, plot, dims, export_path, as_json, proof, proof_seconds,
         rows_path, index_col, drop) -> None:
    """Compare two models F and G (.onnx, .nnet, .skops) over a box, exactly.

    Prints the largest |g - f| per output with a witness, whether any decision changes
    (with the share of the region), and with --epsilon the verdict. Exit code: 0 holds /
    complete, 1 violated (a checked point with |g - f| > E), 2 partial or unknown.

    --vnnlib QUERY with a VNN-LIB 2.0 query of two networks (inputs tied equal, a box on
    one network's inputs, unsafe |Y_g[j] - Y_f[j]| > eps for some j) takes the box, eps
    (unless --epsilon is given) and the outputs named (unless --outputs) from it; F is
    the network declared first.

    \b
    Examples:
      polytrav diff old.onnx new.onnx --lower 0 --upper 1
      polytrav diff old.onnx new.onnx --lower 0 --upper 1 --epsilon 0.05 --export diff.json
      polytrav diff old.onnx new.onnx --lower -1,-1 --upper 1,1 --plot diff.png
      polytrav diff old.skops new.skops --rows applicants.csv --drop default
      polytrav diff f.onnx g.onnx --vnnlib eps_query.vnnlib --verdict-only

    With --rows DATA.csv (a header row of the models' input names, as for polytrav
    explain) the rows whose decision changes are listed too; with --rows and no box, only
    they are (exit code 0).
    """
    from polytrav.host.diff import diff as run_diff, joint_network
    from polytrav.interface.model_file import load_model

    if export_path is not None:
        _check_export(export_path)
    pair = _pair_query(vnnlib, lower, upper) if vnnlib is not None else None
    if pair is not None:
        epsilon = float(pair.epsilon) if epsilon is None else epsilon
        outputs = ",".join(map(str, pair.outputs)) if outputs is None else outputs
    if verdict_only and epsilon is None:
        fail("--verdict-only needs --epsilon E (the epsilon of the verdict)")
    if proof_seconds is not None and proof is None:
        fail("--proof-seconds S is the budget of --proof FILE's certificate: give --proof FILE")
    if proof is not None:
        from polytrav.interface.export import check_writable

        if epsilon is None:
            fail("--proof FILE certifies the epsilon verdict: give --epsilon E")
        check_writable(proof, "--proof")
    if plot is not None:
        from polytrav.interface.plot.check import check_figure_path

        check_figure_path(plot)
    f, _ = load_model(f_model)
    g, _ = load_model(g_model)
    joint_network(f, g)  # same sizes, or one line naming them
    rows = None
    if rows_path is not None:
        from polytrav.host.diff_rows import changed_rows
        from polytrav.interface.cli.explain import read_rows

        X = read_rows(rows_path, f, index_col, [c for item in drop for c in item.split(",") if c])
        rows = (len(X), changed_rows(f, g, X))
        if lower is None and upper is None and vnnlib is None:
            _print_rows(rows, as_json)
            sys.exit(EXIT_HOLDS)
    outs = _outputs(outputs, f.n_outputs)
    if plot is not None:
        from polytrav.interface.plot.check import plane_dims

        plane_dims(f.n_inputs, dims)
    if pair is None:
        region = region_from(f, lower, upper, vnnlib)
    elif pair.lower.size != f.n_inputs or max(pair.outputs) >= f.n_outputs:
        fail(f"{vnnlib} is over {pair.lower.size} inputs and outputs up to "
             f"{max(pair.outputs)}, but the models take {f.n_inputs} inputs and give "
             f"{f.n_outputs} outputs")
    else:
        from polytrav.model.region import Box

        region = Box(pair.lower, pair.upper)
    if proof is not None and not region.is_box:
        fail("--proof FILE certifies a box: give --lower/--upper (this region has input rows)")
    bar = Progress("diff", sys.stderr.isatty())
    try:
        res = run_diff(f, g, region, outputs=outs, epsilon=epsilon,
                       decisions=not no_decisions, verdict_only=verdict_only, solver=solver,
                       time_limit=timeout, max_polytopes=max_polytopes, progress=bar,
                       on_interrupt="report")
    finally:
        bar.close()
    written = None if proof is None or res.verdict is not Verdict.HOLDS else _write_proof(
        f, g, region, epsilon, outs, res.time, proof, solver, proof_seconds)
    if written is not None:
        written["check"] = _check_command(region, epsilon, outs, proof)
    if as_json:
        out = res.to_dict()
        if rows is not None:
            out["rows"] = _rows_dict(rows)
        click.echo(to_json(out))
    else:
        click.echo(str(res))
        if rows is not None:
            _print_rows(rows, False)
    if proof is not None:
        click.echo(_proof_line(res, written, proof), err=as_json)
    if export_path is not None:
        _export(res, export_path)
    if plot is not None:
        from polytrav.interface.plot.diff import save_diff_slice

        saved = save_diff_slice(f, g, region, plot, dims=dims, solver=solver, region_result=res)
        click.echo(f"figure written to {saved}", err=True)
    if res.verdict is Verdict.VIOLATED:
        sys.exit(EXIT_VIOLATED)
    if res.verdict is Verdict.HOLDS:  # a proof, also with --verdict-only (extremes visited)
        sys.exit(EXIT_HOLDS)
    if not res.exact or res.verdict is not None:
        sys.exit(EXIT_PARTIAL)
    sys.exit(EXIT_HOLDS)


def _write_proof(f, g, region, epsilon, outputs, seconds, path, solver, budget=None) -> dict:
    """The certificate of a HOLDS, within ``budget`` seconds (``--proof-seconds``; default
    :data:`~polytrav.proof.record.REST_TIME_FACTOR` times the diff's ``seconds``, at least
    :data:`~polytrav.proof.record.REST_MIN_SECONDS`)."""
    from polytrav.proof.equivalence import write_diff_proof
    from polytrav.proof.record import REST_MIN_SECONDS, REST_TIME_FACTOR

    lower, upper = region.bounding_box()
    if budget is None:
        budget = max(REST_MIN_SECONDS, REST_TIME_FACTOR * seconds)
    return write_diff_proof(f, g, lower, upper, epsilon, path, outputs=outputs, solver=solver,
                            seconds=budget)


def _proof_line(res, written, path) -> str:
    """What ``--proof`` wrote, or why nothing.

    >>> class R: verdict = Verdict.VIOLATED
    >>> _proof_line(R(), None, "d.proof")
    'proof: none written to d.proof: the verdict is violated (a certificate is written where it holds)'
    """
    if written is None:
        return (f"proof: none written to {path}: the verdict is {res.verdict.value} (a "
                "certificate is written where it holds)")
    text = proof_written(written["path"], written,
                         "its budget ran out; the checker answers incomplete")
    return text + f"; check: {written['check']}" if "check" in written else text


def _check_command(region, epsilon, outputs, path) -> str:
    """The ``check-proof`` command of a diff certificate (floats printed exactly)."""
    lower, upper = region.bounding_box()
    box = [",".join(repr(float(v)) for v in a) for a in (lower, upper)]
    outs = "" if outputs is None else " --outputs " + ",".join(map(str, outputs))
    return (f"polytrav check-proof F G {path} --epsilon {float(epsilon)!r} --lower {box[0]} "
            f"--upper {box[1]}{outs}")


def _rows_dict(rows) -> dict:
    n, changed = rows
    return {"n_rows": n, "n_changed": len(changed), "changed": [r.to_dict() for r in changed]}


def _print_rows(rows, as_json) -> None:
    """The rows whose decision changes: a count, then one line per row."""
    if as_json:
        click.echo(to_json(_rows_dict(rows)))
        return
    n, changed = rows
    click.echo(f"rows whose decision changes: {len(changed)} of {n}")
    for r in changed:
        fo = ", ".join(f"{v:.4g}" for v in r.f_output)
        go = ", ".join(f"{v:.4g}" for v in r.g_output)
        click.echo(f"  row {r.label!r}: f says {r.f_class!r} ({fo}), g says {r.g_class!r} ({go})")


def _pair_query(path, lower, upper):
    """The :class:`~polytrav.verification.diff_query.DiffShape` of a VNN-LIB 2.0 query of
    two networks, None for any other file (a one-network file's box is read as before);
    a two-network query of another shape fails, naming what it needs."""
    from polytrav.verification.diff_query import diff_shape
    from polytrav.verification.query import read_query
    from polytrav.vocabulary.errors import PolytravError

    if Path(path).suffix.lower() in (".onnx", ".nnet") or not Path(path).is_file():
        return None  # region_from says what is wrong
    try:
        query = read_query(path)
    except PolytravError:
        return None
    if len(query.networks) != 2:
        return None
    if lower is not None or upper is not None:
        fail("give the box with --lower and --upper, or --vnnlib FILE, not both")
    shape = diff_shape(query)
    if shape is None:
        fail(f"{path} declares two networks but is not a query 'is |Y_g[j] - Y_f[j]| <= eps': "
             "polytrav diff reads one with every input of one network tied equal to the "
             "other's, a box on one network's inputs, and the unsafe rows "
             "(> (- Y_g[j] Y_f[j]) eps) and (< (- Y_g[j] Y_f[j]) -eps) for each output j "
             "named; decide other queries with polytrav verify QUERY --network NAME=FILE ...")
    return shape


def _outputs(text, m):
    if text is None:
        return None
    try:
        outs = [int(v) for v in text.split(",")]
    except ValueError:
        fail(f"--outputs must be output indices, comma-separated, got {text!r}; e.g. --outputs 0,2")
    bad = [j for j in outs if not 0 <= j < m]
    if bad:
        fail(f"--outputs {text!r}: the models have {m} outputs, so indices are 0..{m - 1}; "
             f"got {bad}")
    return outs


def _check_export(path) -> None:
    from polytrav.interface.export import check_writable

    suffix = Path(path).suffix.lower()
    if suffix not in DIFF_EXPORTS:
        fail(f"--export {str(path)!r}: diff writes {', '.join(DIFF_EXPORTS)} files; end the "
             "name in one of them")
    if suffix == ".parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            fail('--export .parquet needs pyarrow: pip install "polytrav[export]"')
    check_writable(path, "export")


def _export(res, path) -> None:
    suffix = Path(path).suffix.lower()
    if suffix == ".json":
        Path(path).write_text(to_json(res.to_dict()) + "\n")
    elif suffix == ".csv":
        import csv

        rows = res.output_rows()
        with open(path, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    else:
        res.to_pandas().to_parquet(path, index=False)
    click.echo(f"exported the comparison to {path}", err=True)
