"""The optional extras (``pyproject.toml``'s ``[project.optional-dependencies]``) and the
modules each brings, so that a path that needs one names it with its pip line:
``--report 'r.html' needs jinja2 (the 'report' extra): pip install "polytrav[report]"``.

:func:`require` checks before the work starts (``importlib.util.find_spec``: nothing is
imported); :func:`extra_of` names the extra of a module an import did not find (the command
line's last resort for a path without its own check).
"""
from __future__ import annotations

import importlib.util

from polytrav.vocabulary.errors import ConfigError

__all__ = ["EXTRAS", "MissingExtra", "extra_of", "installed", "pip_line", "require"]

#: Extra -> the modules it installs (import names), as pyproject lists its distributions.
#: ``tests/unit/test_extras.py`` checks the two agree.
EXTRAS = {
    "onnx": ("google.protobuf", "onnxruntime"),
    "torch": ("torch",),
    "sklearn": ("sklearn", "skops"),
    "ecos": ("ecos",),
    "clarabel": ("clarabel",),
    "scs": ("scs",),
    "plot": ("matplotlib",),
    "graph": ("networkx",),
    "dask": ("dask", "distributed"),
    "export": ("pandas", "pyarrow"),
    "report": ("jinja2", "matplotlib", "pandas"),
    "conformance": ("vnntest",),
    "fast": ("numba",),
}


class MissingExtra(ConfigError):
    """A path needs modules of an extra that is not installed; the message has the pip line.

    :ivar extra: the extra's name; :ivar modules: the modules missing.
    """

    def __init__(self, message: str, extra: str, modules: tuple[str, ...]):
        super().__init__(message)
        self.extra, self.modules = extra, modules


def pip_line(extra: str) -> str:
    """``pip install "polytrav[extra]"``."""
    return f'pip install "polytrav[{extra}]"'


def installed(module: str) -> bool:
    """Whether ``module`` can be imported (found on the path; nothing is imported but its
    parent packages)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing, or a broken entry
        return False


def require(who: str, extra: str, modules: tuple[str, ...] | None = None) -> None:
    """Raise :class:`MissingExtra` naming ``who``, the missing modules and the pip line
    unless every module of ``extra`` (or just ``modules`` of it) is installed."""
    missing = tuple(m for m in (modules or EXTRAS[extra]) if not installed(m))
    if missing:
        raise MissingExtra(f"{who} needs {' and '.join(missing)} (the {extra!r} extra), which "
                           f"is not installed: {pip_line(extra)}", extra, missing)


def extra_of(module: str | None) -> str | None:
    """The extra that installs ``module`` (or its top-level package), the first one listed
    where several do; None for a module of no extra."""
    if not module:
        return None
    top = module.split(".")[0]
    for extra, modules in EXTRAS.items():
        if any(m == module or m.split(".")[0] == top for m in modules):
            return extra
    return None
