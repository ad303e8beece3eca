"""Queries that ask whether two networks stay within ε of each other, answered by ``diff``.

VNN-LIB 2.0 states "is ``|g_j(x) - f_j(x)| <= ε`` on a box?" (VNN-COMP 2026's
``isomorphic_acasxu_2026``) with two networks ``f`` and ``g`` of the same input and output
sizes, every input of one tied equal to the other's (``(== X_g[k] X_f[k])``), the box on
one network's inputs only, and the unsafe set a disjunction of single comparisons
``(> (- Y_g[j] Y_f[j]) ε)`` / ``(< (- Y_g[j] Y_f[j]) (- ε))`` (either operand order,
``Y_f - Y_g`` too, any positive scale) with one ``ε > 0`` and, for every output ``j`` named,
both signs. Its answer is :func:`polytrav.diff`'s ε verdict over the joint partition of
``x -> [f(x); g(x)]`` (:func:`decide_diff`).

**Strictness.** The unsafe comparisons are strict: a point with ``|g_j - f_j| = ε`` is safe.
:func:`polytrav.diff`'s HOLDS proves ``max_j |g_j - f_j| <= ε`` (with the LP's tolerance as a
pad, so an optimum within it of ``ε`` is not HOLDS), which excludes every ``> ε`` point:
``unsat``. Its VIOLATED has a forward-pass-checked point with ``|g_j - f_j| > ε``, re-checked
by onnxruntime and in exact arithmetic on the printed values before ``sat``. A non-strict
comparison (``>=`` / ``<=``: then ``|d| = ε`` is unsafe and HOLDS would not exclude it), one
sign only, different ε per row, any other atom, strict or one-sided input bounds, hidden
nodes or several input or output tensors: not this shape, and the query keeps the stacked
path (:func:`polytrav.verify` on the stacked network).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

__all__ = ["DiffShape", "diff_shape", "decide_diff", "ROUTES"]

#: The ways a two-network ε query may be decided: ``"diff"`` (:func:`decide_diff`, the
#: default where :func:`diff_shape` matches) or ``"stack"`` (the stacked network through
#: :func:`polytrav.verify`, the path of every other query).
ROUTES = ("diff", "stack")


@dataclass(frozen=True)
class DiffShape:
    """``f`` (declared network index: the one whose inputs the box bounds) and ``g`` (the
    other), the box ``lower``/``upper`` on the shared input (exact bounds rounded outwards
    to floats), ``epsilon`` (exact) and the ``outputs`` compared (flat indices, sorted)."""

    f: int
    g: int
    lower: np.ndarray
    upper: np.ndarray
    epsilon: Fraction
    outputs: tuple[int, ...]


def diff_shape(query) -> DiffShape | None:
    """The shape of ``query`` (a :class:`~polytrav.verification.query.Query`, or an
    :class:`~polytrav.verification.instance.Instance` for its query) if it is a two-network
    ε query (module doc), else None. The models are not needed.

    Examples
    --------
    >>> from polytrav.verification.query import parse_query
    >>> text = '''(vnnlib-version <2.0>)
    ... (declare-network f (declare-input X_f real [2]) (declare-output Y_f real [1]))
    ... (declare-network g (isomorphic-to f) (declare-input X_g real [2])
    ...                    (declare-output Y_g real [1]))
    ... (assert (>= X_f[0] -1.0)) (assert (<= X_f[0] 1.0))
    ... (assert (>= X_f[1] 0.0)) (assert (<= X_f[1] 0.5))
    ... (assert (== X_g[0] X_f[0])) (assert (== X_g[1] X_f[1]))
    ... (assert (or (> (- Y_g[0] Y_f[0]) 0.05) (< (- Y_g[0] Y_f[0]) -0.05)))'''
    >>> shape = diff_shape(parse_query(text))
    >>> float(shape.epsilon), shape.outputs, shape.lower.tolist(), shape.upper.tolist()
    (0.05, (0,), [-1.0, 0.0], [1.0, 0.5])
    >>> diff_shape(parse_query(text.replace("(< (- Y_g[0] Y_f[0]) -0.05)", ""))) is None
    True
    """
    q = getattr(query, "query", query)
    if len(q.networks) != 2 or not q.clauses or any(n.hidden for n in q.networks):
        return None
    if any(len(n.inputs) != 1 or len(n.outputs) != 1 for n in q.networks):
        return None
    xs = [n.inputs[0] for n in q.networks]
    ys = [n.outputs[0] for n in q.networks]
    if xs[0].size != xs[1].size or ys[0].size != ys[1].size:
        return None
    shared = set.intersection(*(set(c) for c in q.clauses))
    rows = [set(c) - shared for c in q.clauses]
    if any(len(r) != 1 for r in rows):
        return None
    # the shared atoms: the ties and the box
    x_names = [v.name for v in xs]
    tied, bounds, boxed = set(), {}, set()
    for k in sorted(shared):
        atom = q.atoms[k]
        names = [t.variable for t in atom.terms]
        if atom.op == "==" and len(names) == 2 and sorted(names) == sorted(x_names) \
                and atom.constant == 0 and atom.terms[0].flat == atom.terms[1].flat \
                and atom.terms[0].coefficient == -atom.terms[1].coefficient:
            tied.add(atom.terms[0].flat)
        elif len(names) == 1 and names[0] in x_names and atom.op in ("<=", ">="):
            t = atom.terms[0]
            bound = atom.constant / t.coefficient
            upper = (atom.op == "<=") == (t.coefficient > 0)
            side = bounds.setdefault(t.flat, {})
            key = "hi" if upper else "lo"
            side[key] = bound if key not in side else (min if upper else max)(side[key], bound)
            boxed.add(names[0])
        else:
            return None
    n = xs[0].size
    if tied != set(range(n)) or len(boxed) != 1 or \
            any(set(bounds.get(k, {})) != {"lo", "hi"} for k in range(n)):
        return None
    f = x_names.index(boxed.pop())
    g = 1 - f
    lo = [bounds[k]["lo"] for k in range(n)]
    hi = [bounds[k]["hi"] for k in range(n)]
    if any(a > b for a, b in zip(lo, hi)):
        return None
    # the unsafe rows, each oriented as  s * (Y_g[j] - Y_f[j]) > e
    yf, yg = ys[f].name, ys[g].name
    signs: dict = {}
    eps = None
    for (k,) in rows:
        atom = q.atoms[k]
        coef = {t.variable: t for t in atom.terms}
        if atom.op not in ("<", ">") or len(atom.terms) != 2 or set(coef) != {yf, yg} \
                or coef[yf].flat != coef[yg].flat \
                or coef[yf].coefficient != -coef[yg].coefficient:
            return None
        c = coef[yg].coefficient  # atom:  c * (Y_g - Y_f) OP constant
        e = atom.constant / c
        s = 1 if (atom.op == ">") == (c > 0) else -1  # s * (Y_g - Y_f) > s * e
        e = s * e
        if e <= 0 or (eps is not None and e != eps):
            return None
        eps = e
        signs.setdefault(coef[yf].flat, set()).add(s)
    if any(s != {1, -1} for s in signs.values()):
        return None
    return DiffShape(f, g, _outward(lo, -1), _outward(hi, 1), eps, tuple(sorted(signs)))


def _outward(values, direction: int) -> np.ndarray:
    """Exact bounds as floats, each rounded away from the box's inside when not exact."""
    out = []
    for v in values:
        x = float(v)
        if Fraction(x) != v and (Fraction(x) > v) != (direction > 0):
            x = float(np.nextafter(x, direction * np.inf))
        out.append(x)
    return np.array(out)


