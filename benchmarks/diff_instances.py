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
    python benchmarks/diff_instances.py OUT --small 10       # small random pairs instead

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
    return np.format_float_positional(float(v), unique=True, trim="0")


def query(lo, hi, eps: float, in_shape=(1, 1, 1, 5), outputs: int = 5) -> str:
    """The VNN-LIB 2.0 query ``|Y_g[j] - Y_f[j]| > eps`` for some ``j``, inputs tied equal,
    the box on ``X_f`` (an input of shape ``in_shape``, flat index last; outputs ``[1, n]``)."""
    n = int(np.prod(in_shape))
    shape = ", ".join(map(str, in_shape))
    at = "0," * (len(in_shape) - 1)
    lines = ["(vnnlib-version <2.0>)",
             f"(declare-network f (declare-input X_f real [{shape}]) "
             f"(declare-output Y_f real [1, {outputs}]))",
             f"(declare-network g (isomorphic-to f) (declare-input X_g real [{shape}]) "
             f"(declare-output Y_g real [1, {outputs}]))"]
    lines += [f"(assert (>= X_f[{at}{i}] {decimal(lo[i])})) (assert (<= X_f[{at}{i}] {decimal(hi[i])}))"
              for i in range(n)]
    lines += [f"(assert (== X_g[{at}{i}] X_f[{at}{i}]))" for i in range(n)]
    terms = [f"(> (- Y_g[0,{j}] Y_f[0,{j}]) {decimal(eps)}) (< (- Y_g[0,{j}] Y_f[0,{j}]) {decimal(-eps)})"
             for j in range(outputs)]
    lines.append("(assert (or " + " ".join(terms) + "))")
    return "\n".join(lines) + "\n"


def write_small_onnx(Ws, bs, path: Path) -> None:
    """A small network as ONNX (float32 MatMul + Add + Relu; input and output ``[1, n]``)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes, init, x = [], [], "X"
    for k, (W, b) in enumerate(zip(Ws, bs)):
        init += [numpy_helper.from_array(np.asarray(W.T, np.float32), f"W{k}"),
                 numpy_helper.from_array(np.asarray(b, np.float32), f"B{k}")]
        nodes += [helper.make_node("MatMul", [x, f"W{k}"], [f"m{k}"]),
                  helper.make_node("Add", [f"m{k}", f"B{k}"], [f"z{k}"])]
        x = f"z{k}"
        if k < len(Ws) - 1:
            nodes.append(helper.make_node("Relu", [x], [f"a{k}"]))
            x = f"a{k}"
    nodes[-1].output[0] = "Y"
    graph = helper.make_graph(
        nodes, "pair", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, Ws[0].shape[1]])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, Ws[-1].shape[0]])], init)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))


def small_pairs(out: Path, count: int, seed: int) -> list[dict]:
    """``count`` small pairs for the MILP checks: ``f`` a random 5-12-12-3 network (float32
    weights), ``g`` a perturbed (1 % noise) or pruned (a quarter of the hidden neurons
    removed) copy, a random box in ``[-1, 1]^5``; per pair the queries at 0.8 and 1.25 times
    the sampled largest difference."""
    rows = []
    for i in range(count):
        rng = np.random.default_rng([seed, 1000 + i])
        sizes = [5, 12, 12, 3]
        Ws = [rng.standard_normal((m, n)) / np.sqrt(n) for n, m in zip(sizes, sizes[1:])]
        bs = [0.3 * rng.standard_normal(m) for m in sizes[1:]]
        kind = "perturb" if i % 2 else "prune"
        if kind == "perturb":
            Vs = [W * (1 + 0.01 * rng.standard_normal(W.shape)) for W in Ws]
            cs = [b * (1 + 0.01 * rng.standard_normal(b.shape)) for b in bs]
        else:
            Vs, cs = [W.copy() for W in Ws], [b.copy() for b in bs]
            for k in range(len(Vs) - 1):
                gone = rng.random(Vs[k].shape[0]) < 0.25
                gone[rng.integers(Vs[k].shape[0])] = True  # at least one
                Vs[k][gone], cs[k][gone], Vs[k + 1][:, gone] = 0.0, 0.0, 0.0
        f32 = lambda A: [a.astype(np.float32).astype(np.float64) for a in A]  # noqa: E731
        Ws, bs, Vs, cs = f32(Ws), f32(bs), f32(Vs), f32(cs)
        name = f"s{i}"
        write_small_onnx(Ws, bs, out / f"{name}_f.onnx")
        write_small_onnx(Vs, cs, out / f"{name}_{kind}.onnx")
        lo = rng.uniform(-1.0, 0.0, 5)
        hi = lo + rng.uniform(0.3, 1.0, 5)
        X = rng.uniform(lo, hi, (CHECK_SAMPLES, 5))

        def forward(Ws, bs, X):
            for k, (W, b) in enumerate(zip(Ws, bs)):
                X = X @ W.T + b
                X = X if k == len(Ws) - 1 else np.maximum(X, 0.0)
            return X
        seen = float(np.abs(forward(Vs, cs, X) - forward(Ws, bs, X)).max())
        for r in (0.8, 1.25):
            eps = float(f"{r * seen:.3g}")
            q = out / f"{name}_{kind}_small_eps{eps:g}.vnnlib"
            q.write_text(query(lo, hi, eps, in_shape=(1, 5), outputs=3))
            rows.append({"query": q.name, "f": f"{name}_f.onnx", "g": f"{name}_{kind}.onnx",
                         "network": name, "kind": kind, "box": "small", "epsilon": eps,
                         "sampled": f"{seen:.6g}"})
    return rows


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
    ap.add_argument("--small", type=int, default=0,
                    help="instead: this many small random pairs (5-12-12-3), for MILP checks")
    args = ap.parse_args(argv)
    names = args.networks or [f"{a}_{b}" for a in range(1, 6) for b in range(1, 10)]
    args.out.mkdir(parents=True, exist_ok=True)
    if args.small:
        names = []
    rows = small_pairs(args.out, args.small, args.seed) if args.small else []
    every = {key: property_box(prop) for key, prop in BOXES.items()}
    union = (np.min([lo for lo, _ in every.values()], axis=0),  # the fit's points: every box
             np.max([hi for _, hi in every.values()], axis=0))
    boxes = {key: every[key] for key in args.boxes}
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
