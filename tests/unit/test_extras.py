"""The extras table (``polytrav.vocabulary.extras``) against pyproject.toml and the README: each
extra's modules are its distributions' (where installed), and the README lists every extra."""
from __future__ import annotations

import importlib.metadata
import re
import sys
from pathlib import Path

import pytest

from polytrav.vocabulary.extras import EXTRAS, MissingExtra, extra_of, require

ROOT = Path(__file__).resolve().parents[2]
#: Extras that bundle others or hold tools, not a feature's modules.
BUNDLES = {"all", "docs", "dev"}


def _extras() -> dict[str, list[str]]:
    """pyproject's extras: name -> the distributions it requires (lower case; ``dask[distributed]``
    brings ``distributed`` too)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    with open(ROOT / "pyproject.toml", "rb") as f:
        extras = tomllib.load(f)["project"]["optional-dependencies"]
    out = {}
    for name, reqs in extras.items():
        if name in BUNDLES:
            continue
        out[name] = []
        for req in reqs:
            dist, inner = re.match(r"([\w.-]+)(?:\[([\w,]+)\])?", req).groups()
            out[name] += [dist.lower(), *(inner.lower().split(",") if inner else [])]
    return out


def test_every_extra_of_pyproject_is_in_the_table_with_its_modules():
    extras = _extras()
    assert set(EXTRAS) == set(extras)
    owners = importlib.metadata.packages_distributions()
    for name, modules in EXTRAS.items():
        for module in modules:
            dists = {d.lower() for d in owners.get(module.split(".")[0], ())}
            if dists:  # installed: one of the extra's own distributions brings it
                assert dists & set(extras[name]), (name, module, dists)
        brought = {d.lower() for m in modules for d in owners.get(m.split(".")[0], ())}
        for dist in extras[name]:
            if any(d.lower() == dist for ds in owners.values() for d in ds):
                assert dist in brought, f"extra {name!r}: {dist} brings no module of the table"


def test_the_readme_lists_every_extra():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r'pip install -e "\.\[(\w+)\]"', text))
    assert set(EXTRAS) - {"onnx", "torch"} <= listed, sorted(set(EXTRAS) - listed)
    assert {"onnx", "torch"} <= set(re.findall(r'"\.\[(\w+)[,\]]', text))  # named in its text


def test_require_names_the_extra_and_its_pip_line():
    require("--x", "export", ("numpy",))  # installed: nothing said
    with pytest.raises(MissingExtra, match=r"^--table 't.csv' needs no_such_module_x \(the "
                                           r"'export' extra\), which is not installed: pip "
                                           r'install "polytrav\[export\]"$') as info:
        require("--table 't.csv'", "export", ("numpy", "no_such_module_x"))
    assert (info.value.extra, info.value.modules) == ("export", ("no_such_module_x",))
    assert [extra_of(m) for m in ("pandas", "pandas.io", "google.protobuf", "jinja2", "numpy",
                                  None)] == ["export", "export", "onnx", "report", None, None]


def test_a_loader_without_its_extra_raises_the_library_error(monkeypatch):
    from polytrav import Network

    monkeypatch.setitem(sys.modules, "torch", None)  # as if torch were not installed
    with pytest.raises(MissingExtra, match=r'load_torch needs torch .* pip install "polytrav\[torch\]"'):
        Network.from_torch("model.pt")
