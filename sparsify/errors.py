"""Exceptions of sparsify that other modules raise and catch.

This module imports nothing heavy (no cvxpy or scikit-learn), so the
command line and ``import sparsify`` can name these exceptions without paying
for the solvers that raise them.
"""

from __future__ import annotations

__all__ = ["SolverError"]


class SolverError(RuntimeError):
    """A solver did not return an optimal solution for a formulation.

    Examples
    --------
    >>> from sparsify.errors import SolverError
    >>> import sparsify.solvers
    >>> sparsify.solvers.SolverError is SolverError
    True
    """
