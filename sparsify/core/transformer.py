"""The transformer task: a sparse kernel feature extractor from any declared formulation.

`SparseKernelTransformer` is `sparsify.core.estimator.SparseKernelEstimator`
whose output is the K-dimensional kernel machine itself: `transform` maps x to
τ(x) = (Σ_j β_jk k(z_j, x) + b_k)_k, K = the formulation's `Formulation.n_outputs`,
at Nz kernel evaluations per point. ``y`` is optional and passed to the
formulation as it is (None, shape (N,) or (N, K)): a supervised projection
(a discriminant, a multi-output regression used as features) or an
unsupervised one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_array

from sparsify.core.data_source import validate_rows
from sparsify.core.estimator import SparseKernelEstimator

__all__ = ["SparseKernelTransformer"]

Array = NDArray[np.float64]


class SparseKernelTransformer(ClassNamePrefixFeaturesOutMixin, TransformerMixin,
                              SparseKernelEstimator):
    """The transformer task of the fit driver: `transform` is the fitted machine τ(x) ∈ R^K.

    A subclass names its formulation (`formulation_class`); ``out.y`` is the
    ``y`` given to `fit` (None without one), and the K outputs of the
    formulation are the K features. A ratio ``n_expansion`` is a fraction of
    the distinct training points. (The feature map x ↦ k(x, z_j) of the other
    estimators' `transform` is `kernel_features` here.)

    Examples
    --------
    Multi-output kernel ridge regression as a 2-feature extractor:

    >>> import cvxpy as cp
    >>> import numpy as np
    >>> from sparsify import Declaration, Formulation
    >>> class MultiRidge(Formulation):
    ...     name = "doc_multiridge"
    ...     def __init__(self, alpha=1.0):
    ...         self.alpha = alpha
    ...     def n_outputs(self, y):
    ...         return np.shape(y)[1]
    ...     def declare(self, out):
    ...         b = cp.Variable(out.n_outputs)
    ...         fit = out.y - out.f - cp.reshape(b, (1, out.n_outputs), order="C")
    ...         return Declaration(cp.Minimize(cp.sum_squares(fit) + self.alpha * out.norm_w2),
    ...                            [], b)
    >>> class SparseMultiRidge(SparseKernelTransformer):
    ...     formulation_class = MultiRidge
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 3))
    >>> Y = np.column_stack([np.sin(X[:, 0]), X[:, 1] * X[:, 2]])
    >>> tr = SparseMultiRidge(n_expansion=6, alpha=0.1, max_iter=10, random_state=0)
    >>> tr.fit_transform(X, Y).shape, tr.get_feature_names_out().tolist()
    ((60, 2), ['sparsemultiridge0', 'sparsemultiridge1'])
    """

    def fit(self, X: ArrayLike, y: ArrayLike | None = None,
            sample_weight: ArrayLike | None = None) -> SparseKernelTransformer:
        """Fit β, b and the XVs.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,) or (n_samples, n_targets), default=None
            Passed to the formulation as ``out.y``.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights ≥ 0 of the points' losses (``out.weights``), for a formulation
            that weighs them (`sparsify.Formulation.weighted`; refused otherwise).
            A weight of 0 leaves the point out.

        Returns
        -------
        self
        """
        self._validate_params()
        X_valid: Array
        if y is None:
            X_valid = validate_rows(self, X, dtype=np.float64)
            target = None
        else:
            X_valid, _ = validate_rows(self, X, y, dtype=np.float64, multi_output=True,
                                       y_numeric=True)
            target = check_array(y, dtype=np.float64, ensure_2d=False, input_name="y")
        weights = self._sample_weight(sample_weight, X_valid)
        if weights is None:
            self._fit_problems(X_valid, [target])
        else:
            keep = weights > 0
            self._fit_problems(X_valid[keep], [None if target is None else target[keep]],
                               weights[keep], scale_weights=weights[keep])
        self._n_features_out = len(self.intercept_)
        return self

    def transform(self, X: ArrayLike) -> Array:
        """The K features τ_k(x) = Σ_j β_jk k(z_j, x) + b_k.

        Returns
        -------
        ndarray of shape (n_samples, K)
        """
        return self._machine(X).reshape(-1, len(self.intercept_))

    def kernel_features(self, X: ArrayLike) -> Array:
        """The feature map x ↦ (k(x, z_1), …, k(x, z_Nz)) in which the model is linear.

        Returns
        -------
        ndarray of shape (n_samples, Nz)
        """
        return super().transform(X)

    # a transformer predicts nothing: its output is transform
    predict = available_if(lambda self: False)(SparseKernelEstimator.predict)

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.target_tags.required = False
        return tags
