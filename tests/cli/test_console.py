"""The console scripts' Ctrl-C while a command works: a real SIGINT in a new process whose
SIGINT the console module took over (as ``polytrav`` does), at the two places where Python
alone would lose it or leave a half-imported module."""
from __future__ import annotations

import subprocess
import sys
import textwrap

from ctrl_c import as_from_a_terminal

#: Seconds to wait for the child: a hang guard only.
HANG = 300

PROLOGUE = textwrap.dedent("""
    import signal, sys
    sys.argv[0] = "polytrav"  # as the console script starts
    from polytrav.interface import console
    console.working()
""")


def run(body: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", PROLOGUE + textwrap.dedent(body)],
                          preexec_fn=as_from_a_terminal,
                          capture_output=True, text=True, timeout=HANG)


def test_a_ctrl_c_python_drops_in_a_finaliser_is_raised_again():
    res = run("""
        import gc, weakref
        class Owner: pass
        def finaliser():
            signal.raise_signal(signal.SIGINT)  # its KeyboardInterrupt is dropped by Python
        owner = Owner()
        weakref.finalize(owner, finaliser)
        try:
            del owner
            gc.collect()
            while True:  # the work goes on: the Ctrl-C must still end it
                pass
        except KeyboardInterrupt:
            print("interrupted")
    """)
    assert (res.returncode, res.stdout, res.stderr) == (0, "interrupted\n", ""), res


def test_a_ctrl_c_during_an_import_comes_once_the_import_is_whole(tmp_path):
    (tmp_path / "slow_module.py").write_text(textwrap.dedent("""
        import signal
        signal.raise_signal(signal.SIGINT)  # Ctrl-C in the middle of this import
        DONE = True
    """))
    res = run(f"""
        sys.path.insert(0, {str(tmp_path)!r})
        try:
            import slow_module
            while True:  # the KeyboardInterrupt comes right after the import
                pass
        except KeyboardInterrupt:
            print(sys.modules["slow_module"].DONE)
    """)
    assert (res.returncode, res.stdout, res.stderr) == (0, "True\n", ""), res


def test_a_ctrl_c_while_highs_silences_its_banner_waits_until_stdout_is_back():
    """The first HiGHS model is made with stdout on the null device; a KeyboardInterrupt in
    that window left it there, and the partial report then went nowhere (exit 2, no output)."""
    res = run("""
        import os
        from polytrav.vocabulary.ctrl_c import ctrl_c_held
        saved = os.dup(1)
        def quiet():
            os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
            signal.raise_signal(signal.SIGINT)  # Ctrl-C while stdout is away
            os.dup2(saved, 1)
        try:
            with ctrl_c_held():
                quiet()
        except KeyboardInterrupt:
            print("stdout is back")
    """)
    assert (res.returncode, res.stdout, res.stderr) == (0, "stdout is back\n", ""), res


def test_a_ctrl_c_ignored_by_the_starter_stays_ignored():
    """Started with SIGINT ignored (a script's background job, nohup), the console script
    keeps it ignored, as Python does, rather than ignore it early and honour it later."""
    code = ("import signal, sys\n"
            "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            "sys.argv[0] = 'polytrav'\n"
            "from polytrav.interface import console\n"
            "console.working()\n"
            "print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=HANG)
    assert res.stdout == "True\n", (res.stdout, res.stderr)


def _threads_seen(env_extra: dict, program: str = "polytrav",
                  module: str = "polytrav.interface.console") -> list[str]:
    """The thread variables a console script leaves for NumPy (and NumPy's BLAS the count)."""
    import os

    from polytrav.vocabulary.threads import THREAD_VARIABLES

    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    body = textwrap.dedent(f"""
        import os, sys
        sys.argv[0] = {program!r}  # as the console script starts
        import {module}
        from polytrav.vocabulary.threads import THREAD_VARIABLES
        print([os.environ.get(k) for k in THREAD_VARIABLES])
    """)
    out = subprocess.run([sys.executable, "-c", body], env={**env, **env_extra},
                         capture_output=True, text=True, timeout=HANG, check=True)
    import ast

    return ast.literal_eval(out.stdout.strip())


def test_a_command_runs_blas_on_one_thread_unless_the_user_chose():
    assert _threads_seen({}) == ["1", "1", "1"]
    checker = {"program": "/venv/bin/polytrav-check-proof", "module": "polytrav.proof.check"}
    assert _threads_seen({}, **checker) == ["1", "1", "1"]
    assert _threads_seen({"OMP_NUM_THREADS": "4"}, **checker) == [None, "4", None]
    assert _threads_seen({"OMP_NUM_THREADS": "4"}) == [None, "4", None]
