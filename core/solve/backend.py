"""The solver interface: :class:`SolverBackend`, the base class of every backend.

A backend solves LPs given as arrays (``solve_lp``) and hands the traversal a
:class:`~polytrav.solve.chebyshev.ChebyshevModel`: the Chebyshev-centre LP of "polytope ∩
region" in the region's normalised coordinates ``u`` (see :mod:`polytrav.model.geometry`)::

    maximise t  subject to  a_i·u + t <= b_i                 (region rows, unit normals)
                            s_j (a_j·u + beta_j) - t >= 0    (neuron rows, unit normals, sign s_j)
                            ||U u + w||_1 + kappa t <= r      (L1 balls, lifted)
                            -1 <= u <= 1,  0 <= t <= frame.radius_cap

Neuron rows come in blocks, one per level of the hierarchical traversal, pushed and popped
like a stack; the top block's signs flip as the search moves between polytopes. The base
class keeps every row in numpy arrays and rebuilds the LP for each solve (any backend can
serve it); backends with an incremental API (HiGHS) return a subclass whose ``sync_*``
methods (the backend extension API of :class:`~polytrav.solve.chebyshev.ChebyshevModel`)
update one warm-started model in place.
"""
from __future__ import annotations

import contextvars
import importlib.util
import logging
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, ClassVar

from polytrav.solve.deadline import call_limit, refused
from polytrav.vocabulary.results import SolveResult, Status

if TYPE_CHECKING:
    from polytrav.model.geometry import Frame
    from polytrav.solve.chebyshev import ChebyshevModel

__all__ = ["SolverBackend", "settles", "solve_along", "SolveTally", "counting", "tally_solve",
           "is_sparse"]

log = logging.getLogger(__name__)


_FOUND: set[str] = set()


def is_sparse(M) -> bool:
    """Whether ``M`` is a ``scipy.sparse`` matrix or array, without importing SciPy (such an
    object exists only once ``scipy.sparse`` is loaded): dense callers never pay its import."""
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and sparse.issparse(M)


def _importable(module: str) -> bool:
    """``importlib.util.find_spec(module) is not None``; a found module is remembered (the
    look-up costs tens of microseconds, and backends are looked up many times per run)."""
    if module not in _FOUND and (module in sys.modules or importlib.util.find_spec(module)):
        _FOUND.add(module)
    return module in _FOUND


