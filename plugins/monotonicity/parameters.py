"""The monotonicity analysis's parameters, checked against the run (:func:`check_parameters`)."""
from __future__ import annotations

import numpy as np

from polytrav.extend import ConfigError

__all__ = ["DIRECTIONS", "check_parameters"]

DIRECTIONS = ("increasing", "decreasing", None)


def check_parameters(a, network) -> None:
    """Raise :class:`ConfigError` naming the first parameter of ``a`` (a
    :class:`~polytrav.plugins.monotonicity.Monotonicity`) that does not fit ``network``."""
    n, m = network.n_inputs, network.n_outputs
    if not isinstance(a.feature, (int, np.integer)) or not 0 <= a.feature < n:
        raise ConfigError(f"analysis {a.name!r}: feature must be an input index in [0, {n}), "
                          f"got {a.feature!r}")
    if not isinstance(a.output, (int, np.integer)) or not 0 <= a.output < m:
        raise ConfigError(f"analysis {a.name!r}: output must be in [0, {m}), got {a.output!r}")
    if a.direction not in DIRECTIONS:
        raise ConfigError(f"analysis {a.name!r}: direction must be one of {DIRECTIONS}, "
                          f"got {a.direction!r}")
    if not isinstance(a.stop_at_first, (bool, np.bool_)):
        raise ConfigError(f"analysis {a.name!r}: stop_at_first must be True or False, "
                          f"got {a.stop_at_first!r}")
    if a.bounds not in (None, True, False):
        raise ConfigError(f"analysis {a.name!r}: bounds must be True, False or None, "
                          f"got {a.bounds!r}")
    if a.bounds and a.direction is None:
        raise ConfigError(f"analysis {a.name!r}: bounds=True needs a direction "
                          "('increasing' or 'decreasing'): a piece's slope sign proves "
                          "nothing when either direction may hold")
    if a.stop_at_first and a.direction is None:
        raise ConfigError(f"analysis {a.name!r}: stop_at_first=True needs a direction "
                          "('increasing' or 'decreasing'): with direction=None a violation "
                          "is the minority sign, known only after every polytope")
    if a.split is not None and (not isinstance(a.split, (int, np.integer))
                                   or isinstance(a.split, bool) or a.split < 0):
        raise ConfigError(f"analysis {a.name!r}: split must be a number of boxes >= 0 "
                          f"or None, got {a.split!r}")
    if a.meet not in ("all", "forward"):
        raise ConfigError(f"analysis {a.name!r}: meet must be 'all' or 'forward', "
                          f"got {a.meet!r}")
    if not isinstance(a.milp, (bool, np.bool_)):
        raise ConfigError(f"analysis {a.name!r}: milp must be True or False, "
                          f"got {a.milp!r}")
