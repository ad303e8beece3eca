"""Tables of ``explain`` compared across runs and processes.

Each run starts its compiled subproblems cold
(:func:`polytrav.solve.subproblem.forget_warm_starts`), so a row's numbers do not depend on the
runs before it: ``tests/unit/test_explain.py`` checks that bit for bit in one process. Across
worker processes, whose histories depend on scheduling, tables are compared here with numbers
to the solver's tolerance, so that no path the scheduler picks can make the suite flaky;
everything else (which class, exact or not, how it was proven) must be equal.
"""
from __future__ import annotations

import math

#: Relative agreement of two exact numbers of one row computed on different warm starts.
SAME_NUMBER_RTOL = 1e-9


def same_records(a: list[dict], b: list[dict]) -> None:
    """Assert that two tables' records agree: same rows and columns, equal non-numbers,
    numbers to :data:`SAME_NUMBER_RTOL` (absolute 1e-12 near zero)."""
    assert len(a) == len(b), (len(a), len(b))
    for i, (ra, rb) in enumerate(zip(a, b)):
        assert ra.keys() == rb.keys(), (i, sorted(ra.keys() ^ rb.keys()))
        for k, va in ra.items():
            vb = rb[k]
            if isinstance(va, float) and isinstance(vb, float):
                assert math.isclose(va, vb, rel_tol=SAME_NUMBER_RTOL, abs_tol=1e-12) or (
                    math.isnan(va) and math.isnan(vb)), (i, k, va, vb)
            else:
                assert va == vb, (i, k, va, vb)
