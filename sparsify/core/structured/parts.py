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

`Parts` is the interior point's KKT system over them: the one loop
(`sparsify.core.structured.ipm.interior_point`) runs on the driver with the
global part, and asks the parts (`BlockPart`, one per row block, wherever they
live) for their shares through a ``call`` function. Each part is a
`sparsify.core.structured.part.Part`, as the whole problem is: the vector work
is the same, only the sums are here. Per iteration each part receives and
returns O(Nz²) numbers (its share of S and a few vectors of the Schur unknowns'
size): no vector of its points' size leaves it. The parts' Schur unknowns
follow the global part's (it sends them at each iteration), so the parts and
the driver agree on one iterate.

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
from sparsify.core.structured.kkt import KKTStructure, StructureError, schur_lu
from sparsify.core.structured.part import Iterate, Measured, Part

__all__ = ["BlockPart", "GlobalPart", "LocalParts", "Parts", "SubProblem", "crossing", "split"]

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
    """The global part's data: the Schur unknowns' own terms and the dense rows' cones.

    It is the structure of a `Part` held by the driver (`Parts`) whose unknowns are
    all Schur unknowns: its columns are u and the dense variables (in the Schur
    complement's order), its rows the dense rows (``zero`` equality rows, then
    orthant rows). It has no points: f and the link are the row blocks' parts'.

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
    layout : LinkLayout
        u's place (the first columns) and the sizes; no points.
    """

    def __init__(self, P: Array, c: Array, A: Array, b: Array, zero: int, offset: float,
                 columns: Index, layout: LinkLayout) -> None:
        self.P, self.c, self.A, self.AT, self.b = P, c, A, A.T, b
        self.zero, self.offset, self.columns, self.layout = zero, offset, columns, layout
        self.n, self.m = len(c), len(b)
        self.cones = Cones(self.m - zero)
        self.F = np.zeros(0, np.intp)
        self.U = np.arange(layout.Nz * layout.K)
        self.glob = np.arange(len(self.U), self.n)
        self.schur_rows = np.arange(self.m)

    def part(self) -> Part:
        """Its `Part` (Φ without rows: no points)."""
        part = Part(self, self.c, self.b)
        part.set_phi(np.zeros((0, self.layout.Nz)))
        return part

    def factor(self, Phi: Array, scaling: Scaling | None, decompose: bool = False
               ) -> _DenseKKT:
        """Its KKT matrix at NT scaling ``scaling`` (None: W = I), as `KKTStructure.factor`."""
        return _DenseKKT(self, scaling)


class _DenseKKT:
    """The global part's KKT matrix S₀ = [[P, Aᵀ], [A, −D]] (D: W² on the orthant rows),
    as a `KKTFactor` without ``decompose``: every unknown is a Schur unknown, so the
    right-hand side's reduction and the solution's expansion only stack and split."""

    def __init__(self, glob: GlobalPart, scaling: Scaling | None) -> None:
        n, m = glob.n, glob.m
        self.n = n
        S = np.zeros((n + m, n + m))
        S[:n, :n] = glob.P
        S[n:, :n] = glob.A
        S[:n, n:] = glob.AT
        rows = n + glob.zero + np.arange(glob.cones.size)
        S[rows, rows] -= 1.0 if scaling is None else scaling.w ** 2
        self.S = S

    def reduce(self, r_x: Array, r_link: Array, r_rows: Array) -> Array:
        return np.concatenate([r_x, r_rows])

    def expand(self, xs: Array, r_x: Array, r_link: Array) -> tuple[Array, Array, Array]:
        return xs[:self.n].copy(), np.zeros(0), xs[self.n:].copy()

    def matvec(self, x: Array, nu: Array, y: Array) -> tuple[Array, Array, Array]:
        out = self.S @ np.concatenate([x, y])
        return out[:self.n], np.zeros(0), out[self.n:]


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
    See `Parts`.
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
                        own.b[R0].copy(), int((R0 < zero).sum()), own.offset, G,
                        LinkLayout(len(G), 0, 0, 0, layout.Nz, K))
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


class BlockPart(Part):
    """A row block's part where its block lives: a shared `Part`, whose steps `Parts` sends
    in batches (`run`)."""

    def __init__(self, sub: SubProblem) -> None:
        super().__init__(sub.structure(), sub.c, sub.b, shared=True)
        self.sub = sub

    def run(self, ops: Sequence[tuple[str, tuple[Any, ...]]]) -> list[Any]:
        """``self.method(*args)`` for each (method, args) in turn; their results."""
        return [getattr(self, method)(*args) for method, args in ops]


