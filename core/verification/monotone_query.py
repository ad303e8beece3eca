"""Queries that ask whether one output is monotone in one input, answered by slopes.

VNN-LIB 2.0 states "is output ``j`` of ``f`` non-decreasing in input ``i`` over a box?" with
two copies ``f`` and ``g`` (``g`` declared ``equal-to f``): the box on ``X_f`` (and the same
bounds on ``X_g[i]``), ``X_g[i] <= X_f[i]``, every other input equal, and the strict unsafe
relation ``Y_f[j] < Y_g[j]``. Its closed relaxation (``<=``) always holds on the diagonal
``X_g = X_f``, so ``unsat`` cannot come from the closed relaxation; the slope can: the
network is non-decreasing in ``i`` on the box iff every polytope's slope is ``>= 0``
(:class:`~polytrav.plugins.monotonicity.Monotonicity`, which stops at the first confirmed
violating pair and proves by sound slope bounds per piece).

:func:`monotone_shape` recognises the shape (inputs as flat indices, either order of the
comparisons, either direction); :func:`decide_monotone` runs the analysis on ``f`` alone and
turns a violating pair into a counterexample of the query.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

__all__ = ["MonotoneShape", "monotone_shape", "decide_monotone"]


@dataclass(frozen=True)
class MonotoneShape:
    """``f`` (declared network index), ``g`` its copy, the input ``feature`` and ``output``
    (flat indices), the ``direction`` the query asks to refute, and whether ``g``'s feature
    is the smaller one (``X_g[i] <= X_f[i]``)."""

    f: int
    g: int
    feature: int
    output: int
    direction: str
    g_lower: bool


def monotone_shape(instance) -> MonotoneShape | None:
    """The shape of ``instance.query`` if it is a monotonicity question (module doc), else
    None."""
    q = instance.query
    if len(q.networks) != 2 or len(q.clauses) != 1 or any(n.hidden for n in q.networks):
        return None
    a, b = q.networks
    f, g = (0, 1) if b.equal_to == a.name else (1, 0) if a.equal_to == b.name else (None, None)
    if f is None:
        return None
    nf, ng = q.networks[f], q.networks[g]
    if len(nf.inputs) != 1 or len(nf.outputs) != 1:
        return None
    xf, xg, yf, yg = nf.inputs[0].name, ng.inputs[0].name, nf.outputs[0].name, ng.outputs[0].name
    bounds: dict = {xf: {}, xg: {}}
    equal, relation, unsafe = set(), None, None
    for atom in q.dnf[0]:
        names = tuple(t.variable for t in atom.terms)
        coefs = tuple(t.coefficient for t in atom.terms)
        if len(names) == 1 and names[0] in bounds and coefs[0] == 1:
            side = {"<=": "hi", ">=": "lo"}.get(atom.op)
            if side is None:
                return None
            bounds[names[0]].setdefault(atom.terms[0].flat, {})[side] = atom.constant
        elif len(names) == 2 and set(names) in ({xf, xg}, {yf, yg}) and atom.constant == 0 \
                and sorted(coefs) == [-1, 1] and atom.terms[0].flat == atom.terms[1].flat:
            k = atom.terms[0].flat
            # orient as  v_f - v_g  OP 0
            sign = 1 if dict(zip(names, coefs))[names[0] if names[0] in (xf, yf)
                                                else names[1]] == 1 else -1
            op = atom.op if sign == 1 else {"<=": ">=", ">=": "<=", "<": ">", ">": "<",
                                            "==": "=="}[atom.op]
            if names[0] in (xf, xg):
                if op == "==":
                    equal.add(k)
                elif relation is None and op in ("<=", ">=", "<", ">"):
                    relation = (k, op)
                else:
                    return None
            elif unsafe is None and op in ("<", ">"):
                unsafe = (k, op)
            else:
                return None
        else:
            return None
    n = nf.inputs[0].size
    if relation is None or unsafe is None or equal != set(range(n)) - {relation[0]}:
        return None
    i = relation[0]
    box = bounds[xf]
    g_lower = relation[1] in (">=", ">")  # X_f[i] >= X_g[i]
    need, other = ("lo", "hi") if g_lower else ("hi", "lo")
    own = bounds[xg].get(i, {})
    if any(set(box.get(k, {})) != {"lo", "hi"} for k in range(n)) or set(bounds[xg]) - {i} \
            or own.get(need) != box[i][need] or (other in own and (
                own[other] < box[i][other] if g_lower else own[other] > box[i][other])):
        return None  # the box on X_f; X_g[i] bounded by the same bound on its free side
    f_lower_out = unsafe[1] == "<"         # Y_f[j] < Y_g[j]
    # a violation: the copy with the larger feature has the smaller output -> "increasing"
    direction = "increasing" if g_lower == f_lower_out else "decreasing"
    return MonotoneShape(f, g, i, unsafe[0], direction, g_lower)


def decide_monotone(instance, shape: MonotoneShape, timeout: float | None, confirm,
                    solver=None):
    """``("sat" | "unsat" | "unknown" | "timeout", reason, polytopes)`` by
    :class:`~polytrav.plugins.monotonicity.Monotonicity` with ``stop_at_first`` on network
    ``f`` over its box; a violating pair is checked by ``confirm`` (the query's own check)."""
    from polytrav.host.manager import create_analysis
    from polytrav.host.runner import analyze
    from polytrav.model.region import Box
    from polytrav.vocabulary.results import Verdict

    t0 = time.perf_counter()
    q = instance.query
    nf = q.networks[shape.f]
    net = instance.parts[shape.f]
    lo = np.zeros(net.n_inputs)
    hi = np.zeros(net.n_inputs)
    for atom in q.dnf[0]:
        if len(atom.terms) == 1 and atom.terms[0].variable == nf.inputs[0].name:
            (lo if atom.op == ">=" else hi)[atom.terms[0].flat] = atom.constant_float
    analysis = create_analysis("monotonicity", feature=shape.feature, direction=shape.direction,
                               output=shape.output, stop_at_first=True)
    report = analyze(net, Box(lo, hi), analysis, solver=solver,
                     deadline=None if timeout is None else t0 + timeout)
    res = report[0]
    if res.verdict is Verdict.VIOLATED:
        x_small, x_large = res.details["witness_pair"]  # x_large[feature] > x_small[feature]
        # the copy with the smaller feature: g if X_g[i] <= X_f[i]
        xf, xg = (x_large, x_small) if shape.g_lower else (x_small, x_large)
        z = instance.free_inputs({nf.inputs[0].name: xf, q.networks[shape.g].inputs[0].name: xg})
        why = confirm(z)
        if why is None:
            return "sat", "", res.n_polytopes
        return "unknown", f"the violating pair is not confirmed: {why}", res.n_polytopes
    if res.verdict is Verdict.HOLDS:
        return "unsat", "", res.n_polytopes
    spent = time.perf_counter() - t0
    status = report.status.value
    if status == "time_limit" or (timeout is not None and spent >= timeout):
        return "timeout", f"monotonicity: {status} after {res.n_polytopes} polytopes", \
            res.n_polytopes
    return "unknown", f"monotonicity: {res.verdict.value} ({status})", res.n_polytopes
