"""The ε-SVR's exact fast path: an interior point on the normal equations, polished.

The ε-insensitive loss is two hinges, max(0, y_i − ε − f_i) and
max(0, f_i − y_i − ε), each a row of an SVM with a margin target p in place of
1: row i⁺ has sign +1 and target y_i − ε, row i⁻ sign −1 and target
−(y_i + ε). In whitened coordinates (Φ = K_XZ T, β = T u) the inner problem is

    min_{u,b} ½ ‖u‖² + Σ_rows C_r max(0, p_r − s_r (Φ_r u + b))

whose dual, max pᵀα − ½‖Σ_r α_r s_r Φ_r‖² over 0 ≤ α ≤ C with sᵀα = 0, is
the SVM's with a general linear term. A primal-dual interior point whose
Newton steps are (Nz + 1)-sized solves (`sparsify.algorithms.svr.interior`)
names the partition; `sparsify.svm_dual.SVMDualMarginal`'s active-set
method makes it exact on the 2N signed rows B = [Φ; −Φ], and its warm-started
path (coordinate descent, polish, its own interior point) answers where that
fails, the generic path after it. Lemma 1 gives the gradient with
ν_i = α_i⁺ − α_i⁻, the multiplier of f_i.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from sparsify.algorithms.svr.interior import interior_point
from sparsify.core.formulation import Formulation
from sparsify.core.kernel_blocks import whitened_rows
from sparsify.core.marginal import Evaluation, Marginal
from sparsify.kernels import Kernel
from sparsify.svm_dual import WORKING_BAND, SVMDualMarginal

Array = NDArray[np.float64]


class SVRDualMarginal(SVMDualMarginal):
    """W(Z) and ∇W(Z) of the ε-SVR by its exact fast path.

    The default path of `sparsify.SparseSVR` (``solver="auto"``): the interior
    point on the normal equations, polished by the SVM's active-set method. A
    named cvxpy backend selects the generic path, which is the reference this
    one is tested against.

    Parameters
    ----------
    C : float or ndarray of shape (N,)
        Weight of the ε-insensitive loss, or one weight C_i ≥ 0 per point (a
        point with C_i = 0 is left out of the solves).
    epsilon : float
        Half-width ε ≥ 0 of the tube inside which errors cost nothing.
    X : ndarray of shape (N, d)
        Training inputs.
    y : ndarray of shape (N,)
        Real targets.
    kernel : Kernel
        Kernel with vector-Jacobian products.
    n_expansion : int
        Number of XVs Nz.
    tol : float, default=1e-9
        KKT tolerance of the active-set solve, in units of the spread of y (the
        problem is solved with y, ε and C divided by it), and relative duality
        gap at which the interior points stop.
    jitter : float, default=1e-10
        Added to the diagonal of K_ZZ relative to the mean kernel diagonal,
        as in the generic path.
    formulation : Formulation
        The formulation this solves (`sparsify.algorithms.svr.formulation.SVR`),
        for the generic path that answers an evaluation where this one stalls.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import RBF
    >>> from sparsify.algorithms.svr.formulation import SVR
    >>> X = np.linspace(-2, 2, 30)[:, None]
    >>> y = np.sin(X[:, 0])
    >>> ev = SVRDualMarginal(10.0, 0.05, X, y, RBF(1.0), 4, formulation=SVR(10.0, 0.05)
    ...                      ).evaluate(X[::8])
    >>> residual = y - (RBF(1.0)(X, X[::8]) @ ev.coef + ev.intercept)
    >>> bool(np.abs(residual).max() < 0.2)
    True
    """

    method, title = "svr-dual", "SVR"
    # the interior point's iterate, step, residuals and numpy's temporaries: about 85 vectors
    # over the 2N rows at its peak (traced in tests/test_svr.py)
    row_vectors = 96

    def __init__(
        self,
        C: float | Array,
        epsilon: float,
        X: Array,
        y: NDArray[Any],
        kernel: Kernel,
        n_expansion: int,
        tol: float = 1e-9,
        jitter: float = 1e-10,
        *,
        formulation: Formulation,
        fallback: Marginal | None = None,
    ) -> None:
        if not np.all(np.isfinite(y)):
            raise ValueError("The targets y must be finite.")
        # a point with C_i = 0 is left out: both of its rows would have the box [0, 0]
        self.X, y, costs = self.take_points(C, X, y, kernel, jitter, formulation)
        # the problem is solved in units of y's spread s (the SVM's margins are 1, which
        # the solvers' tolerances assume): y/s, ε/s and C/s give W/s², β/s, b/s and ∇W/s²
        spread = float(np.ptp(y)) if len(y) > 1 else 0.0
        self.scale = spread if spread > 0 else max(float(np.abs(y).max()), 1.0)
        n, costs, y = len(y), costs / self.scale, y / self.scale
        epsilon = epsilon / self.scale
        self._points = (y, epsilon, costs)  # the interior point's problem, one row per point
        # the rows: i⁺ (sign +1, target y_i − ε) then i⁻ (sign −1, target −y_i − ε)
        self.y = np.concatenate([np.ones(n), -np.ones(n)])
        self.C = np.concatenate([costs, costs])
        self.targets = np.concatenate([y - epsilon, -y - epsilon])
        self.prepare(kernel, n_expansion, tol, fallback)
        # for the fallback: coordinate descent converges more slowly here than on the SVM's
        # rows (most points sit near the tube's edges); with shrinking its late passes are
        # cheap, and a partition named to cd_eps saves the polish more than they cost
        self.max_epochs = self.first_epochs = 10_000
        # and a weaker proximal coupling of the bias: every row shares the bias feature, which
        # at ρ = 1 outweighs the whitened rows (‖Φ_i‖ ≤ 1)
        self.rho = 0.1

    def evaluate(self, Z: Array, grad: bool = True) -> Evaluation:
        ev = super().evaluate(Z, grad)
        if ev.solver != self.method:  # the generic path solved the problem as given
            return ev
        s = self.scale
        return Evaluation(ev.value * s * s, None if ev.grad is None else ev.grad * (s * s),
                          ev.coef * s, float(ev.intercept) * s, ev.solver)

    def solve(self, B: Array) -> tuple[Array, Array, float]:
        """α, u, b by the interior point on the normal equations, its partition polished.

        The interior point (`sparsify.algorithms.svr.interior`) stops at a
        duality gap of ``tol``; the active-set method then lands on the exact
        KKT point from its partition, moving the rows near the tube's edges.
        Where either fails, the SVM's warm-started path answers (coordinate
        descent, polish, its own interior point).
        """
        y, epsilon, costs = self._points
        start = interior_point(B[:len(y)], y, epsilon, costs, self.tol)
        if start is not None:
            alpha = np.where(start.upper, self.C, np.where(start.free, start.alpha, 0.0))
            slack = B @ start.u + self.y * start.b - self.row_targets
            work = start.free | (np.abs(slack) <= WORKING_BAND)
            solved = self.settle(B, alpha, start.upper, start.free, work)
            if solved is not None:
                self.n_interior_point += 1
                self.last = (solved[0], solved[2])
                return solved[:3]
        return super().solve(B)

    def signed_rows(self, K_xz: Array, T: Array) -> Array:
        """The 2N signed rows [Φ; −Φ], Φ = K_XZ T, in a work array."""
        n, Nz = K_xz.shape
        B = self.work.get("B", 2 * n, Nz)
        whitened_rows(K_xz, T, B[:n])
        np.negative(B[:n], out=B[n:])
        return B

    def link_multipliers(self, alpha: Array) -> Array:
        """ν_i = α_i⁺ − α_i⁻, the multiplier of f_i."""
        n = len(self.X)
        return alpha[:n] - alpha[n:]
