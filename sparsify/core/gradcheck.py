"""Gradient verification: ∇W(Z) from the duals against central finite differences.

Works for any registered formulation, kernel and solver backend, on a small
random problem or on given data, so a plugin author can check the gradient of
a new algorithm without writing any.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from sparsify.core.conic import make_marginal
from sparsify.core.formulation import Formulation, make_formulation
from sparsify.core.marginal import Marginal
from sparsify.core.optimize import initial_expansion_vectors
from sparsify.kernels import Kernel, Linear, SumKernel, make_kernel

__all__ = ["GradientCheck", "check_gradient", "check_supported_kernel", "estimate_noise",
           "example_point_data", "example_problem", "random_problem", "with_point_data"]

Array = NDArray[np.float64]

#: ∇W and its finite differences both below this much of max(1, |W|): W is flat here.
FLAT = 1e-8


@dataclass(frozen=True)
class GradientCheck:
    """Result of `check_gradient`.

    Attributes
    ----------
    rel_error : float
        ‖g − g_fd‖ / max(‖g‖, ‖g_fd‖).
    value : float
        W(Z) at the checked point.
    grad, numeric : ndarray of shape (Nz, d)
        ∇W(Z) from the duals and from finite differences.
    formulation, kernel, solver : str
        What was checked; ``solver`` is the one that answered (a backend name,
        or the formulation's own solver such as ``"svm-dual"``).
    noise : float
        The measured noise of W near Z (absolute, `estimate_noise`), at least
        8 ulp of W and at most twice the accuracy the solver states for W
        (`sparsify.core.marginal.Evaluation.accuracy`) where it states one: a larger
        variation is a kink of W within the sampled line, not noise.
    step : float
        The largest relative step the finite differences used.
    fd_error : float
        Estimated error of ``numeric``, relative like ``rel_error``: the
        Richardson table's truncation estimate plus the noise divided by the step.
    flat : bool
        Whether ∇W and its finite differences are both zero here (at most 1e-8 of
        max(1, |W|)): W does not change with the XVs (a kernel constant on the data,
        or vanishing between points), so no gradient error can show and the check
        cannot judge; `passed` is then False.
    """

    rel_error: float
    value: float
    grad: Array
    numeric: Array
    formulation: str
    kernel: str
    solver: str
    noise: float = 0.0
    step: float = 0.0
    fd_error: float = 0.0
    flat: bool = False

    def passed(self, threshold: float = 1e-6) -> bool:
        """Whether ∇W is right to ``threshold`` as far as the finite differences can tell.

        True when ``rel_error ≤ threshold + fd_error`` and the finite differences
        are themselves accurate to ``threshold`` (``fd_error ≤ threshold``), so a
        pass says the gradient is within 2 × ``threshold`` of the truth and a check
        too noisy to tell is a failure, not a pass. NaN fails.

        Examples
        --------
        >>> check_gradient("svm", "rbf", C=1.0).passed(1e-6)
        True
        """
        return bool(not self.flat and self.fd_error <= threshold
                    and self.rel_error <= threshold + self.fd_error)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready summary."""
        return {
            "formulation": self.formulation,
            "kernel": self.kernel,
            "solver": self.solver,
            "rel_error": self.rel_error,
            "fd_error": self.fd_error,
            "noise": self.noise,
            "step": self.step,
            "value": self.value,
            "n_expansion": int(self.grad.shape[0]),
            "n_features": int(self.grad.shape[1]),
            "flat": self.flat,
        }


def random_problem(
    n_samples: int = 40, n_features: int = 3, random_state: int = 0, n_classes: int = 2
) -> tuple[Array, NDArray[np.int64]]:
    """A small nonlinear classification problem for gradient checks.

    Labels -1/+1 for two classes; for more, the class codes 0..n_classes−1 (a
    multi-output formulation's ``out.y``), by quantiles of the same score.

    Examples
    --------
    >>> X, y = random_problem(10, 2)
    >>> X.shape, sorted(set(y.tolist()))
    ((10, 2), [-1, 1])
    >>> sorted(set(random_problem(30, 2, n_classes=3)[1].tolist()))
    [0, 1, 2]
    """
    rng = np.random.default_rng(random_state)
    X = rng.normal(size=(n_samples, n_features))
    score = X[:, 0] + 0.5 * X[:, 1 % n_features] ** 2 + 0.3 * rng.normal(size=n_samples)
    if n_classes > 2:
        edges = np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1])
        return X, np.digitize(score, edges).astype(np.int64)
    y = np.where(score > np.median(score), 1, -1)
    return X, y


