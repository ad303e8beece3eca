"""A model's new version: the credit model of ``credit.py`` against three new versions of
itself (issue 46, item 5; docs/diff.md, "A model's new version: the credit model").

``f`` is the case study's model (``credit.train``: MLPClassifier 16-16, L2 penalty 1.0,
stratified 80 % split, seed 0, read by ``Network.from_sklearn``: one logit, approved iff
``>= 0``). The new versions ``g``:

* **retrained**: the same recipe on another sample (``credit.train`` with seed 1: another
  stratified 80 % split and another initialisation; same hyper-parameters);
* **pruned**: ``f`` with the smallest ``--prune`` share of its live weights (``|w| >``
  :data:`DEAD`; the L2 penalty drove many to zero) set to zero, by magnitude over all layers
  together, biases kept, no retraining;
* **float16**: ``f``'s weights and biases rounded to float16 and back.

Per pair, on three sets (docs/diff.md says what each number covers):

* **the rows** (the dataset's 1 000 applicants): whose decision changes, by forward passes;
  the mean ``|∂(g - f)/∂x_i|`` over them (the local models at the rows);
* **the neighbourhoods** (exact): per applicant, the box with the 0/1 indicators
  (:data:`INDICATORS`) fixed and every other feature within ``--radius`` of the data range
  of the applicant's value; ``polytrav.diff`` on each: the largest ``|g - f|`` over their
  union (checked against the MILP of both networks in its box, to 1e-6), which boxes hold a
  decision change (proven either way), ``DiffResult.features`` (the largest
  ``|∂(g - f)/∂x_i|``);
* **the domain** ``[0, 1]^14``: ``polytrav.diff`` within ``--time-limit`` (exact when it
  completes; else the visited polytopes: a confirmed lower bound of ``max |g - f|`` and
  witnesses of decision changes), the sound upper bound of
  ``polytrav.bounds.difference.difference_bounds`` over ``--split-boxes`` boxes, an
  independent MILP of both networks (:mod:`polytrav.testing.milp`, HiGHS, on a block-diagonal
  joint network written out here), a Monte Carlo estimate of the share where the decisions
  differ, and the distinct joint activation patterns among uniform samples (a lower bound on
  the joint polytopes).

Figures ``docs/results/credit_diff_*.png`` and ``benchmarks/results/credit_diff.json``.

    python benchmarks/credit_diff.py                   # ~10 min on a 2-core box
    python benchmarks/credit_diff.py --quick           # smoke run: short limits, no figures
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from credit import FEATURES, load_credit, train  # noqa: E402
from harness import header, relative  # noqa: E402
from polytrav.testing.milp import joint_by_hand, milp_max_linear  # noqa: E402

import polytrav  # noqa: E402
from polytrav import Box, Network  # noqa: E402
from polytrav.bounds.difference import difference_bounds  # noqa: E402

PAIRS = ("retrained", "pruned", "float16")
TOL = 1e-6
#: Weights the L2 penalty has already driven to (numerically) zero: not counted by ``--prune``.
DEAD = 1e-6
#: The 0/1 indicators: fixed at the applicant's value in the neighbourhoods.
INDICATORS = ("checking_negative", "no_checking_account", "female", "foreign_worker",
              "real_estate", "critical_history")


def new_versions(f: Network, Xs, y, hidden, alpha, prune: float) -> dict[str, Network]:
    """The three new versions of ``f`` (module doc), named like ``f``'s inputs."""
    names = f.input_names
    _, retrained, _ = train(Xs, y, hidden, alpha, seed=1)
    mags = np.concatenate([np.abs(W).ravel() for W in f.weights])
    cut = np.quantile(mags[mags > DEAD], prune)
    pruned = [np.where(np.abs(W) <= cut, 0.0, W) for W in f.weights]
    half = lambda a: np.asarray(a, np.float16).astype(float)  # noqa: E731
    return {"retrained": Network.from_arrays(retrained.weights, retrained.biases,
                                             input_names=names),
            "pruned": Network.from_arrays(pruned, f.biases, input_names=names),
            "float16": Network.from_arrays([half(W) for W in f.weights],
                                           [half(b) for b in f.biases], input_names=names)}



