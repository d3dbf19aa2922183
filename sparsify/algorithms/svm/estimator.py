"""`SparseSVC`: the sparse large margin classifier (SLMC), the SVM with Nz optimised XVs."""

from __future__ import annotations

from collections.abc import Callable
from numbers import Real
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.exceptions import NotFittedError
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.metaestimators import available_if

from sparsify.algorithms.svm.formulation import SVM
from sparsify.core.classifier import SparseKernelClassifier
from sparsify.core.estimator import N_ITER_NO_CHANGE_CONSTRAINT
from sparsify.core.model_rule import ModelFileRule
from sparsify.kernels import Kernel

__all__ = ["SparseSVC"]

Array = NDArray[np.float64]


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
    loss : {"hinge", "squared_hinge"}, default="hinge"
        The loss of each point's margin slack ξ_i: C ξ_i (the SVM of
        `sklearn.svm.SVC`) or C ξ_i² (the L2-SVM, `sklearn.svm.LinearSVC`'s
        default), the latter solved exactly by a finite Newton method
        (`sparsify.algorithms.svm.squared_hinge`). A ratio ``n_expansion`` is
        of the hinge-loss SVM's support vectors either way. Both losses fit
        dask collections (docs/scale-out.md).
    class_weight : dict, "balanced" or None, default=None
        As in `sklearn.svm.SVC`: point i's cost is C · class_weight[y_i] ·
        sample_weight_i. A dict maps labels to weights ≥ 0 (labels left out
        weigh 1); "balanced" gives class c the weight N / (n_classes · N_c)
        from the class counts of y. One-vs-rest problems (more than two
        classes) keep each point's weight from its own label in every problem.
    probability : bool, default=False
        Fit Platt's sigmoid per binary problem on decision values from an
        internal stratified 5-fold cross-validation (five more sparse fits per
        problem, seeded by ``random_state``), as ``SVC(probability=True)``;
        enables `predict_proba` and `predict_log_proba`. The model itself is
        the same as with ``probability=False``.
    n_iter_no_change : int, "auto" or None, default="auto"
        Also stop when the last ``n_iter_no_change`` iterations together
        lowered W by less than 1/√N of it, W's own sampling error: W has
        levelled off (`sparsify.core.optimize.sampling_plateau`). "auto" is 3
        iterations from N = 5000 points on and no such test below; None never.
    continuation : float in (0, 1) or None, default=None
        Continuation over the data: fit first on a random sample of this
        fraction of the training points (stratified by class, each weight times
        1 / continuation where the formulation weighs its points) until W levels
        off on it, then on all points from its XVs and solution
        (`sparsify.core.continuation`). It pays where a fit takes many costly
        iterations: a declared formulation at 10⁵ points. ``max_iter`` bounds
        each phase, ``n_iter_`` counts both. None: all points from the start; a
        warm start skips the sample.
    kernel : str or Kernel, default="rbf"
        "rbf", "poly", "linear", a plugin's kernel, names joined by "+" for a
        sum, or a `sparsify.Kernel` instance.
    gamma : {"scale", "auto"} or float, default="scale"
        Kernel coefficient for "rbf" and "poly": "scale" is 1 / (d · Var(X)),
        with Var weighted by ``sample_weight`` where `fit` takes one; "auto" is
        1 / d.
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
        classes (see `sparsify.core.optimize.initial_expansion_vectors`).
    n_init : int, default=1
        Number of starts per problem (different initial XVs, in parallel with
        ``n_jobs``); the one with the lowest W(Z), the training objective, is
        kept. W is not convex in Z, so a few starts avoid poor local minima, as
        in k-means. At most 1000: each start is a whole fit.
    warm_start : bool, default=False
        When True, `fit` starts from the last fit's XVs and solution, as
        scikit-learn's ``warm_start``: at a larger Nz the new XVs go where the
        last model's loss is largest, at a smaller one the XVs of largest |β|
        stay; one start (`sparsify.core.warm`). A search over C, γ or Nz refits
        this way (`sparsify.SparseSearchCV`). Where the last fit had another
        number of problems or features, the start is cold.
    solver : str, default="auto"
        "auto" takes the SVM's exact fast path (a dedicated dual solver,
        warm-started between L-BFGS evaluations); a backend name
        ("structured", "clarabel", "ecos", "osqp", "scs") solves the generic
        declaration instead, the fast path's reference.
    max_iter : int, default=200
        Maximum L-BFGS iterations per problem (0 keeps the initial XVs).
    tol : float, default=1e-6
        Stop when an iteration lowers W by less than this relative amount.
    solver_tol : float, default=1e-8
        Accuracy of each convex solve.
    random_state : int, RandomState instance or None, default=None
        Seed of the initial XVs.
    n_jobs : int or None, default=None
        Parallel jobs over the problems (one-vs-rest) and starts (joblib).
    verbose : int, default=0
        1: one line per finished problem (its name, iterations, W, seconds); 2:
        also one line per L-BFGS iteration, naming its problem. Problems that
        ``max_iter`` stops give one `sklearn.exceptions.ConvergenceWarning`.
    callback : callable or None, default=None
        Called with a `sparsify.core.optimize.IterationInfo` after each
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
    class_weight_ : ndarray of shape (n_classes,)
        The weight of each class (ones without ``class_weight``).
    probA_, probB_ : ndarray of shape (n_problems,)
        Platt's sigmoid per binary problem, P(+1 | f) = 1 / (1 + exp(A f + B))
        with scikit-learn's signs; only with ``probability=True``.

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

    A rare class made to count (1 positive in 10), and probabilities:

    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> X, y = make_classification(400, n_features=4, weights=[0.9], random_state=0)
    >>> clf = SparseSVC(n_expansion=5, class_weight="balanced", probability=True,
    ...                 max_iter=20, random_state=0).fit(X, y)
    >>> clf.class_weight_.round(2).tolist()
    [0.56, 4.65]
    >>> proba = clf.predict_proba(X[:3])
    >>> proba.shape, bool(np.allclose(proba.sum(axis=1), 1.0))
    ((3, 2), True)
    """

    formulation_class = SVM
    weighted_points = True

    default_params: ClassVar[dict[str, Any]] = {"n_expansion": 0.1, "init": "auto"}

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **SparseKernelClassifier._parameter_constraints,
        "C": [Interval(Real, 0.0, None, closed="neither")],
        "loss": [StrOptions({"hinge", "squared_hinge"})],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "probability": ["boolean"],
        "n_iter_no_change": N_ITER_NO_CHANGE_CONSTRAINT,
    }

    def __init__(
        self,
        n_expansion: int | float = 0.1,
        *,
        C: float = 1.0,
        loss: str = "hinge",
        class_weight: dict[Any, float] | str | None = None,
        probability: bool = False,
        n_iter_no_change: int | str | None = "auto",
        continuation: float | None = None,
        kernel: str | Kernel = "rbf",
        gamma: float | str = "scale",
        degree: int = 3,
        coef0: float = 0.0,
        init: str = "auto",
        n_init: int = 1,
        warm_start: bool = False,
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
        self.loss = loss
        self.class_weight = class_weight
        self.probability = probability
        self.n_iter_no_change = n_iter_no_change
        self.continuation = continuation
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.init = init
        self.n_init = n_init
        self.warm_start = warm_start
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.solver_tol = solver_tol
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.callback = callback

    def _formulation_params(self, weights: Array | None = None) -> dict[str, Any]:
        return {"C": self.C if weights is None else self.C * weights, "loss": self.loss}

    def fit(
        self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
    ) -> SparseSVC:
        """Fit the sparse large margin classifier.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,)
            Class labels, of any type.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights ≥ 0 that multiply each point's cost C (with
            ``class_weight``), as in `sklearn.svm.SVC`. A weight of 0 leaves the
            point out; an integer weight is the same as repeating the point
            (gamma="scale" then uses the weighted variance of X, and the full
            SVM of a ratio ``n_expansion`` gets the same weights).

        Returns
        -------
        self

        Notes
        -----
        With X and y dask arrays (or a dask DataFrame and Series) and a
        ``dask.distributed`` Client, the rows stay on the workers and each
        evaluation of W(Z) is a map over their row blocks (docs/scale-out.md).
        """
        return self._fit(X, y, sample_weight)  # type: ignore[return-value]

    def model_file_rule(self) -> ModelFileRule:
        """How a model file describes this SVM: `SparseKernelClassifier.model_file_rule`'s rule,
        with Platt's probabilities ("platt") when fitted with ``probability=True``.

        Returns
        -------
        dict
        """
        rule = super().model_file_rule()
        fitted = getattr(self, "probA_", None) is not None and getattr(self, "probB_", None) \
            is not None
        return {**rule, "probability": "platt" if fitted else None}

    def _check_proba(self) -> bool:
        if not self.probability:
            raise AttributeError(
                "predict_proba is not available when probability=False; fit with "
                "SparseSVC(probability=True)."
            )
        return True

    @available_if(_check_proba)
    def predict_proba(self, X: ArrayLike) -> Array:
        """Class probabilities by Platt scaling of the decision values.

        Two classes: P(classes_[1]) = 1 / (1 + exp(A f + B)) for the decision
        value f. More classes: that sigmoid per one-vs-rest problem, the K
        values normalised to sum to 1 (as
        `sklearn.calibration.CalibratedClassifierCV` does with one-vs-rest
        sigmoids). As with SVC, the class of highest probability can differ from
        `predict`'s for points near the decision boundary.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Columns in ``classes_`` order.
        """
        decision = self.decision_function(X)
        if not hasattr(self, "probA_"):
            raise NotFittedError(
                "predict_proba is not available when fitted with probability=False; fit "
                "again with probability=True."
            )
        return self._proba_from_decision(decision)

    @available_if(_check_proba)
    def predict_log_proba(self, X: ArrayLike) -> Array:
        """Logarithm of `predict_proba`.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        with np.errstate(divide="ignore"):  # a probability of 0 is a log of -inf
            return np.log(self.predict_proba(X))  # type: ignore[no-any-return]
