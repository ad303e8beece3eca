"""polytrav: exact traversal of the local polytopes of ReLU networks.

The public API is exactly the names in ``__all__``; anything else may change without notice.
"""
from polytrav.vocabulary.errors import (
    CheckpointError,
    ConfigError,
    NetworkError,
    PluginError,
    PolytravError,
    RegionError,
    SolverError,
    SolverNotAvailable,
)
from polytrav.host.analysis import Analysis, CellProblem, Directive, Restrict, Stop, check_witness
from polytrav.host.hookspecs import hookimpl
from polytrav.host.manager import available_solvers, get_plugin_manager, list_plugins
from polytrav.model.network import Network
from polytrav.model.polytope import Polytope
from polytrav.model.region import Ball, Box, Intersection, Polyhedron, Region
from polytrav.vocabulary.results import AnalysisResult, SolveResult, Status, Verdict
from polytrav.host.runner import Report, RunContext, analyze
from polytrav.solve.backend import SolverBackend
from polytrav.solve.chebyshev import ChebyshevModel
from polytrav.solve.subproblem import Subproblem
from polytrav.host.runner import traverse
from polytrav.host.explain import Explanation, RowResult, explain, explain_rows
from polytrav.traversal import PieceView, Traversal, TraversalStatus, TraversalStats
from polytrav.verification.verify import VerificationResult, verify, verify_many

__version__ = "0.1.0"

#: The built-in analyses, importable from ``polytrav`` too; loaded on first use (the core
#: names their package only as a string, like the plugin manager's DEFAULT_PLUGINS).
_ANALYSES = ("OutputRange", "SoftmaxAttack", "Counterfactual", "Monotonicity", "LinearProperty",
             "RegionStats", "LocalModel")


def __getattr__(name: str):
    if name in _ANALYSES:
        import importlib

        return getattr(importlib.import_module("polytrav.plugins"), name)
    raise AttributeError(f"module 'polytrav' has no attribute {name!r}")

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
