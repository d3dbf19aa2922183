"""Continuation over the data: a fit's first L-BFGS iterations on a sample of its points.

An L-BFGS iteration costs an evaluation of W(Z) and its gradient over all N points,
but while the XVs are far from a minimum a random sample of m points points the
same way for a fraction of the cost (sample-size continuation: Byrd, Chin, Nocedal &
Wu, *Math. Prog.* 2012). The estimators' ``continuation`` parameter
(`sparsify.core.estimator.SparseKernelEstimator`) fits in two phases:

1. on a sample of m = ``continuation`` · N points (`nested_sample`: stratified by
   class, one point of every class first), each point's weight multiplied by N / m
   where the formulation weighs its points, so that the sample's W estimates the
   whole set's at the same C; until W levels off on the sample (`sample_plateau`:
   the last iterations lowered it by less than 1/√m of itself, the sample's own
   sampling error, beyond which the sample cannot tell XVs apart);
2. on all N points from the sample's XVs and solution (a warm start,
   `sparsify.core.warm`), under the fit's own stopping rule, so that the model
   kept is a minimum of the whole set's W as without continuation.

``n_init`` starts run on the sample, and the best of them (lowest W on the sample) goes on
to all points; a warm start (``warm_start=True`` with a last fit) has no sample phase.

Measured in docs/results/declared_fit.md: the declared ε-SVR at N = 10⁵, Nz = 100
with ``continuation=0.125``; docs/theory.md says when it pays.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sparsify.core.optimize import PLATEAU_WINDOW

__all__ = ["nested_sample", "sample_plateau", "strata"]


def nested_sample(indices: NDArray[np.intp], labels: NDArray[Any] | None,
                  rng: np.random.RandomState) -> NDArray[np.intp]:
    """``indices`` in an order whose every prefix is a random sample of them.

    With ``labels`` (one per index) the order is stratified: each label spread
    evenly along it and one index of every label first, so that a prefix at
    least as long as the number of labels lacks none.

    Examples
    --------
    >>> labels = np.array([0] * 8 + [1] * 2)
    >>> order = nested_sample(np.arange(10), labels, np.random.RandomState(0))
    >>> sorted(labels[order[:2]].tolist()), sorted(order.tolist()) == list(range(10))
    ([0, 1], True)
    """
    order = rng.permutation(len(indices))
    if labels is None:
        return np.asarray(indices)[order]
    _, codes, counts = np.unique(np.asarray(labels)[order], return_inverse=True,
                                 return_counts=True)
    position = np.empty(len(indices))
    for c, count in enumerate(counts):
        where = np.flatnonzero(codes == c)
        position[where] = np.arange(count) / count
    return np.asarray(indices)[order[np.argsort(position, kind="stable")]]


def strata(targets: Sequence[Any]) -> NDArray[np.intp] | None:
    """The classes to stratify a sample by, from a fit's problems' targets; None for real
    targets or none.

    A classifier's problems have ±1 targets (NaN for an unlabelled point), one array
    per problem: a point's stratum is its targets across the problems (its class
    under one-vs-rest).

    Examples
    --------
    >>> strata([np.array([1.0, -1.0, 1.0])]).tolist()
    [1, 0, 1]
    >>> strata([np.array([0.3, 1.2])]) is None, strata([None]) is None
    (True, True)
    """
    if not targets or any(not isinstance(t, np.ndarray) or t.ndim != 1 for t in targets):
        return None
    table = np.column_stack([np.nan_to_num(t.astype(float), nan=0.0) for t in targets])
    if not np.isin(table, (-1.0, 0.0, 1.0)).all():
        return None
    _, codes = np.unique(table, axis=0, return_inverse=True)
    return np.asarray(codes, dtype=np.intp).ravel()


def sample_plateau(n_samples: int, n_iter_no_change: int | str | None) -> tuple[int, float]:
    """The sample phase's stopping test for `sparsify.core.optimize.minimize_marginal`:
    ``n_iter_no_change`` iterations (`PLATEAU_WINDOW` unless a number is given) that
    together lowered W by less than 1/√m, whatever the size of the sample.

    Examples
    --------
    >>> sample_plateau(10_000, "auto"), sample_plateau(400, None), sample_plateau(400, 5)
    ((3, 0.01), (3, 0.05), (5, 0.05))
    """
    window = n_iter_no_change if isinstance(n_iter_no_change, int) else PLATEAU_WINDOW
    return int(window), 1.0 / float(np.sqrt(n_samples))
