"""The run's region in the settle stage (:class:`RegionSearch`): sampled slopes choose the
start point, input splitting against the slope bound proves sub-boxes or finds a wrong-signed
slope, and the MILP decides what both leave open; each once per run, with the tools of
:mod:`polytrav.bounds.settle` and the counts of its
:data:`~polytrav.bounds.settle.MONOTONE_POLICY`."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from polytrav.extend import (MONOTONE_POLICY, Box, BoxPiece, Settled, SettledBy, bisect_box,
                             box_samples, corners, region_milp_slope)
from polytrav.plugins.monotonicity.bound import SlopeBound, local_slopes

if TYPE_CHECKING:
    from polytrav import Network
    from polytrav.extend import BoxBisection, Region

__all__ = ["SAMPLE_CHUNK", "RegionSearch", "corners"]

#: Rows per batched pass over the samples: small products stay on one BLAS thread (waking
#: the threads for a product of a few hundred rows costs milliseconds on a busy machine).
SAMPLE_CHUNK = 64


class RegionSearch:
    """The region search of the monotonicity analysis ``a`` on ``network`` and ``region``.

    Its results, kept for the run: ``probed`` (None: not yet; ``()``: no probe in a bounded
    region; else :meth:`probe`'s), ``split_found`` (:meth:`split_search`'s
    :class:`~polytrav.bounds.settle.BoxBisection`, or None), ``milp_info``
    (``details["milp"]``) and ``milp_point`` (the MILP's candidate).
    """

    def __init__(self, a, network: Network, region: Region, policy=MONOTONE_POLICY):
        self.network, self.region, self.policy = network, region, policy
        self.bound = SlopeBound(a.feature, a.output, a.direction, a.meet)
        self.feature, self.output, self.direction = a.feature, a.output, a.direction
        self.stop_at_first, self.split, self.milp = a.stop_at_first, a.split, a.milp
        self.prunes_by_bound = a.prunes_by_bound
        self.probed = self.split_found = None
        self.milp_info = self.milp_point = None
        self.staged = False  # the settle stage ran and left the region open (once)

    def continued(self, network: Network, region: Region) -> bool:
        """Whether a run of ``network`` on ``region`` is the traversal after this search's
        settle stage (which left the region open): once, on the same network and region."""
        staged, self.staged = self.staged, False
        return staged and network is self.network and region is self.region

    # ---------------------------------------------------------------- the start point
    def start(self) -> np.ndarray | None:
        """The most violating probe point (:meth:`probe`); where no probe violates, the input
        splitting's candidate, else the MILP's (where the settle stage ran them)."""
        probe = self.probe()
        if probe is None:
            return None
        x, violates = probe
        if not violates:
            found = self.split_found
            if found is not None and found.candidate is not None:
                return found.candidate
            if self.milp_point is not None:
                return self.milp_point
        return x

    def probe(self) -> tuple[np.ndarray, bool] | None:
        """Of the policy's ``probe_samples`` random points of the region, its bounding box's
        centre and up to ``probe_corners`` of its corners
        (:func:`~polytrav.bounds.settle.box_samples`), the one whose local slope is the most
        violating, and whether its slope has the wrong sign (once per run; None when no probe
        lies in a bounded region)."""
        if self.probed is not None:
            return self.probed or None
        self.probed = ()
        network, region = self.network, self.region
        lo, hi = region.bounding_box()
        if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
            return None
        X = box_samples(lo, hi, self.policy.probe_samples, self.policy.probe_corners,
                        np.random.default_rng(0))
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
    def settle(self, context) -> Settled:
        """The settle stage on the run's region, which the slope bound leaves open: proven by
        its sub-boxes (:meth:`split_search`), else, with no violation in sight, by the MILP
        (:meth:`run_milp`; the splitting then stops at the policy's ``bisect_milp_boxes``);
        otherwise open from :meth:`start`."""
        why_not = self.milp_why_not(context)
        found = self.split_search(milp_follows=why_not is None)
        if found is not None and found.proven:
            return Settled.proven(SettledBy.SPLIT, boxes=found.proven_boxes,
                                  split=found.summary())
        in_sight = (found is not None and found.candidate is not None
                    or bool(self.probed) and self.probed[1])
        if not in_sight and self.run_milp(context, why_not):  # no violation in sight
            return Settled.proven(SettledBy.MILP, split=self.split_summary())
        self.staged = True  # the run's traversal follows: it keeps this search
        return Settled.open(start=self.start() if self.stop_at_first else None,
                            split=self.split_summary())

    def split_search(self, milp_follows: bool = False) -> BoxBisection | None:
        """Input splitting of the box region against the slope bound (once per run):
        :func:`~polytrav.bounds.settle.bisect_box` with the slope bound of each sub-box as a
        level-0 piece (CROWN pre-activation bounds over the sub-box, the derivative carried
        as an interval) and its local slopes at sampled points (a wrong-signed one is the
        ``candidate``: the traversal starts there, so its first polytope confirms it or not).
        At most ``split`` sub-boxes (None: the policy's ``bisect_boxes``, or
        ``bisect_milp_boxes`` where ``milp_follows``). With ``stop_at_first`` it is skipped
        when a probe (:meth:`probe`) already has a wrong-signed slope.

        None when the search does not apply (no ``bounds``, ``split=0``, not a bounded box
        region, a violating probe).
        """
        if self.split_found is not None:
            return self.split_found
        if self.stop_at_first:
            probe = self.probe()
            if probe is not None and probe[1]:  # a violation is in sight: no proof to look for
                return None
        policy = self.policy
        boxes = ((policy.bisect_milp_boxes if milp_follows else policy.bisect_boxes)
                 if self.split is None else int(self.split))
        if not self.prunes_by_bound or boxes <= 0 or not self.region.is_box:
            return None
        network = self.network
        lower, upper = (np.asarray(a, float) for a in self.region.bounding_box())
        if not (np.isfinite(lower).all() and np.isfinite(upper).all()):
            return None
        increasing = self.direction == "increasing"

        def wrong(X) -> int | None:
            slope = local_slopes(network, X, self.feature, self.output)
            bad = slope < 0 if increasing else slope > 0
            return int(np.argmin(slope) if increasing else np.argmax(slope)) if bad.any() else None

        self.split_found = bisect_box(
            network, lower, upper, lambda lo, hi: self.bound.margin(network, BoxPiece(lo, hi)),
            wrong, boxes, policy.bisect_samples, np.random.default_rng(0))
        return self.split_found

    def split_summary(self) -> dict | None:
        """The input splitting (:meth:`split_search`) as plain data, or None."""
        return None if self.split_found is None else self.split_found.summary()

    def milp_why_not(self, context) -> str | None:
        """Why the MILP of :meth:`run_milp` cannot run in this run, or None if it can."""
        if not self.milp:
            return "milp=False"
        if not isinstance(context.region, Box):
            return f"the region is a {type(context.region).__name__}, not a Box"
        if not context.backends("milp", required=False):
            return "no backend serves the 'milp' form"
        return None

    def run_milp(self, context, why_not: str | None) -> bool:
        """The region (left open by the bound and the splitting) to
        :func:`~polytrav.bounds.settle.region_milp_slope`, once: True if it proves it; a
        candidate point (the centre of its pattern's cell) becomes the start point.
        ``milp_info`` says what it did, or ``why_not`` it did not run."""
        if self.milp_info is not None:
            return False
        if why_not is not None:
            self.milp_info = {"ran": False, "reason": why_not}
            return False
        lo, hi = (np.asarray(a, float) for a in self.region.bounding_box())
        out = region_milp_slope(self.network, lo, hi, self.feature, self.output,
                                1.0 if self.direction == "increasing" else -1.0, context,
                                self.policy)
        from polytrav.extend import MilpVerdict  # (the MILP's module: loaded by its run)

        self.milp_info = {"ran": True, "verdict": out.verdict, "binaries": out.binaries,
                          "seconds": out.seconds, "reason": out.reason}
        if out.verdict is MilpVerdict.CANDIDATE:
            self.milp_point = out.point
            self.milp_info["slope"] = out.slope
        return out.verdict is MilpVerdict.HOLDS
