"""The approximate Gaussian kernel of order m and its explicit feature map.

Truncating the Taylor series of exp(2γ⟨x, y⟩) in
exp(−γ‖x − y‖²) = exp(−γ‖x‖²) exp(−γ‖y‖²) exp(2γ⟨x, y⟩) gives (Liu, Jiang &
Liao, "Approximate Gaussian Kernel for Large-Scale SVM", eq. 1, 13)::

    K_m(x, y) = exp(−γ(‖x‖² + ‖y‖²)) Σ_{k=0..m} (2γ)^k / k! ⟨x, y⟩^k

a positive definite kernel that tends to the Gaussian kernel as m grows. Its
feature map is finite (eq. 7): for every multi-index α with |α| = k ≤ m,
exp(−γ‖x‖²) √((2γ)^k C_α^k / k!) x^α, with C_α^k = k! / Π_j α_j!. So a linear
SVM on these features (LIBLINEAR, `sklearn.svm.LinearSVC`) trains the
approximate Gaussian SVM. `TaylorRBF` is the same kernel for the direct
sparse method (defined in `sparsify.kernels.taylor_rbf`, which needs numpy
only, so a model file that uses it predicts without scikit-learn);
`TaylorGaussianFeatures` is the feature map, and it keeps sparse input
sparse (Liu, Jiang & Liao, §3.3).
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray
from scipy.special import gammaln
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.preprocessing import PolynomialFeatures
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted, validate_data

from sparsify.kernels import Kernel
from sparsify.kernels.taylor_rbf import TaylorRBF
from sparsify.persistence import VersionedPickleMixin
from sparsify.plugins.hookspecs import hookimpl
from sparsify.validation import validate_rows

__all__ = ["TaylorGaussianFeatures", "TaylorRBF"]

Array = NDArray[np.float64]


class TaylorGaussianFeatures(VersionedPickleMixin, TransformerMixin, BaseEstimator):
    """Explicit feature map of the order-m approximate Gaussian kernel (Liu, Jiang & Liao, eq. 7).

    ⟨Φ(x), Φ(y)⟩ = K_m(x, y) exactly; the output has C(n + m, m) columns
    (n input features). Sparse input gives sparse output.

    Parameters
    ----------
    gamma : float, default=1.0
        Width of the Gaussian kernel exp(−γ‖x − y‖²).
    order : int, default=2
        Order m of the Taylor truncation.

    Attributes
    ----------
    n_output_features_ : int
    scale_ : ndarray of shape (n_output_features_,)
        √((2γ)^k C_α^k / k!) of each monomial x^α.
    powers_ : ndarray of shape (n_output_features_, n_features_in_)
        The exponents α of each output column.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.3, -0.2], [0.1, 0.4]])
    >>> phi = TaylorGaussianFeatures(gamma=0.5).fit_transform(X)
    >>> phi.shape, bool(np.isclose(phi[0] @ phi[1], TaylorRBF(0.5)(X[:1], X[1:])[0, 0]))
    ((2, 6), True)
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "gamma": [Interval(Real, 0.0, None, closed="neither")],
        "order": [Interval(Integral, 0, None, closed="left")],
    }

    def __init__(self, gamma: float = 1.0, order: int = 2) -> None:
        self.gamma = gamma
        self.order = order

    def fit(self, X: ArrayLike, y: Any = None) -> TaylorGaussianFeatures:
        """Enumerate the monomials of degree ≤ m and their scales.

        Returns
        -------
        self
        """
        self._validate_params()
        X = validate_rows(self, X, accept_sparse="csr", dtype=np.float64)
        self._poly = PolynomialFeatures(degree=self.order, include_bias=True).fit(X)
        self.powers_ = self._poly.powers_
        k = self.powers_.sum(1)
        # (2γ)^k C_α^k / k! = (2γ)^k / Π_j α_j!, in logs (which cannot overflow) and
        # vectorised over the powers (thousands of them)
        log_denominator = gammaln(self.powers_ + 1.0).sum(1)
        self.scale_ = np.exp(0.5 * (k * np.log(2 * self.gamma) - log_denominator))
        self.n_output_features_ = len(self.scale_)
        return self

    def transform(self, X: ArrayLike) -> Array | sp.csr_matrix:
        """Map X to the features, shape (n_samples, n_output_features_)."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        if sp.issparse(X) and not X.has_canonical_format:
            # scikit-learn's CSR expansion assumes sorted, duplicate-free indices: with
            # unsorted ones x_0 x_2 lands in the column of x_1 x_2, silently.
            X = X.copy()
            X.sum_duplicates()
        squares = np.asarray(X.multiply(X).sum(1)).ravel() if sp.issparse(X) else (X * X).sum(1)
        rows = np.exp(-self.gamma * squares)
        P = self._poly.transform(X)
        # Scale the fresh monomials in place: diag(rows) @ P @ diag(scale) costs two sparse
        # products and two copies of the output.
        if sp.issparse(P):
            P = sp.csr_matrix(P)
            P.data *= self.scale_[P.indices]
            P.data *= np.repeat(rows, np.diff(P.indptr))
            return P
        P *= self.scale_
        P *= rows[:, None]
        return P

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


@hookimpl
def register_kernels(register: Callable[[type[Kernel]], None]) -> None:
    register(TaylorRBF)
