"""An example third-party polytrav plugin, registered only through its entry point.

It adds an analysis, ``output_bounds`` (:class:`OutputBounds`: does one output stay inside
``[lower, upper]`` on the region?), and a toy LP backend, ``example-lp``. Plugin authors copy
this layout: classes in modules, and one ``@hookimpl`` per registration hook in the package
the entry point names (``[project.entry-points.polytrav] example = "polytrav_example"``).
"""
from __future__ import annotations

from polytrav import hookimpl
from polytrav_example.backend import ExampleLPBackend
from polytrav_example.bounds import OutputBounds

__all__ = ["ExampleLPBackend", "OutputBounds"]


@hookimpl
def polytrav_add_solvers():
    """Register the example backend."""
    return [ExampleLPBackend]


@hookimpl
def polytrav_add_analyses():
    """Register the example analysis."""
    return [OutputBounds]
