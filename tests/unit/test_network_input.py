"""Issue 63 item 6: ``Network.forward`` (and every public entry point taking a point) says in
one :class:`NetworkError` what is wrong with its input: None, non-numeric, ragged, the wrong
shape, NaN or infinite values; good batches, empty ones included, pass unchanged."""
from __future__ import annotations

import numpy as np
import pytest

from polytrav import Network, NetworkError
from polytrav.testing.reference import random_net

NET = random_net(1, 3, [4], n_out=2)


@pytest.mark.parametrize("x, match", [
    (None, r"input is None; give an array of shape \(3,\) or \(n, 3\)"),
    (np.nan, r"input is a single number \(nan\)"),
    (2.0, r"input is a single number \(2.0\) but the network takes 3 values per sample"),
    ("1,2,3", r"input is text \('1,2,3'\), not numbers"),
    (["a", "b", "c"], r"input is not numeric \(list \['a', 'b', 'c'\]\)"),
    ({"a": 1.0}, r"input is not numeric \(dict"),
    ([1j, 2.0, 3.0], "input is not numeric"),
    ([[1.0, 2.0, 3.0], [1.0]], "not a rectangular array"),
    ([1.0, 2.0], r"input has 2 values per sample \(shape \(2,\)\) but the network takes 3"),
    (np.zeros((4, 5)), "input has 5 values per sample"),
    ([1.0, np.nan, 3.0], "input has nan at input 1; every input value must be finite"),
    ([[0.0, 0.0, 0.0], [0.0, 0.0, -np.inf]], "input has -inf at sample 1, input 2"),
    ([None, 1.0, 2.0], "input has nan at input 0"),
])
def test_bad_input_is_one_clear_error(x, match):
    with pytest.raises(NetworkError, match=match):
        NET.forward(x)


@pytest.mark.parametrize("entry", ["forward", "trace", "pre_activations", "activation_code",
                                   "__call__"])
def test_every_entry_point_checks(entry):
    with pytest.raises(NetworkError, match="input has nan"):
        getattr(NET, entry)([0.0, np.nan, 0.0])
    with pytest.raises(NetworkError, match="input is None"):
        getattr(NET, entry)(None)


def test_good_input_passes():
    X = np.random.default_rng(0).uniform(-1, 1, (5, 3))
    Y = NET.forward(X)
    assert Y.shape == (5, 2) and np.allclose(NET.forward(X[2]), Y[2])
    assert NET.forward(X.tolist()).tolist() == Y.tolist()
    assert NET.forward(np.zeros((0, 3))).shape == (0, 2)  # an empty batch
    assert NET.forward(X.reshape(5, 1, 3)).shape == (5, 2)  # each sample flattened
    assert NET.forward([True, False, True]).shape == (2,)
    huge = np.full(3, 1e300)  # finite, however large
    assert NET.forward(huge).shape == (2,)
    one = Network.from_arrays([[[2.0]]], [[0.5]])
    assert one.forward([1.0]).tolist() == [2.5]
