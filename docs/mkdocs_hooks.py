"""MkDocs hooks (``hooks:`` in mkdocs.yml): ``mkdocs build`` / ``mkdocs serve`` find ``polytrav``.

Run as a console script (``mkdocs ...``), Python puts the script's folder, the environment's
``bin/``, first on ``sys.path``, and mkdocstrings hands ``sys.path`` to griffe as its search
path. That folder also holds polytrav's own console script, a *file* named ``polytrav``.
griffe's module finder takes any search-path entry named like the package that is neither a
``.py`` file nor a folder with ``__init__.py`` for a namespace-package folder (it does not check
that it is a folder), so it "finds" an empty namespace package ``polytrav`` in ``bin/``, and the
API page fails with "polytrav.traverse could not be found". griffe cannot find the real package
on disk either: the editable install maps ``polytrav`` to ``core/``, and griffe's support for
setuptools' editable finder assumes the folder is named after the package. With nothing on disk
it imports the package instead (``force_inspection``), which is why ``python -m mkdocs`` (whose
``sys.path[0]`` is the working folder, with no ``polytrav`` in it) works.

So: before mkdocstrings builds its search path, drop the running script's folder from
``sys.path`` (a folder of executables, never of importable packages), making ``mkdocs``
behave exactly like ``python -m mkdocs``.
"""
from __future__ import annotations

import os
import sys


def on_startup(command: str, dirty: bool) -> None:
    script = sys.argv[0] if sys.argv else ""
    if not script or script.endswith(".py"):  # python -m mkdocs: nothing to drop
        return
    folder = os.path.realpath(os.path.dirname(os.path.abspath(script)))
    sys.path[:] = [p for p in sys.path if not p or os.path.realpath(p) != folder]
