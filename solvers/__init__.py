"""Built-in solver backends, registered through the ``polytrav_add_solvers`` hook."""
from __future__ import annotations

from polytrav.extend import hookimpl
from polytrav.solvers.clarabel import ClarabelBackend
from polytrav.solvers.cvxpy_backend import CVXPY_BACKENDS
from polytrav.solvers.highs import HighsBackend
from polytrav.solvers.osqp import OsqpBackend
from polytrav.solvers.scipy import ScipyBackend

__all__ = ["HighsBackend", "ScipyBackend", "ClarabelBackend", "OsqpBackend", "CVXPY_BACKENDS"]


@hookimpl
def polytrav_add_solvers():
    """The built-in backends, in order of preference per form.

    ``lp``: highs, scipy, clarabel, osqp, then ``cvxpy:<SOLVER>``; ``qp``: clarabel (an
    interior-point method: its answers are certified), osqp, then ``cvxpy:CLARABEL``,
    ``cvxpy:ECOS``, ``cvxpy:SCS``, ``cvxpy:OSQP`` (``cvxpy:HIGHS`` serves ``lp`` only).
    """
    return [HighsBackend, ScipyBackend, ClarabelBackend, OsqpBackend, *CVXPY_BACKENDS]
