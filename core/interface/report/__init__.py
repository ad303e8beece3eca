"""The model-validation report of an :class:`~polytrav.host.explanation.Explanation`.

:func:`write_report` writes one self-contained file (HTML: CSS inline, figures as inline
SVG, nothing fetched; or Markdown) from the templates in ``templates/`` (jinja2): a model
card (inputs and their ranges, classes, layers, how the model was loaded), one section per
applicant (decision, reason codes, counterfactual changes in the features' units,
certificates: every counterfactual and local model analysis), dataset sections (per
counterfactual: distances, how often each feature changes, immutable features checked; rows
left unknown and why), the region table, the monotonicity table and profile plots
(:mod:`~polytrav.interface.report.model_sections`), any extra tables passed in, and every
number's status (exact / bound / unknown). In Markdown the figures are ``.svg`` files in
``<stem>_figures/`` next to the report (data URIs are not shown by GitHub or GitLab).
:meth:`Explanation.to_html` and ``to_markdown`` call it. The report of a partial explanation
(Ctrl-C) says so in its title and in a first section: the rows explained and those not.
"""
from __future__ import annotations

from pathlib import Path

from polytrav.interface.export import check_writable
from polytrav.interface.report.content import report_content
from polytrav.interface.report.figure import Figures
from polytrav.vocabulary.errors import ConfigError

__all__ = ["FORMATS", "MAX_ROWS", "write_report"]

#: Report formats by name, and the template of each.
FORMATS = {"html": "report.html.j2", "markdown": "report.md.j2"}

#: Applicant sections shown by default: the first rows (every unknown row is shown too).
MAX_ROWS = 20


def write_report(explanation, path, *, format: str | None = None, max_rows: int = MAX_ROWS,
                 title: str | None = None, regions: bool = True, monotonicity=True,
                 profiles: bool | int = True, tables: dict | None = None,
                 left_out: dict[str, str] | None = None) -> Path:
    """Write the report of ``explanation`` to ``path``; returns the path.

    Parameters
    ----------
    explanation : Explanation
        What :func:`polytrav.explain` returned.
    path : str or Path
        The file; its suffix gives the format when ``format`` is None (``.html``/``.htm``:
        HTML, ``.md``: Markdown).
    format : {"html", "markdown"}, optional
    max_rows : int
        Applicant sections for the first ``max_rows`` rows; rows left unknown or with an
        error are shown as well (at most ``10 * max_rows`` of them), so the size stays bounded.
    title : str, optional
    regions : bool
        The region table of the rows (:func:`polytrav.region_table` over the domain).
    monotonicity : bool or dict
        The monotonicity table over the domain (:func:`polytrav.monotonicity_table`); a dict
        gives its options, e.g. the budget ``{"time_limit": 5, "max_polytopes": 200}``
        (default: ``time_limit`` :data:`~polytrav.interface.report.model_sections.MONOTONICITY_TIME_LIMIT`
        seconds per feature and direction). A feature past its budget is ``unknown``.
    profiles : bool or int
        Profile plots of that many of the largest regions (True: 3).
    tables : dict, optional
        More sections: ``{heading: DataFrame-like}`` (anything with ``to_pandas()``, or a
        pandas DataFrame).
    left_out : dict, optional
        Sections left out and why, said where they would be: ``{"monotonicity": "not
        computed: the run was interrupted (Ctrl-C)"}`` (keys ``regions``, ``profiles``,
        ``monotonicity``).
    """
    path = Path(path)
    if format is None:
        suffix = path.suffix.lower()
        format = {".html": "html", ".htm": "html", ".md": "markdown"}.get(suffix)
        if format is None:
            raise ConfigError(f"report {str(path)!r}: unknown suffix {suffix!r}; use .html or "
                              ".md (or pass format='html' / 'markdown')")
    if format not in FORMATS:
        raise ConfigError(f"report: format must be one of {sorted(FORMATS)}, got {format!r}")
    if max_rows < 0:
        raise ConfigError(f"report: max_rows must be >= 0, got {max_rows}")
    check_writable(path, "report")
    figures = Figures(None if format == "html" else path.with_name(f"{path.stem}_figures"))
    content = report_content(explanation, max_rows=max_rows, title=title, tables=tables or {},
                             figures=figures, regions=regions, monotonicity=monotonicity,
                             profiles=profiles, left_out=left_out)
    text = _environment().get_template(FORMATS[format]).render(**content)
    path.write_text(text, encoding="utf-8")
    return path


def _environment():
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("polytrav.interface.report", "templates"),
        autoescape=jinja2.select_autoescape(["html.j2"]), trim_blocks=True, lstrip_blocks=True,
        undefined=jinja2.StrictUndefined)
    env.filters["cell"] = lambda v: str(v).replace("|", "\\|").replace("\n", " ")
    return env
