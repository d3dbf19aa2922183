"""Kernel logistic regression (KLR): binary logistic loss or multi-class softmax.

Binary: minimise (λ/2)‖w‖² + (1/N) Σ_i log(1 + exp(−y_i (f_i + b))) with y_i ∈ {−1, +1}
(Zhu & Hastie 2005, eq. 3). Multi-class, one output per class: minimise
(λ/2) Σ_k ‖w_k‖² + (1/N) Σ_i [log Σ_k exp(f_ik + b_k) − (f_{i,y_i} + b_{y_i})] with
Σ_k b_k = 0 (the softmax is invariant to a common shift, so this makes b unique).
Both are exponential-cone programs (Clarabel, ECOS). The declared objective is
N times this (a sum of log-losses plus (Nλ/2)‖w‖², same minimiser): measured on the
gradient checks, the interior-point solvers reach the core's tight tolerances on
the exponential cone far more often at that scale. So W(Z) = N·H(Z).

With ``solver="auto"`` (the default) W(Z) and ∇W(Z) come from the formulation's
exact fast path, `sparsify.algorithms.klr.newton.NewtonKLRMarginal` (damped
Newton on the same N·H, no cvxpy; about 1e-15 relative agreement in W); a named
cvxpy backend ("clarabel", "ecos") keeps the generic path, its reference in the tests.
"""

from __future__ import annotations

from typing import Any

import cvxpy as cp
import numpy as np
from numpy.typing import NDArray

from sparsify import Declaration, Formulation, Outputs
from sparsify.algorithms.klr.newton import NewtonKLRMarginal
from sparsify.core.marginal import Marginal
from sparsify.kernels import Kernel


class KLR(Formulation):
    """Kernel logistic regression with an unpenalised bias.

    The classes are learnt from y: with at most two distinct labels the problem
    is binary, the larger label being the positive class (so −1/+1 and 0/1
    both work); with K > 2 distinct labels it is a joint softmax over K
    outputs, and class k is the k-th smallest label.

    Parameters
    ----------
    lam : float, default=1.0
        Regularisation λ > 0 of (λ/2)‖w‖²; the loss is averaged over the N points.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import CvxpyMarginal, RBF
    >>> X = np.array([[0.0, 0.0], [0.2, 0.1], [1.0, 1.0], [0.9, 1.2]])
    >>> y = np.array([-1, -1, 1, 1])
    >>> ev = CvxpyMarginal(KLR(lam=0.01), X, y, RBF(1.0), n_expansion=2).evaluate(X[[0, 2]])
    >>> np.sign(RBF(1.0)(X, X[[0, 2]]) @ ev.coef + ev.intercept).astype(int).tolist()
    [-1, -1, 1, 1]
    """

    name = "klr"

    def __init__(self, lam: float = 1.0) -> None:
        if not lam > 0:
            raise ValueError(f"The 'lam' parameter of KLR must be a float > 0. Got {lam!r} "
                             "instead.")
        self.lam = lam

    def n_outputs(self, y: NDArray[Any] | None) -> int:
        if y is None:
            return 1
        k = len(np.unique(np.asarray(y)))
        return 1 if k <= 2 else k

    def declare(self, out: Outputs) -> Declaration:
        if out.y is None:
            raise ValueError("The 'klr' formulation needs class labels y.")
        classes, codes = np.unique(np.asarray(out.y), return_inverse=True)
        N = out.n_samples
        if out.n_outputs == 1:
            if len(classes) != 2:
                raise ValueError(f"The 'klr' formulation needs two classes; got {len(classes)}.")
            sign = 2.0 * codes - 1.0
            b = cp.Variable(name="b")
            loss = cp.sum(cp.logistic(-cp.multiply(sign, out.f + b))) / N
            return Declaration(cp.Minimize(N * (0.5 * self.lam * out.norm_w2 + loss)), [], b)
        K = out.n_outputs
        onehot = np.eye(K)[codes]
        b = cp.Variable(K, name="b")
        F = out.f + cp.reshape(b, (1, K), order="C")
        loss = (cp.sum(cp.log_sum_exp(F, axis=1)) - cp.sum(cp.multiply(onehot, F))) / N
        objective = cp.Minimize(N * (0.5 * self.lam * out.norm_w2 + loss))
        return Declaration(objective, [cp.sum(b) == 0], b)

    def marginal(
        self,
        X: NDArray[np.float64],
        y: NDArray[Any] | None,
        kernel: Kernel,
        n_expansion: int,
        solver: str,
        tol: float,
    ) -> Marginal | None:
        """The exact Newton solver of `sparsify.algorithms.klr.newton` for ``solver="auto"``.

        A named cvxpy backend ("clarabel", "ecos") keeps the generic path, the
        fast path's reference.

        Examples
        --------
        >>> import numpy as np
        >>> from sparsify import RBF
        >>> X, y = np.array([[0.0], [1.0], [2.0]]), np.array([0, 1, 1])
        >>> type(KLR(0.1).marginal(X, y, RBF(1.0), 2, "auto", 1e-9)).__name__
        'NewtonKLRMarginal'
        >>> KLR(0.1).marginal(X, y, RBF(1.0), 2, "ecos", 1e-9) is None
        True
        """
        if solver != "auto" or y is None:
            return None
        return NewtonKLRMarginal(self.lam, X, y, kernel, n_expansion, tol=tol)
