"""Moved to the plugin host, `sparsify.plugins.registry`; this path still imports its names."""

from sparsify.plugins.registry import (
    BUILTIN_DISTRIBUTION,
    DEFAULT_PLUGINS,
    ENTRY_POINT_GROUP,
    Entry,
    PluginError,
    PluginWarning,
    Registry,
    get_registry,
    register_plugin,
)

__all__ = ["BUILTIN_DISTRIBUTION", "DEFAULT_PLUGINS", "ENTRY_POINT_GROUP", "Entry", "PluginError",
           "PluginWarning", "Registry", "get_registry", "register_plugin"]
