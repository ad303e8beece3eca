"""Job files (``polytrav run job.toml``) and the ``plugins`` / ``solvers`` commands."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from reference import TINY_NNET

from polytrav import ConfigError
from polytrav.interface.cli import main
from polytrav.interface.config import load_job, run_job

JOB = """
network = "tiny.nnet"
time_limit = 30
[region]
kind = "box"
lower = -1
upper = [1, 1]
[[analysis]]
name = "output_range"
[[analysis]]
name = "counterfactual"
x0 = [0.1, 0.2]
norm = 1
[[analysis]]
name = "monotonicity"
feature = 0
direction = "increasing"
[output]
json = "out/report.json"
csv = "report.csv"
"""


@pytest.fixture
def job(tmp_path):
    (tmp_path / "tiny.nnet").write_text(TINY_NNET)
    (tmp_path / "out").mkdir()
    path = tmp_path / "job.toml"
    path.write_text(JOB)
    return path


def test_a_job_runs_its_analyses_by_registered_name(job):
    report, spec, root = run_job(job)
    assert report.complete and [r.analysis for r in report] == ["output_range", "counterfactual",
                                                               "monotonicity"]
    assert spec.time_limit == 30 and root == job.parent
    assert all(r.exact for r in report)


def test_cli_run_writes_json_and_csv(job):
    res = CliRunner().invoke(main, ["run", str(job), "--json"])
    assert res.exit_code == 1, res.output  # complete, and monotonicity is violated
    printed = json.loads(res.stdout)
    saved = json.loads((job.parent / "out" / "report.json").read_text())
    assert printed["results"] == saved["results"] and printed["complete"]
    rows = (job.parent / "report.csv").read_text().splitlines()
    assert rows[0].startswith("analysis,verdict,value") and len(rows) == 4


@pytest.mark.parametrize("edit, message", [
    (("[output]", "[output]\nbogus = 1"), r"output: unknown key 'bogus'"),
    (('name = "monotonicity"', 'name = "monotone"'),
     r"analysis\[2\] \(monotone\): unknown analysis 'monotone'.*; known analyses: \[.*'monotonicity'"),
    (("norm = 1", "norm = 1\nradius = 3"),
     r"analysis\[1\] \(counterfactual\): .*does not take parameter\(s\) \['radius'\]; it takes"),
    (('kind = "box"', 'kind = "cube"'), r"region: kind 'cube' is not a region kind; use one of 'box', 'ball'"),
    (("time_limit = 30", 'time_limit = "soon"'), r"time_limit: must be a number .*, got 'soon'"),
    (('network = "tiny.nnet"', 'network = "missing.onnx"'), r"network: 'missing.onnx' not found \(paths in a job file are relative to"),
    (("feature = 0", "feature = 7"), r"analysis\[2\] \(monotonicity\): .*feature must be an input index in \[0, 2\)"),
    (("upper = [1, 1]", "upper = [1, 1, 1]"), r"region: "),
    (('csv = "report.csv"', 'csv = "report.csv"\nexport = "polytopes.xlsx"'),
     r"output.export: .*unknown export format '.xlsx' of 'polytopes.xlsx'; the suffix must be "
     r"one of .json, .csv, .parquet, .graphml"),
    (('csv = "report.csv"', 'csv = "report.csv"\nexport = "nowhere/polytopes.csv"'),
     r"output.export: no folder .*nowhere"),
    (('csv = "report.csv"', 'csv = "nowhere/report.csv"'), r"output.csv: no folder .*nowhere"),
])
def test_bad_jobs_name_the_key_before_any_work(job, edit, message):
    job.write_text(JOB.replace(*edit))
    with pytest.raises(ConfigError, match=message):
        run_job(job)
    res = CliRunner().invoke(main, ["run", str(job)])
    assert res.exit_code == 4 and "polytrav: error: job file" in res.output


def test_not_toml_is_an_error(tmp_path):
    bad = tmp_path / "job.toml"
    bad.write_text("network = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_job(bad)


def test_regions_of_every_kind(tmp_path):
    (tmp_path / "tiny.nnet").write_text(TINY_NNET)
    regions = {
        "ball": '[region]\nkind = "ball"\ncenter = [0, 0]\nradius = 0.5\nnorm = 2',
        "ball-in-box": '[region]\nkind = "ball"\ncenter = [0.9, 0]\nradius = 0.5\nnorm = "inf"\n'
                       '[region.within]\nkind = "box"\nlower = -1\nupper = 1',
        "polyhedron": '[region]\nkind = "polyhedron"\nA = [[1, 0], [-1, 0], [0, 1], [0, -1], [1, 1]]\n'
                      'b = [1, 1, 1, 1, 0.5]',
    }
    for name, text in regions.items():
        path = tmp_path / f"{name}.toml"
        path.write_text(f'network = "tiny.nnet"\n{text}\n[[analysis]]\nname = "region_stats"\n')
        report, _, _ = run_job(path)
        assert report.complete and report[0].value["polytopes"] >= 1, name


def test_plugins_and_solvers_commands():
    res = CliRunner().invoke(main, ["plugins", "--json"])
    assert res.exit_code == 0
    names = {a for row in json.loads(res.stdout) for a in row["analyses"]}
    assert {"output_range", "counterfactual", "linear_property"} <= names
    res = CliRunner().invoke(main, ["solvers"])
    assert res.exit_code == 0 and "highs: lp/milp, installed" in res.output
    res = CliRunner().invoke(main, ["solvers", "--json"])
    assert any(r["name"] == "osqp" and not r["certifies_optimality"] for r in json.loads(res.stdout))


@pytest.mark.parametrize("command", ["run", "verify", "plugins", "solvers", "regions", "attack",
                                     "counterfactual", "monotonicity", "diff"])
def test_every_command_has_help_with_an_example(command):
    res = CliRunner().invoke(main, [command, "--help"])
    assert res.exit_code == 0 and "Example" in res.output


def test_analysis_commands_print_their_results(tmp_path):
    from polytrav.plugins.output_range import OutputRange
    from polytrav import Box, Network, analyze

    net_path = tmp_path / "tiny.nnet"
    net_path.write_text(TINY_NNET)
    box = ["--lower", "-1", "--upper", "1"]
    res = CliRunner().invoke(main, ["attack", str(net_path), *box, "--json"])
    assert res.exit_code == 0, res.output
    got = json.loads(res.stdout)["results"][0]["value"]
    want = analyze(Network.from_nnet(net_path), Box(-1, 1), OutputRange())[0].value
    assert got == pytest.approx(want)
    res = CliRunner().invoke(main, ["counterfactual", str(net_path), *box, "--x0", "0.1,0.2",
                                    "--norm", "inf", "--json"])
    out = json.loads(res.stdout)["results"][0]
    assert res.exit_code == 0 and out["value"] is None and out["exact"]  # the class never changes
    res = CliRunner().invoke(main, ["monotonicity", str(net_path), *box, "--feature", "0"])
    assert res.exit_code == 1 and res.output.startswith("monotonicity: VIOLATED")  # both signs
    res = CliRunner().invoke(main, ["counterfactual", str(net_path), *box, "--x0", "0.1,zz"])
    assert res.exit_code == 4 and "--x0 must be comma-separated numbers" in res.output


def test_ctrl_c_gives_a_clearly_partial_report(job, monkeypatch):
    """A KeyboardInterrupt mid-run ends it cleanly: the report so far, marked partial."""
    import polytrav.interface.config as config
    from polytrav.host import runner as run_module

    real = run_module.analyze
    seen = []

    def interrupting(*args, **kwargs):
        def progress(traversal):
            seen.append(traversal.frontier)
            if traversal.stats.polytopes >= 2:
                raise KeyboardInterrupt
        kwargs["progress"] = progress
        return real(*args, **kwargs)

    monkeypatch.setattr(run_module, "analyze", interrupting)
    report, _, _ = config.run_job(job)
    assert report.status.value == "interrupted" and not report.complete
    assert report.stats["polytopes"] == 2
    # only a confirmed violation may stay exact; every measurement is marked inexact
    assert not any(r.exact for r in report if r.verdict is None or r.verdict.value != "violated")
    assert all(isinstance(f, int) for f in seen)
    monkeypatch.setattr(config, "run_job", lambda path, progress=None, **options: (report, *load_job(path)))
    res = CliRunner().invoke(main, ["run", str(job)])
    # partial, but a violation confirmed before Ctrl-C is final: exit code 1 (violated)
    assert res.exit_code == 1 and res.output.startswith("PARTIAL REPORT (interrupted)")


def test_a_third_party_analysis_is_configured_by_its_entry_point_name(job, monkeypatch,
                                                                     example_plugin):
    """The example package's ``output_bounds`` (registered only through its entry point)."""
    monkeypatch.setenv("POLYTRAV_DISABLE_PLUGIN_AUTOLOAD", "0")
    job.write_text(JOB.split("[[analysis]]")[0]
                   + '[[analysis]]\nname = "output_bounds"\nlower = -100\nupper = 100\n')
    report, _, _ = run_job(job)
    assert report[0].analysis == "output_bounds" and report[0].verdict.value == "holds"
    job.write_text(job.read_text().replace("upper = 100", "upper = 100\nmiddle = 0"))
    with pytest.raises(ConfigError, match=r"'output_bounds' does not take parameter\(s\) \['middle'\]"):
        run_job(job)


