"""The progress of :func:`polytrav.explain`, row by row.

``progress=True`` draws a tqdm bar on stderr: rows done of all, the rate, the time left, how
many rows are proven and unknown so far, and the row being worked on (shown as each row
starts, so a long row never hides behind a stale count). ``progress=callable`` calls it as
``progress(row, done, total)`` after each row (a :class:`~polytrav.host.explanation.RowResult`,
the rows done so far and the rows in all): a notebook's own display, a log line, a
checkpoint.
"""
from __future__ import annotations

import sys
from collections.abc import Callable

from polytrav.vocabulary.errors import ConfigError

__all__ = ["RowProgress", "row_progress"]


class RowProgress:
    """What :func:`polytrav.explain` tells as its rows go: :meth:`start` before a row (serial
    runs), :meth:`done` after each, :meth:`close` at the end (also on Ctrl-C)."""

    def __init__(self, total: int, bar: bool = False, callback: Callable | None = None):
        self.total, self.callback = total, callback
        self.n_done = self.unknown = 0
        self.bar = None
        if bar:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc="explain", unit="row", file=sys.stderr,
                            dynamic_ncols=True, leave=False, mininterval=0.2)

    def start(self, label) -> None:
        """Row ``label`` starts: the bar says so at once (``refresh``)."""
        if self.bar is not None:
            self.bar.set_postfix_str(self._postfix(f"row {label}"), refresh=True)

    def done(self, row) -> None:
        """Row ``row`` (a ``RowResult``) is done."""
        self.n_done += 1
        self.unknown += not row.proven
        if self.bar is not None:
            self.bar.set_postfix_str(self._postfix(), refresh=False)
            self.bar.update(1)
        if self.callback is not None:
            self.callback(row, self.n_done, self.total)

    def close(self) -> None:
        """Draw the final count (tqdm skips frames within ``mininterval``: on a fast run
        the last rows would never show), then close the bar."""
        if self.bar is not None:
            self.bar.set_postfix_str(self._postfix(), refresh=False)
            self.bar.refresh()
            self.bar.close()

    def _postfix(self, now: str = "") -> str:
        counts = f"{self.n_done - self.unknown} proven, {self.unknown} unknown"
        return f"{counts}; {now}" if now else counts


def row_progress(progress, total: int) -> RowProgress | None:
    """The :class:`RowProgress` of ``explain``'s ``progress`` argument (None/False: none)."""
    if progress is None or progress is False:
        return None
    if progress is True:
        return RowProgress(total, bar=True)
    if callable(progress):
        return RowProgress(total, callback=progress)
    raise ConfigError(f"explain: progress must be True, False or a callable "
                      f"progress(row, done, total), got {type(progress).__name__}")
