"""The squared-hinge SVM's exact fast path: W(Z) by a finite Newton method, warm-started.

With ``loss="squared_hinge"`` (the L2-SVM, `sklearn.svm.LinearSVC`'s default loss)
SLMC's inner problem in the whitened coordinates of `sparsify.svm_dual`
(Φ = K_XZ T, β = T u) is::

    min_{u,b} F(u, b) = ½ ‖u‖² + Σ_i C_i max(0, 1 − y_i (Φ_i u + b))²

a convex piecewise quadratic, continuously differentiable and, as soon as one
point violates its margin, strictly convex. Keerthi and DeCoste's modified
finite Newton method (JMLR 2005, "L2-SVM-MFN") solves it exactly: on the set A
of points with y_i (Φ_i u + b) < 1, F is the quadratic ½‖u‖² + Σ_A C_i (y_i − Φ_i u − b)²,
whose minimiser is one (Nz + 1)-sized solve; an exact line search towards it
(a sweep over the points' breakpoints) gives the next iterate, and the method
stops, at the exact minimiser, when the set A of the Newton point is the set it
was computed from. Each iteration costs O(|A|·Nz²), the order of the
whitening; warm-started from the previous evaluation's set, a few iterations
suffice.

The gradient is Lemma 1 as for the hinge loss, with the dual α_i = 2 C_i ξ_i
(ξ_i the margin slack): ∂W/∂K_XZ = −(α∘y)βᵀ, ∂W/∂K_ZZ = ½ββᵀ. The dual is
strongly convex (its Hessian is the hinge dual's plus diag(1/(2 C_i))), so α is
unique and W differentiable at every Z.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
from numpy.typing import NDArray

from sparsify.core.kernel_blocks import link_gradient, whitened_rows
from sparsify.core.marginal import Evaluation, check_expansion_vectors
from sparsify.svm_dual import Stalled, SVMDualMarginal

__all__ = ["SquaredHingeMarginal", "line_search"]

Array = NDArray[np.float64]

#: Newton iterations per evaluation before it counts as stalled: the method ends in a
#: finite number of steps, typically under ten (Keerthi and DeCoste report 5-20 from zero).
MAX_NEWTON = 100
#: Rows per block of the Newton system's products.
BLOCK = 4096


def line_search(a: float, c: float, slack: Array, delta: Array, C: Array) -> float:
    """The exact minimiser t ≥ 0 of F along a direction, F piecewise quadratic in t.

    Along (u, b) + t·(d_u, d_b), with ``a`` = u·d_u, ``c`` = ‖d_u‖², ``slack`` =
    1 − y_i (Φ_i u + b) and ``delta`` = y_i (Φ_i d_u + d_b), the derivative of F is
    the piecewise linear, nondecreasing a + c t − 2 Σ_i C_i δ_i max(0, slack_i − t δ_i);
    its root is found from running sums over the sorted breakpoints slack_i / δ_i.

    Examples
    --------
    One point with slack 1 and δ = 1, C = 1 and no ‖u‖² term: F(t) = (1 − t)²
    is smallest at t = 1.

    >>> import numpy as np
    >>> line_search(0.0, 0.0, np.array([1.0]), np.array([1.0]), np.array([1.0]))
    1.0
    """
    # the derivative is g + h t on each segment between breakpoints; at t = 0:
    on = slack > 0
    g0 = a - 2.0 * float(C[on] @ (delta[on] * slack[on]))
    h0 = c + 2.0 * float(C[on] @ (delta[on] ** 2))
    # a point toggles where slack_i = t δ_i: leaves (δ > 0, on) or joins (δ < 0, off)
    with np.errstate(divide="ignore", invalid="ignore"):
        t_break = slack / delta
    toggles = (((delta > 0) & on) | ((delta < 0) & ~on)) & (t_break > 0)
    idx = np.flatnonzero(toggles)[np.argsort(t_break[toggles])]
    sign = np.where(on[idx], -1.0, 1.0)  # leaving takes its terms out of g and h
    # g and h on the segments [0, t_1], [t_1, t_2], …, [t_last, ∞), by running sums
    g = g0 + np.cumsum(np.append(0.0, sign * (-2.0 * C[idx] * delta[idx] * slack[idx])))
    h = h0 + np.cumsum(np.append(0.0, sign * (2.0 * C[idx] * delta[idx] ** 2)))
    starts, ends = np.append(0.0, t_break[idx]), np.append(t_break[idx], np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        root = -g / h
    # the derivative is nondecreasing: the first segment whose line meets 0 before its end
    inside = np.flatnonzero((h > 0) & (root <= ends))
    if len(inside) == 0:
        raise Stalled  # F unbounded along the direction: not a descent problem
    k = inside[0]
    return float(max(starts[k], root[k]))


class SquaredHingeMarginal(SVMDualMarginal):
    """Exact W(Z) and ∇W(Z) of the squared-hinge SVM by a finite Newton method.

    The points, costs, jitter, memory check and generic fallback are those of
    `sparsify.svm_dual.SVMDualMarginal`; the inner solve is the
    module's Newton method.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import RBF
    >>> from sparsify.algorithms.svm.formulation import SVM
    >>> X = np.array([[0.0, 0.0], [0.2, 0.1], [1.0, 1.0], [0.9, 1.2]])
    >>> y = np.array([-1, -1, 1, 1])
    >>> svm = SVM(C=10.0, loss="squared_hinge")
    >>> ev = SquaredHingeMarginal(10.0, X, y, RBF(1.0), 2, formulation=svm).evaluate(X[[0, 2]])
    >>> np.sign(RBF(1.0)(X, X[[0, 2]]) @ ev.coef + ev.intercept).astype(int).tolist()
    [-1, -1, 1, 1]
    """

    method, title = "svm-l2-newton", "squared-hinge SVM"

    def _newton_point(self, Phi: Array, on: NDArray[np.bool_]) -> tuple[Array, float]:
        """The minimiser (u, b) of ½‖u‖² + Σ_on C_i (y_i − Φ_i u − b)²: one (Nz + 1) solve."""
        Nz = Phi.shape[1]
        # [Φ_A, 1]ᵀ diag(C_A) [Φ_A, 1] and [Φ_A, 1]ᵀ diag(C_A) y_A, by row blocks: no
        # N × Nz copy beside Φ
        H, rhs = np.zeros((Nz + 1, Nz + 1)), np.zeros(Nz + 1)
        rows = np.flatnonzero(on)
        for start in range(0, len(rows), BLOCK):
            block = rows[start:start + BLOCK]
            P = np.hstack([Phi[block], np.ones((len(block), 1))])
            Pc = P * self.C[block, None]
            H += P.T @ Pc
            rhs += Pc.T @ self.y[block]
        H *= 2.0
        H[:Nz, :Nz] += np.eye(Nz)
        rhs *= 2.0
        solution = scipy.linalg.cho_solve(scipy.linalg.cho_factor(H), rhs)
        return solution[:Nz], float(solution[Nz])

    def _solve_newton(self, Phi: Array) -> tuple[Array, float, Array]:
        """(u, b) minimising F exactly, from the previous solution's margin violators, and
        the points' margin slacks 1 − y_i (Φ_i u + b) there."""
        y, C = self.y, self.C
        # the previous set of violators names the start; from nothing, every point
        on = (np.ones(len(y), dtype=bool) if self.last is None else self.last[0] > 0)
        if not (np.any(y[on] > 0) and np.any(y[on] < 0)):
            on = np.ones(len(y), dtype=bool)
        u, b = self._newton_point(Phi, on)
        for _ in range(MAX_NEWTON):
            slack = 1.0 - y * (Phi @ u + b)
            now = slack > 0
            if np.array_equal(now, on):
                return u, b, slack  # the Newton point of its own set: F's exact minimiser
            on = now
            # no violator: F = ½‖u‖² here, whose minimiser towards which to search is u = 0
            u_new, b_new = self._newton_point(Phi, on) if on.any() else (np.zeros_like(u), b)
            d_u, d_b = u_new - u, b_new - b
            t = line_search(float(u @ d_u), float(d_u @ d_u), slack, y * (Phi @ d_u + d_b), C)
            # a full step lands on the Newton point itself, without round-off
            u, b = (u_new, b_new) if t >= 1.0 else (u + t * d_u, b + t * d_b)
        raise Stalled

    def evaluate(self, Z: Array, grad: bool = True) -> Evaluation:
        Z = check_expansion_vectors(Z, self.n_expansion, self.X.shape[1], self.formulation_name)
        K_xz, K_zz, T = self.blocks(Z)
        Phi = whitened_rows(K_xz, T, self.work.get("Phi", *K_xz.shape))
        try:
            with np.errstate(divide="raise", invalid="raise"):
                u, b, slack = self._solve_newton(Phi)
        except (Stalled, np.linalg.LinAlgError, FloatingPointError):
            return self.fall_back(Z, grad)  # a numerical breakdown
        slack = np.maximum(slack, 0.0)
        alpha = 2.0 * self.C * slack
        self.last = (alpha, b)
        beta = T @ u
        value = float(0.5 * u @ u + self.C @ slack**2)
        if not grad:
            return Evaluation(value, None, beta, b, self.method)
        gradient = link_gradient(self.kernel, self.X, Z, K_xz, K_zz, alpha * self.y, beta, 0.5)
        return Evaluation(value, gradient, beta, b, self.method)
