"""The class scatter of the kernel Fisher discriminant, and the full KFD in closed form.

The contrast vector a and the within-class centring H that both KFD formulations
(`sparsify.algorithms.kfd.formulation`) and the estimator build on, and `full_kfd`,
the full, non-sparse KFD they are measured against.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["class_contrast", "full_kfd", "within_class_centring"]

Array = NDArray[np.float64]


def class_contrast(y: ArrayLike) -> Array:
    """Return a with ``a_i = 1/n₊`` on class +1 and ``−1/n₋`` on class −1.

    ``Kᵀa`` is the difference of the class means of the rows of K, so
    ``(Kᵀa)(Kᵀa)ᵀ`` is the between-class scatter A restricted to the XVs.

    Examples
    --------
    >>> class_contrast([1, 1, -1, 1]).round(3).tolist()
    [0.333, 0.333, -1.0, 0.333]
    """
    y = np.asarray(y)
    pos = y > 0
    return np.where(pos, 1.0 / max(pos.sum(), 1), -1.0 / max((~pos).sum(), 1))


def within_class_centring(y: ArrayLike) -> Callable[[Array], Array]:
    """Return the map M ↦ H M that subtracts each class's mean row (H, a projector).

    ``(H K)ᵀ(H K) = Kᵀ H K`` is the within-class scatter B restricted to the XVs
    (a sum over the samples); applying H costs O(N·Nz) instead of O(N²·Nz).

    Examples
    --------
    >>> import numpy as np
    >>> H = within_class_centring([1, 1, -1, -1])
    >>> H(np.array([1.0, 3.0, 5.0, 5.0])).tolist()
    [-1.0, 1.0, 0.0, 0.0]
    """
    labels = np.asarray(y)
    masks = [labels == c for c in np.unique(labels)]

    def centre(M: Array) -> Array:
        out = np.array(M, dtype=float, copy=True)
        for mask in masks:
            out[mask] -= out[mask].mean(0)
        return out

    return centre


def full_kfd(K: ArrayLike, y: ArrayLike, mu: float) -> tuple[Array, float, float]:
    """The full, non-sparse KFD (every training point an XV), in closed form.

    The convex KFD with Z = X, minimise ‖ξ‖² + μ‖w‖² subject to Kα + b = y + ξ
    and Σ_{i∈c} ξ_i = 0 per class, is min αᵀ(KHK + μK)α subject to aᵀKα = 2
    (`class_contrast`), solved by α ∝ (HK + μI)⁻¹a even when K is singular.

    Parameters
    ----------
    K : array-like of shape (N, N)
        Gram matrix of the training points.
    y : array-like of shape (N,)
        Labels -1/+1.
    mu : float
        Regulariser μ > 0.

    Returns
    -------
    alpha : ndarray of shape (N,)
        Expansion coefficients (scaled so the class means of Kα + b are ±1).
    intercept : float
        b, the midpoint of the projected class means.
    eigenvalue : float
        λ, the largest eigenvalue of (KHK + μK)⁻¹(K a aᵀ K), the Rayleigh
        quotient's optimum; the convex problem's optimal value is 4/λ.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0], [0.5], [2.0], [2.4]])
    >>> alpha, b, lam = full_kfd(np.exp(-(X - X.T) ** 2), [-1, -1, 1, 1], mu=0.1)
    >>> np.sign(np.exp(-(X - X.T) ** 2) @ alpha + b).tolist()
    [-1.0, -1.0, 1.0, 1.0]
    """
    K = np.asarray(K, dtype=float)
    y = np.asarray(y)
    a = class_contrast(y)
    v = np.linalg.solve(within_class_centring(y)(K) + mu * np.eye(len(K)), a)
    lam = float(a @ K @ v)
    alpha = 2.0 * v / lam
    proj = K @ alpha
    return alpha, float(-0.5 * (proj[y > 0].mean() + proj[y <= 0].mean())), lam
