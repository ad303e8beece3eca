"""The one table of process exit codes: a VNN answer's, which every ``polytrav`` command's
outcome maps onto (holds / complete is ``unsat``'s 0, a confirmed violation ``sat``'s 1, a
partial run ``unknown``'s 2, a timeout 3, bad input 4); a bug is 5. ``polytrav-vnnlib``
follows VNN-LIB 2.0's own codes (:mod:`polytrav.interface.cli.vnnlib_solver`)."""

__all__ = ["ANSWER_EXIT", "EXIT_INTERNAL"]

#: Exit code per answer of ``polytrav verify`` (one instance, or the first of a batch's).
ANSWER_EXIT = {"unsat": 0, "sat": 1, "unknown": 2, "timeout": 3, "error": 4}
#: Exit code of a bug in polytrav.
EXIT_INTERNAL = 5
