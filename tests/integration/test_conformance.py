"""The VNN-LIB 2.0 conformance suite (``vnnlib-satisfactory``) against ``polytrav-vnnlib``:
no case fails or errors, and the only suspect cases are the ones polytrav must refuse
(``benchmarks/conformance.py``'s ``EXPECTED_SUSPECTS``, each with its reason). Three minutes:
marked slow (``python -m pytest -m slow tests/integration/test_conformance.py``)."""
import importlib.util
import shutil
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "conformance.py"


@pytest.mark.slow
def test_every_case_passes_or_is_refused_for_a_stated_reason(tmp_path):
    if shutil.which("vnnlib-satisfactory") is None:
        pytest.skip('vnnlib-satisfactory is not installed: pip install -e ".[conformance]"')
    solver = shutil.which("polytrav-vnnlib")
    if solver is None:
        pytest.skip("polytrav-vnnlib is not installed (pip install -e . installs it)")
    spec = importlib.util.spec_from_file_location("conformance", SCRIPT)
    conformance = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conformance)
    rows = conformance.outcomes(conformance.run_suite(solver, folder=tmp_path))
    assert not conformance.unexpected(rows), conformance.table(rows)
    suspects = {t for t, _, o, _ in rows if o == "suspect"}
    assert suspects == set(conformance.EXPECTED_SUSPECTS)
    assert sum(o == "pass" for _, _, o, _ in rows) >= 134
