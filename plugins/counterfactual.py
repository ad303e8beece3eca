"""Counterfactuals: the closest input whose predicted class differs (paper §5.2, eqs. 16-19).

For ``x0`` of class ``q0``, the problem is ``min ||x - x0||_p`` over the region such that
the class changes. Per polytope, where the logits are ``W x + c``, reaching class ``q`` is a
set of halfspaces (``(w_q - w_i)·x + c_q - c_i >= 0`` for every ``i != q``; for one output,
a binary classifier with class 1 iff the logit is ``>= 0``, the logit's sign), so the
subproblem on polytope ∩ region is an LP (``p = 1, inf``) or a QP (``p = 2``; an L2-ball
region makes it an SOCP). The constraints are closed: the optimum is the *infimum* distance,
attained on the class boundary; the returned witness steps just past the boundary until a
forward pass confirms the new class (its distance is ``returned_distance``). Immutable
features are equality constraints ``x_j = x0_j``.

Search (``search=``): ``"shrink"`` is the paper's: it solves on every polytope it visits, and
once a counterfactual at distance ``d*`` is known, the traversal region shrinks to the L∞ box
of radius ``d*`` around ``x0`` (it contains the ``p``-ball), and neighbours beyond hyperplanes
whose far side misses the ``p``-ball are skipped without an LP (``Restrict``'s ``ball``);
``"best-first"`` (default) also orders the level-1 pieces by a lower bound of their distance
to ``x0`` (the farthest of their halfspaces, in the dual norm), skips polytopes and targets
whose bound cannot beat ``d*``, and stops when no unvisited piece can; ``"full"`` visits
every polytope of the region (no shrinking, no order: it runs in parts) with the same
per-polytope skips.

Direct L∞ path: on a box region (in frame coordinates ``[-1, 1]^d``, coordinates scaled by
``sigma``), the L∞ subproblem is also solved without the ``2 d`` rows ``|x - x0| <= r`` that
the cvxpy statement compiles to (in 784 inputs they make each LP cost 4-9 ms). With
``x = x0 + e / s`` (Charnes-Cooper), ``|e| <= 1`` are column bounds, ``r = 1 / s`` is
minimised by maximising ``s``, and every row ``G u <= g`` becomes ``(G / sigma) e <= (g - G u0)
s``. With ``R`` the current best distance (or, before one, the farthest side of the box),
``s >= 1 / R``; a side at distance ``a`` from ``x0`` then needs a row ``|e_j| <= a s`` only
if it is nearer than the farthest side (the others hold already). An undecided direct LP falls back to the compiled
subproblem; the tests check that both give the same optima.

The MILP (``milp_after``): on wide networks the polytopes near ``x0`` are too many to visit
(a 30-32-32 MLP: thousands in the start's level-1 piece alone). A best-first search of an
L1 or L∞ counterfactual on a box region that has handled ``milp_after`` polytopes and
level-1 pieces without finishing (or :data:`MILP_EARLY` of them, where the MILP would be
small) hands the rest to a MILP, where a backend serves the ``milp`` form:
:meth:`polytrav.bounds.milp.RegionMilp.closest` over the box of the best distance so far
(CROWN's bounds there, one binary per neuron they leave unstable), one conjunction per
target class. Its bound is the proof (``exact``) when it reaches the best distance, which
the MILP's point may have lowered; the traversal then stops. Otherwise the traversal goes
on with what is left of the time. ``details["milp"]`` says what the MILP did.

Discrete features (``integer``, ``one_hot``; L1 or L∞ on a box): every cell's subproblem is
a MILP over the frame point, a step count per grid input and a 0/1 column per one-hot input
(:meth:`Counterfactual._discrete_rows`), the distance capped at the best so far; the
continuous problem's lower bounds (pieces, cells, targets) and the ball restriction stay
sound, the region's MILP gets the same integer columns
(:class:`~polytrav.model.integrality.Integrality`), and the witness keeps its discrete
inputs valid (:meth:`Counterfactual._discrete_witness`). The class must be reached by
:data:`~polytrav.vocabulary.tolerances.DISCRETE_MARGIN` in the outputs: on a grid the
minimum is attained, and every point a MILP returns within its feasibility tolerance must be
one a forward pass confirms. Each cell first gets its continuous optimum (the usual paths): a
lower bound that skips the cell's MILP when it cannot beat the best, and, snapped to the
valid points and confirmed, an early incumbent.
"""
from __future__ import annotations

import functools

import numpy as np

from polytrav.host.analysis import (Analysis, CellProblem, Restrict, Stop, cell_values,
                                    check_witness)
from polytrav.model.cell import LayerPlanes
from polytrav.model.polytope import Polytope
from polytrav.vocabulary.errors import ConfigError, RegionError
from polytrav.host.hookspecs import hookimpl
from polytrav.model.region import Ball, Box
from polytrav.solve.backend import solve_along
from polytrav.vocabulary.results import AnalysisResult, Status
from polytrav.vocabulary.tolerances import (COUNTERFACTUAL_STEP, DISCRETE_MARGIN, LP_BOUND_TOL,
                                            REACH_TOL)

__all__ = ["Counterfactual", "halfspace_distance"]

SEARCHES = ("best-first", "shrink", "full")
#: Upper bound of the direct L∞ LP's scaled variable ``s' = R / r``: distances below
#: ``R / DIRECT_S_MAX`` count as 0 (``x0`` on the class boundary).
DIRECT_S_MAX = 1e9
#: Polytopes and level-1 pieces a best-first search handles before the MILP (module
#: docstring) is tried: a count, not seconds, so that the path to an answer does not depend on
#: the machine's load. The L1 rows of a 30-8-8 MLP need at most 220 (median 20), L∞ 97.
MILP_AFTER = 500
#: Earlier, at these counts, the MILP runs if the box of the best distance so far leaves at
#: most :data:`MILP_EARLY_BINARIES` unstable neurons (CROWN's bounds there, about 15 ms on a
#: 14-64-64 MLP): a MILP of 10-60 binaries settles in well under a second, one of 95 takes
#: 5-30 s, which the traversal's next polytopes often save by shrinking the box.
MILP_EARLY = (100, 200, 400)
MILP_EARLY_BINARIES = 60
_NONE = np.zeros(0)  # "nothing better here" from the direct LP
_NORMS = {1: 1, "1": 1, "l1": 1, 2: 2, "2": 2, "l2": 2, np.inf: np.inf, "inf": np.inf,
          "linf": np.inf}
_DUAL = {1: np.inf, 2: 2, np.inf: 1}


