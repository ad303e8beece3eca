"""Ctrl-C held back while a block must not be cut in half, and Ctrl-C inside compiled code.

:func:`ctrl_c_held` records a Ctrl-C (SIGINT) instead of raising ``KeyboardInterrupt``
inside its block; on leaving, it either delivers it to the handler it was meant for (raised
right after the block) or drops it (the block itself makes the answer the Ctrl-C asked
for). Only Python's main thread receives signals, and only a handler written in Python can
be swapped: elsewhere the block runs as it is.

:func:`compiled_calls` gives back a Ctrl-C that came while a numba-compiled function ran:
numba runs Python code of its own there (e.g. unpickling a constant), where the handler's
``KeyboardInterrupt`` is not propagated, and CPython reports a chain of ``SystemError`` exceptions
("returned a result with an exception set") whose first cause is the ``KeyboardInterrupt``.
"""
from __future__ import annotations

import contextlib
import signal
import threading

__all__ = ["ctrl_c_held", "compiled_calls"]


class Held:
    """What came during a :func:`ctrl_c_held` block: ``pressed`` is True after a Ctrl-C."""

    pressed = False


@contextlib.contextmanager
def ctrl_c_held(deliver: bool = True):
    """A block that a Ctrl-C does not interrupt; yields a :class:`Held`. ``deliver``: raise
    the Ctrl-C through the previous handler once the block is over (else it is dropped)."""
    held = Held()
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is None):  # None: not set from Python
        yield held
        return

    def record(signum, frame):
        held.pressed = True

    previous = signal.signal(signal.SIGINT, record)
    try:
        yield held
    finally:
        signal.signal(signal.SIGINT, previous)
        if held.pressed and deliver:
            signal.raise_signal(signal.SIGINT)  # now, to the handler it was meant for


@contextlib.contextmanager
def compiled_calls():
    """A block of numba-compiled calls: a Ctrl-C during one leaves it as the
    ``KeyboardInterrupt`` it was (a partial answer), not as a ``SystemError``."""
    try:
        yield
    except SystemError as error:
        cause = error.__cause__
        while isinstance(cause, SystemError):
            cause = cause.__cause__
        if isinstance(cause, KeyboardInterrupt):
            raise cause from None
        raise
