"""Clarabel: an interior point (homogeneous embedding) for quadratic objectives and cones."""

from __future__ import annotations

from typing import Any, ClassVar

import cvxpy as cp
import numpy as np

from sparsify.core.backends.scs import refine
from sparsify.core.conic_data import ConicData, LinkedProblem
from sparsify.core.solvers import Attempt, ConicResult, SolverBackend

__all__ = ["ClarabelBackend"]

_STATUS = {
    "Solved": cp.OPTIMAL, "AlmostSolved": cp.OPTIMAL_INACCURATE,
    "PrimalInfeasible": cp.INFEASIBLE, "AlmostPrimalInfeasible": cp.INFEASIBLE_INACCURATE,
    "DualInfeasible": cp.UNBOUNDED, "AlmostDualInfeasible": cp.UNBOUNDED_INACCURATE,
    "MaxIterations": cp.USER_LIMIT, "MaxTime": cp.USER_LIMIT,
}


def clarabel_cones(data: ConicData) -> list[Any]:
    """Clarabel's cone list for conic data in its layout."""
    import clarabel

    c = data.cones
    cones: list[Any] = []
    if c.zero:
        cones.append(clarabel.ZeroConeT(c.zero))
    if c.nonneg:
        cones.append(clarabel.NonnegativeConeT(c.nonneg))
    cones += [clarabel.SecondOrderConeT(q) for q in c.soc]
    cones += [clarabel.ExponentialConeT() for _ in range(c.exp)]
    cones += [clarabel.PSDTriangleConeT(n) for n in c.psd]
    cones += [clarabel.PowerConeT(a) for a in c.power]
    return cones


class ClarabelBackend(SolverBackend):
    """Clarabel, called directly on the linked conic data (a general sparse LDL).

    Its answers on second-order and exponential cones are refined by SCS
    started from them (`sparsify.core.backends.scs.refine`).
    """

    layout: ClassVar[str] = cp.CLARABEL
    cvxpy_name: ClassVar[str | None] = cp.CLARABEL
    cones: ClassVar[frozenset[str]] = frozenset({"zero", "nonneg", "soc", "exp", "psd",
                                                 "power"})

    def _tolerance_options(self, tol: float, aim: float) -> dict[str, Any]:
        aim = max(tol * aim, 1e-15)
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

    def attempts(self, tol: float) -> tuple[Attempt, ...]:
        """Aim at tol/100; where that stalls, three retries, then tol, then 1e-8.

        Where Clarabel stalls at the aim (about 8 % of the solves of small KLR
        problems with polynomial kernels), the first two retries reached it in every
        case measured (benchmarks/gradient_accuracy.py, docs/solvers.md): a smaller
        static regularisation of its KKT systems, then shorter steps. Where K_ZZ is
        singular (a cubic kernel at Z = X, 30 points in 3-D: rank 10), its KKT
        factorisation fails instead, on 3 to 8 % of round-off perturbations of the
        data whatever the first two; a larger regularisation (undone by its iterative
        refinement) solved 120 of 120 (docs/reliability.md).
        """
        return self._interior_point_attempts(tol, (
            ("less regularisation", {"static_regularization_constant": 1e-12}, 1.0),
            ("shorter steps", {"max_step_fraction": 0.9}, 1.0),
            ("more regularisation", {"static_regularization_constant": 1e-7}, 1.0)))

    def solve(self, problem: LinkedProblem, attempt: Attempt) -> ConicResult:
        import clarabel

        data, scale = problem.linked(), attempt.objective_scale
        settings = clarabel.DefaultSettings()
        settings.verbose = False
        for key, value in attempt.options.items():
            setattr(settings, key, value)
        P = data.P_upper()
        solver = clarabel.DefaultSolver(scale * P, scale * data.c, data.A, data.b,
                                        clarabel_cones(data), settings)
        solution = solver.solve()
        status = _STATUS.get(str(solution.status), f"error ({solution.status})")
        x, z = np.asarray(solution.x), np.asarray(solution.z)
        del solver, solution  # Clarabel's factor, freed before SCS builds its own
        if status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) and data.cones.kinds & {"soc", "exp"}:
            x, z = refine(data, x, z, settings.tol_feas / 10, scale)
        return ConicResult(status, x, z)
