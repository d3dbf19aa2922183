"""The KLR formulation's exact fast path: W(Z) by a damped Newton method, warm-started.

For fixed XVs Z the KLR inner problem is smooth and strictly convex. With the
whitened coefficients u = Rβ (RᵀR = K_ZZ + jitter·I, R the transposed Cholesky
factor) and the features Φ = K_XZ R⁻¹ it reads, exactly as the cvxpy
declaration of `sparsify.algorithms.klr.formulation.KLR` (same N·H scaling)::

    W(Z) = min_{U, b}  (Nλ/2) Σ_k ‖u_k‖² + Σ_i loss_i(Φ U + b)

with the logistic loss (one output, t_i ∈ {0, 1}) or the softmax loss (K
outputs, Σ_k b_k = 0). Its Hessian NλI + Φᵀ D Φ is bounded below by NλI, so
Newton's method in (U, b) is well conditioned whatever K_ZZ looks like. Each
Newton system is solved by conjugate gradients with exact Hessian-vector
products (O(N·Nz·K) each), preconditioned per output by the exact diagonal
block of the Hessian (a Cholesky factor of Nz + 1 unknowns; for one output it
is the whole Hessian, so CG stops after one step) or, when Nz is too large
for those blocks, by the Hessian's diagonal. Steps are damped by a
backtracking line search, and each evaluation starts from the previous one's
β and b (L-BFGS moves Z by small steps), so one or two Newton steps usually
suffice.

The gradient is Lemma 1 (the envelope theorem) on the Lagrangian in β::

    ∂W/∂K_XZ = Δ βᵀ,    Δ_ik = ∂loss_i/∂f_ik  (σ(f) − t, or softmax − one-hot)
    ∂W/∂K_ZZ = (Nλ/2) β βᵀ

mapped to ∂W/∂Z by the kernel's vector-Jacobian products, as the generic
path does with its duals (there ν = −Δ and c = Nλ/2).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg
from numpy.typing import NDArray
from scipy.special import expit, log_expit, logsumexp

from sparsify.core.kernel_blocks import (
    diagonal_scale,
    expansion_factor,
    kernel_blocks,
    link_gradient,
)
from sparsify.core.marginal import Evaluation, Marginal, check_expansion_vectors
from sparsify.core.solvers import SolverError
from sparsify.kernels import Kernel

__all__ = ["NewtonKLRMarginal"]

Array = NDArray[np.float64]

#: Above this many XVs the per-output Hessian blocks (O(N·Nz²·K) to form, O(Nz³·K) to
#: factor) cost more than the conjugate-gradient steps they save; use the diagonal.
BLOCK_PRECONDITIONER_MAX_NZ = 1500


class NewtonKLRMarginal(Marginal):
    """W(Z) and ∇W(Z) of kernel logistic regression by Newton's method (no cvxpy).

    Parameters
    ----------
    lam : float
        Regularisation λ > 0 of (λ/2)‖w‖².
    X : ndarray of shape (N, d)
        Training inputs.
    y : ndarray of shape (N,)
        Labels: two distinct values (the larger is the positive class) or K > 2
        classes (class k is the k-th smallest label), as `KLR` reads them.
    kernel : Kernel
        Kernel with vector-Jacobian products.
    n_expansion : int
        Number of XVs Nz.
    tol : float, default=1e-9
        Newton stops when the Newton decrement δ² = gᵀH⁻¹g (twice the predicted
        distance of W to its minimum) is at most ``tol² · max(1, |W|)``, so W is
        accurate to about ``tol²`` relative and (β, b) to about ``tol``.
    jitter : float, default=1e-10
        Added to the diagonal of K_ZZ relative to the mean kernel diagonal on X,
        exactly as `sparsify.CvxpyMarginal` does (the same W).
    max_newton : int, default=100
        Newton steps per evaluation before giving up with a `SolverError`.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import RBF
    >>> X = np.array([[0.0, 0.0], [0.2, 0.1], [1.0, 1.0], [0.9, 1.2]])
    >>> y = np.array([-1, -1, 1, 1])
    >>> ev = NewtonKLRMarginal(0.01, X, y, RBF(1.0), n_expansion=2).evaluate(X[[0, 2]])
    >>> ev.solver, ev.grad.shape
    ('newton', (2, 2))
    >>> np.sign(RBF(1.0)(X, X[[0, 2]]) @ ev.coef + ev.intercept).astype(int).tolist()
    [-1, -1, 1, 1]
    """

    formulation_name = "klr"

    def __init__(
        self,
        lam: float,
        X: Array,
        y: NDArray[Any],
        kernel: Kernel,
        n_expansion: int,
        tol: float = 1e-9,
        jitter: float = 1e-10,
        max_newton: int = 100,
    ) -> None:
        if not lam > 0:
            raise ValueError(f"The 'lam' parameter of KLR must be a float > 0. Got {lam!r} "
                             "instead.")
        self.lam = float(lam)
        self.X = np.asarray(X, dtype=float)
        classes, codes = np.unique(np.asarray(y), return_inverse=True)
        if len(classes) < 2:
            raise ValueError(f"The 'klr' formulation needs two classes; got {len(classes)}.")
        self.n_outputs = 1 if len(classes) == 2 else len(classes)
        # targets: t ∈ {0, 1} for the logistic loss, one-hot rows for the softmax
        self.T = (codes[:, None].astype(float) if self.n_outputs == 1
                  else np.eye(len(classes))[codes])
        self.kernel = kernel
        self.n_expansion = int(n_expansion)
        self.tol = float(tol)
        self.jitter = jitter * max(diagonal_scale(kernel, self.X), 1e-300)
        self.max_newton = int(max_newton)
        self._last: tuple[Array, Array] | None = None  # β (Nz, K) and b (K,) of the last solve
        self._precond: Any = None
        # the diagonal preconditioner costs about one CG step: rebuild it at every Newton step
        self._rebuild_after = (max(10, self.n_expansion // 4)
                               if self.n_expansion <= BLOCK_PRECONDITIONER_MAX_NZ else -1)

    # -- the inner problem in whitened coordinates --------------------------------------------

    def _whiten(self, K_xz: Array, K_zz: Array) -> tuple[Array, Any, Any]:
        """Φ = K_XZ R⁻¹ and the maps β ↦ u = Rβ and u ↦ β = R⁻¹u."""
        A = K_zz + self.jitter * np.eye(len(K_zz))
        try:
            L = scipy.linalg.cholesky(A, lower=True)
        except np.linalg.LinAlgError:
            # round-off made K_ZZ + jitter indefinite (XVs almost equal): use the clipped
            # eigen factor; R Rᵀ = Λ is diagonal, so R⁻¹ = Rᵀ Λ⁻¹ (pseudo-inverse on Λ = 0).
            R = expansion_factor(A)
            ev = (R * R).sum(1)
            inv = np.where(ev > 0, 1.0 / np.where(ev > 0, ev, 1.0), 0.0)
            R_inv = R.T * inv
            return np.ascontiguousarray(K_xz @ R_inv), (lambda B: R @ B), (lambda U: R_inv @ U)
        # C order: the Hessian blocks and products below run several times faster on it
        Phi = np.ascontiguousarray(scipy.linalg.solve_triangular(L, K_xz.T, lower=True).T)
        return (Phi, (lambda B: L.T @ B),
                (lambda U: scipy.linalg.solve_triangular(L, U, lower=True, trans="T")))

    def _loss(self, F: Array) -> tuple[float, Array, Array]:
        """Σ loss, Δ = ∂loss/∂F and the probabilities P, all at outputs F (N, K)."""
        T = self.T
        if self.n_outputs == 1:
            value = float(np.sum(-log_expit(-F) - T * F))  # log(1 + eᶠ) − t f
            P = expit(F)
        else:
            lse = logsumexp(F, axis=1, keepdims=True)
            value = float(np.sum(lse) - np.sum(T * F))
            P = np.exp(F - lse)
        return value, P - T, P

    def _start(self, to_u: Any) -> tuple[Array, Array]:
        K = self.n_outputs
        if self._last is not None and self._last[0].shape == (self.n_expansion, K):
            return to_u(self._last[0]), self._last[1].copy()
        # cold start: β = 0 and the best bias-only model
        freq = np.clip(self.T.mean(0), 1e-12, 1.0)
        if K == 1:
            b = np.log(freq / np.clip(1.0 - freq, 1e-12, 1.0))
        else:
            b = np.log(freq) - np.log(freq).mean()
        return np.zeros((self.n_expansion, K)), b

    def _newton(self, Phi: Array, U: Array, b: Array) -> tuple[Array, Array, float, Array, int]:
        """Minimise the inner objective from (U, b); return U, b, W, Δ and the step count."""
        N, K = self.T.shape
        nl = N * self.lam
        multi = K > 1

        def objective(U: Array, b: Array) -> tuple[float, Array, Array]:
            loss, D, P = self._loss(Phi @ U + b)
            return 0.5 * nl * float(np.sum(U * U)) + loss, D, P

        value, D, P = objective(U, b)
        forcing = 0.1
        cg_steps = 0
        for step in range(self.max_newton + 1):
            gU = nl * U + Phi.T @ D
            gb = D.sum(0)
            W = P * (1.0 - P)  # per-output curvature (the Hessian's diagonal blocks)

            def hess(SU: Array, sb: Array, P: Array = P, W: Array = W) -> tuple[Array, Array]:
                dF = Phi @ SU + sb
                M = W * dF if not multi else P * dF - P * np.sum(P * dF, axis=1, keepdims=True)
                return nl * SU + Phi.T @ M, M.sum(0)

            if self._precond is None or cg_steps > self._rebuild_after:
                # Forming the blocks costs O(N·Nz²·K), a CG step O(N·Nz·K): keep the
                # blocks of an earlier Newton step, or of the previous evaluation (Φ
                # moves continuously with Z, as its Cholesky factor does), while CG
                # still converges in a few steps with them.
                self._precond = self._preconditioner(Phi, W, nl)
            precond = self._precond
            SU, sb, cg_steps = _pcg(hess, precond, gU, gb, forcing, max_iter=500, center=multi)
            dec = float(np.sum(gU * SU) + gb @ sb)
            scale = max(1.0, abs(value))
            if dec <= self.tol**2 * scale:
                return U, b, value, D, step
            if step == self.max_newton:
                break
            # Inexact Newton: a forcing term √(δ²/|W|) gives superlinear convergence.
            forcing = float(np.clip(np.sqrt(dec / scale), 1e-10, 0.1))
            t = 1.0
            while True:
                U_try, b_try = U - t * SU, b - t * sb
                if multi:
                    b_try = b_try - b_try.mean()  # the softmax ignores a common shift
                v_try, D_try, P_try = objective(U_try, b_try)
                # Armijo, with room for round-off in W near the optimum
                if v_try <= value - 1e-4 * t * dec + 1e-13 * scale:
                    break
                t *= 0.5
                if t < 1e-10:
                    if dec <= 1e-12 * scale:  # at round-off level: as good as it gets
                        return U, b, value, D, step
                    raise SolverError(
                        f"Newton's method for the 'klr' formulation (N={N}, "
                        f"Nz={self.n_expansion}) found no descent step (Newton decrement "
                        f"{dec:.3g}, W={value:.6g}); move the XVs apart, raise lam, or use "
                        "solver='clarabel' (the generic path)."
                    )
            U, b, value, D, P = U_try, b_try, v_try, D_try, P_try
        raise SolverError(
            f"Newton's method for the 'klr' formulation (N={N}, Nz={self.n_expansion}) did not "
            f"reach tol={self.tol:g} in {self.max_newton} steps (Newton decrement {dec:.3g}, "
            f"W={value:.6g}); loosen solver_tol or use solver='clarabel' (the generic path)."
        )

    def _preconditioner(self, Phi: Array, W: Array, nl: float) -> Any:
        """Inverse of the Hessian's block diagonal (one block per output), as a function."""
        N, nz = Phi.shape
        K = W.shape[1]
        if nz > BLOCK_PRECONDITIONER_MAX_NZ:
            dU = nl + (Phi * Phi).T @ W  # diag of Φᵀ diag(w_k) Φ, per output
            db = W.sum(0) + 1e-12 * N
            return lambda rU, rb: (rU / dU, rb / db)
        factors = []
        for k in range(K):
            w = W[:, k]
            H = np.empty((nz + 1, nz + 1))
            Phi_w = Phi * np.sqrt(w)[:, None]
            H[:nz, :nz] = Phi_w.T @ Phi_w  # numpy computes AᵀA as one symmetric rank-k update
            H[:nz, :nz][np.diag_indices(nz)] += nl
            H[:nz, nz] = H[nz, :nz] = Phi.T @ w
            # the bias curvature Σw vanishes only for (near-)certain predictions
            H[nz, nz] = w.sum() + 1e-12 * N
            factors.append(scipy.linalg.cho_factor(H, lower=True, check_finite=False))

        def solve(rU: Array, rb: Array) -> tuple[Array, Array]:
            out = np.empty((nz + 1, K))
            for k, fac in enumerate(factors):
                out[:, k] = scipy.linalg.cho_solve(fac, np.append(rU[:, k], rb[k]),
                                                   check_finite=False)
            return out[:nz], out[nz]

        return solve

    # -- the Marginal interface ---------------------------------------------------------------

    def evaluate(self, Z: Array, grad: bool = True) -> Evaluation:
        Z = check_expansion_vectors(Z, self.n_expansion, self.X.shape[1], self.formulation_name)
        K_xz, K_zz = kernel_blocks(self.kernel, self.X, Z)
        Phi, to_u, to_beta = self._whiten(K_xz, K_zz)
        U, b = self._start(to_u)
        U, b, value, D, _ = self._newton(Phi, U, b)
        B = to_beta(U)
        self._last = (B, b)
        coef = B[:, 0].copy() if self.n_outputs == 1 else B
        intercept: float | Array = float(b[0]) if self.n_outputs == 1 else b.copy()
        if not grad:
            return Evaluation(value, None, coef, intercept, "newton")
        # Lemma 1 with ν = −Δ and c = Nλ/2, summed in row blocks (no N × Nz temporary)
        gradient = link_gradient(self.kernel, self.X, Z, K_xz, K_zz, -D, B,
                                 0.5 * len(self.X) * self.lam)
        return Evaluation(value, gradient, coef, intercept, "newton")


