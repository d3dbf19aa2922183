"""A primal-dual interior point for a linked problem, on the structured KKT solves.

The problem is the formulation's conic data with the link, in the layout Clarabel
takes (the signs its duals follow)::

    minimise ½ xᵀP x + cᵀx   subject to   f − Φ u = 0        (dual ν)
                                          A x + s = b, s ∈ {0}^zero × K   (dual y)

with K the nonnegative orthant and second-order cones. The iterations are
Mehrotra's predictor-corrector in Nesterov-Todd scaling, as CVXOPT's coneqp
(Vandenberghe 2010): a predictor (affine) direction, a centring parameter
σ = (μ_aff / μ)³, a corrector with the second-order term, steps to 99 % of the
boundary. Each iteration factors the KKT matrix once
(`sparsify.core.structured.kkt`) and solves with it twice, each solve refined
against the unregularised matrix. A problem with no cone rows is an equality
constrained quadratic program: one KKT solve is its solution (no iterations).

One loop, `interior_point`, serves every problem, as CVXOPT's ``coneqp`` serves
every ``kktsolver``: it holds numbers only and asks a `KKTSystem` for the KKT
solves and the vector work (residuals, right-hand sides, step bounds, moves),
whose sums, inner products and norms it returns. A whole problem in memory is
one `sparsify.core.structured.part.Part` (`solve`); a problem split by row blocks
is `sparsify.core.structured.parts.Parts`, which sums the parts' shares.

The stopping rule is Clarabel's (gap, primal and dual residuals relative to the
data), so that ``tol`` means the same to this backend as to the others. There is
no homogeneous embedding: an infeasible or unbounded problem ends as a failure
(its residuals stop falling), and a general conic solver says which it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from sparsify.core.structured.kkt import KKTStructure
from sparsify.core.structured.part import Iterate, Measured, Part

__all__ = ["IPMResult", "IPMSettings", "Iterate", "KKTSystem", "interior_point", "solve"]

Array = NDArray[np.float64]


@dataclass(frozen=True)
class IPMSettings:
    """Stopping rule and limits (Clarabel's names and meanings).

    Attributes
    ----------
    tol_gap_abs, tol_gap_rel : float
        Stop when |pcost − dcost| ≤ tol_gap_abs or ≤ tol_gap_rel · min(|pcost|, |dcost|) ...
    tol_feas : float
        ... and the primal and dual residuals are within tol_feas of the data's size.
    reduced_tol : float
        An iterate that meets this (gap and feasibility) when the iterations stop
        otherwise is returned as "optimal_inaccurate".
    max_iter : int
    step : float
        Fraction of the step to the boundary taken.
    refine : int
        Most iterative-refinement steps per KKT solve (`_refined`).
    """

    tol_gap_abs: float = 1e-8
    tol_gap_rel: float = 1e-8
    tol_feas: float = 1e-8
    reduced_tol: float = 1e-6
    max_iter: int = 100
    step: float = 0.99
    refine: int = 8


@dataclass
class IPMResult:
    """The outcome of `interior_point`.

    Attributes
    ----------
    status : str
        "optimal", "optimal_inaccurate" (met ``reduced_tol`` only), "max_iter" or
        "stalled" (the steps became too short or the residuals grew: an infeasible,
        unbounded or badly conditioned problem).
    point : Iterate
        The last iterate (the best one where the iterations did not converge), as the
        system gives it (`KKTSystem.finish`).
    iterations : int
    gap, primal_residual, dual_residual : float
        The relative measures of the stopping rule at the last iterate.
    history : list of tuple
        Per iteration: (gap, primal residual, dual residual, step).
    objective : float
        ½ xᵀP x + cᵀx at the point (the formulation's constant not included).
    """

    status: str
    point: Iterate
    iterations: int
    gap: float
    primal_residual: float
    dual_residual: float
    history: list[tuple[float, float, float, float]] = field(default_factory=list)
    objective: float = np.nan


class KKTSystem(Protocol):
    """What `interior_point` asks of a problem: its KKT solves and the work on its vectors.

    The system holds the iterate and every vector; the loop holds numbers. A solve
    goes through the Schur complement of the KKT matrix: its right-hand side is
    reduced to the Schur unknowns (``*_rhs``, `correct`), solved there
    (`schur_solve`), and the solution recovered from them (`expand`). Where the
    vectors are split into parts, each method's numbers are sums (costs, inner
    products, right-hand sides), maxima (norms) or minima (step bounds) over them.
    `sparsify.core.structured.part.Part` (a whole problem) and
    `sparsify.core.structured.parts.Parts` (one split by row blocks) implement it.
    """

    def describe(self) -> tuple[float, float, int]:
        """The largest |b| and |c| of the data and the cones' degree (0: no cone)."""

    def factor(self, scaled: bool) -> Any:
        """Factor the KKT matrix at the iterate's NT scaling, or at W = I (not ``scaled``)."""

    def start_rhs(self) -> tuple[Array, float]:
        """The starting point's right-hand side (−c, 0, b) reduced; its largest entry."""

    def direction_rhs(self, sigma_mu: float | None) -> tuple[Array, float]:
        """The predictor's (None) or the corrector's (centring σμ) right-hand side at the
        iterate, reduced; its largest entry."""

    def schur_solve(self, rhs: Array) -> Array:
        """The Schur unknowns for a reduced right-hand side."""

    def expand(self, xs: Array, residual: bool = False, add: bool = False) -> Any:
        """The solution from the Schur unknowns ``xs`` (added to the current one with
        ``add``); with ``residual``, (the largest entry of its residual, …)."""

    def correct(self, keep: bool) -> Array:
        """Keep the current solution as the best (``keep``); its residual, reduced."""

    def settle(self, keep: bool) -> None:
        """End a refined solve at the current solution (``keep``) or the best one."""

    def bounds(self) -> tuple[float, float]:
        """The direction solved: its largest step inside the cones and Δsᵀ Δz."""

    def shifts(self) -> tuple[float, float, float]:
        """After the start's solve: the smallest eigenvalues of s = −z and of z, |z|'s
        largest entry."""

    def begin(self, shift_s: float | None, shift_z: float | None,
              warm: Iterate | None = None) -> None:
        """The starting point, s and z shifted into the cones; blended with ``warm``."""

    def measure(self) -> Measured:
        """The iterate's residuals (kept for the directions), costs and norms."""

    def keep(self) -> None:
        """Keep the iterate as the best so far."""

    def move(self, step: float) -> None:
        """Step ``step`` along the direction last bounded."""

    def finish(self, restore: bool) -> Iterate:
        """The final point: the best one kept (``restore``) or the current one."""


def interior_point(system: KKTSystem, settings: IPMSettings = IPMSettings(),
                   start: Iterate | None = None) -> IPMResult:
    """The interior point on ``system``'s KKT solves (module docstring).

    Parameters
    ----------
    system : KKTSystem
    settings : IPMSettings
    start : Iterate, optional
        A warm start, an earlier result's ``point``: the iterations start from a
        blend of it and the cold start (`KKTSystem.begin`); by default from CVXOPT's
        starting point.

    Returns
    -------
    IPMResult
    """
    norm_b, norm_c, degree = system.describe()
    # the start: one KKT solve with W = I
    system.factor(False)
    _solve(system, *system.start_rhs(), settings.refine)
    if degree == 0:  # an equality-constrained QP: that solve is its solution
        system.begin(None, None)
        m = system.measure()
        _, gap_rel, pres, dres = _measures(m, norm_b, norm_c)
        ok = pres <= settings.tol_feas and dres <= settings.tol_feas
        return IPMResult("optimal" if ok else "stalled", system.finish(False), 1, gap_rel,
                         pres, dres, objective=m.pcost)
    low_s, low_z, big = system.shifts()
    system.begin(_shift(low_s, big), _shift(low_z, big), start)
    history: list[tuple[float, float, float, float]] = []
    best: tuple[float, tuple[float, float, float], float] | None = None
    status = "max_iter"
    for iteration in range(settings.max_iter + 1):
        m = system.measure()
        measures = _measures(m, norm_b, norm_c)
        _, gap_rel, pres, dres = measures
        worst = _worst(measures)
        last_is_best = best is None or worst < best[0]
        if last_is_best:
            best = (worst, (gap_rel, pres, dres), m.pcost)
            system.keep()
        assert best is not None
        if _converged(measures, settings):
            status = "optimal"
            break
        if iteration == settings.max_iter:
            break
        if _stalled(history, worst, best[0]):
            status = "stalled"
            break
        system.factor(True)
        # predictor: it only sets the centring and the corrector's second-order term, so
        # its solve is not refined (the corrector's is)
        _solve(system, *system.direction_rhs(None), 0)
        alpha, dsdz = system.bounds()
        sigma = _centring(min(1.0, alpha), dsdz, m.sz)
        # corrector, refined once the gap is small: far from the optimum a direction's
        # round-off is far below what the next iteration's fresh residuals correct
        _solve(system, *system.direction_rhs(sigma * (m.sz / degree)),
               settings.refine if gap_rel < 1e-3 else 0)
        step = min(1.0, settings.step * system.bounds()[0])
        system.move(step)
        history.append((gap_rel, pres, dres, step))
    objective = m.pcost
    if status != "optimal":
        assert best is not None
        worst_best, (gap_rel, pres, dres), objective = best
        if worst_best <= settings.reduced_tol:
            status = "optimal_inaccurate"
    point = system.finish(status != "optimal" and not last_is_best)
    return IPMResult(status, point, len(history), gap_rel, pres, dres, history, objective)


def solve(st: KKTStructure, c: Array, b: Array, Phi: Array,
          settings: IPMSettings = IPMSettings(), start: Iterate | None = None) -> IPMResult:
    """The interior point on a whole linked problem in memory: `interior_point` on one `Part`.

    Parameters
    ----------
    st : KKTStructure
        The problem's structure (P, A and the cones with it).
    c, b : ndarray
        The objective's linear term (n,) and the own rows' right-hand side (m,).
    Phi : ndarray of shape (N, Nz)
        The whitened rows Φ = K_XZ T.
    settings : IPMSettings
    start : Iterate, optional
        The previous problem's solution, to start from a blend of it and the cold
        start (`sparsify.core.structured.part.blend`); by default CVXOPT's starting
        point.

    Returns
    -------
    IPMResult

    Examples
    --------
    A declared ridge regression (no cone: one KKT solve):

    >>> import cvxpy as cp
    >>> from sparsify import Declaration, Formulation
    >>> from sparsify.core.backends import StructuredBackend
    >>> from sparsify.core.conic import compile_linked
    >>> from sparsify.core.declared import declare
    >>> class Ridge(Formulation):
    ...     name = "doc_ipm_ridge"
    ...     def declare(self, out):
    ...         loss = cp.sum_squares(out.f - out.y)
    ...         return Declaration(cp.Minimize(loss + out.norm_w2), [])
    >>> y = np.sin(np.linspace(-3, 3, 30))
    >>> decl, f, u, K = declare(Ridge(), y, 30, 4)
    >>> linked = compile_linked(cp.Problem(decl.objective), f, u, 30, 4, K, "CLARABEL").problem
    >>> st = StructuredBackend("structured").structure(linked)
    >>> Phi = np.random.default_rng(0).normal(size=(30, 4))  # any whitened rows
    >>> result = solve(st, linked.own.c, linked.own.b, Phi)
    >>> result.status, result.iterations
    ('optimal', 1)
    """
    part = Part(st, c, b, decompose=True)
    part.set_phi(Phi)
    return interior_point(part, settings, start)


def _solve(system: KKTSystem, rhs: Array, size: float, refine: int) -> None:
    """One KKT solve of the reduced right-hand side ``rhs`` (of largest entry ``size``).

    Refined against the unregularised matrix (``refine`` steps at most) until the
    residual is below 1e-10 of the right-hand side (a direction needs no more: the
    next iteration's residuals are computed afresh); the solution with the smallest
    residual is kept (late iterations, where the Schur complement's condition
    number reaches 1e12, need several steps, and a step may not reduce the residual
    before the next one does).
    """
    xs = system.schur_solve(rhs)
    if refine == 0:
        system.expand(xs)
        return
    size = max(size, 1e-300)
    best_err = np.inf
    err = system.expand(xs, True)[0]
    for step in range(refine + 1):
        keep = err < best_err
        if keep:
            best_err = err
        if err <= 1e-10 * size or step == refine:
            break
        err = system.expand(system.schur_solve(system.correct(keep)), True, True)[0]
    system.settle(keep)


def _shift(low: float, big: float) -> float | None:
    """The shift of a starting slack (or multiplier) into the cone: by −λ_min where λ_min,
    its smallest eigenvalue ``low``, is not well inside (CVXOPT's rule); ``big`` its
    largest entry."""
    return -low if -low >= -1e-8 * max(big, 1.0) else None


def _measures(m: Measured, norm_b: float, norm_c: float) -> tuple[float, float, float, float]:
    """(gap_abs, gap_rel, primal residual, dual residual), relative as Clarabel's."""
    gap_abs = abs(m.pcost - m.dcost)
    gap_rel = gap_abs / max(1.0, min(abs(m.pcost), abs(m.dcost)))
    return (gap_abs, gap_rel, m.primal_residual / max(1.0, norm_b + m.norm_x + m.norm_s),
            m.dual_residual / max(1.0, norm_c + m.norm_x + m.norm_y))


def _converged(measures: tuple[float, float, float, float], settings: IPMSettings) -> bool:
    """The stopping rule (Clarabel's) on (gap_abs, gap_rel, primal, dual residual)."""
    gap_abs, gap_rel, pres, dres = measures
    return (pres <= settings.tol_feas and dres <= settings.tol_feas
            and (gap_abs <= settings.tol_gap_abs or gap_rel <= settings.tol_gap_rel))


def _worst(measures: tuple[float, float, float, float]) -> float:
    """The iterate's distance from optimal: the largest of gap and residuals."""
    gap_abs, gap_rel, pres, dres = measures
    return max(min(gap_rel, gap_abs), pres, dres)


def _stalled(history: list[tuple[float, float, float, float]], worst: float, best: float
            ) -> bool:
    """Steps too short to move, or residuals blown up: no further iteration will help."""
    return bool(history) and (history[-1][3] < 1e-8 or not np.isfinite(worst)
                              or worst > 1e6 * best)


def _centring(alpha: float, dsdz: float, gap: float) -> float:
    """Mehrotra's σ = (μ_aff / μ)³ from the predictor's step α, Δsᵀ Δz and the gap sᵀz."""
    return min(1.0, max(0.0, 1 - alpha + alpha ** 2 * dsdz / gap)) ** 3
