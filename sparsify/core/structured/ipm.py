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

The stopping rule is Clarabel's (gap, primal and dual residuals relative to the
data), so that ``tol`` means the same to this backend as to the others. There is
no homogeneous embedding: an infeasible or unbounded problem ends as a failure
(its residuals stop falling), and a general conic solver says which it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from sparsify.core.structured.cones import Cones, Scaling
from sparsify.core.structured.kkt import KKTFactor, KKTStructure, PhiMap

__all__ = ["IPMResult", "IPMSettings", "Iterate", "solve"]

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
class Iterate:
    """A primal-dual point: x, the link's dual ν, the own rows' duals y and the cone slacks s."""

    x: Array
    nu: Array
    y: Array
    s: Array


@dataclass
class IPMResult:
    """The outcome of `solve`.

    Attributes
    ----------
    status : str
        "optimal", "optimal_inaccurate" (met ``reduced_tol`` only), "max_iter" or
        "stalled" (the steps became too short or the residuals grew: an infeasible,
        unbounded or badly conditioned problem).
    point : Iterate
        The last iterate.
    iterations : int
    gap, primal_residual, dual_residual : float
        The relative measures of the stopping rule at the last iterate.
    history : list of tuple
        Per iteration: (gap, primal residual, dual residual, step).
    """

    status: str
    point: Iterate
    iterations: int
    gap: float
    primal_residual: float
    dual_residual: float
    history: list[tuple[float, float, float, float]] = field(default_factory=list)


class _Problem:
    """The residuals and the stopping rule's measures of one linked problem."""

    def __init__(self, st: KKTStructure, c: Array, b: Array, Phi: Array) -> None:
        self.st, self.c, self.b, self.Phi = st, c, b, Phi
        self.phi = PhiMap(Phi, st.layout.K)
        self.norm_b = float(np.abs(b).max(initial=0.0))
        self.norm_c = float(np.abs(c).max(initial=0.0))

    def residuals(self, p: Iterate) -> tuple[Array, Array, Array, float, float]:
        """r_x, r_link, r_rows (A x + s − b, with s = 0 on equality rows), pcost, dcost."""
        st, phi = self.st, self.phi
        r_x = st.P @ p.x
        xPx = float(p.x @ r_x)
        r_x += self.c  # in place: at 10⁶ points every fresh vector costs its page faults
        r_x += st.AT @ p.y
        r_x[st.F] += p.nu
        r_x[st.U] -= phi.T(p.nu)
        r_link = p.x[st.F] - phi(p.x[st.U])
        r_rows = st.A @ p.x
        r_rows -= self.b
        r_rows[st.zero:] += p.s
        pcost = 0.5 * xPx + float(self.c @ p.x)
        dcost = -0.5 * xPx - float(self.b @ p.y)
        return r_x, r_link, r_rows, pcost, dcost

    def measures(self, p: Iterate, res: tuple[Array, Array, Array, float, float]
                 ) -> tuple[float, float, float, float]:
        """(gap_abs, gap_rel, primal residual, dual residual), relative as Clarabel's."""
        r_x, r_link, r_rows, pcost, dcost = res
        norm_x, norm_s = _norm_inf(p.x), _norm_inf(p.s)
        norm_y = max(_norm_inf(p.y), _norm_inf(p.nu))
        pres = max(_norm_inf(r_link), _norm_inf(r_rows))
        dres = _norm_inf(r_x)
        gap_abs = abs(pcost - dcost)
        gap_rel = gap_abs / max(1.0, min(abs(pcost), abs(dcost)))
        return (gap_abs, gap_rel, pres / max(1.0, self.norm_b + norm_x + norm_s),
                dres / max(1.0, self.norm_c + norm_x + norm_y))


