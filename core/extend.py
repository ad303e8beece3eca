"""Everything a plugin or backend author uses, in one module.

Built-in analyses and backends import only from here and from :mod:`polytrav` (a test
checks it), so a third-party plugin can do what a built-in does. Names are imported on first
use. Every name is listed below by group (a test checks that too); a name no built-in uses
stays because a plugin needs it to do what the core does (the reason is given).

* **Analyses**: :class:`Analysis` and what it returns or asks (:class:`AnalysisResult`,
  :class:`Verdict`, :class:`Scope`, :class:`Directive` with :class:`Stop` and
  :class:`Restrict`; the settle stage's :class:`Settled` with :class:`Settlement`,
  :class:`SettledBy` and :class:`OpenBox`; the records ``model_diff`` hands
  :func:`polytrav.diff`: :class:`OutputExtremes`, :class:`ChangeCell`, :class:`DecisionCells`,
  :class:`SlopeMax`, :class:`DiffViolation`); registration (:func:`hookimpl`); looking plugins
  up by name, for a plugin that composes others (:func:`get_plugin_manager`,
  :func:`create_analysis`, :func:`get_solver`).
* **Errors** a plugin raises or catches: :class:`PolytravError` (the base),
  :class:`ConfigError`, :class:`RegionError`, :class:`PluginError`, :class:`SolverError`,
  :class:`SolverNotAvailable`, :class:`NetworkError`.
* **The run** an analysis sees: :class:`RunContext` (the type of ``context``), :class:`Frame`
  (the region's coordinates), :class:`Polytope`, :class:`PieceView`, :class:`Row` (a dataset
  row of :func:`polytrav.explain`, with its :class:`DataSummary`), the regions
  (:class:`Region`, :class:`Box`, :class:`Ball`, :class:`Polyhedron`), per-feature units
  (:class:`FeatureScale`, :func:`as_scale`), the decision rule (:func:`decisions`, with
  :data:`TIE` where scores tie).
* **Per-polytope problems**: :class:`CellProblem`, :class:`Subproblem`, :func:`compiled`,
  :class:`LinearProgram` and :func:`cell_linear_program` (an LP in arrays: no cvxpy),
  :func:`cell_values`, :func:`local_model_u`, :func:`cell_rows`, :class:`LayerPlanes`,
  :func:`check_witness`, :func:`corner_ascent`, :func:`combine_worst`,
  :func:`pieces_proven`, :func:`halfspace_volume`, :class:`Integrality`.
* **Bounds and MILPs**: :func:`dnf_piece_margin` (a sound margin of an unsafe set ``C y <= d``
  over a piece) with its allowances ``BOUND_TOL`` and ``LP_BOUND_TOL``,
  :func:`decision_margin` (a decision analysis's piece margin), :func:`attack_start`,
  :func:`settle_dnf` (the settle stage of an unsafe set: attacks, input splitting),
  :func:`settle_region` (the region's bound, branch and bound and MILP, where the attacks
  left it open) with :func:`bab_details` (what they did, for a result's details),
  :class:`BandSettle` (``diff``'s: ``|r_j . y| <= epsilon`` on a box, with a probe round),
  :func:`bisect_box` (a box bisected against any piece bound; :class:`BoxBisection`),
  :func:`box_samples` and :func:`corners` (points of a box to probe),
  :func:`region_milp_slope` (the region's MILP on a slope's sign), with their
  :class:`SettlePolicy` (``VERIFY_POLICY``, ``MONOTONE_POLICY``),
  :func:`slope_bounds`, :class:`BoxPiece`, :class:`Concretizer`, :func:`output_lower_bounds`,
  :class:`RegionMilp` (with ``MILP_TIME_SHARE``, the share of a budget it takes, and
  :class:`MilpVerdict`, what it decided),
  :class:`NearestL2` (the exact weighted-L2 nearest point of a class: neuron branch and
  bound with QP relaxations).
* **Backends**: :class:`SolverBackend`, :class:`SolveResult`, :class:`Status`,
  :data:`SOLUTION_PRESENT`, :class:`ChebyshevModel`, :func:`solve_along`,
  :func:`call_limit` and :func:`refused` (the run's deadline: the seconds a solve may take,
  and the result of one not started), :func:`is_sparse` (a SciPy sparse matrix, never importing SciPy),
  :func:`cvxpy_backend_class` (a backend for any solver cvxpy has), :func:`ctrl_c_held` (a
  block a Ctrl-C does not cut in half).
* **Words and tolerances**: :func:`fmt`, :func:`vector`, and the named tolerances plugins
  use (``WITNESS_TOL``, ``LP_FEASIBILITY_TOL``, ``MILP_GAP``, ``SAME_VALUE_TOL``,
  ``SLOPE_TOL``, ``CORNER_INSET``, ``COUNTERFACTUAL_STEP``, ``DISCRETE_MARGIN``,
  ``GRID_TOL``, ``REACH_TOL``, ``RADIUS_TOL``, ``ZERO_ROW_TOL``; what each means:
  :mod:`polytrav.vocabulary.tolerances`).
* **Graphs of polytopes**: :func:`one_flip_pairs`, :func:`adjacency_graph`.
"""
import importlib

