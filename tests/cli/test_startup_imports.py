"""Start-up stays light (issue 58): every command, run as a user runs it on a tiny model,
ends having loaded only the heavy modules its own path uses (``startup.HEAVY``: onnx and
ml_dtypes, onnxruntime, scipy.optimize and scipy.sparse, cvxpy, pandas, matplotlib, jinja2,
Dask, torch, scikit-learn, ...). Nothing here is timed: ``benchmarks/startup.py`` times each
command and each dependency's import, and docs/benchmarks.md has the table."""
from __future__ import annotations

import pytest
from startup import COMMANDS, console_script, heavy, loaded_modules, write_inputs


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    pytest.importorskip("onnx")  # writes the tiny models (the commands read them without it)
    return write_inputs(tmp_path_factory.mktemp("startup"))


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_command_loads_only_the_heavy_modules_its_path_uses(inputs, command):
    program, args, code, uses = COMMANDS[command]
    if not console_script(program).exists():
        pytest.skip(f"the console script {program} is not installed next to this interpreter "
                    "(pip install -e . installs it)")
    modules, proc = loaded_modules(command, inputs)
    seen = f"{program} {' '.join(args)}: exit {proc.returncode}\nstderr: {proc.stderr[-2000:]}"
    assert proc.returncode == code and modules, seen
    assert set(heavy(modules)) <= set(uses), seen
