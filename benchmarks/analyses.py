"""Analyses: speed and exactness of the per-region analyses against independent references.

Sections (``--cases``, default all):

* ``cf_grid``, ``cf_acas``: counterfactuals in the norms 1, 2 and inf on the 2-20-1 grid net
  over [-1, 1]^2 (5 fixed-seed x0) and on ACAS Xu 1_1 over the box of half-width 0.005
  around c (x0 = c and one fixed-seed point). Three ways: polytrav's default
  (``Counterfactual(x0, norm=p)``, best-first search); the paper's plain version
  (``search="shrink"``, ``strategy="seed-faithful"``, ``solver={"lp": "scipy"}``: BFS with the
  shrinking region, SciPy ``linprog`` for the traversal and the L1/L-inf LPs, capped by
  ``--paper-limit``); and the MILP of :mod:`polytrav.testing.milp` (norms 1 and inf, HiGHS via
  ``scipy.optimize.milp``, ``--milp-limit`` s per target class). L2 has no MILP: its check is
  the paper's plain version (no distance bounds; it must be complete). The class is the argmax of the
  outputs for every multi-output net, as in polytrav's ``Counterfactual`` (for ACAS Xu the
  advisory is the *minimum* score, so this is a timing benchmark, not an advisory change).
* ``attack``: ``SoftmaxAttack(label)`` (worst margin) on ``mnist2x10.onnx``, region
  ``Ball(x0, 0.01, inf) & Box(0, 1)`` for the first test images, against
  ``milp_max_margin`` over the clipped box; and ``OutputRange`` on the grid net against
  ``milp_max_linear`` (max and min), the other small region of the target.
* ``cf_mnist``: minimal L-inf and L1 counterfactual distances on ``mnist2x10.onnx`` over the
  whole image domain ``Box(0, 1)`` for the first test images, polytrav (capped by
  ``--mnist-limit``) against ``milp_counterfactual`` (``--mnist-milp-limit`` s per target).
* ``overhead``: ``traverse()`` alone against ``analyze()`` with ``OutputRange``,
  ``SoftmaxAttack`` and the L-inf ``Counterfactual`` (``search="full"`` and the default)
  (all on the direct backends: highs for LPs), on ACAS Xu r = 0.005 and mnist2x10 eps 0.01:
  the analysis's added time per polytope, in % of the traversal's; traversal and analysis
  runs alternate, ``--repeats`` pairs; the added time is the median over the pairs of
  (analysis / traversal - 1), with its quartiles.
* ``paths``: the OutputRange subproblem on ~100 ACAS Xu polytopes, time per solve of
  (a) a cvxpy problem rebuilt from scratch per polytope, solved by cvxpy with HIGHS,
  (b) the DPP-compiled ``Subproblem`` on ``cvxpy:HIGHS``, (c) its compiled standard form on
  the direct ``highs`` backend.

Timing: wall clock of the whole call (the MILP's includes building its model; polytrav's
includes compiling its cvxpy subproblems, reported apart as ``setup``). A call whose first run
takes less than ``--repeat-below`` seconds is repeated ``--repeats`` times and the median is
quoted; slower calls (capped baselines, MILPs of tens of seconds) run once. After the
warm-up the objects alive are frozen (``gc.freeze``), so that Python's full collections, 45 ms
over the imported libraries' objects, do not land on random runs of either side. Agreement of
optimal values: ``|diff| <= 1e-6 * (largest width of the region)``.

    python benchmarks/analyses.py                  # everything, ~24 min, writes benchmarks/results/analyses.json
    python benchmarks/analyses.py --quick          # smoke run, ~4 min
    python benchmarks/analyses.py --cases cf_grid attack --repeats 5
    python benchmarks/analyses.py --cases cf_grid attack overhead --repeats 5 --update
"""
from __future__ import annotations

import gc
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import ACAS_C, DATA, ROOT, Run, case, load, measure, parser  # noqa: E402


from polytrav.testing.milp import milp_counterfactual, milp_max_linear, milp_max_margin
from polytrav import Ball, Box, Network, analyze, traverse
from polytrav.host.analysis import CellProblem
from polytrav.model.cell import cell_rows, local_model_u
from polytrav.host.manager import get_solver
from polytrav.plugins.adversarial import SoftmaxAttack
from polytrav.plugins.counterfactual import Counterfactual
from polytrav.plugins.output_range import OutputRange
from polytrav.solve import subproblem as subproblem_module
from polytrav.solve.subproblem import Subproblem

SECTIONS = ("cf_grid", "cf_acas", "attack", "cf_mnist", "overhead", "paths")
AGREE_RTOL = 1e-6
NORM_NAME = {1: "1", 2: "2", np.inf: "inf"}


