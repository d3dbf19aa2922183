"""The approximate Gaussian kernel of order m, with numpy only (`sparsify.kernels.taylor`).

K_m(x, y) = exp(−γ(‖x‖² + ‖y‖²)) Σ_{k=0..m} (2γ)^k / k! ⟨x, y⟩^k, the Taylor
truncation of the Gaussian kernel (Liu, Jiang & Liao, "Approximate Gaussian
Kernel for Large-Scale SVM", eq. 1 and 13). Its explicit feature map,
`sparsify.kernels.taylor.TaylorGaussianFeatures`, lives beside the
registration of the kernel in `sparsify.kernels.taylor`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from sparsify.kernels import Kernel

__all__ = ["TaylorRBF"]

Array = NDArray[np.float64]


def _partial_exp(t: Array, order: int) -> Array:
    """Σ_{k=0..order} t^k / k! (0 for order < 0)."""
    total, term = np.zeros_like(t), np.ones_like(t)
    for k in range(order + 1):
        total += term
        term = term * t / (k + 1)
    return total


@dataclass(frozen=True)
class TaylorRBF(Kernel):
    """Approximate Gaussian kernel of order m (Liu, Jiang & Liao, eq. 1 and 13).

    Parameters
    ----------
    gamma : float, default=1.0
        Width, as in the Gaussian kernel exp(−γ‖x − y‖²).
    order : int, default=2
        Order m of the Taylor truncation (Liu, Jiang & Liao's GAUSS-2 is m = 2).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import RBF
    >>> a, b = np.array([[0.3, -0.2]]), np.array([[0.1, 0.4]])
    >>> round(float(TaylorRBF(0.5, order=2)(a, b)[0, 0]), 5), round(float(RBF(0.5)(a, b)[0, 0]), 5)
    (0.81875, 0.81873)
    """

    gamma: float = 1.0
    order: int = 2
    name = "taylor_rbf"

    def __call__(self, A: Array, B: Array) -> Array:
        ea = np.exp(-self.gamma * (A * A).sum(1))
        eb = np.exp(-self.gamma * (B * B).sum(1))
        return ea[:, None] * eb[None, :] * _partial_exp(2 * self.gamma * (A @ B.T), self.order)

    def diag(self, A: Array) -> Array:
        sq = (A * A).sum(1)
        return np.exp(-2 * self.gamma * sq) * _partial_exp(2 * self.gamma * sq, self.order)

    def vjp_z(self, X: Array, Z: Array, G: Array, K: Array | None = None) -> Array:
        K = self(X, Z) if K is None else K
        ex = np.exp(-self.gamma * (X * X).sum(1))
        ez = np.exp(-self.gamma * (Z * Z).sum(1))
        # ∂K/∂z = −2γ z K + e_x e_z 2γ S_{m−1}(2γ⟨x, z⟩) x, since S_m' = S_{m−1}.
        D = ex[:, None] * ez[None, :] * _partial_exp(2 * self.gamma * (X @ Z.T), self.order - 1)
        return 2 * self.gamma * ((G * D).T @ X - (G * K).sum(0)[:, None] * Z)