def decide_diff(instance, shape: DiffShape, timeout: float | None, confirm, *, real: bool,
                solver=None) -> tuple[str, str, int, int, dict | None]:
    """``(answer, reason, polytopes, LPs, split)`` by :func:`polytrav.diff` with
    ``verdict_only`` (``split``: its input split's counts, :attr:`DiffResult.split`, None
    where it did not run or the whole box was traversed instead):
    ``answer`` is ``"sat"`` (a violation that ``confirm``, the query's own check, accepts),
    ``"unsat"`` (HOLDS), ``"timeout"`` or ``"unknown"``.

    ``real``: the query is written in ``real`` (a proof for the exact networks). Otherwise
    the proof is for ``ε`` lowered by the networks' float32 rounding bound over the box
    (:func:`polytrav.bounds.rounding.float32_error`, ``f``'s and ``g``'s added, the largest
    over the outputs): a proof of that holds for onnxruntime's float32 evaluation. A violation
    that ``confirm`` refuses (float32 rounding at ``ε``) is searched once more at ``ε`` raised
    by :data:`~polytrav.vocabulary.tolerances.WITNESS_GAP` (relative)."""
    from polytrav.host.diff import diff
    from polytrav.model.region import Box
    from polytrav.traversal import TraversalStatus
    from polytrav.vocabulary.results import Verdict
    from polytrav.vocabulary.tolerances import WITNESS_GAP

    t0 = time.perf_counter()
    q = instance.query
    f, g = instance.parts[shape.f], instance.parts[shape.g]
    box = Box(shape.lower, shape.upper)
    eps = float(shape.epsilon)
    proof_eps = eps if real else eps - _float32_allowance(instance, shape)
    names = (q.networks[shape.f].inputs[0].name, q.networks[shape.g].inputs[0].name)
    polytopes = lps = 0
    split = None
    reasons = []
    for k, target in enumerate((proof_eps, eps + WITNESS_GAP * (1 + eps))):
        left = None if timeout is None else timeout - (time.perf_counter() - t0)
        if left is not None and left <= 0:
            return "timeout", "; ".join(reasons + ["no time left"]), polytopes, lps, split
        if target < 0:
            return "unknown", (f"the float32 rounding bound exceeds epsilon {eps:g}; write the "
                               "query in real to ask about the exact networks"), \
                polytopes, lps, split
        res = diff(f, g, box, outputs=list(shape.outputs), epsilon=target, verdict_only=True,
                   solver=solver, time_limit=left)
        polytopes, lps = polytopes + res.n_polytopes, lps + res.n_lps
        split = None if not res.split or res.split.get("whole") else res.split
        if res.verdict is Verdict.HOLDS:
            if k == 0:
                return "unsat", "", polytopes, lps, split
            break  # no point past the raised epsilon: the first run's point stays unconfirmed
        if res.verdict is Verdict.VIOLATED:
            x = np.asarray(res.violation["x"], float)
            why = confirm(instance.free_inputs({names[0]: x, names[1]: x}))
            if why is None:
                return "sat", "", polytopes, lps, split
            reasons.append(f"diff: the violation at epsilon {target:g} is not confirmed: {why}")
            continue
        if res.status is TraversalStatus.TIME_LIMIT or (timeout is not None and
                                           time.perf_counter() - t0 >= timeout):
            return "timeout", f"diff: {res.verdict.value} ({res.status})", polytopes, lps, split
        reasons.append(f"diff: {res.verdict.value} ({res.status}"
                       + (f"; {res.failures[0]}" if res.failures else "") + ")")
        break
    return "unknown", "; ".join(reasons), polytopes, lps, split


def _float32_allowance(instance, shape: DiffShape) -> float:
    """The largest over the compared outputs of ``f``'s plus ``g``'s float32 rounding bound
    over the box: ``|g_j - f_j|`` as onnxruntime computes it is within it of the exact one."""
    from polytrav.bounds.rounding import float32_error
    from polytrav.verification.instance import FLOAT32_BOXES

    q = instance.query
    errs = [float32_error(instance.models[q.networks[k].name], shape.lower, shape.upper,
                          max_boxes=FLOAT32_BOXES) for k in (shape.f, shape.g)]
    return float(max(errs[0][j] + errs[1][j] for j in shape.outputs))
