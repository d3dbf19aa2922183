"""The regressor task: sparse kernel regression with any declared formulation.

`SparseKernelRegressor` is `sparsify.core.estimator.SparseKernelEstimator`
for real targets: the formulation's ``out.y`` is y itself, one problem, and
the prediction is the kernel machine τ(x) = Σ_j β_j k(z_j, x) + b.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import RegressorMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_consistent_length, column_or_1d

from sparsify.core.data_source import RowBlocks, RowTarget, is_dask_collection, validate_rows
from sparsify.core.estimator import SparseKernelEstimator
from sparsify.core.model_rule import ModelFileRule, task_rule
from sparsify.core.params import check_target_scale

__all__ = ["SparseKernelRegressor"]

Array = NDArray[np.float64]


class SparseKernelRegressor(RegressorMixin, SparseKernelEstimator):
    """The regressor task of the fit driver: real targets, one problem, τ(x) as the prediction.

    A subclass names its formulation (`formulation_class`), whose ``out.y``
    is the targets y; its parameters are made from the formulation's (see
    `sparsify.core.estimator.SparseKernelEstimator`). A ratio ``n_expansion``
    is a fraction of the distinct training points.

    Examples
    --------
    Kernel ridge regression declared in cvxpy, and its sparse estimator:

    >>> import cvxpy as cp
    >>> import numpy as np
    >>> from sparsify import Declaration, Formulation
    >>> class Ridge(Formulation):
    ...     name = "doc_kridge"
    ...     def __init__(self, alpha=1.0):
    ...         self.alpha = alpha
    ...     def declare(self, out):
    ...         b = cp.Variable()
    ...         loss = cp.sum_squares(out.f + b - out.y)
    ...         return Declaration(cp.Minimize(loss + self.alpha * out.norm_w2), [], b)
    >>> class SparseRidge(SparseKernelRegressor):
    ...     formulation_class = Ridge
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, size=(80, 1))
    >>> y = np.sin(X).ravel() + 0.1 * rng.normal(size=80)
    >>> reg = SparseRidge(n_expansion=5, alpha=0.1, gamma=0.5, max_iter=30, random_state=0)
    >>> bool(reg.fit(X, y).score(X, y) > 0.9)
    True
    >>> reg.predict(X[:2]).shape
    (2,)
    """

    ratio_meaning: ClassVar[str] = "a fraction of the distinct training points"
    #: A regression's test error still improves past W's sampling plateau (docs/theory.md),
    #: so regressors run to ``tol`` or ``max_iter`` unless asked otherwise.
    default_params: ClassVar[dict[str, Any]] = {"n_iter_no_change": None}

    def fit(self, X: ArrayLike, y: ArrayLike,
            sample_weight: ArrayLike | None = None) -> SparseKernelRegressor:
        """Fit β, b and the XVs.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,)
            Real targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights ≥ 0 of the points' losses (``out.weights``), for a formulation
            that weighs them (`sparsify.Formulation.weighted`; refused otherwise).
            A weight of 0 leaves the point out; gamma="scale" uses the weighted
            variance of X.

        Returns
        -------
        self
        """
        self._validate_params()
        if is_dask_collection(X) or is_dask_collection(y):
            # the rows stay on the workers: each evaluation of W(Z) is a map over their blocks
            source = RowBlocks(X, y, type(self).__name__)
            self._refuse_on_blocks({"sample_weight (fit without it, or on numpy arrays)":
                                    sample_weight is not None})
            self.n_features_in_ = source.n_features
            self._fit_problems(source, [RowTarget()])
            return self
        X_valid, targets = self._check_inputs(X, y)
        weights = self._sample_weight(sample_weight, X_valid)
        if weights is None:
            self._fit_problems(X_valid, targets)
            return self
        # a point of weight 0 is left out before anything else, as if it had not been passed
        keep = weights > 0
        self._fit_problems(X_valid[keep], [targets[0][keep]], weights[keep],
                           scale_weights=weights[keep])
        return self

    def _check_inputs(self, X: ArrayLike, y: ArrayLike) -> tuple[Array, list[Array]]:
        """X as float64 and [y] as the one problem's float64 targets, or a clear error.

        A semi-supervised formulation (`Formulation.unlabelled`) takes NaN in y for
        the points without a target.
        """
        X_valid: Array
        if self._takes_unlabelled():
            if y is None:
                raise ValueError(f"{type(self).__name__} requires y to be passed, but the "
                                 "target y is None.")
            X_valid = validate_rows(self, X, dtype=np.float64)
            try:
                targets = column_or_1d(np.asarray(y, dtype=np.float64), warn=True)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"{type(self).__name__} is a regressor: y must hold numbers, "
                                 f"or NaN for unlabelled points ({exc}).") from None
            check_consistent_length(X_valid, targets)
            if np.isinf(targets).any():
                raise ValueError("y contains infinity; pass finite targets (NaN marks an "
                                 "unlabelled point).")
            check_target_scale(targets, "y")
            if np.isnan(targets).all():
                raise ValueError(f"{type(self).__name__} needs labelled samples: every target "
                                 "in y is NaN (unlabelled); give some points a target.")
            return X_valid, [targets]
        try:
            X_valid, y = validate_rows(self, X, y, dtype=np.float64, y_numeric=True)
            y = np.asarray(y, dtype=np.float64)  # y_numeric converts object arrays only
        except ValueError as exc:
            if "could not convert" not in str(exc):
                raise
            raise ValueError(f"{type(self).__name__} is a regressor: y must hold numbers "
                             f"({exc}). For class labels use a classifier.") from None
        check_target_scale(y, "y")
        return X_valid, [y]

    def predict(self, X: ArrayLike) -> Array:
        """Predict τ(x) = Σ_j β_j k(z_j, x) + b.

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return self._machine(X)

    #: What `model_file_rule` stands for (`sparsify.core.model_rule`).
    _prediction_methods: ClassVar[tuple[str, ...]] = ("predict", "_machine", "_kernel_features")

    def model_file_rule(self) -> ModelFileRule:
        """How a model file (and ONNX) describes this regressor: the prediction is τ(x) itself.

        Returns
        -------
        dict
            ``decision_rule``: "identity"; ``probability``: None;
            ``formulation``: its name.

        Raises
        ------
        ValueError
            If the class overrides how it predicts (define ``model_file_rule``
            to declare its rule; docs/plugins.md, "Model files").
        sklearn.exceptions.NotFittedError
            If it is not fitted.
        """
        return task_rule(self, "identity")

    # a regressor has no decision function (scikit-learn's convention): predict is τ(x)
    decision_function = available_if(lambda self: False)(SparseKernelEstimator.decision_function)
