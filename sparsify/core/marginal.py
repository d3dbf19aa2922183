"""The marginal function W(Z) and its gradient by Lemma 1, for any formulation.

For fixed XVs Z the sparse problem is the formulation's convex problem plus two
linking constraints that the core owns::

    f == K_XZ @ β        (dual ν)
    u == R @ β           (dual η),   ‖w‖² := ‖u‖²,  RᵀR = K_ZZ

``K_XZ`` and ``R`` are cvxpy Parameters, so the problem is DPP: it is compiled
once per fit and re-solved with new parameter values at each evaluation. Z
enters the Lagrangian only through ``K_XZ`` and ``K_ZZ``; with cvxpy's sign
convention (Lagrangian = objective + ν·(f − K_XZ β) + η·(u − R β))::

    ∂W/∂K_XZ = −ν βᵀ        ∂W/∂K_ZZ = Σ_k c_k β_k β_kᵀ,  c_k = −η_k·u_k / (2‖u_k‖²)

where c_k = ∂L/∂‖w_k‖² follows from stationarity in u. The kernel's
vector-Jacobian products turn these into ∂W/∂Z in O(N·Nz·d).
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import cvxpy as cp
import numpy as np
import scipy.linalg
from numpy.typing import NDArray
from scipy.linalg import blas

from sparsify.core.formulation import Declaration, Formulation, Outputs
from sparsify.core.memory import check_memory
from sparsify.core.registry import get_registry
from sparsify.core.solvers import (
    AUTO_CHAIN,
    SolverBackend,
    SolverError,
    Unsolved,
    solve_problem,
)
from sparsify.kernels import Kernel

__all__ = [
    "CvxpyMarginal",
    "DeclaredMarginal",
    "Evaluation",
    "Marginal",
    "NonDifferentiableWarning",
    "WorkArrays",
    "check_expansion_vectors",
    "diagonal_scale",
    "expansion_factor",
    "kernel_blocks",
    "link_gradient",
    "make_marginal",
    "triangular_whitening",
    "whitened_rows",
    "whitening",
]

Array = NDArray[np.float64]


class NonDifferentiableWarning(UserWarning):
    """W(Z) is not differentiable at the current XVs (the gradient is one of many)."""


@dataclass(frozen=True)
class Evaluation:
    """W(Z), ∇W(Z) and the solution at one set of XVs.

    Attributes
    ----------
    value : float
        W(Z), the optimal value at fixed Z.
    grad : ndarray of shape (Nz, d) or None
        ∇W(Z); None when not requested.
    coef : ndarray of shape (Nz,) or (Nz, K)
        Expansion coefficients β.
    intercept : float or ndarray of shape (K,)
        Bias b.
    solver : str
        Backend that produced the solution.
    accuracy : float or None
        A bound on |W − W*| that the solver's stopping rule guarantees (for the
        generic path: the duality gap it stopped at); None where the provider
        states none (an exact solver accurate to round-off).
    """

    value: float
    grad: Array | None
    coef: Array
    intercept: float | Array
    solver: str
    accuracy: float | None = None


class Marginal(ABC):
    """Anything that returns W(Z) and ∇W(Z): the generic path or a formulation's own."""

    #: Formulation name, for messages.
    formulation_name: str = ""

    @abstractmethod
    def evaluate(self, Z: Array, grad: bool = True) -> Evaluation:
        """Solve at fixed XVs ``Z`` (Nz, d) and return W, ∇W and the solution."""


