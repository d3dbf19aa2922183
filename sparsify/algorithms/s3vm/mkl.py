"""Lp-norm multiple kernel learning: kernel weights θ with θ ≥ 0, ‖θ‖_p ≤ 1 (p ≥ 1).

Kloft et al. (JMLR 2011), as the paper "Lp-norm constrained multiple kernel
semi-supervised SVM" (Lp-MKL-S3VM) uses it (eq. 21-26): with M base kernels
k_m and one weight vector w_m per kernel, the learner minimises
``½ Σ_m ‖w_m‖² / θ_m + loss(Σ_m ⟨w_m, φ_m(x)⟩)``. At fixed θ this is a single
kernel machine with the kernel ``Σ_m θ_m k_m`` (the f-step), and
``w_m = θ_m Σ_j β_j φ_m(z_j)``, so ``‖w_m‖² = θ_m² βᵀ K_m(Z, Z) β``; at fixed w
the best θ has the closed form (eq. 24-26)::

    θ_m = ‖w_m‖^{2/(p+1)} / (Σ_k ‖w_k‖^{2p/(p+1)})^{1/p}

Alternating the two lowers the objective at every step. p = 1 drives the
weights of unhelpful kernels to zero (sparse θ); a large p keeps them near
uniform (p = ∞ is the unweighted sum).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from sparsify.kernels import Kernel, SumKernel

__all__ = [
    "MKLResult",
    "alternate",
    "block_norms2",
    "combined_kernel",
    "lp_weights",
    "uniform_weights",
]

Array = NDArray[np.float64]


def _check_p(p: float) -> float:
    p = float(p)
    if not p >= 1.0:  # also rejects NaN
        raise ValueError(f"The norm p of the kernel weights must be >= 1 (p = 1 gives sparse "
                         f"weights, large p near-uniform ones); got p={p!r}.")
    return p


def uniform_weights(n_kernels: int, p: float) -> Array:
    """The uniform start of the Lp-MKL-S3VM paper's Algorithm 2: θ_m = M^{-1/p}, so ‖θ‖_p = 1.

    Examples
    --------
    >>> uniform_weights(4, 2.0)
    array([0.5, 0.5, 0.5, 0.5])
    """
    p = _check_p(p)
    return np.full(int(n_kernels), float(n_kernels) ** (-1.0 / p))


def lp_weights(norms2: ArrayLike, p: float) -> Array:
    """Closed-form θ from the block norms ‖w_m‖² (Lp-MKL-S3VM paper, eq. 24-26; Kloft et al.).

    Parameters
    ----------
    norms2 : array-like of shape (M,)
        ‖w_m‖² ≥ 0 for each kernel.
    p : float
        Norm of the constraint ‖θ‖_p ≤ 1, p ≥ 1 (``np.inf`` gives all ones).

    Returns
    -------
    theta : ndarray of shape (M,)
        θ ≥ 0 with ‖θ‖_p = 1 (uniform when every norm is zero).

    Examples
    --------
    >>> lp_weights([4.0, 1.0, 0.0], p=1.0)
    array([0.66666667, 0.33333333, 0.        ])
    >>> np.round(lp_weights([4.0, 1.0, 0.0], p=2.0), 4)
    array([0.8461, 0.533 , 0.    ])
    """
    p = _check_p(p)
    n2 = np.clip(np.asarray(norms2, dtype=float), 0.0, None)
    if n2.ndim != 1 or not len(n2):
        raise ValueError(f"norms2 must be a non-empty 1-D array; got shape {n2.shape}.")
    if np.isinf(p):
        return np.ones_like(n2)
    if not n2.max() > 0:
        return uniform_weights(len(n2), p)
    n2 = n2 / n2.max()  # the formula is scale-free; this avoids overflow in the powers
    return n2 ** (1.0 / (p + 1.0)) / np.sum(n2 ** (p / (p + 1.0))) ** (1.0 / p)


def combined_kernel(kernels: Sequence[Kernel], theta: ArrayLike) -> Kernel:
    """The kernel Σ_m θ_m k_m of the f-step (a `SumKernel`; one kernel stays itself).

    Examples
    --------
    >>> from sparsify import RBF, Linear
    >>> combined_kernel([RBF(1.0), Linear()], [0.5, 2.0])
    SumKernel(kernels=(RBF(gamma=1.0), Linear()), weights=(0.5, 2.0))
    """
    theta = tuple(float(t) for t in np.asarray(theta, dtype=float).ravel())
    if len(theta) != len(kernels):
        raise ValueError(f"Got {len(theta)} weights for {len(kernels)} kernels; pass one each.")
    if len(kernels) == 1 and theta[0] == 1.0:
        return kernels[0]
    return SumKernel(tuple(kernels), theta)


def block_norms2(
    kernels: Sequence[Kernel], theta: ArrayLike, Z: ArrayLike, coef: ArrayLike
) -> Array:
    """‖w_m‖² = θ_m² βᵀ K_m(Z, Z) β for a machine Σ_j β_j k(z_j, ·) with k = Σ_m θ_m k_m.

    Examples
    --------
    >>> from sparsify import RBF, Linear
    >>> Z = np.array([[0.0, 1.0], [1.0, 0.0]]); beta = np.array([1.0, -1.0])
    >>> block_norms2([RBF(1.0), Linear()], [1.0, 0.5], Z, beta).round(4)
    array([1.7293, 0.5   ])
    """
    Z = np.asarray(Z, dtype=float)
    beta = np.asarray(coef, dtype=float).ravel()
    theta = np.asarray(theta, dtype=float).ravel()
    return np.array([t * t * float(beta @ k(Z, Z) @ beta)
                     for t, k in zip(theta, kernels, strict=True)])


@dataclass(frozen=True)
class MKLResult:
    """Outcome of `alternate`.

    Attributes
    ----------
    theta : ndarray of shape (M,)
        Kernel weights of the last f-step.
    history : ndarray of shape (n_iter + 1, M)
        θ before each f-step.
    n_iter : int
        θ-steps taken.
    converged : bool
        Whether the last θ-step changed θ by less than ``tol``.
    """

    theta: Array
    history: Array
    n_iter: int
    converged: bool


def alternate(
    f_step: Callable[[Array, int], ArrayLike],
    n_kernels: int,
    p: float,
    theta0: ArrayLike | None = None,
    max_iter: int = 20,
    tol: float = 1e-3,
) -> MKLResult:
    """Alternate the f-step at fixed θ and the closed-form θ-step until θ settles.

    Parameters
    ----------
    f_step : callable ``f_step(theta, iteration) -> norms2``
        Fits the machine with the kernel Σ_m θ_m k_m and returns the block
        norms ‖w_m‖² (shape (M,), e.g. from `block_norms2`). It is called
        once more after the last θ-step, so the model it keeps matches ``theta``.
    n_kernels : int
        M.
    p : float
        Norm of the weights, p ≥ 1.
    theta0 : array-like of shape (M,), optional
        Start; by default uniform with ‖θ‖_p = 1.
    max_iter : int, default=20
        Most θ-steps.
    tol : float, default=1e-3
        Stop when no weight moves by more than ``tol`` (absolute; ‖θ‖_p = 1).

    Returns
    -------
    MKLResult

    Examples
    --------
    Two kernels whose block norms are θ_m² c_m with c = (4, 1): p = 1 drives
    the weaker kernel's weight to zero, p = 2 keeps it.

    >>> def f_step(theta, iteration):
    ...     return theta ** 2 * np.array([4.0, 1.0])
    >>> alternate(f_step, 2, p=1.0).theta.round(2)
    array([1., 0.])
    >>> alternate(f_step, 2, p=2.0).theta.round(2)
    array([0.97, 0.24])
    """
    p = _check_p(p)
    theta = uniform_weights(n_kernels, p) if theta0 is None else np.asarray(theta0, float)
    history = [theta.copy()]
    norms2 = np.asarray(f_step(theta, 0), dtype=float)
    converged = False
    it = 0
    for it in range(1, max_iter + 1):
        new = lp_weights(norms2, p)
        change = float(np.max(np.abs(new - theta)))
        theta = new
        history.append(theta.copy())
        norms2 = np.asarray(f_step(theta, it), dtype=float)
        if change < tol:
            converged = True
            break
    return MKLResult(theta, np.asarray(history), it, converged)
