"""Sparse kernel PCA's W(Z) and ∇W(Z): an eigenproblem in span φ(Z), no cvxpy.

With the training points centred in feature space, φᶜ(x) = φ(x) − m and
m = (1/N) Σ_i φ(x_i), a unit direction w = Σ_j v_j φ(z_j) in span φ(Z) captures
the variance (1/N) Σ_i ⟨w, φᶜ(x_i)⟩² = vᵀAv with

    A = K_XZᶜᵀ K_XZᶜ / N,   K_XZᶜ = H K_XZ,   H = I − 11ᵀ/N,

(the centring of feature space subtracts each column's mean) and ‖w‖² = vᵀBv,
B = K_ZZ + εI. The variance captured by the best k orthonormal directions in the
span is the sum of the top k eigenvalues of Av = λBv. In whitened coordinates
(T from `sparsify.core.kernel_blocks.whitening`, TᵀBT = I, F = K_XZᶜ T, the centred
points' coordinates in an orthonormal basis of the span) they are the top k
eigenvalues of FᵀF/N, one Nz × Nz eigendecomposition whatever K_ZZ's
conditioning. W(Z) = −Σ_{top k} λ.

The gradient follows as in the paper's eq. 63 (the envelope, or Hellmann–Feynman,
argument): where λ_k > λ_{k+1} the top-k eigenspace is differentiable and the
eigenvectors' own derivatives drop out of the sum, dλ_l = v_lᵀ(dA − λ_l dB)v_l
for the B-normalised v_l = T u_l. With V = [v_1 … v_k]::

    ∂W/∂K_XZ = −(2/N) K_XZᶜ V Vᵀ        ∂W/∂K_ZZ = V diag(λ) Vᵀ

(H K_XZᶜ = K_XZᶜ), which `sparsify.core.kernel_blocks.link_gradient` maps to ∂W/∂Z
through the kernel's vector-Jacobian products with ν = (2/N) K_XZᶜ V, β = V and
c = λ, in O(N·Nz·d) without an N × Nz × d array. Where λ_k = λ_{k+1} W is not
differentiable (the top-k eigenspace is not unique); the marginal then warns once
with `sparsify.core.marginal.NonDifferentiableWarning`.
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import NDArray

from sparsify.core.kernel_blocks import diagonal_scale, kernel_blocks, link_gradient, whitening
from sparsify.core.marginal import (
    Evaluation,
    Marginal,
    NonDifferentiableWarning,
    check_expansion_vectors,
)
from sparsify.core.memory import check_memory
from sparsify.kernels import Kernel

__all__ = ["VarianceMarginal", "component_signs"]

Array = NDArray[np.float64]

#: A gap λ_k − λ_{k+1} at or below this fraction of λ_1 counts as a tie: W has a kink there.
TIE_RTOL = 1e-10


def component_signs(U: Array) -> Array:
    """Signs that make the largest-magnitude entry of each column of ``U`` positive.

    An eigenvector's sign is arbitrary; this fixes it, so that a fit is
    reproducible (scikit-learn's ``svd_flip`` does the same).

    Examples
    --------
    >>> import numpy as np
    >>> component_signs(np.array([[0.1, 0.9], [-0.8, 0.2]])).tolist()
    [-1.0, 1.0]
    """
    rows = np.argmax(np.abs(U), axis=0)
    signs: Array = np.where(U[rows, np.arange(U.shape[1])] < 0, -1.0, 1.0)
    return signs


class VarianceMarginal(Marginal):
    """W(Z) = −(variance of the centred data captured by k components in span φ(Z)), with ∇W.

    Parameters
    ----------
    X : ndarray of shape (N, d)
        Training inputs.
    kernel : Kernel
        Kernel with vector-Jacobian products.
    n_expansion : int
        Number of XVs Nz.
    n_components : int or None
        k ≤ Nz; None: all Nz, W = −trace(B⁻¹A), differentiable everywhere.
    jitter : float, default=1e-10
        Added to K_ZZ's diagonal, relative to the mean kernel diagonal on X (the
        generic path's amount; a constant, so the gradient stays exact).

    Notes
    -----
    `evaluate` returns β = V (Nz, k), the B-normalised eigenvectors, sign fixed by
    `component_signs`, and the intercept b = −(mean of the rows of K_XZ) V, so that
    K(x, Z) β + b are the k component scores ⟨w_l, φ(x) − m⟩ of any x: on the
    training points they have mean 0 and variances λ.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import RBF
    >>> X = np.random.default_rng(0).normal(size=(50, 2))
    >>> W = VarianceMarginal(X, RBF(0.5), n_expansion=5, n_components=2)
    >>> ev = W.evaluate(X[:5])
    >>> ev.grad.shape, ev.coef.shape, bool(ev.value < 0)
    ((5, 2), (5, 2), True)
    >>> scores = RBF(0.5)(X, X[:5]) @ ev.coef + ev.intercept
    >>> bool(np.isclose(-(scores ** 2).mean(0).sum(), ev.value))
    True
    """

    formulation_name = "kernel_pca"

    def __init__(self, X: Array, kernel: Kernel, n_expansion: int,
                 n_components: int | None = None, jitter: float = 1e-10) -> None:
        self.X = np.asarray(X, dtype=np.float64)
        if self.X.ndim != 2 or self.X.shape[0] < 1 or self.X.shape[1] < 1:
            raise ValueError(f"The 'kernel_pca' formulation needs X of shape (n_samples, "
                             f"n_features) with at least one of each; got shape "
                             f"{self.X.shape}.")
        if not np.isfinite(self.X).all():
            raise ValueError("X passed to the 'kernel_pca' formulation contains NaN or "
                             "infinity; remove or impute those values.")
        self.n_expansion = int(n_expansion)
        if self.n_expansion < 1:
            raise ValueError(f"n_expansion must be at least 1; got {n_expansion}.")
        k = self.n_expansion if n_components is None else int(n_components)
        if not 1 <= k <= self.n_expansion:
            raise ValueError(
                f"n_components={n_components} must be between 1 and the number of XVs "
                f"Nz={self.n_expansion}: span φ(Z) has at most Nz directions. Lower "
                "n_components or raise n_expansion.")
        self.n_components = k
        self.kernel = kernel
        # K_XZ, its centred copy and the whitened one: three N × Nz arrays at once
        N, d = self.X.shape
        check_memory(8 * N * (3 * self.n_expansion + d + 2),
                     f"Sparse kernel PCA with N={N}, Nz={self.n_expansion}",
                     "Use fewer XVs or a subsample of the training points.")
        self.jitter = jitter * max(diagonal_scale(kernel, self.X, self.formulation_name),
                                   1e-300)
        self._warned = False

    def evaluate(self, Z: Array, grad: bool = True) -> Evaluation:
        Z = check_expansion_vectors(Z, self.n_expansion, self.X.shape[1], self.formulation_name)
        N, k = len(self.X), self.n_components
        K_xz, K_zz = kernel_blocks(self.kernel, self.X, Z)
        T = whitening(K_zz + self.jitter * np.eye(len(Z)))
        mean = K_xz.mean(axis=0)
        centred = K_xz - mean
        F = centred @ T
        lam_all, U_all = np.linalg.eigh(F.T @ F / N)  # ascending
        del F
        lam_all = np.clip(lam_all[::-1], 0.0, None)  # descending; clip round-off negatives
        U = U_all[:, ::-1][:, :k]
        U = U * component_signs(U)
        lam = lam_all[:k]
        V = T @ U  # B-normalised: Vᵀ(K_ZZ + εI)V = I
        value = -float(lam.sum())
        intercept = -(mean @ V)
        if not grad:
            return Evaluation(value, None, V, intercept, "eigen")
        if k < len(lam_all) and not self._warned:
            gap = lam_all[k - 1] - lam_all[k]
            if gap <= TIE_RTOL * max(float(lam_all[0]), np.finfo(float).tiny):
                self._warned = True
                warnings.warn(
                    f"W(Z) of the 'kernel_pca' formulation is not differentiable here: the "
                    f"k-th and (k+1)-th eigenvalues are equal (λ_{k} = {lam_all[k - 1]:.6g}, "
                    f"λ_{k + 1} = {lam_all[k]:.6g}), so the top-{k} eigenspace is not unique. "
                    "The returned gradient is the derivative for one choice of the tied "
                    "eigenvectors.",
                    NonDifferentiableWarning,
                    stacklevel=2,
                )
        gradient = link_gradient(self.kernel, self.X, Z, K_xz, K_zz, (2.0 / N) * (centred @ V),
                                 V, lam)
        return Evaluation(value, gradient, V, intercept, "eigen")
