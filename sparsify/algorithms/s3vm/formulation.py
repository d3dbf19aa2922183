"""Semi-supervised SVM: the convex stage at fixed temporary labels.

The paper "Lp-norm constrained multiple kernel semi-supervised SVM" (Lp-MKL-S3VM;
eq. 1-2) minimises ½‖w‖² + C Σ_labeled max(0, 1 − y_i g_i)
+ C* Σ_unlabeled max(0, 1 − |g_j|) under a balance constraint, g = f + b. The
symmetric loss is the hinge loss at the better label,
max(0, 1 − |g|) = min_{ŷ=±1} max(0, 1 − ŷ g), so with temporary labels ŷ_u for
the unlabeled points the problem becomes, at fixed ŷ_u, an SVM with per-point
costs (C on labeled points, C* on unlabeled ones)::

    min ½‖w‖² + Σ_i c_i ξ_i   s.t.  y_i (f_i + b) ≥ 1 − ξ_i, ξ ≥ 0

This convex problem is the formulation `S3VM`; the labels are searched
outside it (annealing and pairwise label switching in
`sparsify.algorithms.s3vm.estimator.SemiSupervisedSVC`). Its exact fast path is
the SVM's dual solver with per-point costs (`SVMDualMarginal`), and for
the full kernel problem (Z = X) libsvm on the precomputed kernel
(`S3VM.solve_precomputed`).
"""

from __future__ import annotations

from numbers import Real
from typing import Any

import cvxpy as cp
import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.utils._param_validation import Interval

from sparsify import Declaration, Evaluation, Formulation, Kernel, Marginal, Outputs
from sparsify.algorithms.svm.formulation import one_class_support
from sparsify.core.formulation import FullSolution
from sparsify.core.kernel_blocks import diagonal_scale
from sparsify.core.params import check_params
from sparsify.svm_dual import SVMDualMarginal

Array = NDArray[np.float64]


class LowRankSVMMarginal(Marginal):
    """W(Z) and ∇W(Z) of the SVM with per-point costs by libsvm, from scratch at every Z.

    At fixed XVs the problem is an SVM on the features F = K_XZ V Λ^{-1/2}
    (K_ZZ + jitter = V Λ Vᵀ), i.e. on the rank-Nz kernel F Fᵀ = K_XZ K_ZZ⁻¹ K_ZX;
    libsvm's SMO solves it robustly without a warm start. With libsvm's
    coefficients a = α∘y: β = K_ZZ⁻¹ K_ZX a and, by Lemma 1 as in the fast path,
    ∂W/∂K_XZ = −a βᵀ, ∂W/∂K_ZZ = ½ββᵀ. Accurate to libsvm's KKT tolerance
    (about 1e-6 relative in W). Costs O(N²·Nz) time and an N × N matrix, so it
    serves as the fast path's fallback, not as the default.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import RBF
    >>> from sparsify.core.gradcheck import random_problem
    >>> X, y = random_problem(40, 2)
    >>> m = LowRankSVMMarginal(S3VM(C=2.0, C_star=0.5, labeled=np.arange(40) < 10), X, y,
    ...                        RBF(1.0), 5, tol=1e-10)
    >>> ev = m.evaluate(X[:5] + 0.1)
    >>> ev.grad.shape, ev.solver
    ((5, 2), 'libsvm')
    """

    def __init__(self, formulation: S3VM, X: Array, y: NDArray[Any], kernel: Kernel,
                 n_expansion: int, tol: float = 1e-9, jitter: float = 1e-10) -> None:
        self.formulation = formulation
        self.formulation_name = formulation.name
        self.X = np.asarray(X, dtype=float)
        self.y = np.asarray(y, dtype=float)
        self.kernel = kernel
        self.n_expansion = int(n_expansion)
        self.tol = float(tol)
        # the same jitter as the other paths, so all solve the same problem
        self.jitter = jitter * max(diagonal_scale(kernel, self.X), 1e-300)

    def evaluate(self, Z: Array, grad: bool = True) -> Evaluation:
        Z = np.asarray(Z, dtype=float)
        K_xz = self.kernel(self.X, Z)
        K_zz = self.kernel(Z, Z)
        lam, V = np.linalg.eigh(K_zz + self.jitter * np.eye(len(Z)))
        keep = lam > 1e-12 * lam.max()
        T = V[:, keep] / np.sqrt(lam[keep])
        F = K_xz @ T
        sol = self.formulation.solve_precomputed(F @ F.T, self.y, self.tol)
        beta = T @ (F.T @ sol.coef)
        if not grad:
            return Evaluation(sol.value, None, beta, sol.intercept, "libsvm")
        gradient = (self.kernel.vjp_z(self.X, Z, -np.outer(sol.coef, beta), K_xz)
                    + self.kernel.vjp_zz(Z, 0.5 * np.outer(beta, beta), K_zz))
        return Evaluation(sol.value, gradient, beta, sol.intercept, "libsvm")


