"""The conic problem a solver backend receives from the generic path.

A formulation compiles (cvxpy's ``get_problem_data``) to conic data in the layout
of a solver; `read_problem_data` turns any of cvxpy's layouts into one: Clarabel's,
with the signs its duals follow::

    minimise ½ xᵀP x + cᵀx + offset   subject to   A x + s = b,   s ∈ K

where K is the zero cone (equality rows, first), then the nonnegative orthant,
second-order cones, exponential cones (Clarabel's and SCS's (x, y, z) order),
positive semidefinite cones and power cones, and the duals z satisfy
P x + c + Aᵀz = 0. The generic path adds the link f − Φ u = 0 (`LinkedProblem`):
a backend either takes it written out (`LinkedProblem.linked`, N·Nz·K entries of
Φ in the equality rows) or, as the structured backend does, Φ and the layout of
f and u themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import cvxpy as cp
import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

__all__ = ["ConeDims", "ConicData", "LinkLayout", "LinkedProblem", "read_problem_data"]

Array = NDArray[np.float64]


@dataclass(frozen=True)
class ConeDims:
    """Rows per cone, in the order of the rows.

    Attributes
    ----------
    zero, nonneg : int
        Equality rows, then nonnegative rows.
    soc : tuple of int
        Sizes of the second-order cones.
    exp : int
        Exponential cones (three rows each).
    psd : tuple of int
        Orders of the semidefinite cones (their rows: the scaled triangle).
    power : tuple of float
        Exponents of the three-dimensional power cones.
    """

    zero: int
    nonneg: int = 0
    soc: tuple[int, ...] = ()
    exp: int = 0
    psd: tuple[int, ...] = ()
    power: tuple[float, ...] = ()

    @property
    def rows(self) -> int:
        """Rows in all."""
        return (self.zero + self.nonneg + sum(self.soc) + 3 * self.exp
                + sum(n * (n + 1) // 2 for n in self.psd) + 3 * len(self.power))

    @property
    def kinds(self) -> frozenset[str]:
        """The kinds of cone present: "zero", "nonneg", "soc", "exp", "psd", "power"."""
        present = {"zero": self.zero, "nonneg": self.nonneg, "soc": len(self.soc),
                   "exp": self.exp, "psd": len(self.psd), "power": len(self.power)}
        return frozenset(k for k, v in present.items() if v)

    @classmethod
    def from_cvxpy(cls, dims: Any, zero: int | None = None) -> ConeDims:
        """From cvxpy's ``ConeDims`` (``zero`` overrides its equality count)."""
        return cls(zero=int(dims.zero if zero is None else zero), nonneg=int(dims.nonneg),
                   soc=tuple(int(q) for q in dims.soc), exp=int(dims.exp),
                   psd=tuple(int(n) for n in dims.psd),
                   power=tuple(float(a) for a in getattr(dims, "p3d", ())))


@dataclass
class ConicData:
    """A conic problem in Clarabel's layout (module docstring).

    Attributes
    ----------
    P : scipy.sparse.csc_matrix or None
        The quadratic term, symmetric (both triangles stored), (n, n).
    c : ndarray of shape (n,)
    A : scipy.sparse.csc_matrix of shape (m, n)
    b : ndarray of shape (m,)
    cones : ConeDims
    offset : float
        The objective's constant.
    """

    P: sp.csc_matrix | None
    c: Array
    A: sp.csc_matrix
    b: Array
    cones: ConeDims
    offset: float = 0.0

    @property
    def n(self) -> int:
        return len(self.c)

    def P_upper(self) -> sp.csc_matrix:
        """P's upper triangle (Clarabel, SCS and OSQP take it), zero where there is no P."""
        if self.P is None:
            return sp.csc_matrix((self.n, self.n))
        return sp.triu(self.P, format="csc")

    def widened(self, n: int) -> ConicData:
        """The same problem with zero columns up to ``n`` (variables it does not use)."""
        extra = n - self.n
        if extra <= 0:
            return self
        return replace(self, P=None if self.P is None else _pad(self.P, n, n),
                       c=np.concatenate([self.c, np.zeros(extra)]),
                       A=_pad(self.A, self.A.shape[0], n))


