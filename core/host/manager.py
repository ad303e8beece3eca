"""The plugin manager: built-in and third-party plugins, found through one registration path.

``get_plugin_manager()`` builds a fresh manager on every call: it adds the hookspecs,
registers the built-in modules named in :data:`DEFAULT_PLUGINS`, loads the ``polytrav``
entry-point group (unless ``POLYTRAV_DISABLE_PLUGIN_AUTOLOAD=1``), and checks that every
implemented hook exists. Nothing happens at import time.
"""
from __future__ import annotations

import copy
import importlib
import importlib.metadata
import inspect
import os
import sys
import types
import weakref

import pluggy

from polytrav.host import hookspecs
from polytrav.vocabulary.errors import ConfigError, PluginError, SolverNotAvailable, did_you_mean

__all__ = ["DEFAULT_PLUGINS", "get_plugin_manager", "solver_classes", "get_solver",
           "available_solvers", "analysis_classes", "create_analysis", "list_plugins"]

#: Built-in plugin modules, registered before entry points.
DEFAULT_PLUGINS: tuple[str, ...] = (
    "polytrav.solvers",
    "polytrav.plugins.output_range",
    "polytrav.plugins.adversarial",
    "polytrav.plugins.counterfactual",
    "polytrav.plugins.monotonicity",
    "polytrav.plugins.linear_property",
    "polytrav.plugins.region_stats",
    "polytrav.plugins.local_model",
)


_SCAN: dict[tuple, list] = {}


def _entry_points() -> list[tuple]:
    """``(entry point, distribution name, version)`` of every ``polytrav`` entry point.

    Scanning the installed distributions costs milliseconds, which short runs notice, so the
    scan is reused while ``sys.path`` and the modification times of its folders (installing
    or removing a package changes them) stay the same.
    """
    def mtime(path):
        try:
            return os.stat(path or ".").st_mtime_ns
        except OSError:
            return None

    key = (importlib.metadata.distributions, tuple((p, mtime(p)) for p in sys.path))
    if key not in _SCAN:
        _SCAN.clear()
        _SCAN[key] = [(ep, dist.metadata["Name"], dist.version)
                      for dist in importlib.metadata.distributions()
                      for ep in dist.entry_points if ep.group == "polytrav"]
    return _SCAN[key]