class S3VM(Formulation):
    """SVM with per-point costs: C on labeled points, C* on the (temporarily labeled) rest.

    The convex stage of the semi-supervised SVM of the Lp-MKL-S3VM paper at
    fixed temporary labels; ``y`` holds the true labels of the labeled points
    and the temporary ones of the others, all in {-1, +1}.

    Parameters
    ----------
    C : float, default=1.0
        Cost of the hinge loss on labeled points.
    C_star : float, default=1e-3
        Cost on unlabeled points (annealed up to its final value by the estimator).
    labeled : array-like of bool, shape (N,), or None, default=None
        Which training points are labeled; None means all (a plain SVM with cost C).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import CvxpyMarginal, RBF
    >>> X = np.array([[0.0, 0.0], [0.2, 0.1], [1.0, 1.0], [0.9, 1.2], [0.5, 0.4]])
    >>> y = np.array([-1, -1, 1, 1, 1])  # the last label is a temporary one
    >>> form = S3VM(C=10.0, C_star=0.1, labeled=[True, True, True, True, False])
    >>> form.costs(5).tolist()
    [10.0, 10.0, 10.0, 10.0, 0.1]
    >>> ev = CvxpyMarginal(form, X, y, RBF(1.0), n_expansion=2).evaluate(X[[0, 2]])
    >>> ev.coef.shape
    (2,)
    """

    name = "s3vm"
    # the command line reads -1/+1 label files, so 0 marks an unlabeled point there

    def __init__(
        self, C: float = 1.0, C_star: float = 1e-3, labeled: ArrayLike | None = None
    ) -> None:
        positive = [Interval(Real, 0.0, None, closed="neither")]
        check_params(type(self).__name__, {"C": positive, "C_star": positive}, C=C,
                     C_star=C_star)
        self.C = float(C)
        self.C_star = float(C_star)
        self.labeled = None if labeled is None else _check_labeled(labeled)

    def costs(self, n_samples: int) -> Array:
        """Per-point costs c_i: C on labeled points, C* on the others, shape (N,)."""
        if self.labeled is None:
            return np.full(n_samples, self.C)
        if self.labeled.shape != (n_samples,):
            raise ValueError(f"The 's3vm' formulation's labeled mask has shape "
                             f"{self.labeled.shape} but there are {n_samples} training points; "
                             "pass one flag per point.")
        return np.where(self.labeled, self.C, self.C_star)

    def declare(self, out: Outputs) -> Declaration:
        if out.y is None:
            raise ValueError("The 's3vm' formulation needs labels y in {-1, +1} (temporary "
                             "ones for the unlabeled points).")
        b = cp.Variable(name="b")
        hinge = cp.pos(1 - cp.multiply(out.y, out.f + b))
        return Declaration(cp.Minimize(0.5 * out.norm_w2 + self.costs(out.n_samples) @ hinge),
                           [], b)

    def nondifferentiable(self, y: NDArray[Any] | None, dual_f: NDArray[np.float64]) -> str | None:
        return one_class_support(y, dual_f)  # the hinge-loss SVM's condition

    def marginal(
        self,
        X: NDArray[np.float64],
        y: NDArray[Any] | None,
        kernel: Kernel,
        n_expansion: int,
        solver: str,
        tol: float,
    ) -> Marginal | None:
        """The SVM's exact dual solver with per-point costs, for ``solver="auto"``.

        A named cvxpy backend keeps the generic path, the fast path's reference.
        """
        if solver != "auto" or y is None:
            return None
        # Where the fast path's interior point stalls (cold starts with costs that span
        # 1e5, C against the annealed C*), libsvm on the low-rank kernel answers faster
        # than the generic path would.
        return SVMDualMarginal(self.costs(len(X)), X, y, kernel, n_expansion, tol=tol,
                               formulation=self,
                               fallback=LowRankSVMMarginal(self, X, y, kernel, n_expansion,
                                                           tol=tol))

    def solve_precomputed(self, K: ArrayLike, y: ArrayLike, tol: float = 1e-8) -> FullSolution:
        """The full kernel problem (XVs = all training points) by libsvm on a precomputed kernel.

        The dense S3VM's convex stage; the generic path with Z = X is its
        reference in the tests. libsvm's SMO takes per-point costs as sample
        weights and never forms anything larger than K.

        Parameters
        ----------
        K : array-like of shape (N, N)
            Kernel matrix on the training points.
        y : array-like of shape (N,)
            Labels in {-1, +1} (temporary ones for unlabeled points).
        tol : float, default=1e-8
            libsvm's stopping tolerance (maximal KKT violation).

        Returns
        -------
        FullSolution

        Examples
        --------
        >>> import numpy as np
        >>> K = np.array([[1.0, 0.5, 0.0], [0.5, 1.0, 0.1], [0.0, 0.1, 1.0]])
        >>> sol = S3VM(C=1.0).solve_precomputed(K, np.array([-1, -1, 1]))
        >>> np.sign(sol.outputs).tolist()
        [-1.0, -1.0, 1.0]
        """
        from sklearn.svm import SVC

        K = np.asarray(K, dtype=float)
        y = np.asarray(y, dtype=float)
        costs = self.costs(len(y))
        svc = SVC(C=1.0, kernel="precomputed", tol=tol, cache_size=max(200.0, K.nbytes / 2**20))
        svc.fit(K, y, sample_weight=costs)
        coef = np.zeros(len(y))
        coef[svc.support_] = svc.dual_coef_.ravel()
        b = float(svc.intercept_[0])
        sv = svc.support_
        g = K[:, sv] @ coef[sv] + b
        value = 0.5 * float(coef[sv] @ K[np.ix_(sv, sv)] @ coef[sv])
        value += float(costs @ np.maximum(0.0, 1.0 - y * g))
        return FullSolution(coef, b, value, g)


def _check_labeled(labeled: ArrayLike) -> NDArray[np.bool_]:
    """The labeled mask as a bool array; one flag per point, True/False or 1/0."""
    flags = np.asarray(labeled)
    if flags.ndim != 1:
        got = f"an array of shape {flags.shape}"
    elif flags.dtype != bool and not (flags.dtype.kind in "iuf" and np.isin(flags, (0, 1)).all()):
        got = "values other than True/False or 1/0"
    else:
        return flags.astype(bool)
    raise ValueError(
        "The 'labeled' parameter of S3VM must be None or a one-dimensional array of bools "
        f"(one per training point). Got {got} instead.")
