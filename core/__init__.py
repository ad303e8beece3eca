"""polytrav: exact traversal of the local polytopes of ReLU networks.

The user API is exactly the names in ``__all__``, and a plugin or backend author's is
:mod:`polytrav.extend`; anything else may change without notice.
Each name is imported on first use (``import polytrav`` alone loads nothing heavy: the
command line takes over Ctrl-C before numpy and SciPy load, see docs/cli.md).
"""
import importlib
import warnings

__version__ = "0.1.0"

#: Where each public name lives, by module; the built-in analyses come from
#: ``polytrav.plugins`` (the core names that package only as a string, like the plugin
#: manager's DEFAULT_PLUGINS).
_HOMES = {
    "polytrav.vocabulary.errors": ("CheckpointError", "ConfigError", "NetworkError", "PluginError",
                                   "PolytravError", "RegionError", "SolverError",
                                   "SolverNotAvailable"),
    "polytrav.host.analysis": ("Analysis",),
    "polytrav.host.hookspecs": ("hookimpl",),
    "polytrav.host.manager": ("available_solvers", "list_plugins"),
    "polytrav.model.network": ("Network",),
    "polytrav.model.polytope": ("Polytope",),
    "polytrav.model.region": ("Ball", "Box", "Intersection", "Polyhedron", "Region"),
    "polytrav.vocabulary.results": ("AnalysisResult", "Scope", "Status", "Verdict"),
    "polytrav.host.runner": ("Report", "analyze", "traverse"),
    "polytrav.solve.backend": ("SolverBackend",),
    "polytrav.host.explain": ("Explanation", "RowResult", "explain", "explain_rows"),
    "polytrav.host.regions": ("RegionTable", "region_table"),
    "polytrav.host.profile": ("Profile", "profile"),
    "polytrav.host.diff": ("DiffResult", "diff"),
    "polytrav.host.monotonicity_table": ("MonotonicityTable", "monotonicity_table"),
    "polytrav.traversal": ("TraversalStatus",),
    "polytrav.verification.verify": ("VerificationResult", "verify", "verify_many"),
    "polytrav.plugins": ("OutputRange", "SoftmaxAttack", "Counterfactual", "Monotonicity",
                         "LinearProperty", "RegionStats", "LocalModel"),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}

#: Names that left the public API (issue 44), still importable for one release with a
#: DeprecationWarning naming their new home.
_MOVED = {name: "polytrav.extend" for name in (
    "RunContext", "CellProblem", "Subproblem", "Directive", "Stop", "Restrict", "check_witness",
    "SolveResult", "ChebyshevModel", "PieceView", "get_plugin_manager")}
_MOVED.update({"Traversal": "polytrav.traversal", "TraversalStats": "polytrav.traversal"})


def __getattr__(name: str):
    """A public name, imported on first use (and kept); a subpackage, as ``import`` would."""
    if name in _HOME:
        value = getattr(importlib.import_module(_HOME[name]), name)
        globals()[name] = value
        return value
    if name in _MOVED:
        warnings.warn(f"polytrav.{name} is deprecated and leaves polytrav in its next release: "
                      f"import it from {_MOVED[name]}", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(_MOVED[name]), name)
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{name}":
            raise
    raise AttributeError(f"module 'polytrav' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))


__all__ = [
    # running
    "traverse",
    "analyze",
    "explain",
    "explain_rows",
    "region_table",
    "profile",
    "monotonicity_table",
    "diff",
    "verify",
    "verify_many",
    # networks and regions
    "Network",
    "Region",
    "Box",
    "Ball",
    "Polyhedron",
    "Intersection",
    "Polytope",
    # the built-in analyses
    "OutputRange",
    "SoftmaxAttack",
    "Counterfactual",
    "Monotonicity",
    "LinearProperty",
    "RegionStats",
    "LocalModel",
    # results
    "Report",
    "AnalysisResult",
    "Explanation",
    "RowResult",
    "RegionTable",
    "Profile",
    "DiffResult",
    "MonotonicityTable",
    "VerificationResult",
    "Verdict",
    "Scope",
    "Status",
    "TraversalStatus",
    # plugins (everything else an author uses is in polytrav.extend)
    "hookimpl",
    "Analysis",
    "SolverBackend",
    "list_plugins",
    "available_solvers",
    # errors
    "PolytravError",
    "ConfigError",
    "NetworkError",
    "RegionError",
    "PluginError",
    "SolverNotAvailable",
    "SolverError",
    "CheckpointError",
]