class SolverBackend:
    """Base class of solver backends; subclasses set the class data and ``solve_lp``.

    Every solve honours the run's deadline: it takes at most
    :func:`~polytrav.solve.deadline.call_limit` seconds (its own time limit, or the caller's,
    no more than what is left) and, when that is ``0.0``, returns
    :func:`~polytrav.solve.deadline.refused` without starting (both in :mod:`polytrav.extend`).
    """

    #: Registry key.
    name: ClassVar[str] = ""
    #: Problem forms served: subset of {"lp", "qp", "socp", "milp"}.
    forms: ClassVar[frozenset[str]] = frozenset()
    #: Modules that must be importable for the backend to work.
    required_modules: ClassVar[tuple[str, ...]] = ()
    #: Whether the backend re-solves a modified model from the previous basis.
    warm_start: ClassVar[bool] = False
    #: Extra that installs the backend's dependencies, e.g. ``"polytrav[ecos]"``.
    extra: ClassVar[str | None] = None
    #: Whether an "optimal" answer is optimal to the stated tolerances (simplex, interior
    #: point). First-order methods (OSQP, SCS) set False: the traversal then confirms every
    #: "no polytope here" answer of theirs on the fallback backend.
    certifies_optimality: ClassVar[bool] = True
    #: Whether the backend solves a :class:`~polytrav.solve.subproblem.Subproblem`'s cvxpy
    #: problem as it is (cvxpy's own solvers, ``cvxpy:<NAME>``), through its
    #: ``solve_problem(problem, form) -> (Status, message)``; otherwise it receives the
    #: compiled standard form through ``lp_session`` / ``qp_session``.
    solves_cvxpy: ClassVar[bool] = False

    def __init__(self, options: dict | None = None):
        self.options = dict(options or {})

    @classmethod
    def is_available(cls) -> bool:
        """Whether every required module can be imported (imports nothing)."""
        return all(_importable(m) for m in cls.required_modules)

    def solve_lp(self, c, A_ub, b_ub, A_eq=None, b_eq=None, bounds=None) -> SolveResult:
        """Minimise ``c @ x`` s.t. ``A_ub x <= b_ub``, ``A_eq x == b_eq``, ``lo <= x <= hi``.

        ``A_ub`` and ``A_eq`` are dense arrays or ``scipy.sparse`` matrices; ``bounds`` is a
        pair of arrays ``(lo, hi)`` (``±inf`` for none); ``None`` means free.
        """
        raise NotImplementedError

    def solve_qp(self, P, q, A_ub=None, b_ub=None, A_eq=None, b_eq=None,
                 bounds=None) -> SolveResult:
        """Minimise ``0.5 x·P x + q·x`` subject to the constraints of :meth:`solve_lp`.

        ``P`` is symmetric positive semidefinite, a dense array or a ``scipy.sparse`` matrix;
        ``A_ub``, ``b_ub``, ``A_eq``, ``b_eq`` and ``bounds`` are as in :meth:`solve_lp`.
        Backends without the ``qp`` form raise ``NotImplementedError``.
        """
        raise NotImplementedError(
            f"solver {self.name!r} does not solve QPs (its forms: {sorted(self.forms)}); "
            "pick one from polytrav.available_solvers('qp')"
        )

    def solve_milp(self, c, A_ub, b_ub, A_eq=None, b_eq=None, bounds=None, integer=None,
                   time_limit: float | None = None, cutoff: float | None = None,
                   heuristics: bool = False) -> SolveResult:
        """Minimise ``c @ x`` subject to the constraints of :meth:`solve_lp` with the columns
        where ``integer`` is True integral (a mixed-integer LP), for at most ``time_limit``
        seconds (default: the backend's own limit; never more than the run's deadline leaves,
        :func:`~polytrav.solve.deadline.call_limit`). INFEASIBLE is the solver's proof that no
        point exists, to its feasibility tolerances. With ``cutoff``, only points with
        ``c @ x < cutoff`` are sought: OPTIMAL returns the first one found (not necessarily
        the minimiser), INFEASIBLE proves there is none. Without it, OPTIMAL is the minimiser
        and ``extras["bound"]`` the solver's proven lower bound of the minimum (its dual bound;
        a backend that cannot certify one leaves it out). ``heuristics``: the caller knows
        no feasible point, so effort on primal heuristics pays (a backend may ignore it).
        Backends without the ``milp`` form raise ``NotImplementedError``.
        """
        raise NotImplementedError(
            f"solver {self.name!r} does not solve MILPs (its forms: {sorted(self.forms)}); "
            "pick one from polytrav.available_solvers('milp')"
        )

    def lp_session(self):
        """An object whose ``solve_lp`` (same arguments) may keep state between calls.

        A subproblem solved polytope after polytope uses one session per backend, so a backend
        with an incremental API can re-solve the previous model from its last basis. The
        default is the backend itself (every solve from scratch).
        """
        return self

    def chebyshev_model(self, frame: "Frame", *, box_as_bounds: bool = True) -> "ChebyshevModel":
        """A fresh Chebyshev model over ``frame``'s region (rebuilt per solve by default)."""
        from polytrav.solve.chebyshev import ChebyshevModel

        return ChebyshevModel(self, frame, box_as_bounds=box_as_bounds)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


# ---------------------------------------------------------------- the one rule of a proof


def settles(result: SolveResult, backend: SolverBackend) -> bool:
    """Whether ``result`` is an answer polytrav may build a proof on: OPTIMAL, or INFEASIBLE
    from a backend that certifies optimality (a first-order method's "infeasible" is not)."""
    return result.status is Status.OPTIMAL or (
        result.status is Status.INFEASIBLE and backend.certifies_optimality)