def _pcg(
    hess: Any, precond: Any, gU: Array, gb: Array, rtol: float, max_iter: int, center: bool
) -> tuple[Array, Array, int]:
    """Preconditioned conjugate gradients for H s = g over pairs (S_U, s_b), and its steps.

    With ``center`` the bias parts are kept summing to zero: the softmax Hessian is
    singular along a common shift of b, and positive definite on that subspace.
    """

    def proj(zU: Array, zb: Array) -> tuple[Array, Array]:
        return (zU, zb - zb.mean()) if center else (zU, zb)

    xU, xb = np.zeros_like(gU), np.zeros_like(gb)
    rU, rb = gU.copy(), gb.copy()
    zU, zb = proj(*precond(rU, rb))
    pU, pb = zU.copy(), zb.copy()
    rz = float(np.sum(rU * zU) + rb @ zb)
    stop = rtol * np.sqrt(float(np.sum(rU * rU) + rb @ rb))
    steps = 0
    while rz > 0 and steps < max_iter:
        steps += 1
        qU, qb = hess(pU, pb)
        pq = float(np.sum(pU * qU) + pb @ qb)
        if not pq > 0:
            break
        alpha = rz / pq
        xU += alpha * pU
        xb += alpha * pb
        rU -= alpha * qU
        rb -= alpha * qb
        if np.sqrt(float(np.sum(rU * rU) + rb @ rb)) <= stop:
            break
        zU, zb = proj(*precond(rU, rb))
        rz_new = float(np.sum(rU * zU) + rb @ zb)
        if not rz_new > 0:  # the residual vanished to round-off
            break
        beta = rz_new / rz
        rz = rz_new
        pU = zU + beta * pU
        pb = zb + beta * pb
    return xU, xb, steps
