"""The SVM dual engine's solvers: the active-set polish and the interior point.

Both solve the dual of SLMC's inner problem in whitened coordinates (paper
§3.4): min ½‖Bᵀα‖² − pᵀα over 0 ≤ α ≤ C, yᵀα = 0, on the signed rows B = y∘Φ,
with the margin targets p (1 for the SVM). `warm_active_set` lands on the exact
KKT point from a guessed partition (at C, free, at 0); `interior_point`
(Mehrotra's predictor-corrector, its Newton systems O(n·Nz²) by the
Sherman-Morrison-Woodbury identity) names the partition where the polish does
not settle, and offers it to the polish as it goes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sparsify.core.kernel_blocks import BLOCK_ROWS
from sparsify.svm_dual.compiled import active_set

__all__ = ["IP_STALL", "Solution", "Stalled", "interior_point", "longest_step",
           "polish_affordable", "warm_active_set"]

Array = NDArray[np.float64]
#: α, β, b and, from the active-set solve, its partition (bound, free masks)
Solution = tuple[Any, ...]

#: After this many iterates without a new lowest duality gap the interior point polishes its
#: best iterate's partition (a working Mehrotra iterate lowers the gap at each step; the
#: early ones, at a gap near 1, by a little each)
IP_STALL = 10


def warm_active_set(
    B: Array, y: Array, K: Array, K_inv: Array, L: Array, C: Array, alpha: Array,
    upper: NDArray[np.bool_], free: NDArray[np.bool_], tol: float, max_iter: int,
    held: tuple[Array, float] | None = None, targets: Array | None = None,
) -> tuple[Array, Array, float, NDArray[np.bool_], NDArray[np.bool_]] | None:
    """Primal active-set method on the dual from a guessed α and partition.

    Returns (α, β, b, bound mask, free mask) at a point where every KKT
    condition holds to ``tol``, or None after ``max_iter`` iterations. The
    constraints of the dual do not depend on Z, so the previous evaluation's α
    is feasible and its partition a good guess; a rounded interior point is
    the other start. Each iteration moves one point: towards the subproblem's
    solution on the free set until a bound blocks (the blocking point leaves
    the free set), or, at that solution, the point that violates its KKT
    condition most joins the free set. At a solution the free set typically
    holds Nz + 1 margin points, so a joining point makes the subproblem
    singular; the step then follows the null space of [B_F, y_F]ᵀ, along which
    the dual objective is linear, to the next bound (past Nz + 1 free rows, as
    coordinate descent leaves them, those steps pivot one kept tableau). Every accepted point is
    a full step to a subproblem solution, so yᵀα = 0 holds exactly. ``L`` is
    the Cholesky factor of K (empty where K is not numerically positive
    definite: then every move solves the unreduced system). The moves run in
    C (`sparsify.svm_dual.compiled.active_set`) without the GIL; a
    non-finite value there counts as failure, since C raises no
    floating-point error. ``held`` = (Σ C_j B_j, Σ C_j y_j) over points at
    their upper bound that are not among B's rows: a working set is polished
    with the rest held at their bounds. ``targets`` are the rows' margin
    targets p (the dual's linear term); None: 1 for every row, the SVM.
    """
    # the C code takes C-contiguous float64 and bool arrays and updates the last three in place
    alpha = np.array(alpha, dtype=float)
    upper, free = np.array(upper, dtype=bool), np.array(free, dtype=bool)
    B, y, K, K_inv, L, C = (np.ascontiguousarray(a, dtype=float)
                            for a in (B, y, K, K_inv, L, C))
    beta = np.empty(B.shape[1])
    v0, cy0 = (np.zeros(B.shape[1]), 0.0) if held is None else held
    p = None if targets is None else np.ascontiguousarray(targets, dtype=float)
    ok, b, _ = active_set(B, y, K, K_inv, L, C, alpha, upper, free, beta, float(tol),
                                    int(max_iter), np.ascontiguousarray(v0, dtype=float),
                                    float(cy0), p)
    return (alpha, beta, b, upper, free) if ok else None


class Stalled(Exception):
    """A solver of the engine broke down or made no progress.

    `sparsify.svm_dual.SVMDualMarginal.evaluate` answers that evaluation by its
    fallback (the generic path, or the ``fallback`` it was given).
    """


@dataclass
class _NewtonSystem:
    """One interior-point iterate and its factorised Newton matrix.

    The matrix D + B K⁻¹ Bᵀ is inverted by Sherman-Morrison-Woodbury through
    the Nz × Nz matrix K + Bᵀ D⁻¹ B (``S_inv``), so no N × N matrix is formed,
    nor a second N × Nz one (D⁻¹ B is applied as D⁻¹ (B x)).
    """

    y: Array
    alpha: Array
    s: Array  # C − α (C: the per-point costs)
    lam: Array  # multipliers of α ≥ 0
    mu: Array  # multipliers of α ≤ C
    r_d: Array
    r_p: float
    D_inv: Array
    S_inv: Array  # (K + Bᵀ D⁻¹ B)⁻¹
    B: Array
    K_inv: Array
    # (D + B K⁻¹ Bᵀ)⁻¹ y: the predictor's and the corrector's share it (one matrix)
    My: Array = field(init=False)

    def __post_init__(self) -> None:
        self.My = self.solve(self.y)

    def solve(self, v: Array) -> Array:
        """(D + B K⁻¹ Bᵀ)⁻¹ v, with one step of iterative refinement.

        Near the solution D spans many orders of magnitude and the Woodbury
        solve alone loses digits; one refinement step against the exact
        product restores them at the cost of a few matrix-vector products.
        """
        z = self._woodbury(v)
        residual = v - (z / self.D_inv + self.B @ (self.K_inv @ (self.B.T @ z)))
        return z + self._woodbury(residual)

    def _woodbury(self, v: Array) -> Array:
        dv = self.D_inv * v
        return dv - self.D_inv * (self.B @ (self.S_inv @ (self.B.T @ dv)))

    def direction(self, rc_lam: Array | float, rc_mu: Array | float) -> tuple[Any, ...]:
        """Newton step (Δα, Δb, Δλ, Δμ) towards complementarity targets, and its longest step."""
        alpha, s, lam, mu, y = self.alpha, self.s, self.lam, self.mu, self.y
        My = self.My
        Mr = self.solve(-self.r_d + rc_lam / alpha - lam - rc_mu / s + mu)
        db = (float(y @ Mr) + self.r_p) / float(y @ My)
        da = Mr - My * db
        dlam = (rc_lam - lam * alpha - lam * da) / alpha
        dmu = (rc_mu - mu * s + mu * da) / s
        t = min(1.0, longest_step(alpha, da), longest_step(s, -da), longest_step(lam, dlam),
                longest_step(mu, dmu))
        return da, db, dlam, dmu, t


def longest_step(v: Array, dv: Array) -> float:
    """The longest step t with v + t·dv ≥ 0 (v ≥ 0), infinite where dv ≥ 0 everywhere.

    An interior point's fraction to the boundary, for each of its non-negative
    vectors (the SVM's and the ε-SVR's).

    Examples
    --------
    >>> longest_step(np.array([1.0, 2.0, 3.0]), np.array([-0.5, -4.0, 1.0]))
    0.5
    >>> longest_step(np.array([1.0, 2.0]), np.array([1.0, 0.0]))
    inf
    """
    # The blocking row is where dv/v is lowest: one division over the rows, where a minimum
    # of −v/dv over the rows with dv < 0 takes a mask and a copy (five times the time at
    # thousands of rows). Its step −v/dv is then the same number, but where two rows tie
    # within a rounding.
    # (the caller's floating-point error state applies: the SVM's evaluation raises at a
    # vanished v, the ε-SVR's interior point goes on to its best iterate)
    ratio = dv / v
    i = int(np.argmin(ratio))
    if np.isnan(ratio[i]):  # argmin's pick wherever there is a 0/0: a vanished v, dv = 0
        blocking = dv < 0
        return float(np.min(-v[blocking] / dv[blocking])) if blocking.any() else np.inf
    return float(-v[i] / dv[i]) if dv[i] < 0 else np.inf


def polish_affordable(n_free: int, Nz: int, rows: int) -> bool:
    """Whether the polish from a partition with ``n_free`` free rows costs about an interior
    point iteration on ``rows`` rows or less.

    Beyond Nz + 1 free rows each of the polish's moves is a null-space step dropping one
    row, a pivot of its tableau, O(Nz·n_free) (`sparsify.svm_dual.compiled.active_set`);
    those steps cost about one more iterate, rows·Nz², where
    (n_free − Nz − 1)·n_free ≤ rows·Nz (docs/theory.md has the figures).

    Examples
    --------
    >>> polish_affordable(n_free=30, Nz=10, rows=100), polish_affordable(200, 10, 100)
    (True, False)
    """
    return (n_free - Nz - 1) * n_free <= rows * Nz


def interior_point(
    B: Array,
    y: Array,
    K: Array,
    K_inv: Array,
    C: Array,
    tol: float,
    polish: Callable[..., Solution | None],
    max_iter: int = 100,
    targets: Array | None = None,
    accept: float = 0.0,
) -> Solution | None:
    """Mehrotra predictor-corrector on the SVM dual; None if it stalls.

    The dual is min ½‖K^(-½) Bᵀα‖² − pᵀα over 0 ≤ α ≤ C, yᵀα = 0, with the
    margin targets p = ``targets`` (1 for the SVM where None).

    From a relative duality gap of 1e-3 on, the iterate's partition is offered
    to ``polish`` (the exact active-set method) each time the gap has fallen
    100-fold, unless it has so many more free rows than the Nz + 1 the margin
    holds in general position that the polish would cost more than further
    iterates; that usually ends the method well before the gap reaches ``tol``.
    After `IP_STALL` iterates without a new lowest gap the partition of the
    iterate with the lowest gap is polished once (the method goes on where that
    does not settle). Where the method stalls to the end instead (per-point
    costs spanning decades can make the gap wander back up) or diverges (the
    gap 100 times its lowest), that partition gets one more polish; where that
    does not settle either, the iterate with the lowest gap is the answer if
    its gap and yᵀα are within ``accept`` (a relative gap looser than ``tol``:
    the accuracy the caller's fallback would give). Plain numpy: at N in the
    hundreds an iteration is a few dozen vector operations.
    """
    N = len(y)
    p = np.ones(N) if targets is None else targets
    alpha = 0.5 * C
    lam, mu, b = np.ones(N), np.ones(N), 0.0
    next_polish = 1e-3  # try the exact polish at gaps 1e-3, then 100× lower each time
    best: tuple[float, Array, NDArray[np.bool_], NDArray[np.bool_]] | None = None
    best_iterate: Solution | None = None  # (gap, α, β, b): the lowest gap within ``accept``
    stalled = 0  # iterates since the gap last reached a new low
    lowest = np.inf  # the lowest largest dual residual |g − λ + μ| so far
    scale = max(1.0, float(C.max()))  # of yᵀα's tolerance
    try:
        for _ in range(max_iter):
            s = C - alpha
            beta = K_inv @ (B.T @ alpha)
            g = B @ beta + y * b - p
            wnorm2 = float(alpha @ (g + p - y * b))
            primal = 0.5 * wnorm2 + float(C @ np.maximum(0.0, -g))
            # the SVM's Σα as numpy's pairwise sum, which rounds otherwise than p @ α
            linear = float(alpha.sum()) if targets is None else float(p @ alpha)
            gap = (primal - (linear - 0.5 * wnorm2)) / max(1.0, abs(primal))
            r_d = g - lam + mu
            r_p = float(y @ alpha)
            # the tolerance this iterate meets, in its gap and in yᵀα (NaN: none)
            off = max(gap, abs(r_p) / scale) if np.isfinite(r_p) else np.inf
            if off <= accept and (best_iterate is None or gap < best_iterate[0]):
                best_iterate = (gap, alpha, beta, b)
            residual = float(np.abs(r_d).max())
            if best is not None and (gap > 100 * best[0] or residual > 100 * lowest):
                # diverged: the Newton directions lost their accuracy. The dual residual is
                # linear in the iterate, so an exact step of length t scales it by 1 − t:
                # its growth is round-off
                break
            lowest = min(lowest, max(residual, 1e-9))
            stalled = 0 if best is None or gap < best[0] else stalled + 1
            if stalled == IP_STALL and best is not None:
                # stalled: polish the best partition; where that does not settle, the
                # iterates go on
                polished = polish(*best[1:])
                if polished is not None:
                    return polished
            if best is None or gap < best[0] or gap <= next_polish:
                # A bound counts as active where its slack is below its multiplier
                # (α/C < λ, (C − α)/C < μ): on the central path the two separate
                # long before the gap closes.
                upper = s < C * mu
                free = ~upper & (alpha >= C * lam)
                start = np.where(upper, C, np.where(free, alpha, 0.0))
                if best is None or gap < best[0]:
                    best = (gap, start, upper, free)
                if gap <= next_polish and polish_affordable(int(free.sum()), B.shape[1], N):
                    next_polish = gap / 100
                    polished = polish(start, upper, free)
                    if polished is not None:
                        return polished
            if off <= tol:
                return alpha, beta, b
            D_inv = 1.0 / (lam / alpha + mu / s)
            S = np.array(K, dtype=float)
            for row in range(0, len(B), BLOCK_ROWS):  # K + Bᵀ D⁻¹ B in row blocks
                block = slice(row, row + BLOCK_ROWS)
                S += B[block].T @ (B[block] * D_inv[block, None])
            S_inv = np.linalg.inv(S)
            newton = _NewtonSystem(y, alpha, s, lam, mu, r_d, r_p, D_inv, S_inv,
                                   B, K_inv)
            da, _, dlam, dmu, t = newton.direction(0.0, 0.0)  # predictor: affine scaling
            # Mehrotra's corrector: centre by σ = (m_aff / m)³ and correct the
            # second-order terms of the complementarity products.
            m = (lam @ alpha + mu @ s) / (2 * N)
            m_aff = ((alpha + t * da) @ (lam + t * dlam)
                     + (s - t * da) @ (mu + t * dmu)) / (2 * N)
            target = (m_aff / m) ** 3 * m
            da, db, dlam, dmu, t = newton.direction(target - da * dlam, target + da * dmu)
            t = min(1.0, 0.99 * t)
            alpha = alpha + t * da
            b += t * db
            lam = lam + t * dlam
            mu = mu + t * dmu
    except (np.linalg.LinAlgError, ZeroDivisionError, FloatingPointError):
        pass  # a breakdown: fall through to the best iterate
    polished = None if best is None else polish(*best[1:])
    # (a degenerate dual, β = 0 at a majority model with thousands of rows on the margin,
    # can stall a little short of ``tol``: its lowest gap then answers, not the fallback)
    return polished if polished is not None or best_iterate is None else best_iterate[1:]
