"""The multi-output classifier task: one problem with an output per class, argmax predicts.

`SparseMultiOutputClassifier` is `sparsify.core.classifier.SparseKernelClassifier`
for formulations that couple the classes in one problem (the Crammer–Singer
multi-class SVM, a softmax loss): ``out.y`` holds the class codes 0..K−1, the
formulation has K outputs (`sparsify.Formulation.n_outputs`), and the predicted
class is the one whose output τ_k(x) = Σ_j β_jk k(z_j, x) + b_k is largest.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.utils import check_random_state

from sparsify.core.classifier import (
    SparseKernelClassifier,
    unlabelled_targets,
    validate_classification,
)
from sparsify.core.estimator import SparseKernelEstimator
from sparsify.core.model_rule import ModelFileRule, task_rule
from sparsify.kernels import Kernel

__all__ = ["SparseMultiOutputClassifier"]

Array = NDArray[np.float64]


class SparseMultiOutputClassifier(SparseKernelClassifier):
    """The multi-output classifier task of the fit driver: K outputs in one problem.

    A subclass names its formulation (`formulation_class`), whose ``out.y`` is
    the class codes 0..K−1 (floats, NaN for an unlabelled point where the
    formulation takes them) and ``out.f`` of shape (N, K). A ratio
    ``n_expansion`` is a fraction of the distinct training points; ``sample_weight``
    for a formulation that weighs its points (`sparsify.Formulation.weighted`);
    class weights and Platt scaling, which belong to binary problems, are not
    offered.

    Examples
    --------
    A multi-class hinge loss over all classes at once (Weston and Watkins):

    >>> import cvxpy as cp
    >>> import numpy as np
    >>> from sklearn.datasets import make_blobs
    >>> from sparsify import Declaration, Formulation
    >>> class WestonWatkins(Formulation):
    ...     name, task = "doc_ww", "multioutput_classifier"
    ...     def declare(self, out):
    ...         y = out.y.astype(int)
    ...         true = cp.sum(cp.multiply(out.f, np.eye(out.n_outputs)[y]), axis=1)
    ...         margin = out.f - cp.reshape(true, (out.n_samples, 1), order="C") @ np.ones(
    ...             (1, out.n_outputs)) + 1
    ...         loss = cp.sum(cp.pos(margin)) - out.n_samples  # the true class adds 1 each
    ...         return Declaration(cp.Minimize(0.5 * out.norm_w2 + loss))
    >>> class SparseWW(SparseMultiOutputClassifier):
    ...     formulation_class = WestonWatkins
    >>> X, y = make_blobs(90, centers=3, random_state=0)
    >>> clf = SparseWW(n_expansion=6, gamma=0.5, max_iter=10, random_state=0).fit(X, y)
    >>> clf.decision_function(X).shape, bool(clf.score(X, y) > 0.9)
    ((90, 3), True)
    """

    ratio_meaning: ClassVar[str] = "a fraction of the distinct training points"

    def decision_function(self, X: ArrayLike) -> Array:
        """The outputs τ_k(x), one column per class; for two classes τ_1(x) − τ_0(x).

        Returns
        -------
        ndarray of shape (n_samples, n_classes), or (n_samples,) for two classes
            (positive: ``classes_[1]``, scikit-learn's convention).
        """
        scores = self._machine(X)
        if scores.ndim == 2 and scores.shape[1] == 2:
            return np.asarray(scores[:, 1] - scores[:, 0])
        return scores

    #: What `model_file_rule` stands for (`sparsify.core.model_rule`).
    _prediction_methods: ClassVar[tuple[str, ...]] = (
        SparseKernelClassifier._prediction_methods)

    def model_file_rule(self) -> ModelFileRule:
        """How a model file (and ONNX) describes this classifier: the class of the largest output.

        Returns
        -------
        dict
            ``decision_rule``: "multioutput_argmax" (``classes_[argmax_k τ_k(x)]``;
            a model file holds two classes as "binary_sign" on τ_1 − τ_0, this
            estimator's `decision_function`), or "binary_sign" where the
            formulation has one output; ``probability``: None; ``formulation``:
            its name.

        Raises
        ------
        ValueError
            If the class overrides how it predicts (define ``model_file_rule``
            to declare its rule; docs/plugins.md, "Model files").
        sklearn.exceptions.NotFittedError
            If it is not fitted.
        """
        return task_rule(self, "binary_sign", "multioutput_argmax")

    def _resolve_n_expansion(self, X: Array, target: NDArray[Any] | None, kernel: Kernel,
                             weights: Array | None) -> tuple[int, int | None]:
        return SparseKernelEstimator._resolve_n_expansion(self, X, target, kernel, weights)

    def _fit(self, X: ArrayLike, y: ArrayLike,
             sample_weight: ArrayLike | None = None) -> SparseMultiOutputClassifier:
        self._validate_params()
        if getattr(self, "class_weight", None) is not None:
            raise ValueError(f"{type(self).__name__} fits all classes in one problem and takes "
                             "no class weights; fit without class_weight.")
        X_valid, codes = validate_classification(
            self, X, y, unlabelled=self._takes_unlabelled())
        weights = self._sample_weight(sample_weight, X_valid)
        if weights is not None:
            self._refuse_with_unlabelled(codes, sample_weight)
            keep = weights > 0
            self._check_weighted_classes(codes[keep])
            X_valid, codes, weights = X_valid[keep], codes[keep], weights[keep]
        target = unlabelled_targets(codes, codes)
        init = self.init if self.init != "auto" else "balanced"
        self._fit_problems(X_valid, [target], weights, scale_weights=weights, init=init,
                           names=[""], rng=check_random_state(self.random_state))
        return self
