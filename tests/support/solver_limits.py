"""A third-party plugin that records the time limit every solver call receives.

Two backends, registered through a ``polytrav`` entry point exactly as a third-party package
registers its own (:func:`install` writes the distribution's metadata): ``recording-highs``
(HiGHS: ``lp`` and ``milp``) and ``recording-clarabel`` (Clarabel: ``lp`` and ``qp``). They
are the real solvers; each call that starts (HiGHS: its object's run time moved) is recorded
with the seconds the solver itself was given, read back from it: HiGHS's ``time_limit``
option less the run time its object had before the call (HiGHS counts an LP's limit from its
object's first run) or, for a MILP, the option as it is (HiGHS 1.16's MIP solver counts from
the current run; the backend gives each MILP an object of run time 0); Clarabel's
``settings.time_limit``. A call not started leaves no record. Records go to :data:`CALLS`
and, when ``SOLVER_LIMITS_LOG`` names a file, to it as JSON lines (for a command in a
subprocess). ``t`` is ``time.perf_counter()`` before the call: the time left then is an upper
bound of what the call may be given.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from polytrav import hookimpl
from polytrav.solvers.clarabel import ClarabelBackend
from polytrav.solvers.highs import HighsBackend

#: Every recorded call of this process: ``{"backend", "form", "t", "limit"}``.
CALLS: list[dict] = []

LOG = "SOLVER_LIMITS_LOG"
ENTRY_POINT = "solver_limits"


def _record(backend: str, form: str, t: float, limit: float) -> None:
    row = {"backend": backend, "form": form, "t": t, "limit": limit}
    CALLS.append(row)
    if os.environ.get(LOG):
        with open(os.environ[LOG], "a") as fh:
            fh.write(json.dumps(row) + "\n")


def read_log(path: Path) -> list[dict]:
    """The records a subprocess wrote to ``path`` (none if it wrote none)."""
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


class RecordingHighs(HighsBackend):
    """HiGHS, each run's time limit recorded."""

    name = "recording-highs"
    _form = "lp"

    def solve_milp(self, *args, **kwargs):
        self._form = "milp"
        try:
            return super().solve_milp(*args, **kwargs)
        finally:
            self._form = "lp"

    def run(self, h, limit=None) -> bool:
        t, before = time.perf_counter(), h.getRunTime()
        ran = super().run(h, limit)
        if h.getRunTime() > before:  # HiGHS ran (its clock moved), whatever run() says
            option = h.getOptionValue("time_limit")
            option = option[1] if isinstance(option, tuple) else option
            _record(self.name, self._form, t,
                    float(option) if self._form == "milp" else float(option) - before)
        return ran


class RecordingClarabel(ClarabelBackend):
    """Clarabel, each solve's ``settings.time_limit`` recorded."""

    name = "recording-clarabel"

    def solve_qp(self, P, q, *args, **kwargs):
        self._call = (time.perf_counter(), "lp" if P is None else "qp")
        return super().solve_qp(P, q, *args, **kwargs)

    def new_solver(self, P, q, A, b, cones, settings):
        t, form = self._call
        _record(self.name, form, t, float(settings.time_limit))
        return super().new_solver(P, q, A, b, cones, settings)


@hookimpl
def polytrav_add_solvers():
    return [RecordingHighs, RecordingClarabel]


def install(folder: Path) -> dict[str, str]:
    """This module as an installed distribution's entry point, in ``folder`` (put it on the
    path): the environment that loads it and no other entry-point plugin."""
    dist = folder / "polytrav_solver_limits-0.1.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: polytrav-solver-limits\n"
                                   "Version: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[polytrav]\n{ENTRY_POINT} = solver_limits\n")
    return {"POLYTRAV_DISABLE_PLUGIN_AUTOLOAD": "0", "POLYTRAV_PLUGINS": ENTRY_POINT}
