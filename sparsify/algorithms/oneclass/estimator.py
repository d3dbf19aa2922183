"""Sparse novelty detection: the one-class SVM with Nz optimised expansion vectors.

`SparseOneClassSVM` is the direct sparse method on the ν-one-class SVM
(the formulation registered as ``"oneclass"``), shaped like
`sklearn.svm.OneClassSVM`: ``decision_function`` is
``score_samples − offset_`` and ``predict`` is +1 where it is ≥ 0.

Scale: w and ρ are Schölkopf's (dual multipliers summing to one); libsvm's
multipliers sum to νN, so the decision function of the full problem (Z = X) is
sklearn's divided by νN. The objective W(Z) is νN times Schölkopf's (see the
``oneclass`` formulation for why).
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray
from sklearn.svm import OneClassSVM
from sklearn.utils._param_validation import Interval

from sparsify.algorithms.oneclass.formulation import OneClass
from sparsify.core.distinct import count_distinct
from sparsify.core.outlier import SparseOutlierDetector
from sparsify.kernels import RBF, Kernel, Linear, Polynomial

__all__ = ["SparseOneClassSVM", "full_oneclass_svm"]

Array = NDArray[np.float64]



def full_oneclass_svm(kernel: Kernel, nu: float) -> OneClassSVM:
    """An unfitted `sklearn.svm.OneClassSVM` with the same kernel and ν.

    Built-in kernels map to libsvm's own; any other kernel is passed as a callable.

    Examples
    --------
    >>> full_oneclass_svm(RBF(0.5), nu=0.1)
    OneClassSVM(gamma=0.5, nu=0.1)
    """
    if isinstance(kernel, RBF):
        return OneClassSVM(nu=nu, kernel="rbf", gamma=kernel.gamma)
    if isinstance(kernel, Polynomial):
        return OneClassSVM(nu=nu, kernel="poly", gamma=kernel.gamma, degree=kernel.degree,
                           coef0=kernel.coef0)
    if isinstance(kernel, Linear):
        return OneClassSVM(nu=nu, kernel="linear")
    return OneClassSVM(nu=nu, kernel=kernel)


class SparseOneClassSVM(SparseOutlierDetector):
    """Sparse one-class SVM: a novelty detector with exactly Nz optimised XVs.

    The direct sparse method (Wu, Schölkopf & Bakır 2006) on the ν-one-class
    SVM (Schölkopf et al. 2001): minimise ½‖w‖² + 1/(νN) Σ_i ξ_i − ρ subject to
    ⟨w, φ(x_i)⟩ ≥ ρ − ξ_i, ξ ≥ 0 and ``w = Σ_j β_j φ(z_j)``, and move the XVs
    ``z_j`` by L-BFGS on the marginal function W(Z). The decision function is
    τ(x) = Σ_j β_j k(z_j, x) − ρ; its cost is Nz kernel evaluations.

    Parameters
    ----------
    n_expansion : int or float, default=0.1
        Number of expansion vectors Nz: an int is a count; a float in (0, 1] is
        a ratio of the distinct training points.
    nu : float, default=0.5
        In (0, 1]: an upper bound on the fraction of training errors and a
        lower bound on the fraction of support vectors, as in OneClassSVM.
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
    init : {"random", "kmeans"}, default="random"
        Initial XVs: a random subset of the distinct training points, or k-means centres.
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
        "auto" (the structured interior point, then Clarabel, OSQP, ECOS) or a
        backend name: "structured", "clarabel", "ecos", "osqp", "scs".
    max_iter : int, default=200
        Maximum L-BFGS iterations per problem (0 keeps the initial XVs).
    tol : float, default=1e-6
        Stop when an iteration lowers W by less than this relative amount.
    n_iter_no_change : int, "auto" or None, default=None
        Also stop when the last ``n_iter_no_change`` iterations together lowered
        W by less than 1/√N of it, W's own sampling error: W has levelled off
        (`sparsify.core.optimize.sampling_plateau`). "auto" is 10 from N = 10⁴
        points on and no such test below; None never.
    continuation : float in (0, 1) or None, default=None
        Continuation over the data: fit first on a random sample of this
        fraction of the training points (stratified by class, each weight times
        1 / continuation where the formulation weighs its points) until W levels
        off on it, then on all points from its XVs and solution
        (`sparsify.core.continuation`). It pays where a fit takes many costly
        iterations: a declared formulation at 10⁵ points. ``max_iter`` bounds
        each phase, ``n_iter_`` counts both. None: all points from the start; a
        warm start skips the sample.
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
    expansion_vectors_ : ndarray of shape (Nz, n_features)
        The XVs z_j.
    expansion_coef_ : ndarray of shape (1, Nz)
        β, shaped like OneClassSVM's ``dual_coef_``.
    intercept_ : ndarray of shape (1,)
        −ρ.
    offset_ : float
        ρ, so that ``decision_function = score_samples − offset_`` as in OneClassSVM.
    n_expansion_ : ndarray of shape (1,)
        Nz (one problem; the shapes of every sparse estimator's attributes).
    n_iter_ : ndarray of shape (1,)
        L-BFGS iterations of the start kept.
    objective_history_ : list of one ndarray
        W after each L-BFGS iteration (of the start kept).
    objective_ : ndarray of shape (1,)
        W(Z) at the kept XVs: νN times the value of ½‖w‖² + 1/(νN) Σξ − ρ.
    full_n_support_ : ndarray of shape (1,) or None
        The full OneClassSVM's number of support vectors when ``n_expansion`` is a ratio.
    kernel_ : Kernel
        The resolved kernel.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify.algorithms.oneclass.estimator import SparseOneClassSVM
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2))
    >>> det = SparseOneClassSVM(n_expansion=5, nu=0.1, gamma=0.5, random_state=0).fit(X)
    >>> det.expansion_vectors_.shape
    (5, 2)
    >>> det.predict([[0.0, 0.0], [6.0, 6.0]]).tolist()
    [1, -1]
    >>> bool(abs(np.mean(det.predict(X) == -1) - 0.1) < 0.05)
    True
    """

    formulation_class = OneClass

    # its fits run to tol or max_iter, as they did before n_iter_no_change was shared
    default_params: ClassVar[dict[str, Any]] = {"n_expansion": 0.1, "n_iter_no_change": None}

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **SparseOutlierDetector._parameter_constraints,
        "nu": [Interval(Real, 0.0, 1.0, closed="right")],
    }

    def __init__(
        self,
        n_expansion: int | float = 0.1,
        *,
        nu: float = 0.5,
        kernel: str | Kernel = "rbf",
        gamma: float | str = "scale",
        degree: int = 3,
        coef0: float = 0.0,
        init: str = "random",
        n_init: int = 1,
        warm_start: bool = False,
        solver: str = "auto",
        max_iter: int = 200,
        tol: float = 1e-6,
        n_iter_no_change: int | str | None = None,
        continuation: float | None = None,
        solver_tol: float = 1e-8,
        random_state: int | np.random.RandomState | None = None,
        n_jobs: int | None = None,
        verbose: int = 0,
        callback: Callable[..., Any] | None = None,
    ) -> None:
        self.n_expansion = n_expansion
        self.nu = nu
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
        self.n_iter_no_change = n_iter_no_change
        self.continuation = continuation
        self.solver_tol = solver_tol
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.callback = callback

    def _formulation_params(self, weights: Array | None = None) -> dict[str, Any]:
        return {"nu": float(self.nu)}

    def _resolve_n_expansion(self, X: Array, target: NDArray[Any] | None, kernel: Kernel,
                             weights: Array | None) -> tuple[int, int | None]:
        """A ratio ``n_expansion`` is of the full OneClassSVM's number of support vectors."""
        if isinstance(self.n_expansion, Integral):
            return super()._resolve_n_expansion(X, target, kernel, weights)
        n_distinct = count_distinct(X)
        full_nsv = len(full_oneclass_svm(kernel, self.nu).fit(X).support_)
        return min(max(1, round(self.n_expansion * full_nsv)), n_distinct), full_nsv
