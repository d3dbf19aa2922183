"""Soft-margin support vector machine: with free XVs, the sparse large margin classifier.

Minimise ½‖w‖² + Σ_i C_i ξ_i subject to y_i (f_i + b) ≥ 1 − ξ_i, ξ ≥ 0 (paper eq.
24-27, with one cost per point: C_i = C for the plain SVM, C · class weight · sample
weight for `SparseSVC` with weights). With Nz free XVs the core turns it into SLMC
(paper §3).
"""

from __future__ import annotations

from numbers import Real
from typing import Any, ClassVar

import cvxpy as cp
import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.utils._param_validation import Interval, StrOptions

from sparsify import Declaration, Formulation, Kernel, Marginal, Outputs
from sparsify.algorithms.svm.distributed import DistributedSVMMarginal, SVMBlocks
from sparsify.algorithms.svm.distributed_squared_hinge import DistributedSquaredHingeMarginal
from sparsify.algorithms.svm.squared_hinge import SquaredHingeMarginal
from sparsify.core.data_source import RowBlocks, RowTarget
from sparsify.core.params import check_params
from sparsify.svm_dual import SVMDualMarginal

#: Each loss's exact fast path: in memory, and over row blocks on a Dask cluster.
LOSS_PATHS: dict[str, tuple[type[SVMDualMarginal], type[DistributedSVMMarginal]]] = {
    "hinge": (SVMDualMarginal, DistributedSVMMarginal),
    "squared_hinge": (SquaredHingeMarginal, DistributedSquaredHingeMarginal),
}


class SVM(Formulation):
    """Soft-margin SVM with hinge or squared hinge loss and bias (labels -1/+1).

    Parameters
    ----------
    C : float or array-like of shape (N,), default=1.0
        Weight of the hinge loss, as in `sklearn.svm.SVC`: a float > 0, or one
        cost C_i ≥ 0 per training point (finite, at least one positive), the
        objective then being ½‖w‖² + Σ_i C_i ξ_i. A point with C_i = 0 has the
        dual box [0, 0]: it does not change W(Z) nor its gradient, as if it
        were not there.
    loss : {"hinge", "squared_hinge"}, default="hinge"
        The loss of the margin slack ξ_i: ``C_i ξ_i`` (the SVM of `sklearn.svm.SVC`)
        or ``C_i ξ_i²`` (the L2-SVM, `sklearn.svm.LinearSVC`'s default loss),
        each with the same ½‖w‖² and unpenalised bias.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import CvxpyMarginal, RBF
    >>> X = np.array([[0.0, 0.0], [0.2, 0.1], [1.0, 1.0], [0.9, 1.2]])
    >>> y = np.array([-1, -1, 1, 1])
    >>> ev = CvxpyMarginal(SVM(C=10.0), X, y, RBF(1.0), n_expansion=2).evaluate(X[[0, 2]])
    >>> np.sign(RBF(1.0)(X, X[[0, 2]]) @ ev.coef + ev.intercept).astype(int).tolist()
    [-1, -1, 1, 1]

    Per-point costs (here the second class counts ten times as much); a bad
    cost is refused when the formulation is made:

    >>> SVM(C=[1.0, 1.0, 10.0, 10.0])
    SVM(C=array([ 1.,  1., 10., 10.]))
    >>> SVM(C=10.0, loss="squared_hinge")
    SVM(C=10.0, loss='squared_hinge')
    >>> try:
    ...     SVM(C=-5)
    ... except ValueError as exc:
    ...     print(exc)
    The 'C' parameter of SVM must be a float in the range (0.0, inf). Got -5 instead.
    """

    name = "svm"
    #: the hinge, for subclasses written before ``loss`` that do not call ``SVM.__init__``
    loss: str = "hinge"

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "C": [Interval(Real, 0.0, None, closed="neither")],
        "loss": [StrOptions({"hinge", "squared_hinge"})],
    }

    def __init__(self, C: float | ArrayLike = 1.0, loss: str = "hinge") -> None:
        self.C = check_costs(C, type(self).__name__, self._parameter_constraints)
        check_params(type(self).__name__, self._parameter_constraints, loss=loss)
        self.loss = loss

    def declare(self, out: Outputs) -> Declaration:
        if out.y is None:
            raise ValueError("The 'svm' formulation needs labels y in {-1, +1}.")
        b = cp.Variable(name="b")
        terms = cp.pos(1 - cp.multiply(out.y, out.f + b))  # the margin slacks ξ
        if self.loss == "squared_hinge":
            terms = cp.square(terms)
        if np.ndim(self.C) == 0:
            loss = self.C * cp.sum(terms)
        else:
            if len(self.C) != out.n_samples:
                raise ValueError(
                    f"The 'svm' formulation has {len(self.C)} costs C but there are "
                    f"{out.n_samples} training points; pass one cost per point."
                )
            loss = cp.sum(cp.multiply(self.C, terms))
        return Declaration(cp.Minimize(0.5 * out.norm_w2 + loss), [], b)

    def nondifferentiable(self, y: NDArray[Any] | None, dual_f: NDArray[np.float64]) -> str | None:
        # the squared hinge's dual is strongly convex: α is unique, W differentiable
        return None if self.loss == "squared_hinge" else one_class_support(y, dual_f)

    def marginal(
        self,
        X: NDArray[np.float64],
        y: NDArray[Any] | None,
        kernel: Kernel,
        n_expansion: int,
        solver: str,
        tol: float,
    ) -> Marginal | None:
        """The exact fast path for ``solver="auto"``: the dual solver of
        `sparsify.svm_dual` (hinge) or the finite Newton method of
        `sparsify.algorithms.svm.squared_hinge` (squared hinge).

        A named cvxpy backend keeps the generic path, the fast path's reference.
        """
        if solver != "auto" or y is None:
            return None
        return LOSS_PATHS[self.loss][0](self.C, X, y, kernel, n_expansion, tol=tol,
                                        formulation=self)

    def row_blocks(self, source: RowBlocks, target: RowTarget, kernel: Kernel,
                   n_expansion: int, tol: float) -> SVMBlocks:
        """The problem over row blocks: `sparsify.algorithms.svm.distributed` (hinge) or
        `sparsify.algorithms.svm.distributed_squared_hinge` (squared hinge)."""
        if np.ndim(self.C) != 0:
            raise ValueError("The 'svm' formulation over row blocks takes one cost C; the "
                             "per-point factors come with the rows (RowTarget).")
        return SVMBlocks(source, target, float(self.C),  # type: ignore[arg-type]
                         LOSS_PATHS[self.loss][1], kernel, n_expansion, tol)