def test_an_unknown_export_format_is_refused_at_load_time(job):
    job.write_text(JOB + 'export = "polytopes.txt"\n')
    with pytest.raises(ConfigError, match=r"output.export: .*'.txt'"):
        load_job(job)  # before the network file is even looked at


_KEEPS = "keep_polytopes" in __import__("inspect").signature(
    __import__("polytrav").analyze).parameters


@pytest.mark.skipif(not _KEEPS, reason="analyze() has no keep_polytopes yet")
@pytest.mark.parametrize("suffix", [".json", ".csv", ".graphml"])
def test_a_job_writes_its_outputs_and_export(job, suffix):
    from polytrav.interface.config import write_job_outputs
    from polytrav.interface.export import write_report

    if suffix == ".graphml":
        pytest.importorskip("networkx")
    job.write_text(JOB + f'export = "out/polytopes{suffix}"\n')
    report, spec, root = run_job(job)
    assert report.polytopes is not None and len(report.polytopes) == report.stats["polytopes"]
    written = write_job_outputs(report, spec, root)
    assert written == [root / "out" / "report.json", root / "report.csv",
                       root / "out" / f"polytopes{suffix}"]
    write_report(report, root / "same.csv")
    assert (root / "report.csv").read_text() == (root / "same.csv").read_text()
    assert json.loads((root / "out" / "report.json").read_text())["complete"]
    exported = root / "out" / f"polytopes{suffix}"
    if suffix == ".json":
        doc = json.loads(exported.read_text())
        assert doc["report"]["results"] == json.loads((root / "out" / "report.json").read_text())["results"]
        assert len(doc["polytopes"]) == report.stats["polytopes"]
    elif suffix == ".csv":
        assert len(exported.read_text().splitlines()) == 1 + report.stats["polytopes"]
    else:
        import networkx as nx

        assert nx.read_graphml(exported).number_of_nodes() == report.stats["polytopes"]


def test_write_job_outputs_without_an_output_table_writes_nothing(job):
    from polytrav.interface.config import write_job_outputs

    job.write_text(JOB.split("[output]")[0])
    report, spec, root = run_job(job)
    assert write_job_outputs(report, spec, root) == []
    assert report.polytopes is None
    report, _, _ = run_job(job, keep_polytopes=True)
    assert len(report.polytopes) == report.stats["polytopes"]
