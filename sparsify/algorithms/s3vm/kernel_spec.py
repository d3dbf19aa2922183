"""The kernels of the semi-supervised SVM: its kernel-spec language and the paper's defaults.

`SemiSupervisedSVC` takes one kernel (``kernel``, optionally deformed into a
manifold kernel by ``manifold``) or a list ``kernels`` of base kernels for
Lp-norm MKL, whose entries are `Kernel` objects, kernel names, ``"manifold"``,
``"manifold:<name>"`` or ``{"kernel": ..., "manifold": ...}`` dicts.
`resolve_kernels` turns that spec into bound `Kernel` objects on the training
points (scaled to unit mean diagonal when asked, `unit_trace`);
`default_mkl_kernels` gives the paper's three Gaussian and three manifold
kernels.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from sparsify.kernels import RBF, Kernel, SumKernel, make_kernel
from sparsify.kernels.manifold import ManifoldKernel

__all__ = ["default_mkl_kernels", "resolve_kernels", "unit_trace"]

Array = NDArray[np.float64]


def unit_trace(kernel: Kernel, X: Array) -> Kernel:
    """The kernel scaled to mean diagonal 1 on X (Lp-MKL's usual normalisation).

    Examples
    --------
    >>> from sparsify import Linear
    >>> unit_trace(Linear(), np.array([[1.0, 1.0], [2.0, 0.0]]))
    SumKernel(kernels=(Linear(),), weights=(0.3333333333333333,))
    """
    mean = float(np.mean(kernel.diag(X)))
    if not mean > 0 or abs(mean - 1.0) < 1e-12:
        return kernel
    return SumKernel((kernel,), (1.0 / mean,))


def default_mkl_kernels(
    X: ArrayLike | None = None,
    *,
    sigmas: ArrayLike | None = None,
    gammas: ArrayLike | None = None,
    n_neighbors: int = 5,
    gamma_ratio: float = 1.0,
    laplacian_power: int = 1,
    normalized: bool = False,
) -> list[Kernel]:
    """The Lp-MKL-S3VM paper's kernels: 3 Gaussian base kernels and the 3 manifold ones on them.

    Parameters
    ----------
    X : array-like of shape (N, d), optional
        Training inputs; when neither ``sigmas`` nor ``gammas`` is given,
        the widths are 1/4, 1 and 4 times scikit-learn's "scale" gamma of X.
    sigmas : array-like, optional
        Widths σ of ``exp(−‖x − z‖² / (2σ²))``, as the paper's Table 2 gives them.
    gammas : array-like, optional
        Or the coefficients γ = 1 / (2σ²) directly.
    n_neighbors, gamma_ratio, laplacian_power, normalized
        Options of the `ManifoldKernel` entries, which are unbound (the
        estimator builds their graph on its training points); each
        graph's edge weights use its kernel's γ.

    Returns
    -------
    list of Kernel
        ``[RBF(γ_1), RBF(γ_2), RBF(γ_3), manifold(γ_1), manifold(γ_2), manifold(γ_3)]``

    Examples
    --------
    >>> from sparsify import SemiSupervisedSVC
    >>> ks = SemiSupervisedSVC.default_mkl_kernels(sigmas=[0.1, 0.5, 1.0])
    >>> [type(k).__name__ for k in ks]
    ['RBF', 'RBF', 'RBF', 'ManifoldKernel', 'ManifoldKernel', 'ManifoldKernel']
    >>> ks[2]
    RBF(gamma=0.5)
    """
    from sparsify.kernels import resolve_gamma

    if gammas is None and sigmas is not None:
        gammas = 1.0 / (2.0 * np.asarray(sigmas, dtype=float) ** 2)
    if gammas is None:
        if X is None:
            raise ValueError("default_mkl_kernels needs X, sigmas or gammas to set the "
                             "kernel widths.")
        g = resolve_gamma("scale", np.asarray(X, dtype=float))
        gammas = [g / 4, g, 4 * g]
    base: list[Kernel] = [RBF(float(g)) for g in np.asarray(gammas, dtype=float).ravel()]
    deformed: list[Kernel] = [
        ManifoldKernel(k, n_neighbors=n_neighbors, gamma_ratio=gamma_ratio,
                       laplacian_power=laplacian_power, normalized=normalized)
        for k in base
    ]
    return base + deformed


def resolve_kernels(
    X: Array,
    kernels: list[Any] | tuple[Any, ...] | None,
    *,
    kernel: str | Kernel = "rbf",
    gamma: float | str = "scale",
    degree: int = 3,
    coef0: float = 1.0,
    manifold: bool | dict[str, Any] | None = None,
    normalize: bool = True,
) -> list[Kernel]:
    """The base kernels of a fit on X, from the estimator's kernel spec.

    Parameters
    ----------
    X : ndarray of shape (N, d)
        The training points: the graph of every manifold kernel without one,
        and the data of ``gamma="scale"`` and of the normalisation.
    kernels : list, tuple or None
        `SemiSupervisedSVC`'s ``kernels``; None: the one kernel ``kernel``,
        deformed by the kNN-graph Laplacian when ``manifold`` is set.
    kernel, gamma, degree, coef0
        The single kernel (and the base of ``"manifold"`` entries), and how
        kernel names are resolved.
    manifold : None, bool or dict
        `ManifoldKernel` options of the deformed kernels (a dict), or whether
        to deform the single kernel.
    normalize : bool, default=True
        Scale each entry of ``kernels`` to mean diagonal 1 on X (`unit_trace`);
        a single kernel is never scaled.

    Returns
    -------
    list of Kernel
        One kernel, or one per entry of ``kernels``.

    Examples
    --------
    >>> X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    >>> resolve_kernels(X, None, kernel="rbf", gamma=0.5)
    [RBF(gamma=0.5)]
    >>> [type(k).__name__ for k in resolve_kernels(X, ["rbf", "manifold:linear"],
    ...                                            manifold={"n_neighbors": 2})]
    ['RBF', 'SumKernel']
    """
    options = dict(manifold) if isinstance(manifold, dict) else {}

    def deform(base: Kernel, opts: dict[str, Any] | None = None) -> Kernel:
        opts = options if opts is None else opts
        try:
            return ManifoldKernel(base, **opts).bind(X)
        except TypeError as exc:
            raise ValueError(f"The manifold options {opts!r} hold one ManifoldKernel "
                             f"does not take: {exc}") from exc

    def named(spec: str | Kernel) -> Kernel:
        return make_kernel(spec, X, gamma, degree, coef0)

    base = named(kernel)
    if kernels is None:
        return [deform(base) if manifold else base]
    if len(kernels) == 0:
        raise ValueError("kernels is empty; pass at least one kernel, or None for the "
                         "single kernel.")
    out: list[Kernel] = []
    for spec in kernels:
        if isinstance(spec, ManifoldKernel):
            out.append(spec.bind(X) if spec.X_graph is None else spec)
        elif isinstance(spec, Kernel):
            out.append(spec)
        elif isinstance(spec, str) and spec == "manifold":
            out.append(deform(base))
        elif isinstance(spec, str) and spec.startswith("manifold:"):
            out.append(deform(named(spec.split(":", 1)[1])))
        elif isinstance(spec, str):
            out.append(named(spec))
        elif isinstance(spec, dict) and set(spec) <= {"kernel", "manifold"} and spec:
            entry = named(spec.get("kernel", kernel))
            entry_options = spec.get("manifold")
            if entry_options is True:
                entry_options = {}
            if entry_options is None or entry_options is False:
                out.append(entry)
            elif isinstance(entry_options, dict):
                out.append(deform(entry, entry_options))
            else:
                raise ValueError(f"The 'manifold' of a kernels entry must be a dict of "
                                 f"ManifoldKernel options, True or None; got "
                                 f"{entry_options!r}.")
        else:
            raise ValueError(f"Each entry of kernels must be a Kernel, a kernel name, "
                             f"'manifold', 'manifold:<name>' or a dict with the keys "
                             f"'kernel' and 'manifold'; got {spec!r}.")
    return [unit_trace(k, X) for k in out] if normalize else out
