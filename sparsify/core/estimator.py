"""scikit-learn estimators built on the direct sparse method.

`SparseKernelClassifier` holds what every sparse classifier shares
(validation, the number of XVs, per-point weights, one-vs-rest in parallel,
stacked XVs for prediction, Platt scaling on out-of-fold decision values).
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from joblib import Parallel, delayed
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import LabelEncoder
from sklearn.svm import SVC
from sklearn.utils import TransformerTags, check_random_state, gen_batches
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from sparsify.core.calibration import fit_platt, platt_proba
from sparsify.core.formulation import Formulation, make_formulation
from sparsify.core.marginal import make_marginal
from sparsify.core.optimize import (
    CLASSIFIER_INIT_METHODS,
    initial_expansion_vectors,
    minimize_marginal,
    problem_line,
    warn_if_not_converged,
)
from sparsify.core.registry import get_registry
from sparsify.io.persistence import VersionedPickleMixin
from sparsify.kernels import RBF, Kernel, Linear, Polynomial, make_kernel

__all__ = [
    "KernelMachineMixin",
    "SparseKernelClassifier",
    "full_svm",
    "validate_classification",
]

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
    estimator: BaseEstimator, X: ArrayLike, y: ArrayLike, *, binary_only: bool = False
) -> tuple[Array, NDArray[np.intp]]:
    """The checks every sparse classifier's ``fit`` starts with; sets ``classes_``.

    Returns X as float64 and the class codes 0..K−1. Any label type works; one
    class, or more than two with ``binary_only``, is a ValueError.
    """
    X, y = validate_data(estimator, X, y, dtype=np.float64)
    check_classification_targets(y)
    encoder = LabelEncoder().fit(y)
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
            f"{type_of_target(y, input_name='y')}; train one model per class (one-vs-rest) "
            "for more classes."
        )
    return X, encoder.transform(y)


def _check_solver(solver: str) -> None:
    """Fail on an unknown solver name before any expensive work, listing the known ones."""
    if solver != "auto":
        get_registry().get("solver", solver)


def _n_expansion(
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
    n_distinct = len(np.unique(X, axis=0))
    if isinstance(n_expansion, float):
        full = full_svm(kernel, full_C).fit(X, y, sample_weight=sample_weight)
        full_nsv = int(full.n_support_.sum())
        return min(max(1, round(n_expansion * full_nsv)), n_distinct), full_nsv
    if n_expansion > n_distinct:
        raise ValueError(
            f"n_expansion={n_expansion} asks for more expansion vectors than the {n_distinct} "
            "distinct training points; lower n_expansion or pass a ratio in (0, 1]."
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
    classes = estimator.classes_  # type: ignore[attr-defined]
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
    cw = compute_class_weight(class_weight, classes=classes, y=classes[codes])
    return cw[codes] * sw, sw, cw


def _weighted_scale_gamma(X: Array, sample_weight: Array) -> float:
    """gamma="scale" with a weighted variance: 1 / (d · Var_w(X)), a weight counting as repeats.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify.kernels import resolve_gamma
    >>> X = np.array([[0.0], [1.0], [3.0]])
    >>> repeated = np.array([[0.0], [0.0], [1.0], [3.0]])
    >>> bool(np.isclose(_weighted_scale_gamma(X, np.array([2.0, 1.0, 1.0])),
    ...                 resolve_gamma("scale", repeated)))
    True
    """
    w = sample_weight / sample_weight.sum()
    mean = float(w @ X.mean(axis=1))
    var = float(w @ ((X - mean) ** 2).mean(axis=1))
    return 1.0 / (X.shape[1] * var) if var > 0 else 1.0


def _fit_start(
    X: Array,
    y: NDArray[Any],
    formulation: Formulation,
    kernel: Kernel,
    n_expansion: int,
    init: str,
    solver: str,
    solver_tol: float,
    max_iter: int,
    tol: float,
    seed: int,
    callback: Callable[..., Any] | None,
    verbose: int,
    problem: str = "",
    plateau: tuple[int, float] | None = None,
) -> dict[str, Any]:
    """One start of one binary problem; module level so joblib can ship it.

    ``problem`` names it in the ``verbose=2`` lines, in `IterationInfo` and in
    the convergence warning; ``verbose=1`` prints one line when it is done.
    ``plateau`` is `minimize_marginal`'s.
    """
    Z0 = initial_expansion_vectors(X, n_expansion, init, seed, y=y)
    marginal = make_marginal(formulation, X, y, kernel, n_expansion, solver, solver_tol)
    res = minimize_marginal(marginal, Z0, max_iter=max_iter, tol=tol, callback=callback,
                            verbose=verbose >= 2, problem=problem, plateau=plateau)
    if verbose:
        print(problem_line(problem, res), flush=True)
    return {
        "Z": res.Z,
        "value": res.evaluation.value,
        "coef": np.asarray(res.evaluation.coef, dtype=float),
        "intercept": res.evaluation.intercept,
        "n_iter": res.n_iter,
        "history": res.history,
        "problem": problem,
        "result": res,
    }


def _problem_name(classes: NDArray[Any], k: int, n_problems: int, j: int, n_init: int) -> str:
    """How a fit's binary problem and start are named in progress lines and warnings.

    Examples
    --------
    >>> import numpy as np
    >>> _problem_name(np.array(["a", "b", "c"]), 1, 3, 0, 1)
    "class 'b' vs rest"
    >>> _problem_name(np.array([0, 1]), 0, 1, 1, 2)
    'start 2'
    """
    parts = [f"class {classes.tolist()[k]!r} vs rest"] if n_problems > 1 else []
    if n_init > 1:
        parts.append(f"start {j + 1}")
    return ", ".join(parts)


class KernelMachineMixin(VersionedPickleMixin):
    """Prediction of a fitted kernel machine τ(x) = Σ_j β_j k(z_j, x) + b.

    Needs the fitted attributes ``kernel_``, ``expansion_vectors_`` (Nz, d),
    ``expansion_coef_`` (n_outputs, Nz), ``intercept_`` (n_outputs,) and
    ``classes_``; one output is a binary decision, several are one per class.

    Also gives the feature map `transform` (x ↦ k(x, z_j), one column
    per XV) and pickling that records the sparsify version and refuses a model
    saved by another major.minor version (`VersionedPickleMixin`).
    """

    def _kernel_features(self, X: Array) -> Array:
        """k(x_i, z_j) for a block of validated rows; a machine with another kernel overrides it."""
        return self.kernel_(X, self.expansion_vectors_)

    def _block_rows(self) -> int:
        """Rows per block of `transform` and `decision_function`: about 4 million kernel values."""
        return max(1, 2**22 // max(1, len(self.expansion_vectors_)))

    def transform(self, X: ArrayLike) -> Array:
        """The feature map x ↦ (k(x, z_1), …, k(x, z_Nz)): one column per XV.

        The model is linear in these features: ``transform(X) @ expansion_coef_.T
        + intercept_`` is `decision_function` (one column per output; ravel
        it for one output), so prediction can run wherever a linear model runs.
        A one-vs-rest model returns the stacked XVs of all its binary problems,
        per-class blocks in ``expansion_vectors_`` order, and each row of
        ``expansion_coef_`` is zero outside its own block.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_expansion_vectors)
            Computed in row blocks so memory stays bounded.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.datasets import make_moons
        >>> from sparsify import SparseSVC
        >>> X, y = make_moons(60, noise=0.1, random_state=0)
        >>> clf = SparseSVC(n_expansion=4, gamma=2.0, max_iter=10, random_state=0).fit(X, y)
        >>> features = clf.transform(X)
        >>> features.shape
        (60, 4)
        >>> scores = features @ clf.expansion_coef_.T + clf.intercept_
        >>> bool(np.allclose(scores.ravel(), clf.decision_function(X)))
        True
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        out = np.empty((len(X), len(self.expansion_vectors_)))
        for rows in gen_batches(len(X), self._block_rows()):
            out[rows] = self._kernel_features(X[rows])
        return out

    def fit_transform(self, X: ArrayLike, y: ArrayLike | None = None, **fit_params: Any) -> Array:
        """Fit, then return `transform` of the training inputs.

        Returns
        -------
        ndarray of shape (n_samples, n_expansion_vectors)
        """
        return self.fit(X, y, **fit_params).transform(X)  # type: ignore[attr-defined]

    def decision_function(self, X: ArrayLike) -> Array:
        """Decision values τ(x) = Σ_j β_j k(z_j, x) + b.

        Computed in row blocks so memory stays bounded; the cost is proportional
        to the number of XVs.

        Returns
        -------
        ndarray of shape (n_samples,) for two classes, else (n_samples, n_classes)
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        out = np.empty((len(X), len(self.intercept_)))
        for rows in gen_batches(len(X), self._block_rows()):
            out[rows] = self._kernel_features(X[rows]) @ self.expansion_coef_.T
        out += self.intercept_
        return out.ravel() if out.shape[1] == 1 else out

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        """Predict class labels.

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        scores = self.decision_function(X)
        idx = (scores > 0).astype(int) if scores.ndim == 1 else scores.argmax(1)
        return self.classes_[idx]

    def __sklearn_tags__(self):  # type: ignore[no-untyped-def]
        tags = super().__sklearn_tags__()  # type: ignore[misc]
        # transform makes it a transformer as well (a feature map of float64 columns)
        tags.transformer_tags = TransformerTags(preserves_dtype=["float64"])
        return tags


