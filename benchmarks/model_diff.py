"""``polytrav.diff`` on an ACAS Xu network against a perturbed copy of itself (issue 46, item 1).

``f`` is ACAS Xu network ``--network`` (default 1_1); ``g`` is ``f`` with every weight plus
``--noise`` (default 1e-3) times a standard normal draw (seed 0). The box is the centre of
ACAS Xu property 1's input box, scaled by ``--scale`` per side. Measured in one run, medians
of ``--repeats`` after a warm-up:

* ``traverse``: the joint network's polytopes alone (``polytrav.traverse``), the baseline;
* ``extremes``: ``diff(..., decisions=False)``: the exact extremes of ``g - f`` per output;
* ``full``: ``diff(...)``: also decision changes and their exact volume share (qhull, 5-D);
* ``verdict``: ``diff(..., epsilon=0.05, verdict_only=True)``.

Checks, each row: the sampled ``|g - f|`` (``--samples`` uniform points) never above the exact
maximum, every witness confirmed, and the exact share of the box where the decisions (argmax)
differ against the sampled share (standard error quoted).

    python benchmarks/model_diff.py --scale 0.02 --out benchmarks/results/model_diff.json
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import Run, acas_onnx, measure, parser  # noqa: E402

CENTRE = np.array([0.639928885, 0.0, 0.0, 0.475, -0.475])  # property 1's box centre
HALF = np.array([0.039928885, 0.5, 0.5, 0.025, 0.025])


def main(argv=None) -> None:
    ap = parser(__doc__, repeats=3, warmup=1)
    ap.add_argument("--network", default="1_1")
    ap.add_argument("--noise", type=float, default=1e-3)
    ap.add_argument("--scale", type=float, nargs="+", default=[0.02])
    ap.add_argument("--samples", type=int, default=200_000)
    args = ap.parse_args(argv)
    import polytrav
    from polytrav import Box, Network
    from polytrav.host.diff import joint_network

    f = Network.from_onnx(acas_onnx(args.network))
    rng = np.random.default_rng(0)
    g = Network.from_arrays([W + args.noise * rng.standard_normal(W.shape) for W in f.weights],
                            list(f.biases))
    run = Run("model_diff", args)
    for scale in args.scale:
        box = Box(CENTRE - scale * HALF, CENTRE + scale * HALF)
        joint = joint_network(f, g)
        variants = {
            "traverse": lambda: sum(1 for _ in polytrav.traverse(joint, box)),
            "extremes": lambda: polytrav.diff(f, g, box, decisions=False),
            "full": lambda: polytrav.diff(f, g, box),
            "verdict": lambda: polytrav.diff(f, g, box, epsilon=0.05, verdict_only=True),
        }
        timings = {k: measure(fn, args.repeats, args.warmup) for k, fn in variants.items()}
        base = timings["traverse"].median
        full = timings["full"].result
        X = np.random.default_rng(1).uniform(box.lower, box.upper, (args.samples, 5))
        Yf, Yg = f.forward(X), g.forward(X)
        sampled_max = np.abs(Yg - Yf).max(axis=0)
        share = float(np.mean(np.argmax(Yf, 1) != np.argmax(Yg, 1)))
        row = {"case": f"acas_{args.network} scale {scale}", "polytopes": timings["traverse"].result,
               "max_abs": [o.max_abs for o in full.outputs],
               "sampled_max_below_exact": bool(np.all(sampled_max <= [o.max_abs + 1e-12
                                                                       for o in full.outputs])),
               "witnesses_confirmed": all(o.confirmed for o in full.outputs),
               "share_exact": full.volume_share[0], "share_sampled": share,
               "share_sampled_se": float(np.sqrt(share * (1 - share) / args.samples)),
               "verdict": timings["verdict"].result.verdict.value,
               "verdict_polytopes": timings["verdict"].result.n_polytopes}
        for k, t in timings.items():
            row[f"{k}_median"] = t.median
            row[f"{k}_times"] = t.times
            row[f"{k}_ratio"] = t.median / base
        run.add(row)
    run.write(args.out)


if __name__ == "__main__":
    main()
