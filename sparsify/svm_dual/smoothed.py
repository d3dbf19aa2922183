"""The hinge SVM's primal by Newton steps on a smoothed hinge, the smoothing narrowed in stages.

The engine's dual solvers (`sparsify.svm_dual.marginal`) need a partition to start
from: coordinate descent names it at moderate C, and the interior point finds it where
that fails. At a very large C and N both can fail at the first evaluation (coordinate
descent does not converge, and the interior point's Newton directions lose their
accuracy; docs/theory.md has a case). The primal has only Nz + 1 unknowns, and this module solves
it from the other side. With the hinge replaced by its smoothing of width δ (Huber's)::

    ℓ_δ(r) = 0 (r ≤ 0),   r² / (2δ) (0 < r < δ),   r − δ/2 (r ≥ δ)

the problem min_{u,b} F_δ(u, b) = ½‖u‖² + Σ_i C_i ℓ_δ(r_i), r_i = p_i − B_i u − y_i b, is
continuously differentiable and piecewise quadratic: on each partition of the rows into
the zero, quadratic and linear pieces, F_δ is a quadratic whose minimiser is one
(Nz + 1)-sized solve over the quadratic rows. As in Keerthi and DeCoste's finite Newton
method for the squared hinge (`sparsify.algorithms.svm.squared_hinge`), each step goes
towards that minimiser with an exact line search, and a width ends, exactly, when the
minimiser's partition is the one it came from (or where the line search resolves no more
decrease in floating point, or after `MAX_NEWTON` steps: the polish makes the end exact). Its
minimiser has a dual that is feasible
for the hinge's dual: α_i = C_i ℓ′_δ(r_i) ∈ [0, C_i], u = Bᵀα, yᵀα = 0. As δ → 0 the
quadratic rows become the hinge's free rows and the linear ones its rows at C.

So the widths shrink from 10 by √10 per stage down to 10⁻⁶, each stage warm-started from the
last. After each stage the caller polishes the stage's partition with the exact active-set method
(rows with r_i ≥ δ at C, those with 0 < r_i < δ free), which usually settles as soon as
δ is about 0.1-0.3. The cost of an iteration is two products with B (O(N·Nz)) and the
Newton matrix over the quadratic rows (O(|Q|·Nz²)); the stages take some 40-70 iterations
in all, most of them in the first, where every row starts in the quadratic piece.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import scipy.linalg
from numpy.typing import NDArray

from sparsify.core.kernel_blocks import BLOCK_ROWS

__all__ = ["MAX_NEWTON", "WIDTHS", "hinge_partition", "hinge_pieces", "smoothed_hinge_path",
           "smoothed_line_search"]

Array = NDArray[np.float64]

#: The smoothing widths δ, relative to the largest margin target: from 10 (at u = 0, b = 0
#: every row is in the quadratic piece: a ridge regression) down by √10 to 10⁻⁶. The
#: quadratic piece holds the rows within δ of the margin, about N·δ times their density
#: there, so the small widths matter at large N and small Nz.
WIDTHS = tuple(10.0 ** (1 - k / 2) for k in range(15))
#: Newton iterations per width before going on to the next (a width ends in a finite number of
#: steps, a few dozen at most where the widths are warm-started).
MAX_NEWTON = 50


def hinge_pieces(r: Array, delta: float) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """The rows in the linear piece (r ≥ δ: α at C) and in the quadratic one (0 < r < δ).

    ``r`` are the rows' margin slacks p − B u − y b, ``delta`` the smoothing width.

    Examples
    --------
    >>> import numpy as np
    >>> linear, quadratic = hinge_pieces(np.array([-1.0, 0.05, 0.5]), 0.1)
    >>> linear.tolist(), quadratic.tolist()
    ([False, False, True], [False, True, False])
    """
    return r >= delta, (r > 0) & (r < delta)


def hinge_partition(r: Array, C: Array, delta: float
                    ) -> tuple[Array, NDArray[np.bool_], NDArray[np.bool_]]:
    """The hinge dual's guess from F_δ's residuals: α = C ℓ′_δ(r), rows at C, free rows.

    Examples
    --------
    >>> import numpy as np
    >>> alpha, upper, free = hinge_partition(np.array([-1.0, 0.05, 2.0]), np.ones(3), 0.1)
    >>> alpha.tolist(), upper.tolist(), free.tolist()
    ([0.0, 0.5, 1.0], [False, False, True], [False, True, False])
    """
    upper, free = hinge_pieces(r, delta)
    return C * np.clip(r / delta, 0.0, 1.0), upper, free


def smoothed_line_search(a: float, c: float, r: Array, delta_r: Array, C: Array,
                         delta: float) -> float:
    """The exact minimiser t ≥ 0 of F_δ along a direction, F_δ piecewise quadratic in t.

    Along (u, b) + t·(d_u, d_b), with ``a`` = u·d_u, ``c`` = ‖d_u‖², ``r`` the rows'
    residuals p_i − B_i u − y_i b and ``delta_r`` = B_i d_u + y_i d_b (so r_i(t) =
    r_i − t·delta_r_i), the derivative a + c t − Σ_i C_i delta_r_i ℓ′_δ(r_i(t)) is
    continuous, nondecreasing and linear between the times a row crosses 0 or δ; its
    root is found from running sums over those crossings, sorted.

    Examples
    --------
    One row with r = 1, moved by 1 per unit t, C = 1 and no ‖u‖² term: F_δ(t) = ℓ_δ(1 − t)
    is smallest from t = 1 on, where the row's residual reaches 0.

    >>> import numpy as np
    >>> smoothed_line_search(0.0, 0.0, np.array([1.0]), np.array([1.0]), np.array([1.0]), 0.5)
    1.0
    """
    linear, quadratic = hinge_pieces(r, delta)
    # the derivative is G + H t on each segment; on the first one:
    g0 = a - float(C[linear] @ delta_r[linear]) - float(
        C[quadratic] @ (delta_r[quadratic] * r[quadratic])) / delta
    h0 = c + float(C[quadratic] @ delta_r[quadratic] ** 2) / delta
    with np.errstate(divide="ignore", invalid="ignore"):
        t_delta, t_zero = (r - delta) / delta_r, r / delta_r
    # the crossings (time, row, piece before, piece after), pieces 0 zero, 1 quadratic, 2 linear:
    # a row moved down (delta_r > 0) goes linear → quadratic → zero, one moved up the other way
    down, up, zero = delta_r > 0, delta_r < 0, ~linear & ~quadratic
    crossings = [(down & linear & (t_delta > 0), t_delta, 2, 1),
                 (down & ~zero & (t_zero > 0), t_zero, 1, 0),
                 (up & zero & (t_zero > 0), t_zero, 0, 1),
                 (up & ~linear & (t_delta > 0), t_delta, 1, 2)]
    times = np.concatenate([t[mask] for mask, t, _, _ in crossings])
    rows = np.concatenate([np.flatnonzero(mask) for mask, _, _, _ in crossings])
    before = np.concatenate([np.full(int(mask.sum()), p) for mask, _, p, _ in crossings])
    after = np.concatenate([np.full(int(mask.sum()), q) for mask, _, _, q in crossings])
    order = np.argsort(times, kind="stable")
    times, rows, before, after = times[order], rows[order], before[order], after[order]
    Cd, d, rr = C[rows] * delta_r[rows], delta_r[rows], r[rows]

    def piece(code: NDArray[np.int_]) -> tuple[Array, Array]:
        """A row's term in G and H in each piece."""
        g = np.where(code == 2, -Cd, np.where(code == 1, -Cd * rr / delta, 0.0))
        return g, np.where(code == 1, Cd * d / delta, 0.0)

    (g_after, h_after), (g_before, h_before) = piece(after), piece(before)
    G = g0 + np.cumsum(np.append(0.0, g_after - g_before))
    H = h0 + np.cumsum(np.append(0.0, h_after - h_before))
    starts, ends = np.append(0.0, times), np.append(times, np.inf)
    # the first segment at whose end the derivative is ≥ 0 holds its root
    with np.errstate(invalid="ignore"):
        reaches = np.where(np.isinf(ends), (H > 0) | (G >= 0), G + H * ends >= 0)
    k = int(np.argmax(reaches))
    if not reaches[k]:
        return float("inf")  # F_δ decreases without end along the direction
    if H[k] <= 0:
        return float(starts[k])
    return float(min(max(starts[k], -G[k] / H[k]), ends[k]))


