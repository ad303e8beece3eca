"""The console scripts ``polytrav`` and ``polytrav-vnnlib``: Ctrl-C from the first instant.

Importing this module takes SIGINT over before anything heavy loads (numpy, SciPy, click and
the commands load after it; ``import polytrav`` alone loads nothing). Ctrl-C then ends a run
in one of three ways, by phase:

* **starting** (imports, parsing the command line, ``--help``): one line on stderr and the
  process ends at once with :func:`os._exit`, so that nothing half imported is torn down (a
  native library interrupted mid-import can crash in the interpreter's clean-up);
* **working** (:func:`working`, once a command runs): ``KeyboardInterrupt`` as usual, so the
  command prints the part done so far; it is held back while an import is in progress and
  raised as soon as that import ends, and raised again where Python had to drop it (in a
  finaliser or a callback from C: :data:`sys.unraisablehook`), so that it is never lost;
* **answered** (:func:`answered`, once the answer is in hand or the process exits): ignored,
  so the answer and its exit code stand (and the interpreter's clean-up, which would restore
  the default action of SIGINT for a handler written in Python, is never killed by it).

Before this module runs there is only the interpreter's own start-up (docs/cli.md measures
it): there a Ctrl-C ends the process by the signal, or with Python's own ``KeyboardInterrupt``
report when it falls in the few imports that lead here. A process started with Ctrl-C ignored
(a background job of a script, ``nohup``) keeps it ignored, as Python itself does.
"""
import os
import signal
import sys

#: The line and exit code of a Ctrl-C while starting, per console script (the codes are
#: ``cli.common.EXIT_PARTIAL`` and ``cli.vnnlib_solver.EXIT_INTERRUPTED``, not imported here:
#: this module loads nothing heavy).
STARTING = {"polytrav": ("polytrav: interrupted before any result", 2),
            "polytrav-vnnlib": ("polytrav-vnnlib: interrupted before any answer", 130)}
_said = STARTING.get(os.path.basename(sys.argv[0]), STARTING["polytrav"])
_taken = False  # whether this process's SIGINT is ours (a console script, not a library call)
_held = False  # a Ctrl-C is held back until the current import ends
_ignored = False  # started with Ctrl-C ignored (a background job, nohup): it stays ignored


def _while_starting(signum, frame) -> None:
    os.write(2, (_said[0] + "\n").encode())
    os._exit(_said[1])


def _take(program: str) -> None:
    global _taken, _said, _ignored
    _taken, _said = True, STARTING[program]
    if _ignored or signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        _ignored = True  # as Python itself does: what the starter ignores stays ignored
        return
    signal.signal(signal.SIGINT, _while_starting)


if os.path.basename(sys.argv[0]) in STARTING:  # started as a console script: from now on
    try:
        _take(os.path.basename(sys.argv[0]))
    except KeyboardInterrupt:  # a Ctrl-C while the handler was being put in place: as ours
        _while_starting(signal.SIGINT, None)

from polytrav.vocabulary.threads import one_thread  # noqa: E402

if os.path.basename(sys.argv[0]) in STARTING:
    one_thread()

# only after the take-over: nothing that can wait comes before it
import _thread  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

_LOADED = time.perf_counter()


def _importing(frame) -> bool:
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _while_working(signum, frame) -> None:
    if _importing(frame):
        _hold()
        return
    raise KeyboardInterrupt


def _hold() -> None:
    """Deliver the Ctrl-C again shortly (once the import, or the finaliser, is over)."""
    global _held
    if not _held:
        _held = True
        again = threading.Timer(0.02, _again)
        again.daemon = True
        again.start()


def _unraisable(unraisable) -> None:
    if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
        _hold()  # Python dropped it (raised in a finaliser or a callback from C)
    else:
        sys.__unraisablehook__(unraisable)


def _again() -> None:
    global _held
    _held = False
    _thread.interrupt_main(signal.SIGINT)  # runs the handler in force now (nothing if ignored)


def working() -> None:
    """From now on Ctrl-C raises ``KeyboardInterrupt`` (held back during imports); a no-op
    unless a console script of this module started the process."""
    if _taken and not _ignored:
        sys.unraisablehook = _unraisable
        signal.signal(signal.SIGINT, _while_working)


def answered() -> None:
    """From now on Ctrl-C is ignored (the answer is in hand or out; the process is ending)."""
    if _taken:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def since_start() -> float:
    """Seconds since the process of a console script started, the clock of VNN-COMP's
    ``--timeout`` (Linux: from /proc; elsewhere since this module loaded, which the scripts
    do first); 0.0 inside another program (tests, notebooks), where the clock is the call's."""
    if not _taken:
        return 0.0
    try:
        with open("/proc/self/stat") as fh:
            start_ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as fh:
            uptime = float(fh.read().split()[0])
        return max(uptime - start_ticks / os.sysconf("SC_CLK_TCK"), 0.0)
    except (OSError, ValueError, IndexError):
        return time.perf_counter() - _LOADED


def polytrav() -> None:
    """The ``polytrav`` console script (:func:`polytrav.interface.cli.main`)."""
    _take("polytrav")
    from polytrav.interface.cli import main

    try:
        main()
    finally:
        answered()


def polytrav_vnnlib() -> None:
    """The ``polytrav-vnnlib`` console script
    (:func:`polytrav.interface.cli.vnnlib_solver.main`)."""
    _take("polytrav-vnnlib")
    from polytrav.interface.cli.vnnlib_solver import main

    try:
        main()
    finally:
        answered()  # also on the way out of a refusal: Python's clean-up has no handler