# ---------------------------------------------------------------------- helpers
class Settings:
    def __init__(self, args):
        self.repeats = args.repeats
        self.warmup = args.warmup
        self.repeat_below = args.repeat_below
        self.paper_limit = args.paper_limit
        self.milp_limit = args.milp_limit
        self.mnist_limit = args.mnist_limit
        self.mnist_milp_limit = args.mnist_milp_limit
        self.quick = args.quick


def timed(fn, s: Settings, cold: bool = False):
    """``(result of the last call, median seconds, all seconds: warm-up first)``: ``--warmup``
    calls (discarded), then ``--repeats`` timed ones; a call slower than ``--repeat-below``
    seconds is the only one (a slow warm-up is the measurement).

    ``cold``: empty polytrav's per-process cache of compiled subproblems first, so that the
    first call (``all[0]``) pays the cvxpy compile a first query on a region pays.
    """
    if cold:
        subproblem_module._COMPILED.clear()
    t = measure(fn, s.repeats, s.warmup, slow=s.repeat_below)
    return t.result, t.median, t.warmup + t.times


def with_setup_timer(cls):
    """A subclass of an analysis that records how long ``begin`` (the cvxpy compile) takes."""

    class Timed(cls):
        def begin(self, context):
            t0 = time.perf_counter()
            super().begin(context)
            self.setup_time = time.perf_counter() - t0

    Timed.__name__ = Timed.__qualname__ = cls.__name__
    return Timed


TCounterfactual = with_setup_timer(Counterfactual)
TSoftmaxAttack = with_setup_timer(SoftmaxAttack)
TOutputRange = with_setup_timer(OutputRange)


def region_width(region) -> float:
    return float(np.max(np.asarray(region.upper, float) - np.asarray(region.lower, float)))


def box_of(region) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(region.lower, float), np.asarray(region.upper, float)


def fnum(v, fmt=".6g") -> str:
    if v is None:
        return "-"
    if isinstance(v, float) and not np.isfinite(v):
        return str(v)
    return format(v, fmt)


def fsec(v, capped=False) -> str:
    if v is None:
        return "-"
    s = f"{v:.3f}" if v < 10 else f"{v:.1f}"
    return ("≥" + s) if capped else s


def agreement(value, ref_value, ref_proven: bool, tol: float) -> tuple[str, float | None]:
    """``(verdict, |diff|)`` of polytrav's value against a reference."""
    if value is None and ref_value is None:
        return ("yes (none)" if ref_proven else "n/a"), None
    if value is None or ref_value is None or not np.isfinite(ref_value):
        return ("NO" if ref_proven else "n/a (reference capped)"), None
    diff = abs(value - ref_value)
    if ref_proven:
        return ("yes" if diff <= tol else "NO"), diff
    # a capped reference's incumbent is an upper bound of a minimum
    if diff <= tol:
        return "equal (reference not proven)", diff
    return ("consistent (polytrav below capped incumbent)" if value < ref_value
            else "NO (polytrav above a reference's feasible value)"), diff


# ---------------------------------------------------------------------- 1. counterfactuals
def cf_polytrav(net, region, x0, p, s: Settings, **kw):
    def go():
        a = TCounterfactual(x0, norm=p, **{k: v for k, v in kw.items() if k == "search"})
        rep = analyze(net, region, a, **{"strategy": "hierarchical",
                                          **{k: v for k, v in kw.items() if k != "search"}})
        return rep, a
    (rep, a), med, times = timed(go, s, cold=True)
    res = rep[0]
    return {
        "value": res.value, "seconds": med, "seconds_all": times, "seconds_cold": times[0], "status": rep.status.value,
        "complete": rep.complete, "exact": res.exact, "polytopes": rep.stats["polytopes"],
        "lps": rep.stats["lps"], "subproblem_solves": rep.stats["subproblem_solves"],
        "subproblem_seconds": rep.stats["subproblem_time"],
        "setup_seconds": getattr(a, "setup_time", None), "class": res.details.get("class"),
        "class0": res.details.get("class0"), "returned_distance": res.details.get("returned_distance"),
        "failures": list(res.failures),
    }


def cf_milp(net, x0, p, lo, hi, limit, s: Settings):
    r, med, times = timed(lambda: milp_counterfactual(net, x0, p, lo, hi, time_limit=limit), s)
    return {"value": float(r.value), "seconds": med, "seconds_all": times, "status": r.status,
            "proven": r.status == "optimal", "solver_seconds": r.time, "n_binaries": r.n_binaries,
            "class": r.cls, "time_limit_per_target": limit}