def one_class_support(y: NDArray[Any] | None, dual_f: NDArray[np.float64]) -> str | None:
    """Why the hinge-loss SVM's W may not be differentiable here, or None.

    Corollary 2 of the paper: W is differentiable when the support vectors (the
    points with a nonzero multiplier) come from both classes.

    Examples
    --------
    >>> import numpy as np
    >>> one_class_support(np.array([-1, 1, 1]), np.array([0.0, 0.5, 0.5]))
    'all support vectors come from one class (paper, Corollary 2)'
    >>> one_class_support(np.array([-1, 1, 1]), np.array([-0.5, 0.5, 0.0])) is None
    True
    """
    alpha = np.abs(dual_f)
    sv = alpha > 1e-6 * max(float(alpha.max()), 1e-300)
    if y is not None and sv.any() and len(np.unique(np.asarray(y)[sv])) < 2:
        return "all support vectors come from one class (paper, Corollary 2)"
    return None


def check_costs(
    C: float | ArrayLike, owner: str, constraints: dict[str, list[Any]]
) -> float | NDArray[np.float64]:
    """``C`` as a float (checked against ``constraints``) or as an array of per-point costs.

    An array must be one-dimensional with finite costs ≥ 0, at least one of
    them positive; errors are ValueErrors in scikit-learn's wording naming ``owner``.

    Examples
    --------
    >>> check_costs(2, "SVM", SVM._parameter_constraints)
    2.0
    >>> check_costs([0.0, 1.0], "SVM", SVM._parameter_constraints).tolist()
    [0.0, 1.0]
    >>> try:
    ...     check_costs([0.0, 0.0], "SVM", SVM._parameter_constraints)
    ... except ValueError as exc:
    ...     print(exc)
    The 'C' parameter of SVM must have at least one positive cost. Got all zeros instead.
    """
    if np.ndim(C) == 0:
        check_params(owner, constraints, C=C)
        return float(C)  # type: ignore[arg-type]
    try:
        costs = np.array(C, dtype=float)
    except (TypeError, ValueError):
        costs = None
    if costs is None or costs.ndim != 1 or len(costs) == 0:
        got = "an array that is not one-dimensional" if costs is not None else repr(C)
        raise ValueError(
            f"The 'C' parameter of {owner} must be a float in the range (0.0, inf) or a "
            f"one-dimensional array of per-point costs. Got {got} instead.")
    bad = ~np.isfinite(costs) | (costs < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"The 'C' parameter of {owner} must be an array of finite costs >= 0. Got "
            f"{float(costs[i])!r} at index {i} instead.")
    if not (costs > 0).any():
        raise ValueError(
            f"The 'C' parameter of {owner} must have at least one positive cost. Got all "
            "zeros instead.")
    return costs
