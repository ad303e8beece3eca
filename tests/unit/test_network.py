"""Network: construction checks, forward pass, codes and local models."""
import numpy as np
import pytest
from reference import random_net

from polytrav import Network, NetworkError


def test_local_model_and_hyperplanes_match_forward():
    net = random_net(4, 3, [5, 4, 3], n_out=2)
    rng = np.random.default_rng(0)
    for x in rng.uniform(-1, 1, size=(50, 3)):
        code = net.activation_code(x)
        W, c = net.local_model(code)
        np.testing.assert_allclose(W @ x + c, net.forward(x), atol=1e-12)
        G = rng.standard_normal((1 + int(x[0] > 0), 2))  # rows over the outputs
        WG, cG = net.local_model(code, G)
        assert WG.shape == (G.shape[0], 3)
        np.testing.assert_allclose(WG @ x + cG, G @ net.forward(x), atol=1e-12)
        for (Wh, bh), h in zip(net.hyperplanes(code), net.pre_activations(x)):
            np.testing.assert_allclose(Wh @ x + bh, h, atol=1e-12)


def test_batch_forward_and_compose_input():
    net = random_net(1, 2, [4])
    X = np.random.default_rng(1).uniform(size=(7, 2))
    np.testing.assert_allclose(net.forward(X), np.stack([net.forward(x) for x in X]))
    A, c = np.array([[2.0], [0.0]]), np.array([0.0, 0.5])
    sub = net.compose_input(A, c)
    np.testing.assert_allclose(sub.forward([0.3]), net.forward([0.6, 0.5]))


@pytest.mark.parametrize("weights,biases,match", [
    ([], [], "no layers"),
    ([[[1.0, 2.0]]], [[0.0], [1.0]], "1 weight matrices but 2 bias"),
    ([[[1.0, 2.0]], [[1.0, 1.0]]], [[0.0], [0.0]], r"layer 2 weights have shape \(1, 2\) but layer 1 outputs 1"),
    ([[[1.0, np.nan]]], [[0.0]], "layer 1 weights contains nan at index"),
    ([[[1.0, 2.0]]], [[np.inf]], "layer 1 bias contains inf"),
    ([[[1.0, 2.0]]], [[0.0, 1.0]], "bias has 2 entries"),
])
def test_bad_arrays_are_named(weights, biases, match):
    with pytest.raises(NetworkError, match=match):
        Network.from_arrays(weights, biases)


def test_wrong_input_size_is_named():
    net = random_net(1, 2, [3])
    with pytest.raises(NetworkError, match="input has 3 values per sample"):
        net.forward([1.0, 2.0, 3.0])


def test_input_names_are_kept_checked_and_dropped_by_compose_input():
    W, b = [[[1.0, 2.0, 3.0]]], [[0.0]]
    assert Network.from_arrays(W, b).input_names is None
    net = Network.from_arrays(W, b, input_names=["rho", "theta", "psi"])
    assert net.input_names == ("rho", "theta", "psi")
    assert Network(W, b, input_names=("a", "b", "c")).input_names == ("a", "b", "c")
    assert net.compose_input(np.eye(3)[:, :2], np.zeros(3)).input_names is None
    with pytest.raises(NetworkError, match="input_names has 2 names but the network takes 3"):
        Network.from_arrays(W, b, input_names=["rho", "theta"])
    with pytest.raises(NetworkError, match="sequence of 3 strings"):
        Network.from_arrays(W, b, input_names="abc")
    with pytest.raises(NetworkError, match=r"input_names\[1\] is ''"):
        Network.from_arrays(W, b, input_names=["a", "", "c"])
    with pytest.raises(NetworkError, match=r"input_names\[2\] is 3"):
        Network.from_arrays(W, b, input_names=["a", "b", 3])