def counterfactual_rows(name: str, net, region, points, s: Settings, milp_limit: float,
                        paper_limit: float) -> list[dict]:
    lo, hi = box_of(region)
    tol = AGREE_RTOL * region_width(region)
    rows = []
    for k, x0 in enumerate(points):
        for p in (1, 2, np.inf):
            row = {"section": "counterfactual", "case": name, "x0_index": k, "x0": x0.tolist(),
                   "norm": NORM_NAME[p], "tolerance": tol}
            pt = row["polytrav"] = cf_polytrav(net, region, x0, p, s)
            paper = row["paper"] = cf_polytrav(net, region, x0, p, s, search="shrink",
                                               strategy="seed-faithful", solver={"lp": "scipy"},
                                               time_limit=paper_limit)
            row["paper"]["capped"] = not paper["complete"]
            if p == 2:
                row["reference"] = "paper"
                ref_value, ref_proven = paper["value"], paper["complete"] and paper["exact"]
                ref_time, ref_capped = paper["seconds"], not paper["complete"]
            else:
                ref = row["milp"] = cf_milp(net, x0, p, lo, hi, milp_limit, s)
                row["reference"] = "milp"
                ref_value = None if not np.isfinite(ref["value"]) else ref["value"]
                ref_proven, ref_time, ref_capped = ref["proven"], ref["seconds"], not ref["proven"]
            row["agree_reference"], row["diff_reference"] = agreement(pt["value"], ref_value,
                                                                      ref_proven, tol)
            row["agree_paper"], row["diff_paper"] = agreement(
                pt["value"], paper["value"], paper["complete"] and paper["exact"], tol)
            row["reference_seconds"] = ref_time
            row["reference_capped"] = ref_capped
            row["ratio_reference_over_polytrav"] = ref_time / pt["seconds"]
            row["ratio_paper_over_polytrav"] = paper["seconds"] / pt["seconds"]
            rows.append(row)
            print(f"  cf {name} x0#{k} L{NORM_NAME[p]}: polytrav {fnum(pt['value'])} in "
                  f"{pt['seconds']:.3f}s ({pt['polytopes']} polytopes, {pt['status']}); paper "
                  f"{paper['seconds']:.2f}s {paper['status']}; {row['reference']} {fnum(ref_value)} in "
                  f"{ref_time:.2f}s; agree {row['agree_reference']}", flush=True)
    return rows


def section_cf_grid(s: Settings) -> list[dict]:
    net, region = case("grid")
    n = 2 if s.quick else 5
    points = list(np.random.default_rng(0).uniform(region.lower, region.upper, size=(n, 2)))
    return counterfactual_rows("grid", net, region, points, s, s.milp_limit, s.paper_limit)


def section_cf_acas(s: Settings) -> list[dict]:
    net, region = case("acas_0.005")
    points = [np.array(ACAS_C)]
    if not s.quick:
        points.append(np.random.default_rng(0).uniform(region.lower, region.upper))
    return counterfactual_rows("acas_0.005", net, region, points, s, s.milp_limit, s.paper_limit)


# ---------------------------------------------------------------------- 2. attack
def mnist_net_and_images():
    net = Network.from_onnx(DATA / "mnist/mnist2x10.onnx")
    data = np.load(DATA / "mnist/mnist_test.npz")
    return net, data["images"], data["labels"]


