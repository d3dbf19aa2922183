"""The ε-SVR's inner problem by a primal-dual interior point on the normal equations.

In whitened coordinates (`sparsify.algorithms.svr.fast`) the inner problem is

    min_{u,b} ½ ‖u‖² + Σ_i C_i max(0, |y_i − Φ_i u − b| − ε)

with Nz + 1 unknowns and N points. Its dual has two bounded variables per point,
α_i⁺, α_i⁻ ∈ [0, C_i], and u = Σ_i (α_i⁺ − α_i⁻) Φ_i. Mehrotra's predictor-corrector
on that dual needs, per iteration, one linear system in x = (u, b) only: with
a_i = (Φ_i, 1) and each bounded variable's barrier weight D = λ/α + μ/(C − α),

    (E + Σ_i w_i a_i a_iᵀ) Δx = Σ_i a_i (q_i⁺ / D_i⁺ − q_i⁻ / D_i⁻) + (0, r_p),

E = diag(1, …, 1, 0), w_i = 1/D_i⁺ + 1/D_i⁻: the normal equations of the
"tall" problem, formed by one symmetric rank-k update (BLAS) over row blocks
and solved by Cholesky. An iteration costs O(N·Nz²) whatever C, ε or the data: unlike
coordinate descent, which on the SVR's rows needs thousands of passes where
most points sit near the tube's edges, and unlike the active-set method,
whose moves cost O(Nz³) each once some hundreds of points lie on the edges.
The (Nz + 1) matrix is the SVM interior point's Woodbury core
(`sparsify.svm_dual`), but the step is solved from it directly, not
by subtracting two large terms: near the solution D spans many decades, which
is where the Woodbury form loses its digits.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.linalg
from numpy.typing import NDArray
from scipy.linalg.blas import dsyrk as syrk

from sparsify.core.kernel_blocks import BLOCK_ROWS
from sparsify.svm_dual.solvers import longest_step

Array = NDArray[np.float64]
#: Steps of iterative refinement per Newton solve: without one, Σν drifted off zero on naval
#: (C = 10⁴) until the method stalled at a gap of 1e-7.
REFINE = 1
#: Iterations without a lower gap after which the method stops at its best iterate.
STALL = 5


class Iterate(NamedTuple):
    """An interior-point iterate in the rows' layout (i⁺ for every point, then i⁻)."""

    alpha: Array  #: (α⁺, α⁻), 2N entries
    upper: NDArray[np.bool_]  #: rows whose upper bound α = C the iterate names active
    free: NDArray[np.bool_]  #: rows it names strictly inside their box
    u: Array  #: Σ (α⁺ − α⁻) Φ_i
    b: float  #: the bias
    gap: float  #: duality gap relative to max(1, primal value)


def interior_point(Phi: Array, y: Array, epsilon: float, C: Array, tol: float,
                   max_iter: int = 200) -> Iterate | None:
    """The ε-SVR's inner problem solved to a duality gap of ``tol``, or its best iterate.

    Parameters
    ----------
    Phi : ndarray of shape (N, Nz)
        Whitened features of the points.
    y : ndarray of shape (N,)
        Targets.
    epsilon : float
        Half-width of the tube.
    C : ndarray of shape (N,)
        Positive costs.
    tol : float
        Stop where the duality gap relative to max(1, primal value) and the
        equality residual |Σ(α⁺ − α⁻)| relative to max(1, max C) are below it.
    max_iter : int, default=200
        Iteration budget.

    Returns
    -------
    Iterate or None
        The first iterate within ``tol``; where round-off stops the method
        before (the gap wanders back up, or the budget runs out), the iterate
        with the lowest gap; None if no iterate was finite. Its partition
        counts a bound as active where the bound's slack is below its
        multiplier (α/C < λ, (C − α)/C < μ): on the central path the two
        separate long before the gap closes, so the partition of a gap of
        1e-6 is usually the solution's, which the exact active-set method
        then lands on.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> Phi = rng.normal(size=(200, 3))
    >>> y = Phi @ [1.0, -2.0, 0.5] + 0.3 + 0.01 * rng.normal(size=200)
    >>> it = interior_point(Phi, y, 0.05, np.full(200, 100.0), 1e-10)
    >>> np.round(it.u, 1).tolist(), round(it.b, 1), bool(it.gap <= 1e-10)
    ([1.0, -2.0, 0.5], 0.3, True)
    """
    N, nz = Phi.shape
    A = np.empty((N, nz + 1))  # a_i = (Φ_i, 1)
    A[:, :nz], A[:, nz] = Phi, 1.0
    E = np.ones(nz + 1)  # the Hessian of ½‖u‖² in x = (u, b)
    E[nz] = 0.0
    p = np.concatenate([y - epsilon, -y - epsilon])  # the rows' margin targets
    costs = np.concatenate([C, C])
    # α⁺ = α⁻ = C/2: u = 0 and Σν = 0 hold exactly
    alpha, lam, mu, b = 0.5 * costs, np.ones(2 * N), np.ones(2 * N), 0.0
    best: Iterate | None = None
    stalled, scale = 0, max(1.0, float(C.max()))
    # past the round-off floor a step can divide by a vanished slack: that ends the method at
    # its best iterate, not in a floating-point error (callers may raise on those)
    with np.errstate(all="ignore"):
        for _ in range(max_iter):
            nu = _rows(alpha)  # ν = α⁺ − α⁻
            u = Phi.T @ nu
            f = Phi @ u + b
            wnorm2 = float(u @ u)
            primal = 0.5 * wnorm2 + float(C @ np.maximum(0.0, np.abs(y - f) - epsilon))
            gap = (primal - (float(p @ alpha) - 0.5 * wnorm2)) / max(1.0, abs(primal))
            r_p = float(nu.sum())
            if not np.isfinite(gap):
                break
            # Σν is a sum of N terms of size C: round-off leaves it at some 1e-14 of C
            if abs(r_p) <= max(tol, 1e-12) * scale and (best is None or gap < best.gap):
                # a bound is active where its slack is below its multiplier
                upper = costs - alpha < costs * mu
                best = Iterate(alpha, upper, ~upper & (alpha >= costs * lam), u, b, gap)
                if gap <= tol:
                    break
                stalled = 0
            elif best is not None:
                stalled += 1
                if stalled >= STALL or gap > 1e3 * best.gap:
                    break  # no progress, or the gap wanders back up: round-off has taken over
            try:
                step = _Step(A, E, alpha, costs - alpha, lam, mu,
                             _signed(f) - p - lam + mu, r_p)
                # predictor (affine scaling), then Mehrotra's centring σ = (m_aff / m)³ and
                # the second-order correction of the complementarity products
                da, dlam, dmu, _ = step.direction(0.0, 0.0)
                t = step.longest(da, dlam, dmu)
                m = float(lam @ alpha + mu @ step.s) / (4 * N)
                m_aff = float((alpha + t * da) @ (lam + t * dlam)
                              + (step.s - t * da) @ (mu + t * dmu)) / (4 * N)
                target = (m_aff / m) ** 3 * m
                da, dlam, dmu, db = step.direction(target - da * dlam, target + da * dmu)
            except (np.linalg.LinAlgError, ValueError):  # not positive definite, or not finite
                break
            t = min(1.0, 0.99 * step.longest(da, dlam, dmu))
            if not (t > 0 and np.isfinite(db)):
                break
            alpha, lam, mu, b = alpha + t * da, lam + t * dlam, mu + t * dmu, b + t * db
    return best


