"""The docs stay true to the code: hook signatures, snippet includes, analyses, examples."""
from __future__ import annotations

import importlib.util
import inspect
import re
import sys
from pathlib import Path

import pytest

from polytrav.host import hookspecs
from polytrav.host.manager import analysis_classes, get_plugin_manager

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

#: ``--8<-- "path"`` on a line of its own (pymdownx.snippets, base_path = repo root).
SNIPPET = re.compile(r'^\s*--8<--\s+"([^"]+)"\s*$', re.M)
#: A fenced python block.
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)


def _headings(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.startswith("#")]


def _hookspecs() -> dict[str, object]:
    return {name: fn for name, fn in vars(hookspecs).items()
            if name.startswith("polytrav_") and callable(fn)
            and getattr(fn, "polytrav_spec", None) is not None}


def _signature_text(name: str, fn) -> str:
    """``name(arg, ...)`` as written in the hookspec, without annotations."""
    sig = inspect.signature(fn)
    params = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()]
    return name + str(sig.replace(parameters=params, return_annotation=inspect.Signature.empty))


def test_there_are_hookspecs():
    assert {"polytrav_add_solvers", "polytrav_add_analyses", "polytrav_visit_polytope"} <= set(
        _hookspecs())


@pytest.mark.parametrize("name", sorted(_hookspecs()))
def test_every_hookspec_has_a_heading_with_its_exact_signature(name):
    expected = _signature_text(name, _hookspecs()[name])
    headings = _headings(DOCS / "hooks.md")
    assert any(expected in h for h in headings), (
        f"docs/hooks.md has no heading containing {expected!r}; headings: {headings}")


def test_hooks_doc_names_no_hook_that_does_not_exist():
    specs = _hookspecs()
    for heading in _headings(DOCS / "hooks.md"):
        for name in re.findall(r"\b(polytrav_\w+)\(", heading):
            assert name in specs, f"docs/hooks.md documents {name!r}, which is not a hookspec"


