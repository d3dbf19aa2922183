"""Classification benchmarks of any size, for runs at scale that anyone can reproduce.

* `make_ringnorm` — Breiman's ringnorm (1996): 20 features; class −1 is normal with mean 0
  and covariance 4·I, class +1 normal with mean (a, …, a), a = 2/√20, and covariance I. The
  classes overlap: the Bayes error is about 1.3 % (`ringnorm_bayes_error` computes it;
  `ringnorm_bayes_rule` is the optimal classifier itself).
* `make_checkerboard` — the 4 × 4 checkerboard: 2 features uniform on [0, 4)², the label the
  parity of the square; optional label noise.

Labels are −1/+1 (int64), drawn with equal probability; every function is deterministic under
``random_state``. A million ringnorm points take about a second and 160 MB.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from numpy.typing import NDArray
from sklearn.utils import check_random_state

__all__ = ["make_checkerboard", "make_ringnorm", "ringnorm_bayes_error", "ringnorm_bayes_rule"]

Array = NDArray[np.float64]
Labels = NDArray[np.int64]

#: Breiman's ringnorm: dimension, the mean a of class +1 per feature, class −1's variance.
RINGNORM_D, RINGNORM_A, RINGNORM_VAR = 20, 2 / np.sqrt(20), 4.0


def _check(n_samples: object, random_state: object, name: str) -> tuple[int, np.random.RandomState]:
    if isinstance(n_samples, bool) or not isinstance(n_samples, Integral) or n_samples < 2:
        raise ValueError(f"The 'n_samples' parameter of {name} must be an int >= 2. "
                         f"Got {n_samples!r} instead.")
    return int(n_samples), check_random_state(random_state)


def make_ringnorm(n_samples: int = 7400, random_state: int | None = None
                  ) -> tuple[Array, Labels]:
    """Breiman's ringnorm: 20-D, two normal classes, one inside the other (Bayes error ≈ 1.3 %).

    Parameters
    ----------
    n_samples : int, default=7400
        Number of points (Breiman's: 300 train, 7000 test; IDA's: 7400 in all).
    random_state : int, RandomState instance or None
        Seed.

    Returns
    -------
    X : ndarray of shape (n_samples, 20)
    y : ndarray of shape (n_samples,)
        −1 (mean 0, covariance 4·I) or +1 (mean 2/√20 in every feature, covariance I),
        each with probability ½.

    Examples
    --------
    >>> X, y = make_ringnorm(1000, random_state=0)
    >>> X.shape, sorted(set(y.tolist()))
    ((1000, 20), [-1, 1])
    >>> bool(X[y == -1].std() > 1.8 > 1.2 > X[y == 1].std())
    True
    """
    n, rng = _check(n_samples, random_state, "make_ringnorm")
    y = np.where(rng.random_sample(n) < 0.5, -1, 1).astype(np.int64)
    X = rng.standard_normal((n, RINGNORM_D))
    outer = y == -1
    X[outer] *= np.sqrt(RINGNORM_VAR)
    X[~outer] += RINGNORM_A
    return X, y


def ringnorm_bayes_rule(X: Array) -> Labels:
    """The optimal classifier of ringnorm: the class of the larger likelihood (equal priors).

    A benchmark's reference on a given test set: no classifier errs less on
    average, so its error on the same points says how far a model is from the
    best possible (paired, point by point).

    Parameters
    ----------
    X : ndarray of shape (n_samples, 20)

    Returns
    -------
    ndarray of shape (n_samples,)
        −1 or +1.

    Examples
    --------
    >>> X, y = make_ringnorm(100_000, random_state=1)
    >>> 0.011 < float(np.mean(ringnorm_bayes_rule(X) != y)) < 0.015
    True
    """
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[1] != RINGNORM_D:
        raise ValueError(f"X must have shape (n_samples, {RINGNORM_D}), ringnorm's; got shape "
                         f"{X.shape}.")
    # log N(x; 0, 4I) − log N(x; a, I), up to constants that cancel in the comparison
    outer = -0.5 * (X**2).sum(1) / RINGNORM_VAR - 0.5 * RINGNORM_D * np.log(RINGNORM_VAR)
    inner = -0.5 * ((X - RINGNORM_A) ** 2).sum(1)
    return np.where(outer > inner, -1, 1).astype(np.int64)


def ringnorm_bayes_error(n_samples: int = 1_000_000, random_state: int | None = 0) -> float:
    """The Bayes error of ringnorm, estimated on fresh samples with the exact likelihood ratio.

    Examples
    --------
    >>> 0.011 < ringnorm_bayes_error(200_000) < 0.015
    True
    """
    X, y = make_ringnorm(n_samples, random_state)
    return float(np.mean(ringnorm_bayes_rule(X) != y))


def make_checkerboard(n_samples: int = 10_000, n_squares: int = 4, noise: float = 0.0,
                      random_state: int | None = None) -> tuple[Array, Labels]:
    """Points uniform on [0, n_squares)², labelled by the colour of their square.

    Parameters
    ----------
    n_samples : int, default=10000
    n_squares : int, default=4
        Squares per side.
    noise : float, default=0.0
        Fraction of labels flipped at random (the Bayes error).
    random_state : int, RandomState instance or None

    Returns
    -------
    X : ndarray of shape (n_samples, 2)
    y : ndarray of shape (n_samples,)
        +1 where ⌊x₁⌋ + ⌊x₂⌋ is even, else −1, before the noise.

    Examples
    --------
    >>> X, y = make_checkerboard(8, random_state=0)
    >>> X.shape, bool(((np.floor(X).sum(1) % 2 == 0) == (y == 1)).all())
    ((8, 2), True)
    """
    n, rng = _check(n_samples, random_state, "make_checkerboard")
    if isinstance(n_squares, bool) or not isinstance(n_squares, Integral) or n_squares < 2:
        raise ValueError("The 'n_squares' parameter of make_checkerboard must be an int >= 2. "
                         f"Got {n_squares!r} instead.")
    if isinstance(noise, bool) or not isinstance(noise, Real) or not 0 <= noise < 0.5:
        raise ValueError("The 'noise' parameter of make_checkerboard must be a float in the "
                         f"range [0.0, 0.5). Got {noise!r} instead.")
    X = rng.random_sample((n, 2)) * n_squares
    y = np.where(np.floor(X).sum(1) % 2 == 0, 1, -1).astype(np.int64)
    flip = rng.random_sample(n) < noise
    y[flip] = -y[flip]
    return X, y
