"""Checkpoints: a run killed with SIGKILL resumes to the uninterrupted run's answers."""
from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from reference import random_net

from polytrav import Box, CheckpointError, analyze
from polytrav.plugins.output_range import OutputRange
from polytrav.plugins.region_stats import RegionStats

SUPPORT = Path(__file__).resolve().parents[1] / "support"
SCRIPT = textwrap.dedent(f"""
    import sys
    sys.path.insert(0, {str(SUPPORT)!r})
    import numpy as np
    from reference import random_net
    from polytrav import Box, analyze
    from polytrav.plugins.output_range import OutputRange
    from polytrav.plugins.region_stats import RegionStats
    net = random_net(5, 4, [6, 6, 4], n_out=2)
    calls = 0

    def progress(_):
        # called after each part, before its save: on the 4th call parts 1-3 are saved
        global calls
        calls += 1
        if calls == 4:
            print("ready", flush=True)
            sys.stdin.readline()  # wait here to be killed (or for the test to go away)

    analyze(net, Box(-np.ones(4), np.ones(4)), [OutputRange(), RegionStats()],
            checkpoint=sys.argv[1], checkpoint_every=0.0, parts=60, progress=progress)
""")


def done_parts(path: Path) -> tuple[int, int]:
    try:
        with open(path, "rb") as fh:
            blob = pickle.load(fh)
    except (OSError, EOFError, pickle.UnpicklingError):
        return 0, 1
    return len(blob["parts"]), len(blob["pieces"])


def test_sigkilled_run_resumes_to_the_uninterrupted_answer(tmp_path):
    path = tmp_path / "run.ckpt"
    child = subprocess.Popen([sys.executable, "-c", SCRIPT, str(path)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        # the child says when 3 parts are saved and waits there, however slow the machine
        assert child.stdout.readline() == "ready\n", "the run ended before it could be killed"
        os.kill(child.pid, signal.SIGKILL)  # then kill it without warning
        child.wait()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdin.close()
        child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    saved, total = done_parts(path)
    assert saved == 3

    net = random_net(5, 4, [6, 6, 4], n_out=2)
    region = Box(-np.ones(4), np.ones(4))
    resumed = analyze(net, region, [OutputRange(), RegionStats()], checkpoint=path,
                      resume=True, parts=60)
    whole = analyze(net, region, [OutputRange(), RegionStats()])
    assert resumed.complete and resumed[0].exact and resumed[1].exact
    assert resumed.stats["polytopes"] == whole.stats["polytopes"]
    assert resumed[0].value == pytest.approx(whole[0].value, rel=1e-9)
    codes = lambda r: sorted(c for _, _, c, _ in r[1].details["polytopes"])  # noqa: E731
    assert codes(resumed) == codes(whole)
    assert resumed.stats["pieces_done"] == resumed.stats["pieces_total"] == total


def test_a_checkpoint_of_other_inputs_is_refused(tmp_path):
    path = tmp_path / "run.ckpt"
    region = Box(-np.ones(2), np.ones(2))
    analyze(random_net(0, 2, [6, 5]), region, OutputRange(), checkpoint=path)
    with pytest.raises(CheckpointError, match="belongs to another run"):
        analyze(random_net(1, 2, [6, 5]), region, OutputRange(), checkpoint=path, resume=True)
    with pytest.raises(CheckpointError, match="belongs to another run"):
        analyze(random_net(0, 2, [6, 5]), region, RegionStats(), checkpoint=path, resume=True)
    with pytest.raises(CheckpointError, match="exists; pass resume=True"):
        analyze(random_net(0, 2, [6, 5]), region, OutputRange(), checkpoint=path)


def test_resuming_a_finished_checkpoint_only_combines(tmp_path):
    path = tmp_path / "run.ckpt"
    net, region = random_net(0, 2, [6, 5]), Box(-np.ones(2), np.ones(2))
    first = analyze(net, region, OutputRange(), checkpoint=path)
    again = analyze(net, region, OutputRange(), checkpoint=path, resume=True)
    assert again.complete and again[0].value == first[0].value
    assert again.stats["polytopes"] == first.stats["polytopes"]


def test_an_unreadable_checkpoint_is_refused(tmp_path):
    path = tmp_path / "run.ckpt"
    path.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="cannot be read"):
        analyze(random_net(0, 2, [6, 5]), Box(-np.ones(2), np.ones(2)), OutputRange(),
                checkpoint=path, resume=True)