def section_attack(s: Settings) -> list[dict]:
    rows = []
    net, images, labels = mnist_net_and_images()
    eps = 0.01
    x_warm = images[0].reshape(-1) / 255.0  # untimed warm-up (first-call costs in 784 dims)
    analyze(net, Ball(x_warm, eps, norm="inf") & Box(0.0, 1.0), SoftmaxAttack(int(labels[0])))
    for i in range(2 if s.quick else 5):
        x0 = images[i].reshape(-1) / 255.0
        label = int(labels[i])
        region = Ball(x0, eps, norm="inf") & Box(0.0, 1.0)
        lo, hi = np.clip(x0 - eps, 0.0, 1.0), np.clip(x0 + eps, 0.0, 1.0)
        tol = AGREE_RTOL * float(np.max(hi - lo))

        def go(region=region, label=label):
            a = TSoftmaxAttack(label)
            return analyze(net, region, a, strategy="hierarchical"), a
        (rep, a), t_pt, times_pt = timed(go, s)
        m, t_m, times_m = timed(lambda label=label, lo=lo, hi=hi: milp_max_margin(
            net, label, lo, hi, time_limit=s.milp_limit), s)
        res = rep[0]
        verdict, diff = agreement(res.value, float(m.value), m.status == "optimal", tol)
        rows.append({
            "section": "attack", "case": f"mnist2x10 eps {eps}", "image": i, "label": label,
            "predicted": int(np.argmax(net.forward(x0))), "polytopes": rep.stats["polytopes"],
            "polytrav": {"value": res.value, "verdict": str(res.verdict), "exact": res.exact,
                         "seconds": t_pt, "seconds_all": times_pt, "status": rep.status.value,
                         "setup_seconds": a.setup_time,
                         "subproblem_solves": rep.stats["subproblem_solves"]},
            "milp": {"value": float(m.value), "status": m.status, "seconds": t_m,
                     "seconds_all": times_m, "solver_seconds": m.time, "n_binaries": m.n_binaries},
            "agree": verdict, "diff": diff, "tolerance": tol, "ratio_milp_over_polytrav": t_m / t_pt,
        })
        print(f"  attack image {i}: polytrav {res.value:.9g} in {t_pt:.3f}s, MILP {m.value:.9g} "
              f"in {t_m:.3f}s ({m.status}), agree {verdict}", flush=True)
    # the grid net has one output: OutputRange (max and min of the logit) against the MILP
    net, region = case("grid")
    lo, hi = box_of(region)
    tol = AGREE_RTOL * region_width(region)

    def go_range():
        a = TOutputRange(0)
        return analyze(net, region, a, strategy="hierarchical"), a
    (rep, a), t_pt, times_pt = timed(go_range, s)

    def milp_range():
        mx = milp_max_linear(net, [1.0], lo, hi, time_limit=s.milp_limit)
        mn = milp_max_linear(net, [-1.0], lo, hi, time_limit=s.milp_limit)
        return mx, mn
    (mx, mn), t_m, times_m = timed(milp_range, s)
    res = rep[0]
    proven = mx.status == "optimal" and mn.status == "optimal"
    v1, d1 = agreement(res.value["max"], float(mx.value), proven, tol)
    v2, d2 = agreement(res.value["min"], -float(mn.value), proven, tol)
    rows.append({
        "section": "attack", "case": "grid 2-20-1 [-1,1]^2", "analysis": "output_range",
        "polytopes": rep.stats["polytopes"],
        "polytrav": {"value": res.value, "exact": res.exact, "seconds": t_pt,
                     "seconds_all": times_pt, "status": rep.status.value,
                     "setup_seconds": a.setup_time,
                     "subproblem_solves": rep.stats["subproblem_solves"]},
        "milp": {"value": {"min": -float(mn.value), "max": float(mx.value)},
                 "status": "optimal" if proven else f"{mx.status}/{mn.status}", "seconds": t_m,
                 "seconds_all": times_m, "n_binaries": mx.n_binaries},
        "agree": v1 if v1 == v2 else f"max {v1}, min {v2}",
        "diff": max(d for d in (d1, d2) if d is not None) if d1 is not None or d2 is not None else None,
        "tolerance": tol, "ratio_milp_over_polytrav": t_m / t_pt,
    })
    print(f"  output range grid: polytrav {res.value} in {t_pt:.3f}s, MILP "
          f"[{-mn.value:.9g}, {mx.value:.9g}] in {t_m:.3f}s, agree {rows[-1]['agree']}", flush=True)
    return rows


# ---------------------------------------------------------------------- 3. MNIST counterfactuals
def mnist_agreement(pt: dict, m: dict, tol: float) -> tuple[str, float | None]:
    """Agreement of a polytrav and a MILP counterfactual, either of which may be capped."""
    mv = m["value"] if np.isfinite(m["value"]) else None
    if pt["complete"] and pt["exact"]:
        return agreement(pt["value"], mv, m["proven"], tol)
    # polytrav capped: its value (if any) is a feasible distance, an upper bound of the minimum
    head = f"polytrav capped ({pt['status']})"
    if pt["value"] is None or mv is None:
        return f"{head}; n/a", None
    diff = abs(pt["value"] - mv)
    if diff <= tol:
        tail = "its best equals the MILP optimum" if m["proven"] else "equal, neither proven"
    elif pt["value"] > mv:
        tail = "its best is above the MILP value (consistent)"
    else:
        tail = ("NO: its best is below the proven MILP optimum" if m["proven"]
                else "its best is below the capped MILP incumbent")
    return f"{head}; {tail}", diff