def example_problem(formulation: Formulation, n_samples: int = 40, n_features: int = 3,
                    random_state: int = 0) -> tuple[Array, NDArray[np.int64]]:
    """`random_problem` shaped for ``formulation``'s task: three class codes for a
    multi-output classifier, three ordered levels 0, 1, 2 for an ordinal regressor,
    four levels of relevance 0..3 for a ranker, ±1 labels else.

    Examples
    --------
    >>> from sparsify.core.formulation import make_formulation
    >>> sorted(set(example_problem(make_formulation("svm"), 20)[1].tolist()))
    [-1, 1]
    """
    classes = {"multioutput_classifier": 3, "ordinal_regressor": 3, "ranker": 4}
    return random_problem(n_samples, n_features, random_state,
                          n_classes=classes.get(str(formulation.task), 2))


def example_point_data(formulation: Formulation, n_samples: int, random_state: int = 0
                       ) -> tuple[Array | None, NDArray[np.intp] | None]:
    """The data beside y that `example_problem`'s points get: (sample_weight, groups).

    Weights drawn from [0.5, 2] for a formulation that weighs its points
    (`sparsify.Formulation.weighted`), so that a check sees ``out.weights`` other
    than ones; groups of ten points for a ranker; None otherwise.

    Examples
    --------
    >>> from sparsify.core.formulation import make_formulation
    >>> example_point_data(make_formulation("svm"), 20)
    (None, None)
    """
    rng = np.random.default_rng([random_state, 1])
    weights = rng.uniform(0.5, 2.0, n_samples) if formulation.weighted else None
    groups = np.arange(n_samples) // 10 if formulation.task == "ranker" else None
    return weights, groups


def with_point_data(formulation: Formulation, sample_weight: ArrayLike | None,
                    groups: ArrayLike | None) -> Formulation:
    """``formulation`` given the points' weights (`Formulation.weigh`) and groups
    (`Formulation.group`) where they are not None."""
    if sample_weight is not None:
        formulation = formulation.weigh(np.asarray(sample_weight, dtype=np.float64))
    if groups is not None:
        formulation = formulation.group(np.asarray(groups))
    return formulation


def estimate_noise(values: Array) -> float:
    """The noise level of a function from its values at equally spaced points.

    Moré & Wild's ECnoise (SIAM J. Sci. Comput. 33, 2011): the k-th differences
    of a smooth function sampled at a small spacing vanish, those of noise do
    not; with γ_k = (k!)² / (2k)!, the level √(γ_k · mean(Δᵏf²)) estimates the
    noise's standard deviation where three consecutive levels agree within a
    factor 4 and the differences change sign.

    Parameters
    ----------
    values : ndarray of shape (m + 1,)
        f(x + i·h·p) for i = 0 … m (m ≥ 4), h small.

    Returns
    -------
    float
        The noise level; 0 when all values are equal, and the largest level
        (an upper estimate) when no three levels agree.

    Examples
    --------
    >>> import numpy as np
    >>> t = np.linspace(0, 1e-6, 9)
    >>> float(estimate_noise(np.sin(1.0 + t))) < 1e-15
    True
    >>> noisy = np.sin(1.0 + t) + 1e-9 * np.random.default_rng(0).normal(size=9)
    >>> 2e-10 < estimate_noise(noisy) < 5e-9
    True
    """
    diff = np.asarray(values, dtype=float)
    if np.all(diff == diff[0]):
        return 0.0
    levels, sign_change, gamma = [], [], 1.0
    for k in range(1, len(diff)):
        diff = np.diff(diff)
        gamma *= 0.5 * k / (2 * k - 1)
        levels.append(float(np.sqrt(gamma * np.mean(diff**2))))
        sign_change.append(bool(diff.min() < 0 < diff.max()))
    for k in range(len(levels) - 2):
        window = levels[k:k + 3]
        if max(window) <= 4 * min(window) and sign_change[k]:
            return levels[k]
    return max(levels)


def _richardson(W: Callable[[Array], float], Z: Array, idx: tuple[int, ...], h0: float,
                noise: float, target: float) -> tuple[float, float, float]:
    """∂W/∂Z[idx] by central differences at h, h/2, h/4 and Richardson extrapolation.

    Returns (estimate, truncation estimate, step h). The truncation estimate is
    the difference of two extrapolated values; the noise adds about 4σ/h. While
    the truncation part exceeds the target and the noise of a fourfold smaller
    step, the step shrinks fourfold (at most 8 rungs); the rung with the
    smallest sum is kept.
    """

    def central(h: float) -> float:
        Zp, Zm = Z.copy(), Z.copy()
        Zp[idx] += h
        Zm[idx] -= h
        return (W(Zp) - W(Zm)) / (2 * h)

    h = h0
    D = [central(h), central(h / 2), central(h / 4)]
    best, best_error = (np.nan, np.inf, h), np.inf
    for _ in range(8):
        R1 = (4 * D[-2] - D[-3]) / 3
        R2 = (4 * D[-1] - D[-2]) / 3
        error = abs(R2 - R1) + 4 * noise / h
        if error < best_error:
            best, best_error = (R2, abs(R2 - R1), h), error
        # a kink of W within the step (an active set that changes) shows as truncation:
        # shrink until it is gone, or until a smaller step would gain less in truncation
        # than it loses to noise
        if abs(R2 - R1) <= target or 16 * noise / h >= abs(R2 - R1):
            break
        h /= 4
        D = [D[-1], central(h / 2), central(h / 4)]
    return best


