"""The extension contract: every run hook's return value is honoured as its hookspec says.

Plugins here are not analyses: plain objects with ``@hookimpl`` methods, installed through a
``polytrav`` entry point of a stand-in distribution and loaded by the real plugin manager, as
a third-party package would be. The example package's pruning analysis (``output_bounds``)
is checked against the same run without pruning.
"""
import importlib.metadata

import numpy as np
import pytest
from reference import random_net

from polytrav import (Ball, Box, ConfigError, PluginError, TraversalStatus, Verdict, analyze,
                      hookimpl)
from polytrav.extend import Restrict, Stop

BOX = Box([-1.0, -1.0], [1.0, 1.0])


@pytest.fixture
def install(monkeypatch):
    """``install(plugin)``: make ``plugin`` the only ``polytrav`` entry point of this process."""
    def install(plugin, name="watcher"):
        class EntryPoint:
            group, value, dist = "polytrav", f"tests:{name}", None

            def load(self):
                return plugin

        EntryPoint.name = name

        class Dist:
            entry_points = [EntryPoint()]
            metadata = {"Name": f"{name}-dist"}
            version = "1.0"

        monkeypatch.setenv("POLYTRAV_DISABLE_PLUGIN_AUTOLOAD", "0")
        monkeypatch.delenv("POLYTRAV_PLUGINS", raising=False)
        monkeypatch.setattr(importlib.metadata, "distributions", lambda: [Dist()])
        return plugin

    return install


class Watcher:
    """Counts polytopes; returns ``answer(index)`` from every visit."""

    def __init__(self, answer=lambda index: None):
        self.answer = answer
        self.seen = []

    @hookimpl
    def polytrav_visit_polytope(self, polytope):
        self.seen.append(polytope.index)
        return self.answer(polytope.index)


def _net():
    return random_net(3, 2, [8, 8, 6])


def _violated_property(net):
    """A linear property violated near the start (its analysis stops at the first polytope)."""
    y0 = net.forward(np.zeros(2))[0]
    return {"name": "linear_property", "unsafe": ([[1.0]], [y0 + 1.0]), "mode": "verify"}


def test_a_plugin_that_never_stops_keeps_the_run_going(install):
    net = _net()
    alone = analyze(net, BOX, _violated_property(net))
    assert alone[0].verdict is Verdict.VIOLATED and alone.status is TraversalStatus.STOPPED
    watcher = install(Watcher())
    report = analyze(net, BOX, _violated_property(net))
    assert report.status is TraversalStatus.COMPLETE and report[0].verdict is Verdict.VIOLATED
    assert len(watcher.seen) == report.stats["polytopes"] > alone.stats["polytopes"]


def test_the_run_stops_after_the_last_voter_stops(install):
    net = _net()
    watcher = install(Watcher(lambda index: Stop("seen enough") if index == 4 else None))
    report = analyze(net, BOX, _violated_property(net))
    assert report.status is TraversalStatus.STOPPED and report.decided
    assert report.stats["polytopes"] == 5 and watcher.seen == [0, 1, 2, 3, 4]


def test_a_stop_alone_does_not_stop_an_undecided_analysis(install):
    net = _net()
    install(Watcher(lambda index: Stop()))
    report = analyze(net, BOX, "output_range")
    assert report.complete and report.stats["polytopes"] == analyze(net, BOX, "output_range").stats[
        "polytopes"]


def test_a_voter_that_cannot_prove_pieces_turns_pruning_off(install):
    net = _net()
    prop = _violated_property(net)
    prop["unsafe"] = ([[-1.0]], [-1e6])  # y >= 1e6: holds, proven by bounds alone
    # (settle=False: the settle stage's input split would prove the box before any piece)
    assert sum(analyze(net, BOX, prop, settle=False).stats["proven"]) > 0
    install(Watcher())  # a plugin that visits polytopes: no settle stage, no pruning
    report = analyze(net, BOX, prop)
    assert report[0].verdict is Verdict.HOLDS and sum(report.stats["proven"]) == 0
    assert report.stats["settle"] is None  # nor may the settle stage skip a polytope


class Margin(Watcher):
    def __init__(self, margin):
        super().__init__()
        self.margin, self.asked = margin, 0

    @hookimpl
    def polytrav_piece_margin(self, piece, context):
        self.asked += 1
        return self.margin


