"""Imports point one way (read from the source, AST based; lazy imports inside functions count).

The layers of ``core/`` (the ``polytrav`` package), lowest first: vocabulary → model → solve →
bounds → traversal → host (and parallel, beside it) → verification (and proof, beside it) →
interface → testing
(the contract checks plugin authors run). A module
imports only its own layer and the layers below; nothing in ``core/`` imports a plugin module
(``polytrav.plugins.*``) or a concrete backend (``polytrav.solvers.*``) by module name, or the
public APIs ``polytrav`` and ``polytrav.extend`` (they sit above every layer); plugins do not
import each other (the modules of one plugin package may); solvers import no plugin; plugins,
solvers and the example plugin import only the public APIs (and their own package). Imports
under ``if TYPE_CHECKING:`` are not run and do not count.

``KNOWN`` lists imports that still break a rule, each with the step that removes it (none
now); the test fails on any other violation and on a listed one that is gone (delete it from
the list), so the list only shrinks.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Layer of each subpackage of ``polytrav`` (rank: lower layers have smaller numbers).
LAYERS = {"vocabulary": 0, "model": 1, "solve": 2, "bounds": 3, "traversal": 4, "host": 5,
          "parallel": 5, "verification": 6, "proof": 6, "interface": 7, "testing": 8}

#: The public APIs, above every layer (re-exports only): what users and plugin authors import.
FACADES = ("polytrav", "polytrav.extend")

#: (importing module, imported module): the violations still to remove, and the step of
#: issue 25 that removes each.
KNOWN: set[tuple[str, str]] = set()  # none left (issue 25, steps 1-3)


def _modules():
    """``(module name, path)`` of every module of core/, plugins/ and solvers/."""
    for folder, package in (("core", "polytrav"), ("plugins", "polytrav.plugins"),
                            ("solvers", "polytrav.solvers")):
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = [p for p in path.relative_to(ROOT / folder).with_suffix("").parts
                     if p != "__init__"]
            yield ".".join([package, *parts]), path


def _imports(path: Path) -> set[str]:
    """Every ``polytrav`` module a file imports, outside ``if TYPE_CHECKING:`` blocks."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    found = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "polytrav":  # from polytrav import X: X may be a submodule
                found.update(f"polytrav.{a.name}" if a.name in LAYERS else "polytrav"
                             for a in node.names)
            elif node.module.startswith("polytrav."):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "polytrav")
    return found


def _layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYERS.get(parts[1]) if len(parts) > 1 else None


def _plugin(module: str) -> str:
    """The plugin a module of ``polytrav.plugins`` belongs to: itself, or its package's."""
    return ".".join(module.split(".")[:3])


def _violations() -> set[tuple[str, str]]:
    bad = set()
    for name, path in _modules():
        in_plugins = name.startswith("polytrav.plugins.")
        in_solvers = name.startswith("polytrav.solvers")
        for target in _imports(path):
            if in_plugins:
                if target.startswith("polytrav.plugins.") and _plugin(target) != _plugin(name):
                    bad.add((name, target))
            elif in_solvers:
                if target.startswith("polytrav.plugins"):
                    bad.add((name, target))
            elif name in FACADES or name == "polytrav.plugins":
                continue  # the public APIs re-export every layer
            elif target.startswith(("polytrav.plugins", "polytrav.solvers")) or target in FACADES:
                bad.add((name, target))
            else:
                mine, theirs = _layer(name), _layer(target)
                if mine is None or theirs is None or theirs > mine:
                    bad.add((name, target))
    return bad


#: What the proof checker may import of polytrav (issue 60): the network's and the property's
#: readers and what they stand on, nothing of bounds, solve, traversal or host.
CHECKER_MAY_IMPORT = ("polytrav.vocabulary", "polytrav.model", "polytrav.verification.vnnlib")


def test_the_proof_checker_imports_only_the_readers():
    found = _imports(ROOT / "core" / "proof" / "check.py")
    bad = sorted(t for t in found if not t.startswith(CHECKER_MAY_IMPORT))
    assert not bad, f"polytrav.proof.check imports {bad} (allowed: {CHECKER_MAY_IMPORT})"


