"""Sparse kernel logistic regression: the direct sparse method on the "klr" formulation.

Two classes give one logistic output; K > 2 classes one joint softmax problem
with K outputs (β of shape (Nz, K)), not one-vs-rest.
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import expit, log_expit, log_softmax
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_array

from sparsify.algorithms.klr.formulation import KLR
from sparsify.core.classifier import SparseKernelClassifier, validate_classification
from sparsify.core.estimator import (
    N_ITER_NO_CHANGE_CONSTRAINT,
    KernelMachineMixin,
    SparseKernelEstimator,
)
from sparsify.core.model_rule import ModelFileRule
from sparsify.core.optimize import CLASSIFIER_INIT_METHODS
from sparsify.kernels import Kernel

__all__ = ["SparseKernelLogisticRegression"]

Array = NDArray[np.float64]


class LogisticMixin(KernelMachineMixin):
    """Probabilities of a fitted logistic kernel machine: sigmoid of τ, or softmax of τ_k."""

    def predict_log_proba(self, X: ArrayLike) -> Array:
        """Log class probabilities, shape (n_samples, n_classes), columns in ``classes_`` order."""
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return np.column_stack([log_expit(-scores), log_expit(scores)])
        return log_softmax(scores, axis=1)

    def predict_proba(self, X: ArrayLike) -> Array:
        """Class probabilities, shape (n_samples, n_classes); rows sum to 1."""
        scores = self.decision_function(X)
        if scores.ndim == 1:
            p = expit(scores)
            return np.column_stack([1.0 - p, p])
        return np.exp(log_softmax(scores, axis=1))


class SparseKernelLogisticRegression(LogisticMixin, SparseKernelClassifier):
    """Kernel logistic regression with exactly Nz optimised expansion vectors.

    Minimises (λ/2)‖w‖² + (1/N) Σ_i log-loss_i over β, b and the XVs Z, with
    ``w = Σ_j β_j φ(z_j)`` (Wu, Schölkopf & Bakır 2006, on the KLR of Zhu &
    Hastie 2005). For fixed Z the problem is an exponential-cone program; L-BFGS
    moves Z with the gradient of Lemma 1. By default (``solver="auto"``) the
    fixed-Z problem is solved by Newton's method; a cvxpy backend name solves it
    as an exponential-cone program instead. Multi-class data are one joint
    softmax problem.

    Parameters
    ----------
    n_expansion : int or float, default=10
        Number of expansion vectors Nz: an int is a count; a float in (0, 1] is
        a ratio of the full SVM's number of support vectors (the paper's
        Nz/NSV), per binary problem.
    lam : float, default=1e-3
        Regularisation λ > 0. With a linear kernel and Nz ≥ rank of X this is
        `sklearn.linear_model.LogisticRegression` with ``C = 1 / (λ N)``.
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
    init : {"random", "balanced", "kmeans"} or array-like (Nz, n_features), default="random"
        Initial XVs: a random subset of the distinct training points, the same
        drawn evenly from the classes, k-means centres, or given points (for
        example an import vector machine's import vectors, to refine them;
        ``n_expansion`` is then ignored).
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
        "auto" solves each fixed-Z problem by the formulation's exact fast path
        (damped Newton on the whitened coefficients, warm-started; no cvxpy);
        "clarabel" or "ecos" force the generic exponential-cone path through
        cvxpy (OSQP cannot solve it).
    max_iter : int, default=100
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
    expansion_vectors_ : ndarray of shape (Nz, n_features)
    expansion_coef_ : ndarray of shape (n_outputs, Nz)
        β per output (one output for two classes, else one per class).
    intercept_ : ndarray of shape (n_outputs,)
    objective_ : ndarray of shape (1,)
        H at the final XVs: the regularised mean log-loss (W(Z) / N), of the one
        (joint) problem.
    objective_history_ : list of one ndarray
        H after each L-BFGS iteration.
    n_expansion_ : ndarray of shape (1,)
        Nz.
    n_iter_ : ndarray of shape (1,)
        L-BFGS iterations of the start kept.
    kernel_ : Kernel

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from sparsify.algorithms.klr.estimator import SparseKernelLogisticRegression
    >>> X, y = make_moons(80, noise=0.1, random_state=0)
    >>> clf = SparseKernelLogisticRegression(n_expansion=5, lam=1e-3, gamma=2.0, max_iter=10,
    ...                                      random_state=0).fit(X, y)
    >>> clf.predict_proba(X[:2]).sum(axis=1).round(6).tolist()
    [1.0, 1.0]
    >>> bool(clf.score(X, y) > 0.9)
    True
    """

    formulation_class = KLR

    default_params: ClassVar[dict[str, Any]] = {"init": "random", "max_iter": 100}

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **SparseKernelClassifier._parameter_constraints,
        "n_expansion": [Interval(Integral, 1, None, closed="left")],
        "lam": [Interval(Real, 0.0, None, closed="neither")],
        "init": [StrOptions(set(CLASSIFIER_INIT_METHODS)), "array-like"],
        "n_iter_no_change": N_ITER_NO_CHANGE_CONSTRAINT,
    }

    def __init__(
        self,
        n_expansion: int | float = 10,
        *,
        lam: float = 0.001,
        n_iter_no_change: int | str | None = "auto",
        continuation: float | None = None,
        kernel: str | Kernel = "rbf",
        gamma: float | str = "scale",
        degree: int = 3,
        coef0: float = 0.0,
        init: str = "random",
        n_init: int = 1,
        warm_start: bool = False,
        solver: str = "auto",
        max_iter: int = 100,
        tol: float = 1e-6,
        solver_tol: float = 1e-8,
        random_state: int | np.random.RandomState | None = None,
        n_jobs: int | None = None,
        verbose: int = 0,
        callback: Callable[..., Any] | None = None,
    ) -> None:
        self.n_expansion = n_expansion
        self.lam = lam
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

    def model_file_rule(self) -> ModelFileRule:
        """How a model file describes this model: the class of the largest output and the
        logistic ("binary_sign", "logistic") or softmax ("softmax_argmax", "softmax")
        probabilities.

        Returns
        -------
        dict
        """
        rule = super().model_file_rule()
        if rule["decision_rule"] == "binary_sign":
            return {**rule, "probability": "logistic"}
        return {**rule, "decision_rule": "softmax_argmax", "probability": "softmax"}

    def fit(self, X: ArrayLike, y: ArrayLike) -> SparseKernelLogisticRegression:
        """Fit β, b and the XVs.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Class labels of any type; two or more classes.

        Returns
        -------
        self
        """
        self._validate_params()
        X, codes = validate_classification(self, X, y)
        # binary: ±1 (one logistic output); multi-class: codes 0..K-1 (K softmax outputs)
        target = 2 * codes - 1 if len(self.classes_) == 2 else codes
        init: str | Array = self.init  # type: ignore[assignment]
        if not isinstance(init, str):
            init = check_array(init, dtype=np.float64)
            if init.shape[1] != X.shape[1]:
                raise ValueError(f"init has {init.shape[1]} features but X has {X.shape[1]}.")
        self._fit_problems(X, [target], init=init)
        # the formulation declares N·H: report H
        self.objective_ = self.objective_ / len(X)
        self.objective_history_ = [history / len(X) for history in self.objective_history_]
        return self

    def _formulation_params(self, weights: Array | None = None) -> dict[str, Any]:
        return {"lam": self.lam}

    def _resolve_n_expansion(self, X: Array, target: NDArray[Any] | None, kernel: Kernel,
                             weights: Array | None) -> tuple[int, int | None]:
        if not isinstance(self.init, str):  # given XVs: their number
            return len(self.init), None
        return SparseKernelEstimator._resolve_n_expansion(self, X, target, kernel, weights)