class SolveTally:
    """Per backend: the solves it answered, the tries that fell through to the next backend
    of a chain, their seconds, and whether it is a first-order method (it does not certify
    optimality). A run counts every solve along a chain (:func:`solve_along`) and every LP
    of its traversal (:func:`tally_solve`) made while it is :func:`counting`."""

    def __init__(self):
        self.rows: dict[str, list] = {}  # name -> [answered, fell through, seconds, first-order]

    def record(self, name: str, answered: bool, seconds: float, first_order: bool = False) -> None:
        row = self.rows.setdefault(name, [0, 0, 0.0, False])
        row[0 if answered else 1] += 1
        row[2] += seconds
        row[3] = row[3] or bool(first_order)

    def to_dict(self) -> dict[str, dict]:
        """``{backend: {"answered", "fell_through", "seconds", "first_order"}}``, by backend
        name."""
        return {name: {"answered": a, "fell_through": f, "seconds": t, "first_order": o}
                for name, (a, f, t, o) in sorted(self.rows.items())}

    @staticmethod
    def merge(dicts: Iterable[dict]) -> dict[str, dict]:
        """The sum of several :meth:`to_dict` (the parts of a run)."""
        out = SolveTally()
        for d in dicts:
            for name, row in d.items():
                mine = out.rows.setdefault(name, [0, 0, 0.0, False])
                mine[0] += row["answered"]
                mine[1] += row["fell_through"]
                mine[2] += row["seconds"]
                mine[3] = mine[3] or bool(row.get("first_order", False))
        return out.to_dict()


_TALLY: contextvars.ContextVar[SolveTally | None] = contextvars.ContextVar("polytrav_tally",
                                                                           default=None)


@contextmanager
def counting(tally: SolveTally) -> Iterator[SolveTally]:
    """Count every :func:`solve_along` try in ``tally`` while the block runs."""
    token = _TALLY.set(tally)
    try:
        yield tally
    finally:
        _TALLY.reset(token)


def tally_solve(name: str, answered: bool, seconds: float, first_order: bool = False) -> None:
    """Count one solve made outside :func:`solve_along` (the traversal's own LPs)."""
    tally = _TALLY.get()
    if tally is not None:
        tally.record(name, answered, seconds, first_order)


def solve_along(backends: Iterable[SolverBackend],
                attempt: Callable[[SolverBackend], SolveResult]) -> tuple[SolveResult, int]:
    """``attempt(backend)`` on each backend in turn until one :func:`settles`.

    Returns the settling result and how many backends were tried. When none settles, the
    result is the last one, made undecided (an unconfirmed "infeasible" becomes ERROR) and
    its message lists every try. An exception from a backend is one more failed try. Each try
    is counted in the :class:`SolveTally` of the run :func:`counting`, if any. Past the run's
    deadline (:mod:`polytrav.solve.deadline`) no backend is tried: the result is
    :func:`~polytrav.solve.deadline.refused`'s ``LIMIT``, with no try counted.
    """
    tried: list[str] = []
    tally = _TALLY.get()
    res = SolveResult(Status.ERROR, message="no backend tried")
    for backend in backends:
        if call_limit() == 0.0:  # nothing left of the run's time: no backend starts
            return refused(backend.name), len(tried)
        t0 = time.perf_counter()
        try:
            res = attempt(backend)
        except Exception as exc:  # noqa: BLE001 - a crashing backend decides nothing
            res = SolveResult(Status.ERROR, solver=backend.name, message=f"{type(exc).__name__}: {exc}")
        tried.append(f"{backend.name}: {res.status}")
        settled = settles(res, backend)
        if tally is not None:
            tally.record(backend.name, settled, time.perf_counter() - t0,
                         not backend.certifies_optimality)
        if settled:
            return res, len(tried)
        log.debug("backend %s: %s (%s); the next backend of the chain tries", backend.name,
                  res.status.value, res.message)
    status = Status.ERROR if res.status is Status.INFEASIBLE else res.status
    message = ("infeasible only by a backend that does not certify"
               if res.status is Status.INFEASIBLE else res.message)
    return SolveResult(status, objective=res.objective, x=res.x, duals=res.duals,
                       solver=res.solver, solve_time=res.solve_time, iterations=res.iterations,
                       message=f"{message} [tried {'; '.join(tried) or 'none'}]",
                       extras=dict(res.extras)), len(tried)