def test_every_core_module_belongs_to_a_layer():
    strays = [name for name, _ in _modules()
              if name.count(".") and not name.startswith(("polytrav.plugins", "polytrav.solvers"))
              and name not in FACADES and _layer(name) is None]
    assert not strays, f"modules outside the layers {sorted(LAYERS)}: {strays}"


def test_imports_point_down_the_layers():
    found = _violations()
    new = sorted(found - KNOWN)
    gone = sorted(KNOWN - found)
    assert not new, "imports against the layers (see this module's doc):\n" + "\n".join(
        f"  {a} imports {b}" for a, b in new)
    assert not gone, "fixed, so delete from KNOWN:\n" + "\n".join(f"  {a} -> {b}" for a, b in gone)


def _extension_imports(path: Path, own: str) -> list[str]:
    """``polytrav`` imports of a plugin, backend or the example plugin other than
    ``polytrav``, ``polytrav.extend`` and its own package ``own``."""
    out = []
    for target in sorted(_imports(path)):
        if target in ("polytrav", "polytrav.extend") or target == own \
                or target.startswith(own + "."):
            continue
        out.append(f"{path.relative_to(ROOT)} imports {target}")
    return out


def test_plugins_and_backends_use_only_the_declared_api():
    """What a built-in analysis or backend uses, a third party can: plugins/, solvers/ and the
    example plugin import only ``polytrav``, ``polytrav.extend`` and their own package (a
    built-in analysis package its own modules, the solvers their own)."""
    found = []
    for path in sorted((ROOT / "plugins").rglob("*.py")):
        rel = path.relative_to(ROOT / "plugins").with_suffix("").parts
        own = "polytrav.plugins" if rel in (("__init__",),) else ".".join(
            ["polytrav.plugins", rel[0]])
        found += _extension_imports(path, own)
    found += [hit for path in sorted((ROOT / "solvers").rglob("*.py"))
              for hit in _extension_imports(path, "polytrav.solvers")]
    found += [hit for path in sorted((ROOT / "tests/example_plugin").rglob("*.py"))
              for hit in _extension_imports(path, "polytrav_example")]
    assert not found, "imports past polytrav and polytrav.extend:\n" + "\n".join(found)


def _private_uses(path: Path) -> list[str]:
    """Private names (one leading underscore) this file takes from another polytrav module:
    ``from polytrav.x import _y``, or ``Y._z`` where ``Y`` was imported from one."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported, found = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("polytrav"):
            for a in node.names:
                if a.name.startswith("_") and not a.name.startswith("__"):
                    found.append(f"{path.name}:{node.lineno}: from {node.module} import {a.name}")
                imported.add(a.asname or a.name)
        elif isinstance(node, ast.Import):
            imported.update(a.asname or a.name.split(".")[0] for a in node.names
                            if a.name.startswith("polytrav"))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                and not node.attr.startswith("__") and isinstance(node.value, ast.Name)
                and node.value.id in imported):
            found.append(f"{path.name}:{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_no_private_name_crosses_a_module():
    found = [use for _, path in _modules() for use in _private_uses(path)]
    assert not found, "private names used outside their module:\n" + "\n".join(found)


def _small_literals(path: Path) -> list[str]:
    """Float literals in ``(0, 1e-3)`` outside tolerances.py: tolerances not named there.

    Floors that only guard a division (``1e-300``), an optimiser's epsilon and ONNX's own
    attribute defaults are not tolerances; they are listed in ``NOT_TOLERANCES``.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}" for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, float)
            and 0 < node.value < 1e-3 and (path.name, node.value) not in NOT_TOLERANCES]


