"""An example third-party polytrav plugin, registered only through its entry point.

It adds ``example-lp``: a toy LP backend that solves through SciPy's dual simplex
(``linprog(method="highs-ds")``) and counts its solves. Plugin authors copy this layout:
classes in modules, one ``@hookimpl`` per registration hook in the package the entry point
names.
"""
from __future__ import annotations

from polytrav import hookimpl
from polytrav.solvers.scipy import ScipyBackend

__all__ = ["ExampleLPBackend"]


class ExampleLPBackend(ScipyBackend):
    """Toy backend: SciPy's dual simplex, with a solve counter."""

    name = "example-lp"
    forms = frozenset({"lp"})
    required_modules = ("scipy",)
    DEFAULT_OPTIONS = {"method": "highs-ds"}
    solves = 0

    def solve_lp(self, *args, **kwargs):
        type(self).solves += 1
        return super().solve_lp(*args, **kwargs)


@hookimpl
def polytrav_add_solvers():
    """Register the example backend."""
    return [ExampleLPBackend]