def section_cf_mnist(s: Settings) -> list[dict]:
    rows = []
    net, images, labels = mnist_net_and_images()
    region = Box(0.0, 1.0)
    zeros, ones = np.zeros(net.n_inputs), np.ones(net.n_inputs)
    tol = AGREE_RTOL * 1.0
    limit = 30.0 if s.quick else s.mnist_limit
    milp_limit = 10.0 if s.quick else s.mnist_milp_limit
    for i in range(1 if s.quick else 5):
        x0 = images[i].reshape(-1) / 255.0
        for p in (np.inf, 1):
            pt = cf_polytrav(net, region, x0, p, s, time_limit=limit)
            m = cf_milp(net, x0, p, zeros, ones, milp_limit, s)
            mv = m["value"] if np.isfinite(m["value"]) else None
            proven = pt["complete"] and pt["exact"] and m["proven"]
            verdict, diff = mnist_agreement(pt, m, tol)
            rows.append({
                "section": "cf_mnist", "case": "mnist2x10 Box(0,1)", "image": i,
                "label": int(labels[i]), "norm": NORM_NAME[p], "polytrav": pt, "milp": m,
                "agree": verdict, "diff": diff, "both_proven": proven, "tolerance": tol,
                "polytrav_time_limit": limit,
                "ratio_milp_over_polytrav": m["seconds"] / pt["seconds"],
            })
            print(f"  mnist cf image {i} L{NORM_NAME[p]}: polytrav {fnum(pt['value'])} "
                  f"({pt['status']}, {pt['polytopes']} polytopes, {pt['seconds']:.1f}s); MILP "
                  f"{fnum(mv)} ({m['status']}, {m['seconds']:.1f}s); agree {verdict}", flush=True)
    return rows


# ---------------------------------------------------------------------- 4. overhead
def section_overhead(s: Settings) -> list[dict]:
    rows = []
    cases = ["mnist_0.01"] if s.quick else ["acas_0.005", "mnist_0.01"]
    for name in cases:
        net, region = case(name)
        if name.startswith("acas"):
            x_ref = np.array(ACAS_C)
        else:
            x_ref = np.load(DATA / "mnist/mnist_test.npz")["images"][0].reshape(-1) / 255.0
        label = int(np.argmax(net.forward(x_ref)))
        for _ in traverse(net, region, strategy="hierarchical"):  # untimed warm-up (first-call costs of this case)
            pass
        specs = [
            ("output_range", lambda: TOutputRange(0), None),
            (f"softmax_attack (label {label})", lambda label=label: TSoftmaxAttack(label), None),
            ("counterfactual Linf full",
             lambda x_ref=x_ref: TCounterfactual(x_ref, norm=np.inf, search="full"), x_ref),
            ("counterfactual Linf best-first (default)",
             lambda x_ref=x_ref: TCounterfactual(x_ref, norm=np.inf), x_ref),
        ]
        for label_a, make, start in specs:
            def trav(start=start, net=net, region=region):
                run = traverse(net, region, start, strategy="hierarchical")
                n = sum(1 for _ in run)
                return run, n

            def go(make=make, net=net, region=region):
                a = make()
                return analyze(net, region, a, strategy="hierarchical"), a
            # alternated, so that the machine's drift hits both alike (the shared machine's
            # speed moves by tens of percent between minutes)
            times_tr, times_an = [], []
            for _ in range(max(s.repeats, 1)):
                t0 = time.perf_counter()
                run, n = trav()
                t1 = time.perf_counter()
                rep, a = go()
                times_tr.append(t1 - t0)
                times_an.append(time.perf_counter() - t1)
            assert run.complete, run.status
            lps = run.stats.lps
            t_tr, t_an = statistics.median(times_tr), statistics.median(times_an)
            assert rep.complete and rep.stats["polytopes"] == n, (rep.status, rep.stats["polytopes"], n)
            setup = a.setup_time
            # each analysis run against the traversal run just before it: the machine's drift
            # between minutes cancels in the pair, so the median of the pairs' ratios is the
            # steadiest estimate (the quartiles show the spread)
            pair = [an / tr - 1.0 for tr, an in zip(times_tr, times_an)]
            frac = statistics.median(pair)
            q1, _, q3 = statistics.quantiles(pair, n=4) if len(pair) > 1 else (frac, frac, frac)
            added = frac * t_tr
            rows.append({
                "section": "overhead", "case": name, "analysis": label_a, "polytopes": n,
                "traverse_seconds": t_tr, "traverse_seconds_all": times_tr,
                "analyze_seconds": t_an, "analyze_seconds_all": times_an,
                "setup_seconds": setup, "traversal_lps": lps,
                "subproblem_solves": rep.stats["subproblem_solves"],
                "subproblem_seconds": rep.stats["subproblem_time"],
                "backends": rep.solver,
                "traverse_ms_per_polytope": 1e3 * t_tr / n,
                "added_ms_per_polytope": 1e3 * added / n,
                "added_percent": 100.0 * frac,
                "added_percent_quartiles": [100.0 * q1, 100.0 * q3],
                "added_percent_without_setup": 100.0 * (added - setup) / t_tr,
                "target_met": frac < 0.30,
            })
            r = rows[-1]
            print(f"  overhead {name} {label_a}: traverse {t_tr:.3f}s, analyze {t_an:.3f}s "
                  f"(+{r['added_percent']:.0f}%, +{r['added_percent_without_setup']:.0f}% without "
                  f"setup), {r['subproblem_solves']} solves", flush=True)
    return rows


