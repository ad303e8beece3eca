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
