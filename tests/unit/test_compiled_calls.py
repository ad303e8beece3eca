"""A Ctrl-C during a numba-compiled call is a KeyboardInterrupt (a partial answer), not the
SystemError chain CPython makes of it when numba runs Python code of its own there (seen in
`.ci/run` as `polytrav regions` exiting 5 on the Ctrl-C tests' 8-input net; a SIGINT sent
0.3 s into subdivision's compiled cuts of that net came out as SystemError 37 times out of 40
in one process, as KeyboardInterrupt 20 out of 20 with :func:`compiled_calls`). Where the
signal lands is timing, so these tests build the chain itself."""
from __future__ import annotations

import pytest

from polytrav.vocabulary.ctrl_c import compiled_calls


def _chain(depth):
    """The exception numba's calls leave: SystemErrors, each caused by the next, down to the
    KeyboardInterrupt."""
    error = KeyboardInterrupt()
    for _ in range(depth):
        try:
            raise SystemError("CPUDispatcher(...) returned a result with an exception set") \
                from error
        except SystemError as wrapped:
            error = wrapped
    return error


@pytest.mark.parametrize("depth", [1, 10])
def test_a_keyboard_interrupt_under_system_errors_comes_out_as_itself(depth):
    with pytest.raises(KeyboardInterrupt):
        with compiled_calls():
            raise _chain(depth)


def test_other_errors_pass_unchanged():
    with pytest.raises(SystemError, match="not a Ctrl-C"):
        with compiled_calls():
            raise SystemError("not a Ctrl-C") from ValueError("x")
    with pytest.raises(ValueError):
        with compiled_calls():
            raise ValueError("x")