def _newton_point(B: Array, y: Array, C: Array, p: Array, linear: NDArray[np.bool_],
                  quadratic: NDArray[np.bool_], delta: float) -> tuple[Array, float]:
    """The minimiser (u, b) of F_δ's quadratic on one partition: one (Nz + 1)-sized solve.

    Its stationarity conditions are E x + Σ_Q (C_i/δ) P_iᵀ (P_i x − p_i) − Σ_L C_i P_iᵀ = 0
    with P_i = [B_i, y_i], x = (u, b) and E = diag(1, …, 1, 0).
    """
    Nz = B.shape[1]
    H, rhs = np.zeros((Nz + 1, Nz + 1)), np.zeros(Nz + 1)
    rows = np.flatnonzero(quadratic)
    for start in range(0, len(rows), BLOCK_ROWS):  # in row blocks: no copy of B's rows
        block = rows[start:start + BLOCK_ROWS]
        P = np.hstack([B[block], y[block, None]])
        weights = C[block] / delta
        H += P.T @ (P * weights[:, None])
        rhs += P.T @ (weights * p[block])
    at_c = np.where(linear, C, 0.0)
    rhs[:Nz] += B.T @ at_c
    rhs[Nz] += float(at_c @ y)
    H[np.arange(Nz), np.arange(Nz)] += 1.0
    if H[Nz, Nz] <= 0.0:
        # no quadratic row: F_δ is linear in b, so b takes a gradient step whose length the
        # line search finds
        H[Nz, Nz] = 1.0
    x = scipy.linalg.cho_solve(scipy.linalg.cho_factor(H), rhs)
    return x[:Nz], float(x[Nz])


