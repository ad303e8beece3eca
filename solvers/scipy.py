"""SciPy's ``linprog``: the paper's LP solver, kept as the baseline.

``scipy.optimize.linprog(method="highs")`` builds and solves every LP from scratch (no warm
start); the ``seed-faithful`` traversal uses it for every check, as the paper's code does.
Forms: ``lp``. Statuses come from ``OptimizeResult.status`` (0 optimal, 1 iteration limit,
2 infeasible, 3 unbounded, 4 numerical difficulties). ``DEFAULT_OPTIONS``: none overridden;
each solve gets ``time_limit`` (an option of every ``highs`` method) of at most what the run's
deadline leaves (:func:`~polytrav.solve.deadline.call_limit`), and none starts past it.
``duals`` (from HiGHS' marginals, ``method="highs"``) are laid out as OSQP's.
"""
from __future__ import annotations

import time

import numpy as np

from polytrav.extend import ConfigError, SolveResult, SolverBackend, Status, call_limit, refused

__all__ = ["ScipyBackend"]


class ScipyBackend(SolverBackend):
    """LPs with ``scipy.optimize.linprog`` (rebuilt per solve)."""

    name = "scipy"
    forms = frozenset({"lp"})
    required_modules = ("scipy",)
    warm_start = False
    STATUS_MAP = {0: Status.OPTIMAL, 1: Status.LIMIT, 2: Status.INFEASIBLE, 3: Status.UNBOUNDED}
    DEFAULT_OPTIONS: dict = {}

    def solve_lp(self, c, A_ub, b_ub, A_eq=None, b_eq=None, bounds=None) -> SolveResult:
        from scipy.optimize import linprog

        t0 = time.perf_counter()
        c = np.asarray(c, float)
        if bounds is not None:
            lo, hi = bounds
            bounds = [
                (None if not np.isfinite(a) else a, None if not np.isfinite(b) else b)
                for a, b in zip(lo, hi)
            ]
        else:
            bounds = (None, None)
        options = {**self.DEFAULT_OPTIONS, **self.options}
        method = options.pop("method", "highs")
        limit = call_limit(options.get("time_limit"))
        if limit == 0.0:
            return refused(self.name)
        if limit is not None:
            options["time_limit"] = limit
        empty = lambda A: A is None or np.shape(A)[0] == 0 if not hasattr(A, "shape") \
            else A.shape[0] == 0  # noqa: E731
        try:
            res = linprog(
                c,
                A_ub=None if empty(A_ub) else A_ub, b_ub=None if empty(A_ub) else b_ub,
                A_eq=None if empty(A_eq) else A_eq, b_eq=None if empty(A_eq) else b_eq,
                bounds=bounds, method=method, options=options or None,
            )
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"solver 'scipy' rejected options {options}: {exc}") from exc
        status = self.STATUS_MAP.get(res.status, Status.ERROR)
        ok = status is Status.OPTIMAL
        return SolveResult(status, objective=float(res.fun) if ok else None,
                           x=np.asarray(res.x) if ok else None,
                           duals=_duals(res, np.shape(b_ub)[0] if b_ub is not None else 0,
                                        np.shape(b_eq)[0] if b_eq is not None else 0)
                           if ok else None,
                           solver=self.name, solve_time=time.perf_counter() - t0,
                           iterations=int(getattr(res, "nit", 0) or 0), message=res.message)


def _duals(res, m_ub: int, m_eq: int) -> np.ndarray | None:
    """HiGHS' marginals in OSQP's layout (rows, then bounds; ``c + A^T y + y_box = 0``)."""
    parts = []
    for name, m in (("ineqlin", m_ub), ("eqlin", m_eq)):
        field = getattr(res, name, None)
        marginals = getattr(field, "marginals", None)
        if m and (marginals is None or len(marginals) != m):
            return None
        parts.append(-np.asarray(marginals if m else np.zeros(0), float))
    lower, upper = getattr(res, "lower", None), getattr(res, "upper", None)
    if lower is None or upper is None:
        return None
    parts.append(-(np.asarray(lower.marginals, float) + np.asarray(upper.marginals, float)))
    return np.concatenate(parts)