class SparseKernelClassifier(KernelMachineMixin, ClassifierMixin, BaseEstimator):
    """Shared machinery of the sparse kernel classifiers (binary or one-vs-rest).

    Subclasses set `formulation_name` and implement
    `_formulation_params`; a ratio ``n_expansion`` refers to the full SVM
    with the estimator's ``C`` (1.0 if it has none). A subclass with per-point
    costs (`SparseSVC`) takes ``weights`` in `_formulation_params` and
    calls `_fit` with its ``sample_weight``; one with a ``probability``
    parameter gets Platt scaling. Not for direct use.
    """

    formulation_name: ClassVar[str] = ""

    #: Folds of the internal cross-validation that gives Platt scaling its
    #: out-of-fold decision values (libsvm's and so SVC's number).
    n_probability_folds: ClassVar[int] = 5

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "n_expansion": [
            Interval(Integral, 1, None, closed="left"),
            Interval(RealNotInt, 0.0, 1.0, closed="right"),
        ],
        "kernel": [str, Kernel],
        "gamma": [StrOptions({"scale", "auto"}), Interval(Real, 0.0, None, closed="neither")],
        "degree": [Interval(Integral, 1, None, closed="left")],
        "coef0": [Real],
        "init": [StrOptions({"auto", *CLASSIFIER_INIT_METHODS})],
        "n_init": [Interval(Integral, 1, None, closed="left")],
        "solver": [str],
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "tol": [Interval(Real, 0.0, None, closed="left")],
        "solver_tol": [Interval(Real, 0.0, None, closed="neither")],
        "random_state": ["random_state"],
        "n_jobs": [Integral, None],
        "verbose": ["verbose"],
        "callback": [callable, None],
    }

    def _formulation_params(self, weights: Array | None = None) -> dict[str, Any]:
        """The formulation's hyperparameters; ``weights`` (shape (N,)) scale the per-point costs."""
        raise NotImplementedError

    def _plateau(self, n_samples: int) -> tuple[int, float] | None:
        """`minimize_marginal`'s plateau test for a fit on ``n_samples`` points (none here)."""
        return None

    def fit(self, X: ArrayLike, y: ArrayLike) -> SparseKernelClassifier:
        """Fit the sparse kernel machine.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,)
            Class labels, of any type.

        Returns
        -------
        self
        """
        return self._fit(X, y)

    def _set_expansions(self, kernel: Kernel, fits: list[dict[str, Any]],
                        full_n_support: NDArray[np.intp] | None) -> None:
        """The fitted attributes from one fit per binary problem (keys Z, coef, intercept,
        n_iter, history, value), their XVs stacked in problem order."""
        self.kernel_ = kernel
        sizes = [len(fit["Z"]) for fit in fits]
        self.expansion_vectors_ = np.vstack([fit["Z"] for fit in fits])
        coef = np.zeros((len(fits), sum(sizes)))
        for k, (fit, start) in enumerate(zip(fits, np.cumsum([0, *sizes[:-1]]), strict=True)):
            coef[k, start:start + sizes[k]] = fit["coef"]
        self.expansion_coef_ = coef
        self.intercept_ = np.array([float(fit["intercept"]) for fit in fits])
        self.n_expansion_ = np.array(sizes)
        self.n_iter_ = np.array([fit["n_iter"] for fit in fits])
        self.objective_history_ = [fit["history"] for fit in fits]
        self.objective_ = np.array([fit["value"] for fit in fits])
        self.full_n_support_ = full_n_support
        for attr in ("probA_", "probB_"):  # a refit without probability drops the old ones
            self.__dict__.pop(attr, None)

    def _fit(
        self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
    ) -> SparseKernelClassifier:
        """`fit` with per-point weights class_weight[y_i] · sample_weight_i (when either is set).

        A point of weight 0 is left out before anything else (the initial XVs,
        gamma="scale", the number of distinct points), so it is the same as
        not passing it; every other weight multiplies the point's cost.
        """
        self._validate_params()
        X, codes = validate_classification(self, X, y)
        weighted = _point_weights(self, codes, sample_weight, getattr(self, "class_weight", None))
        weights = sw = None
        if hasattr(self, "class_weight"):
            self.class_weight_ = np.ones(len(self.classes_)) if weighted is None else weighted[2]
        if weighted is not None:
            weights, sw, _ = weighted
            keep = weights > 0
            self._check_weighted_classes(codes[keep])
            X, codes, weights, sw = X[keep], codes[keep], weights[keep], sw[keep]
        gamma = self.gamma
        if sample_weight is not None and isinstance(gamma, str) and gamma == "scale":
            # a weight counts as repeats of the point, for the kernel's scale too
            gamma = _weighted_scale_gamma(X, sw)
        kernel = make_kernel(self.kernel, X, gamma, self.degree, self.coef0)
        formulation = make_formulation(
            self.formulation_name,
            **(self._formulation_params() if weights is None
               else self._formulation_params(weights)))
        _check_solver(self.solver)
        targets = (
            [np.where(codes == 1, 1, -1)]
            if len(self.classes_) == 2
            else [np.where(codes == k, 1, -1) for k in range(len(self.classes_))]
        )
        n_exp = self.n_expansion if isinstance(self.n_expansion, Integral) else float(
            self.n_expansion)
        n_jobs = self.n_jobs if len(targets) * self.n_init > 1 else None
        nz_nsv = Parallel(n_jobs=n_jobs if len(targets) > 1 else None)(
            delayed(_n_expansion)(X, t, kernel, n_exp, getattr(self, "C", 1.0), weights)
            for t in targets
        )
        rng = check_random_state(self.random_state)
        seeds = rng.randint(np.iinfo(np.int32).max, size=(len(targets), self.n_init))
        # one-vs-rest: the one class is about 1/K of the points, too few for a random start
        init = self.init if self.init != "auto" else "balanced" if len(targets) > 1 else "random"
        # every (problem, start) pair is one job; the start with the lowest W wins
        runs = Parallel(n_jobs=n_jobs)(
            delayed(_fit_start)(
                X, targets[k], formulation, kernel, nz_nsv[k][0], init, self.solver,
                self.solver_tol, self.max_iter, self.tol, int(seeds[k, j]), self.callback,
                self.verbose, _problem_name(self.classes_, k, len(targets), j, self.n_init),
                self._plateau(len(X)),
            )
            for k in range(len(targets))
            for j in range(self.n_init)
        )
        fits = [
            min(runs[k * self.n_init:(k + 1) * self.n_init], key=lambda run: run["value"])
            for k in range(len(targets))
        ]
        warn_if_not_converged(type(self).__name__, [(f["problem"], f["result"]) for f in fits],
                              self.max_iter)
        self._set_expansions(kernel, fits, None if nz_nsv[0][1] is None
                             else np.array([nsv for _, nsv in nz_nsv]))
        if getattr(self, "probability", False):
            # drawn after the main fit's seeds, so that fit is the same with or without it
            cv_seed = int(rng.randint(np.iinfo(np.int32).max))
            self.probA_, self.probB_ = self._platt_scaling(
                X, codes, targets, kernel, weights, sw, init, cv_seed)
        return self

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
        X: Array,
        codes: NDArray[np.intp],
        targets: list[NDArray[np.int_]],
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
        that class's sign as decision value, as libsvm does.
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
        folds = list(StratifiedKFold(n_folds, shuffle=True, random_state=seed).split(X, codes))
        rng = np.random.RandomState(seed)
        seeds = rng.randint(np.iinfo(np.int32).max, size=(len(folds), len(targets)))
        jobs, slots = [], []
        for i, (train, _) in enumerate(folds):
            params = (self._formulation_params() if weights is None
                      else self._formulation_params(weights[train]))
            formulation = make_formulation(self.formulation_name, **params)
            n_distinct = len(np.unique(X[train], axis=0))
            for k, t in enumerate(targets):
                if len(np.unique(t[train])) < 2:
                    continue  # filled with the one class's sign below
                nz = min(int(self.n_expansion_[k]), n_distinct)
                jobs.append(delayed(_fit_start)(
                    X[train], t[train], formulation, kernel, nz, init, self.solver,
                    self.solver_tol, self.max_iter, self.tol, int(seeds[i, k]), None, 0, "",
                    self._plateau(len(train))))
                slots.append((i, k))
        n_jobs = self.n_jobs if len(jobs) > 1 else None
        runs = dict(zip(slots, Parallel(n_jobs=n_jobs)(jobs), strict=True))
        decision = np.empty((len(X), len(targets)))
        for i, (train, test) in enumerate(folds):
            for k, t in enumerate(targets):
                run = runs.get((i, k))
                if run is None:
                    decision[test, k] = float(t[train][0])
                else:
                    decision[test, k] = kernel(X[test], run["Z"]) @ run["coef"] + run["intercept"]
        ab = [fit_platt(decision[:, k], t > 0, sample_weight) for k, t in enumerate(targets)]
        return np.array([a for a, _ in ab]), np.array([b for _, b in ab])

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
        return s / total  # type: ignore[no-any-return]
