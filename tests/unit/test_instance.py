"""VNN-LIB 2.0 queries with their models as one network and one property
(polytrav.verification.instance, polytrav.verification.standard), each answer checked
independently: witnesses by onnxruntime and exact rational arithmetic, optima by a MILP.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from polytrav.testing.milp import milp_max_linear

from polytrav import ConfigError, Network
from polytrav.verification.instance import compile_query
from polytrav.verification.query import parse_query
from polytrav.verification.standard import check_mapping, decide

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

W1 = np.array([[1.0, -1.0], [0.5, 1.0], [-1.0, 0.25]])
B1 = np.array([0.0, -0.25, 0.5])
W2 = np.array([[1.0, -2.0, 1.0], [0.5, 0.5, -1.0]])


def _model(path, hidden=False, in_shape=(1, 2), in_type=TensorProto.FLOAT, scale=1.0):
    """``y = scale W2 relu(W1 x + b1)`` (float32), the pre-activation as tensor ``h``."""
    init = [numpy_helper.from_array(a.astype(np.float32), n)
            for a, n in ((W1.T, "W1"), (B1, "b1"), (scale * W2.T, "W2"))]
    nodes = [helper.make_node("Reshape", ["x", "s"], ["x2"]),
             helper.make_node("MatMul", ["x2", "W1"], ["m"]),
             helper.make_node("Add", ["m", "b1"], ["h"]),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("MatMul", ["r", "W2"], ["y"])]
    init.append(numpy_helper.from_array(np.array([1, 2], dtype=np.int64), "s"))
    graph = helper.make_graph(nodes, "small", [helper.make_tensor_value_info("x", in_type,
                                                                             list(in_shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])],
                              init)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return str(path)


NET_F = Network([W1, W2], [B1, np.zeros(2)])


def _f(x):
    return NET_F.forward(np.asarray(x, float))


def _max(g, lo=(-1, -1), hi=(1, 1)):
    """``max g @ [y; x]`` over the box, by a MILP (the independent truth)."""
    net = NET_F.with_inputs()
    res = milp_max_linear(net, np.asarray(g, float), np.array(lo, float), np.array(hi, float))
    assert res.status == "optimal"
    return res.value


HEAD = "(vnnlib-version <2.0>)\n"
NET = "(declare-network N (declare-input X {t} [1, 2]) {hidden}(declare-output Y {t} [1, 2]))\n"
BOX = "(assert (>= X[0,0] -1.0)) (assert (<= X[0,0] 1.0)) (assert (>= X[0,1] -1.0)) " \
      "(assert (<= X[0,1] 1.0))\n"


def _query(body, t="real", hidden=""):
    return parse_query(HEAD + NET.format(t=t, hidden=hidden) + body, source="q.vnnlib")


def test_max_of_an_output_sat_just_below_and_unsat_just_above(tmp_path):
    path = _model(tmp_path / "n.onnx")
    top = _max([1, 0, 0, 0])
    sat = decide(_query(BOX + f"(assert (>= Y[0,0] {top - 0.05:.6f}))"), {"N": path})
    assert sat.answer == "sat" and sat.witness.holds
    x = np.array(sat.witness.values["X"], float)
    assert _f(x)[0] >= top - 0.05 - 1e-6
    unsat = decide(_query(BOX + f"(assert (>= Y[0,0] {top + 0.05:.6f}))"), {"N": path})
    assert unsat.answer == "unsat"


def test_hidden_node_and_comparison_of_an_input_with_an_output(tmp_path):
    """H (a hidden tensor) and a mixed comparison ``Y[0,0] >= X[0,0] + c`` (MNC)."""
    path = _model(tmp_path / "n.onnx")
    hidden = '(declare-hidden H real [1, 3] "h")'
    gap = _max([1, 0, -1, 0])  # max of Y[0,0] - X[0,0]
    for c, want in ((gap - 0.05, "sat"), (gap + 0.05, "unsat")):
        q = _query(BOX + f"(assert (>= Y[0,0] (+ X[0,0] {c:.6f})))", hidden=hidden)
        d = decide(q, {"N": path})
        assert d.answer == want, (c, d.reason)
        if want == "sat":
            x = np.array(d.witness.values["X"], float)
            assert np.allclose(d.witness.values["H"], W1 @ x + B1, atol=1e-6)
            assert d.witness.values["Y"][0] >= x[0] + c


def _mono(relation="(<= X_g[0,0] X_f[0,0])", unsafe="(< Y_f[0,1] Y_g[0,1])",
          g_box="(assert (>= X_g[0,0] -1.0))"):
    return (HEAD + NET.format(t="real", hidden="").replace("N ", "f ").replace("X ", "X_f ")
            .replace("Y ", "Y_f ")
            + "(declare-network g (equal-to f) (declare-input X_g real [1, 2]) "
              "(declare-output Y_g real [1, 2]))\n"
            + BOX.replace("X[", "X_f[") + g_box
            + f"(assert {relation}) (assert (== X_g[0,1] X_f[0,1])) (assert {unsafe})")


def _slopes(output, feature=0):
    """The slopes of ``output`` in ``feature`` over a fine grid of the box (sampled truth)."""
    pts = np.stack(np.meshgrid(np.linspace(-1, 1, 201), np.linspace(-1, 1, 201)), -1)
    pts = pts.reshape(-1, 2)
    step = np.zeros(2)
    step[feature] = 1e-6
    return (np.array([_f(p + step)[output] - _f(p)[output] for p in pts])) / 1e-6


@pytest.mark.parametrize("output,relation,unsafe", [
    (0, "(<= X_g[0,0] X_f[0,0])", "(< Y_f[0,0] Y_g[0,0])"),   # non-decreasing? no
    (1, "(<= X_g[0,0] X_f[0,0])", "(< Y_f[0,1] Y_g[0,1])"),   # non-decreasing? yes
    (1, "(>= X_f[0,0] X_g[0,0])", "(> Y_g[0,1] Y_f[0,1])"),   # the same, written the other way
    (0, "(>= X_g[0,0] X_f[0,0])", "(< Y_f[0,0] Y_g[0,0])"),   # non-increasing? no
])
def test_monotonicity_as_two_copies_is_answered_by_slopes(tmp_path, output, relation, unsafe):
    """``g`` equal-to ``f``, an input relation and a strict output relation: the closed
    relaxation always holds on the diagonal, so unsat needs the slopes (sampled: truth)."""
    path = _model(tmp_path / "n.onnx")
    g_box = "(assert (>= X_g[0,0] -1.0))" if "<= X_g" in relation or "X_f[0,0] X_g" in \
        relation else "(assert (<= X_g[0,0] 1.0))"
    q = parse_query(_mono(relation, unsafe, g_box), source="mono.vnnlib")
    inst = compile_query(q, {"f": path})
    assert inst.network.n_inputs == 3  # X_g[0,1] eliminated: it is X_f[0,1]
    from polytrav.verification.monotone_query import monotone_shape

    assert monotone_shape(inst) is not None
    slopes = _slopes(output)
    increasing = "X_g[0,0] X_f" in relation or "X_f[0,0] X_g" in relation
    violated = slopes.min() < -1e-3 if increasing else slopes.max() > 1e-3
    d = decide(q, {"f": path})
    assert d.answer == ("sat" if violated else "unsat"), d.reason
    if violated:
        v = d.witness.values
        assert v["X_g"][1] == v["X_f"][1]
        assert (v["Y_f"][output] < v["Y_g"][output]) == (unsafe.index("Y_f") < unsafe.index("Y_g")) \
            or v["Y_f"][output] != v["Y_g"][output]


def test_the_general_stack_finds_the_same_violation(tmp_path):
    """Without the monotonicity shape (an extra output condition), the copies are traversed as
    one block-diagonal network; the witness meets the strict relation strictly."""
    path = _model(tmp_path / "n.onnx")
    q = parse_query(_mono(unsafe="(< Y_f[0,0] Y_g[0,0])") + " (assert (<= Y_f[0,1] 100.0))")
    from polytrav.verification.monotone_query import monotone_shape

    assert monotone_shape(compile_query(q, {"f": path})) is None
    d = decide(q, {"f": path})
    assert d.answer == "sat"
    v = d.witness.values
    assert v["X_g"][1] == v["X_f"][1] and v["X_g"][0] <= v["X_f"][0]
    assert v["Y_f"][0] < v["Y_g"][0]  # strict, on the printed values


def test_input_only_disjuncts_empty_is_unsat_non_empty_is_sat(tmp_path):
    path = _model(tmp_path / "n.onnx")
    empty = decide(_query(BOX + "(assert (>= (+ (* 0.5 X[0,0]) (* 0.75 X[0,1])) 3.0))"),
                   {"N": path})
    assert empty.answer == "unsat"
    some = decide(_query(BOX + "(assert (>= (+ (* 0.5 X[0,0]) (* 0.75 X[0,1])) 1.0))"),
                  {"N": path})
    assert some.answer == "sat"
    x = [Fraction(repr(v)) for v in some.witness.values["X"]]
    assert Fraction(1, 2) * x[0] + Fraction(3, 4) * x[1] >= 1


def test_one_point_regions_are_evaluated(tmp_path):
    path = _model(tmp_path / "n.onnx")
    point = "(assert (== X[0,0] 0.5)) (assert (== X[0,1] -0.25))\n"
    y = _f([0.5, -0.25])
    sat = decide(_query(point + f"(assert (<= Y[0,0] {y[0] + 0.01:.6f}))"), {"N": path})
    assert sat.answer == "sat"
    assert sat.witness.values["X"] == [Fraction("0.5"), Fraction("-0.25")]  # the constants
    unsat = decide(_query(point + f"(assert (>= Y[0,0] {y[0] + 0.01:.6f}))"), {"N": path})
    assert unsat.answer == "unsat"


def test_unbounded_inputs_find_counterexamples_but_never_prove(tmp_path):
    path = _model(tmp_path / "n.onnx")
    one_side = "(assert (>= X[0,0] -1.0)) (assert (<= X[0,0] 1.0))\n"  # X[0,1] free
    sat = decide(_query(one_side + "(assert (>= Y[0,0] 3.0))"), {"N": path})
    assert sat.answer == "sat"
    assert _f(np.array(sat.witness.values["X"], float))[0] >= 3.0 - 1e-5
    never = decide(_query(one_side + "(assert (<= Y[0,1] -1000.0))"), {"N": path})
    assert never.answer == "unknown" and "X[0,1]" in never.reason


def test_declarations_must_fit_the_model(tmp_path):
    path = _model(tmp_path / "n.onnx")
    wrong_size = parse_query(HEAD + "(declare-network N (declare-input X real [3]) "
                                    "(declare-output Y real [1, 2]))\n" + "(assert (>= Y[0,0] 0.0))")
    with pytest.raises(ConfigError, match=r"input 'X' of network 'N' has shape \[3\]"):
        compile_query(wrong_size, {"N": path})
    two_outputs = parse_query(HEAD + "(declare-network N (declare-input X real [1, 2]) "
                                     "(declare-output Y real [1, 2]) (declare-output Z real [1]))"
                              "\n(assert (>= Z[0] 0.0))")
    with pytest.raises(ConfigError, match="declares 2 outputs but n.onnx has 1"):
        compile_query(two_outputs, {"N": path})
    f64 = _query(BOX + "(assert (>= Y[0,0] 0.0))", t="float64")
    with pytest.raises(ConfigError, match="declared float64 but n.onnx's input 'x' is float32"):
        compile_query(f64, {"N": path})


def test_declared_types_polytrav_does_not_claim_are_refused_unless_all_real(tmp_path):
    path = _model(tmp_path / "n.onnx", in_type=TensorProto.DOUBLE)
    q = _query(BOX + "(assert (>= Y[0,0] 0.0))").networks[0]
    assert q  # the all-real query is accepted below
    mixed = parse_query(HEAD + "(declare-network N (declare-input X float64 [1, 2]) "
                               "(declare-output Y float32 [1, 2]))\n" + BOX
                        + "(assert (>= Y[0,0] 100.0))", source="m.vnnlib")
    with pytest.raises(ConfigError, match="declares 'X' in network 'N' as float64, which "
                                          "polytrav does not claim"):
        decide(mixed, {"N": path}, query_name="m.vnnlib")
    real = parse_query(HEAD + NET.format(t="real", hidden="") + BOX
                       + "(assert (>= Y[0,0] 100.0))")
    assert decide(real, {"N": path}).answer == "unsat"


def test_network_mapping_errors_name_the_problem(tmp_path):
    path = _model(tmp_path / "n.onnx")
    q = parse_query(HEAD + "(declare-network f (declare-input X real [1, 2]) (declare-output Y "
                           "real [1, 2]))\n(declare-network g (equal-to f) (declare-input X2 "
                           "real [1, 2]) (declare-output Y2 real [1, 2]))\n"
                           "(assert (>= Y[0,0] Y2[0,0]))")
    assert check_mapping(q, {"f": path}, "q") == {"f": path}
    with pytest.raises(ConfigError, match="declares equal to 'f'; an equivalent network"):
        check_mapping(q, {"f": path, "g": path}, "q")
    with pytest.raises(ConfigError, match="--network maps 'h', which q does not declare"):
        check_mapping(q, {"f": path, "h": path}, "q")
    with pytest.raises(ConfigError, match="no model file was supplied for network 'f'"):
        check_mapping(q, {}, "q")
    with pytest.raises(ConfigError, match="the model file does not exist"):
        check_mapping(q, {"f": str(tmp_path / "missing.onnx")}, "q")


def test_with_inputs_passes_the_inputs_through_exactly():
    rng = np.random.default_rng(3)
    for depth in (0, 1, 3):
        Ws = [rng.normal(size=(4, 3))] + [rng.normal(size=(4, 4)) for _ in range(depth - 1)] \
            + [rng.normal(size=(2, 4 if depth else 3))]
        Ws = Ws[-1:] if depth == 0 else Ws
        net = Network(Ws, [rng.normal(size=W.shape[0]) for W in Ws])
        both = net.with_inputs()
        for x in rng.normal(size=(5, 3)):
            assert np.allclose(both.forward(x), np.r_[net.forward(x), x])


def test_float32_queries_prove_only_beyond_the_rounding_bound(tmp_path):
    """``y = w x`` with ``w = fl32(0.1)``: the exact max over ``[0, 1]`` is ``w``. A margin of
    1e-8 proves the real query, not the float32 one (the rounding bound is wider): unknown."""
    w = np.float32(0.1)
    graph = helper.make_graph([helper.make_node("Mul", ["x", "w"], ["y"])], "mul",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
                              [numpy_helper.from_array(np.array([w], np.float32), "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    path = str(tmp_path / "mul.onnx")
    onnx.save(model, path)
    for t, want in (("real", "unsat"), ("float32", "unknown")):
        q = parse_query(HEAD + f"(declare-network N (declare-input X {t} [1]) (declare-output Y "
                               f"{t} [1]))\n(assert (>= X[0] 0.0)) (assert (<= X[0] 1.0))\n"
                               f"(assert (>= Y[0] {float(w) + 1e-8!r}))")
        assert decide(q, {"N": path}).answer == want, t
    wide = parse_query(HEAD + "(declare-network N (declare-input X float32 [1]) (declare-output "
                              "Y float32 [1]))\n(assert (>= X[0] 0.0)) (assert (<= X[0] 1.0))\n"
                              "(assert (>= Y[0] 0.11))")
    assert decide(wide, {"N": path}).answer == "unsat"  # far beyond the rounding: proven


def test_isomorphic_networks_take_their_own_files(tmp_path):
    """N2 is isomorphic to N1 with doubled output weights: Y1 - Y2 = -Y1 on equal inputs."""
    one, two = _model(tmp_path / "a.onnx"), _model(tmp_path / "b.onnx", scale=2.0)
    low = -_max([-1, 0, 0, 0])  # min of Y1[0,0] over the box (MILP)
    text = (HEAD + "(declare-network N1 (declare-input X1 real [1, 2]) (declare-output Y1 real "
            "[1, 2]))\n(declare-network N2 (isomorphic-to N1) (declare-input X2 real [1, 2]) "
            "(declare-output Y2 real [1, 2]))\n" + BOX.replace("X[", "X1[")
            + "(assert (== X2[0,0] X1[0,0])) (assert (== X2[0,1] X1[0,1]))\n")
    for c, want in ((-low - 0.05, "sat"), (-low + 0.05, "unsat")):
        q = parse_query(text + f"(assert (>= (- Y1[0,0] Y2[0,0]) {c:.6f}))")
        d = decide(q, check_mapping(q, {"N1": one, "N2": two}, "q"))
        assert d.answer == want, (c, d.reason)
    with pytest.raises(ConfigError, match="no model file was supplied for network 'N2'"):
        check_mapping(q, {"N1": one}, "q")


def test_a_model_rewritten_in_place_is_run_anew(tmp_path):
    """The witness check's onnxruntime sessions are keyed by the file's state, not its name."""
    path = _model(tmp_path / "n.onnx")
    q = _query(BOX + "(assert (>= Y[0,0] 1.5))")
    first = decide(q, {"N": path})
    _model(tmp_path / "n.onnx", scale=-1.0)  # the same path, outputs negated
    second = decide(q, {"N": path})
    for d, sign in ((first, 1.0), (second, -1.0)):
        if d.answer == "sat":
            x = np.array(d.witness.values["X"], float)
            assert d.witness.values["Y"][0] == pytest.approx(sign * _f(x)[0], abs=1e-5)
    assert {first.answer, second.answer} <= {"sat", "unsat"}
    assert (first.answer == "sat") == (_max([1, 0, 0, 0]) >= 1.5)
    assert (second.answer == "sat") == (_max([-1, 0, 0, 0]) >= 1.5)
