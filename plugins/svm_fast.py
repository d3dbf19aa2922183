"""The SVM formulation's exact fast path: W(Z) by a dedicated dual solver, warm-started.

For fixed XVs Z, SLMC's inner problem (paper §3.4, eq. 41-43) is a linear SVM
with a free bias on the Nz features ψ_z(x) = K(Z, x) and the metric K_ZZ::

    min_{β,b} ½ βᵀK_ZZβ + C Σ_i max(0, 1 − y_i (K_XZ β + b)_i)

Its dual is a box-constrained QP over α ∈ [0, C]ᴺ with yᵀα = 0 whose Hessian
Q = B K_ZZ⁻¹ Bᵀ (B = diag(y) K_XZ) has rank Nz. Two exact methods share it:

* a primal active-set method, warm-started from the previous L-BFGS
  evaluation's α and written in C (``sparsify_plugins._active_set``, built
  when sparsify is installed): when L-BFGS takes a small step few points
  change side, and each change costs one (|free| + 1)-sized solve (β
  eliminated through the Cholesky factor of K_ZZ).
* a primal-dual interior-point method (Mehrotra) whose Newton systems cost
  O(N·Nz²) by the Sherman-Morrison-Woodbury identity: used when the warm start
  runs past its budget (large steps, large N). Its rounded iterates seed the
  active-set method, which lands on the exact KKT point.

Points far outside the margin at the previous solution are left out of the
solve and checked afterwards (shrinking, as in libsvm).

A solution is accepted only when its KKT conditions hold to ``tol`` (active
set) or its duality gap is below ``tol`` (interior point), so W(Z) agrees with
the generic path (sparsify.conic), which stays the reference in the tests and takes over
an evaluation where the interior point stalls. The gradient is
Lemma 1 with ν = α∘y and c = ½: ∂W/∂K_XZ = −(α∘y)βᵀ, ∂W/∂K_ZZ = ½ββᵀ. The
constraint yᵀα = 0 puts support vectors in both classes, so W is differentiable
(paper, Corollary 2) and no warning is needed here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sparsify.conic import ConicMarginal
from sparsify.formulation import Formulation
from sparsify.kernels import Kernel
from sparsify.marginal import (
    Evaluation,
    Marginal,
    check_expansion_vectors,
    diagonal_scale,
    kernel_blocks,
)

Array = NDArray[np.float64]
#: α, β, b and, from the active-set solve, its partition (bound, free masks)
Solution = tuple[Any, ...]


# The active-set moves are C (plugins/_active_set.c, compiled at install): each is a few
# loops over at most N points and a (2 Nz + 2)-sized solve, which numpy would spend in
# call overhead.
try:
    from sparsify_plugins._active_set import active_set as _compiled_active_set
except ImportError as error:  # a source tree used without installing it
    raise ImportError(
        "The SVM fast path's compiled part, sparsify_plugins._active_set, is missing: install "
        "sparsify from its checkout with `pip install .` (or `pip install -e .`), which builds "
        "it with the C compiler.") from error


def _warm_active_set(
    B: Array, y: Array, K: Array, K_inv: Array, L: Array, C: Array, alpha: Array,
    upper: NDArray[np.bool_], free: NDArray[np.bool_], tol: float, max_iter: int,
) -> tuple[Array, Array, float, NDArray[np.bool_], NDArray[np.bool_]] | None:
    """Primal active-set method on the dual from a guessed α and partition.

    Returns (α, β, b, bound mask, free mask) at a point where every KKT
    condition holds to ``tol``, or None after ``max_iter`` iterations. The
    constraints of the dual do not depend on Z, so the previous evaluation's α
    is feasible and its partition a good guess; a rounded interior point is
    the other start. Each iteration moves one point: towards the subproblem's
    solution on the free set until a bound blocks (the blocking point leaves
    the free set), or, at that solution, the point that violates its KKT
    condition most joins the free set. At a solution the free set typically
    holds Nz + 1 margin points, so a joining point makes the subproblem
    singular; the step then follows the null space of [B_F, y_F]ᵀ, along which
    the dual objective is linear, to the next bound. Every accepted point is
    a full step to a subproblem solution, so yᵀα = 0 holds exactly. ``L`` is
    the Cholesky factor of K (empty where K is not numerically positive
    definite: then every move solves the unreduced system). The moves run in
    C (`sparsify_plugins._active_set.active_set`) without the GIL; a
    non-finite value there counts as failure, since C raises no
    floating-point error.
    """
    # the C code takes C-contiguous float64 and bool arrays and updates the last three in place
    alpha = np.array(alpha, dtype=float)
    upper, free = np.array(upper, dtype=bool), np.array(free, dtype=bool)
    B, y, K, K_inv, L, C = (np.ascontiguousarray(a, dtype=float)
                            for a in (B, y, K, K_inv, L, C))
    beta = np.empty(B.shape[1])
    ok, b = _compiled_active_set(B, y, K, K_inv, L, C, alpha, upper, free, beta, float(tol),
                                 int(max_iter))
    return (alpha, beta, b, upper, free) if ok else None


class _Stalled(Exception):
    """The interior-point method made no progress (numerical breakdown)."""


@dataclass
class _NewtonSystem:
    """One interior-point iterate and its factorised Newton matrix.

    The matrix D + B K⁻¹ Bᵀ is inverted by Sherman-Morrison-Woodbury through
    the Nz × Nz matrix K + Bᵀ D⁻¹ B (``S_inv``), so no N × N matrix is formed.
    """

    y: Array
    alpha: Array
    s: Array  # C − α (C: the per-point costs)
    lam: Array  # multipliers of α ≥ 0
    mu: Array  # multipliers of α ≤ C
    r_d: Array
    r_p: float
    D_inv: Array
    BD: Array  # D⁻¹ B
    S_inv: Array  # (K + Bᵀ D⁻¹ B)⁻¹
    B: Array
    K_inv: Array

    def solve(self, v: Array) -> Array:
        """(D + B K⁻¹ Bᵀ)⁻¹ v, with one step of iterative refinement.

        Near the solution D spans many orders of magnitude and the Woodbury
        solve alone loses digits; one refinement step against the exact
        product restores them at the cost of a few matrix-vector products.
        """
        z = self._woodbury(v)
        residual = v - (z / self.D_inv + self.B @ (self.K_inv @ (self.B.T @ z)))
        return z + self._woodbury(residual)

    def _woodbury(self, v: Array) -> Array:
        dv = self.D_inv * v
        return dv - self.BD @ (self.S_inv @ (self.BD.T @ v))

    def direction(self, rc_lam: Array | float, rc_mu: Array | float) -> tuple[Any, ...]:
        """Newton step (Δα, Δb, Δλ, Δμ) towards complementarity targets, and its longest step."""
        alpha, s, lam, mu, y = self.alpha, self.s, self.lam, self.mu, self.y
        My = self.solve(y)
        Mr = self.solve(-self.r_d + rc_lam / alpha - lam - rc_mu / s + mu)
        db = (float(y @ Mr) + self.r_p) / float(y @ My)
        da = Mr - My * db
        dlam = (rc_lam - lam * alpha - lam * da) / alpha
        dmu = (rc_mu - mu * s + mu * da) / s
        V = np.concatenate([alpha, s, lam, mu])
        dV = np.concatenate([da, -da, dlam, dmu])
        neg = dV < 0
        t = min(1.0, float(np.min(-V[neg] / dV[neg]))) if neg.any() else 1.0
        return da, db, dlam, dmu, t


def _interior_point(
    B: Array,
    y: Array,
    K: Array,
    K_inv: Array,
    C: Array,
    tol: float,
    polish: Callable[..., Solution | None],
    max_iter: int = 100,
) -> Solution | None:
    """Mehrotra predictor-corrector on the SVM dual; None if it stalls.

    From a relative duality gap of 1e-3 on, the iterate's partition is offered
    to ``polish`` (the exact active-set method) each time the gap has fallen
    100-fold; that usually ends the method well before the gap reaches ``tol``.
    Where the method stalls instead (per-point costs spanning decades can make
    the gap wander back up), the partition of the iterate with the lowest gap
    gets one more polish. Plain numpy: at N in the hundreds an iteration is a
    few dozen vector operations.
    """
    N = len(y)
    alpha = 0.5 * C
    lam, mu, b = np.ones(N), np.ones(N), 0.0
    next_polish = 1e-3  # try the exact polish at gaps 1e-3, then 100× lower each time
    best: tuple[float, Array, NDArray[np.bool_], NDArray[np.bool_]] | None = None
    try:
        for _ in range(max_iter):
            s = C - alpha
            beta = K_inv @ (B.T @ alpha)
            g = B @ beta + y * b - 1.0
            wnorm2 = float(alpha @ (g + 1.0 - y * b))
            primal = 0.5 * wnorm2 + float(C @ np.maximum(0.0, -g))
            gap = (primal - (alpha.sum() - 0.5 * wnorm2)) / max(1.0, abs(primal))
            if gap <= next_polish or (best is not None and gap < best[0]):
                # A bound counts as active where its slack is below its multiplier
                # (α/C < λ, (C − α)/C < μ): on the central path the two separate
                # long before the gap closes.
                upper = s < C * mu
                free = ~upper & (alpha >= C * lam)
                start = np.where(upper, C, np.where(free, alpha, 0.0))
                best = (gap, start, upper, free)
                if gap <= next_polish:
                    next_polish = gap / 100
                    polished = polish(start, upper, free)
                    if polished is not None:
                        return polished
            r_p = float(y @ alpha)
            if gap <= tol and abs(r_p) <= tol * max(1.0, float(C.max())):
                return alpha, beta, b
            D_inv = 1.0 / (lam / alpha + mu / s)
            BD = B * D_inv[:, None]
            S_inv = np.linalg.inv(K + B.T @ BD)
            newton = _NewtonSystem(y, alpha, s, lam, mu, g - lam + mu, r_p, D_inv, BD, S_inv,
                                   B, K_inv)
            da, _, dlam, dmu, t = newton.direction(0.0, 0.0)  # predictor: affine scaling
            # Mehrotra's corrector: centre by σ = (m_aff / m)³ and correct the
            # second-order terms of the complementarity products.
            m = (lam @ alpha + mu @ s) / (2 * N)
            m_aff = ((alpha + t * da) @ (lam + t * dlam)
                     + (s - t * da) @ (mu + t * dmu)) / (2 * N)
            target = (m_aff / m) ** 3 * m
            da, db, dlam, dmu, t = newton.direction(target - da * dlam, target + da * dmu)
            t = min(1.0, 0.99 * t)
            alpha = alpha + t * da
            b += t * db
            lam = lam + t * dlam
            mu = mu + t * dmu
    except (np.linalg.LinAlgError, ZeroDivisionError, FloatingPointError):
        pass  # a breakdown: fall through to the best iterate
    return None if best is None else polish(*best[1:])


class SVMDualMarginal(Marginal):
    """W(Z) and ∇W(Z) of the SVM formulation by its dedicated exact solver.

    The default path of `SparseSVC` (``solver="auto"``); a
    named cvxpy backend selects the generic path instead, which is the
    reference this one is tested against.

    Parameters
    ----------
    C : float or ndarray of shape (N,)
        Weight of the hinge loss, or one weight C_i ≥ 0 per training point
        (the semi-supervised SVM weighs labeled and unlabeled points
        differently; `SparseSVC` passes C · class weight · sample weight). A
        point with C_i = 0 is left out of the solves: its dual box is [0, 0].
    X : ndarray of shape (N, d)
        Training inputs.
    y : ndarray of shape (N,)
        Labels in {-1, +1}.
    kernel : Kernel
        Kernel with vector-Jacobian products.
    n_expansion : int
        Number of XVs Nz.
    tol : float, default=1e-9
        KKT tolerance of the active-set solve and relative duality gap of the
        interior-point fallback.
    jitter : float, default=1e-10
        Added to the diagonal of K_ZZ relative to the mean kernel diagonal,
        as in the generic path, so the two solve the same problem.
    formulation : Formulation, optional
        The formulation this solves, for the generic path that answers an
        evaluation where this one stalls; ``SVM(C)`` by default. Required when
        ``C`` is an array.
    fallback : Marginal, optional
        What answers an evaluation where this one stalls instead of the generic
        path of ``formulation`` (a faster exact solver for the same problem).

    Attributes
    ----------
    n_active_set, n_interior_point, n_generic : int
        How many solves the warm-started active-set method settled, how many
        needed the interior-point method, and how many evaluations fell back
        to the generic path (or to ``fallback``).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import RBF
    >>> X = np.array([[0.0, 0.0], [0.2, 0.1], [1.0, 1.0], [0.9, 1.2]])
    >>> y = np.array([-1, -1, 1, 1])
    >>> ev = SVMDualMarginal(10.0, X, y, RBF(1.0), n_expansion=2).evaluate(X[[0, 2]])
    >>> np.sign(RBF(1.0)(X, X[[0, 2]]) @ ev.coef + ev.intercept).astype(int).tolist()
    [-1, -1, 1, 1]
    """

    def __init__(
        self,
        C: float | Array,
        X: Array,
        y: NDArray[Any],
        kernel: Kernel,
        n_expansion: int,
        tol: float = 1e-9,
        jitter: float = 1e-10,
        formulation: Formulation | None = None,
        fallback: Marginal | None = None,
    ) -> None:
        self.X = np.asarray(X, dtype=float)
        self.y = np.asarray(y, dtype=float)
        costs = np.asarray(C, dtype=float)
        if costs.ndim == 0 and formulation is None:
            from sparsify_plugins.svm import SVM  # svm imports this module

            formulation = SVM(float(costs))
        if formulation is None:
            raise ValueError("Pass formulation= (the problem the per-point costs C come from); "
                             "the generic fallback needs it.")
        self.formulation = formulation
        self.formulation_name = formulation.name
        if costs.ndim > 1 or (costs.ndim == 1 and costs.shape != self.y.shape):
            raise ValueError(f"C must be a number or an array of shape {self.y.shape}; "
                             f"got shape {costs.shape}.")
        if not np.all(np.isfinite(costs)) or np.any(costs < 0) or not np.any(costs > 0):
            raise ValueError("The costs C must be finite and >= 0, at least one of them "
                             "positive.")
        costs = np.broadcast_to(costs, self.y.shape)
        # the generic fallback solves the formulation on every point it was given
        self._X_all, self._y_all = self.X, self.y
        # the same jitter as the generic path, from every point, so both solve one problem
        self.jitter = jitter * max(diagonal_scale(kernel, self.X), 1e-300)
        # C_i = 0 pins α_i to the box [0, 0]: such a point changes neither W(Z) nor
        # ∇W(Z), and the solvers below divide by C_i, so it is left out of every solve
        keep = costs > 0
        self.X, self.y, self.C = self.X[keep], self.y[keep], costs[keep].copy()
        if not np.all(np.isin(self.y, (-1.0, 1.0))) or len(np.unique(self.y)) != 2:
            raise ValueError(f"The {self.formulation_name!r} formulation needs labels y in "
                             "{-1, +1} from both classes among the points with a positive "
                             "cost.")
        self.kernel = kernel
        self.n_expansion = int(n_expansion)
        self.tol = float(tol)
        # the previous solution (α, β, b[, bound mask, free mask]): the warm start
        self._last: Solution | None = None
        self.n_active_set = 0
        self.n_interior_point = 0
        self.n_generic = 0
        self._fallback: Marginal | None = fallback

    def _solve_subset(self, B: Array, y: Array, C: Array, K: Array, K_inv: Array, L: Array,
                      warm: Solution | None) -> Solution:
        """Solve the dual on some of the points; warm = (α, bound mask, free mask) or None."""
        tol = self.tol
        # A move is compiled and costs O(N·Nz); the interior point costs some twenty
        # O(N·Nz²) iterations of numpy calls, so a warm start may take many moves.
        budget = 10 * self.n_expansion + 100

        def polish(alpha: Array, upper: NDArray[np.bool_],
                   free: NDArray[np.bool_]) -> Solution | None:
            return _warm_active_set(B, y, K, K_inv, L, C, alpha, upper, free, tol, budget)

        if warm is not None:
            # when L-BFGS took a small step, few points change side
            solved = polish(*warm)
            if solved is not None:
                self.n_active_set += 1
                return solved

        solved = _interior_point(B, y, K, K_inv, C, 1e-2 * tol, polish)
        if solved is None:
            raise _Stalled
        self.n_interior_point += 1
        return solved

    def _solve(self, B: Array, K: Array) -> tuple[Array, Array, float]:
        """α, β, b on all points, solving on a working set (shrinking, as in libsvm).

        Points far outside the margin at the previous solution (predicted slack
        above 1 with the new kernel columns) are left out with α = 0; afterwards
        every left-out point is checked, and any that violates its KKT
        condition joins the working set, which is solved again.
        """
        y, N = self.y, len(self.y)
        # one inverse and one Cholesky factor per evaluation, shared by every solve below
        K_inv = np.linalg.inv(K)
        try:
            L = np.linalg.cholesky(K)
        except np.linalg.LinAlgError:  # K_ZZ not numerically positive definite: no reduced solves
            L = np.empty((0, 0))
        last = self._last
        if last is None:
            work = np.ones(N, dtype=bool)
        else:
            predicted = B @ last[1] + y * last[2] - 1.0
            work = (predicted < 1.0) | (last[0] > 0)
        warm = None if last is None or len(last) < 5 else last
        while True:
            sub = None if warm is None else (warm[0][work], warm[3][work], warm[4][work])
            alpha_w, beta, b, *partition = self._solve_subset(B[work], y[work], self.C[work], K,
                                                              K_inv, L, sub)
            g = B @ beta + y * b - 1.0
            missed = ~work & (g < -self.tol)
            alpha = np.zeros(N)
            alpha[work] = alpha_w
            if partition:
                upper, free = np.zeros(N, dtype=bool), np.zeros(N, dtype=bool)
                upper[work], free[work] = partition
                solution: Solution = (alpha, beta, b, upper, free)
            else:  # an unpolished interior point has no partition to warm-start from
                solution = (alpha, beta, b)
            if not missed.any():
                self._last = solution
                return alpha, beta, b
            work |= missed
            warm = solution if partition else None

    def evaluate(self, Z: Array, grad: bool = True) -> Evaluation:
        Z = check_expansion_vectors(Z, self.n_expansion, self.X.shape[1], self.formulation_name)
        K_xz, K_zz = kernel_blocks(self.kernel, self.X, Z)
        K = K_zz + self.jitter * np.eye(len(Z))
        B = self.y[:, None] * K_xz
        try:
            # a division by zero or a NaN is a breakdown too, not a warning to go on from
            with np.errstate(divide="raise", invalid="raise"):
                alpha, beta, b = self._solve(B, K)
        except (_Stalled, np.linalg.LinAlgError, ZeroDivisionError, FloatingPointError):
            # rare numerical breakdown (nearly singular K_ZZ, extreme C, degenerate
            # data): the generic path, this one's reference, answers this evaluation
            self._last = None
            self.n_generic += 1
            if self._fallback is None:
                self._fallback = ConicMarginal(self.formulation, self._X_all, self._y_all,
                                               self.kernel, self.n_expansion, tol=self.tol)
            return self._fallback.evaluate(Z, grad)
        g = B @ beta + self.y * b - 1.0
        value = float(0.5 * beta @ K @ beta + self.C @ np.maximum(0.0, -g))
        if not grad:
            return Evaluation(value, None, beta, b, "svm-dual")
        nu = alpha * self.y
        gradient = (self.kernel.vjp_z(self.X, Z, -np.outer(nu, beta), K_xz)
                    + self.kernel.vjp_zz(Z, 0.5 * np.outer(beta, beta), K_zz))
        return Evaluation(value, gradient, beta, b, "svm-dual")
