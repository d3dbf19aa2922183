"""Reduced SVM (RSVM) and its modified version (MRSVM): random XVs, two ways to weigh them.

RSVM (Lee & Mangasarian 2001; Lin & Lin 2003) picks Nz random training points
as XVs and trains a linear SVM on the empirical kernel map ψ_z(x) = K(Z, x),
replacing the regulariser ½βᵀK_ZZβ by ½‖β‖². MRSVM keeps the same XVs and
solves the exact problem on fixed XVs instead (paper eq. 45, §4.2), which is a
linear SVM on the whitened map φ_z(x) = T ψ_z(x).
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.svm import SVC
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions

from sparsify.core.classifier import resolve_n_expansion, validate_classification
from sparsify.core.estimator import KernelMachineMixin
from sparsify.core.expansion import expansion_coefficients
from sparsify.core.optimize import initial_expansion_vectors
from sparsify.kernels import RBF, resolve_gamma

__all__ = ["ReducedSVC"]

Array = NDArray[np.float64]


class ReducedSVC(KernelMachineMixin, ClassifierMixin, BaseEstimator):
    """RSVM or MRSVM with a Gaussian kernel: Nz random training points as XVs.

    Parameters
    ----------
    n_expansion : int or float, default=0.1
        Nz as a count, or as a ratio of the full SVM's number of support vectors.
    C : float, default=1.0
        SVM regularisation.
    gamma : {"scale", "auto"} or float, default="scale"
        Width of the Gaussian kernel.
    coef : {"rsvm", "mrsvm"}, default="rsvm"
        ``"rsvm"``: linear SVM on ψ_z(x) with ½‖β‖²; ``"mrsvm"``: eq. 45.
    random_state : int, RandomState instance or None, default=None
        Seed of the choice of XVs (distinct training points).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    expansion_vectors_ : ndarray of shape (Nz, n_features)
    expansion_coef_ : ndarray of shape (1, Nz)
    intercept_ : ndarray of shape (1,)
    gamma_ : float
    kernel_ : RBF

    Examples
    --------
    >>> from sparsify.datasets import load_banana
    >>> X, y, X_test, y_test = load_banana()
    >>> clf = ReducedSVC(n_expansion=10, C=100.0, gamma=1.0, coef="mrsvm", random_state=0)
    >>> bool(clf.fit(X, y).score(X_test, y_test) > 0.7)
    True
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "n_expansion": [
            Interval(Integral, 1, None, closed="left"),
            Interval(RealNotInt, 0.0, 1.0, closed="right"),
        ],
        "C": [Interval(Real, 0.0, None, closed="neither")],
        "gamma": [StrOptions({"scale", "auto"}), Interval(Real, 0.0, None, closed="neither")],
        "coef": [StrOptions({"rsvm", "mrsvm"})],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        n_expansion: int | float = 0.1,
        *,
        C: float = 1.0,
        gamma: float | str = "scale",
        coef: str = "rsvm",
        random_state: int | np.random.RandomState | None = None,
    ) -> None:
        self.n_expansion = n_expansion
        self.C = C
        self.gamma = gamma
        self.coef = coef
        self.random_state = random_state

    def fit(self, X: ArrayLike, y: ArrayLike) -> ReducedSVC:
        """Choose the random XVs and compute β and b.

        Returns
        -------
        self
        """
        self._validate_params()
        X, codes = validate_classification(self, X, y, binary_only=True)
        y_pm = np.where(codes == 1, 1, -1)
        self.gamma_ = resolve_gamma(self.gamma, X)
        kernel = RBF(self.gamma_)
        n_expansion = self.n_expansion if isinstance(self.n_expansion, Integral) else float(
            self.n_expansion)
        nz, _ = resolve_n_expansion(X, y_pm, kernel, n_expansion, self.C)
        Z = initial_expansion_vectors(X, nz, "random", self.random_state)
        if self.coef == "rsvm":
            # SVC's linear kernel solves ½‖β‖² + C Σ ξ with a free bias, exactly RSVM.
            lin = SVC(C=self.C, kernel="linear", tol=1e-6).fit(kernel(X, Z), y_pm)
            beta, b = lin.coef_[0], float(lin.intercept_[0])
        else:
            beta, b = expansion_coefficients(X, y_pm, Z, kernel=kernel, C=self.C)
        self.kernel_ = RBF(self.gamma_)
        self.expansion_vectors_ = Z
        self.expansion_coef_ = np.asarray(beta, dtype=float)[None, :]
        self.intercept_ = np.array([float(b)])
        return self

    def __sklearn_tags__(self):  # type: ignore[no-untyped-def]
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags
