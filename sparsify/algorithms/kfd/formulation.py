"""Kernel Fisher discriminant (KFD): the convex form and the paper's Rayleigh-quotient form.

Two formulations of the same discriminant (labels -1/+1):

``"kfd"``
    The convex KFD of Mika et al. (2003), solved by the generic path:
    minimise ‖ξ‖² + μ‖w‖² subject to f_i + b = y_i + ξ_i and, for each class c,
    Σ_{i∈c} ξ_i = 0.
``"skfd"``
    The paper's sparse KFD (Appendix A, eq. 49-63): W(Z) = −(largest eigenvalue
    of (B^z)⁻¹A^z), with its own W(Z) and ∇W(Z) (`RayleighMarginal`).

With A the between-class and B the within-class scatter in feature space (sums
over the samples, not means), the two share their minimisers: for any Z the
class-sum constraints fix the projected class means at ±1 − b, so ξ holds the
within-class deviations, ‖ξ‖² = βᵀ(K_XZᵀ H K_XZ)β, and the convex problem is
min βᵀB^zβ subject to dᵀβ = 2 (d = difference of the class means of the rows
of K_XZ). Its value is 4/λ and its β is the Rayleigh quotient's eigenvector,
so W_skfd(Z) = −4 / W_kfd(Z) (tested). That is why ``"skfd"`` declares the
convex KFD as its cvxpy reference.
"""

from __future__ import annotations

from numbers import Real
from typing import Any

import cvxpy as cp
import numpy as np
import scipy.linalg
from numpy.typing import NDArray
from sklearn.utils._param_validation import Interval

from sparsify import Declaration, Evaluation, Formulation, Kernel, Marginal, Outputs
from sparsify.algorithms.kfd.scatter import class_contrast, within_class_centring
from sparsify.core.kernel_blocks import diagonal_scale, kernel_blocks
from sparsify.core.marginal import check_expansion_vectors
from sparsify.core.params import check_params

Array = NDArray[np.float64]


def _check_labels(name: str, y: NDArray[Any] | None) -> NDArray[np.float64]:
    if y is None:
        raise ValueError(f"The {name!r} formulation needs labels y in {{-1, +1}}.")
    y = np.asarray(y, dtype=float)
    if not np.all(np.isin(y, (-1.0, 1.0))) or len(np.unique(y)) != 2:
        raise ValueError(f"The {name!r} formulation needs labels y in {{-1, +1}} with both "
                         f"classes present; got the values {np.unique(y).tolist()}.")
    return y


def _check_mu(owner: str, mu: float) -> float:
    """μ as a float; scikit-learn's parameter error naming ``owner`` unless finite and > 0."""
    check_params(owner, {"mu": [Interval(Real, 0.0, None, closed="neither")]}, mu=mu)
    return float(mu)


class KFD(Formulation):
    """Convex kernel Fisher discriminant (Mika et al. 2003), labels -1/+1.

    Minimise ‖ξ‖² + μ‖w‖² subject to f_i + b = y_i + ξ_i and, for each class,
    the sum of its ξ_i = 0. A quadratic program: every backend solves it.

    Parameters
    ----------
    mu : float, default=1.0
        Weight of ‖w‖² (> 0), in the units of the within-class scatter
        (a sum over the training points).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import CvxpyMarginal, RBF
    >>> X = np.array([[0.0, 0.0], [0.2, 0.1], [0.1, 0.3], [1.0, 1.0], [0.9, 1.2], [1.1, 0.8]])
    >>> y = np.array([-1, -1, -1, 1, 1, 1])
    >>> ev = CvxpyMarginal(KFD(mu=0.1), X, y, RBF(1.0), n_expansion=2).evaluate(X[[0, 3]])
    >>> np.sign(RBF(1.0)(X, X[[0, 3]]) @ ev.coef + ev.intercept).astype(int).tolist()
    [-1, -1, -1, 1, 1, 1]
    """

    name = "kfd"

    def __init__(self, mu: float = 1.0) -> None:
        self.mu = _check_mu(type(self).__name__, mu)

    def declare(self, out: Outputs) -> Declaration:
        y = _check_labels(self.name, out.y)
        b = cp.Variable(name="b")
        xi = out.f + b - y
        # the class-sum constraints pin each class's mean output at its label
        constraints = [cp.sum(xi[np.flatnonzero(y == c)]) == 0 for c in (-1.0, 1.0)]
        # Σ square(ξ_i), not sum_squares(ξ): ECOS then gets one small cone per sample
        # instead of one cone of size N, and its duals (the gradient) gain about 30×
        # (rel. error 3e-5 → 4e-7 on the rbf+linear gradient check).
        loss = cp.sum(cp.square(xi))
        return Declaration(cp.Minimize(loss + self.mu * out.norm_w2), constraints, b)


