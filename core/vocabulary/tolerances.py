"""Every tolerance polytrav's geometry uses, in one place.

Traversal tolerances are absolute in the region's *normalised frame* (its bounding box scaled
to ``[-1, 1]^d``, see :mod:`polytrav.model.geometry`), so they mean the same for ACAS Xu's raw inputs
(spanning 10^4) and MNIST pixels (spanning 1). LP backends solve to
:data:`LP_FEASIBILITY_TOL`; every radius the traversal acts on is re-certified from constraint
slacks, so a backend's tolerance can never make an empty cell count.
"""
from __future__ import annotations

#: Primal and dual feasibility tolerance (and the optimality gap) the backends ask their
#: solvers for (HiGHS, Clarabel, OSQP, and cvxpy's solvers).
LP_FEASIBILITY_TOL = 1e-9

#: A cell is a polytope iff its certified Chebyshev radius (normalised units) exceeds this.
RADIUS_TOL = 1e-7
#: Cells with radius in (SLIVER_TOL, RADIUS_TOL] are crossed but not emitted.
SLIVER_TOL = 1e-9
#: A neighbour's new halfspace misses a Restrict ball when the row's range over the ball
#: clears zero by more than this (normalised units; the traversal then skips its LP).
BALL_MISS_TOL = 1e-9
#: Strategy "subdivision": a vertex this close to a hyperplane (normalised units) lies on it.
SNAP_TOL = 1e-10
#: Unit-normal hyperplanes whose normals and offsets agree within this are one hyperplane.
DUPLICATE_TOL = 1e-9
#: Accept an L2-ball cutting-plane solution once the LP and the certificate agree this well.
CUT_TOL = 1e-9
#: ... or once the certified radius decides the cell (see ``RADIUS_TOL``, ``SLIVER_TOL``)
#: and is at least this share of the LP's bound (so of the Chebyshev radius).
CUT_QUALITY = 0.5
#: Most cutting-plane rounds per LP for L2 balls before the LP counts as failed.
MAX_CUT_ROUNDS = 60
#: Cells of dimension up to this get their vertices (qhull) to rule out flips without an LP.
VERTEX_MAX_DIM = 6
#: A hyperplane at least this far (normalised units) from every vertex of a cell misses it.
VERTEX_MARGIN = 1e-8
#: Random restarts used to find a starting cell when the start point lies on a hyperplane.
START_TRIES = 32

#: Cap on the Chebyshev radius the LPs maximise, by frame dimension: in high dimension the
#: exact centre of a thin box cell costs many degenerate pivots, and any radius above
#: RADIUS_TOL certifies a polytope (measured on MNIST, d = 784: 2.4x fewer simplex seconds).
RADIUS_CAP_HIGH_DIM = 0.1
#: Frames of more dimensions than this use RADIUS_CAP_HIGH_DIM (others maximise fully, cap 1).
HIGH_DIM = 50
#: A constraint row whose normal is below this (relative to the row's scale) is constant.
ZERO_ROW_TOL = 1e-12

#: A point keeps a polytope's activation code if every pre-activation has the code's sign or
#: lies within this times its floating-point scale ``|W| |z| + |b|`` (the traversal's check of
#: a maximiser found in its own LP model, :meth:`polytrav.traversal.Traversal.maximize_in_cell`).
CELL_CODE_RTOL = 1e-7

#: Tolerance of :meth:`Region.contains` (absolute, in the region's units times its scale),
#: also of :meth:`Polytope.contains` and ``Frame.contains_u``.
CONTAINS_TOL = 1e-9
#: An affine equality ``E x = e`` holds at a point when ``|E x - e| <= EQUALITY_TOL (1 + |e|)``;
#: a region lies in a network's input domain within ``EQUALITY_TOL (1 + |x|)``.
EQUALITY_TOL = 1e-9
#: Two numbers that should be equal in exact arithmetic (a coordinate fixed twice, a row's
#: normalised bound of 1 that makes it implied by the box, a direction that is a unit
#: vector) are taken as equal within this.
SAME_VALUE_TOL = 1e-12
#: A matrix entry of magnitude below this is zero (when counting a row's nonzeros).
ZERO_ENTRY_TOL = 1e-15
#: Cells of a smaller certified radius get no vertices (qhull is unreliable on them).
VERTEX_MIN_RADIUS = 1e-6
#: Vertices from qhull are kept only if every one satisfies every row within this.
VERTEX_CHECK_TOL = 1e-9
#: Monotonicity: a slope counts as nonzero beyond this (relative to the slope's scale).
SLOPE_TOL = 1e-12

#: ``verify``: a counterexample re-run by onnxruntime (in the model's own precision, float32
#: for VNN-COMP networks) meets the unsafe set within this, absolute, as VNN-COMP's checker.
ONNXRUNTIME_TOL = 1e-4

#: Analyses: a witness must satisfy its property and lie in the region within this (relative
#: to the values' scale) on a plain float64 forward pass (:func:`polytrav.extend.check_witness`).
WITNESS_TOL = 1e-7
#: Counterfactuals: the returned point steps this far (relative to the distance, plus the
#: absolute amount) past the class boundary so that the class really changes.
COUNTERFACTUAL_STEP = 1e-6

