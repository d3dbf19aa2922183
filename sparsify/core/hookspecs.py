"""Moved to the plugin host, `sparsify.plugins.hookspecs`; this path still imports its names."""

from sparsify.plugins.hookspecs import HOOKS, hookimpl, hookspec

__all__ = ["HOOKS", "hookimpl", "hookspec"]
