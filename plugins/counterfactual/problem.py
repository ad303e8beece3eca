"""What a counterfactual run asks, fixed by ``validate``: ``x0``, its class, the classes to
reach, the norm, the immutable and discrete inputs, a regressor's threshold
(:class:`Problem`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from polytrav.plugins.counterfactual.discrete import check_integrality
from polytrav.extend import ConfigError, RegionError, DISCRETE_MARGIN, FeatureScale, as_scale
from polytrav.extend import decisions

if TYPE_CHECKING:
    from polytrav.extend import Integrality
    from polytrav import Network
    from polytrav.extend import Polytope
    from polytrav.extend import Region

__all__ = ["DUAL", "NORMS", "SEARCHES", "HasClass", "Problem", "check_problem"]

SEARCHES = ("best-first", "shrink", "full")
NORMS = {1: 1, "1": 1, "l1": 1, 2: 2, "2": 2, "l2": 2, np.inf: np.inf, "inf": np.inf,
         "linf": np.inf}
DUAL = {1: np.inf, 2: 2, np.inf: 1}


@dataclass(frozen=True, eq=False)
class HasClass:
    """Whether outputs ``y`` give class ``q`` strictly (the witness's forward-pass check;
    the scores are ``y - offset``)."""

    q: int
    offset: np.ndarray

    def __call__(self, y: np.ndarray):
        return bool(decisions((np.asarray(y, float) - self.offset)[None])[0] == self.q)


@dataclass(frozen=True, eq=False)
class Problem:
    """``min ||x - x0||_p`` over the region such that the class is one of ``targets``."""

    x0: np.ndarray  #: shape (n_inputs,)
    p: float  #: 1, 2 or inf
    immutable: np.ndarray  #: input indices held at ``x0``'s values
    binary: bool  #: one output: class 1 where the logit is ``> 0``, 0 where ``< 0``
    class0: int  #: ``x0``'s class
    n_out: int
    targets: tuple[int, ...]  #: the classes to reach
    integrality: Integrality | None  #: the discrete inputs (None: all continuous)
    #: each input's unit of change: the distance is ``||(x - x0) / unit||_p`` (ones: raw units)
    unit: np.ndarray
    scale: FeatureScale | None  #: where ``unit`` came from (None: raw units)
    #: the scores are the outputs less this, shape (n_out,): a regressor's ``threshold``
    #: (its two classes: the prediction below and above it), else zeros
    offset: np.ndarray
    threshold: float | None  #: the ``threshold`` asked (None: the outputs are the scores)

    @property
    def dual(self) -> float:
        """The dual norm's order (distances to halfspaces divide by it)."""
        return DUAL[self.p]

    @property
    def scaled(self) -> bool:
        return self.scale is not None

    def distance(self, x: np.ndarray) -> float:
        return float(np.linalg.norm((x - self.x0) / self.unit, ord=self.p))

    def metric(self) -> str:
        """The distance in words: ``"L1"``, ``"L2 scaled by MAD"``..."""
        name = {1: "L1", 2: "L2"}.get(self.p, "L∞")
        return name if self.scale is None else f"{name} {self.scale.describe()}"

    def reach(self, q: int) -> np.ndarray:
        """``C``: the class is ``q`` where ``C y < 0`` (strictly: a tie is no class), over the
        outputs ``y``; the subproblems state its closure ``C y <= 0``."""
        if self.binary:
            return np.array([[-1.0 if q == 1 else 1.0]])
        eye = np.eye(self.n_out)
        return eye[[i for i in range(self.n_out) if i != q]] - eye[[q]]

    def has_class(self, q: int) -> HasClass:
        return HasClass(q, self.offset)

    def scores(self, y: np.ndarray) -> np.ndarray:
        """The scores of the outputs ``y``: ``y - offset``."""
        return y - self.offset

    def local_scores(self, polytope: Polytope) -> tuple[np.ndarray, np.ndarray]:
        """The scores ``W x + c`` on the polytope (its local model less ``offset``)."""
        W, c = polytope.local_model
        return W, c - self.offset

    def class_rows(self, polytope: Polytope, q: int) -> tuple[np.ndarray, np.ndarray]:
        """``G x + g >= 0`` on the polytope iff the class is ``q`` (closed): ``-C (W x + c)``
        with :meth:`reach`'s ``C`` and the scores ``W x + c``."""
        W, c = self.local_scores(polytope)
        C = self.reach(q)
        return -C @ W[:C.shape[1]], -C @ c[:C.shape[1]]

    def pairs(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per target class, the outputs' conjunction ``C y <= d`` that reaches it (closed:
        ``C (y - offset) <= 0``)."""
        margin = 0.0 if self.integrality is None else DISCRETE_MARGIN
        return [(C, C @ self.offset - margin) for C in map(self.reach, self.targets)]

    def label(self, network: Network, q: int):
        """Class ``q``'s label: the network's, or a regressor's side of its threshold."""
        if self.threshold is not None and network.link == "identity":
            return f"prediction {'>' if q == 1 else '<'} {self.threshold:g}"
        return network.class_label(q)


