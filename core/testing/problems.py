"""Small LPs and QPs with known answers (closed forms): the backends' contract problems.

Each :class:`Problem` holds the keyword arguments of ``solve_lp`` / ``solve_qp`` and the
expected status, optimum and (when unique) minimiser. Nothing here uses polytrav's solvers.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

__all__ = ["Problem", "PROBLEMS", "LPS", "QPS"]

INF = np.inf


@dataclass(frozen=True)
class Problem:
    """One test problem: ``form`` is "lp" or "qp"; ``args`` are the solve call's keywords."""

    name: str
    form: str
    args: dict
    status: str  # "optimal", "infeasible" or "unbounded"
    objective: float | None = None
    x: np.ndarray | None = None  # the unique minimiser, if it is unique
    notes: str = field(default="", compare=False)

    def __repr__(self) -> str:
        return f"<Problem {self.name}>"

    def solve(self, backend):
        """Solve with ``backend`` (``solve_lp`` or ``solve_qp`` by form)."""
        if self.form == "lp":
            return backend.solve_lp(**self.args)
        return backend.solve_qp(**self.args)

    # ---------------------------------------------------------------- checks
    def parts(self):
        """``(P, q, A_ub, b_ub, A_eq, b_eq, lo, hi)`` as dense arrays (empty blocks as (0, n))."""
        a = self.args
        q = np.asarray(a["c"] if self.form == "lp" else a["q"], float)
        n = q.size
        P = a.get("P")
        P = np.zeros((n, n)) if P is None else (P.toarray() if sp.issparse(P) else np.asarray(P, float))

        def block(M, b):
            if M is None:
                return np.zeros((0, n)), np.zeros(0)
            M = M.toarray() if sp.issparse(M) else M
            return np.asarray(M, float).reshape(-1, n), np.asarray(b, float).reshape(-1)

        A_ub, b_ub = block(a.get("A_ub"), a.get("b_ub"))
        A_eq, b_eq = block(a.get("A_eq"), a.get("b_eq"))
        bounds = a.get("bounds")
        lo, hi = (np.full(n, -INF), np.full(n, INF)) if bounds is None else map(np.asarray, bounds)
        return P, q, A_ub, b_ub, A_eq, b_eq, lo, hi

    def max_violation(self, x) -> float:
        """Largest constraint violation of ``x`` (0 when feasible)."""
        _, _, A_ub, b_ub, A_eq, b_eq, lo, hi = self.parts()
        viol = [0.0]
        if A_ub.size:
            viol.append((A_ub @ x - b_ub).max())
        if A_eq.size:
            viol.append(np.abs(A_eq @ x - b_eq).max())
        viol.append((lo - x).max())
        viol.append((x - hi).max())
        return float(max(viol))

    def value(self, x) -> float:
        """Objective at ``x``."""
        P, q, *_ = self.parts()
        return float(0.5 * x @ P @ x + q @ x)

    def stationarity(self, x, duals) -> float:
        """``|P x + q + A_ub' y_ub + A_eq' y_eq + y_box|_inf`` for duals laid out as the backends'."""
        P, q, A_ub, _, A_eq, _, _, _ = self.parts()
        m1, m2 = A_ub.shape[0], A_eq.shape[0]
        y_ub, y_eq, y_box = duals[:m1], duals[m1 : m1 + m2], duals[m1 + m2 :]
        g = P @ x + q + A_ub.T @ y_ub + A_eq.T @ y_eq + y_box
        return float(np.abs(g).max())


def _min_norm(A, b):
    A = np.asarray(A, float)
    x = A.T @ np.linalg.solve(A @ A.T, b)
    return x, 0.5 * float(x @ x)