class _PluginManager(pluggy.PluginManager):
    """pluggy's manager, with non-hook attributes turned away before pluggy looks at them.

    Registering looks at every attribute of a plugin (a module's imports, an analysis's
    methods); few carry the marker, and pluggy's checks of each cost about a millisecond per
    run. The names that carry the marker are found once per module or class
    (:func:`_marked_names`; an instance's own attributes are looked at when they are
    functions or methods, the only instance values pluggy hooks); the answers are pluggy's.
    ``parse_hookimpl_opts`` and ``parse_hookspec_opts`` are pluggy's documented points of
    extension. A further instance of a class registered before takes pluggy's answer for the
    earlier one (:meth:`_register_like_before`): this one step uses pluggy's internals
    (``_name2plugin``, ``HookCaller._add_hookimpl``), stable since pluggy 1.0, and
    ``tests/unit/test_manager.py`` compares its result with pluggy's own.
    """

    _looked_at = (None, frozenset())  # (plugin being registered, names worth pluggy's look)

    def __init__(self, project_name: str):
        super().__init__(project_name)
        #: plugin name -> (distribution, version) of each plugin loaded from an entry point
        self.polytrav_distributions: dict[str, tuple[str, str]] = {}
        self._solvers: dict[str, type] | None = None  # solver classes of the plugin set
        #: id -> (instance, name, hook callers, its class's _CLASS_IMPLS entry, hook
        #: implementations) of each instance registered like before
        self._like_before: dict[int, tuple] = {}
        #: class -> (its _CLASS_IMPLS entry, the hook implementations of its last instance
        #: registered like before, since unregistered), rebound for its next instance
        self._spare: dict[type, tuple] = {}
        #: class -> (its _CLASS_IMPLS entry, the hook callers its instances join)
        self._callers: dict[type, tuple] = {}

    def register(self, plugin, name: str | None = None):
        own = {k for k, v in _own_dict(plugin).items()  # pluggy hooks only functions here
               if isinstance(v, _FUNCTIONS)}
        try:
            if not own and self._register_like_before(plugin, name):
                return name
            self._looked_at = (plugin, _marked_names(plugin) | own)
            try:
                out = super().register(plugin, name)
            finally:
                self._looked_at = (None, frozenset())
            if not own and out is not None:
                _remember_impls(self, plugin)
            return out
        finally:
            self._solvers = None

    def _register_like_before(self, plugin, name: str | None) -> bool:
        """Register an instance as pluggy registered the last instance of its class, if it
        did and nothing changed since (see :func:`_remember_impls`); False to let pluggy do it.

        Each run of a session registers a new instance of the same analysis classes
        (:func:`polytrav.explain`: one per row), and pluggy's look at every attribute of
        each costs more than the rest of a row's set-up. Its answer for an instance without
        own functions depends only on the class: the same hooks, options and argument
        names, the methods bound to the new instance.
        """
        if name is None or inspect.ismodule(plugin) or inspect.isclass(plugin):
            return False
        try:
            seen = _CLASS_IMPLS.get(type(plugin))
        except TypeError:
            return False
        if seen is None or seen[0] != _class_version(type(plugin)) or name in self._name2plugin \
                or any(p is plugin for p in self._name2plugin.values()):
            return False
        if any(getattr(type(plugin), t.function.__name__, None) is not t.function
               for _, t in seen[1]):  # a hook method replaced on the class since
            return False
        known = self._callers.get(type(plugin))
        if known is not None and known[0] is seen:
            callers = known[1]
        else:  # a spec, once there, stays, and so does its being historic or not
            callers = [getattr(self.hook, hook, None) for hook, _ in seen[1]]
            if any(c is None or c.is_historic() or not c.has_spec() for c in callers):
                return False
            self._callers[type(plugin)] = (seen, callers)
        spare = self._spare.pop(type(plugin), None)
        if spare is not None and spare[0] is seen:  # the last instance's, unregistered
            impls = spare[1]
            for impl, (_, template) in zip(impls, seen[1]):
                impl.plugin, impl.plugin_name = plugin, name
                impl.function = template.function.__get__(plugin, type(plugin))
        else:
            impls = [_bound_copy(template, plugin, name) for _, template in seen[1]]
        self._name2plugin[name] = plugin
        for caller, impl in zip(callers, impls):
            caller._add_hookimpl(impl)
        self._like_before[id(plugin)] = (plugin, name, callers, seen, impls)
        return True

    def unregister(self, plugin=None, name: str | None = None):
        """pluggy's ``unregister``; an instance registered like before
        (:meth:`_register_like_before`) leaves the hook callers it was added to, without
        pluggy's look through every hook for them, and its hook implementations are kept
        (emptied) for the next instance of its class."""
        try:
            if plugin is None and name is not None:
                plugin = self._name2plugin.get(name)
            held = self._like_before.pop(id(plugin), None)
            if held is None or held[0] is not plugin or name not in (None, held[1]) \
                    or self._name2plugin.get(held[1]) is not plugin:
                return super().unregister(plugin, name)
            for caller in held[2]:
                caller._remove_plugin(plugin)
            del self._name2plugin[held[1]]
            for impl in held[4]:  # kept for the class's next instance, holding nothing
                impl.plugin = impl.function = None
            self._spare[type(plugin)] = (held[3], held[4])
            return plugin
        finally:
            self._solvers = None

    def parse_hookimpl_opts(self, plugin, name: str):
        held, names = self._looked_at
        if held is plugin and name not in names:
            return None
        if inspect.ismodule(plugin) or inspect.isclass(plugin) or name in _own_dict(plugin):
            return super().parse_hookimpl_opts(plugin, name)
        # an instance's hook defined on its class: pluggy's answer for the class, kept per
        # class (each run registers a new instance of the same analysis class)
        cls = type(plugin)
        version = _class_version(cls)
        try:
            hit = _CLASS_OPTS.get(cls)
        except TypeError:
            return super().parse_hookimpl_opts(plugin, name)
        if hit is None or hit[0] != version:
            hit = (version, {})
            _CLASS_OPTS[cls] = hit
        if name not in hit[1]:
            hit[1][name] = super().parse_hookimpl_opts(plugin, name)
        return hit[1][name]

    def parse_hookspec_opts(self, module_or_class, name: str):
        if name not in _marked_names(module_or_class, "polytrav_spec"):
            return None
        return super().parse_hookspec_opts(module_or_class, name)

    def polytrav_solver_classes(self) -> dict[str, type]:
        """:func:`solver_classes` of this manager, asked of its plugins once per plugin set
        (registering or unregistering a plugin forgets the answer)."""
        if self._solvers is None:
            self._solvers = _ask_solver_classes(self)
        return self._solvers