def check_expansion_vectors(
    Z: NDArray[Any], n_expansion: int, n_features: int, formulation_name: str = ""
) -> Array:
    """Return the XVs ``Z`` as float64 of shape (Nz, d), or a ValueError that says what to change.

    Every `Marginal.evaluate` should start with it, so that a wrong shape
    or a NaN reaches the user as such and not as an error deep in a solver.

    Parameters
    ----------
    Z : array-like
        The XVs to evaluate W at.
    n_expansion, n_features : int
        Nz the marginal was built for, and d of its training inputs.
    formulation_name : str, optional
        For the message.

    Examples
    --------
    >>> import numpy as np
    >>> check_expansion_vectors([[0, 1], [2, 3]], 2, 2).dtype
    dtype('float64')
    >>> check_expansion_vectors([[0.0, np.nan]], 1, 2)
    Traceback (most recent call last):
    ...
    ValueError: The expansion vectors Z contain NaN or infinity (row 0); pass finite XVs.
    """
    Z = np.asarray(Z, dtype=float)
    where = f" of the {formulation_name!r} formulation" if formulation_name else ""
    if Z.shape != (n_expansion, n_features):
        raise ValueError(
            f"The expansion vectors Z{where} must have shape ({n_expansion}, {n_features}) "
            f"(Nz, n_features); got {Z.shape}."
        )
    bad = ~np.isfinite(Z).all(axis=1)
    if bad.any():
        raise ValueError(f"The expansion vectors Z{where} contain NaN or infinity (row "
                         f"{int(np.argmax(bad))}); pass finite XVs.")
    return Z


#: Rows of X per piece where an N × Nz array is computed piecewise: the kernel's and the
#: gradient's temporaries stay at a few MB whatever N is.
BLOCK_ROWS = 4096


def _row_blocks(n_rows: int) -> range:
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
        for start in _row_blocks(len(X)):
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

    A fresh N × Nz array costs the first touch of each of its pages (the
    10⁶ × 500 × 500 product on one core: 11.9 and 11.1 s into a fresh array,
    11.6 and 10.8 s into a kept one), so an L-BFGS fit keeps its K_XZ and
    whitened rows and writes over them. Its peak memory is the same; between
    evaluations it holds them.

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
    V = np.asarray(nu, dtype=float).reshape(len(X), -1)
    gradient = kernel.vjp_zz(Z, (B * c) @ B.T, K_zz)
    for start in _row_blocks(len(X)):
        rows = slice(start, start + BLOCK_ROWS)
        gradient += kernel.vjp_z(X[rows], Z, -V[rows] @ B.T, K_xz[rows])
    return gradient


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
    ``K_XZ @ T``: on one core at N = 10⁵, 0.65 s against 1.13 s at Nz = 500
    and 0.14 against 0.22 s at Nz = 200. ``out`` is a C-ordered float array of
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


#: What to change when every backend that answered gave the same certain verdict. A
#: badly scaled problem (a linear kernel on features of size 1e8) can draw either
#: verdict from a solver, so each hint names that cause too.
_HINTS = {
    cp.INFEASIBLE: (
        "The solver finds the problem infeasible at these XVs: its constraints cannot all "
        "hold. Check the formulation's constraints and the data (identical inputs in "
        "different classes cannot be told apart; XVs far from the data make K(X, Z) "
        "underflow to 0), or rescale the data if it is badly scaled."
    ),
    cp.UNBOUNDED: (
        "The solver finds the objective unbounded below: every variable of the formulation "
        "must be bounded by its objective or its constraints (a loss on f, a ||w||^2 term); "
        "if it is, the problem is badly scaled: rescale the data."
    ),
    cp.USER_LIMIT: (
        "The solver hit its iteration or time limit: raise max_iter in the backend's "
        "settings, loosen solver_tol, or rescale the data."
    ),
}


def _hint(statuses: list[str]) -> str:
    """The hint for a unanimous, certain verdict; else the general advice."""
    # A crashed backend says nothing about the problem, and an inaccurate verdict is
    # no certificate (OSQP calls an ill-conditioned SVM "unbounded_inaccurate").
    verdicts = {s for s in statuses if not s.startswith("error")}
    if len(verdicts) == 1 and (verdict := verdicts.pop()) in _HINTS:
        return _HINTS[verdict]
    return "Try another solver=, a looser tol, or rescale the data."