class Parts:
    """The interior point's `KKTSystem` over a split problem (module docstring).

    The global part is here (a `Part` of `GlobalPart`), the row blocks' parts
    (`BlockPart`) wherever ``call`` reaches them. Each method combines the global
    part's numbers with the parts' (sums, maxima, minima; the parts' residual
    shares go into the global part's rows), and the Schur complement is summed
    and factored here. A step that returns nothing (a factorisation, a solution
    recovered, a move) waits for the next call that returns numbers and goes with
    it: five calls per iteration, two more per refinement step.

    Parameters
    ----------
    master : GlobalPart
    call : callable
        ``call("run", ops)`` runs `BlockPart.run(ops)` on every part (each part's Φ
        already set) and returns their results in order.

    Examples
    --------
    A declared ridge regression split into two parts solves as the whole problem:

    >>> import cvxpy as cp
    >>> from sparsify import Declaration, Formulation
    >>> from sparsify.core.backends import StructuredBackend
    >>> from sparsify.core.conic import compile_linked
    >>> from sparsify.core.declared import declare
    >>> from sparsify.core.structured.ipm import interior_point, solve
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
    >>> W = interior_point(Parts(master, parts)).objective
    >>> bool(np.isclose(W, solve(st, linked.own.c, linked.own.b, Phi).objective))
    True
    """

    def __init__(self, master: GlobalPart, call: Call) -> None:
        self.master, self.call = master, call
        self.part = master.part()
        self._pending: list[tuple[str, tuple[Any, ...], Callable[[list[Any]], None] | None]] = []
        self._lu: tuple[Array, Any, bool] | None = None

    def _later(self, method: str, *args: Any,
               then: Callable[[list[Any]], None] | None = None) -> None:
        """Send ``method(*args)`` with the next call; ``then`` takes the parts' results."""
        self._pending.append((method, args, then))

    def _ask(self, method: str, *args: Any) -> list[Any]:
        """``method(*args)`` on every part, after the steps waiting; the parts' results."""
        ops = [*self._pending, (method, args, None)]
        self._pending = []
        replies = self.call("run", [(name, a) for name, a, _ in ops])
        for k, (_, _, then) in enumerate(ops):
            if then is not None:
                then([reply[k] for reply in replies])
        return [reply[-1] for reply in replies]

    def describe(self) -> tuple[float, float, int]:
        mine, theirs = self.part.describe(), self._ask("describe")
        return (max([mine[0], *(t[0] for t in theirs)]), max([mine[1], *(t[1] for t in theirs)]),
                mine[2] + sum(t[2] for t in theirs))

    def factor(self, scaled: bool) -> None:
        S = self.part.factor(scaled)

        def factored(shares: list[Array]) -> None:
            self._lu = schur_lu(S + np.sum(shares, axis=0), self.master.n, self.master.m, 0)

        self._later("factor", scaled, then=factored)

    def schur_solve(self, rhs: Array) -> Array:
        assert self._lu is not None
        xs: Array = scipy.linalg.lu_solve(self._lu[:2], rhs, check_finite=False)
        return xs

    def start_rhs(self) -> tuple[Array, float]:
        return _summed(self.part.start_rhs(), self._ask("start_rhs"))

    def direction_rhs(self, sigma_mu: float | None) -> tuple[Array, float]:
        return _summed(self.part.direction_rhs(sigma_mu), self._ask("direction_rhs", sigma_mu))

    def expand(self, xs: Array, residual: bool = False, add: bool = False
               ) -> tuple[float, None] | None:
        if not residual:
            self._later("expand", xs, False, add)
            self.part.expand(xs, False, add)
            return None
        theirs = self._ask("expand", xs, True, add)
        mine = self.part.expand(xs, True, add, np.sum([t[1] for t in theirs], axis=0))
        assert mine is not None
        return max([mine[0], *(t[0] for t in theirs)]), None

    def correct(self, keep: bool) -> Array:
        theirs = self._ask("correct", keep)
        rhs: Array = self.part.correct(keep) + np.sum(theirs, axis=0)
        return rhs

    def settle(self, keep: bool) -> None:
        self._later("settle", keep)
        self.part.settle(keep)

    def bounds(self) -> tuple[float, float]:
        theirs = self._ask("bounds")
        bound, dsdz = self.part.bounds()
        return min([bound, *(t[0] for t in theirs)]), dsdz + sum(t[1] for t in theirs)

    def shifts(self) -> tuple[float, float, float]:
        found = [self.part.shifts(), *self._ask("shifts")]
        return min(f[0] for f in found), min(f[1] for f in found), max(f[2] for f in found)

    def begin(self, shift_s: float | None, shift_z: float | None,
              warm: Iterate | None = None) -> None:
        if warm is not None:
            raise NotImplementedError("The interior point over row blocks has no warm start "
                                      "yet; call it without start.")
        self._later("begin", shift_s, shift_z)
        self.part.begin(shift_s, shift_z)

    def measure(self) -> Measured:
        theirs = self._ask("measure", self.part.schur_values())
        mine = self.part.measure(extra=np.sum([t.shares for t in theirs], axis=0))
        every = [mine, *theirs]
        return Measured(sum(m.pcost for m in every), sum(m.dcost for m in every),
                        max(m.dual_residual for m in every),
                        max(m.primal_residual for m in every), max(m.norm_x for m in every),
                        max(m.norm_s for m in every), max(m.norm_y for m in every),
                        sum(m.sz for m in every))

    def keep(self) -> None:
        self._later("keep")
        self.part.keep()

    def move(self, step: float) -> None:
        self._later("move", step)
        self.part.move(step)

    def finish(self, restore: bool) -> Iterate:
        """The global part's final point: x = (u, the dense variables), y = the dense rows'
        duals, s their slacks; the parts keep theirs (`Part.p`)."""
        if restore:
            self._ask("restore")
        self._pending = []
        return self.part.finish(restore)

    def schur_values(self) -> Array:
        """The Schur unknowns (u, the dense variables, the dense rows' duals) at the point."""
        return self.part.schur_values()


def _summed(mine: tuple[Array, float], theirs: list[tuple[Array, float]]
            ) -> tuple[Array, float]:
    """A reduced right-hand side summed over the parts, and its largest entry."""
    return (mine[0] + np.sum([t[0] for t in theirs], axis=0),
            max([mine[1], *(t[1] for t in theirs)]))


class LocalParts:
    """The parts of a split problem in this process: ``call`` for `Parts` (tests, and a
    reference for a cluster's parts).

    Examples
    --------
    See `Parts`.
    """

    def __init__(self, subs: Sequence[SubProblem]) -> None:
        self.parts = [BlockPart(sub) for sub in subs]

    def __call__(self, method: str, *args: Any) -> list[Any]:
        return [getattr(part, method)(*args) for part in self.parts]