#: marker -> {module or class: (sizes of its namespaces, names that carry the marker)}, keyed
#: by the module or class itself and weakly, so an entry goes when its class is collected.
_MARKED: dict[str, weakref.WeakKeyDictionary] = {
    "polytrav_impl": weakref.WeakKeyDictionary(),
    "polytrav_spec": weakref.WeakKeyDictionary(),
}


#: class -> (sizes of its namespaces, {name: pluggy's hookimpl options of an instance's name})
_CLASS_OPTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

#: class -> (sizes of its namespaces, ((hook name, pluggy's HookImpl of an instance, with the
#: plain function and no plugin), ...)), for :meth:`_PluginManager._register_like_before`.
_CLASS_IMPLS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


_FUNCTIONS = (types.FunctionType, types.MethodType)  # what inspect.isfunction/ismethod test


def _class_version(cls) -> tuple:
    return tuple(len(vars(c)) for c in cls.__mro__)


def _bound_copy(template, plugin, name: str):
    """A copy of pluggy's ``HookImpl`` ``template`` for ``plugin`` registered as ``name``
    (its function bound to it); field by field, which costs a fifth of ``copy.copy``."""
    impl = object.__new__(type(template))
    fields = getattr(type(template), "__slots__", None)
    if fields is None:
        impl.__dict__.update(template.__dict__)
    else:
        for field in fields:
            setattr(impl, field, getattr(template, field))
    impl.plugin, impl.plugin_name = plugin, name
    impl.function = template.function.__get__(plugin, type(plugin))
    return impl


def _remember_impls(pm, plugin) -> None:
    """Keep pluggy's hook implementations of a just-registered instance for its class, if
    every one is a method of the class (bound to the instance) and no hook is historic."""
    if inspect.ismodule(plugin) or inspect.isclass(plugin):
        return
    cls = type(plugin)
    impls = []
    for caller in pm.get_hookcallers(plugin) or ():
        mine = [i for i in caller.get_hookimpls() if i.plugin is plugin]
        fn = mine[0].function if len(mine) == 1 else None
        if caller.is_historic() or not inspect.ismethod(fn) or fn.__self__ is not plugin \
                or getattr(cls, fn.__name__, None) is not fn.__func__:
            return
        template = copy.copy(mine[0])  # holds neither the instance nor its bound method
        template.plugin = template.plugin_name = None
        template.function = fn.__func__
        impls.append((caller.name, template))
    try:
        _CLASS_IMPLS[cls] = (_class_version(cls), tuple(impls))
    except TypeError:  # not weakly referable: not remembered
        pass


def _own_dict(plugin) -> dict:
    if inspect.ismodule(plugin) or inspect.isclass(plugin):
        return {}
    try:
        d = object.__getattribute__(plugin, "__dict__")
    except AttributeError:
        return {}
    return d if isinstance(d, dict) else {}