def _pad(matrix: sp.spmatrix, rows: int, cols: int) -> sp.csc_matrix:
    """``matrix`` with zero rows and columns added to the given shape."""
    matrix = sp.csc_matrix(matrix)
    return sp.csc_matrix((matrix.data, matrix.indices,
                          np.concatenate([matrix.indptr, np.full(cols - matrix.shape[1],
                                                                 matrix.indptr[-1])])),
                         shape=(rows, cols))


def _symmetric(P: Any, n: int) -> sp.csc_matrix | None:
    """cvxpy's P (its upper triangle for the conic solvers) as a full symmetric matrix."""
    if P is None:
        return None
    upper = sp.triu(sp.csc_matrix(P), format="csc")
    if upper.nnz == 0:
        return None
    return (upper + sp.triu(upper, 1).T).tocsc()


def read_problem_data(layout: str, data: dict[str, Any]) -> ConicData:
    """Clarabel's layout from cvxpy's problem data for the solver ``layout``.

    ECOS's data (equalities and cones apart, each exponential cone's rows in
    the order (x, z, y)) and OSQP's (bounds l ≤ A x ≤ u) are rearranged; the
    rows' order is otherwise kept, so a backend maps its duals back by the
    same rule.

    Examples
    --------
    >>> import cvxpy as cp
    >>> x = cp.Variable(2)
    >>> problem = cp.Problem(cp.Minimize(cp.sum_squares(x) - x[0]), [x >= 0, x[0] + x[1] == 1])
    >>> d = read_problem_data(cp.CLARABEL, problem.get_problem_data(cp.CLARABEL)[0])
    >>> d.cones.zero, d.cones.nonneg, d.A.shape
    (1, 2, (3, 2))
    """
    if layout == cp.OSQP:
        A = sp.vstack([sp.csc_matrix(data["A"]), sp.csc_matrix(data["F"])], format="csc")
        n = len(data["q"])
        return ConicData(_symmetric(data.get("P"), n), np.asarray(data["q"], dtype=float), A,
                         np.concatenate([data["b"], data["G"]]).astype(float),
                         ConeDims(zero=len(data["b"]), nonneg=len(data["G"])))
    c = np.asarray(data["c"], dtype=float)
    n = len(c)
    if layout == cp.ECOS:
        A_eq = sp.csc_matrix(data["A"]) if data.get("A") is not None else sp.csc_matrix((0, n))
        b_eq = np.asarray(data["b"], dtype=float) if data.get("b") is not None else np.zeros(0)
        G = sp.csc_matrix(data["G"]) if data.get("G") is not None else sp.csc_matrix((0, n))
        h = np.asarray(data["h"], dtype=float) if data.get("h") is not None else np.zeros(0)
        cones = ConeDims.from_cvxpy(data["dims"], zero=A_eq.shape[0])
        order = ecos_exp_order(A_eq.shape[0], cones)
        A = sp.vstack([A_eq, G], format="csr")[order].tocsc()
        return ConicData(None, c, A, np.concatenate([b_eq, h])[order], cones)
    return ConicData(_symmetric(data.get("P"), n), c, sp.csc_matrix(data["A"]),
                     np.asarray(data["b"], dtype=float), ConeDims.from_cvxpy(data["dims"]))


def ecos_exp_order(n_eq: int, cones: ConeDims) -> NDArray[np.intp]:
    """The row permutation between ECOS's exponential cones (x, z, y) and (x, y, z), both ways."""
    order = np.arange(cones.rows)
    first = n_eq + cones.nonneg + sum(cones.soc)
    for k in range(cones.exp):
        order[first + 3 * k + 1], order[first + 3 * k + 2] = (first + 3 * k + 2,
                                                              first + 3 * k + 1)
    return order


@dataclass(frozen=True)
class LinkLayout:
    """Where the link's variables sit among the formulation's columns.

    Attributes
    ----------
    n : int
        Columns in all (u's included, whether the formulation uses them or not).
    off_f, off_u : int
        First column of f (N·K of them, output-major: f[i, k] at ``off_f + k·N + i``)
        and of u (Nz·K, u[a, k] at ``off_u + k·Nz + a``).
    N, Nz, K : int
        Training points, XVs and outputs.
    """

    n: int
    off_f: int
    off_u: int
    N: int
    Nz: int
    K: int = 1

    @property
    def f(self) -> slice:
        return slice(self.off_f, self.off_f + self.N * self.K)

    @property
    def u(self) -> slice:
        return slice(self.off_u, self.off_u + self.Nz * self.K)


