"""The classifier task: binary and one-vs-rest sparse kernel classifiers.

`SparseKernelClassifier` is `sparsify.core.estimator.SparseKernelEstimator`
for classification: labels of any type, one binary problem (targets ±1) or one
per class (one-vs-rest, in parallel), per-point weights class_weight[y_i] ·
sample_weight_i, a ratio ``n_expansion`` of the full SVM's number of support
vectors, and Platt scaling on out-of-fold decision values. `full_svm` and
`validate_classification` serve the baselines too.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from joblib import Parallel, delayed
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import LabelEncoder
from sklearn.svm import SVC
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import (
    _check_sample_weight,
    check_consistent_length,
    column_or_1d,
)

from sparsify.core.calibration import fit_platt, platt_proba
from sparsify.core.data_source import (
    InMemoryRows,
    RowBlocks,
    RowTarget,
    is_dask_collection,
    validate_rows,
)
from sparsify.core.distinct import count_distinct, has_distinct
from sparsify.core.estimator import SparseKernelEstimator, _fit_start, _problem_name
from sparsify.core.labels import check_class_count, check_label_types
from sparsify.core.model_rule import ModelFileRule, task_rule
from sparsify.core.optimize import CLASSIFIER_INIT_METHODS
from sparsify.core.params import check_positive_weight
from sparsify.kernels import RBF, Kernel, Linear, Polynomial

__all__ = ["SparseKernelClassifier", "full_svm", "resolve_n_expansion", "unlabelled_targets",
           "validate_classification"]

Array = NDArray[np.float64]


def full_svm(kernel: Kernel, C: float) -> SVC:
    """An unfitted `sklearn.svm.SVC` with the same kernel and C (the full SVM).

    Built-in kernels map to SVC's own; any other kernel is passed as a callable.

    Examples
    --------
    >>> full_svm(RBF(0.5), C=10.0)
    SVC(C=10.0, gamma=0.5)
    """
    if isinstance(kernel, RBF):
        return SVC(C=C, kernel="rbf", gamma=kernel.gamma)
    if isinstance(kernel, Polynomial):
        return SVC(C=C, kernel="poly", gamma=kernel.gamma, degree=kernel.degree,
                   coef0=kernel.coef0)
    if isinstance(kernel, Linear):
        return SVC(C=C, kernel="linear")
    return SVC(C=C, kernel=kernel)


def validate_classification(
    estimator: BaseEstimator, X: ArrayLike, y: ArrayLike, *, binary_only: bool = False,
    unlabelled: bool = False,
) -> tuple[Array, NDArray[np.intp]]:
    """The checks every sparse classifier's ``fit`` starts with; sets ``classes_``.

    Returns X as float64 and the class codes 0..K−1. Any label type works; one
    class, or more than two with ``binary_only``, is a ValueError. With
    ``unlabelled`` (a semi-supervised formulation), NaN or None in y marks a
    point without a label: its code is −1 and the classes are the labelled
    points'.
    """
    X_valid: Array
    if unlabelled:
        if y is None:
            raise ValueError(f"{type(estimator).__name__} requires y to be passed, but the "
                             "target y is None.")
        X_valid = validate_rows(estimator, X, dtype=np.float64)
        y_arr = column_or_1d(np.asarray(y, dtype=object if np.asarray(y).dtype.kind in "OUS"
                                        else None), warn=True)
        check_consistent_length(X_valid, y_arr)
        missing = np.array([v is None or (isinstance(v, float) and np.isnan(v))
                            for v in y_arr.tolist()], dtype=bool)
        if missing.all():
            raise ValueError(f"{type(estimator).__name__} needs labelled samples: every "
                             "label in y is NaN or None (unlabelled); label some points.")
        labelled = y_arr[~missing]
        if labelled.dtype == object:
            labelled = np.array(labelled.tolist())
    else:
        X_valid, labelled = validate_rows(estimator, X, y, dtype=np.float64)
        missing = np.zeros(len(X_valid), bool)
    check_label_types(labelled, type(estimator).__name__)
    check_classification_targets(labelled)
    encoder = LabelEncoder().fit(labelled)
    check_class_count(type(estimator).__name__, len(encoder.classes_), len(labelled))
    estimator.classes_ = encoder.classes_
    if len(encoder.classes_) < 2:
        # tolist() gives the plain Python label: 0, not np.int64(0)
        raise ValueError(
            f"{type(estimator).__name__} needs samples of at least 2 classes in the data; got "
            f"1 class ({encoder.classes_.tolist()[0]!r})."
        )
    if binary_only and len(encoder.classes_) > 2:
        raise ValueError(
            "Only binary classification is supported. The type of the target is "
            f"{type_of_target(labelled, input_name='y')}; train one model per class "
            "(one-vs-rest) for more classes."
        )
    codes = np.full(len(X_valid), -1, dtype=np.intp)
    codes[~missing] = encoder.transform(labelled)
    return X_valid, codes


def unlabelled_targets(codes: NDArray[np.intp], targets: NDArray[Any]) -> NDArray[Any]:
    """``targets`` as floats with NaN where ``codes`` is −1 (unlabelled), else unchanged.

    Examples
    --------
    >>> unlabelled_targets(np.array([0, -1, 1]), np.array([-1, -1, 1]))
    array([-1., nan,  1.])
    """
    if not (codes < 0).any():
        return targets
    out = targets.astype(float)
    out[codes < 0] = np.nan
    return out


def resolve_n_expansion(
    X: Array,
    y: NDArray[Any],
    kernel: Kernel,
    n_expansion: int | float,
    full_C: float,
    sample_weight: Array | None = None,
) -> tuple[int, int | None]:
    """Nz of one binary problem, and the full SVM's NSV when ``n_expansion`` is a ratio.

    The full SVM is fitted with ``sample_weight`` (its costs C · sample_weight),
    so a weighted sparse machine is compared with the weighted full one.
    """
    if isinstance(n_expansion, float):
        full = full_svm(kernel, full_C).fit(X, y, sample_weight=sample_weight)
        full_nsv = int(full.n_support_.sum())
        nz = max(1, round(n_expansion * full_nsv))
        return (nz if has_distinct(X, nz) else count_distinct(X)), full_nsv
    if not has_distinct(X, n_expansion):
        raise ValueError(
            f"n_expansion={n_expansion} asks for more expansion vectors than the "
            f"{count_distinct(X)} distinct training points; lower n_expansion or pass a ratio "
            "in (0, 1]."
        )
    return n_expansion, None


def _point_weights(
    estimator: BaseEstimator,
    codes: NDArray[np.intp],
    sample_weight: ArrayLike | None,
    class_weight: dict[Any, float] | str | None,
) -> tuple[Array, Array, Array] | None:
    """Per-point weights class_weight[y_i] · sample_weight_i, or None when there are none.

    ``codes`` index ``estimator.classes_`` (the labels y_i). Returns
    the product, the validated sample weights (ones if None) and the class
    weights in ``classes_`` order (scikit-learn's SVC semantics:
    `sklearn.utils.class_weight.compute_class_weight`, "balanced" from the
    unweighted class counts).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import SparseSVC
    >>> clf = SparseSVC()
    >>> clf.classes_ = np.array(["a", "b"])
    >>> w, sw, cw = _point_weights(clf, np.array([0, 0, 0, 1]), None, "balanced")
    >>> w.round(3).tolist(), cw.round(3).tolist()
    ([0.667, 0.667, 0.667, 2.0], [0.667, 2.0])
    """
    name = type(estimator).__name__
    classes = estimator.classes_
    if sample_weight is None and class_weight is None:
        return None
    sw = _check_sample_weight(sample_weight, np.empty((len(codes), 0)), dtype=np.float64,
                              copy=True)
    if (sw < 0).any():
        i = int(np.flatnonzero(sw < 0)[0])
        raise ValueError(
            f"The sample_weight passed to {name}.fit must be >= 0 (a weight of 0 leaves the "
            f"sample out). Got {float(sw[i])!r} at index {i} instead."
        )
    require_a_positive_weight(sw)
    if isinstance(class_weight, dict):
        known = set(classes.tolist())
        for label, weight in class_weight.items():
            if label not in known:
                raise ValueError(
                    f"The 'class_weight' parameter of {name} has the label {label!r}, which is "
                    f"not a class of y ({classes.tolist()}); use the labels of y as its keys."
                )
            if not (isinstance(weight, Real) and np.isfinite(weight) and weight >= 0):
                raise ValueError(
                    f"The weight of class {label!r} in the 'class_weight' parameter of {name} "
                    f"must be a finite float >= 0. Got {weight!r} instead."
                )
    cw = class_weights(class_weight, classes, codes)
    return cw[codes] * sw, sw, cw


def class_weights(class_weight: dict[Any, float] | str | None, classes: NDArray[Any],
                  codes: NDArray[np.intp] | None = None,
                  counts: NDArray[np.intp] | None = None) -> Array:
    """The weight of each class, from the class codes of y or their counts.

    scikit-learn's SVC semantics (`sklearn.utils.class_weight.compute_class_weight`):
    "balanced" gives class c the weight N / (n_classes · N_c).

    Examples
    --------
    >>> class_weights("balanced", np.array([0, 1]), counts=np.array([3, 1])).tolist()
    [0.6666666666666666, 2.0]
    """
    if class_weight == "balanced" and codes is None:
        assert counts is not None
        return np.asarray(counts.sum() / (len(classes) * counts.astype(np.float64)))
    y = classes if codes is None else classes[codes]
    return np.asarray(compute_class_weight(class_weight, classes=classes, y=y))


def require_a_positive_weight(weights: Array) -> None:
    """Refuse sample weights that are all 0 (`sparsify.core.params.check_positive_weight`)."""
    check_positive_weight(weights)


class SparseKernelClassifier(ClassifierMixin, SparseKernelEstimator):
    """The classifier task of the fit driver (binary, or one-vs-rest for more classes).

    A subclass names its formulation (`formulation_class`), whose ``out.y``
    is ±1; a ratio ``n_expansion`` refers to the full SVM with the estimator's
    ``C`` (1.0 if it has none). A subclass with per-point costs (`SparseSVC`)
    takes ``weights`` in `_formulation_params` and calls `_fit` with its
    ``sample_weight``; one with a ``probability`` parameter gets Platt scaling.

    Examples
    --------
    A classifier from a declared formulation, its parameters made from the
    formulation's:

    >>> import cvxpy as cp
    >>> from sklearn.datasets import make_moons
    >>> from sparsify import Declaration, Formulation
    >>> class L2SVM(Formulation):
    ...     name = "doc_l2svm"
    ...     def __init__(self, C=1.0):
    ...         self.C = C
    ...     def declare(self, out):
    ...         b = cp.Variable()
    ...         loss = cp.sum_squares(cp.pos(1 - cp.multiply(out.y, out.f + b)))
    ...         return Declaration(cp.Minimize(0.5 * out.norm_w2 + self.C * loss), [], b)
    >>> class SparseL2SVC(SparseKernelClassifier):
    ...     formulation_class = L2SVM
    >>> X, y = make_moons(80, noise=0.1, random_state=0)
    >>> clf = SparseL2SVC(n_expansion=6, C=10.0, gamma=2.0, max_iter=15, random_state=0)
    >>> bool(clf.fit(X, y).score(X, y) > 0.9)
    True
    """

    #: Folds of the internal cross-validation that gives Platt scaling its
    #: out-of-fold decision values (libsvm's and so SVC's number).
    n_probability_folds: ClassVar[int] = 5

    default_params: ClassVar[dict[str, Any]] = {"init": "auto"}
    ratio_meaning: ClassVar[str] = ("a ratio of the full SVM's number of support vectors "
                                    "(the paper's Nz/NSV), per binary problem")

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **SparseKernelEstimator._parameter_constraints,
        "init": [StrOptions({"auto", *CLASSIFIER_INIT_METHODS})],
    }

    #: The methods the task's decision rule stands for: a subclass that overrides one (or adds
    #: ``predict_proba``) is refused by `model_file_rule` unless it declares its own rule.
    _prediction_methods: ClassVar[tuple[str, ...]] = (
        "decision_function", "predict", "predict_proba", "predict_log_proba", "_machine",
        "_kernel_features")

    def model_file_rule(self) -> ModelFileRule:
        """How a model file (and ONNX) describes this classifier: its task's decision rule.

        The hook `sparsify.io.save_model`, ``sparsify fit --out`` and
        `sparsify.to_onnx` read (`sparsify.core.model_rule`); a subclass that
        predicts otherwise defines its own (docs/plugins.md, "Model files").

        Returns
        -------
        dict
            ``decision_rule``: "binary_sign" for one output (``classes_[1]``
            where τ(x) > 0), "ovr_argmax" for one per class (one-vs-rest);
            ``probability``: None; ``formulation``: the formulation's name.

        Raises
        ------
        ValueError
            If the class overrides a method of ``_prediction_methods``.
        sklearn.exceptions.NotFittedError
            If it is not fitted.
        """
        return task_rule(self, "binary_sign", "ovr_argmax")

    def _resolve_n_expansion(self, X: Array, target: NDArray[Any] | None, kernel: Kernel,
                             weights: Array | None) -> tuple[int, int | None]:
        assert target is not None  # a classification problem has its ±1 targets
        n_exp = (int(self.n_expansion) if isinstance(self.n_expansion, Integral)
                 else float(self.n_expansion))
        labelled = ~np.isnan(np.asarray(target, dtype=float))
        if isinstance(n_exp, float) and not labelled.all():
            # a ratio of the full SVM's support vectors: the SVM of the labelled points
            X, target = X[labelled], target[labelled]
        return resolve_n_expansion(X, target, kernel, n_exp, getattr(self, "C", 1.0), weights)

    def fit(self, X: ArrayLike, y: ArrayLike,
            sample_weight: ArrayLike | None = None) -> SparseKernelClassifier:
        """Fit the sparse kernel machine.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,)
            Class labels, of any type.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights ≥ 0 of the points' losses (``out.weights``), for a formulation
            that weighs them (`sparsify.Formulation.weighted`; refused otherwise).
            A weight of 0 leaves the point out.

        Returns
        -------
        self
        """
        return self._fit(X, y, sample_weight)

    def _fit(
        self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
    ) -> SparseKernelClassifier:
        """`fit` with per-point weights class_weight[y_i] · sample_weight_i (when either is set).

        A point of weight 0 is left out before anything else (the initial XVs,
        gamma="scale", the number of distinct points), so it is the same as
        not passing it; every other weight multiplies the point's cost. Dask
        collections fit over their row blocks (`_fit_blocks`).
        """
        self._validate_params()
        if is_dask_collection(X) or is_dask_collection(y):
            return self._fit_blocks(RowBlocks(X, y, type(self).__name__), sample_weight)
        X, codes = validate_classification(self, X, y,
                                           unlabelled=self._takes_unlabelled())
        if sample_weight is not None:
            self._check_takes_weights()
        self._refuse_with_unlabelled(codes, sample_weight)
        weighted = _point_weights(self, codes, sample_weight, getattr(self, "class_weight", None))
        weights = sw = None
        if hasattr(self, "class_weight"):
            self.class_weight_ = np.ones(len(self.classes_)) if weighted is None else weighted[2]
        if weighted is not None:
            weights, sw, _ = weighted
            keep = weights > 0
            self._check_weighted_classes(codes[keep])
            X, codes, weights, sw = X[keep], codes[keep], weights[keep], sw[keep]
        targets = [unlabelled_targets(codes, t) for t in (
            [np.where(codes == 1, 1, -1)]
            if len(self.classes_) == 2
            else [np.where(codes == k, 1, -1) for k in range(len(self.classes_))]
        )]
        init = self._init(len(targets))
        rng = check_random_state(self.random_state)
        names = [_problem_name(self.classes_, k, len(targets), 0, 1) for k in range(len(targets))]
        # a weight counts as repeats of the point, for the kernel's scale too
        kernel = self._fit_problems(X, targets, weights,
                                    scale_weights=None if sample_weight is None else sw,
                                    init=init, names=names, rng=rng)
        for attr in ("probA_", "probB_"):  # a refit without probability drops the old ones
            self.__dict__.pop(attr, None)
        if getattr(self, "probability", False):
            # drawn after the main fit's seeds, so that fit is the same with or without it
            cv_seed = int(rng.randint(np.iinfo(np.int32).max))
            self.probA_, self.probB_ = self._platt_scaling(
                InMemoryRows(X), codes, targets, kernel, weights, sw, init, cv_seed)
        return self

    def _init(self, n_problems: int) -> str:
        """The initial-XV method: "auto" is "balanced" for one-vs-rest, whose one class is
        about 1/K of the points (too few for a random start), else "random"."""
        return self.init if self.init != "auto" else "balanced" if n_problems > 1 else "random"

    def _fit_blocks(self, source: RowBlocks, sample_weight: Any) -> SparseKernelClassifier:
        """`fit` over the row blocks of dask collections: the rows stay on the workers.

        The same rules as in memory: class weights from the class counts,
        one-vs-rest, the initial-XV method, seeds and starts; a ratio
        ``n_expansion`` fits its full SVM on the rows collected to the driver,
        and Platt scaling fits its fold models over the blocks.
        """
        self._refuse_on_blocks({
            "sample_weight (fit without it, or on numpy arrays)": sample_weight is not None})
        self.classes_, counts = source.classes()
        if len(self.classes_) < 2:
            raise ValueError(f"{type(self).__name__} needs samples of at least 2 classes in the "
                             f"data; got {len(self.classes_)} class.")
        self.n_features_in_ = source.n_features
        weights: dict[Any, float] = {}
        if hasattr(self, "class_weight"):
            _point_weights(self, np.arange(len(self.classes_)), None, self.class_weight)
            self.class_weight_ = class_weights(self.class_weight, self.classes_, counts=counts)
            self._check_weighted_classes(np.flatnonzero(self.class_weight_ > 0))
            weights = dict(zip(self.classes_.tolist(), self.class_weight_.tolist(), strict=True))
        positives = ([self.classes_[1]] if len(self.classes_) == 2 else list(self.classes_))
        targets = [RowTarget(positive, weights) for positive in positives]
        init = self._init(len(targets))
        rng = check_random_state(self.random_state)
        names = [_problem_name(self.classes_, k, len(targets), 0, 1)
                 for k in range(len(targets))]
        kernel = self._fit_problems(source, targets, init=init, names=names, rng=rng)
        for attr in ("probA_", "probB_"):
            self.__dict__.pop(attr, None)
        if getattr(self, "probability", False):
            cv_seed = int(rng.randint(np.iinfo(np.int32).max))
            codes = np.searchsorted(self.classes_, source.labels())
            self.probA_, self.probB_ = self._platt_scaling(
                source, codes, targets, kernel, None, None, init, cv_seed)
        return self

    def _refuse_with_unlabelled(self, codes: NDArray[np.intp],
                                sample_weight: ArrayLike | None) -> None:
        """Weights and probabilities are per labelled class: refuse them with unlabelled points."""
        if not (codes < 0).any():
            return
        used = [name for name, on in (
            ("sample_weight", sample_weight is not None),
            ("class_weight", getattr(self, "class_weight", None) is not None),
            ("probability=True", getattr(self, "probability", False))) if on]
        if used:
            raise ValueError(f"{type(self).__name__} does not take {used[0]} with unlabelled "
                             "points (NaN or None in y); fit without it, or on the labelled "
                             "points only.")

    def _check_weighted_classes(self, kept_codes: NDArray[np.intp]) -> None:
        """Every class needs a sample of positive weight; say which one has none."""
        present = np.bincount(kept_codes, minlength=len(self.classes_)) > 0
        if not present.all():
            label = self.classes_.tolist()[int(np.flatnonzero(~present)[0])]
            raise ValueError(
                f"{type(self).__name__} needs samples of at least 2 classes with a positive "
                f"weight, and of every class in y; class {label!r} has none (its "
                "sample_weight × class_weight is 0 on every sample). Give it a positive "
                "weight or leave its samples out of X and y."
            )

    def _platt_scaling(
        self,
        source: InMemoryRows | RowBlocks,
        codes: NDArray[np.intp],
        targets: list[Any],
        kernel: Kernel,
        weights: Array | None,
        sample_weight: Array | None,
        init: str,
        seed: int,
    ) -> tuple[Array, Array]:
        """Platt's sigmoid per binary problem, on decision values of stratified k-fold models.

        Each fold model solves the same problem as the fitted one (kernel,
        costs, Nz, L-BFGS settings; one start) on the other folds' points; its
        decision values on the held-out fold are what the sigmoid is fitted to.
        A fold whose training part has one class of a binary problem gives
        that class's sign as decision value, as libsvm does. Over row blocks
        the fold models are fitted over the blocks (the held-out rows weigh 0)
        and their decision values computed there.
        """
        n_folds = self.n_probability_folds
        largest = int(np.bincount(codes).max())
        if largest < n_folds:
            raise ValueError(
                f"{type(self).__name__}(probability=True) fits Platt's sigmoid on "
                f"{n_folds}-fold cross-validation and needs at least {n_folds} samples of "
                f"positive weight in its largest class; got {largest}. Add samples or set "
                "probability=False."
            )
        n = len(codes)
        folds = list(StratifiedKFold(n_folds, shuffle=True, random_state=seed).split(
            np.empty((n, 0)), codes))
        rng = np.random.RandomState(seed)
        seeds = rng.randint(np.iinfo(np.int32).max, size=(len(folds), len(targets)))
        signs = [t if isinstance(t, np.ndarray) else np.where(codes == np.searchsorted(
            self.classes_, t.positive), 1, -1) for t in targets]
        fold_of = np.empty(n, dtype=np.intp)
        for i, (_, test) in enumerate(folds):
            fold_of[test] = i
        runs = self._fold_models(source, folds, fold_of, targets, signs, kernel, weights, init,
                                 seeds)
        decision = np.empty((n, len(targets)))
        for i, (train, test) in enumerate(folds):
            for k, t in enumerate(signs):
                if (i, k) not in runs:
                    decision[test, k] = float(t[train][0])
        for (i, k), values in self._fold_decisions(source, runs, kernel, fold_of).items():
            decision[folds[i][1], k] = values
        ab = [fit_platt(decision[:, k], t > 0, sample_weight) for k, t in enumerate(signs)]
        return np.array([a for a, _ in ab]), np.array([b for _, b in ab])

    def _fold_models(self, source: InMemoryRows | RowBlocks,
                     folds: list[tuple[NDArray[np.intp], NDArray[np.intp]]],
                     fold_of: NDArray[np.intp], targets: list[Any],
                     signs: list[NDArray[np.int_]], kernel: Kernel, weights: Array | None,
                     init: str, seeds: NDArray[np.int_]) -> dict[tuple[int, int], Any]:
        """The fold models, keyed by (fold, problem); none where a fold's training part has
        one class of the problem."""
        jobs, slots = [], []
        runs: dict[tuple[int, int], Any] = {}
        for i, (train, _) in enumerate(folds):
            formulation = self._make_formulation(None if weights is None else weights[train])
            rows = source.rows if isinstance(source, RowBlocks) else source
            n_distinct = None if rows is None else count_distinct(rows.X[train])
            for k, t in enumerate(signs):
                if len(np.unique(t[train])) < 2:
                    continue  # filled with the one class's sign
                nz = int(self.n_expansion_[k]) if n_distinct is None else min(
                    int(self.n_expansion_[k]), n_distinct)
                if isinstance(source, RowBlocks):
                    target = targets[k]
                    held = source.row_weight(fold_of != i)
                    fold = RowTarget(target.positive, target.label_weights, held)
                    Z0: str | Array = init
                    if source.rows is not None:  # the draw of the in-memory fit
                        Z0 = InMemoryRows(source.rows.X[train]).initial_rows(
                            nz, init, int(seeds[i, k]), t[train])
                    runs[i, k] = self._run_on_blocks(
                        source, fold, formulation, kernel, nz, Z0, seeds[i, k:k + 1], [""],
                        self._plateau(len(train)), report=False)[0]
                    continue
                assert isinstance(source, InMemoryRows)
                jobs.append(delayed(_fit_start)(
                    source.X[train], t[train], formulation, kernel, nz, init, self.solver,
                    self.solver_tol, self.max_iter, self.tol, int(seeds[i, k]), None, 0, "",
                    self._plateau(len(train))))
                slots.append((i, k))
        if jobs:
            n_jobs = self.n_jobs if len(jobs) > 1 else None
            runs = dict(zip(slots, Parallel(n_jobs=n_jobs)(jobs), strict=True))
        return runs

    @staticmethod
    def _fold_decisions(source: InMemoryRows | RowBlocks, runs: dict[tuple[int, int], Any],
                        kernel: Kernel, fold_of: NDArray[np.intp]
                        ) -> dict[tuple[int, int], Array]:
        """Each fold model's decision values on its held-out rows (over row blocks: computed
        on the workers, the held-out fold's values gathered)."""
        def values(X: Array, Z: Array, coef: Array, b: float, d: float) -> Array:
            out = kernel(X, Z) @ coef + b
            return np.asarray(out if d == 0 else out + d * kernel.diag(X))

        if isinstance(source, InMemoryRows):
            return {(i, k): values(source.X[fold_of == i], run["Z"], run["coef"],
                                   run["intercept"], float(run["diagonal_coef"]))
                    for (i, k), run in runs.items()}
        import dask.array as da

        lazy = {key: source.X.map_blocks(values, run["Z"], run["coef"], float(run["intercept"]),
                                         float(run["diagonal_coef"]), drop_axis=1, dtype=float)
                for key, run in runs.items()}
        computed = da.compute(*lazy.values())
        return {key: np.asarray(v)[fold_of == key[0]]
                for key, v in zip(lazy, computed, strict=True)}

    def _proba_from_decision(self, decision: Array) -> Array:
        """Class probabilities from decision values: Platt's sigmoid per problem, normalised."""
        if decision.ndim == 1:
            p = platt_proba(decision, self.probA_[0], self.probB_[0])
            return np.column_stack([1.0 - p, p])
        s = platt_proba(decision, self.probA_, self.probB_)
        total = s.sum(axis=1, keepdims=True)
        # every sigmoid underflowed to 0 (decision values far beyond the training ones):
        # the same normalisation in the log domain
        if (total == 0).any():
            log_s = -np.logaddexp(0.0, self.probA_ * decision + self.probB_)
            s = np.where(total == 0, np.exp(log_s - log_s.max(axis=1, keepdims=True)), s)
            total = s.sum(axis=1, keepdims=True)
        proba: Array = s / total
        return proba