def _refined(factor: KKTFactor, rhs: tuple[Array, Array, Array], steps: int
             ) -> tuple[Array, Array, Array]:
    """Solve with ``factor``, then refine against its unregularised matrix.

    Refinement stops when the residual is below 1e-10 of the right-hand side (a
    direction needs no more: the next iteration's residuals are computed afresh)
    or after ``steps`` steps, and returns the solution with the smallest residual
    (late iterations, where the Schur complement's condition number reaches 1e12,
    need several steps, and a step may not reduce the residual before the next one
    does).
    """
    sol = factor.solve(*rhs)
    if steps == 0:
        return sol
    size = max(max(_norm_inf(r) for r in rhs), 1e-300)
    best, best_err = sol, np.inf
    for step in range(steps + 1):
        mv = factor.matvec(*sol)
        res = tuple(np.subtract(r, m, out=m) for r, m in zip(rhs, mv, strict=True))
        err = max(_norm_inf(r) for r in res)
        if err < best_err:
            best, best_err = sol, err
        if err <= 1e-10 * size or step == steps:
            break
        corr = factor.solve(*res)
        sol = tuple(a + d for a, d in zip(sol, corr, strict=True))  # type: ignore[assignment]
    return best


def _direction(factor: KKTFactor, W: Scaling, res: tuple[Array, Array, Array, float, float],
               q_c: Array, zero: int, refine: int) -> tuple[Array, Array, Array, Array]:
    """The Newton direction (Δx, Δν, Δy, Δs) at residuals ``res`` with λ ∘ (WΔz + W⁻¹Δs)
    = λ ∘ ``q_c``: the KKT system with −W² on the cone rows, then Δs = W q_c − W² Δz."""
    r_x, r_link, r_rows, _, _ = res
    wq = W.apply(q_c)
    rows = -r_rows
    rows[zero:] -= wq
    dx, dnu, dy = _refined(factor, (-r_x, -r_link, rows), refine)
    wq -= W.squared(dy[zero:])
    return dx, dnu, dy, wq


def _start(problem: _Problem, cones: Cones, refine: int) -> Iterate:
    """CVXOPT's default starting point: one KKT solve with W = I, slacks shifted inside."""
    st = problem.st
    factor = st.factor(problem.Phi, None)
    x, nu, y = _refined(factor, (-problem.c, np.zeros(len(st.F)), problem.b.copy()), refine)
    z = y[st.zero:].copy()
    s = -z
    e = cones.identity()
    for v in (s, z):
        shift = -cones.min_eigenvalue(v) if cones.size else -1.0
        if shift >= -1e-8 * max(float(np.abs(v).max(initial=0.0)), 1.0):
            v += (1 + shift) * e
    y[st.zero:] = z
    return Iterate(x, nu, y, s)


