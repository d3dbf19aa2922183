"""One-class SVM (Schölkopf et al. 2001): with free XVs, a sparse novelty detector.

Schölkopf's primal: minimise ½‖w‖² + 1/(νN) Σ_i ξ_i − ρ subject to
f_i ≥ ρ − ξ_i, ξ ≥ 0; its dual is min ½ αᵀKα s.t. 0 ≤ α ≤ 1/(νN), Σα = 1.
sparsify declares the same problem with the objective multiplied by νN,

    minimise (νN/2)‖w‖² + Σ_i ξ_i − νN·ρ,

so w, ρ and the machine τ(x) = ⟨w, φ(x)⟩ − ρ (intercept −ρ) are Schölkopf's,
and W(Z) is νN times his optimal value; by strong duality, at Z = X,
W = −(νN/2) αᵀKα = −α'ᵀKα' / (2νN) with libsvm's multipliers α' = νN·α
(0 ≤ α' ≤ 1, Σα' = νN). `sklearn.svm.OneClassSVM`'s decision function
is νN·τ. Why the factor: unscaled, W is of order 1e-2 and ECOS at tol 1e-9
stops with "numerical problems" on about a third of the gradient-check
problems (measured: 18 of 60 kernel × ν × seed cases; 0 of 16 with the factor).

The problem is unsupervised: labels, if any, are ignored.
"""

from __future__ import annotations

from numbers import Real
from typing import Any, ClassVar

import cvxpy as cp
from sklearn.utils._param_validation import Interval

from sparsify import Declaration, Formulation, Outputs
from sparsify.core.params import check_params


class OneClass(Formulation):
    """ν-one-class SVM: separate the data from the origin in feature space.

    Parameters
    ----------
    nu : float, default=0.9
        In (0, 1]: an upper bound on the fraction of training points outside
        the estimated support and a lower bound on the fraction of support
        vectors, as in `sklearn.svm.OneClassSVM`. The default is not sklearn's
        0.5 (which `SparseOneClassSVM` keeps): with a linear or an odd
        polynomial kernel on centred data the origin lies in the reduced
        convex hull of the mapped data for small ν, so w = 0 and W ≡ 0 (seen
        for ν ≤ 0.7 on `sparsify.core.gradcheck.random_problem`); 0.9 makes the
        default problem one with a gradient to check.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import CvxpyMarginal, RBF
    >>> rng = np.random.default_rng(0)
    >>> X = 0.3 * rng.normal(size=(30, 2))
    >>> ev = CvxpyMarginal(OneClass(nu=0.2), X, None, RBF(1.0), n_expansion=3).evaluate(X[:3])
    >>> tau = RBF(1.0)(np.array([[0.0, 0.0], [3.0, 3.0]]), X[:3]) @ ev.coef + ev.intercept
    >>> np.sign(tau).astype(int).tolist()
    [1, -1]
    """

    name = "oneclass"

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "nu": [Interval(Real, 0.0, 1.0, closed="right")],
    }

    def __init__(self, nu: float = 0.9) -> None:
        check_params(type(self).__name__, self._parameter_constraints, nu=nu)
        self.nu = nu

    def declare(self, out: Outputs) -> Declaration:
        rho = cp.Variable(name="rho")
        # ξ_i = max(0, ρ − f_i) eliminated; any labels in out.y are ignored.
        slack = cp.sum(cp.pos(rho - out.f))
        scale = self.nu * out.n_samples
        objective = 0.5 * scale * out.norm_w2 + slack - scale * rho
        return Declaration(cp.Minimize(objective), [], -rho)
