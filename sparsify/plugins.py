"""Plugin discovery: the registry of formulations, kernels and solver backends.

The core's own kernels and solvers are listed in `DEFAULT_PLUGINS` and
registered like any plugin; everything else, the built-in formulations
included, comes from the ``sparsify`` entry-point group. Each entry point loads
in its own ``try``: a broken plugin warns with its distribution's name and the
rest keeps working (``SPARSIFY_STRICT_PLUGINS=1`` turns the warning into an
error). ``SPARSIFY_PLUGINS=name1,name2`` limits which entry points load.
"""

from __future__ import annotations

import functools
import importlib
import os
import warnings
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

import pluggy

from sparsify import hookspecs

__all__ = [
    "DEFAULT_PLUGINS",
    "ENTRY_POINT_GROUP",
    "PluginWarning",
    "Registry",
    "get_registry",
    "register_plugin",
]

ENTRY_POINT_GROUP = "sparsify"
DEFAULT_PLUGINS = ("sparsify.kernels", "sparsify.taylor", "sparsify.solvers")
_KINDS = {
    "formulation": "register_formulations",
    "kernel": "register_kernels",
    "solver": "register_solvers",
}


class PluginWarning(UserWarning):
    """A plugin could not be loaded or registered something twice."""


@dataclass(frozen=True)
class Entry:
    """One registered thing and where it came from."""

    kind: str
    name: str
    obj: Any
    plugin: str
    distribution: str


def _strict() -> bool:
    return os.environ.get("SPARSIFY_STRICT_PLUGINS", "") not in ("", "0", "false")


def _problem(message: str) -> None:
    if _strict():
        raise RuntimeError(message)
    warnings.warn(message, PluginWarning, stacklevel=3)


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

    def _load(self) -> None:
        for module_name in DEFAULT_PLUGINS:
            self.manager.register(importlib.import_module(module_name), name=module_name)
            self._sources[module_name] = "sparsify"
        allowed = os.environ.get("SPARSIFY_PLUGINS")
        wanted = None if allowed is None else {s.strip() for s in allowed.split(",") if s.strip()}
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            if wanted is not None and ep.name not in wanted:
                continue
            dist = ep.dist.name if ep.dist is not None else "unknown distribution"
            try:
                plugin = ep.load()
            except Exception as exc:  # a broken plugin must not take the host down
                _problem(f"sparsify plugin {ep.name!r} from {dist!r} failed to load: {exc!r}")
                continue
            if self._register(plugin, ep.name, dist):
                self._sources[ep.name] = dist
        for kind, hook_name in _KINDS.items():
            for impl in getattr(self.manager.hook, hook_name).get_hookimpls():
                self._call(kind, impl)

    def _register(self, plugin: Any, name: str, dist: str) -> bool:
        """Register one plugin object; warn (or raise in strict mode) and skip it if it is bad."""
        try:
            # pluggy checks every hook's parameters against the spec before it changes any
            # state, so a refused plugin leaves nothing half-registered.
            self.manager.register(plugin, name=name)
        except pluggy.PluginValidationError as exc:
            _problem(f"sparsify plugin {name!r} from {dist!r} has a hook with a wrong signature "
                     f"and was not loaded: {exc}. The hooks and their parameters are listed in "
                     "sparsify.hookspecs.")
            return False
        except ValueError as exc:  # the same name or object twice
            _problem(f"sparsify plugin {name!r} from {dist!r} could not be registered: {exc}")
            return False
        for message in _lint(self.manager, plugin):
            _problem(f"sparsify plugin {name!r} from {dist!r} {message}")
        return True

    def _call(self, kind: str, impl: Any) -> None:
        plugin = impl.plugin_name
        dist = self._sources.get(plugin, "unknown distribution")

        def register(obj: Any) -> None:
            name = getattr(obj, "name", "")
            if not isinstance(name, str) or not name:
                _problem(f"sparsify plugin {plugin!r} from {dist!r} registered a {kind} "
                         f"without a name: {obj!r}")
                return
            known = self.entries[kind].get(name)
            if known is not None:
                _problem(f"sparsify plugin {plugin!r} from {dist!r} registered {kind} {name!r}, "
                         f"already registered by {known.plugin!r}; keeping the first.")
                return
            self.entries[kind][name] = Entry(kind, name, obj, plugin, dist)

        try:
            impl.function(register=register)
        except Exception as exc:
            _problem(f"sparsify plugin {plugin!r} from {dist!r} failed in {kind} registration: "
                     f"{exc!r}")

    def add(self, plugin: Any, name: str, distribution: str = "(registered at run time)") -> None:
        """Register one more plugin object now and collect what its hooks register."""
        if not self._register(plugin, name, distribution):
            return
        self._sources[name] = distribution
        for kind, hook_name in _KINDS.items():
            for impl in getattr(self.manager.hook, hook_name).get_hookimpls():
                if impl.plugin_name == name:
                    self._call(kind, impl)

    def names(self, kind: str) -> list[str]:
        """Sorted names registered for ``kind`` ('formulation', 'kernel' or 'solver')."""
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

    Examples
    --------
    >>> reg = get_registry()
    >>> "rbf" in reg.names("kernel") and "clarabel" in reg.names("solver")
    True
    """
    registry = Registry()
    registry._load()
    return registry


def register_plugin(plugin: Any, name: str | None = None) -> None:
    """Register a plugin in this process without packaging it (a notebook, a script, a test).

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
