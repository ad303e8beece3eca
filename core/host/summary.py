"""Readable text of reports: ``print(report)`` and the command line's output.

A report is a warning first if it is partial, then each result's lines
(:func:`polytrav.vocabulary.text.describe_result`), then a line of counts and times.

Examples
--------
>>> from polytrav import Network, Box, analyze
>>> net = Network.from_arrays([[[1.0, 0.0], [0.0, 1.0]], [[1.0, -1.0]]], [[0.0, 0.0], [0.0]])
>>> print(analyze(net, Box([-1, -1], [1, 1]), "output_range",
...             strategy="hierarchical"))  # doctest: +ELLIPSIS
output_range: min -1, max 1 (exact)
  at x = [0, 1] (the minimum) and [1, 0] (the maximum)
  witness x = [1, 0]
  network output there = [1]
  in the polytope with activation code 11
4 polytopes, 4 LPs, 0 subproblems; ... s (+... s set-up); complete
"""
from __future__ import annotations

from polytrav.vocabulary.text import describe_result

__all__ = ["format_report", "solves_line"]


def format_report(report) -> str:
    """The text of a :class:`~polytrav.Report`: a warning first if it is partial, each
    result's lines, then a line of counts and times."""
    st = report.stats
    lines = []
    if report.partial:
        lines.append(f"PARTIAL REPORT ({report.status.value}): the run did not finish, so only "
                     "a result marked (exact) or a confirmed violation below is final; nothing "
                     "else is a proof")
    analyses = {getattr(a, "label", None): a for a in (report.analyses or [])}
    for res in report.results:
        lines += describe_result(res, analyses.get(res.analysis), report.network)
    state = ("complete" if report.complete else
             "stopped early: every analysis was decided" if report.decided else
             f"partial ({report.status.value})")
    lines.append(f"{st.get('polytopes', 0)} polytopes, {st.get('lps', 0)} LPs, "
                 f"{st.get('subproblem_solves', 0)} subproblems; {report.time:.3f} s "
                 f"(+{report.setup_time:.3f} s set-up); {state}")
    if st.get("solves"):
        lines.append(solves_line(st["solves"]))
    return "\n".join(lines)


def solves_line(solves: dict[str, dict]) -> str:
    """Per backend, the solves it answered along a chain (its seconds), and the tries that
    fell through to the next backend (``Report.stats["solves"]``)."""
    parts = []
    for name, row in solves.items():
        text = f"{name} {row['answered']} ({row['seconds']:.3f} s)"
        if row["fell_through"]:
            text += f", {row['fell_through']} fell through to the next backend"
        parts.append(text)
    return "solved by: " + "; ".join(parts)
