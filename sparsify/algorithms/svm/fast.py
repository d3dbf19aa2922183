"""The SVM formulation's exact fast path: W(Z) by a dedicated dual solver, warm-started.

For fixed XVs Z, SLMC's inner problem (paper §3.4, eq. 41-43) is a linear SVM
with a free bias on Nz features. In whitened coordinates, Φ = K_XZ T with
Tᵀ (K_ZZ + jitter·I) T = I (T = L⁻ᵀ from its Cholesky factor L, a triangular
product; `sparsify.core.kernel_blocks.triangular_whitening`) and β = T u, it reads::

    min_{u,b} ½ ‖u‖² + Σ_i C_i max(0, 1 − y_i (Φ_i u + b))

whose rows are bounded (‖Φ_i‖² ≤ k(x_i, x_i)) however ill-conditioned K_ZZ is.
Its dual is a box-constrained QP over α ∈ [0, C]ᴺ with yᵀα = 0 whose Hessian
has rank Nz. Each evaluation, on the signed rows B = y∘Φ (one N × Nz array):

* dual coordinate descent (``sparsify.algorithms.svm._dual_cd``, in C: the LIBLINEAR
  method, with the free bias by proximal steps on b and shrinking),
  warm-started from the previous evaluation's α and b, names the partition
  (at C, free, at 0) to 1e-2 in the projected gradient, at O(N·Nz) per pass;
  it settles in bulk the many points that change side after an L-BFGS step;
* the primal active-set method (``sparsify.algorithms.svm._active_set``, in C) lands
  on the exact KKT point from that partition, moving only the points near the
  margin (a working set; the others held at their bounds and checked
  afterwards), each move one (|free| + 1)-sized solve by a Cholesky factor of
  the free rows' Gram matrix kept across moves;
* a primal-dual interior-point method (Mehrotra) whose Newton systems cost
  O(n·Nz²) by the Sherman-Morrison-Woodbury identity takes over where the
  polish does not settle (or, at the first evaluation, where coordinate
  descent left a KKT violation outside the polish's working set), on a working
  set of n rows (the last solution's support and the rows near its margin,
  joined by any held row that violates its KKT condition); its rounded
  iterates seed the active-set method.

An evaluation costs O(N·Nz·(d + Nz)): the kernel block, the whitening and a
few passes of coordinate descent; the kernel block and the gradient are
computed in row blocks, so memory is K_XZ and B, two N × Nz arrays.

A solution is accepted only when its KKT conditions hold to ``tol`` (active
set) or its duality gap is below ``tol`` (interior point), so W(Z) agrees with
the generic path (sparsify.core.conic), which stays the reference in the tests and
takes over an evaluation where the interior point stalls and the smoothed hinge's Newton
path (`sparsify.algorithms.svm.smoothed`, polished like the interior point) does not
settle either. The gradient is
Lemma 1 with ν = α∘y and c = ½: ∂W/∂K_XZ = −(α∘y)βᵀ, ∂W/∂K_ZZ = ½ββᵀ. The
constraint yᵀα = 0 puts support vectors in both classes, so W is differentiable
(paper, Corollary 2) and no warning is needed here.

The same solvers take a margin target p_r per row in place of 1 (the dual's
linear term pᵀα): the ε-SVR (`sparsify.algorithms.svr.fast`) is this problem
on two rows per point.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sparsify.algorithms.svm.smoothed import hinge_partition, smoothed_hinge_path
from sparsify.core.conic import ConicMarginal
from sparsify.core.formulation import Formulation
from sparsify.core.kernel_blocks import (
    BLOCK_ROWS,
    WorkArrays,
    diagonal_scale,
    kernel_blocks,
    link_gradient,
    triangular_whitening,
    whitened_rows,
)
from sparsify.core.marginal import Evaluation, Marginal, check_expansion_vectors
from sparsify.core.memory import check_memory
from sparsify.kernels import Kernel

Array = NDArray[np.float64]
#: α, β, b and, from the active-set solve, its partition (bound, free masks)
Solution = tuple[Any, ...]

#: Points whose margin slack after coordinate descent lies within this of 0 make the
#: polish's working set (with the free ones); coordinate descent stops at a projected
#: gradient of 1e-2, so a point farther out is almost surely on the right side.
WORKING_BAND = 0.1
#: The interior point's working set: rows within this margin slack of the last solution
#: (wider than WORKING_BAND: that solution was for other XVs, or is coordinate descent's).
IP_BAND = 0.5
#: After the polish fails, this many evaluations go straight to the interior point (one
#: interior point costs less than a failed coordinate descent and polish; on a 4 × 4
#: checkerboard at C = 1000, Nz = 16, N = 10⁵: 0.44 s against 1.7 s) before it is tried again.
SKIP_POLISH = 10
#: After this many iterates without a new lowest duality gap the interior point polishes its
#: best iterate's partition (a working Mehrotra iterate lowers the gap at each step; the
#: early ones, at a gap near 1, by a little each)
IP_STALL = 10


# The active-set moves and the coordinate descent are C (sparsify/algorithms/svm/_active_set.c,
# sparsify/algorithms/svm/_dual_cd.c, compiled at install): each step is a few loops over at most N
# points, which numpy would spend in call overhead.
try:
    from sparsify.algorithms.svm._active_set import active_set as _compiled_active_set
    from sparsify.algorithms.svm._dual_cd import dual_cd
except ImportError as error:  # a source tree used without installing it
    raise ImportError(
        "The SVM fast path's compiled part, sparsify.algorithms.svm._active_set or _dual_cd, is "
        "missing: install sparsify from its checkout with `pip install .` (or `pip install "
        "-e .`), which builds it with the C compiler.") from error


def _warm_active_set(
    B: Array, y: Array, K: Array, K_inv: Array, L: Array, C: Array, alpha: Array,
    upper: NDArray[np.bool_], free: NDArray[np.bool_], tol: float, max_iter: int,
    held: tuple[Array, float] | None = None, targets: Array | None = None,
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
    C (`sparsify.algorithms.svm._active_set.active_set`) without the GIL; a
    non-finite value there counts as failure, since C raises no
    floating-point error. ``held`` = (Σ C_j B_j, Σ C_j y_j) over points at
    their upper bound that are not among B's rows: a working set is polished
    with the rest held at their bounds. ``targets`` are the rows' margin
    targets p (the dual's linear term); None: 1 for every row, the SVM.
    """
    # the C code takes C-contiguous float64 and bool arrays and updates the last three in place
    alpha = np.array(alpha, dtype=float)
    upper, free = np.array(upper, dtype=bool), np.array(free, dtype=bool)
    B, y, K, K_inv, L, C = (np.ascontiguousarray(a, dtype=float)
                            for a in (B, y, K, K_inv, L, C))
    beta = np.empty(B.shape[1])
    v0, cy0 = (np.zeros(B.shape[1]), 0.0) if held is None else held
    p = None if targets is None else np.ascontiguousarray(targets, dtype=float)
    ok, b, _ = _compiled_active_set(B, y, K, K_inv, L, C, alpha, upper, free, beta, float(tol),
                                    int(max_iter), np.ascontiguousarray(v0, dtype=float),
                                    float(cy0), p)
    return (alpha, beta, b, upper, free) if ok else None


