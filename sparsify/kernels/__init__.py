"""Kernels with values and vector-Jacobian products with respect to the XVs.

A kernel gives the blocks ``K_XZ = K(X, Z)`` (N × Nz) and ``K_ZZ = K(Z, Z)``
(Nz × Nz) and, for a cotangent ``G = ∂W/∂K``, the gradient ``∂W/∂Z`` without ever
forming an N × Nz × d tensor: every product costs O(N·Nz·d).

``K_ZZ`` depends on Z through both arguments, so `Kernel.vjp_zz` adds the two
contributions; for a symmetric kernel they are the second-argument product with
``G`` and with ``Gᵀ``.

Kernels are registered with the ``register_kernels`` hook (see
`sparsify.plugins.hookspecs`); the built-in ones below register as one of the
registry's default plugins, exactly like a third-party kernel would.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields

import numpy as np
from numpy.typing import ArrayLike, NDArray

from sparsify.plugins.hookspecs import hookimpl
from sparsify.plugins.registry import get_registry

__all__ = [
    "RBF",
    "Kernel",
    "Linear",
    "Polynomial",
    "SumKernel",
    "check_kernel_vjp",
    "gaussian_dictionary",
    "make_kernel",
]

Array = NDArray[np.float64]


class Kernel(ABC):
    """A positive definite kernel k(a, b) with vector-Jacobian products.

    Subclasses implement `__call__`, `diag` and `vjp_z`; the
    product for ``K_ZZ`` follows by symmetry. Kernels are small immutable
    dataclasses so they pickle and compare by value.
    """

    #: Registry name (``kernel="rbf"``); set by each subclass.
    name: str = ""

    @abstractmethod
    def __call__(self, A: Array, B: Array) -> Array:
        """Return the kernel matrix ``K[i, j] = k(A[i], B[j])``, shape (len(A), len(B))."""

    @abstractmethod
    def diag(self, A: Array) -> Array:
        """Return ``k(A[i], A[i])`` for every row, shape (len(A),)."""

    @abstractmethod
    def vjp_z(self, X: Array, Z: Array, G: Array, K: Array | None = None) -> Array:
        """Return ``∂/∂Z Σ_ij G[i, j] k(X[i], Z[j])``, shape (Nz, d).

        ``K`` may pass ``self(X, Z)`` when the caller has it, to avoid recomputing it.
        """

    def vjp_zz(self, Z: Array, G: Array, K: Array | None = None) -> Array:
        """Return ``∂/∂Z Σ_ij G[i, j] k(Z[i], Z[j])`` (Z in both arguments), shape (Nz, d)."""
        # k(a, b) = k(b, a): the first-argument term is the second-argument term of Gᵀ.
        return self.vjp_z(Z, Z, G + G.T, K)

    def __add__(self, other: Kernel) -> SumKernel:
        if not isinstance(other, Kernel):
            return NotImplemented
        left = self.kernels if isinstance(self, SumKernel) else (self,)
        right = other.kernels if isinstance(other, SumKernel) else (other,)
        return SumKernel((*left, *right))

    def with_params(self, **params: float) -> Kernel:
        """Return a copy with the given hyperparameters; unknown names are ignored.

        This lets an estimator pass ``gamma``, ``degree`` and ``coef0`` to whatever
        kernel was chosen, as `sklearn.svm.SVC` does.
        """
        names = {f.name for f in fields(self)} if hasattr(self, "__dataclass_fields__") else set()
        kept = {k: v for k, v in params.items() if k in names and v is not None}
        return type(self)(**{**{f.name: getattr(self, f.name) for f in fields(self)}, **kept})


def _sqdist(A: Array, B: Array) -> Array:
    # in place on the product, and the squared norms without an N × d temporary: on USPS
    # (d = 256, Nz = 55) that temporary cost a fifth of the kernel's time
    d = A @ B.T
    if d.dtype.kind != "f":  # integer inputs: the in-place steps below need a float array
        d = d.astype(float)
    d *= -2.0
    d += np.einsum("ij,ij->i", A, A)[:, None]
    d += np.einsum("ij,ij->i", B, B)[None, :]
    return np.maximum(d, 0.0, out=d)


@dataclass(frozen=True)
class RBF(Kernel):
    """Gaussian kernel ``k(a, b) = exp(-gamma ‖a - b‖²)`` (paper eq. 48).

    Examples
    --------
    >>> import numpy as np
    >>> k = RBF(gamma=0.5)
    >>> k(np.zeros((1, 2)), np.ones((1, 2)))
    array([[0.36787944]])
    """

    gamma: float = 1.0
    name = "rbf"

    def __call__(self, A: Array, B: Array) -> Array:
        d = _sqdist(A, B)
        d *= -self.gamma
        return np.exp(d, out=d)

    def diag(self, A: Array) -> Array:
        return np.ones(len(A))

    def vjp_z(self, X: Array, Z: Array, G: Array, K: Array | None = None) -> Array:
        GK = G * (self(X, Z) if K is None else K)
        # ∂k(x, z)/∂z = 2γ (x − z) k(x, z), summed over x with weights G.
        return 2.0 * self.gamma * (GK.T @ X - GK.sum(0)[:, None] * Z)


@dataclass(frozen=True)
class Polynomial(Kernel):
    """Polynomial kernel ``k(a, b) = (gamma ⟨a, b⟩ + coef0) ** degree``.

    Examples
    --------
    >>> import numpy as np
    >>> Polynomial(gamma=1.0, degree=2, coef0=1.0)(np.ones((1, 2)), np.ones((1, 2)))
    array([[9.]])
    """

    gamma: float = 1.0
    degree: int = 3
    coef0: float = 1.0
    name = "poly"

    def __call__(self, A: Array, B: Array) -> Array:
        return (self.gamma * (A @ B.T) + self.coef0) ** self.degree

    def diag(self, A: Array) -> Array:
        return (self.gamma * (A * A).sum(1) + self.coef0) ** self.degree

    def vjp_z(self, X: Array, Z: Array, G: Array, K: Array | None = None) -> Array:
        inner = self.gamma * (X @ Z.T) + self.coef0
        D = self.degree * self.gamma * inner ** (self.degree - 1)
        return (G * D).T @ X


@dataclass(frozen=True)
class Linear(Kernel):
    """Linear kernel ``k(a, b) = ⟨a, b⟩``.

    Examples
    --------
    >>> import numpy as np
    >>> Linear()(np.array([[1.0, 2.0]]), np.array([[3.0, 4.0]]))
    array([[11.]])
    """

    name = "linear"

    def __call__(self, A: Array, B: Array) -> Array:
        return A @ B.T

    def diag(self, A: Array) -> Array:
        return (A * A).sum(1)

    def vjp_z(self, X: Array, Z: Array, G: Array, K: Array | None = None) -> Array:
        return G.T @ X

    def with_params(self, **params: float) -> Kernel:
        return self


@dataclass(frozen=True)
class SumKernel(Kernel):
    """Weighted sum of kernels ``k = Σ_m w_m k_m`` (weights default to 1).

    Examples
    --------
    >>> import numpy as np
    >>> k = RBF(gamma=1.0) + Linear()
    >>> k(np.zeros((1, 2)), np.zeros((1, 2)))
    array([[1.]])
    """

    kernels: tuple[Kernel, ...] = ()
    weights: tuple[float, ...] | None = field(default=None)
    name = "sum"

    def __post_init__(self) -> None:
        if len(self.kernels) == 0:
            raise ValueError("SumKernel needs at least one kernel; got an empty sequence.")
        if self.weights is not None and len(self.weights) != len(self.kernels):
            raise ValueError(
                f"SumKernel got {len(self.weights)} weights for {len(self.kernels)} kernels; "
                "pass one weight per kernel."
            )

    @property
    def _w(self) -> Sequence[float]:
        return self.weights if self.weights is not None else (1.0,) * len(self.kernels)

    def __call__(self, A: Array, B: Array) -> Array:
        return sum(w * k(A, B) for w, k in zip(self._w, self.kernels, strict=True))

    def diag(self, A: Array) -> Array:
        return sum(w * k.diag(A) for w, k in zip(self._w, self.kernels, strict=True))

    def vjp_z(self, X: Array, Z: Array, G: Array, K: Array | None = None) -> Array:
        return sum(w * k.vjp_z(X, Z, G) for w, k in zip(self._w, self.kernels, strict=True))

    def with_params(self, **params: float) -> Kernel:
        return SumKernel(tuple(k.with_params(**params) for k in self.kernels), self.weights)


def gaussian_dictionary(X: ArrayLike, centres: ArrayLike, widths: ArrayLike) -> Array:
    """Dictionary features z_i(x) = exp(−‖x − c_i‖² / (2σ_i²)), shape (n_samples, m).

    One Gaussian per centre with a width of its own: the features of
    `sparsify.KernelMatchingReduction`, and of a model file's kernel
    ``gaussian_widths``.

    Examples
    --------
    >>> gaussian_dictionary([[0.0, 0.0]], [[0.0, 0.0], [1.0, 1.0]], [1.0, 1.0])
    array([[1.        , 0.36787944]])
    """
    X = np.asarray(X, dtype=float)
    C = np.asarray(centres, dtype=float)
    s = np.asarray(widths, dtype=float)
    return np.exp(-_sqdist(X, C) / (2.0 * s * s))


def resolve_gamma(gamma: float | str, X: Array) -> float:
    """Resolve ``gamma``: "scale" is 1 / (d · Var(X)), "auto" is 1 / d, as in SVC."""
    if gamma == "scale":
        return scale_gamma(float(np.var(X)) if np.size(X) else 0.0, X.shape[1])
    if gamma == "auto":
        return 1.0 / X.shape[1]
    return float(gamma)


def scale_gamma(variance: float, n_features: int) -> float:
    """gamma="scale" from the variance of the inputs: 1 / (d · Var(X)), 1 where Var(X) is 0.

    Examples
    --------
    >>> scale_gamma(0.5, 4)
    0.5
    """
    return 1.0 / (n_features * variance) if variance > 0 else 1.0


def make_kernel(
    kernel: str | Kernel,
    X: Array | None = None,
    gamma: float | str = "scale",
    degree: int = 3,
    coef0: float = 0.0,
) -> Kernel:
    """Return a kernel from a registered name, a sum of names, or an instance.

    Parameters
    ----------
    kernel : str or Kernel
        A registered name (``"rbf"``, ``"poly"``, ``"linear"`` or a plugin's),
        names joined by ``+`` for a sum (``"rbf+linear"``), or a Kernel
        instance, used as it is.
    X : ndarray of shape (N, d), optional
        Training inputs, needed for ``gamma="scale"`` or ``"auto"``.
    gamma, degree, coef0
        Hyperparameters passed to the kernels that take them.

    Examples
    --------
    >>> make_kernel("rbf", gamma=0.5)
    RBF(gamma=0.5)
    >>> make_kernel("rbf+linear", gamma=2.0)
    SumKernel(kernels=(RBF(gamma=2.0), Linear()), weights=None)
    """
    if isinstance(kernel, Kernel):
        return kernel
    registry = get_registry()
    classes = [registry.get("kernel", name.strip()) for name in kernel.split("+")]
    if isinstance(gamma, str):
        if X is None:
            raise ValueError(f"gamma={gamma!r} needs the training inputs X.")
        gamma = resolve_gamma(gamma, X)
    parts = [cls().with_params(gamma=gamma, degree=degree, coef0=coef0) for cls in classes]
    return parts[0] if len(parts) == 1 else SumKernel(tuple(parts))


def check_kernel_vjp(
    kernel: Kernel, X: ArrayLike, Z: ArrayLike, eps: float = 1e-6, seed: int = 0
) -> float:
    """Compare `Kernel.vjp_z` and `Kernel.vjp_zz` with central differences.

    Returns the larger relative error of the two products for a random cotangent.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> check_kernel_vjp(RBF(0.5), rng.normal(size=(6, 3)), rng.normal(size=(4, 3))) < 1e-7
    True
    """
    X = np.asarray(X, dtype=float)
    Z = np.asarray(Z, dtype=float)
    rng = np.random.default_rng(seed)
    G = rng.normal(size=(len(X), len(Z)))
    H = rng.normal(size=(len(Z), len(Z)))
    analytic = (kernel.vjp_z(X, Z, G), kernel.vjp_zz(Z, H))
    numeric = (np.zeros_like(Z), np.zeros_like(Z))
    for idx in np.ndindex(*Z.shape):
        Zp, Zm = Z.copy(), Z.copy()
        Zp[idx] += eps
        Zm[idx] -= eps
        numeric[0][idx] = ((G * kernel(X, Zp)).sum() - (G * kernel(X, Zm)).sum()) / (2 * eps)
        numeric[1][idx] = ((H * kernel(Zp, Zp)).sum() - (H * kernel(Zm, Zm)).sum()) / (2 * eps)
    return max(
        float(np.linalg.norm(a - n) / max(np.linalg.norm(n), 1e-300))
        for a, n in zip(analytic, numeric, strict=True)
    )


@hookimpl
def register_kernels(register: Callable[[type[Kernel]], None]) -> None:
    register(RBF)
    register(Polynomial)
    register(Linear)