def test_piece_margin_skips_a_piece_only_when_every_voter_proves_it(install):
    net = _net()
    prop = _violated_property(net)
    prop["unsafe"] = ([[-1.0]], [-1e6])
    agree = install(Margin(1.0))
    report = analyze(net, BOX, prop)
    assert report[0].verdict is Verdict.HOLDS and report.stats["polytopes"] == 0
    assert agree.asked >= 1 and agree.seen == []
    refuse = install(Margin(-1.0))
    report = analyze(net, BOX, prop)
    assert report[0].verdict is Verdict.HOLDS and sum(report.stats["proven"]) == 0
    assert report.stats["settle"] is None  # nor may the settle stage skip a polytope
    assert refuse.asked >= 1 and len(refuse.seen) == report.stats["polytopes"] > 0
    unsure = install(Margin(None))
    assert sum(analyze(net, BOX, prop).stats["proven"]) == 0 and unsure.asked >= 1


def test_restrict_must_contain_the_start_point(install):
    install(Watcher(lambda index: Restrict(Box([0.5, 0.5], [1.0, 1.0]))))
    with pytest.raises(ConfigError, match="plugin 'watcher': Restrict.*start point"):
        analyze(_net(), BOX, "output_range", start=[0.0, 0.0])


def test_restrict_is_honoured_once_every_voter_asked(install):
    """A counterfactual shrinks its region; a plugin's boxes join its box (their bounding box)."""
    net = _net()
    cf = {"name": "counterfactual", "x0": np.zeros(2), "norm": "inf"}
    alone = analyze(net, BOX, cf)
    assert alone.stats["restrictions"] > 0
    for box, shrinks in ((BOX, False), (Box([-0.1, -0.1], [0.1, 0.1]), True)):
        watcher = install(Watcher(lambda index, box=box: Restrict(box)))
        both = analyze(net, BOX, cf)
        assert (both.stats["restrictions"] > 0) is shrinks
        assert both[0].value == pytest.approx(alone[0].value, abs=1e-7)
        assert len(watcher.seen) == both.stats["polytopes"] >= alone.stats["polytopes"]


def _codes(net, points):
    return {b"".join(np.packbits(layer).tobytes() for layer in net.activation_code(x))
            for x in points}