# ---------------------------------------------------------------------- 5. cvxpy path vs direct
def section_paths(s: Settings) -> list[dict]:
    import cvxpy as cp

    net, region = case("acas_0.005")
    run = traverse(net, region, strategy="hierarchical")
    polys = list(run)
    n_want = 20 if s.quick else 100
    pick = np.linspace(0, len(polys) - 1, min(n_want, len(polys))).round().astype(int)
    polys = [polys[i] for i in pick]
    frame = run.frame
    assert frame.is_box
    cell = CellProblem(frame, net.n_neurons)
    gpar = cp.Parameter(frame.dim, name="g")
    sub = Subproblem(cp.Problem(cp.Maximize(gpar @ cell.u), cell.constraints), {"u": cell.u})
    data = []
    for p in polys:
        A, b = cell_rows(p, frame)
        Wu, _ = local_model_u(p, frame)
        data.append((A, b, Wu[0]))
    cvx_highs = get_solver("cvxpy:HIGHS")
    highs = get_solver("highs")
    options = {**cvx_highs.DEFAULT_OPTIONS, **cvx_highs.LP_OPTIONS, **cvx_highs.options}

    def rebuild(A, b, g):
        u = cp.Variable(frame.dim)
        prob = cp.Problem(cp.Maximize(g @ u), [A @ u <= b, u >= -1.0, u <= 1.0])
        prob.solve(solver="HIGHS", **options)
        return prob.status, float(prob.value)

    def compiled(backend):
        def f(A, b, g):
            res = sub.solve(backend, A=A, b=b, g=g)
            return str(res.status), res.objective
        return f

    paths = [("(a) cvxpy, rebuilt per polytope (HIGHS)", rebuild),
             ("(b) cvxpy, DPP-compiled once (Subproblem, cvxpy:HIGHS)", compiled(cvx_highs)),
             ("(c) compiled standard form, direct highs (Subproblem, highs)", compiled(highs))]
    # warm-up (imports, first compile of cvxpy's HIGHS interface)
    for _, f in paths:
        f(*data[0])
    out, objectives = [], {}
    for label, f in paths:
        per = [[] for _ in data]
        objs = []
        for _ in range(max(s.repeats, 1)):
            objs = []
            for k, (A, b, g) in enumerate(data):
                t0 = time.perf_counter()
                _, obj = f(A, b, g)
                per[k].append(time.perf_counter() - t0)
                objs.append(obj)
        objectives[label] = np.array(objs, float)
        med = [statistics.median(t) for t in per]
        out.append({"section": "paths", "case": "acas_0.005", "path": label,
                    "n_polytopes": len(data), "repeats": max(s.repeats, 1),
                    "median_ms": 1e3 * statistics.median(med), "mean_ms": 1e3 * float(np.mean(med)),
                    "p90_ms": 1e3 * float(np.percentile(med, 90))})
    ref = out[-1]["median_ms"]
    ref_obj = objectives[paths[-1][0]]
    for r in out:
        r["ratio_vs_direct"] = r["median_ms"] / ref
        r["max_objective_diff_vs_direct"] = float(np.max(np.abs(objectives[r["path"]] - ref_obj)))
        print(f"  paths {r['path']}: {r['median_ms']:.3f} ms/solve median, "
              f"{r['ratio_vs_direct']:.1f}x direct, max |obj diff| {r['max_objective_diff_vs_direct']:.2g}",
              flush=True)
    return out


# ---------------------------------------------------------------------- tables
def quartiles(row: dict) -> str:
    q = row.get("added_percent_quartiles")
    return "-" if q is None else f"{q[0]:.0f} % to {q[1]:.0f} %"


