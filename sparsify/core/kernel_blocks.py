"""The kernel-block toolbox every W(Z) provider builds on.

K_XZ and K_ZZ in row blocks, the gradient of Lemma 1 through the kernel's
vector-Jacobian products (∂W/∂K_XZ = −ν βᵀ, ∂W/∂K_ZZ = β diag(c) βᵀ), the
kernel's scale on the training inputs, and the factors of K_ZZ: R with RᵀR = K_ZZ,
and the whitenings T with Tᵀ K_ZZ T = I that give the rows Φ = K_XZ T (paper
§3.4). The generic paths (`sparsify.core.declared`, `sparsify.core.conic`) and
the formulations' own exact solvers share them.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
from numpy.typing import NDArray
from scipy.linalg import blas

from sparsify.kernels import Kernel

__all__ = [
    "BLOCK_ROWS",
    "WorkArrays",
    "check_gamma",
    "conditioning_note",
    "diagonal_scale",
    "expansion_factor",
    "kernel_blocks",
    "link_gradient",
    "link_gradient_xz",
    "row_blocks",
    "triangular_whitening",
    "whitened_rows",
    "whitening",
]

Array = NDArray[np.float64]

#: Rows of X per piece where an N × Nz array is computed piecewise: the kernel's and the
#: gradient's temporaries stay at a few MB whatever N is.
BLOCK_ROWS = 4096
#: `link_gradient_xz` sums over the points of nonzero multipliers alone where they are at
#: most this share of the points: timed within SVM fits, gathering their rows took half the
#: time of the sum over all rows at a share of 0.35 (a9a), the same at 0.70 and 11 % more at
#: 0.88 (docs/theory.md).
ACTIVE_SHARE = 0.7


def row_blocks(n_rows: int) -> range:
    """The first rows of the pieces of `BLOCK_ROWS` rows that cover ``n_rows`` rows.

    Examples
    --------
    >>> list(row_blocks(10_000))
    [0, 4096, 8192]
    """
    return range(0, n_rows, BLOCK_ROWS)


def kernel_blocks(kernel: Kernel, X: Array, Z: Array, out: Array | None = None
                  ) -> tuple[Array, Array]:
    """Return ``K_XZ`` and ``K_ZZ``, or a ValueError if the kernel overflowed.

    For any `Marginal`'s ``evaluate``: a polynomial or linear kernel on
    features of size 1e100 gives infinities that would otherwise surface as a
    solver's or LAPACK's complaint. ``K_XZ`` is computed `BLOCK_ROWS` rows at a
    time into its own array, or into ``out`` (an N × Nz float array, say a
    `WorkArrays` one), so the kernel's temporaries do not grow with N.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import Polynomial
    >>> K_xz, K_zz = kernel_blocks(Polynomial(degree=2), np.ones((3, 2)), np.ones((1, 2)))
    >>> K_xz.shape, K_zz.shape
    ((3, 1), (1, 1))
    >>> big = np.full((1, 1), 1e200)
    >>> kernel_blocks(Polynomial(degree=3), big, big)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: The kernel Polynomial(...) gave NaN or infinite values at these XVs; lower ...
    """
    K_xz = np.empty((len(X), len(Z))) if out is None else out
    with np.errstate(over="ignore", invalid="ignore"):
        for start in row_blocks(len(X)):
            K_xz[start:start + BLOCK_ROWS] = kernel(X[start:start + BLOCK_ROWS], Z)
        K_zz = kernel(Z, Z)
    if not (np.isfinite(K_xz).all() and np.isfinite(K_zz).all()):
        raise ValueError(
            f"The kernel {kernel!r} gave NaN or infinite values at these XVs; lower gamma or "
            "degree, or rescale the data."
        )
    return K_xz, K_zz


class WorkArrays:
    """Named rows × Nz float arrays that an evaluation writes over, kept across evaluations.

    A fresh N × Nz array costs the first touch of each of its pages, so an
    L-BFGS fit keeps its K_XZ and whitened rows and writes over them. Its peak
    memory is the same; between evaluations it holds them.

    Examples
    --------
    >>> work = WorkArrays()
    >>> a = work.get("K_xz", 3, 2)
    >>> work.get("K_xz", 3, 2) is a, work.get("K_xz", 4, 2).shape
    (True, (4, 2))
    """

    def __init__(self) -> None:
        self._arrays: dict[str, Array] = {}

    def get(self, name: str, rows: int, columns: int) -> Array:
        """The array called ``name``, of shape (rows, columns), contents undefined."""
        array = self._arrays.get(name)
        if array is None or array.shape != (rows, columns):
            self._arrays.pop(name, None)  # free the old one before making its successor
            array = self._arrays[name] = np.empty((rows, columns))
        return array


def link_gradient(kernel: Kernel, X: Array, Z: Array, K_xz: Array, K_zz: Array, nu: Array,
                  beta: Array, c: Array | float) -> Array:
    """∇W(Z) by Lemma 1: ∂W/∂K_XZ = −ν βᵀ and ∂W/∂K_ZZ = β diag(c) βᵀ, through the kernel.

    ``nu`` (N,) or (N, K) are the multipliers of the link f = K_XZ β, ``beta``
    (Nz,) or (Nz, K), ``c`` = ∂L/∂‖w_k‖² per output. The N × Nz part is summed
    over `BLOCK_ROWS` rows at a time, so no N × Nz temporary is made.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import RBF
    >>> X, Z = np.eye(3), np.eye(3)[:2]
    >>> K_xz, K_zz = kernel_blocks(RBF(1.0), X, Z)
    >>> link_gradient(RBF(1.0), X, Z, K_xz, K_zz, np.ones(3), np.ones(2), 0.5).shape
    (2, 3)
    """
    B = np.asarray(beta, dtype=float).reshape(len(Z), -1)
    gradient = kernel.vjp_zz(Z, (B * c) @ B.T, K_zz)
    gradient += link_gradient_xz(kernel, X, Z, K_xz, nu, B)
    return gradient


def link_gradient_xz(kernel: Kernel, X: Array, Z: Array, K_xz: Array, nu: Array,
                     beta: Array) -> Array:
    """The K_XZ term of `link_gradient`, ∂W/∂K_XZ = −ν βᵀ through the kernel, alone.

    For a share of the rows (a row block of a distributed fit) as for all of them:
    summed `BLOCK_ROWS` rows at a time, over the rows of nonzero ν alone where they
    are at most `ACTIVE_SHARE` of them. A row whose ν is 0 (a hinge's point outside
    the margin) adds exactly 0; on USPS's one-vs-rest fits 2 % of the points are
    left, and the term's products go with them.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import RBF
    >>> X, Z = np.eye(3), np.eye(3)[:2]
    >>> K_xz = RBF(1.0)(X, Z)
    >>> nu = np.array([1.0, 0.0, 0.0])
    >>> np.allclose(link_gradient_xz(RBF(1.0), X, Z, K_xz, nu, np.ones(2)),
    ...             link_gradient_xz(RBF(1.0), X[:1], Z, K_xz[:1], nu[:1], np.ones(2)))
    True
    """
    B = np.asarray(beta, dtype=float).reshape(len(Z), -1)
    V = np.asarray(nu, dtype=float).reshape(len(X), -1)
    active = np.flatnonzero(V.any(axis=1))
    pieces: list[slice] | list[NDArray[np.intp]] = (
        [active[start:start + BLOCK_ROWS] for start in row_blocks(len(active))]
        if len(active) <= ACTIVE_SHARE * len(X)
        else [slice(start, start + BLOCK_ROWS) for start in row_blocks(len(X))])
    gradient = np.zeros_like(Z, dtype=float)
    for rows in pieces:
        gradient += kernel.vjp_z(X[rows], Z, -V[rows] @ B.T, K_xz[rows])
    return gradient


def check_gamma(kernel: Kernel, X: Array, owner: str) -> None:
    """Refuse inputs whose squares leave float64's range, and a gamma whose kernel derivative
    overflows on them, naming what to change.

    Inputs of 1e160 (or 1e-160) have squared distances of inf (or 0): every kernel
    value is then wrong, whatever gamma. The gradient of W moves each XV by terms of
    2·gamma·(x − z)·k(x, z): where 2·gamma·max|x| is not finite (gamma = 1e308),
    every gradient is NaN whatever the data, and the fault is gamma's, not the data's.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import RBF
    >>> check_gamma(RBF(0.5), np.ones((2, 2)), "SparseSVC")
    >>> check_gamma(RBF(1e308), np.ones((2, 2)), "SparseSVC")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: SparseSVC: gamma=1e+308 is too large for these inputs: ...
    """
    parts = getattr(kernel, "kernels", None) or (kernel,)
    # (the extremes without np.abs's copy of X: a tenth of a second at a9a's size)
    largest = max(float(np.max(X)), -float(np.min(X))) if np.size(X) else 0.0
    with np.errstate(over="ignore", under="ignore"):
        square = largest * largest * X.shape[1]
    if largest > 0 and not np.finfo(float).tiny <= square < np.inf:
        how = "overflow" if square == np.inf else "underflow"
        raise ValueError(
            f"{owner}: the inputs reach {largest:.3g}, so their squares {how} float64 "
            f"(‖x − z‖² and Var(X) are {'inf' if how == 'overflow' else 'lost to rounding'}) "
            "and no kernel value can be computed faithfully. Standardise the features "
            "(sklearn.preprocessing.StandardScaler) and fit again.")
    for part in parts:
        gamma = getattr(part, "gamma", None)
        if not isinstance(gamma, (int, float)):
            continue
        with np.errstate(over="ignore"):
            scale = 2.0 * float(gamma) * max(largest, 1.0)
        if not np.isfinite(scale):
            variance = float(np.var(X)) if np.size(X) else 0.0
            suggestion = 1.0 / (X.shape[1] * variance) if variance > 0 else 1.0
            raise ValueError(
                f"{owner}: gamma={gamma:g} is too large for these inputs: the kernel's "
                f"derivative 2·gamma·(x − z) overflows float64 (inputs up to {largest:.3g}), so "
                "the gradient of W(Z) is not finite and no XV can move. Use gamma='scale' "
                f"({suggestion:.3g} here) or a value within a few orders of magnitude of it.")


def diagonal_scale(kernel: Kernel, X: Array, formulation_name: str = "") -> float:
    """The mean of k(x, x) over the training inputs, the scale every jitter is relative to.

    A ValueError where it is not finite: features of size 1e160 overflow a linear
    or polynomial kernel (k(x, x) = ‖x‖² = inf), which would otherwise surface as
    LAPACK's "Eigenvalues did not converge".

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import Linear
    >>> diagonal_scale(Linear(), np.array([[1.0, 2.0], [3.0, 0.0]]))
    7.0
    >>> diagonal_scale(Linear(), np.array([[1e200, 0.0], [1.0, 1.0]]))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: The kernel Linear() overflows on the training inputs: k(x, x) is not finite ...
    """
    with np.errstate(over="ignore", invalid="ignore"):
        diag = np.asarray(kernel.diag(X), dtype=float)
    bad = ~np.isfinite(diag)
    if bad.any():
        where = f" of the {formulation_name!r} formulation" if formulation_name else ""
        raise ValueError(
            f"The kernel {kernel!r} overflows on the training inputs{where}: k(x, x) is not "
            f"finite for row {int(np.argmax(bad))}. Rescale the data (standardise the "
            "features), or lower gamma or degree."
        )
    return float(np.mean(diag))


def expansion_factor(K_zz: Array) -> Array:
    """Return R with ``RᵀR = K_ZZ`` (eigenvalues clipped at 0), shape (Nz, Nz).

    The caller adds jitter to ``K_ZZ`` first; clipping only removes round-off
    negatives, so the factor stays exact for a positive definite kernel matrix.

    Examples
    --------
    >>> import numpy as np
    >>> K = np.array([[2.0, 1.0], [1.0, 2.0]])
    >>> R = expansion_factor(K)
    >>> bool(np.allclose(R.T @ R, K))
    True
    """
    lam, V = np.linalg.eigh(K_zz)
    R: Array = np.sqrt(np.clip(lam, 0.0, None))[:, None] * V.T
    return R


def whitening(K_zz: Array) -> Array:
    """Return T = V Λ^(-½) with ``Tᵀ K_ZZ T = I`` (``K_ZZ = V Λ Vᵀ``), shape (Nz, Nz).

    The whitened features Φ = K_XZ T are the training points' coordinates in an
    orthonormal basis of span φ(Z) (paper §3.4): ‖Φ_i‖² ≤ k(x_i, x_i) whatever
    K_ZZ's condition number, and β = T u turns ‖u‖² into ‖w‖². The caller adds
    jitter to ``K_ZZ`` first; eigenvalues are clipped at the smallest positive
    float only against round-off.

    Examples
    --------
    >>> import numpy as np
    >>> K = np.array([[2.0, 1.0], [1.0, 2.0]])
    >>> T = whitening(K)
    >>> bool(np.allclose(T.T @ K @ T, np.eye(2)))
    True
    """
    lam, V = np.linalg.eigh(K_zz)
    T: Array = V / np.sqrt(np.clip(lam, np.finfo(float).tiny, None))
    return T


def triangular_whitening(K_zz: Array) -> Array:
    """Return an upper triangular T with ``Tᵀ K_ZZ T = I``: L⁻ᵀ, K_ZZ = L Lᵀ (Cholesky).

    Any T with Tᵀ K_ZZ T = I gives the same whitened rows up to a rotation,
    so the same Gram matrix ΦΦᵀ and the same β = T u, as `whitening`'s
    eigenvectors; a triangular one halves the cost of the N × Nz product
    (`whitened_rows`). Where the factorization fails (K_ZZ numerically
    indefinite despite the caller's jitter) `whitening`'s T is returned.

    Examples
    --------
    >>> import numpy as np
    >>> K = np.array([[2.0, 1.0], [1.0, 2.0]])
    >>> T = triangular_whitening(K)
    >>> bool(np.allclose(T.T @ K @ T, np.eye(2))), bool(np.allclose(T, np.triu(T)))
    (True, True)
    """
    try:
        L = scipy.linalg.cholesky(K_zz, lower=True)
    except np.linalg.LinAlgError:
        return whitening(K_zz)
    T: Array = scipy.linalg.solve_triangular(L, np.eye(len(L)), lower=True).T
    return T


def whitened_rows(K_xz: Array, T: Array, out: Array, scale: Array | None = None) -> Array:
    """Write the whitened rows Φ = K_XZ T into ``out`` and return it, rows times ``scale``.

    Where T is upper triangular (`triangular_whitening`) the product is a
    triangular one (BLAS trmm on a copy of K_XZ), half the flops of a dense
    ``K_XZ @ T`` (docs/theory.md has the times). ``out`` is a C-ordered float array of
    K_XZ's shape (not K_XZ itself, which the gradient needs); ``scale`` (N,),
    if given, multiplies the rows (the SVM's signs, B = y∘Φ) in the pass that
    copies K_XZ, as (diag(s) K_XZ) T = diag(s) (K_XZ T).

    Examples
    --------
    >>> import numpy as np
    >>> K_zz = np.array([[2.0, 1.0], [1.0, 2.0]])
    >>> K_xz = np.array([[1.0, 0.5], [0.2, 2.0], [1.0, 1.0]])
    >>> Phi = whitened_rows(K_xz, triangular_whitening(K_zz), np.empty((3, 2)))
    >>> bool(np.allclose(Phi @ Phi.T, K_xz @ np.linalg.solve(K_zz, K_xz.T)))
    True
    """
    if np.tril(T, -1).any():  # a dense T (the eigenvectors)
        np.matmul(K_xz, T, out=out)
        if scale is not None:
            out *= scale[:, None]
        return out
    if scale is None:
        np.copyto(out, K_xz)
    else:
        np.multiply(K_xz, scale[:, None], out=out)
    # Φᵀ = Tᵀ K_XZᵀ in place: out.T is the Fortran-ordered Nz × N array BLAS works on
    done = blas.dtrmm(1.0, T.T, out.T, side=0, lower=1, overwrite_b=1)
    if not np.shares_memory(done, out):  # (a BLAS wrapper that copied after all)
        out[...] = done.T
    return out


def conditioning_note(K_zz: Array) -> str:
    """Where K_ZZ is nearly singular, say so: XVs that nearly coincide are a cause of failure.

    Examples
    --------
    >>> conditioning_note(np.eye(2))
    ''
    >>> conditioning_note(np.array([[1.0, 1.0 - 1e-12], [1.0 - 1e-12, 1.0]]))[:52]
    ' K_ZZ is nearly singular (condition number 2.0e+12):'
    """
    lam = np.linalg.eigvalsh(K_zz)
    top, low = lam[-1], max(lam[0], 0.0)
    if top <= 0 or low > 1e-8 * top:
        return ""
    cond = f"{top / low:.1e}" if low > 0 else "infinite"
    return (f" K_ZZ is nearly singular (condition number {cond}): some XVs nearly coincide "
            "in feature space; start from other XVs (another random_state, init='kmeans') or "
            "use fewer.")
