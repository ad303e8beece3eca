"""The design card: one import package, three folders, no stray top-level modules."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_subpackages_resolve_to_their_folders():
    import polytrav
    import polytrav.plugins
    import polytrav.solvers

    assert Path(polytrav.__file__).parent == ROOT / "core"
    assert Path(polytrav.plugins.__file__).parent == ROOT / "plugins"
    assert Path(polytrav.solvers.__file__).parent == ROOT / "solvers"


def test_import_leaves_no_top_level_folder_modules():
    code = ("import sys, polytrav, polytrav.solvers, polytrav.plugins; "
            "print([m for m in ('core', 'plugins', 'solvers') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/",
                         check=True).stdout.strip()
    assert out == "[]"


def test_public_api_is_explicit():
    import polytrav

    for name in polytrav.__all__:
        assert hasattr(polytrav, name), name


def test_the_analysis_classes_are_importable_from_polytrav_and_plugins():
    import polytrav
    import polytrav.plugins
    from polytrav.host.manager import analysis_classes

    names = ["OutputRange", "SoftmaxAttack", "Counterfactual", "Monotonicity", "LinearProperty",
             "RegionStats", "LocalModel"]
    registered = set(analysis_classes().values())
    for name in names:
        cls = getattr(polytrav, name)
        assert cls is getattr(polytrav.plugins, name) and name in polytrav.__all__
        assert name in polytrav.plugins.__all__ and cls in registered


def test_every_subpackage_is_in_the_wheel():
    """``[tool.setuptools] packages`` lists every folder with an ``__init__.py`` (an editable
    install finds any of them; a wheel holds only the listed ones)."""
    import tomllib

    with open(ROOT / "pyproject.toml", "rb") as f:
        listed = set(tomllib.load(f)["tool"]["setuptools"]["packages"])
    found = set()
    for folder, package in (("core", "polytrav"), ("plugins", "polytrav.plugins"),
                            ("solvers", "polytrav.solvers")):
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join([package, *parts]))
    assert found == listed, f"missing from pyproject.toml: {sorted(found - listed)}; " \
                            f"listed but absent: {sorted(listed - found)}"


def test_the_user_api_and_the_extension_api_are_declared():
    """``polytrav.__all__`` is the user API; ``polytrav.extend`` the plugin author's. Engine
    internals are in neither (the traversal's engine object, the plugin manager's class)."""
    import polytrav
    import polytrav.extend

    for name in polytrav.extend.__all__:
        assert getattr(polytrav.extend, name) is not None, name
    assert {"Traversal", "RunContext", "ChebyshevModel", "get_plugin_manager",
            "Subproblem"}.isdisjoint(polytrav.__all__)
    assert {"RunContext", "CellProblem", "Subproblem", "Stop", "Restrict", "SolveResult",
            "check_witness", "PieceView", "ChebyshevModel"} <= set(polytrav.extend.__all__)


def test_every_extension_name_is_documented_in_its_group():
    """The module's docstring (the API reference page) lists every name of
    ``polytrav.extend``, so that none is offered without a word on what it is for."""
    import re

    import polytrav.extend

    listed = set(re.findall(r"(?::\w+:`|``)(\w+)`", polytrav.extend.__doc__))
    assert set(polytrav.extend.__all__) <= listed, sorted(set(polytrav.extend.__all__) - listed)


def test_a_moved_name_still_imports_with_a_deprecation_warning():
    import pytest

    import polytrav
    import polytrav.extend
    from polytrav.traversal import Traversal

    with pytest.warns(DeprecationWarning, match="import it from polytrav.extend"):
        assert polytrav.Stop is polytrav.extend.Stop
    with pytest.warns(DeprecationWarning, match="import it from polytrav.traversal"):
        assert polytrav.Traversal is Traversal


def test_unit_tests_read_the_shared_data_only_through_the_fixture():
    """``tests/unit`` reaches ``../shared/data`` only through the ``data_dir`` fixture, which
    marks a test ``integration`` (conftest.py): ``-m "not integration"`` needs no data."""
    words = ("DATA" + "_DIR", '/ "' + 'shared"')  # split: this file mentions neither
    for path in sorted((ROOT / "tests" / "unit").glob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        assert not any(word in text for word in words), \
            f"{path.name}: read the shared data through the data_dir fixture"
