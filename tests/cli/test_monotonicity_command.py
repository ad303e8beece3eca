"""``polytrav monotonicity --stop-at-first`` on a real network: one confirmed pair, exit 1."""
import numpy as np
import pytest
from click.testing import CliRunner
from conftest import DATA_DIR

from polytrav import Network
from polytrav.interface.cli import main

ONNX = DATA_DIR / "acasxu" / "onnx" / "ACASXU_run2a_1_1_batch_2000.onnx"


@pytest.mark.integration
def test_stop_at_first_prints_a_confirmed_pair_and_exits_1():
    if not ONNX.exists():
        pytest.skip(f"ACAS Xu data not found at {ONNX} (../shared/data next to the repo)")
    res = CliRunner().invoke(main, ["monotonicity", str(ONNX), "--lower=-0.3,-0.5,-0.5,-0.5,-0.5",
                                    "--upper=0.6,0.5,0.5,0.5,0.5", "--feature", "0", "--output",
                                    "3", "--direction", "increasing", "--stop-at-first", "--json"])
    assert res.exit_code == 1, res.output
    import json

    out = json.loads(res.output)
    result = out["results"][0]
    assert result["verdict"] == "violated"
    x, x2 = (np.array(p) for p in result["details"]["witness_pair"])
    assert x2[0] > x[0] and np.array_equal(x[1:], x2[1:])
    net = Network.from_onnx(ONNX)
    assert net.forward(x2)[3] < net.forward(x)[3]  # more of input 0, less of output 3
