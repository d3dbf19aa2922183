"""Plugin discovery: the registry of formulations, kernels and solver backends.

Loading order, once per process (`get_registry`):

1. sparsify's own kernels and solvers (`sparsify.kernels`, `sparsify.core.backends`),
   `DEFAULT_PLUGINS`;
2. the built-in formulations: the entry points of the ``sparsify`` distribution
   itself (svm, kfd, oneclass, klr, s3vm), always, whatever ``SPARSIFY_PLUGINS``
   says;
3. third-party entry points of the ``sparsify`` group, sorted by distribution
   and entry-point name, limited by ``SPARSIFY_PLUGINS=name1,name2``.

Each plugin is imported, registered and asked for its formulations, kernels and
solvers before the next one loads, so the first registration of a name is
always the earlier plugin's. A name the built-ins have is reserved: a
third-party plugin that registers it is refused, and the warning names that
plugin, its distribution and the built-in. Whatever a plugin raises while it
loads or registers, `SystemExit` and `GeneratorExit` included, becomes a
`PluginWarning` naming the plugin and its distribution; only a real Ctrl-C (a
SIGINT that reached Python's handler while the plugin ran) still interrupts.
``SPARSIFY_STRICT_PLUGINS=1`` (or ``true``, ``yes``, ``on``, in any case) turns
every warning into a `PluginError`; ``0``, ``false``, ``no``, ``off`` or empty
keep warnings. A plugin that calls `os._exit` while it loads is stopped like
one that raises `SystemExit`, and a third-party entry point named like a
built-in one (``svm``) is not imported at all.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import warnings
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any

import pluggy

from sparsify.plugins import hookspecs
from sparsify.plugins.plugin_code import PluginError
from sparsify.plugins.plugin_code import isolated as _isolated
from sparsify.plugins.plugin_code import stopped_exit as _raised

__all__ = [
    "BUILTIN_DISTRIBUTION",
    "DEFAULT_PLUGINS",
    "ENTRY_POINT_GROUP",
    "Entry",
    "PluginError",
    "PluginWarning",
    "Registry",
    "get_registry",
    "register_plugin",
]

ENTRY_POINT_GROUP = "sparsify"
#: The distribution whose entry points are the built-in formulations.
BUILTIN_DISTRIBUTION = "sparsify"
DEFAULT_PLUGINS = ("sparsify.kernels", "sparsify.kernels.taylor", "sparsify.core.backends")
_KINDS = {
    "formulation": "register_formulations",
    "kernel": "register_kernels",
    "solver": "register_solvers",
    "estimator": "register_estimators",
}
_RUN_TIME = "(registered at run time)"
_UNKNOWN_DISTRIBUTION = "unknown distribution"


class PluginWarning(UserWarning):
    """A plugin could not be loaded, or registered something it may not.

    Examples
    --------
    >>> from sparsify.plugins.registry import PluginWarning
    >>> issubclass(PluginWarning, UserWarning)
    True
    """


@dataclass(frozen=True)
class Entry:
    """One registered thing and where it came from.

    ``builtin`` is true for what sparsify's default plugins and its distribution's own
    entry points registered; those names cannot be taken by another plugin.
    """

    kind: str
    name: str
    obj: Any
    plugin: str
    distribution: str
    builtin: bool = False


#: Values of ``SPARSIFY_STRICT_PLUGINS`` (any case) that turn strict mode on; anything else is off.
_TRUE = ("1", "true", "yes", "on")


def _strict() -> bool:
    return os.environ.get("SPARSIFY_STRICT_PLUGINS", "").strip().lower() in _TRUE


def _problem(message: str) -> None:
    """Warn with ``message`` on one line, or raise it as a `PluginError` in strict mode."""
    message = " ".join(message.split())  # exception texts (pluggy's among them) span lines
    if _strict():
        raise PluginError(f"{message} (SPARSIFY_STRICT_PLUGINS is set: unset it to load the "
                          "other plugins and only warn about this one)")
    warnings.warn(message, PluginWarning, stacklevel=3)


def _normalize(distribution: str) -> str:
    """A distribution name as packaging compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", distribution).lower()