def solve(st: KKTStructure, c: Array, b: Array, Phi: Array,
          settings: IPMSettings = IPMSettings(), start: Iterate | None = None) -> IPMResult:
    """Solve the linked problem of ``st`` at whitened rows ``Phi`` (module docstring).

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
        start (`_blend`); by default CVXOPT's starting point.

    Returns
    -------
    IPMResult
    """
    cones = st.cones
    problem = _Problem(st, c, b, Phi)
    if cones.size == 0:  # an equality-constrained QP: one Newton step is its solution
        factor = st.factor(Phi, None)
        x, nu, y = _refined(factor, (-c, np.zeros(len(st.F)), b.copy()), settings.refine)
        point = Iterate(x, nu, y, np.zeros(0))
        _, gap_rel, pres, dres = problem.measures(point, problem.residuals(point))
        ok = pres <= settings.tol_feas and dres <= settings.tol_feas
        return IPMResult("optimal" if ok else "stalled", point, 1, gap_rel, pres, dres)
    p = _start(problem, cones, settings.refine)
    if start is not None:
        p = _blend(start, p)
    e = cones.identity()
    history: list[tuple[float, float, float, float]] = []
    best: tuple[float, Iterate, tuple[float, float, float]] | None = None
    zero = st.zero
    status = "max_iter"
    measures = (np.inf, np.inf, np.inf, np.inf)
    for iteration in range(settings.max_iter + 1):
        res = problem.residuals(p)
        measures = problem.measures(p, res)
        _, gap_rel, pres, dres = measures
        worst = _worst(measures)
        if best is None or worst < best[0]:
            best = (worst, p, (gap_rel, pres, dres))
        if converged(measures, settings):
            status = "optimal"
            break
        if iteration == settings.max_iter:
            break
        if stalled(history, worst, best[0]):
            status = "stalled"
            break
        z = p.y[zero:]
        W = cones.scaling(p.s, z)
        lam = W.lam
        factor = st.factor(Phi, W)
        mu = float(p.s @ z) / cones.degree
        # predictor: it only sets the centring and the corrector's second-order term, so
        # its solve is not refined (the corrector's is)
        dx, dnu, dy, ds = _direction(factor, W, res, -lam, zero, 0)
        ds_t, dz_t = W.apply_inverse(ds), W.apply(dy[zero:])
        alpha = min(1.0, cones.max_step(lam, ds_t), cones.max_step(lam, dz_t))
        sigma = centring(alpha, float(ds @ dy[zero:]), float(p.s @ z))
        # corrector
        r_c = -cones.jordan(lam, lam) + sigma * mu * e - cones.jordan(ds_t, dz_t)
        # refined once the gap is small: far from the optimum a direction's round-off is
        # far below what the next iteration's fresh residuals correct
        dx, dnu, dy, ds = _direction(factor, W, res, cones.jordan_divide(lam, r_c), zero,
                                     settings.refine if gap_rel < 1e-3 else 0)
        ds_t, dz_t = W.apply_inverse(ds), W.apply(dy[zero:])
        step = min(1.0, settings.step * min(cones.max_step(lam, ds_t),
                                            cones.max_step(lam, dz_t)))
        for d, v in ((dx, p.x), (dnu, p.nu), (dy, p.y), (ds, p.s)):  # d ← v + step·d
            d *= step
            d += v
        p = Iterate(dx, dnu, dy, ds)
        history.append((gap_rel, pres, dres, step))
    if status != "optimal":
        assert best is not None
        worst_best, p, (gap_rel, pres, dres) = best
        if worst_best <= settings.reduced_tol:
            status = "optimal_inaccurate"
        measures = (np.nan, gap_rel, pres, dres)
    return IPMResult(status, p, len(history), measures[1], measures[2], measures[3], history)


def converged(measures: tuple[float, float, float, float], settings: IPMSettings) -> bool:
    """The stopping rule (Clarabel's) on (gap_abs, gap_rel, primal, dual residual)."""
    gap_abs, gap_rel, pres, dres = measures
    return (pres <= settings.tol_feas and dres <= settings.tol_feas
            and (gap_abs <= settings.tol_gap_abs or gap_rel <= settings.tol_gap_rel))


def _worst(measures: tuple[float, float, float, float]) -> float:
    """The iterate's distance from optimal: the largest of gap and residuals."""
    gap_abs, gap_rel, pres, dres = measures
    return max(min(gap_rel, gap_abs), pres, dres)


def stalled(history: list[tuple[float, float, float, float]], worst: float, best: float
            ) -> bool:
    """Steps too short to move, or residuals blown up: no further iteration will help."""
    return bool(history) and (history[-1][3] < 1e-8 or not np.isfinite(worst)
                              or worst > 1e6 * best)


def centring(alpha: float, dsdz: float, gap: float) -> float:
    """Mehrotra's σ = (μ_aff / μ)³ from the predictor's step α, Δsᵀ Δz and the gap sᵀz."""
    return min(1.0, max(0.0, 1 - alpha + alpha ** 2 * dsdz / gap)) ** 3


def _norm_inf(v: Array) -> float:
    """max |v_i| (0 for an empty v), without |v|'s temporary."""
    return max(float(v.max(initial=0.0)), -float(v.min(initial=0.0)))


def _blend(previous: Iterate, cold: Iterate, weight: float = 0.1) -> Iterate:
    """A warm start: the previous solution moved a tenth of the way to the cold start.

    The previous solution alone sits on the cone's boundary, where the iterations
    crawl (more of them than from the cold start); the blend keeps it centred and
    saves a few iterations over the cold start along L-BFGS-sized moves of the XVs
    (docs/theory.md has the counts). Both s and z of the cold start are strictly
    inside the cone, so the blend is.
    """
    return Iterate(*((1 - weight) * a + weight * b for a, b in zip(
        (previous.x, previous.nu, previous.y, previous.s),
        (cold.x, cold.nu, cold.y, cold.s), strict=True)))
