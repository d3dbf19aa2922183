"""Exceptions of sparsify that other modules raise and catch.

This module imports nothing heavy (no cvxpy or scikit-learn), so the
command line and ``import sparsify`` can name these exceptions without paying
for the solvers that raise them.
"""

from __future__ import annotations

__all__ = ["MemoryEstimateError", "PluginError", "SolverError"]


class SolverError(RuntimeError):
    """A solver did not return an optimal solution for a formulation.

    Examples
    --------
    >>> from sparsify.core.errors import SolverError
    >>> import sparsify.core.solvers
    >>> sparsify.core.solvers.SolverError is SolverError
    True
    """


class MemoryEstimateError(MemoryError, ValueError):
    """A problem would not fit in memory: refused, from an estimate, before anything was allocated.

    A `MemoryError` (what it is about) and a `ValueError` (the input, N and Nz,
    is what to change), so the command line reports it as one line.

    Examples
    --------
    >>> issubclass(MemoryEstimateError, ValueError)
    True
    """


class PluginError(ValueError):
    """A plugin problem: under ``SPARSIFY_STRICT_PLUGINS=1``, or plugin code that tried to exit.

    The message is one line; a subclass of `ValueError`, so the command line
    prints it as ``sparsify: error: ...`` and exits with status 2.
    `sparsify.core.registry.PluginError` is this class.

    Examples
    --------
    >>> from sparsify.core.registry import PluginError
    >>> issubclass(PluginError, ValueError)
    True
    """
