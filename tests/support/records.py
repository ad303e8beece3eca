"""Tables of ``explain`` compared across runs and processes.

A compiled subproblem keeps its warm LP session across the runs of a process
(:func:`polytrav.solve.subproblem.compiled`), so the same row explained after other runs in
the same process, or in a fresh worker, may reach the same optimum by another pivot path: the
numbers then agree to the solver's tolerance, not to the last bit. Everything else (which
class, exact or not, how it was proven) must be equal.
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
