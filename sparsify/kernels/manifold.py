"""Manifold (LapSVM-deformed) kernels and the kNN-graph Laplacian they are built on.

Sindhwani, Niyogi & Belkin ("Beyond the point cloud", ICML 2005) deform a base
kernel k with the graph Laplacian L of the data so that an ordinary SVM in the
deformed RKHS is LapSVM::

    k̃(x, z) = k(x, z) − k_xᵀ (I + M K)⁻¹ M k_z,     M = (γ_I / γ_A) L^p

where ``K = k(X_g, X_g)`` and ``k_x = k(X_g, x)`` on the graph points X_g (all
labeled and unlabeled training points). The paper "Lp-norm constrained multiple
kernel semi-supervised SVM" (Lp-MKL-S3VM) puts three such kernels beside three
base kernels in its Lp-norm MKL combination. The deformed kernel is
positive definite (it reproduces the norm ‖f‖² + f_gᵀ M f_g) and defined for
any x and z, so it is an ordinary `Kernel` with exact vector-Jacobian products:
Z enters only through ``k(x, z)`` and ``k(X_g, z)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from sparsify.kernels import Kernel, resolve_gamma

__all__ = ["ManifoldKernel", "knn_graph", "knn_laplacian"]

Array = NDArray[np.float64]


def knn_graph(X: ArrayLike, n_neighbors: int = 5, gamma: float | None = None) -> sp.csr_matrix:
    """Symmetric kNN graph with Gaussian edge weights ``exp(−gamma ‖x_i − x_j‖²)``.

    An edge joins i and j when either is among the other's ``n_neighbors``
    nearest neighbours (the Lp-MKL-S3VM paper: k = 5, 50 for text-like data).

    Parameters
    ----------
    X : array-like of shape (N, d)
        The graph points.
    n_neighbors : int, default=5
        Neighbours per point, between 1 and N − 1.
    gamma : float or None, default=None
        Width of the edge weights; None is scikit-learn's "scale", 1 / (d · Var(X)).

    Returns
    -------
    W : scipy.sparse.csr_matrix of shape (N, N)
        Symmetric weights, zero diagonal.

    Examples
    --------
    >>> W = knn_graph([[0.0], [1.0], [3.0]], n_neighbors=1, gamma=1.0)
    >>> W.toarray().round(3)
    array([[0.   , 0.368, 0.   ],
           [0.368, 0.   , 0.018],
           [0.   , 0.018, 0.   ]])
    """
    from sklearn.neighbors import NearestNeighbors

    X = np.asarray(X, dtype=float)
    N = len(X)
    if not 1 <= n_neighbors < N:
        raise ValueError(f"n_neighbors must be between 1 and the number of graph points minus "
                         f"one ({N - 1}); got {n_neighbors}.")
    g = resolve_gamma("scale", X) if gamma is None else float(gamma)
    # one more neighbour than asked: each point is its own nearest neighbour
    dist, idx = NearestNeighbors(n_neighbors=n_neighbors + 1).fit(X).kneighbors(X)
    rows = np.repeat(np.arange(N), n_neighbors + 1)
    W = sp.csr_matrix((np.exp(-g * dist.ravel() ** 2), (rows, idx.ravel())), shape=(N, N))
    W.setdiag(0.0)
    W.eliminate_zeros()
    return W.maximum(W.T).tocsr()


def knn_laplacian(
    X: ArrayLike, n_neighbors: int = 5, gamma: float | None = None, normalized: bool = False
) -> Array:
    """Graph Laplacian ``L = D − W`` of `knn_graph` (dense, N × N).

    With ``normalized=True`` it is ``I − D^{-1/2} W D^{-1/2}``.

    Examples
    --------
    >>> L = knn_laplacian([[0.0], [1.0], [3.0]], n_neighbors=1, gamma=1.0)
    >>> bool(np.allclose(L.sum(1), 0.0)), bool(np.allclose(L, L.T))
    (True, True)
    """
    W = knn_graph(X, n_neighbors, gamma).toarray()
    deg = W.sum(1)
    if not normalized:
        return np.diag(deg) - W
    s = np.where(deg > 0, 1.0 / np.sqrt(np.where(deg > 0, deg, 1.0)), 0.0)
    return np.eye(len(W)) - s[:, None] * W * s[None, :]


@dataclass(frozen=True, eq=False)
class ManifoldKernel(Kernel):
    """Base kernel deformed by the kNN-graph Laplacian of X_graph (LapSVM as an SVM kernel).

    ``k̃(x, z) = k(x, z) − k_xᵀ (I + M K)⁻¹ M k_z`` with ``M = gamma_ratio · L^p``,
    ``K = k(X_graph, X_graph)``, ``k_x = k(X_graph, x)`` and L the Laplacian of
    the kNN graph on ``X_graph`` with Gaussian edge weights.

    The N_g × N_g matrix ``A = (I + M K)⁻¹ M`` (symmetric) and ``K A`` are computed
    once, when the kernel is built: O(N_g³) time and two N_g × N_g arrays of
    memory. After that a block k̃(X, Z)
    costs O(N·N_g·(d + Nz)), or O(N_g²·Nz) when X is X_graph itself (the
    training points), and so does each vector-Jacobian product; free XVs are
    therefore affordable up to a few thousand graph points. The deformation
    is defined for any z, so the XVs need not be data points.

    Parameters
    ----------
    base : Kernel
        The kernel k that is deformed.
    X_graph : ndarray of shape (N_g, d) or None, default=None
        The graph points (labeled and unlabeled training points). None leaves
        the kernel unbound: `SemiSupervisedSVC` binds it to its training
        points at fit (`bind`).
    n_neighbors : int, default=5
        k of the kNN graph (the Lp-MKL-S3VM paper: 5; 50 for text-like data).
    gamma_ratio : float, default=1.0
        γ_I / γ_A, the weight of the intrinsic (graph) norm against the ambient one.
    laplacian_power : int, default=1
        p in L^p (iterated Laplacian).
    graph_gamma : float or None, default=None
        Width of the edge weights ``exp(−graph_gamma ‖x_i − x_j‖²)``; None takes
        the base kernel's ``gamma`` if it has one (the Lp-MKL-S3VM paper uses the
        kernel's σ), else 1 / (d · Var(X_graph)).
    normalized : bool, default=False
        Use the normalized Laplacian ``I − D^{-1/2} W D^{-1/2}`` instead of ``D − W``.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import RBF
    >>> from sparsify.kernels import check_kernel_vjp
    >>> rng = np.random.default_rng(0)
    >>> Xg = rng.normal(size=(30, 2))
    >>> k = ManifoldKernel(RBF(0.5), Xg, n_neighbors=4, gamma_ratio=10.0)
    >>> K = k(Xg, Xg)
    >>> bool(np.linalg.eigvalsh(K).min() > -1e-10)  # positive semi-definite
    True
    >>> bool(np.all(k.diag(Xg) < 1.0))  # the graph norm shrinks every k(x, x) = 1
    True
    >>> # the deformation cancels large terms: steps of 1e-4 keep round-off out
    >>> check_kernel_vjp(k, Xg[:5], rng.normal(size=(3, 2)), eps=1e-4) < 1e-7
    True
    """

    base: Kernel
    X_graph: Array | None = field(default=None, repr=False)
    n_neighbors: int = 5
    gamma_ratio: float = 1.0
    laplacian_power: int = 1
    graph_gamma: float | None = None
    normalized: bool = False
    name = "manifold"

    def __post_init__(self) -> None:
        if not isinstance(self.base, Kernel):
            raise ValueError(f"ManifoldKernel needs a sparsify Kernel as base; got "
                             f"{type(self.base).__name__}.")
        if not (isinstance(self.laplacian_power, int | np.integer) and self.laplacian_power >= 1):
            raise ValueError(f"laplacian_power must be an integer >= 1; got "
                             f"{self.laplacian_power!r}.")
        if not self.gamma_ratio >= 0:
            raise ValueError(f"gamma_ratio must be >= 0; got {self.gamma_ratio!r}.")
        if self.X_graph is None:
            return
        Xg = np.asarray(self.X_graph, dtype=float)
        if Xg.ndim != 2:
            raise ValueError(f"X_graph must be 2-D (N_g, d); got shape {Xg.shape}.")
        object.__setattr__(self, "X_graph", Xg)
        gamma = self.graph_gamma
        if gamma is None:
            gamma = getattr(self.base, "gamma", None)
        L = knn_laplacian(Xg, self.n_neighbors, gamma, self.normalized)
        M = self.gamma_ratio * np.linalg.matrix_power(L, int(self.laplacian_power))
        K = self.base(Xg, Xg)
        A = np.linalg.solve(np.eye(len(Xg)) + M @ K, M)
        A = 0.5 * (A + A.T)  # symmetric in exact arithmetic (push-through identity)
        object.__setattr__(self, "_A", A)
        object.__setattr__(self, "_KA", K @ A)

    # -- helpers ---------------------------------------------------------------------------------

    def bind(self, X_graph: ArrayLike) -> ManifoldKernel:
        """Return this kernel with its graph built on ``X_graph``.

        Examples
        --------
        >>> from sparsify import RBF
        >>> k = ManifoldKernel(RBF(1.0), n_neighbors=2).bind([[0.0], [1.0], [2.0], [4.0]])
        >>> k.X_graph.shape
        (4, 1)
        """
        return replace(self, X_graph=np.asarray(X_graph, dtype=float))

    def graph_coef(self, Z: ArrayLike) -> Array:
        """``C = A k(X_graph, Z)``, shape (N_g, Nz): the deformation of the columns Z.

        With it, ``k̃(x, Z) = k(x, Z) − k(X_graph, x)ᵀ C`` for any x: a machine
        with fixed XVs Z needs only the graph points and C, not the graph (this
        is how a model file stores a manifold kernel, see `sparsify.io`).

        Examples
        --------
        >>> import numpy as np
        >>> from sparsify import RBF
        >>> rng = np.random.default_rng(0)
        >>> k = ManifoldKernel(RBF(0.5), rng.normal(size=(20, 2)), n_neighbors=3)
        >>> X, Z = rng.normal(size=(4, 2)), rng.normal(size=(3, 2))
        >>> C = k.graph_coef(Z)
        >>> C.shape
        (20, 3)
        >>> bool(np.allclose(k(X, Z), k.base(X, Z) - k.base(k.X_graph, X).T @ C))
        True
        """
        # a read-only view of the cached block: no second N_g × Nz copy
        out = self._columns(np.asarray(Z, dtype=float))[1].view()
        out.flags.writeable = False
        return out

    def _graph(self) -> Array:
        if self.X_graph is None:
            raise ValueError("This ManifoldKernel has no graph yet: pass X_graph=, call "
                             ".bind(X), or use it inside SemiSupervisedSVC, which binds it to "
                             "the training points.")
        return self.X_graph

    def _is_graph(self, X: Array) -> bool:
        Xg = self._graph()
        return X is Xg or (X.shape == Xg.shape and np.array_equal(X, Xg))

    def _left(self, X: Array) -> Array:
        """Rows ``k_xᵀ A`` for every x in X, shape (len(X), N_g)."""
        if self._is_graph(X):
            return self._KA  # type: ignore[attr-defined, no-any-return]
        return self.base(X, self._graph()) @ self._A  # type: ignore[attr-defined, no-any-return]

    def _columns(self, B: Array) -> tuple[Array, Array]:
        """``Q = k(X_g, B)`` and ``A Q``, kept for the last B.

        An L-BFGS evaluation asks for k̃(X, Z), k̃(Z, Z) and both products at
        the same Z; with Q and A Q at hand each of them costs one product with
        an N_g × N_g matrix at most, and no kernel value is computed twice.
        """
        cached = self.__dict__.get("_cache")
        if cached is not None and cached[0].shape == B.shape and np.array_equal(cached[0], B):
            return cached[1], cached[2]
        Q = self.base(self._graph(), B)
        AQ = self._A @ Q  # type: ignore[attr-defined]
        object.__setattr__(self, "_cache", (B.copy(), Q, AQ))
        return Q, AQ

    # -- Kernel interface ------------------------------------------------------------------------

    def __call__(self, A: Array, B: Array) -> Array:
        A, B = np.asarray(A, dtype=float), np.asarray(B, dtype=float)
        Q, AQ = self._columns(B)
        if self._is_graph(A):  # k(X_g, B) − K A Q with k(X_g, B) = Q
            return Q - self._KA @ Q  # type: ignore[attr-defined, no-any-return]
        P = Q if A is B or (A.shape == B.shape and np.array_equal(A, B)) else self.base(
            self._graph(), A)
        return self.base(A, B) - P.T @ AQ  # type: ignore[no-any-return]

    def diag(self, A: Array) -> Array:
        A = np.asarray(A, dtype=float)
        return self.base.diag(A) - (self._left(A) * self.base(A, self._graph())).sum(1)

    def vjp_z(self, X: Array, Z: Array, G: Array, K: Array | None = None) -> Array:
        # Σ_ij G_ij (P A Q)_ij with P = k(X, X_g), Q = k(X_g, Z): Q's cotangent is A Pᵀ G.
        X = np.asarray(X, dtype=float)
        Q, _ = self._columns(Z)
        if self._is_graph(X):  # k(X, Z) is Q itself: one product on the same block
            cot = G - self._KA.T @ G  # type: ignore[attr-defined]
            return self.base.vjp_z(X, Z, cot, Q)
        deform = self.base.vjp_z(self._graph(), Z, self._A @ (self.base(self._graph(), X) @ G),
                                 Q)  # type: ignore[attr-defined]
        return self.base.vjp_z(X, Z, G) - deform

    def vjp_zz(self, Z: Array, G: Array, K: Array | None = None) -> Array:
        # k̃(Z, Z) = k(Z, Z) − Qᵀ A Q: Q's cotangent is A Q (G + Gᵀ)
        Z = np.asarray(Z, dtype=float)
        Q, AQ = self._columns(Z)
        return self.base.vjp_zz(Z, G) - self.base.vjp_z(self._graph(), Z, AQ @ (G + G.T), Q)

    def with_params(self, **params: float) -> Kernel:
        return replace(self, base=self.base.with_params(**params))

    def __repr__(self) -> str:
        graph = "None" if self.X_graph is None else f"<{len(self.X_graph)} points>"
        return (f"ManifoldKernel(base={self.base!r}, X_graph={graph}, "
                f"n_neighbors={self.n_neighbors}, gamma_ratio={self.gamma_ratio}, "
                f"laplacian_power={self.laplacian_power}, graph_gamma={self.graph_gamma}, "
                f"normalized={self.normalized})")

    def __getstate__(self) -> dict[str, object]:
        return {k: v for k, v in self.__dict__.items() if k != "_cache"}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
