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


@pytest.mark.parametrize("n_in, n_out", [(3, 2), (2, 3)])  # from the output / input side
def test_local_models_of_many_codes_are_each_codes_local_model(n_in, n_out):
    net = random_net(5, n_in, [6, 5, 4], n_out=n_out)
    X = np.random.default_rng(2).uniform(-1, 1, size=(40, n_in))
    codes = np.array([np.concatenate(net.activation_code(x)) for x in X])
    W, c = net.local_models(codes)
    assert W.shape == (40, n_out, n_in) and c.shape == (40, n_out)
    for i, x in enumerate(X):
        Wi, ci = net.local_model(net.activation_code(x))
        np.testing.assert_allclose(W[i], Wi, atol=1e-12)
        np.testing.assert_allclose(c[i], ci, atol=1e-12)
    affine = Network.from_arrays([[[1.0, -2.0]]], [[0.5]])
    W, c = affine.local_models(np.zeros((2, 0), bool))
    assert W.shape == (2, 1, 2) and np.all(c == 0.5)


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


def test_classes_and_link_are_checked_kept_by_compose_input_and_dropped_by_new_outputs():
    W1, b1 = [[[1.0, -1.0], [0.5, 1.0]], [[1.0, -2.0]]], [[0.0, 0.0], [0.25]]
    binary = Network.from_arrays(W1, b1, classes=["no", "yes"], link="sigmoid")
    assert binary.classes == ("no", "yes") and binary.link == "sigmoid"
    plain = Network.from_arrays(W1, b1)
    assert plain.classes is None and plain.link is None
    moved = binary.compose_input(2.0 * np.eye(2), np.ones(2))
    assert moved.classes == ("no", "yes") and moved.link == "sigmoid"
    assert binary.with_inputs().classes is None and binary.with_inputs().link is None
    stacked = Network.stack([binary, binary])
    assert stacked.classes is None and stacked.link is None
    three = Network.from_arrays([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]], [[0.0, 0.0, 0.0]],
                                classes=np.array([3, 5, 7]), link="softmax")
    assert three.classes == (3, 5, 7) and type(three.classes[0]) is int  # numpy -> Python
    for kwargs, match in [
        ({"link": "logistic"},
         r"link must be one of \['sigmoid', 'softmax', 'identity'\] or None, got 'logistic'"),
        ({"link": "softmax"}, r"link 'softmax' needs one output per class \(at least 2\)"),
        ({"classes": ["a", "b", "c"]},
         r"classes has 3 labels but the network needs 2; one output is the logit of classes\[1\]"),
        ({"classes": "ab"}, r"classes must be a sequence of 2 distinct labels, got str 'ab'"),
        ({"classes": ["a", "a"]}, r"classes must be 2 distinct labels \(not None\)"),
        ({"classes": [[1], [2]]}, r"classes must be a sequence of 2 distinct labels"),
        ({"classes": [0, 1], "link": "identity"}, r"classes given but link is 'identity'"),
    ]:
        with pytest.raises(NetworkError, match=match):
            Network.from_arrays(W1, b1, **kwargs)
    old = Network.from_arrays(W1, b1)
    del old.__dict__["classes"], old.__dict__["link"]  # pickled before the attributes existed
    assert old.classes is None and old.link is None and old.class_index([1.0, 0.0]) in (0, 1)


