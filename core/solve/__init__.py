"""Layer 2, solving: the solver-backend API (``backend``: ``SolverBackend``), the traversal's
Chebyshev LP (``chebyshev``) and compiled per-polytope subproblems (``subproblem``). Concrete
backends live in ``polytrav.solvers`` and register as plugins."""
