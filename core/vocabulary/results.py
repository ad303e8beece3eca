"""Result types shared by solvers, the traversal and analyses."""
from __future__ import annotations

import enum
import json
import math
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

import numpy as np

__all__ = ["Answer", "Status", "SOLUTION_PRESENT", "NO_SOLUTION", "DECIDED", "SolveResult", "Verdict",
           "Scope", "AnalysisResult", "jsonable", "to_json"]


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
#: Statuses that settle a subproblem: a point, or a proof that there is none.
DECIDED = frozenset({Status.OPTIMAL, Status.INFEASIBLE})


@dataclass(frozen=True)
class SolveResult:
    """One solve's outcome.

    ``objective`` is in the problem's own sense (a maximisation reports the maximum); ``x``
    is ``None`` unless ``status`` is in :data:`SOLUTION_PRESENT`. Every field but ``status``
    is given by keyword.
    """

    status: Status
    _: KW_ONLY
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


class Verdict(str, enum.Enum):
    """Answer of a property check over the whole region."""

    HOLDS = "holds"  #: proven on every polytope of a complete traversal
    VIOLATED = "violated"  #: a witness passed :func:`polytrav.extend.check_witness`
    VIOLATED_UNCONFIRMED = "violated_unconfirmed"  #: a witness the forward pass did not confirm
    UNKNOWN = "unknown"  #: incomplete traversal or an undecided subproblem, no confirmed witness

    def __str__(self) -> str:
        return self.value


class Scope(str, enum.Enum):
    """What an :class:`AnalysisResult`'s ``value`` covers."""

    REGION = "region"  #: the whole region asked: the value is proven (``exact``)
    VISITED = "visited"  #: the polytopes visited (a budget, Ctrl-C, a lost LP, skipped pieces)
    WITNESS = "witness"  #: the witness point only (the run stopped at a first violation)

    def __str__(self) -> str:
        return self.value


class Answer(str, enum.Enum):
    """The answer of a verification instance, in VNN-COMP's words."""

    SAT = "sat"  #: a counterexample exists (confirmed by a forward pass)
    UNSAT = "unsat"  #: the property holds (proven)
    UNKNOWN = "unknown"  #: not decided (a lost LP, a budget, Ctrl-C, an unconfirmed point)
    TIMEOUT = "timeout"  #: the time budget ran out first
    ERROR = "error"  #: bad input (a batch item's file could not be read)

    def __str__(self) -> str:
        return self.value


def jsonable(value: Any) -> Any:
    """``value`` with numpy types, enums and non-finite floats (as None) made JSON-safe."""
    if isinstance(value, np.ndarray):
        return [jsonable(v) for v in value.tolist()] if value.dtype.kind == "f" else value.tolist()
    if isinstance(value, (np.floating, np.integer, np.bool_)):
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "to_dict"):
        return jsonable(value.to_dict())
    return value


def to_json(value: Any, **kwargs) -> str:
    """JSON text of ``value`` (see :func:`jsonable`): never ``NaN`` or ``Infinity``."""
    return json.dumps(jsonable(value), allow_nan=False, **kwargs)


@dataclass(frozen=True)
class AnalysisResult:
    """One analysis's answer over the region.

    ``verdict`` is set by property checks (``None`` for measurements such as an output
    range); ``exact`` is True iff ``value`` is proven for the whole region asked (a complete
    traversal, or one soundly pruned for this value, and every subproblem decided). ``scope``
    says what ``value`` covers (:class:`Scope`): ``region`` when exact, else ``visited`` (the
    polytopes visited) or ``witness`` (the witness point, where the run stopped at a first
    violation); left ``None`` it follows ``exact``. A verdict is final whatever the scope:
    HOLDS is proven, VIOLATED has a confirmed witness. ``value`` is the analysis's own
    summary (a number or a dict of numbers), ``witness`` the input point that attains or
    violates it, ``details`` JSON-safe extras, ``failures`` the undecided subproblems.
    """

    analysis: str
    verdict: Verdict | None
    value: Any
    witness: np.ndarray | None = None
    exact: bool = True
    n_polytopes: int = 0
    n_solves: int = 0
    failures: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)
    scope: Scope | None = None

    def __post_init__(self) -> None:
        scope = (Scope.REGION if self.exact else Scope.VISITED) if self.scope is None \
            else Scope(self.scope)
        if self.exact != (scope is Scope.REGION):
            raise ValueError(f"AnalysisResult {self.analysis!r}: exact={self.exact} with scope "
                             f"{scope.value!r}; a value is exact iff it covers the whole region")
        object.__setattr__(self, "scope", scope)

    def __str__(self) -> str:
        from polytrav.vocabulary.text import describe_result

        return "\n".join(describe_result(self))

    def __repr__(self) -> str:
        verdict = "" if self.verdict is None else f" {self.verdict.value}"
        value = self.value if not isinstance(self.value, float) else f"{self.value:.6g}"
        exact = "" if self.exact else f" (inexact: {self.scope.value})"
        return f"AnalysisResult({self.analysis!r}{verdict}, value={value}{exact})"

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dictionary."""
        return {
            "analysis": self.analysis,
            "verdict": None if self.verdict is None else self.verdict.value,
            "value": jsonable(self.value),
            "witness": jsonable(self.witness),
            "exact": self.exact,
            "scope": self.scope.value,
            "n_polytopes": self.n_polytopes,
            "n_solves": self.n_solves,
            "failures": list(self.failures),
            "details": jsonable(self.details),
        }
