"""The paper's Figures 1, 3 and 4 on networks this example trains itself (PyTorch).

Trains two small ReLU classifiers on the paper's 2-D grid (checkerboard) dataset, loads them
with ``Network.from_torch`` and draws:

* ``figure1.png``: the partition of [-1, 1]^2 into local polytopes, hyperplanes coloured by
  level (layer), each polytope's local decision boundary dashed (paper Figure 1);
* ``figure3.png``: the hierarchical traversal: the polytopes in visit order and the BFS tree
  of discoveries (paper Figure 3);
* ``figure4.png``: analyses drawn in (paper Figure 4): the output range's arg-min and arg-max,
  the L1, L2 and L-inf counterfactuals of one point with their norm balls, and the polytopes
  where the output decreases in x1 (monotonicity violations, hatched red).

    python examples/paper_figures.py --out figures
"""
from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from polytrav import Box, Network, analyze, traverse  # noqa: E402
from polytrav.interface.plot import partition  # noqa: E402


def grid_dataset(n: int = 20):
    """The checkerboard of 4 x 4 squares on [-1, 1]^2 (labels 0/1)."""
    g = np.linspace(-1, 1, n)
    X = np.array([(a, b) for a in g for b in g])
    y = (np.floor((X[:, 0] + 1) * 2).clip(0, 3) + np.floor((X[:, 1] + 1) * 2).clip(0, 3)) % 2
    return torch.tensor(X, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)


def train(widths: list[int], epochs: int, seed: int = 0) -> Network:
    torch.manual_seed(seed)
    layers, n = [], 2
    for w in widths:
        layers += [torch.nn.Linear(n, w), torch.nn.ReLU()]
        n = w
    model = torch.nn.Sequential(*layers, torch.nn.Linear(n, 1))
    X, y = grid_dataset()
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    for _ in range(epochs):
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(model(X)[:, 0], y)
        loss.backward()
        opt.step()
    return Network.from_torch(model)


def figure3(net: Network, region: Box):
    """Figure 3's axes: the polytopes numbered in visit order, with arrows from each to those
    it discovered. The tree is the LP traversal's (each polytope's parent); subdivision, the
    default strategy on a box, finds the same polytopes without one."""
    tree = list(traverse(net, region, strategy="hierarchical"))
    ax = partition(net, region, polytopes=tree, bfs_tree=True, decision=False)
    for p in tree:
        ax.text(*p.interior_point, str(p.index), fontsize=6, ha="center", va="center")
    ax.set_title(f"Figure 3: hierarchical BFS of {len(tree)} polytopes, visit order and "
                 "discovery tree")
    return ax


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=Path("figures"))
    ap.add_argument("--epochs", type=int, default=2000)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    region = Box([-1, -1], [1, 1])

    net = train([8, 8], args.epochs)
    polytopes = list(traverse(net, region))
    ax = partition(net, region, polytopes=polytopes)
    ax.set_title(f"Figure 1: {len(polytopes)} local polytopes of a 2-8-8-1 network")
    ax.figure.savefig(args.out / "figure1.png", dpi=110, bbox_inches="tight")
    plt.close(ax.figure)

    ax = figure3(net, region)
    ax.figure.savefig(args.out / "figure3.png", dpi=110, bbox_inches="tight")
    plt.close(ax.figure)

    small = train([10, 10], args.epochs, seed=2)
    x0 = [0.1, 0.3]
    fig, axes = plt.subplots(1, 3, figsize=(15, 5))
    for ax, norm in zip(axes, (1, 2, np.inf)):
        report = analyze(small, region, [
            "output_range",
            {"name": "counterfactual", "x0": x0, "norm": norm},
            {"name": "monotonicity", "feature": 0, "direction": "increasing"},
        ])
        partition(small, region, ax=ax, report=report)
        dist = report["counterfactual"].value
        ax.set_title(f"Figure 4: L{'inf' if norm == np.inf else norm} counterfactual "
                     f"at distance {dist:.3f}" if dist is not None else "no counterfactual")
    fig.savefig(args.out / "figure4.png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    print(f"wrote {', '.join(str(args.out / f) for f in ('figure1.png', 'figure3.png', 'figure4.png'))}")


if __name__ == "__main__":
    main()
