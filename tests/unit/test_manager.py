"""The plugin manager finds exactly the hook implementations pluggy's own manager finds."""
import types

import numpy as np
import pluggy

from polytrav import hookimpl, hookspecs
from polytrav.manager import DEFAULT_PLUGINS, get_plugin_manager
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
