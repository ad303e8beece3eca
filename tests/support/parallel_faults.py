"""Test-only analyses for parallel runs: one that kills its worker process once."""
from __future__ import annotations

import os
import signal
from pathlib import Path

from polytrav.plugins.output_range import OutputRange


class DieOnce(OutputRange):
    """OutputRange that SIGKILLs its own process at its ``at``-th polytope, once per marker.

    The marker file is created before the kill, so a retried part runs normally.
    """

    name = "die_once"

    def __init__(self, marker: str, at: int = 3, output: int = 0):
        super().__init__(output=output)
        self.marker = marker
        self.at = at

    def visit(self, polytope, context):
        if self.n_polytopes == self.at and not Path(self.marker).exists():
            Path(self.marker).touch()
            os.kill(os.getpid(), signal.SIGKILL)
        return super().visit(polytope, context)
