"""Pre-images for the Gaussian kernel by the fixed-point iteration of Mika et al. (1999).

A point Ψ = Σ_j c_j φ(z_j) of feature space rarely has an exact pre-image; the
approximate one minimises ‖φ(x) − Ψ‖². For k(x, z) = exp(−γ‖x − z‖²),
‖φ(x)‖² = 1, so that is maximising Ψ(x) = Σ_j c_j k(x, z_j), whose stationarity
condition ∇Ψ(x) = 2γ Σ_j c_j k(x, z_j)(z_j − x) = 0 gives the fixed-point
iteration (Mika, Schölkopf, Smola, Müller, Scholz & Rätsch, "Kernel PCA and
de-noising in feature spaces", NIPS 11, 1999)

    x ← Σ_j c_j k(x, z_j) z_j / Σ_j c_j k(x, z_j).

It is not monotone and may stall where the denominator vanishes, so each point
keeps the best iterate it visits (the largest Ψ(x)).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from sparsify.kernels import RBF

__all__ = ["rbf_pre_image"]

Array = NDArray[np.float64]


def rbf_pre_image(coef: ArrayLike, Z: ArrayLike, gamma: float, X0: ArrayLike | None = None,
                  max_iter: int = 200, tol: float = 1e-8) -> Array:
    """Approximate pre-images x of Ψ = Σ_j c_j φ(z_j) under the Gaussian kernel.

    Parameters
    ----------
    coef : array-like of shape (n, Nz)
        One expansion c per point wanted.
    Z : array-like of shape (Nz, d)
        The expansion vectors.
    gamma : float
        The kernel's γ in exp(−γ‖x − z‖²).
    X0 : array-like of shape (n, d), optional
        Starting points; by default, for each row, the z_j of largest Ψ(z_j) (the
        XV whose image is nearest Ψ).
    max_iter : int, default=200
        Fixed-point iterations at most.
    tol : float, default=1e-8
        A point stops when a step moves it less than ``tol · (1 + ‖x‖)``.

    Returns
    -------
    ndarray of shape (n, d)
        For each row, the iterate with the largest Ψ(x) found.

    Examples
    --------
    The pre-image of φ(z) itself is z:

    >>> import numpy as np
    >>> Z = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    >>> rbf_pre_image([[0.0, 1.0, 0.0]], Z, gamma=0.5).tolist()
    [[1.0, 0.0]]

    and that of the mean of two nearby images lies between them:

    >>> x = rbf_pre_image([[0.5, 0.5, 0.0]], Z, gamma=0.5)
    >>> np.round(x, 6).tolist()
    [[0.5, 0.0]]
    """
    Z = np.asarray(Z, dtype=np.float64)
    C = np.atleast_2d(np.asarray(coef, dtype=np.float64))
    if C.shape[1] != len(Z):
        raise ValueError(f"coef has {C.shape[1]} columns but there are {len(Z)} expansion "
                         "vectors; pass one coefficient per XV in each row.")
    kernel = RBF(float(gamma))
    if X0 is None:
        X = Z[np.argmax(C @ kernel(Z, Z), axis=1)].copy()
    else:
        X = np.array(X0, dtype=np.float64, copy=True).reshape(len(C), Z.shape[1])
    K = kernel(X, Z)
    best_x: Array = X.copy()
    best_psi = (K * C).sum(1)
    active = np.ones(len(C), dtype=bool)
    for _ in range(max_iter):
        if not active.any():
            break
        rows = np.flatnonzero(active)
        weights = K[rows] * C[rows]
        den = weights.sum(1)
        # a vanishing denominator: Ψ is flat at x, no step to take
        moves = np.abs(den) > 1e-12 * np.maximum(np.abs(weights).sum(1), np.finfo(float).tiny)
        new = X[rows].copy()
        new[moves] = (weights[moves] @ Z) / den[moves, None]
        step = np.linalg.norm(new - X[rows], axis=1)
        X[rows] = new
        K[rows] = kernel(new, Z)
        psi = (K[rows] * C[rows]).sum(1)
        better = psi > best_psi[rows]
        best_x[rows[better]] = new[better]
        best_psi[rows[better]] = psi[better]
        active[rows] = moves & (step > tol * (1.0 + np.linalg.norm(new, axis=1)))
    return best_x
