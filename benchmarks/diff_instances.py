"""Two-network ACAS Xu instances, built reproducibly: each network against modified copies of itself.

Per ACAS Xu network ``f`` (``../shared/data/acasxu/onnx``, the 45 networks) two copies ``g``,
written as ONNX files with ``f``'s graph and only the weights changed:

* ``prune``: the ``--prune`` neurons of hidden layer ``--layer`` with the smallest
  magnitude (incoming row times outgoing column, L1) among those active somewhere on the
  samples removed, and the next layer re-fitted
  by least squares to ``f``'s pre-activations there on ``--samples`` points of the
  union of the property boxes (so ``g`` stays close to ``f``);
* ``perturb``: every weight and bias ``w`` moved by ``--sigma * |w| * N(0, 1)``.

Per pair, per property box (ACAS Xu properties 1 (= 2), 3 and 4: the competition's kind of
box) and per ``--epsilons`` value, a VNN-LIB 2.0 query: networks ``f`` and ``g``
(``isomorphic-to f``), inputs tied equal, the box on ``X_f``, and the unsafe set
``|Y_g[j] - Y_f[j]| > eps`` for some output ``j`` (a disjunction of ten comparisons).
``instances.csv`` lists ``query, f, g, network, kind, box, epsilon, sampled`` (``sampled``:
the largest ``|g_j - f_j|`` seen on 20 000 points of the box, a lower bound of the true
one: ``eps`` below it is ``sat``).

Everything goes into the folder given on the command line (never into the repository);
the same seed gives the same files.

    python benchmarks/diff_instances.py OUT                      # 45 networks
    python benchmarks/diff_instances.py OUT --networks 1_1 3_3 --epsilons 0.02 0.05
    python benchmarks/diff_instances.py OUT --boxes p3 --epsilons 0.05 --relative 0.8 1.25

``--relative``: also ε at multiples of each pair's sampled largest difference on the box (below
1: ``sat``, a sampled point exceeds it; just above 1: a tight ``unsat``, or a ``sat`` the
samples missed). ``--boxes``: only those boxes' queries (the copies are the same: every
box's points are in the pruned copy's fit).
"""
from __future__ import annotations

import argparse
import csv
import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import ACAS  # noqa: E402

ONNX = ACAS / "onnx"
VNNLIB = ACAS / "vnnlib"
#: The property boxes used (property 2's box is property 1's).
BOXES = {"p1": 1, "p3": 3, "p4": 4}
#: Points per box for the sampled largest difference.
CHECK_SAMPLES = 20_000


def property_box(prop: int) -> tuple[np.ndarray, np.ndarray]:
    """The input box of an ACAS Xu VNN-LIB 1.0 property (its ``X_i`` bounds)."""
    lo, hi = np.full(5, -np.inf), np.full(5, np.inf)
    text = (VNNLIB / f"prop_{prop}.vnnlib").read_text()
    for op, i, value in re.findall(r"\(assert \((<=|>=) X_(\d) ([-+0-9.eE]+)\)\)", text):
        (hi if op == "<=" else lo)[int(i)] = float(value)
    return lo, hi


def read_layers(model) -> list[tuple[str, str]]:
    """The (weight, bias) initializer names of each MatMul + Add layer, in order."""
    from onnx import numpy_helper  # noqa: F401

    names = []
    for node in model.graph.node:
        if node.op_type == "MatMul":
            names.append([node.input[1], None])
        elif node.op_type == "Add" and names and names[-1][1] is None:
            names[-1][1] = node.input[1]
    return [tuple(n) for n in names]


def arrays(model) -> dict:
    from onnx import numpy_helper

    return {i.name: numpy_helper.to_array(i).astype(np.float64) for i in model.graph.initializer}


def forward(params: dict, layers, X: np.ndarray, upto: int | None = None) -> np.ndarray:
    """``f``'s graph in float64 (``x - AvgImg``, then ``relu(x W + B)`` per layer, the last
    affine); ``upto``: the pre-activation of that layer instead."""
    a = X - params["input_AvgImg"].reshape(-1)
    for k, (w, b) in enumerate(layers):
        z = a @ params[w] + params[b]
        if k == upto:
            return z
        a = z if k == len(layers) - 1 else np.maximum(z, 0.0)
    return a


def pruned(params, layers, layer: int, count: int, X: np.ndarray) -> dict:
    """``count`` neurons of hidden layer ``layer`` removed, layer ``layer + 1`` re-fitted."""
    out = dict(params)
    (w, b), (w2, b2) = layers[layer], layers[layer + 1]
    score = np.abs(params[w]).sum(axis=0) * np.abs(params[w2]).sum(axis=1)
    alive = (forward(params, layers, X, upto=layer) > 0).any(axis=0)  # removing a dead one
    score = np.where(alive, score, np.inf)                              # changes nothing
    gone = np.argsort(score)[:count]
    W, B = params[w].copy(), params[b].copy()
    W[:, gone], B[gone] = 0.0, 0.0
    out[w], out[b] = W, B
    A = np.maximum(forward(out, layers, X, upto=layer), 0.0)  # g's activations there
    target = forward(params, layers, X, upto=layer + 1)  # f's next pre-activations
    keep = np.setdiff1d(np.arange(W.shape[1]), gone)
    design = np.hstack([A[:, keep], np.ones((len(X), 1))])
    coef, *_ = np.linalg.lstsq(design, target, rcond=None)
    W2 = np.zeros_like(params[w2])
    W2[keep] = coef[:-1]
    out[w2], out[b2] = W2, coef[-1]
    return out


