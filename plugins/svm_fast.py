"""The SVM formulation's exact fast path: W(Z) by a dedicated dual solver, warm-started.

For fixed XVs Z, SLMC's inner problem (paper §3.4, eq. 41-43) is a linear SVM
with a free bias on the Nz features ψ_z(x) = K(Z, x) and the metric K_ZZ::

    min_{β,b} ½ βᵀK_ZZβ + C Σ_i max(0, 1 − y_i (K_XZ β + b)_i)

Its dual is a box-constrained QP over α ∈ [0, C]ᴺ with yᵀα = 0 whose Hessian
Q = B K_ZZ⁻¹ Bᵀ (B = diag(y) K_XZ) has rank Nz. Two exact methods share it:

* an active-set solve: guess which points are bound (α = C), free (on the
  margin) or inactive (α = 0), solve the (Nz + |free| + 1) KKT system, move the
  points whose KKT conditions fail and repeat. Warm-started from the previous
  L-BFGS evaluation's partition, it usually needs one or two small solves.
* a primal-dual interior-point method (Mehrotra) whose Newton systems cost
  O(N·Nz²) by the Sherman-Morrison-Woodbury identity: the robust fallback.
  Its partition then seeds the active-set solve, which polishes α and b to the
  exact KKT point.

A solution is accepted only when its KKT conditions hold to ``tol`` (active
set) or its duality gap is below ``tol`` (interior point), so W(Z) agrees with
the generic cvxpy path, which stays the reference in the tests. The gradient is
Lemma 1 with ν = α∘y and c = ½: ∂W/∂K_XZ = −(α∘y)βᵀ, ∂W/∂K_ZZ = ½ββᵀ. The
constraint yᵀα = 0 puts support vectors in both classes, so W is differentiable
(paper, Corollary 2) and no warning is needed here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sparsify.kernels import Kernel
from sparsify.marginal import Evaluation, Marginal
from sparsify.solvers import SolverError

Array = NDArray[np.float64]
#: α, β, b and, from the active-set solve, its partition (bound, free masks)
Solution = tuple[Any, ...]


def _active_set_solve(
    B: Array, y: Array, K: Array, C: float, upper: NDArray[np.bool_], free: NDArray[np.bool_]
) -> tuple[Array, Array, float] | None:
    """(α, β, b) for a guessed partition, or None if its KKT system is singular.

    Unknowns β (Nz), b and α on the free points; α = C on ``upper``, 0 elsewhere::

        K β − B_Fᵀ α_F = C B_Uᵀ 1      (stationarity in β)
        B_F β + y_F b  = 1              (free points lie on the margin)
        y_Fᵀ α_F       = −C Σ_U y_i     (stationarity in b)
    """
    nz, F = len(K), np.flatnonzero(free)
    m = len(F)
    if m > nz + 1:  # more margin points than unknowns: α_F is not unique
        return None
    n = nz + 1 + m
    lhs = np.zeros((n, n))
    lhs[:nz, :nz] = K
    lhs[:nz, nz + 1:] = -B[F].T
    lhs[nz + 1:, :nz] = B[F]
    lhs[nz + 1:, nz] = y[F]
    lhs[nz, nz + 1:] = y[F]
    rhs = np.empty(n)
    rhs[:nz] = C * B[upper].sum(0)
    rhs[nz] = -C * y[upper].sum()
    rhs[nz + 1:] = 1.0
    try:
        sol = np.linalg.solve(lhs, rhs)
    except np.linalg.LinAlgError:
        return None
    # A nearly singular system returns garbage without an error: check it solved.
    if np.abs(lhs @ sol - rhs).max() > 1e-9 * (C + np.abs(rhs).max()):
        return None
    alpha = np.where(upper, C, 0.0)
    alpha[F] = sol[nz + 1:]
    return alpha, sol[:nz], float(sol[nz])


def _warm_active_set(
    B: Array, y: Array, K: Array, C: float, alpha: Array, upper: NDArray[np.bool_],
    free: NDArray[np.bool_], tol: float, max_iter: int,
) -> tuple[Array, Array, float, NDArray[np.bool_], NDArray[np.bool_]] | None:
    """Primal active-set method on the dual from a feasible α; None unless KKT holds.

    The constraints of the dual do not depend on Z, so the previous
    evaluation's α is feasible and its partition a good guess. Each iteration
    moves one point: towards the subproblem's solution on the free set until a
    bound blocks (the blocking point leaves the free set), or, at that solution,
    the point that violates its KKT condition most joins the free set. At a
    solution the free set typically holds Nz + 1 margin points, so a joining
    point makes the subproblem singular; the step then follows the null space
    of [B_F, y_F]ᵀ, along which the dual objective is linear, to the next bound.
    """
    alpha, upper, free = alpha.copy(), upper.copy(), free.copy()
    K_inv = np.linalg.inv(K)
    for _ in range(max_iter):
        F = np.flatnonzero(free)
        solved = _active_set_solve(B, y, K, C, upper, free)
        if solved is not None:
            target, beta, b = solved
            d = target[F] - alpha[F]
        else:  # singular subproblem: a direction of linear decrease
            null = np.linalg.svd(np.vstack([B[F].T, y[F]]))[2][-1]
            grad = B[F] @ (K_inv @ (B.T @ alpha)) - 1.0
            d = -null if grad @ null > 0 else null
        up, down = d > 1e-14 * C, d < -1e-14 * C
        ratios = np.full(len(F), np.inf)
        ratios[up] = (C - alpha[F][up]) / d[up]
        ratios[down] = -alpha[F][down] / d[down]
        j = int(np.argmin(ratios)) if len(F) else 0
        if solved is not None and (not len(F) or ratios[j] >= 1.0):
            alpha = target
            g = B @ beta + y * b - 1.0  # margin slack y_i(f_i + b) − 1
            violation = np.where(upper, g, np.where(free, 0.0, -g))
            worst = int(np.argmax(violation))
            if violation[worst] <= tol:
                return alpha, beta, b, upper, free
            upper[worst], free[worst] = False, True
            continue
        if not np.isfinite(ratios[j]):
            return None
        alpha[F] += ratios[j] * d
        i = F[j]
        alpha[i] = C if d[j] > 0 else 0.0
        free[i], upper[i] = False, bool(d[j] > 0)
    return None


def _active_set(
    B: Array, y: Array, K: Array, C: float, upper: NDArray[np.bool_], free: NDArray[np.bool_],
    tol: float, max_iter: int = 10,
) -> tuple[Array, Array, float, NDArray[np.bool_], NDArray[np.bool_]] | None:
    """Primal-dual active-set iterations from a guessed partition; None unless KKT holds."""
    upper, free = upper.copy(), free.copy()
    for _ in range(max_iter):
        solved = _active_set_solve(B, y, K, C, upper, free)
        if solved is None:
            return None
        alpha, beta, b = solved
        g = B @ beta + y * b - 1.0  # margin slack y_i(f_i + b) − 1
        lower = ~(upper | free)
        to_upper = free & (alpha > C * (1 + tol))
        to_lower = free & (alpha < -C * tol)
        leave_upper = upper & (g > tol)
        leave_lower = lower & (g < -tol)
        if not (to_upper.any() or to_lower.any() or leave_upper.any() or leave_lower.any()):
            return np.clip(alpha, 0.0, C), beta, b, upper, free
        upper = (upper & ~leave_upper) | to_upper
        free = (free & ~to_upper & ~to_lower) | leave_upper | leave_lower
    return None


@dataclass
class _NewtonSystem:
    """One interior-point iterate and its factorised Newton matrix.

    The matrix D + B K⁻¹ Bᵀ is inverted by Sherman-Morrison-Woodbury through
    the Nz × Nz matrix K + Bᵀ D⁻¹ B (``S_inv``), so no N × N matrix is formed.
    """

    y: Array
    alpha: Array
    s: Array  # C − α
    lam: Array  # multipliers of α ≥ 0
    mu: Array  # multipliers of α ≤ C
    r_d: Array
    r_p: float
    D_inv: Array
    BD: Array  # B D⁻¹
    S_inv: Array

    def solve(self, v: Array) -> Array:
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
    C: float,
    tol: float,
    polish: Callable[[NDArray[np.bool_], NDArray[np.bool_]], Solution | None],
    max_iter: int = 100,
) -> Solution | None:
    """Mehrotra predictor-corrector on the SVM dual; None if it stalls.

    Once the relative duality gap is below 1e-2 each iterate's partition is
    offered to ``polish`` (the exact active-set solve), which usually ends the
    method well before the gap reaches ``tol``. Plain numpy: at N in the
    hundreds an iteration is a few dozen vector operations.
    """
    N = len(y)
    K_inv = np.linalg.inv(K)
    alpha = np.full(N, 0.5 * C)
    lam, mu, b = np.ones(N), np.ones(N), 0.0
    for _ in range(max_iter):
        s = C - alpha
        beta = K_inv @ (B.T @ alpha)
        g = B @ beta + y * b - 1.0
        wnorm2 = float(alpha @ (g + 1.0 - y * b))
        primal = 0.5 * wnorm2 + C * float(np.maximum(0.0, -g).sum())
        gap = (primal - (alpha.sum() - 0.5 * wnorm2)) / max(1.0, abs(primal))
        if gap <= 1e-2:
            # A bound counts as active where its slack is below its multiplier
            # (α/C < λ, (C − α)/C < μ): on the central path the two separate
            # long before the gap closes.
            upper = s < C * mu
            polished = polish(upper, ~upper & (alpha >= C * lam))
            if polished is not None:
                return polished
        r_p = float(y @ alpha)
        if gap <= tol and abs(r_p) <= tol * max(1.0, C):
            return alpha, beta, b
        D_inv = 1.0 / (lam / alpha + mu / s)
        BD = B * D_inv[:, None]
        try:
            S_inv = np.linalg.inv(K + B.T @ BD)
        except np.linalg.LinAlgError:
            return None
        newton = _NewtonSystem(y, alpha, s, lam, mu, g - lam + mu, r_p, D_inv, BD, S_inv)
        da, _, dlam, dmu, t = newton.direction(0.0, 0.0)  # predictor: affine scaling
        # Mehrotra's corrector: centre by σ = (m_aff / m)³ and correct the
        # second-order terms of the complementarity products.
        m = (lam @ alpha + mu @ s) / (2 * N)
        m_aff = ((alpha + t * da) @ (lam + t * dlam) + (s - t * da) @ (mu + t * dmu)) / (2 * N)
        target = (m_aff / m) ** 3 * m
        da, db, dlam, dmu, t = newton.direction(target - da * dlam, target + da * dmu)
        t = min(1.0, 0.99 * t)
        alpha = alpha + t * da
        b += t * db
        lam = lam + t * dlam
        mu = mu + t * dmu
    return None


class SVMDualMarginal(Marginal):
    """W(Z) and ∇W(Z) of the SVM formulation by its dedicated exact solver.

    The default path of :class:`~sparsify.SparseSVC` (``solver="auto"``); a
    named cvxpy backend selects the generic path instead, which is the
    reference this one is tested against.

    Parameters
    ----------
    C : float
        Weight of the hinge loss.
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

    Attributes
    ----------
    n_active_set, n_interior_point : int
        How many evaluations the warm-started active-set solve settled, and
        how many needed the interior-point method.

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

    formulation_name = "svm"

    def __init__(
        self,
        C: float,
        X: Array,
        y: NDArray[Any],
        kernel: Kernel,
        n_expansion: int,
        tol: float = 1e-9,
        jitter: float = 1e-10,
    ) -> None:
        self.C = float(C)
        self.X = np.asarray(X, dtype=float)
        self.y = np.asarray(y, dtype=float)
        if not np.all(np.isin(self.y, (-1.0, 1.0))) or len(np.unique(self.y)) != 2:
            raise ValueError("The 'svm' formulation needs labels y in {-1, +1} from both "
                             "classes.")
        self.kernel = kernel
        self.n_expansion = int(n_expansion)
        self.tol = float(tol)
        self.jitter = jitter * max(float(np.mean(kernel.diag(self.X))), 1e-300)
        self._partition: tuple[NDArray[np.bool_], NDArray[np.bool_]] | None = None
        self._alpha: Array | None = None
        self.n_active_set = 0
        self.n_interior_point = 0

    def _solve(self, B: Array, K: Array) -> tuple[Array, Array, float]:
        y, C, tol = self.y, self.C, self.tol
        if self._partition is not None:
            # the previous evaluation's partition: exact in one solve when L-BFGS
            # took a small step
            solved = _warm_active_set(B, y, K, C, self._alpha, *self._partition, tol,
                                      max_iter=4 * self.n_expansion + 20)
            if solved is not None:
                self.n_active_set += 1
                alpha, beta, b, *partition = solved
                self._partition = (partition[0], partition[1])
                return alpha, beta, b
        def polish(upper: NDArray[np.bool_], free: NDArray[np.bool_]) -> Solution | None:
            return _active_set(B, y, K, C, upper, free, tol, max_iter=3)

        solved = _interior_point(B, y, K, C, 1e-2 * tol, polish)
        if solved is None:
            raise SolverError(
                f"The svm fast path's interior-point solver did not converge on the 'svm' "
                f"formulation (N={len(y)}, Nz={len(K)}); use solver='clarabel'."
            )
        self.n_interior_point += 1
        alpha, beta, b, *partition = solved
        # an unpolished interior point has no partition to warm-start from
        self._partition = (partition[0], partition[1]) if partition else None
        return alpha, beta, b

    def evaluate(self, Z: Array, grad: bool = True) -> Evaluation:
        Z = np.asarray(Z, dtype=float)
        K_xz = self.kernel(self.X, Z)
        K_zz = self.kernel(Z, Z)
        K = K_zz + self.jitter * np.eye(len(Z))
        B = self.y[:, None] * K_xz
        alpha, beta, b = self._solve(B, K)
        self._alpha = alpha
        g = B @ beta + self.y * b - 1.0
        value = float(0.5 * beta @ K @ beta + self.C * np.maximum(0.0, -g).sum())
        if not grad:
            return Evaluation(value, None, beta, b, "svm-dual")
        nu = alpha * self.y
        gradient = (self.kernel.vjp_z(self.X, Z, -np.outer(nu, beta), K_xz)
                    + self.kernel.vjp_zz(Z, 0.5 * np.outer(beta, beta), K_zz))
        return Evaluation(value, gradient, beta, b, "svm-dual")
