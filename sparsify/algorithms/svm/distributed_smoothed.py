"""The smoothed hinge's Newton path (`sparsify.svm_dual.smoothed`) over Dask row blocks.

Where coordinate descent's rounds leave the distributed SVM's polish too many free rows (a
large C can leave most of them free, and the driver's polish then takes far longer than the
evaluation's maps), the primal on the smoothed hinge names the partition instead. As on one
machine, with r_i = 1 − P_i x, P_i = [B_i, y_i], x = (u, b) and width δ,
F_δ(x) = ½‖u‖² + Σ C_i ℓ_δ(r_i) is piecewise quadratic; each Newton iteration is:

1. one map for the (Nz + 1)-sized system over the quadratic rows (0 < r_i < δ) and the
   linear ones' sums (r_i ≥ δ): the driver solves for the Newton point;
2. the line search towards it, as the squared hinge's (`block_line_search`): each
   block returns, for a step t, its sums over the rows in each piece at t and its
   breakpoints nearest to t; the driver takes the root of F_δ's derivative on that piece;
3. one map marking each row's piece at the new point; a width ends where a full step
   leaves every mark as the Newton point's.

After each width whose quadratic rows are few enough, the blocks keep α = C ℓ′_δ(r) (a
feasible point of the hinge's dual) and the driver's polish settles from that partition.
Only (Nz + 1)²-sized sums and a few numbers per line-search step travel.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.linalg
from numpy.typing import NDArray

from sparsify.algorithms.svm.block_line_search import line_search_over_blocks
from sparsify.core.errors import SolverError
from sparsify.core.kernel_blocks import BLOCK_ROWS
from sparsify.svm_dual.smoothed import MAX_NEWTON, WIDTHS, hinge_partition, hinge_pieces

if TYPE_CHECKING:
    from sparsify.algorithms.svm.distributed import _Rows

__all__ = ["smoothed_path"]

Array = NDArray[np.float64]


# -- the tasks that run on the workers ---------------------------------------------------

def _mark_pieces(rows: _Rows, u: Array, b: float, width: float) -> tuple[bool, int]:
    """Keep the residuals r = 1 − P x and each row's piece (0 zero, 1 quadratic, 2 linear);
    whether a piece changed, and the rows in the quadratic piece."""
    assert rows.B is not None
    rows.slack = 1.0 - rows.B @ u - rows.y * b
    linear, quadratic = hinge_pieces(rows.slack, width)
    piece = (2 * linear + quadratic).astype(np.int8)
    changed = rows.piece is None or not np.array_equal(piece, rows.piece)
    rows.piece = piece
    return changed, int(np.sum(piece == 1))


def _piece_sums(rows: _Rows, width: float) -> tuple[Array, Array]:
    """Σ_Q (C_i/δ) P_iᵀ P_i and Σ_Q (C_i/δ) P_i + Σ_L C_i P_i over the block's rows."""
    assert rows.B is not None and rows.piece is not None
    n = rows.B.shape[1] + 1
    H, rhs = np.zeros((n, n)), np.zeros(n)
    quadratic = np.flatnonzero(rows.piece == 1)
    for start in range(0, len(quadratic), BLOCK_ROWS):
        part = quadratic[start:start + BLOCK_ROWS]
        P = np.hstack([rows.B[part], rows.y[part, None]])
        Pw = P * (rows.C[part] / width)[:, None]
        H += P.T @ Pw
        rhs += Pw.sum(axis=0)
    linear = rows.piece == 2
    rhs[:-1] += rows.C[linear] @ rows.B[linear]
    rhs[-1] += float(rows.C[linear] @ rows.y[linear])
    return H, rhs


def _slope_piece(rows: _Rows, t: float, width: float) -> tuple[float, float, float, float]:
    """At step t: Σ_L C Δ + Σ_Q C Δ r / δ and Σ_Q C Δ² / δ over the rows in each piece there,
    and the block's breakpoints (r(t) = 0 or δ) nearest to t on either side."""
    r, delta, C = rows.slack, rows.delta, rows.C
    assert r is not None and delta is not None
    linear, quadratic = hinge_pieces(r - t * delta, width)
    s0 = float(C[linear] @ delta[linear])
    s0 += float((C[quadratic] * delta[quadratic]) @ r[quadratic]) / width
    s1 = float((C[quadratic] * delta[quadratic]) @ delta[quadratic]) / width
    left, right = -np.inf, np.inf
    for shift in (0.0, width):  # a row's pieces change where r(t) = 0 and where r(t) = δ
        with np.errstate(divide="ignore", invalid="ignore"):
            times = (r - shift) / delta  # ±inf or nan where δ_i = 0: never a nearest break
        left = max(left, float(times[times <= t].max(initial=-np.inf)))
        right = min(right, float(times[times > t].min(initial=np.inf)))
    return s0, s1, left, right


def _keep_alpha(rows: _Rows, width: float) -> None:
    """α = C ℓ′_δ(r) at the width's point: the polish's start; the scratch is dropped."""
    assert rows.slack is not None
    rows.alpha = hinge_partition(rows.slack, rows.C, width)[0]
    rows.slack = rows.delta = rows.piece = None


# -- the driver ---------------------------------------------------------------------------

def smoothed_path(map_: Callable[..., list[Any]], n_expansion: int,
                  widths: tuple[float, ...] = WIDTHS) -> Iterator[tuple[Array, float, int]]:
    """(u, b, quadratic rows) at F_δ's minimiser for each width in turn, from x = 0.

    ``map_`` runs a task on every block (`DistributedSVMMarginal._map`). Before each yield
    the blocks keep α = C ℓ′_δ(r) there, so that the caller can polish from it.
    """
    x = np.zeros(n_expansion + 1)
    for width in widths:
        marks = map_(_mark_pieces, x[:-1], float(x[-1]), width)
        for _ in range(MAX_NEWTON):
            parts = map_(_piece_sums, width)
            H = np.sum([p[0] for p in parts], axis=0)
            rhs = np.sum([p[1] for p in parts], axis=0)
            H[np.arange(n_expansion), np.arange(n_expansion)] += 1.0
            if H[-1, -1] <= 0.0:
                H[-1, -1] = 1.0  # no quadratic row: b's step is the line search's
            try:
                new = np.asarray(scipy.linalg.cho_solve(scipy.linalg.cho_factor(H), rhs))
            except np.linalg.LinAlgError as error:
                raise SolverError(
                    "The distributed SVM solver's smoothed-hinge Newton system is numerically "
                    "singular (formulation 'svm'). Fit on the data in memory (numpy arrays), "
                    "whose solver falls back to a conic one.") from error
            d = new - x
            # F_δ' = a + c t − (s0 − t s1) on a piece; the step capped at the Newton point
            t, _ = line_search_over_blocks(map_, _slope_piece, (width,), float(x[:-1] @ d[:-1]),
                                           float(d[:-1] @ d[:-1]), d, 1.0, 1.0,
                                           "SVM (smoothed hinge)")
            if t <= 0.0:
                break
            x = new if t >= 1.0 else x + t * d
            marks = map_(_mark_pieces, x[:-1], float(x[-1]), width)
            if t >= 1.0 and not any(m[0] for m in marks):
                break  # the Newton point of its own partition: F_δ's minimiser
        map_(_keep_alpha, width)
        yield x[:-1].copy(), float(x[-1]), sum(m[1] for m in marks)