class _Step:
    """One iterate's Newton system, factorised: E + Σ_i w_i a_i a_iᵀ in x = (u, b)."""

    def __init__(self, A: Array, E: Array, alpha: Array, s: Array, lam: Array, mu: Array,
                 r_d: Array, r_p: float) -> None:
        N = len(A)
        self.A, self.E, self.alpha, self.s = A, E, alpha, s
        self.lam, self.mu, self.r_d, self.r_p = lam, mu, r_d, r_p
        self.D = lam / alpha + mu / s  # each row's barrier weight
        w = (1.0 / self.D).reshape(2, N).sum(axis=0)
        # M's upper triangle by BLAS's symmetric rank-k update (half a general product's
        # work) on √w-scaled row blocks (no second N × (Nz + 1) array)
        M = np.diag(E)
        root = np.sqrt(w)
        for start in range(0, N, BLOCK_ROWS):
            block = A[start:start + BLOCK_ROWS] * root[start:start + BLOCK_ROWS, None]
            M = syrk(1.0, block, beta=1.0, c=M, trans=1, lower=0, overwrite_c=1)
        self.factor = scipy.linalg.cho_factor(M, lower=False)

    def direction(self, t_lam: Array | float, t_mu: Array | float
                  ) -> tuple[Array, Array, Array, float]:
        """Δα, Δλ, Δμ and Δb towards the complementarity targets λα = t_lam, μ(C − α) = t_mu."""
        A, D = self.A, self.D
        q = -self.r_d + t_lam / self.alpha - self.lam - t_mu / self.s + self.mu
        rhs = A.T @ _rows(q / D)
        rhs[-1] += self.r_p
        dx = scipy.linalg.cho_solve(self.factor, rhs)
        for _ in range(REFINE):
            # iterative refinement against the unassembled equations Δu = Σ Δν_i Φ_i and
            # Σ Δν_i = −r_p: the Cholesky solve alone loses the digits the weights' spread
            # costs, and its error would accumulate in Σν
            res = self.E * dx - A.T @ _rows((q - _signed(A @ dx)) / D)
            res[-1] -= self.r_p
            dx -= scipy.linalg.cho_solve(self.factor, res)
        da = (q - _signed(A @ dx)) / D
        dlam = (t_lam - self.lam * self.alpha - self.lam * da) / self.alpha
        dmu = (t_mu - self.mu * self.s + self.mu * da) / self.s
        return da, dlam, dmu, float(dx[-1])

    def longest(self, da: Array, dlam: Array, dmu: Array) -> float:
        """The longest step in [0, 1] that keeps α, C − α, λ and μ non-negative."""
        return min(1.0, longest_step(self.alpha, da), longest_step(self.s, -da),
                   longest_step(self.lam, dlam), longest_step(self.mu, dmu))


# The rows come in the layout i⁺ for every point, then i⁻, with signs +1 and −1.
def _signed(v: Array) -> Array:
    """A per-point vector on the 2N rows, each row's sign times it: (v, −v)."""
    return np.concatenate([v, -v])


def _rows(v: Array) -> Array:
    """Σ over each point's two rows of sign · v: v⁺ − v⁻."""
    n = len(v) // 2
    return v[:n] - v[n:]