def _conditioning_note(K_zz: Array) -> str:
    """Where K_ZZ is nearly singular, say so: XVs that nearly coincide are a cause of failure.

    Examples
    --------
    >>> _conditioning_note(np.eye(2))
    ''
    >>> _conditioning_note(np.array([[1.0, 1.0 - 1e-12], [1.0 - 1e-12, 1.0]]))[:52]
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


def _resolve_backends(solver: str, cvxpy_only: bool = False) -> list[SolverBackend]:
    """The backends ``solver`` names: one, or `AUTO_CHAIN`'s installed ones for "auto".

    ``cvxpy_only`` keeps those cvxpy's own solve can call (the DPP path).
    """
    registry = get_registry()
    if solver == "auto":
        chain = [registry.get("solver", name) for name in AUTO_CHAIN]
        chain = [b for b in chain if b.available() and not (cvxpy_only and b.cvxpy_name is None)]
        if not chain:
            raise SolverError(f"None of the default solvers {AUTO_CHAIN} is installed.")
        return chain
    backend: SolverBackend = registry.get("solver", solver)
    if not backend.available():
        raise SolverError(f"The solver {solver!r} is registered but is not installed; install "
                          "it or choose another solver.")
    if cvxpy_only and backend.cvxpy_name is None:
        raise ValueError(f"The solver {solver!r} works on sparsify's generic path only "
                         "(ConicMarginal), not through cvxpy's own solve; choose one of "
                         "'clarabel', 'ecos', 'osqp', 'scs' for CvxpyMarginal.")
    return [backend]


class DeclaredMarginal(Marginal):
    """What the generic paths share: the declaration, its checks, Lemma 1 and the reports.

    A subclass adds the linking constraints f = K_XZ β and u = R β its own way
    and implements `_solve_links`, which returns the solution at the current
    kernel blocks. Not for direct use: `ConicMarginal` (the default) and
    `CvxpyMarginal` (cvxpy's DPP path, the reference) are the two.
    """

    #: whether the path solves through cvxpy's own ``solve`` (backends with a cvxpy name)
    _cvxpy_only = False

    def __init__(
        self,
        formulation: Formulation,
        X: Array,
        y: NDArray[Any] | None,
        kernel: Kernel,
        n_expansion: int,
        solver: str = "auto",
        tol: float = 1e-9,
        jitter: float = 1e-10,
    ) -> None:
        self.formulation = formulation
        self.formulation_name = formulation.name or type(formulation).__name__
        self.X = np.asarray(X, dtype=float)
        self._check_inputs(y, n_expansion)
        self.y = y
        self.kernel = kernel
        self.n_expansion = int(n_expansion)
        self.tol = tol
        #: mean kernel diagonal on X: far from 1, the solvers meet a badly scaled problem
        self.kernel_scale = diagonal_scale(kernel, self.X, self.formulation_name)
        self.jitter = jitter * max(self.kernel_scale, 1e-300)
        self.backends = _resolve_backends(solver, cvxpy_only=self._cvxpy_only)
        self._warned = False
        self._K_zz = np.zeros((0, 0))

    # -- construction -------------------------------------------------------------------------

    def _check_inputs(self, y: NDArray[Any] | None, n_expansion: int) -> None:
        # the estimators validate their data; a direct caller gets the same clear errors
        X, name = self.X, self.formulation_name
        if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
            raise ValueError(f"The {name!r} formulation needs X of shape (n_samples, "
                             f"n_features) with at least one of each; got shape {X.shape}.")
        if not np.isfinite(X).all():
            raise ValueError(f"X passed to the {name!r} formulation contains NaN or infinity; "
                             "remove or impute those values.")
        if y is not None and len(y) != len(X):
            raise ValueError(f"X has {len(X)} samples but y has {len(y)}; pass one target per "
                             "sample.")
        if int(n_expansion) < 1:
            raise ValueError(f"n_expansion must be at least 1; got {n_expansion}.")

    def _fail(self, what: str) -> ValueError:
        return ValueError(f"The {self.formulation_name!r} formulation {what}")

    def _declare(self) -> Declaration:
        """Hand the formulation f and u (plain variables) and check what it declares."""
        N, Nz = len(self.X), self.n_expansion
        K = int(self.formulation.n_outputs(self.y))
        self.n_outputs = K
        self.f = cp.Variable((N,) if K == 1 else (N, K), name="f")
        self.u = cp.Variable((Nz,) if K == 1 else (Nz, K), name="u")
        norms = ((cp.sum_squares(self.u),) if K == 1
                 else tuple(cp.sum_squares(self.u[:, k]) for k in range(K)))
        outputs = Outputs(f=self.f, norm_w2=cp.sum_squares(self.u), norms_w2=norms, y=self.y,
                          n_samples=N, n_outputs=K, norm_w=cp.norm(cp.vec(self.u, order="F")),
                          X=self.X)
        decl = self.formulation.declare(outputs)
        if not isinstance(decl, Declaration):
            raise self._fail(f"must return a sparsify.Declaration from declare(); got "
                             f"{type(decl).__name__}.")
        if not isinstance(decl.objective, cp.Minimize):
            raise self._fail("must declare a cp.Minimize objective (negate a Maximize one).")
        problem = cp.Problem(decl.objective, list(decl.constraints))
        if not problem.is_dcp():
            raise self._fail("is not DCP (disciplined convex): check the curvature of its "
                             "objective and constraints.")
        parts = [decl.objective, *decl.constraints]
        if isinstance(decl.intercept, cp.Expression):
            parts.append(decl.intercept)
        if any(part.parameters() for part in parts):
            raise self._fail("creates cvxpy Parameters of its own; pass hyperparameters as "
                             "plain numbers (the core owns every Parameter).")
        used = {v.id for part in (decl.objective, *decl.constraints) for v in part.variables()}
        if self.f.id not in used:
            raise self._fail("ignores the outputs f: declare the loss or constraints over "
                             "out.f so that the data enter the problem.")
        self.declaration = decl
        return decl

    # -- evaluation ---------------------------------------------------------------------------

    @abstractmethod
    def _solve_links(self, K_xz: Array, K_zz: Array) -> _LinkSolution:
        """Solve with w = Σ_j β_j φ(z_j) at these kernel blocks (K_ZZ with its jitter)."""

    def _report(self, failed: Unsolved, backends: list[SolverBackend]) -> SolverError:
        codes = [status for _, status in failed.statuses]
        error = SolverError(
            f"The {' then '.join(b.name for b in backends)} solver did not solve the "
            f"{self.formulation_name!r} formulation (N={len(self.X)}, Nz={self.n_expansion}): "
            f"{failed}. {_hint(codes)}{self._scale_note()}{_conditioning_note(self._K_zz)}"
        )
        error.__cause__ = failed.cause
        return error

    def _scale_note(self) -> str:
        if 1e-6 <= abs(self.kernel_scale) <= 1e6:
            return ""
        return (f" The kernel's diagonal on X averages {self.kernel_scale:.1e}, far from 1: "
                "standardise the features or lower gamma.")

    def evaluate(self, Z: Array, grad: bool = True) -> Evaluation:
        Z = check_expansion_vectors(Z, self.n_expansion, self.X.shape[1], self.formulation_name)
        K_xz, K_zz = kernel_blocks(self.kernel, self.X, Z)
        self._K_zz = K_zz
        sol = self._solve_links(K_xz, K_zz + self.jitter * np.eye(len(Z)))
        intercept = self.declaration.intercept
        b_array = np.asarray(
            intercept.value if isinstance(intercept, cp.Expression) else intercept, dtype=float)
        b = float(b_array) if b_array.ndim == 0 else b_array
        accuracy = sol.accuracy * max(1.0, abs(sol.value))
        if not grad:
            return Evaluation(sol.value, None, sol.beta, b, sol.backend, accuracy)
        gradient = link_gradient(self.kernel, self.X, Z, K_xz, K_zz, sol.nu, sol.beta, sol.c)
        if not self._warned:
            reason = self.formulation.nondifferentiable(self.y, sol.nu)
            if reason:
                self._warned = True
                warnings.warn(
                    f"W(Z) of the {self.formulation_name!r} formulation is not differentiable "
                    f"here: {reason}. The returned gradient is one subgradient.",
                    NonDifferentiableWarning,
                    stacklevel=2,
                )
        return Evaluation(sol.value, gradient, sol.beta, b, sol.backend, accuracy)


@dataclass(frozen=True)
class _LinkSolution:
    """A generic path's solution: W, β, the dual ν of the link f = K_XZ β (cvxpy's sign:
    Lagrangian = objective + ν·(f − K_XZ β)) and c_k = ∂L/∂‖w_k‖² per output."""

    value: float
    beta: Array
    nu: Array
    c: Array
    backend: str
    accuracy: float


def norm_multiplier(u: Array, eta: Array) -> Array:
    """c_k = ∂L/∂‖w_k‖² per output from the stationarity in u of a formulation that sees u
    only through its norms: ∂L/∂u_k = 2 c_k u_k, read off the dual η_k of the row it is in.

    Examples
    --------
    >>> u = np.array([[3.0], [4.0]]); norm_multiplier(u, -2 * 0.5 * u)
    array([0.5])
    """
    uu = (u * u).sum(0)
    return np.where(uu > 0, -(eta * u).sum(0) / (2 * np.where(uu > 0, uu, 1.0)), 0.0)


class CvxpyMarginal(DeclaredMarginal):
    """W(Z) and ∇W(Z) of a formulation through cvxpy's DPP compilation (the reference path).

    The links are cvxpy constraints with ``K_XZ`` and ``R`` as Parameters, so
    the problem compiles once and cvxpy re-solves it with new parameter
    values. Compiling densifies cvxpy's parameter tensor, about N·(N·Nz)
    numbers: this path is for small problems and for the tests, where it is the
    reference of `sparsify.core.conic.ConicMarginal`, the default generic path.

    Parameters
    ----------
    formulation : Formulation
        The convex kernel learning algorithm.
    X : ndarray of shape (N, d)
        Training inputs.
    y : ndarray of shape (N,) or None
        Targets as the formulation expects them.
    kernel : Kernel
        Kernel with vector-Jacobian products.
    n_expansion : int
        Number of XVs Nz.
    solver : str, default="auto"
        A registered backend that cvxpy can call, or "auto": Clarabel, falling
        back to OSQP (quadratic programs only) and then ECOS when a backend does
        not return an optimal status.
    tol : float, default=1e-9
        Solver accuracy (gap and feasibility).
    jitter : float, default=1e-10
        Added to the diagonal of K_ZZ, relative to the mean kernel diagonal on
        X, so that XVs that come close keep K_ZZ positive definite.

    Examples
    --------
    >>> import numpy as np, cvxpy as cp
    >>> from sparsify import Formulation, Declaration, RBF
    >>> class Ridge(Formulation):
    ...     name = "ridge"
    ...     def declare(self, out):
    ...         return Declaration(cp.Minimize(cp.sum_squares(out.f - out.y) + out.norm_w2))
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(20, 2)); y = np.sin(X[:, 0])
    >>> W = CvxpyMarginal(Ridge(), X, y, RBF(0.5), n_expansion=3)
    >>> ev = W.evaluate(X[:3])
    >>> ev.grad.shape, ev.coef.shape
    ((3, 2), (3,))
    """

    _cvxpy_only = True

    def __init__(
        self,
        formulation: Formulation,
        X: Array,
        y: NDArray[Any] | None,
        kernel: Kernel,
        n_expansion: int,
        solver: str = "auto",
        tol: float = 1e-9,
        jitter: float = 1e-10,
    ) -> None:
        super().__init__(formulation, X, y, kernel, n_expansion, solver, tol, jitter)
        N, Nz = len(self.X), self.n_expansion
        # compiling densifies cvxpy's parameter tensor: a row per constraint entry that
        # holds a Parameter (f's N·K link rows at least) by a column per parameter entry
        K = int(formulation.n_outputs(y))
        check_memory(8 * N * K * (N * Nz + Nz * Nz + 1),
                     f"cvxpy's DPP path for the {self.formulation_name!r} formulation with "
                     f"N={N}, Nz={Nz}",
                     "Use sparsify.core.conic.ConicMarginal (solver names select it through "
                     "make_marginal), whose memory grows like N·Nz.")
        decl = self._declare()
        self.K_xz = cp.Parameter((N, Nz), name="K_XZ")
        self.R = cp.Parameter((Nz, Nz), name="R")
        self.beta = cp.Variable(self.u.shape, name="beta")
        self.link_f = self.f == self.K_xz @ self.beta
        self.link_u = self.u == self.R @ self.beta
        # a solver that stalls may retry with the objective rescaled (SolverBackend.attempts)
        self.objective_scale = cp.Parameter(nonneg=True, name="objective_scale", value=1.0)
        self.problem = cp.Problem(cp.Minimize(self.objective_scale * decl.objective.expr),
                                  [self.link_f, self.link_u, *decl.constraints])
        if not self.problem.is_dpp():
            raise self._fail("is not DPP: it must not multiply the framework's objects in a "
                             "way that puts a Parameter times a Parameter (for example "
                             "quad_form with a Parameter matrix).")
        if not self.problem.is_qp():
            capable = [b for b in self.backends if not b.quadratic_only]
            if not capable:
                raise ValueError(
                    f"The solver {self.backends[0].name!r} handles quadratic programs only and "
                    f"the {self.formulation_name!r} formulation is not one; use "
                    "solver='clarabel' or solver='ecos'."
                )
            self.backends = capable

    def _solve_links(self, K_xz: Array, K_zz: Array) -> _LinkSolution:
        self.K_xz.value, self.R.value = K_xz, expansion_factor(K_zz)
        try:
            solved = solve_problem(self.problem, self.backends, self.tol,
                                   has_solution=lambda: self.link_f.dual_value is not None,
                                   objective_scale=self.objective_scale)
        except Unsolved as failed:
            raise self._report(failed, self.backends) from failed.cause
        s = solved.objective_scale
        Nz = self.n_expansion
        eta = np.asarray(self.link_u.dual_value, dtype=float).reshape(Nz, -1) / s
        return _LinkSolution(
            value=float(self.problem.value) / s,
            beta=np.asarray(self.beta.value, dtype=float),
            nu=np.asarray(self.link_f.dual_value, dtype=float) / s,
            c=norm_multiplier(np.asarray(self.u.value, dtype=float).reshape(Nz, -1), eta),
            backend=solved.backend.name,
            accuracy=solved.accuracy,
        )


def make_marginal(
    formulation: Formulation,
    X: Array,
    y: NDArray[Any] | None,
    kernel: Kernel,
    n_expansion: int,
    solver: str = "auto",
    tol: float = 1e-9,
) -> Marginal:
    """The W(Z) provider a fit uses: the formulation's own, else the generic path.

    With ``solver="auto"`` a formulation that has an exact fast path (or a W
    of its own, as the Rayleigh-quotient KFD) supplies it through
    `Formulation.marginal`; a backend name selects the generic path,
    `sparsify.core.conic.ConicMarginal` (O(N·Nz) memory; by default the
    structured interior point, the other backends called directly). cvxpy's DPP
    path, `CvxpyMarginal`, is its reference in the tests; it needs about
    N·(N·Nz) numbers to compile.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsify import RBF
    >>> from sparsify.core.formulation import make_formulation
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]]); y = np.array([-1, -1, 1, 1])
    >>> svm = make_formulation("svm")
    >>> type(make_marginal(svm, X, y, RBF(1.0), 2)).__name__
    'SVMDualMarginal'
    >>> type(make_marginal(svm, X, y, RBF(1.0), 2, solver="clarabel")).__name__
    'ConicMarginal'
    """
    from sparsify.core.conic import ConicMarginal  # conic builds on this module

    own = formulation.marginal(X, y, kernel, n_expansion, solver, tol)
    if own is not None:
        return own
    return ConicMarginal(formulation, X, y, kernel, n_expansion, solver=solver, tol=tol)
