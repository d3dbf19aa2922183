"""‖w‖² inside constraints, moved into the objective by an exact change of variable.

A formulation may write ‖w‖² in its constraints (the literal SVDD:
k(x_i, x_i) − 2 f_i + ‖w‖² ≤ R² + ξ_i). cvxpy then compiles ‖w‖² = ‖u‖² to an
epigraph variable t with one second-order cone ‖u‖² ≤ t, and t enters the rows.
Near the optimum that cone is active and its Nesterov-Todd scaling makes the
structured interior point's KKT systems ill-conditioned (its Schur complement
reached a condition number of 1e14 on SVDD, where it stalled), and every other
backend gets the N·Nz link written out. Where t enters the rows in proportion to
a free variable v of the formulation's own (the radius R² of SVDD), so that
A_t = κ A_v on every row outside the cone, the change of variable v' = v + κ t
takes t out of the rows::

    A_v v + A_t t = A_v v',     c_v v + c_t t = c_v v' + (c_t − κ c_v) t,

and, with c' = c_t − κ c_v > 0, the minimum over t ≥ ‖u‖² of c' t is c'‖u‖²: the
cone goes, c'‖u‖² joins the objective (½uᵀ(2c'I)u), and the problem is the
equivalent one with ‖w‖² in the objective (a quadratic program where the rest
is one). The optimal value, the duals of the remaining rows (the link's ν among
them) and so ∇W(Z) are unchanged; t = ‖u‖² and v = v' − κ t are restored from the
solution (`NormShift.restore`). Without such a v (or with c' ≤ 0, where t would
not sit on ‖u‖²), the problem is left as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from sparsify.core.conic_data import ConicData, LinkLayout

__all__ = ["NormShift", "shift_norm_epigraph"]

Array = NDArray[np.float64]


@dataclass(frozen=True)
class NormShift:
    """The change of variable `shift_norm_epigraph` made; `restore` undoes it on a solution.

    Attributes
    ----------
    t : int
        The epigraph variable's column (the problem holds it at 0 by an equality row).
    v : int or None
        The free variable's column (v' in the shifted problem), None where t was in the
        objective only.
    kappa : float
        A_t = κ A_v.
    u : slice
        u's columns.
    """

    t: int
    v: int | None
    kappa: float
    u: slice

    def restore(self, x: Array) -> Array:
        """The original problem's solution from the shifted one's: t = ‖u‖², v = v' − κ t."""
        x = np.array(x, dtype=float)
        x[self.t] = float(x[self.u] @ x[self.u])
        if self.v is not None:
            x[self.v] -= self.kappa * x[self.t]
        return x


def _epigraph(own: ConicData, layout: LinkLayout, start: int, size: int
              ) -> int | None:
    """The column t where the cone of rows start..start+size is {(t, u): t ≥ ‖u‖²}, else None.

    cvxpy writes it as s = b − A x with s₀ = b₀ − a₀ t, s₁ = b₁ − a₁ t and s_j = −c_j u_j
    (u in any order): s₀² − ‖s_{1:}‖² = γ (t − ‖u‖²) needs a₀² = a₁², b₀² = b₁²,
    γ = −2 (a₀b₀ − a₁b₁) > 0 and c_j² = γ; and s₀ ≥ 0 for t ≥ 0 needs a₀ ≤ 0 ≤ b₀.
    """
    rows = own.A[start:start + size].tocsr()
    u_cols = set(range(layout.u.start, layout.u.stop))
    touched = set(rows.indices.tolist())
    others = touched - u_cols
    if len(others) != 1 or not u_cols <= touched:
        return None
    t = others.pop()
    b = own.b[start:start + size]
    t_rows = [i for i in range(size) if t in rows.indices[rows.indptr[i]:rows.indptr[i + 1]]]
    if len(t_rows) != 2 or t_rows[0] != 0:
        return None
    head, second = rows[0].toarray().ravel(), rows[t_rows[1]].toarray().ravel()
    if np.count_nonzero(head) != 1 or np.count_nonzero(second) != 1:
        return None  # the rows holding t hold nothing else
    a0, a1, b0, b1 = head[t], second[t], b[0], b[t_rows[1]]
    gamma = -2.0 * (a0 * b0 - a1 * b1)
    scale = max(abs(a0), abs(b0), 1e-300)
    if not (abs(a0 * a0 - a1 * a1) <= 1e-12 * scale ** 2 and abs(b0 * b0 - b1 * b1) <= 1e-12
            * scale ** 2 and gamma > 0 and a0 <= 0 <= b0):
        return None
    rest = [i for i in range(size) if i not in t_rows]
    if len(rest) != len(u_cols) or np.any(b[rest] != 0):
        return None
    for i in rest:
        cols = rows.indices[rows.indptr[i]:rows.indptr[i + 1]]
        vals = rows.data[rows.indptr[i]:rows.indptr[i + 1]]
        if len(cols) != 1 or abs(vals[0] ** 2 - gamma) > 1e-12 * gamma:
            return None
    if len({int(rows.indices[rows.indptr[i]]) for i in rest}) != len(u_cols):
        return None
    return int(t)


