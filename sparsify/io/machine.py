"""The fitted, data-only predictor that `sparsify.io.load_model` returns.

`SavedKernelMachine` predicts what the saved estimator predicted, from the
arrays and the kernel description of a model file, and nothing else: decision
values ``f(X) = K(X, Z) @ β.T + b``, then the file's decision rule and
probability method (`sparsify.io.saveable.DECISION_RULES`,
`sparsify.io.saveable.PROBABILITY_METHODS`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import expit, log_expit, log_softmax, logsumexp
from sklearn.base import BaseEstimator
from sklearn.utils.metaestimators import available_if

from sparsify.core.estimator import KernelMachineMixin
from sparsify.io.contents import check_finite_decision
from sparsify.io.kernel_spec import feature_width, kernel_features

__all__ = ["SavedKernelMachine"]

Array = NDArray[np.float64]


def _has_probability(machine: SavedKernelMachine) -> bool:
    return getattr(machine, "probability_", None) is not None


def _is_classifier(machine: SavedKernelMachine) -> bool:
    return getattr(machine, "decision_rule_", None) not in (None, "outlier_sign", "identity")


def _is_regressor(machine: SavedKernelMachine) -> bool:
    return getattr(machine, "decision_rule_", None) == "identity"


def _has_decision_function(machine: SavedKernelMachine) -> bool:
    # a regressor has none (scikit-learn's convention, and the saved regressor's): predict is f
    return not _is_regressor(machine)


def _has_score(machine: SavedKernelMachine) -> bool:
    return _is_classifier(machine) or _is_regressor(machine)


def _has_offset(machine: SavedKernelMachine) -> bool:
    return getattr(machine, "offset_", None) is not None


class SavedKernelMachine(KernelMachineMixin, BaseEstimator):
    """A fitted kernel machine read from a model file; it predicts and cannot be refitted.

    Made by `sparsify.io.load_model` / `sparsify.io.loads_model`, never
    by hand. Its predictions are those of the estimator that was saved:
    ``decision_function`` (not for a regressor), ``predict``, ``transform``,
    ``predict_proba`` (when the file has a probability method) and
    ``score_samples`` (outlier detectors). A regressor's (the rule
    "identity") ``predict`` is the real value f(x), ``score`` its R², and
    it has no ``classes_``.

    Attributes
    ----------
    expansion_vectors_ : ndarray of shape (Nz, n_features)
        The XVs Z.
    expansion_coef_ : ndarray of shape (n_outputs, Nz)
        β.
    intercept_ : ndarray of shape (n_outputs,)
        b.
    classes_ : ndarray of shape (n_classes,)
        The class labels, of the saved type (classifiers only).
    kernel_ : Kernel or None
        The kernel, as a `sparsify.Kernel`; None when it is bound to Z (a
        manifold kernel, or `sparsify.KernelMatchingReduction`'s per-XV
        widths), which gives K(X, Z) for the saved Z only.
    kernel_spec_ : dict
        The file's kernel description (`sparsify.io.kernel_spec`).
    kernel_arrays_ : dict of str to ndarray
        The arrays the description refers to.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when the estimator was fitted on named columns.
    decision_rule_ : str
        "binary_sign", "ovr_argmax", "softmax_argmax", "outlier_sign" or "identity"
        (a regressor).
    probability_ : str or None
        "logistic", "softmax", "ovr_logistic", "platt" or None.
    prob_a_, prob_b_ : ndarray of shape (n_outputs,)
        Platt parameters (probability "platt" only).
    offset_ : float
        ``score_samples = decision_function + offset_`` (outlier detectors
        that define it).
    estimator_class_ : str
        Class name of the saved estimator (information only: never imported).
    estimator_params_ : dict
        Its constructor parameters that are plain JSON values.
    formulation_ : str or None
        The formulation's name ("svm", "klr", ...), None for other methods.
    sparsify_version_ : str
        The sparsify version that wrote the file.
    format_version_ : int
        The model format version of the file.
    metadata : dict
        The JSON metadata saved with the model (data source, test error, ...).
    source_ : str
        Where it was read from (a path, or ``loads_model``'s ``source``).

    Decision values that are not finite (a file whose numbers overflow on X)
    raise `sparsify.io.contents.NonFiniteDecisionError`, a `ValueError`,
    rather than become a class.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_moons
    >>> from sparsify import SparseSVC
    >>> from sparsify.io import dumps_model, loads_model
    >>> X, y = make_moons(60, noise=0.1, random_state=0)
    >>> clf = SparseSVC(n_expansion=4, gamma=2.0, max_iter=10, random_state=0).fit(X, y)
    >>> machine = loads_model(dumps_model(clf), source="in memory")
    >>> machine
    SavedKernelMachine()
    >>> machine.estimator_class_, machine.decision_rule_, machine.kernel_
    ('SparseSVC', 'binary_sign', RBF(gamma=2.0))
    >>> bool(np.array_equal(machine.decision_function(X), clf.decision_function(X)))
    True
    """

    def fit(self, X: ArrayLike, y: ArrayLike | None = None) -> SavedKernelMachine:
        """Refuse: a machine read from a model file cannot be refitted.

        Raises
        ------
        TypeError
            Always; fit the estimator class named in ``estimator_class_`` (with
            ``estimator_params_``) and save it again.
        """
        name = getattr(self, "estimator_class_", "the original estimator")
        raise TypeError(f"A SavedKernelMachine is read from a model file and cannot be fitted; "
                        f"fit {name} (its parameters are in estimator_params_) and save it "
                        "again.")

    def _kernel_features(self, X: Array) -> Array:
        return kernel_features(self.kernel_spec_, self.kernel_arrays_, X,
                               self.expansion_vectors_)

    def _block_rows(self) -> int:
        # the estimators' blocks: about 4 million kernel values (a manifold kernel's graph
        # block counts too), so memory stays bounded however many rows X has
        width = feature_width(self.kernel_spec_, self.kernel_arrays_,
                              len(self.expansion_vectors_))
        return max(1, 2**22 // max(1, width))

    def _machine(self, X: ArrayLike) -> Array:
        with np.errstate(over="ignore", invalid="ignore"):  # overflow is refused below
            out = super()._machine(X)
        check_finite_decision(out, getattr(self, "source_", "in memory"), "X")
        return out

    @available_if(_has_decision_function)
    def decision_function(self, X: ArrayLike) -> Array:
        """Decision values f(x) = Σ_j β_j k(z_j, x) + b (classifiers and outlier detectors).

        Returns
        -------
        ndarray of shape (n_samples,) for one output, else (n_samples, n_outputs)
        """
        return self._machine(X)

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        """Labels by the file's decision rule (+1/−1 for an outlier detector; f for a regressor).

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        scores = self._machine(X)
        if self.decision_rule_ == "identity":
            return scores
        if self.decision_rule_ == "outlier_sign":
            return np.where(scores >= 0, 1, -1)
        if self.decision_rule_ == "binary_sign":
            return self.classes_[(scores > 0).astype(int)]  # type: ignore[no-any-return]
        return self.classes_[scores.argmax(1)]  # type: ignore[no-any-return]

    @available_if(_has_probability)
    def predict_proba(self, X: ArrayLike) -> Array:
        """Class probabilities by the file's probability method; columns in ``classes_`` order.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        scores = self._machine(X)
        method = self.probability_
        if method == "platt":
            return self._platt(scores)
        if scores.ndim == 1:  # logistic: the same operations as sparsify.algorithms.klr.estimator
            p = expit(scores)
            return np.column_stack([1.0 - p, p])
        if method == "softmax":
            return np.exp(log_softmax(scores, axis=1))  # type: ignore[no-any-return]
        # ovr_logistic: one-vs-rest sigmoids, normalised (the operations of RVMClassifier)
        log_p = log_expit(scores)
        return np.exp(log_p - logsumexp(log_p, axis=1, keepdims=True))  # type: ignore[no-any-return]

    def _platt(self, scores: Array) -> Array:
        """P = 1 / (1 + exp(A f + B)) per output (scikit-learn's SVC), normalised over outputs.

        The operations of `sparsify.SparseSVC`'s ``predict_proba``, so the values agree to
        the last bits.
        """
        A, B = self.prob_a_, self.prob_b_
        if scores.ndim == 1:
            p = expit(-(A[0] * scores + B[0]))
            return np.column_stack([1.0 - p, p])
        s = expit(-(A * scores + B))
        total = s.sum(axis=1, keepdims=True)
        if (total == 0).any():  # every sigmoid underflowed: normalise in the log domain
            log_s = -np.logaddexp(0.0, A * scores + B)
            s = np.where(total == 0, np.exp(log_s - log_s.max(axis=1, keepdims=True)), s)
            total = s.sum(axis=1, keepdims=True)
        return s / total  # type: ignore[no-any-return]

    @available_if(_has_offset)
    def score_samples(self, X: ArrayLike) -> Array:
        """Scores, higher for inliers: ``decision_function(X) + offset_``.

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return self._machine(X) + self.offset_  # type: ignore[no-any-return]

    @available_if(_has_score)
    def score(self, X: ArrayLike, y: ArrayLike) -> float:
        """Mean accuracy of `predict` on (X, y); for a regressor, the R² of its predictions.

        Returns
        -------
        float
        """
        if _is_regressor(self):
            from sklearn.metrics import r2_score

            return float(r2_score(y, self.predict(X)))
        return float(np.mean(self.predict(X) == np.asarray(y)))

    def __sklearn_tags__(self):  # type: ignore[no-untyped-def]
        tags = super().__sklearn_tags__()
        rule = getattr(self, "decision_rule_", None)
        # is_classifier / is_outlier_detector follow what the file holds
        if rule == "outlier_sign":
            tags.estimator_type = "outlier_detector"
        elif rule == "identity":
            from sklearn.utils import RegressorTags

            tags.estimator_type = "regressor"
            tags.regressor_tags = RegressorTags()
        elif rule is not None:
            from sklearn.utils import ClassifierTags

            tags.estimator_type = "classifier"
            tags.classifier_tags = ClassifierTags()
        return tags