def tables(results: dict) -> str:
    lines = []
    cf = results.get("cf_grid", []) + results.get("cf_acas", [])
    if cf:
        lines += ["### Counterfactuals (norms 1, 2, inf)", "",
                  ("| case | x0 | norm | distance | polytopes (polytrav) | polytrav s (first call s) | paper s | "
                  "reference | reference s | abs diff | agree | reference / polytrav | paper / polytrav |"),
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in cf:
            pt, pa = r["polytrav"], r["paper"]
            ref = {"milp": "MILP", "paper": "paper's version", "full": "full search"}[r["reference"]]
            if r["reference"] == "milp" and r["reference_capped"]:
                ref += f" ({r['milp']['status']})"
            agree = r["agree_reference"]
            if r["agree_paper"] not in ("yes",):
                agree += f"; paper: {r['agree_paper']}"
            ratio_ref = ("≥" if r["reference_capped"] else "") + f"{r['ratio_reference_over_polytrav']:.1f}x"
            ratio_pa = ("≥" if pa["capped"] else "") + f"{r['ratio_paper_over_polytrav']:.1f}x"
            lines.append(
                f"| {r['case']} | #{r['x0_index']} | {r['norm']} | {fnum(pt['value'])} | {pt['polytopes']} | "
                f"{fsec(pt['seconds'])} ({fsec(pt['seconds_cold'])}) | {fsec(pa['seconds'], pa['capped'])} | "
                f"{ref} | {fsec(r['reference_seconds'], r['reference_capped'])} | "
                f"{fnum(r['diff_reference'], '.1e')} | {agree} | {ratio_ref} | {ratio_pa} |")
        lines.append("")
    at = results.get("attack", [])
    if at:
        lines += ["### SoftmaxAttack / OutputRange against the MILP (small regions)", "",
                  ("| case | image (label) | polytopes | polytrav value | MILP value | abs diff | agree | "
                  "polytrav s (setup s) | MILP s | MILP / polytrav |"),
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for r in at:
            pt, m = r["polytrav"], r["milp"]
            if isinstance(pt["value"], dict):
                pv = f"[{pt['value']['min']:.9g}, {pt['value']['max']:.9g}]"
                mv = f"[{m['value']['min']:.9g}, {m['value']['max']:.9g}]"
                img = "output range"
            else:
                pv, mv = f"{pt['value']:.9g}", f"{m['value']:.9g}"
                img = f"{r['image']} ({r['label']})"
            lines.append(
                f"| {r['case']} | {img} | {r['polytopes']} | {pv} | {mv} | {fnum(r['diff'], '.1e')} | "
                f"{r['agree']} | {fsec(pt['seconds'])} ({fsec(pt['setup_seconds'])}) | "
                f"{fsec(m['seconds'])} | {r['ratio_milp_over_polytrav']:.1f}x |")
        lines.append("")
    cm = results.get("cf_mnist", [])
    if cm:
        lines += ["### MNIST minimal counterfactual distances over Box(0, 1) (784 inputs)", "",
                  ("| image (label) | norm | polytrav distance | status | polytopes | polytrav s | "
                  "MILP distance | MILP status | MILP s | abs diff | agree | MILP / polytrav |"),
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in cm:
            pt, m = r["polytrav"], r["milp"]
            lines.append(
                f"| {r['image']} ({r['label']}) | {r['norm']} | {fnum(pt['value'], '.10g')} | {pt['status']} | "
                f"{pt['polytopes']} | {fsec(pt['seconds'], not pt['complete'])} | {fnum(m['value'], '.10g')} | "
                f"{m['status']} | {fsec(m['seconds'], not m['proven'])} | {fnum(r['diff'], '.1e')} | "
                f"{r['agree']} | {r['ratio_milp_over_polytrav']:.1f}x |")
        lines.append("")
    ov = results.get("overhead", [])
    if ov:
        lines += ["### Analysis cost per polytope on the direct path (target: < 30 % over the traversal)", "",
                  ("| case | analysis | polytopes | traverse s | analyze s | setup s | solves / polytope | "
                  "traversal ms / polytope | added ms / polytope | added % (median of pairs) | "
                  "quartiles of pairs | < 30 % |"),
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in ov:
            lines.append(
                f"| {r['case']} | {r['analysis']} | {r['polytopes']} | {r['traverse_seconds']:.3f} | "
                f"{r['analyze_seconds']:.3f} | {r['setup_seconds']:.3f} | "
                f"{r['subproblem_solves'] / r['polytopes']:.2f} | {r['traverse_ms_per_polytope']:.3f} | "
                f"{r['added_ms_per_polytope']:.3f} | {r['added_percent']:.0f} % | "
                f"{quartiles(r)} | {'yes' if r['target_met'] else 'no'} |")
        lines.append("")
    pa = results.get("paths", [])
    if pa:
        lines += [(f"### OutputRange subproblem: time per solve ({pa[0]['n_polytopes']} ACAS Xu polytopes, "
                  f"r = 0.005)"), "",
                  "| path | median ms / solve | mean ms | p90 ms | vs direct | max abs objective diff vs direct |",
                  "|---|---|---|---|---|---|"]
        for r in pa:
            lines.append(f"| {r['path']} | {r['median_ms']:.3f} | {r['mean_ms']:.3f} | {r['p90_ms']:.3f} | "
                         f"{r['ratio_vs_direct']:.1f}x | {r['max_objective_diff_vs_direct']:.1e} |")
        lines.append("")
    return "\n".join(lines)


def warm_up() -> None:
    """Import and first-call costs (cvxpy, HiGHS, the MILP) out of the timed runs."""
    net, region = case("grid")
    x0 = np.array([0.1, 0.2])
    analyze(net, region, [OutputRange(0), Counterfactual(x0, norm=1), Counterfactual(x0, norm=2)])
    milp_counterfactual(net, x0, 1, region.lower, region.upper)
    net3 = Network.from_arrays([[[1.0, 0.0], [0.0, 1.0]], [[1.0, -1.0], [-1.0, 1.0]]],
                               [[0.0, 0.0], [0.0, 0.0]])
    analyze(net3, Box([-1, -1], [1, 1]), SoftmaxAttack(0))


def grouped(saved: dict) -> dict[str, list]:
    """A results file's rows by section (files of the harness's schema, or the older
    ``{"meta", "results"}`` form of runs before it)."""
    if "results" in saved:
        return saved["results"]
    out: dict[str, list] = {}
    for row in saved["rows"]:
        out.setdefault(row["case_section"], []).append(row)
    return out


def main() -> None:
    ap = parser(__doc__, cases=list(SECTIONS), repeats=3, warmup=1,
                out=ROOT / "benchmarks" / "results" / "analyses.json")
    ap.add_argument("--repeat-below", type=float, default=5.0,
                    help="repeat a call only if its first run took less than this (s)")
    ap.add_argument("--paper-limit", type=float, default=60.0, help="cap of the paper's version (s)")
    ap.add_argument("--milp-limit", type=float, default=20.0,
                    help="MILP time limit per target class / per MILP (s), grid, ACAS, attack")
    ap.add_argument("--mnist-limit", type=float, default=120.0,
                    help="cap of polytrav's MNIST Box(0,1) counterfactual (s)")
    ap.add_argument("--mnist-milp-limit", type=float, default=60.0,
                    help="MILP time limit per target class, MNIST Box(0,1) counterfactual (s)")
    ap.add_argument("--quick", action="store_true", help="smoke run: fewer points, small caps")
    ap.add_argument("--update", action="store_true",
                    help="replace only the sections run in an existing --out file (the others "
                         "stay; the header of the file it updates goes under summary['updates'])")
    ap.add_argument("--tables-from", metavar="JSON",
                    help="print the tables of a saved results file (no runs)")
    args = ap.parse_args()
    if args.tables_from:
        print(tables(grouped(load(args.tables_from))))
        return
    if set(args.cases) - set(SECTIONS):
        ap.error(f"unknown --cases {sorted(set(args.cases) - set(SECTIONS))}; known: {SECTIONS}")
    partial = set(args.cases) != set(SECTIONS) or args.quick
    if partial and not args.update and args.out.exists():
        ap.error(f"{args.out} holds every section; a run of some sections (or --quick) would "
                 "drop the others: add --update, or write elsewhere with --out")
    if args.quick:
        args.repeats = 1
        args.paper_limit = min(args.paper_limit, 10.0)
        args.milp_limit = min(args.milp_limit, 5.0)
    s = Settings(args)
    run = Run("analyses", args, quiet=True)
    t_start = time.perf_counter()
    warm_up()
    # Python's full collections scan every object alive, about 96k after the imports (torch,
    # cvxpy, scipy): 45 ms each, landing on whichever run triggers one. Frozen, they are not
    # scanned, and a full collection costs what the runs' own objects cost.
    gc.collect()
    gc.freeze()
    funcs = {"cf_grid": section_cf_grid, "cf_acas": section_cf_acas, "attack": section_attack,
             "cf_mnist": section_cf_mnist, "overhead": section_overhead, "paths": section_paths}
    results: dict[str, list] = {}
    for name in SECTIONS:
        if name in args.cases:
            t0 = time.perf_counter()
            print(f"[{name}]", flush=True)
            results[name] = funcs[name](s)
            run.summary.setdefault("section_seconds", {})[name] = time.perf_counter() - t0
    run.summary["total_seconds"] = time.perf_counter() - t_start
    if args.update and args.out.exists():  # the sections not run now stay as they were
        saved = load(args.out)
        results = {**grouped(saved), **results}
        run.summary["updates"] = [*saved.get("summary", {}).get("updates", []),
                                  {k: v for k, v in saved.get("meta", saved).items()
                                   if k not in ("rows", "results", "summary")}]
    for name, rows in results.items():
        for row in rows:
            run.add({**row, "case_section": name})
    run.write(args.out)
    print()
    print(tables(results))
    print(f"total {run.summary['total_seconds']:.0f} s; results in {args.out}")


if __name__ == "__main__":
    main()
