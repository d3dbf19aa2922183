"""`SparseKernelRidge`: kernel ridge regression with Nz optimised expansion vectors."""

from __future__ import annotations

from collections.abc import Callable
from numbers import Real
from typing import Any, ClassVar

import numpy as np
from sklearn.utils._param_validation import Interval

from sparsify.algorithms.kernel_ridge.formulation import KernelRidge
from sparsify.core.estimator import N_ITER_NO_CHANGE_CONSTRAINT
from sparsify.core.regressor import SparseKernelRegressor
from sparsify.kernels import Kernel

__all__ = ["SparseKernelRidge"]


class SparseKernelRidge(SparseKernelRegressor):
    """Kernel ridge regression with exactly Nz optimised expansion vectors.

    The direct sparse method (Wu, Schölkopf & Bakır 2006) on kernel ridge
    regression with a free intercept: minimise ‖y − f − b1‖² + α‖w‖² with
    ``w = Σ_j β_j φ(z_j)``, the XVs z_j moved by L-BFGS on W(Z). Each W(Z) and
    its gradient are in closed form (one Nz × Nz solve, O(N·Nz²)); prediction
    costs Nz kernel evaluations. With Z = X it is
    `sklearn.kernel_ridge.KernelRidge` plus an intercept.

    Parameters
    ----------
    n_expansion : int or float, default=10
        Number of expansion vectors Nz: an int is a count; a float in (0, 1] is
        a fraction of the distinct training points.
    alpha : float, default=1.0
        Weight α > 0 of ‖w‖², as in `sklearn.kernel_ridge.KernelRidge`.
    n_iter_no_change : int, "auto" or None, default=None
        Also stop when the last ``n_iter_no_change`` iterations together
        lowered W by less than 1/√N of it, W's own sampling error
        (`sparsify.core.optimize.sampling_plateau`); "auto" is 3 iterations from
        N = 5000 points on. None (the default) runs to ``tol`` or ``max_iter``:
        unlike a classifier's error, the test RMSE still improves past that
        plateau (protein, N = 41 157, Nz = 200: 10 iterations fit 2.4× faster
        with a 1.2 % higher RMSE; docs/theory.md).
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
    init : {"random", "kmeans"}, default="random"
        Initial XVs: a random subset of the distinct training points, or k-means
        centres.
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
        "auto": the closed form; a backend name ("structured", "clarabel",
        "ecos", "osqp", "scs") solves the generic declaration instead, its
        reference.
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
    expansion_vectors_ : ndarray of shape (Nz, n_features)
    expansion_coef_ : ndarray of shape (1, Nz)
    intercept_ : ndarray of shape (1,)
    n_expansion_, n_iter_, objective_ : ndarray of shape (1,)
        Nz, the L-BFGS iterations, and W(Z) at the kept XVs.
    objective_history_ : list of one ndarray
        W after each L-BFGS iteration.
    kernel_ : Kernel

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import SparseKernelRidge
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, size=(300, 1))
    >>> y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=300)
    >>> reg = SparseKernelRidge(n_expansion=6, alpha=0.1, gamma=0.5, random_state=0).fit(X, y)
    >>> reg.expansion_vectors_.shape, bool(reg.score(X, y) > 0.95)
    ((6, 1), True)
    """

    formulation_class = KernelRidge

    _parameter_constraints: ClassVar[dict[str, Any]] = {
        **SparseKernelRegressor._parameter_constraints,
        "alpha": [Interval(Real, 0.0, None, closed="neither")],
        "n_iter_no_change": N_ITER_NO_CHANGE_CONSTRAINT,
    }

    def __init__(
        self,
        n_expansion: int | float = 10,
        *,
        alpha: float = 1.0,
        n_iter_no_change: int | str | None = None,
        continuation: float | None = None,
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
        solver_tol: float = 1e-8,
        random_state: int | np.random.RandomState | None = None,
        n_jobs: int | None = None,
        verbose: int = 0,
        callback: Callable[..., Any] | None = None,
    ) -> None:
        self.n_expansion = n_expansion
        self.alpha = alpha
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
