"""The commands that list what is installed: ``polytrav plugins`` (plugins with their
distribution, version, analyses and solvers) and ``polytrav solvers`` (backends with their
problem forms, availability, and whether they certify optimality).
"""
from __future__ import annotations

import click

from polytrav.vocabulary.results import to_json

__all__ = ["plugins", "solvers"]


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def plugins(as_json) -> None:
    """List installed plugins: their distribution, version, analyses and solvers.

    \b
    Example:
      polytrav plugins
    """
    import os

    from polytrav.host.manager import get_plugin_manager, list_plugins

    if os.environ.get("POLYTRAV_DISABLE_PLUGIN_AUTOLOAD") == "1":
        click.echo("note: POLYTRAV_DISABLE_PLUGIN_AUTOLOAD=1, third-party plugins are not loaded",
                   err=True)
    rows = list_plugins(get_plugin_manager())
    if as_json:
        click.echo(to_json(rows))
        return
    for row in rows:
        things = ", ".join(row["analyses"] + row["solvers"]) or "-"
        click.echo(f"{row['name']}  ({row['distribution']} {row['version']}): {things}")


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def solvers(as_json) -> None:
    """List solver backends: problem forms, availability, whether they certify optimality.

    \b
    Example:
      polytrav solvers
    """
    from polytrav.host.manager import get_plugin_manager, solver_classes

    rows = [{"name": name, "forms": sorted(cls.forms), "available": bool(cls.is_available()),
             "certifies_optimality": bool(getattr(cls, "certifies_optimality", True))}
            for name, cls in solver_classes(get_plugin_manager()).items()]
    if as_json:
        click.echo(to_json(rows))
        return
    for r in rows:
        state = "installed" if r["available"] else "not installed"
        cert = "" if r["certifies_optimality"] else ", first-order (answers confirmed elsewhere)"
        click.echo(f"{r['name']}: {'/'.join(r['forms'])}, {state}{cert}")
