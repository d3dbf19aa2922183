"""ECOS: an interior point for second-order and exponential cones (no quadratic objective)."""

from __future__ import annotations

from typing import Any, ClassVar

import cvxpy as cp
import numpy as np

from sparsify.core.backends.scs import refine
from sparsify.core.conic_data import LinkedProblem, ecos_exp_order
from sparsify.core.solvers import Attempt, ConicResult, SolverBackend

__all__ = ["ECOSBackend"]

_STATUS = {0: cp.OPTIMAL, 10: cp.OPTIMAL_INACCURATE, 1: cp.INFEASIBLE,
           11: cp.INFEASIBLE_INACCURATE, 2: cp.UNBOUNDED, 12: cp.UNBOUNDED_INACCURATE,
           -1: cp.USER_LIMIT}


class ECOSBackend(SolverBackend):
    """ECOS, called directly; cvxpy gives it a quadratic objective as a second-order cone.

    Its answers are refined by SCS started from them
    (`sparsify.core.backends.scs.refine`).
    """

    layout: ClassVar[str] = cp.ECOS
    cvxpy_name: ClassVar[str | None] = cp.ECOS
    cones: ClassVar[frozenset[str]] = frozenset({"zero", "nonneg", "soc", "exp"})

    def _tolerance_options(self, tol: float, aim: float) -> dict[str, Any]:
        aim = max(tol * aim, 1e-15)
        return {"abstol": aim, "reltol": aim, "feastol": tol, "abstol_inacc": tol,
                "reltol_inacc": tol, "feastol_inacc": tol, "max_iters": 500}

    def attempts(self, tol: float) -> tuple[Attempt, ...]:
        """Aim at tol/100, again with the objective × 10, then tol, then 1e-8.

        ECOS's line search on exponential cones can fail at its first iterations;
        the same problem with the objective times 10 went through in 176 of 186
        such stalls measured (docs/solvers.md), most of them to the aim.
        """
        return self._interior_point_attempts(tol, (("objective x 10", {}, 10.0),))

    def solve(self, problem: LinkedProblem, attempt: Attempt) -> ConicResult:
        import ecos
        from cvxpy.reductions.solvers.conic_solvers.ecos_conif import dims_to_solver_dict

        data, scale = problem.linked(), attempt.objective_scale
        cones = data.cones
        n_eq = cones.zero
        A = data.A.tocsr()
        order = ecos_exp_order(n_eq, cones)  # back to ECOS's (x, z, y)
        G = A[order[n_eq:]].tocsc()
        h = data.b[order[n_eq:]]

        class _Dims:  # what cvxpy's dims_to_solver_dict reads
            nonneg, soc, exp = cones.nonneg, list(cones.soc), cones.exp

        options = {"verbose": False, **attempt.options}
        result = ecos.solve(scale * data.c, G, h, dims_to_solver_dict(_Dims), A[:n_eq].tocsc(),
                            data.b[:n_eq], **options)
        flag = int(result["info"]["exitFlag"])
        status = _STATUS.get(flag, f"error (ECOS exit flag {flag})")
        x = np.asarray(result["x"])
        z = np.concatenate([result["y"], result["z"]])[order]
        if status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
            x, z = refine(data, x, z, float(options.get("feastol", 1e-8)) / 10, scale)
        return ConicResult(status, x, z)
