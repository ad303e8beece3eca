"""How a run of analyses goes, in one value: :class:`RunOptions`.

:func:`polytrav.analyze` takes these as keyword arguments and hands one ``RunOptions`` down
(the session, the serial run, a run in parts and each of its parts), so a new option is added
in one place.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from polytrav.traversal.engine import check_budgets
from polytrav.vocabulary.errors import ConfigError

__all__ = ["RunOptions"]


@dataclass(frozen=True)
class RunOptions:
    """The options of :func:`polytrav.analyze` (see there for each): where to start, the
    backends, the strategy and order, budgets, scale-out, the interrupt policy and whether
    the analysis's settle stage runs."""

    start: Any = None
    solver: Any = None
    strategy: str = "auto"
    order: str = "bfs"
    max_polytopes: int | None = None
    time_limit: float | None = None
    deadline: float | None = None
    within: list | None = None
    progress: Callable | None = None
    executor: Any = None
    checkpoint: Any = None
    resume: bool = False
    checkpoint_every: float = 60.0
    parts: int | None = None
    keep_polytopes: bool = False
    on_interrupt: str = "raise"
    volume_shares: bool = True
    settle: bool = True

    def __post_init__(self):
        if self.on_interrupt not in ("raise", "report"):
            raise ConfigError(f"analyze: on_interrupt must be 'raise' or 'report', got "
                              f"{self.on_interrupt!r}")
        check_budgets(self.max_polytopes, self.time_limit, "analyze")
        if self.in_parts and self.within is not None:
            raise ConfigError("analyze: 'within' and a run in parts (executor/checkpoint) do "
                              "not mix")
        if self.in_parts and self.keep_polytopes:
            raise ConfigError("analyze: keep_polytopes needs a serial run (no "
                              "executor/checkpoint)")

    @property
    def in_parts(self) -> bool:
        """Whether the run goes in parts (an executor or a checkpoint)."""
        return self.executor is not None or self.checkpoint is not None

    def replace(self, **changes) -> "RunOptions":
        """A copy with ``changes``."""
        return dataclasses.replace(self, **changes)
