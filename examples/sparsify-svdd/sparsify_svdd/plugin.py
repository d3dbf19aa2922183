"""Support vector data description (SVDD, Tax & Duin 2004) as a sparsify plugin.

SVDD encloses the data in the smallest sphere in feature space, centre a and radius R, that
leaves out a fraction of at most ν of the points: minimise R² + C Σ_i ξ_i subject to
‖φ(x_i) − a‖² ≤ R² + ξ_i, ξ_i ≥ 0, C = 1/(νN). sparsify owns the centre a = w and hands the
formulation f_i = ⟨w, φ(x_i)⟩ and ‖w‖², so ‖φ(x_i) − a‖² = κ − 2 f_i + ‖w‖² for a kernel with a
constant diagonal κ = k(x, x) (the Gaussian's; others are refused). With ρ = R² − κ − ‖w‖², free
like R², and the objective scaled by νN, this is the quadratic program

    minimise  νN·(‖w‖² + ρ) + Σ_i max(0, −2 f_i − ρ),

whose decision function (R² − ‖φ(x) − a‖²)/2 = f(x) + ρ/2 is positive inside the sphere. With a
constant diagonal its dual is the ν-one-class SVM's, so the full SVDD decides as
`sklearn.svm.OneClassSVM` does (the tests check it).
"""

import cvxpy as cp
import numpy as np
from sklearn.utils.validation import validate_data

from sparsify import RBF, Declaration, Formulation, SparseOutlierDetector, SumKernel, hookimpl
from sparsify.kernels import make_kernel


class SVDD(Formulation):
    """ν-SVDD: the smallest sphere in feature space holding all but a fraction ν of the data."""

    name, task = "svdd", "outlier_detector"
    supported_kernels = ("rbf",)  # ‖φ(x) − a‖² needs a constant diagonal k(x, x)

    def __init__(self, nu=0.5):
        if not 0.0 < nu <= 1.0:
            raise ValueError(f"The 'nu' parameter of SVDD must be in (0.0, 1.0]. Got {nu!r}.")
        self.nu = nu

    def declare(self, out):
        rho = cp.Variable(name="rho")  # R² − κ − ‖w‖²
        outside = cp.sum(cp.pos(-2 * out.f - rho))
        objective = self.nu * out.n_samples * (out.norm_w2 + rho) + outside
        return Declaration(cp.Minimize(objective), [], intercept=rho / 2)


class SparseSVDD(SparseOutlierDetector):
    """Sparse SVDD: a sphere whose centre is Σ_j β_j φ(z_j) over Nz optimised XVs."""

    formulation_class = SVDD

    def fit(self, X, y=None):
        X = validate_data(self, X, dtype=np.float64)
        diag = make_kernel(self.kernel, X, self.gamma, self.degree, self.coef0).diag(X)
        if np.ptp(diag) > 1e-10 * max(1.0, float(np.abs(diag).max())):
            raise ValueError(f"SparseSVDD needs a kernel whose diagonal k(x, x) is constant, such "
                             f"as 'rbf'; kernel={self.kernel!r} varies on the training data.")
        super().fit(X)
        beta, Z = self.expansion_coef_[0], self.expansion_vectors_
        r2 = 2 * self.intercept_[0] + diag[0] + beta @ self.kernel_(Z, Z) @ beta  # ρ + κ + ‖w‖²
        self.radius_ = float(np.sqrt(max(r2, 0.0)))
        return self

    def model_file_rule(self):
        """How a model file describes it (sparsify's public hook): the outlier detector's rule,
        for the kernels whose diagonal k(x, x) is constant everywhere, which its decisions
        assume."""
        parts = self.kernel_.kernels if isinstance(self.kernel_, SumKernel) else (self.kernel_,)
        if not all(type(part) is RBF for part in parts):  # only these are constant everywhere
            raise ValueError(f"SparseSVDD with the kernel {self.kernel_!r} cannot be saved as a "
                             "model file: only 'rbf' kernels have a constant diagonal everywhere.")
        return {"decision_rule": "outlier_sign", "formulation": "svdd"}


@hookimpl
def register_formulations(register):
    register(SVDD)


@hookimpl
def register_estimators(register):
    register(SparseSVDD)
