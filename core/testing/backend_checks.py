"""The contract of a solver backend, as checks a third party runs on its own class.

Each check takes the backend class and raises ``AssertionError`` saying what broke;
:func:`polytrav.testing.check_backend` runs them all.
"""
from __future__ import annotations

import subprocess
import sys
import warnings
from dataclasses import dataclass

import numpy as np

from polytrav.host.manager import get_plugin_manager, solver_classes
from polytrav.solve.backend import SolverBackend, solve_along
from polytrav.testing.problems import PROBLEMS
from polytrav.vocabulary.errors import ConfigError
from polytrav.vocabulary.results import SOLUTION_PRESENT, SolveResult, Status

__all__ = ["BackendCase", "BACKEND_CHECKS"]

TOL = 1e-6  #: objective and feasibility tolerance of a clean OPTIMAL
INACCURATE_TOL = 1e-4  #: the same for OPTIMAL_INACCURATE
X_TOL = 1e-5  #: distance to a unique minimiser
UNBOUNDED = (Status.UNBOUNDED, Status.INFEASIBLE_OR_UNBOUNDED)


@dataclass
class BackendCase:
    """The backend class under test, and whether it must be registered."""

    cls: type
    registered: bool = True


def check_declared(case: "BackendCase") -> None:
    """Class data: ``name``, ``forms`` (a subset of lp/qp/socp/milp), ``required_modules``."""
    cls = case.cls
    assert issubclass(cls, SolverBackend), f"{cls.__name__} is not a polytrav.SolverBackend"
    assert isinstance(cls.name, str) and cls.name, f"{cls.__name__}: set name"
    assert isinstance(cls.forms, frozenset) and cls.forms and cls.forms <= {
        "lp", "qp", "socp", "milp"}, f"backend {cls.name!r}: forms {cls.forms!r}"
    assert isinstance(cls.required_modules, tuple), f"backend {cls.name!r}: required_modules"
    assert cls.is_available(), (f"backend {cls.name!r} is not available here: install "
                                f"{list(cls.required_modules)}")


def check_registered(case: "BackendCase") -> None:
    """Found under its name in the plugin registry (when ``registered``)."""
    cls = case.cls
    if case.registered:
        found = solver_classes(get_plugin_manager()).get(cls.name)
        assert found is cls, (
            f"backend {cls.name!r} is not registered (found {found!r}): return the class from "
            "a @hookimpl polytrav_add_solvers() in the module your 'polytrav' entry point "
            "names, and install the package (or pass registered=False while developing)")


