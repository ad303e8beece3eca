"""The model-validation report of a 1 000-row explanation: its size and the time to write it.

The rows and model of ``benchmarks/explain.py`` (scikit-learn's breast-cancer set min-max
scaled to ``[0, 1]``, rows past 569 midpoints of two rows; an ``MLPClassifier`` with
``--hidden`` ReLU layers), explained once with the CLI's default analyses (a MAD-scaled L1
counterfactual and ``local_model``, 30 s per row). Then the report is written as HTML and as
Markdown with every section (the region table, profile plots, the monotonicity table with
its default budget), and the HTML again with each section alone, each write timed
(``time.perf_counter`` around ``Explanation.to_html`` / ``to_markdown``). Sizes in bytes: the
HTML file (figures inline), the Markdown file and its figure folder.

    python benchmarks/report_size.py                       # 1000 rows, hidden 8 8
    python benchmarks/report_size.py --rows 100 --out /tmp/r.json
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from explain import dataset
from harness import header
from polytrav import explain
from polytrav.interface.report.model_sections import MONOTONICITY_TIME_LIMIT


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1000)
    p.add_argument("--hidden", type=int, nargs="+", default=[8, 8])
    p.add_argument("--max-rows", type=int, default=20, help="applicant sections (as the CLI)")
    p.add_argument("--monotonicity-time-limit", type=float, default=MONOTONICITY_TIME_LIMIT)
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "report_size.json")
    args = p.parse_args(argv)
    out = header("report_size", args, argv)
    rows, names, net, accuracy = dataset(args.rows, tuple(args.hidden), 0)
    import pandas as pd

    X = pd.DataFrame(rows, columns=names)
    t0 = time.perf_counter()
    e = explain(net, X, [("counterfactual", {"norm": 1}), "local_model"], domain=(0.0, 1.0),
                source=f"MLPClassifier{tuple(args.hidden)} on breast cancer (benchmarks)")
    out["explain_s"] = time.perf_counter() - t0
    unknown = sum(1 for r in e if r.errors or not all(res.exact for res in r.results.values()))
    out.update(rows=len(e), features=len(names), accuracy=accuracy, rows_unknown=unknown)
    mono = {"time_limit": args.monotonicity_time_limit}
    folder = Path(tempfile.mkdtemp())
    html, md = folder / "report.html", folder / "report.md"
    out["write_s"] = {
        "html": timed(lambda: e.to_html(html, max_rows=args.max_rows, monotonicity=mono)),
        "markdown": timed(lambda: e.to_markdown(md, max_rows=args.max_rows, monotonicity=mono))}
    text = html.read_text(encoding="utf-8")
    out["bytes"] = {"html": html.stat().st_size, "markdown": md.stat().st_size,
                    "markdown_figures": sum(f.stat().st_size
                                            for f in (folder / "report_figures").iterdir()),
                    "html_svg": sum(len(s.split("</svg>")[0]) + 10
                                    for s in text.split("<svg")[1:])}
    out["applicant_sections"] = text.count('<section class="applicant')
    alone = {"none": {}, "regions": {"regions": True}, "profiles": {"profiles": True},
             "monotonicity": {"monotonicity": mono}}
    off = {"regions": False, "profiles": False, "monotonicity": False}
    out["section_s"] = {k: timed(lambda v=v: e.to_html(folder / "part.html", max_rows=args.max_rows,
                                                       **{**off, **v}))
                        for k, v in alone.items()}
    print(json.dumps({k: out[k] for k in ("rows", "rows_unknown", "explain_s", "write_s",
                                          "bytes", "applicant_sections", "section_s")},
                     indent=1))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1, default=lambda o: getattr(o, "tolist",
                                                                             str)(o)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