def _distribution(ep: EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    name = getattr(dist, "name", None)
    return name if isinstance(name, str) and name else _UNKNOWN_DISTRIBUTION


def _who(plugin: str, distribution: str) -> str:
    return f"sparsify plugin {plugin!r} from {distribution!r}"


def _lint(manager: pluggy.PluginManager, plugin: Any) -> list[str]:
    """Mistakes pluggy lets through silently: unknown hook names, hooks without @hookimpl."""
    problems = []
    for attr in dir(plugin):
        if manager.parse_hookimpl_opts(plugin, attr) is not None:
            if attr not in hookspecs.HOOKS:
                problems.append(f"declares the hook {attr!r}, which sparsify does not define; "
                                f"it is ignored. The hooks are {list(hookspecs.HOOKS)}.")
        elif attr in hookspecs.HOOKS and callable(getattr(plugin, attr, None)):
            problems.append(f"defines {attr}() without the @sparsify.hookimpl decorator; it is "
                            "ignored until decorated.")
    return problems


class Registry:
    """Everything the plugins registered, by kind and name.

    Use `get_registry` rather than building one.
    """

    def __init__(self) -> None:
        self.entries: dict[str, dict[str, Entry]] = {kind: {} for kind in _KINDS}
        self.manager = pluggy.PluginManager("sparsify")
        self.manager.add_hookspecs(hookspecs)
        self._sources: dict[str, str] = {}
        self._builtin_plugins: set[str] = set()

    def _load(self) -> None:
        for module_name in DEFAULT_PLUGINS:
            # sparsify's own modules: a failure here is a bug in sparsify, so it propagates
            self._add(importlib.import_module(module_name), module_name, BUILTIN_DISTRIBUTION,
                      builtin=True)
        builtin: list[EntryPoint] = []
        third_party: list[EntryPoint] = []
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            is_builtin = _normalize(_distribution(ep)) == BUILTIN_DISTRIBUTION
            (builtin if is_builtin else third_party).append(ep)
        for ep in builtin:
            self._load_entry_point(ep, builtin=True)
        # sorted: the order the file system lists distributions in must not pick the winner
        third_party.sort(key=lambda ep: (_normalize(_distribution(ep)), ep.name))
        builtin_names = {ep.name for ep in builtin}
        for ep in self._wanted(third_party, builtin_names):
            if ep.name in builtin_names:  # refused unimported: its code never runs
                _problem(f"{_who(ep.name, _distribution(ep))} was not loaded: the plugin name "
                         f"{ep.name!r} is that of a built-in plugin of {BUILTIN_DISTRIBUTION!r}. "
                         "Give the entry point another name.")
                continue
            self._load_entry_point(ep, builtin=False)

    @staticmethod
    def _wanted(third_party: list[EntryPoint], builtin_names: set[str]) -> list[EntryPoint]:
        """The third-party entry points ``SPARSIFY_PLUGINS`` lets through; warn on unknown names."""
        allowed = os.environ.get("SPARSIFY_PLUGINS")
        if allowed is None:
            return third_party
        wanted = {s.strip() for s in allowed.split(",") if s.strip()}
        available = sorted({ep.name for ep in third_party})
        unknown = sorted(wanted - set(available) - builtin_names)
        if unknown:
            _problem(f"SPARSIFY_PLUGINS names {', '.join(map(repr, unknown))}, which no installed "
                     f"distribution provides in the {ENTRY_POINT_GROUP!r} entry-point group. "
                     f"The third-party entry points are {available} (the built-ins "
                     f"{sorted(builtin_names)} always load); correct the variable or install "
                     "the plugin.")
        return [ep for ep in third_party if ep.name in wanted]

    def _load_entry_point(self, ep: EntryPoint, builtin: bool) -> None:
        dist = _distribution(ep)
        plugin, exc = _isolated(ep.load)
        if exc is not None:
            _problem(f"{_who(ep.name, dist)} failed to load: {_raised(exc)}")
            return
        self._add(plugin, ep.name, dist, builtin=builtin)

    def _add(self, plugin: Any, name: str, dist: str, builtin: bool = False) -> None:
        """Register one plugin object, then collect what its hooks register."""
        if not self._register(plugin, name, dist):
            return
        self._sources[name] = dist
        if builtin:
            self._builtin_plugins.add(name)
        for kind, hook_name in _KINDS.items():
            for impl in getattr(self.manager.hook, hook_name).get_hookimpls():
                if impl.plugin_name == name:
                    self._call(kind, impl)

    def _register(self, plugin: Any, name: str, dist: str) -> bool:
        """Register one plugin object with pluggy; warn (or raise in strict mode) if it is bad."""
        who = _who(name, dist)
        if self.manager.is_registered(plugin):
            # the same object again: register_plugin(module) on a module an entry point loaded
            other = self.manager.get_name(plugin)
            assert other is not None  # a registered plugin has a name
            _problem(f"{who} was not registered again: the same module is already loaded as "
                     f"plugin {other!r} from {self._sources.get(other, _UNKNOWN_DISTRIBUTION)!r}, "
                     "and its formulations, kernels, solvers and estimators are registered.")
            return False
        known = self.manager.get_plugin(name)
        if known is not None:
            _problem(f"{who} was not loaded: the plugin name {name!r} is already taken by the "
                     f"plugin from {self._sources.get(name, _UNKNOWN_DISTRIBUTION)!r}. Give the "
                     "entry point (or register_plugin's name=) another name.")
            return False
        _, exc = _isolated(lambda: self.manager.register(plugin, name=name))
        if isinstance(exc, pluggy.PluginValidationError):
            # pluggy before 1.7 records the plugin before it checks its hooks: take it out
            # again, so that a refused plugin leaves nothing half-registered
            if self.manager.get_plugin(name) is plugin:
                self.manager.unregister(name=name)
            _problem(f"{who} has a hook with a wrong signature and was not loaded: {exc}. The "
                     "hooks and their parameters are listed in sparsify.plugins.hookspecs.")
            return False
        if exc is not None:  # the same object under another name, or plugin code that raised
            _problem(f"{who} could not be registered: {_raised(exc)}")
            return False
        problems, exc = _isolated(lambda: _lint(self.manager, plugin))
        if exc is not None:
            problems = [f"could not be inspected: {_raised(exc)}"]
        for message in problems:
            _problem(f"{who} {message}")
        return True

    def _call(self, kind: str, impl: Any) -> None:
        plugin = impl.plugin_name
        dist = self._sources.get(plugin, _UNKNOWN_DISTRIBUTION)
        builtin = plugin in self._builtin_plugins
        who = _who(plugin, dist)
        # problems are reported after the hook returns, so that strict mode's PluginError
        # is not caught and reworded by the isolation around the plugin's code
        problems: list[str] = []

        def register(obj: Any, formulation: str | None = None,
                     params: dict[str, Any] | None = None) -> None:
            if kind == "estimator":
                # keyed by the formulation it fits: its formulation_class's name unless given
                form = getattr(obj, "formulation_class", None)
                name = formulation if formulation is not None else getattr(form, "name", "")
                value: Any = (obj, dict(params or {}))
            else:
                name, value = getattr(obj, "name", ""), obj
            if not isinstance(name, str) or not name:
                what = ("without formulation= or a formulation_class" if kind == "estimator"
                        else "without a name")
                problems.append(f"{who} registered a {kind} {what}: {obj!r}")
                return
            if kind == "kernel" and ("+" in name or name != name.strip()):
                problems.append(f"{who} registered a kernel named {name!r}; a kernel name "
                                "cannot contain '+' (it joins kernels in a sum, "
                                "kernel='rbf+linear') nor begin or end with a space. Register "
                                "it under another name.")
                return
            known = self.entries[kind].get(name)
            if known is not None and known.builtin and not builtin:
                problems.append(
                    f"{who} registered {kind} {name!r}, the name of a built-in {kind} (plugin "
                    f"{known.plugin!r} from {known.distribution!r}); the built-in is kept and "
                    f"this {kind} is refused. Register it under another name.")
                return
            if known is not None:
                problems.append(
                    f"{who} registered {kind} {name!r}, already registered by plugin "
                    f"{known.plugin!r} from {known.distribution!r}; keeping the first and "
                    f"refusing this one. Register it under another name.")
                return
            self.entries[kind][name] = Entry(kind, name, value, plugin, dist, builtin)

        _, exc = _isolated(lambda: impl.function(register=register))
        if exc is not None:
            problems.append(f"{who} failed in {kind} registration: {_raised(exc)}")
        for message in problems:
            _problem(message)

    def add(self, plugin: Any, name: str, distribution: str = _RUN_TIME) -> None:
        """Register one more plugin object now and collect what its hooks register."""
        self._add(plugin, name, distribution)

    def names(self, kind: str) -> list[str]:
        """Sorted names registered for ``kind`` ('formulation', 'kernel', 'solver' or
        'estimator', whose names are those of the formulations they fit)."""
        return sorted(self.entries[kind])

    def get(self, kind: str, name: str) -> Any:
        """The object registered as ``name``, or a ValueError listing the valid names."""
        if not isinstance(name, str) or name not in self.entries[kind]:
            raise ValueError(
                f"Unknown {kind} {name!r}. Use one of {self.names(kind)}"
                + "."
            )
        return self.entries[kind][name].obj


@functools.cache
def get_registry() -> Registry:
    """Return the process-wide registry, loading plugins on first use.

    Returns
    -------
    Registry
        sparsify's own kernels and solvers, the built-in
        formulations and the third-party plugins, in that order.

    Raises
    ------
    PluginError
        Only with ``SPARSIFY_STRICT_PLUGINS=1``, for the first plugin problem;
        without it, problems are `PluginWarning` s.

    Examples
    --------
    >>> reg = get_registry()
    >>> "rbf" in reg.names("kernel") and "clarabel" in reg.names("solver")
    True
    >>> reg.entries["formulation"]["svm"].builtin
    True
    """
    registry = Registry()
    registry._load()
    return registry


def register_plugin(plugin: Any, name: str | None = None) -> None:
    """Register a plugin in this process without packaging it (a notebook, a script, a test).

    It follows the rules of an installed third-party plugin: it cannot replace a
    built-in's name, and what its hooks raise becomes a `PluginWarning`.

    Parameters
    ----------
    plugin : module or object
        Anything with ``@hookimpl`` functions, like an entry point's target.
    name : str, optional
        The plugin's name; defaults to the module's ``__name__``.

    Examples
    --------
    >>> import types, cvxpy as cp
    >>> from sparsify import Declaration, Formulation, hookimpl
    >>> class Ridge(Formulation):
    ...     name = "doc_ridge"
    ...     def declare(self, out):
    ...         return Declaration(cp.Minimize(cp.sum_squares(out.f - out.y) + out.norm_w2))
    >>> hook = hookimpl(lambda register: register(Ridge))
    >>> plugin = types.SimpleNamespace(register_formulations=hook)
    >>> register_plugin(plugin, "doc_ridge_plugin")
    >>> "doc_ridge" in get_registry().names("formulation")
    True
    """
    label = name or getattr(plugin, "__name__", None)
    if not label:
        raise ValueError("Pass name= for a plugin object that has no __name__.")
    get_registry().add(plugin, label)