def _problems() -> list[Problem]:
    probs = []

    def nonneg(n):
        return np.zeros(n), np.full(n, INF)

    # ---------------------------------------------------------------- LPs
    probs.append(Problem(
        "lp_vertex", "lp",
        {"c": [-1.0, -1.0], "A_ub": [[1.0, 2.0], [3.0, 1.0]], "b_ub": [4.0, 6.0],
         "bounds": nonneg(2)},
        "optimal", -2.8, np.array([1.6, 1.2]), "both rows active: x + 2y = 4, 3x + y = 6",
    ))
    c = np.array([1.0, -2.0, 3.0])
    probs.append(Problem(
        "lp_box", "lp", {"c": c, "A_ub": None, "b_ub": None, "bounds": (-np.ones(3), np.ones(3))},
        "optimal", -6.0, -np.sign(c), "min c.x over [-1, 1]^3: x = -sign(c)",
    ))
    probs.append(Problem(
        "lp_simplex", "lp",
        {"c": [3.0, 1.0, 2.0, 5.0], "A_ub": None, "b_ub": None,
         "A_eq": [[1.0, 1.0, 1.0, 1.0]], "b_eq": [1.0], "bounds": nonneg(4)},
        "optimal", 1.0, np.array([0.0, 1.0, 0.0, 0.0]), "min c.x over the simplex: argmin c",
    ))
    probs.append(Problem(
        "lp_equality", "lp",
        {"c": [1.0, 1.0], "A_ub": None, "b_ub": None, "A_eq": [[1.0, -1.0]], "b_eq": [2.0],
         "bounds": (np.zeros(2), np.full(2, 10.0))},
        "optimal", 2.0, np.array([2.0, 0.0]),
    ))
    probs.append(Problem(
        "lp_free_vars", "lp",
        {"c": [-1.0, 0.0], "A_ub": [[1.0, 1.0], [1.0, -1.0]], "b_ub": [1.0, 1.0]},
        "optimal", -1.0, np.array([1.0, 0.0]), "max x s.t. x <= 1 - |y|, no bounds",
    ))
    probs.append(Problem(
        "lp_infeasible", "lp", {"c": [1.0], "A_ub": [[1.0], [-1.0]], "b_ub": [-1.0, -1.0]},
        "infeasible", notes="x <= -1 and x >= 1",
    ))
    probs.append(Problem(
        "lp_infeasible_eq_bounds", "lp",
        {"c": [1.0, 1.0], "A_ub": None, "b_ub": None, "A_eq": [[1.0, 1.0]], "b_eq": [5.0],
         "bounds": (np.zeros(2), np.ones(2))},
        "infeasible", notes="x + y = 5 in [0, 1]^2",
    ))
    probs.append(Problem(
        "lp_unbounded", "lp",
        {"c": [-1.0, 0.0], "A_ub": [[-1.0, 0.0], [0.0, 1.0]], "b_ub": [0.0, 1.0]},
        "unbounded", notes="max x with x >= 0, y <= 1",
    ))
    # ---------------------------------------------------------------- QPs
    a, w, b = np.array([1.0, 1.0]), np.array([1.0, 1.0]), 1.0
    x = a - max(0.0, w @ a - b) / (w @ w) * w
    probs.append(Problem(
        "qp_projection", "qp", {"P": np.eye(2), "q": -a, "A_ub": [w], "b_ub": [b]},
        "optimal", 0.5 * (x - a) @ (x - a) - 0.5 * a @ a, x,
        "projection of a onto {w.x <= b} (minus 0.5|a|^2)",
    ))
    d, qd = np.array([2.0, 1.0, 4.0]), np.array([-4.0, 0.5, 1.0])
    x = np.clip(-qd / d, -1, 1)
    probs.append(Problem(
        "qp_box_diag", "qp", {"P": np.diag(d), "q": qd, "bounds": (-np.ones(3), np.ones(3))},
        "optimal", float(0.5 * d @ x**2 + qd @ x), x, "separable: x = clip(-q/d, -1, 1)",
    ))
    P = np.array([[2.0, 1.0], [1.0, 2.0]])
    qv = np.array([-1.0, -1.0])
    x = -np.linalg.solve(P, qv)
    probs.append(Problem(
        "qp_coupled_sparse", "qp",
        {"P": sp.csc_matrix(P), "q": qv, "A_ub": sp.csr_matrix([[1.0, 0.0]]), "b_ub": [10.0]},
        "optimal", float(0.5 * qv @ x), x, "unconstrained optimum -P^-1 q; sparse P and A_ub",
    ))
    A_eq, b_eq = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]]), np.array([1.0, 2.0])
    x, obj = _min_norm(A_eq, b_eq)
    probs.append(Problem(
        "qp_equality", "qp", {"P": np.eye(3), "q": np.zeros(3), "A_eq": A_eq, "b_eq": b_eq},
        "optimal", obj, x, "min-norm solution A'(AA')^-1 b",
    ))
    probs.append(Problem(
        "qp_singular", "qp",
        {"P": np.array([[1.0, -1.0], [-1.0, 1.0]]), "q": [-1.0, -1.0],
         "bounds": (np.zeros(2), np.ones(2))},
        "optimal", -2.0, np.array([1.0, 1.0]), "rank-1 P: 0.5 (x - y)^2 - x - y on [0, 1]^2",
    ))
    probs.append(Problem(
        "qp_infeasible", "qp",
        {"P": np.eye(2), "q": np.zeros(2), "A_ub": [[1.0, 1.0]], "b_ub": [-1.0],
         "bounds": nonneg(2)},
        "infeasible", notes="x + y <= -1 with x, y >= 0",
    ))
    return probs


PROBLEMS: list[Problem] = _problems()
LPS: list[Problem] = [p for p in PROBLEMS if p.form == "lp"]
QPS: list[Problem] = [p for p in PROBLEMS if p.form == "qp"]
