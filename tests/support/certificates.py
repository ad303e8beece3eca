"""Certificate files (docs/proofs.md) taken apart and put back together by the proof tests,
without the recorder: ``proof.json`` and ``arrays.npz`` in a zip."""
from __future__ import annotations

import io
import json
import zipfile

import numpy as np


def read_certificate(path) -> tuple[dict, dict[str, np.ndarray]]:
    """A certificate's header and its arrays (copies)."""
    with zipfile.ZipFile(path) as z:
        header = json.loads(z.read("proof.json"))
        with np.load(io.BytesIO(z.read("arrays.npz"))) as npz:
            arrays = {k: npz[k].copy() for k in npz.files}
    return header, arrays


def npz_bytes(**arrays) -> bytes:
    """``arrays`` as the bytes of an ``.npz`` member."""
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def write_certificate(path, header: dict, arrays: dict):
    """A certificate of ``header`` and ``arrays`` at ``path`` (returned)."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("proof.json", json.dumps(header))
        z.writestr("arrays.npz", npz_bytes(**arrays))
    return path


def perturbed_pair(folder, lower, upper, seed: int = 11, scale: float = 0.02):
    """``f`` (2-8-8-2, random) and ``g`` (its weights and biases moved by ``scale``) saved as
    ``folder/f.onnx`` and ``folder/g.onnx``, read back; with their largest ``|g_j - f_j|``
    over the box (exact: ``polytrav.diff``). Returns ``(f, g, top)``."""
    import polytrav
    from ctrl_c import save_mlp_onnx
    from polytrav import Network
    from polytrav.testing.reference import random_net

    f0 = random_net(seed, 2, [8, 8], n_out=2)
    rng = np.random.default_rng(seed)
    save_mlp_onnx(f0.weights, f0.biases, folder / "f.onnx")
    save_mlp_onnx([W * (1 + rng.normal(size=W.shape) * scale) for W in f0.weights],
                  [b * (1 + rng.normal(size=b.shape) * scale) for b in f0.biases],
                  folder / "g.onnx")
    f, g = (Network.from_onnx(folder / name) for name in ("f.onnx", "g.onnx"))
    return f, g, polytrav.diff(f, g, polytrav.Box(lower, upper)).max_abs


def diff_claim_header(folder, header: dict, eps: float, lower, upper, g: str = "g.onnx") -> dict:
    """``header`` with the checker's own digests of the ε-equivalence claim ``eps`` over the
    box on ``folder/f.onnx`` and ``folder/g``: a mutant then fails only by its numbers."""
    from polytrav import Network
    from polytrav.proof.check import (
        diff_claim,
        joint_layers,
        network_digest,
        property_digest,
    )

    nets = [Network.from_onnx(folder / n) for n in ("f.onnx", g)]
    layers = joint_layers(*[[(np.asarray(W, float), np.asarray(b, float))
                             for W, b in zip(n.weights, n.biases)] for n in nets])
    joint = Network.from_arrays([W for W, _ in layers], [b for _, b in layers])
    return {**header, "network_sha256": network_digest(joint),
            "property_sha256": property_digest(diff_claim(len(lower), lower, upper, eps))}


#: The values a random mutant writes into a number: zeros, tiny, huge, negative, inf, NaN.
MUTANT_VALUES = [0.0, 1e-300, 0.5, 1.0, 1e8, -1.0, np.inf, np.nan]


def random_mutant(arrays: dict, rng, kinds) -> dict:
    """A copy of a certificate's arrays with one to three random changes to its first case:
    a multiplier, a row of multipliers scaled, a split's value, a node's kind (one of
    ``kinds``), a child, a split's coordinate."""
    a = {k: v.copy() for k, v in arrays.items()}
    n = len(a["case0_kind"])
    for _ in range(rng.integers(1, 4)):
        i = int(rng.integers(n))
        what = rng.integers(6)
        if what == 0:
            a["case0_lam"][i, rng.integers(a["case0_lam"].shape[1])] = rng.choice(MUTANT_VALUES)
        elif what == 1:
            a["case0_lam"][i] *= rng.uniform(0, 10)
        elif what == 2:
            a["case0_at"][i] = rng.choice([rng.uniform(-1, 1), *MUTANT_VALUES])
        elif what == 3:
            a["case0_kind"][i] = rng.choice(kinds)
        elif what == 4:
            a[rng.choice(["case0_left", "case0_right"])][i] = rng.integers(-1, n + 1)
        else:
            a["case0_dim"][i] = rng.integers(-1, 4)
    return a