def milp_extremes(f, g, lo, hi, limit):
    """``max`` and ``min`` of ``g - f`` over the box by the MILP, with their times."""
    J = joint_by_hand(f, g)
    out = {}
    for key, row in (("max", [-1.0, 1.0]), ("min", [1.0, -1.0])):
        r = milp_max_linear(J, row, lo, hi, time_limit=limit, bounds="lp")
        value = r.value if key == "max" else -r.value
        bound = r.bound if key == "max" else -r.bound
        out[key] = {"value": value, "status": r.status, "seconds": r.time,
                    "dual_bound": float(bound), "n_binaries": r.n_binaries,
                    "x": None if r.x is None else np.asarray(r.x).tolist()}
    return out


def jacobians(net: Network, X) -> np.ndarray:
    """``∂net/∂x`` at each row of ``X`` (one output): the local linear model's slope, by the
    activation masks of a plain forward pass."""
    a = np.asarray(X, float)
    J = np.broadcast_to(np.eye(net.n_inputs), (len(a), net.n_inputs, net.n_inputs)).copy()
    for k, (W, b) in enumerate(zip(net.weights, net.biases)):
        z = a @ W.T + b
        J = np.einsum("oi,nij->noj", W, J)
        if k < len(net.weights) - 1:
            mask = z > 0
            a = np.where(mask, z, 0.0)
            J = J * mask[:, :, None]
    return J[:, 0, :]


def neighbourhood(x, names, radius):
    """The box around one applicant: the indicators fixed at its values, every other feature
    within ``radius`` (a share of its data range) of its value, clipped to the domain."""
    free = np.array([n not in INDICATORS for n in names])
    lo, hi = x.copy(), x.copy()
    lo[free] = np.clip(x[free] - radius, 0.0, 1.0)
    hi[free] = np.clip(x[free] + radius, 0.0, 1.0)
    return lo, hi


def split_upper_bound(f, g, n, boxes: int):
    """A sound upper bound of ``max |g - f|`` over ``[0, 1]^n``: difference bounds
    (:func:`difference_bounds`) on a partition of the domain into ``boxes`` boxes, refined by
    halving the box of the largest bound along its widest side (the maximum over the
    leaves; every leaf's bound is sound)."""
    lo, hi = np.zeros((1, n)), np.ones((1, n))

    def ub(lo, hi):
        b = difference_bounds(f, g, lo, hi)
        return np.maximum(-b.lower[:, 0], b.upper[:, 0])

    u = ub(lo, hi)
    first = float(u[0])
    while len(lo) < boxes:
        k = min(len(lo), max(1, boxes - len(lo)), 64)
        top = np.argsort(-u)[:k]
        keep = np.setdiff1d(np.arange(len(lo)), top)
        cut = np.argmax(hi[top] - lo[top], axis=1)
        mid = (lo[top, cut] + hi[top, cut]) / 2
        lo_a, hi_a, lo_b, hi_b = lo[top].copy(), hi[top].copy(), lo[top].copy(), hi[top].copy()
        hi_a[np.arange(k), cut] = mid
        lo_b[np.arange(k), cut] = mid
        new_lo, new_hi = np.vstack([lo_a, lo_b]), np.vstack([hi_a, hi_b])
        lo, hi = np.vstack([lo[keep], new_lo]), np.vstack([hi[keep], new_hi])
        u = np.concatenate([u[keep], ub(new_lo, new_hi)])
    return first, float(u.max()), len(lo)


