"""Kernel ridge regression's exact W(Z) and ∇W(Z) in closed form (no cvxpy).

At fixed XVs Z the problem

    W(Z) = min_{β, b}  ‖y − K_XZ β − b1‖² + α βᵀK_ZZβ

is a ridge regression. In the whitened coordinates γ with β = Tγ
(`sparsify.core.kernel_blocks.whitening`: TᵀK_ZZT = I, features F = K_XZ T, the
training points' coordinates in an orthonormal basis of span φ(Z)) and with the
intercept eliminated by centring (b = ȳ − F̄γ),

    γ = (F_cᵀF_c + αI)⁻¹ F_cᵀ y_c,    W = ‖r‖² + α‖γ‖²,   r = y_c − F_c γ (= y − K_XZ β − b1),

one Nz × Nz Cholesky solve whatever K_ZZ's conditioning, O(N·Nz²) in all. The
residual is taken from the whitened rows: where K_ZZ is numerically singular
(points on a low-dimensional manifold, as naval's) β = Tγ is large and K_XZ β
cancels to a few digits, which once made ∇W wrong by orders of magnitude. The
gradient is Lemma 1 (the envelope theorem on the Lagrangian in β and b):
∂W/∂K_XZ = −2 r βᵀ and ∂W/∂K_ZZ = α ββᵀ, mapped to ∂W/∂Z by the kernel's
vector-Jacobian products (`sparsify.core.kernel_blocks.link_gradient` with ν = 2r).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg
from numpy.typing import NDArray

from sparsify.core.kernel_blocks import diagonal_scale, kernel_blocks, link_gradient, whitening
from sparsify.core.marginal import Evaluation, Marginal, check_expansion_vectors
from sparsify.core.memory import check_memory
from sparsify.kernels import Kernel

__all__ = ["RidgeMarginal"]

Array = NDArray[np.float64]


class RidgeMarginal(Marginal):
    """W(Z) and ∇W(Z) of kernel ridge regression with a free intercept, in closed form.

    Parameters
    ----------
    alpha : float
        Weight α > 0 of ‖w‖² = βᵀK_ZZβ.
    X : ndarray of shape (N, d)
    y : ndarray of shape (N,)
        Real targets.
    kernel : Kernel
    n_expansion : int
        Number of XVs Nz.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import RBF
    >>> X = np.linspace(-2, 2, 30)[:, None]
    >>> marginal = RidgeMarginal(1e-3, X, np.sin(X[:, 0]), RBF(1.0), 4)
    >>> ev = marginal.evaluate(X[::8])
    >>> ev.grad.shape, bool(ev.value < 0.05)
    ((4, 1), True)
    """

    formulation_name = "kernel_ridge"

    def __init__(self, alpha: float, X: Array, y: NDArray[Any], kernel: Kernel,
                 n_expansion: int) -> None:
        self.alpha = float(alpha)
        self.X = np.asarray(X, dtype=np.float64)
        self.y = np.asarray(y, dtype=np.float64).ravel()
        if self.y.shape != (len(self.X),) or not np.isfinite(self.y).all():
            raise ValueError(f"The 'kernel_ridge' formulation needs finite real targets y of "
                             f"shape ({len(self.X)},); got shape {np.shape(y)}.")
        self.kernel = kernel
        self.n_expansion = n_expansion
        # K_XZ, its whitened copy and the centred one: three N × Nz arrays at once
        check_memory(8 * len(self.X) * (2 * n_expansion + self.X.shape[1] + 4),
                     f"Kernel ridge's closed form with N={len(self.X)}, Nz={n_expansion}",
                     "Use fewer XVs or a subsample of the training points.")
        # the same relative jitter as the generic path's, so both solve the same problem
        self.jitter = 1e-10 * max(diagonal_scale(kernel, self.X, self.formulation_name), 1e-300)

    def evaluate(self, Z: Array, grad: bool = True) -> Evaluation:
        Z = check_expansion_vectors(Z, self.n_expansion, self.X.shape[1], self.formulation_name)
        K_xz, K_zz = kernel_blocks(self.kernel, self.X, Z)
        T = whitening(K_zz + self.jitter * np.eye(len(Z)))
        F = K_xz @ T
        F_mean, y_mean = F.mean(axis=0), self.y.mean()
        F -= F_mean  # centred in place: the intercept is eliminated
        gram = F.T @ F
        gram[np.diag_indices_from(gram)] += self.alpha
        gamma = scipy.linalg.cho_solve(scipy.linalg.cho_factor(gram), F.T @ (self.y - y_mean))
        beta = T @ gamma
        intercept = float(y_mean - F_mean @ gamma)
        # the residual from the whitened rows, not y − K_XZ β − b: β = Tγ is large where
        # K_ZZ is ill-conditioned, and K_XZ β then cancels to a few digits
        r = self.y - y_mean - F @ gamma
        value = float(r @ r + self.alpha * gamma @ gamma)
        gradient = (link_gradient(self.kernel, self.X, Z, K_xz, K_zz, 2.0 * r, beta, self.alpha)
                    if grad else None)
        return Evaluation(value, gradient, beta, intercept, "closed form")
