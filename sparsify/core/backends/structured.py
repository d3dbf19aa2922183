"""The structured interior point: the default backend for declared formulations.

It solves the linked problem with `sparsify.core.structured.ipm` on KKT systems
that exploit its structure (`sparsify.core.structured.kkt`): f eliminated by the
link, u and a few dense unknowns in a Schur complement, the formulation's own
variables in small blocks. An iteration costs O(N·Nz² + nnz) where a general
sparse LDL of the linked matrix fills in around Φ's Nz dense columns. It takes
the zero cone, the orthant and second-order cones; a formulation with other
cones, or whose own variables do not split into small blocks, goes to the next
backend of the chain, with the reason.
"""

from __future__ import annotations

from typing import Any, ClassVar

import cvxpy as cp
import numpy as np
from numpy.typing import NDArray

from sparsify.core.backends.scs import refine
from sparsify.core.conic_data import LinkedProblem
from sparsify.core.solvers import Attempt, ConicResult, SolverBackend
from sparsify.core.structured.cones import Cones
from sparsify.core.structured.ipm import IPMResult, IPMSettings, Iterate, solve
from sparsify.core.structured.kkt import KKTStructure, StructureError

__all__ = ["StructuredBackend", "structure_bytes"]

_STATUS = {"optimal": cp.OPTIMAL, "optimal_inaccurate": cp.OPTIMAL_INACCURATE,
           "max_iter": cp.USER_LIMIT}


def structure_bytes(block_entries: int, own_nnz: int, N: int, Nz: int, K: int) -> int:
    """Bytes the structured solve needs beyond Φ (`StructuredBackend.memory`'s estimate).

    ``block_entries`` are the blocks' packed entries, ``own_nnz`` the formulation's
    nonzeros (with its columns and rows); N, Nz and K the sizes. Measured on the
    declared Huber SVM and ε-SVR at 5·10⁴ points: 1.5× and 0.8× the peak.

    Examples
    --------
    >>> structure_bytes(10**6, 10**6, 10**5, 50, 1) / 2**20 < 300
    True
    """
    return int(5 * 8 * block_entries + 12 * 12 * own_nnz + 8 * N * Nz * K)


class StructuredBackend(SolverBackend):
    """The linked problem's own interior point (module docstring).

    Parameters beyond the base class's: ``settings`` takes `IPMSettings` fields
    (``max_iter``, ``step``, ``refine``, and the tolerances, which ``tol`` sets).
    With ``warm_start`` on (``settings={"warm_start": True}``) a solve starts from
    the previous evaluation's solution, moved inside the cone.

    Examples
    --------
    >>> StructuredBackend("structured").options(1e-8)["tol_gap_rel"]
    1e-10
    """

    layout: ClassVar[str] = cp.CLARABEL
    cvxpy_name: ClassVar[str | None] = None
    cones: ClassVar[frozenset[str]] = frozenset({"zero", "nonneg", "soc"})
    warm_start: ClassVar[bool] = True

    def _tolerance_options(self, tol: float, aim: float) -> dict[str, Any]:
        aim = max(tol * aim, 1e-15)
        return {"tol_gap_abs": aim, "tol_gap_rel": aim, "tol_feas": tol, "reduced_tol": tol}

    def attempts(self, tol: float) -> tuple[Attempt, ...]:
        """Aim at tol/100; then tol; then the documented accuracy 1e-8."""
        return self._interior_point_attempts(tol)

    def prepare(self, problem: LinkedProblem) -> str | None:
        structure = self.structure(problem)
        if isinstance(structure, str):
            return structure
        problem.cache[self.name] = {"structure": structure, "start": None}
        return None

    def structure(self, problem: LinkedProblem, plan: bool = True,
                  dense: NDArray[np.intp] | None = None) -> KKTStructure | str:
        """The problem's KKT structure (only its partition without ``plan``; ``dense``
        columns in the Schur complement), or why this backend cannot take the problem."""
        reason = super().prepare(problem)
        if reason is not None:
            return reason
        own, layout = problem.own, problem.layout
        cones = Cones(own.cones.nonneg, own.cones.soc)
        try:
            return KKTStructure(own.P, own.A, own.cones.zero, cones, layout, plan=plan,
                                dense=dense)
        except StructureError as exc:
            return str(exc)

    def memory(self, problem: LinkedProblem) -> int:
        """Bytes beyond the evaluation's own: the blocks, their inverses, the sparse pieces.

        The blocks' packed lower triangles, in the factorisation's buffer, in their
        inverse and in its products with the couplings: about five copies of the
        packed entries at 8 bytes; the formulation's data in the
        stacked and transposed copies the solves use, about twelve times its
        nonzeros at 12 bytes; and Φᵀ H Φ's scaled copy of Φ, per output.
        """
        structure = problem.cache[self.name]["structure"]
        own, layout = problem.own, problem.layout
        own_nnz = own.A.nnz + (own.P.nnz if own.P is not None else 0) + own.n + len(own.b)
        return structure_bytes(structure.block_entries, own_nnz, layout.N, layout.Nz, layout.K)

    @staticmethod
    def status(result: IPMResult) -> str:
        """cvxpy's status name for the interior point's outcome, or an error text."""
        return _STATUS.get(result.status, f"error (the interior point {result.status} after "
                                          f"{result.iterations} iterations)")

    def solve(self, problem: LinkedProblem, attempt: Attempt) -> ConicResult:
        state = problem.cache[self.name]
        own = problem.own
        options = dict(attempt.options)
        warm = bool(options.pop("warm_start", False))
        settings = IPMSettings(**options)
        assert problem.Phi is not None and attempt.objective_scale == 1.0
        start = state["start"] if warm else None
        result = solve(state["structure"], own.c, own.b, problem.Phi, settings, start)
        status = self.status(result)
        point = result.point
        x, z = point.x, np.concatenate([point.nu, point.y])
        if status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
            state["start"] = Iterate(point.x, point.nu, point.y, point.s)
            if own.cones.soc:
                # as Clarabel's: along directions where the objective is nearly flat an
                # interior point's duals are accurate to ~√gap (the minimax probability
                # machine's gradients to 1e-6); SCS from this point drives the residuals
                # themselves down (on the link written out: second-order cone problems only)
                x, z = refine(problem.linked(), x, z, settings.tol_feas / 10)
        return ConicResult(status, x, z)