#: Pictures: a polytope's side is drawn where its row is tight within this (relative).
EDGE_TOL = 1e-7

#: Largest magnitude of a region's coordinates: beyond it float64 cannot resolve unit steps
#: (their spacing passes 0.1 at 1e15) and the frame's scaling overflows, so such a region
#: is refused rather than traversed wrongly.
MAX_COORDINATE = 1e15

# ---------------------------------------------------------------- bounds: rounding allowances
#: Bounds evaluated in closed form are lowered by this (relative to ``1 + |constant|``)
#: before they count as a proof (:func:`polytrav.bounds.crown.rounded_down`): float64 rounding
#: in the back-substitution, never a proof by 1e-12. The one allowance of CROWN, the pieces'
#: margins and branch and bound's nodes and leaves.
BOUND_TOL = 1e-9
#: Margins from an LP are lowered by this (relative): the LP's feasibility tolerance.
LP_BOUND_TOL = 1e-6
#: A MILP's optimum is settled to this relative and absolute gap (HiGHS's defaults, 1e-4 and
#: 1e-6, would leave a counterfactual's proven bound short of its distance).
MILP_GAP = 1e-7
#: VNN-LIB 2.0: how far inside the unsafe rows the second search for a witness looks
#: (relative to ``1 + |d|``): deeper than float32 rounding of the outputs, so a strict
#: comparison holds (:meth:`polytrav.verification.instance.Instance.tightened`).
WITNESS_GAP = 1e-6
#: Branch and bound: a node is empty when some neuron's lower bound exceeds its upper bound
#: by more than this.
EMPTY_TOL = 1e-9
#: Relative safety of a Lagrangian skip of a cell LP against rounding in ``phi`` of
#: ``lam = 0`` (far below the LPs' 1e-9); multipliers add :data:`BOX_LP_ROUNDING`.
CELL_BOUND_SAFETY = 1e-12
#: Relative rounding allowance of a box-LP bound (:func:`polytrav.bounds.box_lp.rounding`;
#: above ``(d + k) eps``).
BOX_LP_ROUNDING = 1e-12
#: Slack under which a row counts as active at an LP's maximiser (rows have unit norm).
ACTIVE_TOL = 1e-7
#: Counterfactuals: a class is skipped on a cell only if its margin over ``x0``'s class stays
#: below ``-REACH_TOL`` there (unit-norm rows; the LP's tolerance, so the skip is never a
#: rounding artefact).
REACH_TOL = 1e-7
#: Sampled corners of a box are pulled this share of the way to its centre (so a point is
#: strictly inside the box: the start points of ``Monotonicity``).
CORNER_INSET = 1e-6
#: A value within this share of a step from a grid point is on it (``Integrality``: the
#: step range a box allows, and a one-hot row's own values).
GRID_TOL = 1e-9
#: With discrete features, a counterfactual's class must be reached by this margin in the
#: outputs (``y_q - y_i >= DISCRETE_MARGIN``; one logit: ``|y| >= DISCRETE_MARGIN`` on the
#: far side), so that every point a MILP returns, within its feasibility tolerance, is
#: confirmed by a forward pass: on a grid the minimum is attained, not an infimum.
DISCRETE_MARGIN = 1e-6
#: The report: a feature's values lie on a grid of ``10**-k`` when each is within this
#: (relative) of a multiple of it (the data's resolution, where a change counts).
GRID_VALUE_RTOL = 1e-6
#: A feature's change in a counterfactual counts as a change in the report when it exceeds
#: this share of the feature's domain width (width 1 for a narrower one): the report's
#: "how often each feature changes" and its check that immutable features never change.
CHANGE_TOL = 1e-9

# ---------------------------------------------------------------- the L2 branch and bound
#: :class:`~polytrav.bounds.nearest.NearestL2` stops when its smallest open bound is within
#: this (relative) of the best distance.
L2_GAP = 1e-6
#: Relative error allowed to a dual value's sums (float64 sums of up to 10^4 terms err by at
#: most that many units of 1.1e-16 of the sum of their magnitudes).
DUAL_SUM_TOL = 1e-12
#: A point meets a conjunction ``C y <= d`` where ``C y - d`` is at most this (relative to
#: ``1 + |d|``): a cell QP's optimum lies on the class boundary to the solver's tolerance.
MEETS_TOL = 1e-7
#: How far past a neuron's hyperplane (relative to ``1 +`` the step to it) a probe of the
#: neighbouring cell goes, tried in turn until the neuron's phase flips.
CROSSING_STEPS = (1e-7, 1e-5, 1e-3)

# ---------------------------------------------------------------- proof certificates
#: A conjunction's multipliers found by ascent (:func:`polytrav.proof.record.
#: ascend_multipliers`) are kept where they prove it by this much (relative to ``1 +`` its
#: largest constant; the checker's own rounding allowance is about 1e-13); else its LP's.
PROOF_LAM_TOL = 1e-9
#: An output range's certificate claims ``min - pad < y < max + pad``, ``pad`` this much
#: relative to ``1 + |max|`` (``1 + |min|``): the exact extreme is attained, so a bound
#: proven strictly beyond it needs a margin (the checker's rounding is about 1e-13).
PROOF_RANGE_PAD = 1e-9