class RayleighMarginal(Marginal):
    """W(Z) = −max eig((B^z)⁻¹A^z) and its gradient by eq. 63, without a cvxpy solve.

    With ``K = K_XZ``, ``a_i = 1/n₊`` on class +1 and ``−1/n₋`` on class −1, and
    H the within-class centring projector::

        A^z = d dᵀ,  d = Kᵀa                       (between-class, rank one)
        B^z = Kᵀ H K + μ (K_ZZ + εI)               (within-class + μ, positive definite)

    A^z has rank one, so λ = dᵀ(B^z)⁻¹d and β = (B^z)⁻¹d / √λ (βᵀB^zβ = 1).
    Eq. 63, ∂W = −βᵀ∂A^zβ + λ βᵀ∂B^zβ, gives the cotangents of the two kernel
    blocks::

        ∂W/∂K_XZ = −2√λ a βᵀ + 2λ (H K β) βᵀ        ∂W/∂K_ZZ = λ μ β βᵀ

    and the kernel's vector-Jacobian products turn them into ∂W/∂Z in O(N·Nz·d).
    The intercept is the midpoint of the projected class means (as in the convex
    KFD); `SparseKFD` replaces β and b by the SVM step on the final XVs, as the
    paper does.

    Parameters
    ----------
    X : ndarray of shape (N, d)
    y : ndarray of shape (N,)
        Labels -1/+1.
    kernel : Kernel
    mu : float
        Regulariser μ > 0 of the within-class scatter.
    jitter : float, default=1e-10
        Added to K_ZZ's diagonal, relative to the mean kernel diagonal on X
        (a constant, so the gradient stays exact).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import RBF
    >>> X = np.array([[0.0, 0.0], [0.2, 0.1], [0.1, 0.3], [1.0, 1.0], [0.9, 1.2], [1.1, 0.8]])
    >>> y = np.array([-1, -1, -1, 1, 1, 1])
    >>> ev = RayleighMarginal(X, y, RBF(1.0), mu=0.1).evaluate(X[[0, 3]])
    >>> bool(ev.value < 0), ev.grad.shape
    (True, (2, 2))
    """

    formulation_name = "skfd"

    def __init__(self, X: Array, y: NDArray[Any], kernel: Kernel, mu: float,
                 jitter: float = 1e-10, n_expansion: int | None = None) -> None:
        self.n_expansion = n_expansion
        self.X = np.asarray(X, dtype=float)
        self.y = _check_labels(self.formulation_name, y)
        self.kernel = kernel
        self.mu = _check_mu(type(self).__name__, mu)
        self.jitter = jitter * max(diagonal_scale(kernel, self.X), 1e-300)
        self.a = class_contrast(self.y)
        self.centre = within_class_centring(self.y)

    def evaluate(self, Z: Array, grad: bool = True) -> Evaluation:
        nz = self.n_expansion if self.n_expansion is not None else np.shape(Z)[0]
        Z = check_expansion_vectors(Z, nz, self.X.shape[1], self.formulation_name)
        K_xz, K_zz = kernel_blocks(self.kernel, self.X, Z)
        HK = self.centre(K_xz)
        B = HK.T @ HK + self.mu * (K_zz + self.jitter * np.eye(len(Z)))
        d = K_xz.T @ self.a
        try:
            v = scipy.linalg.cho_solve(scipy.linalg.cho_factor(B), d)
        except np.linalg.LinAlgError:
            # round-off made B^z indefinite (XVs almost equal): solve in its eigenbasis
            lam_b, V = np.linalg.eigh(B)
            v = V @ ((V.T @ d) / np.clip(lam_b, 1e-300, None))
        lam = max(float(d @ v), 0.0)  # dᵀ(B^z)⁻¹d ≥ 0; clip round-off
        # λ = 0 where the class means of K_XZ coincide, in practice where a line search has
        # sent the XVs so far from the data that K_XZ underflows to 0. Then A^z = 0 and W = 0
        # exactly, the largest value W takes, so the line search backs off; λ is quadratic in
        # d, so its gradient there is 0 (the formulas below, written with v = √λ β, give it).
        beta = v / np.sqrt(lam) if lam > 0 else np.zeros_like(v)
        proj = K_xz @ beta
        b = -0.5 * (proj[self.y > 0].mean() + proj[self.y < 0].mean())
        if not grad:
            return Evaluation(-lam, None, beta, float(b), "eigen")
        # √λ β = v and λ ββᵀ = v vᵀ: exact for every λ ≥ 0, including λ = 0
        G_xz = np.outer(-2.0 * self.a + 2.0 * self.centre(K_xz @ v), v)
        G_zz = self.mu * np.outer(v, v)
        gradient = self.kernel.vjp_z(self.X, Z, G_xz, K_xz) + self.kernel.vjp_zz(Z, G_zz, K_zz)
        return Evaluation(-lam, gradient, beta, float(b), "eigen")


class SKFD(KFD):
    """The paper's sparse KFD on the Rayleigh quotient (Appendix A), labels -1/+1.

    W(Z) = −(largest eigenvalue of (B^z)⁻¹A^z) with A^z, B^z the between-class
    and the regularised within-class scatter restricted to span φ(Z); W and
    ∇W come from `RayleighMarginal` (eq. 57-63), not from cvxpy.

    Its cvxpy declaration is the convex KFD with the same μ: for every Z it
    has the same β direction and the value 4/λ, so W_kfd = −4/W_skfd and the
    two share their minimisers over Z. The generic path (gradient checks,
    `sparsify.expansion_coefficients`) therefore serves as its reference.

    Parameters
    ----------
    mu : float, default=1.0
        The μ of B̂ = B + μI (> 0).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import RBF
    >>> X = np.array([[0.0, 0.0], [0.2, 0.1], [0.1, 0.3], [1.0, 1.0], [0.9, 1.2], [1.1, 0.8]])
    >>> y = np.array([-1, -1, -1, 1, 1, 1])
    >>> W = SKFD(mu=0.1).marginal(X, y, RBF(1.0), 2, "auto", 1e-9)
    >>> type(W).__name__
    'RayleighMarginal'
    """

    name = "skfd"

    def marginal(self, X: Array, y: NDArray[Any] | None, kernel: Kernel, n_expansion: int,
                 solver: str, tol: float) -> Marginal:
        return RayleighMarginal(X, _check_labels(self.name, y), kernel, self.mu,
                                n_expansion=n_expansion)