def test_predictions_probabilities_and_labels_follow_the_link():
    W1, b1 = [[[1.0, -1.0], [0.5, 1.0]], [[1.0, -2.0]]], [[0.0, 0.0], [0.25]]
    X = np.random.default_rng(3).uniform(-2.0, 2.0, size=(50, 2))
    y = Network.from_arrays(W1, b1).forward(X)[:, 0]
    binary = Network.from_arrays(W1, b1, classes=["no", "yes"], link="sigmoid")
    p = 1.0 / (1.0 + np.exp(-y))
    np.testing.assert_allclose(binary.predict_proba(X), np.column_stack([1 - p, p]), atol=1e-15)
    np.testing.assert_allclose(binary.predict_proba(X[0]), [1 - p[0], p[0]], atol=1e-15)
    assert binary.predict(X).tolist() == np.where(y >= 0, "yes", "no").tolist()
    assert binary.predict(X[0]) == ("yes" if y[0] >= 0 else "no")
    assert binary.class_index(X).tolist() == (y >= 0).astype(int).tolist()
    assert binary.class_label(0) == "no" and binary.class_probability(X[0], 1) == p[0]
    assert binary.predict_proba([800.0, -800.0]).tolist() == [0.0, 1.0]  # no overflow
    unknown = Network.from_arrays(W1, b1)  # no link: indices, no probabilities
    assert unknown.predict(X).tolist() == (y >= 0).astype(int).tolist()
    assert unknown.class_label(1) == 1 and unknown.class_probability(X[0], 1) is None
    with pytest.raises(NetworkError, match=r"predict_proba: the network's link is None, so its "
                                           r"outputs have no probabilities"):
        unknown.predict_proba(X)
    with pytest.raises(NetworkError, match=r"class_label: index must be a class index in "
                                           r"\[0, 2\) or -1 \(a tie\), got 2"):
        unknown.class_label(2)
    softmax = Network.from_arrays([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]], [[0.0, 0.1, -0.5]],
                                  classes=["a", 2, "c"], link="softmax")
    Y = softmax.forward(X)
    E = np.exp(Y - Y.max(axis=1, keepdims=True))
    np.testing.assert_allclose(softmax.predict_proba(X), E / E.sum(axis=1, keepdims=True),
                               atol=1e-15)
    assert softmax.predict(X).tolist() == [["a", 2, "c"][k] for k in Y.argmax(axis=1)]
    regressor = Network.from_arrays(W1, b1, link="identity")
    assert regressor.predict(X).tolist() == y.tolist() and regressor.predict(X[0]) == y[0]
    assert regressor.class_probability(X[0], 0) is None
    assert regressor.class_label(1) == 1  # no classes: the index itself, for any network
    for call in (lambda: regressor.class_index(X), lambda: regressor.predict_proba(X)):
        with pytest.raises(NetworkError, match="regressor|link is 'identity'"):
            call()
    multilabel = Network.from_arrays([[[1.0, 0.0], [0.0, 1.0]]], [[0.0, 0.0]], link="sigmoid")
    assert multilabel.predict(X).tolist() == (X >= 0).astype(int).tolist()
    np.testing.assert_allclose(multilabel.predict_proba(X), 1.0 / (1.0 + np.exp(-X)),
                               atol=1e-15)
    with pytest.raises(NetworkError, match="multilabel classifier .* no single class"):
        multilabel.class_index(X)
    assert multilabel.class_label(1) == 1 and multilabel.class_probability(X[0], 1) == \
        pytest.approx(1.0 / (1.0 + np.exp(-X[0, 1])), abs=1e-15)


# ---------------------------------------------------------------- Network.stack


def _bits(code) -> tuple:
    return tuple(int(v) for v in np.concatenate([np.asarray(c, int) for c in code]))


@pytest.mark.parametrize("seed", range(4))
def test_stack_forward_is_the_concatenated_forwards(seed):
    rng = np.random.default_rng(seed)
    nets = [random_net(seed, 3, [5, 4], n_out=2), random_net(seed + 10, 2, [6], n_out=3),
            random_net(seed + 20, 4, [3, 2, 3], n_out=1), random_net(seed + 30, 1, [], n_out=2)]
    s = Network.stack(nets)
    assert s.n_inputs == 10 and s.n_outputs == 8 and s.n_hidden_layers == 3
    X = rng.uniform(-3, 3, size=(200, 10))
    parts = np.split(X, np.cumsum([n.n_inputs for n in nets])[:-1], axis=1)
    want = np.hstack([n.forward(p) for n, p in zip(nets, parts)])
    np.testing.assert_allclose(s.forward(X), want, rtol=0, atol=1e-12)
    # copies of one network: no padding, codes are the concatenated codes
    f = nets[0]
    c = Network.stack([f, f])
    assert c.hidden_sizes == tuple(2 * h for h in f.hidden_sizes)
    x, x2 = X[0, :3], X[1, :3]
    # (equal up to the last bit: BLAS may sum the zero blocks in another order)
    np.testing.assert_allclose(c.forward(np.r_[x, x2]), np.r_[f.forward(x), f.forward(x2)],
                               rtol=1e-15, atol=1e-12)
    for layer, (a, b) in enumerate(zip(f.activation_code(x), f.activation_code(x2))):
        assert np.array_equal(c.activation_code(np.r_[x, x2])[layer], np.r_[a, b])


def test_stack_metadata_and_errors():
    f = Network.from_arrays([[[1.0, 2.0]], [[1.0]]], [[0.0], [0.0]], input_names=["a", "b"],
                            input_domain=([0, 0], [1, 2]))
    g = Network.from_arrays([[[1.0]]], [[0.0]])
    s = Network.stack([f, g], names=["f", "g"])
    assert s.input_names == ("f.a", "f.b", "g.x0") and s.name == "stack(f, g)"
    assert s.input_domain[0].tolist() == [0, 0, -np.inf]
    assert s.input_domain[1].tolist() == [1, 2, np.inf]
    assert Network.stack([g, g]).input_domain is None
    assert Network.stack([g, g]).input_names == ("0.x0", "1.x0")
    with pytest.raises(NetworkError, match="no networks"):
        Network.stack([])
    with pytest.raises(NetworkError, match="not a Network"):
        Network.stack([f, "g"])
    with pytest.raises(NetworkError, match="distinct non-empty"):
        Network.stack([f, g], names=["f", "f"])


@pytest.mark.parametrize("seed", [0, 1])
def test_stack_of_two_copies_has_the_product_partition(seed):
    from reference import brute_force_regions

    from polytrav import Box, traverse

    f = random_net(seed, 2, [4, 3])
    lo, hi = -np.ones(2), np.ones(2)
    one = [_bits(np.split(r["code"], [4])) for r in brute_force_regions(f, lo, hi)]
    run = traverse(Network.stack([f, f]), Box(-np.ones(4), np.ones(4)))
    got = [_bits(p.code) for p in run]
    assert run.complete
    assert len(got) == len(set(got)) == len(one) ** 2
    # the stack's code: layer 1 of f, layer 1 of g, layer 2 of f, layer 2 of g
    want = {a[:4] + b[:4] + a[4:] + b[4:] for a in one for b in one}
    assert set(got) == want


def test_stack_bounds_prove_and_refute_relations_between_copies():
    """LinearProperty in verify mode (CROWN piece bounds, branch and bound) on two copies."""
    from reference import brute_force_regions
    from scipy.optimize import linprog

    from polytrav import Box, Polyhedron, analyze
    from polytrav.plugins.linear_property import LinearProperty
    from polytrav.vocabulary.results import Verdict

    f = random_net(3, 2, [6, 5])
    lo, hi = -np.ones(2), np.ones(2)
    ext = []  # max and min of f over the box, cell by cell
    for r in brute_force_regions(f, lo, hi):
        for sign in (1.0, -1.0):
            res = linprog(-sign * r["W"][0], A_ub=r["A"], b_ub=r["b"], bounds=[(None, None)] * 2)
            ext.append(r["c"][0] - sign * res.fun)  # the cell's max (sign 1) or min (sign -1)
    span = max(ext) - min(ext)
    s = Network.stack([f, f], names=["f", "g"])
    box = Box(-np.ones(4), np.ones(4))
    # over the product box, f(x) - f(x') reaches exactly the span
    held = analyze(s, box, LinearProperty(([[-1.0, 1.0]], [-(span + 1e-3)])))[0]
    assert held.verdict is Verdict.HOLDS and not held.failures  # proven
    hit = analyze(s, box, LinearProperty(([[-1.0, 1.0]], [-(span - 1e-3)])))[0]
    assert hit.verdict is Verdict.VIOLATED
    y = s.forward(hit.witness)
    assert y[0] - y[1] >= span - 1e-3 - 1e-9 and box.contains(hit.witness)
    # on the diagonal x' = x (equality rows: the affine hull) the copies agree
    diag = Polyhedron(np.vstack([np.eye(4), -np.eye(4)]), np.ones(8),
                      A_eq=np.hstack([np.eye(2), -np.eye(2)]), b_eq=np.zeros(2))
    for C in ([[-1.0, 1.0]], [[1.0, -1.0]]):
        res = analyze(s, diag, LinearProperty((C, [-1e-6])))[0]
        assert res.verdict is Verdict.HOLDS and not res.failures, C  # proven
    # a shifted diagonal x' = x - 0.2 e_0 (inside the box) does change f somewhere
    shifted = Polyhedron(np.vstack([np.eye(4), -np.eye(4)]), np.ones(8),
                         A_eq=np.hstack([np.eye(2), -np.eye(2)]), b_eq=[0.2, 0.0])
    gap = analyze(s, shifted, LinearProperty(([[1.0, -1.0]], [-1e-3])))[0]  # f(x') - f(x) >= 1e-3
    grid = np.linspace(-0.8, 1, 200)
    best = max(f.forward([a - 0.2, b])[0] - f.forward([a, b])[0] for a in grid for b in grid)
    if best > 2e-3:
        assert gap.verdict is Verdict.VIOLATED
        w = gap.witness
        assert abs(w[2] - (w[0] - 0.2)) < 1e-7 and abs(w[3] - w[1]) < 1e-7
        y = s.forward(w)
        assert y[1] - y[0] >= 1e-3 - 1e-7


def test_input_gradient_is_the_local_models_matrix():
    """``input_gradient`` (backpropagation at traced points) equals ``G @ W`` of each
    point's local affine map (the masked forward recursion), on a batch and on one point."""
    net = random_net(11, 4, [7, 6], n_out=3)
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (50, 4))
    G = rng.normal(size=(50, 3))
    hs, _ = net.trace(X)
    got = net.input_gradient(G, hs)
    for x, g, row in zip(X, G, got):
        W, _ = net.local_model(net.activation_code(x))
        np.testing.assert_allclose(row, g @ W, rtol=1e-12, atol=1e-12)
    hs1, _ = net.trace(X[0])
    np.testing.assert_allclose(net.input_gradient(G[0], hs1), got[0], rtol=1e-12, atol=1e-12)