#: (file, value) of small numbers that are not tolerances.
NOT_TOLERANCES = {
    ("cell.py", 1e-300), ("screen.py", 1e-300), ("layout.py", 1e-300),  # division floors
    ("check.py", 1e-300),  # the proof checker's allowance for underflow (not a tolerance)
    ("record.py", 1e-300),  # a division floor
    ("layout.py", 1e-9),  # a tick label's slack (pictures)
    ("common.py", 1e-9),  # the progress bar's rate: a division floor
    ("runner.py", 1e-6),  # the smallest time budget left after set-up, in seconds
    ("crown.py", 1e-12),  # Adam's epsilon (the slopes' optimiser)
    ("onnx_ops.py", 1e-5),  # BatchNormalization's default epsilon, from the ONNX standard
    ("branch_and_bound.py", 1e-3), ("branch_and_bound.py", 1e-6),  # branching scores' tie
    ("branch_and_bound.py", 1e-9),  # breaks
    ("box_lp.py", 1e-11), ("box_lp.py", 1e-14), ("box_lp.py", 5e-7),  # the simplex's pivoting
    ("direct.py", 1e-9),  # which box sides need a row (a choice of rows, not a proof)
    ("reference.py", 1e-9), ("reference.py", 1e-12),  # brute force: independent of polytrav's
    ("reference.py", 1e-8),  # the grid trainer's Adam epsilon
    ("analysis_checks.py", 1e-6), ("backend_checks.py", 1e-6),  # the contract checks' own
    ("backend_checks.py", 1e-4), ("backend_checks.py", 1e-5),  # accuracy demands
}


#: The independent ground truths of ``polytrav.testing``: their tolerances are their own on
#: purpose (a truth that shared polytrav's would move with it).
GROUND_TRUTHS = {"core/testing/milp.py", "core/testing/miqp.py", "core/testing/slope_milp.py"}


def test_tolerances_are_named_in_tolerances_py():
    found = [hit for name, path in _modules() if path.name != "tolerances.py"
             and path.relative_to(ROOT).as_posix() not in GROUND_TRUTHS
             for hit in _small_literals(path)]
    assert not found, "name these in core/vocabulary/tolerances.py:\n" + "\n".join(found)


#: Names with a leading underscore that are public by their library's documentation (named
#: tuples' methods, ``os._exit``).
PUBLIC_UNDERSCORED = {"_replace", "_asdict", "_fields", "_make", "_field_defaults", "_exit"}


def _sources():
    """Every Python file of polytrav and of the example plugin (what ships or is copied)."""
    for folder in ("core", "plugins", "solvers", "tests/example_plugin"):
        yield from sorted((ROOT / folder).rglob("*.py"))


def _own_private_names(paths) -> set[str]:
    """Every private name polytrav defines: functions, classes, assignments, attributes set."""
    own = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                own.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                own.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                own.add(node.attr)
            elif isinstance(node, ast.arg):
                own.add(node.arg)
            elif isinstance(node, ast.alias):
                own.add(node.asname or node.name.split(".")[0])
    return {n for n in own if n.startswith("_")}


def test_no_private_name_of_another_library_is_used():
    """``x._y`` and ``from lib import _y`` only for names polytrav itself defines: another
    library's private names (pluggy's ``_name2plugin``, a pool's ``_max_workers``) may change
    in any release."""
    paths = list(_sources())
    own = _own_private_names(paths) | PUBLIC_UNDERSCORED
    found = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module \
                    and not node.module.startswith("polytrav") and node.level == 0:
                found += [f"{path.relative_to(ROOT)}:{node.lineno}: from {node.module} import "
                          f"{a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
            elif isinstance(node, ast.Attribute) and node.attr.startswith("_") \
                    and not node.attr.startswith("__") and node.attr not in own:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert not found, "private names of other libraries:\n" + "\n".join(found)


def test_the_bounds_layer_calls_no_run():
    """The settle stage's data flows host -> bounds only (issue 59): no module of
    ``polytrav.bounds`` imports the traversal, the host (runs, analyses), parallel runs,
    verification or the interfaces, lazily or not; what the stage leaves open the host
    traverses (``polytrav.host.settling``)."""
    above = ("polytrav.traversal", "polytrav.host", "polytrav.parallel",
             "polytrav.verification", "polytrav.interface", "polytrav.testing")
    found = [f"{name} imports {target}" for name, path in _modules()
             if name.startswith("polytrav.bounds") for target in sorted(_imports(path))
             if target.startswith(above) or target in FACADES]
    assert not found, "\n".join(found)
    assert any(name == "polytrav.bounds.settle" for name, _ in _modules())