def _marked_names(plugin, marker: str = "polytrav_impl") -> frozenset:
    """Names of ``plugin``'s module or class attributes that carry ``marker`` (pluggy's
    hookimpl or hookspec marker attribute).

    Found once per module or class, and again when one of its namespaces (the class's MRO)
    grows or shrinks, as when a hook is added to a module after a first registration.
    """
    holder = plugin if inspect.ismodule(plugin) or inspect.isclass(plugin) else type(plugin)
    version = tuple(len(vars(c)) for c in getattr(holder, "__mro__", (holder,)))
    cache: weakref.WeakKeyDictionary | None = _MARKED[marker]
    try:
        hit = cache.get(holder)
    except TypeError:  # neither hashable nor weakly referable: not remembered
        hit, cache = None, None
    if hit is None or hit[0] != version:
        names = set()
        for name in dir(holder):
            try:
                value = inspect.getattr_static(holder, name)
            except AttributeError:
                continue
            value = getattr(value, "__func__", value)  # classmethod / staticmethod
            if getattr(value, marker, None) is not None:
                names.add(name)
        hit = (version, frozenset(names))
        if cache is not None:
            cache[holder] = hit
    return hit[1]


def get_plugin_manager(*, load_entrypoints: bool = True, block: tuple[str, ...] = ()) -> pluggy.PluginManager:
    """A fresh plugin manager with the built-ins and (optionally) installed plugins."""
    pm = _PluginManager("polytrav")
    pm.add_hookspecs(hookspecs)
    for name in block:
        pm.set_blocked(name)
    for dotted in DEFAULT_PLUGINS:
        if dotted not in block:
            pm.register(importlib.import_module(dotted), name=dotted)
    if load_entrypoints and os.environ.get("POLYTRAV_DISABLE_PLUGIN_AUTOLOAD") != "1":
        allow = {n.strip() for n in os.environ.get("POLYTRAV_PLUGINS", "").split(",") if n.strip()}
        for ep, dist_name, version in _entry_points():
            if ep.name in block or pm.get_plugin(ep.name) or (allow and ep.name not in allow):
                continue
            try:
                plugin = ep.load()
                pm.register(plugin, name=ep.name)
            except Exception as exc:
                raise PluginError(f"loading the 'polytrav' entry point {ep.name!r} "
                                  f"({ep.value}) failed: {exc}", plugin=ep.name) from exc
            pm.polytrav_distributions[ep.name] = (dist_name, version)
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise PluginError(str(exc), plugin=getattr(exc, "plugin", None)) from exc
    return pm


def solver_classes(pm: pluggy.PluginManager | None = None) -> dict[str, type]:
    """Registered solver backend classes by name, in preference order."""
    pm = pm or get_plugin_manager()
    if isinstance(pm, _PluginManager):
        return dict(pm.polytrav_solver_classes())
    return _ask_solver_classes(pm)


def _ask_solver_classes(pm: pluggy.PluginManager) -> dict[str, type]:
    out: dict[str, type] = {}
    for batch in reversed(pm.hook.polytrav_add_solvers()):  # pluggy calls last-registered first
        for cls in batch:
            out.setdefault(cls.name, cls)
    return out


def available_solvers(form: str | None = None, pm: pluggy.PluginManager | None = None) -> list[str]:
    """Names of installed backends (serving ``form`` if given), in preference order."""
    return [
        name for name, cls in solver_classes(pm).items()
        if cls.is_available() and (form is None or form in cls.forms)
    ]


