"""SCS (first-order, splitting conic solver), and its refinement of other solvers' answers."""

from __future__ import annotations

from typing import Any, ClassVar

import cvxpy as cp
import numpy as np
from numpy.typing import NDArray

from sparsify.core.conic_data import ConicData, LinkedProblem
from sparsify.core.solvers import Attempt, ConicResult, SolverBackend

__all__ = ["SCSBackend", "refine", "scs_problem"]

Array = NDArray[np.float64]

_STATUS = {1: cp.OPTIMAL, 2: cp.OPTIMAL_INACCURATE, -1: cp.UNBOUNDED,
           -6: cp.UNBOUNDED_INACCURATE, -2: cp.INFEASIBLE, -7: cp.INFEASIBLE_INACCURATE}


def scs_problem(data: ConicData, scale: float = 1.0) -> tuple[dict[str, Any], dict[str, Any]]:
    """SCS's problem and cones from conic data in Clarabel's layout (the same rows)."""
    cones = data.cones
    spec: dict[str, Any] = {"z": cones.zero, "l": cones.nonneg, "q": list(cones.soc),
                            "ep": cones.exp, "s": list(cones.psd), "p": list(cones.power)}
    problem: dict[str, Any] = {"A": data.A, "b": data.b, "c": scale * data.c}
    if data.P is not None:
        problem["P"] = scale * data.P_upper()
    return problem, spec


def refine(data: ConicData, x: Array, z: Array, eps: float, scale: float = 1.0
           ) -> tuple[Array, Array]:
    """An interior point's answer refined by SCS started from it (primal x, dual z).

    An interior-point answer is accurate to ~√gap, not the gap, along directions
    where the objective is nearly flat: on the minimax probability machine (a shift
    of f common to both classes moves only ρ‖w‖²) Clarabel's gradients were off by
    up to 2.7e-5 with W itself exact to 1e-11, ECOS's on kernel ridge by 2e-5. SCS's
    first-order iterations from that point drive the residuals themselves to ``eps``
    (75 iterations at N = 40); where they do not get there, the answer stands.
    """
    import scs

    problem, cones = scs_problem(data, scale)
    solver = scs.SCS(problem, cones, eps_abs=eps, eps_rel=eps, eps_infeas=eps,
                     max_iters=5000, verbose=False)
    result = solver.solve(warm_start=True, x=x, y=z, s=data.b - data.A @ x)
    if int(result["info"]["status_val"]) != 1:
        return x, z
    return np.asarray(result["x"]), np.asarray(result["y"])


class SCSBackend(SolverBackend):
    """SCS: first-order (operator splitting), so not in the auto chain.

    For large cone problems where an interior point's factorisation would not fit;
    without polishing its duals are only as accurate as its tolerance, so it is
    held to a gradient accuracy of 1e-5.
    """

    layout: ClassVar[str] = cp.SCS
    cvxpy_name: ClassVar[str | None] = cp.SCS
    cones: ClassVar[frozenset[str]] = frozenset({"zero", "nonneg", "soc", "exp", "psd",
                                                 "power"})

    def _tolerance_options(self, tol: float, aim: float) -> dict[str, Any]:
        # first-order, without polishing: only tight tolerances, and time
        return {"eps_abs": tol, "eps_rel": tol, "eps_infeas": tol, "max_iters": 200_000}

    def solve(self, problem: LinkedProblem, attempt: Attempt) -> ConicResult:
        import scs

        spec, cones = scs_problem(problem.linked(), attempt.objective_scale)
        options = {"verbose": False, **attempt.options}
        result = scs.solve(spec, cones, **options)
        flag = int(result["info"]["status_val"])
        status = _STATUS.get(flag, f"error (SCS status {result['info']['status']})")
        return ConicResult(status, np.asarray(result["x"]), np.asarray(result["y"]))
