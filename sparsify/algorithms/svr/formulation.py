"""ε-insensitive support vector regression (Vapnik 1995; Smola & Schölkopf 2004).

Minimise ½‖w‖² + Σ_i C_i max(0, |y_i − f_i − b| − ε): scikit-learn's
`sklearn.svm.SVR` objective, with one cost per point where sample weights are
given. The paper (Wu, Schölkopf & Bakır 2006) names the SVM for regression
among the kernel algorithms the direct method applies to; its own W(Z) is an
exact solver of its own (`sparsify.algorithms.svr.fast.SVRDualMarginal`: an
interior point on the normal equations, made exact by the SVM's active-set
method on two hinge rows per point), the cvxpy declaration its reference in
the tests.
"""

from __future__ import annotations

from numbers import Real
from typing import Any, ClassVar

import cvxpy as cp
import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.utils._param_validation import Interval

from sparsify import Declaration, Formulation, Outputs
from sparsify.algorithms.svm.formulation import check_costs
from sparsify.algorithms.svr.fast import SVRDualMarginal
from sparsify.core.marginal import Marginal
from sparsify.core.params import check_params
from sparsify.kernels import Kernel


class SVR(Formulation):
    """ε-SVR: ½‖w‖² + Σ_i C_i max(0, |y_i − f_i − b| − ε).

    Parameters
    ----------
    C : float or array-like of shape (N,), default=1.0
        Weight of the ε-insensitive loss, as in `sklearn.svm.SVR`, or one cost
        C_i ≥ 0 per training point (finite, at least one positive).
    epsilon : float, default=0.1
        Half-width ε ≥ 0 of the tube inside which errors cost nothing, in the
        units of y.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import CvxpyMarginal, RBF
    >>> X = np.linspace(-2, 2, 20)[:, None]
    >>> y = np.sin(X[:, 0])
    >>> generic = CvxpyMarginal(SVR(10.0, 0.05), X, y, RBF(1.0), 4).evaluate(X[::5])
    >>> own = SVR(10.0, 0.05).marginal(X, y, RBF(1.0), 4, "auto", 1e-9).evaluate(X[::5])
    >>> bool(abs(own.value - generic.value) < 1e-6 * generic.value)
    True
    >>> try:
    ...     SVR(epsilon=-1)
    ... except ValueError as exc:
    ...     print(exc)
    The 'epsilon' parameter of SVR must be a float in the range [0.0, inf). Got -1 instead.
    """

    name = "svr"
    task = "regressor"

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "C": [Interval(Real, 0.0, None, closed="neither")],
        "epsilon": [Interval(Real, 0.0, None, closed="left")],
    }

    def __init__(self, C: float | ArrayLike = 1.0, epsilon: float = 0.1) -> None:
        self.C = check_costs(C, type(self).__name__, self._parameter_constraints)
        check_params(type(self).__name__, self._parameter_constraints, epsilon=epsilon)
        self.epsilon = epsilon

    def declare(self, out: Outputs) -> Declaration:
        if out.y is None:
            raise ValueError("The 'svr' formulation needs real targets y.")
        b = cp.Variable(name="b")
        excess = cp.pos(cp.abs(out.y - out.f - b) - self.epsilon)
        if np.ndim(self.C) == 0:
            loss = self.C * cp.sum(excess)
        else:
            if len(self.C) != out.n_samples:
                raise ValueError(
                    f"The 'svr' formulation has {len(self.C)} costs C but there are "
                    f"{out.n_samples} training points; pass one cost per point.")
            loss = cp.sum(cp.multiply(self.C, excess))
        return Declaration(cp.Minimize(0.5 * out.norm_w2 + loss), [], b)

    def marginal(self, X: NDArray[np.float64], y: NDArray[Any] | None, kernel: Kernel,
                 n_expansion: int, solver: str, tol: float) -> Marginal | None:
        """The exact solver of `sparsify.algorithms.svr.fast` for ``solver="auto"``.

        A named cvxpy backend keeps the generic path, the fast path's reference.
        """
        if solver != "auto" or y is None:
            return None
        return SVRDualMarginal(self.C, float(self.epsilon), X, y, kernel, n_expansion, tol=tol,
                               formulation=self)