def halfspace_distance(G: np.ndarray, g: np.ndarray, x0: np.ndarray, dual: float) -> np.ndarray:
    """Distance (in the norm whose dual is ``dual``) from ``x0`` to each ``{x: G x + g >= 0}``."""
    norms = np.linalg.norm(G, ord=dual, axis=1)
    gap = -(G @ x0 + g)
    dist = np.divide(gap, norms, out=np.zeros_like(gap), where=(gap > 0) & (norms > 0))
    dist[(norms == 0) & (gap > 0)] = np.inf
    return dist


@functools.lru_cache(maxsize=8)
def _witness_columns(features: tuple[str, ...]) -> tuple[str, ...]:
    """``x.<feature>`` per feature (made once per dataset, not per row)."""
    return tuple(f"x.{name}" for name in features)


class Counterfactual(Analysis):
    """The closest point of the region (in ``norm``) whose predicted class is not ``x0``'s.

    Parameters
    ----------
    x0 : array_like, shape (n_inputs,)
        The original input; must lie in the region.
    norm : {1, 2, inf}
    target : int, optional
        Required class (default: any class other than ``x0``'s).
    immutable : sequence of int
        Features held at ``x0``'s values.
    search : {"best-first", "shrink", "full"}
    milp_after : int or None
        Polytopes and level-1 pieces of best-first search before a MILP settles the rest
        (L1, L∞ on a box region; module docstring), or fewer (:data:`MILP_EARLY`) where the
        MILP is small; None: never.
    integer : sequence of int, or dict
        Features that move in whole steps from ``x0`` (``{feature: step}``; a sequence means
        step 1): the answer is the nearest point on that grid.
    one_hot : sequence of sequences of int
        Groups of features that encode one category (``x0``'s values one-hot): the answer
        keeps each a valid encoding. ``None`` in a group stands for a baseline column that
        was dropped (``OneHotEncoder(drop="first")``): the group may then be all 0. With ``integer`` or ``one_hot`` (L1 or L∞, a box
        region) every cell's subproblem is a MILP, and the answer is exact over the valid
        points (module docstring, "Discrete features").

    ``value`` is the infimum distance (``None`` if no point of the region changes class);
    ``witness`` a point past the boundary whose class a forward pass confirms; ``details``
    hold the boundary point, the class reached and ``returned_distance``.
    """

    name = "counterfactual"
    #: Solve L∞ subproblems on box regions by the direct LP (module docstring); False: always
    #: the compiled cvxpy subproblem (the tests compare the two).
    direct_linf = True
    #: Take a class row's nearest point as the cell's minimiser when it lies in the cell
    #: (:meth:`_projection`); False: always an LP/QP (the tests compare the two).
    closed_form = True

    def __init__(self, x0, norm=2, target: int | None = None, immutable=(),
                 search: str = "best-first", milp_after: int | None = MILP_AFTER,
                 integer=(), one_hot=()):
        self.x0 = x0
        self.norm = norm
        self.target = target
        self.immutable = immutable
        self.search = search
        self.milp_after = milp_after
        self.integer = integer
        self.one_hot = one_hot

    @property
    def prunable(self) -> bool:
        return self.search != "full"

    @property
    def problem_form(self) -> str:
        return "qp" if _NORMS.get(self.norm) == 2 else "lp"

    def start_point(self):
        return self._x0

    # ---------------------------------------------------------------- per row
    @classmethod
    def for_row(cls, row, *, norm=2, target=None, immutable=(), bounds=None, direction=None,
                search: str = "best-first", milp_after: int | None = MILP_AFTER,
                integer=(), one_hot=()):
        """The counterfactual of ``row.x`` inside the domain and the actionability constraints.

        ``immutable``: features held at the row's values; ``bounds``: ``{feature: (lo, hi)}``
        (``None`` leaves a side to the domain); ``direction``: ``{feature: "increase" |
        "decrease"}`` (the feature may only move that way). Features are names or indices.
        All of them shrink the search box (``domain ∩ bounds ∩ directions``, immutable
        features fixed), a convex region, so the optimum is still exact. ``integer``
        (features, step 1, or ``{feature: step}``) and ``one_hot`` (lists of features) are
        the discrete features: the answer is exact over their valid values.
        """
        if not (bounds or direction or len(immutable) or len(integer) or len(one_hot)):
            return cls(row.x, norm=norm, target=target, search=search,
                       milp_after=milp_after), row.domain
        who = f"analysis {cls.name!r}"
        lo, hi = row.domain.lower.copy(), row.domain.upper.copy()
        for j, (b_lo, b_hi) in row.per_feature(bounds or {}, who + " bounds").items():
            lo[j] = lo[j] if b_lo is None else max(lo[j], float(b_lo))
            hi[j] = hi[j] if b_hi is None else min(hi[j], float(b_hi))
        for j, way in row.per_feature(direction or {}, who + " direction").items():
            if way not in ("increase", "decrease"):
                raise ConfigError(f"{who}: direction must be 'increase' or 'decrease', got "
                                  f"{way!r} for feature {row.features[j]!r}")
            if way == "increase":
                lo[j] = max(lo[j], row.x[j])
            else:
                hi[j] = min(hi[j], row.x[j])
        held = row.indices(immutable, who + " immutable") if len(immutable) else np.zeros(0, int)
        lo[held] = hi[held] = row.x[held]
        bad = np.flatnonzero(lo > hi)
        if bad.size:
            j = int(bad[0])
            raise RegionError(f"{who}: feature {row.features[j]!r} has no allowed value "
                              f"(lower {lo[j]} > upper {hi[j]}); check bounds and direction")
        if isinstance(integer, dict):
            steps = row.per_feature(integer, who + " integer")
        else:
            steps = {int(j): 1.0 for j in (row.indices(integer, who + " integer")
                                           if len(integer) else ())}
        groups = [row.indices([j for j in g if j is not None], who + " one_hot").tolist()
                  + [None] * (None in list(g)) for g in one_hot]
        return cls(row.x, norm=norm, target=target, immutable=held.tolist(),
                   search=search, milp_after=milp_after, integer=steps,
                   one_hot=groups), Box(lo, hi)

    def figures(self, result, row) -> dict:
        """``distance`` (the infimum), ``returned_distance`` (the witness's), ``class0``,
        ``class``, ``exact``, ``proof`` (``"traversal"``, ``"milp"`` or None where the
        answer is not exact), ``found``, and the witness as ``x.<feature>``."""
        d = result.details
        milp = d.get("milp")
        proof = None if not result.exact else (
            "milp" if isinstance(milp, dict) and milp["proved"] else "traversal")
        out = {"distance": result.value, "returned_distance": d.get("returned_distance"),
               "class0": d.get("class0"), "class": d.get("class"), "exact": result.exact,
               "proof": proof, "found": result.witness is not None}
        w = result.witness
        out.update(zip(_witness_columns(row.features),
                       [None] * len(row.features) if w is None else w.tolist()))
        return out

    # ---------------------------------------------------------------- checks
    def validate(self, network, region) -> None:
        who = f"analysis {self.name!r}"
        n, m = network.n_inputs, network.n_outputs
        x0 = np.asarray(self.x0, float).reshape(-1)
        if x0.shape != (n,):
            raise ConfigError(f"{who}: x0 has {x0.shape[0]} coordinates but the network takes {n}")
        if not np.isfinite(x0).all():
            raise ConfigError(f"{who}: x0 contains NaN or inf")
        bad = region.violations(x0)
        if bad:
            raise RegionError(f"{who}: x0 is outside the region ({'; '.join(bad[:3])}); the "
                              "counterfactual search starts from x0, so the region must contain it")
        key = self.norm.lower() if isinstance(self.norm, str) else self.norm
        if key not in _NORMS:
            raise ConfigError(f"{who}: norm must be 1, 2 or inf, got {self.norm!r}")
        if self.search not in SEARCHES:
            raise ConfigError(f"{who}: search must be one of {SEARCHES}, got {self.search!r}")
        if self.milp_after is not None and (
                isinstance(self.milp_after, bool)
                or not isinstance(self.milp_after, (int, np.integer)) or self.milp_after < 0):
            raise ConfigError(f"{who}: milp_after must be a count >= 0 (polytopes and pieces) "
                              f"or None, got {self.milp_after!r}")
        imm = np.asarray(self.immutable, dtype=int).reshape(-1)
        if imm.size and (imm.min() < 0 or imm.max() >= n or len(set(imm)) != imm.size):
            raise ConfigError(f"{who}: immutable must be distinct input indices in [0, {n}), got "
                              f"{list(self.immutable)}")
        y0 = network.forward(x0)
        self._binary = m == 1
        self._class0 = int(y0[0] >= 0) if self._binary else int(np.argmax(y0))
        n_classes = 2 if self._binary else m
        if self.target is not None:
            if not isinstance(self.target, (int, np.integer)) or not 0 <= self.target < n_classes:
                raise ConfigError(f"{who}: target must be a class in [0, {n_classes}), got {self.target!r}")
            if self.target == self._class0:
                raise ConfigError(f"{who}: target {self.target} is x0's own class")
        self._x0, self._p, self._imm = x0, _NORMS[key], imm
        self._integrality = self._discrete(region)
        self._n_out = m
        self._targets = ([self.target] if self.target is not None
                         else [q for q in range(n_classes) if q != self._class0])

    def _discrete(self, region):
        """The :class:`Integrality` of ``integer`` and ``one_hot`` (None if both are empty),
        checked: distinct features, positive steps, ``x0`` one-hot in each group, an L1 or
        L∞ distance on a box region."""
        if not (len(self.integer) or len(self.one_hot)):
            return None
        from polytrav.model.integrality import Integrality
        from polytrav.vocabulary.tolerances import GRID_TOL

        who, n, x0 = f"analysis {self.name!r}", self._x0.shape[0], self._x0
        items = (self.integer.items() if isinstance(self.integer, dict)
                 else ((j, 1.0) for j in self.integer))
        step = np.zeros(n)
        seen: set[int] = set()

        def index(j, what):
            if isinstance(j, bool) or not isinstance(j, (int, np.integer)) or not 0 <= j < n:
                raise ConfigError(f"{who}: {what} must be input indices in [0, {n}), got {j!r}")
            if int(j) in seen:
                raise ConfigError(f"{who}: input {int(j)} is named twice in integer/one_hot")
            seen.add(int(j))
            return int(j)

        for j, h in items:
            j = index(j, "integer")
            if isinstance(h, bool) or not isinstance(h, (int, float, np.number)) \
                    or not np.isfinite(h) or h <= 0:
                raise ConfigError(f"{who}: integer step of input {j} must be a number > 0, "
                                  f"got {h!r}")
            step[j] = float(h)
        groups, dropped = [], []
        for group in self.one_hot:
            group = list(group)
            g = np.asarray([index(j, "one_hot groups") for j in group if j is not None], int)
            if g.size + (None in group) < 2:
                raise ConfigError(f"{who}: a one_hot group needs at least two inputs, got "
                                  f"{group} (a single 0/1 input is integer)")
            v = x0[g]
            total = 1.0 if None not in group else min(round(v.sum()), 1.0)
            if np.any(np.minimum(np.abs(v), np.abs(v - 1)) > GRID_TOL) \
                    or abs(v.sum() - total) > GRID_TOL:
                raise ConfigError(f"{who}: x0 is not one-hot in the group {group} "
                                  f"(values {v.tolist()})")
            groups.append(g)
            dropped.append(None in group)
        if self._p not in (1, np.inf):
            raise ConfigError(f"{who}: integer features and one-hot groups make the search a "
                              "mixed-integer problem; L1 and L∞ give MILPs, L2 a mixed-integer "
                              "QP, which no backend here solves: use norm 1 or inf")
        if not isinstance(region, Box):
            raise ConfigError(f"{who}: integer features and one-hot groups need a Box region, "
                              f"got a {type(region).__name__}")
        return Integrality(x0.copy(), step, tuple(groups), tuple(dropped))

    # ---------------------------------------------------------------- set-up
    def begin(self, context) -> None:
        from polytrav.solve.subproblem import compiled

        fr, net = context.frame, context.network
        k = 1 if self._binary else net.n_outputs - 1
        n_rows = net.n_neurons
        fixed = (tuple(self._imm.tolist()), self._x0[self._imm].tobytes())
        scales = fr.U if fr.free is None else fr.scale
        self._scale = float(np.abs(scales).max())  # distances in units of the region's size
        # compiled on first use (the direct L∞ path may never need it)
        self._sub_lazy = lambda: compiled((self.name, self._p, fr.fingerprint, n_rows, k, fixed),
                                          lambda: self._build_distance(fr, n_rows, k))
        self._step_key = lambda: (self.name + ":step", fr.fingerprint, n_rows, k, fixed)
        self._step_build = lambda: self._build_step(fr, n_rows, k)
        self._dual = _DUAL[self._p]
        W1, b1 = net.weights[0], net.biases[0]
        self._h1 = W1 @ self._x0 + b1
        self._n1 = np.linalg.norm(W1, ord=self._dual, axis=1)
        self._best = (np.inf, None, None, None)  # distance, boundary point, class, its cell
        self._planes = LayerPlanes(  # see _cell_bound
            lambda W, b: (W @ self._x0 + b, np.linalg.norm(W, ord=self._dual, axis=1)))
        self.skipped = self.n_projections = 0
        self._milp_info, self._milp_why_not, self._proved = None, None, False
        self._milp = self._milp_plan(context)  # None, or the count at which it is due
        self._steps = 0  # polytopes and pieces handled, for the MILP
        # coordinates a closed-form minimiser may move (free in the frame, not immutable)
        self._movable = None
        if self._integrality is not None and not context.chains.get("milp"):
            raise ConfigError(f"analysis {self.name!r}: integer features and one-hot groups need "
                              "a backend of the 'milp' form (HiGHS: pip install highspy)")
        if self.closed_form and fr.free is not None:
            self._movable = np.zeros(net.n_inputs)
            self._movable[fr.free] = 1.0
            self._movable[self._imm] = 0.0
        self._direct = (self.direct_linf and self._p == np.inf and fr.is_box
                        and fr.free is not None)
        if self._direct:
            sigma = fr.scale
            u0 = fr.to_u(self._x0)
            down, up = (1.0 + u0) * sigma, (1.0 - u0) * sigma  # x0's distance to each side
            held = np.isin(fr.free, self._imm)  # immutable frame coordinates
            far = float(max(down.max(), up.max()))  # every point of the region is this close
            # sides that need a row: nearer than the farthest (1e-9: the ball's own faces,
            # rounded, are not nearer); the same set at every polytope, so the LP keeps its
            # shape and the warm session re-solves it
            near = [(np.flatnonzero((side > 0) & (side < far * (1 - 1e-9)) & ~held), side, sign)
                    for side, sign in ((down, -1.0), (up, 1.0))]
            self._cc = {"sigma": sigma, "u0": u0, "far": far, "near": near,
                        "lo": np.append(np.where((down > 0) & ~held, -1.0, 0.0), 1.0),
                        "hi": np.append(np.where((up > 0) & ~held, 1.0, 0.0), DIRECT_S_MAX)}

    def _immutable(self, cell):
        fr = cell.frame
        return [fr.U[j] @ cell.u == self._x0[j] - fr.origin[j]
                for j in self._imm if np.abs(fr.U[j]).max() > 0]

    def _build_distance(self, fr, n_rows: int, k: int):
        """``min ||x - x0||_p / scale`` over the cell with ``K u + h >= 0`` (``shift`` carries x0)."""
        import cvxpy as cp

        from polytrav.solve.subproblem import Subproblem

        cell = CellProblem(fr, n_rows)
        K, h = cp.Parameter((k, fr.dim), name="K"), cp.Parameter(k, name="h")
        shift = cp.Parameter(fr.origin.shape[0], name="shift")  # (origin - x0) / scale
        diff = (fr.U_sparse() / self._scale) @ cell.u + shift
        objective = {1: cp.norm1(diff), 2: cp.sum_squares(diff), np.inf: cp.norm_inf(diff)}[self._p]
        cons = cell.constraints + [K @ cell.u + h >= 0] + self._immutable(cell)
        return Subproblem(cp.Problem(cp.Minimize(objective), cons), {"u": cell.u})

    def _build_step(self, fr, n_rows: int, k: int):
        """``maximise t`` over the cell with ``K u + h >= t``, ``t <= 1``, ``|u - center| <= delta``."""
        import cvxpy as cp

        from polytrav.solve.subproblem import Subproblem

        cell = CellProblem(fr, n_rows)
        K, h = cp.Parameter((k, fr.dim), name="K"), cp.Parameter(k, name="h")
        t = cp.Variable(name="t")
        center = cp.Parameter(fr.dim, name="center")
        delta = cp.Parameter(nonneg=True, name="delta")
        cons = cell.constraints + [K @ cell.u + h >= t, t <= 1.0, cell.u - center <= delta,
                                   center - cell.u <= delta] + self._immutable(cell)
        return Subproblem(cp.Problem(cp.Maximize(t), cons), {"u": cell.u})

    # ---------------------------------------------------------------- the MILP
    def _milp_plan(self, context) -> int | None:
        """When the MILP is due (polytopes and pieces handled), or None if it will not run
        (the reason, where the user asked for it, goes to ``details["milp"]``)."""
        if self.milp_after is None or self.search != "best-first":
            return None
        why = None
        if self._p not in (1, np.inf):
            why = "an L2 distance is not a MILP (L1 and L∞ are)"
        elif not isinstance(context.region, Box):
            why = f"the region is a {type(context.region).__name__}, not a Box"
        elif context.traversal.within is not None:
            why = "a run in parts"
        elif not context.chains.get("milp"):
            why = "no backend serves the 'milp' form"
        if why is not None:
            self._milp_why_not = why
            return None
        return self.milp_after

    def _maybe_milp(self, context) -> None:
        """Count a polytope or piece; run the MILP once: when it is due, or at an earlier
        count of :data:`MILP_EARLY` where its box is small (:meth:`_run_milp`)."""
        if self._milp is None:
            return
        steps, self._steps = self._steps, self._steps + 1
        if steps >= self._milp:
            self._run_milp(context)
        elif steps in MILP_EARLY and np.isfinite(self._best[0]):
            self._run_milp(context, max_binaries=MILP_EARLY_BINARIES)

    def _reach(self, q: int) -> np.ndarray:
        """``C``: the class is ``q`` iff ``C y <= 0`` (closed), over the outputs ``y``."""
        if self._binary:
            return np.array([[-1.0 if q == 1 else 1.0]])
        eye = np.eye(self._n_out)
        return eye[[i for i in range(self._n_out) if i != q]] - eye[[q]]

    def _pairs(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per target class, the outputs' conjunction ``C y <= 0`` that reaches it (closed)."""
        margin = 0.0 if self._integrality is None else DISCRETE_MARGIN
        return [(C, np.full(C.shape[0], -margin)) for C in map(self._reach, self._targets)]

    def _run_milp(self, context, max_binaries: int | None = None) -> None:
        """:meth:`~polytrav.bounds.milp.RegionMilp.closest` over the region's box within the
        best distance so far; a nearer point becomes the best, and a bound that reaches the
        best distance proves it. With ``max_binaries``, only if the box leaves at most that
        many unstable neurons (else it is not run, and stays due)."""
        from polytrav.bounds.milp import MILP_TIME_SHARE, RegionMilp

        r = self._best[0]
        lo, hi = context.region.lower.copy(), context.region.upper.copy()
        if np.isfinite(r):
            lo, hi = np.maximum(lo, self._x0 - r), np.minimum(hi, self._x0 + r)
        lo[self._imm] = hi[self._imm] = self._x0[self._imm]
        left = context.traversal.time_left()
        ball = (self._x0, r) if self._p == 1 and np.isfinite(r) else None  # bounds in the L1 ball
        milp = RegionMilp(context.network, lo, hi, l1_ball=ball, integrality=self._integrality)
        if max_binaries is not None and milp.binaries > max_binaries:
            return
        self._milp = None  # once
        out = milp.closest(self._x0, self._p, self._pairs(), context.chains["milp"], radius=r,
                           time_limit=None if left is None else MILP_TIME_SHARE * left)
        self.n_solves += out.solves
        if out.point is not None and out.distance < self._best[0]:
            # the exact optimum on the point's polytope, with the cell its witness needs
            code = context.network.activation_code(out.point)
            self._fold(Polytope(code, out.point, 0.0, -1, None, context.network,
                                context.region), context)
            if out.distance < self._best[0] - LP_BOUND_TOL * (1 + out.distance):
                # the point met its cell's rows to the MILP's tolerance only: it is the best
                self._best = (out.distance, out.point, self._targets[out.conjunction], None)
        best = self._best[0]
        self._proved = out.bound is not None and best <= out.bound + LP_BOUND_TOL * (1 + best)
        self._milp_info = {"binaries": out.binaries, "seconds": out.seconds,
                           "bound": out.bound, "proved": self._proved, "after": self._steps - 1}
        if out.reason:
            self._milp_info["reason"] = out.reason

    # ---------------------------------------------------------------- pruning protocol
    def piece_bound(self, bits, context) -> float:
        self._maybe_milp(context)
        if self._proved:
            return np.inf  # the MILP proved the best distance: no piece can beat it
        s = np.where(bits, 1.0, -1.0)
        gap = -s * self._h1
        ok = (gap > 0) & (self._n1 > 0)
        return float(np.max(gap[ok] / self._n1[ok], initial=0.0))

    def threshold(self) -> float:
        return self._best[0]

    # ---------------------------------------------------------------- per polytope
    def _class_rows(self, polytope, q: int) -> tuple[np.ndarray, np.ndarray]:
        """``G x + g >= 0`` on the polytope iff the class is ``q`` (closed): ``-C (W x + c)``
        with :meth:`_reach`'s ``C``."""
        W, c = polytope.local_model
        C = self._reach(q)
        return -C @ W[:C.shape[1]], -C @ c[:C.shape[1]]

    def _class_screen(self, polytope, frame) -> tuple[np.ndarray, np.ndarray]:
        """For every target class at once, from its :meth:`_class_rows` ``G x + g >= 0``:
        :func:`halfspace_distance` from ``x0`` to the farthest row (a lower bound of the
        distance to the class on the polytope), and whether every row can hold somewhere on
        the region's bounding box (else the class is out of reach).

        Row ``i`` of class ``q`` is ``W[q] - W[i]``, so its norms are pairwise distances
        between the rows of ``W`` (``cdist``: no ``classes x outputs x inputs`` array)."""
        from scipy.spatial.distance import cdist

        W, c = polytope.local_model
        T = np.asarray(self._targets)
        y, z = W @ self._x0 + c, W @ frame.origin + c
        if self._binary:  # class 1: logit >= 0; class 0: -logit >= 0
            s = np.where(T == 1, 1.0, -1.0)[:, None]
            gap, h = -s * y[:1], s * z[:1]
            norms = np.full((T.size, 1), np.linalg.norm(W[0], ord=self._dual))
            reach = np.full((T.size, 1), np.abs(frame.pull(W[:1])).sum())
            rows = np.ones((T.size, 1), bool)
        else:
            metric = {1: "cityblock", 2: "euclidean", np.inf: "chebyshev"}[self._dual]
            Wu = frame.pull(W)
            gap, h = y[None, :] - y[T][:, None], z[T][:, None] - z[None, :]
            norms = cdist(W[T], W, metric)
            reach = cdist(Wu[T], Wu, "cityblock")  # max of (G u) over [-1, 1]^d, less h
            rows = ~np.eye(W.shape[0], dtype=bool)[T]  # i = q is no row
        dist = np.divide(gap, norms, out=np.zeros_like(gap), where=rows & (gap > 0) & (norms > 0))
        dist[rows & (norms == 0) & (gap > 0)] = np.inf
        out = rows & (((reach == 0) & (h < 0)) | (reach + h < 0))
        return dist.max(axis=1, initial=0.0), ~out.any(axis=1)

    def _cell_bound(self, polytope) -> float:
        """Distance from ``x0`` to the farthest of the polytope's neuron halfspaces (a lower
        bound), from each layer's ``(W_hat x0 + b_hat, row norms)`` (:class:`LayerPlanes`)."""
        planes = self._planes(polytope)
        s = np.where(np.concatenate(polytope.code), 1.0, -1.0)
        gap = -s * np.concatenate([p[0] for p in planes])
        norms = np.concatenate([p[1] for p in planes])
        if np.any((norms == 0) & (gap > 0)):
            return np.inf
        ok = (gap > 0) & (norms > 0)
        return float(np.max(gap[ok] / norms[ok], initial=0.0))

    def visit(self, polytope, context):
        before = self._best[0]
        self._maybe_milp(context)
        if self._proved:
            return Stop("the MILP proved the best distance")
        improved = self._fold(polytope, context) or self._best[0] < before  # or the MILP's
        if improved and self.search != "full" and np.isfinite(self._best[0]):
            r = self._best[0]
            return Restrict(Box(self._x0 - r, self._x0 + r), ball=Ball(self._x0, r, self._p))
        return None

    def _fold(self, polytope, context) -> bool:
        """Fold the polytope's nearest point of each target class into the best; whether
        it improved."""
        fr, prune = context.frame, self.search != "shrink"
        cell_lb = self._cell_bound(polytope) if prune else 0.0
        if cell_lb >= self._best[0]:
            self.skipped += len(self._targets)
            return False
        values = None
        improved = False
        class_lb, in_reach = self._class_screen(polytope, fr)
        for q, lb, reach in zip(self._targets, class_lb, in_reach):
            if (prune and max(cell_lb, lb) >= self._best[0]) or not reach:
                self.skipped += 1  # too far, or out of reach on the region's bounding box
                continue
            G, g = self._class_rows(polytope, q)
            K, h = fr.pull(G), G @ fr.origin + g
            norms = np.linalg.norm(K, axis=1)
            norms[norms == 0] = 1.0
            K, h = K / norms[:, None], h / norms
            if self._unreachable(context, polytope, K, h, q):
                self.skipped += 1  # class q cannot even beat x0's class on this cell
                continue
            values = values or cell_values(polytope, fr)
            u = self._projection(fr, values, G, g, K, h)
            if u is None and self._direct:
                u = self._direct_linf(context, values, K, h)
            if u is None:
                res = self.solve(context, self._sub_lazy(), polytope, K=K, h=h,
                                 shift=(fr.origin - self._x0) / self._scale, **values)
                if res.status is not Status.OPTIMAL:
                    continue
                u = res.x
            elif u is _NONE:  # the direct LP proved nothing better than d* here
                continue
            if self._integrality is not None:  # u is the relaxation's optimum
                u = self._discrete_step(context, polytope, values, K, h, norms, u, q)
                if u is None:
                    continue
            x = fr.to_x(u)
            dist = float(np.linalg.norm(x - self._x0, ord=self._p))
            if dist < self._best[0]:
                self._best = (dist, x, q, (values, K, h, u))
                improved = True
        return improved

    def _projection(self, fr, values, G, g, K, h):
        """The nearest point to ``x0`` of the class row farthest from it, if it lies in the
        cell, the region and the class (exactly: no tolerance): then it is the cell's
        minimiser (no point of the cell's class set, which that row's halfspace contains, is
        nearer), found without an LP. Its frame point ``u``, or None."""
        if self._movable is None:
            return None
        Gm = G * self._movable  # the held coordinates keep x0's values: their share goes to g
        dist = halfspace_distance(Gm, g + (G - Gm) @ self._x0, self._x0, self._dual)
        i = int(np.argmax(dist))
        if not 0.0 < dist[i] < np.inf:
            return None  # x0 already satisfies the rows (distance 0) or a row cannot move
        row = Gm[i]  # step dist[i] along the unit vector (in the norm p) that moves it most
        if self._p == np.inf:
            step = np.sign(row) * dist[i]
        elif self._p == 2:
            step = row * (dist[i] / np.linalg.norm(row))
        else:
            j = int(np.argmax(np.abs(row)))
            step = np.zeros_like(row)
            step[j] = np.sign(row[j]) * dist[i]
        u = fr.to_u(self._x0 + step)
        # no tolerance: a point slightly outside a row nearly parallel to row i can be far
        # from the cell's true minimiser (row i itself holds by construction, up to rounding)
        slack = K @ u + h
        slack[i] = 0.0
        if slack.min() < 0.0 or (values["A"] @ u - values["b"]).max() > 0.0 \
                or not fr.contains_u(u, 0.0):
            return None
        self.n_projections += 1
        return u

    def _unreachable(self, context, polytope, K, h, q: int) -> bool:
        """Whether class ``q``'s margin over ``x0``'s class stays below ``-REACH_TOL`` on the
        cell: its maximum at the vertices, or by an LP in the traversal's warm model."""
        top = 0 if self._binary else [i for i in range(self._n_out) if i != q].index(self._class0)
        if polytope.vertices is not None:
            return float(np.max(polytope.vertices @ K[top])) + h[top] < -REACH_TOL
        res = self.maximize_linear(context, polytope, K[top], beat=-REACH_TOL - h[top])
        return res is None or (res.status is Status.OPTIMAL and res.objective + h[top] < -REACH_TOL)

    def _direct_linf(self, context, values, K, h):
        """The L∞ subproblem by the direct LP (module docstring): the minimiser ``u``,
        :data:`_NONE` if no point of the cell within the best distance reaches the class, or
        None if the LP is undecided (the caller then solves the compiled subproblem)."""
        cc = self._cc
        sigma, u0 = cc["sigma"], cc["u0"]
        R = min(self._best[0], cc["far"])
        if not R > 0:
            return None
        G = np.vstack([values["A"], -K])
        g = np.concatenate([values["b"], h])
        d = u0.shape[0]
        rows = [np.hstack([G / sigma, -((g - G @ u0) / R)[:, None]])]
        for near, side, sign in cc["near"]:  # sign * e_j <= (side_j / R) s'
            if near.size:
                M = np.zeros((near.size, d + 1))
                M[np.arange(near.size), near] = sign
                M[:, d] = -side[near] / R
                rows.append(M)
        A_ub = np.vstack(rows)
        c = np.zeros(d + 1)
        c[d] = -1.0  # maximise s' (the distance is R / s')
        bounds = (cc["lo"], cc["hi"])
        sessions = cc.setdefault("sessions", {})  # one warm session per backend of the chain

        def attempt(backend):
            if backend not in sessions:
                sessions[backend] = backend.lp_session()
            return sessions[backend].solve_lp(c, A_ub, np.zeros(A_ub.shape[0]), bounds=bounds)

        res, tried = solve_along(context.backends("lp"), attempt)
        self.n_solves += tried
        if res.status is Status.OPTIMAL:
            e, s = res.x[:d], res.x[d]
            return u0 + (R / s) * e / sigma
        if res.status is Status.INFEASIBLE:  # certified: solve_along settles on nothing less
            return _NONE
        return None

    # ---------------------------------------------------------------- discrete features
    def _discrete_rows(self, fr, values, K, h):
        """The cell of the class as rows over the columns ``[u | k | z]``: the frame point,
        a step count per grid input (``x_j = x0_j + k_j step_j``) and a 0/1 column per
        one-hot input (``x_g = z_g``, ``sum z_g = 1``, ``<= 1`` where the baseline was
        dropped); immutable inputs at ``x0``. ``(A_ub, b_ub, A_eq, b_eq, lo, hi, integer)``,
        ``k``'s range from the region; the class rows ``-K u <= h`` are the last of ``A_ub``."""
        spec, U, o, x0 = self._integrality, fr.U, fr.origin, self._x0
        dim = fr.dim
        grid = spec.grid
        hot = np.concatenate(spec.one_hot) if spec.one_hot else np.zeros(0, int)
        n_col = dim + grid.size + hot.size
        reach = np.abs(U).sum(axis=1)  # the region's box is o ± reach
        k_lo, k_hi = spec.step_range(o - reach, o + reach)
        eq, rhs = [], []
        below = np.zeros((0, n_col))
        if grid.size:  # U_j u - step_j k_j = x0_j - o_j
            M = np.zeros((grid.size, n_col))
            M[:, :dim] = U[grid]
            M[np.arange(grid.size), dim + np.arange(grid.size)] = -spec.step[grid]
            eq.append(M)
            rhs.append(x0[grid] - o[grid])
        if hot.size:  # U_g u - z_g = -o_g, and per group sum z = 1
            M = np.zeros((hot.size, n_col))
            M[:, :dim] = U[hot]
            M[np.arange(hot.size), dim + grid.size + np.arange(hot.size)] = -1.0
            S = np.zeros((len(spec.one_hot), n_col))
            start = dim + grid.size
            for i, group in enumerate(spec.one_hot):
                S[i, start:start + group.size] = 1.0
                start += group.size
            drop = np.array([spec.is_dropped(i) for i in range(len(spec.one_hot))])
            eq += [M, S[~drop]]
            rhs += [-o[hot], np.ones(int((~drop).sum()))]
            below = S[drop]  # sum z <= 1 where the baseline was dropped
        held = [j for j in self._imm if np.abs(U[j]).max() > 0]
        if held:
            M = np.zeros((len(held), n_col))
            M[:, :dim] = U[held]
            eq.append(M)
            rhs.append(x0[held] - o[held])
        cell = np.zeros((values["A"].shape[0], n_col))
        cell[:, :dim] = values["A"]
        cls = np.zeros((K.shape[0], n_col))
        cls[:, :dim] = -K
        A = np.vstack([cell, below, cls])
        lo = np.concatenate([-np.ones(dim), k_lo, np.zeros(hot.size)])
        hi = np.concatenate([np.ones(dim), k_hi, np.ones(hot.size)])
        integer = np.arange(n_col) >= dim
        A_eq = np.vstack(eq) if eq else np.zeros((0, n_col))
        b_eq = np.concatenate(rhs) if rhs else np.zeros(0)
        b = np.concatenate([values["b"], np.ones(below.shape[0]), h])
        return A, b, A_eq, b_eq, lo, hi, integer

    def _discrete_step(self, context, polytope, values, K, h, norms, u, q):
        """The cell's part with discrete features, given its relaxed optimum ``u``: None if
        that is not nearer than the best (then no valid point of the cell is); else the
        relaxed point snapped to the valid points (nearest, and outward from ``x0``) becomes
        the best if a forward pass gives it class ``q`` by :data:`DISCRETE_MARGIN` and it is
        nearer (an early incumbent),
        and the cell's MILP (:meth:`_discrete_optimum`, the margin on the rows ``K u + h``
        normalised by ``norms``) returns the cell's nearest valid point ``u``, or None."""
        x0 = self._x0
        x = context.frame.to_x(u)
        if np.linalg.norm(x - x0, ord=self._p) >= self._best[0]:
            return None
        for outward in (False, True):  # its nearest valid point, then the one beyond
            snapped = self._integrality.snap(x, outward)
            dist = float(np.linalg.norm(snapped - x0, ord=self._p))
            if dist < self._best[0] and context.region.contains(snapped) and np.all(
                    -self._reach(q) @ context.network.forward(snapped) >= DISCRETE_MARGIN):
                self._best = (dist, snapped, q, None)
        u = self._discrete_optimum(context, polytope, values, K, h - DISCRETE_MARGIN / norms)
        return None if u is None or u is _NONE else u

    def _discrete_optimum(self, context, polytope, values, K, h):
        """The cell's nearest valid point of the class (rows ``K u + h >= 0``) nearer than
        the best distance, as a MILP (:meth:`_discrete_rows` and the distance's columns):
        its frame point ``u``, :data:`_NONE` if none is nearer (proven), or None if the MILP
        is undecided (recorded as a failure: the result is then inexact)."""
        fr, x0 = context.frame, self._x0
        A, b, A_eq, b_eq, lo, hi, integer = self._discrete_rows(fr, values, K, h)
        U, o, n_col = fr.U, fr.origin, A.shape[1]
        move = np.flatnonzero(np.abs(U).max(axis=1) > 0)
        k = move.size if self._p == 1 else 1
        # U_j u - e_j <= x0_j - o_j and -U_j u - e_j <= o_j - x0_j, e the distance columns
        D = np.zeros((2 * move.size, n_col + k))
        D[:, :fr.dim] = np.vstack([U[move], -U[move]])
        D[:, n_col:] = -np.vstack([np.eye(k), np.eye(k)]) if k > 1 else -1.0
        rows = [np.hstack([A, np.zeros((A.shape[0], k))]), D]
        rhs = [b, np.concatenate([x0[move] - o[move], o[move] - x0[move]])]
        best = self._best[0]
        if np.isfinite(best) and k > 1:  # nothing at or beyond the best distance is wanted
            total = np.zeros((1, n_col + k))
            total[0, n_col:] = 1.0
            rows.append(total)
            rhs.append([best])
        cost = np.concatenate([np.zeros(n_col), np.ones(k)])
        bounds = (np.concatenate([lo, np.zeros(k)]),
                  np.concatenate([hi, np.full(k, best if k == 1 else np.inf)]))
        left = context.traversal.time_left()

        def attempt(backend):
            return backend.solve_milp(cost, np.vstack(rows), np.concatenate(rhs),
                                      np.hstack([A_eq, np.zeros((A_eq.shape[0], k))]), b_eq,
                                      bounds=bounds,
                                      integer=np.concatenate([integer, np.zeros(k, bool)]),
                                      time_limit=left)

        res, tried = solve_along(context.backends("milp"), attempt)
        self.n_solves += tried
        if res.status is Status.INFEASIBLE:
            return _NONE
        if res.status is not Status.OPTIMAL:
            self.record_failure(context, polytope, res)
            return None
        return res.x[:fr.dim]

    def _discrete_witness(self, context, q, x_star, cell):
        """A valid point near ``x_star`` whose class a forward pass confirms
        (:meth:`_snapped_witness`, else :meth:`_witness_by_lp` in the cell, ``(values, K, h,
        u)``; None for the MILP's point)."""
        x = self._snapped_witness(context, q, x_star)
        if x is not None or cell is None:
            return x
        return self._witness_by_lp(context, q, x_star, cell)

    def _snapped_witness(self, context, q, x_star):
        """``x_star`` with its discrete inputs snapped to their values, then its continuous
        inputs a relative ``delta`` further from ``x0``, if a forward pass confirms it."""
        spec, x0 = self._integrality, self._x0
        wanted = self._is_class(q)
        x = spec.snap(x_star)
        free = np.ones(x0.shape[0], bool)
        free[spec.discrete] = False
        free[self._imm] = False
        for delta in np.concatenate([[0.0], COUNTERFACTUAL_STEP * 10.0 ** np.arange(0, 5)]):
            cand = x.copy()
            cand[free] = x0[free] + (1.0 + delta) * (x[free] - x0[free])
            if check_witness(context.network, context.region, cand, wanted):
                return cand
        return None

    def _witness_by_lp(self, context, q, x_star, cell):
        """``maximise t`` over the cell (``K u + h >= t``, ``t <= 1``) with the discrete
        inputs held at ``x_star``'s snapped values and the others within ``delta`` (L∞, frame
        units) of ``x_star``, for growing ``delta``; the first point a forward pass confirms."""
        spec, net, region = self._integrality, context.network, context.region
        wanted = self._is_class(q)
        x = spec.snap(x_star)
        fr = context.frame
        values, K, h, _ = cell
        A, b, A_eq, b_eq, lo, hi, _ = self._discrete_rows(fr, values, K, h)
        dim, n_col = fr.dim, A.shape[1]
        held = self._discrete_rows_at(fr, x)  # the snapped point's k and z columns
        u_star = fr.to_u(x_star)
        lo, hi = lo.copy(), hi.copy()
        lo[dim:], hi[dim:] = held, held
        rows = np.hstack([A, np.zeros((A.shape[0], 1))])
        rows[A.shape[0] - K.shape[0]:, n_col] = 1.0  # -K u + t <= h
        cost = np.zeros(n_col + 1)
        cost[n_col] = -1.0
        for delta in COUNTERFACTUAL_STEP * 10.0 ** np.arange(0, 5):
            box_lo, box_hi = lo.copy(), hi.copy()
            box_lo[:dim] = np.maximum(lo[:dim], u_star - delta)
            box_hi[:dim] = np.minimum(hi[:dim], u_star + delta)

            def attempt(backend, box_lo=box_lo, box_hi=box_hi):
                return backend.solve_lp(cost, rows, b, np.hstack([A_eq, np.zeros((A_eq.shape[0], 1))]),
                                        b_eq, bounds=(np.append(box_lo, -np.inf),
                                                      np.append(box_hi, 1.0)))

            res, _ = solve_along(context.backends("lp"), attempt)
            if res.status is not Status.OPTIMAL or -res.objective <= 0:
                continue
            cand = spec.snap(fr.to_x(res.x[:dim]))
            if check_witness(net, region, cand, wanted):
                return cand
        return None

    def _discrete_rows_at(self, fr, x) -> np.ndarray:
        """The ``k`` and ``z`` columns of :meth:`_discrete_rows` at a valid point ``x``."""
        spec = self._integrality
        grid = spec.grid
        k = np.round((x[grid] - spec.origin[grid]) / spec.step[grid])
        hot = np.concatenate(spec.one_hot) if spec.one_hot else np.zeros(0, int)
        return np.concatenate([k, x[hot]])

    def _is_class(self, q: int):
        if self._binary:
            return (lambda y: y[0] > 0) if q == 1 else (lambda y: y[0] < 0)
        return lambda y: bool(np.all(np.delete(y, q) < y[q]))

    def _realise(self, context, q, x_star, cell):
        """A point near the boundary point ``x_star`` whose class a forward pass confirms
        (:meth:`_beyond_on_ray`, else :meth:`_beyond_by_lp` in its polytope, ``cell`` =
        ``(values, K, h, u)``; None for the MILP's point); run once, for the best."""
        if self._integrality is not None:
            return self._discrete_witness(context, q, x_star, cell)
        x = self._beyond_on_ray(context, q, context.frame.to_u(x_star))
        if x is not None or cell is None:
            return x
        values, K, h, u_star = cell
        return self._beyond_by_lp(context, q, values, K, h, u_star)

    def _beyond_on_ray(self, context, q, u_star):
        """The first point a relative ``delta`` beyond the boundary point on the ray from
        ``x0`` that has class ``q``, for growing ``delta`` (no LP; immutable coordinates
        keep their values)."""
        wanted = self._is_class(q)
        ray = context.frame.to_x(u_star) - self._x0
        for delta in COUNTERFACTUAL_STEP * 10.0 ** np.arange(0, 5):
            cand = self._x0 + (1.0 + delta) * ray
            if check_witness(context.network, context.region, cand, wanted):
                return cand
        return None

    def _beyond_by_lp(self, context, q, values, K, h, u_star):
        """``maximise t`` over polytope ∩ region ∩ ``{K u + h >= t}`` within an L∞ box of
        half-width ``delta`` (normalised units) around ``u_star``, for growing ``delta``,
        until the maximiser's class ``q`` is confirmed by a forward pass."""
        from polytrav.solve.subproblem import compiled

        step = compiled(self._step_key(), self._step_build)
        wanted = self._is_class(q)
        for delta in COUNTERFACTUAL_STEP * 10.0 ** np.arange(0, 5):
            res = context.solve(step, K=K, h=h, center=u_star, **values,
                                delta=np.array(delta))
            if res.status is not Status.OPTIMAL or res.objective <= 0:
                continue
            cand = context.frame.to_x(res.x)
            if check_witness(context.network, context.region, cand, wanted):
                return cand
        return None

    def exact(self, context) -> bool:
        """A complete traversal without failed solves, or the MILP's proof."""
        return self._proved or super().exact(context)

    def finish(self, context) -> AnalysisResult:
        dist, x, q, cell = self._best
        witness = None if x is None else self._realise(context, q, x, cell)
        details = {"norm": self._p, "x0": self._x0, "class0": self._class0, "class": q,
                   "boundary_point": x,
                   "search": self.search, "skipped_by_bound": self.skipped,
                   "closed_form": self.n_projections}
        if (self._milp_info or self._milp_why_not) is not None:
            details["milp"] = self._milp_info or self._milp_why_not
        if witness is not None:
            details["returned_distance"] = float(np.linalg.norm(witness - self._x0, ord=self._p))
        elif x is not None:
            details["note"] = "no point past the boundary was confirmed by a forward pass"
        elif self.exact(context):
            details["note"] = ("no input of another class in the region: the class is the same "
                               "everywhere (proven)")
        else:
            details["note"] = ("no input of another class was found before the run ended "
                               "(partial: one may exist)")
        return AnalysisResult(
            analysis=self.label, verdict=None,
            value=dist if np.isfinite(dist) else None, witness=witness,
            exact=self.exact(context), n_polytopes=self.n_polytopes, n_solves=self.n_solves,
            failures=tuple(self.failures), details=details,
        )

    def describe(self, result) -> list[str]:
        from polytrav.vocabulary.text import fmt

        d = result.details
        norm = {1: "L1", 2: "L2"}.get(d["norm"], "Linf")
        if result.value is None:
            return [d.get("note", "no input of another class was found")]
        lines = [f"{norm} distance {fmt(result.value)} from x0 (class {d['class0']}) to the "
                 f"nearest input of class {d['class']}"]
        if "returned_distance" in d:
            lines.append(f"the witness is a point just past the boundary, at distance "
                         f"{fmt(d['returned_distance'])}, whose class is confirmed")
        elif "note" in d:
            lines.append(d["note"])
        milp = d.get("milp")
        if isinstance(milp, dict) and milp["proved"]:
            lines.append(f"proven minimal by a MILP ({milp['binaries']} binaries, lower bound "
                         f"{fmt(milp['bound'])})")
        return lines

    def combine(self, parts, context) -> AnalysisResult:
        best = min(parts, key=lambda p: np.inf if p.value is None else p.value, default=None)
        details = dict(best.details) if best is not None else {}
        for key in ("skipped_by_bound", "closed_form"):
            details[key] = sum(p.details.get(key, 0) for p in parts)
        return self.merged(parts, context, value=None if best is None else best.value,
                           witness=None if best is None else best.witness, details=details)


@hookimpl
def polytrav_add_analyses():
    """Register :class:`Counterfactual`."""
    return [Counterfactual]