class _Stalled(Exception):
    """The interior-point method made no progress (numerical breakdown)."""


@dataclass
class _NewtonSystem:
    """One interior-point iterate and its factorised Newton matrix.

    The matrix D + B K⁻¹ Bᵀ is inverted by Sherman-Morrison-Woodbury through
    the Nz × Nz matrix K + Bᵀ D⁻¹ B (``S_inv``), so no N × N matrix is formed,
    nor a second N × Nz one (D⁻¹ B is applied as D⁻¹ (B x)).
    """

    y: Array
    alpha: Array
    s: Array  # C − α (C: the per-point costs)
    lam: Array  # multipliers of α ≥ 0
    mu: Array  # multipliers of α ≤ C
    r_d: Array
    r_p: float
    D_inv: Array
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
        return dv - self.D_inv * (self.B @ (self.S_inv @ (self.B.T @ dv)))

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


def _polish_affordable(n_free: int, Nz: int, rows: int) -> bool:
    """Whether the polish from a partition with ``n_free`` free rows costs about an interior
    point iteration on ``rows`` rows or less.

    Beyond Nz + 1 free rows each of the polish's moves is a null-space step dropping one
    row, an elimination of (Nz + 1) × n_free; those steps cost about one more iterate,
    rows·Nz², where (n_free − Nz − 1)·n_free ≤ rows (ringnorm at N = 3·10⁵, Nz = 500,
    C = 0.1: 24 s from 711 free rows, an iterate 0.7 s).
    """
    return (n_free - Nz - 1) * n_free <= rows