def _kernel_names(kernel: Kernel) -> list[str]:
    """The registered names of a kernel's parts (its class name where it has none)."""
    if isinstance(kernel, SumKernel):
        return [name for part in kernel.kernels for name in _kernel_names(part)]
    return [kernel.name or type(kernel).__name__]


def check_supported_kernel(form: Formulation, kernel: Kernel) -> None:
    """Refuse a kernel the formulation does not support (`Formulation.supported_kernels`).

    Raises
    ------
    ValueError
        Naming the formulation, the kernel and the kernels it supports.

    Examples
    --------
    >>> from sparsify.kernels import RBF, Polynomial
    >>> class Sphere(Formulation):
    ...     name, supported_kernels = "sphere", ("rbf",)
    ...     def declare(self, out): ...
    >>> check_supported_kernel(Sphere(), RBF(1.0))
    >>> check_supported_kernel(Sphere(), Polynomial())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: The 'sphere' formulation supports the kernels ['rbf'] only ...
    """
    supported = form.supported_kernels
    if supported is None:
        return
    unsupported = [name for name in _kernel_names(kernel) if name not in supported]
    if unsupported:
        name = form.name or type(form).__name__
        raise ValueError(f"The {name!r} formulation supports the kernels {list(supported)} only "
                         f"({type(form).__name__}.supported_kernels); the kernel {kernel!r} has "
                         f"{unsupported[0]!r}. Check its gradient with one of them.")


