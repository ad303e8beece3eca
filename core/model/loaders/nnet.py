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

**Variants in circulation** are read too, and each one read says so in an
:class:`~polytrav.vocabulary.errors.InputNote` warning:

* the Reluplex-era ACAS Xu files (Reluplex, ReluDiff, NeuroDiff and their artifacts) carry
  the normalisation of the original seven-input network: 7 minima and maxima for 5 inputs,
  and 8 means and ranges (5 inputs, the two dropped inputs, the output). The first values
  are the inputs', the last the output's; the values between belong to no input of the
  network and are ignored (read this way, such a file is the same network as the
  five-input file);
* minima and maxima of ``±inf`` or of at least float32's largest value (``3.40282e+38``)
  declare no bound: the network then has no ``input_domain``, and a command needs the
  region given.

The file's model clips raw inputs to ``[min, max]``, normalises them with
``x_norm = (x - mean) / range`` and returns ``y_raw = y_norm * range_out + mean_out``. The
clipping is not affine; the loaders record it as the network's ``input_domain`` instead.
"""

from __future__ import annotations

import re
import warnings
from os import PathLike
from pathlib import Path

import numpy as np

from polytrav.vocabulary.errors import ConfigError, InputNote, NetworkError
from polytrav.model.network import Network

__all__ = ["load_nnet"]

_NORMALIZATIONS = ("fold", "none")
_NAMES = re.compile(r"^\s*//\s*input\s+names\s*:(.*)$", re.IGNORECASE)
#: A minimum or maximum this large (float32's largest value, as C writers print it) is no bound.
_NO_BOUND = 3.4e38


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

    def read(self, counts: int | tuple[int, ...] | None, what: str) -> tuple[np.ndarray, int]:
        """Parse the next line as floats; it must hold one of ``counts`` values (None: at
        least one)."""
        counts = (counts,) if isinstance(counts, int) else counts
        expected = "some" if counts is None else " or ".join(str(c) for c in counts)
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
        if (not values) if counts is None else len(values) not in counts:
            raise self.error(number, f"expected {expected} values ({what}), found {len(values)}")
        return np.array(values, dtype=np.float64), number

    def check_end(self, n_layers: int) -> None:
        if self._next < len(self._lines):
            number = self._lines[self._next][0]
            raise self.error(
                number,
                f"unexpected data after the last layer (the header declares {n_layers} layers)",
            )


def _read_header(reader: _Reader) -> tuple[list[int], dict[str, np.ndarray], list[str]]:
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
    norm, notes = {}, []
    bounds = {}
    for key, what in (("min", "minimum"), ("max", "maximum")):
        values, number = reader.read(None, f"the {what} of each input")
        if len(values) < n_in:
            raise reader.error(number, f"expected {n_in} values (the {what} of each input), "
                               f"found {len(values)}")
        bounds[key] = values, number
    extra = len(bounds["min"][0]) - n_in
    if len(bounds["max"][0]) - n_in != extra:
        raise reader.error(bounds["max"][1], f"{len(bounds['max'][0])} maxima but "
                           f"{len(bounds['min'][0])} minima; give one of each per input")
    if extra:
        notes.append(f"lines {bounds['min'][1]}-{bounds['max'][1]} give {n_in + extra} minima "
                     f"and maxima for {n_in} inputs (the Reluplex-era ACAS Xu layout): the "
                     f"first {n_in} were read, the last {extra} ignored")
    for key in ("min", "max"):
        norm[key] = bounds[key][0][:n_in]
    counts = (n_in + extra + 1,) if extra else (n_in + 1, n_in + n_out)
    for key in ("mean", "range"):
        values, number = reader.read(counts, f"the input {key}s and output {key}")
        if not np.all(np.isfinite(values)):
            raise reader.error(number, f"{key}s must be finite, got {values.tolist()}")
        if key == "range" and np.any(values == 0):
            raise reader.error(number, f"ranges must be nonzero, got {values.tolist()}")
        norm[key + "_in"] = values[:n_in]
        norm[key + "_out"] = values[-1:] if extra else values[n_in:]
    if extra:
        notes.append(f"the means and ranges give {n_in + extra + 1} values: the first {n_in} "
                     f"(inputs) and the last (the output) were read, the {extra} between "
                     "ignored")
    if np.isnan(norm["min"]).any() or np.isnan(norm["max"]).any():
        raise NetworkError(f"{reader.label}: input minima and maxima must be numbers, not NaN")
    unbounded = (np.abs(norm["min"]) >= _NO_BOUND) | (np.abs(norm["max"]) >= _NO_BOUND)
    if unbounded.any():
        notes.append(f"{int(unbounded.sum())} of the {n_in} inputs have no bound (a minimum or "
                     "maximum of ±inf or ±3.4e38): the network declares no input domain; "
                     "give the region")
    return sizes, norm, notes


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
    sizes, norm, notes = _read_header(reader)
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
    bounded = np.all(np.abs(norm["min"]) < _NO_BOUND) and np.all(np.abs(norm["max"]) < _NO_BOUND)
    try:
        net = Network(weights, biases, input_domain=(lower, upper) if bounded else None,
                      name=path.stem, input_names=names)
    except NetworkError as exc:
        raise NetworkError(f"{label}: {exc}") from exc
    if notes:
        warnings.warn(f"{label}: " + "; ".join(notes), InputNote, stacklevel=3)
    return net