def _interior_point(
    B: Array,
    y: Array,
    K: Array,
    K_inv: Array,
    C: Array,
    tol: float,
    polish: Callable[..., Solution | None],
    max_iter: int = 100,
    targets: Array | None = None,
) -> Solution | None:
    """Mehrotra predictor-corrector on the SVM dual; None if it stalls.

    The dual is min ½‖K^(-½) Bᵀα‖² − pᵀα over 0 ≤ α ≤ C, yᵀα = 0, with the
    margin targets p = ``targets`` (1 for the SVM where None).

    From a relative duality gap of 1e-3 on, the iterate's partition is offered
    to ``polish`` (the exact active-set method) each time the gap has fallen
    100-fold, unless it has so many more free rows than the Nz + 1 the margin
    holds in general position that the polish would cost more than further
    iterates; that usually ends the method well before the gap reaches ``tol``.
    After `IP_STALL` iterates without a new lowest gap the partition of the
    iterate with the lowest gap is polished once (the method goes on where that
    does not settle). Where the method stalls to the end instead (per-point
    costs spanning decades can make the gap wander back up) or diverges (the
    gap 100 times its lowest), that partition gets one more polish. Plain
    numpy: at N in the hundreds an iteration is a few dozen vector operations.
    """
    N = len(y)
    p = np.ones(N) if targets is None else targets
    alpha = 0.5 * C
    lam, mu, b = np.ones(N), np.ones(N), 0.0
    next_polish = 1e-3  # try the exact polish at gaps 1e-3, then 100× lower each time
    best: tuple[float, Array, NDArray[np.bool_], NDArray[np.bool_]] | None = None
    stalled = 0  # iterates since the gap last reached a new low
    lowest = np.inf  # the lowest largest dual residual |g − λ + μ| so far
    try:
        for _ in range(max_iter):
            s = C - alpha
            beta = K_inv @ (B.T @ alpha)
            g = B @ beta + y * b - p
            wnorm2 = float(alpha @ (g + p - y * b))
            primal = 0.5 * wnorm2 + float(C @ np.maximum(0.0, -g))
            # (the SVM's Σα by numpy's pairwise sum, as before targets existed)
            linear = float(alpha.sum()) if targets is None else float(p @ alpha)
            gap = (primal - (linear - 0.5 * wnorm2)) / max(1.0, abs(primal))
            r_d = g - lam + mu
            residual = float(np.abs(r_d).max())
            if best is not None and (gap > 100 * best[0] or residual > 100 * lowest):
                # diverged: the Newton directions lost their accuracy (a checkerboard at
                # C = 10⁴, fixed random XVs: from a gap of 0.006 back to 1, then steps of
                # 1e-7 to the end; its best partition then settled in the polish). The
                # dual residual is linear in the iterate, so an exact step of length t
                # scales it by 1 − t: its growth is round-off (a checkerboard at C = 10⁶,
                # N = 10⁶, on 140 360 rows: from 520 to 2·10⁵ in five iterates, the gap at 1)
                break
            lowest = min(lowest, max(residual, 1e-9))
            stalled = 0 if best is None or gap < best[0] else stalled + 1
            if stalled == IP_STALL and best is not None:
                # stalled (at N = 10⁶, Nz = 500 on 40 679 rows: from 0.11 back to 0.999,
                # crawling there to the 100th iterate, 78 s): the best partition's polish;
                # where it does not settle the iterates go on, as before this rule
                polished = polish(*best[1:])
                if polished is not None:
                    return polished
            if best is None or gap < best[0] or gap <= next_polish:
                # A bound counts as active where its slack is below its multiplier
                # (α/C < λ, (C − α)/C < μ): on the central path the two separate
                # long before the gap closes.
                upper = s < C * mu
                free = ~upper & (alpha >= C * lam)
                start = np.where(upper, C, np.where(free, alpha, 0.0))
                if best is None or gap < best[0]:
                    best = (gap, start, upper, free)
                if gap <= next_polish and _polish_affordable(int(free.sum()), B.shape[1], N):
                    next_polish = gap / 100
                    polished = polish(start, upper, free)
                    if polished is not None:
                        return polished
            r_p = float(y @ alpha)
            if gap <= tol and abs(r_p) <= tol * max(1.0, float(C.max())):
                return alpha, beta, b
            D_inv = 1.0 / (lam / alpha + mu / s)
            S = np.array(K, dtype=float)
            for start in range(0, len(B), BLOCK_ROWS):  # K + Bᵀ D⁻¹ B in row blocks
                block = slice(start, start + BLOCK_ROWS)
                S += B[block].T @ (B[block] * D_inv[block, None])
            S_inv = np.linalg.inv(S)
            newton = _NewtonSystem(y, alpha, s, lam, mu, r_d, r_p, D_inv, S_inv,
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
    n_active_set, n_interior_point, n_smoothed, n_generic : int
        How many solves the warm-started active-set method settled, how many
        needed the interior-point method, how many the smoothed hinge's Newton
        path where the interior point stalled, and how many evaluations fell
        back to the generic path (or to ``fallback``).

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

    #: the name evaluations give as their solver, and the problem's name in messages
    method, title = "svm-dual", "SVM"
    #: vectors of one entry per row the solvers hold at once, with numpy's temporaries, for
    #: the memory estimate (traced in tests/test_svm_fast.py)
    row_vectors = 48

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
        if np.ndim(C) == 0 and formulation is None:
            from sparsify.algorithms.svm.formulation import SVM  # svm imports this module

            formulation = SVM(float(C))
        if formulation is None:
            raise ValueError("Pass formulation= (the problem the per-point costs C come from); "
                             "the generic fallback needs it.")
        self.X, self.y, self.C = self._take_points(C, X, y, kernel, jitter, formulation)
        if not np.all(np.isin(self.y, (-1.0, 1.0))) or len(np.unique(self.y)) != 2:
            raise ValueError(f"The {self.formulation_name!r} formulation needs labels y in "
                             "{-1, +1} from both classes among the points with a positive "
                             "cost.")
        #: the rows' margin targets p (the dual's linear term); None: 1 for every row
        self.targets: Array | None = None
        self._prepare(kernel, n_expansion, tol, fallback)

    def _take_points(self, C: float | Array, X: Array, y: NDArray[Any], kernel: Kernel,
                     jitter: float, formulation: Formulation) -> tuple[Array, Array, Array]:
        """X, y and the costs of the points with C_i > 0, the costs checked.

        Also sets the formulation, the data of the generic fallback (every point)
        and the jitter, as the generic path computes it.
        """
        X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
        self.formulation = formulation
        self.formulation_name = formulation.name
        costs = np.asarray(C, dtype=float)
        if costs.ndim > 1 or (costs.ndim == 1 and costs.shape != y.shape):
            raise ValueError(f"C must be a number or an array of shape {y.shape}; "
                             f"got shape {costs.shape}.")
        if not np.all(np.isfinite(costs)) or np.any(costs < 0) or not np.any(costs > 0):
            raise ValueError("The costs C must be finite and >= 0, at least one of them "
                             "positive.")
        costs = np.broadcast_to(costs, y.shape)
        # the generic fallback solves the formulation on every point it was given
        self._X_all, self._y_all = X, y
        # the same jitter as the generic path, from every point, so both solve one problem
        self.jitter = jitter * max(diagonal_scale(kernel, X), 1e-300)
        # C_i = 0 pins α_i to the box [0, 0]: such a point changes neither W(Z) nor
        # ∇W(Z), and the solvers below divide by C_i, so it is left out of every solve
        keep = costs > 0
        return X[keep], y[keep], costs[keep]

    def _prepare(self, kernel: Kernel, n_expansion: int, tol: float,
                 fallback: Marginal | None) -> None:
        """The solver's state, once X (points) and y, C, targets (rows) are set."""
        self.kernel = kernel
        self.n_expansion = int(n_expansion)
        self.tol = float(tol)
        # an evaluation holds K_XZ (N × Nz) and B (rows × Nz) and one more rows × Nz array
        # (a product, or the interior point's working set of B's rows), the solvers' vectors
        # over the rows, and two row blocks' temporaries (kernel, gradient, Newton matrix)
        (N, d), rows = self.X.shape, len(self.y)
        check_memory(8 * (N * (self.n_expansion + d)
                          + rows * (2 * self.n_expansion + self.row_vectors)
                          + 2 * min(rows, BLOCK_ROWS) * self.n_expansion),
                     f"The {self.title} fast path with N={N}, Nz={self.n_expansion}",
                     "Use fewer XVs or a subsample of the training points.")
        # the previous solution's α and b: the warm start (α and b do not depend on
        # the whitened basis, which is K_ZZ's eigenvectors, new at each evaluation)
        self._last: tuple[Array, float] | None = None
        self._identity = np.eye(self.n_expansion)  # the metric in whitened coordinates
        # coordinate descent's tolerance and passes: it only names the partition, the
        # polish makes it exact. 1e-2 since the polish keeps its factor (20 L-BFGS iterations,
        # N = 10⁵, against 1e-3: ringnorm Nz = 500, C = 0.1 -11 %, Nz = 100, C = 1 -36 %; a9a
        # -6 %; a checkerboard at C = 1000 +1.9 s of 4.7 s, at C = 10⁴, N = 3·10⁵ equal)
        self.cd_eps, self.max_epochs = 1e-2, 1000
        # the first evaluation's passes, from α = 0: where they do not name the partition the
        # interior point answers and they only pick its working set, which 100 passes do as
        # well (checkerboard C = 1000, Nz = 100, N = 10⁶: first evaluation 15.5 s against 30.8 s
        # with 1000 passes, the same later path; a9a and ringnorm unchanged)
        self.first_epochs = 100
        self.polish_moves = 10  # the polish's budget: this many moves per XV, plus 100
        self.rho = 1.0  # coordinate descent's proximal weight on the bias
        self.last_epochs = 0  # passes of the last evaluation's coordinate descent
        self.n_active_set = 0
        self.n_interior_point = 0
        self.n_smoothed = 0
        self.n_generic = 0
        # evaluations left that go straight to the interior point, and the next such streak
        self._skip_polish, self._skip_next = 0, SKIP_POLISH
        self._fallback: Marginal | None = fallback
        self._work = WorkArrays()  # K_XZ and the whitened rows, written over at each evaluation

    @property
    def _p(self) -> Array | float:
        return 1.0 if self.targets is None else self.targets

    def _rows(self, K_xz: Array, T: Array) -> Array:
        """The dual's rows B = y∘(K_XZ T), in a work array."""
        return whitened_rows(K_xz, T, self._work.get("B", *K_xz.shape), scale=self.y)

    def _dual_f(self, alpha: Array) -> Array:
        """ν, the multipliers of f (one per point) from the dual's α (one per row): α∘y."""
        return alpha * self.y

    def _solve(self, B: Array) -> tuple[Array, Array, float]:
        """α, u, b of the dual on the signed whitened rows B = y∘Φ, warm-started.

        Coordinate descent from the last solution's α and b names the
        partition (at bound, free, zero) to `cd_eps` in the projected gradient.
        The active-set method then lands on the KKT point, moving only the
        points near the margin (a working set: the rest held at their bounds,
        so a move costs O(|set|·Nz), not O(N·Nz)); every held point is checked
        afterwards and any that violates its KKT condition joins the set. The
        interior point (`_interior`, on a working set too) takes over where the
        polish does not settle, and at the first evaluation where coordinate
        descent left a projected gradient above `WORKING_BAND`. In
        whitened coordinates the metric is the identity: K = K⁻¹ = L = I.
        """
        y, C, Nz, last = self.y, self.C, B.shape[1], self._last
        # what the interior point's working set comes from: the last solution's α and b,
        # or this evaluation's coordinate descent where it ran
        hint = last
        if self._skip_polish:
            self._skip_polish -= 1
        else:
            # (clipped: a polished α may stray past a bound by round-off, which the C code
            # refuses; a no-op otherwise)
            alpha, b = ((np.zeros(len(y)), 0.0) if last is None
                        else (np.clip(last[0], 0.0, C), last[1]))
            u = np.empty(Nz)
            # a retry after a failed polish gets the first evaluation's passes: where 1000
            # warm passes failed to name the partition they fail again (a checkerboard at
            # C = 10⁶, N = 10⁵, Nz = 16: 14 s each retry, against 1-2 s per interior point)
            retry = self._skip_next > SKIP_POLISH
            passes = self.first_epochs if last is None or retry else self.max_epochs
            named, b, self.last_epochs, _ = dual_cd(B, y, C, alpha, u, b, self.rho,
                                                    self.cd_eps, passes, 0, self.targets)
            upper, free = alpha >= C, (alpha > 0) & (alpha < C)
            gradient = B @ u + y * b - self._p  # the dual's gradient, y_i f_i − p_i
            work = free | (np.abs(gradient) <= WORKING_BAND)
            if not named and last is None:
                # the polish is also worth trying where every KKT violation lies in the
                # working set: ringnorm at N = 10⁶, Nz = 500, C = 0.1 after the 100 passes
                # (largest projected gradient 0.0117) settled in 1.8 s, where the interior
                # point took 15 s; a checkerboard at C = 10⁴ (1.9) goes on to the interior point
                pg = np.where(upper, np.maximum(gradient, 0.0),
                              np.where(free, gradient, np.minimum(gradient, 0.0)))
                named = bool(np.abs(pg).max() <= WORKING_BAND)
            if named or last is not None:
                solved = self._settle(B, alpha, upper, free, work)
                if solved is not None:
                    self.n_active_set += 1
                    self._last = (solved[0], solved[2])
                    self._skip_next = SKIP_POLISH
                    return solved[:3]
                # where it failed once it fails again (a large C: coordinate descent does not
                # name the partition): the next evaluations go to the interior point directly,
                # twice as many after each failed retry
                self._skip_polish = self._skip_next
                self._skip_next = min(2 * self._skip_next, 8 * SKIP_POLISH)
            # else the first evaluation, from α = 0, whose passes did not name the partition:
            # from there the polish can walk long (a checkerboard at C = 1000, N = 10⁵,
            # Nz = 100: 19 s, failing) where the interior point on the working set took
            # 0.06 s; warm-started from an exact solution, later ones settle
            hint = (alpha, b)
        solved = self._interior(B, hint)
        if solved is not None:
            self.n_interior_point += 1
        else:
            solved = self._smoothed(B)
            if solved is None:
                raise _Stalled
            self.n_smoothed += 1
        alpha, u, b = solved
        self._last = (alpha, b)
        return alpha, u, b

    def _interior(self, B: Array, hint: tuple[Array, float] | None
                  ) -> tuple[Array, Array, float] | None:
        """α, u, b by the interior point (its iterates polished) on a working set of rows.

        The rows with α > 0 in ``hint`` = (α, b), or whose margin slack at the
        hint (u = Bᵀα) lies within `IP_BAND`, make the working set; the others
        are held at α = 0 and checked at its solution: any whose slack is below
        −tol joins the set, which the active-set method polishes from that
        solution's partition or, where it does not settle, the interior point
        solves again. The set only grows, so this ends, at worst with every row.
        An iteration costs O(|set|·Nz²): on a 4 × 4 checkerboard at C = 1000
        (N = 30 000, Nz = 100), 0.03 s on the 1715 rows of the set against 5.2 s
        on every row, to the same KKT point.
        None where the method stalls.
        """
        y, C, p, tol = self.y, self.C, self._p, self.tol
        eye, moves = self._identity, self.polish_moves * B.shape[1] + 100
        if hint is None:
            work = np.ones(len(y), dtype=bool)
        else:
            alpha, b = hint
            slack = B @ (B.T @ alpha) + y * b - p
            work = (alpha > 0) | (np.abs(slack) <= IP_BAND)
        while True:
            if not (np.any(y[work] > 0) and np.any(y[work] < 0)):
                work[:] = True  # the bias needs rows of both signs
            B_w, y_w, C_w = B[work], y[work], C[work]
            p_w = None if self.targets is None else self.targets[work]
            polish = partial(_warm_active_set, B_w, y_w, eye, eye, eye, C_w, tol=tol,
                             max_iter=moves, targets=p_w)
            solved = _interior_point(B_w, y_w, eye, eye, C_w, 1e-2 * tol, polish, targets=p_w)
            if solved is None:
                return None
            alpha = np.zeros(len(y))
            alpha[work] = solved[0]
            u, b = solved[1], float(solved[2])
            missed = ~work & (B @ u + y * b - p < -tol)
            if not missed.any():
                return alpha, u, b
            if len(solved) == 5:  # polished: its partition is the polish's warm start
                upper, free = np.zeros(len(y), dtype=bool), np.zeros(len(y), dtype=bool)
                upper[work], free[work] = solved[3], solved[4]
                # (ringnorm, N = 10⁶, Nz = 500, C = 0.1: a second and third interior
                # point on 37 000 rows took 40 s of the first evaluation's 59 s)
                settled = self._settle(B, alpha, upper, free, work | missed)
                if settled is not None:
                    return settled[:3]
            work |= missed

    def _smoothed(self, B: Array) -> tuple[Array, Array, float] | None:
        """α, u, b by the smoothed hinge's Newton path, a width's partition polished.

        After each width of `smoothed_hinge_path` whose quadratic rows are few enough for
        the polish (`_polish_affordable`), the rows in the linear piece go to C, the
        quadratic ones are free, and the active-set method settles from there, the rows
        near the margin its working set. None where no width's partition settles.
        """
        y, C = self.y, self.C
        for delta, _, _, r in smoothed_hinge_path(B, y, C, self.targets):
            alpha, upper, free = hinge_partition(r, C, delta)
            if not _polish_affordable(int(free.sum()), B.shape[1], len(y)):
                continue
            solved = self._settle(B, alpha, upper, free, free | (np.abs(r) <= WORKING_BAND))
            if solved is not None:
                return solved[:3]
        return None

    def _settle(self, B: Array, alpha: Array, upper: NDArray[np.bool_],
                free: NDArray[np.bool_], work: NDArray[np.bool_]) -> Solution | None:
        """(α, u, b, bound mask, free mask) at the KKT point, polishing the rows in ``work``.

        After each polish every held point is checked; those that violate their
        KKT condition join ``work`` and the polish runs again from its partition.
        None where a polish does not settle within its budget.
        """
        y, tol = self.y, self.tol
        while True:
            solved = self._polish(B, alpha, upper, free, work)
            if solved is None:
                return None
            alpha, u, b, upper, free = solved
            slack = B @ u + y * b - self._p  # y_i f_i − p_i at the polished solution
            missed = ~work & np.where(upper, slack > tol, slack < -tol)
            if not missed.any():
                return solved
            work = work | missed

    def _polish(self, B: Array, alpha: Array, upper: NDArray[np.bool_], free: NDArray[np.bool_],
                work: NDArray[np.bool_]) -> Solution | None:
        """The active-set method on the rows in ``work``, the others held at their bounds."""
        held = upper & ~work
        C_held, eye, Nz = self.C[held], self._identity, B.shape[1]
        # a move costs O(|work|·Nz); the interior point some twenty O(N·Nz²) iterations.
        # Each free row beyond the Nz + 1 the margin holds needs a move to leave (a smoothed
        # hinge's partition: at N = 10⁶, Nz = 16, 410 free rows), granted where those moves
        # are affordable: coordinate descent at a large C can leave half the rows free
        # (a checkerboard at C = 10⁶, N = 10⁵, Nz = 16: minutes of moves, then failing)
        n_free, moves = int(free.sum()), self.polish_moves * Nz + 100
        if n_free > Nz + 1 and _polish_affordable(n_free, Nz, len(self.y)):
            moves += n_free - Nz - 1
        result = _warm_active_set(B[work], self.y[work], eye, eye, eye, self.C[work],
                                  alpha[work], upper[work], free[work], self.tol, moves,
                                  (C_held @ B[held], float(C_held @ self.y[held])),
                                  None if self.targets is None else self.targets[work])
        if result is None:
            return None
        alpha_w, u, b, upper_w, free_w = result
        alpha, upper, free = alpha.copy(), upper.copy(), free.copy()
        alpha[work], upper[work], free[work] = alpha_w, upper_w, free_w
        return alpha, u, b, upper, free

    def _generic(self, Z: Array, grad: bool) -> Evaluation:
        """This evaluation by the generic path, the fast path's reference, after a breakdown;
        the next one starts cold."""
        self._last = None
        self.n_generic += 1
        if self._fallback is None:
            self._fallback = ConicMarginal(self.formulation, self._X_all, self._y_all,
                                           self.kernel, self.n_expansion, tol=self.tol)
        return self._fallback.evaluate(Z, grad)

    def _blocks(self, Z: Array) -> tuple[Array, Array, Array]:
        """K_XZ (in a work array), K_ZZ and T, Tᵀ(K_ZZ + jitter·I)T = I, at checked XVs Z."""
        N, Nz = len(self.X), len(Z)
        K_xz, K_zz = kernel_blocks(self.kernel, self.X, Z, out=self._work.get("K_xz", N, Nz))
        return K_xz, K_zz, triangular_whitening(K_zz + self.jitter * np.eye(Nz))

    def evaluate(self, Z: Array, grad: bool = True) -> Evaluation:
        Z = check_expansion_vectors(Z, self.n_expansion, self.X.shape[1], self.formulation_name)
        K_xz, K_zz, T = self._blocks(Z)
        B = self._rows(K_xz, T)
        try:
            # a division by zero or a NaN is a breakdown too, not a warning to go on from
            with np.errstate(divide="raise", invalid="raise"):
                alpha, u, b = self._solve(B)
        except (_Stalled, np.linalg.LinAlgError, ZeroDivisionError, FloatingPointError):
            # rare numerical breakdown (extreme C, degenerate data)
            return self._generic(Z, grad)
        beta = T @ u
        slack = np.maximum(0.0, self._p - B @ u - self.y * b)
        value = float(0.5 * u @ u + self.C @ slack)
        if not grad:
            return Evaluation(value, None, beta, b, self.method)
        gradient = link_gradient(self.kernel, self.X, Z, K_xz, K_zz, self._dual_f(alpha), beta,
                                 0.5)
        return Evaluation(value, gradient, beta, b, self.method)
