"""The plugin manager finds exactly the hook implementations pluggy's own manager finds."""
import types

import numpy as np
import pluggy

from polytrav import hookimpl
from polytrav.host import hookspecs
from polytrav.host.manager import DEFAULT_PLUGINS, get_plugin_manager


def _impls(pm, plugin) -> set[tuple[str, str]]:
    return {(caller.name, impl.function.__name__) for caller in pm.get_hookcallers(plugin) or ()
            for impl in caller.get_hookimpls() if impl.plugin is plugin}


class Holder:
    """A plugin object with a hook on its class and a method that is not one."""

    @hookimpl
    def polytrav_add_analyses(self):
        return []

    def not_a_hook(self):
        return None


def test_hookimpls_equal_pluggys():
    extra = types.ModuleType("extra")

    @hookimpl(specname="polytrav_add_solvers")
    def other_name():
        return []

    extra.other_name, extra.np, extra.not_a_hook = other_name, np, lambda: None
    plugins = [*(pm_plugin for _, pm_plugin in get_plugin_manager(load_entrypoints=False)
                 .list_name_plugin() if pm_plugin is not None),
               Holder(), extra]
    ours = get_plugin_manager(load_entrypoints=False, block=DEFAULT_PLUGINS)
    plain = pluggy.PluginManager("polytrav")
    plain.add_hookspecs(hookspecs)
    for k, plugin in enumerate(plugins):
        ours.register(plugin, name=f"p{k}")
        plain.register(plugin, name=f"p{k}")
        assert _impls(ours, plugin) == _impls(plain, plugin), plugin
    assert _impls(ours, extra) == {("polytrav_add_solvers", "other_name")}
    specs = {name for name in vars(plain.hook) if plain.hook.__dict__[name].has_spec()}
    assert specs and specs == {name for name in vars(ours.hook) if ours.hook.__dict__[name].has_spec()}


def test_hooks_added_later_and_on_instances_are_found():
    """The per-module/class cache of marked names notices a hook added after a first
    registration, and an instance's own attributes are always looked at."""
    extra = types.ModuleType("extra_later")
    extra.np = np
    first = get_plugin_manager(load_entrypoints=False, block=DEFAULT_PLUGINS)
    first.register(extra, name="extra")
    assert _impls(first, extra) == set()

    @hookimpl(specname="polytrav_add_solvers")
    def late():
        return []

    extra.late = late
    holder = Holder()
    holder.own = late  # a hook stored on the instance, not its class
    for plugin in (extra, holder):
        ours = get_plugin_manager(load_entrypoints=False, block=DEFAULT_PLUGINS)
        plain = pluggy.PluginManager("polytrav")
        plain.add_hookspecs(hookspecs)
        ours.register(plugin, name="p")
        plain.register(plugin, name="p")
        assert _impls(ours, plugin) == _impls(plain, plugin)
        assert ("polytrav_add_solvers", "late") in _impls(ours, plugin)


def test_the_run_calls_its_analyses_directly():
    """A run registers nothing on its manager: its analyses are called by the run, and the
    manager holds the same plugins before, during and after it."""
    from polytrav import Analysis, AnalysisResult, Box, Network, analyze

    seen = []

    class Looks(Analysis):
        name = "looks"

        def begin(self, context):
            seen.append(sorted(name for name, _ in context.pm.list_name_plugin()))

        def visit(self, polytope, context):
            return None

        def finish(self, context):
            return AnalysisResult(self.label, None, self.n_polytopes)

    net = Network.from_arrays([[[1.0, -1.0]], [[1.0]]], [[0.0], [0.0]])
    report = analyze(net, Box([-1, -1], [1, 1]), [Looks(), Looks()])
    assert [r.analysis for r in report] == ["looks", "looks#2"]
    assert seen[0] == seen[1] == sorted(name for name, _ in
                                        get_plugin_manager().list_name_plugin())
    assert not any(name.startswith("analysis:") for name in seen[0])


def test_an_analysis_that_defines_a_hook_is_refused():
    """An Analysis implementing a run hook would be silently ignored: refused when defined."""
    import pytest

    from polytrav import Analysis, PluginError

    with pytest.raises(PluginError, match="override begin, visit, piece_margin and finish"):
        class Hooked(Analysis):  # noqa: F841
            name = "hooked"

            def polytrav_end_run(self, context):
                return None


def test_solver_classes_follow_registrations():
    """The manager's solver classes are asked again when its plugins change."""
    from polytrav.host.manager import solver_classes
    from polytrav.solvers.highs import HighsBackend

    class Extra(HighsBackend):
        name = "highs-extra"

    plugin = types.ModuleType("extra_solvers")

    @hookimpl
    def polytrav_add_solvers():
        return [Extra]

    plugin.polytrav_add_solvers = polytrav_add_solvers
    pm = get_plugin_manager(load_entrypoints=False)
    assert "highs-extra" not in solver_classes(pm)
    pm.register(plugin, name="extra")
    assert solver_classes(pm)["highs-extra"] is Extra
    pm.unregister(plugin)
    assert "highs-extra" not in solver_classes(pm)


def test_solver_classes_of_a_replaced_plugin():
    """A plugin unregistered, collected and replaced by another, which often reuses its
    memory address, is asked again: the manager's answer is not keyed by object ids."""
    import gc

    from polytrav.host.manager import solver_classes
    from polytrav.solvers.highs import HighsBackend

    class Plugin:
        def __init__(self, cls):
            self.cls = cls

        @hookimpl
        def polytrav_add_solvers(self):
            return [self.cls]

    pm = get_plugin_manager(load_entrypoints=False)
    for k in range(20):
        plugin = Plugin(type(f"Extra{k}", (HighsBackend,), {"name": f"highs-extra-{k}"}))
        pm.register(plugin, name="extra")
        assert f"highs-extra-{k}" in solver_classes(pm), k
        pm.unregister(plugin)
        del plugin
        gc.collect()


def test_the_default_solver_registry_is_a_fresh_managers_and_follows_what_it_depends_on(
        monkeypatch):
    from polytrav.host import manager
    from polytrav.solve.backend import SolverBackend

    fresh = dict(get_plugin_manager().polytrav_solver_classes())
    assert manager.solver_classes() == fresh
    assert manager.solver_classes() is not manager.solver_classes()  # a copy each time

    class Extra(SolverBackend):
        name, forms = "extra_lp", frozenset({"lp"})

    plugin = types.ModuleType("polytrav_test_extra_solver")
    plugin.polytrav_add_solvers = hookimpl(lambda: [Extra])
    monkeypatch.setitem(__import__("sys").modules, plugin.__name__, plugin)
    monkeypatch.setattr(manager, "DEFAULT_PLUGINS", (*manager.DEFAULT_PLUGINS, plugin.__name__))
    assert manager.solver_classes()["extra_lp"] is Extra  # a new built-in is seen at once
    monkeypatch.setattr(manager, "DEFAULT_PLUGINS", DEFAULT_PLUGINS)
    assert "extra_lp" not in manager.solver_classes()
    monkeypatch.setenv("POLYTRAV_PLUGINS", "nobody")  # a setting: asked again
    assert manager.solver_classes() == fresh
