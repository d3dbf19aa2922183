"""Kernel ridge regression (Saunders, Gammerman & Vovk 1998) with a free intercept.

Minimise ‖y − f − b1‖² + α‖w‖²: scikit-learn's `sklearn.kernel_ridge.KernelRidge`
objective with an intercept. The paper (Wu, Schölkopf & Bakır 2006) names it
among the kernel algorithms that are "not sparse at all"; with Nz free XVs the
direct method makes it sparse. Its own W(Z) is in closed form
(`sparsify.algorithms.kernel_ridge.closed_form.RidgeMarginal`); the cvxpy
declaration stays its reference in the tests.
"""

from __future__ import annotations

from numbers import Real
from typing import Any, ClassVar

import cvxpy as cp
from numpy.typing import NDArray
from sklearn.utils._param_validation import Interval

from sparsify import Declaration, Formulation, Outputs
from sparsify.algorithms.kernel_ridge.blocks import RidgeBlocks
from sparsify.algorithms.kernel_ridge.closed_form import RidgeMarginal
from sparsify.core.data_source import RowBlocks, RowTarget
from sparsify.core.marginal import Marginal
from sparsify.core.params import check_params
from sparsify.kernels import Kernel


class KernelRidge(Formulation):
    """Kernel ridge regression: ‖y − f − b1‖² + α‖w‖².

    Parameters
    ----------
    alpha : float, default=1.0
        Weight α > 0 of ‖w‖², as in `sklearn.kernel_ridge.KernelRidge`.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import CvxpyMarginal, RBF
    >>> X = np.linspace(-2, 2, 20)[:, None]
    >>> y = np.sin(X[:, 0])
    >>> generic = CvxpyMarginal(KernelRidge(1e-2), X, y, RBF(1.0), 4).evaluate(X[::5])
    >>> own = KernelRidge(1e-2).marginal(X, y, RBF(1.0), 4, "auto", 1e-8).evaluate(X[::5])
    >>> bool(abs(own.value - generic.value) < 1e-6 * generic.value)
    True
    """

    name = "kernel_ridge"
    task = "regressor"

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "alpha": [Interval(Real, 0.0, None, closed="neither")],
    }

    def __init__(self, alpha: float = 1.0) -> None:
        check_params(type(self).__name__, self._parameter_constraints, alpha=alpha)
        self.alpha = alpha

    def declare(self, out: Outputs) -> Declaration:
        b = cp.Variable()
        loss = cp.sum_squares(out.y - out.f - b)
        return Declaration(cp.Minimize(loss + self.alpha * out.norm_w2), [], intercept=b)

    def marginal(self, X: NDArray[Any], y: NDArray[Any] | None, kernel: Kernel,
                 n_expansion: int, solver: str, tol: float) -> Marginal | None:
        """The closed form for ``solver="auto"``; a named backend takes the generic path."""
        if solver != "auto":
            return None
        assert y is not None
        return RidgeMarginal(self.alpha, X, y, kernel, n_expansion)

    def row_blocks(self, source: RowBlocks, target: RowTarget, kernel: Kernel,
                   n_expansion: int, tol: float) -> RidgeBlocks:
        """The closed form over row blocks: a sum over the blocks
        (`sparsify.algorithms.kernel_ridge.blocks`)."""
        return RidgeBlocks(source, target, self.alpha, kernel, n_expansion)