def check_gradient(
    formulation: str | Formulation = "svm",
    kernel: str | Kernel = "rbf",
    solver: str = "auto",
    X: ArrayLike | None = None,
    y: ArrayLike | None = None,
    Z: ArrayLike | None = None,
    n_expansion: int = 4,
    eps: float | None = None,
    tol: float = 1e-9,
    gamma: float | str = "scale",
    random_state: int = 0,
    marginal: Marginal | None = None,
    target: float = 1e-7,
    sample_weight: ArrayLike | None = None,
    groups: ArrayLike | None = None,
    **formulation_params: Any,
) -> GradientCheck:
    """Compare ∇W(Z) with finite differences of W for a formulation.

    The step comes from the noise of W, so that the check means the same on
    every machine and with every solver. The noise σ is measured
    (`estimate_noise` on 9 values of W along a random direction at a
    relative spacing of 1e-6). The central differences start at the relative
    step h = 4σ' / (``target`` · ‖g‖ / √n), clipped to [1e-4, 0.1], where σ'
    is the larger of σ and the accuracy the solver states for W(Z)
    (`sparsify.core.marginal.Evaluation.accuracy`), so that noise adds about
    ``target`` or less to the relative error; they are extrapolated
    (Richardson, steps h, h/2, h/4; the step shrinks where the table shows a
    kink) so that the truncation error of a large step vanishes. The table's
    estimate of what is left, plus 4σ/h, is ``fd_error``.

    Parameters
    ----------
    formulation : str or Formulation, default="svm"
        Registered name (with ``formulation_params``) or instance.
    kernel : str or Kernel, default="rbf"
        Kernel name (``"rbf+linear"`` for a sum) or instance.
    solver : str, default="auto"
        Solver backend.
    X, y : array-like, optional
        Data; by default `example_problem` (`random_problem` shaped for the
        formulation's task).
    Z : array-like of shape (Nz, d), optional
        Where to check; by default a random subset of X, moved off the data
        points by a small random offset.
    n_expansion : int, default=4
        Nz when Z is not given (capped below d for the linear kernel, whose W
        is constant once the XVs span the input space).
    eps : float, optional
        The first relative step (relative to max(1, |z|)); by default chosen
        from the noise as above.
    tol : float, default=1e-9
        Solver accuracy.
    random_state : int, default=0
        Seed of the problem, of Z and of the noise direction.
    marginal : Marginal, optional
        Check this W(Z) provider; by default the formulation's own
        (`Formulation.marginal`) if it has one, else the generic path.
    target : float, default=1e-7
        Relative error the finite differences aim at.
    sample_weight, groups : array-like of shape (N,), optional
        The points' weights (``out.weights``, for a formulation that weighs its
        points) and groups (``out.groups``, and a ranker's ``out.pairs`` within
        them). With the default problem (X None) `example_point_data` gives them
        where they are None.

    Returns
    -------
    GradientCheck
        Use `GradientCheck.passed` to judge it.

    Raises
    ------
    ValueError
        If the formulation does not support the kernel
        (`Formulation.supported_kernels`), before anything is solved.

    Examples
    --------
    >>> result = check_gradient("svm", "rbf", C=1.0)
    >>> result.rel_error < 1e-6 and result.fd_error < 1e-7
    True
    """
    for name, value, low in (("eps", eps, 0.0), ("target", target, 0.0), ("tol", tol, 0.0)):
        if value is not None and not (isinstance(value, (int, float, np.floating))
                                      and not isinstance(value, bool)
                                      and np.isfinite(value) and low < value < 1):
            raise ValueError(f"The {name!r} parameter of check_gradient must be a float in the "
                             f"range (0.0, 1.0){' or None' if name == 'eps' else ''}. Got "
                             f"{value!r} instead.")
    form = make_formulation(formulation, **formulation_params)
    if X is None:
        X, y = example_problem(form, random_state=random_state)
        weights, grouping = example_point_data(form, len(X), random_state)
        sample_weight = weights if sample_weight is None else sample_weight
        groups = grouping if groups is None else groups
    form = with_point_data(form, sample_weight, groups)
    X = np.asarray(X, dtype=float)
    y = None if y is None else np.asarray(y)
    k = make_kernel(kernel, X, gamma=gamma)
    check_supported_kernel(form, k)
    rng = np.random.default_rng(random_state)
    if Z is None:
        nz = min(n_expansion, X.shape[1] - 1) if isinstance(k, Linear) else n_expansion
        Z = initial_expansion_vectors(X, max(nz, 1), "random", random_state)
        Z = Z + 0.05 * X.std(0) * rng.normal(size=Z.shape)
    Z = np.asarray(Z, dtype=float)
    if marginal is None:
        # a formulation's own W and ∇W, if it supplies them, is what a fit uses
        marginal = make_marginal(form, X, y, k, len(Z), solver, tol)
    ev = marginal.evaluate(Z)
    grad = np.asarray(ev.grad)
    scale_z = np.maximum(1.0, np.abs(Z))

    def W(Zs: Array) -> float:
        return marginal.evaluate(Zs, grad=False).value

    # the noise of W along a random direction, at a spacing where W is smooth
    direction = rng.normal(size=Z.shape)
    direction *= scale_z / np.abs(direction).max()
    line = [marginal.evaluate(Z + (i - 4) * 1e-6 * direction, grad=False) if i != 4 else ev
            for i in range(9)]
    floor = 8 * np.finfo(float).eps * max(1.0, abs(ev.value))
    noise = max(estimate_noise(np.array([e.value for e in line])), floor)
    stated = [e.accuracy for e in line if e.accuracy is not None]
    if len(stated) == len(line):
        # W is within its stated accuracy of the optimum at every point, so it cannot vary
        # by more than twice that: more is W's own shape (a kink within the line), not noise
        noise = max(min(noise, 2 * max(stated)), floor)

    n = Z.size
    g_norm = float(np.linalg.norm(grad))
    per_coord = target * (g_norm if g_norm > 0 else max(1.0, abs(ev.value))) / np.sqrt(n)
    # the step guards against the worst the solver states too, not only the typical noise
    worst = max(noise, ev.accuracy or 0.0)
    h_rel = eps if eps is not None else float(np.clip(4 * worst / per_coord, 1e-4, 0.1))
    numeric, truncation, steps = np.zeros_like(Z), np.zeros_like(Z), np.zeros_like(Z)
    for idx in np.ndindex(*Z.shape):
        numeric[idx], truncation[idx], steps[idx] = _richardson(
            W, Z, idx, h_rel * scale_z[idx], noise, per_coord)
    errors = truncation + 4 * noise / steps
    numeric_norm = float(np.linalg.norm(numeric))
    scale = max(g_norm, numeric_norm, 1e-300)
    return GradientCheck(
        rel_error=float(np.linalg.norm(grad - numeric) / scale),
        value=ev.value,
        grad=grad,
        numeric=numeric,
        formulation=form.name or type(form).__name__,
        kernel=kernel if isinstance(kernel, str) else type(kernel).__name__,
        solver=ev.solver,
        noise=float(noise),
        step=float(np.max(steps / scale_z)),
        fd_error=float(np.linalg.norm(errors) / scale),
        flat=max(g_norm, numeric_norm) <= FLAT * max(1.0, abs(ev.value)),
    )
