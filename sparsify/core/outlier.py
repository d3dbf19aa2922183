"""The outlier-detector task: sparse novelty detection with any declared formulation.

`SparseOutlierDetector` is `sparsify.core.estimator.SparseKernelEstimator`
fitted on inliers only (the formulation gets no ``out.y``): one problem,
τ(x) = Σ_j β_j k(z_j, x) + b positive for inliers.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import OutlierMixin

from sparsify.core.data_source import validate_rows
from sparsify.core.estimator import SparseKernelEstimator
from sparsify.core.model_rule import ModelFileRule, task_rule

__all__ = ["SparseOutlierDetector"]

Array = NDArray[np.float64]


class SparseOutlierDetector(OutlierMixin, SparseKernelEstimator):
    """The outlier-detector task of the fit driver: inliers only, τ(x) ≥ 0 inside.

    A subclass names its formulation (`formulation_class`), declared without
    labels, whose intercept makes τ(x) positive for inliers; ``offset_`` is
    −b, so `score_samples` is Σ_j β_j k(z_j, x) (higher is more normal), as
    scikit-learn's detectors have it. A ratio ``n_expansion`` is a fraction of
    the distinct training points unless the algorithm says otherwise
    (`sparsify.SparseOneClassSVM`: of the full one-class SVM's support
    vectors).

    Examples
    --------
    >>> import cvxpy as cp
    >>> import numpy as np
    >>> from sparsify import Declaration, Formulation
    >>> class OneClass(Formulation):
    ...     name = "doc_oneclass"
    ...     def __init__(self, nu=0.5):
    ...         self.nu = nu
    ...     def declare(self, out):
    ...         rho = cp.Variable()
    ...         slack = cp.sum(cp.pos(rho - out.f)) / (self.nu * out.n_samples)
    ...         return Declaration(cp.Minimize(0.5 * out.norm_w2 - rho + slack), [], -rho)
    >>> class SparseOneClass(SparseOutlierDetector):
    ...     formulation_class = OneClass
    >>> X = np.random.default_rng(0).normal(size=(60, 2))
    >>> det = SparseOneClass(n_expansion=4, nu=0.2, gamma=0.5, max_iter=20, random_state=0)
    >>> det.fit(X).predict([[6.0, 6.0]]).tolist()  # far from the data: an outlier
    [-1]
    >>> bool(det.score_samples([[0.0, 0.0]])[0] > det.score_samples([[6.0, 6.0]])[0])
    True
    """

    #: What `model_file_rule` stands for (`sparsify.core.model_rule`).
    _prediction_methods: ClassVar[tuple[str, ...]] = (
        "decision_function", "predict", "score_samples", "_machine", "_kernel_features")

    def model_file_rule(self) -> ModelFileRule:
        """How a model file (and ONNX) describes this detector: +1 where τ(x) ≥ 0, else −1.

        Returns
        -------
        dict
            ``decision_rule``: "outlier_sign" (the file keeps ``offset_`` for
            `score_samples`); ``probability``: None; ``formulation``: its name.

        Raises
        ------
        ValueError
            If the class overrides how it predicts (define ``model_file_rule``
            to declare its rule; docs/plugins.md, "Model files").
        sklearn.exceptions.NotFittedError
            If it is not fitted.
        """
        return task_rule(self, "outlier_sign")

    def fit(self, X: ArrayLike, y: Any = None,
            sample_weight: ArrayLike | None = None) -> SparseOutlierDetector:
        """Fit on inliers.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : ignored
            Not used; present for API consistency.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights ≥ 0 of the points' losses (``out.weights``), for a formulation
            that weighs them (`sparsify.Formulation.weighted`; refused otherwise).
            A weight of 0 leaves the point out.

        Returns
        -------
        self
        """
        self._validate_params()
        X_valid: Array = validate_rows(self, X, dtype=np.float64)
        weights = self._sample_weight(sample_weight, X_valid)
        if weights is None:
            self._fit_problems(X_valid, [None])
        else:
            keep = weights > 0
            self._fit_problems(X_valid[keep], [None], weights[keep],
                               scale_weights=weights[keep])
        self.offset_ = -float(self.intercept_[0])
        return self

    def score_samples(self, X: ArrayLike) -> Array:
        """Raw scores Σ_j β_j k(z_j, x) = τ(x) + offset_ (higher is more normal).

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return self.decision_function(X) + self.offset_

    def predict(self, X: ArrayLike) -> NDArray[np.int64]:
        """Return +1 for inliers (τ(x) ≥ 0) and −1 for outliers.

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return np.where(self.decision_function(X) >= 0, 1, -1)
