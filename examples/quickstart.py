"""Quickstart: the linear regions of a real ACAS Xu network around one point.

Loads ACAS Xu network 1_1 (ONNX, from ../shared/data next to the repo), traverses every
linear region (local polytope) inside a small box of normalised inputs, and prints the first
few polytopes with their local linear models.

    python examples/quickstart.py
"""
from pathlib import Path

import numpy as np

from polytrav import Box, Network, traverse

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
MODEL = DATA / "acasxu" / "onnx" / "ACASXU_run2a_1_1_batch_2000.onnx"

if not MODEL.exists():
    raise SystemExit(f"ACAS Xu data not found at {MODEL}; clone shared/ next to the repo")

net = Network.from_onnx(MODEL)
print(f"network: {net}")

center = np.array([-0.301041984, 0.0, 0.496690162, 0.4, 0.4])  # normalised inputs
region = Box(center - 0.005, center + 0.005)
run = traverse(net, region)

np.set_printoptions(precision=3, suppress=True, linewidth=110)
polytopes = []
for p in run:
    polytopes.append(p)
    if p.index < 3:
        print(f"\npolytope {p.index}: {sum(int(c.sum()) for c in p.code)} of {net.n_neurons} neurons on,"
              f" Chebyshev radius {p.radius:.3g} (normalised)")
        print(f"  interior point  {p.interior_point}")
        print(f"  local model     outputs = W @ x + c with\n  W =\n{p.W}\n  c = {p.c}")
        print(f"  check           W @ x + c = {p.W @ p.interior_point + p.c}"
              f"  network(x) = {net.forward(p.interior_point)}")

s = run.stats
print(f"\n{s.polytopes} polytopes in the box, traversal {run.status}: {s.lps} LPs "
      f"({s.lps_per_polytope:.2f} per polytope), {s.total_time:.2f} s "
      f"({s.lp_time:.2f} s in LPs)")
advisories = np.array([np.argmin(net.forward(p.interior_point)) for p in polytopes])
names = ["COC", "weak left", "weak right", "strong left", "strong right"]
print("advisory at the interior points:",
      {names[a]: int((advisories == a).sum()) for a in np.unique(advisories)})
