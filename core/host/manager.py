"""The plugin manager: built-in and third-party plugins, found through one registration path.

``get_plugin_manager()`` builds a fresh manager on every call: it adds the hookspecs,
registers the built-in modules named in :data:`DEFAULT_PLUGINS`, loads the ``polytrav``
entry-point group (unless ``POLYTRAV_DISABLE_PLUGIN_AUTOLOAD=1``), and checks that every
implemented hook exists. Nothing happens at import time.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import logging
import os
import sys
import weakref

import pluggy

from polytrav.host import hookspecs
from polytrav.vocabulary.errors import ConfigError, PluginError, SolverNotAvailable, did_you_mean

__all__ = ["DEFAULT_PLUGINS", "get_plugin_manager", "solver_classes", "get_solver",
           "available_solvers", "analysis_classes", "create_analysis", "list_plugins",
           "tracing", "TRACE"]

log = logging.getLogger(__name__)

#: The logger of hook calls: ``POLYTRAV_TRACE_PLUGINS=1`` logs each call (the hook, the
#: plugins it reaches, its arguments and what came back) at INFO, to stderr unless the
#: application configured logging.
TRACE = logging.getLogger("polytrav.trace")


def tracing() -> bool:
    """Whether hook calls are traced (``POLYTRAV_TRACE_PLUGINS=1``)."""
    return os.environ.get("POLYTRAV_TRACE_PLUGINS") == "1"


def _short(value, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _trace(pm) -> None:
    """Log every hook call of ``pm`` (pluggy's documented call monitoring)."""
    if not TRACE.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("polytrav trace: %(message)s"))
        TRACE.addHandler(handler)
    TRACE.setLevel(logging.INFO)

    def before(hook_name, hook_impls, kwargs):
        TRACE.info("%s(%s) -> %s", hook_name,
                   ", ".join(f"{k}={_short(v)}" for k, v in kwargs.items()),
                   [impl.plugin_name for impl in hook_impls])

    def after(outcome, hook_name, hook_impls, kwargs):
        error = outcome.exception
        TRACE.info("%s returned %s", hook_name,
                   f"an error: {error!r}" if error is not None else _short(outcome.get_result()))

    pm.add_hookcall_monitoring(before, after)

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
    "polytrav.plugins.model_diff",
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
    """pluggy's manager, with the distributions of entry-point plugins and a cached solver
    registry.

    Registering looks at every attribute of a plugin (a module's imports); few carry the
    marker, and pluggy's checks of each cost about a millisecond per manager. The names that
    carry it are found once per module or class (:func:`_marked_names`) and only those reach
    pluggy (``parse_hookimpl_opts`` and ``parse_hookspec_opts`` are pluggy's documented
    points of extension); the answers are pluggy's.
    """

    def __init__(self, project_name: str):
        super().__init__(project_name)
        #: plugin name -> (distribution, version) of each plugin loaded from an entry point
        self.polytrav_distributions: dict[str, tuple[str, str]] = {}
        self._solvers: dict[str, type] | None = None  # solver classes of the plugin set

    def register(self, plugin, name: str | None = None):
        self._solvers = None
        return super().register(plugin, name)

    def unregister(self, plugin=None, name: str | None = None):
        self._solvers = None
        return super().unregister(plugin, name)

    def parse_hookimpl_opts(self, plugin, name: str):
        if name not in _own_dict(plugin) and name not in _marked_names(plugin):
            return None
        return super().parse_hookimpl_opts(plugin, name)

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
                log.debug("loaded plugin %r (%s %s) from entry point %s", ep.name, dist_name,
                          version, ep.value)
            except Exception as exc:
                raise PluginError(f"loading the 'polytrav' entry point {ep.name!r} "
                                  f"({ep.value}) failed: {exc}", plugin=ep.name) from exc
            pm.polytrav_distributions[ep.name] = (dist_name, version)
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise PluginError(str(exc), plugin=getattr(exc, "plugin", None)) from exc
    if tracing():
        _trace(pm)
    return pm


#: [(entry points scan, settings, built-in plugins, solver classes)] of a default manager
_DEFAULT_SOLVERS: list[tuple] = []


def solver_classes(pm: pluggy.PluginManager | None = None) -> dict[str, type]:
    """Registered solver backend classes by name, in preference order. Without ``pm``: a
    default manager's, remembered while the installed plugins, the ``POLYTRAV_*`` settings
    and the built-ins stay the same (building a manager costs about a millisecond, which a
    traversal of a small net notices)."""
    if pm is None:
        scan, settings = _entry_points(), (os.environ.get("POLYTRAV_DISABLE_PLUGIN_AUTOLOAD"),
                                           os.environ.get("POLYTRAV_PLUGINS"))
        if not (_DEFAULT_SOLVERS and _DEFAULT_SOLVERS[0][0] is scan
                and _DEFAULT_SOLVERS[0][1:3] == (settings, DEFAULT_PLUGINS)):
            _DEFAULT_SOLVERS[:] = [(scan, settings, DEFAULT_PLUGINS,
                                    get_plugin_manager().polytrav_solver_classes())]
        return dict(_DEFAULT_SOLVERS[0][3])
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
        raise ConfigError(f"{what} needs parameter{'s' if len(missing) > 1 else ''} "
                          f"{', '.join(repr(m) for m in missing)} (it takes {', '.join(takes)})")
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
        if plugin is None:
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
