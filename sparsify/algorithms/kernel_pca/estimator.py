"""`SparseKernelPCA`: kernel PCA whose principal directions live in the span of Nz free XVs."""

from __future__ import annotations

from collections.abc import Callable
from numbers import Integral
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_array, check_is_fitted

from sparsify.algorithms.kernel_pca.formulation import KernelPCA
from sparsify.algorithms.kernel_pca.preimage import rbf_pre_image
from sparsify.core.kernel_blocks import diagonal_scale, whitening
from sparsify.core.transformer import SparseKernelTransformer
from sparsify.kernels import RBF, Kernel

__all__ = ["SparseKernelPCA"]

Array = NDArray[np.float64]


class SparseKernelPCA(SparseKernelTransformer):
    """Kernel PCA with exactly Nz optimised expansion vectors.

    The direct sparse method (Wu, Schölkopf & Bakır 2006) on kernel PCA
    (Schölkopf, Smola & Müller 1998): the k principal directions are constrained
    to span φ(Z), and L-BFGS moves the XVs z_j to maximise the variance of the
    training points (centred in feature space) that the k directions capture.
    W(Z) is minus the sum of the top k eigenvalues of an Nz × Nz generalised
    eigenproblem, with its exact gradient (the argument of the paper's eq. 63);
    no cvxpy solve. `transform` gives the k component scores at Nz kernel
    evaluations per point; with Z = X it is `sklearn.decomposition.KernelPCA`
    up to the sign of each component.

    Parameters
    ----------
    n_expansion : int or float, default=10
        Number of expansion vectors Nz: an int is a count; a float in (0, 1] is
        a ratio of the distinct training points.
    n_components : int or None, default=None
        k, the number of principal components, at most Nz; None: all Nz (W is
        then minus the whole variance captured by span φ(Z)).
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
        Checked, and otherwise unused: the eigenproblem has no cvxpy path, so
        every solver name gives the same exact W(Z).
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
    eigenvalues_ : ndarray of shape (k,)
        The variances of the training points along the k components, in
        decreasing order: the top k eigenvalues, in the convention of a
        covariance (scikit-learn's ``KernelPCA.eigenvalues_`` divided by N).
    components_ : ndarray of shape (k, Nz)
        The unit principal directions w_l = Σ_j components_[l, j] φ(z_j)
        (orthonormal in feature space); the same array as ``expansion_coef_``.
    mean_coef_ : ndarray of shape (Nz,)
        The training mean in feature space projected onto span φ(Z), as
        Σ_j mean_coef_[j] φ(z_j); `inverse_transform` adds it back.
    expansion_vectors_ : ndarray of shape (Nz, n_features)
    expansion_coef_ : ndarray of shape (k, Nz)
    intercept_ : ndarray of shape (k,)
        Minus the training mean of Σ_j β_lj k(x, z_j): it centres the scores.
    n_expansion_, n_iter_, objective_ : ndarray of shape (1,)
        Nz, the L-BFGS iterations, and W(Z) = −Σ eigenvalues_ at the kept XVs.
    objective_history_ : list of one ndarray
        W after each L-BFGS iteration.
    kernel_ : Kernel
        The resolved kernel.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import SparseKernelPCA
    >>> rng = np.random.default_rng(0)
    >>> angle = rng.uniform(0, 2 * np.pi, 300)
    >>> X = np.column_stack([np.cos(angle), np.sin(angle)]) + 0.05 * rng.normal(size=(300, 2))
    >>> kpca = SparseKernelPCA(8, n_components=3, gamma=1.0, random_state=0).fit(X)
    >>> kpca.transform(X[:4]).shape, kpca.eigenvalues_.shape
    ((4, 3), (3,))
    >>> bool(kpca.objective_[0] < kpca.objective_history_[0][0])  # more variance captured
    True
    >>> kpca.inverse_transform(kpca.transform(X[:4])).shape
    (4, 2)
    """

    formulation_class = KernelPCA

    # its fits run to tol or max_iter, as they did before n_iter_no_change was shared
    default_params: ClassVar[dict[str, Any]] = {"n_iter_no_change": None}

    _parameter_constraints: ClassVar[dict[str, Any]] = {
        **SparseKernelTransformer._parameter_constraints,
        "n_components": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __init__(
        self,
        n_expansion: int | float = 10,
        *,
        n_components: int | None = None,
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
        self.n_components = n_components
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

    def fit(self, X: ArrayLike, y: ArrayLike | None = None) -> SparseKernelPCA:
        """Fit the XVs and the k principal directions in their span.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : None
            Ignored (checked as any transformer's ``y``).

        Returns
        -------
        self
        """
        super().fit(X, y)
        X_valid = check_array(X, dtype=np.float64)
        K = self.kernel_features(X_valid)
        scores = K @ self.expansion_coef_.T + self.intercept_
        self.eigenvalues_ = (scores * scores).mean(axis=0)
        self.components_ = self.expansion_coef_
        # the mean's projection (K_ZZ + εI)⁻¹ K_ZX 1/N, with the marginal's jitter
        Z = self.expansion_vectors_
        jitter = 1e-10 * max(diagonal_scale(self.kernel_, X_valid), 1e-300)
        T = whitening(self.kernel_(Z, Z) + jitter * np.eye(len(Z)))
        self.mean_coef_ = T @ (T.T @ K.mean(axis=0))
        return self

    def inverse_transform(self, X: ArrayLike) -> Array:
        """Input-space pre-images of component scores (Gaussian kernel only).

        The scores s give the feature-space point Ψ = m_Z + Σ_l s_l w_l (m_Z the
        training mean projected onto span φ(Z)); its pre-image is found by the
        fixed-point iteration of Mika et al. (1999),
        `sparsify.algorithms.kernel_pca.preimage.rbf_pre_image`. There is no
        closed form for other kernels, which are refused.

        Parameters
        ----------
        X : array-like of shape (n_samples, k)
            Component scores, as `transform` returns them.

        Returns
        -------
        ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self)
        if not isinstance(self.kernel_, RBF):
            raise ValueError(
                f"inverse_transform finds pre-images by the fixed-point iteration of Mika et al. "
                f"(1999), which holds for the Gaussian kernel only; this model's kernel is "
                f"{self.kernel_!r}. Fit with kernel='rbf' to use it.")
        scores: Array = check_array(X, dtype=np.float64, input_name="X")
        k = len(self.intercept_)
        if scores.shape[1] != k:
            raise ValueError(f"X has {scores.shape[1]} columns, but {type(self).__name__} has "
                             f"{k} components; pass scores of shape (n_samples, {k}).")
        coef = self.mean_coef_ + scores @ self.components_
        return rbf_pre_image(coef, self.expansion_vectors_, self.kernel_.gamma)
