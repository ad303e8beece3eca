"""polytrav: exact traversal of the local polytopes of ReLU networks.

The public API is exactly the names in ``__all__``; anything else may change without notice.
Each name is imported on first use (``import polytrav`` alone loads nothing heavy: the
command line takes over Ctrl-C before numpy and SciPy load, see docs/cli.md).
"""
import importlib

__version__ = "0.1.0"

#: Where each public name lives, by module; the built-in analyses come from
#: ``polytrav.plugins`` (the core names that package only as a string, like the plugin
#: manager's DEFAULT_PLUGINS).
_HOMES = {
    "polytrav.vocabulary.errors": ("CheckpointError", "ConfigError", "NetworkError", "PluginError",
                                   "PolytravError", "RegionError", "SolverError",
                                   "SolverNotAvailable"),
    "polytrav.host.analysis": ("Analysis", "CellProblem", "Directive", "Restrict", "Stop",
                               "check_witness"),
    "polytrav.host.hookspecs": ("hookimpl",),
    "polytrav.host.manager": ("available_solvers", "get_plugin_manager", "list_plugins"),
    "polytrav.model.network": ("Network",),
    "polytrav.model.polytope": ("Polytope",),
    "polytrav.model.region": ("Ball", "Box", "Intersection", "Polyhedron", "Region"),
    "polytrav.vocabulary.results": ("AnalysisResult", "SolveResult", "Status", "Verdict"),
    "polytrav.host.runner": ("Report", "RunContext", "analyze", "traverse"),
    "polytrav.solve.backend": ("SolverBackend",),
    "polytrav.solve.chebyshev": ("ChebyshevModel",),
    "polytrav.solve.subproblem": ("Subproblem",),
    "polytrav.host.explain": ("Explanation", "RowResult", "explain", "explain_rows"),
    "polytrav.traversal": ("PieceView", "Traversal", "TraversalStatus", "TraversalStats"),
    "polytrav.verification.verify": ("VerificationResult", "verify", "verify_many"),
    "polytrav.plugins": ("OutputRange", "SoftmaxAttack", "Counterfactual", "Monotonicity",
                         "LinearProperty", "RegionStats", "LocalModel"),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str):
    """A public name, imported on first use (and kept); a subpackage, as ``import`` would."""
    if name in _HOME:
        value = getattr(importlib.import_module(_HOME[name]), name)
        globals()[name] = value
        return value
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{name}":
            raise
    raise AttributeError(f"module 'polytrav' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "hookimpl",
    "OutputRange",
    "SoftmaxAttack",
    "Counterfactual",
    "Monotonicity",
    "LinearProperty",
    "RegionStats",
    "LocalModel",
    "traverse",
    "analyze",
    "explain",
    "explain_rows",
    "Explanation",
    "RowResult",
    "verify",
    "verify_many",
    "VerificationResult",
    "Report",
    "RunContext",
    "Analysis",
    "AnalysisResult",
    "Verdict",
    "Directive",
    "Stop",
    "Restrict",
    "CellProblem",
    "Subproblem",
    "check_witness",
    "list_plugins",
    "Traversal",
    "TraversalStatus",
    "PieceView",
    "TraversalStats",
    "Network",
    "Polytope",
    "Region",
    "Box",
    "Ball",
    "Polyhedron",
    "Intersection",
    "SolverBackend",
    "ChebyshevModel",
    "SolveResult",
    "Status",
    "available_solvers",
    "get_plugin_manager",
    "PolytravError",
    "ConfigError",
    "NetworkError",
    "RegionError",
    "PluginError",
    "SolverNotAvailable",
    "SolverError",
    "CheckpointError",
]
