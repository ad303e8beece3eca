"""Wall-clock guards for tests whose point is an answer, not a time.

Where a search has no count budget (branch and bound, a MILP, ``verify``), a test that must
see it decide gives it :data:`DECIDE` seconds: wide slack, so that a machine many times
slower (other work on the cores) still decides. ``verify`` and ``analyze`` give their
stages shares of the time left (the branch-and-bound probe 30 %, the deep input splitting
25 %), so a budget only just above the idle time fails under load: 60-120 s budgets timed
out on a machine loaded 6 times over, where the MNIST instances took 10-90 s of CPU.
"""

#: Seconds for a search that must decide (a guard only).
DECIDE = 1200