def monte_carlo_share(f, g, n, samples, seed=0):
    """The share of ``[0, 1]^n`` where the decisions differ, estimated from uniform samples
    (an estimate with a 95 % normal interval, not a bound)."""
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(samples // 100_000):
        U = rng.random((100_000, n))
        hits += int(((f.forward(U)[:, 0] >= 0) != (g.forward(U)[:, 0] >= 0)).sum())
    p = hits / samples
    half = 1.96 * np.sqrt(max(p * (1 - p), 1.0 / samples) / samples)
    return p, max(0.0, p - half), p + half


def sampled_patterns(f, g, n, samples, seed=1) -> int:
    """Distinct joint activation patterns of ``f`` and ``g`` among uniform samples of
    ``[0, 1]^n``: a lower bound on the number of joint polytopes of the domain."""
    U = np.random.default_rng(seed).random((samples, n))
    masks = []
    for net in (f, g):
        a = U
        for W, b in zip(net.weights[:-1], net.biases[:-1]):
            z = a @ W.T + b
            masks.append(z > 0)
            a = np.where(z > 0, z, 0.0)
    return len(np.unique(np.packbits(np.hstack(masks), axis=1), axis=0))


def compare(name, f, g, Xs, names, lo, hi, args) -> dict:
    """Everything the case study asks about one pair."""
    n = len(names)
    units = lambda w: {n_: float(lo[k] + w[k] * (hi[k] - lo[k]))  # noqa: E731
                       for k, n_ in enumerate(names)}
    # 1. the rows: forward passes
    yf, yg = f.forward(Xs)[:, 0], g.forward(Xs)[:, 0]
    changed = np.flatnonzero((yf >= 0) != (yg >= 0))
    slope_rows = np.abs(jacobians(g, Xs) - jacobians(f, Xs)).mean(axis=0)
    # 2. the data's neighbourhood: exact, one diff per applicant's box
    t0 = time.perf_counter()
    near = {"radius": args.radius, "n_polytopes": 0, "incomplete": 0, "rows_differ": [],
            "max_abs": -1.0}
    fmax = np.zeros(n)
    for i, x in enumerate(Xs[:args.rows]):
        blo, bhi = neighbourhood(x, names, args.radius)
        r = polytrav.diff(f, g, Box(blo, bhi))
        near["n_polytopes"] += r.n_polytopes
        near["incomplete"] += not r.exact
        if r.decisions_differ:
            c = next(c for c in r.changes if c.confirmed)
            near["rows_differ"].append({"row": i, "share": list(r.volume_share),
                                        "n_polytopes": r.n_changed_polytopes,
                                        "witness": list(map(float, c.x))})
        if r.max_abs > near["max_abs"]:
            o = r.worst
            near.update(max_abs=o.max_abs, signed=o.max if o.max >= -o.min else o.min,
                        row=i, witness=list(map(float, o.witness)),
                        witness_units=units(o.witness), confirmed=o.confirmed,
                        box=[blo.tolist(), bhi.tolist()])
        for q in r.features:
            fmax[q.input] = max(fmax[q.input], q.max_abs)
    near["seconds"] = time.perf_counter() - t0
    near["rows_checked"] = len(Xs[:args.rows])
    near["feature_max_abs"] = fmax.tolist()
    near["top_features"] = [names[k] for k in np.argsort(-fmax)[:3]]
    blo, bhi = (np.asarray(v) for v in near["box"])
    m = milp_extremes(f, g, blo, bhi, args.milp_limit)
    near["milp"] = m
    near["milp_max_abs"] = max(m["max"]["value"], -m["min"]["value"])
    near["milp_agrees"] = bool(all(v["status"] == "optimal" for v in m.values())
                               and abs(near["milp_max_abs"] - near["max_abs"]) <= TOL)
    # 3. the whole domain: the joint traversal within the time limit, the MILP, the bounds
    t0 = time.perf_counter()
    res = polytrav.diff(f, g, Box(np.zeros(n), np.ones(n)), time_limit=args.time_limit)
    t_diff = time.perf_counter() - t0
    first, upper, n_boxes = split_upper_bound(f, g, n, args.split_boxes)
    t0 = time.perf_counter()
    milp = milp_extremes(f, g, np.zeros(n), np.ones(n), args.milp_limit)
    t_milp = time.perf_counter() - t0
    milp_abs = max(milp["max"]["value"], -milp["min"]["value"])
    milp_x = milp["max" if milp["max"]["value"] >= -milp["min"]["value"] else "min"]["x"]
    o = res.worst
    agree = None
    if res.exact and all(milp[k]["status"] == "optimal" for k in milp):
        agree = bool(abs(o.max - milp["max"]["value"]) <= TOL
                     and abs(o.min - milp["min"]["value"]) <= TOL)
    share = monte_carlo_share(f, g, n, args.samples)
    patterns = sampled_patterns(f, g, n, args.samples // 4)
    change = next((c for c in res.changes if c.confirmed), None)
    w = o.witness
    out = {
        "pair": name,
        "rows": {"changed": changed.tolist(),
                 "detail": [{"row": int(i), "f": float(yf[i]), "g": float(yg[i])}
                            for i in changed],
                 "approved_f": int((yf >= 0).sum()), "approved_g": int((yg >= 0).sum()),
                 "max_abs": float(np.abs(yg - yf).max()),
                 "mean_abs_slope": slope_rows.tolist(),
                 "top_features": [names[k] for k in np.argsort(-slope_rows)[:3]]},
        "neighbourhoods": near,
        "domain": {"exact": res.exact, "status": res.status, "n_polytopes": res.n_polytopes,
                   "n_solves": res.n_solves, "seconds": t_diff,
                   "visited_max_abs": o.max_abs, "visited_max": o.max, "visited_min": o.min,
                   "confirmed": o.confirmed,
                   "witness": None if w is None else list(map(float, w)),
                   "witness_units": None if w is None else units(w),
                   "bound_whole_box": first, "bound_split": upper, "split_boxes": n_boxes,
                   "milp": milp, "milp_max_abs": milp_abs, "milp_s": t_milp,
                   "milp_witness_units": None if milp_x is None else units(milp_x),
                   "milp_agrees": agree,
                   "decisions_differ": res.decisions_differ,
                   "n_changed_polytopes": res.n_changed_polytopes,
                   "change_witness": None if change is None else list(map(float, change.x)),
                   "change_witness_units": None if change is None else units(change.x),
                   "volume_share": None if res.volume_share is None else list(res.volume_share),
                   "volume_method": res.volume_method,
                   "monte_carlo_share": list(share), "samples": args.samples,
                   "sampled_patterns": patterns, "pattern_samples": args.samples // 4,
                   "features": [q.to_dict() for q in res.features]},
    }
    what = "exact" if res.exact else f"{res.status}, visited only"
    print(f"{name:>9}: rows changed {len(changed)} {changed.tolist()[:12]}; rows' top "
          f"slopes {out['rows']['top_features']}", flush=True)
    print(f"{'':>9}  neighbourhoods (r = {args.radius}): max |g - f| = {near['max_abs']:.6g} "
          f"(row {near['row']}; MILP {near['milp_max_abs']:.6g}), {len(near['rows_differ'])} "
          f"rows' boxes hold a change, {near['n_polytopes']} polytopes, {near['seconds']:.1f} "
          f"s; top {near['top_features']}", flush=True)
    print(f"{'':>9}  domain: {res.n_polytopes} joint polytopes in {t_diff:.1f} s ({what}); "
          f"max |g - f| in [{o.max_abs:.6g}, {upper:.4g}] (MILP {milp_abs:.6g}, "
          f"{milp['max']['status']}/{milp['min']['status']}, {t_milp:.1f} s); decisions "
          f"differ {res.decisions_differ} on {res.n_changed_polytopes} visited polytopes; "
          f"Monte Carlo share {share[0]:.4g} [{share[1]:.4g}, {share[2]:.4g}]; at least "
          f"{patterns} joint polytopes ({args.samples // 4} samples)", flush=True)
    return out


def worst_point(r) -> np.ndarray:
    """The domain's worst point known: the MILP's (optimal) witness, else the traversal's."""
    d = r["domain"]
    m = d["milp"]
    key = "max" if m["max"]["value"] >= -m["min"]["value"] else "min"
    return np.asarray(m[key]["x"] if m[key]["x"] is not None else d["witness"])


def draw(out_dir, f, versions, results, Xs, names):
    """The per-feature slope differences, a slice per pair, the rows whose decision changes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    from polytrav.interface.plot.diff import save_diff_slice

    order = np.arange(len(names))[::-1]
    fig, axes = plt.subplots(1, len(results), figsize=(3.6 * len(results) + 1.6, 4.6),
                             sharey=True)
    axes = np.atleast_1d(axes)
    for ax, r in zip(axes, results):
        near = np.asarray(r["neighbourhoods"]["feature_max_abs"])
        mean = np.asarray(r["rows"]["mean_abs_slope"])
        ax.barh(order + 0.2, near, height=0.4, color="tab:blue",
                label="largest in the neighbourhoods (exact)")
        ax.barh(order - 0.2, mean, height=0.4, color="tab:orange", label="mean over the rows")
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_title(r["pair"], fontsize=10)
        ax.set_xlabel("|∂(g - f)/∂x_i| (logit per data range)", fontsize=8)
    axes[0].set_yticks(order, names)
    axes[0].legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12))
    fig.suptitle("How differently the new versions respond to each feature", fontsize=10)
    fig.tight_layout()
    fig.savefig(out_dir / "credit_diff_features.png", dpi=80)
    plt.close(fig)
    domain = Box(np.zeros(len(names)), np.ones(len(names)))
    for r in results:  # two slices: through the worst point; through a changing decision
        g = versions[r["pair"]]
        top = tuple(int(k) for k in np.argsort(-np.asarray(r["rows"]["mean_abs_slope"]))[:2])
        rows = r["rows"]["changed"]
        through = [("the worst point", worst_point(r))]
        if rows:
            through.append((f"applicant {rows[0]} (decision changes)", Xs[rows[0]]))
        elif r["domain"]["change_witness"] is not None:
            through.append(("a point where the decisions differ",
                            np.asarray(r["domain"]["change_witness"])))
        fig, axes = plt.subplots(1, len(through), figsize=(5.2 * len(through), 4.4))
        for ax, (what, point) in zip(np.atleast_1d(axes), through):
            tmp = out_dir / f".credit_diff_slice_{r['pair']}.png"
            save_diff_slice(f, g, domain, tmp, dims=top, point=point, resolution=160, dpi=80)
            ax.imshow(plt.imread(tmp))
            tmp.unlink()
            ax.set_axis_off()
            ax.set_title(f"{r['pair']}: through {what}", fontsize=9)
        fig.tight_layout()
        fig.savefig(out_dir / f"credit_diff_slice_{r['pair']}.png", dpi=80)
        plt.close(fig)
    fig, axes = plt.subplots(1, len(results), figsize=(3.6 * len(results), 3.6))
    for ax, r in zip(np.atleast_1d(axes), results):
        g = versions[r["pair"]]
        yf, yg = f.forward(Xs)[:, 0], g.forward(Xs)[:, 0]
        ch = np.zeros(len(Xs), bool)
        ch[r["rows"]["changed"]] = True
        ax.scatter(yf[~ch], yg[~ch], s=3, color="0.6", label="same decision")
        ax.scatter(yf[ch], yg[ch], s=12, color="tab:red",
                   label=f"decision changes ({ch.sum()})")
        ax.axhline(0, color="k", lw=0.6)
        ax.axvline(0, color="k", lw=0.6)
        ax.set_xlabel("f: the model's logit")
        ax.set_ylabel(f"g ({r['pair']}): logit")
        ax.set_title(f"{r['pair']}: {ch.sum()} of {len(Xs)} applicants change", fontsize=9)
        ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(out_dir / "credit_diff_rows.png", dpi=80)
    plt.close(fig)


def consistent(r) -> bool:
    """The run's checks on one pair: exact maxima equal the MILP's (the neighbourhoods'; the
    domain's when the traversal completed), the domain's MILP maximum lies inside polytrav's
    sound interval, and every row whose decision changed has a neighbourhood proven to
    hold a change."""
    near, dom = r["neighbourhoods"], r["domain"]
    inside = dom["visited_max_abs"] - TOL <= dom["milp_max_abs"] <= dom["bound_split"] + TOL
    boxes = {x["row"] for x in near["rows_differ"]}
    rows = [i for i in r["rows"]["changed"] if near.get("rows_checked", 10**9) > i]
    return bool(near["milp_agrees"] and dom["milp_agrees"] is not False and inside
                and not near["incomplete"] and set(rows) <= boxes)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hidden", type=int, nargs="+", default=[16, 16])
    ap.add_argument("--alpha", type=float, default=1.0)
    ap.add_argument("--prune", type=float, default=0.4,
                    help="share of the weights zeroed (smallest magnitudes, no retraining)")
    ap.add_argument("--pairs", nargs="+", default=list(PAIRS), choices=PAIRS)
    ap.add_argument("--time-limit", type=float, default=60.0,
                    help="seconds for each pair's joint traversal of the whole 14-D domain")
    ap.add_argument("--radius", type=float, default=0.05,
                    help="the neighbourhoods' half-width (share of each feature's range)")
    ap.add_argument("--rows", type=int, default=None, help="neighbourhoods of the first N rows")
    ap.add_argument("--split-boxes", type=int, default=4096,
                    help="boxes of the difference bounds' split of the domain")
    ap.add_argument("--samples", type=int, default=1_000_000,
                    help="uniform samples of the Monte Carlo share estimate")
    ap.add_argument("--milp-limit", type=float, default=120.0)
    ap.add_argument("--replot", action="store_true",
                    help="only redraw the figures from --json's recorded results")
    ap.add_argument("--quick", action="store_true", help="smoke run: short limits, no figures")
    ap.add_argument("--out-dir", type=Path, default=ROOT / "docs" / "results")
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" /
                    "credit_diff.json")
    args = ap.parse_args(argv)
    if args.quick:
        args.time_limit, args.milp_limit, args.rows = 5.0, 20.0, 20
        args.split_boxes, args.samples = 64, 100_000
    X, y, lo, hi = load_credit()
    names = list(X.columns)
    Xs = (X.to_numpy() - lo) / (hi - lo)
    _, net, held = train(Xs, y, tuple(args.hidden), args.alpha)
    f = Network.from_arrays(net.weights, net.biases, input_names=names)
    versions = new_versions(f, Xs, y, tuple(args.hidden), args.alpha, args.prune)
    acc = {k: float(((g.forward(Xs)[:, 0] >= 0) == (y == 1)).mean())
           for k, g in {"f": f, **versions}.items()}
    print(f"German credit: {len(Xs)} applicants; accuracy on all rows {acc}", flush=True)
    if args.replot:  # the figures again from the recorded results (same models: seeded)
        results = json.loads(args.json.read_text())["pairs"]
        draw(args.out_dir, f, versions, results, Xs, names)
        return 0
    results = [compare(k, f, versions[k], Xs, names, lo, hi, args) for k in args.pairs]
    wrong = [r["pair"] for r in results if not consistent(r)]
    settings = argparse.Namespace(**{k: relative(str(v)) if isinstance(v, Path) else v
                                      for k, v in vars(args).items()})
    summary = {**header("credit_diff", settings, argv), "accuracy_all_rows": acc,
               "held_out_accuracy_f": held, "prune": args.prune,
               "units": {n: FEATURES[n][1] for n in names}, "pairs": results,
               "milp_disagrees": wrong}
    if not args.quick:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(summary, indent=1, default=str))
        args.out_dir.mkdir(parents=True, exist_ok=True)
        draw(args.out_dir, f, versions, results, Xs, names)
    for p in wrong:
        print(f"WRONG: {p}: a check of consistent() failed (exact maxima against the MILP, "
              "the MILP inside the sound interval, changed rows' neighbourhoods)",
              file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
