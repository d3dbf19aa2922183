"""The ordinal-regression task: ordered classes, one latent score and its thresholds.

`SparseOrdinalRegressor` is `sparsify.core.estimator.SparseKernelEstimator` for
labels whose classes are ordered (ratings, grades, stages): the formulation
sees the levels 0..M−1 of the classes (``classes_`` in sorted order is the
order of the levels) as ``out.y``, declares one output f and the M − 1
thresholds θ_1 ≤ … ≤ θ_{M−1} as ``Declaration.variables["thresholds"]``, and
a point's level is the number of thresholds below its score
τ(x) = Σ_j β_j k(z_j, x) + b (support vector ordinal regression, Chu & Keerthi
2005, is the model).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from sparsify.core.classifier import SparseKernelClassifier, validate_classification
from sparsify.core.estimator import SparseKernelEstimator
from sparsify.core.model_rule import ModelFileRule
from sparsify.kernels import Kernel

__all__ = ["SparseOrdinalRegressor", "interval_margins"]

Array = NDArray[np.float64]


def interval_margins(scores: Array, thresholds: Array) -> Array:
    """How far inside each level's interval a score lies: one column per level.

    Level k holds the scores between its thresholds θ_k < τ ≤ θ_{k+1} (θ_0 = −∞,
    θ_M = +∞, the thresholds sorted); its column is min(τ − θ_k, θ_{k+1} − τ),
    positive only for the level the score lies in, so the argmax of a row is the
    number of thresholds below the score (ties go to the lower level).

    Examples
    --------
    >>> interval_margins(np.array([-2.0, 0.5, 3.0]), np.array([0.0, 1.0])).tolist()
    [[2.0, -2.0, -3.0], [-0.5, 0.5, -0.5], [-3.0, -2.0, 2.0]]
    """
    theta = np.sort(np.asarray(thresholds, dtype=float))
    lower = np.concatenate([[-np.inf], theta])
    upper = np.concatenate([theta, [np.inf]])
    tau = np.asarray(scores, dtype=float)[:, None]
    return np.asarray(np.minimum(tau - lower, upper - tau))


class SparseOrdinalRegressor(SparseKernelClassifier):
    """The ordinal-regression task of the fit driver: ordered classes, thresholds on one score.

    A subclass names its formulation (`formulation_class`, task
    ``"ordinal_regressor"``), whose ``out.y`` holds the levels 0..M−1 (floats)
    and which declares the M − 1 thresholds as ``variables["thresholds"]``
    (refused before any solve otherwise). The classes are ordered as sorted
    labels (``classes_``): integer ratings order themselves; give other labels
    as codes of their order. A ratio ``n_expansion`` is a fraction of the
    distinct training points; the initial XVs are drawn evenly over the levels
    (``init="auto"``).

    Fitted attributes beyond the driver's: ``classes_`` and ``thresholds_``
    (M − 1,), sorted, from ``declared_variables_[0]["thresholds"]``.
    `predict` gives the class of the level, `decision_function` the margins of
    the levels' intervals (`interval_margins`; for two classes τ(x) − θ_1),
    `score` the accuracy, as for any classifier (the mean absolute error of
    the levels is ``np.abs(np.searchsorted(clf.classes_, clf.predict(X)) -
    np.searchsorted(clf.classes_, y)).mean()``).

    Examples
    --------
    Support vector ordinal regression with implicit constraints (Chu & Keerthi
    2005): each threshold's hinge losses over the points of every level below
    and above it.

    >>> import cvxpy as cp
    >>> import numpy as np
    >>> from sparsify import Declaration, Formulation
    >>> class SVOR(Formulation):
    ...     name, task = "doc_svor", "ordinal_regressor"
    ...     def __init__(self, C=1.0):
    ...         self.C = C
    ...     def declare(self, out):
    ...         n, m = out.n_samples, int(out.y.max())  # m thresholds
    ...         theta = cp.Variable(m, name="thresholds")
    ...         # +1 where the point's level is at most j (θ_j above it), −1 else
    ...         sign = np.where(np.arange(m)[None, :] >= out.y[:, None], 1.0, -1.0)
    ...         gap = cp.reshape(theta, (1, m), order="C") - cp.reshape(out.f, (n, 1), order="C")
    ...         loss = cp.sum(cp.pos(1 - cp.multiply(sign, gap)))
    ...         return Declaration(cp.Minimize(0.5 * out.norm_w2 + self.C * loss),
    ...                            variables={"thresholds": theta})
    >>> class SparseSVOR(SparseOrdinalRegressor):
    ...     formulation_class = SVOR
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-2, 2, size=(90, 2))
    >>> y = np.digitize(X[:, 0] ** 2 + X[:, 1], [0.5, 2.0])  # three ordered levels
    >>> clf = SparseSVOR(n_expansion=5, C=10.0, gamma=0.5, max_iter=20, random_state=0)
    >>> clf.fit(X, y).thresholds_.shape, bool(clf.score(X, y) > 0.8)
    ((2,), True)
    """

    ratio_meaning: ClassVar[str] = "a fraction of the distinct training points"

    def _resolve_n_expansion(self, X: Array, target: NDArray[Any] | None, kernel: Kernel,
                             weights: Array | None) -> tuple[int, int | None]:
        return SparseKernelEstimator._resolve_n_expansion(self, X, target, kernel, weights)

    def _fit(self, X: ArrayLike, y: ArrayLike,
             sample_weight: ArrayLike | None = None) -> SparseOrdinalRegressor:
        self._validate_params()
        X_valid, codes = validate_classification(self, X, y)
        weights = self._sample_weight(sample_weight, X_valid)
        if weights is not None:
            keep = weights > 0
            self._check_weighted_classes(codes[keep])
            X_valid, codes, weights = X_valid[keep], codes[keep], weights[keep]
        init = self.init if self.init != "auto" else "balanced"
        self._fit_problems(X_valid, [codes.astype(float)], weights, scale_weights=weights,
                           init=init, names=[""], rng=check_random_state(self.random_state))
        self.thresholds_ = np.sort(np.asarray(
            self.declared_variables_[0]["thresholds"], dtype=float).ravel())
        return self

    def _scores(self, X: ArrayLike) -> Array:
        """τ(x), one score per row."""
        return self._machine(X).ravel()

    def decision_function(self, X: ArrayLike) -> Array:
        """The margins of the levels' intervals (`interval_margins`); τ(x) − θ_1 for two.

        Returns
        -------
        ndarray of shape (n_samples, n_classes), or (n_samples,) for two classes
            Positive for the predicted class only; its argmax (its sign for two
            classes) is `predict`.
        """
        check_is_fitted(self)
        scores = self._scores(X)
        if len(self.classes_) == 2:
            return np.asarray(scores - self.thresholds_[0])
        return interval_margins(scores, self.thresholds_)

    def model_file_rule(self) -> ModelFileRule:
        """Refused: a model file holds no thresholds, by which this estimator predicts.

        Raises
        ------
        ValueError
            Always, saying to save the estimator with pickle or joblib.
        """
        raise ValueError(
            f"{type(self).__name__} cannot be saved as a model file: it predicts the number "
            "of its thresholds (thresholds_) below τ(x), and a model file's decision rules "
            "(docs/model-format.md) hold no thresholds. Save it with pickle or joblib.dump "
            "instead, and load only pickles you trust.")

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        """The class of the level: the number of thresholds below τ(x).

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        scores = self._scores(X)
        levels = (scores[:, None] > self.thresholds_[None, :]).sum(1)
        labels: NDArray[Any] = self.classes_[levels]
        return labels
