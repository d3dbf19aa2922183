"""OSQP: first-order (ADMM) for quadratic programs, with polishing for exact duals."""

from __future__ import annotations

from importlib.metadata import version
from typing import Any, ClassVar

import cvxpy as cp
import numpy as np

from sparsify.core.conic_data import LinkedProblem
from sparsify.core.solvers import Attempt, ConicResult, SolverBackend

__all__ = ["OSQPBackend"]

# OSQP 1.0 renamed "polish" to "polishing".
POLISH = "polishing" if version("osqp").split(".")[0] not in ("0",) else "polish"


class OSQPBackend(SolverBackend):
    """OSQP with tight tolerances and polishing: exact duals, or an error.

    Quadratic programs only (the orthant); one attempt, since polishing gives
    exact duals or nothing.
    """

    layout: ClassVar[str] = cp.OSQP
    cvxpy_name: ClassVar[str | None] = cp.OSQP
    cones: ClassVar[frozenset[str]] = frozenset({"zero", "nonneg"})
    warm_start: ClassVar[bool] = True

    def _tolerance_options(self, tol: float, aim: float) -> dict[str, Any]:
        # First-order duals are noisy: tight tolerances plus polishing (an
        # active-set refinement) give exact duals when polishing succeeds.
        return {"eps_abs": tol, "eps_rel": tol, POLISH: True, "max_iter": 200_000}

    def solve(self, problem: LinkedProblem, attempt: Attempt) -> ConicResult:
        import osqp

        data, scale = problem.linked(), attempt.objective_scale
        n_eq = data.cones.zero
        lower = np.concatenate([data.b[:n_eq], np.full(len(data.b) - n_eq, -np.inf)])
        options = {"verbose": False, **attempt.options}
        model = osqp.OSQP()
        model.setup(P=scale * data.P_upper(), q=scale * data.c, A=data.A, l=lower, u=data.b,
                    **options)
        try:
            result = model.solve(raise_error=False)
        except TypeError:  # OSQP < 1.0 has no raise_error
            result = model.solve()
        status = str(result.info.status).lower()
        polish = options.get(POLISH, False)
        if status == "solved" and polish and getattr(result.info, "status_polish", 1) != 1:
            # without the polish's active-set solve the duals are first-order only:
            # gradients off by up to 1e-5 where the polished ones are within 1e-8
            status = "unpolished (OSQP's polishing failed, so its duals are not accurate)"
        elif status == "solved":
            status = cp.OPTIMAL
        elif status == "solved inaccurate":
            status = cp.OPTIMAL_INACCURATE
        elif "infeasible" in status:
            status = cp.INFEASIBLE if "dual" not in status else cp.UNBOUNDED
        elif "maximum iterations" in status or "time limit" in status:
            status = cp.USER_LIMIT
        else:
            status = f"error (OSQP: {result.info.status})"
        return ConicResult(status, np.asarray(result.x), np.asarray(result.y))
