"""One BLAS thread per process, where the user chose no thread count.

polytrav's matrices are small (50-300 wide: the ACAS Xu and MNIST networks) and its parallel
runs use processes; on 2 cores a second BLAS thread added 45 % CPU to ``verify`` on ACAS Xu
1_1 prop 3 and 15 % on an mnistfc 256x2 instance for the same wall time, under load it
halved the input split's boxes per second, and two pool workers of two BLAS threads each ran
the 8 x 32 bunny's subdivision in parts at 0.48x the serial run's speed (issue 61).
"""
import os

#: The numeric libraries' thread counts; a user who sets any of them is obeyed.
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def user_chose_threads() -> bool:
    """Whether the environment names a thread count for the numeric libraries."""
    return any(name in os.environ for name in THREAD_VARIABLES)


def one_thread() -> None:
    """Before NumPy loads (a console script's start): one thread, unless the user chose."""
    if not user_chose_threads():
        for name in THREAD_VARIABLES:
            os.environ[name] = "1"
