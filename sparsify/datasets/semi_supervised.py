"""Synthetic data of the semi-supervised benchmarks (Chapelle, Schölkopf & Zien 2006).

Generators of the data sets of the paper "Lp-norm constrained multiple kernel
semi-supervised SVM" (Lp-MKL-S3VM), and a labeled-subset helper:

* `make_two_moons` — two interleaving half circles in 2-D (the paper's 2MOONS, 200 points).
* `make_g241c` — two unit-variance isotropic Gaussians in 241 dimensions whose centres are
  2.5 apart along a random direction; the cluster assumption holds.
* `make_g241d` — each class a mixture of two such Gaussians (375 points each) whose
  centres are 6 apart along one random direction, the classes shifted by 2.5 along another:
  the strongest cluster structure splits the data across the classes, so it misleads.
* `labeled_split` — a random labeled subset with at least one point of every class.

All labels are −1/+1 (int64), and every function is deterministic under ``random_state``. To draw
a held-out test set from *the same* distribution, generate ``n_samples`` train + test points in one
call (the random directions are drawn once per call) and split per class, e.g. with
``X[:n_train]``/``X[n_train:]`` of each class.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.utils import check_random_state

__all__ = ["labeled_split", "make_g241c", "make_g241d", "make_two_moons"]

Array = NDArray[np.float64]
Labels = NDArray[np.int64]

#: Dimension of g241c and g241d (Chapelle et al. 2006, ch. 21).
N_FEATURES_G241 = 241


def _check_n_samples(n_samples: object, minimum: int, name: str) -> int:
    if isinstance(n_samples, bool) or not isinstance(n_samples, Integral) or n_samples < minimum:
        raise ValueError(
            f"The 'n_samples' parameter of {name} must be an int >= {minimum}. "
            f"Got {n_samples!r} instead."
        )
    return int(n_samples)


def _random_directions(rng: np.random.RandomState, n_features: int, k: int) -> Array:
    """``k`` orthonormal random directions (rows), uniform on the sphere."""
    # QR of a Gaussian matrix is rotation invariant; fix the signs so Q is unique.
    q, r = np.linalg.qr(rng.standard_normal((n_features, k)))
    return (q * np.sign(np.diag(r))).T


def _per_class(n_samples: int, n_groups: int) -> list[int]:
    """Split ``n_samples`` into ``n_groups`` sizes differing by at most one (first ones larger)."""
    base, extra = divmod(n_samples, n_groups)
    return [base + (g < extra) for g in range(n_groups)]


def make_two_moons(
    n_samples: int = 200,
    noise: float = 0.1,
    random_state: int | np.random.RandomState | None = None,
) -> tuple[Array, Labels]:
    """Two interleaving half circles (the Lp-MKL-S3VM paper's 2MOONS data).

    A wrapper of `sklearn.datasets.make_moons` with −1/+1 labels and the
    samples in random order (scikit-learn returns them sorted by class).

    Parameters
    ----------
    n_samples : int, default=200
        Number of points; the two moons get ``n_samples // 2`` and the rest.
    noise : float, default=0.1
        Standard deviation of the Gaussian noise added to each coordinate.
    random_state : int, RandomState instance or None, default=None
        Seed of the noise and of the order.

    Returns
    -------
    X : ndarray of shape (n_samples, 2)
    y : ndarray of shape (n_samples,)
        −1 for the upper moon, +1 for the lower one.

    Examples
    --------
    >>> X, y = make_two_moons(random_state=0)
    >>> X.shape, sorted(set(y.tolist())), int((y == 1).sum())
    ((200, 2), [-1, 1], 100)
    """
    from sklearn.datasets import make_moons

    n_samples = _check_n_samples(n_samples, 2, "make_two_moons")
    if not isinstance(noise, Real) or noise < 0:
        raise ValueError(
            f"The 'noise' parameter of make_two_moons must be a float >= 0. Got {noise!r} instead."
        )
    rng = check_random_state(random_state)
    X, y = make_moons(n_samples=n_samples, noise=float(noise), shuffle=True, random_state=rng)
    return X.astype(np.float64), np.where(y == 1, 1, -1).astype(np.int64)


def make_g241c(
    n_samples: int = 1500,
    random_state: int | np.random.RandomState | None = None,
    *,
    return_centers: bool = False,
) -> tuple[Array, Labels] | tuple[Array, Labels, Array]:
    """The g241c set: two isotropic unit-variance Gaussians in 241-D, centres 2.5 apart.

    The centres are ``±1.25 u`` for one uniformly random unit vector ``u``, so
    ``‖μ₊ − μ₋‖ = 2.5``; each class gets half the points (750 each by default).
    The cluster assumption holds: the classes are the two clusters.

    Parameters
    ----------
    n_samples : int, default=1500
        Number of points, half per class (the first class gets the odd one).
    random_state : int, RandomState instance or None, default=None
        Seed of the direction, the points and their order.
    return_centers : bool, default=False
        Also return the two class centres, row 0 for class −1 and row 1 for +1.

    Returns
    -------
    X : ndarray of shape (n_samples, 241)
    y : ndarray of shape (n_samples,)
        Labels −1/+1, in random order.
    centers : ndarray of shape (2, 241)
        Only when ``return_centers=True``.

    Examples
    --------
    >>> import numpy as np
    >>> X, y, centers = make_g241c(random_state=0, return_centers=True)
    >>> X.shape, int((y == 1).sum()), int((y == -1).sum())
    ((1500, 241), 750, 750)
    >>> round(float(np.linalg.norm(centers[1] - centers[0])), 6)
    2.5
    """
    n_samples = _check_n_samples(n_samples, 2, "make_g241c")
    rng = check_random_state(random_state)
    (u,) = _random_directions(rng, N_FEATURES_G241, 1)
    centers = np.stack([-1.25 * u, 1.25 * u])
    sizes = _per_class(n_samples, 2)
    X = np.concatenate([centers[c] + rng.standard_normal((sizes[c], N_FEATURES_G241))
                        for c in range(2)])
    y = np.repeat(np.array([-1, 1], dtype=np.int64), sizes)
    order = rng.permutation(n_samples)
    if return_centers:
        return X[order], y[order], centers
    return X[order], y[order]


def make_g241d(
    n_samples: int = 1500,
    random_state: int | np.random.RandomState | None = None,
    *,
    return_centers: bool = False,
) -> tuple[Array, Labels] | tuple[Array, Labels, Array]:
    """The g241d set: misleading cluster structure in 241-D (Lp-MKL-S3VM; Chapelle et al. ch. 21).

    Each class is a mixture of two isotropic unit-variance Gaussians with a
    quarter of the points each (375 by default). Along a random direction ``u``
    the two Gaussians of a class are 6 apart; along an orthogonal random
    direction ``v`` the two classes are 2.5 apart. The centres are

    * class +1: ``+3u + 1.25v`` and ``−3u + 1.25v``;
    * class −1: ``+3u − 1.25v`` and ``−3u − 1.25v``.

    The two most distant groups of clusters (±3u, 6 apart) each hold both
    classes, so a method that puts the boundary through the widest low-density
    gap cuts across the classes: the cluster assumption misleads.

    Parameters
    ----------
    n_samples : int, default=1500
        Number of points, a quarter per Gaussian (the first ones get the rest).
    random_state : int, RandomState instance or None, default=None
        Seed of the directions, the points and their order.
    return_centers : bool, default=False
        Also return the four centres: rows 0-1 for class −1 (+3u, −3u), rows 2-3
        for class +1 (+3u, −3u).

    Returns
    -------
    X : ndarray of shape (n_samples, 241)
    y : ndarray of shape (n_samples,)
        Labels −1/+1, in random order.
    centers : ndarray of shape (4, 241)
        Only when ``return_centers=True``.

    Examples
    --------
    >>> import numpy as np
    >>> X, y, c = make_g241d(random_state=0, return_centers=True)
    >>> X.shape, int((y == 1).sum())
    ((1500, 241), 750)
    >>> round(float(np.linalg.norm(c[0] - c[1])), 6), round(float(np.linalg.norm(c[2] - c[0])), 6)
    (6.0, 2.5)
    """
    n_samples = _check_n_samples(n_samples, 4, "make_g241d")
    rng = check_random_state(random_state)
    u, v = _random_directions(rng, N_FEATURES_G241, 2)
    centers = np.stack([3.0 * u - 1.25 * v, -3.0 * u - 1.25 * v,
                        3.0 * u + 1.25 * v, -3.0 * u + 1.25 * v])
    sizes = _per_class(n_samples, 4)
    X = np.concatenate([centers[g] + rng.standard_normal((sizes[g], N_FEATURES_G241))
                        for g in range(4)])
    y = np.repeat(np.array([-1, -1, 1, 1], dtype=np.int64), sizes)
    order = rng.permutation(n_samples)
    if return_centers:
        return X[order], y[order], centers
    return X[order], y[order]


def labeled_split(
    y: ArrayLike,
    ratio: float | int,
    random_state: int | np.random.RandomState | None = None,
) -> NDArray[np.bool_]:
    """A random labeled subset as a boolean mask, with at least one point of every class.

    The subset is uniform among the subsets of its size that contain every
    class (drawn by rejection; after 1000 rejections, which only very small
    ratios on very unbalanced data reach, one point per class is forced in and
    the rest drawn uniformly).

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        The true labels.
    ratio : float in (0, 1) or int
        The fraction of labeled points (``round(ratio * n_samples)``), or with
        an int the number of labeled points; at least the number of classes
        and fewer than ``n_samples``.
    random_state : int, RandomState instance or None, default=None
        Seed of the draw.

    Returns
    -------
    mask : ndarray of bool, shape (n_samples,)
        True for the labeled points.

    Examples
    --------
    >>> import numpy as np
    >>> y = np.array([-1] * 90 + [1] * 10)
    >>> mask = labeled_split(y, 0.05, random_state=0)
    >>> int(mask.sum()), sorted(set(y[mask].tolist()))
    (5, [-1, 1])
    >>> y_semi = np.where(mask, y, 0)  # e.g. 0 = unlabeled for SemiSupervisedSVC(unlabeled=0)
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D; got an array of shape {y.shape}.")
    n = len(y)
    classes, codes = np.unique(y, return_inverse=True)
    if isinstance(ratio, bool) or not isinstance(ratio, Real):
        raise ValueError(f"The 'ratio' parameter of labeled_split must be a float in (0, 1) or "
                         f"an int. Got {ratio!r} instead.")
    if isinstance(ratio, Integral):
        n_labeled = int(ratio)
    elif 0 < ratio < 1:
        n_labeled = round(float(ratio) * n)
    else:
        raise ValueError(f"The 'ratio' parameter of labeled_split must be a float in (0, 1) or "
                         f"an int. Got {ratio!r} instead.")
    if not len(classes) <= n_labeled < n:
        raise ValueError(
            f"labeled_split needs between {len(classes)} (one per class) and {n - 1} labeled "
            f"points of {n}; ratio={ratio!r} gives {n_labeled}. Change the ratio."
        )
    rng = check_random_state(random_state)
    for _ in range(1000):
        idx = rng.choice(n, size=n_labeled, replace=False)
        if len(np.unique(codes[idx])) == len(classes):
            break
    else:
        forced = np.array([rng.choice(np.flatnonzero(codes == c)) for c in range(len(classes))])
        rest = np.setdiff1d(np.arange(n), forced)
        idx = np.concatenate([forced, rng.choice(rest, n_labeled - len(forced), replace=False)])
    mask = np.zeros(n, dtype=bool)
    mask[idx] = True
    return mask
