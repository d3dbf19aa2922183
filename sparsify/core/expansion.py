"""Expansion coefficients for given XVs (paper eq. 45).

With the XVs fixed, β and b are the solution of the formulation's convex problem
under ``w = Σ_j β_j φ(z_j)``: for the SVM, a linear SVM in the subspace spanned
by φ(z_1) … φ(z_Nz). This is the second step of the paper's modified reduced
set method (MRS) and modified RSVM (MRSVM).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from sparsify.core.conic import make_marginal
from sparsify.core.formulation import Formulation, make_formulation
from sparsify.kernels import Kernel, make_kernel

__all__ = ["expansion_coefficients"]


def expansion_coefficients(
    X: ArrayLike,
    y: ArrayLike | None,
    Z: ArrayLike,
    *,
    formulation: str | Formulation = "svm",
    kernel: str | Kernel = "rbf",
    gamma: float | str = "scale",
    degree: int = 3,
    coef0: float = 0.0,
    solver: str = "auto",
    tol: float = 1e-8,
    **formulation_params: Any,
) -> tuple[NDArray[np.float64], float | NDArray[np.float64]]:
    """Return β and b of the kernel machine with the given XVs (paper eq. 45).

    Parameters
    ----------
    X : array-like of shape (N, d)
        Training inputs.
    y : array-like of shape (N,) or None
        Targets in the formulation's convention (-1/+1 for ``"svm"``).
    Z : array-like of shape (Nz, d)
        The expansion vectors, fixed.
    formulation : str or Formulation, default="svm"
        A registered name (with ``formulation_params``, e.g. ``C=10``) or an instance.
    kernel, gamma, degree, coef0
        The kernel, as in `sparsify.kernels.make_kernel`.
    solver : str, default="auto"
        Solver backend.
    tol : float, default=1e-8
        Solver accuracy.

    Returns
    -------
    coef : ndarray of shape (Nz,) or (Nz, K)
        Expansion coefficients β.
    intercept : float or ndarray of shape (K,)
        Bias b.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0, 0.0], [0.3, 0.1], [2.0, 2.0], [2.2, 1.9]])
    >>> y = np.array([-1, -1, 1, 1])
    >>> coef, b = expansion_coefficients(X, y, X[[0, 2]], gamma=0.5, C=10.0)
    >>> np.sign(np.exp(-0.5 * ((X[:, None] - X[[0, 2]]) ** 2).sum(-1)) @ coef + b)
    array([-1., -1.,  1.,  1.])
    """
    X = np.asarray(X, dtype=float)
    Z = np.atleast_2d(np.asarray(Z, dtype=float))
    if Z.shape[1] != X.shape[1]:
        raise ValueError(
            f"Z has {Z.shape[1]} features but X has {X.shape[1]}; pass XVs in the input space of X."
        )
    k = make_kernel(kernel, X, gamma=gamma, degree=degree, coef0=coef0)
    form = make_formulation(formulation, **formulation_params)
    y_arr = None if y is None else np.asarray(y)
    ev = make_marginal(form, X, y_arr, k, len(Z), solver=solver, tol=tol).evaluate(Z, grad=False)
    return ev.coef, ev.intercept