def perturbed(params, layers, sigma: float, rng) -> dict:
    out = dict(params)
    for w, b in layers:
        for name in (w, b):
            out[name] = params[name] * (1.0 + sigma * rng.standard_normal(params[name].shape))
    return out


def write_model(model, params: dict, path: Path) -> None:
    from onnx import numpy_helper

    copy = type(model)()
    copy.CopyFrom(model)
    for init in copy.graph.initializer:
        init.CopyFrom(numpy_helper.from_array(params[init.name].astype(np.float32), init.name))
    path.write_bytes(copy.SerializeToString())


def decimal(v: float) -> str:
    """``v`` as a VNN-LIB (SMT-LIB) decimal: no exponent."""
    return np.format_float_positional(float(v), unique=True, trim="-")


def query(lo, hi, eps: float) -> str:
    lines = ["(vnnlib-version <2.0>)",
             "(declare-network f (declare-input X_f real [1, 1, 1, 5]) "
             "(declare-output Y_f real [1, 5]))",
             "(declare-network g (isomorphic-to f) (declare-input X_g real [1, 1, 1, 5]) "
             "(declare-output Y_g real [1, 5]))"]
    lines += [f"(assert (>= X_f[0,0,0,{i}] {decimal(lo[i])})) (assert (<= X_f[0,0,0,{i}] {decimal(hi[i])}))"
              for i in range(5)]
    lines += [f"(assert (== X_g[0,0,0,{i}] X_f[0,0,0,{i}]))" for i in range(5)]
    terms = [f"(> (- Y_g[0,{j}] Y_f[0,{j}]) {decimal(eps)}) (< (- Y_g[0,{j}] Y_f[0,{j}]) {decimal(-eps)})"
             for j in range(5)]
    lines.append("(assert (or " + " ".join(terms) + "))")
    return "\n".join(lines) + "\n"


def sampled_difference(f_params, g_params, layers, lo, hi, rng) -> float:
    X = rng.uniform(lo, hi, (CHECK_SAMPLES, 5))
    return float(np.abs(forward(g_params, layers, X) - forward(f_params, layers, X)).max())


def main(argv=None) -> int:
    import onnx

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="folder for the ONNX and VNN-LIB files (created)")
    ap.add_argument("--networks", nargs="*", help="e.g. 1_1 3_3 (default: all 45)")
    ap.add_argument("--epsilons", nargs="*", type=float, default=[0.01, 0.02, 0.05])
    ap.add_argument("--relative", nargs="*", type=float, default=[],
                    help="also eps = these multiples of the sampled largest difference, per pair "
                         "and box (3 significant digits): below 1 sat, just above 1 tight")
    ap.add_argument("--boxes", nargs="*", choices=sorted(BOXES), default=sorted(BOXES))
    ap.add_argument("--prune", type=int, default=3, help="neurons removed (default 3)")
    ap.add_argument("--layer", type=int, default=2, help="hidden layer pruned, from 0 (default 2)")
    ap.add_argument("--sigma", type=float, default=0.002,
                    help="relative weight perturbation (default 0.002)")
    ap.add_argument("--samples", type=int, default=5000, help="least-squares points (default 5000)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    names = args.networks or [f"{a}_{b}" for a in range(1, 6) for b in range(1, 10)]
    args.out.mkdir(parents=True, exist_ok=True)
    every = {key: property_box(prop) for key, prop in BOXES.items()}
    union = (np.min([lo for lo, _ in every.values()], axis=0),  # the fit's points: every box
             np.max([hi for _, hi in every.values()], axis=0))
    boxes = {key: every[key] for key in args.boxes}
    rows = []
    for i, name in enumerate(names):
        rng = np.random.default_rng([args.seed, i])
        source = ONNX / f"ACASXU_run2a_{name}_batch_2000.onnx"
        model = onnx.load(source)
        layers = read_layers(model)
        params = arrays(model)
        f_path = args.out / f"{name}_f.onnx"
        f_path.write_bytes(source.read_bytes())
        X = np.vstack([rng.uniform(lo, hi, (args.samples // len(every), 5))
                       for lo, hi in every.values()] + [rng.uniform(*union, (args.samples, 5))])
        copies = {"prune": pruned(params, layers, args.layer, args.prune, X),
                  "perturb": perturbed(params, layers, args.sigma, rng)}
        for kind, g_params in copies.items():
            g_path = args.out / f"{name}_{kind}.onnx"
            write_model(model, g_params, g_path)
            g32 = {k: v.astype(np.float32).astype(np.float64) for k, v in g_params.items()}
            f32 = {k: v.astype(np.float32).astype(np.float64) for k, v in params.items()}
            for box, (lo, hi) in boxes.items():
                seen = sampled_difference(f32, g32, layers, lo, hi, rng)
                relative = [float(f"{r * seen:.3g}") for r in args.relative]
                for eps in list(args.epsilons) + relative:
                    q = args.out / f"{name}_{kind}_{box}_eps{eps:g}.vnnlib"
                    q.write_text(query(lo, hi, eps))
                    rows.append({"query": q.name, "f": f_path.name, "g": g_path.name,
                                 "network": name, "kind": kind, "box": box, "epsilon": eps,
                                 "sampled": f"{seen:.6g}"})
        print(f"{name}: done", file=sys.stderr)
    with open(args.out / "instances.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"{len(rows)} instances in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