def check_availability_imports_nothing(case: "BackendCase") -> None:
    """``is_available()`` imports none of the modules it checks (a registry read is cheap)."""
    cls = case.cls
    module, name = cls.__module__, cls.__qualname__
    code = (f"import sys; from {module} import {name} as B; before = set(sys.modules); "
            f"B.is_available(); print([m for m in B.required_modules if m not in before "
            f"and m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", (
        f"backend {cls.name!r}: is_available() imported {out.stdout.strip()}; check with "
        "importlib.util.find_spec")


def _accuracy(res: SolveResult) -> float:
    return TOL if res.status is Status.OPTIMAL else INACCURATE_TOL


def check_known_answers(case: "BackendCase") -> None:
    """Every contract problem of its forms: the known optimum and a feasible point, or the
    proven status (infeasible; unbounded or infeasible-or-unbounded), with no point."""
    cls = case.cls
    backend = cls()
    for problem in PROBLEMS:
        if problem.form not in cls.forms:
            continue
        res = problem.solve(backend)
        what = f"backend {cls.name!r} on {problem.name}"
        assert isinstance(res, SolveResult), f"{what}: returned {type(res).__name__}"
        assert res.solver == cls.name, f"{what}: SolveResult.solver is {res.solver!r}"
        if problem.status == "optimal":
            assert res.status in SOLUTION_PRESENT, f"{what}: {res.status} ({res.message})"
            tol = _accuracy(res)
            assert abs(res.objective - problem.objective) <= tol * (1 + abs(problem.objective)), (
                f"{what}: objective {res.objective}, expected {problem.objective}")
            assert problem.max_violation(res.x) <= tol, f"{what}: infeasible point {res.x}"
            if problem.x is not None and res.status is Status.OPTIMAL:
                assert np.allclose(res.x, problem.x, atol=X_TOL), (
                    f"{what}: minimiser {res.x}, expected {problem.x}")
        elif problem.status == "infeasible":
            assert res.status is Status.INFEASIBLE, f"{what}: {res.status} ({res.message})"
            assert res.x is None and res.objective is None, f"{what}: a point without one"
        else:
            assert res.status in UNBOUNDED, f"{what}: {res.status} ({res.message})"
            assert res.x is None and res.objective is None, f"{what}: a point without one"


def check_rejected_option(case: "BackendCase") -> None:
    """An option the solver does not know is a ConfigError naming the backend, or is ignored
    (with a warning, say) and the answer is right; never another exception."""
    cls = case.cls
    backend = cls({"polytrav_no_such_option": 1})
    problem = next(p for p in PROBLEMS if p.form in cls.forms and p.status == "optimal")
    try:
        with warnings.catch_warnings(record=True):  # a warning is one way of ignoring it
            res = problem.solve(backend)
    except ConfigError as exc:
        assert cls.name in str(exc), f"backend {cls.name!r}: the error does not name it: {exc}"
    except Exception as exc:  # noqa: BLE001  the contract: a ConfigError
        raise AssertionError(f"backend {cls.name!r}: an unknown option raised "
                             f"{type(exc).__name__}: {exc}; raise ConfigError naming the "
                             "option, value and backend") from exc
    else:
        assert res.status in SOLUTION_PRESENT, f"backend {cls.name!r}: {res.status}"


def check_fallback(case: "BackendCase") -> None:
    """In a chain, a failing backend before it hands the problem on, and it decides it."""
    cls = case.cls
    class Failing(SolverBackend):
        name = "polytrav-testing-failing"
        forms = cls.forms

        def solve_lp(self, *args, **kwargs):
            raise RuntimeError("fails on purpose")

        solve_qp = solve_lp

    problem = next(p for p in PROBLEMS if p.form in cls.forms and p.status == "optimal")
    res, tried = solve_along([Failing(), cls()], problem.solve)
    assert tried == 2 and res.status in SOLUTION_PRESENT and res.solver == cls.name, (
        f"backend {cls.name!r} as a fallback: {res.status} after {tried} tries")


def check_traversal(case: "BackendCase") -> None:
    """An LP backend serves the traversal: the same polytopes as brute force on a small net."""
    cls = case.cls
    if "lp" not in cls.forms:
        return
    from polytrav.host.runner import traverse
    from polytrav.model.region import Box
    from polytrav.testing.reference import brute_force_cells, random_net

    net = random_net(3, 2, [4, 3])
    box = Box([-1.0, -1.0], [1.0, 1.0])
    # a backend that does not certify optimality has its "infeasible" confirmed on a fallback
    fallback = None if cls.certifies_optimality else "auto"
    trav = traverse(net, box, solver=cls(), fallback=fallback, strategy="hierarchical")
    keys = {p.key for p in trav}
    truth = set(brute_force_cells(net, box.lower, box.upper))
    assert trav.complete, f"backend {cls.name!r}: traversal {trav.status}: {trav.stats.failures}"
    assert keys == truth, (f"backend {cls.name!r}: the traversal found {len(keys)} polytopes, "
                           f"brute force {len(truth)}")


#: Every check, in the order :func:`polytrav.testing.check_backend` runs them.
BACKEND_CHECKS = (check_declared, check_registered, check_availability_imports_nothing,
                  check_known_answers, check_rejected_option, check_fallback, check_traversal)
