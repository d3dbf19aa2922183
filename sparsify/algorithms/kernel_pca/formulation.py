"""Kernel PCA (Schölkopf, Smola & Müller 1998) with the principal directions in span φ(Z).

W(Z) = −(the variance of the training points, centred in feature space, captured
by the first k principal components within span φ(Z)): the sum of the top k
eigenvalues of a generalised Nz × Nz eigenproblem
(`sparsify.algorithms.kernel_pca.eigen.VarianceMarginal`). Like the paper's
Rayleigh-quotient KFD (Appendix A) it is an eigenproblem with an exact gradient
by the argument of eq. 63; unlike it, no convex program shares its value or its
minimisers for k < Nz, so the formulation declares no cvxpy problem: `declare`
refuses with the reason, and `marginal` supplies W(Z) and ∇W(Z) for every
``solver=``. In the conformance suite (`sparsify.testing`) the checks of the
declared problem do not apply; the gradient is checked against finite
differences (``own_gradient``).
"""

from __future__ import annotations

from numbers import Integral
from typing import Any, ClassVar

from numpy.typing import NDArray
from sklearn.utils._param_validation import Interval

from sparsify import Declaration, Formulation, Outputs
from sparsify.algorithms.kernel_pca.eigen import VarianceMarginal
from sparsify.core.marginal import Marginal
from sparsify.core.params import check_params
from sparsify.kernels import Kernel

#: Why `KernelPCA.declare` has nothing to declare (the conformance suite's skip reason).
NOT_CONVEX = (
    "the 'kernel_pca' formulation is an eigenproblem (W(Z) = minus the sum of the top k "
    "eigenvalues of the covariance restricted to span φ(Z)), not a convex program: it has no "
    "cvxpy declaration and no generic path. Its W(Z) and ∇W(Z) come from Formulation.marginal "
    "(VarianceMarginal), whatever solver= names"
)


def _refusal() -> ValueError:
    return ValueError(f"The{NOT_CONVEX[3:]}.")


class KernelPCA(Formulation):
    """Kernel PCA: maximise the variance captured by k principal directions in span φ(Z).

    The unsupervised transformer task (``out.y`` is ignored): its k outputs are the
    component scores ⟨w_l, φ(x) − m⟩, m the training mean in feature space.

    Parameters
    ----------
    n_components : int or None, default=None
        k, the number of principal components (at most Nz); None: all Nz.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import RBF
    >>> X = np.random.default_rng(0).normal(size=(40, 3))
    >>> W = KernelPCA(n_components=2).marginal(X, None, RBF(0.5), 4, "auto", 1e-8)
    >>> type(W).__name__, W.evaluate(X[:4]).coef.shape
    ('VarianceMarginal', (4, 2))
    >>> KernelPCA().declare(None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: The 'kernel_pca' formulation is an eigenproblem ...
    """

    name = "kernel_pca"
    task = "transformer"

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "n_components": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __init__(self, n_components: int | None = None) -> None:
        check_params(type(self).__name__, self._parameter_constraints,
                     n_components=n_components)
        self.n_components = n_components

    def n_outputs(self, y: NDArray[Any] | None) -> int:
        """k where it is given; with None (k = Nz) only the XVs fix it, and only the generic
        path, which this formulation does not have, would ask: refused with `NOT_CONVEX`."""
        if self.n_components is None:
            raise _refusal()
        return int(self.n_components)

    def declare(self, out: Outputs) -> Declaration:
        """Refuse with `NOT_CONVEX`: an eigenproblem has no convex declaration."""
        raise _refusal()

    def marginal(self, X: NDArray[Any], y: NDArray[Any] | None, kernel: Kernel,
                 n_expansion: int, solver: str, tol: float) -> Marginal:
        """The eigenproblem's W(Z) and ∇W(Z), whatever ``solver`` names (there is no other)."""
        return VarianceMarginal(X, kernel, n_expansion, self.n_components)
