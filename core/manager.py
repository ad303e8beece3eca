"""The plugin manager: built-in and third-party plugins, found through one registration path.

``get_plugin_manager()`` builds a fresh manager on every call: it adds the hookspecs,
registers the built-in modules named in :data:`DEFAULT_PLUGINS`, loads the ``polytrav``
entry-point group (unless ``POLYTRAV_DISABLE_PLUGIN_AUTOLOAD=1``), and checks that every
implemented hook exists. Nothing happens at import time.
"""
from __future__ import annotations

import importlib
import os

import pluggy

from polytrav import hookspecs
from polytrav.errors import ConfigError, PluginError, SolverNotAvailable

__all__ = ["DEFAULT_PLUGINS", "get_plugin_manager", "solver_classes", "get_solver", "available_solvers"]

#: Built-in plugin modules, registered before entry points.
DEFAULT_PLUGINS: tuple[str, ...] = ("polytrav.solvers",)


def get_plugin_manager(*, load_entrypoints: bool = True, block: tuple[str, ...] = ()) -> pluggy.PluginManager:
    """A fresh plugin manager with the built-ins and (optionally) installed plugins."""
    pm = pluggy.PluginManager("polytrav")
    pm.add_hookspecs(hookspecs)
    for name in block:
        pm.set_blocked(name)
    for dotted in DEFAULT_PLUGINS:
        if dotted not in block:
            pm.register(importlib.import_module(dotted), name=dotted)
    if load_entrypoints and os.environ.get("POLYTRAV_DISABLE_PLUGIN_AUTOLOAD") != "1":
        try:
            pm.load_setuptools_entrypoints("polytrav")
        except Exception as exc:
            raise PluginError(f"loading a 'polytrav' entry point failed: {exc}") from exc
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise PluginError(str(exc), plugin=getattr(exc, "plugin", None)) from exc
    return pm


def solver_classes(pm: pluggy.PluginManager | None = None) -> dict[str, type]:
    """Registered solver backend classes by name, in preference order."""
    pm = pm or get_plugin_manager()
    out: dict[str, type] = {}
    for batch in reversed(pm.hook.polytrav_add_solvers()):  # pluggy calls last-registered first
        for cls in batch:
            out.setdefault(cls.name, cls)
    return out


def available_solvers(form: str | None = None, pm: pluggy.PluginManager | None = None) -> list[str]:
    """Names of installed backends (serving ``form`` if given), in preference order."""
    return [
        name for name, cls in solver_classes(pm).items()
        if cls.is_available() and (form is None or form in cls.forms)
    ]


def get_solver(solver, *, options: dict | None = None, pm: pluggy.PluginManager | None = None):
    """A backend instance from a name, a backend class or an instance."""
    from polytrav.solver import SolverBackend

    if isinstance(solver, SolverBackend):
        return solver
    if isinstance(solver, type) and issubclass(solver, SolverBackend):
        cls = solver
    else:
        classes = solver_classes(pm)
        if solver not in classes:
            raise ConfigError(f"unknown solver {solver!r}; known solvers: {sorted(classes)}")
        cls = classes[solver]
    if not cls.is_available():
        hint = f'pip install "{cls.extra}"' if cls.extra else f"pip install {' '.join(cls.required_modules)}"
        raise SolverNotAvailable(
            f"solver {cls.name!r} is not available (available: {available_solvers(pm=pm)}); "
            f"install it with {hint}"
        )
    return cls(options)
