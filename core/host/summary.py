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

__all__ = ["format_report", "solves_line", "solves_lines", "CERTIFIED_CHOICE"]

#: Per problem form, the backend to name when a first-order one's answers fell through.
CERTIFIED_CHOICE = {"lp": "highs", "qp": "clarabel"}


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
    lines += solves_lines(st.get("solves"), lps=st.get("lps", 0),
                          subproblems=st.get("subproblem_solves", 0), chains=report.solver)
    return "\n".join(lines)


def solves_lines(solves: dict[str, dict] | None, *, lps: int = 0, subproblems: int = 0,
                 chains: dict[str, list] | None = None) -> list[str]:
    """The ``solved by:`` line (:func:`solves_line`) where it says more than the counts line
    (``lps``: the traversal's LPs): subproblems solved, solves beyond the LPs (fallbacks, a
    branch and bound), a try that fell through to another backend, or more than one backend
    answering; then, once, a note for each first-order backend whose answers fell through (a
    poor choice for the forms whose chain it leads, ``chains`` as ``Report.solver``).

    >>> solves = {"highs": {"answered": 40, "fell_through": 0, "seconds": 0.02},
    ...           "osqp": {"answered": 80, "fell_through": 40, "seconds": 0.9,
    ...                    "first_order": True}}
    >>> print("\\n".join(solves_lines(solves, chains={"lp": ["osqp", "highs"]})))
    solved by: highs 40 (0.020 s); osqp 80 (0.900 s), 40 fell through to the next backend
    note: osqp is a first-order solver: its answers are not certified, so 40 of them were solved again on another backend; LPs are faster and exact with highs (--solver lp=highs)
    >>> solves_lines({"highs": {"answered": 9, "fell_through": 0, "seconds": 0.01}}, lps=9)
    []
    """
    if not solves:
        return []
    fell = sum(r["fell_through"] for r in solves.values())
    tries = sum(r["answered"] for r in solves.values()) + fell
    if not (subproblems or fell or tries > lps
            or sum(bool(r["answered"]) for r in solves.values()) > 1):
        return []  # the traversal's LPs, each answered by its one backend: the counts say it
    lines = [solves_line(solves)]
    for name, row in solves.items():
        if row.get("first_order") and row["fell_through"]:
            forms = [f for f, chain in (chains or {}).items()
                     if chain and chain[0] == name and f in CERTIFIED_CHOICE]
            advice = "; ".join(f"{f.upper()}s are faster and exact with {CERTIFIED_CHOICE[f]} "
                               f"(--solver {f}={CERTIFIED_CHOICE[f]})" for f in forms)
            lines.append(f"note: {name} is a first-order solver: its answers are not "
                         f"certified, so {row['fell_through']} of them were solved again on "
                         "another backend" + (f"; {advice}" if advice else ""))
    return lines


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
