"""The run's region before the traversal (:class:`RegionSearch`): sampled slopes choose the
start point, input splitting against the slope bound proves sub-boxes or finds a wrong-signed
slope, and the MILP settles what both leave open; each once per run."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from polytrav.extend import BoxPiece
from polytrav.plugins.monotonicity.bound import SlopeBound, local_slopes
from polytrav.extend import CORNER_INSET

if TYPE_CHECKING:
    from polytrav import Network
    from polytrav.extend import Region

__all__ = ["MILP_SPLIT_BOXES", "NO_SPLIT", "SAMPLE_CHUNK", "SLOPE_CORNERS", "SLOPE_SAMPLES",
           "SPLIT_BOXES", "SPLIT_SAMPLES", "RegionSearch", "corners"]

#: Random points of the region whose local slopes choose the start point with ``stop_at_first``.
SLOPE_SAMPLES = 256
#: And this many corners of the region's bounding box (every corner when there are fewer),
#: pulled :data:`~polytrav.vocabulary.tolerances.CORNER_INSET` of the way to the centre: the
#: extremes of a piecewise linear slope sit at the box's corners as often as not (a linear
#: program's optima do).
SLOPE_CORNERS = 1024
#: The input splitting of a run that does not need it (a sampled point already violates).
NO_SPLIT: dict = {}
#: Rows per batched pass over the samples: small products stay on one BLAS thread (waking
#: the threads for a product of a few hundred rows costs milliseconds on a busy machine).
SAMPLE_CHUNK = 64
#: Input splitting of a box region before the traversal (``split=None``): at most this many
#: sub-boxes are bounded (:meth:`RegionSearch.split_search`).
SPLIT_BOXES = 2000
#: Random points per unproven sub-box whose local slopes are checked for the wrong sign.
SPLIT_SAMPLES = 8
#: The input splitting's sub-boxes where the MILP (``milp=True``) takes over what they leave
#: open (``split=None``).
MILP_SPLIT_BOXES = 200


def corners(lo: np.ndarray, hi: np.ndarray, count: int, rng) -> np.ndarray:
    """Corners of the box ``[lo, hi]``, pulled :data:`CORNER_INSET` of the way to its
    centre (inside the box): all of them when there are at most ``count``, else ``count``
    random ones. Shape ``(k, n)``."""
    n = lo.shape[0]
    if n <= 30 and 2 ** n <= count:
        signs = ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1).astype(bool)
    else:
        signs = rng.random((count, n)) < 0.5
    mid, half = (lo + hi) / 2, (hi - lo) / 2 * (1.0 - CORNER_INSET)
    return mid + np.where(signs, half, -half)


class RegionSearch:
    """The region search of the monotonicity analysis ``a`` on ``network`` and ``region``.

    Its results, kept for the run: ``probed`` (None: not yet; ``()``: no probe in a bounded
    region; else :meth:`probe`'s), ``split_found`` (:meth:`split_search`'s, or
    :data:`NO_SPLIT`), ``split_cap`` (the splitting's sub-boxes when the MILP follows),
    ``milp_info`` (``details["milp"]``) and ``milp_point`` (the MILP's candidate).
    """

    def __init__(self, a, network: Network, region: Region):
        self.network, self.region = network, region
        self.bound = SlopeBound(a.feature, a.output, a.direction, a.meet)
        self.feature, self.output, self.direction = a.feature, a.output, a.direction
        self.stop_at_first, self.split, self.milp = a.stop_at_first, a.split, a.milp
        self.prunes_by_bound = a.prunes_by_bound
        self.probed = self.split_found = self.split_cap = None
        self.milp_info = self.milp_point = None

    # ---------------------------------------------------------------- the start point
    def start(self) -> np.ndarray | None:
        """The most violating probe point (:meth:`probe`); where no probe violates, the input
        splitting's candidate, else the MILP's (it ran in the region's bound, before)."""
        probe = self.probe()
        if probe is None:
            return None
        x, violates = probe
        if not violates:
            found = self.split_search()  # no sample violates: split the box (proof or a point)
            if found is not None and found["candidate"] is not None:
                return found["candidate"]
            if self.milp_point is not None:
                return self.milp_point
        return x

    def probe(self) -> tuple[np.ndarray, bool] | None:
        """Of :data:`SLOPE_SAMPLES` random points of the region, its bounding box's centre
        and up to :data:`SLOPE_CORNERS` of its corners (:func:`corners`), the one whose local
        slope is the most violating, and whether its slope has the wrong sign (once per run;
        None when no probe lies in a bounded region)."""
        if self.probed is not None:
            return self.probed or None
        self.probed = ()
        network, region = self.network, self.region
        lo, hi = region.bounding_box()
        if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
            return None
        rng = np.random.default_rng(0)
        X = np.vstack([(lo + hi) / 2, rng.uniform(lo, hi, (SLOPE_SAMPLES, lo.shape[0])),
                       corners(lo, hi, SLOPE_CORNERS, rng)])
        if not region.is_box:
            cons = region.constraints()
            X = X[[not cons.violations(x) for x in X]]
        if not len(X):
            return None
        slope = np.concatenate([local_slopes(network, X[k:k + SAMPLE_CHUNK], self.feature,
                                             self.output)
                                for k in range(0, len(X), SAMPLE_CHUNK)])
        best = int(np.argmin(slope) if self.direction == "increasing" else np.argmax(slope))
        violates = bool(slope[best] < 0 if self.direction == "increasing" else slope[best] > 0)
        self.probed = (X[best], violates)
        return self.probed

    # ---------------------------------------------------------------- the region's proof
    def settle(self, context) -> bool:
        """Whether the region, which the bound leaves open, is proven: by its sub-boxes
        (:meth:`split_search`), else, with no violation in sight, by the MILP
        (:meth:`run_milp`; the splitting then stops at :data:`MILP_SPLIT_BOXES` sub-boxes)."""
        why_not = self.milp_why_not(context)
        if why_not is None and self.split is None and self.split_found is None:
            self.split_cap = MILP_SPLIT_BOXES  # the MILP is the better half of the search
        found = self.split_search()  # the run's region: proven by its sub-boxes?
        if found is not None and found["proven"]:
            return True
        in_sight = (found is not None and found["candidate"] is not None
                    or bool(self.probed) and self.probed[1])
        return not in_sight and self.run_milp(context, why_not)  # no violation in sight

    def split_search(self) -> dict | None:
        """Input splitting of the box region against the slope bound (once per run).

        Sub-boxes are bisected worst bound first: one whose slope bound has the right sign
        (:meth:`SlopeBound.margin` on the sub-box as a level-0 piece: CROWN pre-activation
        bounds over the sub-box, the derivative carried as an interval) is proven; otherwise
        the local slopes at its centre, :data:`SPLIT_SAMPLES` random points and as many
        corners are checked, and a wrong-signed one ends the search with that point as
        ``candidate`` (the traversal starts there, so the first polytope visited confirms it
        or not); with ``stop_at_first`` the search is skipped when a probe (:meth:`probe`)
        already has a wrong-signed slope. Otherwise the sub-box is halved along the input
        whose first-layer weights, over the neurons the interval bounds leave unstable,
        times its width are largest.

        Returns ``{"proven", "candidate", "boxes", "open"}`` (``proven``: every sub-box
        proven, which proves the region), or None when the search does not apply (no
        ``bounds``, ``split=0``, not a bounded box region).
        """
        if self.split_found is not None:
            return None if self.split_found is NO_SPLIT else self.split_found
        if self.stop_at_first:
            probe = self.probe()
            if probe is not None and probe[1]:  # a violation is in sight: no proof to look for
                self.split_found = NO_SPLIT
                return None
        boxes = (self.split_cap or SPLIT_BOXES) if self.split is None else int(self.split)
        if not self.prunes_by_bound or boxes <= 0 or not self.region.is_box:
            return None
        import heapq

        network = self.network
        lower, upper = (np.asarray(a, float) for a in self.region.bounding_box())
        if not (np.isfinite(lower).all() and np.isfinite(upper).all()):
            return None
        rng = np.random.default_rng(0)
        W0 = np.abs(network.weights[0])
        found = {"proven": False, "candidate": None, "boxes": 0, "open": 0}
        heap, count = [(-np.inf, 0, lower, upper)], 1
        while heap and found["boxes"] < boxes:
            _, _, lo, hi = heapq.heappop(heap)
            margin = self.bound.margin(network, BoxPiece(lo, hi))
            found["boxes"] += 1
            if margin > 0:
                continue
            X = np.vstack([(lo + hi) / 2, rng.uniform(lo, hi, (SPLIT_SAMPLES, lo.shape[0])),
                           corners(lo, hi, SPLIT_SAMPLES, rng)])
            slope = local_slopes(network, X, self.feature, self.output)
            wrong = slope < 0 if self.direction == "increasing" else slope > 0
            if wrong.any():
                found["candidate"] = X[int(np.argmin(slope) if self.direction == "increasing"
                                           else np.argmax(slope))]
                break
            h_lo = np.minimum(network.weights[0], 0) @ (hi - lo) + network.weights[0] @ lo
            h_hi = np.maximum(network.weights[0], 0) @ (hi - lo) + network.weights[0] @ lo
            unstable = (h_lo + network.biases[0] < 0) & (h_hi + network.biases[0] > 0)
            score = (W0[unstable].sum(axis=0) if unstable.any() else W0.sum(axis=0)) * (hi - lo)
            j = int(np.argmax(score))
            mid = (lo[j] + hi[j]) / 2
            if not lo[j] < mid < hi[j]:
                found["open"] += 1  # too narrow to halve: the traversal decides it
                continue
            for a, b in ((lo[j], mid), (mid, hi[j])):
                lo2, hi2 = lo.copy(), hi.copy()
                lo2[j], hi2[j] = a, b
                heapq.heappush(heap, (margin, count, lo2, hi2))
                count += 1
        found["open"] += len(heap)
        found["proven"] = found["candidate"] is None and found["open"] == 0
        self.split_found = found
        return found

    def split_summary(self) -> dict | None:
        """The input splitting (:meth:`split_search`) as plain data, or None."""
        found = self.split_found
        if found is None or found is NO_SPLIT:
            return None
        return {"proven": bool(found["proven"]), "boxes": int(found["boxes"]),
                "open": int(found["open"]), "candidate": found["candidate"] is not None}

    def milp_why_not(self, context) -> str | None:
        """Why the MILP of :meth:`run_milp` cannot run in this run, or None if it can."""
        from polytrav.extend import Box

        if not self.milp:
            return "milp=False"
        if not isinstance(context.region, Box):
            return f"the region is a {type(context.region).__name__}, not a Box"
        if context.within is not None:
            return "a run in parts"
        if not context.backends("milp", required=False):
            return "no backend serves the 'milp' form"
        return None

    def run_milp(self, context, why_not: str | None) -> bool:
        """The region (left open by the bound and the splitting) to
        :meth:`~polytrav.bounds.milp.RegionMilp.monotone`, once: True if it proves it; a
        candidate point (the centre of its pattern's cell) becomes the start point.
        ``milp_info`` says what it did, or ``why_not`` it did not run."""
        from polytrav.extend import MILP_TIME_SHARE, RegionMilp

        if self.milp_info is not None:
            return False
        if why_not is not None:
            self.milp_info = {"ran": False, "reason": why_not}
            return False
        lo, hi = (np.asarray(a, float) for a in self.region.bounding_box())
        left = context.time_left()
        out = RegionMilp(self.network, lo, hi).monotone(
            self.feature, self.output, 1.0 if self.direction == "increasing" else -1.0,
            context.backends("milp"), time_limit=None if left is None else MILP_TIME_SHARE * left)
        self.milp_info = {"ran": True, "verdict": out.verdict, "binaries": out.binaries,
                          "seconds": out.seconds, "reason": out.reason}
        if out.verdict == "candidate":
            self.milp_point = out.point
            self.milp_info["slope"] = out.slope
        return out.verdict == "holds"
