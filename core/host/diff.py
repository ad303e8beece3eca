"""``polytrav.diff(f, g, region)``: two models, one answer (issue 46).

How far apart two networks are over a region, where, and whether any decision changes:
the ``model_diff`` analysis (:mod:`polytrav.plugins.model_diff`, looked up by its registered
name) run over the joint partition of ``x -> [f(x); g(x)]``, its answer checked by forward
passes of ``f`` and ``g`` themselves and returned as a :class:`DiffResult`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from polytrav.model.decision import TIE, decisions
from polytrav.model.network import Network
from polytrav.model.region import Region
from polytrav.traversal import TraversalStatus
from polytrav.vocabulary.errors import ConfigError, NetworkError
from polytrav.vocabulary.results import Verdict
from polytrav.vocabulary.text import code_text, parse_code
from polytrav.vocabulary.tolerances import WITNESS_TOL

__all__ = ["diff", "DiffResult", "OutputDiff", "DecisionChange", "FeatureDiff", "joint_network",
           "network_codes"]


@dataclass(frozen=True)
class OutputDiff:
    """One output ``j``: the extremes of ``g_j - f_j`` and the largest ``|f_j - g_j|``.

    ``max_abs`` is attained at ``witness`` (``f`` and ``g`` evaluated there by forward
    passes: ``f_value``, ``g_value``; ``confirmed`` when ``witness`` is in the region and
    ``g_value - f_value`` agrees with the LP's value, both within ``WITNESS_TOL``); ``code`` is
    the joint polytope's activation code, ``codes`` each network's part of it
    (:func:`network_codes`).
    """

    output: int
    max: float
    min: float
    max_abs: float
    witness: np.ndarray | None
    f_value: float | None
    g_value: float | None
    confirmed: bool
    code: str | None
    argmax: np.ndarray | None = field(default=None, repr=False)
    argmin: np.ndarray | None = field(default=None, repr=False)
    codes: dict[str, str] | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {"output": self.output, "max": self.max, "min": self.min,
                "max_abs": self.max_abs, "witness": _list(self.witness),
                "f_value": self.f_value, "g_value": self.g_value,
                "confirmed": self.confirmed, "code": self.code, "codes": self.codes,
                "argmax": _list(self.argmax), "argmin": _list(self.argmin)}


@dataclass(frozen=True)
class DecisionChange:
    """A cell of a joint polytope where ``f`` picks ``f_class`` and ``g`` picks ``g_class``
    (both strictly): ``x`` is its Chebyshev centre (checked by forward passes: ``confirmed``),
    ``radius`` its inscribed radius in the region's normalised coordinates, ``volume_share``
    its exact share of the region (low dimension) or None."""

    polytope: int
    code: str
    f_class: Any
    g_class: Any
    x: np.ndarray
    radius: float
    confirmed: bool
    volume_share: float | None = None
    codes: dict[str, str] | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {"polytope": self.polytope, "code": self.code, "codes": self.codes,
                "f_class": _plain(self.f_class), "g_class": _plain(self.g_class),
                "x": _list(self.x), "radius": self.radius, "confirmed": self.confirmed,
                "volume_share": self.volume_share}


@dataclass(frozen=True)
class FeatureDiff:
    """Input ``input`` (``name``) of output ``output``: how differently ``f`` and ``g`` respond
    to it, from the difference of their local linear models on each joint polytope.

    ``max_abs`` is the largest ``|∂(g_j - f_j)/∂x_i|`` over the polytopes (exact over the
    region when ``exact``, else over the visited ones), attained on ``polytope`` (``code``; ``x``
    a point inside it) with the signed ``slope``; ``mean_abs`` the volume-weighted mean of
    ``|∂(g_j - f_j)/∂x_i|`` over the region (with ``diff(..., feature_means=True)`` and at
    most :data:`~polytrav.plugins.model_diff.EXACT_VOLUME_MAX_DIM` free inputs; else None)."""

    output: int
    input: int
    name: str
    max_abs: float
    slope: float
    polytope: int
    code: str
    x: np.ndarray
    mean_abs: float | None
    exact: bool
    codes: dict[str, str] | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {"output": self.output, "input": self.input, "name": self.name,
                "max_abs": self.max_abs, "slope": self.slope, "polytope": self.polytope,
                "code": self.code, "codes": self.codes, "x": _list(self.x),
                "mean_abs": self.mean_abs, "exact": self.exact}


@dataclass(frozen=True)
class DiffResult:
    """What :func:`diff` found.

    ``status``: how the run ended (a :class:`~polytrav.traversal.TraversalStatus`).
    ``outputs``: one :class:`OutputDiff` per compared output. ``max_abs``: the largest
    ``|f_j - g_j|`` over them (``worst`` is that output's record). ``exact``: every number is
    exact for the whole region (a complete run with every LP decided); otherwise the
    extremes are those of the visited polytopes (inside the true range) and ``scope`` says
    ``"visited"``. ``decisions_differ``: True (with ``changes``, each witness checked by
    forward passes), False (proven: no cell of positive volume where the classes differ) or
    None (not asked, or unknown: a partial run or an undecided LP). ``volume_share``: the
    share of the region where the decisions differ as ``(low, high)``, equal ends when exact
    (``volume_method`` says how); ``(0, 0)`` when ``decisions_differ`` is False, a lower end
    of 0 unless it is True. ``verdict``: the ε-equivalence verdict when ``epsilon`` was
    given: HOLDS (proven ``max_abs <= epsilon``), VIOLATED (``violation``: a checked point
    with ``|g_j - f_j| > epsilon``), VIOLATED_UNCONFIRMED (an LP optimum above ``epsilon``
    that forward passes do not confirm) or UNKNOWN (a budget, a lost LP: never HOLDS then).
    ``features``: per compared output and input a :class:`FeatureDiff` (the largest and the
    mean ``|∂(g_j - f_j)/∂x_i|``); :meth:`top_features` sorts them.
    """

    outputs: list[OutputDiff]
    exact: bool
    status: TraversalStatus
    n_polytopes: int
    n_solves: int
    decisions_differ: bool | None
    changes: list[DecisionChange]
    n_changed_polytopes: int
    volume_share: tuple[float, float] | None
    volume_method: str | None
    epsilon: float | None
    verdict: Verdict | None
    violation: dict | None
    time: float
    failures: tuple[str, ...] = ()
    #: whether decision changes were looked for (``decisions=True`` without ``verdict_only``)
    decisions_asked: bool = False
    features: list[FeatureDiff] = field(default_factory=list)
    report: Any = field(default=None, repr=False, compare=False)
    #: the input split of a ``verdict_only`` run on a box (:func:`diff`'s ``split``): boxes
    #: bounded, proven, and left open for the traversal; None if unused
    split: dict | None = None
    #: every LP the traversals solved: their cells' and the analysis's (``n_solves``)
    n_lps: int = 0

    def __post_init__(self):
        object.__setattr__(self, "status", TraversalStatus(self.status))

    @property
    def worst(self) -> OutputDiff:
        """The output with the largest ``|f_j - g_j|``."""
        return max(self.outputs, key=lambda o: o.max_abs)

    @property
    def max_abs(self) -> float:
        return self.worst.max_abs

    @property
    def scope(self) -> str:
        """``"region"`` when every number is exact, else ``"visited"``."""
        return "region" if self.exact else "visited"

    def top_features(self, k: int | None = None, *, output: int | None = None,
                     by: str = "max_abs") -> list[FeatureDiff]:
        """The inputs along which ``g - f`` changes most, largest first: the :class:`FeatureDiff`
        records (of ``output``, default every compared output) sorted by ``by``
        (``"max_abs"`` or ``"mean_abs"``), the first ``k``."""
        if by not in ("max_abs", "mean_abs"):
            raise ConfigError(f"top_features: by must be 'max_abs' or 'mean_abs', got {by!r}")
        rows = [r for r in self.features if output is None or r.output == output]
        if by == "mean_abs" and any(r.mean_abs is None for r in rows):
            raise ConfigError("top_features: no volume-weighted means here (ask "
                              "diff(..., feature_means=True), at most EXACT_VOLUME_MAX_DIM "
                              "free inputs); use by='max_abs'")
        rows = sorted(rows, key=lambda r: -getattr(r, by))
        return rows if k is None else rows[:k]

    def __repr__(self) -> str:
        v = "" if self.verdict is None else f", {self.verdict.value}"
        scope = " (exact)" if self.exact else " (visited)"
        return (f"DiffResult(max |g - f| = {self.max_abs:.6g}{scope}, "
                f"decisions differ: {self.decisions_differ}{v}, {self.n_polytopes} polytopes)")

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def lines(self) -> list[str]:
        """The answer in a few lines (the command line prints them)."""
        what = "exact over the region" if self.exact else \
            f"over the visited polytopes only ({self.status}): a lower bound"
        out = [f"{self.n_polytopes} joint polytopes, {self.n_lps} LPs, {self.time:.3g} s "
               f"({self.status})"]
        for o in self.outputs:
            if not np.isfinite(o.max_abs):  # nothing visited: every piece proven by bounds
                out.append(f"output {o.output}: no polytope visited (bounds decided)")
                continue
            out.append(f"output {o.output}: max |g - f| = {o.max_abs:.6g} ({what}); g - f in "
                       f"[{o.min:.6g}, {o.max:.6g}]; at x = {_short(o.witness)}")
        if self.features:
            many = len(self.outputs) > 1
            parts = [f"{r.name}{f' (output {r.output})' if many else ''} {r.max_abs:.3g}"
                     + ("" if r.mean_abs is None else f" (mean {r.mean_abs:.3g})")
                     for r in self.top_features(3)]
            out.append("largest |slope of g - f| per input: " + ", ".join(parts))
        if self.decisions_asked:
            state = {True: "yes", False: "no (proven)", None: "unknown"}[self.decisions_differ]
            out.append(f"decisions differ: {state}")
            if self.changes:
                c = self.changes[0]
                out.append(f"  e.g. at x = {_short(c.x)}: f says {c.f_class!r}, g says "
                           f"{c.g_class!r} ({self.n_changed_polytopes} polytopes)")
            if self.volume_share is not None:
                lo, hi = self.volume_share
                share = f"{lo:.6g}" if lo == hi else f"in [{lo:.6g}, {hi:.6g}]"
                out.append(f"  share of the region: {share} ({self.volume_method})")
        if self.split is not None and self.split["boxes"]:
            sp = self.split
            then = "then the whole box traversed" if sp.get("whole") else \
                f"{sp['open']} traversed"
            out.append(f"input split: {sp['boxes']} boxes bounded, {sp['proven']} proven "
                       f"({sp['proven_volume_share']:.3g} of the volume), {then}")
        if self.epsilon is not None:
            line = f"epsilon {self.epsilon:g}: {self.verdict.value}"
            if self.violation is not None:
                line += (f" (output {self.violation['output']}: g - f = "
                         f"{self.violation['value']:.6g} at x = {_short(self.violation['x'])})")
            out.append(line)
        for f in self.failures[:3]:
            out.append(f"undecided: {f}")
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe."""
        return {"max_abs": self.max_abs, "exact": self.exact, "scope": self.scope,
                "status": self.status.value, "n_polytopes": self.n_polytopes,
                "n_solves": self.n_solves, "n_lps": self.n_lps,
                "outputs": [o.to_dict() for o in self.outputs],
                "decisions_differ": self.decisions_differ,
                "changes": [c.to_dict() for c in self.changes],
                "n_changed_polytopes": self.n_changed_polytopes,
                "volume_share": None if self.volume_share is None else list(self.volume_share),
                "volume_method": self.volume_method, "epsilon": self.epsilon,
                "verdict": None if self.verdict is None else self.verdict.value,
                "violation": None if self.violation is None else
                {**self.violation, "x": _list(self.violation["x"])},
                "time": self.time, "failures": list(self.failures),
                "features": [r.to_dict() for r in self.features], "split": self.split}

    def output_rows(self) -> list[dict[str, Any]]:
        """One flat record per compared output (each network's code as ``f_code``, ``g_code``;
        the witness as ``x0``, ``x1``, ...)."""
        rows = []
        for o in self.outputs:
            rec = {k: v for k, v in o.to_dict().items()
                   if k not in ("argmax", "argmin", "witness", "codes")}
            rec.update({f"{name}_code": code for name, code in (o.codes or {}).items()})
            rec.update({f"x{i}": v for i, v in enumerate(_list(o.witness) or [])})
            rec["exact"] = self.exact
            rows.append(rec)
        return rows

    def to_pandas(self):
        """:meth:`output_rows` as a pandas DataFrame."""
        import pandas as pd

        return pd.DataFrame(self.output_rows())


def joint_network(f: Network, g: Network) -> Network:
    """The network ``x -> [f(x); g(x)]``: ``f`` and ``g`` side by side (:meth:`Network.stack`)
    with the input shared (:meth:`Network.compose_input` with ``[I; I]``); exact.

    Raises :class:`~polytrav.NetworkError` unless both are networks with the same numbers of
    inputs and of outputs.
    """
    for who, net in (("f", f), ("g", g)):
        if not isinstance(net, Network):
            raise NetworkError(f"diff: {who} is a {type(net).__name__}, not a Network; load it "
                               "with polytrav.Network.from_onnx / from_torch / ...")
    if f.n_inputs != g.n_inputs or f.n_outputs != g.n_outputs:
        raise NetworkError(f"diff: f takes {f.n_inputs} inputs and gives {f.n_outputs} outputs "
                           f"but g takes {g.n_inputs} and gives {g.n_outputs}; compare models "
                           "of the same input and output sizes")
    n = f.n_inputs
    joint = Network.stack([f, g], names=["f", "g"]).compose_input(np.vstack([np.eye(n)] * 2),
                                                                np.zeros(2 * n))
    return joint


def network_codes(code: str | None, f: Network, g: Network) -> dict[str, str] | None:
    """``{"f": ..., "g": ...}``: each network's own activation code within the code of a
    polytope of :func:`joint_network` ``(f, g)`` (per hidden layer ``f``'s neurons, then
    ``g``'s; a shallower network's padding neurons are neither's), spelled as a run spells
    codes (:func:`~polytrav.vocabulary.text.code_text`; a hex code is read back whole). None
    for None.

    >>> f = Network.from_arrays([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
    >>> g = Network.from_arrays([[[2.0]], [[1.0]]], [[0.0], [0.0]])
    >>> network_codes("101", f, g)  # one hidden layer: f's two neurons, then g's one
    {'f': '10', 'g': '1'}
    """
    if code is None:
        return None
    own = [[W.shape[0] for W in net.weights[:-1]] for net in (f, g)]
    pad = 2 * f.n_outputs
    sizes = [[w[k] if k < len(w) else pad for w in own] for k in range(max(map(len, own)))]
    layers = parse_code(code, [a + b for a, b in sizes]) if sizes else ()
    f_code = [layer[:a] for layer, (a, _) in zip(layers, sizes)][:len(own[0])]
    g_code = [layer[a:] for layer, (a, _) in zip(layers, sizes)][:len(own[1])]
    return {"f": code_text(f_code), "g": code_text(g_code)}


def diff(f: Network, g: Network, region: Region, *, outputs=None, epsilon: float | None = None,
         decisions: bool = True, volumes: bool = True, verdict_only: bool = False,
         solver=None, time_limit: float | None = None, max_polytopes: int | None = None,
         progress=None, on_interrupt: str = "raise", feature_means: bool = False,
         split: bool = True, executor=None, parts: int | None = None) -> DiffResult:
    """Compare two networks over ``region``, exactly.

    Parameters
    ----------
    f, g : Network
        The two models (any widths and depths; same numbers of inputs and outputs).
    region : Region
    outputs : int or sequence of int, optional
        The outputs compared (default all).
    epsilon : float, optional
        Decide ε-equivalence: ``max_j |f_j - g_j| <= epsilon`` on the whole region.
    decisions : bool
        Look for decision changes (argmax, or the sign of a single score) and their volume
        share (default True).
    volumes : bool
        Measure the volume share where decisions differ (default True).
    verdict_only : bool
        Only the ε verdict (needs ``epsilon``): stop at the first violation, skip pieces
        whose bound proves ``|g - f| < epsilon``; the differences are then those visited.
    feature_means : bool
        Also the volume-weighted mean of ``|∂(g_j - f_j)/∂x_i|`` per input
        (``DiffResult.features``' ``mean_abs``; at most 6 free inputs): one volume per
        polytope, 2-7 times the run's time (measured in 5-D). The largest slopes come always.
    solver, time_limit, max_polytopes, progress, on_interrupt
        As in :func:`polytrav.analyze` (``on_interrupt="report"``: Ctrl-C returns the
        partial result).
    split : bool
        With ``verdict_only`` on a :class:`~polytrav.Box` of few effective inputs (the
        criterion of :func:`polytrav.verify`, :func:`polytrav.bounds.split.effective_inputs`),
        first bisect the box by :func:`polytrav.bounds.split.split_box` with the rows
        ``±(g_j - f_j) >= epsilon`` (bounds on the difference of the two networks where they
        have one depth): sub-boxes the bounds prove are done, and only the open ones are
        traversed (default True). HOLDS then needs a proof on every sub-box.
    executor : concurrent.futures.Executor, optional
        With ``verdict_only`` on a :class:`~polytrav.Box`: decide the box in parts on it (a
        ``ProcessPoolExecutor`` runs them on local processes): the box is bisected on the
        difference bound, each sub-box left open is a ``diff`` of its own, with the run's
        time limit; the verdict is the parts' (:mod:`polytrav.host.diff_parts`). ``parts``:
        at most this many (default :data:`~polytrav.host.diff_parts.PARTS`).

    Returns
    -------
    DiffResult

    Examples
    --------
    >>> import polytrav
    >>> W = [[[1.0, 0.0], [0.0, 1.0]], [[1.0, -1.0]]]
    >>> f = polytrav.Network.from_arrays(W, [[0, 0], [0]])     # relu(x0) - relu(x1)
    >>> g = polytrav.Network.from_arrays(W, [[0, 0], [0.25]])  # the same plus 0.25
    >>> r = polytrav.diff(f, g, polytrav.Box([-1, -1], [1, 1]), epsilon=0.3)
    >>> r.max_abs, r.verdict.value, r.decisions_differ, r.volume_share[0] == r.volume_share[1]
    (0.25, 'holds', True, True)
    """
    from polytrav.host.manager import create_analysis, get_plugin_manager
    from polytrav.host.runner import analyze
    from polytrav.traversal.engine import check_budgets

    joint = joint_network(f, g)
    if verdict_only and epsilon is None:
        raise ConfigError("diff: verdict_only=True needs epsilon (the ε of the verdict)")
    check_budgets(max_polytopes, time_limit, "diff")
    if executor is not None:
        if not (verdict_only and split and region.is_box) or max_polytopes \
                or progress is not None:
            raise ConfigError("diff: executor= decides a verdict_only run on a Box in parts; "
                              "pass verdict_only=True, epsilon and a Box (and no "
                              "max_polytopes, progress or split=False), or no executor")
        from polytrav.host.diff_parts import diff_in_parts

        return diff_in_parts(f, g, region, outputs=outputs, epsilon=epsilon,
                             executor=executor, parts=parts, solver=solver,
                             time_limit=time_limit)
    analysis = create_analysis("model_diff", pm=get_plugin_manager(), split=f.n_outputs,
                               outputs=outputs, epsilon=epsilon,
                               decisions=decisions and not verdict_only, volumes=volumes,
                               verdict_only=verdict_only, feature_means=feature_means)
    settles = bool(verdict_only and split and region.is_box)  # ModelDiff.settle's stage
    order = dict(order="best-first", volume_shares=False) if settles else {}
    report = analyze(joint, region, analysis, solver=solver, time_limit=time_limit,
                     max_polytopes=max_polytopes, progress=progress, on_interrupt=on_interrupt,
                     settle=settles, **order)
    return _result(f, g, region.with_dims(f.n_inputs), report, epsilon)


def _result(f: Network, g: Network, region: Region, report, epsilon) -> DiffResult:
    res = report.results[0]
    det = res.details
    outs = []
    for r in det["outputs"]:  # polytrav.vocabulary.diff_records.OutputExtremes
        _, x, code = r.worst
        fv = gv = None
        confirmed = False
        if x is not None:
            fv, gv = float(f.forward(x)[r.output]), float(g.forward(x)[r.output])
            confirmed = (abs(abs(gv - fv) - r.max_abs) <= WITNESS_TOL * (1 + r.max_abs)
                         and region.contains(x, tol=WITNESS_TOL))
        outs.append(OutputDiff(output=r.output, max=r.max, min=r.min, max_abs=r.max_abs,
                               witness=x, f_value=fv, g_value=gv, confirmed=confirmed,
                               code=code, argmax=r.argmax, argmin=r.argmin,
                               codes=network_codes(code, f, g)))
    dec = det["decisions"]  # a DecisionCells, or None
    changes, differ, share, method, n_changed = [], None, None, None, 0
    if dec is not None:
        differ, n_changed = dec.changed, dec.n_polytopes
        for c in dec.changes:
            changes.append(DecisionChange(
                polytope=c.polytope, code=c.code, f_class=_label(f, c.f_class),
                g_class=_label(g, c.g_class), x=c.x, radius=c.radius,
                confirmed=c.confirmed and _changes(f, g, c), volume_share=c.volume_share,
                codes=network_codes(c.code, f, g)))
        if differ and not any(c.confirmed for c in changes):
            differ = None  # found only by LPs that forward passes do not confirm
        share, method = dec.volume_share, dec.volume_method
        if differ is None and share is not None and share[0] > 0:
            # no change confirmed: nothing is known to differ, so the share may be 0
            share, method = (0.0, share[1]), f"{method}; no change confirmed by forward passes"
    names = f.input_names or [f"x{i}" for i in range(f.n_inputs)]
    features = [FeatureDiff(output=r.output, input=r.input, name=names[r.input],
                            max_abs=r.max_abs, slope=r.slope, polytope=r.polytope, code=r.code,
                            x=r.x, mean_abs=r.mean_abs, exact=r.exact,
                            codes=network_codes(r.code, f, g))
                for r in det["features"]]
    found = det["violation"]  # a DiffViolation, or None
    verdict, violation = res.verdict, None
    if found is not None:
        x, j = found.x, found.output
        d = float(g.forward(x)[j] - f.forward(x)[j])
        if not abs(d) > epsilon:
            verdict = Verdict.VIOLATED_UNCONFIRMED
        violation = {"output": j, "value": d, "x": x, "code": found.code,
                     "codes": network_codes(found.code, f, g)}
    stage = report.stats.get("settle") or {}
    probes = stage.get("probes", {})  # probe runs that are no part of the answer: work only
    return DiffResult(outputs=outs, exact=res.exact, status=report.status,
                      n_polytopes=res.n_polytopes + probes.get("polytopes", 0),
                      n_solves=res.n_solves, decisions_differ=differ, changes=changes,
                      n_changed_polytopes=n_changed,
                      volume_share=None if share is None else tuple(share),
                      volume_method=method, epsilon=epsilon, verdict=verdict,
                      violation=violation, time=report.time, failures=res.failures,
                      decisions_asked=dec is not None, features=features, report=report,
                      split=_split(stage, verdict),
                      n_lps=int(report.stats["lps"]) + res.n_solves
                      + probes.get("lps", 0) + probes.get("solves", 0))


def _split(stage: dict, verdict) -> dict | None:
    """``DiffResult.split`` from the settle stage's report (``stats["settle"]``: its
    ``split``, :class:`~polytrav.bounds.settle.BandSettle`'s stats), None where it did not
    run. A probe run that ended the run, or a whole-box traversal that found the violation,
    names the probe as the candidate."""
    if "split" not in stage:
        return None
    out = dict(stage["split"])
    if stage["outcome"] == "probe":  # a probe run found the violation
        out.update(candidate="probe", open=0, probed=stage["probes"]["runs"])
    elif out.get("whole") and verdict is Verdict.VIOLATED:
        out["candidate"] = "probe"
    return out


def _classes(net: Network, x) -> int | None:
    """The class ``net`` decides at ``x`` (:func:`~polytrav.model.decision.decisions`), None
    at a tie."""
    k = int(decisions(net.forward(x)[None])[0])
    return None if k == TIE else k


def _changes(f, g, c) -> bool:
    """Forward passes of ``f`` and ``g`` themselves at the centre of the
    :class:`~polytrav.vocabulary.diff_records.ChangeCell` ``c``."""
    return _classes(f, c.x) == c.f_class and _classes(g, c.x) == c.g_class


def _label(net: Network, k: int):
    if net.classes is not None and len(net.classes) == max(net.n_outputs, 2):
        return _plain(net.classes[k])
    return k


def _plain(v):
    return v.item() if isinstance(v, np.generic) else v


def _list(x):
    return None if x is None else [float(v) for v in np.asarray(x).reshape(-1)]


def _short(x) -> str:
    if x is None:
        return "-"
    from polytrav.vocabulary.text import vector

    return vector(x)
