"""`SemiSupervisedSVC`: the semi-supervised SVM with Lp-norm multiple and manifold kernels.

After the paper "Lp-norm constrained multiple kernel semi-supervised SVM"
(Lp-MKL-S3VM): a few labeled and many unlabeled points (marked in ``y`` as
scikit-learn's semi-supervised estimators do), dense or sparse (Nz free XVs
moved by the direct method at every stage). The estimator is built on the fit
driver `sparsify.core.estimator.SparseKernelEstimator` (parameter constraints,
solver check, fitted attributes) with a multi-stage ``fit`` of its own; the
algorithm is in the package's other modules: ``labels`` (reading ``y``,
`switch_labels`), ``kernel_spec`` (``kernels`` and `default_mkl_kernels`),
``engines`` (the convex stage), ``annealing`` (Algorithms 1 and 2), ``smooth``
(`s3vm_objective`, the smooth quasi-Newton optimiser) and ``mkl`` (the θ-step).
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import ClassifierMixin
from sklearn.utils import Tags, check_random_state
from sklearn.utils._param_validation import Interval, Options, StrOptions

from sparsify.algorithms.s3vm.annealing import SearchSettings, search_labels
from sparsify.algorithms.s3vm.engines import StageSettings, _Dense, _Progress, _Sparse
from sparsify.algorithms.s3vm.formulation import S3VM
from sparsify.algorithms.s3vm.kernel_spec import default_mkl_kernels, resolve_kernels
from sparsify.algorithms.s3vm.labels import split_labels, switch_labels, warn_if_one_sided
from sparsify.algorithms.s3vm.mkl import combined_kernel
from sparsify.algorithms.s3vm.smooth import s3vm_objective
from sparsify.core.data_source import validate_rows
from sparsify.core.distinct import count_distinct
from sparsify.core.estimator import SparseKernelEstimator, check_solver
from sparsify.core.formulation import Formulation
from sparsify.core.optimize import warn_if_not_converged
from sparsify.kernels import Kernel

__all__ = ["SemiSupervisedSVC", "s3vm_objective", "switch_labels"]

Array = NDArray[np.float64]

#: The fit driver's parameters that `SemiSupervisedSVC` shares, with their constraints.
_SHARED = ("kernel", "gamma", "degree", "coef0", "init", "max_iter", "tol", "solver_tol",
           "solver", "random_state", "verbose")


class SemiSupervisedSVC(ClassifierMixin, SparseKernelEstimator):
    """Semi-supervised SVM (S3VM) with Lp-norm multiple and manifold kernels, dense or sparse.

    The Lp-MKL-S3VM of the paper "Lp-norm constrained multiple kernel
    semi-supervised SVM": minimise ½‖w‖² + C Σ_labeled max(0, 1 − y_i g_i)
    + C* Σ_unlabeled max(0, 1 − |g_j|) with g = f + b, under the balance
    constraint that a fraction r of the unlabeled points is positive, over
    one kernel or a weighted sum Σ_m θ_m k_m with θ ≥ 0, ‖θ‖_p ≤ 1.

    Unlabeled points are marked in ``y`` by ``unlabeled`` (-1 by default, the
    convention of `sklearn.semi_supervised`); the other values are the
    two class labels, of any type. **When the classes themselves are -1 and
    +1**, -1 cannot also mean "unlabeled": pass another marker, for example
    ``unlabeled=0`` (with y in {-1, 0, +1}) or ``unlabeled=np.nan`` with a
    float y. A y holding only -1 and +1 with the default marker is rejected
    as ambiguous. With no unlabeled point the estimator is a plain SVM (its
    sparse version SLMC).

    Parameters
    ----------
    C : float, default=1.0
        Cost of the hinge loss on labeled points.
    C_star : float or None, default=None
        Final cost C* of the symmetric loss on unlabeled points; None means C
        (the paper's setting). It is annealed from 10⁻⁵·C* to C*, ×10 per stage.
    balance : float in (0, 1) or None, default=None
        r, the fraction of unlabeled points that are positive (the second
        class of ``classes_``); None takes the fraction among the labeled points.
    kernel : str or Kernel, default="rbf"
        The kernel when ``kernels`` is None ("rbf", "poly", "linear", names
        joined by "+", or a `Kernel`); also the base of the
        "manifold" entries of ``kernels``.
    gamma : {"scale", "auto"} or float, default="scale"
        Coefficient of "rbf" and "poly" kernels given by name.
    degree : int, default=3
        Degree of "poly".
    coef0 : float, default=1.0
        Constant of "poly".
    kernels : list or None, default=None
        Base kernels of the Lp-norm MKL combination. Each entry is a `Kernel` (a
        `ManifoldKernel` without ``X_graph`` is bound to the training points), a
        kernel name resolved with ``gamma``, ``degree`` and ``coef0``, the string
        ``"manifold"`` (``kernel`` deformed by the kNN-graph Laplacian of the
        training points, with the options of ``manifold``) or
        ``"manifold:<name>"`` (the named kernel deformed), or a dict
        ``{"kernel": <Kernel or name>, "manifold": <dict of ManifoldKernel
        options, True or None>}``. The paper's 3 base and 3 manifold Gaussian
        kernels come from `default_mkl_kernels`.
    normalize_kernels : bool, default=True
        Scale each entry of ``kernels`` to mean diagonal 1 on the training
        points before learning θ (the usual practice of Lp-MKL, Kloft et al.
        2011). A manifold kernel's diagonal shrinks with ``gamma_ratio`` (to
        0.02 at 100 on USPS-like data), so without it the θ-step sees a large
        ‖w_m‖ for it and drops it. False keeps the paper's literal, unscaled
        kernels. Not applied when ``kernels`` is None.
    p : float, default=2.0
        Norm of the kernel weights (≥ 1; used when ``kernels`` has more than
        one entry): p = 1 gives sparse weights, large p near-uniform ones,
        ``np.inf`` the unweighted sum.
    manifold : None, bool or dict, default=None
        Deform the single kernel into a manifold kernel (LapSVM); a dict holds
        `ManifoldKernel` options (``n_neighbors``, ``gamma_ratio``,
        ``laplacian_power``, ``graph_gamma``, ``normalized``), also used by
        "manifold" entries of ``kernels``.
    n_expansion : None, int or float, default=None
        None: dense, the XVs are all training points (the full kernel
        problem). An int Nz or a ratio in (0, 1] of the number of training
        points (labeled and unlabeled): sparse, with Nz XVs.
    unlabeled : scalar, default=-1
        The value of ``y`` that marks unlabeled points (NaN allowed for a float y).
    max_iter : int, default=50
        Sparse version: most L-BFGS iterations on the XVs per convex stage.
        With ``optimizer="smooth-qn"``: most L-BFGS iterations per annealing stage
        (at least 200 are used).
    max_switch_rounds : int, default=100
        Most rounds of label switching (each followed by a re-solve) per
        annealing stage.
    mkl_max_iter : int, default=20
        Most θ-steps of the Lp-norm MKL alternation.
    mkl_tol : float, default=1e-3
        Stop the MKL alternation when no weight moves by more than this.
    init : {"kmeans", "random"}, default="kmeans"
        Sparse version: initial XVs (k-means centres or a random subset of
        the training points).
    xv : {"free", "data"}, default="free"
        Sparse version: "free" XVs are moved by L-BFGS (the direct method);
        "data" keeps them on training points chosen by ``init`` (k-means
        centres snapped to the nearest point), without gradients.
    optimizer : {"switching", "smooth-qn"}, default="switching"
        "switching": the paper's Algorithm 1 as described below (exact convex
        stages and pairwise label switching). "smooth-qn", dense only, for
        comparison: a direct quasi-Newton method (L-BFGS over β) on a smoothed
        objective, ∇S3VM style — softplus-smoothed hinge on labeled points,
        exp(−3g²) for the symmetric loss, the balance constraint as a fixed mean
        output 2r − 1 on the unlabeled points — with the same C* annealing; the
        transductive labels are then the signs of the outputs.
    tol : float, default=1e-6
        Relative decrease of W below which L-BFGS stops.
    solver_tol : float, default=1e-8
        Accuracy of each convex solve.
    solver : str, default="auto"
        "auto": libsvm on the precomputed kernel for the dense problem and the
        SVM's exact dual solver with per-point costs for the sparse one; a
        backend name ("structured", "clarabel", "ecos", "osqp", "scs") solves
        the generic declaration instead (the reference).
    random_state : int, RandomState instance or None, default=None
        Seed of the initial XVs (sparse version).
    verbose : int, default=0
        Print the progress of the stages when > 0.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The class labels (the unlabeled marker excluded).
    transduction_ : ndarray of shape (n_samples,)
        Labels of all training points: the given ones, and for unlabeled
        points the final temporary labels, which satisfy the balance
        constraint (as `sklearn.semi_supervised.LabelSpreading`'s
        attribute). ``predict`` on the training points can differ from them
        for points inside the margin, and entirely when the kernel is too
        stiff to follow the labels (e.g. a manifold kernel with a huge
        ``gamma_ratio``, whose non-constant functions have a huge norm): then
        f is nearly constant, the labels stay the supervised start's ranking,
        and a warning says so. Judge a model by ``predict`` as well.
    kernel_weights_ : ndarray of shape (M,)
        θ (``[1.0]`` for a single kernel), for the kernels as normalised by
        ``normalize_kernels``.
    kernel_ : Kernel
        The kernel Σ_m θ_m k_m of the model.
    balance_ : float
        r used.
    expansion_vectors_ : ndarray of shape (Nz, n_features)
        The XVs (dense: the support vectors).
    expansion_coef_, coef_ : ndarray of shape (1, Nz)
        β.
    intercept_ : ndarray of shape (1,)
        b.
    n_expansion_ : ndarray of shape (1,)
        Nz (dense: the number of support vectors). Like ``n_iter_``,
        ``objective_`` and ``objective_history_``, one entry per problem (here
        one), as for every estimator on the fit driver.
    support_ : ndarray of int or None
        Dense: indices of the support vectors among the training points.
    objective_ : ndarray of shape (1,)
        Final objective ½‖w‖² + Σ_i c_i ξ_i at the final labels (equal to the
        paper's eq. 1 when no unlabeled point keeps a worse label); for
        ``optimizer="smooth-qn"`` the paper's eq. 1.
    objective_history_ : list of one ndarray
        That objective after each convex solve, at its C* and labels (the last
        is ``objective_[0]``); "smooth-qn": eq. 1 after each annealing stage.
    full_n_support_ : None
        None: a ratio ``n_expansion`` is of the training points, not of a full model's.
    s3vm_objective_ : float
        The paper's eq. 1 (hinge on labeled points, max(0, 1 − |g|) on unlabeled
        ones, no balance term) at the fitted machine: the yardstick to compare
        optimizers.
    n_switches_ : int
        Pairs of temporary labels switched in all.
    n_iter_ : ndarray of shape (1,)
        Convex solves in all (one per annealing stage, plus one after each
        round of label switching, plus the sparse version's extra passes; with
        ``optimizer="smooth-qn"`` one per annealing stage).
    n_lbfgs_iter_ : int
        Sparse version: L-BFGS iterations on the XVs in all (0 when dense).
    n_mkl_iter_ : int
        θ-steps of the MKL alternation (0 for a single kernel).

    Notes
    -----
    The paper solves each stage's non-smooth objective with subBFGS, a
    quasi-Newton method for non-smooth functions. It is not needed here: at
    fixed temporary labels the problem is a convex SVM (hinge losses with
    per-point costs), solved exactly by its dual (libsvm or the SVM fast
    path), and the labels are searched by annealing and pairwise switching
    around it, as in S3VMlight. In the sparse version the convex stage at
    fixed XVs is the ``"s3vm"`` formulation of the core, so the direct method
    and its gradient by Lemma 1 apply at every stage; L-BFGS moves the XVs,
    warm-started from the previous stage's.

    Label switching swaps every improving disjoint pair at once (see
    `switch_labels`) before re-solving; each round lowers the objective,
    so it ends. In the sparse version the re-solves during switching keep Z;
    the XVs move once per stage, and again in the last stage until no label
    switches. With several kernels the first f-step runs the full annealing,
    later f-steps (after each θ-step) only the last stage, from the current
    labels and XVs; in the sparse version those keep the XVs fixed (exact
    re-solves), and one more f-step after the last θ-step moves them again.

    Cost: the dense model needs the N × N kernel matrix of each kernel and
    one libsvm solve per stage and switching round (N = 1500: about 1.5 s
    for one Gaussian kernel, 10-20 s for the paper's six kernels). In the
    sparse model each L-BFGS evaluation costs O(N·Nz·d) per plain kernel but
    O(N_g²·Nz) per manifold kernel (0.2 s per manifold kernel at N = 1500,
    Nz = 150 on one core), so free XVs with manifold kernels are slow at
    that size: prefer a smaller Nz or ``xv="data"`` (XVs on training points,
    no gradient through the kernel).

    At fixed outputs, switching every improving pair is the exact minimisation
    over the temporary labels under the balance constraint (it ranks the
    unlabeled points by their outputs), so each stage is block-coordinate
    descent with both blocks solved exactly; the result is still a local
    minimum of a non-convex problem. With a flexible kernel and very few
    labels the convex stage can fit a poor initial labelling, which then
    never switches (a known weakness of S3VMlight-style local search,
    Chapelle, Sindhwani & Keerthi, JMLR 2008); ``optimizer="smooth-qn"``
    (∇S3VM style) moves the boundary continuously instead and is offered
    for comparison.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_moons
    >>> X, y_true = make_moons(200, noise=0.1, random_state=0)
    >>> rng = np.random.default_rng(0)
    >>> labeled = np.r_[rng.choice(np.flatnonzero(y_true == 0), 4, replace=False),
    ...                 rng.choice(np.flatnonzero(y_true == 1), 4, replace=False)]
    >>> y = np.full(200, -1)  # -1: unlabeled
    >>> y[labeled] = y_true[labeled]  # 8 labeled points, 192 unlabeled
    >>> clf = SemiSupervisedSVC(C=10.0, gamma=2.0).fit(X, y)
    >>> bool((clf.transduction_ == y_true).mean() > 0.95)
    True
    >>> clf.predict(X[:3]).shape, clf.kernel_weights_
    ((3,), array([1.]))
    """

    formulation_class = S3VM

    _parameter_constraints: ClassVar[dict[str, Any]] = {
        **{name: SparseKernelEstimator._parameter_constraints[name] for name in _SHARED},
        "C": [Interval(Real, 0.0, None, closed="neither")],
        "C_star": [Interval(Real, 0.0, None, closed="neither"), None],
        "balance": [Interval(Real, 0.0, 1.0, closed="neither"), None],
        "kernels": [list, tuple, None],
        "normalize_kernels": ["boolean"],
        "p": [Interval(Real, 1.0, None, closed="left"), Options(Real, {np.inf})],
        "manifold": ["boolean", dict, None],
        "n_expansion": [*SparseKernelEstimator._parameter_constraints["n_expansion"], None],
        "unlabeled": "no_validation",
        "max_switch_rounds": [Interval(Integral, 0, None, closed="left")],
        "mkl_max_iter": [Interval(Integral, 0, None, closed="left")],
        "mkl_tol": [Interval(Real, 0.0, None, closed="left")],
        "xv": [StrOptions({"free", "data"})],
        "optimizer": [StrOptions({"switching", "smooth-qn"})],
    }

    def __init__(
        self,
        C: float = 1.0,
        *,
        C_star: float | None = None,
        balance: float | None = None,
        kernel: str | Kernel = "rbf",
        gamma: float | str = "scale",
        degree: int = 3,
        coef0: float = 1.0,
        kernels: list[Any] | None = None,
        normalize_kernels: bool = True,
        p: float = 2.0,
        manifold: bool | dict[str, Any] | None = None,
        n_expansion: int | float | None = None,
        unlabeled: Any = -1,
        max_iter: int = 50,
        max_switch_rounds: int = 100,
        mkl_max_iter: int = 20,
        mkl_tol: float = 1e-3,
        init: str = "kmeans",
        xv: str = "free",
        optimizer: str = "switching",
        tol: float = 1e-6,
        solver_tol: float = 1e-8,
        solver: str = "auto",
        random_state: int | np.random.RandomState | None = None,
        verbose: int = 0,
    ) -> None:
        self.C = C
        self.C_star = C_star
        self.balance = balance
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.kernels = kernels
        self.normalize_kernels = normalize_kernels
        self.p = p
        self.manifold = manifold
        self.n_expansion = n_expansion
        self.unlabeled = unlabeled
        self.max_iter = max_iter
        self.max_switch_rounds = max_switch_rounds
        self.mkl_max_iter = mkl_max_iter
        self.mkl_tol = mkl_tol
        self.init = init
        self.xv = xv
        self.optimizer = optimizer
        self.tol = tol
        self.solver_tol = solver_tol
        self.solver = solver
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self) -> Tags:
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    default_mkl_kernels = staticmethod(default_mkl_kernels)

    def _formulation(self, c_star: float, labeled: NDArray[np.bool_]) -> Formulation:
        """The convex stage at cost C* on the unlabeled points (the registered "s3vm")."""
        return S3VM(C=float(self.C), C_star=float(c_star), labeled=labeled)

    def _stage_settings(self) -> StageSettings:
        """What the solver engines need of this estimator."""
        return StageSettings(self._formulation, self.solver, self.solver_tol, self.init,
                             self.xv, self.max_iter, self.tol, self.verbose)

    def _resolve_n_expansion(self, X: Array, target: NDArray[Any] | None, kernel: Kernel | None,
                             weights: Array | None) -> tuple[int, int | None]:
        """Nz of the sparse model: a count, or a ratio of all training points (labeled or not).

        At most the number of distinct training points; no full model is fitted (None).
        """
        n_distinct, n_exp = count_distinct(X), self.n_expansion
        assert n_exp is not None  # the sparse model's
        nz = int(n_exp) if isinstance(n_exp, Integral) else max(1, round(float(n_exp) * len(X)))
        if nz > n_distinct:
            raise ValueError(f"n_expansion={self.n_expansion} asks for {nz} expansion "
                             f"vectors but there are only {n_distinct} distinct training "
                             "points; lower n_expansion.")
        return nz, None

    def fit(self, X: ArrayLike, y: ArrayLike) -> SemiSupervisedSVC:
        """Fit the semi-supervised SVM on labeled and unlabeled points.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            All training inputs, labeled and unlabeled.
        y : array-like of shape (n_samples,)
            Class labels, with ``unlabeled`` (default -1) for unlabeled points.

        Returns
        -------
        self
        """
        self._validate_params()
        if y is None:
            validate_rows(self, X, y)  # scikit-learn's own "requires y" error
        X_fit: Array = validate_rows(self, X, dtype=np.float64)
        labeled, y_lab, self.classes_ = split_labels(X_fit, y, self.unlabeled, type(self).__name__)
        check_solver(self.solver)
        kernels = resolve_kernels(X_fit, self.kernels, kernel=self.kernel, gamma=self.gamma,
                                  degree=self.degree, coef0=self.coef0, manifold=self.manifold,
                                  normalize=self.normalize_kernels)
        lab_idx, unl_idx = np.flatnonzero(labeled), np.flatnonzero(~labeled)
        r = float(np.mean(y_lab > 0)) if self.balance is None else float(self.balance)
        c_final = float(self.C if self.C_star is None else self.C_star)

        smooth = self.optimizer == "smooth-qn" and len(unl_idx) > 0
        if smooth and self.n_expansion is not None:
            raise ValueError("optimizer='smooth-qn' is implemented for the dense model only; "
                             "set n_expansion=None or use optimizer='switching'.")
        settings = self._stage_settings()
        if self.n_expansion is None:
            engine: _Dense | _Sparse = _Dense(settings, X_fit, kernels, labeled)
        else:
            nz, _ = self._resolve_n_expansion(X_fit, None, None, None)
            seed = check_random_state(self.random_state).randint(np.iinfo(np.int32).max)
            engine = _Sparse(settings, X_fit, kernels, labeled, nz, int(seed))

        progress = _Progress(self.verbose)
        found = search_labels(
            SearchSettings(self.C, self._formulation, self.solver_tol, self.p,
                           self.mkl_max_iter, self.mkl_tol, self.max_switch_rounds,
                           self.max_iter),
            engine, kernels, X_fit, labeled, y_lab, r, c_final, smooth, progress)
        theta, final = found.theta, found.state
        Z, coef, support = engine.expansion(final)
        self._set_expansions(
            combined_kernel(kernels, theta),
            [{"Z": np.asarray(Z, dtype=float), "coef": coef, "intercept": final.intercept,
              "n_iter": progress.n_iter, "history": np.asarray(progress.history, dtype=float),
              "value": float(final.value)}],
            None)
        self.coef_ = self.expansion_coef_
        self.kernel_weights_ = np.asarray(theta, dtype=float)
        self.support_ = support
        self.balance_ = r
        self.n_switches_ = progress.n_switches
        self.n_mkl_iter_ = found.n_mkl_iter
        self.n_lbfgs_iter_ = engine.n_lbfgs if isinstance(engine, _Sparse) else 0
        if isinstance(engine, _Sparse):
            warn_if_not_converged(type(self).__name__, engine.runs, self.max_iter)
        g = final.outputs
        self.s3vm_objective_ = float(
            0.5 * engine.norm2(theta, final)
            + self.C * np.maximum(0.0, 1.0 - y_lab * g[lab_idx]).sum()
            + c_final * np.maximum(0.0, 1.0 - np.abs(g[unl_idx])).sum()
        )
        self.transduction_ = self.classes_[(found.labels > 0).astype(int)]
        warn_if_one_sided(g[unl_idx], found.labels[unl_idx], r)
        return self
