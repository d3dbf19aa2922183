"""The sparse kernel Fisher discriminant (paper, Appendix A) as a scikit-learn estimator.

`SparseKFD` serves two registered formulations: ``"skfd"``, the paper's
Rayleigh-quotient KFD whose W(Z) and ∇W(Z) come from an eigenproblem (eq.
57-63), followed by the SVM step on the final XVs for β and b (eq. 37-45), and
``"kfd"``, the convex KFD of Mika et al. (2003) through the generic path.
`full_kfd` (`sparsify.algorithms.kfd.scatter`) is the full, non-sparse KFD in
closed form, the reference both are measured against.
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Real
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.preprocessing import LabelEncoder
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets

from sparsify.algorithms.kfd.formulation import KFD, SKFD
from sparsify.algorithms.kfd.scatter import class_contrast, full_kfd, within_class_centring
from sparsify.core.classifier import SparseKernelClassifier
from sparsify.core.data_source import validate_rows
from sparsify.core.expansion import expansion_coefficients
from sparsify.core.formulation import Formulation
from sparsify.core.labels import check_class_count, check_label_types
from sparsify.core.solvers import SolverError
from sparsify.kernels import Kernel

__all__ = ["SparseKFD", "class_contrast", "full_kfd", "within_class_centring"]  # re-exported

Array = NDArray[np.float64]

#: ``method`` → registered formulation name.
METHODS = {"rayleigh": "skfd", "convex": "kfd"}


class SparseKFD(SparseKernelClassifier):
    """Sparse kernel Fisher discriminant (SKFD) with exactly Nz optimised XVs.

    The direct sparse method (Wu, Schölkopf & Bakır 2006, Appendix A) on the
    kernel Fisher discriminant: the weight vector is constrained to
    ``w = Σ_j β_j φ(z_j)`` and L-BFGS moves the XVs ``z_j`` on the marginal
    function W(Z). With ``method="rayleigh"`` (the paper's) W(Z) is minus the
    largest eigenvalue of (B^z)⁻¹A^z, A and B the between- and within-class
    scatter (the ``"skfd"`` formulation), and β and b are then found by the
    SVM step on the final XVs (paper eq. 37-45, with ``C``). With
    ``method="convex"`` W(Z) is the convex KFD of Mika et al. (2003) (the
    ``"kfd"`` formulation, solved by cvxpy) and its own β and b are kept. The
    two share their minimisers over Z (W_kfd = −4 / W_skfd). Multi-class
    problems are trained one-vs-rest.

    Parameters
    ----------
    n_expansion : int or float, default=0.1
        Number of expansion vectors Nz: an int is a count; a float in (0, 1] is
        a ratio of the full SVM's number of support vectors (the paper's
        Nz/NSV), per binary problem.
    mu : float, default=1.0
        Regulariser μ > 0 of the within-class scatter (B̂ = B + μI), in units
        of the scatter, which sums over the training points.
    C : float, default=1.0
        C of the SVM step that gives β and b on the final XVs
        (``method="rayleigh"``) and of the full SVM a ratio ``n_expansion``
        refers to.
    method : {"rayleigh", "convex"}, default="rayleigh"
        The paper's Rayleigh-quotient SKFD, or the convex KFD.
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
    init : {"kmeans", "random", "balanced", "auto"}, default="kmeans"
        Initial XVs: k-means centres (the paper's Table 3), a random subset
        of the distinct training points, or the same drawn evenly from the
        two classes; "auto" is "random" (SKFD is binary).
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
        Solver backend of the cvxpy solves (the SVM step; every W(Z) for
        ``method="convex"``).
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
    classes_ : ndarray of shape (n_classes,)
    expansion_vectors_ : ndarray of shape (sum of Nz, n_features)
        The XVs of all binary problems, stacked.
    expansion_coef_ : ndarray of shape (n_problems, sum of Nz)
        β of each binary problem on the stacked XVs (zero outside its own block).
    intercept_ : ndarray of shape (n_problems,)
    n_expansion_ : ndarray of shape (n_problems,)
    n_iter_ : ndarray of shape (n_problems,)
    objective_history_ : list of ndarray
        W after each L-BFGS iteration, per binary problem.
    objective_ : ndarray of shape (n_problems,)
        W(Z) at the kept XVs (−λ for ``"rayleigh"``).
    full_n_support_ : ndarray of shape (n_problems,) or None
        The full SVM's NSV when ``n_expansion`` is a ratio.
    kernel_ : Kernel
        The resolved kernel.

    Examples
    --------
    >>> from sparsify.datasets import load_banana
    >>> from sparsify.algorithms.kfd.estimator import SparseKFD
    >>> X, y, X_test, y_test = load_banana()
    >>> clf = SparseKFD(n_expansion=8, mu=0.1, C=10.0, gamma=1.0, random_state=0).fit(X, y)
    >>> clf.expansion_vectors_.shape
    (8, 2)
    >>> bool(clf.score(X_test, y_test) > 0.85)
    True
    """

    # its fits run to tol or max_iter, as they did before n_iter_no_change was shared
    default_params: ClassVar[dict[str, Any]] = {"n_expansion": 0.1, "init": "kmeans",
                                                "n_iter_no_change": None}

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **SparseKernelClassifier._parameter_constraints,
        "mu": [Interval(Real, 0.0, None, closed="neither")],
        "C": [Interval(Real, 0.0, None, closed="neither")],
        "method": [StrOptions(set(METHODS))],
    }

    def __init__(
        self,
        n_expansion: int | float = 0.1,
        *,
        mu: float = 1.0,
        C: float = 1.0,
        method: str = "rayleigh",
        kernel: str | Kernel = "rbf",
        gamma: float | str = "scale",
        degree: int = 3,
        coef0: float = 0.0,
        init: str = "kmeans",
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
        self.mu = mu
        self.C = C
        self.method = method
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

    def _formulation_type(self) -> type[Formulation]:
        """The formulation ``method`` selects: `SKFD` (Rayleigh quotient) or `KFD` (convex)."""
        return SKFD if METHODS.get(self.method, "skfd") == "skfd" else KFD

    @property
    def formulation_name(self) -> str:
        """The formulation's registered name ("skfd" or "kfd"), as model files record it."""
        return self._formulation_type().name

    def _formulation_params(self) -> dict[str, Any]:
        return {"mu": self.mu}

    def fit(self, X: ArrayLike, y: ArrayLike) -> SparseKFD:
        """Fit the sparse KFD.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,)
            Class labels, of any type; each class needs at least 2 samples.

        Returns
        -------
        self
        """
        self._validate_params()
        X, y = validate_rows(self, X, y, dtype=np.float64)
        check_label_types(y, type(self).__name__)
        check_classification_targets(y)
        classes, counts = np.unique(y, return_counts=True)
        check_class_count(type(self).__name__, len(classes), len(y))
        if len(classes) >= 2 and counts.min() < 2:
            raise ValueError(
                f"{type(self).__name__} needs at least 2 samples of each class to estimate "
                f"the within-class scatter; class {classes.tolist()[counts.argmin()]!r} has 1 "
                "sample."
            )
        try:
            super().fit(X, y)
        except SolverError as exc:
            if self.method != "convex" or "infeasible" not in str(exc):
                raise
            # the convex KFD's targets f + b = y cannot be met when the inputs do not tell
            # the classes apart (constant features); the Rayleigh quotient is then just 0
            raise ValueError(
                f"The convex KFD is infeasible on these inputs: they do not separate the "
                f"classes at all (for example constant features). Use method='rayleigh', or "
                f"check the features. ({exc})"
            ) from exc
        if self.method == "rayleigh":
            self._svm_step(X, y)
        return self

    def _svm_step(self, X: Array, y: NDArray[Any]) -> None:
        # The Rayleigh quotient fixes only β's direction, not b: the paper takes β and b
        # from an SVM on the fixed XVs (eq. 37-45).
        codes = LabelEncoder().fit(self.classes_).transform(y)
        targets = (
            [np.where(codes == 1, 1, -1)]
            if len(self.classes_) == 2
            else [np.where(codes == k, 1, -1) for k in range(len(self.classes_))]
        )
        start = 0
        for k, (t, size) in enumerate(zip(targets, self.n_expansion_, strict=True)):
            Z = self.expansion_vectors_[start:start + size]
            coef, b = expansion_coefficients(X, t, Z, formulation="svm", kernel=self.kernel_,
                                             solver=self.solver, tol=self.solver_tol, C=self.C)
            self.expansion_coef_[k, start:start + size] = coef
            self.intercept_[k] = float(b)
            start += size
