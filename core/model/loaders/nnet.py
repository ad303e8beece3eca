"""Reader for the Reluplex / Stanford ``.nnet`` text format.

Lines starting with ``//`` are comments. Then come, one per line and comma separated: the
number of weight layers, input size, output size and largest layer size; the size of every
layer (input included); a "symmetric" flag (ignored); the minimum and the maximum of each raw
input; the input means followed by the output mean; the input ranges followed by the output
range. Each layer follows as ``out`` lines of ``in`` weights (row ``i`` holds neuron ``i``'s
incoming weights, so ``W`` is ``(out, in)``), then ``out`` lines of one bias. A ReLU follows
every layer except the last.

The format has no field for input names. polytrav reads them from an optional comment line
``// input names: rho, theta, psi, v_own, v_int`` (one comma-separated name per input, case
of ``input names`` ignored) and otherwise leaves ``Network.input_names`` as ``None``, as for
the ACAS Xu files, whose comments hold only the licence and author.

The file's model clips raw inputs to ``[min, max]``, normalises them with
``x_norm = (x - mean) / range`` and returns ``y_raw = y_norm * range_out + mean_out``. The
clipping is not affine; the loaders record it as the network's ``input_domain`` instead.
"""

from __future__ import annotations

import re
from os import PathLike
from pathlib import Path

import numpy as np

from polytrav.vocabulary.errors import ConfigError, NetworkError
from polytrav.model.network import Network

__all__ = ["load_nnet"]

_NORMALIZATIONS = ("fold", "none")
_NAMES = re.compile(r"^\s*//\s*input\s+names\s*:(.*)$", re.IGNORECASE)


class _Reader:
    """The non-comment lines of an ``.nnet`` file, read one at a time with their line numbers."""

    def __init__(self, label: str, text: str):
        self.label = label
        self._lines = [
            (number, line)
            for number, line in enumerate(text.splitlines(), start=1)
            if line.strip() and not line.lstrip().startswith("//")
        ]
        self._next = 0

    def error(self, number: int, message: str) -> NetworkError:
        return NetworkError(f"{self.label}: line {number}: {message}")

    def read(self, counts: int | tuple[int, ...], what: str) -> tuple[np.ndarray, int]:
        """Parse the next line as floats; it must hold one of ``counts`` values."""
        counts = (counts,) if isinstance(counts, int) else counts
        expected = " or ".join(str(c) for c in counts)
        if self._next >= len(self._lines):
            last = self._lines[-1][0] if self._lines else 0
            raise NetworkError(
                f"{self.label}: file ends after line {last} but {what} ({expected} values) "
                "should follow; the file is truncated"
            )
        number, line = self._lines[self._next]
        self._next += 1
        tokens = [t.strip() for t in line.split(",")]
        if tokens[-1] == "":
            tokens.pop()  # the format ends every line with a comma
        values = []
        for token in tokens:
            try:
                values.append(float(token))
            except ValueError:
                raise self.error(
                    number, f"expected {what}, but found the non-numeric value {token!r}"
                ) from None
        if len(values) not in counts:
            raise self.error(number, f"expected {expected} values ({what}), found {len(values)}")
        return np.array(values, dtype=np.float64), number

    def check_end(self, n_layers: int) -> None:
        if self._next < len(self._lines):
            number = self._lines[self._next][0]
            raise self.error(
                number,
                f"unexpected data after the last layer (the header declares {n_layers} layers)",
            )


def _read_header(reader: _Reader) -> tuple[list[int], dict[str, np.ndarray]]:
    first, number = reader.read(4, "the header 'n_layers, n_inputs, n_outputs, max_size'")
    if np.any(first != np.round(first)) or np.any(first < 1):
        raise reader.error(number, f"header values must be positive integers, got {first.tolist()}")
    n_layers, n_in, n_out = (int(v) for v in first[:3])
    sizes_arr, number = reader.read(n_layers + 1, f"the {n_layers + 1} layer sizes")
    if np.any(sizes_arr != np.round(sizes_arr)) or np.any(sizes_arr < 1):
        raise reader.error(
            number, f"layer sizes must be positive integers, got {sizes_arr.tolist()}"
        )
    sizes = [int(v) for v in sizes_arr]
    if sizes[0] != n_in or sizes[-1] != n_out:
        raise reader.error(
            number,
            f"layer sizes start with {sizes[0]} and end with {sizes[-1]}, but the header declares "
            f"{n_in} inputs and {n_out} outputs",
        )
    reader.read(1, "the 'symmetric' flag")
    norm = {}
    norm["min"], _ = reader.read(n_in, "the minimum of each input")
    norm["max"], _ = reader.read(n_in, "the maximum of each input")
    for key in ("mean", "range"):
        values, number = reader.read((n_in + 1, n_in + n_out), f"the input {key}s and output {key}")
        if not np.all(np.isfinite(values)):
            raise reader.error(number, f"{key}s must be finite, got {values.tolist()}")
        if key == "range" and np.any(values == 0):
            raise reader.error(number, f"ranges must be nonzero, got {values.tolist()}")
        norm[key + "_in"], norm[key + "_out"] = values[:n_in], values[n_in:]
    if not (np.all(np.isfinite(norm["min"])) and np.all(np.isfinite(norm["max"]))):
        raise NetworkError(f"{reader.label}: input minima and maxima must be finite")
    return sizes, norm


