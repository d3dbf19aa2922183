"""scikit-learn estimators built on the direct sparse method.

`SparseKernelClassifier` holds what every sparse classifier shares
(validation, the number of XVs, one-vs-rest in parallel, stacked XVs for
prediction); `SparseSVC` is the sparse large margin classifier (SLMC).
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from joblib import Parallel, delayed
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.preprocessing import LabelEncoder
from sklearn.svm import SVC
from sklearn.utils import TransformerTags, check_random_state, gen_batches
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from sparsify.formulation import Formulation, make_formulation
from sparsify.kernels import RBF, Kernel, Linear, Polynomial, make_kernel
from sparsify.marginal import make_marginal
from sparsify.optimize import CLASSIFIER_INIT_METHODS, initial_expansion_vectors, minimize_marginal
from sparsify.persistence import VersionedPickleMixin
from sparsify.plugins import get_registry

__all__ = [
    "KernelMachineMixin",
    "SparseKernelClassifier",
    "SparseSVC",
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
    X: Array, y: NDArray[Any], kernel: Kernel, n_expansion: int | float, full_C: float
) -> tuple[int, int | None]:
    """Nz of one binary problem, and the full SVM's NSV when ``n_expansion`` is a ratio."""
    n_distinct = len(np.unique(X, axis=0))
    if isinstance(n_expansion, float):
        full_nsv = int(full_svm(kernel, full_C).fit(X, y).n_support_.sum())
        return min(max(1, round(n_expansion * full_nsv)), n_distinct), full_nsv
    if n_expansion > n_distinct:
        raise ValueError(
            f"n_expansion={n_expansion} asks for more expansion vectors than the {n_distinct} "
            "distinct training points; lower n_expansion or pass a ratio in (0, 1]."
        )
    return n_expansion, None


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
) -> dict[str, Any]:
    """One start of one binary problem; module level so joblib can ship it."""
    Z0 = initial_expansion_vectors(X, n_expansion, init, seed, y=y)
    marginal = make_marginal(formulation, X, y, kernel, n_expansion, solver, solver_tol)
    res = minimize_marginal(marginal, Z0, max_iter=max_iter, tol=tol, callback=callback,
                            verbose=verbose)
    return {
        "Z": res.Z,
        "value": res.evaluation.value,
        "coef": np.asarray(res.evaluation.coef, dtype=float),
        "intercept": res.evaluation.intercept,
        "n_iter": res.n_iter,
        "history": res.history,
    }


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
        block = max(1, 2**22 // max(1, len(self.expansion_vectors_)))
        for rows in gen_batches(len(X), block):
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
        block = max(1, 2**22 // max(1, len(self.expansion_vectors_)))
        for rows in gen_batches(len(X), block):
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
    with the estimator's ``C`` (1.0 if it has none). Not for direct use.
    """

    formulation_name: ClassVar[str] = ""

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

    def _formulation_params(self) -> dict[str, Any]:
        raise NotImplementedError

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
        self._validate_params()
        X, codes = validate_classification(self, X, y)
        kernel = make_kernel(self.kernel, X, self.gamma, self.degree, self.coef0)
        formulation = make_formulation(self.formulation_name, **self._formulation_params())
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
            delayed(_n_expansion)(X, t, kernel, n_exp, getattr(self, "C", 1.0)) for t in targets
        )
        rng = check_random_state(self.random_state)
        seeds = rng.randint(np.iinfo(np.int32).max, size=(len(targets), self.n_init))
        # one-vs-rest: the one class is about 1/K of the points, too few for a random start
        init = self.init if self.init != "auto" else "balanced" if len(targets) > 1 else "random"
        # every (problem, start) pair is one job; the start with the lowest W wins
        # joblib's own progress lines ("Done 3 out of 10") when verbose
        runs = Parallel(n_jobs=n_jobs, verbose=10 * self.verbose if n_jobs else 0)(
            delayed(_fit_start)(
                X, targets[k], formulation, kernel, nz_nsv[k][0], init, self.solver,
                self.solver_tol, self.max_iter, self.tol, int(seeds[k, j]), self.callback,
                self.verbose,
            )
            for k in range(len(targets))
            for j in range(self.n_init)
        )
        fits = [
            min(runs[k * self.n_init:(k + 1) * self.n_init], key=lambda run: run["value"])
            for k in range(len(targets))
        ]
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
        self.full_n_support_ = (
            None if nz_nsv[0][1] is None else np.array([nsv for _, nsv in nz_nsv])
        )
        return self


class SparseSVC(SparseKernelClassifier):
    """Sparse large margin classifier (SLMC): an SVM with exactly Nz optimised XVs.

    The direct sparse method (Wu, Schölkopf & Bakır 2006) on the soft-margin
    SVM: the weight vector is constrained to ``w = Σ_j β_j φ(z_j)`` and the XVs
    ``z_j`` are moved by L-BFGS on the marginal function W(Z).

    Parameters
    ----------
    n_expansion : int or float, default=0.1
        Number of expansion vectors Nz: an int is a count; a float in (0, 1] is
        a ratio of the full SVM's number of support vectors (the paper's
        Nz/NSV), per binary problem.
    C : float, default=1.0
        Regularisation, as in `sklearn.svm.SVC`.
    kernel : str or Kernel, default="rbf"
        "rbf", "poly", "linear", a plugin's kernel, names joined by "+" for a
        sum, or a `sparsify.Kernel` instance.
    gamma : {"scale", "auto"} or float, default="scale"
        Kernel coefficient for "rbf" and "poly" ("scale" is 1 / (d · Var(X))).
    degree : int, default=3
        Degree of "poly".
    coef0 : float, default=0.0
        Constant of "poly".
    init : {"auto", "random", "balanced", "kmeans"}, default="auto"
        Initial XVs: a random subset of the distinct training points
        ("random"), the same drawn evenly from the two classes of each binary
        problem ("balanced"), or k-means centres. "auto" is "balanced" for the
        one-vs-rest problems of more than two classes, whose one class would
        get only about 1/K of the XVs from "random", and "random" for two
        classes (see `sparsify.optimize.initial_expansion_vectors`).
    n_init : int, default=1
        Number of starts per binary problem (different initial XVs); the one
        with the lowest W(Z), the training objective, is kept. W is not convex
        in Z, so a few starts avoid poor local minima, as in k-means.
    solver : str, default="auto"
        "auto" takes the SVM's exact fast path (a dedicated dual solver,
        warm-started between L-BFGS evaluations); a cvxpy backend name
        ("clarabel", "ecos", "osqp") solves the generic cvxpy declaration
        instead, the fast path's reference.
    max_iter : int, default=200
        Maximum L-BFGS iterations per binary problem (0 keeps the initial XVs).
    tol : float, default=1e-6
        Stop when an iteration lowers W by less than this relative amount.
    solver_tol : float, default=1e-8
        Accuracy of each convex solve.
    random_state : int, RandomState instance or None, default=None
        Seed of the initial XVs.
    n_jobs : int or None, default=None
        Parallel jobs for one-vs-rest (joblib).
    verbose : int, default=0
        Print L-BFGS progress when > 0.
    callback : callable or None, default=None
        Called with a `sparsify.optimize.IterationInfo` after each
        iteration; returning True stops that problem's optimisation.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    expansion_vectors_ : ndarray of shape (sum of Nz, n_features)
        The XVs of all binary problems, stacked.
    expansion_coef_ : ndarray of shape (n_problems, sum of Nz)
        β of each binary problem on the stacked XVs (zero outside its own block).
    intercept_ : ndarray of shape (n_problems,)
    n_expansion_ : ndarray of shape (n_problems,)
        Nz of each binary problem.
    n_iter_ : ndarray of shape (n_problems,)
    objective_history_ : list of ndarray
        W after each L-BFGS iteration, per binary problem (of the start kept).
    objective_ : ndarray of shape (n_problems,)
        W(Z) at the kept XVs, per binary problem.
    full_n_support_ : ndarray of shape (n_problems,) or None
        The full SVM's NSV when ``n_expansion`` is a ratio.
    kernel_ : Kernel
        The resolved kernel.

    Examples
    --------
    >>> from sparsify.datasets import load_banana
    >>> from sparsify import SparseSVC
    >>> X, y, X_test, y_test = load_banana()
    >>> clf = SparseSVC(n_expansion=10, C=10.0, gamma=1.0, random_state=0).fit(X, y)
    >>> clf.expansion_vectors_.shape
    (10, 2)
    >>> bool(clf.score(X_test, y_test) > 0.85)
    True
    """

    formulation_name = "svm"

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **SparseKernelClassifier._parameter_constraints,
        "C": [Interval(Real, 0.0, None, closed="neither")],
    }

    def __init__(
        self,
        n_expansion: int | float = 0.1,
        *,
        C: float = 1.0,
        kernel: str | Kernel = "rbf",
        gamma: float | str = "scale",
        degree: int = 3,
        coef0: float = 0.0,
        init: str = "auto",
        n_init: int = 1,
        solver: str = "auto",
        max_iter: int = 200,
        tol: float = 1e-6,
        solver_tol: float = 1e-8,
        random_state: int | np.random.RandomState | None = None,
        n_jobs: int | None = None,
        verbose: int = 0,
        callback: Callable[..., Any] | None = None,
    ) -> None:
        self.n_expansion = n_expansion
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.init = init
        self.n_init = n_init
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.solver_tol = solver_tol
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.callback = callback

    def _formulation_params(self) -> dict[str, Any]:
        return {"C": self.C}
