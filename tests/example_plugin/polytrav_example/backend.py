"""``example-lp``: a toy LP backend, SciPy's dual simplex with a solve counter.

Forms: ``lp``. Statuses from ``scipy.optimize.linprog``'s ``status`` (0 optimal, 1 iteration
limit, 2 infeasible, 3 unbounded; anything else is an error). No warm start. Each solve gets
at most what the run's deadline leaves (``call_limit``), and none starts past it.
"""
from __future__ import annotations

import time

import numpy as np

from polytrav import SolverBackend
from polytrav.extend import ConfigError, SolveResult, Status, call_limit, refused

__all__ = ["ExampleLPBackend"]


class ExampleLPBackend(SolverBackend):
    """Toy backend: SciPy's dual simplex, with a solve counter."""

    name = "example-lp"
    forms = frozenset({"lp"})
    required_modules = ("scipy",)
    STATUS_MAP = {0: Status.OPTIMAL, 1: Status.LIMIT, 2: Status.INFEASIBLE, 3: Status.UNBOUNDED}
    DEFAULT_OPTIONS = {"method": "highs-ds"}
    solves = 0

    def solve_lp(self, c, A_ub, b_ub, A_eq=None, b_eq=None, bounds=None) -> SolveResult:
        from scipy.optimize import linprog  # the native library, imported when solving

        options = {**self.DEFAULT_OPTIONS, **self.options}
        limit = call_limit(options.get("time_limit"))  # the run's deadline, or none
        if limit == 0.0:
            return refused(self.name)  # nothing left: not started
        if limit is not None:
            options["time_limit"] = limit
        type(self).solves += 1
        t0 = time.perf_counter()
        method = options.pop("method")
        columns = None if bounds is None else [
            (lo if np.isfinite(lo) else None, hi if np.isfinite(hi) else None)
            for lo, hi in zip(*bounds)]
        has_ub = A_ub is not None and np.shape(A_ub)[0] > 0  # arrays, lists or scipy.sparse
        has_eq = A_eq is not None and np.shape(A_eq)[0] > 0
        try:
            res = linprog(c, A_ub=A_ub if has_ub else None, b_ub=b_ub if has_ub else None,
                          A_eq=A_eq if has_eq else None, b_eq=b_eq if has_eq else None,
                          bounds=columns if columns is not None else (None, None),
                          method=method, options=options or None)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"solver {self.name!r} rejected options {options}: {exc}") from exc
        status = self.STATUS_MAP.get(res.status, Status.ERROR)
        solved = status is Status.OPTIMAL
        return SolveResult(status, objective=float(res.fun) if solved else None,
                           x=np.asarray(res.x) if solved else None, solver=self.name,
                           solve_time=time.perf_counter() - t0, message=res.message)
