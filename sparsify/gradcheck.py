"""Gradient verification: ∇W(Z) from the duals against central finite differences.

Works for any registered formulation, kernel and solver backend, on a small
random problem or on given data, so a plugin author can check the gradient of
a new algorithm without writing any.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from sparsify.formulation import Formulation, make_formulation
from sparsify.kernels import Kernel, Linear, make_kernel
from sparsify.marginal import Marginal, make_marginal
from sparsify.optimize import initial_expansion_vectors

__all__ = ["GradientCheck", "check_gradient", "random_problem"]

Array = NDArray[np.float64]


@dataclass(frozen=True)
class GradientCheck:
    """Result of `check_gradient`.

    Attributes
    ----------
    rel_error : float
        ‖g − g_fd‖ / max(‖g‖, ‖g_fd‖).
    value : float
        W(Z) at the checked point.
    grad, numeric : ndarray of shape (Nz, d)
        ∇W(Z) from the duals and from central differences.
    formulation, kernel, solver : str
        What was checked.
    """

    rel_error: float
    value: float
    grad: Array
    numeric: Array
    formulation: str
    kernel: str
    solver: str

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready summary."""
        return {
            "formulation": self.formulation,
            "kernel": self.kernel,
            "solver": self.solver,
            "rel_error": self.rel_error,
            "value": self.value,
            "n_expansion": int(self.grad.shape[0]),
            "n_features": int(self.grad.shape[1]),
        }


def random_problem(
    n_samples: int = 40, n_features: int = 3, random_state: int = 0
) -> tuple[Array, NDArray[np.int64]]:
    """A small nonlinear two-class problem (labels -1/+1) for gradient checks.

    Examples
    --------
    >>> X, y = random_problem(10, 2)
    >>> X.shape, sorted(set(y.tolist()))
    ((10, 2), [-1, 1])
    """
    rng = np.random.default_rng(random_state)
    X = rng.normal(size=(n_samples, n_features))
    score = X[:, 0] + 0.5 * X[:, 1 % n_features] ** 2 + 0.3 * rng.normal(size=n_samples)
    y = np.where(score > np.median(score), 1, -1)
    return X, y


def check_gradient(
    formulation: str | Formulation = "svm",
    kernel: str | Kernel = "rbf",
    solver: str = "auto",
    X: ArrayLike | None = None,
    y: ArrayLike | None = None,
    Z: ArrayLike | None = None,
    n_expansion: int = 4,
    eps: float = 1e-4,
    tol: float = 1e-9,
    gamma: float | str = "scale",
    random_state: int = 0,
    marginal: Marginal | None = None,
    **formulation_params: Any,
) -> GradientCheck:
    """Compare ∇W(Z) with central differences of W for a formulation.

    Parameters
    ----------
    formulation : str or Formulation, default="svm"
        Registered name (with ``formulation_params``) or instance.
    kernel : str or Kernel, default="rbf"
        Kernel name (``"rbf+linear"`` for a sum) or instance.
    solver : str, default="auto"
        Solver backend.
    X, y : array-like, optional
        Data; by default `random_problem`.
    Z : array-like of shape (Nz, d), optional
        Where to check; by default a random subset of X, moved off the data
        points by a small random offset.
    n_expansion : int, default=4
        Nz when Z is not given (capped below d for the linear kernel, whose W
        is constant once the XVs span the input space).
    eps : float, default=1e-4
        Finite-difference step (relative to |z| when |z| > 1). Central
        differences err by O(eps²) ≈ 1e-8 here, while the noise of W divided
        by eps stays below 1e-7 for interior-point solvers at ``tol``.
    tol : float, default=1e-9
        Solver accuracy.
    marginal : Marginal, optional
        Check this W(Z) provider; by default the formulation's own
        (`Formulation.marginal`) if it has one, else the generic cvxpy path.

    Returns
    -------
    GradientCheck

    Examples
    --------
    >>> check_gradient("svm", "rbf", C=1.0).rel_error < 1e-6
    True
    """
    if X is None:
        X, y = random_problem(random_state=random_state)
    X = np.asarray(X, dtype=float)
    y = None if y is None else np.asarray(y)
    k = make_kernel(kernel, X, gamma=gamma)
    form = make_formulation(formulation, **formulation_params)
    rng = np.random.default_rng(random_state)
    if Z is None:
        nz = min(n_expansion, X.shape[1] - 1) if isinstance(k, Linear) else n_expansion
        Z = initial_expansion_vectors(X, max(nz, 1), "random", random_state)
        Z = Z + 0.05 * X.std(0) * rng.normal(size=Z.shape)
    Z = np.asarray(Z, dtype=float)
    if marginal is None:
        # a formulation's own W and ∇W, if it supplies them, is what a fit uses
        marginal = make_marginal(form, X, y, k, len(Z), solver, tol)
    ev = marginal.evaluate(Z)
    numeric = np.zeros_like(Z)
    for idx in np.ndindex(*Z.shape):
        step = eps * max(1.0, abs(Z[idx]))
        Zp, Zm = Z.copy(), Z.copy()
        Zp[idx] += step
        Zm[idx] -= step
        numeric[idx] = (marginal.evaluate(Zp, grad=False).value
                        - marginal.evaluate(Zm, grad=False).value) / (2 * step)
    grad = np.asarray(ev.grad)
    scale = max(float(np.linalg.norm(grad)), float(np.linalg.norm(numeric)), 1e-300)
    return GradientCheck(
        rel_error=float(np.linalg.norm(grad - numeric) / scale),
        value=ev.value,
        grad=grad,
        numeric=numeric,
        formulation=form.name or type(form).__name__,
        kernel=kernel if isinstance(kernel, str) else type(kernel).__name__,
        solver=ev.solver if solver == "auto" else solver,
    )