def shift_norm_epigraph(own: ConicData, layout: LinkLayout
                        ) -> tuple[ConicData, NormShift] | None:
    """The problem with ‖u‖² ≤ t shifted into the objective (module docstring), or None.

    Only for one output (K = 1) and one epigraph cone of ‖u‖² over all of u.

    Examples
    --------
    The literal SVDD: ‖w‖² in every constraint, beside the free R².

    >>> import cvxpy as cp
    >>> from sparsify import Declaration, Formulation
    >>> from sparsify.core.conic import compile_linked
    >>> from sparsify.core.declared import declare
    >>> class LiteralSVDD(Formulation):
    ...     name = "doc_literal_svdd"
    ...     def declare(self, out):
    ...         r2, xi = cp.Variable(), cp.Variable(out.n_samples)
    ...         inside = [1 - 2 * out.f + out.norm_w2 <= r2 + xi, xi >= 0]
    ...         return Declaration(cp.Minimize(r2 + 0.5 * cp.sum(xi)), inside)
    >>> decl, f, u, K = declare(LiteralSVDD(), None, 5, 3)
    >>> problem = cp.Problem(decl.objective, decl.constraints)
    >>> compiled = compile_linked(problem, f, u, 5, 3, K, cp.CLARABEL)
    >>> compiled.problem.own.cones.soc, compiled.shift.kappa  # no cone left: A_t = −A_{R²}
    ((), -1.0)
    """
    cones = own.cones
    if layout.K != 1 or not cones.soc:
        return None
    sizes = np.asarray(cones.soc)
    starts = cones.zero + cones.nonneg + np.cumsum(sizes) - sizes
    found = [(k, int(starts[k]), t) for k in np.flatnonzero(sizes == layout.Nz + 2)
             if (t := _epigraph(own, layout, int(starts[k]), int(sizes[k]))) is not None]
    if len(found) != 1:
        return None
    k, start, t = found[0]
    size = cones.soc[k]
    keep = np.ones(own.A.shape[0], bool)
    keep[start:start + size] = False
    A = own.A.tocsc()
    if own.P is not None and sp.csc_matrix(own.P)[:, t].nnz:
        return None
    col_t = A[:, t].toarray().ravel() * keep
    rows_t = np.flatnonzero(col_t)
    v, kappa = None, 0.0
    c_shift = float(own.c[t])
    if len(rows_t):
        # the free variable: every column with an entry in t's first row, tried in turn
        candidates = A.tocsr()[rows_t[0]].indices
        for cand in candidates:
            if cand == t or layout.f.start <= cand < layout.f.stop or \
                    layout.u.start <= cand < layout.u.stop:
                continue
            col_v = A[:, cand].toarray().ravel()
            ratio = col_t[rows_t[0]] / col_v[rows_t[0]]
            if np.allclose(col_t, ratio * col_v, rtol=1e-14, atol=0.0) and not (
                    own.P is not None and sp.csc_matrix(own.P)[:, cand].nnz):
                v, kappa = int(cand), float(ratio)
                break
        if v is None:
            return None
        c_shift = float(own.c[t] - kappa * own.c[v])
    if not c_shift > 0:
        return None
    # t leaves every row (its cone's, and the others' through v'); an equality row holds it at 0
    A = A.tolil()
    A[:, t] = 0
    A = sp.csr_matrix(A)[keep]
    pin = sp.csr_matrix(([1.0], ([0], [t])), shape=(1, own.n))
    A = sp.vstack([pin, A], format="csc")
    b = np.concatenate([[0.0], own.b[keep]])
    c = own.c.copy()
    c[t] = 0.0
    n_u = layout.u.stop - layout.u.start
    quadratic = sp.csc_matrix((np.full(n_u, 2 * c_shift),
                               (np.arange(layout.u.start, layout.u.stop),
                                np.arange(layout.u.start, layout.u.stop))),
                              shape=(own.n, own.n))
    P = quadratic if own.P is None else (sp.csc_matrix(own.P) + quadratic).tocsc()
    soc = tuple(q for j, q in enumerate(cones.soc) if j != k)
    shifted = replace(own, P=P, c=c, A=A, b=b,
                      cones=replace(cones, zero=cones.zero + 1, soc=soc))
    return shifted, NormShift(t, v, kappa, layout.u)
