"""Soft-margin support vector machine: with free XVs, the sparse large margin classifier.

Minimise ½‖w‖² + C Σ_i ξ_i subject to y_i (f_i + b) ≥ 1 − ξ_i, ξ ≥ 0 (paper eq.
24-27). With Nz free XVs the core turns it into SLMC (paper §3).
"""

from __future__ import annotations

from typing import Any

import cvxpy as cp
import numpy as np
from numpy.typing import NDArray
from sparsify_plugins.svm_fast import SVMDualMarginal

from sparsify import Declaration, Formulation, Kernel, Marginal, Outputs, SparseSVC, hookimpl


class SVM(Formulation):
    """Soft-margin SVM with hinge loss and bias (labels -1/+1).

    Parameters
    ----------
    C : float, default=1.0
        Weight of the hinge loss, as in `sklearn.svm.SVC`.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import CvxpyMarginal, RBF
    >>> X = np.array([[0.0, 0.0], [0.2, 0.1], [1.0, 1.0], [0.9, 1.2]])
    >>> y = np.array([-1, -1, 1, 1])
    >>> ev = CvxpyMarginal(SVM(C=10.0), X, y, RBF(1.0), n_expansion=2).evaluate(X[[0, 2]])
    >>> np.sign(RBF(1.0)(X, X[[0, 2]]) @ ev.coef + ev.intercept).astype(int).tolist()
    [-1, -1, 1, 1]
    """

    name = "svm"
    estimator = SparseSVC

    def __init__(self, C: float = 1.0) -> None:
        self.C = C

    def declare(self, out: Outputs) -> Declaration:
        if out.y is None:
            raise ValueError("The 'svm' formulation needs labels y in {-1, +1}.")
        b = cp.Variable(name="b")
        hinge = cp.sum(cp.pos(1 - cp.multiply(out.y, out.f + b)))
        return Declaration(cp.Minimize(0.5 * out.norm_w2 + self.C * hinge), [], b)

    def nondifferentiable(self, y: NDArray[Any] | None, dual_f: NDArray[np.float64]) -> str | None:
        # Corollary 2: W is differentiable when the support vectors (the points
        # with a nonzero multiplier) come from both classes.
        alpha = np.abs(dual_f)
        sv = alpha > 1e-6 * max(float(alpha.max()), 1e-300)
        if y is not None and sv.any() and len(np.unique(np.asarray(y)[sv])) < 2:
            return "all support vectors come from one class (paper, Corollary 2)"
        return None

    def marginal(
        self,
        X: NDArray[np.float64],
        y: NDArray[Any] | None,
        kernel: Kernel,
        n_expansion: int,
        solver: str,
        tol: float,
    ) -> Marginal | None:
        """The exact dual solver of `sparsify_plugins.svm_fast` for ``solver="auto"``.

        A named cvxpy backend keeps the generic path, the fast path's reference.
        """
        if solver != "auto" or y is None:
            return None
        return SVMDualMarginal(self.C, X, y, kernel, n_expansion, tol=tol)


@hookimpl
def register_formulations(register) -> None:  # type: ignore[no-untyped-def]
    register(SVM)
