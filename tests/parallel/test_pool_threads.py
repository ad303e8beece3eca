"""A process pool's workers run one BLAS thread unless the user chose a thread count."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap

from polytrav.vocabulary.threads import THREAD_VARIABLES

HANG = 120  # seconds: only a hung child hits it

WORKER_BLAS = textwrap.dedent("""
    from threadpoolctl import threadpool_info
    from polytrav.parallel import process_pool
    with process_pool(1) as pool:
        info = pool.submit(threadpool_info).result()
    print(sorted({lib["num_threads"] for lib in info if lib["user_api"] == "blas"}))
""")


def worker_blas_threads(env_extra: dict) -> list[int]:
    """The BLAS thread counts a pool worker runs with, from a Python program (no console
    script: nothing set the thread variables before)."""
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    out = subprocess.run([sys.executable, "-c", WORKER_BLAS],
                         env={**env, **env_extra}, capture_output=True, text=True,
                         timeout=HANG, check=True)
    return ast.literal_eval(out.stdout.strip())


def test_a_pool_worker_runs_one_blas_thread_unless_the_user_chose():
    assert worker_blas_threads({}) == [1]
    assert worker_blas_threads({"OPENBLAS_NUM_THREADS": "2"}) == [2]