#: Where each name lives, by module.
_HOMES = {
    "polytrav.host.hookspecs": ("hookimpl",),
    "polytrav.host.analysis": ("Analysis", "Directive", "Stop", "Restrict", "CellProblem",
                               "cell_values", "check_witness", "corner_ascent",
                               "combine_worst", "pieces_proven", "cell_linear_program"),
    "polytrav.host.runner": ("RunContext",),
    "polytrav.host.row": ("Row",),
    "polytrav.host.manager": ("get_plugin_manager", "create_analysis", "get_solver"),
    "polytrav.vocabulary.errors": ("PolytravError", "ConfigError", "RegionError", "PluginError",
                                   "SolverError", "SolverNotAvailable", "NetworkError"),
    "polytrav.vocabulary.results": ("AnalysisResult", "SolveResult", "Status", "Verdict", "Scope",
                                    "SOLUTION_PRESENT"),
    "polytrav.vocabulary.settled": ("Settled", "Settlement", "SettledBy", "OpenBox"),
    "polytrav.vocabulary.diff_records": ("OutputExtremes", "ChangeCell", "DecisionCells",
                                         "SlopeMax", "DiffViolation"),
    "polytrav.vocabulary.text": ("fmt", "vector"),
    "polytrav.vocabulary.ctrl_c": ("ctrl_c_held",),
    "polytrav.vocabulary.tolerances": ("WITNESS_TOL", "LP_FEASIBILITY_TOL", "MILP_GAP",
                                       "SAME_VALUE_TOL", "SLOPE_TOL", "CORNER_INSET",
                                       "COUNTERFACTUAL_STEP", "DISCRETE_MARGIN", "GRID_TOL",
                                       "REACH_TOL", "RADIUS_TOL", "ZERO_ROW_TOL"),
    "polytrav.model.geometry": ("Frame", "halfspace_volume"),
    "polytrav.model.polytope": ("Polytope",),
    "polytrav.model.region": ("Region", "Box", "Ball", "Polyhedron"),
    "polytrav.model.cell": ("local_model_u", "cell_rows", "LayerPlanes"),
    "polytrav.model.integrality": ("Integrality",),
    "polytrav.model.decision": ("decisions", "TIE"),
    "polytrav.model.scales": ("DataSummary", "FeatureScale", "as_scale"),
    "polytrav.model.adjacency": ("one_flip_pairs", "adjacency_graph"),
    "polytrav.solve.backend": ("SolverBackend", "solve_along", "is_sparse"),
    "polytrav.solve.deadline": ("call_limit", "refused"),
    "polytrav.solve.chebyshev": ("ChebyshevModel",),
    "polytrav.solve.subproblem": ("Subproblem", "compiled"),
    "polytrav.solve.linear_program": ("LinearProgram",),
    "polytrav.bounds.dnf": ("dnf_piece_margin", "attack_start", "BOUND_TOL", "LP_BOUND_TOL"),
    "polytrav.bounds.slope": ("slope_bounds",),
    "polytrav.bounds.split": ("BoxPiece",),
    "polytrav.bounds.settle": ("settle_dnf", "BandSettle", "SettlePolicy", "VERIFY_POLICY",
                               "MONOTONE_POLICY",
                               "decision_margin", "settle_region", "bab_details", "bisect_box",
                               "BoxBisection",
                               "box_samples", "corners", "region_milp_slope"),
    "polytrav.bounds.crown": ("Concretizer", "output_lower_bounds"),
    "polytrav.bounds.milp": ("RegionMilp", "MilpVerdict", "MILP_TIME_SHARE"),
    "polytrav.bounds.nearest": ("NearestL2",),
    "polytrav.traversal": ("PieceView",),
    # the built-in cvxpy backends, named as a string like the manager's DEFAULT_PLUGINS: a
    # conic backend is a cvxpy one (socp subproblems are solved through cvxpy only)
    "polytrav.solvers.cvxpy_backend": ("cvxpy_backend_class",),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}

__all__ = sorted(_HOME)


def __getattr__(name: str):
    """A name of this module, imported on first use (and kept)."""
    if name not in _HOME:
        raise AttributeError(f"module 'polytrav.extend' has no attribute {name!r}; "
                             f"it offers {__all__}")
    value = getattr(importlib.import_module(_HOME[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
