"""The two solver engines of the semi-supervised SVM: the convex stage, dense or sparse.

At fixed temporary labels and kernel weights θ the semi-supervised SVM is a
convex SVM with per-point costs (the ``"s3vm"`` formulation). An engine solves
it and reports the machine as a `_State`:

* `_Dense`: the full kernel problem, the XVs being all training points
  (libsvm on the precomputed kernel Σ_m θ_m K_m, or a cvxpy backend);
* `_Sparse`: Nz XVs, free ones moved by L-BFGS on W(Z) (the direct method,
  with the gradient of Lemma 1) or kept on training points, with exact
  re-solves at fixed XVs by libsvm on the rank-Nz kernel.

Both give the block norms ‖w_m‖² the Lp-norm θ-step needs (`norms2`) and the
fitted expansion (`expansion`). `_Progress` counts what a fit reports: the
convex solves, the switched pairs and the objective after each solve.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from sparsify.algorithms.s3vm.mkl import block_norms2, combined_kernel
from sparsify.core.conic import make_marginal
from sparsify.core.declared import CvxpyMarginal
from sparsify.core.estimator import optimise_start
from sparsify.core.formulation import Formulation
from sparsify.core.kernel_blocks import diagonal_scale
from sparsify.core.optimize import OptimizeResult, initial_expansion_vectors
from sparsify.kernels import Kernel

__all__: list[str] = []

Array = NDArray[np.float64]


@dataclass(frozen=True)
class StageSettings:
    """What the engines need of the estimator: how to make a stage's formulation, and the
    solver and L-BFGS settings."""

    formulation: Callable[[float, NDArray[np.bool_]], Formulation]
    solver: str
    solver_tol: float
    init: str
    xv: str
    max_iter: int
    tol: float
    verbose: int


@dataclass
class _State:
    """One convex solve: β on the XVs, b, g on the training points, the objective."""

    coef: Array
    intercept: float
    outputs: Array
    value: float


@dataclass
class _Progress:
    """What a fit counts: convex solves, switched label pairs, the objective after each solve.

    ``verbose`` > 0 prints the `log` lines.
    """

    verbose: int = 0
    n_iter: int = 0
    n_switches: int = 0
    history: list[float] = field(default_factory=list)

    def solved(self, state: _State) -> _State:
        """Count one convex solve (one annealing stage of the smooth optimiser) and its value."""
        self.n_iter += 1
        self.history.append(float(state.value))
        return state

    def log(self, msg: str) -> None:
        if self.verbose:
            print(f"[SemiSupervisedSVC] {msg}", flush=True)


class _Dense:
    """The full kernel problem: the XVs are all training points, fixed."""

    def __init__(self, est: StageSettings, X: Array, kernels: list[Kernel],
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
        form = est.formulation(c_star, self.labeled)
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

    def __init__(self, est: StageSettings, X: Array, kernels: list[Kernel],
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
        form = est.formulation(c_star, self.labeled)
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
            res: OptimizeResult = optimise_start(marginal, self.Z, est.max_iter, est.tol, None,
                                            est.verbose, stage, None)["result"]
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
