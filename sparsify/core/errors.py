"""Exceptions of sparsify that other modules raise and catch.

This module imports nothing heavy (no cvxpy or scikit-learn), so the
command line and ``import sparsify`` can name these exceptions without paying
for the solvers that raise them.
"""

from __future__ import annotations

from sparsify.plugins.plugin_code import PluginError

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

