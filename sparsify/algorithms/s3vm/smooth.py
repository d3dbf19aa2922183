"""The semi-supervised SVM's objective, and the smooth quasi-Newton optimiser for comparison.

`s3vm_objective` is the Lp-MKL-S3VM paper's eq. 1 without the balance
constraint, for a dense machine: the yardstick that compares the two
optimisers of `SemiSupervisedSVC`. ``optimizer="smooth-qn"`` (dense only) is
a direct quasi-Newton method in the style of ∇S3VM (Chapelle & Zien 2005):
L-BFGS over β on a smoothed objective (a softplus hinge on the labeled
points, exp(−s g²) for the symmetric loss), the balance constraint holding as
a fixed mean output on the unlabeled points, C* annealed as in the exact
optimiser (`smooth_f_step`, one `_smooth_qn_stage` per C*).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from sparsify.algorithms.s3vm.engines import _Dense, _Progress, _State

__all__ = ["SMOOTH_HINGE", "SMOOTH_SYMMETRIC", "s3vm_objective", "smooth_f_step"]

Array = NDArray[np.float64]

#: Width of the softplus that smooths the hinge loss in ``optimizer="smooth-qn"``.
SMOOTH_HINGE = 0.1
#: s in exp(−s g²), the smooth surrogate of the symmetric loss (Chapelle & Zien 2005).
SMOOTH_SYMMETRIC = 3.0


def s3vm_objective(K: Array, coef: Array, intercept: float, y: Array,
                   labeled: NDArray[np.bool_], C: float, C_star: float) -> float:
    """The Lp-MKL-S3VM paper's eq. 1 without the balance constraint, for a dense g = Kβ + b.

    ½ βᵀKβ + C Σ_labeled max(0, 1 − y_i g_i) + C* Σ_unlabeled max(0, 1 − |g_j|); ``y``
    is read on the labeled points only. The common yardstick of both optimizers.

    Examples
    --------
    >>> K = np.eye(2); lab = np.array([True, False])
    >>> s3vm_objective(K, np.array([1.0, 0.5]), 0.0, np.array([1.0, 0.0]), lab, 1.0, 1.0)
    1.125
    """
    g = K @ coef + intercept
    hinge = np.maximum(0.0, 1.0 - y[labeled] * g[labeled]).sum()
    symmetric = np.maximum(0.0, 1.0 - np.abs(g[~labeled])).sum()
    return float(0.5 * coef @ K @ coef + C * hinge + C_star * symmetric)


def _smooth_qn_stage(K: Array, y: Array, labeled: NDArray[np.bool_], C: float, c_star: float,
                     r: float, beta0: Array, max_iter: int) -> Array:
    """L-BFGS on the smoothed S3VM objective (dense), b eliminated by the balance constraint.

    Minimises ½βᵀKβ + C Σ_l h·softplus((1 − y_i g_i)/h) + C* Σ_u exp(−s g_j²) with
    g = Kβ + b and b chosen so that the mean output on the unlabeled points is
    2r − 1 (the balance constraint of ∇S3VM / TSVM).
    """
    from scipy.optimize import minimize
    from scipy.special import expit

    unl = ~labeled
    m = unl / unl.sum()
    h, s = SMOOTH_HINGE, SMOOTH_SYMMETRIC
    yl = y[labeled]

    def fun(beta: Array) -> tuple[float, Array]:
        Kb = K @ beta
        g = Kb - m @ Kb + (2 * r - 1)
        z = (1.0 - yl * g[labeled]) / h
        loss_l = h * np.logaddexp(0.0, z)
        e = np.exp(-s * g[unl] ** 2)
        v = np.zeros_like(g)  # dJ/dg
        v[labeled] = -C * yl * expit(z)
        v[unl] = -2.0 * s * c_star * g[unl] * e
        value = 0.5 * beta @ Kb + C * loss_l.sum() + c_star * e.sum()
        # g = P K β + const with P = I − 1 mᵀ, so dJ/dβ = Kβ + K Pᵀ v
        return float(value), Kb + K @ (v - m * v.sum())

    res = minimize(fun, beta0, jac=True, method="L-BFGS-B",
                   options={"maxiter": max_iter, "ftol": 1e-12, "gtol": 1e-8})
    return np.asarray(res.x)


def smooth_f_step(engine: _Dense, theta: Array, y: Array, labeled: NDArray[np.bool_],
                  C: float, r: float, stages: list[float], beta0: Array | None, max_iter: int,
                  progress: _Progress) -> _State:
    """``optimizer="smooth-qn"`` at fixed θ: L-BFGS on the smoothed objective, C* annealed.

    One `_smooth_qn_stage` per C* of ``stages`` (at most ``max(200, max_iter)``
    iterations each), from ``beta0`` (zero when None). Each stage counts as
    one solve of ``progress``, with the paper's eq. 1 at that stage's C* as
    its value; the returned state has the last stage's.
    """
    K = engine.gram(theta)
    unl = ~labeled
    beta = np.zeros(len(K)) if beta0 is None else beta0
    for c_star in stages:
        beta = _smooth_qn_stage(K, y, labeled, C, c_star, r, beta, max(200, max_iter))
        Kb = K @ beta
        b = float(2 * r - 1 - Kb[unl].mean())
        state = progress.solved(_State(beta, b, Kb + b,
                                       s3vm_objective(K, beta, b, y, labeled, C, c_star)))
    progress.log(f"smooth-qn: objective (eq. 1) {state.value:.6g}")
    return state
