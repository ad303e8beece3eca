"""The plugin manager finds exactly the hook implementations pluggy's own manager finds."""
import gc
import types
import weakref

import numpy as np
import pluggy

from polytrav import hookimpl
from polytrav.host import hookspecs
from polytrav.host.manager import DEFAULT_PLUGINS, get_plugin_manager
from polytrav.plugins.counterfactual import Counterfactual


def _impls(pm, plugin) -> set[tuple[str, str]]:
    return {(caller.name, impl.function.__name__) for caller in pm.get_hookcallers(plugin) or ()
            for impl in caller.get_hookimpls() if impl.plugin is plugin}


def test_hookimpls_equal_pluggys():
    extra = types.ModuleType("extra")

    @hookimpl(specname="polytrav_add_solvers")
    def other_name():
        return []

    extra.other_name, extra.np, extra.not_a_hook = other_name, np, lambda: None
    plugins = [*(pm_plugin for _, pm_plugin in get_plugin_manager(load_entrypoints=False)
                 .list_name_plugin() if pm_plugin is not None),
               Counterfactual(np.zeros(2)), extra]
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
    holder = Counterfactual(np.zeros(2))
    holder.own = late  # a hook stored on the instance, not its class
    for plugin in (extra, holder):
        ours = get_plugin_manager(load_entrypoints=False, block=DEFAULT_PLUGINS)
        plain = pluggy.PluginManager("polytrav")
        plain.add_hookspecs(hookspecs)
        ours.register(plugin, name="p")
        plain.register(plugin, name="p")
        assert _impls(ours, plugin) == _impls(plain, plugin)
        assert ("polytrav_add_solvers", "late") in _impls(ours, plugin)


def _full(pm, plugin) -> list[tuple]:
    """Every hook implementation of ``plugin`` as pluggy holds it, with its place in the call
    order of its hook."""
    out = []
    for caller in pm.get_hookcallers(plugin) or ():
        for place, impl in enumerate(caller.get_hookimpls()):
            if impl.plugin is plugin:
                out.append((caller.name, place, impl.plugin_name, impl.function.__func__,
                            impl.function.__self__ is plugin, impl.argnames, impl.kwargnames,
                            impl.opts, impl.tryfirst, impl.trylast))
    return sorted(out, key=lambda t: t[:2])


class _Late(Counterfactual):
    """A subclass whose hooks carry pluggy options (order, spec name)."""

    @hookimpl(tryfirst=True)
    def polytrav_begin_run(self, context):
        return super().polytrav_begin_run(context)

    @hookimpl(specname="polytrav_add_solvers", trylast=True)
    def more_solvers(self):
        return []


class _Twice(Counterfactual):
    """Two implementations of one hook (pluggy's own registration every time)."""

    @hookimpl(specname="polytrav_end_run", trylast=True)
    def finish_up(self, context):
        return None


def test_a_further_instance_is_registered_as_pluggy_would(monkeypatch):
    """The second and later instances of a class take the first one's hook implementations
    (one look per class): the same hooks, options, argument names and call order as pluggy's
    own manager gives them, bound to the new instance (the third and later reuse the emptied
    objects of the one before); unregistering, by the instance or by its name, removes them
    and leaves every hook's call order as pluggy's, holding no instance."""
    ours = get_plugin_manager(load_entrypoints=False)
    looks = []
    original = pluggy.PluginManager.register
    monkeypatch.setattr(pluggy.PluginManager, "register",
                        lambda self, plugin, name=None: looks.append(self is ours and
                                                                     type(plugin))
                        or original(self, plugin, name))
    plain = pluggy.PluginManager("polytrav")
    plain.add_hookspecs(hookspecs)
    for dotted, module in ours.list_name_plugin():
        plain.register(module, name=dotted)
    for k, cls in enumerate((Counterfactual, _Late, _Twice, Counterfactual, _Late, _Twice,
                             Counterfactual, _Late)):
        a = cls(np.zeros(2))
        for pm in (ours, plain):
            assert pm.register(a, name="analysis:a") == "analysis:a"
        assert _full(ours, a) == _full(plain, a) and _full(ours, a)
        for pm in (ours, plain):  # by the instance, or by its name
            assert (pm.unregister(a) if k % 2 else pm.unregister(name="analysis:a")) is a
        assert not ours.get_hookcallers(a) and ours.get_plugin("analysis:a") is None
        assert _order(ours) == _order(plain)
    assert looks.count(Counterfactual) <= 1 and looks.count(_Late) == 1  # once per class
    assert looks.count(_Twice) == 2
    assert not ours._like_before  # nothing held after the instances left
    gone = weakref.ref(a)
    del a
    gc.collect()
    assert gone() is None  # the kept hook implementations hold no instance


def _order(pm) -> dict:
    """Every hook's implementations by plugin name, in call order."""
    return {name: [i.plugin_name for i in caller.get_hookimpls()]
            for name, caller in vars(pm.hook).items()}


def test_a_further_instance_still_gets_pluggys_checks():
    """What pluggy refuses it still refuses the second time: a taken name, the same plugin
    twice; and what changed since (a hook added to the class, a hook on the instance) is
    looked at again."""
    import pytest

    pm = get_plugin_manager(load_entrypoints=False)
    first, second = Counterfactual(np.zeros(2)), Counterfactual(np.zeros(2))
    pm.register(first, name="a")
    with pytest.raises(ValueError):
        pm.register(second, name="a")
    pm.register(second, name="b")
    with pytest.raises(ValueError):
        pm.register(second, name="c")

    class Grows(Counterfactual):
        pass

    pm.register(Grows(np.zeros(2)), name="g1")

    @hookimpl(specname="polytrav_add_solvers")
    def added(self):
        return []

    Grows.added = added
    grown = Grows(np.zeros(2))
    pm.register(grown, name="g2")
    assert ("polytrav_add_solvers", "added") in _impls(pm, grown)
    def begin_run(tag):
        def polytrav_begin_run(self, context):
            return tag
        return hookimpl(polytrav_begin_run)

    Grows.polytrav_begin_run = first_begin = begin_run("first")
    pm.register(Grows(np.zeros(2)), name="g3")
    Grows.polytrav_begin_run = second_begin = begin_run("second")  # same namespace sizes
    swapped = Grows(np.zeros(2))
    pm.register(swapped, name="g4")
    functions = {i.function.__func__ for i in pm.hook.polytrav_begin_run.get_hookimpls()
                 if i.plugin is swapped}
    assert functions == {second_begin} and first_begin is not second_begin
    own = Counterfactual(np.zeros(2))
    own.extra = types.MethodType(added, own)
    pm.register(own, name="own")
    assert ("polytrav_add_solvers", "added") in _impls(pm, own)


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
