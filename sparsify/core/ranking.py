"""The ranking task: a score whose order follows each group's relevance.

`SparseKernelRanker` is `sparsify.core.estimator.SparseKernelEstimator` for
learning to rank: ``fit(X, y, groups=None)`` with y the relevance of each point
and ``groups`` its query (all points one query without them). The formulation
sees the relevance as ``out.y``, the groups as ``out.groups`` and the
preference pairs (i, j), y_i > y_j within a group, as ``out.pairs``
(`sparsify.core.formulation.ranking_pairs`); the prediction is the score
τ(x) = Σ_j β_j k(z_j, x) + b, and `SparseKernelRanker.score` the fraction of
pairs it orders right (`pairwise_accuracy`).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.utils import Tags, check_random_state, gen_batches
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_consistent_length, check_is_fitted, column_or_1d

from sparsify.core.estimator import SparseKernelEstimator
from sparsify.core.formulation import count_pairs
from sparsify.core.model_rule import ModelFileRule, task_rule
from sparsify.core.params import check_target_scale
from sparsify.validation import validate_rows

__all__ = ["SparseKernelRanker", "pairwise_accuracy"]

Array = NDArray[np.float64]


def _group_codes(groups: ArrayLike | None, n_samples: int, owner: str) -> NDArray[np.intp]:
    """Each point's group as a code 0..G−1 (all 0 without groups), or a clear error."""
    if groups is None:
        return np.zeros(n_samples, np.intp)
    labels = column_or_1d(np.asarray(groups), warn=True)
    if len(labels) != n_samples:
        raise ValueError(f"{owner} got groups for {len(labels)} points and X has {n_samples} "
                         "rows; pass one group label per row.")
    if labels.dtype.kind == "f" and not np.isfinite(labels).all():
        raise ValueError(f"The groups passed to {owner} contain NaN or infinity; give every "
                         "point a group label.")
    return np.unique(labels, return_inverse=True)[1].astype(np.intp).ravel()


def pairwise_accuracy(y: ArrayLike, scores: ArrayLike, groups: ArrayLike | None = None) -> float:
    """The fraction of preference pairs a score orders right (ties count one half).

    The pairs are those of `sparsify.core.formulation.ranking_pairs`: two points
    of one group (all points one group without ``groups``) whose relevance y
    differs. For two levels of relevance in one group this is the ROC AUC.

    Raises
    ------
    ValueError
        If there is no pair (every group has one level of relevance).

    Examples
    --------
    >>> pairwise_accuracy([2, 1, 0], [0.9, 0.5, 0.6])
    0.6666666666666666
    >>> pairwise_accuracy([2, 1, 0, 1], [3.0, 2.0, 1.0, 0.0], groups=[0, 0, 1, 1])
    0.5
    """
    y_ = np.asarray(y, dtype=float).ravel()
    s = np.asarray(scores, dtype=float).ravel()
    codes = _group_codes(groups, len(y_), "pairwise_accuracy")
    right = total = 0.0
    for code in np.unique(codes):
        members = np.flatnonzero(codes == code)
        for rows in gen_batches(len(members), 2048):  # n_g² comparisons in bounded memory
            i = members[rows]
            better = y_[i][:, None] > y_[members][None, :]
            diff = s[i][:, None] - s[members][None, :]
            right += float(((diff > 0) + 0.5 * (diff == 0))[better].sum())
            total += float(better.sum())
    if total == 0:
        raise ValueError("There is no pair to order: every group's points have one relevance "
                         "level. Pass points of different relevance y within a group.")
    return right / total


