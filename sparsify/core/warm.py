"""Warm starts: one fit's XVs and solution as the start of the next, at another Nz.

A search over C, γ or Nz (`sparsify.search.SparseSearchCV`) and an estimator with
``warm_start=True`` fit the same data again at a neighbouring setting. The last
fit's XVs are then the first guess of the new ones, and its β and b guess the
inner solution (`sparsify.core.marginal.Marginal.warm_start`: the SVM engine
starts from the partition they give). At a larger Nz (the expansion path) the
new XVs go where the loss is largest and the XVs are far: drawn from the
training points with probability proportional to the point's loss under the
last model times its squared distance in feature space to the nearest XV, one
at a time (k-means++'s D² sampling, weighted by the loss); at a smaller Nz the
XVs of largest |β_j|·√k(z_j, z_j) stay, as a reduced set keeps the terms that
weigh most.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sparsify.core.distinct import distinct_rows
from sparsify.core.kernel_blocks import BLOCK_ROWS, row_blocks
from sparsify.core.marginal import Evaluation
from sparsify.kernels import Kernel

__all__ = ["WarmStart", "grow", "resize", "shrink"]

Array = NDArray[np.float64]

#: A problem's warm start: its initial XVs and the solution (β, b) that guesses its inner one.
WarmStart = tuple[Array, Evaluation]


def shrink(Z: Array, coef: Array, kernel: Kernel, n_expansion: int) -> tuple[Array, Array]:
    """The ``n_expansion`` XVs of largest |β_j|·√k(z_j, z_j), in their order, and their β.

    Examples
    --------
    >>> from sparsify import RBF
    >>> Z = np.array([[0.0], [1.0], [2.0]])
    >>> shrink(Z, np.array([0.5, -2.0, 1.0]), RBF(1.0), 2)[0].ravel().tolist()
    [1.0, 2.0]
    """
    weight = np.abs(np.asarray(coef, dtype=float).reshape(len(Z), -1)).max(axis=1)
    weight = weight * np.sqrt(np.maximum(kernel.diag(Z), 0.0))
    keep = np.sort(np.argsort(-weight, kind="stable")[:n_expansion])
    return Z[keep].copy(), np.asarray(coef)[keep].copy()


def grow(X: Array, losses: Array, Z: Array, kernel: Kernel, n_new: int,
         rng: np.random.RandomState) -> Array:
    """``n_new`` new XVs from the distinct rows of ``X``, drawn where loss × distance² is large.

    Each draw picks row i with probability ∝ ``losses[i]`` · d²(x_i), d² the
    squared feature-space distance k(x, x) + k(z, z) − 2k(x, z) to the nearest
    XV (the ones drawn before included), so no XV is drawn twice and the new
    ones spread over the region of large loss. Where every such weight is 0
    (no loss left, or every row an XV), the farthest rows weigh alone.

    Examples
    --------
    >>> from sparsify import RBF
    >>> X = np.array([[0.0], [0.1], [3.0], [3.1], [6.0]])
    >>> new = grow(X, np.array([0.0, 0.0, 1.0, 1.0, 0.0]), X[:1], RBF(1.0), 1,
    ...            np.random.RandomState(0))
    >>> float(new[0, 0]) in (3.0, 3.1)
    True
    """
    rows = distinct_rows(X)
    candidates = X[rows]
    weights = np.maximum(np.asarray(losses, dtype=float)[rows], 0.0)
    k_xx = kernel.diag(candidates)
    nearest = np.full(len(rows), np.inf)
    if len(Z):
        k_zz = kernel.diag(Z)
        for start in row_blocks(len(rows)):  # BLOCK_ROWS × Nz at a time, never N × Nz
            block = slice(start, start + BLOCK_ROWS)
            nearest[block] = np.min(k_xx[block, None] + k_zz[None, :]
                                    - 2.0 * kernel(candidates[block], Z), axis=1)
    new = []
    for _ in range(n_new):
        d2 = np.maximum(nearest, 0.0)
        p = weights * d2
        if not np.isfinite(p).all() or p.sum() <= 0:
            p = d2 if np.isfinite(d2).all() and d2.sum() > 0 else np.ones(len(rows))
        pick = int(rng.choice(len(rows), p=p / p.sum()))
        z = candidates[pick:pick + 1]
        new.append(z[0])
        nearest = np.minimum(nearest, k_xx + kernel.diag(z)[0] - 2.0 * kernel(candidates, z)[:, 0])
        nearest[pick] = 0.0
    return np.array(new, dtype=float).reshape(n_new, X.shape[1])


def resize(X: Array, Z: Array, coef: Array, intercept: float | Array, kernel: Kernel,
           n_expansion: int, losses: Callable[[Array], Array],
           rng: np.random.RandomState) -> WarmStart:
    """The warm start of a problem at ``n_expansion`` XVs from a fit with ``len(Z)``.

    ``losses(decision)`` gives each training point's loss from the last model's
    decision values ``K(X, Z) β + b`` (one column per output), for `grow`.
    The solution carries the old β (zeros for new XVs) and b.

    Examples
    --------
    >>> from sparsify import RBF
    >>> X = np.linspace(0, 1, 20)[:, None]
    >>> Z0, solution = resize(X, X[:2], np.ones(2), 0.0, RBF(1.0), 4,
    ...                       lambda f: np.abs(f[:, 0]), np.random.RandomState(0))
    >>> Z0.shape, solution.coef.tolist()
    ((4, 1), [1.0, 1.0, 0.0, 0.0])
    """
    coef = np.asarray(coef, dtype=float)
    if n_expansion < len(Z):
        Z, coef = shrink(Z, coef, kernel, n_expansion)
    elif n_expansion > len(Z):
        outputs = coef.reshape(len(Z), -1)
        decision = np.concatenate([kernel(X[start:start + BLOCK_ROWS], Z) @ outputs
                                   for start in row_blocks(len(X))])
        decision += np.asarray(intercept, dtype=float).ravel()
        new = grow(X, losses(decision), Z, kernel, n_expansion - len(Z), rng)
        Z = np.vstack([Z, new])
        coef = np.concatenate([coef, np.zeros((len(new), *coef.shape[1:]))])
    return Z.copy(), Evaluation(float("nan"), None, coef, intercept, "warm start")


def previous_problems(estimator: Any) -> list[tuple[Array, Array, float | Array]] | None:
    """Each problem's (Z, β, b) of a fitted sparse kernel estimator, or None where unfitted.

    The XVs of problem k are its block of ``expansion_vectors_`` (``n_expansion_``
    rows each); its β the block's columns of its own outputs in ``expansion_coef_``.
    """
    if not hasattr(estimator, "expansion_vectors_") or not hasattr(estimator, "n_expansion_"):
        return None
    sizes = np.asarray(estimator.n_expansion_, dtype=int)
    coef = np.asarray(estimator.expansion_coef_, dtype=float)
    intercept = np.asarray(estimator.intercept_, dtype=float)
    outputs = len(intercept) // max(len(sizes), 1) if len(sizes) else 0
    out = []
    start = 0
    for k, size in enumerate(sizes):
        rows = slice(k * outputs, (k + 1) * outputs)
        block = coef[rows, start:start + size].T
        beta = block[:, 0] if outputs == 1 else block
        b: float | Array = float(intercept[rows][0]) if outputs == 1 else intercept[rows]
        out.append((estimator.expansion_vectors_[start:start + size], beta, b))
        start += size
    return out