class LinkedProblem:
    """A formulation's conic data with the link f − Φ u = 0, for one layout of cvxpy's.

    Parameters
    ----------
    own : ConicData
        The formulation's own problem, its columns widened to ``layout.n``.
    layout : LinkLayout
        Where f and u are.

    Attributes
    ----------
    Phi : ndarray of shape (N, Nz) or None
        The whitened rows of the current evaluation (`set_phi`).
    cache : dict
        What backends keep between evaluations of this problem (their structure,
        their last solution), by backend name.
    """

    def __init__(self, own: ConicData, layout: LinkLayout) -> None:
        self.own, self.layout = own, layout
        self.Phi: Array | None = None
        self.cache: dict[str, Any] = {}
        self._linked: ConicData | None = None
        self._phi_at: NDArray[np.intp] | None = None

    @property
    def link_rows(self) -> int:
        """Rows of the link, N·K: the first rows of the linked problem."""
        return self.layout.N * self.layout.K

    def set_phi(self, Phi: Array) -> None:
        """Use the whitened rows ``Phi`` (N, Nz) from now on."""
        self.Phi = Phi
        if self._linked is not None:
            assert self._phi_at is not None
            self._linked.A.data[self._phi_at] = np.tile(-Phi.ravel(order="F"), self.layout.K)

    def linked(self) -> ConicData:
        """The problem with the link written out: N·K equality rows on top of the zero cone.

        Row i + k·N is f[i, k] − Σ_a Φ[i, a] u[a, k]. The matrix is built once
        (a CSC with Φ's N·Nz·K entries explicit); `set_phi` writes new values
        into it in place.
        """
        if self._linked is None:
            A, self._phi_at = _link_pattern(self.layout, self.own.A)
            own = self.own
            self._linked = ConicData(own.P, own.c, A,
                                     np.concatenate([np.zeros(self.link_rows), own.b]),
                                     replace(own.cones, zero=own.cones.zero + self.link_rows),
                                     own.offset)
            if self.Phi is not None:
                self.set_phi(self.Phi)
        return self._linked


def _link_pattern(layout: LinkLayout, tail: sp.csc_matrix
                  ) -> tuple[sp.csc_matrix, NDArray[np.intp]]:
    """The equality matrix with the link rows on top of ``tail``, and where Φ's entries sit.

    Returns the CSC matrix (Φ's entries set to 1) and the positions in its
    ``.data`` of Φ's entries in the order of ``Φ.ravel(order="F")``, repeated
    for each output.
    """
    N, Nz, K = layout.N, layout.Nz, layout.K
    n_f = N * K
    point = np.arange(N)
    phi_rows = (np.arange(K)[:, None, None] * N + point).repeat(Nz, 1)  # (k, a, i)
    phi_cols = np.broadcast_to(layout.off_u + (np.arange(K)[:, None] * Nz
                                               + np.arange(Nz))[:, :, None], phi_rows.shape)
    tail = tail.tocoo()
    rows = np.concatenate([np.arange(n_f), phi_rows.ravel(), n_f + tail.row])
    cols = np.concatenate([layout.off_f + np.arange(n_f), phi_cols.ravel(), tail.col])
    n_phi = phi_rows.size
    values = np.concatenate([np.ones(n_f), np.ones(n_phi), tail.data])
    del phi_rows, phi_cols  # N·Nz·K each: freed before the CSC is built
    # the entries are numbered so that their place in the CSC's .data can be found
    matrix = sp.csc_matrix((np.arange(1, len(rows) + 1, dtype=float), (rows, cols)),
                           shape=(n_f + tail.shape[0], layout.n))
    matrix.sort_indices()
    order = matrix.data.astype(np.intp) - 1
    matrix.data = values[order]
    place = np.empty_like(order)
    place[order] = np.arange(len(order))
    return matrix, place[n_f:n_f + n_phi]