class SparseKernelRanker(SparseKernelEstimator):
    """The ranking task of the fit driver: a score whose order follows the relevance.

    A subclass names its formulation (`formulation_class`, task ``"ranker"``),
    whose ``out.y`` is the relevance, ``out.groups`` the group codes (None
    without groups) and ``out.pairs`` the preference pairs (P, 2) to order. The
    pairs are counted and their memory estimated before any is made. A ratio
    ``n_expansion`` is a fraction of the distinct training points.

    Examples
    --------
    The ranking SVM (Herbrich et al. 2000; Joachims 2002): a hinge loss on the
    score difference of each pair. No intercept: it cancels in a difference.

    >>> import cvxpy as cp
    >>> import numpy as np
    >>> from sparsify import Declaration, Formulation
    >>> class RankSVM(Formulation):
    ...     name, task = "doc_ranksvm", "ranker"
    ...     def __init__(self, C=1.0):
    ...         self.C = C
    ...     def declare(self, out):
    ...         i, j = out.pairs[:, 0], out.pairs[:, 1]
    ...         loss = cp.sum(cp.pos(1 - (out.f[i] - out.f[j])))
    ...         return Declaration(cp.Minimize(0.5 * out.norm_w2 + self.C * loss))
    >>> class SparseRankSVM(SparseKernelRanker):
    ...     formulation_class = RankSVM
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 2))
    >>> relevance = np.digitize(np.sin(X[:, 0]) + X[:, 1] ** 2, [0.0, 1.0])
    >>> queries = np.repeat(np.arange(6), 10)
    >>> ranker = SparseRankSVM(n_expansion=4, gamma=0.5, max_iter=20, random_state=0)
    >>> bool(ranker.fit(X, relevance, groups=queries).score(X, relevance, queries) > 0.85)
    True
    """

    def fit(self, X: ArrayLike, y: ArrayLike, groups: ArrayLike | None = None,
            sample_weight: ArrayLike | None = None) -> SparseKernelRanker:
        """Fit β, b and the XVs to order each group's points by relevance.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,)
            Relevance (any real numbers; larger is better).
        groups : array-like of shape (n_samples,), default=None
            Each point's group (query) label; pairs are made within a group only.
            None: all points are one group.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights ≥ 0 of the points (``out.weights``), for a formulation that
            weighs them (`sparsify.Formulation.weighted`; refused otherwise). A
            weight of 0 leaves the point out.

        Returns
        -------
        self
        """
        self._validate_params()
        name = type(self).__name__
        if y is None:
            raise ValueError(f"{name} requires y to be passed, but the target y is None.")
        X_valid, target = validate_rows(self, X, y, dtype=np.float64, y_numeric=True)
        target = np.asarray(target, dtype=np.float64)
        check_target_scale(target, "y")
        codes = _group_codes(groups, len(X_valid), name)
        check_consistent_length(X_valid, target, codes)
        weights = self._sample_weight(sample_weight, X_valid)
        if weights is not None:
            keep = weights > 0
            X_valid, target, codes, weights = (X_valid[keep], target[keep], codes[keep],
                                               weights[keep])
        if count_pairs(target, codes) == 0:
            n = len(target)
            raise ValueError(f"{name} needs two points of different relevance in one group to "
                             f"rank; got {n} sample{'' if n == 1 else 's'} with none (every "
                             "group has one level of relevance y).")
        self._fit_problems(X_valid, [target], weights, scale_weights=weights,
                           groups=None if groups is None else codes,
                           rng=check_random_state(self.random_state))
        return self

    #: What `model_file_rule` stands for (`sparsify.core.model_rule`).
    _prediction_methods: ClassVar[tuple[str, ...]] = ("predict", "_machine", "_kernel_features")

    def model_file_rule(self) -> ModelFileRule:
        """How a model file (and ONNX) describes this ranker: its score is τ(x) itself.

        Returns
        -------
        dict
            ``decision_rule``: "identity"; ``probability``: None;
            ``formulation``: its name.

        Raises
        ------
        ValueError
            If the class overrides how it scores (define ``model_file_rule``
            to declare its rule; docs/plugins.md, "Model files").
        sklearn.exceptions.NotFittedError
            If it is not fitted.
        """
        return task_rule(self, "identity")

    def predict(self, X: ArrayLike) -> Array:
        """The score τ(x) = Σ_j β_j k(z_j, x) + b: sort a group's points by it, best first.

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return self._machine(X).ravel()

    def score(self, X: ArrayLike, y: ArrayLike, groups: ArrayLike | None = None) -> float:
        """The fraction of preference pairs of (X, y, groups) the scores order right.

        See `pairwise_accuracy`: ties count one half; 1 orders every pair right,
        0.5 is a random order.

        Returns
        -------
        float
        """
        check_is_fitted(self)
        return pairwise_accuracy(y, self.predict(X), groups)

    def __sklearn_tags__(self) -> Tags:
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags

    # a ranker's scores are its prediction (predict): it has no decision function
    decision_function = available_if(lambda self: False)(SparseKernelEstimator.decision_function)