def _input_names(label: str, text: str, n_in: int) -> tuple[str, ...] | None:
    """The names of a ``// input names: a, b, ...`` comment, if the file has one."""
    for number, line in enumerate(text.splitlines(), start=1):
        match = _NAMES.match(line)
        if match is None:
            continue
        names = [t.strip() for t in match.group(1).split(",")]
        if names and names[-1] == "":
            names.pop()  # a trailing comma, as on every data line
        if len(names) != n_in or not all(names):
            raise NetworkError(
                f"{label}: line {number}: the 'input names' comment lists {len(names)} names "
                f"but the network has {n_in} inputs; give one non-empty name per "
                "input, comma-separated"
            )
        return tuple(names)
    return None


def load_nnet(path: str | PathLike, *, normalization: str = "fold") -> Network:
    """Load a Reluplex / Stanford ``.nnet`` file.

    Parameters
    ----------
    path : str or path-like
        The ``.nnet`` file.
    normalization : {"fold", "none"}
        ``"fold"`` (default): the network takes raw inputs and returns raw outputs; the input
        and output normalisation are folded into the first and last affine maps, and
        ``input_domain`` is the file's ``(min, max)``. ``"none"``: the stored weights as they
        are (normalised inputs and outputs), with ``input_domain`` normalised the same way.

    Returns
    -------
    Network
        Named after the file stem; ``input_names`` from a ``// input names: ...`` comment
        line, else ``None``.

    Raises
    ------
    ConfigError
        If ``normalization`` is not one of the two choices.
    NetworkError
        If the file is truncated or corrupt, or its ``input names`` comment does not give one
        name per input; the message gives the file, the line number and what was expected
        there.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> text = "2,1,1,2,\\n1,2,1,\\n0,\\n-1,\\n1,\\n0,0,\\n1,1,\\n1,\\n-1,\\n0,\\n0,\\n1,1,\\n0,\\n"
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "tiny.nnet"
    >>> _ = path.write_text(text)
    >>> net = load_nnet(path)
    >>> net.forward([-0.5]), net.input_domain
    (array([0.5]), (array([-1.]), array([1.])))
    """
    if normalization not in _NORMALIZATIONS:
        raise ConfigError(
            f"load_nnet: normalization must be one of {list(_NORMALIZATIONS)}, "
            f"got {normalization!r}"
        )
    path = Path(path)
    label = f".nnet file '{path.name}'"
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise NetworkError(f"{label}: not a text file (binary data at byte {exc.start}); a "
                           ".nnet network is text: is it an ONNX model named .nnet? (then "
                           "rename it to .onnx)") from exc
    reader = _Reader(label, text)
    sizes, norm = _read_header(reader)
    weights, biases = [], []
    for k in range(1, len(sizes)):
        n_out, n_in = sizes[k], sizes[k - 1]
        shape = f"layer {k}, shaped {n_out}x{n_in}"
        weights.append(
            np.stack(
                [
                    reader.read(n_in, f"weights of neuron {i + 1} of {shape}")[0]
                    for i in range(n_out)
                ]
            )
        )
        biases.append(
            np.concatenate(
                [reader.read(1, f"bias of neuron {i + 1} of {shape}")[0] for i in range(n_out)]
            )
        )
    reader.check_end(len(sizes) - 1)

    lower, upper = norm["min"], norm["max"]
    if normalization == "fold":
        scale = 1.0 / norm["range_in"]
        biases[0] = biases[0] - weights[0] @ (norm["mean_in"] * scale)
        weights[0] = weights[0] * scale
        weights[-1] = weights[-1] * norm["range_out"][:, None]
        biases[-1] = biases[-1] * norm["range_out"] + norm["mean_out"]
    else:
        lower = (lower - norm["mean_in"]) / norm["range_in"]
        upper = (upper - norm["mean_in"]) / norm["range_in"]
    names = _input_names(label, text, sizes[0])
    try:
        return Network(weights, biases, input_domain=(lower, upper), name=path.stem,
                       input_names=names)
    except NetworkError as exc:
        raise NetworkError(f"{label}: {exc}") from exc