def get_solver(solver, *, options: dict | None = None, pm: pluggy.PluginManager | None = None):
    """A backend instance from a name, a backend class or an instance."""
    from polytrav.solve.backend import SolverBackend

    if isinstance(solver, SolverBackend):
        return solver
    if isinstance(solver, type) and issubclass(solver, SolverBackend):
        cls = solver
    else:
        classes = solver_classes(pm)
        if solver not in classes:
            raise ConfigError(f"unknown solver {solver!r}{did_you_mean(solver, classes)}; "
                              f"known solvers: {sorted(classes)}")
        cls = classes[solver]
    if not cls.is_available():
        hint = f'pip install "{cls.extra}"' if cls.extra else f"pip install {' '.join(cls.required_modules)}"
        raise SolverNotAvailable(
            f"solver {cls.name!r} is not available (available: {available_solvers(pm=pm)}); "
            f"install it with {hint}"
        )
    return cls(options)


def analysis_classes(pm: pluggy.PluginManager | None = None) -> dict[str, type]:
    """Registered analysis classes by name (built-ins first, then entry points)."""
    pm = pm or get_plugin_manager()
    out: dict[str, type] = {}
    for batch in reversed(pm.hook.polytrav_add_analyses()):
        for cls in batch:
            if cls.name in out and out[cls.name] is not cls:
                raise PluginError(f"two analyses are registered as {cls.name!r}: "
                                  f"{out[cls.name].__module__} and {cls.__module__}")
            out[cls.name] = cls
    return out


def check_options(fn, options: dict, what: str) -> list[str]:
    """Check ``options`` against the parameters of ``fn`` (a method: its first is skipped):
    a :class:`ConfigError` names ``what`` and the options it does not take (with a
    did-you-mean) or the required ones missing. Returns the parameters it takes."""
    sig = inspect.signature(fn)
    takes = [p for p in list(sig.parameters)[1:]
             if sig.parameters[p].kind not in (inspect.Parameter.VAR_POSITIONAL,
                                               inspect.Parameter.VAR_KEYWORD)]
    unknown = sorted(set(options) - set(takes))
    if unknown and not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
        hint = did_you_mean(unknown[0], takes) if len(unknown) == 1 else ""
        raise ConfigError(f"{what} does not take parameter(s) {unknown}{hint}; "
                          f"it takes {takes}")
    missing = [p for p in takes if p not in options
               and sig.parameters[p].default is inspect.Parameter.empty]
    if missing:
        raise ConfigError(f"{what} needs parameter(s) {missing} (it takes {takes})")
    return takes


def create_analysis(name: str, *, pm: pluggy.PluginManager | None = None, **params):
    """An analysis instance from its registered name and parameters.

    Raises :class:`ConfigError` for an unknown name (listing the known ones) and for a
    parameter the analysis does not take (listing the ones it takes).
    """
    classes = analysis_classes(pm)
    if name not in classes:
        raise ConfigError(f"unknown analysis {name!r}{did_you_mean(name, classes)}; "
                          f"known analyses: {sorted(classes)}")
    cls = classes[name]
    check_options(cls.__init__, params, f"analysis {name!r}")
    try:
        return cls(**params)
    except TypeError as exc:
        raise ConfigError(f"analysis {name!r}: {exc}") from exc


def list_plugins(pm: pluggy.PluginManager | None = None) -> list[dict]:
    """Every registered plugin: name, distribution, version, hooks, analyses and solvers."""
    __version__ = importlib.metadata.version("polytrav")
    pm = pm or get_plugin_manager()
    out = []
    for name, plugin in pm.list_name_plugin():
        if plugin is None or name.startswith("analysis:"):
            continue
        dist, version = pm.polytrav_distributions.get(name, ("polytrav", __version__))
        hooks = sorted(h.name for h in pm.get_hookcallers(plugin) or ())
        provided = {}
        for hook in ("polytrav_add_analyses", "polytrav_add_solvers"):
            impl = getattr(plugin, hook, None)
            if impl is not None and hook in hooks:
                provided[hook] = [cls.name for cls in impl()]
        out.append({
            "name": name, "distribution": dist, "version": version, "hooks": hooks,
            "analyses": provided.get("polytrav_add_analyses", []),
            "solvers": provided.get("polytrav_add_solvers", []),
        })
    return out
