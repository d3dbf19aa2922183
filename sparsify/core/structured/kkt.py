"""The KKT systems of a linked problem, solved at the cost of its structure.

An interior-point iteration solves, for its search directions, ::

    [ P     Aᵀ   ] [ x ]   [ r_x ]        x = (f, u, w): the outputs, the whitened
    [ A    −D    ] [ y ] = [ r_y ]        coefficients and the formulation's own variables

where A stacks the link rows f − Φ u = 0 (Φ = K_XZ T, dense N × Nz) on the
formulation's own rows, and D is 0 on equality rows and the NT scaling W² on
cone rows. A general sparse factorisation fills in around Φ's Nz dense columns.
Here instead:

1. **f is eliminated by the link rows** (f = r_link + Φ u): the formulation's own
   rows and objective then meet u only through C_f Φ, and its own variables
   decouple from one another, point by point for a point-separable loss, edge by
   edge for a graph regulariser.
2. **A few unknowns go to a Schur complement**: u, the formulation's variables whose
   columns are dense (an intercept b, a margin ρ), its rows that are dense or meet
   no local variable, and two unknowns per large second-order cone, whose W² is β²
   times the identity plus a rank-two term (written with two extra unknowns, as
   ECOS does, so that its rows decouple).
3. **What remains is block diagonal** with small blocks (a point's or an edge's
   variables and rows, cone rows with their −W²): each block is inverted densely
   with pivoting, all blocks of one size in one batched LAPACK call. Cone rows are
   not condensed into normal equations first: there an active constraint's 1/d
   terms cancel in the Schur complement and the directions lose their accuracy
   as the iterations converge, where the KKT blocks pivot around them.

The Schur complement S (size Nz·K + a few) then needs Φᵀ H_f Φ, where
H_f = P_ff − C_fᵀ Q⁻¹ C_f is the formulation's Hessian in f with everything
else eliminated: diagonal for a point-separable loss, the graph Laplacian for
LapRLS, K × K blocks per point for K outputs. Its cost is one N × Nz by
N × Nz product per pair of outputs plus sparse products of the formulation's own
size: O(N·Nz² + nnz) per factorisation, and O(N·Nz + nnz) per solve.

A problem whose own variables stay coupled in large blocks after step 3 (a graph
over variables other than f, say) raises `StructureError`; the caller hands it to
a general conic solver.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.sparse.csgraph import connected_components

from sparsify.core.conic_data import LinkLayout
from sparsify.core.structured import _blocks
from sparsify.core.structured.cones import Cones, Scaling

__all__ = ["KKTFactor", "KKTStructure", "PhiMap", "StructureError"]

Array = NDArray[np.float64]
Index = NDArray[np.intp]

#: Largest block inverted densely: past it the blocks' n·s² flops outgrow the Schur
#: complement's, and the partition looks for more dense columns and rows.
BLOCK_LIMIT = 128
#: Second-order cones larger than this take their W² as β² I plus two unknowns.
SOC_DENSE_LIMIT = 16
#: Most Schur unknowns besides u: S costs N·Nz per unknown to build.
SCHUR_EXTRA_LIMIT = 256


class StructureError(ValueError):
    """The formulation's own variables do not split into small blocks (see the module)."""


