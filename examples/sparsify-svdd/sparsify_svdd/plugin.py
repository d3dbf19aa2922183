"""Support vector data description (SVDD, Tax & Duin 2004) as a sparsify plugin.

SVDD encloses the data in the smallest sphere in feature space, centre a and
radius R, that leaves out a few points::

    minimise  R² + C Σ_i ξ_i   subject to  ‖φ(x_i) − a‖² ≤ R² + ξ_i,  ξ_i ≥ 0.

sparsify owns the weight vector and hands the formulation its outputs
``f_i = ⟨w, φ(x_i)⟩`` and ``‖w‖²``; with the centre a = w,

    ‖φ(x_i) − a‖² = k(x_i, x_i) − 2 f_i + ‖w‖².

The core does not hand a formulation k(x_i, x_i). For a kernel with a constant
diagonal κ (the Gaussian and every other translation-invariant kernel) that is
no loss, and `SparseSVDD` refuses kernels whose diagonal varies over the
training data. Written with R² in the constraints, ‖w‖² sits in every one of
them, a second-order cone that Clarabel failed to solve to 1e-9 on 3 to 11 of
40 random gradient-check problems (ECOS: none). A change of variable removes
it: ρ = R² − κ − ‖w‖² is free like R², and the constraint becomes
−2 f_i − ρ ≤ ξ_i. With C = 1/(νN) and the objective multiplied by νN (better
scaled for the solvers, as the core's one-class SVM does)::

    minimise  νN·(‖w‖² + ρ) + Σ_i max(0, −2 f_i − ρ),

a quadratic program (every backend, OSQP included), with the same optimal value
W(Z) = νN·(R² − κ) + Σ ξ_i and the same centre. With a constant diagonal, SVDD and
the ν-one-class SVM have the same dual (Tax & Duin 2004), so the full
SVDD's decisions are `sklearn.svm.OneClassSVM`'s; the tests check that.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any, ClassVar

import cvxpy as cp
import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, OutlierMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import validate_data

from sparsify import Declaration, Formulation, Outputs, hookimpl
from sparsify.algorithms.oneclass.estimator import full_oneclass_svm
from sparsify.core.estimator import KernelMachineMixin, SparseKernelClassifier
from sparsify.core.marginal import make_marginal
from sparsify.core.optimize import (
    initial_expansion_vectors,
    minimize_marginal,
    warn_if_not_converged,
)
from sparsify.kernels import Kernel, make_kernel

__all__ = ["SVDD", "SparseSVDD"]

Array = NDArray[np.float64]


class SVDD(Formulation):
    """ν-support vector data description: the smallest enclosing sphere in feature space.

    Parameters
    ----------
    nu : float, default=0.5
        In (0, 1]: C = 1/(νN). An upper bound on the fraction of training
        points outside the sphere and a lower bound on the fraction of
        support vectors.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import CvxpyMarginal, RBF
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 2))
    >>> ev = CvxpyMarginal(SVDD(nu=0.2), X, None, RBF(0.5), n_expansion=3).evaluate(X[:3])
    >>> tau = RBF(0.5)(np.array([[0.0, 0.0], [5.0, 5.0]]), X[:3]) @ ev.coef + ev.intercept
    >>> np.sign(tau).astype(int).tolist()  # the centre is inside, a far point outside
    [1, -1]
    """

    name = "svdd"

    def __init__(self, nu: float = 0.5) -> None:
        if not (isinstance(nu, Real) and 0.0 < nu <= 1.0):
            raise ValueError(f"The 'nu' parameter of the 'svdd' formulation must be a float in "
                             f"the range (0.0, 1.0]. Got {nu!r} instead.")
        self.nu = float(nu)

    def declare(self, out: Outputs) -> Declaration:
        # ρ = R² − κ − ‖w‖²: the radius less the constant kernel diagonal κ and ‖a‖², so
        # that ‖φ(x_i) − a‖² − R² = −2 f_i − ρ (see the module docstring); labels are ignored
        rho = cp.Variable(name="rho")
        scale = self.nu * out.n_samples
        objective = scale * (out.norm_w2 + rho) + cp.sum(cp.pos(-2 * out.f - rho))
        # τ(x) = f(x) + ρ/2 = (R² − ‖φ(x) − a‖²) / 2: positive inside the sphere
        return Declaration(cp.Minimize(objective), [], rho / 2)


class SparseSVDD(KernelMachineMixin, OutlierMixin, BaseEstimator):
    """Sparse SVDD: a novelty detector whose sphere centre uses exactly Nz optimised XVs.

    The direct sparse method on `SVDD`: the centre is constrained to
    a = Σ_j β_j φ(z_j) and the XVs z_j move by L-BFGS on W(Z). The decision
    function is (R² − ‖φ(x) − a‖²)/2, positive inside the sphere; for a
    translation-invariant kernel it is the kernel machine Σ_j β_j k(z_j, x) + b.

    Parameters
    ----------
    n_expansion : int or float, default=0.1
        Nz: a count, or a ratio in (0, 1] of the full SVDD's number of support
        vectors (those of `sklearn.svm.OneClassSVM` at the same ν, its
        twin for a constant-diagonal kernel).
    nu : float, default=0.5
        In (0, 1]: C = 1/(νN), an upper bound on the fraction of training
        points outside the sphere.
    kernel : str or Kernel, default="rbf"
        A kernel with a constant diagonal k(x, x) ("rbf" or a plugin's
        translation-invariant kernel).
    gamma : {"scale", "auto"} or float, default="scale"
        Kernel coefficient of "rbf".
    degree : int, default=3
        Passed to kernels that take it.
    coef0 : float, default=0.0
        Passed to kernels that take it.
    init : {"random", "kmeans"}, default="random"
        Initial XVs.
    n_init : int, default=1
        Starts; the one with the lowest W(Z) is kept.
    solver : str, default="auto"
        cvxpy backend of the generic path ("auto", "clarabel", "ecos").
    max_iter : int, default=200
        Maximum L-BFGS iterations.
    tol : float, default=1e-6
        Relative decrease of W below which L-BFGS stops.
    solver_tol : float, default=1e-8
        Accuracy of each convex solve.
    random_state : int, RandomState instance or None, default=None
        Seed of the initial XVs.
    verbose : int, default=0
        Print L-BFGS progress when > 0.

    Attributes
    ----------
    expansion_vectors_ : ndarray of shape (Nz, n_features)
    expansion_coef_ : ndarray of shape (1, Nz)
        β: the centre is a = Σ_j β_j φ(z_j).
    intercept_ : ndarray of shape (1,)
        b = ρ/2 = (R² − κ − ‖a‖²)/2.
    offset_ : float
        −b, so that ``decision_function = score_samples − offset_``.
    radius_ : float
        R, the sphere's radius in feature space.
    kernel_diag_ : float
        κ = k(x, x), constant over the training data.
    n_expansion_, n_iter_ : int
    objective_ : float
        W(Z) at the kept XVs.
    objective_history_ : ndarray
        W after each L-BFGS iteration.
    kernel_ : Kernel

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(100, 2))
    >>> det = SparseSVDD(n_expansion=4, nu=0.1, gamma=0.5, random_state=0).fit(X)
    >>> det.predict([[0.0, 0.0], [5.0, 5.0]]).tolist()
    [1, -1]
    >>> bool(np.mean(det.predict(X) == -1) <= 0.15)
    True
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **{k: v for k, v in SparseKernelClassifier._parameter_constraints.items()
           if k not in ("n_jobs", "callback")},
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
        solver: str = "auto",
        max_iter: int = 200,
        tol: float = 1e-6,
        solver_tol: float = 1e-8,
        random_state: int | np.random.RandomState | None = None,
        verbose: int = 0,
    ) -> None:
        self.n_expansion = n_expansion
        self.nu = nu
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
        self.verbose = verbose

    def _n_expansion(self, X: Array, kernel: Kernel) -> int:
        n_distinct = len(np.unique(X, axis=0))
        if isinstance(self.n_expansion, Integral):
            if self.n_expansion > n_distinct:
                raise ValueError(
                    f"n_expansion={self.n_expansion} asks for more expansion vectors than the "
                    f"{n_distinct} distinct training points (n_samples={len(X)}); lower "
                    "n_expansion or pass a ratio in (0, 1]."
                )
            return int(self.n_expansion)
        full_nsv = len(full_oneclass_svm(kernel, self.nu).fit(X).support_)
        return min(max(1, round(self.n_expansion * full_nsv)), n_distinct)

    def fit(self, X: ArrayLike, y: object = None) -> SparseSVDD:
        """Fit the sparse SVDD on inliers.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : ignored
            Not used; present for API consistency.

        Returns
        -------
        self
        """
        self._validate_params()
        X = validate_data(self, X, dtype=np.float64)
        kernel = make_kernel(self.kernel, X, self.gamma, self.degree, self.coef0)
        diag = kernel.diag(X)
        if np.ptp(diag) > 1e-10 * max(1.0, float(np.abs(diag).max())):
            raise ValueError(
                f"SparseSVDD needs a kernel whose diagonal k(x, x) is constant, such as 'rbf'; "
                f"kernel={self.kernel!r} gives values from {diag.min():.4g} to "
                f"{diag.max():.4g} on the training data. sparsify hands a formulation f and "
                "‖w‖² but not k(x_i, x_i), which SVDD's distances need otherwise."
            )
        n_expansion = self._n_expansion(X, kernel)
        formulation = SVDD(nu=float(self.nu))  # this plugin's own class: no registry lookup
        rng = check_random_state(self.random_state)
        best, runs = None, []
        for j, seed in enumerate(rng.randint(np.iinfo(np.int32).max, size=self.n_init)):
            Z0 = initial_expansion_vectors(X, n_expansion, self.init, int(seed))
            marginal = make_marginal(formulation, X, None, kernel, n_expansion, self.solver,
                                     self.solver_tol)
            run = minimize_marginal(marginal, Z0, max_iter=self.max_iter, tol=self.tol,
                                    verbose=self.verbose, problem=f"start {j + 1}")
            runs.append((f"start {j + 1}", run))
            if best is None or run.evaluation.value < best.evaluation.value:
                best = run
        assert best is not None  # n_init ≥ 1
        warn_if_not_converged(type(self).__name__, runs, self.max_iter)
        ev = best.evaluation
        beta = np.asarray(ev.coef, dtype=float)
        b = float(ev.intercept)
        norm_a2 = float(beta @ kernel(best.Z, best.Z) @ beta)
        self.kernel_ = kernel
        self.kernel_diag_ = float(diag[0])
        self.expansion_vectors_ = best.Z
        self.expansion_coef_ = beta.reshape(1, -1)
        self.intercept_ = np.array([b])
        self.offset_ = -b
        # b = (R² − κ − ‖a‖²)/2
        self.radius_ = float(np.sqrt(max(2.0 * b + self.kernel_diag_ + norm_a2, 0.0)))
        self.n_expansion_ = n_expansion
        self.n_iter_ = int(best.n_iter)
        self.objective_ = float(ev.value)
        self.objective_history_ = best.history
        return self

    def decision_function(self, X: ArrayLike) -> Array:
        """(R² − ‖φ(x) − a‖²)/2: positive inside the sphere, negative outside.

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        tau = super().decision_function(X)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        # 0 for a translation-invariant kernel; exact for any x otherwise
        return tau - 0.5 * (self.kernel_.diag(X) - self.kernel_diag_)

    def _model_file_rule(self) -> dict[str, Any]:
        """How `sparsify.io.save_model` writes this model: a kernel machine, sign rule.

        With a Gaussian kernel (or a sum of them) k(x, x) is the same constant for
        every x, so the diagonal term of `decision_function` is zero and the
        decision is exactly Σ_j β_j k(z_j, x) + b. Another kernel's diagonal may
        vary away from the training data, so such a model is refused.
        """
        from sparsify.kernels import RBF, SumKernel

        parts = self.kernel_.kernels if isinstance(self.kernel_, SumKernel) else (self.kernel_,)
        if not all(type(part) is RBF for part in parts):
            raise ValueError(
                f"SparseSVDD with the kernel {self.kernel_!r} cannot be saved as a model file: "
                "its decision function is a kernel machine only for a kernel whose diagonal "
                "k(x, x) is constant everywhere, which sparsify can be sure of for 'rbf' and "
                "sums of 'rbf' kernels. Refit with kernel='rbf', or keep it as a pickle "
                "(load only pickles you trust)."
            )
        return {"decision_rule": "outlier_sign", "formulation": "svdd"}

    def score_samples(self, X: ArrayLike) -> Array:
        """Scores, higher inside: ``decision_function(X) + offset_``.

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return self.decision_function(X) + self.offset_

    def predict(self, X: ArrayLike) -> NDArray[np.int64]:
        """+1 inside the sphere (or on it), −1 outside.

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return np.where(self.decision_function(X) >= 0, 1, -1)


SVDD.estimator = SparseSVDD  # what `sparsify fit --formulation svdd` trains


@hookimpl
def register_formulations(register) -> None:  # type: ignore[no-untyped-def]
    register(SVDD)
