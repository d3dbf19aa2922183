"""Platt scaling: class probabilities from decision values through a fitted sigmoid.

P(y = +1 | f) = 1 / (1 + exp(A f + B)), with A and B fitted by maximum likelihood
on decision values the model did not see in training (out-of-fold), against
Platt's (1999) targets: (N₊ + 1) / (N₊ + 2) for the positive class and
1 / (N₋ + 2) for the negative one instead of 1 and 0, so the sigmoid is not
pushed to a step on separable data. The fit is the Newton method with
backtracking of Lin, Lin & Weng (2007), "A note on Platt's probabilistic outputs
for support vector machines", the one libsvm and so `sklearn.svm.SVC` use. The
signs of A and B are scikit-learn's (``SVC.probA_``, ``SVC.probB_``): A < 0 when
larger decision values mean the positive class.
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import expit
from sklearn.exceptions import ConvergenceWarning

__all__ = ["fit_platt", "platt_proba"]

Array = NDArray[np.float64]


def fit_platt(
    decision: ArrayLike,
    positive: ArrayLike,
    sample_weight: ArrayLike | None = None,
    *,
    max_iter: int = 100,
) -> tuple[float, float]:
    """Fit Platt's sigmoid P(+1 | f) = 1 / (1 + exp(A f + B)) to decision values.

    Parameters
    ----------
    decision : array-like of shape (N,)
        Out-of-fold decision values f_i.
    positive : array-like of bool, shape (N,)
        Whether point i is in the positive class.
    sample_weight : array-like of shape (N,), optional
        Weight of each point (a weight of 2 counts the point twice), in the
        log-likelihood and in the class sizes N₊, N₋ of Platt's targets, as
        `sklearn.calibration.CalibratedClassifierCV` does.
    max_iter : int, default=100
        Newton iterations (libsvm's limit); a warning says when they run out.

    Returns
    -------
    A, B : float
        The sigmoid's slope and offset.

    Examples
    --------
    >>> import numpy as np
    >>> f = np.array([-2.0, -1.5, -0.5, 0.3, 1.0, 2.0])
    >>> A, B = fit_platt(f, f > 0)
    >>> bool(A < 0)  # larger decision values, higher P(+1)
    True
    >>> platt_proba(np.array([-2.0, 2.0]), A, B).round(2).tolist()
    [0.15, 0.88]
    """
    f = np.asarray(decision, dtype=float).ravel()
    t_pos = np.asarray(positive, dtype=bool).ravel()
    if f.shape != t_pos.shape:
        raise ValueError(f"decision has {f.size} values but positive has {t_pos.size}.")
    w = np.ones_like(f) if sample_weight is None else np.asarray(sample_weight, float).ravel()
    if w.shape != f.shape:
        raise ValueError(f"sample_weight has {w.size} values but decision has {f.size}.")
    n_pos, n_neg = float(w[t_pos].sum()), float(w[~t_pos].sum())
    target = np.where(t_pos, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))

    def objective(a: float, b: float) -> float:
        # Σ w [t (Af + B) + log(1 + exp(−(Af + B)))], stable for either sign
        z = a * f + b
        return float(w @ (target * z + np.logaddexp(0.0, -z)))

    sigma = 1e-12  # keeps the Hessian positive definite (Lin, Lin & Weng, Algorithm 1)
    A, B = 0.0, float(np.log((n_neg + 1.0) / (n_pos + 1.0)))
    value = objective(A, B)
    for _ in range(max_iter):
        p = expit(-(A * f + B))  # P(+1 | f) at the current (A, B)
        d1 = target - p
        g1, g2 = float(w @ (f * d1)), float(w @ d1)
        if abs(g1) < 1e-5 and abs(g2) < 1e-5:
            break
        d2 = w * p * (1.0 - p)
        h11, h22, h21 = sigma + float(d2 @ (f * f)), sigma + float(d2.sum()), float(d2 @ f)
        det = h11 * h22 - h21 * h21
        dA, dB = -(h22 * g1 - h21 * g2) / det, -(-h21 * g1 + h11 * g2) / det
        slope = g1 * dA + g2 * dB
        step = 1.0
        while step >= 1e-10:  # backtracking line search (Armijo)
            new_value = objective(A + step * dA, B + step * dB)
            if new_value < value + 1e-4 * step * slope:
                A, B, value = A + step * dA, B + step * dB, new_value
                break
            step /= 2.0
        else:
            break  # no decrease along the Newton direction: at the optimum to round-off
    else:
        warnings.warn(f"Platt scaling stopped after max_iter={max_iter} Newton iterations "
                      "before its gradient fell below 1e-5.", ConvergenceWarning, stacklevel=2)
    return A, B


def platt_proba(decision: ArrayLike, A: ArrayLike, B: ArrayLike) -> Array:
    """P(+1 | f) = 1 / (1 + exp(A f + B)), elementwise (A and B broadcast per column).

    Examples
    --------
    >>> platt_proba([0.0, 1.0], -2.0, 0.0).round(3).tolist()
    [0.5, 0.881]
    """
    f = np.asarray(decision, dtype=float)
    p: Array = expit(-(np.asarray(A) * f + np.asarray(B)))
    return p
