"""The structured interior point on a linked problem split into parts by row blocks.

A point-separable formulation's KKT system (`sparsify.core.structured.kkt`) is
an arrowhead: the blocks of each point's variables meet the rest only through
the Schur unknowns (u, the dense variables such as b or ρ, the dense rows).
Split the training points into row blocks and give each block the columns of
its points (f and the variables of its blocks), its blocks' rows and its share
of the dense rows' entries: a *part* (`split`). Then each quantity the
iterations need is a sum over the parts plus a term of the Schur unknowns alone
(the *global part*, `GlobalPart`):

- the Schur complement S = S₀ + Σ_j S_j, with S_j = Φ_jᵀ H_j Φ_j − B_jᵀ Q_j⁻¹ B_j
  from part j's rows only (`KKTFactor` without ``decompose``);
- each solve's right-hand side for S, and the residuals and products of the
  Schur unknowns' rows;
- the costs, the complementarity sᵀz, the norms of the stopping rule (maxima)
  and the step to the boundary (minima).

`solve_parts` runs the iterations of `sparsify.core.structured.ipm.solve` on the
driver with the global part, asking the parts (`BlockPart`, one per row block,
wherever they live) for their shares through a ``call`` function. Per
iteration each part receives and returns O(Nz²) numbers (its share of S and
a few vectors of the Schur unknowns' size): no vector of its points' size
leaves it. The parts' Schur unknowns follow the driver's (it sends them at
each iteration), so the parts and the driver agree on one iterate.

A formulation whose blocks couple points of different row blocks (a graph
regulariser over all points), or with second-order cones over many points'
variables, does not split: `split` raises `StructureError` with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from numpy.typing import NDArray

from sparsify.core.conic_data import ConicData, LinkLayout
from sparsify.core.structured.cones import Cones, Scaling
from sparsify.core.structured.ipm import (
    IPMResult,
    IPMSettings,
    Iterate,
    _norm_inf,
    _Problem,
    _worst,
    centring,
    converged,
    stalled,
)
from sparsify.core.structured.kkt import KKTFactor, KKTStructure, StructureError, schur_lu

__all__ = ["BlockPart", "GlobalPart", "LocalParts", "SubProblem", "crossing", "solve_parts",
           "split"]

Array = NDArray[np.float64]
Index = NDArray[np.intp]
#: ``call(method, *args)``: ``BlockPart.method(*args)`` on every part, their results in order
Call = Callable[..., list[Any]]


@dataclass
class SubProblem:
    """One part's conic data: its points' f, then u and the dense variables, then its own.

    Rows: every dense (Schur) row first, with this part's entries only and typed as
    equality rows (their cone, if any, is the global part's), then this part's
    block rows in the problem's order. The entries between the dense rows or
    the quadratic term and the Schur unknowns, c on them and b on the dense rows
    are zero here: the global part holds them, once.

    Attributes
    ----------
    P, c, A, b : the part's conic data (Clarabel's layout, `ConicData`)
    zero : int
        Its equality rows (the dense rows among them), first.
    cones : Cones
        Its cone rows, after them.
    layout : LinkLayout
        Its f (its points, output-major) and u.
    glob : ndarray
        The dense variables' columns (after u).
    n_rows : int
        The dense rows (the first rows).
    points : (int, int)
        Its row block [start, stop) of the training points.
    block_entries : int
        Its blocks' packed entries (what its factorisations store).
    """

    P: sp.csr_matrix
    c: Array
    A: sp.csr_matrix
    b: Array
    zero: int
    cones: Cones
    layout: LinkLayout
    glob: Index
    n_rows: int
    points: tuple[int, int]
    block_entries: int

    def structure(self) -> KKTStructure:
        """The part's KKT structure, with the whole problem's Schur unknowns."""
        return KKTStructure(self.P, self.A, self.zero, self.cones, self.layout,
                            (self.glob, np.arange(self.n_rows)))


class GlobalPart:
    """The Schur unknowns' own terms and the dense rows' cones (held by the driver).

    Its unknowns are v = (u, the dense variables, the dense rows' duals), in the
    Schur complement's order; its dense rows are ``zero`` equality rows, then
    orthant rows.

    Parameters
    ----------
    P : ndarray
        The quadratic term among u and the dense variables.
    c : ndarray
        The linear term on them.
    A : ndarray
        The dense rows' entries on them.
    b : ndarray
        The dense rows' right-hand side.
    zero : int
        The dense rows that are equalities (the first ones).
    offset : float
        The objective's constant.
    columns : ndarray
        Where u and the dense variables are among the whole problem's columns.
    n_u : int
        u's columns (Nz·K).
    """

    def __init__(self, P: Array, c: Array, A: Array, b: Array, zero: int, offset: float,
                 columns: Index, n_u: int) -> None:
        self.P, self.c, self.A, self.b = P, c, A, b
        self.zero, self.offset, self.columns, self.n_u = zero, offset, columns, n_u
        self.n_x, self.n_r = len(c), len(b)
        self.cones = Cones(self.n_r - zero)
        self.size = self.n_x + self.n_r

    def matrix(self, d: Array | None) -> Array:
        """S₀ = [[P, Aᵀ], [A, −D]], D = ``d`` on the orthant rows (0: residuals' matrix)."""
        S = np.zeros((self.size, self.size))
        S[:self.n_x, :self.n_x] = self.P
        S[self.n_x:, :self.n_x] = self.A
        S[:self.n_x, self.n_x:] = self.A.T
        if d is not None:
            rows = self.n_x + self.zero + np.arange(self.cones.size)
            S[rows, rows] -= d
        return S

    def residual(self, v: Array, s: Array) -> tuple[Array, float, float]:
        """The Schur unknowns' residual rows at (v, s), without the parts' shares; the
        costs' terms of v."""
        out = self.matrix(None) @ v
        out[:self.n_x] += self.c
        out[self.n_x:] -= self.b
        out[self.n_x + self.zero:] += s
        x = v[:self.n_x]
        xPx = float(x @ self.P @ x)
        return out, 0.5 * xPx + float(self.c @ x), -0.5 * xPx - float(self.b @ v[self.n_x:])


def crossing(own: ConicData, layout: LinkLayout,
             bounds: Sequence[int] | NDArray[np.integer[Any]]) -> Index:
    """The formulation's columns whose rows (or quadratic terms) meet the outputs of points
    in more than one row block [bounds[j], bounds[j+1]).

    An intercept meets every point; on a large problem its column is dense and the
    Schur complement takes it anyway, but a row block's worth of points may leave
    it below the density threshold. Handed to the structure as ``dense``
    (`KKTStructure`), they make the partition one that splits.
    """
    N, K = layout.N, layout.K
    edges = np.asarray(bounds, dtype=np.intp)
    block = np.full(layout.n, -1)
    block[layout.f] = np.searchsorted(edges, np.arange(N * K) % N, side="right") - 1
    A = sp.coo_matrix(own.A)
    on_f = block[A.col] >= 0
    m = A.shape[0]
    row_lo, row_hi = np.full(m, len(edges)), np.full(m, -1)
    np.minimum.at(row_lo, A.row[on_f], block[A.col[on_f]])
    np.maximum.at(row_hi, A.row[on_f], block[A.col[on_f]])
    lo, hi = np.full(layout.n, len(edges)), np.full(layout.n, -1)
    off = ~on_f
    np.minimum.at(lo, A.col[off], row_lo[A.row[off]])
    np.maximum.at(hi, A.col[off], row_hi[A.row[off]])
    if own.P is not None:
        P = sp.coo_matrix(own.P)
        meets = (block[P.col] >= 0) & (block[P.row] < 0)
        np.minimum.at(lo, P.row[meets], block[P.col[meets]])
        np.maximum.at(hi, P.row[meets], block[P.col[meets]])
    cross = hi > lo
    cross[layout.u] = False
    return np.flatnonzero(cross)


def split(own: ConicData, layout: LinkLayout, st: KKTStructure,
          bounds: Sequence[int] | NDArray[np.integer[Any]]
          ) -> tuple[GlobalPart, list[SubProblem]]:
    """Split a linked problem by the row blocks [bounds[j], bounds[j+1]) of its points.

    Parameters
    ----------
    own : ConicData
        The formulation's conic data (`sparsify.core.conic_data.LinkedProblem.own`).
    layout : LinkLayout
    st : KKTStructure
        The whole problem's structure: its partition is each part's.
    bounds : sequence of int
        0 = bounds[0] < … < bounds[-1] = N.

    Raises
    ------
    StructureError
        Where a block couples points of two row blocks, or a second-order cone
        spans many points' variables.

    Examples
    --------
    See `solve_parts`.
    """
    if len(st.expanded):
        raise StructureError("it has second-order cones over many points' variables, which "
                             "do not split by row blocks")
    N, K, n_u = layout.N, layout.K, layout.Nz * layout.K
    edges = np.asarray(bounds, dtype=np.intp)
    A, P = sp.csr_matrix(own.A), st.P
    nl, n = len(st.local), own.n
    # the row block of each point, and of each column of f
    block_of_point = np.searchsorted(edges, np.arange(N), side="right") - 1
    point_of_col = np.full(n, -1)
    point_of_col[st.F] = np.arange(N * K) % N
    # each block (component) of the partition: the row blocks of the points it meets
    comp_col = np.full(n, -1)
    comp_col[st.local] = st._labels[:nl]
    comp_row = np.full(st.m, -1)
    comp_row[st.block_rows] = st._labels[nl:]
    n_comp = len(st._sizes)
    low, high = np.full(n_comp, len(edges)), np.full(n_comp, -1)
    for matrix, comp_of in ((A, comp_row), (P, comp_col)):
        coo = matrix.tocoo()
        on_f = (point_of_col[coo.col] >= 0) & (comp_of[coo.row] >= 0)
        comp, where = comp_of[coo.row[on_f]], block_of_point[point_of_col[coo.col[on_f]]]
        np.minimum.at(low, comp, where)
        np.maximum.at(high, comp, where)
    if (high > low).any():
        raise StructureError("its variables couple points of different row blocks (a graph "
                             "over the points, say), so it does not split by row blocks")
    P_coo = P.tocoo()
    on_ff = (point_of_col[P_coo.row] >= 0) & (point_of_col[P_coo.col] >= 0)
    if (block_of_point[point_of_col[P_coo.row[on_ff]]]
            != block_of_point[point_of_col[P_coo.col[on_ff]]]).any():
        raise StructureError("its quadratic term couples the outputs of points in different "
                             "row blocks, so it does not split by row blocks")
    comp_block = np.where(high >= 0, high, 0)  # a block meeting no point: the first part
    packed = st._sizes * (st._sizes + 1) // 2
    G = np.concatenate([st.U, st.glob])
    R0 = st.schur_rows
    zero, nonneg = own.cones.zero, own.cones.nonneg
    cone_rows = R0 - zero
    if (cone_rows >= nonneg).any():
        raise StructureError("a dense row is in a second-order cone, which does not split "
                             "by row blocks")
    P_G = P[G]
    master = GlobalPart(P_G[:, G].toarray(), own.c[G].copy(), A[R0][:, G].toarray(),
                        own.b[R0].copy(), int((R0 < zero).sum()), own.offset, G, n_u)
    col_block = np.full(n, -1)
    col_block[st.local] = comp_block[st._labels[:nl]]
    row_block = np.full(st.m, -1)
    row_block[st.block_rows] = comp_block[st._labels[nl:]]
    soc_sizes = np.asarray(own.cones.soc, dtype=np.intp)
    soc_starts = zero + nonneg + np.cumsum(soc_sizes) - soc_sizes
    parts = []
    n_r, n_g = len(R0), len(st.glob)
    for j in range(len(edges) - 1):
        a, b_ = int(edges[j]), int(edges[j + 1])
        f_cols = (layout.off_f + np.arange(K)[:, None] * N + np.arange(a, b_)).ravel()
        cols = np.concatenate([f_cols, G, np.flatnonzero(col_block == j)])
        rows_j = np.flatnonzero(row_block == j)
        rows = np.concatenate([R0, rows_j])
        n_f = len(f_cols)
        g_lo, g_hi = n_f, n_f + len(G)
        A_j = _without(A[rows][:, cols], n_r, (g_lo, g_hi))
        P_j = _without(P[cols][:, cols], (g_lo, g_hi), (g_lo, g_hi))
        c_j = own.c[cols].copy()
        c_j[g_lo:g_hi] = 0.0
        b_j = own.b[rows].copy()
        b_j[:n_r] = 0.0
        socs = [int(q) for q, start in zip(soc_sizes, soc_starts, strict=True)
                if row_block[start] == j]
        cones = Cones(int(((rows_j >= zero) & (rows_j < zero + nonneg)).sum()), socs)
        parts.append(SubProblem(P_j, c_j, A_j, b_j, n_r + int((rows_j < zero).sum()), cones,
                                LinkLayout(len(cols), 0, n_f, b_ - a, layout.Nz, K),
                                g_lo + n_u + np.arange(n_g), n_r, (a, b_),
                                int(packed[comp_block == j].sum())))
    return master, parts


def _without(matrix: sp.spmatrix, rows: int | tuple[int, int], cols: tuple[int, int]
             ) -> sp.csr_matrix:
    """``matrix`` without its entries in rows [0, rows) (or [lo, hi)) and columns [lo, hi)."""
    coo = sp.coo_matrix(matrix)
    lo, hi = (0, rows) if isinstance(rows, int) else rows
    drop = (coo.row >= lo) & (coo.row < hi) & (coo.col >= cols[0]) & (coo.col < cols[1])
    return sp.csr_matrix((coo.data[~drop], (coo.row[~drop], coo.col[~drop])),
                         shape=coo.shape)


class BlockPart:
    """One part of a split problem where its row block lives: its iterate and its shares.

    The methods are the steps of `solve_parts`, called on every part in turn; each
    returns only numbers of the Schur unknowns' size.
    """

    p: Iterate  # the current iterate
    best: Iterate  # the best one so far (the driver says which)
    factor: KKTFactor
    W: Scaling
    _sol: tuple[Array, Array, Array]  # a solve's solution (x, ν, y), and its best
    _best: tuple[Array, Array, Array]
    _dir: tuple[Array, Array, Array, Array]  # the step's direction (Δx, Δν, Δy, Δs)

    def __init__(self, sub: SubProblem) -> None:
        self.sub = sub
        self.st = st = sub.structure()
        self.cones, self.zero = sub.cones, sub.zero
        self.G = np.concatenate([st.U, st.glob])  # the Schur unknowns among the columns
        self.R0 = st.schur_rows
        self.x_own = np.ones(st.n, bool)
        self.x_own[self.G] = False
        self.row_own = np.ones(st.m, bool)
        self.row_own[self.R0] = False
        self.Phi: Array | None = None

    # -- the data -----------------------------------------------------------------------------

    def set_phi(self, Phi: Array) -> None:
        """Use the block's whitened rows Φ_j from now on."""
        self.Phi = Phi
        self.problem = _Problem(self.st, self.sub.c, self.sub.b, Phi)

    def norms(self) -> tuple[float, float]:
        """The largest |b| and |c| of the part's data."""
        return self.problem.norm_b, self.problem.norm_c

    def degree(self) -> int:
        """The part's cones' degree (`Cones.degree`)."""
        return self.cones.degree

    def _shares(self, vx: Array, vrows: Array) -> Array:
        """The Schur unknowns' entries of a vector (x part, rows part), in S's order."""
        return np.concatenate([vx[self.G], vrows[self.R0]])

    def _local(self, rhs: tuple[Array, Array, Array]) -> tuple[Array, Array, Array]:
        """The right-hand side with the Schur unknowns' rows zeroed (the driver adds them)."""
        r_x, r_link, r_rows = (np.array(r) for r in rhs)
        r_x[self.G] = 0.0
        r_rows[self.R0] = 0.0
        return r_x, r_link, r_rows

    def _size(self, rhs: tuple[Array, Array, Array]) -> float:
        return max(_norm_inf(rhs[0][self.x_own]), _norm_inf(rhs[1]),
                   _norm_inf(rhs[2][self.row_own]))

    # -- one KKT solve, refined (`sparsify.core.structured.ipm._refined`) ------------------

    def _reduce(self, rhs: tuple[Array, Array, Array]) -> tuple[Array, float]:
        self._rhs = self._local(rhs)
        return self.factor.reduce(*self._rhs), self._size(self._rhs)

    def expand(self, xs: Array, refine: bool, add: bool = False) -> tuple[Array, float] | None:
        """The solution from the Schur unknowns ``xs`` (added to the last with ``add``);
        with ``refine``, the shares of its KKT product and the part's own residual."""
        sol = self.factor.expand(xs, self._rhs[0], self._rhs[1])
        if add:
            sol = (self._sol[0] + sol[0], self._sol[1] + sol[1], self._sol[2] + sol[2])
        self._sol = sol
        if not refine:
            return None
        if not add:
            self._best = sol
        mv = self.factor.matvec(*sol)
        shares = self._shares(mv[0], mv[2])
        self._res = tuple(np.subtract(r, m, out=m) for r, m in
                          zip(self._full_rhs, mv, strict=True))
        return shares, self._size(self._res)

    def correct(self, keep: bool) -> tuple[Array, float]:
        """Keep the current solution as the best (``keep``); reduce its residual."""
        if keep:
            self._best = self._sol
        return self._reduce(self._res)

    def _settle(self, keep: bool, xs: Array | None) -> None:
        """End a solve: expand ``xs`` where it was not refined (given), else keep the
        current solution (``keep``) or go back to the best one."""
        if xs is not None:
            self.expand(xs, False)
        elif not keep:
            self._sol = self._best

    # -- the interior point's steps ---------------------------------------------------------

    def start(self) -> tuple[Array, Array, float]:
        """CVXOPT's starting point's KKT system (W = I): the shares of S and of its rhs."""
        assert self.Phi is not None, "set_phi first"
        self.factor = self.st.factor(self.Phi, None, decompose=False)
        self._full_rhs = (-self.sub.c, np.zeros(len(self.st.F)), self.sub.b.copy())
        share, size = self._reduce(self._full_rhs)
        return self.factor.S, share, size

    def start_point(self, keep: bool, xs: Array | None) -> tuple[float, float, float, float]:
        """End the start's solve (`_settle`); slacks s = −z from its solution: their
        smallest eigenvalues and largest entries, for the driver's shift into the cone."""
        self._settle(keep, xs)
        x, nu, y = self._sol
        z = y[self.zero:].copy()
        self._start = (x, nu, y, z, -z)
        big = _norm_inf(z)
        return self.cones.min_eigenvalue(-z), self.cones.min_eigenvalue(z), big, big

    def measure(self, v: Array, update: tuple[Any, ...]) -> tuple[Any, ...]:
        """Move to the next iterate (``update``), set its Schur unknowns to ``v``; the
        residuals' shares, the costs' and the stopping rule's maxima."""
        if update[0] == "start":
            x, nu, y, z, s = self._start
            e = self.cones.identity()
            for vec, shift in ((s, update[1]), (z, update[2])):
                if shift is not None:
                    vec += (1 + shift) * e
            y[self.zero:] = z
            self.p = Iterate(x, nu, y, s)
        elif update[0] == "step":
            step = update[1]
            for d, w in zip(self._dir, (self.p.x, self.p.nu, self.p.y, self.p.s), strict=True):
                d *= step
                d += w
            self.p = Iterate(*self._dir)
        elif update[0] == "best":
            self.p = self.best
        p = self.p
        p.x[self.G] = v[:len(self.G)]
        p.y[self.R0] = v[len(self.G):]
        self._res_ipm = res = self.problem.residuals(p)
        r_x, r_link, r_rows, pcost, dcost = res
        return (self._shares(r_x, r_rows), pcost, dcost, _norm_inf(r_x[self.x_own]),
                max(_norm_inf(r_link), _norm_inf(r_rows[self.row_own])),
                _norm_inf(p.x), _norm_inf(p.s), max(_norm_inf(p.y), _norm_inf(p.nu)))

    def factor_step(self, keep_best: bool) -> tuple[Array, Array, float]:
        """Keep the iterate as the best (``keep_best``); the NT scaling, the KKT shares, the
        predictor's right-hand side share and the part's sᵀz."""
        if keep_best:
            self.best = self.p
        p = self.p
        z = p.y[self.zero:]
        self.W = W = self.cones.scaling(p.s, z)
        assert self.Phi is not None
        self.factor = self.st.factor(self.Phi, W, decompose=False)
        share, _ = self._direction_rhs(-W.lam)
        return self.factor.S, share, float(p.s @ z)

    def _direction_rhs(self, q_c: Array) -> tuple[Array, float]:
        r_x, r_link, r_rows, _, _ = self._res_ipm
        self._wq = self.W.apply(q_c)
        rows = -r_rows
        rows[self.zero:] -= self._wq
        self._full_rhs = (-r_x, -r_link, rows)
        return self._reduce(self._full_rhs)

    def _steps(self) -> tuple[float, Array, Array, Array]:
        """The direction's Δs, its scaled Δs and Δz, and the part's bound on the step."""
        W, lam = self.W, self.W.lam
        dy = self._sol[2]
        ds = self._wq - W.squared(dy[self.zero:])
        ds_t, dz_t = W.apply_inverse(ds), W.apply(dy[self.zero:])
        return min(self.cones.max_step(lam, ds_t), self.cones.max_step(lam, dz_t)), \
            ds, ds_t, dz_t

    def predict(self, xs: Array) -> tuple[float, float]:
        """The predictor direction from ``xs``: the part's step bound and Δsᵀ Δz."""
        self.expand(xs, False)
        bound, ds, ds_t, dz_t = self._steps()
        self._pred = (ds_t, dz_t)
        return bound, float(ds @ self._sol[2][self.zero:])

    def correct_rhs(self, sigma_mu: float) -> tuple[Array, float]:
        """The corrector's right-hand side share (centring σμ and the second-order term)."""
        cones, lam = self.cones, self.W.lam
        ds_t, dz_t = self._pred
        r_c = -cones.jordan(lam, lam) + sigma_mu * cones.identity() - cones.jordan(ds_t, dz_t)
        return self._direction_rhs(cones.jordan_divide(lam, r_c))

    def step_bound(self, keep: bool, xs: Array | None) -> float:
        """End the corrector's solve (`_settle`): the part's bound on the step."""
        self._settle(keep, xs)
        bound, ds, _, _ = self._steps()
        self._dir = (*self._sol, ds)
        return bound

    def final(self) -> Iterate:
        """The iterate the interior point ended at (the best one where it did not converge)."""
        return self.p


def solve_parts(master: GlobalPart, call: Call, settings: IPMSettings | None = None
                ) -> tuple[IPMResult, Array, float]:
    """The structured interior point over parts (module docstring).

    Parameters
    ----------
    master : GlobalPart
    call : callable
        ``call(method, *args)`` runs ``BlockPart.method(*args)`` on every part (each
        part's Φ already set) and returns their results in order.
    settings : IPMSettings, optional
        The stopping rule; the defaults by default.

    Returns
    -------
    result : IPMResult
        Its point holds the global part's unknowns only: x = (u, dense variables),
        y = the dense rows' duals, s = their slacks; the parts keep the rest
        (`BlockPart.final`).
    v : ndarray
        The Schur unknowns (u, dense variables, dense rows' duals) at that point.
    pcost : float
        The objective there, the formulation's constant not included.

    Examples
    --------
    A declared ridge regression split into two parts solves as the whole problem:

    >>> import cvxpy as cp
    >>> from sparsify import Declaration, Formulation
    >>> from sparsify.core.backends import StructuredBackend
    >>> from sparsify.core.conic import compile_linked
    >>> from sparsify.core.declared import declare
    >>> from sparsify.core.structured.ipm import solve
    >>> class Ridge(Formulation):
    ...     name = "doc_parts_ridge"
    ...     def declare(self, out):
    ...         b = cp.Variable()
    ...         loss = cp.sum_squares(out.f + b - out.y)
    ...         return Declaration(cp.Minimize(loss + out.norm_w2), [], b)
    >>> y = np.sin(np.linspace(-3, 3, 30))
    >>> decl, f, u, K = declare(Ridge(), y, 30, 4)
    >>> linked = compile_linked(cp.Problem(decl.objective), f, u, 30, 4, K, "CLARABEL").problem
    >>> bounds = [0, 10, 30]
    >>> dense = crossing(linked.own, linked.layout, bounds)  # b: it meets every point
    >>> st = StructuredBackend("structured").structure(linked, dense=dense)
    >>> Phi = np.random.default_rng(0).normal(size=(30, 4))  # any whitened rows
    >>> master, subs = split(linked.own, linked.layout, st, bounds)
    >>> parts = LocalParts(subs)
    >>> for part, sub in zip(parts.parts, subs):
    ...     part.set_phi(Phi[slice(*sub.points)])
    >>> result, v, W = solve_parts(master, parts)
    >>> x = solve(st, linked.own.c, linked.own.b, Phi).point.x
    >>> bool(np.isclose(W, 0.5 * x @ (st.P @ x) + linked.own.c @ x))
    True
    """
    settings = settings or IPMSettings()
    norms = call("norms")
    norm_b = max([master.b.size and _norm_inf(master.b)] + [b for b, _ in norms])
    norm_c = max([master.c.size and _norm_inf(master.c)] + [c for _, c in norms])
    cones = master.cones
    n_x, zero = master.n_x, master.zero
    degree = cones.degree + sum(call("degree"))

    def lu_of(parts: list[Any], d: Array | None) -> tuple[Array, Any, bool]:
        S = master.matrix(d) + np.sum([part[0] for part in parts], axis=0)
        return schur_lu(S, n_x, master.n_r, 0)

    def solve(lu: tuple[Array, Any, bool], d: Array | None, shares: list[Any],
              rhs: Array, refine: int) -> tuple[Array, tuple[bool, Array | None]]:
        """The refined solve of `ipm._refined`, its product and residual summed over parts.

        Returns the Schur unknowns and what the parts' next call settles with
        (`BlockPart._settle`): whether their current solution is the best, and the
        unknowns to expand where the solve was not refined.
        """
        xs = scipy.linalg.lu_solve(lu[:2], rhs + np.sum([s[0] for s in shares], axis=0),
                                   check_finite=False)
        if not refine:
            return xs, (True, xs)
        size = max(max(s[1] for s in shares), _norm_inf(rhs), 1e-300)
        S0 = master.matrix(d)
        sol, best, best_err = xs, xs, np.inf
        parts = call("expand", xs, True)
        keep = False
        for step in range(refine + 1):
            res = rhs - S0 @ sol - np.sum([p[0] for p in parts], axis=0)
            err = max(max(p[1] for p in parts), _norm_inf(res))
            keep = err < best_err
            if keep:
                best, best_err = sol, err
            if err <= 1e-10 * size or step == refine:
                break
            shares = call("correct", keep)
            corr = scipy.linalg.lu_solve(lu[:2], res + np.sum([s[0] for s in shares], axis=0),
                                         check_finite=False)
            sol = sol + corr
            parts = call("expand", corr, True, True)
        return best, (keep, None)

    def measures(v: Array, s: Array, update: tuple[Any, ...]
                 ) -> tuple[tuple[float, float, float, float], float, Array]:
        parts = call("measure", v, update)
        r, pcost, dcost = master.residual(v, s)
        r += np.sum([p[0] for p in parts], axis=0)
        pcost += sum(p[1] for p in parts)
        dcost += sum(p[2] for p in parts)
        dres = max(max(p[3] for p in parts), _norm_inf(r[:n_x]))
        pres = max(max(p[4] for p in parts), _norm_inf(r[n_x:]))
        norm_x = max(max(p[5] for p in parts), _norm_inf(v[:n_x]))
        norm_s = max(max(p[6] for p in parts), _norm_inf(s))
        norm_y = max(max(p[7] for p in parts), _norm_inf(v[n_x:]))
        gap_abs = abs(pcost - dcost)
        gap_rel = gap_abs / max(1.0, min(abs(pcost), abs(dcost)))
        return ((gap_abs, gap_rel, pres / max(1.0, norm_b + norm_x + norm_s),
                 dres / max(1.0, norm_c + norm_x + norm_y)), pcost, r)

    # the start: one KKT solve with W = I, slacks shifted inside the cones
    parts = call("start")
    d0 = np.ones(cones.size)
    lu = lu_of(parts, d0)
    v, settle = solve(lu, d0, [p[1:] for p in parts], np.concatenate([-master.c, master.b]),
                      settings.refine)
    found = call("start_point", *settle)
    if degree == 0:  # an equality-constrained QP: that solve is its solution
        (_, gap_rel, pres, dres), pcost, _ = measures(v, np.zeros(0), ("start", None, None))
        ok = pres <= settings.tol_feas and dres <= settings.tol_feas
        point = Iterate(v[:n_x], np.zeros(0), v[n_x:], np.zeros(0))
        return IPMResult("optimal" if ok else "stalled", point, 1, gap_rel, pres, dres), v, pcost
    z0 = v[n_x + zero:].copy()
    s0 = -z0
    e0 = cones.identity()
    shifts = []
    for which, vec in ((0, s0), (1, z0)):
        low = min([cones.min_eigenvalue(vec)] + [f[which] for f in found])
        big = max([_norm_inf(vec)] + [f[2 + which] for f in found])
        shift = -low
        if shift >= -1e-8 * max(big, 1.0):
            vec += (1 + shift) * e0
            shifts.append(shift)
        else:
            shifts.append(None)
    v[n_x + zero:] = z0
    s = s0
    update: tuple[Any, ...] = ("start", *shifts)
    history: list[tuple[float, float, float, float]] = []
    best: tuple[float, Array, Array, tuple[float, float, float], float] | None = None
    status = "max_iter"
    pcost = np.nan
    keep_best = True
    for iteration in range(settings.max_iter + 1):
        now, pcost, r = measures(v, s, update)
        _, gap_rel, pres, dres = now
        worst = _worst(now)
        keep_best = best is None or worst < best[0]  # the parts keep it at factor_step
        if keep_best:
            best = (worst, v, s, (gap_rel, pres, dres), pcost)
        if converged(now, settings):
            status = "optimal"
            break
        if iteration == settings.max_iter:
            break
        assert best is not None
        if stalled(history, worst, best[0]):
            status = "stalled"
            break
        z = v[n_x + zero:]
        W = cones.scaling(s, z)
        lam = W.lam
        parts = call("factor_step", keep_best)
        gap = float(s @ z) + sum(p[2] for p in parts)
        mu = gap / degree
        d = W.w ** 2
        lu = lu_of(parts, d)
        rhs, wq = _direction_rhs(W, r, -lam, n_x, zero)
        dv, _ = solve(lu, d, [p[1:3] for p in parts], rhs, 0)  # `predict` expands it
        ds = wq - W.squared(dv[n_x + zero:])
        ds_t, dz_t = W.apply_inverse(ds), W.apply(dv[n_x + zero:])
        predicted = call("predict", dv)
        alpha = min([1.0, cones.max_step(lam, ds_t), cones.max_step(lam, dz_t),
                     *(p[0] for p in predicted)])
        dsdz = float(ds @ dv[n_x + zero:]) + sum(p[1] for p in predicted)
        sigma = centring(alpha, dsdz, gap)
        r_c = -cones.jordan(lam, lam) + sigma * mu * e0 - cones.jordan(ds_t, dz_t)
        shares = call("correct_rhs", sigma * mu)
        rhs, wq = _direction_rhs(W, r, cones.jordan_divide(lam, r_c), n_x, zero)
        dv, settle = solve(lu, d, shares, rhs, settings.refine if gap_rel < 1e-3 else 0)
        ds = wq - W.squared(dv[n_x + zero:])
        ds_t, dz_t = W.apply_inverse(ds), W.apply(dv[n_x + zero:])
        bound = min([cones.max_step(lam, ds_t), cones.max_step(lam, dz_t),
                     *call("step_bound", *settle)])
        step = min(1.0, settings.step * bound)
        v = v + step * dv
        s = s + step * ds
        update = ("step", step)
        history.append((gap_rel, pres, dres, step))
    if status != "optimal":
        assert best is not None
        worst_best, v, s, (gap_rel, pres, dres), pcost = best
        if not keep_best:  # the last iterate is not the best: the parts go back to it
            call("measure", v, ("best",))
        if worst_best <= settings.reduced_tol:
            status = "optimal_inaccurate"
    point = Iterate(v[:n_x], np.zeros(0), v[n_x:], s)
    return IPMResult(status, point, len(history), gap_rel, pres, dres, history), v, pcost


def _direction_rhs(W: Scaling, r: Array, q_c: Array, n_x: int, zero: int
                   ) -> tuple[Array, Array]:
    """The global part's right-hand side of a direction (`ipm._direction`) and W q_c."""
    wq = W.apply(q_c)
    rows = -r[n_x:]
    rows[zero:] -= wq
    return np.concatenate([-r[:n_x], rows]), wq


class LocalParts:
    """The parts of a split problem in this process: ``call`` for `solve_parts` (tests,
    and a reference for a cluster's parts).

    Examples
    --------
    See `solve_parts`.
    """

    def __init__(self, subs: Sequence[SubProblem]) -> None:
        self.parts = [BlockPart(sub) for sub in subs]

    def __call__(self, method: str, *args: Any) -> list[Any]:
        return [getattr(part, method)(*args) for part in self.parts]
