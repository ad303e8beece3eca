"""The solver tests' problems: the contract problems of :mod:`polytrav.testing.problems`, and
the HiGHS QP-hang examples of ``../shared/data/solver_traps``."""
from __future__ import annotations

import numpy as np

from polytrav.testing.problems import LPS, PROBLEMS, QPS, Problem  # noqa: F401


def trap_qps(path) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The HiGHS QP-hang examples: ``[(A_i, b_i, x0_i)]`` for ``min |x - x0|^2 s.t. A x <= b``."""
    data = np.load(path)
    out = []
    i = 0
    while f"A{i}" in data.files:
        out.append((data[f"A{i}"], data[f"b{i}"], data[f"x0_{i}"]))
        i += 1
    return out
