"""Semi-supervised SVM with Lp-norm multiple kernels and manifold kernels.

After the paper "Lp-norm constrained multiple kernel semi-supervised SVM"
(Lp-MKL-S3VM). `SemiSupervisedSVC` learns from a few labeled and many unlabeled
points (marked in ``y`` as scikit-learn's semi-supervised estimators do). It
follows the paper's Algorithm 1 and 2: temporary labels for the unlabeled points from
the ranked decision values of a supervised SVM, a convex SVM at fixed labels
(the ``"s3vm"`` formulation, with per-point costs), pairwise label switching
that keeps the balance constraint, C* annealed from 10⁻⁵·C* to C* ×10 per
stage, and, with several kernels, the closed-form Lp-norm update of the kernel
weights between f-steps. Dense (XVs = all training points) or sparse (Nz free
XVs moved by the direct method at every stage).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, Options, RealNotInt, StrOptions
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import (
    _assert_all_finite,
    check_consistent_length,
    column_or_1d,
    validate_data,
)

from sparsify.algorithms.s3vm.mkl import alternate, block_norms2, combined_kernel, uniform_weights
from sparsify.core.estimator import KernelMachineMixin
from sparsify.core.formulation import Formulation, make_formulation
from sparsify.core.marginal import CvxpyMarginal, diagonal_scale, make_marginal
from sparsify.core.optimize import (
    INIT_METHODS,
    OptimizeResult,
    initial_expansion_vectors,
    minimize_marginal,
    problem_line,
    warn_if_not_converged,
)
from sparsify.core.registry import get_registry
from sparsify.kernels import RBF, Kernel, SumKernel, make_kernel
from sparsify.kernels.manifold import ManifoldKernel

__all__ = ["SemiSupervisedSVC", "s3vm_objective", "switch_labels"]

Array = NDArray[np.float64]

#: Smallest loss decrease (unweighted) for which a pair of labels is switched;
#: above the solvers' accuracy, so that switching cannot cycle on round-off.
SWITCH_GAIN = 1e-6


def _hinge(t: Array) -> Array:
    return np.maximum(0.0, 1.0 - t)


def switch_labels(y: Array, outputs: Array, candidates: NDArray[np.intp]) -> int:
    """Switch pairs of temporary labels where that lowers the loss (Lp-MKL-S3VM paper, eq. 20).

    At fixed outputs g, switching a positive i and a negative j among the
    ``candidates`` (the unlabeled points) changes the loss by
    ``[V(−g_i) + V(g_j)] − [V(g_i) + V(−g_j)]`` (V the hinge loss, the exact
    rule of eq. 20; for points inside the margin it is S3VMlight's
    ξ_i + ξ_j > 2). Disjoint pairs change the loss independently, so every
    pair with a decrease is switched at once: the positives and the negatives
    are sorted by their own gain and paired in that order while the pair's
    gain is positive. The number of positives is unchanged (the balance
    constraint holds), and the objective at fixed (w, b) falls strictly.

    Parameters
    ----------
    y : ndarray of shape (N,)
        Labels in {-1, +1}; modified in place.
    outputs : ndarray of shape (N,)
        Decision values g = f + b.
    candidates : ndarray of int
        Indices whose labels may be switched.

    Returns
    -------
    int
        Number of pairs switched.

    Examples
    --------
    >>> y = np.array([1.0, 1.0, -1.0, -1.0])
    >>> switch_labels(y, np.array([-0.8, 2.0, 0.5, -3.0]), np.arange(4))
    1
    >>> y
    array([-1.,  1.,  1., -1.])
    """
    t = y[candidates] * outputs[candidates]
    gain = _hinge(t) - _hinge(-t)  # loss decrease if this point's label flips
    pos, neg = candidates[y[candidates] > 0], candidates[y[candidates] < 0]
    g_pos, g_neg = gain[y[candidates] > 0], gain[y[candidates] < 0]
    op, on = np.argsort(-g_pos, kind="stable"), np.argsort(-g_neg, kind="stable")
    n = min(len(op), len(on))
    pair_gain = g_pos[op[:n]] + g_neg[on[:n]]
    k = int(np.count_nonzero(pair_gain > SWITCH_GAIN))  # non-increasing: a prefix
    y[pos[op[:k]]] = -1.0
    y[neg[on[:k]]] = 1.0
    return k


#: Width of the softplus that smooths the hinge loss in ``optimizer="smooth-qn"``.
SMOOTH_HINGE = 0.1
#: s in exp(−s g²), the smooth surrogate of the symmetric loss (Chapelle & Zien 2005).
SMOOTH_SYMMETRIC = 3.0


def _unit_trace(kernel: Kernel, X: Array) -> Kernel:
    """The kernel scaled to mean diagonal 1 on X (Lp-MKL's usual normalisation)."""
    mean = float(np.mean(kernel.diag(X)))
    if not mean > 0 or abs(mean - 1.0) < 1e-12:
        return kernel
    return SumKernel((kernel,), (1.0 / mean,))


def s3vm_objective(K: Array, coef: Array, intercept: float, y: Array,
                   labeled: NDArray[np.bool_], C: float, C_star: float) -> float:
    """The Lp-MKL-S3VM paper's eq. 1 without the balance constraint, for a dense g = Kβ + b.

    ½ βᵀKβ + C Σ_labeled max(0, 1 − y_i g_i) + C* Σ_unlabeled max(0, 1 − |g_j|); ``y``
    is read on the labeled points only. The common yardstick of both optimizers.

    Examples
    --------
    >>> K = np.eye(2); lab = np.array([True, False])
    >>> s3vm_objective(K, np.array([1.0, 0.5]), 0.0, np.array([1.0, 0.0]), lab, 1.0, 1.0)
    1.125
    """
    g = K @ coef + intercept
    hinge = np.maximum(0.0, 1.0 - y[labeled] * g[labeled]).sum()
    symmetric = np.maximum(0.0, 1.0 - np.abs(g[~labeled])).sum()
    return float(0.5 * coef @ K @ coef + C * hinge + C_star * symmetric)


def _smooth_qn_stage(K: Array, y: Array, labeled: NDArray[np.bool_], C: float, c_star: float,
                     r: float, beta0: Array, max_iter: int) -> Array:
    """L-BFGS on the smoothed S3VM objective (dense), b eliminated by the balance constraint.

    Minimises ½βᵀKβ + C Σ_l h·softplus((1 − y_i g_i)/h) + C* Σ_u exp(−s g_j²) with
    g = Kβ + b and b chosen so that the mean output on the unlabeled points is
    2r − 1 (the balance constraint of ∇S3VM / TSVM).
    """
    from scipy.optimize import minimize
    from scipy.special import expit

    unl = ~labeled
    m = unl / unl.sum()
    h, s = SMOOTH_HINGE, SMOOTH_SYMMETRIC
    yl = y[labeled]

    def fun(beta: Array) -> tuple[float, Array]:
        Kb = K @ beta
        g = Kb - m @ Kb + (2 * r - 1)
        z = (1.0 - yl * g[labeled]) / h
        loss_l = h * np.logaddexp(0.0, z)
        e = np.exp(-s * g[unl] ** 2)
        v = np.zeros_like(g)  # dJ/dg
        v[labeled] = -C * yl * expit(z)
        v[unl] = -2.0 * s * c_star * g[unl] * e
        value = 0.5 * beta @ Kb + C * loss_l.sum() + c_star * e.sum()
        # g = P K β + const with P = I − 1 mᵀ, so dJ/dβ = Kβ + K Pᵀ v
        return float(value), Kb + K @ (v - m * v.sum())

    res = minimize(fun, beta0, jac=True, method="L-BFGS-B",
                   options={"maxiter": max_iter, "ftol": 1e-12, "gtol": 1e-8})
    return np.asarray(res.x)


@dataclass
class _State:
    """One convex solve: β on the XVs, b, g on the training points, the objective."""

    coef: Array
    intercept: float
    outputs: Array
    value: float


class _Dense:
    """The full kernel problem: the XVs are all training points, fixed."""

    def __init__(self, est: SemiSupervisedSVC, X: Array, kernels: list[Kernel],
                 labeled: NDArray[np.bool_]) -> None:
        self.est, self.X, self.kernels, self.labeled = est, X, kernels, labeled
        self.grams = [k(X, X) for k in kernels]
        self._theta: tuple[float, ...] | None = None
        self._K: Array | None = None

    def gram(self, theta: Array) -> Array:
        key = tuple(float(t) for t in theta)
        if key != self._theta:
            self._K = sum(t * G for t, G in zip(theta, self.grams, strict=True))
            self._theta = key
        assert self._K is not None
        return self._K

    def solve(self, theta: Array, y: Array, c_star: float, move: bool = True) -> _State:
        est = self.est
        form = est._formulation(c_star, self.labeled)
        K = self.gram(theta)
        sol = form.solve_precomputed(K, y, est.solver_tol) if est.solver == "auto" else None
        if sol is not None:  # the formulation's own full-kernel solver
            return _State(sol.coef, sol.intercept, sol.outputs, sol.value)
        kernel = combined_kernel(self.kernels, theta)
        ev = CvxpyMarginal(form, self.X, y, kernel, len(self.X),
                           solver="auto" if est.solver == "auto" else est.solver,
                           tol=est.solver_tol).evaluate(self.X, grad=False)
        b = float(ev.intercept)
        return _State(ev.coef, b, K @ ev.coef + b, ev.value)

    def norms2(self, theta: Array, state: _State) -> Array:
        return np.array([t * t * float(state.coef @ G @ state.coef)
                         for t, G in zip(theta, self.grams, strict=True)])

    def norm2(self, theta: Array, state: _State) -> float:
        """‖w‖² = βᵀ K β of the machine with kernel Σ θ_m k_m."""
        return float(state.coef @ self.gram(theta) @ state.coef)

    def expansion(self, state: _State) -> tuple[Array, Array, NDArray[np.intp]]:
        scale = float(np.abs(state.coef).max()) if len(state.coef) else 0.0
        support = np.flatnonzero(np.abs(state.coef) > 1e-12 * scale)
        return self.X[support], state.coef[support], support


class _Sparse:
    """Nz XVs: free ones moved by L-BFGS on W(Z) (the direct method), or data points kept."""

    def __init__(self, est: SemiSupervisedSVC, X: Array, kernels: list[Kernel],
                 labeled: NDArray[np.bool_], n_expansion: int, seed: int) -> None:
        self.est, self.X, self.kernels, self.labeled = est, X, kernels, labeled
        init = est.init
        Z = initial_expansion_vectors(X, n_expansion, init, seed)
        if est.xv == "data" and init == "kmeans":
            # snap the centres to distinct training points
            from sklearn.metrics import pairwise_distances_argmin

            distinct = np.unique(X, axis=0)
            idx = pairwise_distances_argmin(Z, distinct)
            idx = np.unique(idx)
            if len(idx) < n_expansion:  # two centres share a point: fill at random
                rest = np.setdiff1d(np.arange(len(distinct)), idx)
                rng = np.random.default_rng(seed)
                idx = np.concatenate([idx, rng.choice(rest, n_expansion - len(idx), False)])
            Z = distinct[np.sort(idx)]
        self.Z = Z
        self.n_lbfgs = 0
        #: (name, OptimizeResult) of every L-BFGS run, for the convergence warning
        self.runs: list[tuple[str, OptimizeResult]] = []

    def solve(self, theta: Array, y: Array, c_star: float, move: bool = True) -> _State:
        est = self.est
        form = est._formulation(c_star, self.labeled)
        kernel = combined_kernel(self.kernels, theta)
        moving = move and est.xv == "free" and est.max_iter > 0
        if not moving and est.solver == "auto":
            state = self._solve_fixed(form, kernel, y)
            if state is not None:
                return state
        marginal = make_marginal(form, self.X, y, kernel, len(self.Z), est.solver,
                                 est.solver_tol)
        if moving:
            stage = f"stage {len(self.runs) + 1} (C* = {c_star:.3g})"
            res = minimize_marginal(marginal, self.Z, max_iter=est.max_iter, tol=est.tol,
                                    verbose=est.verbose >= 2, problem=stage)
            if est.verbose:
                print(problem_line(stage, res), flush=True)
            self.runs.append((stage, res))
            self.Z, ev = res.Z, res.evaluation
            self.n_lbfgs += res.n_iter
        else:
            ev = marginal.evaluate(self.Z, grad=False)
        b = float(ev.intercept)
        return _State(ev.coef, b, kernel(self.X, self.Z) @ ev.coef + b, ev.value)

    def _solve_fixed(self, form: Formulation, kernel: Kernel, y: Array) -> _State | None:
        """The convex problem at fixed XVs by libsvm, without a gradient (None: no libsvm).

        At fixed Z it is an SVM on the features F = K_XZ V Λ^{-1/2} (K_ZZ = V Λ Vᵀ),
        i.e. on the rank-Nz kernel F Fᵀ = K_XZ K_ZZ⁻¹ K_ZX; libsvm's SMO solves it
        from scratch robustly, which is what the re-solves after label switching
        need (no warm start applies once labels changed). β = V Λ^{-1/2} Fᵀ a for
        libsvm's coefficients a, so that K_XZ β = F Fᵀ a and βᵀ K_ZZ β = aᵀ F Fᵀ a.
        """
        Z = self.Z
        K_xz = kernel(self.X, Z)
        # the same jitter as the marginals, so every path solves the same problem
        jitter = 1e-10 * max(diagonal_scale(kernel, self.X), 1e-300)
        lam, V = np.linalg.eigh(kernel(Z, Z) + jitter * np.eye(len(Z)))
        keep = lam > 1e-12 * lam.max()
        T = V[:, keep] / np.sqrt(lam[keep])
        F = K_xz @ T
        sol = form.solve_precomputed(F @ F.T, y, self.est.solver_tol)
        if sol is None:
            return None
        beta = T @ (F.T @ sol.coef)
        return _State(beta, sol.intercept, sol.outputs, sol.value)

    def norms2(self, theta: Array, state: _State) -> Array:
        return block_norms2(self.kernels, theta, self.Z, state.coef)

    def norm2(self, theta: Array, state: _State) -> float:
        """‖w‖² = βᵀ K(Z, Z) β of the machine with kernel Σ θ_m k_m."""
        K = combined_kernel(self.kernels, theta)(self.Z, self.Z)
        return float(state.coef @ K @ state.coef)

    def expansion(self, state: _State) -> tuple[Array, Array, None]:
        return self.Z, state.coef, None


class SemiSupervisedSVC(KernelMachineMixin, ClassifierMixin, BaseEstimator):
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
        cvxpy backend name ("clarabel", "ecos", "osqp") solves the generic
        declaration instead (the reference; slow for large N).
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
    n_expansion_ : int
        Nz (dense: the number of support vectors).
    support_ : ndarray of int or None
        Dense: indices of the support vectors among the training points.
    objective_ : float
        Final objective ½‖w‖² + Σ_i c_i ξ_i at the final labels (equal to the
        paper's eq. 1 when no unlabeled point keeps a worse label); for
        ``optimizer="smooth-qn"`` the paper's eq. 1.
    s3vm_objective_ : float
        The paper's eq. 1 (hinge on labeled points, max(0, 1 − |g|) on unlabeled
        ones, no balance term) at the fitted machine: the yardstick to compare
        optimizers.
    n_switches_ : int
        Pairs of temporary labels switched in all.
    n_iter_ : int
        Convex solves in all (one per annealing stage, plus one after each
        round of label switching, plus the sparse version's extra passes).
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

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "C": [Interval(Real, 0.0, None, closed="neither")],
        "C_star": [Interval(Real, 0.0, None, closed="neither"), None],
        "balance": [Interval(Real, 0.0, 1.0, closed="neither"), None],
        "kernel": [str, Kernel],
        "gamma": [StrOptions({"scale", "auto"}), Interval(Real, 0.0, None, closed="neither")],
        "degree": [Interval(Integral, 1, None, closed="left")],
        "coef0": [Real],
        "kernels": [list, tuple, None],
        "normalize_kernels": ["boolean"],
        "p": [Interval(Real, 1.0, None, closed="left"), Options(Real, {np.inf})],
        "manifold": ["boolean", dict, None],
        "n_expansion": [
            Interval(Integral, 1, None, closed="left"),
            Interval(RealNotInt, 0.0, 1.0, closed="right"),
            None,
        ],
        "unlabeled": "no_validation",
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "max_switch_rounds": [Interval(Integral, 0, None, closed="left")],
        "mkl_max_iter": [Interval(Integral, 0, None, closed="left")],
        "mkl_tol": [Interval(Real, 0.0, None, closed="left")],
        "init": [StrOptions(set(INIT_METHODS))],
        "xv": [StrOptions({"free", "data"})],
        "optimizer": [StrOptions({"switching", "smooth-qn"})],
        "tol": [Interval(Real, 0.0, None, closed="left")],
        "solver_tol": [Interval(Real, 0.0, None, closed="neither")],
        "solver": [str],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
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

    def __sklearn_tags__(self):  # type: ignore[no-untyped-def]
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    # -- helpers -----------------------------------------------------------------------------

    @staticmethod
    def default_mkl_kernels(
        X: ArrayLike | None = None,
        *,
        sigmas: ArrayLike | None = None,
        gammas: ArrayLike | None = None,
        n_neighbors: int = 5,
        gamma_ratio: float = 1.0,
        laplacian_power: int = 1,
        normalized: bool = False,
    ) -> list[Kernel]:
        """The Lp-MKL-S3VM paper's kernels: 3 Gaussian base kernels and the 3 manifold ones on them.

        Parameters
        ----------
        X : array-like of shape (N, d), optional
            Training inputs; when neither ``sigmas`` nor ``gammas`` is given,
            the widths are 1/4, 1 and 4 times scikit-learn's "scale" gamma of X.
        sigmas : array-like, optional
            Widths σ of ``exp(−‖x − z‖² / (2σ²))``, as the paper's Table 2 gives them.
        gammas : array-like, optional
            Or the coefficients γ = 1 / (2σ²) directly.
        n_neighbors, gamma_ratio, laplacian_power, normalized
            Options of the `ManifoldKernel` entries, which are unbound (the
            estimator builds their graph on its training points); each
            graph's edge weights use its kernel's γ.

        Returns
        -------
        list of Kernel
            ``[RBF(γ_1), RBF(γ_2), RBF(γ_3), manifold(γ_1), manifold(γ_2), manifold(γ_3)]``

        Examples
        --------
        >>> ks = SemiSupervisedSVC.default_mkl_kernels(sigmas=[0.1, 0.5, 1.0])
        >>> [type(k).__name__ for k in ks]
        ['RBF', 'RBF', 'RBF', 'ManifoldKernel', 'ManifoldKernel', 'ManifoldKernel']
        >>> ks[2]
        RBF(gamma=0.5)
        """
        from sparsify.kernels import resolve_gamma

        if gammas is None and sigmas is not None:
            gammas = 1.0 / (2.0 * np.asarray(sigmas, dtype=float) ** 2)
        if gammas is None:
            if X is None:
                raise ValueError("default_mkl_kernels needs X, sigmas or gammas to set the "
                                 "kernel widths.")
            g = resolve_gamma("scale", np.asarray(X, dtype=float))
            gammas = [g / 4, g, 4 * g]
        base: list[Kernel] = [RBF(float(g)) for g in np.asarray(gammas, dtype=float).ravel()]
        deformed: list[Kernel] = [
            ManifoldKernel(k, n_neighbors=n_neighbors, gamma_ratio=gamma_ratio,
                           laplacian_power=laplacian_power, normalized=normalized)
            for k in base
        ]
        return base + deformed

    def _formulation(self, c_star: float, labeled: NDArray[np.bool_]) -> Formulation:
        return make_formulation("s3vm", C=float(self.C), C_star=float(c_star), labeled=labeled)

    def _manifold_options(self) -> dict[str, Any]:
        if isinstance(self.manifold, dict):
            return dict(self.manifold)
        return {}

    def _resolve_kernels(self, X: Array) -> list[Kernel]:
        def deform(base: Kernel, options: dict[str, Any] | None = None) -> Kernel:
            opts = self._manifold_options() if options is None else options
            try:
                return ManifoldKernel(base, **opts).bind(X)
            except TypeError as exc:
                raise ValueError(f"The manifold options {opts!r} hold one ManifoldKernel "
                                 f"does not take: {exc}") from exc

        def named(spec: str | Kernel) -> Kernel:
            return make_kernel(spec, X, self.gamma, self.degree, self.coef0)

        base = named(self.kernel)
        if self.kernels is None:
            return [deform(base) if self.manifold else base]
        if len(self.kernels) == 0:
            raise ValueError("kernels is empty; pass at least one kernel, or None for the "
                             "single kernel.")
        out: list[Kernel] = []
        for spec in self.kernels:
            if isinstance(spec, ManifoldKernel):
                out.append(spec.bind(X) if spec.X_graph is None else spec)
            elif isinstance(spec, Kernel):
                out.append(spec)
            elif isinstance(spec, str) and spec == "manifold":
                out.append(deform(base))
            elif isinstance(spec, str) and spec.startswith("manifold:"):
                out.append(deform(named(spec.split(":", 1)[1])))
            elif isinstance(spec, str):
                out.append(named(spec))
            elif isinstance(spec, dict) and set(spec) <= {"kernel", "manifold"} and spec:
                kernel = named(spec.get("kernel", self.kernel))
                options = spec.get("manifold")
                if options is True:
                    options = {}
                if options is None or options is False:
                    out.append(kernel)
                elif isinstance(options, dict):
                    out.append(deform(kernel, options))
                else:
                    raise ValueError(f"The 'manifold' of a kernels entry must be a dict of "
                                     f"ManifoldKernel options, True or None; got {options!r}.")
            else:
                raise ValueError(f"Each entry of kernels must be a Kernel, a kernel name, "
                                 f"'manifold', 'manifold:<name>' or a dict with the keys "
                                 f"'kernel' and 'manifold'; got {spec!r}.")
        return out

    def _split_labels(self, X: Array, y: ArrayLike) -> tuple[NDArray[np.bool_], Array]:
        """Mask of labeled points and their labels in {-1, +1}; sets ``classes_``."""
        y = column_or_1d(y, warn=True)
        check_consistent_length(X, y)
        marker = self.unlabeled
        marker_is_nan = isinstance(marker, float | np.floating) and np.isnan(marker)
        if marker_is_nan:
            if y.dtype.kind == "f":
                unl = np.isnan(y)
            elif y.dtype.kind == "O":
                unl = np.array([isinstance(v, float | np.floating) and np.isnan(v) for v in y],
                               dtype=bool)
            else:
                unl = np.zeros(len(y), dtype=bool)
        elif y.dtype.kind in "OUS" or isinstance(marker, str):
            unl = np.array([type(v) is type(marker) and v == marker for v in y.tolist()],
                           dtype=bool) if y.dtype.kind != "O" else np.array(
                [v == marker for v in y], dtype=bool)
        else:
            unl = np.asarray(y == marker, dtype=bool).reshape(len(y))
        labeled = ~unl
        y_lab = y[labeled]
        if not labeled.any():
            raise ValueError(f"All {len(y)} points are unlabeled (y == {marker!r} everywhere); "
                             "label at least one point of each class.")
        if y_lab.dtype.kind in "fc":
            _assert_all_finite(y_lab, input_name="y")
        check_classification_targets(y_lab)
        classes = np.unique(y_lab)
        if len(classes) > 2:
            raise ValueError(
                "Only binary classification is supported. The type of the target is "
                f"{type_of_target(y_lab, input_name='y')}; train one model per class "
                "(one-vs-rest) for more classes."
            )
        if len(classes) < 2:
            only = classes[0]
            if unl.any() and not marker_is_nan and marker == -1 and only == 1:
                raise ValueError(
                    "y holds only the values -1 and 1, and unlabeled=-1 reads every -1 as "
                    "unlabeled, which leaves 1 class. If -1 and +1 are the classes, mark the "
                    "unlabeled points with another value, e.g. unlabeled=0 or NaN in a float "
                    "y (unlabeled=np.nan)."
                )
            raise ValueError(
                f"{type(self).__name__} needs labeled points of 2 classes; got 1 class "
                f"({only!r}) among the {int(labeled.sum())} labeled points. Label at least one "
                "point of the other class."
            )
        self.classes_ = classes
        return labeled, np.where(y_lab == classes[1], 1.0, -1.0)

    def _log(self, msg: str) -> None:
        if self.verbose:
            print(f"[SemiSupervisedSVC] {msg}", flush=True)

    # -- fit ---------------------------------------------------------------------------------

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
            validate_data(self, X, y)  # scikit-learn's own "requires y" error
        X = validate_data(self, X, dtype=np.float64)
        labeled, y_lab = self._split_labels(X, y)
        if self.solver != "auto":
            get_registry().get("solver", self.solver)
        kernels = self._resolve_kernels(X)
        if self.kernels is not None and self.normalize_kernels:
            kernels = [_unit_trace(k, X) for k in kernels]
        M = len(kernels)
        p = float(self.p)
        N, lab_idx, unl_idx = len(X), np.flatnonzero(labeled), np.flatnonzero(~labeled)
        r = float(np.mean(y_lab > 0)) if self.balance is None else float(self.balance)
        c_final = float(self.C if self.C_star is None else self.C_star)

        smooth = self.optimizer == "smooth-qn" and len(unl_idx) > 0
        if smooth and self.n_expansion is not None:
            raise ValueError("optimizer='smooth-qn' is implemented for the dense model only; "
                             "set n_expansion=None or use optimizer='switching'.")
        if self.n_expansion is None:
            engine: _Dense | _Sparse = _Dense(self, X, kernels, labeled)
        else:
            n_distinct = len(np.unique(X, axis=0))
            nz = (int(self.n_expansion) if isinstance(self.n_expansion, Integral)
                  else max(1, round(float(self.n_expansion) * N)))
            if nz > n_distinct:
                raise ValueError(f"n_expansion={self.n_expansion} asks for {nz} expansion "
                                 f"vectors but there are only {n_distinct} distinct training "
                                 "points; lower n_expansion.")
            seed = check_random_state(self.random_state).randint(np.iinfo(np.int32).max)
            engine = _Sparse(self, X, kernels, labeled, nz, int(seed))

        # Algorithm 2, steps 1-4: uniform θ, a supervised (MKL) SVM on the labeled
        # points, temporary labels by ranking its decision values with ratio r.
        theta = uniform_weights(M, p) if M > 1 else np.ones(1)
        y_all = np.zeros(N)
        y_all[lab_idx] = y_lab
        if len(unl_idx):
            theta, scores = self._supervised_start(kernels, X, lab_idx, unl_idx, y_lab, theta)
            n_pos = round(r * len(unl_idx))
            order = np.argsort(-scores, kind="stable")
            y_all[unl_idx] = -1.0
            y_all[unl_idx[order[:n_pos]]] = 1.0
            self._log(f"{len(lab_idx)} labeled, {len(unl_idx)} unlabeled points, r = {r:.3f}, "
                      f"{n_pos} temporary positives")

        stages = [c_final * 10.0 ** (k - 5) for k in range(6)] if len(unl_idx) else [c_final]
        self.n_switches_ = 0
        self.n_iter_ = 0
        state: list[_State] = []

        def f_step(th: Array, iteration: int) -> Array:
            todo = stages if iteration == 0 else stages[-1:]
            if smooth:
                assert isinstance(engine, _Dense)
                state[:] = [self._smooth_f_step(engine, th, y_all, labeled, r, todo,
                                                state[0].coef if state else None)]
            else:
                # sparse: the XVs move in the first f-step and in the final one below;
                # the f-steps between θ-steps keep them (libsvm re-solves, no L-BFGS)
                state[:] = [self._f_step(engine, th, y_all, unl_idx, todo,
                                         move=iteration == 0)]
            return engine.norms2(th, state[0])

        if M > 1 and self.mkl_max_iter > 0:
            res = alternate(f_step, M, p, theta0=theta, max_iter=self.mkl_max_iter,
                            tol=self.mkl_tol)
            theta = res.theta
            self.n_mkl_iter_ = res.n_iter
            if isinstance(engine, _Sparse) and res.n_iter > 0:
                state[:] = [self._f_step(engine, theta, y_all, unl_idx, stages[-1:])]
        else:
            f_step(theta, 0)
            self.n_mkl_iter_ = 0
        final = state[0]

        Z, coef, support = engine.expansion(final)
        self.kernel_ = combined_kernel(kernels, theta)
        self.kernel_weights_ = np.asarray(theta, dtype=float)
        self.expansion_vectors_ = np.asarray(Z, dtype=float)
        self.expansion_coef_ = np.asarray(coef, dtype=float).reshape(1, -1)
        self.coef_ = self.expansion_coef_
        self.intercept_ = np.array([final.intercept])
        self.n_expansion_ = len(Z)
        self.support_ = support
        self.n_lbfgs_iter_ = engine.n_lbfgs if isinstance(engine, _Sparse) else 0
        if isinstance(engine, _Sparse):
            warn_if_not_converged(type(self).__name__, engine.runs, self.max_iter)
        self.balance_ = r
        self.objective_ = float(final.value)
        g = final.outputs
        self.s3vm_objective_ = float(
            0.5 * engine.norm2(theta, final)
            + self.C * np.maximum(0.0, 1.0 - y_lab * g[lab_idx]).sum()
            + c_final * np.maximum(0.0, 1.0 - np.abs(g[unl_idx])).sum()
        )
        if smooth:
            y_all[unl_idx] = np.where(final.outputs[unl_idx] > 0, 1.0, -1.0)
        y_codes = (y_all > 0).astype(int)
        self.transduction_ = self.classes_[y_codes]
        self._warn_if_one_sided(g[unl_idx], y_all[unl_idx])
        return self

    def _warn_if_one_sided(self, outputs: Array, labels: Array) -> None:
        """Warn when f puts every unlabeled point on one side though the labels are mixed."""
        if not len(outputs) or len(np.unique(labels)) < 2:
            return
        side = outputs > 0
        if side.all() or not side.any():
            disagree = float(np.mean(side != (labels > 0)))
            warnings.warn(
                f"The decision function puts all {len(outputs)} unlabeled points on the "
                f"{'positive' if side.all() else 'negative'} side, while the balance r = "
                f"{self.balance_:.3g} makes transduction_ mixed: predict and transduction_ "
                f"disagree on {disagree:.1%} of them. The kernel is probably too stiff (a "
                "manifold gamma_ratio too large) or C too small.",
                UserWarning,
                stacklevel=3,
            )

    def _supervised_start(
        self, kernels: list[Kernel], X: Array, lab_idx: NDArray[np.intp],
        unl_idx: NDArray[np.intp], y_lab: Array, theta: Array,
    ) -> tuple[Array, Array]:
        """θ and decision values on the unlabeled points of a (MKL) SVM on the labeled points."""
        XL = X[lab_idx]
        grams = [k(XL, XL) for k in kernels]
        form = self._formulation(self.C, np.ones(len(lab_idx), dtype=bool))
        sol: list[Any] = []

        def step(th: Array, iteration: int) -> Array:
            K = sum(t * G for t, G in zip(th, grams, strict=True))
            sol[:] = [form.solve_precomputed(K, y_lab, self.solver_tol)]
            beta = sol[0].coef
            return np.array([t * t * float(beta @ G @ beta)
                             for t, G in zip(th, grams, strict=True)])

        if len(kernels) > 1 and self.mkl_max_iter > 0:
            theta = alternate(step, len(kernels), self.p, theta0=theta,
                              max_iter=self.mkl_max_iter, tol=self.mkl_tol).theta
        else:
            step(theta, 0)
        beta, b = sol[0].coef, sol[0].intercept
        sv = np.flatnonzero(beta)
        kernel = combined_kernel(kernels, theta)
        scores = (kernel(X[unl_idx], XL[sv]) @ beta[sv] + b) if len(sv) else np.full(
            len(unl_idx), b)
        return theta, scores

    def _smooth_f_step(self, engine: _Dense, theta: Array, y: Array,
                       labeled: NDArray[np.bool_], r: float, stages: list[float],
                       beta0: Array | None) -> _State:
        """``optimizer="smooth-qn"``: L-BFGS on the smoothed objective, C* annealed."""
        K = engine.gram(theta)
        unl = ~labeled
        beta = np.zeros(len(K)) if beta0 is None else beta0
        for c_star in stages:
            beta = _smooth_qn_stage(K, y, labeled, float(self.C), c_star, r, beta,
                                    max(200, self.max_iter))
            self.n_iter_ += 1
        Kb = K @ beta
        b = float(2 * r - 1 - Kb[unl].mean())
        value = s3vm_objective(K, beta, b, y, labeled, float(self.C), stages[-1])
        self._log(f"smooth-qn: objective (eq. 1) {value:.6g}")
        return _State(beta, b, Kb + b, value)

    def _f_step(self, engine: _Dense | _Sparse, theta: Array, y: Array,
                unl_idx: NDArray[np.intp], stages: list[float], move: bool = True) -> _State:
        """Algorithm 1 at fixed θ: per stage, a convex solve and label switching.

        ``move=False`` keeps the sparse version's XVs where they are.
        """
        state = None
        for s, c_star in enumerate(stages):
            last = s == len(stages) - 1
            # sparse: in the last stage move the XVs again after switching, until
            # no label switches (three passes at most)
            passes = 3 if (last and move and isinstance(engine, _Sparse)) else 1
            for _ in range(passes):
                state = engine.solve(theta, y, c_star, move=move)
                self.n_iter_ += 1
                switched = 0
                for _ in range(self.max_switch_rounds if len(unl_idx) else 0):
                    k = switch_labels(y, state.outputs, unl_idx)
                    if not k:
                        break
                    switched += k
                    state = engine.solve(theta, y, c_star, move=False)
                    self.n_iter_ += 1
                self.n_switches_ += switched
                self._log(f"C* = {c_star:.3g}: objective {state.value:.6g}, {switched} pairs "
                          "switched")
                if not switched:
                    break
        assert state is not None
        return state
