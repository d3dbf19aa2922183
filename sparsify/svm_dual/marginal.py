"""`SVMDualMarginal`: W(Z) of the SVM's inner problem by the engine's solvers, warm-started.

For fixed XVs Z, SLMC's inner problem (paper §3.4, eq. 41-43) is a linear SVM
with a free bias on Nz features. In whitened coordinates, Φ = K_XZ T with
Tᵀ (K_ZZ + jitter·I) T = I (T = L⁻ᵀ from its Cholesky factor L, a triangular
product; `sparsify.core.kernel_blocks.triangular_whitening`) and β = T u, it reads::

    min_{u,b} ½ ‖u‖² + Σ_i C_i max(0, 1 − y_i (Φ_i u + b))

whose rows are bounded (‖Φ_i‖² ≤ k(x_i, x_i)) however ill-conditioned K_ZZ is.
Its dual is a box-constrained QP over α ∈ [0, C]ᴺ with yᵀα = 0 whose Hessian
has rank Nz. Each evaluation, on the signed rows B = y∘Φ (one N × Nz array):

* dual coordinate descent (`sparsify.svm_dual.compiled.dual_cd`: the LIBLINEAR
  method, with the free bias by proximal steps on b and shrinking),
  warm-started from the previous evaluation's α and b, names the partition
  (at C, free, at 0) to 1e-2 in the projected gradient, at O(N·Nz) per pass;
  it settles in bulk the many points that change side after an L-BFGS step;
* the primal active-set method (`sparsify.svm_dual.solvers.warm_active_set`)
  lands on the exact KKT point from that partition, moving only the points
  near the margin (a working set; the others held at their bounds and checked
  afterwards), each move one (|free| + 1)-sized solve by a Cholesky factor of
  the free rows' Gram matrix kept across moves;
* a primal-dual interior-point method (`sparsify.svm_dual.solvers.interior_point`)
  takes over where the polish does not settle (or, at the first evaluation,
  where coordinate descent left a KKT violation outside the polish's working
  set), on a working set of rows (the last solution's support and the rows
  near its margin, joined by any held row that violates its KKT condition);
  its rounded iterates seed the active-set method;
* the smoothed hinge's Newton path (`sparsify.svm_dual.smoothed`), polished
  likewise, where the interior point stalls, and the generic path
  (`sparsify.core.conic`), the reference in the tests, where that does not
  settle either.

An evaluation costs O(N·Nz·(d + Nz)): the kernel block, the whitening and a
few passes of coordinate descent; the kernel block and the gradient are
computed in row blocks, so memory is K_XZ and B, two N × Nz arrays.

A solution is accepted only when its KKT conditions hold to ``tol`` (active
set) or its duality gap is below ``tol`` (interior point), so W(Z) agrees with
the generic path. The gradient is Lemma 1 with ν = α∘y and c = ½:
∂W/∂K_XZ = −(α∘y)βᵀ, ∂W/∂K_ZZ = ½ββᵀ. The constraint yᵀα = 0 puts support
vectors in both classes, so W is differentiable (paper, Corollary 2) and no
warning is needed here.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
from numpy.typing import NDArray

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
from sparsify.svm_dual.compiled import dual_cd
from sparsify.svm_dual.smoothed import hinge_partition, smoothed_hinge_path
from sparsify.svm_dual.solvers import (
    Solution,
    Stalled,
    interior_point,
    polish_affordable,
    warm_active_set,
)

__all__ = ["IP_BAND", "SKIP_POLISH", "WORKING_BAND", "SVMDualMarginal"]

Array = NDArray[np.float64]

#: Points whose margin slack after coordinate descent lies within this of 0 make the
#: polish's working set (with the free ones); coordinate descent stops at a projected
#: gradient of 1e-2, so a point farther out is almost surely on the right side.
WORKING_BAND = 0.1
#: The interior point's working set: rows within this margin slack of the last solution
#: (wider than WORKING_BAND: that solution was for other XVs, or is coordinate descent's).
IP_BAND = 0.5
#: After the polish fails, this many evaluations go straight to the interior point (one
#: interior point costs less than a failed coordinate descent and polish) before it is
#: tried again.
SKIP_POLISH = 10


class SVMDualMarginal(Marginal):
    """W(Z) and ∇W(Z) of the SVM's inner problem by the engine's exact solvers, warm-started.

    The default path of `SparseSVC` and of the semi-supervised SVM's convex
    stages (``solver="auto"``); a named cvxpy backend selects the generic path
    instead, which is the reference this one is tested against.

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
    formulation : Formulation
        The formulation this solves (``SVM(C)`` for the SVM), for the generic
        path that answers an evaluation where this one stalls, and for messages.
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
    last : tuple (α, b) or None
        The last solution's dual α (one per row) and bias: the next solve's
        warm start (α and b do not depend on the whitened basis, new at each
        evaluation).

    Notes
    -----
    A problem with the same dual and other rows subclasses it (the squared
    hinge's `sparsify.algorithms.svm.squared_hinge.SquaredHingeMarginal`, the
    ε-SVR's `sparsify.algorithms.svr.fast.SVRDualMarginal`) through these
    methods: `take_points` and `prepare` build the state (a subclass that
    lays out its own rows calls them in place of ``__init__``); `blocks`,
    `signed_rows`, `solve` and `link_multipliers` make one evaluation, which
    `settle` (the polish from a partition) and `fall_back` (after a
    `Stalled`) serve; `row_targets`, ``targets``, ``C``, ``y`` and `work`
    (arrays kept across evaluations) are the rows' data.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import RBF
    >>> X = np.array([[0.0, 0.0], [0.2, 0.1], [1.0, 1.0], [0.9, 1.2]])
    >>> y = np.array([-1, -1, 1, 1])
    >>> from sparsify.algorithms.svm.formulation import SVM
    >>> fast = SVMDualMarginal(10.0, X, y, RBF(1.0), n_expansion=2, formulation=SVM(10.0))
    >>> ev = fast.evaluate(X[[0, 2]])
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
        if formulation is None:
            raise ValueError("Pass formulation= (the problem the costs C come from, SVM(C) for "
                             "the SVM); the generic fallback needs it.")
        self.X, self.y, self.C = self.take_points(C, X, y, kernel, jitter, formulation)
        if not np.all(np.isin(self.y, (-1.0, 1.0))) or len(np.unique(self.y)) != 2:
            raise ValueError(f"The {self.formulation_name!r} formulation needs labels y in "
                             "{-1, +1} from both classes among the points with a positive "
                             "cost.")
        #: the rows' margin targets p (the dual's linear term); None: 1 for every row
        self.targets: Array | None = None
        self.prepare(kernel, n_expansion, tol, fallback)

    def take_points(self, C: float | Array, X: Array, y: NDArray[Any], kernel: Kernel,
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

    def prepare(self, kernel: Kernel, n_expansion: int, tol: float,
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
        self.last: tuple[Array, float] | None = None
        self._identity = np.eye(self.n_expansion)  # the metric in whitened coordinates
        # coordinate descent's tolerance and passes: it only names the partition, the
        # polish (which keeps its factor across moves) makes it exact
        self.cd_eps, self.max_epochs = 1e-2, 1000
        # the first evaluation's passes, from α = 0: where they do not name the partition the
        # interior point answers and they only pick its working set, which 100 passes do as
        # well as 1000
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
        self.work = WorkArrays()  # K_XZ and the whitened rows, written over at each evaluation

    @property
    def row_targets(self) -> Array | float:
        """The rows' margin targets p (the dual's linear term): ``targets``, or 1.0 for all."""
        return 1.0 if self.targets is None else self.targets

    def signed_rows(self, K_xz: Array, T: Array) -> Array:
        """The dual's rows B = y∘(K_XZ T), in a work array."""
        return whitened_rows(K_xz, T, self.work.get("B", *K_xz.shape), scale=self.y)

    def link_multipliers(self, alpha: Array) -> Array:
        """ν, the multipliers of f (one per point) from the dual's α (one per row): α∘y."""
        return alpha * self.y

    def solve(self, B: Array) -> tuple[Array, Array, float]:
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
        y, C, Nz, last = self.y, self.C, B.shape[1], self.last
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
            # warm passes failed to name the partition they fail again, at the cost of many
            # interior points
            retry = self._skip_next > SKIP_POLISH
            passes = self.first_epochs if last is None or retry else self.max_epochs
            named, b, self.last_epochs, _ = dual_cd(B, y, C, alpha, u, b, self.rho,
                                                    self.cd_eps, passes, 0, self.targets)
            upper, free = alpha >= C, (alpha > 0) & (alpha < C)
            gradient = B @ u + y * b - self.row_targets  # the dual's gradient, y_i f_i − p_i
            work = free | (np.abs(gradient) <= WORKING_BAND)
            if not named and last is None:
                # the polish is also worth trying where every KKT violation lies in the
                # working set, which it sees
                pg = np.where(upper, np.maximum(gradient, 0.0),
                              np.where(free, gradient, np.minimum(gradient, 0.0)))
                named = bool(np.abs(pg).max() <= WORKING_BAND)
            if named or last is not None:
                solved = self.settle(B, alpha, upper, free, work)
                if solved is not None:
                    self.n_active_set += 1
                    self.last = (solved[0], solved[2])
                    self._skip_next = SKIP_POLISH
                    return solved[:3]
                # where it failed once it fails again (a large C: coordinate descent does not
                # name the partition): the next evaluations go to the interior point directly,
                # twice as many after each failed retry
                self._skip_polish = self._skip_next
                self._skip_next = min(2 * self._skip_next, 8 * SKIP_POLISH)
            # else the first evaluation, from α = 0, whose passes did not name the partition:
            # from there the polish can walk long, where the interior point on the working
            # set is quick; warm-started from an exact solution, later ones settle
            hint = (alpha, b)
        solved = self._interior(B, hint)
        if solved is not None:
            self.n_interior_point += 1
        else:
            solved = self._smoothed(B)
            if solved is None:
                raise Stalled
            self.n_smoothed += 1
        alpha, u, b = solved
        self.last = (alpha, b)
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
        An iteration costs O(|set|·Nz²) instead of O(N·Nz²). None where the
        method stalls.
        """
        y, C, p, tol = self.y, self.C, self.row_targets, self.tol
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
            polish = partial(self._polish_rows, B_w, y_w, C_w, p_w)
            eye = self._identity
            solved = interior_point(B_w, y_w, eye, eye, C_w, 1e-2 * tol, polish, targets=p_w,
                                    accept=tol)
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
                # (the polish from here costs less than another interior point)
                settled = self.settle(B, alpha, upper, free, work | missed)
                if settled is not None:
                    return settled[:3]
            work |= missed

    def _smoothed(self, B: Array) -> tuple[Array, Array, float] | None:
        """α, u, b by the smoothed hinge's Newton path, a width's partition polished.

        After each width of `smoothed_hinge_path` whose quadratic rows are few enough for
        the polish (`polish_affordable`), the rows in the linear piece go to C, the
        quadratic ones are free, and the active-set method settles from there, the rows
        near the margin its working set. None where no width's partition settles.
        """
        y, C = self.y, self.C
        for delta, _, _, r in smoothed_hinge_path(B, y, C, self.targets):
            alpha, upper, free = hinge_partition(r, C, delta)
            if not polish_affordable(int(free.sum()), B.shape[1], len(y)):
                continue
            solved = self.settle(B, alpha, upper, free, free | (np.abs(r) <= WORKING_BAND))
            if solved is not None:
                return solved[:3]
        return None

    def settle(self, B: Array, alpha: Array, upper: NDArray[np.bool_],
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
            slack = B @ u + y * b - self.row_targets  # y_i f_i − p_i at the polished solution
            missed = ~work & np.where(upper, slack > tol, slack < -tol)
            if not missed.any():
                return solved
            work = work | missed

    def _polish(self, B: Array, alpha: Array, upper: NDArray[np.bool_], free: NDArray[np.bool_],
                work: NDArray[np.bool_]) -> Solution | None:
        """The active-set method on the rows in ``work``, the others held at their bounds."""
        held = upper & ~work
        C_held, eye = self.C[held], self._identity
        result = warm_active_set(B[work], self.y[work], eye, eye, eye, self.C[work],
                                 alpha[work], upper[work], free[work], self.tol,
                                 self.move_budget(int(free.sum()), B.shape[1]),
                                 (C_held @ B[held], float(C_held @ self.y[held])),
                                 None if self.targets is None else self.targets[work])
        if result is None:
            return None
        alpha_w, u, b, upper_w, free_w = result
        alpha, upper, free = alpha.copy(), upper.copy(), free.copy()
        alpha[work], upper[work], free[work] = alpha_w, upper_w, free_w
        return alpha, u, b, upper, free

    def _polish_rows(self, B: Array, y: Array, C: Array, targets: Array | None, alpha: Array,
                     upper: NDArray[np.bool_], free: NDArray[np.bool_]) -> Solution | None:
        """The active-set method on these rows alone (the interior point's working set)."""
        eye = self._identity
        return warm_active_set(B, y, eye, eye, eye, C, alpha, upper, free, self.tol,
                               self.move_budget(int(free.sum()), B.shape[1]), targets=targets)

    def move_budget(self, n_free: int, Nz: int) -> int:
        """The polish's moves from a partition with ``n_free`` free rows.

        A move costs O(|work|·Nz); the interior point some twenty O(N·Nz²) iterations.
        `polish_moves` per XV and 100 more, and each free row beyond the Nz + 1 the margin
        holds needs a move to leave (coordinate descent's partition has hundreds, a
        smoothed hinge's too), granted where those moves are affordable: coordinate
        descent at a large C can leave half the rows free, too many to move.
        """
        moves = self.polish_moves * Nz + 100
        if n_free > Nz + 1 and polish_affordable(n_free, Nz, len(self.y)):
            moves += n_free - Nz - 1
        return moves

    def warm_start(self, Z: Array, solution: Evaluation) -> None:
        """The next solve starts from the partition that ``solution``'s β and b give these rows.

        A row whose margin slack y_i f_i − p_i is negative starts at its bound
        C_i, the others at 0 (the hinge's partition at that β, b); coordinate
        descent and the polish go on from there as from the last evaluation's α.
        """
        Z = check_expansion_vectors(Z, self.n_expansion, self.X.shape[1], self.formulation_name)
        K_xz, _, T = self.blocks(Z)
        B = self.signed_rows(K_xz, T)
        b = float(np.asarray(solution.intercept).ravel()[0])
        u = np.linalg.solve(T, np.asarray(solution.coef, dtype=float).ravel())
        slack = B @ u + self.y * b - self.row_targets
        self.last = (np.where(slack < 0, self.C, 0.0), b)

    def fall_back(self, Z: Array, grad: bool) -> Evaluation:
        """This evaluation by the generic path, the fast path's reference, after a breakdown;
        the next one starts cold."""
        self.last = None
        self.n_generic += 1
        if self._fallback is None:
            self._fallback = ConicMarginal(self.formulation, self._X_all, self._y_all,
                                           self.kernel, self.n_expansion, tol=self.tol)
        return self._fallback.evaluate(Z, grad)

    def blocks(self, Z: Array) -> tuple[Array, Array, Array]:
        """K_XZ (in a work array), K_ZZ and T, Tᵀ(K_ZZ + jitter·I)T = I, at checked XVs Z."""
        N, Nz = len(self.X), len(Z)
        K_xz, K_zz = kernel_blocks(self.kernel, self.X, Z, out=self.work.get("K_xz", N, Nz))
        return K_xz, K_zz, triangular_whitening(K_zz + self.jitter * np.eye(Nz))

    def evaluate(self, Z: Array, grad: bool = True) -> Evaluation:
        Z = check_expansion_vectors(Z, self.n_expansion, self.X.shape[1], self.formulation_name)
        K_xz, K_zz, T = self.blocks(Z)
        B = self.signed_rows(K_xz, T)
        try:
            # a division by zero or a NaN is a breakdown too, not a warning to go on from
            with np.errstate(divide="raise", invalid="raise"):
                alpha, u, b = self.solve(B)
        except (Stalled, np.linalg.LinAlgError, ZeroDivisionError, FloatingPointError):
            # rare numerical breakdown (extreme C, degenerate data)
            return self.fall_back(Z, grad)
        beta = T @ u
        slack = np.maximum(0.0, self.row_targets - B @ u - self.y * b)
        value = float(0.5 * u @ u + self.C @ slack)
        if not grad:
            return Evaluation(value, None, beta, b, self.method)
        gradient = link_gradient(self.kernel, self.X, Z, K_xz, K_zz,
                                 self.link_multipliers(alpha), beta, 0.5)
        return Evaluation(value, gradient, beta, b, self.method)