def _ball_points(ball, n, seed):
    """``n`` random points of ``ball`` (some on its boundary)."""
    rng = np.random.default_rng(seed)
    d = ball.center.size
    if ball.norm == np.inf:
        steps = rng.uniform(-1.0, 1.0, (n, d))
    else:
        steps = rng.standard_normal((n, d)) if ball.norm == 2 else rng.laplace(size=(n, d))
        steps /= np.linalg.norm(steps, ord=ball.norm, axis=1)[:, None]
        steps *= rng.uniform(0.0, 1.0, (n, 1)) ** (1.0 / d)
    steps[: n // 10] /= np.linalg.norm(steps[: n // 10], ord=ball.norm, axis=1)[:, None]
    return ball.center + ball.radius * steps


@pytest.mark.parametrize("norm", [1, 2, np.inf])
def test_a_restrict_ball_keeps_every_polytope_that_meets_it(install, norm):
    """Balls let the traversal skip neighbours without an LP (``flips_far``): every polytope
    meeting a voter's ball is still visited, in every layer of a 3-layer network."""
    net = random_net(11, 2, [10, 10, 8])
    start = np.array([0.3, -0.2])
    ball = Ball(start + [0.05, 0.02], 0.3, norm)
    box = Box(*ball.bounding_box())
    # the traversal's own search (L2's branch and bound would stop it at the second polytope)
    cf = {"name": "counterfactual", "x0": start, "norm": norm, "milp_after": None}
    codes_seen = set()

    class Codes:
        @hookimpl
        def polytrav_visit_polytope(self, polytope):
            codes_seen.add(b"".join(np.packbits(c).tobytes() for c in polytope.code))
            return Restrict(box, ball=ball)

    alone = analyze(net, BOX, cf, start=start)
    install(Codes())
    report = analyze(net, BOX, cf, start=start)
    assert report[0].value == pytest.approx(alone[0].value, abs=1e-7)
    if norm != np.inf:  # an L-inf ball is its box: the box's rows already screen the rows
        assert report.stats["flips_far"] > 0
    missing = _codes(net, _ball_points(ball, 4000, 0)) - codes_seen
    assert not missing, f"{len(missing)} activation codes met in the ball were not visited"


def test_a_restrict_ball_must_contain_the_start_point(install):
    install(Watcher(lambda index: Restrict(BOX, ball=Ball([0.8, 0.8], 0.1))))
    with pytest.raises(ConfigError, match="plugin 'watcher': Restrict's ball.*start point"):
        analyze(_net(), BOX, {"name": "counterfactual", "x0": [0.0, 0.0]}, start=[0.0, 0.0])


def test_a_plugin_that_needs_every_polytope_gets_every_polytope(install):
    """Without a box or a stop from the plugin, a counterfactual's pruning is off."""
    net = _net()
    cf = {"name": "counterfactual", "x0": np.zeros(2), "norm": "inf"}
    alone = analyze(net, BOX, cf)
    everything = analyze(net, BOX, "output_range").stats["polytopes"]
    watcher = install(Watcher())
    both = analyze(net, BOX, cf)
    assert len(watcher.seen) == both.stats["polytopes"] == everything > alone.stats["polytopes"]
    assert both[0].value == pytest.approx(alone[0].value, abs=1e-7)


def test_a_directive_of_the_wrong_type_names_the_plugin(install):
    install(Watcher(lambda index: "stop"))
    with pytest.raises(PluginError, match="plugin 'watcher'.*returned 'stop'"):
        analyze(_net(), BOX, "output_range")


def test_a_wrapper_of_a_voting_hook_is_refused(install):
    class Wrapper:
        @hookimpl(wrapper=True)
        def polytrav_visit_polytope(self):
            return (yield)

    install(Wrapper())
    with pytest.raises(PluginError, match="wraps polytrav_visit_polytope"):
        analyze(_net(), BOX, "output_range")


@pytest.mark.parametrize("inside", [True, False])
def test_the_example_pruning_property_skips_pieces_with_the_same_verdict(example_plugin, inside):
    from polytrav_example import OutputBounds

    net = _net()
    rng = analyze(net, BOX, "output_range")[0].value
    upper = rng["max"] + 0.5 if inside else (rng["min"] + rng["max"]) / 2
    pruned = analyze(net, BOX, OutputBounds(rng["min"] - 0.5, upper))
    full = analyze(net, BOX, OutputBounds(rng["min"] - 0.5, upper, prune=False))
    assert pruned[0].verdict is full[0].verdict
    assert pruned[0].verdict is (Verdict.HOLDS if inside else Verdict.VIOLATED)
    if inside:
        assert sum(pruned.stats["proven"]) > 0 and full.stats["proven"] == [0, 0, 0]
        assert pruned.stats["polytopes"] < full.stats["polytopes"]
    else:
        assert net.forward(pruned[0].witness)[0] > upper


def test_a_voters_ball_only_narrows():
    """A flip skipped for missing a ball is never decided again, so a ball that is not
    provably inside the voter's earlier one (larger, moved, another norm, or none) leaves
    the earlier in force; a ball inside it replaces it."""
    from polytrav.host.manager import get_plugin_manager
    from polytrav.host.steering import Voters

    voters = Voters([], get_plugin_manager())
    start = np.zeros(2)
    first = Ball([0.1, 0.0], 0.5, 2)
    voters._restrict("cf", Restrict(BOX, ball=first), start)
    for later in (Ball([0.1, 0.0], 0.6, 2), Ball([-0.3, 0.0], 0.4, 2),
                  Ball([0.1, 0.0], 0.3, 1), None):
        voters._restrict("cf", Restrict(BOX, ball=later), start)
        assert voters.balls["cf"] is first
    inner = Ball([0.05, 0.0], 0.3, 2)  # 0.05 + 0.3 <= 0.5: provably inside
    voters._restrict("cf", Restrict(BOX, ball=inner), start)
    assert voters.balls["cf"] is inner


def test_a_restrict_ball_of_the_wrong_type_or_size_names_the_plugin(install):
    for ball, message in (("ball", "takes a polytrav.Ball, got str"),
                          (Ball([0.0, 0.0, 0.0], 1.0), "ball has 3 coordinates, the network 2")):
        install(Watcher(lambda index, ball=ball: Restrict(BOX, ball=ball)))
        with pytest.raises(PluginError, match=f"plugin 'watcher': Restrict.*{message}"):
            analyze(_net(), BOX, {"name": "counterfactual", "x0": [0.0, 0.0]}, start=[0.0, 0.0])


def test_tracing_logs_each_hook_call_and_each_voter(install, monkeypatch, caplog):
    """``POLYTRAV_TRACE_PLUGINS=1``: every hook call pluggy dispatches, and every voting call
    made one implementation at a time, is logged with the plugin and its answer."""
    import logging

    monkeypatch.setenv("POLYTRAV_TRACE_PLUGINS", "1")
    watcher = install(Watcher(lambda index: Stop("enough") if index == 1 else None))
    with caplog.at_level(logging.INFO, logger="polytrav.trace"):
        analyze(_net(), BOX, "output_range")
    text = caplog.text
    assert "polytrav_begin_run(context=" in text and "polytrav_end_run returned" in text
    assert "polytrav_visit_polytope(polytope, context) -> watcher returned None" in text
    assert "-> watcher returned Stop(reason='enough')" in text and watcher.seen
