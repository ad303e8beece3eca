"""``example-lp``: a toy LP backend, SciPy's dual simplex with a solve counter."""
from __future__ import annotations

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
