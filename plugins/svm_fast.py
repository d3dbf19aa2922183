"""The SVM formulation's exact fast path: W(Z) by a dedicated dual solver, warm-started.

For fixed XVs Z, SLMC's inner problem (paper §3.4, eq. 41-43) is a linear SVM
with a free bias on the Nz features ψ_z(x) = K(Z, x) and the metric K_ZZ::

    min_{β,b} ½ βᵀK_ZZβ + C Σ_i max(0, 1 − y_i (K_XZ β + b)_i)

Its dual is a box-constrained QP over α ∈ [0, C]ᴺ with yᵀα = 0 whose Hessian
Q = B K_ZZ⁻¹ Bᵀ (B = diag(y) K_XZ) has rank Nz. Two exact methods share it:

* a primal active-set method, warm-started from the previous L-BFGS
  evaluation's α and compiled with numba: when L-BFGS takes a small step few
  points change side, and each change costs one (|free| + 1)-sized solve
  (β eliminated through the Cholesky factor of K_ZZ).
* a primal-dual interior-point method (Mehrotra) whose Newton systems cost
  O(N·Nz²) by the Sherman-Morrison-Woodbury identity: used when the warm start
  runs past its budget (large steps, large N). Its rounded iterates seed the
  active-set method, which lands on the exact KKT point.

Points far outside the margin at the previous solution are left out of the
solve and checked afterwards (shrinking, as in libsvm).

A solution is accepted only when its KKT conditions hold to ``tol`` (active
set) or its duality gap is below ``tol`` (interior point), so W(Z) agrees with
the generic cvxpy path, which stays the reference in the tests and takes over
an evaluation where the interior point stalls. The gradient is
Lemma 1 with ν = α∘y and c = ½: ∂W/∂K_XZ = −(α∘y)βᵀ, ∂W/∂K_ZZ = ½ββᵀ. The
constraint yᵀα = 0 puts support vectors in both classes, so W is differentiable
(paper, Corollary 2) and no warning is needed here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit
from numpy.typing import NDArray

from sparsify.formulation import Formulation
from sparsify.kernels import Kernel
from sparsify.marginal import (
    CvxpyMarginal,
    Evaluation,
    Marginal,
    check_expansion_vectors,
    diagonal_scale,
    kernel_blocks,
)

Array = NDArray[np.float64]
#: α, β, b and, from the active-set solve, its partition (bound, free masks)
Solution = tuple[Any, ...]


# The active-set moves are compiled (numba): each is a few loops over at most N
# points and a (2 Nz + 2)-sized solve, which numpy would spend in call overhead.
# Plain loops, not numpy calls, keep numba's one-off compile to seconds.


def _compiled(function: Callable[..., Any]) -> Any:
    """``function`` compiled by numba, cached on disk where a cache directory is writable.

    Only under the installed name ``sparsify_plugins``: numba keys its cache by file
    and records the module's name in it, so a second name for the same file (pytest
    imports the source tree's plugins/ as ``plugins`` for its doctests) would load a
    cache that imports a module that does not exist.
    """
    if not function.__module__.startswith("sparsify_plugins."):
        return njit(function)
    try:
        return njit(cache=True)(function)
    except RuntimeError:  # no writable cache directory: compile once per process instead
        return njit(function)


@_compiled
def _solve_square(A: Array, rhs: Array) -> tuple[Array, bool]:
    """x with A x = rhs by Gaussian elimination with partial pivoting (LAPACK's getrf order).

    Returns (x, False) on an exact zero pivot; the caller checks the residual
    for near-singular systems, which return garbage without a zero pivot.
    """
    n = len(rhs)
    M, x = A.copy(), rhs.copy()
    for k in range(n):
        p = k
        for i in range(k + 1, n):
            if abs(M[i, k]) > abs(M[p, k]):
                p = i
        if M[p, k] == 0.0:
            return x, False
        if p != k:
            for j in range(n):
                M[k, j], M[p, j] = M[p, j], M[k, j]
            x[k], x[p] = x[p], x[k]
        for i in range(k + 1, n):
            f = M[i, k] / M[k, k]
            if f != 0.0:
                for j in range(k + 1, n):
                    M[i, j] -= f * M[k, j]
                x[i] -= f * x[k]
    for k in range(n - 1, -1, -1):
        s = x[k]
        for j in range(k + 1, n):
            s -= M[k, j] * x[j]
        x[k] = s / M[k, k]
    return x, True


@_compiled
def _kkt_solved(
    B: Array, y: Array, F: NDArray[np.int64], m: int, K: Array, v: Array, cy: float,
    sol: Array, scale: float,
) -> bool:
    """Whether [β, b, α_F] solves `_active_set_solve`'s system to round-off.

    A nearly singular system solves without a zero pivot and returns garbage,
    so every solve is checked against the unreduced equations; a non-finite
    residual fails.
    """
    nz = len(K)
    residual, size = 0.0, max(1.0, abs(cy))
    for a in range(nz):  # K β − B_Fᵀ α_F − v
        t = -v[a]
        for c in range(nz):
            t += K[a, c] * sol[c]
        for k in range(m):
            t -= B[F[k], a] * sol[nz + 1 + k]
        if not math.isfinite(t):
            return False
        residual, size = max(residual, abs(t)), max(size, abs(v[a]))
    t = cy  # y_Fᵀ α_F + cy
    for k in range(m):
        i = F[k]
        t += y[i] * sol[nz + 1 + k]
        g = y[i] * sol[nz] - 1.0  # B_F β + y_F b − 1
        for a in range(nz):
            g += B[i, a] * sol[a]
        if not math.isfinite(g):
            return False
        residual = max(residual, abs(g))
    if not math.isfinite(t):
        return False
    return max(residual, abs(t)) <= 1e-9 * (scale + size)


@_compiled
def _active_set_solve(
    B: Array, y: Array, F: NDArray[np.int64], m: int, K: Array, v: Array, cy: float,
    scale: float,
) -> tuple[Array, bool]:
    """[β, b, α_F] for a guessed partition, and whether its KKT system solved.

    Unknowns β (Nz), b and α on the m free points F[:m] (indices into B's rows);
    α_i = C_i on the bound set U, 0 elsewhere (C holds the per-point costs). U
    enters only through v = B_Uᵀ C_U and cy = y_Uᵀ C_U, which the caller keeps
    up to date::

        K β − B_Fᵀ α_F = v              (stationarity in β)
        B_F β + y_F b  = 1              (free points lie on the margin)
        y_Fᵀ α_F       = −cy            (stationarity in b)
    """
    nz = len(K)
    n = nz + 1 + m
    if m > nz + 1:  # more margin points than unknowns: α_F is not unique
        return np.zeros(n), False
    lhs, rhs = np.zeros((n, n)), np.ones(n)
    for a in range(nz):
        rhs[a] = v[a]
        for c in range(nz):
            lhs[a, c] = K[a, c]
    rhs[nz] = -cy
    for k in range(m):
        i, row = F[k], nz + 1 + k
        for a in range(nz):
            lhs[a, row] = -B[i, a]
            lhs[row, a] = B[i, a]
        lhs[row, nz] = lhs[nz, row] = y[i]
    sol, ok = _solve_square(lhs, rhs)
    return sol, ok and _kkt_solved(B, y, F, m, K, v, cy, sol, scale)


@_compiled
def _forward_substitution(L: Array, rhs: Array, out: Array) -> None:
    """out = L⁻¹ rhs for a lower-triangular L."""
    for a in range(len(rhs)):
        t = rhs[a]
        for c in range(a):
            t -= L[a, c] * out[c]
        out[a] = t / L[a, a]


@_compiled
def _schur_solve(
    B: Array, y: Array, F: NDArray[np.int64], m: int, K: Array, L: Array, Phi: Array,
    v: Array, cy: float, scale: float,
) -> tuple[Array, bool]:
    """`_active_set_solve` with β eliminated: an (m + 1)-sized system instead of Nz + 1 + m.

    With K = L Lᵀ and the whitened rows Φ_i = L⁻¹ B_iᵀ (``Phi``, filled by the
    caller for the free points), β = L⁻ᵀ(L⁻¹v + Φ_Fᵀ α_F) and what is left is
    the bordered system [Φ_F Φ_Fᵀ, y_F; y_Fᵀ, 0] [α_F; b] = [1 − Φ_F L⁻¹v; −cy]:
    several times cheaper once Nz is in the tens. Its solution is checked
    against the unreduced system, which answers where this one does not solve.
    """
    nz = len(K)
    n = nz + 1 + m
    sol = np.zeros(n)
    if m > nz + 1:
        return sol, False
    u = np.empty(nz)
    _forward_substitution(L, v, u)
    A, r = np.zeros((m + 1, m + 1)), np.empty(m + 1)
    for k in range(m):
        i = F[k]
        t = 1.0
        for a in range(nz):
            t -= Phi[i, a] * u[a]
        r[k] = t
        A[k, m] = A[m, k] = y[i]
        for j in range(k + 1):
            t = 0.0
            for a in range(nz):
                t += Phi[i, a] * Phi[F[j], a]
            A[k, j] = A[j, k] = t
    r[m] = -cy
    x, ok = _solve_square(A, r)
    if not ok:
        return sol, False
    for k in range(m):  # L⁻¹v + Φ_Fᵀ α_F, then β by back substitution with Lᵀ
        for a in range(nz):
            u[a] += x[k] * Phi[F[k], a]
    for a in range(nz - 1, -1, -1):
        t = u[a]
        for c in range(a + 1, nz):
            t -= L[c, a] * sol[c]
        sol[a] = t / L[a, a]
    sol[nz] = x[m]
    sol[nz + 1:] = x[:m]
    return sol, _kkt_solved(B, y, F, m, K, v, cy, sol, scale)


@_compiled
def _null_vector(B: Array, y: Array, F: NDArray[np.int64], m: int) -> tuple[Array, bool]:
    """A unit vector d with [B_F, y_F]ᵀ d ≈ 0 for the m free points F[:m], and whether it is finite.

    Gaussian elimination with complete pivoting, stopped one pivot short of
    m (or at a zero pivot), sets the first column left without a pivot to one
    and solves for the pivots. With more points than the Nz + 1 rows that is
    an exact null vector; where a free set with full column rank made the
    subproblem singular only numerically, the smallest last pivot is the one
    dropped, so d is a direction of near-linear change, as the smallest right
    singular vector would be. The moves stay exact either way: only a full
    step to a subproblem solution is accepted.
    """
    nz = B.shape[1]
    A, cols, big = np.empty((nz + 1, m)), np.empty(m, dtype=np.int64), 0.0
    for k in range(m):
        cols[k] = k
        for a in range(nz + 1):
            A[a, k] = B[F[k], a] if a < nz else y[F[k]]
            big = max(big, abs(A[a, k]))
    rank = 0
    while rank < min(nz + 1, m - 1):
        k, p, q = rank, rank, rank
        for i in range(k, nz + 1):
            for j in range(k, m):
                if abs(A[i, j]) > abs(A[p, q]):
                    p, q = i, j
        if abs(A[p, q]) <= 1e-12 * big:
            break
        for j in range(m):
            A[k, j], A[p, j] = A[p, j], A[k, j]
        for i in range(nz + 1):
            A[i, k], A[i, q] = A[i, q], A[i, k]
        cols[k], cols[q] = cols[q], cols[k]
        for i in range(k + 1, nz + 1):
            f = A[i, k] / A[k, k]
            for j in range(k, m):
                A[i, j] -= f * A[k, j]
        rank += 1
    x = np.zeros(m)
    x[rank] = 1.0
    for k in range(rank - 1, -1, -1):
        s = 0.0
        for j in range(k + 1, rank + 1):
            s -= A[k, j] * x[j]
        x[k] = s / A[k, k]
    d, norm = np.empty(m), 0.0
    for k in range(m):
        d[cols[k]] = x[k]
        norm += x[k] * x[k]
    for k in range(m):
        d[k] /= math.sqrt(norm)
    return d, math.isfinite(norm)


@_compiled
def _active_set(
    B: Array, y: Array, K: Array, K_inv: Array, L: Array, C: Array, alpha: Array,
    upper: NDArray[np.bool_], free: NDArray[np.bool_], tol: float, max_iter: int,
) -> tuple[bool, Array, float]:
    """The moves of `_warm_active_set`, compiled.

    Updates ``alpha``, ``upper`` and ``free`` in place; returns whether every
    KKT condition holds to ``tol`` within ``max_iter`` moves, and β, b.
    Non-finite values count as failure: compiled code raises no floating-point
    errors.
    """
    N, nz = B.shape
    # the bound points enter the subproblem only through these sums; each move updates them
    v, cy = np.zeros(nz), 0.0
    for i in range(N):
        if upper[i]:
            cy += C[i] * y[i]
            for a in range(nz):
                v[a] += C[i] * B[i, a]
    scale = 0.0
    for i in range(N):
        scale = max(scale, C[i])
    beta, b = np.zeros(nz), 0.0
    F, d, u, w = np.empty(N, dtype=np.int64), np.empty(N), np.empty(nz), np.empty(nz)
    # whitened rows Φ_i = L⁻¹ B_iᵀ of the points that have been free (no L: none)
    Phi, whitened = np.empty((N, nz)), np.zeros(N, dtype=np.bool_)
    for _ in range(max_iter):
        m = 0
        for i in range(N):
            if free[i]:
                F[m] = i
                m += 1
        solved = False
        if len(L) and m <= nz + 1:
            for k in range(m):
                i = F[k]
                if not whitened[i]:
                    _forward_substitution(L, B[i], Phi[i])
                    whitened[i] = True
            sol, solved = _schur_solve(B, y, F, m, K, L, Phi, v, cy, scale)
        if not solved:
            sol, solved = _active_set_solve(B, y, F, m, K, v, cy, scale)
        if solved:
            for a in range(nz):
                beta[a] = sol[a]
            b = sol[nz]
            for k in range(m):
                d[k] = sol[nz + 1 + k] - alpha[F[k]]
        elif m == 0:  # no margin point: b is not unique; the interior point copes
            return False, beta, b
        else:  # singular subproblem: a direction of linear decrease
            null, ok = _null_vector(B, y, F, m)
            if not ok:
                return False, beta, b
            # the dual objective's slope along it: (B_F K⁻¹ (B_Fᵀ α_F + v) − 1)ᵀ null
            for a in range(nz):
                u[a] = v[a]
                for k in range(m):
                    u[a] += alpha[F[k]] * B[F[k], a]
            for a in range(nz):
                w[a] = 0.0
                for c in range(nz):
                    w[a] += K_inv[a, c] * u[c]
            slope = 0.0
            for k in range(m):
                s = -1.0
                for a in range(nz):
                    s += B[F[k], a] * w[a]
                slope += s * null[k]
            for k in range(m):
                d[k] = -null[k] if slope > 0 else null[k]
        j, step = 0, math.inf
        for k in range(m):  # ratio test: the first bound the step meets
            i = F[k]
            if d[k] > 1e-14 * C[i]:
                r = (C[i] - alpha[i]) / d[k]
            elif d[k] < -1e-14 * C[i]:
                r = -alpha[i] / d[k]
            else:
                continue
            if r < step:
                j, step = k, r
        if solved and step >= 1.0:
            for k in range(m):
                alpha[F[k]] = sol[nz + 1 + k]
            worst, violation = -1, tol
            for i in range(N):
                if free[i]:
                    continue
                g = y[i] * b - 1.0  # margin slack y_i(f_i + b) − 1
                for a in range(nz):
                    g += B[i, a] * beta[a]
                if upper[i]:
                    g = -g
                if -g > violation:
                    worst, violation = i, -g
            if worst < 0:
                return True, beta, b
            if upper[worst]:
                cy -= C[worst] * y[worst]
                for a in range(nz):
                    v[a] -= C[worst] * B[worst, a]
            upper[worst], free[worst] = False, True
            continue
        if not math.isfinite(step):
            return False, beta, b
        for k in range(m):
            alpha[F[k]] += step * d[k]
        i = F[j]
        free[i] = False
        if d[j] > 0:
            alpha[i], upper[i] = C[i], True
            cy += C[i] * y[i]
            for a in range(nz):
                v[a] += C[i] * B[i, a]
        else:
            alpha[i] = 0.0
    return False, beta, b


def _warm_active_set(
    B: Array, y: Array, K: Array, K_inv: Array, L: Array, C: Array, alpha: Array,
    upper: NDArray[np.bool_], free: NDArray[np.bool_], tol: float, max_iter: int,
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
    the dual objective is linear, to the next bound. Every accepted point is
    a full step to a subproblem solution, so yᵀα = 0 holds exactly. ``L`` is
    the Cholesky factor of K (empty where K is not numerically positive
    definite: then every move solves the unreduced system).
    """
    alpha, upper, free = alpha.copy(), upper.copy(), free.copy()
    # one layout, so numba compiles one specialisation
    B, y, K, K_inv, L, C = (np.ascontiguousarray(a, dtype=float)
                            for a in (B, y, K, K_inv, L, C))
    ok, beta, b = _active_set(B, y, K, K_inv, L, C, alpha, upper, free, float(tol),
                              int(max_iter))
    return (alpha, beta, float(b), upper, free) if ok else None


class _Stalled(Exception):
    """The interior-point method made no progress (numerical breakdown)."""


@dataclass
class _NewtonSystem:
    """One interior-point iterate and its factorised Newton matrix.

    The matrix D + B K⁻¹ Bᵀ is inverted by Sherman-Morrison-Woodbury through
    the Nz × Nz matrix K + Bᵀ D⁻¹ B (``S_inv``), so no N × N matrix is formed.
    """

    y: Array
    alpha: Array
    s: Array  # C − α (C: the per-point costs)
    lam: Array  # multipliers of α ≥ 0
    mu: Array  # multipliers of α ≤ C
    r_d: Array
    r_p: float
    D_inv: Array
    BD: Array  # D⁻¹ B
    S_inv: Array  # (K + Bᵀ D⁻¹ B)⁻¹
    B: Array
    K_inv: Array

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
        return dv - self.BD @ (self.S_inv @ (self.BD.T @ v))

    def direction(self, rc_lam: Array | float, rc_mu: Array | float) -> tuple[Any, ...]:
        """Newton step (Δα, Δb, Δλ, Δμ) towards complementarity targets, and its longest step."""
        alpha, s, lam, mu, y = self.alpha, self.s, self.lam, self.mu, self.y
        My = self.solve(y)
        Mr = self.solve(-self.r_d + rc_lam / alpha - lam - rc_mu / s + mu)
        db = (float(y @ Mr) + self.r_p) / float(y @ My)
        da = Mr - My * db
        dlam = (rc_lam - lam * alpha - lam * da) / alpha
        dmu = (rc_mu - mu * s + mu * da) / s
        V = np.concatenate([alpha, s, lam, mu])
        dV = np.concatenate([da, -da, dlam, dmu])
        neg = dV < 0
        t = min(1.0, float(np.min(-V[neg] / dV[neg]))) if neg.any() else 1.0
        return da, db, dlam, dmu, t


def _interior_point(
    B: Array,
    y: Array,
    K: Array,
    K_inv: Array,
    C: Array,
    tol: float,
    polish: Callable[..., Solution | None],
    max_iter: int = 100,
) -> Solution | None:
    """Mehrotra predictor-corrector on the SVM dual; None if it stalls.

    From a relative duality gap of 1e-3 on, the iterate's partition is offered
    to ``polish`` (the exact active-set method) each time the gap has fallen
    100-fold; that usually ends the method well before the gap reaches ``tol``.
    Where the method stalls instead (per-point costs spanning decades can make
    the gap wander back up), the partition of the iterate with the lowest gap
    gets one more polish. Plain numpy: at N in the hundreds an iteration is a
    few dozen vector operations.
    """
    N = len(y)
    alpha = 0.5 * C
    lam, mu, b = np.ones(N), np.ones(N), 0.0
    next_polish = 1e-3  # try the exact polish at gaps 1e-3, then 100× lower each time
    best: tuple[float, Array, NDArray[np.bool_], NDArray[np.bool_]] | None = None
    try:
        for _ in range(max_iter):
            s = C - alpha
            beta = K_inv @ (B.T @ alpha)
            g = B @ beta + y * b - 1.0
            wnorm2 = float(alpha @ (g + 1.0 - y * b))
            primal = 0.5 * wnorm2 + float(C @ np.maximum(0.0, -g))
            gap = (primal - (alpha.sum() - 0.5 * wnorm2)) / max(1.0, abs(primal))
            if gap <= next_polish or (best is not None and gap < best[0]):
                # A bound counts as active where its slack is below its multiplier
                # (α/C < λ, (C − α)/C < μ): on the central path the two separate
                # long before the gap closes.
                upper = s < C * mu
                free = ~upper & (alpha >= C * lam)
                start = np.where(upper, C, np.where(free, alpha, 0.0))
                best = (gap, start, upper, free)
                if gap <= next_polish:
                    next_polish = gap / 100
                    polished = polish(start, upper, free)
                    if polished is not None:
                        return polished
            r_p = float(y @ alpha)
            if gap <= tol and abs(r_p) <= tol * max(1.0, float(C.max())):
                return alpha, beta, b
            D_inv = 1.0 / (lam / alpha + mu / s)
            BD = B * D_inv[:, None]
            S_inv = np.linalg.inv(K + B.T @ BD)
            newton = _NewtonSystem(y, alpha, s, lam, mu, g - lam + mu, r_p, D_inv, BD, S_inv,
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
    return None if best is None else polish(*best[1:])


class SVMDualMarginal(Marginal):
    """W(Z) and ∇W(Z) of the SVM formulation by its dedicated exact solver.

    The default path of `SparseSVC` (``solver="auto"``); a
    named cvxpy backend selects the generic path instead, which is the
    reference this one is tested against.

    Parameters
    ----------
    C : float or ndarray of shape (N,)
        Weight of the hinge loss, or one weight C_i ≥ 0 per training point
        (the semi-supervised SVM weighs labeled and unlabeled points
        differently; `SparseSVC` passes C · class weight · sample weight). A
        point with C_i = 0 is left out of the solves: its dual box is [0, 0].
    X : ndarray of shape (N, d)
        Training inputs.
    y : ndarray of shape (N,)
        Labels in {-1, +1}.
    kernel : Kernel
        Kernel with vector-Jacobian products.
    n_expansion : int
        Number of XVs Nz.
    tol : float, default=1e-9
        KKT tolerance of the active-set solve and relative duality gap of the
        interior-point fallback.
    jitter : float, default=1e-10
        Added to the diagonal of K_ZZ relative to the mean kernel diagonal,
        as in the generic path, so the two solve the same problem.
    formulation : Formulation, optional
        The formulation this solves, for the generic path that answers an
        evaluation where this one stalls; ``SVM(C)`` by default. Required when
        ``C`` is an array.
    fallback : Marginal, optional
        What answers an evaluation where this one stalls instead of the generic
        cvxpy path of ``formulation`` (a faster exact solver for the same problem).

    Attributes
    ----------
    n_active_set, n_interior_point, n_generic : int
        How many solves the warm-started active-set method settled, how many
        needed the interior-point method, and how many evaluations fell back
        to the generic cvxpy path (or to ``fallback``).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import RBF
    >>> X = np.array([[0.0, 0.0], [0.2, 0.1], [1.0, 1.0], [0.9, 1.2]])
    >>> y = np.array([-1, -1, 1, 1])
    >>> ev = SVMDualMarginal(10.0, X, y, RBF(1.0), n_expansion=2).evaluate(X[[0, 2]])
    >>> np.sign(RBF(1.0)(X, X[[0, 2]]) @ ev.coef + ev.intercept).astype(int).tolist()
    [-1, -1, 1, 1]
    """

    def __init__(
        self,
        C: float | Array,
        X: Array,
        y: NDArray[Any],
        kernel: Kernel,
        n_expansion: int,
        tol: float = 1e-9,
        jitter: float = 1e-10,
        formulation: Formulation | None = None,
        fallback: Marginal | None = None,
    ) -> None:
        self.X = np.asarray(X, dtype=float)
        self.y = np.asarray(y, dtype=float)
        costs = np.asarray(C, dtype=float)
        if costs.ndim == 0 and formulation is None:
            from sparsify_plugins.svm import SVM  # svm imports this module

            formulation = SVM(float(costs))
        if formulation is None:
            raise ValueError("Pass formulation= (the problem the per-point costs C come from); "
                             "the generic fallback needs it.")
        self.formulation = formulation
        self.formulation_name = formulation.name
        if costs.ndim > 1 or (costs.ndim == 1 and costs.shape != self.y.shape):
            raise ValueError(f"C must be a number or an array of shape {self.y.shape}; "
                             f"got shape {costs.shape}.")
        if not np.all(np.isfinite(costs)) or np.any(costs < 0) or not np.any(costs > 0):
            raise ValueError("The costs C must be finite and >= 0, at least one of them "
                             "positive.")
        costs = np.broadcast_to(costs, self.y.shape)
        # the generic fallback solves the formulation on every point it was given
        self._X_all, self._y_all = self.X, self.y
        # the same jitter as the generic path, from every point, so both solve one problem
        self.jitter = jitter * max(diagonal_scale(kernel, self.X), 1e-300)
        # C_i = 0 pins α_i to the box [0, 0]: such a point changes neither W(Z) nor
        # ∇W(Z), and the solvers below divide by C_i, so it is left out of every solve
        keep = costs > 0
        self.X, self.y, self.C = self.X[keep], self.y[keep], costs[keep].copy()
        if not np.all(np.isin(self.y, (-1.0, 1.0))) or len(np.unique(self.y)) != 2:
            raise ValueError(f"The {self.formulation_name!r} formulation needs labels y in "
                             "{-1, +1} from both classes among the points with a positive "
                             "cost.")
        self.kernel = kernel
        self.n_expansion = int(n_expansion)
        self.tol = float(tol)
        # the previous solution (α, β, b[, bound mask, free mask]): the warm start
        self._last: Solution | None = None
        self.n_active_set = 0
        self.n_interior_point = 0
        self.n_generic = 0
        self._fallback: Marginal | None = fallback

    def _solve_subset(self, B: Array, y: Array, C: Array, K: Array, K_inv: Array, L: Array,
                      warm: Solution | None) -> Solution:
        """Solve the dual on some of the points; warm = (α, bound mask, free mask) or None."""
        tol = self.tol
        # A move is compiled and costs O(N·Nz); the interior point costs some twenty
        # O(N·Nz²) iterations of numpy calls, so a warm start may take many moves.
        budget = 10 * self.n_expansion + 100

        def polish(alpha: Array, upper: NDArray[np.bool_],
                   free: NDArray[np.bool_]) -> Solution | None:
            return _warm_active_set(B, y, K, K_inv, L, C, alpha, upper, free, tol, budget)

        if warm is not None:
            # when L-BFGS took a small step, few points change side
            solved = polish(*warm)
            if solved is not None:
                self.n_active_set += 1
                return solved

        solved = _interior_point(B, y, K, K_inv, C, 1e-2 * tol, polish)
        if solved is None:
            raise _Stalled
        self.n_interior_point += 1
        return solved

    def _solve(self, B: Array, K: Array) -> tuple[Array, Array, float]:
        """α, β, b on all points, solving on a working set (shrinking, as in libsvm).

        Points far outside the margin at the previous solution (predicted slack
        above 1 with the new kernel columns) are left out with α = 0; afterwards
        every left-out point is checked, and any that violates its KKT
        condition joins the working set, which is solved again.
        """
        y, N = self.y, len(self.y)
        # one inverse and one Cholesky factor per evaluation, shared by every solve below
        K_inv = np.linalg.inv(K)
        try:
            L = np.linalg.cholesky(K)
        except np.linalg.LinAlgError:  # K_ZZ not numerically positive definite: no reduced solves
            L = np.empty((0, 0))
        last = self._last
        if last is None:
            work = np.ones(N, dtype=bool)
        else:
            predicted = B @ last[1] + y * last[2] - 1.0
            work = (predicted < 1.0) | (last[0] > 0)
        warm = None if last is None or len(last) < 5 else last
        while True:
            sub = None if warm is None else (warm[0][work], warm[3][work], warm[4][work])
            alpha_w, beta, b, *partition = self._solve_subset(B[work], y[work], self.C[work], K,
                                                              K_inv, L, sub)
            g = B @ beta + y * b - 1.0
            missed = ~work & (g < -self.tol)
            alpha = np.zeros(N)
            alpha[work] = alpha_w
            if partition:
                upper, free = np.zeros(N, dtype=bool), np.zeros(N, dtype=bool)
                upper[work], free[work] = partition
                solution: Solution = (alpha, beta, b, upper, free)
            else:  # an unpolished interior point has no partition to warm-start from
                solution = (alpha, beta, b)
            if not missed.any():
                self._last = solution
                return alpha, beta, b
            work |= missed
            warm = solution if partition else None

    def evaluate(self, Z: Array, grad: bool = True) -> Evaluation:
        Z = check_expansion_vectors(Z, self.n_expansion, self.X.shape[1], self.formulation_name)
        K_xz, K_zz = kernel_blocks(self.kernel, self.X, Z)
        K = K_zz + self.jitter * np.eye(len(Z))
        B = self.y[:, None] * K_xz
        try:
            # a division by zero or a NaN is a breakdown too, not a warning to go on from
            with np.errstate(divide="raise", invalid="raise"):
                alpha, beta, b = self._solve(B, K)
        except (_Stalled, np.linalg.LinAlgError, ZeroDivisionError, FloatingPointError):
            # rare numerical breakdown (nearly singular K_ZZ, extreme C, degenerate
            # data): the generic path, this one's reference, answers this evaluation
            self._last = None
            self.n_generic += 1
            if self._fallback is None:
                self._fallback = CvxpyMarginal(self.formulation, self._X_all, self._y_all,
                                              self.kernel, self.n_expansion, tol=self.tol)
            return self._fallback.evaluate(Z, grad)
        g = B @ beta + self.y * b - 1.0
        value = float(0.5 * beta @ K @ beta + self.C @ np.maximum(0.0, -g))
        if not grad:
            return Evaluation(value, None, beta, b, "svm-dual")
        nu = alpha * self.y
        gradient = (self.kernel.vjp_z(self.X, Z, -np.outer(nu, beta), K_xz)
                    + self.kernel.vjp_zz(Z, 0.5 * np.outer(beta, beta), K_zz))
        return Evaluation(value, gradient, beta, b, "svm-dual")