def check_problem(a, network: Network, region: Region) -> Problem:
    """The :class:`Problem` of the counterfactual ``a``'s parameters on this run, checked
    (:class:`ConfigError` or :class:`RegionError` naming what is wrong)."""
    who = f"analysis {a.name!r}"
    n, m = network.n_inputs, network.n_outputs
    x0 = np.asarray(a.x0, float).reshape(-1)
    if x0.shape != (n,):
        raise ConfigError(f"{who}: x0 has {x0.shape[0]} coordinates but the network takes {n}")
    if not np.isfinite(x0).all():
        raise ConfigError(f"{who}: x0 contains NaN or inf")
    bad = region.violations(x0)
    if bad:
        raise RegionError(f"{who}: x0 is outside the region ({'; '.join(bad[:3])}); the "
                          "counterfactual search starts from x0, so the region must contain it")
    key = a.norm.lower() if isinstance(a.norm, str) else a.norm
    if key not in NORMS:
        raise ConfigError(f"{who}: norm must be 1, 2 or inf, got {a.norm!r}")
    if a.search not in SEARCHES:
        raise ConfigError(f"{who}: search must be one of {SEARCHES}, got {a.search!r}")
    if a.milp_after is not None and (
            isinstance(a.milp_after, bool)
            or not isinstance(a.milp_after, (int, np.integer)) or a.milp_after < 0):
        raise ConfigError(f"{who}: milp_after must be a count >= 0 (polytopes and pieces) "
                          f"or None, got {a.milp_after!r}")
    imm = np.asarray(a.immutable, dtype=int).reshape(-1)
    if imm.size and (imm.min() < 0 or imm.max() >= n or len(set(imm)) != imm.size):
        raise ConfigError(f"{who}: immutable must be distinct input indices in [0, {n}), got "
                          f"{list(a.immutable)}")
    offset, threshold = _offset(a, network, who)
    y0 = network.forward(x0) - offset
    binary = m == 1
    n_classes = 2 if binary else m
    if a.target is not None and (not isinstance(a.target, (int, np.integer))
                                 or not 0 <= a.target < n_classes):
        raise ConfigError(f"{who}: target must be a class in [0, {n_classes}), "
                          f"got {a.target!r}")
    class0 = int(decisions(y0[None])[0])
    if class0 < 0:
        raise ConfigError(f"{who}: x0 lies on the decision boundary (its scores tie: "
                          f"{np.round(y0, 6).tolist()}), where the model decides no class; "
                          "move x0 off the boundary")
    if a.target is not None:
        if a.target == class0:
            raise ConfigError(f"{who}: target {a.target} is x0's own class")
    p = NORMS[key]
    integrality = check_integrality(a.integer, a.one_hot, x0, p, region, who)
    targets = ([a.target] if a.target is not None
               else [q for q in range(n_classes) if q != class0])
    scale = as_scale(a.scale, n, who)
    unit = np.ones(n) if scale is None else scale.values
    return Problem(x0, p, imm, binary, class0, m, tuple(targets), integrality, unit, scale,
                   offset, threshold)


def _offset(a, network: Network, who: str) -> tuple[np.ndarray, float | None]:
    """The outputs' ``offset`` and the ``threshold`` (checked): a regressor needs one (its
    prediction has no classes), one output may have one (a binary logit's decision
    threshold), several outputs none."""
    m, t = network.n_outputs, a.decision_threshold
    if t is None:
        if network.link == "identity":
            raise ConfigError(f"{who}: the network is a regressor (link 'identity'): its "
                              "prediction has no classes; give threshold=T for the nearest "
                              "input whose prediction is on the other side of T")
        return np.zeros(m), None
    if m != 1:
        raise ConfigError(f"{who}: threshold applies to a network of one output (a regressor's "
                          f"prediction or a binary logit), this one has {m}")
    if isinstance(t, bool) or not isinstance(t, (int, float, np.number)) or not np.isfinite(t):
        raise ConfigError(f"{who}: threshold must be a finite number, got {t!r}")
    return np.array([float(t)]), float(t)