def _hook_sections() -> dict[str, str]:
    """The text of each ``### `polytrav_...(...)``` section of docs/hooks.md."""
    text = (DOCS / "hooks.md").read_text(encoding="utf-8")
    parts = re.split(r"^### `(polytrav_\w+)\(.*$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def test_the_hook_table_lists_every_hook_and_nothing_else():
    text = (DOCS / "hooks.md").read_text(encoding="utf-8")
    table = set(re.findall(r"^\| [^|]+ \| `(polytrav_\w+)\(", text, re.M))
    assert table == set(_hookspecs())


@pytest.mark.parametrize("name", sorted(_hookspecs()))
def test_every_hook_says_what_it_returns_in_the_spec_and_the_docs(name):
    assert ":returns:" in (_hookspecs()[name].__doc__ or ""), f"{name}: the hookspec has no :returns:"
    assert "**Returns:**" in _hook_sections()[name], f"docs/hooks.md: {name} has no **Returns:**"


def test_the_voting_hooks_are_the_ones_the_docs_call_voting():
    from polytrav.host.steering import VOTING_HOOKS

    text = (DOCS / "hooks.md").read_text(encoding="utf-8")
    said = re.search(r"The two \*voting\* hooks \((.*?)\)", text, re.S).group(1)
    assert set(re.findall(r"polytrav_\w+", said)) == set(VOTING_HOOKS)


def test_the_registration_hooks_run_when_the_docs_say(example_plugin, monkeypatch, tiny_net):
    """docs/hooks.md and the hookspecs: ``polytrav_add_solvers`` once per manager (until its
    plugin set changes) and so once per ``analyze()``; ``polytrav_add_analyses`` at every read
    of the analysis registry, and not by a run given analysis instances."""
    from polytrav import Box, analyze, hookimpl
    from polytrav.host.manager import solver_classes
    from polytrav.plugins import OutputRange

    monkeypatch.setenv("POLYTRAV_DISABLE_PLUGIN_AUTOLOAD", "0")  # the suite's default is 1
    calls = {"polytrav_add_solvers": 0, "polytrav_add_analyses": 0}
    for name in calls:
        def counted(name=name, hook=getattr(example_plugin, name)):
            calls[name] += 1
            return hook()
        monkeypatch.setattr(example_plugin, name, hookimpl(counted))
    pm = get_plugin_manager()
    assert calls == {"polytrav_add_solvers": 0, "polytrav_add_analyses": 0}  # not when built
    for _ in range(2):
        solver_classes(pm)
        analysis_classes(pm)
    assert calls == {"polytrav_add_solvers": 1, "polytrav_add_analyses": 2}
    pm.register(object(), name="another plugin")  # a changed plugin set asks again
    solver_classes(pm)
    assert calls == {"polytrav_add_solvers": 2, "polytrav_add_analyses": 2}
    box = Box([-1, -1], [1, 1])
    analyze(tiny_net, box, ["output_range"])
    assert calls == {"polytrav_add_solvers": 3, "polytrav_add_analyses": 3}
    analyze(tiny_net, box, [OutputRange()])
    assert calls == {"polytrav_add_solvers": 4, "polytrav_add_analyses": 3}


def _snippets() -> list[tuple[str, str]]:
    out = []
    for doc in sorted(DOCS.glob("*.md")):
        for target in SNIPPET.findall(doc.read_text(encoding="utf-8")):
            out.append((doc.name, target))
    return out


def test_writing_plugins_includes_the_example_package():
    included = {target for doc, target in _snippets() if doc == "writing-plugins.md"}
    assert {"tests/example_plugin/pyproject.toml",
            "tests/example_plugin/polytrav_example/__init__.py",
            "tests/example_plugin/polytrav_example/bounds.py",
            "tests/example_plugin/polytrav_example/backend.py"} <= included


@pytest.mark.parametrize("doc, target", _snippets())
def test_every_snippet_include_points_to_an_existing_file(doc, target):
    path = re.sub(r"(:-?\d+)+$", "", target)  # "file:start:end" line ranges
    assert (ROOT / path).is_file(), f"docs/{doc} includes {target!r}, which does not exist"


@pytest.mark.parametrize("name", sorted(analysis_classes(get_plugin_manager(load_entrypoints=False))))
def test_every_builtin_analysis_has_a_heading_in_analyses_doc(name):
    headings = _headings(DOCS / "analyses.md")
    assert any(f"`{name}`" in h for h in headings), (
        f"docs/analyses.md has no heading naming the analysis `{name}`")


@pytest.mark.parametrize("doc", ["analyses.md", "diff.md", "explain.md", "hooks.md", "parallel.md", "quickstart.md"])
def test_python_examples_run(doc, monkeypatch, tmp_path):
    """The python blocks of the page run in order, in one namespace (as the page says)."""
    monkeypatch.chdir(tmp_path)  # files the examples write land here
    blocks = PYTHON_BLOCK.findall((DOCS / doc).read_text(encoding="utf-8"))
    assert blocks
    namespace: dict = {"__name__": f"docs_{doc.replace('.', '_')}"}
    for k, block in enumerate(blocks):
        assert "--8<--" not in block
        exec(compile(block, f"docs/{doc} (python block {k + 1})", "exec"), namespace)


def test_readme_python_examples_run(monkeypatch, data_dir):
    """The README's python blocks run from the repo root (they read ../shared/data)."""
    monkeypatch.chdir(ROOT)
    blocks = PYTHON_BLOCK.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(blocks) >= 2
    for k, block in enumerate(blocks):
        exec(compile(block, f"README.md (python block {k + 1})", "exec"), {"__name__": "readme"})


def _readme_outputs():
    """examples/readme_outputs.py as a module (it is a script, not part of the package)."""
    spec = importlib.util.spec_from_file_location("readme_outputs", ROOT / "examples" / "readme_outputs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


README_OUTPUTS = _readme_outputs()
README_EXAMPLES = README_OUTPUTS.examples((ROOT / "README.md").read_text(encoding="utf-8"))


def test_the_readme_examples_with_output_are_found():
    """The 10-line example's last line, the print(report) block and the verify command."""
    kinds = [(ex.lang, ex.last_line_only, ex.exit_code) for ex in README_EXAMPLES]
    assert kinds == [("python", True, None), ("python", False, None), ("bash", False, 1)], (
        f"examples/readme_outputs.py found {[ex.name for ex in README_EXAMPLES]} in README.md")


@pytest.mark.parametrize("example", README_EXAMPLES, ids=lambda ex: ex.name)
def test_the_readme_shows_what_its_examples_print(example, request):
    """Each output README.md shows is what its example prints now (times masked)."""
    if example.needs_data:
        request.getfixturevalue("data_dir")
    diff = example.differences(*example.run())
    assert not diff, (
        f"{example.name}: the output README.md shows is not what the example prints now "
        f"(times masked as <time>):\n{diff}"
        f"Regenerate every README output with: {README_OUTPUTS.WRITE}")


def test_readme_outputs_masks_times_only_and_keeps_the_times_of_unchanged_lines():
    normalised, merged = README_OUTPUTS.normalised, README_OUTPUTS.merged
    assert merged("sat\n1 polytopes, 6 LPs, 0.630 s\n7 LPs, 0.004 s\n",
                  "sat\n0 polytopes, 0 LPs, 1.181 s\n7 LPs, 0.090 s\n") == (
        "sat\n0 polytopes, 0 LPs, 1.181 s\n7 LPs, 0.004 s")
    assert normalised("7 polytopes, 7 LPs, 0 subproblems; 0.004 s (+0.6 s set-up); complete") == (
        "7 polytopes, 7 LPs, 0 subproblems; <time> s (+<time> s set-up); complete\n")
    assert normalised("6 LPs, 12 s\n") == normalised("6 LPs, 0.630 s") != normalised("7 LPs, 0.630 s")


def test_the_documentation_site_builds_strictly(tmp_path):
    """``mkdocs build --strict``: every page, link, anchor, snippet and API reference resolves.

    Run as the console script, as people type it, not as ``python -m mkdocs``: the script's
    folder then comes first on ``sys.path`` and holds the ``polytrav`` console script, which
    griffe took for the package (see docs/mkdocs_hooks.py).
    """
    import os
    import subprocess
    import sysconfig

    pytest.importorskip("mkdocs", reason="mkdocs is not installed: pip install -e \".[dev]\"")
    pytest.importorskip("mkdocstrings", reason="mkdocstrings is not installed: pip install -e \".[dev]\"")
    script = Path(sysconfig.get_path("scripts")) / ("mkdocs.exe" if os.name == "nt" else "mkdocs")
    if not script.is_file():
        pytest.skip(f"no mkdocs console script at {script}: pip install -e \".[dev]\"")
    site = tmp_path / "site"
    res = subprocess.run([str(script), "build", "--strict", "-d", str(site)], cwd=ROOT,
                         capture_output=True, text=True,
                         env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert res.returncode == 0, res.stderr[-3000:]
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    assert 'id="polytrav.traverse"' in api and 'id="polytrav.model.network.Network"' in api


def test_every_dotted_polytrav_name_in_the_docs_exists():
    """`polytrav.a.b` in backticks, in README.md and docs/*.md, names a module or an attribute."""
    import importlib

    refs = set()
    for doc in [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]:
        refs.update(re.findall(r"`(polytrav(?:\.\w+)+)", doc.read_text(encoding="utf-8")))
    missing = []
    for ref in sorted(refs):
        parts = ref.split(".")
        for i in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:i]))
            except ImportError:
                continue
            for name in parts[i:]:
                obj = getattr(obj, name, missing)
            break
        if obj is missing:
            missing.append(ref)
    assert not missing, f"the docs name these, which do not exist: {missing}"
