"""Solver backends: which cvxpy solver, its capabilities, and common tolerances.

Each backend is a small immutable object that says which cones it handles and
how a common tolerance maps to the solver's own options. The default
(``solver="auto"``) is Clarabel; it was
chosen by measurement (accuracy of the duals and speed, see
``benchmarks/solver_choice.py`` and ``docs/solvers.md``); its fallbacks are OSQP
with polishing for quadratic programs (slower, but the most accurate duals), then
ECOS.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any

import cvxpy as cp

from sparsify.hookspecs import hookimpl

__all__ = ["AUTO_CHAIN", "SolverBackend", "SolverError"]

# OSQP 1.0 renamed "polish" to "polishing".
_OSQP_POLISH = "polishing" if version("osqp").split(".")[0] not in ("0",) else "polish"

#: ``solver="auto"`` tries these backends in order, skipping those that cannot take
#: the problem (OSQP: quadratic programs only); the next one is used only when the
#: previous one did not return an optimal status.
AUTO_CHAIN = ("clarabel", "osqp", "ecos")


class SolverError(RuntimeError):
    """A solver did not return an optimal solution for a formulation."""


@dataclass(frozen=True)
class SolverBackend:
    """A cvxpy solver and how sparsify drives it.

    Parameters
    ----------
    name : str
        Name users pass (``solver="osqp"``).
    cvxpy_name : str
        The solver's name in cvxpy.
    quadratic_only : bool
        True when the solver handles quadratic programs only (no cones beyond
        the nonnegative orthant), like OSQP.
    warm_start : bool
        Whether re-solves with new parameter values start from the last solution.
    settings : mapping, optional
        Solver keyword options that override those `options` derives from
        the tolerance (for example ``{"max_iter": 50}``); register such a backend
        under a name of its own to use it.

    Examples
    --------
    A Clarabel backend with a lower iteration limit:

    >>> short = SolverBackend("clarabel_short", cp.CLARABEL, settings={"max_iter": 50})
    >>> short.options(1e-8)["max_iter"]
    50
    """

    name: str
    cvxpy_name: str
    quadratic_only: bool = False
    warm_start: bool = False
    # a dict is not hashable: leave it out of the generated __hash__
    settings: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def options(self, tol: float, aim: float = 1e-2) -> dict[str, Any]:
        """Solver keyword options that guarantee accuracy ``tol`` (gap and feasibility).

        The interior-point backends aim ``aim`` × ``tol`` on the gap and take
        ``tol`` as their "reduced accuracy" threshold, so their inaccurate status
        still meets ``tol`` (see `accepts_inaccurate`): their duals, and so
        the gradients, are then as accurate as the primal values. ``aim=1``
        asks for ``tol`` only (the retry after a failure at the tighter aim).
        `settings` override these options.
        """
        return {**self._tolerance_options(tol, aim), **self.settings}

    def _tolerance_options(self, tol: float, aim: float) -> dict[str, Any]:
        aim = max(tol * aim, 1e-15)
        if self.cvxpy_name == cp.CLARABEL:
            return {
                "tol_gap_abs": aim,
                "tol_gap_rel": aim,
                "tol_feas": tol,
                # the κ/τ test is for infeasibility, not accuracy; the retry
                # (aim ≥ 1) relaxes it to Clarabel's default
                "tol_ktratio": tol if aim < tol else 1e-6,
                "reduced_tol_gap_abs": tol,
                "reduced_tol_gap_rel": tol,
                "reduced_tol_feas": tol,
                "reduced_tol_ktratio": tol if aim < tol else 1e-4,
                "max_iter": 500,
            }
        if self.cvxpy_name == cp.ECOS:
            return {
                "abstol": aim,
                "reltol": aim,
                "feastol": tol,
                "abstol_inacc": tol,
                "reltol_inacc": tol,
                "feastol_inacc": tol,
                "max_iters": 500,
            }
        if self.cvxpy_name == cp.OSQP:
            # First-order duals are noisy: tight tolerances plus polishing (an
            # active-set refinement) give exact duals when polishing succeeds.
            return {"eps_abs": tol, "eps_rel": tol, _OSQP_POLISH: True, "max_iter": 200_000}
        return {}

    @property
    def accepts_inaccurate(self) -> bool:
        """Whether cvxpy's 'optimal_inaccurate' still meets ``tol`` with `options`."""
        return self.cvxpy_name in (cp.CLARABEL, cp.ECOS)

    def available(self) -> bool:
        """Whether cvxpy can find this solver in the current environment."""
        return self.cvxpy_name in cp.installed_solvers()


@hookimpl
def register_solvers(register) -> None:  # type: ignore[no-untyped-def]
    register(SolverBackend("clarabel", cp.CLARABEL))
    register(SolverBackend("ecos", cp.ECOS))
    register(SolverBackend("osqp", cp.OSQP, quadratic_only=True, warm_start=True))