class PhiMap:
    """Products with Φ_blk = I_K ⊗ Φ, the link's u → f map for K outputs.

    ``work`` keeps an N × Nz scratch array between factorisations (`_scratch`).
    """

    def __init__(self, Phi: Array, K: int, work: dict[str, Array] | None = None) -> None:
        self.Phi, self.K = Phi, K
        self.N, self.Nz = Phi.shape
        self.work = {} if work is None else work

    def __call__(self, u: Array) -> Array:
        """Φ_blk u for u of length Nz·K."""
        if self.K == 1:
            return self.Phi @ u
        return (self.Phi @ u.reshape(self.K, self.Nz).T).T.ravel()

    def T(self, f: Array) -> Array:
        """Φ_blkᵀ f for f of length N·K."""
        if self.K == 1:
            return f @ self.Phi
        return (f.reshape(self.K, self.N) @ self.Phi).ravel()

    def right(self, M: sp.spmatrix) -> Array:
        """M Φ_blk for a sparse M with N·K columns, dense (rows, Nz·K)."""
        M = sp.csr_matrix(M)
        out = np.zeros((M.shape[0], self.Nz * self.K))
        for k in range(self.K):
            block = M[:, k * self.N:(k + 1) * self.N]
            if block.nnz:
                out[:, k * self.Nz:(k + 1) * self.Nz] = block @ self.Phi
        return out

    def left(self, M: sp.spmatrix) -> Array:
        """Φ_blkᵀ M for a sparse M with N·K rows, dense (Nz·K, columns)."""
        return self.right(sp.csr_matrix(M).T).T

    def sandwich(self, H: sp.spmatrix) -> Array:
        """Φ_blkᵀ H Φ_blk for a symmetric sparse H of size N·K, dense (Nz·K, Nz·K).

        H's entries between the outputs of one point (the K × K block per point of a
        point-separable loss) give Φᵀ diag(h_kj) Φ for k ≤ j, mirrored: a symmetric
        rank-k update where h_kk ≥ 0, a general product otherwise. Entries between two
        points (a graph's) give Φᵀ (H_kj Φ) through a sparse product.
        """
        H = sp.coo_matrix(H)
        N, Nz, K = self.N, self.Nz, self.K
        out = np.zeros((Nz * K, Nz * K))
        point_r, point_c = H.row % N, H.col % N
        same = point_r == point_c
        h = np.zeros((K, K, N))
        np.add.at(h, (H.row[same] // N, H.col[same] // N, point_r[same]), H.data[same])
        for k in range(K):
            for j in range(k, K):
                hkj = h[k, j]
                if not hkj.any():
                    continue
                if k == j and (hkj >= 0).all():
                    # Φᵀ diag(h) Φ = (√h Φ)ᵀ (√h Φ): numpy calls a symmetric rank-k
                    # update for Rᵀ R, half a general product's flops
                    root = _scratch(self.work, "root", self.Phi.shape)
                    np.multiply(np.sqrt(hkj)[:, None], self.Phi, out=root)
                    block = root.T @ root
                else:
                    scaled = _scratch(self.work, "root", self.Phi.shape)
                    np.multiply(hkj[:, None], self.Phi, out=scaled)
                    block = self.Phi.T @ scaled
                out[k * Nz:(k + 1) * Nz, j * Nz:(j + 1) * Nz] = block
                if j != k:
                    out[j * Nz:(j + 1) * Nz, k * Nz:(k + 1) * Nz] = block.T
        if not same.all():
            rest = sp.csr_matrix((H.data[~same], (H.row[~same], H.col[~same])), shape=H.shape)
            for k in range(K):
                rows = rest[k * N:(k + 1) * N]
                for j in range(K):
                    block = rows[:, j * N:(j + 1) * N]
                    if block.nnz:
                        out[k * Nz:(k + 1) * Nz, j * Nz:(j + 1) * Nz] += \
                            self.Phi.T @ (block @ self.Phi)
        return out


class KKTStructure:
    """The partition of a linked problem's KKT system, fixed for the problem (not for Z or W).

    Parameters
    ----------
    P : sparse matrix or None
        The objective's quadratic term, symmetric, (n, n).
    A : sparse matrix
        The formulation's own rows (m, n): ``zero`` equality rows, then the cone rows.
    zero : int
        Equality rows among them (first).
    cones : Cones
        The cone rows (the nonnegative orthant, then second-order cones).
    layout : LinkLayout
        Where f and u are.
    partition : (ndarray, ndarray), optional
        The Schur complement's own unknowns, given rather than chosen: the columns
        besides u (sorted) and the rows (sorted, none of them a cone row). A part
        of a problem split over row blocks takes the whole problem's
        (`sparsify.core.structured.parts`), so that the parts' Schur complements add up.
    plan : bool, default=True
        Without it only the partition is found (what a split needs), not the index
        maps and buffers a factorisation needs.
    dense : ndarray, optional
        Columns the Schur complement takes whatever their number of entries (a
        split's variables that meet points of two row blocks).

    Raises
    ------
    StructureError
        Where the formulation's own variables do not split into blocks of at most
        `BLOCK_LIMIT` unknowns with at most `SCHUR_EXTRA_LIMIT` unknowns besides u
        in the Schur complement.
    """

    def __init__(self, P: sp.spmatrix | None, A: sp.spmatrix, zero: int, cones: Cones,
                 layout: LinkLayout, partition: tuple[Index, Index] | None = None,
                 plan: bool = True, dense: Index | None = None) -> None:
        m, n = A.shape
        if n != layout.n or m != zero + cones.size:
            raise ValueError(f"The conic data ({m} rows, {n} columns) do not match the layout "
                             f"({layout.n} columns) and cones ({zero} + {cones.size} rows).")
        self.layout, self.cones, self.zero, self.m, self.n = layout, cones, zero, m, n
        self.P = sp.csr_matrix((n, n)) if P is None else sp.csr_matrix(P)
        self.A = sp.csr_matrix(A)
        self.AT = self.A.T.tocsr()
        self.F = np.arange(layout.f.start, layout.f.stop)
        self.U = np.arange(layout.u.start, layout.u.stop)
        self.cone_of_row = np.full(m, -1)  # second-order cone of each row, −1 for others
        for which, (_, rows) in zip(cones.group_cones, cones.groups, strict=True):
            self.cone_of_row[zero + rows] = which[:, None]
        own = np.ones(n, bool)
        own[self.F] = own[self.U] = False
        if partition is None:
            self._partition(np.flatnonzero(own), dense)
        else:
            self._given(np.flatnonzero(own), *partition)
        if plan:
            self._index()
            self._plan()

    # -- partition --------------------------------------------------------------------------

    def _partition(self, own: Index, dense: Index | None = None) -> None:
        """Choose the Schur unknowns: the densest columns and rows first, until blocks are small."""
        A_own = sp.csc_matrix(self.A[:, own])
        P_off = sp.csc_matrix(self.P[own][:, own])
        P_off.setdiag(0)
        P_off.eliminate_zeros()
        col_degree = np.diff(A_own.indptr) + np.diff(P_off.indptr)
        eq = np.arange(self.m) < self.zero
        soc_sizes = np.asarray(self.cones.soc, dtype=int)
        threshold = 32
        while True:
            glob = col_degree > threshold
            if dense is not None:
                glob |= np.isin(own, dense)
            forced = np.zeros(self.m, bool)
            while True:  # until no variable is lonely and no block is short of variables
                local = own[~glob]
                A_loc = sp.csr_matrix(self.A[:, local])
                row_degree = np.diff(A_loc.indptr)
                dense = row_degree > threshold
                schur_row = dense | (eq & (row_degree == 0)) | forced
                expanded = soc_sizes > SOC_DENSE_LIMIT
                if len(soc_sizes):
                    expanded[self.cone_of_row[dense & (self.cone_of_row >= 0)]] = True
                # a local variable met by no block row and no quadratic term would be a
                # 1 × 1 zero block: the Schur complement takes it
                lonely = (np.diff(sp.csc_matrix(A_loc[~schur_row]).indptr) == 0) & \
                    (np.diff(sp.csc_matrix(self.P[local][:, local]).indptr) == 0)
                if lonely.any():
                    glob[np.flatnonzero(~glob)[lonely]] = True
                    continue
                labels, sizes = self._components(local, A_loc, schur_row, expanded)
                # a block with more equality rows than variables is singular whatever the
                # values (KFD's class sums at small N): its equality rows go to the Schur
                # complement
                rows = np.flatnonzero(~schur_row)
                row_label = labels[len(local):]
                n_var = np.bincount(labels[:len(local)], minlength=len(sizes))
                n_eq = np.bincount(row_label[eq[rows]], minlength=len(sizes))
                short = n_eq > n_var
                if not short.any():
                    break
                forced[rows[eq[rows] & short[row_label]]] = True
            extra = int(glob.sum() + schur_row.sum() + 2 * expanded.sum())
            if sizes.max(initial=0) <= BLOCK_LIMIT and extra <= SCHUR_EXTRA_LIMIT:
                break
            if threshold <= 2:
                raise StructureError(
                    f"the formulation's own variables stay coupled in blocks of up to "
                    f"{sizes.max(initial=0)} unknowns with {extra} unknowns in the Schur "
                    f"complement (limits {BLOCK_LIMIT} and {SCHUR_EXTRA_LIMIT})")
            threshold //= 2
        self.local, self.glob = local, own[glob]
        self.block_rows = np.flatnonzero(~schur_row)
        self.schur_rows = np.flatnonzero(schur_row)
        self.expanded = np.flatnonzero(expanded)
        self._labels, self._sizes = labels, sizes

    def _given(self, own: Index, glob: Index, schur_rows: Index) -> None:
        """The partition ``(glob, schur_rows)`` as given; only the blocks are found."""
        is_glob = np.isin(own, glob)
        local = own[~is_glob]
        schur_row = np.zeros(self.m, bool)
        schur_row[schur_rows] = True
        expanded = np.asarray(self.cones.soc, dtype=int) > SOC_DENSE_LIMIT
        if expanded.any() or (schur_row[self.zero:]).any():
            raise StructureError("a given partition takes no cone row into the Schur "
                                 "complement and no second-order cone of over "
                                 f"{SOC_DENSE_LIMIT} rows")
        labels, sizes = self._components(local, sp.csr_matrix(self.A[:, local]), schur_row,
                                         expanded)
        if sizes.max(initial=0) > BLOCK_LIMIT:
            raise StructureError(f"the formulation's own variables stay coupled in blocks of "
                                 f"up to {sizes.max()} unknowns (limit {BLOCK_LIMIT})")
        self.local, self.glob = local, own[is_glob]
        self.block_rows = np.flatnonzero(~schur_row)
        self.schur_rows = np.flatnonzero(schur_row)
        self.expanded = np.flatnonzero(expanded)
        self._labels, self._sizes = labels, sizes

    def _components(self, local: Index, A_loc: sp.csr_matrix, schur_row: NDArray[np.bool_],
                    expanded: NDArray[np.bool_]) -> tuple[Index, Index]:
        """Connected components of the blocks' unknowns: local columns, then block rows.

        Joined by the rows' entries, the quadratic term, and a small second-order
        cone's rows (its W² block is dense).
        """
        nl = len(local)
        rows = np.flatnonzero(~schur_row)
        coupling = sp.coo_matrix(A_loc[rows])
        P_loc = sp.coo_matrix(self.P[local][:, local])
        cone = self.cone_of_row[rows]
        small = (cone >= 0) & ~np.append(expanded, False)[cone]
        pos = np.flatnonzero(small)
        same = cone[pos[1:]] == cone[pos[:-1]]  # consecutive rows of one small cone
        size = nl + len(rows)
        graph = sp.coo_matrix(
            (np.ones(coupling.nnz + P_loc.nnz + int(same.sum())),
             (np.concatenate([coupling.row + nl, P_loc.row, nl + pos[1:][same]]),
              np.concatenate([coupling.col, P_loc.col, nl + pos[:-1][same]]))),
            shape=(size, size))
        _, labels = connected_components(graph, directed=False)
        return labels, np.bincount(labels)

    # -- static index maps ------------------------------------------------------------------

    def _index(self) -> None:
        """Blocks by size, where every entry of the block part goes, and the static couplings."""
        labels, sizes = self._labels, self._sizes
        nl = len(self.local)
        self.n_q = len(labels)
        order = np.argsort(labels, kind="stable")  # unknowns grouped by component
        comp_size = sizes[labels[order]]
        # (size, offset in the buffer, nodes (count, s)); each block symmetric, packed: its
        # lower triangle row by row, s (s + 1) / 2 entries (`_blocks`)
        self.groups: list[tuple[int, int, Index]] = []
        base = np.zeros(self.n_q, dtype=np.int64)
        pos = np.zeros(self.n_q, dtype=np.int64)
        offset = start = 0
        self._starts: list[int] = []  # each size's first place in block order
        for s in np.unique(sizes):
            nodes = order[comp_size == s].reshape(-1, s)  # components of size s
            count = len(nodes)
            self.groups.append((int(s), offset, nodes))
            self._starts.append(start)
            base[nodes] = (offset + np.arange(count) * _packed(s))[:, None]
            pos[nodes] = np.arange(s)
            offset += count * _packed(s)
            start += count * s
        self._base, self._pos, self._flat_size = base, pos, offset
        #: entries of all blocks together: the memory of one copy of them
        self.block_entries = offset
        #: the blocks' unknowns in block order (grouped by size, then component): Q⁻¹'s rows
        self._block_order = np.concatenate([nodes.ravel() for _, _, nodes in self.groups]) \
            if self.groups else np.zeros(0, int)
        block_pos = np.empty(self.n_q, dtype=np.intp)
        block_pos[self._block_order] = np.arange(self.n_q)
        self._block_pos = block_pos
        # where each block unknown's right-hand side sits in [r_x; r_rows] (and its solution
        # in [x; y]): a local column, or n + a block row
        node_src = np.concatenate([self.local, self.n + self.block_rows])
        self._q_src = node_src[self._block_order]
        # the static entries: P among local columns, the block rows' local entries
        P, A, loc, blk, sch = self.P, self.A, self.local, self.block_rows, self.schur_rows
        P_loc = sp.coo_matrix(P[loc][:, loc])
        A_blk = sp.coo_matrix(A[blk][:, loc])
        # the blocks' constant part (P's lower triangle and the rows' entries, each once:
        # the buffer holds one triangle): their places and values, merged where two fall
        # on one place (a block's zeros are not stored)
        lower = self._pos[P_loc.row] >= self._pos[P_loc.col]
        dest = self._dest(np.concatenate([P_loc.row[lower], A_blk.row + nl]),
                          np.concatenate([P_loc.col[lower], A_blk.col]))
        self._static_dest, merged = np.unique(dest, return_inverse=True)
        self._static_vals = np.bincount(merged, weights=np.concatenate(
            [P_loc.data[lower], A_blk.data]), minlength=len(self._static_dest))
        # the block rows' −D: a diagonal (orthant, expanded cones) or a small cone's block
        q_of_row = np.full(self.m, -1)
        q_of_row[blk] = nl + np.arange(len(blk))
        cone_row = blk - self.zero
        is_exp = np.zeros(len(self.cones.soc) + 1, bool)
        is_exp[self.expanded] = True
        diag = (cone_row >= 0) & ((cone_row < self.cones.nonneg)
                                  | is_exp[self.cone_of_row[blk]])
        self._diag_q = nl + np.flatnonzero(diag)
        self._diag_cone_row = cone_row[diag]
        self._diag_dest = self._dest(self._diag_q, self._diag_q)
        # per cone size: which of its cones are small, which entries of their q × q blocks
        # are in the buffer's triangle, and where
        self._small = []
        for which, (q, rows) in zip(self.cones.group_cones, self.cones.groups, strict=True):
            keep = ~is_exp[which]
            qrows = q_of_row[self.zero + rows[keep]]
            one, other = np.repeat(qrows, q, axis=1).ravel(), np.tile(qrows, (1, q)).ravel()
            sel = np.flatnonzero(self._pos[one] >= self._pos[other])
            self._small.append((keep, sel, self._dest(one[sel], other[sel])))
        # couplings of the blocks (rows: local columns, then block rows) to f, u and the
        # Schur unknowns [glob, Schur rows, p and q of each expanded cone]
        F, U, glob = self.F, self.U, self.glob

        def q_rows(cols: Index) -> sp.csr_matrix:
            return sp.vstack([P[loc][:, cols], A[blk][:, cols]],
                             format="csr")[self._block_order]

        self.C_f, self.C_u = q_rows(F), q_rows(U)
        self.n_g, self.n_r, self.n_x = len(glob), len(sch), 2 * len(self.expanded)
        self.n_e = self.n_g + self.n_r + self.n_x
        self._E_static = sp.hstack([
            q_rows(glob),
            sp.vstack([A[sch][:, loc].T, sp.csr_matrix((len(blk), self.n_r))],
                      format="csr")[self._block_order],
            sp.csr_matrix((self.n_q, self.n_x))], format="csr")
        self.D_fE = sp.hstack([P[F][:, glob], A[sch][:, F].T,
                               sp.csr_matrix((len(F), self.n_x))], format="csr")
        self.D_uE = sp.hstack([P[U][:, glob], A[sch][:, U].T,
                               sp.csr_matrix((len(U), self.n_x))], format="csr")
        g, r = self.n_g, self.n_r
        C_EE = np.zeros((self.n_e, self.n_e))
        C_EE[:g, :g] = P[glob][:, glob].toarray()
        C_EE[g:g + r, :g] = A[sch][:, glob].toarray()
        C_EE[:g, g:g + r] = C_EE[g:g + r, :g].T
        C_EE[g + r:, g + r:] = np.diag(np.tile([1.0, -1.0], len(self.expanded)))
        self._C_EE = C_EE
        self.P_FF, self.P_UF = P[F][:, F].tocsr(), P[U][:, F].tocsr()
        self.P_UU = P[U][:, U].toarray()
        # stacked for the solves: one sparse product where there would be several; r_link's
        # share kept to the rows it reaches (a row or two per point of the n + m)
        to_f0 = sp.vstack([P[:, F], A[:, F]], format="csr")
        self._f0_rows = np.flatnonzero(np.diff(to_f0.indptr))
        self._to_f0 = to_f0[self._f0_rows]
        self._from_f = sp.hstack([P[F], self.AT[F]], format="csr")  # the f rows, for ν
        cone_row = sch - self.zero
        self._sch_nonneg = np.flatnonzero((cone_row >= 0) & (cone_row < self.cones.nonneg))
        self._sch_nonneg_row = cone_row[self._sch_nonneg]
        # the expanded cones' rows: in blocks (their place) or among the Schur rows
        s_of_row = np.full(self.m, -1)
        s_of_row[sch] = np.arange(self.n_r)
        self._expanded_rows = []
        for k, c in enumerate(self.expanded):
            rows = self.zero + self.cones.starts[c] + np.arange(self.cones.soc[c])
            q = q_of_row[rows]
            self._expanded_rows.append((k, np.where(q >= 0, block_pos[np.maximum(q, 0)], -1),
                                        s_of_row[rows]))

    def _plan(self) -> None:
        """B = [C_f, C_u, E] (block order × (f, u, Schur)), its transpose, and Bᵀ Q⁻¹ B's plan.

        Q⁻¹ is block diagonal, so (Bᵀ Q⁻¹ B)[i, j] sums B[r, i] Q⁻¹[r, s] B[s, j] over the
        pairs of B's entries (r, i), (s, j) in one block: those pairs, the place of Q⁻¹[r, s]
        in the flat buffer and of (i, j) in the product are fixed, so each factorisation
        is two gathers and a sum (the expansions' entries, whose values change, are
        placeholders in B's pattern).
        """
        exp_rows, exp_cols = [], []
        p0 = len(self.F) + len(self.U) + self.n_g + self.n_r
        for k, qrows, _ in self._expanded_rows:
            inq = qrows[qrows >= 0]
            for col in (p0 + 2 * k, p0 + 2 * k + 1):
                exp_rows.append(inq)
                exp_cols.append(np.full(len(inq), col))
        static = sp.coo_matrix(sp.hstack([self.C_f, self.C_u, self._E_static], format="csr"))
        rows = np.concatenate([static.row, *exp_rows]).astype(np.int64)
        cols = np.concatenate([static.col, *exp_cols]).astype(np.int64)
        n_b = len(self.F) + len(self.U) + self.n_e
        B, place = _pattern(rows, cols, (self.n_q, n_b))
        values = np.zeros(len(rows))
        values[:static.nnz] = static.data
        B.data[place] = values
        self._B = B
        self._B_exp = place[static.nnz:]  # the expansions' entries, in the order appended
        BT, place_t = _pattern(cols, rows, (n_b, self.n_q))
        self._BT = BT
        self._BT_from_B = np.empty(len(rows), dtype=np.intp)  # BT.data = B.data[...]
        self._BT_from_B[place_t] = place
        BT.data = B.data[self._BT_from_B]
        # the pairs of B's entries within one block
        entry_row = np.repeat(np.arange(self.n_q), np.diff(B.indptr))
        block_id = np.empty(self.n_q, dtype=np.int64)
        block_first = np.empty(self.n_q, dtype=np.int64)
        block_base = np.empty(self.n_q, dtype=np.int64)
        count_before = 0
        for (s, offset, nodes), start in zip(self.groups, self._starts, strict=True):
            count = len(nodes)
            at = slice(start, start + count * s)
            comp = np.repeat(np.arange(count), s)
            block_id[at] = count_before + comp
            block_first[at] = start + comp * s
            block_base[at] = offset + comp * _packed(s)
            count_before += count
        entry_block = block_id[entry_row]  # B's entries are in row order: blocks ascend
        per_block = np.bincount(entry_block, minlength=count_before)
        first_entry = np.concatenate([[0], np.cumsum(per_block)[:-1]])
        reps = per_block[entry_block]
        p1 = np.repeat(np.arange(B.nnz), reps)
        within = np.arange(len(p1)) - np.repeat(np.cumsum(reps) - reps, reps)
        p2 = first_entry[entry_block[p1]] + within
        r1, r2 = entry_row[p1], entry_row[p2]
        hi = np.maximum(r1, r2) - block_first[r1]  # positions in the block, packed
        lo = np.minimum(r1, r2) - block_first[r1]
        self._pair_flat = block_base[r1] + hi * (hi + 1) // 2 + lo
        key = B.indices[p1].astype(np.int64) * n_b + B.indices[p2]
        unique, self._pair_M = np.unique(key, return_inverse=True)
        self._pair_p1, self._pair_p2 = p1, p2
        self._pair_BB = B.data[p1] * B.data[p2]  # fixed unless there are expansions
        self._M_indices = (unique % n_b).astype(np.int64)
        self._M_indptr = np.concatenate([[0], np.cumsum(np.bincount(unique // n_b,
                                                                    minlength=n_b))])
        self._n_b = n_b
        self._flat = np.empty(self._flat_size)  # the factorisation's buffer, reused
        self._work: dict[str, Array] = {}  # the solves' and PhiMap's scratch (`_scratch`)
        # the per-unknown maps served the planning only: N-sized arrays, freed
        del self._base, self._pos, self._block_pos

    def _dest(self, rows: Index, cols: Index) -> NDArray[np.int64]:
        """Places in the block buffer of the block part's entries (rows, cols), one block each.

        An entry above the diagonal goes where its mirror does: the buffer holds each
        block's lower triangle.
        """
        hi = np.maximum(self._pos[rows], self._pos[cols])
        dest: NDArray[np.int64] = (self._base[rows] + hi * (hi + 1) // 2
                                   + np.minimum(self._pos[rows], self._pos[cols]))
        return dest

    # -- factorisation ----------------------------------------------------------------------

    def factor(self, Phi: Array, scaling: Scaling | None, decompose: bool = True) -> KKTFactor:
        """Factor the KKT matrix at whitened rows ``Phi`` and NT scaling (None: W = I);
        without ``decompose``, only its Schur complement's share (`KKTFactor`)."""
        return KKTFactor(self, PhiMap(Phi, self.layout.K, self._work), scaling, decompose)


class KKTFactor:
    """One factorisation of the KKT matrix (`KKTStructure.factor`); `solve` uses it.

    Its blocks live in a buffer of the structure's, so a factorisation is valid until
    the structure's next one (an interior point needs only the latest). Without
    ``decompose`` the Schur complement ``S`` is only formed, not factored: a part
    of a problem split over row blocks hands its share of S, and of each solve's
    right-hand side (`reduce`), to the driver, which solves with the sum and
    returns the Schur unknowns to each part (`expand`).
    """

    flat: Array

    def __init__(self, st: KKTStructure, phi: PhiMap, scaling: Scaling | None,
                 decompose: bool = True) -> None:
        self.st, self.phi, self.scaling = st, phi, scaling
        cones = st.cones
        # the diagonal part of W² per cone row (orthant: w²; expanded cones: β²)
        d = np.ones(cones.size)
        if scaling is not None:
            d[:cones.nonneg] = scaling.w ** 2
        low_rank = self._low_rank(scaling)
        for k, (beta, _, _) in low_rank.items():
            c = st.expanded[k]
            d[cones.starts[c]:cones.starts[c] + cones.soc[c]] = beta * beta
        self._invert(self._assemble(d, scaling, st._flat),
                     lambda: self._assemble(d, scaling, np.empty(st._flat_size)))
        # the expansions' couplings: to block rows (in B) and to Schur rows (in C_EE)
        C_EE = st._C_EE.copy()
        g, r = st.n_g, st.n_r
        sn = g + st._sch_nonneg
        C_EE[sn, sn] -= d[st._sch_nonneg_row]
        B, BT = st._B, st._BT
        if len(st._B_exp):
            exp_vals = []
            for k, qrows, srows in st._expanded_rows:
                beta, a, c = low_rank[k]
                p_col, q_col = g + r + 2 * k, g + r + 2 * k + 1
                inq, ins = qrows >= 0, srows >= 0
                exp_vals += [-beta * a[inq], beta * c[inq]]
                s_idx = g + srows[ins]
                C_EE[s_idx, s_idx] -= beta * beta
                C_EE[s_idx, p_col] = C_EE[p_col, s_idx] = -beta * a[ins]
                C_EE[s_idx, q_col] = C_EE[q_col, s_idx] = beta * c[ins]
            B = B.copy()
            B.data[st._B_exp] = np.concatenate(exp_vals)
            BT = BT.copy()
            BT.data = B.data[st._BT_from_B]
        self._B, self._BT = B, BT
        # the Schur complement: every product with Q⁻¹ in one, M = Bᵀ Q⁻¹ B (`KKTStructure._plan`)
        n_f, n_u = len(st.F), len(st.U)
        values = self.flat[st._pair_flat]
        values *= st._pair_BB if not len(st._B_exp) else B.data[st._pair_p1] * B.data[st._pair_p2]
        M = sp.csr_matrix((np.bincount(st._pair_M, weights=values,
                                       minlength=len(st._M_indices)),
                           st._M_indices, st._M_indptr), shape=(st._n_b, st._n_b))
        f, u, e = slice(0, n_f), slice(n_f, n_f + n_u), slice(n_f + n_u, None)
        M_f = M[f]
        H_f = st.P_FF - M_f[:, f]
        JPhi = phi.right(st.P_UF - M[u][:, f])
        S = np.empty((n_u + st.n_e, n_u + st.n_e))
        S[:n_u, :n_u] = phi.sandwich(H_f) + JPhi + JPhi.T + st.P_UU - M[u][:, u].toarray()
        S_ue = phi.left(st.D_fE - M_f[:, e]) + (st.D_uE - M[u][:, e]).toarray()
        S[:n_u, n_u:] = S_ue
        S[n_u:, :n_u] = S_ue.T
        S[n_u:, n_u:] = C_EE - M[e][:, e].toarray()
        self.S = S
        if decompose:
            self.lu = schur_lu(S, n_u + st.n_g, st.n_r, st.n_x)
            self.regularised |= self.lu[2]

    def _assemble(self, d: Array, scaling: Scaling | None, flat: Array) -> Array:
        """The blocks, one after another in the buffer ``flat``: P, the rows' entries, −D."""
        st = self.st
        flat.fill(0.0)
        flat[st._static_dest] = st._static_vals
        flat[st._diag_dest] -= d[st._diag_cone_row]
        blocks = ([block for _, block in scaling.soc_blocks()] if scaling is not None
                  else [np.broadcast_to(np.eye(q), (len(rows), q, q))
                        for q, rows in st.cones.groups])
        for (keep, sel, dest), block in zip(st._small, blocks, strict=True):
            if len(dest):
                flat[dest] -= block[keep].ravel()[sel]
        return flat

    def _low_rank(self, scaling: Scaling | None) -> dict[int, tuple[float, Array, Array]]:
        """(β, a, c) with W² = β²(I + a aᵀ − c cᵀ) for each expanded cone, by expansion index."""
        st = self.st
        if not len(st.expanded):
            return {}
        where = {int(cone): k for k, cone in enumerate(st.expanded)}
        if scaling is None:  # W = I
            return {k: (1.0, np.zeros(st.cones.soc[c]), np.zeros(st.cones.soc[c]))
                    for c, k in where.items()}
        out = {}
        for which, (_, beta, a, c) in zip(st.cones.group_cones, scaling.soc_low_rank(),
                                          strict=True):
            for j, cone in enumerate(which):
                if int(cone) in where:
                    out[where[int(cone)]] = (float(beta[j]), a[j], c[j])
        return out

    def _invert(self, flat: Array, again: Callable[[], Array]) -> None:
        """Invert every block in place (C, batched by size); ``again`` rebuilds the buffer,
        for blocks found singular."""
        st = self.st
        self.regularised = False
        nl = len(st.local)
        for s, offset, nodes in st.groups:
            count = len(nodes)
            blocks = flat[offset:offset + count * _packed(s)]
            singular = np.zeros(count, bool)
            if _blocks.invert(blocks, count, s, singular):
                # a singular block (dependent rows): a small primal-dual regularisation,
                # which the caller's iterative refinement against the true matrix undoes
                self.regularised = True
                i, j = np.tril_indices(s)
                packed = again()[offset:offset + count * _packed(s)].reshape(count, -1)
                bad = np.zeros((int(singular.sum()), s, s))
                bad[:, i, j] = bad[:, j, i] = packed[singular]
                sign = np.where(nodes[singular] < nl, 1.0, -1.0)
                scale = max(float(np.abs(bad).max(initial=0.0)), 1.0) * 1e-10
                fixed = np.linalg.inv(bad + scale * sign[:, :, None] * np.eye(s))
                blocks.reshape(count, -1)[singular] = fixed[:, i, j]
        self.flat = flat

    def _apply_inverse(self, v: Array, out: Array) -> Array:
        """Q⁻¹ v into ``out``, for v in block order: the blocks' inverses, size by size."""
        st = self.st
        for (s, offset, nodes), start in zip(st.groups, st._starts, strict=True):
            count = len(nodes)
            _blocks.apply(self.flat[offset:offset + count * _packed(s)], count, s,
                          v[start:start + count * s], out[start:start + count * s])
        return out

    # -- solves -----------------------------------------------------------------------------

    def solve(self, r_x: Array, r_link: Array, r_rows: Array) -> tuple[Array, Array, Array]:
        """Solve the KKT system for right-hand sides (x, link rows, own rows): (x, ν, y)."""
        rhs_S = self.reduce(r_x, r_link, r_rows)
        xs = scipy.linalg.lu_solve(self.lu[:2], rhs_S, check_finite=False)
        return self.expand(xs, r_x, r_link)

    def reduce(self, r_x: Array, r_link: Array, r_rows: Array) -> Array:
        """The Schur complement's right-hand side for the KKT right-hand side (x, link, rows).

        It keeps the blocks' part of the solve in the structure's scratch for `expand`.
        """
        st, phi = self.st, self.phi
        F, U, n = st.F, st.U, st.n
        f0 = r_link
        shifted, q_in, t = (_scratch(st._work, key, size) for key, size in (
            ("shifted", n + st.m), ("q_in", st.n_q), ("t", st.n_q)))
        shifted[:n], shifted[n:] = r_x, r_rows
        shifted[st._f0_rows] -= st._to_f0 @ f0
        n_f, n_u = len(F), len(U)
        np.take(shifted, st._q_src, out=q_in, mode="clip")  # "raise" would buffer
        self._apply_inverse(q_in, t)
        g = self._BT @ t
        rhs_S = np.concatenate([shifted[U] + phi.T(shifted[F] - g[:n_f]) - g[n_f:n_f + n_u],
                                shifted[st.glob], shifted[n + st.schur_rows],
                                np.zeros(st.n_x)])
        rhs_S[n_u:] -= g[n_f + n_u:]
        return rhs_S

    def expand(self, xs: Array, r_x: Array, r_link: Array) -> tuple[Array, Array, Array]:
        """The KKT solution (x, ν, y) from the Schur unknowns ``xs``, after `reduce` on the
        same right-hand side (of which it reads r_x and r_link again)."""
        st, phi = self.st, self.phi
        F, U, n = st.F, st.U, st.n
        f0 = r_link
        n_u = len(U)
        t, q_out = st._work["t"], _scratch(st._work, "q_out", st.n_q)
        xu = xs[:n_u]
        phi_u = phi(xu)
        xy = np.empty(n + st.m)  # [x; y]
        t -= self._apply_inverse(self._B @ np.concatenate([phi_u, xs]), q_out)
        xy[st._q_src] = t
        xy[U] = xu
        xy[st.glob] = xs[n_u:n_u + st.n_g]
        xy[F] = f0 + phi_u
        xy[n + st.schur_rows] = xs[n_u + st.n_g:n_u + st.n_g + st.n_r]
        nu = r_x[F] - st._from_f @ xy
        return xy[:n], nu, xy[n:]

    def matvec(self, x: Array, nu: Array, y: Array) -> tuple[Array, Array, Array]:
        """The KKT matrix times (x, ν, y), the unregularised one: for iterative refinement."""
        st, phi = self.st, self.phi
        out_x = st.P @ x + st.AT @ y
        out_x[st.F] += nu
        out_x[st.U] -= phi.T(nu)
        out_link = x[st.F] - phi(x[st.U])
        out_rows = st.A @ x
        z = y[st.zero:]
        out_rows[st.zero:] -= z if self.scaling is None else self.scaling.squared(z)
        return out_x, out_link, out_rows


def schur_lu(S: Array, n_primal: int, n_rows: int, n_expansion: int
             ) -> tuple[Array, NDArray[np.int32], bool]:
    """LU of the Schur complement S (unknowns: ``n_primal`` primal, ``n_rows`` rows, then
    ``n_expansion`` expansion unknowns), and whether it had to be regularised.

    An exactly singular S (a variable nothing bounds, dependent rows) gets the same
    small primal-dual regularisation as a singular block's; the caller's iterative
    refinement against the true matrix undoes it.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("error", scipy.linalg.LinAlgWarning)
        try:
            lu, piv = scipy.linalg.lu_factor(S, check_finite=False)
            return lu, piv, False
        except scipy.linalg.LinAlgWarning:
            sign = np.concatenate([np.ones(n_primal), -np.ones(n_rows),
                                   np.tile([1.0, -1.0], n_expansion // 2)])
            scale = max(float(np.abs(S).max()), 1.0) * 1e-10
            warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
            lu, piv = scipy.linalg.lu_factor(S + np.diag(scale * sign), check_finite=False)
            return lu, piv, True


def _scratch(work: dict[str, Array], key: str, shape: int | tuple[int, ...]) -> Array:
    """The float64 scratch array ``work[key]`` of ``shape``, made on first use.

    Kept between factorisations and solves: a fresh array of 10⁷ entries costs more in
    first touches of its pages than the arithmetic done in it.
    """
    shape = (shape,) if isinstance(shape, int) else shape
    if key not in work or work[key].shape != shape:
        work[key] = np.empty(shape)
    return work[key]


def _packed(s: int) -> int:
    """Entries of a packed symmetric s × s block (its lower triangle)."""
    return s * (s + 1) // 2


def _pattern(rows: NDArray[np.int64], cols: NDArray[np.int64], shape: tuple[int, int]
             ) -> tuple[sp.csr_matrix, NDArray[np.intp]]:
    """A CSR matrix with an explicit entry at each (row, col) and where each went in ``.data``.

    The entries are distinct; their values are left to the caller.
    """
    matrix = sp.csr_matrix((np.arange(1, len(rows) + 1, dtype=float), (rows, cols)),
                           shape=shape)
    matrix.sort_indices()
    order = matrix.data.astype(np.intp) - 1
    place = np.empty_like(order)
    place[order] = np.arange(len(order))
    matrix.data = np.zeros(len(order))
    return matrix, place