def smoothed_hinge_path(B: Array, y: Array, C: Array, targets: Array | None = None,
                        widths: tuple[float, ...] = WIDTHS
                        ) -> Iterator[tuple[float, Array, float, Array]]:
    """(δ, u, b, r) at the minimiser of F_δ for each width δ in turn, from u = 0, b = 0.

    Parameters
    ----------
    B : ndarray of shape (rows, Nz)
        The signed whitened rows y∘Φ.
    y : ndarray of shape (rows,)
        Labels in {-1, +1}.
    C : ndarray of shape (rows,)
        Positive costs.
    targets : ndarray of shape (rows,), optional
        The margin targets p; 1 for every row where None.
    widths : tuple of float
        The smoothing widths, relative to the largest target, largest first.

    Yields
    ------
    delta : float
        The width.
    u : ndarray of shape (Nz,)
        Weights in whitened coordinates.
    b : float
        Bias.
    r : ndarray of shape (rows,)
        Residuals p − B u − y b, from which `hinge_partition` makes the hinge dual's guess.

    Examples
    --------
    Two rows, one per class, on one feature: the hinge's solution is u = 1, b = 0 (both rows
    on their margins), which the small widths approach.

    >>> import numpy as np
    >>> B, y, C = np.array([[1.0], [1.0]]), np.array([1.0, -1.0]), np.array([10.0, 10.0])
    >>> delta, u, b, r = list(smoothed_hinge_path(B, y, C))[-1]
    >>> round(float(u[0]), 2), round(b, 2)
    (1.0, 0.0)
    """
    N, Nz = B.shape
    p = np.ones(N) if targets is None else targets
    scale = float(np.abs(p).max()) or 1.0  # (targets all 0: widths in absolute units)
    u, b = np.zeros(Nz), 0.0
    for width in widths:
        delta = width * scale
        # recomputed at each width: the steps' updates of the margins accumulate round-off
        margin = B @ u + y * b
        r = p - margin
        linear, quadratic = hinge_pieces(r, delta)
        for _ in range(MAX_NEWTON):
            u_new, b_new = _newton_point(B, y, C, p, linear, quadratic, delta)
            d_u, d_b = u_new - u, b_new - b
            delta_r = B @ d_u + y * d_b
            t = min(1.0, smoothed_line_search(float(u @ d_u), float(d_u @ d_u), r, delta_r,
                                              C, delta))
            if t <= 0.0:
                break  # no decrease left that the sums over the crossings resolve
            margin = margin + t * delta_r
            # a full step lands on the Newton point itself, without round-off
            u, b = (u_new, b_new) if t == 1.0 else (u + t * d_u, b + t * d_b)
            r = p - margin
            now_linear, now_quadratic = hinge_pieces(r, delta)
            if (t == 1.0 and np.array_equal(now_linear, linear)
                    and np.array_equal(now_quadratic, quadratic)):
                break  # the minimiser of its own partition's quadratic: F_δ's minimiser
            linear, quadratic = now_linear, now_quadratic
        yield delta, u, b, r
