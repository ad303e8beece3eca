"""Result types shared by solvers, the traversal and analyses."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Status", "SOLUTION_PRESENT", "NO_SOLUTION", "SolveResult"]


class Status(str, enum.Enum):
    """Outcome of one solve, the same whichever backend produced it."""

    OPTIMAL = "optimal"  #: solved to the backend's tolerances
    OPTIMAL_INACCURATE = "optimal_inaccurate"  #: a solution, but tolerances were not met
    INFEASIBLE = "infeasible"  #: proven to have no feasible point
    UNBOUNDED = "unbounded"  #: proven unbounded
    INFEASIBLE_OR_UNBOUNDED = "infeasible_or_unbounded"  #: one of the two, not told which
    LIMIT = "limit"  #: stopped by a time or iteration limit
    ERROR = "error"  #: anything else; ``SolveResult.message`` has the backend's words

    def __str__(self) -> str:
        return self.value


#: Statuses that come with a usable point.
SOLUTION_PRESENT = frozenset({Status.OPTIMAL, Status.OPTIMAL_INACCURATE})
#: Statuses that come without one.
NO_SOLUTION = frozenset(Status) - SOLUTION_PRESENT


@dataclass(frozen=True)
class SolveResult:
    """One solve's outcome.

    ``objective`` is in the problem's own sense (a maximisation reports the maximum); ``x``
    is ``None`` unless ``status`` is in :data:`SOLUTION_PRESENT`.
    """

    status: Status
    objective: float | None = None
    x: np.ndarray | None = None
    duals: np.ndarray | None = None
    solver: str = ""
    solve_time: float = 0.0
    iterations: int | None = None
    message: str = ""
    extras: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        obj = "" if self.objective is None else f", objective={self.objective:.6g}"
        return f"SolveResult({self.status.value}{obj}, solver={self.solver!r})"

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dictionary."""
        return {
            "status": self.status.value,
            "objective": self.objective,
            "x": None if self.x is None else self.x.tolist(),
            "solver": self.solver,
            "solve_time": self.solve_time,
            "iterations": self.iterations,
            "message": self.message,
        }
