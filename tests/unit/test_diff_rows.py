"""``changed_rows``: the rows two models decide differently, against decisions written out
by hand (argmax with ties, class labels, a DataFrame's column order and index)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from polytrav import Network, NetworkError
from polytrav.host.diff_rows import changed_rows


def test_multiclass_ties_labels_and_dataframe_order():
    # f: outputs (x0, x1, 0); g: (x0, x1 + 0.5, 0), classes named; inputs named (a, b)
    W = [np.eye(2), np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])]
    f = Network.from_arrays(W, [np.zeros(2), np.zeros(3)], input_names=["a", "b"],
                            link="softmax", classes=["x", "y", "z"])
    g = Network.from_arrays(W, [np.zeros(2), np.array([0.0, 0.5, 0.0])],
                            input_names=["a", "b"], link="softmax", classes=["x", "y", "z"])
    # columns in another order: b first; by hand (relu'd inputs):
    # (a=1, b=0.8): f x (1 > 0.8), g y (1.3)    -> changed
    # (a=1, b=0.3): f x, g x (1 > 0.8)          -> same
    # (a=0, b=0):   f tie (0, 0, 0), g y        -> changed (a tie is no class)
    # (a=0.2, b=0.7): f y, g y                  -> same
    X = pd.DataFrame({"b": [0.8, 0.3, 0.0, 0.7], "a": [1.0, 1.0, 0.0, 0.2]},
                     index=["p", "q", "r", "s"])
    got = changed_rows(f, g, X)
    assert [(r.label, r.position, r.f_class, r.g_class) for r in got] == \
        [("p", 0, "x", "y"), ("r", 2, None, "y")]
    assert got[0].to_dict()["g_output"] == pytest.approx([1.0, 1.3, 0.0])


def test_sizes_must_agree():
    f = Network.from_arrays([np.ones((1, 2))], [np.zeros(1)])
    g = Network.from_arrays([np.ones((1, 3))], [np.zeros(1)])
    with pytest.raises(NetworkError):
        changed_rows(f, g, np.zeros((1, 2)))
